//! Which rows of the table the filter traps in each mode.

use super::row::{Action, Op};

/// Which trapped syscalls the filter sends to the supervisor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Trapping {
    /// Full mode: every path syscall of the table.
    All,
    /// Fast mode: only what the Landlock ruleset cannot decide for this
    /// surface. `exact` says whether the ruleset enforces the surface
    /// exactly (no carve-out in a writable tree, no glob); when it does not,
    /// everything but metadata reads stays trapped.
    Fast {
        /// Whether Landlock decides the surface exactly.
        exact: bool,
    },
}

impl Trapping {
    /// The path syscalls of the table this mode leaves untrapped.
    pub fn untrapped(self) -> Vec<&'static str> {
        super::table::TABLE
            .iter()
            .filter(|r| matches!(r.action, Action::Emulate | Action::Continue))
            .filter(|r| !self.traps(r.op))
            .map(|r| r.name)
            .collect()
    }

    /// Whether calls of `op` go to the supervisor.
    pub fn traps(self, op: Op) -> bool {
        let Trapping::Fast { exact } = self else { return true };
        match op {
            // Metadata only: what exists and its attributes, never content
            // (the residual risk fast mode states).
            Op::Chdir
            | Op::Statbuf
            | Op::Statx
            | Op::Statfs
            | Op::Access
            | Op::Getxattr
            | Op::Listxattr
            | Op::Readlink => false,
            // Landlock decides these (Execute, Make*, Remove*, Refer,
            // Truncate) the same way, where it enforces the surface exactly.
            Op::Exec
            | Op::Unlink
            | Op::Rmdir
            | Op::Mkdir
            | Op::Rename
            | Op::Link
            | Op::Symlink
            | Op::Truncate
            | Op::Mknod => !exact,
            // Opens stay trapped: /proc/<pid> is decided by sandbox
            // membership, which no Landlock rule expresses (allowed opens in
            // exactly covered trees are answered with CONTINUE). Attribute
            // changes and unix socket addresses are beyond Landlock.
            Op::Open
            | Op::Creat
            | Op::Openat2
            | Op::Chmod
            | Op::Chown
            | Op::Utime
            | Op::Utimes
            | Op::Utimensat
            | Op::Setxattr
            | Op::Removexattr
            | Op::Connect
            | Op::Bind
            | Op::Sendto
            | Op::Sendmsg
            | Op::Sendmmsg
            | Op::Refuse
            | Op::Creds
            // A watch reports the names made in a directory: content.
            | Op::Watch => true,
        }
    }
}
