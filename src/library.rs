//! The crate as a library for agent frameworks that run tools in-process
//! (README, "Library"): [`Sandbox`] reads, writes, removes and globs files under the
//! same surface `interpose run` enforces, and runs commands under
//! `interpose run` itself; the `safe_*` helpers resolve paths with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`,
//! so the kernel checks the whole chain at once and no symlink swapped in
//! by another process can redirect a write.
//!
//! ```
//! use interpose::library::{Sandbox, SandboxError};
//! # let dir = tempfile::tempdir().unwrap();
//! # let ws = dir.path().canonicalize().unwrap();
//! let sandbox = Sandbox::with_workspace(&ws).unwrap();
//! sandbox.write_file("notes/todo.txt", b"ship it\n").unwrap();
//! assert_eq!(sandbox.read_file("notes/todo.txt").unwrap(), b"ship it\n");
//! // Outside the workspace: refused, with a type the caller can match.
//! assert!(matches!(sandbox.read_file("/etc/hostname"), Err(SandboxError::PathNotAllowed(_))));
//! ```

use crate::policy::{Access, Mode, Origin, Rule, Surface};
use crate::sys::fs::{self, Dir, OpenHow};
use crate::sys::Errno;
use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// Why a sandboxed operation was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The path resolves outside its anchor: `..`, an absolute path, or a
    /// symlink (the kernel's `EXDEV`/`ELOOP` under `RESOLVE_BENEATH |
    /// RESOLVE_NO_SYMLINKS`).
    #[error("path escapes its root: {0}")]
    PathEscape(PathBuf),
    /// The path lies beneath the anchor but the surface does not allow the
    /// access.
    #[error("path not allowed by the surface: {0}")]
    PathNotAllowed(PathBuf),
    /// The kernel has no Landlock; commands cannot be confined.
    #[error("Landlock is not available on this kernel")]
    LandlockUnavailable,
    /// The policy file is invalid.
    #[error(transparent)]
    Policy(#[from] crate::policy::file::PolicyError),
    /// The surface cannot be built from it.
    #[error(transparent)]
    Surface(#[from] crate::session::surface::SurfaceError),
    /// Any other failure.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

fn cpath(p: &Path) -> Result<CString, SandboxError> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| SandboxError::PathEscape(p.to_path_buf()))
}

fn beneath(flags: i32, mode: u32) -> OpenHow {
    OpenHow {
        flags: flags as u64,
        mode: u64::from(mode),
        resolve: fs::RESOLVE_BENEATH | fs::RESOLVE_NO_SYMLINKS | fs::RESOLVE_NO_MAGICLINKS,
    }
}

fn escape_or_io(e: Errno, path: &Path) -> SandboxError {
    match e {
        // The resolve-specific errors: the path left its anchor or met a
        // link. EACCES stays a plain permission error (it has other causes).
        Errno::EXDEV | Errno::ELOOP => SandboxError::PathEscape(path.to_path_buf()),
        e => SandboxError::Io(e.into()),
    }
}

/// `rel` must be relative and free of `..` to stay beneath an anchor.
fn relative(rel: &Path) -> Result<&Path, SandboxError> {
    if rel.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir)) {
        Ok(rel)
    } else {
        Err(SandboxError::PathEscape(rel.to_path_buf()))
    }
}

fn anchor(dir: &Path) -> Result<OwnedFd, SandboxError> {
    fs::openat(Dir::Cwd, &cpath(dir)?, libc::O_PATH | libc::O_DIRECTORY, 0).map_err(|e| SandboxError::Io(e.into()))
}

/// Opens (creating or truncating) `anchor/rel` for writing without following
/// any symlink or leaving `anchor`.
///
/// ```
/// use interpose::library::{safe_open_for_write, SandboxError};
/// # let dir = tempfile::tempdir().unwrap();
/// # let root = dir.path();
/// std::fs::create_dir(root.join("real")).unwrap();
/// std::os::unix::fs::symlink("/tmp", root.join("link")).unwrap();
/// assert!(safe_open_for_write(root, "real/a.txt".as_ref(), 0o644).is_ok());
/// // A symlinked directory on the way is an escape, wherever it points.
/// let e = safe_open_for_write(root, "link/a.txt".as_ref(), 0o644).unwrap_err();
/// assert!(matches!(e, SandboxError::PathEscape(_)));
/// ```
pub fn safe_open_for_write(anchor_dir: &Path, rel: &Path, mode: u32) -> Result<std::fs::File, SandboxError> {
    let rel = relative(rel)?;
    let root = anchor(anchor_dir)?;
    let how = beneath(libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_NOFOLLOW, mode);
    let fd = fs::openat2(Dir::Fd(root.as_fd()), &cpath(rel)?, how).map_err(|e| escape_or_io(e, rel))?;
    Ok(std::fs::File::from(fd))
}

