//! # Safety
//!
//! Process plumbing: `fork(2)`, the child's steps before `execve(2)`,
//! messages over the set-up channel (`recvmsg(2)`), `pidfd_open(2)` and
//! `pidfd_getfd(2)`. Everything the child calls between `fork` and `execve` is
//! a raw syscall: interpose forks before it starts any thread, but keeping the
//! child to async-signal-safe calls means that never has to be relied on.

use super::{cvt, Errno};
use std::ffi::CStr;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// Result of [`fork`].
pub enum Fork {
    /// In the parent, with the child's pid.
    Parent(libc::pid_t),
    /// In the child.
    Child,
}

/// `fork(2)`.
///
/// # Safety
///
/// In a multi-threaded process the child holds a copy of every lock another
/// thread held at the fork, forever: until it execs or exits, the child
/// must make only async-signal-safe calls (no allocation, no `std::io`, no
/// lock), or it may deadlock or see torn state.
pub unsafe fn fork() -> Result<Fork, Errno> {
    // SAFETY: fork has no memory-safety preconditions of its own; the
    // obligation on the child is the caller's (see # Safety).
    let pid = cvt(unsafe { libc::fork() } as libc::c_long)?;
    Ok(if pid == 0 { Fork::Child } else { Fork::Parent(pid as libc::pid_t) })
}

/// `clone(2)` with only `flags` and `SIGCHLD`, like `fork` otherwise: with
/// `CLONE_NEWPID` the child is pid 1 of a new PID namespace. The raw
/// syscall runs no `atfork` handler, so the child may only make raw
/// syscalls until it execs or exits (as after [`fork`]).
///
/// # Safety
///
/// As for [`fork`], and stricter: no `atfork` handler ran, so even libc's
/// own locks may be held; the child may only make raw syscalls and
/// async-signal-safe calls until it execs or exits.
pub unsafe fn clone_process(flags: libc::c_int) -> Result<Fork, Errno> {
    // SAFETY: without CLONE_VM the child gets a copy of the address space
    // and runs on from here like a forked child; the stack and TLS pointers
    // are not passed (0), as fork does.
    let pid = cvt(unsafe {
        libc::syscall(libc::SYS_clone, (flags | libc::SIGCHLD) as libc::c_ulong, 0usize, 0usize, 0usize, 0usize)
    })?;
    Ok(if pid == 0 { Fork::Child } else { Fork::Parent(pid as libc::pid_t) })
}

/// A stack for a process that shares its parent's memory ([`spawn_on`]):
/// anonymous memory with an inaccessible page below it, so that an
/// overflow faults instead of writing over the parent's memory.
pub struct ChildStack {
    base: *mut libc::c_void,
    len: usize,
}

impl ChildStack {
    /// `len` bytes of stack (a multiple of the page size), and the guard.
    pub fn new(len: usize) -> Result<ChildStack, Errno> {
        let page = 4096;
        let total = len + page;
        // SAFETY: a new private anonymous mapping; nothing else refers to it.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                total,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(Errno::last());
        }
        let stack = ChildStack { base, len: total };
        // SAFETY: the lowest page of the mapping just made.
        cvt(unsafe { libc::mprotect(base, page, libc::PROT_NONE) } as libc::c_long)?;
        Ok(stack)
    }

    /// Where a process started on it begins: the top of the mapping
    /// (page-aligned, so 16-byte aligned as the ABI wants).
    pub fn top(&self) -> *mut libc::c_void {
        // SAFETY: one past the end of the mapping made in `new`.
        unsafe { self.base.cast::<u8>().add(self.len).cast() }
    }

    /// Leaves the stack mapped for good: for a process that outlives every
    /// owner it could have here (the keeper).
    pub fn keep_mapped(self) {
        std::mem::forget(self);
    }
}

impl Drop for ChildStack {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, used by no child any more (the
        // one it was for has exec'd or exited before `spawn_on` returned).
        unsafe { libc::munmap(self.base, self.len) };
    }
}

/// `clone(CLONE_VM | CLONE_VFORK)`, as `posix_spawn` makes it: runs
/// `f(arg)` in a new process on `stack`, sharing this process's memory,
/// while the calling thread waits until the new process execs or exits.
/// Its address space is neither copied at the clone nor torn down at the
/// exec (a copy of interpose's costs ~0.3 ms to make and as much to end).
/// Returns its pid.
///
/// # Safety
///
/// As for [`clone_process`]; and `f`, on `stack`, writes nothing of the
/// shared memory but its own stack, and execs or exits (what it returns is
/// its exit status).
pub unsafe fn spawn_on(
    stack: &ChildStack,
    f: extern "C" fn(*mut libc::c_void) -> libc::c_int,
    arg: *mut libc::c_void,
) -> Result<libc::pid_t, Errno> {
    // SAFETY: a new stack of its own; the caller vouches for `f` and `arg`.
    let pid = unsafe { libc::clone(f, stack.top(), libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD, arg) };
    cvt(pid as libc::c_long).map(|p| p as libc::pid_t)
}

/// `prctl(PR_SET_DUMPABLE, dumpable)`: a process that is not dumpable has
/// its `/proc` entries owned by root, and other processes of its user may
/// not read its memory or environment. Async-signal-safe.
pub fn set_dumpable(dumpable: bool) -> Result<(), Errno> {
    // SAFETY: prctl with integer arguments only.
    cvt(unsafe { libc::prctl(libc::PR_SET_DUMPABLE, libc::c_ulong::from(dumpable), 0, 0, 0) } as libc::c_long).map(drop)
}

