//! # Safety
//!
//! Path syscalls on `&CStr` arguments: `openat2(2)`, `openat(2)`,
//! `readlinkat(2)`, `fstatat(2)`. The kernel reads the NUL-terminated string
//! and writes only into the buffers we pass with their lengths.
//!
//! Man pages: <https://man7.org/linux/man-pages/man2/openat2.2.html>,
//! <https://man7.org/linux/man-pages/man2/readlinkat.2.html>

use super::{cvt, Errno};
use std::ffi::CStr;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// `RESOLVE_NO_XDEV`.
pub const RESOLVE_NO_XDEV: u64 = 0x01;
/// `RESOLVE_NO_MAGICLINKS`.
pub const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
/// `RESOLVE_NO_SYMLINKS`.
pub const RESOLVE_NO_SYMLINKS: u64 = 0x04;
/// `RESOLVE_BENEATH`.
pub const RESOLVE_BENEATH: u64 = 0x08;
/// `RESOLVE_IN_ROOT`.
pub const RESOLVE_IN_ROOT: u64 = 0x10;
/// `RESOLVE_CACHED`.
pub const RESOLVE_CACHED: u64 = 0x20;

/// `struct open_how`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenHow {
    /// `O_*` flags.
    pub flags: u64,
    /// Creation mode.
    pub mode: u64,
    /// `RESOLVE_*` flags.
    pub resolve: u64,
}

/// A directory argument: a descriptor or `AT_FDCWD`.
#[derive(Debug, Clone, Copy)]
pub enum Dir<'a> {
    /// `AT_FDCWD`.
    Cwd,
    /// An open directory.
    Fd(BorrowedFd<'a>),
}

impl Dir<'_> {
    fn raw(self) -> RawFd {
        match self {
            Dir::Cwd => libc::AT_FDCWD,
            Dir::Fd(fd) => fd.as_raw_fd(),
        }
    }
}

