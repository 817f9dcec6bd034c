//! The physical floors: minimal C launchers that put a command behind one
//! kernel mechanism and nothing else (`benches/floors/`, from the project's
//! shared floors). Built with the system C compiler into a temporary
//! directory at the start of a run, so `interpose bench` measures against
//! them wherever it runs; without a compiler the floors are missing and
//! the table says so.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The sources, embedded so an installed binary carries them.
const SOURCES: [(&str, &str); 5] = [
    ("floor_common.h", include_str!("../../benches/floors/floor_common.h")),
    ("floor-bpf-allow.c", include_str!("../../benches/floors/floor-bpf-allow.c")),
    ("floor-landlock.c", include_str!("../../benches/floors/floor-landlock.c")),
    ("floor-unotify.c", include_str!("../../benches/floors/floor-unotify.c")),
    ("wl.c", include_str!("../../benches/floors/wl.c")),
];

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
    /// The C micro workloads (`wl openat N PATH`, ...).
    pub wl: PathBuf,
}

/// Builds the floors in `dir` (made; inside the workspace, so the C
/// workload also runs under interpose); `Err` says why they are missing.
pub(super) fn build(dir: &Path) -> Result<Floors, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for (name, text) in SOURCES {
        std::fs::write(dir.join(name), text).map_err(|e| format!("{name}: {e}"))?;
    }
    let cc = std::env::var_os("CC").unwrap_or_else(|| "cc".into());
    let compile = |source: &str, out: &str, defines: &[&str]| -> Result<PathBuf, String> {
        let target = dir.join(out);
        let o = Command::new(&cc)
            .current_dir(dir)
            .args(["-O2", "-Wall", "-Wno-unused-parameter"])
            .args(defines)
            .arg("-o")
            .arg(&target)
            .arg(source)
            .output()
            .map_err(|e| format!("{}: {e}", Path::new(&cc).display()))?;
        if !o.status.success() {
            let err = String::from_utf8_lossy(&o.stderr);
            return Err(format!("{source}: {}", err.lines().next().unwrap_or("failed")));
        }
        Ok(target)
    };
    Ok(Floors {
        bpf_allow: compile("floor-bpf-allow.c", "floor-bpf-allow", &[])?,
        landlock: compile("floor-landlock.c", "floor-landlock", &[])?,
        unotify_continue: compile("floor-unotify.c", "floor-unotify-continue", &["-DEMULATE=0"])?,
        unotify_emulate: compile("floor-unotify.c", "floor-unotify-emulate", &["-DEMULATE=1"])?,
        wl: compile("wl.c", "wl", &[])?,
    })
}