/// Opens `anchor/rel` for reading under the same rules.
pub fn safe_open_for_read(anchor_dir: &Path, rel: &Path) -> Result<std::fs::File, SandboxError> {
    let rel = relative(rel)?;
    let root = anchor(anchor_dir)?;
    let how = beneath(libc::O_RDONLY | libc::O_NOFOLLOW, 0);
    let fd = fs::openat2(Dir::Fd(root.as_fd()), &cpath(rel)?, how).map_err(|e| escape_or_io(e, rel))?;
    Ok(std::fs::File::from(fd))
}

/// Creates `anchor/rel` and its missing parents, one component at a time,
/// each resolved beneath the previous one without following links.
pub fn safe_mkdir_all(anchor_dir: &Path, rel: &Path) -> Result<(), SandboxError> {
    let rel = relative(rel)?;
    let mut dir = anchor(anchor_dir)?;
    for c in rel.components() {
        let Component::Normal(name) = c else { continue };
        let name = cpath(Path::new(name))?;
        let how = beneath(libc::O_PATH | libc::O_DIRECTORY, 0);
        dir = match fs::openat2(Dir::Fd(dir.as_fd()), &name, how) {
            Ok(next) => next,
            Err(Errno::ENOENT) => {
                nix::sys::stat::mkdirat(dir.as_fd(), name.as_c_str(), nix::sys::stat::Mode::from_bits_truncate(0o755))
                    .or_else(|e| if e == Errno::EEXIST { Ok(()) } else { Err(e) })
                    .map_err(|e| SandboxError::Io(e.into()))?;
                fs::openat2(Dir::Fd(dir.as_fd()), &name, how).map_err(|e| escape_or_io(e, rel))?
            }
            Err(e) => return Err(escape_or_io(e, rel)),
        };
    }
    Ok(())
}

/// Removes the file `anchor/rel`: its directory is resolved beneath the
/// anchor without following links, then the last name is unlinked there.
pub fn safe_remove(anchor_dir: &Path, rel: &Path) -> Result<(), SandboxError> {
    let rel = relative(rel)?;
    let name = rel.file_name().ok_or_else(|| SandboxError::PathEscape(rel.to_path_buf()))?;
    let parent = rel.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let root = anchor(anchor_dir)?;
    let dir = fs::openat2(Dir::Fd(root.as_fd()), &cpath(parent)?, beneath(libc::O_PATH | libc::O_DIRECTORY, 0))
        .map_err(|e| escape_or_io(e, rel))?;
    nix::unistd::unlinkat(dir.as_fd(), cpath(Path::new(name))?.as_c_str(), nix::unistd::UnlinkatFlags::NoRemoveDir)
        .map_err(|e| SandboxError::Io(e.into()))
}

/// A command's result, with each output stream capped (the tail is kept).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandOutput {
    /// The exit status (128 + N for signal N; 124 for a timeout, as
    /// `timeout(1)`).
    pub status: i32,
    /// The last bytes of standard output.
    pub stdout: Vec<u8>,
    /// The last bytes of standard error.
    pub stderr: Vec<u8>,
    /// Whether standard output was cut, and how many bytes were dropped.
    pub stdout_dropped: u64,
    /// Whether standard error was cut, and how many bytes were dropped.
    pub stderr_dropped: u64,
    /// Whether the command was killed for running out of time.
    pub timed_out: bool,
}

/// Files, directories and commands under one surface.
#[derive(Debug)]
pub struct Sandbox {
    surface: Surface,
    workspace: PathBuf,
    policy: Option<PathBuf>,
    interpose: Option<PathBuf>,
}

impl Sandbox {
    /// A sandbox whose surface is `workspace` read-write and nothing else
    /// (commands also get the built-in system surface).
    pub fn with_workspace(workspace: &Path) -> Result<Sandbox, SandboxError> {
        let workspace = workspace.canonicalize()?;
        let mut surface = Surface::new();
        surface.add(Rule { path: workspace.clone(), mode: Mode::Rw, origin: Origin::Workspace });
        Ok(Sandbox { surface, workspace, policy: None, interpose: None })
    }

    /// A sandbox from a policy file; the workspace is its `cwd` (default:
    /// the current directory).
    pub fn from_policy(policy: &Path) -> Result<Sandbox, SandboxError> {
        // Assembled as `interpose run --policy` assembles it.
        let spec = crate::session::surface::SurfaceSpec { policy: Some(policy.to_path_buf()), ..Default::default() };
        let (surface, (_, resolved)) = spec.build_with_policy(crate::policy::file::Effects::None)?;
        Ok(Sandbox { surface, workspace: resolved.cwd, policy: Some(policy.canonicalize()?), interpose: None })
    }