fn owned(ret: libc::c_long) -> Result<OwnedFd, Errno> {
    let fd = cvt(ret)?;
    // SAFETY: a successful open returns a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// `openat2(2)`. `O_CLOEXEC` is always added: interpose never leaks the
/// descriptors it opens for checks into anything it starts.
///
/// With `RESOLVE_BENEATH` or `RESOLVE_IN_ROOT` the kernel fails a lookup
/// through `..` with `EAGAIN` when any rename or mount happened on the
/// system meanwhile (it cannot tell an escape from a race): such a lookup is
/// tried again, up to [`OPENAT2_RETRIES`] times, then the `EAGAIN` stands.
pub fn openat2(dir: Dir<'_>, path: &CStr, how: OpenHow) -> Result<OwnedFd, Errno> {
    let mut how = how;
    how.flags |= libc::O_CLOEXEC as u64;
    let retry = how.resolve & (RESOLVE_BENEATH | RESOLVE_IN_ROOT) != 0 && how.resolve & RESOLVE_CACHED == 0;
    let mut tries = 0;
    loop {
        // SAFETY: `path` is NUL-terminated; `how` is a live `open_how` whose size we pass.
        let r = owned(unsafe {
            libc::syscall(
                libc::SYS_openat2,
                dir.raw(),
                path.as_ptr(),
                &how as *const OpenHow,
                std::mem::size_of::<OpenHow>(),
            )
        });
        tries += 1;
        match r {
            Err(Errno::EAGAIN) if retry && tries < OPENAT2_RETRIES => continue,
            r => return r,
        }
    }
}

/// How many times [`openat2`] tries a lookup that races renames and mounts.
pub const OPENAT2_RETRIES: u32 = 64;

/// `openat(2)` with `O_CLOEXEC` added.
pub fn openat(dir: Dir<'_>, path: &CStr, flags: i32, mode: u32) -> Result<OwnedFd, Errno> {
    // SAFETY: `path` is NUL-terminated.
    owned(unsafe { libc::openat(dir.raw(), path.as_ptr(), flags | libc::O_CLOEXEC, mode) } as libc::c_long)
}

/// The flags a walk opens a directory with, to list it: no symlink, not
/// even as the last name.
pub const LIST_DIRECTORY: i32 = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;

/// The entries of the directory open at `dir` (`getdents64(2)`, read from
/// where its offset stands, `buf.len()` bytes at a time): `each` gets every
/// name but `.` and `..`, with its `d_type` (`DT_UNKNOWN` where the file
/// system does not say). No `fstat` and no path walk, as `opendir(3)` on a
/// path would make. A record the kernel would never write is `EIO`.
pub fn entries(dir: BorrowedFd<'_>, buf: &mut [u8], mut each: impl FnMut(&CStr, u8)) -> Result<(), Errno> {
    // struct linux_dirent64: d_ino (8), d_off (8), d_reclen (2), d_type (1), d_name.
    const NAME: usize = 19;
    loop {
        // SAFETY: the kernel writes at most `buf.len()` bytes into `buf`.
        let n =
            cvt(unsafe { libc::syscall(libc::SYS_getdents64, dir.as_raw_fd(), buf.as_mut_ptr(), buf.len()) })? as usize;
        if n == 0 {
            return Ok(());
        }
        let mut at = 0;
        while at < n {
            let record = buf.get(at..n).filter(|r| r.len() > NAME).ok_or(Errno::EIO)?;
            let len = usize::from(u16::from_ne_bytes([record[16], record[17]]));
            let name = record.get(NAME..len).and_then(|r| CStr::from_bytes_until_nul(r).ok()).ok_or(Errno::EIO)?;
            if name != c"." && name != c".." {
                each(name, record[18]);
            }
            at += len;
        }
    }
}

/// `readlinkat(2)` into `buf`; `ENAMETOOLONG` if the target does not fit.
pub fn readlinkat(dir: Dir<'_>, path: &CStr, buf: &mut [u8]) -> Result<usize, Errno> {
    // SAFETY: the kernel writes at most `buf.len()` bytes into `buf`.
    let n =
        cvt(unsafe { libc::readlinkat(dir.raw(), path.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) } as libc::c_long)?
            as usize;
    if n == buf.len() {
        return Err(Errno::ENAMETOOLONG);
    }
    Ok(n)
}

/// `fstatat(2)`; with an empty `path` and `AT_EMPTY_PATH`, `fstat` of `dir`.
pub fn fstatat(dir: Dir<'_>, path: &CStr, flags: i32) -> Result<libc::stat, Errno> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: the kernel fills the whole `stat` on success.
    cvt(unsafe { libc::fstatat(dir.raw(), path.as_ptr(), st.as_mut_ptr(), flags) } as libc::c_long)?;
    // SAFETY: initialised by the successful call above.
    Ok(unsafe { st.assume_init() })
}

/// `fstat` of an open descriptor, including `O_PATH` ones.
pub fn fstat(fd: BorrowedFd<'_>) -> Result<libc::stat, Errno> {
    fstatat(Dir::Fd(fd), c"", libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW)
}

/// `fchmodat(AT_FDCWD, path, mode, 0)`.
pub fn chmod(path: &CStr, mode: u32) -> Result<(), Errno> {
    // SAFETY: `path` is NUL-terminated.
    cvt(unsafe { libc::fchmodat(libc::AT_FDCWD, path.as_ptr(), mode, 0) } as libc::c_long).map(drop)
}

/// `fchownat(fd, "", uid, gid, AT_EMPTY_PATH)`: works on `O_PATH` handles
/// and on symlinks themselves.
pub fn chown_fd(fd: BorrowedFd<'_>, uid: u32, gid: u32) -> Result<(), Errno> {
    // SAFETY: the empty path is a NUL-terminated literal.
    cvt(unsafe { libc::fchownat(fd.as_raw_fd(), c"".as_ptr(), uid, gid, libc::AT_EMPTY_PATH) } as libc::c_long)
        .map(drop)
}

/// `utimensat(AT_FDCWD, path, times, 0)`; `None` sets both times to now.
pub fn utimens(path: &CStr, times: Option<&[libc::timespec; 2]>) -> Result<(), Errno> {
    let ptr = times.map_or(std::ptr::null(), |t| t.as_ptr());
    // SAFETY: `path` is NUL-terminated; `ptr` is null or points to two timespecs.
    cvt(unsafe { libc::utimensat(libc::AT_FDCWD, path.as_ptr(), ptr, 0) } as libc::c_long).map(drop)
}

/// `setxattr(2)`.
pub fn setxattr(path: &CStr, name: &CStr, value: &[u8], flags: i32) -> Result<(), Errno> {
    // SAFETY: strings are NUL-terminated; the kernel reads `value.len()` bytes.
    cvt(unsafe { libc::setxattr(path.as_ptr(), name.as_ptr(), value.as_ptr().cast(), value.len(), flags) }
        as libc::c_long)
    .map(drop)
}

/// `removexattr(2)`.
pub fn removexattr(path: &CStr, name: &CStr) -> Result<(), Errno> {
    // SAFETY: both strings are NUL-terminated.
    cvt(unsafe { libc::removexattr(path.as_ptr(), name.as_ptr()) } as libc::c_long).map(drop)
}

/// `getxattr(2)` into `buf`; an empty `buf` asks for the value's size.
pub fn getxattr(path: &CStr, name: &CStr, buf: &mut [u8]) -> Result<usize, Errno> {
    // SAFETY: strings are NUL-terminated; the kernel writes at most
    // `buf.len()` bytes.
    cvt(unsafe { libc::getxattr(path.as_ptr(), name.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) } as libc::c_long)
        .map(|n| n as usize)
}

/// `listxattr(2)` into `buf`; an empty `buf` asks for the list's size.
pub fn listxattr(path: &CStr, buf: &mut [u8]) -> Result<usize, Errno> {
    // SAFETY: `path` is NUL-terminated; the kernel writes at most
    // `buf.len()` bytes.
    cvt(unsafe { libc::listxattr(path.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) } as libc::c_long)
        .map(|n| n as usize)
}

/// `fstatfs(2)`, including on `O_PATH` descriptors.
pub fn fstatfs(fd: BorrowedFd<'_>) -> Result<libc::statfs, Errno> {
    let mut st = std::mem::MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: the kernel fills the whole struct on success.
    cvt(unsafe { libc::fstatfs(fd.as_raw_fd(), st.as_mut_ptr()) } as libc::c_long)?;
    // SAFETY: initialized by the successful call.
    Ok(unsafe { st.assume_init() })
}

/// `faccessat2(fd, "", mode, AT_EMPTY_PATH | AT_EACCESS)`: whether the
/// calling thread's file-system ids and effective capabilities allow
/// `mode` on the object `fd` names (an `O_PATH` handle, a symlink itself
/// included).
pub fn access_fd(fd: BorrowedFd<'_>, mode: u32) -> Result<(), Errno> {
    // SAFETY: the empty path is a NUL-terminated literal.
    cvt(unsafe {
        libc::syscall(libc::SYS_faccessat2, fd.as_raw_fd(), c"".as_ptr(), mode, libc::AT_EMPTY_PATH | libc::AT_EACCESS)
    })
    .map(drop)
}

/// `inotify_add_watch(2)` on `instance`.
pub fn inotify_add_watch(instance: BorrowedFd<'_>, path: &CStr, mask: u32) -> Result<i32, Errno> {
    // SAFETY: `path` is NUL-terminated.
    cvt(unsafe { libc::inotify_add_watch(instance.as_raw_fd(), path.as_ptr(), mask) } as libc::c_long)
        .map(|wd| wd as i32)
}

/// The access mode of an open file description (`fcntl(F_GETFL)`), which
/// includes `O_PATH`.
pub fn status_flags(fd: BorrowedFd<'_>) -> Result<i32, Errno> {
    // SAFETY: F_GETFL takes no argument.
    cvt(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) } as libc::c_long).map(|f| f as i32)
}

