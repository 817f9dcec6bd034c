//! Which processes are inside the sandbox.

use crate::policy::Processes;
use crate::sys::fs::{self, Dir};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

/// Sandbox membership by ancestry: interpose is a child subreaper and starts
/// nothing but the sandboxed command, so a process is inside exactly when its
/// chain of parents reaches interpose.
#[derive(Debug, Clone, Copy)]
pub struct ProcTree {
    /// interpose's own pid.
    pub supervisor: u32,
}

/// The parent pid of `pid` from `/proc/<pid>/stat` (for a thread id, the
/// parent of its process).
pub fn parent_of(pid: u32) -> Option<u32> {
    crate::sys::procfs::name_and_parent(pid).map(|(_, parent)| parent)
}

impl Processes for ProcTree {
    fn is_inside(&self, _mount: &Path, pid: u32) -> bool {
        let mut at = pid;
        // A pid chain is finite, but bound the walk anyway.
        for _ in 0..4096 {
            if at == self.supervisor {
                return at != pid;
            }
            match parent_of(at) {
                Some(p) if p > 0 => at = p,
                _ => return false,
            }
        }
        false
    }
}

/// Sandbox membership as the supervisor decides it. A procfs numbered as
/// the supervisor's PID namespace is decided by ancestry ([`ProcTree`]).
/// Once the command has a PID namespace of its own, the procfs it sees at
/// `/proc` is that namespace's: every process listed there is the
/// command's init or one of its descendants, so presence decides, and pids
/// there are numbered as the command numbers them.
#[derive(Debug)]
pub struct Membership {
    tree: ProcTree,
    namespace: std::sync::OnceLock<NamespaceProc>,
}

#[derive(Debug)]
struct NamespaceProc {
    /// Where the command sees it.
    mount: PathBuf,
    /// A handle on its root directory.
    root: OwnedFd,
    /// For a container: what its processes share, beyond being listed.
    like: Option<Registration>,
    /// The PID namespace it numbers processes by (its init's, `1` in it),
    /// where it could be opened.
    numbering: Option<OwnedFd>,
}

/// What every process of a container shares with its first one, recorded
/// when the container is registered: its PID namespace and its control
/// groups. A container with the host's PID namespace lists every host
/// process in its `/proc`; these tell its own apart (a process cannot
/// leave its control groups without write access to the cgroup file
/// system, which a container's is not given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registration {
    /// Device and inode of `/proc/<pid>/ns/pid`.
    pid_namespace: (u64, u64),
    /// The contents of `/proc/<pid>/cgroup`.
    cgroup: Vec<u8>,
}

impl Registration {
    /// What process `pid` (as the host numbers it) has.
    pub fn of_host_pid(pid: u32) -> Option<Registration> {
        let proc = fs::openat(Dir::Cwd, c"/proc", libc::O_PATH | libc::O_DIRECTORY, 0).ok()?;
        Registration::of(proc.as_fd(), pid)
    }

    /// What process `pid` has, as the procfs at `proc` numbers it; read
    /// with the supervisor's credentials (a namespace link is readable only
    /// with ptrace access).
    fn of(proc: std::os::fd::BorrowedFd<'_>, pid: u32) -> Option<Registration> {
        super::identity::as_supervisor(|| {
            let dir = std::ffi::CString::new(pid.to_string()).expect("no NUL in a number");
            let dir = fs::openat(Dir::Fd(proc), &dir, libc::O_PATH | libc::O_DIRECTORY, 0).ok()?;
            let ns = fs::fstatat(Dir::Fd(dir.as_fd()), c"ns/pid", 0).ok()?;
            let cgroup = fs::openat(Dir::Fd(dir.as_fd()), c"cgroup", libc::O_RDONLY | libc::O_CLOEXEC, 0).ok()?;
            let mut text = Vec::new();
            std::io::Read::read_to_end(&mut std::io::Read::take(std::fs::File::from(cgroup), 64 << 10), &mut text)
                .ok()?;
            Some(Registration { pid_namespace: (ns.st_dev, ns.st_ino), cgroup: text })
        })
    }
}

impl Membership {
    /// Membership by ancestry from the supervisor's pid.
    pub fn new(supervisor: u32) -> Membership {
        Membership { tree: ProcTree { supervisor }, namespace: std::sync::OnceLock::new() }
    }

    /// The command's PID namespace has its procfs at `mount` in the
    /// command's view; `root` is a handle on it. For a container, `like` is
    /// what its processes share ([`Registration`]).
    pub fn command_namespace(&self, mount: PathBuf, root: OwnedFd, like: Option<Registration>) {
        // Under `run`'s filter no process of the command can make a PID
        // namespace, so this one is every caller's own; a container's
        // processes may (its runtime's profile decides), so theirs are read
        // from their status. A namespace link opens only with ptrace access
        // to its process.
        let numbering = like.is_none().then(|| {
            super::identity::as_supervisor(|| {
                fs::openat(Dir::Fd(root.as_fd()), c"1/ns/pid", libc::O_RDONLY | libc::O_CLOEXEC, 0)
            })
        });
        let numbering = numbering.and_then(Result::ok);
        let _ = self.namespace.set(NamespaceProc { mount, root, like, numbering });
    }
}

impl Processes for Membership {
    fn is_inside(&self, mount: &Path, pid: u32) -> bool {
        match self.namespace.get() {
            Some(ns) if ns.mount == mount => match &ns.like {
                None => {
                    let mut num = [0u8; 24];
                    let name = fs::decimal(pid.into(), &mut num);
                    fs::fstatat(Dir::Fd(ns.root.as_fd()), name, libc::AT_SYMLINK_NOFOLLOW).is_ok()
                }
                Some(like) => Registration::of(ns.root.as_fd(), pid).as_ref() == Some(like),
            },
            _ => self.tree.is_inside(mount, pid),
        }
    }

    fn numbers_as_the_command(&self, mount: &Path) -> bool {
        self.namespace.get().is_some_and(|ns| ns.mount == mount)
    }

    fn numbers_every_caller(&self, mount: &Path) -> bool {
        self.namespace.get().is_some_and(|ns| ns.mount == mount && ns.numbering.is_some())
    }

    fn numbers_of(&self, mount: &Path, tid: u32) -> Option<(u32, u32)> {
        let ns = self.namespace.get().filter(|ns| ns.mount == mount)?;
        let numbering = ns.numbering.as_ref()?.as_fd();
        let number = |group| crate::sys::process::number_in_namespace(numbering, tid, group).ok();
        Some((number(true)?, number(false)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ancestry_decides_membership() {
        let me = std::process::id();
        let mut child = std::process::Command::new("sleep").arg("5").spawn().unwrap();
        let tree = ProcTree { supervisor: me };
        let proc = Path::new("/proc");
        assert!(tree.is_inside(proc, child.id()));
        assert!(!tree.is_inside(proc, me), "the supervisor itself is outside");
        assert!(!tree.is_inside(proc, 1));
        assert!(!ProcTree { supervisor: child.id() }.is_inside(proc, me));
        assert_eq!(crate::sys::procfs::name_and_parent(child.id()), Some(("sleep".to_string(), me)));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!tree.is_inside(proc, child.id()), "a reaped pid is outside");
    }
}