    /// Runs commands with this `interpose` binary.
    pub fn interpose_binary(mut self, path: impl Into<PathBuf>) -> Sandbox {
        self.interpose = Some(path.into());
        self
    }

    /// The surface every operation is checked against.
    pub fn surface(&self) -> &Surface {
        &self.surface
    }

    /// The rule that grants `access` to `path` (relative to the workspace):
    /// its directory and the rest of the path below it.
    fn granted(&self, path: &Path, access: Access) -> Result<(PathBuf, PathBuf), SandboxError> {
        let full = crate::layers::resolve_like_kernel(&self.workspace, path);
        let (allowed, _, _) = crate::layers::check(&self.surface, &self.workspace, path, access);
        if !allowed {
            return Err(SandboxError::PathNotAllowed(full));
        }
        let rule = self.surface.lookup(full.as_os_str().as_bytes()).map(|i| &self.surface.rules()[i as usize]);
        let root = rule.map_or_else(|| self.workspace.clone(), |r| r.path.clone());
        let rest = full.strip_prefix(&root).map_err(|_| SandboxError::PathEscape(full.clone()))?.to_path_buf();
        Ok((root, rest))
    }

    /// Reads a file the surface lets the sandbox read.
    pub fn read_file(&self, path: impl AsRef<Path>) -> Result<Vec<u8>, SandboxError> {
        use std::io::Read;
        let (root, rest) = self.granted(path.as_ref(), Access::Read)?;
        let mut out = Vec::new();
        safe_open_for_read(&root, &rest)?.read_to_end(&mut out)?;
        Ok(out)
    }

    /// Writes (creating or replacing) a file the surface lets the sandbox
    /// write, making missing parent directories.
    pub fn write_file(&self, path: impl AsRef<Path>, data: &[u8]) -> Result<(), SandboxError> {
        use std::io::Write;
        let (root, rest) = self.granted(path.as_ref(), Access::Write)?;
        if let Some(parent) = rest.parent().filter(|p| !p.as_os_str().is_empty()) {
            safe_mkdir_all(&root, parent)?;
        }
        safe_open_for_write(&root, &rest, 0o644)?.write_all(data)?;
        Ok(())
    }

    /// Removes a file the surface lets the sandbox delete.
    pub fn remove_file(&self, path: impl AsRef<Path>) -> Result<(), SandboxError> {
        let (root, rest) = self.granted(path.as_ref(), Access::Delete)?;
        safe_remove(&root, &rest)
    }

    /// The files beneath the workspace matching `pattern` (relative to it)
    /// that the surface lets the sandbox read, sorted. Symlinks are not
    /// followed.
    pub fn glob(&self, pattern: &str) -> Result<Vec<PathBuf>, SandboxError> {
        crate::policy::glob::validate(pattern, crate::policy::glob::Anchor::Workspace)
            .map_err(|_| SandboxError::PathEscape(PathBuf::from(pattern)))?;
        let matcher = crate::policy::glob::compile(&self.workspace.join(pattern))
            .map_err(|_| SandboxError::PathEscape(PathBuf::from(pattern)))?;
        let mut out = Vec::new();
        let mut stack = vec![self.workspace.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir)?.flatten() {
                let path = entry.path();
                let kind = entry.file_type()?;
                if kind.is_dir() {
                    stack.push(path.clone());
                }
                if matcher.is_match(&path)
                    && crate::layers::check(&self.surface, &self.workspace, &path, Access::Read).0
                {
                    out.push(path.strip_prefix(&self.workspace).unwrap_or(&path).to_path_buf());
                }
            }
        }
        out.sort();
        Ok(out)
    }

    /// Runs `argv` under `interpose run` with this sandbox's surface (the
    /// binary given to [`Sandbox::interpose_binary`], else `INTERPOSE_BIN`,
    /// else `interpose` beside the current executable, else on `PATH`), in
    /// the workspace, killing it after `timeout`; each output stream keeps
    /// its last `cap` bytes.
    pub fn command(
        &self,
        argv: &[&str],
        timeout: std::time::Duration,
        cap: usize,
    ) -> Result<CommandOutput, SandboxError> {
        use std::io::Read;
        if crate::sys::landlock::abi_version().is_err() {
            return Err(SandboxError::LandlockUnavailable);
        }
        let exe = self
            .interpose
            .clone()
            .or_else(|| std::env::var_os("INTERPOSE_BIN").map(PathBuf::from))
            .or_else(|| std::env::current_exe().ok().and_then(|e| e.parent().map(|d| d.join("interpose"))))
            .filter(|p| p.exists())
            .unwrap_or_else(|| PathBuf::from("interpose"));
        let mut cmd = std::process::Command::new(exe);
        // The command's own stderr, without interpose's notices (what was
        // refused, credentials removed): a caller reads it as the tool's.
        cmd.args(["run", "--quiet"]);
        match &self.policy {
            Some(p) => cmd.arg("--policy").arg(p),
            None => cmd.arg("--rw").arg(&self.workspace),
        };
        cmd.arg("--").args(argv).current_dir(&self.workspace);
        cmd.stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn()?;
        let tail = |mut r: Box<dyn Read + Send>| {
            std::thread::spawn(move || {
                let (mut kept, mut dropped, mut buf) = (std::collections::VecDeque::new(), 0u64, [0u8; 8192]);
                while let Ok(n) = r.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    kept.extend(&buf[..n]);
                    while kept.len() > cap {
                        kept.pop_front();
                        dropped += 1;
                    }
                }
                (Vec::from(kept), dropped)
            })
        };
        let out = tail(Box::new(child.stdout.take().expect("piped")));
        let err = tail(Box::new(child.stderr.take().expect("piped")));
        // The session's end, woken by its pidfd (no polling): the command's
        // time, then SIGTERM (interpose passes it on and kills what is
        // left), then a grace period, then SIGKILL.
        let pidfd = crate::sys::process::pidfd_open(child.id() as libc::pid_t).map_err(std::io::Error::from)?;
        let timed_out = !exits_within(pidfd.as_fd(), timeout)?;
        if timed_out {
            let _ = crate::sys::process::kill(child.id() as libc::pid_t, libc::SIGTERM);
            if !exits_within(pidfd.as_fd(), KILL_GRACE)? {
                let _ = child.kill();
            }
        }
        let status = child.wait()?;
        let (stdout, stdout_dropped) = out.join().unwrap_or_default();
        let (stderr, stderr_dropped) = err.join().unwrap_or_default();
        use std::os::unix::process::ExitStatusExt;
        let code = if timed_out { 124 } else { status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0)) };
        Ok(CommandOutput { status: code, stdout, stderr, stdout_dropped, stderr_dropped, timed_out })
    }
}

