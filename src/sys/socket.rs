//! # Safety
//!
//! Socket calls on addresses and control messages the supervisor copied
//! from a caller, as raw bytes: `connect(2)`, `bind(2)`, `sendmsg(2)`, and
//! `ioctl(SIOCGSKNS)`. Every pointer handed to the kernel is to a buffer
//! owned here for the duration of the call, with its true length.
//!
//! Man pages: <https://man7.org/linux/man-pages/man2/connect.2.html>,
//! <https://man7.org/linux/man-pages/man2/sendmsg.2.html>,
//! <https://man7.org/linux/man-pages/man7/unix.7.html>.

use super::{cvt, Errno};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// The largest socket address the kernel takes (`sizeof(struct
/// sockaddr_storage)`).
pub const ADDRESS_MAX: usize = 128;

/// `connect(2)` of `sock` to the address `addr` (a `struct sockaddr` of
/// any family, as bytes; empty for none).
pub fn connect(sock: BorrowedFd<'_>, addr: &[u8]) -> Result<(), Errno> {
    let ptr = if addr.is_empty() { std::ptr::null() } else { addr.as_ptr().cast::<libc::sockaddr>() };
    // SAFETY: `ptr` is NULL or points to `addr.len()` readable bytes, which
    // the kernel copies during the call.
    cvt(unsafe { libc::connect(sock.as_raw_fd(), ptr, addr.len() as libc::socklen_t) } as libc::c_long).map(drop)
}

/// `bind(2)` of `sock` to the address `addr` (bytes, as for [`connect`]).
pub fn bind(sock: BorrowedFd<'_>, addr: &[u8]) -> Result<(), Errno> {
    let ptr = if addr.is_empty() { std::ptr::null() } else { addr.as_ptr().cast::<libc::sockaddr>() };
    // SAFETY: as for connect.
    cvt(unsafe { libc::bind(sock.as_raw_fd(), ptr, addr.len() as libc::socklen_t) } as libc::c_long).map(drop)
}

/// `sendmsg(2)` of `data` on `sock`, to `name` (a socket address as bytes,
/// or the connected peer), with the control messages `control` (a buffer
/// of `struct cmsghdr`s as the kernel reads them). Returns the bytes sent.
pub fn sendmsg(
    sock: BorrowedFd<'_>,
    name: Option<&[u8]>,
    data: &[u8],
    control: &[u8],
    flags: i32,
) -> Result<usize, Errno> {
    let mut iov = libc::iovec { iov_base: data.as_ptr().cast_mut().cast(), iov_len: data.len() };
    // The control buffer must be aligned for cmsghdr: copied into u64s.
    let mut aligned = vec![0u64; control.len().div_ceil(8)];
    // SAFETY: `aligned` holds at least `control.len()` bytes.
    unsafe { std::ptr::copy_nonoverlapping(control.as_ptr(), aligned.as_mut_ptr().cast::<u8>(), control.len()) };
    // SAFETY: msghdr is plain data; zeroed is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    if let Some(name) = name {
        msg.msg_name = name.as_ptr().cast_mut().cast();
        msg.msg_namelen = name.len() as libc::socklen_t;
    }
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if !control.is_empty() {
        msg.msg_control = aligned.as_mut_ptr().cast();
        msg.msg_controllen = control.len();
    }
    // SAFETY: every pointer in `msg` is to a buffer alive for the call, with
    // its length; the kernel only reads them.
    cvt(unsafe { libc::sendmsg(sock.as_raw_fd(), &msg, flags) } as libc::c_long).map(|n| n as usize)
}

/// The network namespace `sock` was created in (`ioctl(SIOCGSKNS)`), as a
/// descriptor.
pub fn namespace_of(sock: BorrowedFd<'_>) -> Result<OwnedFd, Errno> {
    const SIOCGSKNS: libc::c_ulong = 0x894C;
    // SAFETY: SIOCGSKNS takes no argument and returns a new descriptor.
    let fd = cvt(unsafe { libc::ioctl(sock.as_raw_fd(), SIOCGSKNS) } as libc::c_long)?;
    // SAFETY: the kernel just made this descriptor; we own it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}