/// The number `N` of the pseudo-terminal whose master `fd` is
/// (`ioctl(TIOCGPTN)`): its slave is `/dev/pts/N`.
pub fn pty_number(fd: BorrowedFd<'_>) -> Result<u32, Errno> {
    let mut n: libc::c_uint = 0;
    // SAFETY: TIOCGPTN writes one unsigned int.
    cvt(unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCGPTN, &mut n) } as libc::c_long)?;
    Ok(n)
}

/// Sets the file status flags of an open file description
/// (`fcntl(F_SETFL)`).
pub fn set_status_flags(fd: BorrowedFd<'_>, flags: i32) -> Result<(), Errno> {
    // SAFETY: F_SETFL takes an int.
    cvt(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags) } as libc::c_long).map(drop)
}

/// `unlinkat(2)`: removes `name` from the directory `dir` (`AT_REMOVEDIR`
/// in `flags` for a directory).
pub fn unlinkat(dir: BorrowedFd<'_>, name: &CStr, flags: i32) -> Result<(), Errno> {
    // SAFETY: `name` is NUL-terminated; integer arguments otherwise.
    cvt(unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), flags) } as libc::c_long).map(drop)
}

/// `mkdirat(2)`: the directory `name` in `dir`, with `mode` as given (the
/// caller applies the umask).
pub fn mkdirat(dir: BorrowedFd<'_>, name: &CStr, mode: u32) -> Result<(), Errno> {
    // SAFETY: `name` is NUL-terminated.
    cvt(unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), mode) } as libc::c_long).map(drop)
}

