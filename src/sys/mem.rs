//! # Safety
//!
//! Reads and writes another process's memory with `process_vm_readv(2)` and
//! `process_vm_writev(2)`. The kernel
//! copies into our local buffers only and reports how much it copied; a fault
//! in the remote range is an error or a short count, never undefined
//! behaviour here.
//!
//! Man page: <https://man7.org/linux/man-pages/man2/process_vm_readv.2.html>

use super::{cvt, Errno};

/// `PATH_MAX`, counting the terminating NUL, as `strncpy_from_user` enforces.
pub const PATH_MAX: usize = 4096;
const PAGE: u64 = 4096;

/// `process_vm_readv(2)` of `local.len()` bytes at `addr`, split at page
/// boundaries so that a fault on a later page still returns the earlier ones.
pub fn read(pid: u32, addr: u64, local: &mut [u8]) -> Result<usize, Errno> {
    if local.is_empty() {
        return Ok(0);
    }
    let first = ((PAGE - addr % PAGE) as usize).min(local.len());
    let (a, b) = local.split_at_mut(first);
    let locals = [
        libc::iovec { iov_base: a.as_mut_ptr().cast(), iov_len: a.len() },
        libc::iovec { iov_base: b.as_mut_ptr().cast(), iov_len: b.len() },
    ];
    let remotes = [
        libc::iovec { iov_base: addr as *mut libc::c_void, iov_len: a.len() },
        libc::iovec { iov_base: addr.wrapping_add(first as u64) as *mut libc::c_void, iov_len: b.len() },
    ];
    let count = if b.is_empty() { 1 } else { 2 };
    // SAFETY: the local iovecs cover `local`, which we own mutably; the remote
    // iovecs are only interpreted by the kernel in the other address space.
    let n =
        cvt(unsafe { libc::process_vm_readv(pid as libc::pid_t, locals.as_ptr(), count, remotes.as_ptr(), count, 0) }
            as libc::c_long)?;
    Ok(n as usize)
}

/// `process_vm_writev(2)` of all of `data` to `addr` in process `pid`;
/// `EFAULT` unless every byte was written.
pub fn write(pid: u32, addr: u64, data: &[u8]) -> Result<(), Errno> {
    if data.is_empty() {
        return Ok(());
    }
    let local = libc::iovec { iov_base: data.as_ptr().cast_mut().cast(), iov_len: data.len() };
    let remote = libc::iovec { iov_base: addr as *mut libc::c_void, iov_len: data.len() };
    // SAFETY: the kernel only reads from the local iovec, which covers
    // `data`; the remote one is interpreted in the other address space.
    let n = cvt(unsafe { libc::process_vm_writev(pid as libc::pid_t, &local, 1, &remote, 1, 0) } as libc::c_long)?;
    if n as usize == data.len() {
        Ok(())
    } else {
        Err(Errno::EFAULT)
    }
}

/// How much of a path [`read_path`] reads first.
const FIRST_READ: usize = 256;

/// Reads a NUL-terminated path the way the kernel's `getname` does: at most
/// `PATH_MAX` bytes including the NUL (`ENAMETOOLONG` otherwise), `EFAULT` if
/// the string runs into unmapped memory. Returns the bytes without the NUL.
pub fn read_path(pid: u32, addr: u64, buf: &mut [u8; PATH_MAX]) -> Result<usize, Errno> {
    if addr == 0 {
        return Err(Errno::EFAULT);
    }
    // Read page by page so that a short string at the end of a mapping does
    // not fail because the following page is unmapped.
    // The first read takes no more than most paths need: copying the rest
    // of the page (up to 4 KiB) for a 30-byte path was most of the read.
    let mut done = 0usize;
    while done < PATH_MAX {
        let at = addr.wrapping_add(done as u64);
        let limit = if done == 0 { FIRST_READ } else { PATH_MAX - done };
        let chunk = ((PAGE - at % PAGE) as usize).min(limit);
        let n = match read(pid, at, &mut buf[done..done + chunk]) {
            Ok(0) | Err(Errno::EFAULT) => return Err(Errno::EFAULT),
            Ok(n) => n,
            Err(e) => return Err(e),
        };
        if let Some(nul) = buf[done..done + n].iter().position(|&c| c == 0) {
            return Ok(done + nul);
        }
        done += n;
    }
    Err(Errno::ENAMETOOLONG)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_own_strings_and_reports_faults() {
        let me = std::process::id();
        let s = b"/etc/hostname\0";
        let mut buf = [0u8; PATH_MAX];
        let n = read_path(me, s.as_ptr() as u64, &mut buf).unwrap();
        assert_eq!(&buf[..n], b"/etc/hostname");
        assert_eq!(read_path(me, 0, &mut buf), Err(Errno::EFAULT));
        assert_eq!(read_path(me, 8, &mut buf), Err(Errno::EFAULT));
        let long = vec![b'a'; PATH_MAX + 10];
        assert_eq!(read_path(me, long.as_ptr() as u64, &mut buf), Err(Errno::ENAMETOOLONG));
        let mut exact = vec![b'a'; PATH_MAX];
        exact[PATH_MAX - 1] = 0;
        assert_eq!(read_path(me, exact.as_ptr() as u64, &mut buf), Ok(PATH_MAX - 1));
    }
}
