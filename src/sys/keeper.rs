//! A process that lives in interpose's own address space, holds the
//! descriptors it is sent and exits once interpose is gone
//! ([`crate::sandbox::keeper`] says what it is for).
//!
//! # Safety
//!
//! The keeper is made with `clone(CLONE_VM)`, twice (the first child makes
//! the second and exits, so the keeper is no child of interpose's). A fork
//! would copy interpose's page tables and leave every page of interpose
//! write-protected, shared with the keeper for the whole session: each
//! first write to a page afterwards is a fault and a copy, and once
//! interpose runs threads on the other CPUs a TLB shootdown of each (an
//! inter-processor interrupt, 10-20 us apiece on a virtual machine). With
//! `CLONE_VM` nothing is copied or protected, and the address space outlives
//! interpose in the keeper, whose exit then tears it down (not interpose's).
//!
//! Sharing the address space puts three rules on everything the keeper
//! runs, which this file keeps by making raw `syscall` instructions only:
//! - it allocates nothing: the allocator's arenas and locks are interpose's;
//! - it touches no thread-local storage: its thread pointer is that of the
//!   interpose thread that cloned it, so a libc wrapper setting `errno`
//!   would set that thread's;
//! - it never returns or unwinds, and ends in `exit_group`.
//!
//! It runs on a stack mapped for it (with a guard page below), which is
//! never unmapped: the keeper outlives interpose. Every signal is blocked in
//! it before anything else, so no handler (interpose's, inherited) ever
//! runs on that stack.

use super::Errno;
use std::os::fd::RawFd;

/// The keeper's stack (above one guard page, [`super::process::ChildStack`]).
const STACK: usize = 64 * 1024;

