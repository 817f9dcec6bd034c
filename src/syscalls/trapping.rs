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
        /// Whether read-only opens are left to Landlock too: only where it
        /// decides the surface exactly and the command's `/proc` is its PID
        /// namespace's own procfs, granted in the child with the surface's
        /// carve-outs masked (`sandbox::landlock::OwnProc`), so that
        /// `/proc/<pid>` names only the sandbox's processes.
        reads: bool,
        /// Whether `readlink` is left to the kernel too: only with `reads`
        /// where the command's root holds nothing but the surface
        /// (`--isolate`), so that a link the kernel reads is one the
        /// surface lets be read.
        links: bool,
    },
}

/// The `open`/`openat` flags that make an open more than a read: writing,
/// creating, truncating, or an `O_PATH` handle (decided as a lookup by the
/// supervisor). An open with any of them set stays trapped in fast mode.
pub const NOT_READ_ONLY: [u64; 6] = [
    libc::O_WRONLY as u64,
    libc::O_RDWR as u64,
    libc::O_CREAT as u64,
    libc::O_TRUNC as u64,
    libc::O_PATH as u64,
    // O_TMPFILE without its O_DIRECTORY bit, which a read-only open of a
    // directory sets too.
    (libc::O_TMPFILE & !libc::O_DIRECTORY) as u64,
];

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

    /// The path syscalls this mode leaves untrapped when their flags make
    /// them read-only (none of [`NOT_READ_ONLY`]).
    pub fn untrapped_when_read_only(self) -> Vec<&'static str> {
        super::table::TABLE.iter().filter(|r| r.op == Op::Open && self.leaves_reads(r.op)).map(|r| r.name).collect()
    }

    /// Whether calls of `op` whose flags make them read-only are left to
    /// Landlock (the filter then traps only those with a bit of
    /// [`NOT_READ_ONLY`] set). Only `open` and `openat`: `openat2` keeps its
    /// flags behind a pointer, which a filter cannot read safely, and
    /// `creat` always writes.
    pub fn leaves_reads(self, op: Op) -> bool {
        matches!(self, Trapping::Fast { reads: true, .. }) && op == Op::Open
    }

    /// Whether calls of `op` that ask only whether a name exists
    /// (`access` with `F_OK`, a mode of 0) are left to the kernel: that is
    /// what a `stat`, which fast mode leaves untrapped, says too. Any other
    /// mode stays trapped (it must answer what the surface allows).
    pub fn leaves_existence(self, op: Op) -> bool {
        matches!(self, Trapping::Fast { .. }) && op == Op::Access
    }

    /// Whether calls of `op` go to the supervisor.
    pub fn traps(self, op: Op) -> bool {
        let Trapping::Fast { exact, reads, links } = self else { return true };
        match op {
            // Metadata only: what exists and its stat attributes, never
            // content (the residual risk fast mode states).
            Op::Chdir | Op::Statbuf | Op::Statx | Op::Statfs => false,
            // More than that: a link's target and extended attributes are
            // content, and access(2) must answer what the surface allows
            // (the kernel's own answer knows nothing of Landlock), except
            // with F_OK ([`Trapping::leaves_existence`]). A link's target is
            // the kernel's to read where only the surface exists.
            Op::Readlink => !(links && reads),
            Op::Access | Op::Getxattr | Op::Listxattr => true,
            // An exec changes the credentials the supervisor acts with
            // (the kernel computes the new program's capabilities): it
            // must see every one, to read them again after it.
            Op::Exec => true,
            // Landlock decides these (Make*, Remove*, Refer, Truncate) the
            // same way, where it enforces the surface exactly.
            Op::Unlink
            | Op::Rmdir
            | Op::Mkdir
            | Op::Rename
            | Op::Link
            | Op::Symlink
            | Op::Truncate
            | Op::Mknod => !exact,
            // Opens stay trapped: /proc/<pid> is decided by sandbox
            // membership, which no Landlock rule expresses unless the
            // command's procfs is its own (then read-only opens are left to
            // Landlock: [`Trapping::leaves_reads`]); writes to the command's
            // own /proc/<pid> are the supervisor's to allow. Allowed opens
            // in exactly covered trees are answered with CONTINUE.
            // Attribute changes and unix socket addresses are beyond
            // Landlock.
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