/// How long a timed-out command has after SIGTERM before it is killed.
const KILL_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Whether the process of `pidfd` exits within `within`: its pidfd turns
/// readable when it does.
fn exits_within(pidfd: std::os::fd::BorrowedFd<'_>, within: std::time::Duration) -> Result<bool, SandboxError> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let deadline = std::time::Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        // poll takes at most i32::MAX ms; a longer wait goes round again.
        let ms = PollTimeout::try_from(left.as_millis().min(i32::MAX as u128) as i32).unwrap_or(PollTimeout::MAX);
        match poll(&mut [PollFd::new(pidfd, PollFlags::POLLIN)], ms) {
            Ok(0) if left.is_zero() => return Ok(false),
            Ok(0) | Err(Errno::EINTR) => continue,
            Ok(_) => return Ok(true),
            Err(e) => return Err(SandboxError::Io(e.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_typed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("ws/real")).unwrap();
        std::os::unix::fs::symlink(root.join("ws/real"), root.join("ws/inner")).unwrap();
        let ws = root.join("ws");
        for rel in ["../x", "/etc/x", "inner/x"] {
            let e = safe_open_for_write(&ws, Path::new(rel), 0o600).unwrap_err();
            assert!(matches!(e, SandboxError::PathEscape(_)), "{rel}: {e}");
        }
        assert!(matches!(safe_mkdir_all(&ws, Path::new("inner/a/b")), Err(SandboxError::PathEscape(_))));
        assert!(matches!(safe_remove(&ws, Path::new("inner/x")), Err(SandboxError::PathEscape(_))));
        safe_mkdir_all(&ws, Path::new("real/a/b")).unwrap();
        assert!(ws.join("real/a/b").is_dir());
        std::fs::write(ws.join("real/f"), "x").unwrap();
        safe_remove(&ws, Path::new("real/f")).unwrap();
        assert!(!ws.join("real/f").exists());
    }

    #[test]
    fn the_sandbox_checks_the_surface() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        let s = Sandbox::with_workspace(&ws).unwrap();
        s.write_file("a/b/c.txt", b"x").unwrap();
        s.write_file("a/d.rs", b"y").unwrap();
        assert_eq!(s.glob("a/**/*.txt").unwrap(), vec![PathBuf::from("a/b/c.txt")]);
        assert!(matches!(s.write_file("../outside", b"x"), Err(SandboxError::PathNotAllowed(_))));
        assert!(matches!(s.glob("../**"), Err(SandboxError::PathEscape(_))));
        s.remove_file("a/d.rs").unwrap();
        assert!(!ws.join("a/d.rs").exists());
    }
}
