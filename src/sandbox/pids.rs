//! Bounding how many tasks the sandbox may have (a fork bomb), with the pids
//! cgroup controller: a cgroup of its own under interpose's, `pids.max` set,
//! the command moved in before it execs. Forks beyond the limit fail with
//! `EAGAIN` in the command; the supervisor is outside the cgroup and keeps
//! answering.

use std::path::{Path, PathBuf};

/// Errors setting the limit up.
#[derive(Debug, thiserror::Error)]
pub enum PidsError {
    /// No writable pids controller was found.
    #[error("no pids cgroup controller is mounted where interpose can create a cgroup (cgroup v1 `pids`, or v2 with `pids` in cgroup.subtree_control)")]
    Unavailable,
    /// A cgroup file operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// A pids cgroup for one run, removed when dropped.
#[derive(Debug)]
pub struct PidsCgroup {
    dir: PathBuf,
}

/// The directory of interpose's own cgroup in the pids hierarchy.
fn own_pids_cgroup() -> Option<PathBuf> {
    let mounts = crate::sys::procfs::mounts();
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    // cgroup v1: a `cgroup` mount whose super options name `pids`.
    let v1_mount = mounts
        .iter()
        .find(|m| m.fstype == "cgroup" && m.options.split(',').any(|o| o == "pids"))
        .map(|m| m.point.clone());
    if let Some(mount) = v1_mount {
        let path = cgroups.lines().find_map(|l| {
            let mut f = l.splitn(3, ':');
            let (_, controllers, path) = (f.next()?, f.next()?, f.next()?);
            controllers.split(',').any(|c| c == "pids").then(|| path.to_string())
        })?;
        return Some(mount.join(path.trim_start_matches('/')));
    }
    // cgroup v2: only where pids is already delegated to our children.
    let v2_mount = mounts.into_iter().find(|m| m.fstype == "cgroup2")?.point;
    let path = cgroups.lines().find_map(|l| l.strip_prefix("0::"))?;
    let dir = v2_mount.join(path.trim_start_matches('/'));
    let control = std::fs::read_to_string(dir.join("cgroup.subtree_control")).ok()?;
    control.split_whitespace().any(|c| c == "pids").then_some(dir)
}

impl PidsCgroup {
    /// Creates `interpose-<pid>` with `pids.max = max` under interpose's own
    /// pids cgroup, removing the ones earlier runs left when killed.
    pub fn create(max: u32) -> Result<PidsCgroup, PidsError> {
        let base = own_pids_cgroup().ok_or(PidsError::Unavailable)?;
        remove_stale(&base);
        let dir = base.join(format!("interpose-{}", std::process::id()));
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| PidsError::Io { path, source }
        };
        std::fs::create_dir(&dir).map_err(io(&dir))?;
        let cgroup = PidsCgroup { dir };
        let max_file = cgroup.dir.join("pids.max");
        std::fs::write(&max_file, max.to_string()).map_err(io(&max_file))?;
        Ok(cgroup)
    }

    /// Moves process `pid` into the cgroup.
    pub fn add(&self, pid: libc::pid_t) -> std::io::Result<()> {
        std::fs::write(self.dir.join("cgroup.procs"), pid.to_string())
    }
}

impl Drop for PidsCgroup {
    fn drop(&mut self) {
        // Empty by now: the sandbox's processes have been killed and reaped.
        let _ = std::fs::remove_dir(&self.dir);
    }
}

fn remove_stale(base: &Path) {
    for e in super::left_by_dead_runs(base) {
        // Fails (harmlessly) while a task still lives in it.
        let _ = std::fs::remove_dir(e.path());
    }
}
