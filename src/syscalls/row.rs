//! The types of a row of the syscall table. The rows live in
//! `bpf/syscalls.tsv` and are compiled into [`super::table`] by
//! `cargo xtask codegen`.

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
    /// `mknod*`: creates a file of any type (devices are never granted).
    Mknod,
    /// `chdir`: decided with [`crate::policy::Access::Stat`], then
    /// continued (a process's cwd can only be changed by itself).
    Chdir,
    /// `stat`/`lstat`/`newfstatat`: the supervisor writes the `struct stat`
    /// of the checked object to the buffer at `extra`.
    Statbuf,
    /// `statx(dirfd, path, flags, mask, buf)`: buffer at `extra`.
    Statx,
    /// `statfs`/`fstatfs`: the `struct statfs` buffer at `extra`.
    Statfs,
    /// `access` family: the mode at `extra`.
    Access,
    /// `getxattr` family: name, value buffer and size from `extra`
    /// (`getxattrat`: name, then a `struct xattr_args *` and its size).
    Getxattr,
    /// `listxattr` family: list buffer and size from `extra`.
    Listxattr,
    /// `readlink`/`readlinkat`: buffer at `extra`, its size after it.
    Readlink,
    /// `inotify_add_watch(fd, path, mask)`: a watch reveals the names and
    /// events under the path, so it is decided as a read; the mask at
    /// `extra`.
    Watch,
    /// `chmod` family: mode in argument `extra`.
    Chmod,
    /// `chown` family: uid and gid in arguments `extra` and `extra + 1`.
    Chown,
    /// `utime(path, struct utimbuf *)` at `extra`.
    Utime,
    /// `utimes`/`futimesat`: `struct timeval[2]` at `extra`.
    Utimes,
    /// `utimensat`: `struct timespec[2]` at `extra`; a NULL path acts on dirfd.
    Utimensat,
    /// `setxattr` family: name, value, size, flags from argument `extra`.
    Setxattr,
    /// `removexattr` family: name at `extra`.
    Removexattr,
    /// `connect(sockfd, addr, len)`: socket in `dirfd`, address at `extra`.
    Connect,
    /// `bind(sockfd, addr, len)`.
    Bind,
    /// `sendto(sockfd, buf, len, flags, addr, addrlen)`: address at `extra`.
    Sendto,
    /// `sendmsg(sockfd, msghdr, flags)`: the `msghdr` at `extra`.
    Sendmsg,
    /// `sendmmsg(sockfd, mmsghdr *, vlen, flags)`: a vector of messages at
    /// `extra`, each with its own address.
    Sendmmsg,
    /// Refused outright.
    Refuse,
    /// A change of the caller's own credentials (the setuid family,
    /// `capset`): continued, after the supervisor forgets what it cached
    /// about them.
    Creds,
}

/// Whether a symlink in the last path component is followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follow {
    /// Always (`stat`, `chmod`).
    Yes,
    /// Never (`lstat`, `unlink`).
    No,
    /// Unless `AT_SYMLINK_NOFOLLOW` is in the flags argument.
    UnlessNofollowFlag,
    /// Decided by the op itself (open flags, `AT_SYMLINK_FOLLOW` for link).
    NotApplicable,
}

/// A condition on an argument under which the row's action applies (the
/// call is allowed untrapped otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// Any bit of `mask` is set in argument `arg`.
    AnyBit {
        /// Argument index.
        arg: u8,
        /// The bits.
        mask: u64,
    },
    /// The low 32 bits of argument `arg` equal one of `values` (an ioctl
    /// request number, which the kernel takes as an `unsigned int`).
    Equals {
        /// Argument index.
        arg: u8,
        /// The values.
        values: &'static [u32],
    },
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
    /// Allowed untrapped when the command has an IPC namespace of its own
    /// (its System V objects and message queues are then its own), refused
    /// with `EPERM` by the filter otherwise.
    IpcNamespace,
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
    /// Whether the last component's symlink is followed.
    pub follow: Follow,
    /// Index of the first op-specific argument.
    pub extra: Option<u8>,
    /// How it is answered.
    pub action: Action,
    /// Condition on the arguments for the action to apply.
    pub when: Option<When>,
    /// A refusal the filter makes before the action, in every mode: this
    /// errno when the condition holds (`renameat2` with `RENAME_WHITEOUT`).
    pub refuse: Option<(i32, When)>,
    /// Why this disposition is safe.
    pub note: &'static str,
}
