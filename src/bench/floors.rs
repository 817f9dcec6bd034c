//! The shared C floors, to compare interpose's own floors with
//! (`interpose bench --floors DIR`): minimal C launchers that put a command
//! behind one kernel mechanism and nothing else, written independently of
//! interpose. They are built from DIR with its Makefile (`make OUT=...`)
//! at the start of a run, into the run's own directory; nothing of them is
//! part of interpose.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The built launchers.
pub(super) struct Floors {
    /// A filter that allows everything but runs its BPF on the path calls.
    pub bpf_allow: PathBuf,
    /// A Landlock ruleset granting everything beneath `/`.
    pub landlock: PathBuf,
    /// Every path call to a listener that answers CONTINUE.
    pub unotify_continue: PathBuf,
    /// Opens emulated the TOCTOU-safe way (read, validate, open, ADDFD).
    pub unotify_emulate: PathBuf,
}

/// Builds the floors of `source` (a directory with their Makefile) into
/// `out`; `Err` says why they are missing.
pub(super) fn build(source: &Path, out: &Path) -> Result<Floors, String> {
    if !source.join("Makefile").exists() {
        return Err(format!("{}: no Makefile of the floors there", source.display()));
    }
    let o = Command::new("make")
        .arg("-s")
        .arg(format!("OUT={}", out.display()))
        .current_dir(source)
        .output()
        .map_err(|e| format!("make: {e}"))?;
    if !o.status.success() {
        let err = String::from_utf8_lossy(&o.stderr);
        return Err(format!("make in {}: {}", source.display(), err.lines().next().unwrap_or("failed")));
    }
    let built = |name: &str| -> Result<PathBuf, String> {
        let p = out.join(name);
        p.exists().then_some(p).ok_or_else(|| format!("{name} was not built"))
    };
    Ok(Floors {
        bpf_allow: built("floor-bpf-allow")?,
        landlock: built("floor-landlock")?,
        unotify_continue: built("floor-unotify-continue")?,
        unotify_emulate: built("floor-unotify-emulate")?,
    })
}