/// One raw system call: the result, or `-errno`. Never touches `errno`.
///
/// # Safety
///
/// The arguments must be valid for system call `nr` (pointers to memory
/// the kernel may read or write as that call does).
#[inline(always)]
unsafe fn raw(nr: libc::c_long, a: [usize; 6]) -> isize {
    let ret: isize;
    // SAFETY: the x86_64 system call convention: the number goes in and the
    // result comes out in rax, the arguments in rdi, rsi, rdx, r10, r8 and
    // r9, and the kernel clobbers rcx and r11 only. The stack is untouched.
    unsafe {
        core::arch::asm!(
            "syscall",
            inlateout("rax") nr as isize => ret,
            in("rdi") a[0],
            in("rsi") a[1],
            in("rdx") a[2],
            in("r10") a[3],
            in("r8") a[4],
            in("r9") a[5],
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    ret
}

/// Starts the keeper of `interpose` (a pidfd of interpose) on `sock` (its
/// end of a socket pair): it holds every descriptor sent over `sock` until
/// `interpose` is readable (gone), then exits. Both descriptors stay open
/// here too; the keeper has copies of its own.
pub fn start(interpose: RawFd, sock: RawFd) -> Result<(), Errno> {
    let stack = super::process::ChildStack::new(STACK)?;
    let arg = ((interpose as u32 as usize) << 32) | sock as u32 as usize;
    // SAFETY: `detach` runs on the new stack (16-byte aligned, page-aligned
    // in fact), shares our memory and keeps the rules of this file's
    // # Safety; glibc's clone calls it and then the exit system call,
    // touching nothing of ours in the child.
    let pid = unsafe { libc::clone(detach, stack.top(), libc::CLONE_VM | libc::SIGCHLD, arg as *mut _) };
    if pid < 0 {
        return Err(Errno::last());
    }
    // The stack is the keeper's from now on: never unmapped.
    stack.keep_mapped();
    Ok(())
}

/// The first child: blocks every signal, makes the keeper and exits, so
/// that the keeper is re-parented away from interpose.
extern "C" fn detach(arg: *mut libc::c_void) -> libc::c_int {
    let all: u64 = !0;
    // SAFETY: rt_sigprocmask reads 8 bytes of mask from `all`, on our stack.
    unsafe { raw(libc::SYS_rt_sigprocmask, [libc::SIG_SETMASK as usize, &all as *const u64 as usize, 0, 8, 0, 0]) };
    let flags = (libc::CLONE_VM | libc::SIGCHLD) as usize;
    // SAFETY: clone with CLONE_VM and no new stack: the keeper runs on from
    // here on this very stack. This process (the parent branch) therefore
    // exits inside this block, touching no memory after the system call
    // returns; the keeper (the branch with 0) goes on alone. A failed clone
    // exits too: there is no keeper, as if it had ended at once.
    unsafe {
        core::arch::asm!(
            "syscall",
            "test rax, rax",
            "jz 2f",
            "xor edi, edi",
            "mov eax, {exit}",
            "syscall",
            "2:",
            exit = const libc::SYS_exit,
            inlateout("rax") libc::SYS_clone as isize => _,
            in("rdi") flags,
            in("rsi") 0usize,
            in("rdx") 0usize,
            in("r10") 0usize,
            in("r8") 0usize,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    keep(arg as usize)
}

/// The keeper's life: hold what arrives on the socket until interpose's
/// pidfd is readable, then exit.
fn keep(arg: usize) -> ! {
    let interpose = (arg >> 32) as u32 as i32;
    let sock = arg as u32 as i32;
    // SAFETY: raw system calls on integers and on buffers of this stack
    // frame, sized as each call reads or writes them; `msghdr` is plain
    // data, for which all zeroes is a valid empty header.
    unsafe {
        // Out of the terminal's session: a Ctrl-C is for the command.
        raw(libc::SYS_setsid, [0; 6]);
        raw(libc::SYS_prctl, [libc::PR_SET_NAME as usize, c"interpose-keep".as_ptr() as usize, 0, 0, 0, 0]);
        // Nothing of the caller's: a pipeline reading interpose's output
        // ends when interpose does.
        let null = raw(
            libc::SYS_openat,
            [libc::AT_FDCWD as usize, c"/dev/null".as_ptr() as usize, libc::O_RDWR as usize, 0, 0, 0],
        );
        if null >= 0 {
            for fd in 0..3usize {
                raw(libc::SYS_dup2, [null as usize, fd, 0, 0, 0, 0]);
            }
        }
        let (lo, hi) = (interpose.min(sock) as u32, interpose.max(sock) as u32);
        let close = |from: u32, to: u32| {
            if from <= to {
                raw(libc::SYS_close_range, [from as usize, to as usize, 0, 0, 0, 0]);
            }
        };
        close(3, lo.wrapping_sub(1));
        close(lo.wrapping_add(1), hi.wrapping_sub(1));
        close(hi.wrapping_add(1), u32::MAX);

        let mut fds = [
            libc::pollfd { fd: interpose, events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: sock, events: libc::POLLIN, revents: 0 },
        ];
        loop {
            fds[0].revents = 0;
            fds[1].revents = 0;
            let n = raw(libc::SYS_poll, [fds.as_mut_ptr() as usize, 2, -1isize as usize, 0, 0, 0]);
            if n == -(libc::EINTR as isize) {
                continue;
            }
            if n < 0 || fds[0].revents != 0 {
                break;
            }
            if fds[1].revents != 0 {
                // One message: its descriptors stay open in this process
                // until it exits. The end of the socket (or an error)
                // leaves the pidfd alone to wait on (poll skips fd -1).
                let mut byte = 0u8;
                let mut iov = libc::iovec { iov_base: (&mut byte as *mut u8).cast(), iov_len: 1 };
                let mut control = [0u64; 16];
                let mut msg: libc::msghdr = std::mem::zeroed();
                msg.msg_iov = &mut iov;
                msg.msg_iovlen = 1;
                msg.msg_control = control.as_mut_ptr().cast();
                msg.msg_controllen = std::mem::size_of_val(&control);
                let got = raw(
                    libc::SYS_recvmsg,
                    [sock as usize, &mut msg as *mut libc::msghdr as usize, libc::MSG_CMSG_CLOEXEC as usize, 0, 0, 0],
                );
                if got <= 0 && got != -(libc::EINTR as isize) {
                    fds[1].fd = -1;
                }
            }
        }
        loop {
            raw(libc::SYS_exit_group, [0; 6]);
        }
    }
}