/// `symlinkat(2)`: `name` in `dir`, pointing to `target`.
pub fn symlinkat(target: &CStr, dir: BorrowedFd<'_>, name: &CStr) -> Result<(), Errno> {
    // SAFETY: both strings are NUL-terminated.
    cvt(unsafe { libc::symlinkat(target.as_ptr(), dir.as_raw_fd(), name.as_ptr()) } as libc::c_long).map(drop)
}

/// `mknodat(2)`: a node of type and permissions `mode` (the caller applies
/// the umask) and device `dev`.
pub fn mknodat(dir: BorrowedFd<'_>, name: &CStr, mode: u32, dev: u64) -> Result<(), Errno> {
    // SAFETY: `name` is NUL-terminated.
    cvt(unsafe { libc::mknodat(dir.as_raw_fd(), name.as_ptr(), mode, dev) } as libc::c_long).map(drop)
}

/// `renameat2(2)` between two directory handles.
pub fn renameat2(from: BorrowedFd<'_>, old: &CStr, to: BorrowedFd<'_>, new: &CStr, flags: u32) -> Result<(), Errno> {
    // SAFETY: both names are NUL-terminated; integer arguments otherwise.
    cvt(unsafe {
        libc::syscall(libc::SYS_renameat2, from.as_raw_fd(), old.as_ptr(), to.as_raw_fd(), new.as_ptr(), flags)
    })
    .map(drop)
}

/// `linkat(AT_FDCWD, "/proc/self/fd/N", to, new, AT_SYMLINK_FOLLOW)`: a new
/// name for the object behind our handle `object` (the magic link leads to
/// the very object, a symlink included; unlike `AT_EMPTY_PATH`, it needs no
/// `CAP_DAC_READ_SEARCH`).
pub fn link_handle(object: BorrowedFd<'_>, to: BorrowedFd<'_>, new: &CStr) -> Result<(), Errno> {
    let mut num = [0u8; 24];
    let mut path = b"/proc/self/fd/".to_vec();
    path.extend_from_slice(decimal(object.as_raw_fd() as u64, &mut num).to_bytes_with_nul());
    let path = CStr::from_bytes_with_nul(&path).map_err(|_| Errno::EINVAL)?;
    // SAFETY: both paths are NUL-terminated.
    cvt(unsafe { libc::linkat(libc::AT_FDCWD, path.as_ptr(), to.as_raw_fd(), new.as_ptr(), libc::AT_SYMLINK_FOLLOW) }
        as libc::c_long)
    .map(drop)
}

/// `mknodat(dir, name, S_IFCHR, 0:0)`: an overlayfs whiteout, which makes
/// `name` absent from the merged view of an overlay whose upper layer is
/// `dir` ([overlayfs](https://docs.kernel.org/filesystems/overlayfs.html)).
pub fn make_whiteout(dir: BorrowedFd<'_>, name: &CStr) -> Result<(), Errno> {
    // SAFETY: `name` is NUL-terminated; mknodat creates a node and keeps no pointer.
    cvt(unsafe { libc::mknodat(dir.as_raw_fd(), name.as_ptr(), libc::S_IFCHR, 0) } as libc::c_long).map(drop)
}

