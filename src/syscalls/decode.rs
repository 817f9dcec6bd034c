//! A trapped call's arguments by name: the six registers of a notification
//! read once, through the call's table row, into a typed [`Args`]. The
//! supervisor's handlers read fields, never argument indices, so which
//! register holds a path, a mode or a buffer is said in one place (here,
//! from the table) and unit-tested here, without a kernel.

use super::row::{Op, Syscall};

/// A path argument: where it lies in the caller's memory and the directory
/// a relative one starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathAt {
    /// The starting directory: the call's dirfd, `AT_FDCWD` for a call
    /// without one.
    pub dirfd: i32,
    /// The address of the NUL-terminated path (0: NULL, which reading
    /// turns into `EFAULT` as the kernel does).
    pub addr: u64,
}

/// The arguments of one trapped call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Args {
    /// The dirfd of the first path, or the descriptor a call without a path
    /// acts on (`fstat`, `fchmod`, a socket's); `None` where the call takes
    /// neither.
    pub dirfd: Option<i32>,
    /// The address of the first path; `None` where the call has none.
    pub path: Option<u64>,
    /// The dirfd of the second path (`renameat`, `linkat`, `symlinkat`).
    pub dirfd2: Option<i32>,
    /// The address of the second path (`rename`, `link`, `symlink`'s new
    /// name).
    pub path2: Option<u64>,
    /// The `AT_*`, `RENAME_*` or open flags; `None` where the call takes
    /// none (for `openat2`, see [`OpArgs::Openat2`]).
    pub flags: Option<u64>,
    /// What the call reads beyond its names and flags.
    pub op: OpArgs,
}

/// The op-specific arguments, by op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpArgs {
    /// Nothing beyond the names and flags (unlink, rmdir, rename, link,
    /// chdir; the refused and credential rows).
    None,
    /// `open`/`openat` (the flags again, as the `int` the kernel takes) and
    /// `creat` (`O_CREAT | O_WRONLY | O_TRUNC`): the creation mode.
    Open {
        /// The open flags.
        flags: i32,
        /// The mode of a file created.
        mode: u32,
    },
    /// `openat2`: the `struct open_how` and the size the caller gave it.
    Openat2 {
        /// Its address.
        how: u64,
        /// Its size.
        size: u64,
    },
    /// `execve`/`execveat`: the argument vector.
    Exec {
        /// The address of `argv`.
        argv: u64,
    },
    /// `mkdir`/`mkdirat`.
    Mkdir {
        /// The mode, before the umask.
        mode: u32,
    },
    /// `mknod`/`mknodat`.
    Mknod {
        /// Type and mode.
        mode: u32,
        /// The device number.
        dev: u64,
    },
    /// `symlink`/`symlinkat`: the target, a string never resolved.
    Symlink {
        /// Its address.
        target: u64,
    },
    /// `truncate`.
    Truncate {
        /// The new length.
        length: i64,
    },
    /// The stat family and `statfs`: where the result goes.
    Stat {
        /// The caller's buffer.
        buf: u64,
    },
    /// `statx`.
    Statx {
        /// The fields asked for.
        mask: u32,
        /// The caller's `struct statx`.
        buf: u64,
    },
    /// The `access` family.
    Access {
        /// The mode asked, as passed (unknown bits are `EINVAL`).
        mode: u64,
    },
    /// `getxattr`/`lgetxattr`.
    Getxattr {
        /// The attribute's name.
        name: u64,
        /// Where the value goes.
        value: u64,
        /// Its room.
        size: u64,
    },
    /// `getxattrat`: value and size in a `struct xattr_args`.
    GetxattrAt {
        /// The attribute's name.
        name: u64,
        /// The `struct xattr_args`.
        args: u64,
        /// The size the caller gave it.
        size: u64,
    },
    /// The `listxattr` family.
    Listxattr {
        /// Where the list goes.
        list: u64,
        /// Its room.
        size: u64,
    },
    /// `readlink`/`readlinkat`.
    Readlink {
        /// Where the target goes.
        buf: u64,
        /// Its room, as the `int` the kernel checks (≤ 0 is `EINVAL`).
        size: i64,
    },
    /// `inotify_add_watch`.
    Watch {
        /// The caller's inotify instance.
        instance: i32,
        /// The events (and `IN_DONT_FOLLOW`).
        mask: u32,
    },
    /// The `chmod` family.
    Chmod {
        /// The mode.
        mode: u32,
    },
    /// The `chown` family.
    Chown {
        /// The new owner (`-1`: unchanged).
        uid: u32,
        /// The new group (`-1`: unchanged).
        gid: u32,
    },
    /// `utime`, `utimes`, `futimesat`, `utimensat`: the times, in the
    /// format the op names.
    Times {
        /// Their address (0: now).
        at: u64,
    },
    /// The `setxattr` family.
    Setxattr {
        /// The attribute's name.
        name: u64,
        /// The value.
        value: u64,
        /// Its size.
        size: u64,
        /// `XATTR_CREATE`, `XATTR_REPLACE`.
        flags: i32,
    },
    /// The `removexattr` family.
    Removexattr {
        /// The attribute's name.
        name: u64,
    },
    /// `connect` and `bind`.
    Address {
        /// The socket.
        socket: i32,
        /// The address.
        addr: u64,
        /// Its length.
        len: u64,
    },
    /// `sendto` (trapped only with an address).
    Sendto {
        /// The socket.
        socket: i32,
        /// The data.
        buf: u64,
        /// Its length.
        len: u64,
        /// `MSG_*`.
        flags: u64,
        /// The address.
        addr: u64,
        /// Its length.
        addrlen: u64,
    },
    /// `sendmsg`.
    Sendmsg {
        /// The socket.
        socket: i32,
        /// The `struct msghdr`.
        msg: u64,
        /// `MSG_*`.
        flags: u64,
    },
    /// `sendmmsg`.
    Sendmmsg {
        /// The socket.
        socket: i32,
        /// The vector of `struct mmsghdr`.
        vec: u64,
        /// How many (the `unsigned int` the kernel takes).
        vlen: u64,
        /// `MSG_*`.
        flags: u64,
    },
}

