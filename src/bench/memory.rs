//! The supervisor's memory over a long run of trapped calls: its resident
//! set sampled while a C loop makes `calls` stats under interpose, to show
//! that it stays flat (nothing kept per call) and under its bound.

use super::modes::{command, BenchMode};
use serde::Serialize;
use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

/// What one long run measured.
#[derive(Debug, Clone, Serialize)]
pub(super) struct Memory {
    /// Trapped calls the loop made.
    pub calls: u64,
    /// The supervisor's peak resident set (`VmHWM`), KiB.
    pub peak_kib: u64,
    /// Its resident set once the first tenth of the run was done, KiB.
    pub early_kib: u64,
    /// Its resident set in the last tenth of the run, KiB.
    pub late_kib: u64,
    /// Why the run failed, if it did.
    pub error: Option<String>,
}

/// A field of `/proc/<pid>/status` in KiB.
fn kib(pid: u32, field: &str) -> Option<u64> {
    let status = crate::sys::procfs::Status::of(pid)?;
    status.field(field)?.trim_end_matches("kB").trim().parse().ok()
}

/// Runs `cmd` (which makes `calls` trapped calls) under `mode` and samples
/// the resident set of the mode's own process (the supervisor) every 20 ms.
pub(super) fn measure(mode: &BenchMode, cmd: &[OsString], cwd: &Path, calls: u64) -> Memory {
    let mut m = Memory { calls, peak_kib: 0, early_kib: 0, late_kib: 0, error: None };
    let spawned = command(mode, cmd, cwd).map_err(|e| e.to_string());
    let mut child = match spawned.and_then(|mut c| c.spawn().map_err(|e| e.to_string())) {
        Ok(c) => c,
        Err(e) => {
            m.error = Some(e);
            return m;
        }
    };
    let pid = child.id();
    let mut samples: Vec<u64> = Vec::new();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) => {}
            Err(e) => break Err(e.to_string()),
        }
        if let (Some(rss), Some(hwm)) = (kib(pid, "VmRSS:"), kib(pid, "VmHWM:")) {
            samples.push(rss);
            m.peak_kib = m.peak_kib.max(hwm);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => m.error = Some(format!("exit {:?}", s.code())),
        Err(e) => m.error = Some(e),
    }
    if samples.len() >= 10 {
        let tenth = samples.len() / 10;
        m.early_kib = samples[tenth];
        m.late_kib = samples[samples.len() - tenth..].iter().copied().max().unwrap_or(0);
    } else if m.error.is_none() {
        m.error = Some(format!("too short to sample ({} samples)", samples.len()));
    }
    m
}
