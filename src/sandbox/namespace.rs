//! The session's own mount namespace, shared by the supervisor and the
//! command.
//!
//! interpose moves itself into a mount namespace of its own before any
//! thread starts, so that it and the command it forks see the same mounts:
//! overlays on package caches (`caches.rs`) and a private `/dev/shm`. Its
//! mounts are slaves of the host's: host mounts still appear, none of ours
//! leave. As root a mount namespace is enough; an ordinary user first takes
//! a user namespace that maps only its own uid and gid to themselves, so
//! every file keeps its owner and the command runs as that user with no
//! capability, as it would natively. Where neither can be had (unprivileged
//! user namespaces switched off), the session runs in the host's namespace
//! and says what that costs.

use crate::sys::{process, Errno};
use std::ffi::CString;

/// Which namespace the session got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Namespace {
    /// A mount namespace (interpose runs as root).
    Mount,
    /// A user namespace mapping the caller's own uid and gid, and a mount
    /// namespace owned by it.
    User {
        /// The uid mapped (to itself).
        uid: u32,
        /// The gid mapped (to itself).
        gid: u32,
    },
    /// None: the host's mount namespace, for this reason.
    Host(String),
}

impl Namespace {
    /// Whether mounts can be made for the session.
    pub fn can_mount(&self) -> bool {
        !matches!(self, Namespace::Host(_))
    }

    /// Whether interpose holds capabilities only in a user namespace of its
    /// own: its command then keeps none, as it would natively.
    pub fn unprivileged(&self) -> bool {
        matches!(self, Namespace::User { .. })
    }
}

impl std::fmt::Display for Namespace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Namespace::Mount => f.write_str("a mount namespace of its own"),
            Namespace::User { uid, gid } => {
                write!(f, "a user namespace mapping uid {uid} and gid {gid} to themselves, with a mount namespace")
            }
            Namespace::Host(why) => write!(f, "the host's mount namespace ({why})"),
        }
    }
}

/// Enters the session's namespace (unless `wanted` is false:
/// `--no-namespace`). Must be called while the process is single-threaded
/// (a user namespace needs it, and a mount namespace is then the whole
/// process's).
pub fn enter(wanted: bool) -> Namespace {
    if !wanted {
        return Namespace::Host("--no-namespace".into());
    }
    let euid = nix::unistd::geteuid().as_raw();
    let result = if euid == 0 {
        process::unshare(libc::CLONE_NEWNS).map(|()| Namespace::Mount)
    } else {
        own_user_namespace(euid, nix::unistd::getegid().as_raw())
    };
    let ns = match result.and_then(|ns| slave_root().map(|()| ns)) {
        Ok(ns) => ns,
        Err(e) if euid == 0 => Namespace::Host(format!("unshare(CLONE_NEWNS): {e}")),
        Err(e) => Namespace::Host(format!(
            "no unprivileged user namespace here ({e}); run as root or allow them (user.max_user_namespaces, kernel.apparmor_restrict_unprivileged_userns)"
        )),
    };
    tracing::debug!("session namespace: {ns}");
    ns
}

fn own_user_namespace(uid: u32, gid: u32) -> Result<Namespace, Errno> {
    process::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS)?;
    // setgroups must be denied before an unprivileged process may write its
    // gid map; the supplementary groups stay as they were.
    process::write_file(c"/proc/self/setgroups", b"deny")?;
    let map = |id: u32| CString::new(format!("{id} {id} 1")).expect("no NUL in numbers");
    process::write_file(c"/proc/self/uid_map", map(uid).as_bytes())?;
    process::write_file(c"/proc/self/gid_map", map(gid).as_bytes())?;
    Ok(Namespace::User { uid, gid })
}

/// Makes every mount a slave of the host's: nothing mounted here
/// propagates out.
fn slave_root() -> Result<(), Errno> {
    process::mount(None, c"/", None, libc::MS_REC | libc::MS_SLAVE, None)
}

/// Mounts a fresh tmpfs on `/dev/shm`: POSIX shared memory and named
/// semaphores (Python's multiprocessing) work, and the command sees none of
/// the host's segments. Returns whether it did.
pub fn private_shm(ns: &Namespace) -> Result<(), Errno> {
    if !ns.can_mount() {
        return Err(Errno::EPERM);
    }
    process::mount(
        Some(c"interpose-shm"),
        c"/dev/shm",
        Some(c"tmpfs"),
        libc::MS_NOSUID | libc::MS_NODEV,
        Some(c"mode=1777,size=50%"),
    )
}
