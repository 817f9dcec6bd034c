//! `interpose run --ask SOCKET`: the approvals socket, made where the
//! command cannot reach it, and removed when the session ends.

use super::RunError;
use crate::policy::{Access, Mode, Origin, Rule, Surface};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The longest `--ask-timeout`: a day.
const MAX_TIMEOUT_S: u64 = 86_400;

/// `--ask`, `--ask-timeout`, `--ask-policy` as given.
#[derive(Debug, Clone)]
pub struct Ask {
    /// Where the socket is made.
    pub socket: PathBuf,
    /// Seconds a question waits.
    pub timeout_s: u64,
    /// Where a `policy` answer's rule is written.
    pub policy: Option<PathBuf>,
}

/// What refuses `--ask`.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    /// The timeout is out of range.
    #[error("--ask-timeout {0}: expected 1 to {MAX_TIMEOUT_S} seconds")]
    Timeout(u64),
    /// A mode in which the calls to ask about are not all trapped.
    #[error("--ask cannot be used with {0}: {1}")]
    Mode(&'static str, &'static str),
    /// The socket's directory is one the command could reach.
    #[error(
        "--ask {socket}: the command could reach {dir} ({rule}); make the socket where the surface grants nothing, \
         or the sandboxed program could answer its own questions"
    )]
    Reachable {
        /// The socket.
        socket: PathBuf,
        /// Its directory.
        dir: PathBuf,
        /// What grants it.
        rule: String,
    },
    /// Something is at the path already.
    #[error("--ask {0}: {1}")]
    Taken(PathBuf, &'static str),
    /// The policy file for `policy` answers is inside the surface.
    #[error("--ask-policy {file}: the command could write it ({rule}); name a file outside the surface")]
    PolicyReachable {
        /// The file.
        file: PathBuf,
        /// What grants it.
        rule: String,
    },
}

impl Ask {
    /// Refuses what cannot work before anything is set up.
    pub fn validate(&self) -> Result<(), AskError> {
        if !(1..=MAX_TIMEOUT_S).contains(&self.timeout_s) {
            return Err(AskError::Timeout(self.timeout_s));
        }
        Ok(())
    }

    /// Checks that the command cannot reach the socket or the policy file,
    /// and carves both out of `surface` (so a call naming them is refused
    /// at once, never asked).
    pub fn guard(&self, surface: &mut Surface) -> Result<(), AskError> {
        let socket = absolute(&self.socket);
        let dir = socket.parent().unwrap_or(Path::new("/")).to_path_buf();
        let dir = crate::policy::canonical_lenient(&dir).unwrap_or(dir);
        let reaches = |surface: &Surface, p: &Path| {
            [Access::Read, Access::Write, Access::Create].into_iter().find_map(|a| {
                let v = surface.decide(p.as_os_str().as_encoded_bytes(), a, &crate::policy::NoProcesses);
                v.allowed.then(|| surface.describe(v.reason))
            })
        };
        if let Some(rule) = reaches(surface, &dir) {
            return Err(AskError::Reachable { socket, dir, rule });
        }
        let name = socket.file_name().map(|n| dir.join(n)).unwrap_or_else(|| dir.clone());
        surface.add(Rule { path: name, mode: Mode::Deny, origin: Origin::System("the approvals socket (--ask)") });
        if let Some(file) = &self.policy {
            let file = absolute(file);
            let file = crate::policy::canonical_lenient(&file).unwrap_or(file);
            if let Some(rule) = reaches(surface, &file) {
                return Err(AskError::PolicyReachable { file, rule });
            }
            surface.add(Rule { path: file, mode: Mode::Deny, origin: Origin::System("the approvals policy file") });
        }
        Ok(())
    }

    /// Makes the listening socket, mode 0600; a stale one (nobody
    /// listening) is replaced.
    pub fn listen(&self) -> Result<(UnixListener, SocketFile), RunError> {
        let path = &self.socket;
        match std::fs::symlink_metadata(path) {
            Ok(md) if !md.file_type().is_socket() => {
                return Err(AskError::Taken(path.clone(), "exists and is not a socket").into())
            }
            Ok(_) if UnixStream::connect(path).is_ok() => {
                return Err(AskError::Taken(path.clone(), "another session is listening there").into())
            }
            Ok(_) => std::fs::remove_file(path).map_err(super::io_at("removing the stale socket", path))?,
            Err(_) => {}
        }
        // Made with no permission for others from the start (bind takes
        // the umask), and set to 0600 after.
        let old = crate::sys::process::umask(0o177);
        let bound = UnixListener::bind(path);
        crate::sys::process::umask(old);
        let listener = bound.map_err(super::io_at("making the approvals socket", path))?;
        let file = SocketFile(path.clone());
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(super::io_at("setting the approvals socket's mode", path))?;
        Ok((listener, file))
    }

    /// How long a question waits.
    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout_s)
    }
}

/// The socket file, removed when dropped (the session's end).
#[derive(Debug)]
pub struct SocketFile(PathBuf);

impl Drop for SocketFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}