impl Args {
    /// The arguments of a call of `row` made with the registers `raw`.
    pub fn decode(row: &Syscall, raw: &[u64; 6]) -> Args {
        let at = |i: Option<u8>| i.map(|i| raw[usize::from(i)]);
        // The op-specific arguments start at the row's `extra` index; every
        // row whose op reads one names it (the table test checks).
        let x = usize::from(row.extra.unwrap_or(0));
        let op = match row.op {
            Op::Open => {
                let i = usize::from(row.flags.unwrap_or(0));
                OpArgs::Open { flags: raw[i] as i32, mode: raw[(i + 1).min(5)] as u32 }
            }
            Op::Creat => OpArgs::Open { flags: libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC, mode: raw[1] as u32 },
            Op::Openat2 => OpArgs::Openat2 { how: raw[2], size: raw[3] },
            Op::Exec => OpArgs::Exec { argv: raw[if row.dirfd.is_some() { 2 } else { 1 }] },
            Op::Mkdir => OpArgs::Mkdir { mode: raw[x] as u32 },
            Op::Mknod => OpArgs::Mknod { mode: raw[x] as u32, dev: raw[x + 1] },
            // The target is the first argument of symlink and symlinkat alike.
            Op::Symlink => OpArgs::Symlink { target: raw[0] },
            Op::Truncate => OpArgs::Truncate { length: raw[x] as i64 },
            Op::Statbuf | Op::Statfs => OpArgs::Stat { buf: raw[x] },
            Op::Statx => OpArgs::Statx { mask: raw[3] as u32, buf: raw[x] },
            Op::Access => OpArgs::Access { mode: raw[x] },
            Op::Getxattr if row.flags.is_some() => {
                OpArgs::GetxattrAt { name: raw[x], args: raw[x + 1], size: raw[x + 2] }
            }
            Op::Getxattr => OpArgs::Getxattr { name: raw[x], value: raw[x + 1], size: raw[x + 2] },
            Op::Listxattr => OpArgs::Listxattr { list: raw[x], size: raw[x + 1] },
            Op::Readlink => OpArgs::Readlink { buf: raw[x], size: raw[x + 1] as i64 },
            Op::Watch => OpArgs::Watch { instance: raw[0] as i32, mask: raw[x] as u32 },
            Op::Chmod => OpArgs::Chmod { mode: raw[x] as u32 },
            Op::Chown => OpArgs::Chown { uid: raw[x] as u32, gid: raw[x + 1] as u32 },
            Op::Utime | Op::Utimes | Op::Utimensat => OpArgs::Times { at: raw[x] },
            Op::Setxattr => {
                OpArgs::Setxattr { name: raw[x], value: raw[x + 1], size: raw[x + 2], flags: raw[x + 3] as i32 }
            }
            Op::Removexattr => OpArgs::Removexattr { name: raw[x] },
            Op::Connect | Op::Bind => OpArgs::Address { socket: raw[0] as i32, addr: raw[x], len: raw[x + 1] },
            Op::Sendto => OpArgs::Sendto {
                socket: raw[0] as i32,
                buf: raw[1],
                len: raw[2],
                flags: raw[3],
                addr: raw[x],
                addrlen: raw[x + 1],
            },
            Op::Sendmsg => OpArgs::Sendmsg { socket: raw[0] as i32, msg: raw[x], flags: raw[2] },
            Op::Sendmmsg => {
                OpArgs::Sendmmsg { socket: raw[0] as i32, vec: raw[x], vlen: raw[x + 1] & 0xffff_ffff, flags: raw[3] }
            }
            Op::Unlink | Op::Rmdir | Op::Rename | Op::Link | Op::Chdir | Op::Refuse | Op::Creds => OpArgs::None,
        };
        Args {
            dirfd: at(row.dirfd).map(|d| d as i32),
            path: at(row.path),
            dirfd2: at(row.dirfd2).map(|d| d as i32),
            path2: at(row.path2),
            flags: at(row.flags),
            op,
        }
    }