/// `statx(fd, "", AT_EMPTY_PATH | flags, mask)` into a `struct statx`.
pub fn statx_fd(fd: BorrowedFd<'_>, flags: i32, mask: u32) -> Result<libc::statx, Errno> {
    let mut stx = std::mem::MaybeUninit::<libc::statx>::zeroed();
    // SAFETY: the kernel writes one struct statx.
    cvt(unsafe { libc::statx(fd.as_raw_fd(), c"".as_ptr(), libc::AT_EMPTY_PATH | flags, mask, stx.as_mut_ptr()) }
        as libc::c_long)?;
    // SAFETY: zeroed, then filled by the successful call.
    Ok(unsafe { stx.assume_init() })
}

/// The id of the mount `fd` is on (`statx(2)` with `STATX_MNT_ID`): two
/// objects on different mounts cannot be renamed or linked into each other.
pub fn mount_id(fd: BorrowedFd<'_>) -> Result<u64, Errno> {
    Ok(statx_fd(fd, 0, libc::STATX_MNT_ID)?.stx_mnt_id)
}

/// `ioctl(dst, FICLONE, src)`: makes `dst` share `src`'s data extents (a
/// reflink), where the file system has them (Btrfs, XFS, bcachefs);
/// `EOPNOTSUPP`, `EXDEV` or `EINVAL` elsewhere.
/// <https://man7.org/linux/man-pages/man2/ioctl_ficlone.2.html>
pub fn ficlone(dst: BorrowedFd<'_>, src: BorrowedFd<'_>) -> Result<(), Errno> {
    /// `_IOW(0x94, 9, int)`.
    const FICLONE: libc::c_ulong = 0x4004_9409;
    // SAFETY: FICLONE takes a descriptor number as its argument and writes
    // no memory of ours.
    cvt(unsafe { libc::ioctl(dst.as_raw_fd(), FICLONE, src.as_raw_fd()) } as libc::c_long).map(drop)
}

/// `copy_file_range(2)` from `src`'s file position to `dst`'s, at most
/// `len` bytes; 0 at the end of `src`.
/// <https://man7.org/linux/man-pages/man2/copy_file_range.2.html>
pub fn copy_file_range(src: BorrowedFd<'_>, dst: BorrowedFd<'_>, len: usize) -> Result<usize, Errno> {
    // SAFETY: NULL offsets make the kernel use (and advance) the file
    // positions; it touches no memory of ours.
    cvt(unsafe {
        libc::syscall(
            libc::SYS_copy_file_range,
            src.as_raw_fd(),
            std::ptr::null_mut::<libc::loff_t>(),
            dst.as_raw_fd(),
            std::ptr::null_mut::<libc::loff_t>(),
            len,
            0u32,
        )
    })
    .map(|n| n as usize)
}

/// `utimensat(dir, name, times, flags)`: with `AT_SYMLINK_NOFOLLOW` the
/// times of a symlink itself.
pub fn utimensat(dir: Dir<'_>, name: &CStr, times: &[libc::timespec; 2], flags: i32) -> Result<(), Errno> {
    // SAFETY: `name` is NUL-terminated; `times` points to two timespecs.
    cvt(unsafe { libc::utimensat(dir.raw(), name.as_ptr(), times.as_ptr(), flags) } as libc::c_long).map(drop)
}

/// `linkat(olddir, old, newdir, new, flags)`.
pub fn linkat(old_dir: Dir<'_>, old: &CStr, new_dir: BorrowedFd<'_>, new: &CStr, flags: i32) -> Result<(), Errno> {
    // SAFETY: both names are NUL-terminated.
    cvt(unsafe { libc::linkat(old_dir.raw(), old.as_ptr(), new_dir.as_raw_fd(), new.as_ptr(), flags) } as libc::c_long)
        .map(drop)
}

