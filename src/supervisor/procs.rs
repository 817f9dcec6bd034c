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
}

impl Membership {
    /// Membership by ancestry from the supervisor's pid.
    pub fn new(supervisor: u32) -> Membership {
        Membership { tree: ProcTree { supervisor }, namespace: std::sync::OnceLock::new() }
    }

    /// The command's PID namespace has its procfs at `mount` in the
    /// command's view; `root` is a handle on it.
    pub fn command_namespace(&self, mount: PathBuf, root: OwnedFd) {
        let _ = self.namespace.set(NamespaceProc { mount, root });
    }
}

impl Processes for Membership {
    fn is_inside(&self, mount: &Path, pid: u32) -> bool {
        match self.namespace.get() {
            Some(ns) if ns.mount == mount => {
                let mut num = [0u8; 24];
                fs::fstatat(Dir::Fd(ns.root.as_fd()), fs::decimal(pid.into(), &mut num), libc::AT_SYMLINK_NOFOLLOW)
                    .is_ok()
            }
            _ => self.tree.is_inside(mount, pid),
        }
    }

    fn numbers_as_the_command(&self, mount: &Path) -> bool {
        self.namespace.get().is_some_and(|ns| ns.mount == mount)
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