/// Waits for any signal in `set` (`sigwaitinfo(2)`, retrying on `EINTR`)
/// and returns its number, its `si_code` and the sender's pid as this
/// process sees it (0 when the sender is in an ancestor PID namespace).
/// Async-signal-safe.
pub fn wait_signal(set: &libc::sigset_t) -> (i32, i32, libc::pid_t) {
    loop {
        // SAFETY: siginfo_t is plain data; the kernel fills it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: both pointers are valid for the call.
        let sig = unsafe { libc::sigwaitinfo(set, &mut info) };
        if sig > 0 {
            // SAFETY: for any signal si_pid is readable (0 where unset).
            return (sig, info.si_code, unsafe { info.si_pid() });
        }
    }
}

/// Reaps one exited child without waiting (`wait4(-1, WNOHANG)`): its pid
/// and wait status, or `None` when no child has exited. Async-signal-safe.
pub fn reap_any() -> Option<(libc::pid_t, i32)> {
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid int; no rusage is asked for.
        let pid = unsafe { libc::wait4(-1, &mut status, libc::WNOHANG, std::ptr::null_mut()) };
        match pid {
            0 => return None,
            p if p > 0 => return Some((p, status)),
            _ if Errno::last() == Errno::EINTR => continue,
            _ => return None,
        }
    }
}

/// `close_range(2)` for every descriptor from 3 up except those in `keep`
/// (which must be sorted).
pub fn close_fds_except(keep: &[RawFd]) -> Result<(), Errno> {
    let mut lo: u32 = 3;
    for &k in keep {
        let k = k as u32;
        if k > lo {
            close_range(lo, k - 1)?;
        }
        lo = lo.max(k + 1);
    }
    close_range(lo, u32::MAX)
}

fn close_range(lo: u32, hi: u32) -> Result<(), Errno> {
    // SAFETY: closing descriptors has no memory effects in this process
    // beyond invalidating them; the child owns no Rust handles to them.
    cvt(unsafe { libc::syscall(libc::SYS_close_range, lo, hi, 0u32) }).map(drop)
}

/// `prctl(PR_SET_PDEATHSIG, sig)`.
pub fn set_parent_death_signal(sig: i32) -> Result<(), Errno> {
    // SAFETY: prctl with integer arguments only.
    cvt(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, sig as libc::c_ulong, 0, 0, 0) } as libc::c_long).map(drop)
}

/// `prctl(PR_SET_NO_NEW_PRIVS, 1)`.
pub fn set_no_new_privs() -> Result<(), Errno> {
    // SAFETY: prctl with integer arguments only.
    cvt(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } as libc::c_long).map(drop)
}

/// `prctl(PR_SET_CHILD_SUBREAPER, 1)`: orphans of the sandboxed command are
/// re-parented to interpose, so they stay reapable and countable.
pub fn set_child_subreaper() -> Result<(), Errno> {
    // SAFETY: prctl with integer arguments only.
    cvt(unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } as libc::c_long).map(drop)
}

/// `getppid(2)`.
pub fn parent_pid() -> libc::pid_t {
    // SAFETY: no arguments, cannot fail.
    unsafe { libc::getppid() }
}

/// Restores the default disposition of `sig` (`SIG_DFL`). Async-signal-safe.
pub fn default_signal(sig: i32) -> Result<(), Errno> {
    // SAFETY: a zeroed sigaction with SIG_DFL handler installs no code; the
    // old action is not asked for.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = libc::SIG_DFL;
    // SAFETY: `action` is a valid sigaction; NULL is allowed for the old one.
    cvt(unsafe { libc::sigaction(sig, &action, std::ptr::null_mut()) } as libc::c_long).map(drop)
}

/// `sigprocmask(SIG_SETMASK, set)`, returning the previous mask.
pub fn set_signal_mask(set: &libc::sigset_t) -> Result<libc::sigset_t, Errno> {
    let mut old = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: both pointers are valid sigset_t objects.
    cvt(unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, set, old.as_mut_ptr()) } as libc::c_long)?;
    // SAFETY: initialised by the successful call.
    Ok(unsafe { old.assume_init() })
}