/// A kernel structure whose every byte is a field (no padding on x86_64),
/// so its bytes can be copied into another process as they are.
pub trait Plain: Copy + private::Sealed {}

mod private {
    pub trait Sealed {}
    impl Sealed for libc::stat {}
    impl Sealed for libc::statx {}
    impl Sealed for libc::statfs {}
}

impl Plain for libc::stat {}
impl Plain for libc::statx {}
impl Plain for libc::statfs {}

// Their x86_64 sizes, which their fields fill exactly (the kernel's own
// padding fields included): a libc with another layout fails to build.
const _: () = assert!(std::mem::size_of::<libc::stat>() == 144);
const _: () = assert!(std::mem::size_of::<libc::statx>() == 256);
const _: () = assert!(std::mem::size_of::<libc::statfs>() == 120);

/// The bytes of a plain-data kernel structure, to copy into another process.
pub fn bytes_of<T: Plain>(value: &T) -> &[u8] {
    // SAFETY: T is one of the sealed `Plain` structures, every byte of
    // which is a field (no padding), so reading it as bytes is sound.
    unsafe { std::slice::from_raw_parts((value as *const T).cast::<u8>(), std::mem::size_of::<T>()) }
}

/// Formats `n` as decimal into `buf` with a trailing NUL, without allocating.
pub fn decimal(n: u64, buf: &mut [u8; 24]) -> &CStr {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    let mut n = n;
    loop {
        i -= 1;
        tmp[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let len = tmp.len() - i;
    buf[..len].copy_from_slice(&tmp[i..]);
    buf[len] = 0;
    CStr::from_bytes_with_nul(&buf[..=len]).expect("one NUL at the end")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_lists_every_name_once_whatever_the_buffer_holds() {
        use std::os::fd::AsFd;
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let mut want: Vec<Vec<u8>> =
            (0..120).map(|n| format!("entry-{n:03}-{}", "x".repeat(n % 40)).into_bytes()).collect();
        for name in &want {
            std::fs::write(dir.path().join(std::ffi::OsStr::from_bytes(name)), "").unwrap();
        }
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        want.push(b"sub".to_vec());
        want.sort();
        // A buffer of a few records at a time: many reads, each record whole.
        for size in [128, 32 * 1024] {
            let fd = std::fs::File::open(dir.path()).unwrap();
            let mut got = Vec::new();
            let mut kinds = Vec::new();
            entries(fd.as_fd(), &mut vec![0u8; size], |name, kind| {
                got.push(name.to_bytes().to_vec());
                kinds.push((name.to_bytes() == b"sub", kind));
            })
            .unwrap();
            got.sort();
            assert_eq!(got, want, "buffer of {size}");
            assert!(kinds.iter().all(|&(sub, kind)| kind == if sub { libc::DT_DIR } else { libc::DT_REG }));
        }
    }

    #[test]
    fn decimal_formats() {
        let mut b = [0u8; 24];
        assert_eq!(decimal(0, &mut b).to_bytes(), b"0");
        assert_eq!(decimal(1234567, &mut b).to_bytes(), b"1234567");
        assert_eq!(decimal(u64::MAX, &mut b).to_bytes(), b"18446744073709551615");
    }

    #[test]
    fn openat2_honours_resolve_flags() {
        let dir = openat(Dir::Cwd, c"/", libc::O_PATH | libc::O_DIRECTORY, 0).unwrap();
        let dir = Dir::Fd(std::os::fd::AsFd::as_fd(&dir));
        let how = OpenHow { flags: libc::O_PATH as u64, mode: 0, resolve: RESOLVE_IN_ROOT };
        assert_eq!(openat2(dir, c"../etc", how).err(), None, "`..` at the root stays there");
        let how = OpenHow { flags: libc::O_PATH as u64, mode: 0, resolve: RESOLVE_BENEATH };
        assert_eq!(openat2(dir, c"../etc", how).err(), Some(Errno::EXDEV));
        let how = OpenHow { flags: libc::O_PATH as u64, mode: 0, resolve: RESOLVE_NO_MAGICLINKS };
        assert_eq!(openat2(Dir::Cwd, c"/proc/self/cwd", how).err(), Some(Errno::ELOOP));
    }
}
