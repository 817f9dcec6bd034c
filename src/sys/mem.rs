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

/// Reads up to `max` bytes of each NUL-terminated string at `addrs` in
/// process `pid`, all in one `process_vm_readv(2)` where each string ends
/// on the page it starts on: one entry per address, in order, the string
/// without its NUL (`Ok`), or, where none came within `max` bytes, its
/// first `max` (`Err`, cut). A string that runs onto the next page is read
/// again page by page ([`read_path`], up to [`PATH_MAX`]); the entries stop
/// before the first address that cannot be read.
pub fn read_strings(pid: u32, addrs: &[u64], max: usize) -> Vec<Result<Vec<u8>, Vec<u8>>> {
    // Each window stays on its first page, so that only an unmapped page
    // faults, and a fault stops the read at its window.
    let windows: Vec<usize> =
        addrs.iter().map(|&a| if a == 0 { 0 } else { ((PAGE - a % PAGE) as usize).min(max) }).collect();
    let mut local = vec![0u8; windows.iter().sum()];
    let remotes: Vec<libc::iovec> = addrs
        .iter()
        .zip(&windows)
        .map(|(&a, &len)| libc::iovec { iov_base: a as *mut libc::c_void, iov_len: len })
        .collect();
    let whole = libc::iovec { iov_base: local.as_mut_ptr().cast(), iov_len: local.len() };
    let count = remotes.len() as libc::c_ulong;
    // SAFETY: the local iovec covers `local`, which we own mutably; the
    // remote ones are only interpreted by the kernel in the other address
    // space.
    let n = unsafe { libc::process_vm_readv(pid as libc::pid_t, &whole, 1, remotes.as_ptr(), count, 0) };
    let read = n.max(0) as usize;
    let mut out = Vec::with_capacity(addrs.len());
    let (mut at, mut buf) = (0usize, [0u8; PATH_MAX]);
    for (&addr, &len) in addrs.iter().zip(&windows) {
        let window = local.get(at..at + len).filter(|_| at + len <= read);
        at += len;
        let found = window.and_then(|w| w.iter().position(|&c| c == 0).map(|nul| &w[..nul]));
        let entry = match (found, window) {
            (Some(s), _) => Ok(s.to_vec()),
            (None, Some(w)) if w.len() == max => Err(w.to_vec()),
            // Onto the next page, or not read at all: page by page.
            _ => match read_path(pid, addr, &mut buf) {
                Ok(n) if n <= max => Ok(buf[..n].to_vec()),
                Ok(_) | Err(Errno::ENAMETOOLONG) => Err(buf[..max.min(PATH_MAX)].to_vec()),
                Err(_) => break,
            },
        };
        out.push(entry);
    }
    out
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

    #[test]
    fn strings_read_at_once_as_one_by_one() {
        let me = std::process::id();
        let map = |pages: usize| {
            // SAFETY: a fresh anonymous mapping of our own.
            let base = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    pages * PAGE as usize,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            assert_ne!(base, libc::MAP_FAILED);
            // SAFETY: the mapping is ours, `pages` pages long.
            unsafe { std::slice::from_raw_parts_mut(base.cast::<u8>(), pages * PAGE as usize) }
        };
        // A page of x's followed by an unmapped one.
        let first = map(2);
        let page = first.as_ptr() as u64;
        // SAFETY: the second page of our own mapping.
        assert_eq!(unsafe { libc::munmap(first.as_mut_ptr().add(PAGE as usize).cast(), PAGE as usize) }, 0);
        let first = &mut first[..PAGE as usize];
        first.fill(b'x');
        first[..6].copy_from_slice(b"short\0");
        first[100] = 0;
        // Two mapped pages, with a string across them.
        let across = map(2);
        across[PAGE as usize - 5..PAGE as usize + 15].fill(b'z');
        let ys: Vec<u8> = [b'y'; 40].into_iter().chain([0]).collect();
        let (short, x94, xs, y40, off) = (page, page + 6, page + 200, ys.as_ptr() as u64, page + PAGE - 10);
        let z20 = across.as_ptr() as u64 + PAGE - 5;
        let got = read_strings(me, &[short, x94, xs, y40, z20, off, short], 16);
        assert_eq!(
            got,
            vec![
                Ok(b"short".to_vec()),
                Err(vec![b'x'; 16]),
                Err(vec![b'x'; 16]),
                Err(vec![b'y'; 16]),
                Err(vec![b'z'; 16]),
            ],
            "the last one runs off its page onto an unmapped one: the entries stop there"
        );
        let got = read_strings(me, &[x94, xs, y40, z20], 512);
        assert_eq!(got, vec![Ok(vec![b'x'; 94]), Err(vec![b'x'; 512]), Ok(vec![b'y'; 40]), Ok(vec![b'z'; 20])]);
        // A string whose NUL is its page's last byte.
        first[PAGE as usize - 1] = 0;
        assert_eq!(read_strings(me, &[off, short], 512), vec![Ok(vec![b'x'; 9]), Ok(b"short".to_vec())]);
        assert!(read_strings(me, &[], 512).is_empty());
        assert!(read_strings(me, &[0, short], 512).is_empty());
        // SAFETY: both mappings are ours; nothing refers to them after.
        unsafe {
            libc::munmap(first.as_mut_ptr().cast(), PAGE as usize);
            libc::munmap(across.as_mut_ptr().cast(), 2 * PAGE as usize);
        }
    }
}