/// Reads one byte (`read(2)`), retrying on `EINTR`; `None` at end of
/// stream. Async-signal-safe.
pub fn read_byte(fd: BorrowedFd<'_>) -> Result<Option<u8>, Errno> {
    let mut b = [0u8; 1];
    loop {
        // SAFETY: the kernel writes at most one byte into `b`.
        match cvt(unsafe { libc::read(fd.as_raw_fd(), b.as_mut_ptr().cast(), 1) } as libc::c_long) {
            Ok(0) => return Ok(None),
            Ok(_) => return Ok(Some(b[0])),
            Err(Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
}

/// Receives one message of up to `buf.len()` bytes from `sock` with every
/// descriptor attached to it (up to 16; the kernel closes any beyond), for a
/// peer that is not trusted: each descriptor is owned at once, so one the
/// caller does not want is closed when dropped. Returns the byte count,
/// the descriptors, and whether the message or its descriptors were cut
/// (`MSG_TRUNC`, `MSG_CTRUNC`).
pub fn recv_with_fds(sock: BorrowedFd<'_>, buf: &mut [u8]) -> Result<(usize, Vec<OwnedFd>, bool), Errno> {
    const MAX_FDS: usize = 16;
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    // Room for one SCM_RIGHTS header and MAX_FDS descriptors, aligned.
    let mut control = [0u64; 2 + MAX_FDS / 2 + 2];
    // SAFETY: msghdr is plain data; zeroed is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control);
    let n = loop {
        // SAFETY: msg points to buffers we own for the duration of the call.
        match cvt(unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) } as libc::c_long) {
            Err(Errno::EINTR) => continue,
            other => break other? as usize,
        }
    };
    let mut fds = Vec::new();
    // SAFETY: the kernel filled msg_control/msg_controllen; the CMSG macros
    // walk only within them, and each descriptor is read from within its
    // header's stated length.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(cmsg);
                let len = (*cmsg).cmsg_len as usize - (data as usize - cmsg as usize);
                for i in 0..len / std::mem::size_of::<RawFd>() {
                    let raw = std::ptr::read_unaligned(data.cast::<RawFd>().add(i));
                    fds.push(OwnedFd::from_raw_fd(raw));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    let cut = msg.msg_flags & (libc::MSG_TRUNC | libc::MSG_CTRUNC) != 0;
    Ok((n, fds, cut))
}

/// `write(2)` of the whole buffer, retrying on `EINTR`. Async-signal-safe.
pub fn write_all(fd: BorrowedFd<'_>, mut buf: &[u8]) -> Result<(), Errno> {
    while !buf.is_empty() {
        // SAFETY: the kernel reads `buf.len()` bytes from `buf`.
        match cvt(unsafe { libc::write(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len()) } as libc::c_long) {
            Ok(n) => buf = &buf[n as usize..],
            Err(Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// A null-terminated array of pointers to C strings, for [`execve`]: made
/// (and allocated) before a fork from strings it borrows, so the pointers
/// stay valid for as long as it lives, and the array always ends with null.
pub struct ExecArgs<'a> {
    ptrs: Vec<*const libc::c_char>,
    _strings: std::marker::PhantomData<&'a [std::ffi::CString]>,
}

impl<'a> ExecArgs<'a> {
    /// Points at each of `strings`, then null.
    pub fn new(strings: &'a [std::ffi::CString]) -> ExecArgs<'a> {
        let ptrs = strings.iter().map(|s| s.as_ptr()).chain(std::iter::once(std::ptr::null())).collect();
        ExecArgs { ptrs, _strings: std::marker::PhantomData }
    }
}

/// `execve(2)`. Only returns on failure.
pub fn execve(path: &CStr, argv: &ExecArgs<'_>, envp: &ExecArgs<'_>) -> Errno {
    let (argv, envp) = (&argv.ptrs, &envp.ptrs);
    // SAFETY: `ExecArgs` holds null-terminated arrays of pointers into C
    // strings it borrows, alive as long as it is (its lifetime).
    unsafe { libc::execve(path.as_ptr(), argv.as_ptr(), envp.as_ptr()) };
    Errno::last()
}

/// `_exit(2)`: ends the child without running the parent's atexit handlers
/// or flushing its copies of the parent's stdio buffers.
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit never returns and touches no process state we depend on.
    unsafe { libc::_exit(code) }
}

/// `pidfd_open(2)`.
pub fn pidfd_open(pid: libc::pid_t) -> Result<OwnedFd, Errno> {
    // SAFETY: integer arguments only; a success returns a new descriptor.
    let fd = cvt(unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0u32) })?;
    // SAFETY: pidfd_open returned a descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// The soft `RLIMIT_FSIZE` of the process of thread `tid`, `None` when
/// unlimited: from `/proc/<tid>/limits`, which anyone may read (`prlimit`
/// would need the target's ids or `CAP_SYS_RESOURCE`, and a command that
/// changed its effective uid has neither in common with the supervisor).
pub fn file_size_limit(tid: u32) -> Result<Option<u64>, Errno> {
    let text = std::fs::read_to_string(format!("/proc/{tid}/limits")).map_err(|_| Errno::ESRCH)?;
    parse_file_size_limit(&text).ok_or(Errno::ESRCH)
}

/// The soft limit of the `Max file size` line of a `/proc/<pid>/limits`.
fn parse_file_size_limit(text: &str) -> Option<Option<u64>> {
    let soft = text.lines().find_map(|l| l.strip_prefix("Max file size"))?.split_whitespace().next()?;
    match soft {
        "unlimited" => Some(None),
        n => n.parse().ok().map(Some),
    }
}

/// Sends `signal` to thread `tid` alone (`tkill(2)`).
pub fn signal_thread(tid: u32, signal: i32) -> Result<(), Errno> {
    // SAFETY: integer arguments only.
    cvt(unsafe { libc::syscall(libc::SYS_tkill, tid as libc::pid_t, signal) }).map(drop)
}

/// `pidfd_open(2)` of one thread (`PIDFD_THREAD`, Linux 6.9): a pidfd
/// whose `pidfd_getfd` reads that thread's own descriptor table.
pub fn pidfd_open_thread(tid: libc::pid_t) -> Result<OwnedFd, Errno> {
    const PIDFD_THREAD: u32 = libc::O_EXCL as u32;
    // SAFETY: integer arguments only; a success returns a new descriptor.
    let fd = cvt(unsafe { libc::syscall(libc::SYS_pidfd_open, tid, PIDFD_THREAD) })?;
    // SAFETY: pidfd_open returned a descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// `pidfd_getfd(2)`: a duplicate of descriptor `fd` of the process behind
/// `pidfd`, sharing its open file description.
pub fn pidfd_getfd(pidfd: BorrowedFd<'_>, fd: i32) -> Result<OwnedFd, Errno> {
    // SAFETY: integer arguments only; a success returns a new descriptor.
    let new = cvt(unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0u32) })?;
    // SAFETY: pidfd_getfd returned a descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(new as RawFd) })
}

/// Points descriptor `fd` at `/dev/null` (`open` and `dup2`): output to it
/// is then discarded instead of blocking on a reader that stopped reading.
pub fn redirect_to_null(fd: RawFd) -> Result<(), Errno> {
    use std::os::fd::AsRawFd;
    let null = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/null")
        .map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)))?;
    // SAFETY: both are open descriptors; dup2 replaces `fd` atomically.
    cvt(unsafe { libc::dup2(null.as_raw_fd(), fd) } as libc::c_long).map(drop)
}

