//! The types of the syscall table. The rows live in `bpf/syscalls.tsv` and
//! are compiled into [`super::table`] by `cargo xtask codegen`.

/// What a trapped syscall does, which decides how its paths are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `open`/`openat`: flags in `flags`, mode in the argument after it.
    Open,
    /// `creat(path, mode)`.
    Creat,
    /// `openat2(dirfd, path, how, size)`.
    Openat2,
    /// `execve`/`execveat`.
    Exec,
    /// `unlink`/`unlinkat` (`AT_REMOVEDIR` makes it an rmdir).
    Unlink,
    /// `rmdir`.
    Rmdir,
    /// `mkdir`/`mkdirat`.
    Mkdir,
    /// `rename*`: the first path is removed, the second created.
    Rename,
    /// `link*`: the first path gains the second name.
    Link,
    /// `symlink*`: only the second path (the new link) is a file system name.
    Symlink,
    /// `truncate`.
    Truncate,
    /// Refused outright.
    Refuse,
}

/// How the supervisor answers an allowed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// The supervisor performs the operation itself on the object it checked.
    Emulate,
    /// The supervisor decides, then lets the kernel run the call; the Landlock
    /// ruleset enforces the same answer on whatever the kernel resolves.
    Continue,
    /// Refused with this errno, by the BPF filter itself.
    Errno(i32),
}

/// One row of the syscall table.
#[derive(Debug, Clone, Copy)]
pub struct Syscall {
    /// Name as in `syscalls(2)`.
    pub name: &'static str,
    /// x86_64 number.
    pub nr: i32,
    /// What it does.
    pub op: Op,
    /// Argument index of the directory fd of `path`.
    pub dirfd: Option<u8>,
    /// Argument index of the first path.
    pub path: Option<u8>,
    /// Argument index of the directory fd of `path2`.
    pub dirfd2: Option<u8>,
    /// Argument index of the second path.
    pub path2: Option<u8>,
    /// Argument index of the flags (for `openat2`, the `open_how` pointer).
    pub flags: Option<u8>,
    /// How it is answered.
    pub action: Action,
    /// Why this disposition is safe.
    pub note: &'static str,
}
