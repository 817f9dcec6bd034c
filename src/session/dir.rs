//! The session's own directories: the private `TMPDIR`, the session
//! `HOME`, the caches' layers, and the isolated root's mount point.

use super::{io, io_at, RunError};
use crate::{audit, sandbox};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// The mark of a session kept with `--keep-session`: the stale-session
/// sweep never removes it; the user does.
const KEPT: &str = ".kept";

/// The session directory: the command's private `TMPDIR` (`tmp/`) and, with
/// `home = "session"`, its `HOME` (`home/`). Removed when dropped, unless
/// kept; one left behind by a killed interpose is removed by the next run.
pub(super) struct SessionDir {
    root: PathBuf,
    keep: bool,
}

impl SessionDir {
    pub(super) fn create(keep: bool) -> Result<SessionDir, RunError> {
        let base = std::env::temp_dir();
        // Off the start-up's path: listing the temporary directory grows
        // with it (hundreds of entries on a developer's machine). The sweep
        // spares every run whose interpose still runs, this one included;
        // one cut short when the session ends is finished by the next.
        let sweep = base.clone();
        if std::thread::Builder::new().name("interpose-sweep".into()).spawn(move || remove_stale(&sweep)).is_err() {
            remove_stale(&base);
        }
        for attempt in 0..16u32 {
            let nonce = audit::now_ns() ^ (u64::from(attempt) << 48);
            let path = base.join(format!("interpose-{}-{nonce:x}", std::process::id()));
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => {
                    let root = path.canonicalize().map_err(io("the session directory"))?;
                    if keep {
                        // Marked before anything else: the sweep of later
                        // runs leaves a kept session alone, even one whose
                        // interpose was killed.
                        std::fs::write(root.join(KEPT), "").map_err(io("the session directory's keep mark"))?;
                    }
                    let session = SessionDir { root, keep };
                    std::fs::DirBuilder::new().mode(0o700).create(session.tmp()).map_err(io("the private TMPDIR"))?;
                    if nix::unistd::geteuid().is_root() {
                        // A root command may switch to another user (a test
                        // suite's `nobody`), who then needs TMPDIR as it
                        // would need /tmp: traversable to it, sticky and
                        // writable by all. Nothing else of the session is
                        // readable by others (home and caches stay 0700).
                        use std::os::unix::fs::PermissionsExt;
                        let set = |p: &Path, mode| std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode));
                        set(&session.root, 0o711).map_err(io("the session directory"))?;
                        set(&session.tmp(), 0o1777).map_err(io("the private TMPDIR"))?;
                    }
                    return Ok(session);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io_at("creating a session directory in", base)(e)),
            }
        }
        Err(RunError::Io {
            what: "creating a session directory",
            path: None,
            source: std::io::ErrorKind::AlreadyExists.into(),
        })
    }

    pub(super) fn tmp(&self) -> PathBuf {
        self.root.join("tmp")
    }

    /// Where the private caches keep their layers: inside the session, out
    /// of the command's surface.
    pub(super) fn caches(&self) -> Result<PathBuf, RunError> {
        let dir = self.root.join("caches");
        std::fs::DirBuilder::new().mode(0o700).create(&dir).map_err(io("the session's cache directory"))?;
        Ok(dir)
    }

    pub(super) fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    /// Makes the session home and copies `seeds` (files of the real home)
    /// into it at the same relative place. Returns what could not be copied.
    pub(super) fn make_home(&self, real_home: Option<&Path>, seeds: &[PathBuf]) -> Result<Vec<String>, RunError> {
        let home = self.home();
        std::fs::DirBuilder::new().mode(0o700).create(&home).map_err(io("the session HOME"))?;
        let mut skipped = Vec::new();
        for seed in seeds {
            let relative = real_home.and_then(|h| seed.strip_prefix(h).ok()).map(Path::to_path_buf);
            let Some(relative) = relative.or_else(|| seed.file_name().map(PathBuf::from)) else { continue };
            let target = home.join(&relative);
            let copied = target
                .parent()
                .map_or(Ok(()), |p| std::fs::DirBuilder::new().recursive(true).mode(0o700).create(p))
                .and_then(|()| match seed.metadata() {
                    Ok(m) if m.is_file() => std::fs::copy(seed, &target).map(drop),
                    Ok(_) => Err(std::io::Error::other("not a regular file")),
                    Err(e) => Err(e),
                });
            if let Err(e) = copied {
                skipped.push(format!("home_seed {}: {e}", seed.display()));
            }
        }
        Ok(skipped)
    }

    pub(super) fn chown(&self, uid: u32, gid: u32) -> Result<(), RunError> {
        fn walk(p: &Path, uid: u32, gid: u32) -> std::io::Result<()> {
            std::os::unix::fs::lchown(p, Some(uid), Some(gid))?;
            if p.symlink_metadata()?.is_dir() {
                for e in std::fs::read_dir(p)? {
                    walk(&e?.path(), uid, gid)?;
                }
            }
            Ok(())
        }
        walk(&self.root, uid, gid).map_err(io("giving the session directory to --user"))
    }
}

/// Removes the private temporary directories of earlier runs that were
/// killed before they could clean up: `interpose-<pid>-<nonce>` owned by us
/// whose pid no longer runs interpose.
fn remove_stale(base: &Path) {
    use std::os::unix::fs::MetadataExt;
    let uid = nix::unistd::geteuid().as_raw();
    for entry in sandbox::left_by_dead_runs(base) {
        // symlink_metadata: a link planted under that name is not followed,
        // and remove_dir_all removes only the link.
        let ours = entry.path().symlink_metadata().is_ok_and(|m| m.is_dir() && m.uid() == uid);
        let kept = entry.path().join(KEPT).symlink_metadata().is_ok();
        if ours && !kept {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The empty directory the isolated root was mounted on (in the command's
/// namespace only), removed at the end.
pub(super) struct StagingDir(PathBuf);

impl StagingDir {
    /// Creates the empty mount point beside the session directory.
    pub(super) fn beside(session: &SessionDir) -> Result<StagingDir, RunError> {
        let mut dir = session.root.clone().into_os_string();
        dir.push("-root");
        let dir = PathBuf::from(dir);
        std::fs::DirBuilder::new().mode(0o700).create(&dir).map_err(io("the isolated root's mount point"))?;
        Ok(StagingDir(dir))
    }
}

impl std::ops::Deref for StagingDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for StagingDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

impl Drop for SessionDir {
    fn drop(&mut self) {
        if self.keep {
            // The terminal may be gone by now: never a panic for a line.
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr().lock(),
                "interpose: session directory kept (until you remove it): {}",
                self.root.display()
            );
        } else {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_keep_the_path_and_read_as_before() {
        let enoent = || std::io::Error::from_raw_os_error(libc::ENOENT);
        let e = io_at("exec", "/bin/foo")(enoent());
        assert!(matches!(&e, RunError::Io { what: "exec", path: Some(p), source }
            if p == Path::new("/bin/foo") && source.raw_os_error() == Some(libc::ENOENT)));
        assert_eq!(e.to_string(), "exec /bin/foo: No such file or directory (os error 2)");
        let e = io("the session HOME")(enoent());
        assert!(matches!(&e, RunError::Io { what: "the session HOME", path: None, .. }));
        assert_eq!(e.to_string(), "the session HOME: No such file or directory (os error 2)");
    }
}