/// `kill(2)`.
pub fn kill(pid: libc::pid_t, sig: i32) -> Result<(), Errno> {
    // SAFETY: integer arguments only.
    cvt(unsafe { libc::kill(pid, sig) } as libc::c_long).map(drop)
}

/// `tgkill(2)`: signal `sig` to thread `tid` of process `tgid`.
pub fn tgkill(tgid: u32, tid: u32, sig: i32) -> Result<(), Errno> {
    // SAFETY: integer arguments only.
    cvt(unsafe { libc::syscall(libc::SYS_tgkill, tgid as libc::pid_t, tid as libc::pid_t, sig) }).map(drop)
}

/// `fchdir(2)`: makes `dir` the calling thread's cwd (its process's, unless
/// the thread has its own file-system context: `unshare(CLONE_FS)`).
pub fn fchdir(dir: BorrowedFd<'_>) -> Result<(), Errno> {
    // SAFETY: an fd argument only.
    cvt(unsafe { libc::fchdir(dir.as_raw_fd()) } as libc::c_long).map(drop)
}

/// `umask(2)`; returns the previous mask.
pub fn umask(mask: u32) -> u32 {
    // SAFETY: umask cannot fail.
    unsafe { libc::umask(mask) }
}

/// `struct __user_cap_header_struct`.
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

/// `struct __user_cap_data_struct`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// Removes every capability not in `keep` (a bit mask by capability number)
/// from the bounding set (`PR_CAPBSET_DROP`), the ambient set, and the
/// effective, permitted and inheritable sets (`capset(2)`), so that not even
/// a root command regains them at `execve`. Async-signal-safe.
pub fn limit_capabilities(keep: u64) -> Result<(), Errno> {
    let mut header = CapHeader { version: CAPABILITY_VERSION_3, pid: 0 };
    let mut data = [CapData::default(); 2];
    // SAFETY: version 3 reads and writes exactly two CapData structures.
    cvt(unsafe { libc::syscall(libc::SYS_capget, &mut header as *mut CapHeader, data.as_mut_ptr()) })?;
    // Without any capability (an ordinary user) there is nothing to drop,
    // and the bounding set cannot be changed (that needs CAP_SETPCAP);
    // no_new_privs, always set before exec, keeps exec from granting any.
    let holds_any = data.iter().any(|d| d.permitted != 0 || d.effective != 0 || d.inheritable != 0);
    for cap in 0..64u32 {
        if keep & (1 << cap) != 0 || !holds_any {
            continue;
        }
        // SAFETY: prctl with integer arguments only.
        match cvt(unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) } as libc::c_long) {
            Ok(_) => {}
            // Past the kernel's last capability.
            Err(Errno::EINVAL) => break,
            Err(e) => return Err(e),
        }
    }
    // SAFETY: prctl with integer arguments only.
    cvt(unsafe { libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong, 0, 0, 0) }
        as libc::c_long)?;
    for (i, d) in data.iter_mut().enumerate() {
        let mask = (keep >> (32 * i)) as u32;
        d.effective &= mask;
        d.permitted &= mask;
        d.inheritable &= mask;
    }
    // SAFETY: as above; capset only reads the two structures.
    cvt(unsafe { libc::syscall(libc::SYS_capset, &mut header as *mut CapHeader, data.as_ptr()) }).map(drop)
}

/// `setgroups(2)`, `setgid(2)`, `setuid(2)` as raw syscalls: they change the
/// calling thread only (glibc's wrappers would signal every thread), which is
/// all a freshly forked child has. Async-signal-safe.
pub fn become_user(uid: u32, gid: u32) -> Result<(), Errno> {
    let groups = [gid];
    // SAFETY: the kernel reads one gid_t from `groups`.
    cvt(unsafe { libc::syscall(libc::SYS_setgroups, 1usize, groups.as_ptr()) })?;
    // SAFETY: integer arguments only.
    cvt(unsafe { libc::syscall(libc::SYS_setresgid, gid, gid, gid) })?;
    // SAFETY: integer arguments only.
    cvt(unsafe { libc::syscall(libc::SYS_setresuid, uid, uid, uid) }).map(drop)
}

/// Puts every permitted capability of the calling thread in effect
/// (`capset(2)`).
pub fn raise_effective_capabilities() -> Result<(), Errno> {
    let mut header = CapHeader { version: CAPABILITY_VERSION_3, pid: 0 };
    let mut data = [CapData::default(); 2];
    // SAFETY: version 3 reads and writes exactly two CapData structures.
    cvt(unsafe { libc::syscall(libc::SYS_capget, &mut header as *mut CapHeader, data.as_mut_ptr()) })?;
    for d in &mut data {
        d.effective = d.permitted;
    }
    // SAFETY: as above; capset only reads the two structures.
    cvt(unsafe { libc::syscall(libc::SYS_capset, &mut header as *mut CapHeader, data.as_ptr()) }).map(drop)
}

