//! # Safety
//!
//! Wrappers for `seccomp(2)` and the user-notification ioctls of
//! `seccomp_unotify(2)`. The structures below mirror `<linux/seccomp.h>`; the
//! ioctls only read and write those structures.
//!
//! Man page: <https://man7.org/linux/man-pages/man2/seccomp_unotify.2.html>

use super::{cvt, Errno};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// `SECCOMP_SET_MODE_FILTER`.
const SET_MODE_FILTER: libc::c_uint = 1;
/// `SECCOMP_GET_ACTION_AVAIL`.
const GET_ACTION_AVAIL: libc::c_uint = 2;
/// `SECCOMP_GET_NOTIF_SIZES`.
const GET_NOTIF_SIZES: libc::c_uint = 3;

/// `SECCOMP_FILTER_FLAG_NEW_LISTENER`: return a notification fd.
pub const FILTER_FLAG_NEW_LISTENER: libc::c_ulong = 1 << 3;
/// `SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV` (Linux 5.19): once a notification
/// has been received, only fatal signals interrupt the trapped syscall, so a
/// signal cannot make the kernel restart a call whose answer is in flight.
pub const FILTER_FLAG_WAIT_KILLABLE_RECV: libc::c_ulong = 1 << 5;

/// `SECCOMP_RET_USER_NOTIF`.
pub const RET_USER_NOTIF: u32 = 0x7fc0_0000;
/// `SECCOMP_USER_NOTIF_FLAG_CONTINUE`.
pub const USER_NOTIF_FLAG_CONTINUE: u32 = 1;
/// `SECCOMP_ADDFD_FLAG_SEND` (Linux 5.14): install the fd and answer the
/// syscall with its number in one atomic step.
pub const ADDFD_FLAG_SEND: u32 = 1 << 1;

// _IOWR('!', 0, struct seccomp_notif) and friends, spelled out because the
// kernel headers build them from struct sizes that are fixed by the ABI.
const IOCTL_NOTIF_RECV: libc::c_ulong = 0xc050_2100;
const IOCTL_NOTIF_SEND: libc::c_ulong = 0xc018_2101;
const IOCTL_NOTIF_ID_VALID: libc::c_ulong = 0x4008_2102;
const IOCTL_NOTIF_ADDFD: libc::c_ulong = 0x4018_2103;
const IOCTL_NOTIF_SET_FLAGS: libc::c_ulong = 0x4008_2104;
/// `SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP` (Linux 6.6): the woken task runs on
/// the waker's CPU.
pub const USER_NOTIF_FD_SYNC_WAKE_UP: u64 = 1;

/// `struct seccomp_data`: the trapped syscall as the filter saw it.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct SeccompData {
    /// Syscall number.
    pub nr: i32,
    /// `AUDIT_ARCH_*` of the calling convention.
    pub arch: u32,
    /// User-space instruction pointer at the syscall.
    pub instruction_pointer: u64,
    /// The six raw syscall arguments.
    pub args: [u64; 6],
}

/// `struct seccomp_notif`: one trapped syscall waiting for an answer.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct Notif {
    /// Cookie that names this notification in every later ioctl.
    pub id: u64,
    /// Thread id of the caller, in the listener's pid namespace.
    pub pid: u32,
    /// Unused by the kernel today.
    pub flags: u32,
    /// The syscall.
    pub data: SeccompData,
}

/// `struct seccomp_notif_resp`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct NotifResp {
    /// The notification answered.
    pub id: u64,
    /// Return value when `error` is 0.
    pub val: i64,
    /// Negated errno, or 0.
    pub error: i32,
    /// `USER_NOTIF_FLAG_CONTINUE` or 0.
    pub flags: u32,
}

/// `struct seccomp_notif_addfd`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct NotifAddfd {
    id: u64,
    flags: u32,
    srcfd: u32,
    newfd: u32,
    newfd_flags: u32,
}

/// `struct seccomp_notif_sizes`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct NotifSizes {
    /// Size of `struct seccomp_notif` in this kernel.
    pub seccomp_notif: u16,
    /// Size of `struct seccomp_notif_resp` in this kernel.
    pub seccomp_notif_resp: u16,
    /// Size of `struct seccomp_data` in this kernel.
    pub seccomp_data: u16,
}

fn seccomp(op: libc::c_uint, flags: libc::c_ulong, arg: *mut libc::c_void) -> libc::c_long {
    // SAFETY: seccomp(2) reads or writes only the object `arg` points to, whose
    // type each caller matches to `op`.
    unsafe { libc::syscall(libc::SYS_seccomp, op, flags, arg) }
}

/// `seccomp(SECCOMP_GET_NOTIF_SIZES)`: the structure sizes this kernel uses.
pub fn notif_sizes() -> Result<NotifSizes, Errno> {
    let mut sizes = NotifSizes::default();
    cvt(seccomp(GET_NOTIF_SIZES, 0, (&mut sizes as *mut NotifSizes).cast()))?;
    Ok(sizes)
}

/// `seccomp(SECCOMP_GET_ACTION_AVAIL)`: whether the kernel knows `action`.
pub fn action_available(action: u32) -> bool {
    let mut action = action;
    seccomp(GET_ACTION_AVAIL, 0, (&mut action as *mut u32).cast()) == 0
}

/// Whether the kernel accepts `flags` for `SECCOMP_SET_MODE_FILTER`.
///
/// Probes with a null program: the kernel rejects unknown flags with `EINVAL`
/// before it reads the program, and fails the read with `EFAULT`, so nothing
/// is ever installed.
pub fn filter_flags_supported(flags: libc::c_ulong) -> bool {
    let ret = seccomp(SET_MODE_FILTER, flags, std::ptr::null_mut());
    ret < 0 && Errno::last() != Errno::EINVAL
}

