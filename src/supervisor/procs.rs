//! Which processes are inside the sandbox.

use crate::policy::Processes;

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
    let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses; fields resume after
    // the last ')'.
    let close = stat.iter().rposition(|&c| c == b')')?;
    let mut fields = stat[close + 1..].split(|&c| c == b' ').filter(|f| !f.is_empty());
    let _state = fields.next()?;
    std::str::from_utf8(fields.next()?).ok()?.parse().ok()
}

/// The name and parent pid of `pid`, from one read of `/proc/<pid>/stat`.
pub fn name_and_parent(pid: u32) -> Option<(String, u32)> {
    let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    let open = stat.iter().position(|&c| c == b'(')?;
    let close = stat.iter().rposition(|&c| c == b')')?;
    let name = String::from_utf8_lossy(stat.get(open + 1..close)?).into_owned();
    let mut fields = stat[close + 1..].split(|&c| c == b' ').filter(|f| !f.is_empty());
    let _state = fields.next()?;
    let parent = std::str::from_utf8(fields.next()?).ok()?.parse().ok()?;
    Some((name, parent))
}

impl Processes for ProcTree {
    fn is_inside(&self, pid: u32) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ancestry_decides_membership() {
        let me = std::process::id();
        let mut child = std::process::Command::new("sleep").arg("5").spawn().unwrap();
        let tree = ProcTree { supervisor: me };
        assert!(tree.is_inside(child.id()));
        assert!(!tree.is_inside(me), "the supervisor itself is outside");
        assert!(!tree.is_inside(1));
        assert!(!ProcTree { supervisor: child.id() }.is_inside(me));
        assert_eq!(name_and_parent(child.id()), Some(("sleep".to_string(), me)));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!tree.is_inside(child.id()), "a reaped pid is outside");
    }
}