/// `setresgid(-1, egid, -1)` then `setresuid(-1, euid, -1)` for the calling
/// thread only (raw syscalls): its effective ids, with the real and saved
/// ones kept, so it can return to them.
pub fn set_thread_effective_ids(euid: u32, egid: u32) -> Result<(), Errno> {
    // SAFETY: integer arguments only; -1 leaves an id unchanged.
    cvt(unsafe { libc::syscall(libc::SYS_setresgid, -1i32, egid, -1i32) })?;
    // SAFETY: as above.
    cvt(unsafe { libc::syscall(libc::SYS_setresuid, -1i32, euid, -1i32) }).map(drop)
}

/// The calling thread's permitted capabilities (bits by number), from
/// `capget(2)`.
pub fn permitted_capabilities() -> Result<u64, Errno> {
    capabilities_of(0).map(|(_, permitted)| permitted)
}

/// The effective and permitted capabilities (bits by number) of thread
/// `tid` (0: the calling thread), from `capget(2)`, which anyone may ask.
pub fn capabilities_of(tid: libc::pid_t) -> Result<(u64, u64), Errno> {
    let mut header = CapHeader { version: CAPABILITY_VERSION_3, pid: tid };
    let mut data = [CapData::default(); 2];
    // SAFETY: version 3 reads and writes exactly two CapData structures.
    cvt(unsafe { libc::syscall(libc::SYS_capget, &mut header as *mut CapHeader, data.as_mut_ptr()) })?;
    let join = |low: u32, high: u32| u64::from(low) | u64::from(high) << 32;
    Ok((join(data[0].effective, data[1].effective), join(data[0].permitted, data[1].permitted)))
}

/// A task's ids, as `PIDFD_GET_INFO` gives them (in the asking thread's
/// user namespace): `[real, effective, saved, file-system]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskIds {
    /// User ids.
    pub uid: [u32; 4],
    /// Group ids.
    pub gid: [u32; 4],
    /// The task's process id (in the asking thread's PID namespace).
    pub tgid: u32,
    /// Its process's parent's.
    pub ppid: u32,
}

/// `struct pidfd_info` in its first size (64 bytes, Linux 6.13), which
/// every later kernel takes.
#[repr(C)]
#[derive(Default)]
struct PidfdInfo {
    mask: u64,
    cgroupid: u64,
    pid: u32,
    tgid: u32,
    ppid: u32,
    ruid: u32,
    rgid: u32,
    euid: u32,
    egid: u32,
    suid: u32,
    sgid: u32,
    fsuid: u32,
    fsgid: u32,
    /// A spare word in 6.13, the exit code since 6.15.
    exit_code: i32,
}

/// The ids of the task `pidfd` names, its process's and its parent's,
/// through `ioctl(PIDFD_GET_INFO)` (Linux 6.13; `ENOTTY` or `EINVAL`
/// before): `ESRCH` once it has exited, so a success also says the task
/// was alive when asked.
pub fn pidfd_ids(pidfd: BorrowedFd<'_>) -> Result<TaskIds, Errno> {
    const PIDFD_INFO_CREDS: u64 = 1 << 1;
    // _IOWR(0xFF, 11, struct pidfd_info)
    const PIDFD_GET_INFO: libc::c_ulong =
        0xC000_0000 | ((std::mem::size_of::<PidfdInfo>() as libc::c_ulong) << 16) | (0xFF << 8) | 11;
    let mut info = PidfdInfo { mask: PIDFD_INFO_CREDS, ..PidfdInfo::default() };
    // SAFETY: the kernel writes at most `size_of::<PidfdInfo>()` bytes, the
    // size the request number carries.
    cvt(unsafe { libc::ioctl(pidfd.as_raw_fd(), PIDFD_GET_INFO, &mut info as *mut PidfdInfo) } as libc::c_long)?;
    if info.mask & PIDFD_INFO_CREDS == 0 {
        return Err(Errno::EINVAL);
    }
    Ok(TaskIds {
        uid: [info.ruid, info.euid, info.suid, info.fsuid],
        gid: [info.rgid, info.egid, info.sgid, info.fsgid],
        tgid: info.tgid,
        ppid: info.ppid,
    })
}

/// The number PID namespace `ns` gives the task this process's namespace
/// numbers `pid`, or (`group`) its thread group's leader
/// (`NS_GET_PID_IN_PIDNS`, `NS_GET_TGID_IN_PIDNS`: Linux 6.9, `ENOTTY`
/// before): `ESRCH` where that namespace does not see it. Two calls that
/// read nothing of the task's, where its `/proc/<pid>/status` is rendered
/// whole (30-40 us for a process just started, docs/performance.md).
pub fn number_in_namespace(ns: BorrowedFd<'_>, pid: u32, group: bool) -> Result<u32, Errno> {
    // _IOR(0xb7, 8, int) and _IOR(0xb7, 9, int).
    const NS_GET_PID_IN_PIDNS: libc::c_ulong = 0x8004_b708;
    const NS_GET_TGID_IN_PIDNS: libc::c_ulong = 0x8004_b709;
    let request = if group { NS_GET_TGID_IN_PIDNS } else { NS_GET_PID_IN_PIDNS };
    // SAFETY: the request takes its argument by value and writes no memory.
    let n = cvt(unsafe { libc::ioctl(ns.as_raw_fd(), request, libc::c_ulong::from(pid)) } as libc::c_long)?;
    u32::try_from(n).map_err(|_| Errno::EINVAL)
}