/// `seccomp(SECCOMP_SET_MODE_FILTER, flags, prog)`: installs a classic BPF
/// program on the calling thread and returns the listener when `flags` holds
/// `FILTER_FLAG_NEW_LISTENER`.
///
/// Async-signal-safe: it is called in the child between `fork` and `execve`.
pub fn install_filter(prog: &[libc::sock_filter], flags: libc::c_ulong) -> Result<OwnedFd, Errno> {
    let len = u16::try_from(prog.len()).map_err(|_| Errno::E2BIG)?;
    let mut fprog = libc::sock_fprog { len, filter: prog.as_ptr().cast_mut() };
    let fd = cvt(seccomp(SET_MODE_FILTER, flags, (&mut fprog as *mut libc::sock_fprog).cast()))?;
    // SAFETY: with NEW_LISTENER the kernel returns a fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Installs `prog` without a listener (`flags` 0): for filters whose every
/// action the kernel takes itself.
pub fn install_filter_without_listener(prog: &[libc::sock_filter]) -> Result<(), Errno> {
    let len = u16::try_from(prog.len()).map_err(|_| Errno::E2BIG)?;
    let mut fprog = libc::sock_fprog { len, filter: prog.as_ptr().cast_mut() };
    cvt(seccomp(SET_MODE_FILTER, 0, (&mut fprog as *mut libc::sock_fprog).cast())).map(drop)
}

fn ioctl<T>(fd: BorrowedFd<'_>, request: libc::c_ulong, arg: *mut T) -> Result<libc::c_long, Errno> {
    // SAFETY: every request used here reads or writes exactly one `T`, the
    // structure its ioctl number encodes; `arg` points to a live `T`.
    cvt(unsafe { libc::ioctl(fd.as_raw_fd(), request, arg) } as libc::c_long)
}

/// `SECCOMP_IOCTL_NOTIF_SET_FLAGS`: the flag word is the ioctl argument
/// itself, not a pointer to it.
pub fn set_listener_flags(listener: BorrowedFd<'_>, flags: u64) -> Result<(), Errno> {
    // SAFETY: this request reads no memory; the argument is a plain value.
    cvt(unsafe { libc::ioctl(listener.as_raw_fd(), IOCTL_NOTIF_SET_FLAGS, flags) } as libc::c_long).map(drop)
}

/// `SECCOMP_IOCTL_NOTIF_RECV`: blocks until a trapped syscall arrives.
///
/// `ENOENT` means the caller went away before we read it; `EINTR` a signal.
/// Both mean "try again".
pub fn recv(listener: BorrowedFd<'_>) -> Result<Notif, Errno> {
    // The kernel insists on a zeroed buffer.
    let mut notif = Notif::default();
    ioctl(listener, IOCTL_NOTIF_RECV, &mut notif)?;
    Ok(notif)
}

/// `SECCOMP_IOCTL_NOTIF_ID_VALID`: whether notification `id` is still pending.
///
/// Anything read from `/proc/<pid>` or the caller's memory is only known to
/// belong to the caller if the notification is still valid afterwards: once
/// the caller dies, its pid can be reused by an unrelated process.
pub fn id_valid(listener: BorrowedFd<'_>, id: u64) -> bool {
    let mut id = id;
    ioctl(listener, IOCTL_NOTIF_ID_VALID, &mut id).is_ok()
}

/// `SECCOMP_IOCTL_NOTIF_SEND`: answers a notification.
pub fn send(listener: BorrowedFd<'_>, resp: NotifResp) -> Result<(), Errno> {
    let mut resp = resp;
    ioctl(listener, IOCTL_NOTIF_SEND, &mut resp).map(drop)
}

/// `SECCOMP_IOCTL_NOTIF_ADDFD` with `SECCOMP_ADDFD_FLAG_SEND`: installs `fd`
/// in the caller and completes its syscall with the new descriptor's number.
pub fn addfd_send(listener: BorrowedFd<'_>, id: u64, fd: BorrowedFd<'_>, cloexec: bool) -> Result<i32, Errno> {
    addfd_with(listener, id, fd, cloexec, ADDFD_FLAG_SEND)
}

/// `SECCOMP_IOCTL_NOTIF_ADDFD` without answering: installs a copy of `fd`
/// in the caller and returns its number there; the call is still waiting.
pub fn addfd(listener: BorrowedFd<'_>, id: u64, fd: BorrowedFd<'_>, cloexec: bool) -> Result<i32, Errno> {
    addfd_with(listener, id, fd, cloexec, 0)
}

fn addfd_with(listener: BorrowedFd<'_>, id: u64, fd: BorrowedFd<'_>, cloexec: bool, flags: u32) -> Result<i32, Errno> {
    let mut addfd = NotifAddfd {
        id,
        flags,
        srcfd: fd.as_raw_fd() as u32,
        newfd: 0,
        newfd_flags: if cloexec { libc::O_CLOEXEC as u32 } else { 0 },
    };
    ioctl(listener, IOCTL_NOTIF_ADDFD, &mut addfd).map(|n| n as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structures_match_the_kernel_abi() {
        assert_eq!(std::mem::size_of::<SeccompData>(), 64);
        assert_eq!(std::mem::size_of::<Notif>(), 80);
        assert_eq!(std::mem::size_of::<NotifResp>(), 24);
        assert_eq!(std::mem::size_of::<NotifAddfd>(), 24);
        let sizes = notif_sizes().expect("SECCOMP_GET_NOTIF_SIZES");
        assert!(usize::from(sizes.seccomp_notif) <= std::mem::size_of::<Notif>(), "{sizes:?}");
        assert_eq!(usize::from(sizes.seccomp_data), std::mem::size_of::<SeccompData>());
    }
}
