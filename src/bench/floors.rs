//! The shared C floors, to compare interpose's own floors with
//! (`interpose bench --floors DIR`): minimal C launchers that put a command
//! behind one kernel mechanism and nothing else, written independently of
//! interpose. They are built from DIR with its Makefile (`make OUT=...`)
//! at the start of a run, into the run's own directory; nothing of them is
//! part of interpose.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Why the shared floors are missing from a run.
#[derive(Debug, thiserror::Error)]
pub(super) enum FloorsError {
    /// The directory has no Makefile.
    #[error("{}: no Makefile of the floors there", .0.display())]
    NoMakefile(PathBuf),
    /// `make` could not be run.
    #[error("make: {0}")]
    Make(std::io::Error),
    /// `make` failed (the first line it wrote on stderr).
    #[error("make in {}: {first_line}", .dir.display())]
    MakeFailed { dir: PathBuf, first_line: String },
    /// `make` succeeded without building this launcher.
    #[error("{0} was not built")]
    NotBuilt(&'static str),
}

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
pub(super) fn build(source: &Path, out: &Path) -> Result<Floors, FloorsError> {
    if !source.join("Makefile").exists() {
        return Err(FloorsError::NoMakefile(source.into()));
    }
    let o = Command::new("make")
        .arg("-s")
        .arg(format!("OUT={}", out.display()))
        .current_dir(source)
        .output()
        .map_err(FloorsError::Make)?;
    if !o.status.success() {
        let err = String::from_utf8_lossy(&o.stderr);
        let first_line = err.lines().next().unwrap_or("failed").to_string();
        return Err(FloorsError::MakeFailed { dir: source.into(), first_line });
    }
    let built = |name: &'static str| -> Result<PathBuf, FloorsError> {
        let p = out.join(name);
        p.exists().then_some(p).ok_or(FloorsError::NotBuilt(name))
    };
    Ok(Floors {
        bpf_allow: built("floor-bpf-allow")?,
        landlock: built("floor-landlock")?,
        unotify_continue: built("floor-unotify-continue")?,
        unotify_emulate: built("floor-unotify-emulate")?,
    })
}