/// Whether the task `pidfd` names is still alive: a pidfd turns readable
/// when its task exits (a thread's, `PIDFD_THREAD`, when that thread
/// does), before its number is free for another. A failed poll counts as
/// gone.
pub fn pidfd_alive(pidfd: BorrowedFd<'_>) -> bool {
    let mut poll = libc::pollfd { fd: pidfd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: one pollfd, no wait.
    unsafe { libc::poll(&mut poll, 1, 0) == 0 }
}

/// Which of the tasks `pidfds` name have exited (as [`pidfd_alive`], all
/// asked in one `poll`): one flag per pidfd, true for a task gone. A failed
/// poll counts every one as gone.
pub fn pidfds_gone<'a>(pidfds: impl Iterator<Item = BorrowedFd<'a>>) -> Vec<bool> {
    let mut polls: Vec<libc::pollfd> =
        pidfds.map(|fd| libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 }).collect();
    // SAFETY: `polls` holds `polls.len()` pollfds; no wait.
    let n = unsafe { libc::poll(polls.as_mut_ptr(), polls.len() as libc::nfds_t, 0) };
    polls.iter().map(|p| n < 0 || p.revents != 0).collect()
}

/// Gives the calling thread (only it: these are raw syscalls, and Linux keeps
/// credentials per thread) the file-system identity `fsuid`/`fsgid`, the
/// supplementary `groups` (unless `None`: they cannot be changed in a user
/// namespace whose setgroups is denied), and the effective capabilities
/// `effective` (bits by capability number; only what the permitted set
/// holds). Everything stays reversible: the real and saved ids and the
/// permitted set are untouched, so the thread can take any other identity
/// afterwards, its own included.
pub fn take_identity_in_this_thread(
    fsuid: u32,
    fsgid: u32,
    groups: Option<&[u32]>,
    effective: u64,
) -> Result<(), Errno> {
    let mut header = CapHeader { version: CAPABILITY_VERSION_3, pid: 0 };
    let mut data = [CapData::default(); 2];
    // SAFETY: version 3 reads and writes exactly two CapData structures.
    cvt(unsafe { libc::syscall(libc::SYS_capget, &mut header as *mut CapHeader, data.as_mut_ptr()) })?;
    // First every permitted capability back in effect: changing groups and
    // ids needs CAP_SETGID and CAP_SETUID, which an earlier identity may
    // have left out.
    for d in &mut data {
        d.effective = d.permitted;
    }
    // SAFETY: as above; capset only reads the two structures.
    cvt(unsafe { libc::syscall(libc::SYS_capset, &mut header as *mut CapHeader, data.as_ptr()) })?;
    if let Some(groups) = groups {
        // SAFETY: the kernel reads `groups.len()` gid_t values from `groups`.
        cvt(unsafe { libc::syscall(libc::SYS_setgroups, groups.len(), groups.as_ptr()) })?;
    }
    // setfsgid/setfsuid return the previous id and cannot report errors, so
    // read the new one back.
    // SAFETY: integer arguments only.
    unsafe { libc::syscall(libc::SYS_setfsgid, fsgid) };
    // SAFETY: integer arguments only.
    unsafe { libc::syscall(libc::SYS_setfsuid, fsuid) };
    // SAFETY: -1 only queries.
    let (now_gid, now_uid) =
        unsafe { (libc::syscall(libc::SYS_setfsgid, -1i32), libc::syscall(libc::SYS_setfsuid, -1i32)) };
    if now_uid as u32 != fsuid || now_gid as u32 != fsgid {
        return Err(Errno::EPERM);
    }
    // Then only the wanted ones.
    for (i, d) in data.iter_mut().enumerate() {
        d.effective = (effective >> (32 * i)) as u32 & d.permitted;
    }
    // SAFETY: as above.
    cvt(unsafe { libc::syscall(libc::SYS_capset, &mut header as *mut CapHeader, data.as_ptr()) }).map(drop)
}

/// `unshare(flags)`. Async-signal-safe.
pub fn unshare(flags: i32) -> Result<(), Errno> {
    // SAFETY: unshare takes flags only.
    cvt(unsafe { libc::unshare(flags) } as libc::c_long).map(drop)
}

/// `setns(2)`: enters the namespace `ns` names, of type `nstype`.
/// Async-signal-safe.
pub fn setns(ns: BorrowedFd<'_>, nstype: i32) -> Result<(), Errno> {
    // SAFETY: a descriptor the caller holds and an integer.
    cvt(unsafe { libc::setns(ns.as_raw_fd(), nstype) } as libc::c_long).map(drop)
}

/// A TCP socket listening on `at` (IPv4 or IPv6; an IPv6 one takes only
/// IPv6). Async-signal-safe: no allocation.
pub fn listen_on(at: std::net::SocketAddr) -> Result<OwnedFd, Errno> {
    let family = if at.is_ipv6() { libc::AF_INET6 } else { libc::AF_INET };
    // SAFETY: a plain socket(2) call; the descriptor is owned at once.
    let fd = cvt(unsafe { libc::socket(family, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) } as libc::c_long)?;
    // SAFETY: `fd` was just returned by socket(2) and nothing else owns it.
    let sock = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    let bound = match at {
        std::net::SocketAddr::V4(a) => {
            let addr = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr { s_addr: u32::from_be_bytes(a.ip().octets()).to_be() },
                sin_zero: [0; 8],
            };
            let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            // SAFETY: `addr` is a valid sockaddr_in of `len` bytes.
            unsafe { libc::bind(sock.as_raw_fd(), (&addr as *const libc::sockaddr_in).cast(), len) }
        }
        std::net::SocketAddr::V6(a) => {
            let one: libc::c_int = 1;
            // SAFETY: an int option of its size.
            unsafe {
                libc::setsockopt(
                    sock.as_raw_fd(),
                    libc::IPPROTO_IPV6,
                    libc::IPV6_V6ONLY,
                    (&one as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                )
            };
            let addr = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: 0,
                sin6_addr: libc::in6_addr { s6_addr: a.ip().octets() },
                sin6_scope_id: 0,
            };
            let len = std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t;
            // SAFETY: `addr` is a valid sockaddr_in6 of `len` bytes.
            unsafe { libc::bind(sock.as_raw_fd(), (&addr as *const libc::sockaddr_in6).cast(), len) }
        }
    };
    cvt(bound as libc::c_long)?;
    // SAFETY: listen takes a descriptor and a number.
    cvt(unsafe { libc::listen(sock.as_raw_fd(), 1024) } as libc::c_long)?;
    Ok(sock)
}