    /// The first path and where it starts.
    pub fn first(&self) -> PathAt {
        PathAt { dirfd: self.dirfd.unwrap_or(libc::AT_FDCWD), addr: self.path.unwrap_or(0) }
    }

    /// The second path and where it starts.
    pub fn second(&self) -> PathAt {
        PathAt { dirfd: self.dirfd2.unwrap_or(libc::AT_FDCWD), addr: self.path2.unwrap_or(0) }
    }

    /// The flags, 0 for a call without them.
    pub fn flag_bits(&self) -> u64 {
        self.flags.unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syscalls::table;

    /// Registers whose values say where they came from: argument `i` holds
    /// `0x100 * (i + 1)`, a dirfd or socket number included.
    const RAW: [u64; 6] = [0x100, 0x200, 0x300, 0x400, 0x500, 0x600];

    fn decode(name: &str) -> Args {
        let row = table::TABLE.iter().find(|r| r.name == name).unwrap_or_else(|| panic!("{name}: no row"));
        Args::decode(row, &RAW)
    }

    #[test]
    fn opens_name_flags_mode_and_how() {
        let open = decode("open");
        assert_eq!((open.first(), open.flags), (PathAt { dirfd: libc::AT_FDCWD, addr: 0x100 }, Some(0x200)));
        assert_eq!(open.op, OpArgs::Open { flags: 0x200, mode: 0x300 });
        let openat = decode("openat");
        assert_eq!(openat.first(), PathAt { dirfd: 0x100, addr: 0x200 });
        assert_eq!(openat.op, OpArgs::Open { flags: 0x300, mode: 0x400 });
        let creat = decode("creat");
        assert_eq!(creat.op, OpArgs::Open { flags: libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC, mode: 0x200 });
        assert_eq!(creat.flags, None);
        assert_eq!(decode("openat2").op, OpArgs::Openat2 { how: 0x300, size: 0x400 });
    }

    #[test]
    fn execs_name_their_argv() {
        assert_eq!(decode("execve").op, OpArgs::Exec { argv: 0x200 });
        let at = decode("execveat");
        assert_eq!(
            (at.first(), at.flags, at.op),
            (PathAt { dirfd: 0x100, addr: 0x200 }, Some(0x500), OpArgs::Exec { argv: 0x300 })
        );
    }

    #[test]
    fn names_have_both_paths_where_they_take_two() {
        let r = decode("renameat2");
        assert_eq!(
            (r.first(), r.second(), r.flags),
            (PathAt { dirfd: 0x100, addr: 0x200 }, PathAt { dirfd: 0x300, addr: 0x400 }, Some(0x500))
        );
        let l = decode("link");
        assert_eq!((l.first().dirfd, l.second()), (libc::AT_FDCWD, PathAt { dirfd: libc::AT_FDCWD, addr: 0x200 }));
        // symlinkat(target, newdirfd, linkpath): only the new name is a path.
        let s = decode("symlinkat");
        assert_eq!(
            (s.path, s.second(), s.op),
            (None, PathAt { dirfd: 0x200, addr: 0x300 }, OpArgs::Symlink { target: 0x100 })
        );
        assert_eq!(decode("mkdirat").op, OpArgs::Mkdir { mode: 0x300 });
        assert_eq!(decode("mknodat").op, OpArgs::Mknod { mode: 0x300, dev: 0x400 });
        assert_eq!(decode("unlinkat").flags, Some(0x300));
        assert_eq!(decode("truncate").op, OpArgs::Truncate { length: 0x200 });
    }

    #[test]
    fn metadata_calls_name_their_buffers() {
        assert_eq!(decode("stat").op, OpArgs::Stat { buf: 0x200 });
        let fstat = decode("fstat");
        assert_eq!((fstat.dirfd, fstat.path, fstat.op), (Some(0x100), None, OpArgs::Stat { buf: 0x200 }));
        let n = decode("newfstatat");
        assert_eq!((n.flags, n.op), (Some(0x400), OpArgs::Stat { buf: 0x300 }));
        assert_eq!(decode("statx").op, OpArgs::Statx { mask: 0x400, buf: 0x500 });
        assert_eq!(decode("fstatfs").op, OpArgs::Stat { buf: 0x200 });
        assert_eq!(decode("faccessat2").op, OpArgs::Access { mode: 0x300 });
        assert_eq!(decode("access").flags, None);
        assert_eq!(decode("readlinkat").op, OpArgs::Readlink { buf: 0x300, size: 0x400 });
        assert_eq!(decode("getxattr").op, OpArgs::Getxattr { name: 0x200, value: 0x300, size: 0x400 });
        assert_eq!(decode("getxattrat").op, OpArgs::GetxattrAt { name: 0x400, args: 0x500, size: 0x600 });
        assert_eq!(decode("llistxattr").op, OpArgs::Listxattr { list: 0x200, size: 0x300 });
        assert_eq!(decode("inotify_add_watch").op, OpArgs::Watch { instance: 0x100, mask: 0x300 });
        assert_eq!(decode("inotify_add_watch").first(), PathAt { dirfd: libc::AT_FDCWD, addr: 0x200 });
    }

    #[test]
    fn attribute_changes_name_what_they_set() {
        assert_eq!(decode("fchmodat2").op, OpArgs::Chmod { mode: 0x300 });
        assert_eq!(decode("fchmodat2").flags, Some(0x400));
        assert_eq!(decode("fchown").op, OpArgs::Chown { uid: 0x200, gid: 0x300 });
        assert_eq!(decode("fchownat").op, OpArgs::Chown { uid: 0x300, gid: 0x400 });
        assert_eq!(decode("utimensat").op, OpArgs::Times { at: 0x300 });
        assert_eq!(decode("utime").op, OpArgs::Times { at: 0x200 });
        assert_eq!(decode("fsetxattr").op, OpArgs::Setxattr { name: 0x200, value: 0x300, size: 0x400, flags: 0x500 });
        assert_eq!(decode("fremovexattr").op, OpArgs::Removexattr { name: 0x200 });
    }

    #[test]
    fn socket_calls_name_socket_and_address() {
        assert_eq!(decode("connect").op, OpArgs::Address { socket: 0x100, addr: 0x200, len: 0x300 });
        assert_eq!(decode("bind").op, OpArgs::Address { socket: 0x100, addr: 0x200, len: 0x300 });
        assert_eq!(
            decode("sendto").op,
            OpArgs::Sendto { socket: 0x100, buf: 0x200, len: 0x300, flags: 0x400, addr: 0x500, addrlen: 0x600 }
        );
        assert_eq!(decode("sendmsg").op, OpArgs::Sendmsg { socket: 0x100, msg: 0x200, flags: 0x300 });
        let mm = Args::decode(
            table::TABLE.iter().find(|r| r.name == "sendmmsg").unwrap(),
            &[3, 0x200, 0x1_0000_0002, 0x400, 0, 0],
        );
        // vlen is an unsigned int: the upper half of the register is not it.
        assert_eq!(mm.op, OpArgs::Sendmmsg { socket: 3, vec: 0x200, vlen: 2, flags: 0x400 });
    }

    /// Every row decodes without reading past the sixth register, and every
    /// op that reads arguments beyond its names has them where its row
    /// says: a row added to the table with a wrong or missing `extra` fails
    /// here, not in a handler.
    #[test]
    fn every_row_decodes_within_its_registers() {
        for row in table::TABLE {
            let needs = match row.op {
                Op::Mknod | Op::Listxattr | Op::Readlink | Op::Chown | Op::Connect | Op::Bind | Op::Sendto => 2,
                Op::Getxattr => 3,
                Op::Setxattr => 4,
                Op::Mkdir
                | Op::Truncate
                | Op::Statbuf
                | Op::Statfs
                | Op::Statx
                | Op::Access
                | Op::Watch
                | Op::Chmod
                | Op::Utime
                | Op::Utimes
                | Op::Utimensat
                | Op::Removexattr
                | Op::Sendmsg
                | Op::Sendmmsg => 1,
                _ => 0,
            };
            if needs > 0 {
                let x = row.extra.unwrap_or_else(|| panic!("{}: reads arguments but names no extra", row.name));
                assert!(usize::from(x) + needs <= 6, "{}: extra {x} + {needs} arguments overrun", row.name);
            }
            let args = Args::decode(row, &RAW);
            assert_eq!(args.path.is_some(), row.path.is_some(), "{}", row.name);
        }
    }
}
