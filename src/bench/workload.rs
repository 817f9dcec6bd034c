//! The micro workloads: a loop of one operation inside one process, each
//! iteration timed, so start-up is not in the figures.

use serde::Serialize;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// A micro-benchmark loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Workload {
    /// `openat` + `close` of an allowed file.
    Open,
    /// `newfstatat` of an allowed file (glibc's `stat`).
    Stat,
    /// `getppid`, which is never trapped (timed in batches of 100).
    Getppid,
    /// `fork` + `exec /bin/true` + `wait`.
    ForkExec,
    /// `openat` of a file outside the surface (denied when sandboxed).
    DeniedOpen,
}

impl Workload {
    /// The name of the workload in tables.
    pub fn label(self) -> &'static str {
        match self {
            Workload::Open => "openat+close",
            Workload::Stat => "newfstatat",
            Workload::Getppid => "getppid (untrapped)",
            Workload::ForkExec => "fork+exec /bin/true",
            Workload::DeniedOpen => "openat, denied",
        }
    }
}

/// Runs one loop and prints `{"ns": [...], "elapsed_ns": N}` on stdout.
pub fn workload(kind: Workload, count: usize, path: &Path) -> anyhow::Result<i32> {
    use nix::fcntl::{open, OFlag};
    use nix::sys::stat::Mode;
    let mut samples = Vec::with_capacity(count);
    let start = Instant::now();
    for _ in 0..count {
        let t = Instant::now();
        match kind {
            Workload::Open | Workload::DeniedOpen => {
                // A denied open is the point of DeniedOpen; its error is not.
                if let Ok(fd) = open(path, OFlag::O_RDONLY | OFlag::O_CLOEXEC, Mode::empty()) {
                    drop(fd);
                }
            }
            Workload::Stat => {
                std::hint::black_box(nix::sys::stat::stat(path)?);
            }
            Workload::Getppid => {
                for _ in 0..100 {
                    std::hint::black_box(nix::unistd::getppid());
                }
            }
            Workload::ForkExec => {
                let status = Command::new("/bin/true").status()?;
                anyhow::ensure!(status.success(), "/bin/true failed: {status}");
            }
        }
        let ns = t.elapsed().as_nanos() as f64;
        samples.push(if kind == Workload::Getppid { ns / 100.0 } else { ns });
    }
    let elapsed = start.elapsed().as_nanos() as u64;
    println!("{}", serde_json::json!({ "ns": samples, "elapsed_ns": elapsed }));
    Ok(0)
}