/// Brings the loopback interface of the current network namespace up
/// (`SIOCSIFFLAGS` with `IFF_UP` on `lo`). Async-signal-safe: one socket,
/// two ioctls, no allocation.
pub fn loopback_up() -> Result<(), Errno> {
    // SAFETY: a plain socket(2) call; the descriptor is closed below.
    let sock = cvt(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) } as libc::c_long)?;
    // SAFETY: an all-zero ifreq is valid; the name is copied in below.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(b"lo\0") {
        *dst = *src as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS and SIOCSIFFLAGS read and write one ifreq.
    let result =
        cvt(unsafe { libc::ioctl(sock as i32, libc::SIOCGIFFLAGS, &mut req) } as libc::c_long).and_then(|_| {
            // SAFETY: the flags member of the union, as SIOCGIFFLAGS filled it.
            unsafe { req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short };
            // SAFETY: as above.
            cvt(unsafe { libc::ioctl(sock as i32, libc::SIOCSIFFLAGS, &req) } as libc::c_long)
        });
    // SAFETY: closing the socket opened above.
    unsafe { libc::close(sock as i32) };
    result.map(drop)
}

/// `mount(2)`. Async-signal-safe.
pub fn mount(
    source: Option<&CStr>,
    target: &CStr,
    fstype: Option<&CStr>,
    flags: libc::c_ulong,
    data: Option<&CStr>,
) -> Result<(), Errno> {
    let ptr = |s: Option<&CStr>| s.map_or(std::ptr::null(), CStr::as_ptr);
    // SAFETY: every pointer is NULL or a NUL-terminated string that outlives the call.
    cvt(unsafe { libc::mount(ptr(source), target.as_ptr(), ptr(fstype), flags, ptr(data).cast()) } as libc::c_long)
        .map(drop)
}

/// Remounts the bind mount at `target` read-only (or writable) with the
/// mount flags `extra`, keeping those the kernel may have locked on it
/// (`nosuid`, `nodev`, `noexec`, the atime mode: a mount copied from a more
/// privileged namespace may not lose them), read with `statvfs(3)` (`statfs(2)`).
/// Async-signal-safe.
pub fn remount_bind(target: &CStr, read_only: bool, extra: libc::c_ulong) -> Result<(), Errno> {
    // SAFETY: statvfs is plain data; the kernel fills it.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `target` is NUL-terminated and `st` valid for the call.
    cvt(unsafe { libc::statvfs(target.as_ptr(), &mut st) } as libc::c_long)?;
    let f = st.f_flag as libc::c_ulong;
    let kept = [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ]
    .iter()
    .filter(|(st, _)| f & *st != 0)
    .fold(0, |acc, (_, ms)| acc | ms);
    let strict = if f & (libc::ST_NOATIME | libc::ST_RELATIME) == 0 { libc::MS_STRICTATIME } else { 0 };
    let ro = if read_only { libc::MS_RDONLY } else { 0 };
    mount(None, target, None, libc::MS_REMOUNT | libc::MS_BIND | ro | kept | strict | extra, None)
}

/// `mkdir(2)`; an existing directory is not an error. Async-signal-safe.
pub fn mkdir_existing_ok(path: &CStr, mode: u32) -> Result<(), Errno> {
    // SAFETY: `path` is NUL-terminated.
    match cvt(unsafe { libc::mkdir(path.as_ptr(), mode) } as libc::c_long) {
        Ok(_) | Err(Errno::EEXIST) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Creates an empty file (a mount point for a file bind) unless one exists.
/// Async-signal-safe.
pub fn touch(path: &CStr) -> Result<(), Errno> {
    // SAFETY: `path` is NUL-terminated; the descriptor is closed at once.
    let fd =
        cvt(unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CREAT | libc::O_CLOEXEC, 0o644) }
            as libc::c_long)?;
    // SAFETY: closing the descriptor just opened.
    unsafe { libc::close(fd as i32) };
    Ok(())
}

/// `symlink(2)`. Async-signal-safe.
pub fn symlink(target: &CStr, at: &CStr) -> Result<(), Errno> {
    // SAFETY: both are NUL-terminated.
    cvt(unsafe { libc::symlink(target.as_ptr(), at.as_ptr()) } as libc::c_long).map(drop)
}

/// `chdir(2)`. Async-signal-safe.
pub fn chdir(path: &CStr) -> Result<(), Errno> {
    // SAFETY: `path` is NUL-terminated.
    cvt(unsafe { libc::chdir(path.as_ptr()) } as libc::c_long).map(drop)
}

/// Makes the current directory the root (`pivot_root(".", ".")`) and
/// detaches the old root stacked on it. Async-signal-safe.
pub fn pivot_to_cwd() -> Result<(), Errno> {
    let dot = c".";
    // SAFETY: both arguments are NUL-terminated.
    cvt(unsafe { libc::syscall(libc::SYS_pivot_root, dot.as_ptr(), dot.as_ptr()) })?;
    // SAFETY: `dot` is NUL-terminated.
    cvt(unsafe { libc::umount2(dot.as_ptr(), libc::MNT_DETACH) } as libc::c_long).map(drop)
}

/// Writes `data` to the file at `path` (opened write-only, not created).
/// Async-signal-safe.
pub fn write_file(path: &CStr, data: &[u8]) -> Result<(), Errno> {
    // SAFETY: `path` is NUL-terminated; the descriptor is closed below.
    let fd = cvt(unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) } as libc::c_long)?;
    // SAFETY: the descriptor was just opened and is owned here alone.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
    write_all(std::os::fd::AsFd::as_fd(&fd), data)
}

/// Raises this process's soft limit on open descriptors to its hard limit
/// and returns the new soft limit. Called by the supervisor after the
/// command is started, so the command keeps the limits it was given.
pub fn raise_descriptor_limit() -> Result<u64, Errno> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one rlimit.
    cvt(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } as libc::c_long)?;
    lim.rlim_cur = lim.rlim_max;
    // SAFETY: setrlimit reads one rlimit.
    cvt(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } as libc::c_long)?;
    Ok(lim.rlim_cur)
}

#[cfg(test)]
mod limit_tests {
    use super::*;

    #[test]
    fn the_file_size_limit_is_read_from_proc() {
        let text = "Limit                     Soft Limit           Hard Limit           Units     \n\
                    Max cpu time              unlimited            unlimited            seconds   \n\
                    Max file size             16777216             unlimited            bytes     \n";
        assert_eq!(parse_file_size_limit(text), Some(Some(16_777_216)));
        assert_eq!(parse_file_size_limit(&text.replace("16777216 ", "unlimited")), Some(None));
        assert_eq!(parse_file_size_limit("garbage"), None);
        let mut own = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit writes `own`.
        unsafe { libc::getrlimit(libc::RLIMIT_FSIZE, &mut own) };
        let expected = (own.rlim_cur != libc::RLIM_INFINITY).then_some(own.rlim_cur);
        assert_eq!(file_size_limit(std::process::id()).unwrap(), expected);
    }
}

#[cfg(test)]
mod spawn_tests {
    use super::*;

    /// What the spawned process writes: a marker in the shared memory
    /// (this test's frame), before it exits with a status of its own.
    extern "C" fn mark_and_exit(arg: *mut libc::c_void) -> libc::c_int {
        // SAFETY: `arg` is the test's `AtomicU32`, alive while it waits.
        let marker = unsafe { &*arg.cast::<std::sync::atomic::AtomicU32>() };
        marker.store(0x5EED, std::sync::atomic::Ordering::SeqCst);
        exit_now(7)
    }

    #[test]
    fn a_spawned_process_shares_memory_and_its_parent_waits_for_it() {
        let stack = ChildStack::new(64 * 1024).unwrap();
        let marker = std::sync::atomic::AtomicU32::new(0);
        // SAFETY: `mark_and_exit` writes only the marker and exits.
        let pid = unsafe { spawn_on(&stack, mark_and_exit, std::ptr::from_ref(&marker).cast_mut().cast()) }.unwrap();
        // CLONE_VFORK: it has exited by now, and wrote into our memory.
        assert_eq!(marker.load(std::sync::atomic::Ordering::SeqCst), 0x5EED);
        let mut status = 0;
        // SAFETY: `status` is a valid int.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 7, "{status:#x}");
    }
}

#[cfg(test)]
mod pidfd_tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn a_pid_namespace_numbers_a_thread_and_its_process() {
        let ns = std::fs::File::open("/proc/self/ns/pid").unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            // SAFETY: gettid has no arguments.
            tx.send(unsafe { libc::gettid() } as u32).unwrap();
            let _ = done_rx.recv();
        });
        let tid = rx.recv().unwrap();
        // Our own namespace numbers the thread and its process as we do.
        assert_eq!(number_in_namespace(ns.as_fd(), tid, false), Ok(tid));
        assert_eq!(number_in_namespace(ns.as_fd(), tid, true), Ok(std::process::id()));
        done_tx.send(()).unwrap();
        thread.join().unwrap();
        // Nobody: a number no task has.
        assert_eq!(number_in_namespace(ns.as_fd(), u32::MAX >> 2, false), Err(Errno::ESRCH));
    }

    #[test]
    fn a_threads_pidfd_names_its_process_and_parent() {
        let me = std::process::id();
        let parent = crate::sys::procfs::name_and_parent(me).unwrap().1;
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            // SAFETY: gettid has no arguments.
            tx.send(unsafe { libc::gettid() }).unwrap();
            let _ = done_rx.recv();
        });
        let tid = rx.recv().unwrap();
        assert_ne!(tid as u32, me);
        let task = pidfd_open_thread(tid).unwrap();
        match pidfd_ids(task.as_fd()) {
            Ok(ids) => {
                assert_eq!((ids.tgid, ids.ppid), (me, parent));
                // SAFETY: getuid has no arguments.
                assert_eq!(ids.uid[0], unsafe { libc::getuid() });
            }
            // A kernel before PIDFD_GET_INFO (6.13).
            Err(e) => assert!(matches!(e, Errno::ENOTTY | Errno::EINVAL), "{e}"),
        }
        done_tx.send(()).unwrap();
        thread.join().unwrap();
    }
}
