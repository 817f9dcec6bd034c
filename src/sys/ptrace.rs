//! # Safety
//!
//! `ptrace(2)` as the supervisor uses it: seizing a thread that waits for
//! the answer to its `execve`, to see the program the kernel loaded before
//! it runs an instruction (`PTRACE_O_TRACEEXEC`), and `waitpid(2)` for that
//! thread's stops. Every request passes integers only, or a pointer to a
//! local the kernel writes during the call.
//!
//! Man page: <https://man7.org/linux/man-pages/man2/ptrace.2.html>

use super::{cvt, Errno};

/// `PTRACE_EVENT_EXEC`: the tracee completed an `execve`.
pub const EVENT_EXEC: i32 = 4;
/// `PTRACE_EVENT_STOP`: a stop of a seized tracee (`PTRACE_INTERRUPT`, a
/// group-stop).
pub const EVENT_STOP: i32 = 128;

/// `ptrace(PTRACE_SEIZE, tid, 0, options)`: attaches to thread `tid`
/// without stopping it. With `PTRACE_O_EXITKILL` the tracee is killed if the
/// tracer goes away.
pub fn seize(tid: i32, options: libc::c_ulong) -> Result<(), Errno> {
    // SAFETY: integer arguments only.
    cvt(unsafe { libc::ptrace(libc::PTRACE_SEIZE, tid, 0usize, options) }).map(drop)
}

/// `ptrace(PTRACE_INTERRUPT, tid)`: the seized tracee stops at its next
/// chance (on its way back to user space, before any signal).
pub fn interrupt(tid: i32) -> Result<(), Errno> {
    // SAFETY: integer arguments only.
    cvt(unsafe { libc::ptrace(libc::PTRACE_INTERRUPT, tid, 0usize, 0usize) }).map(drop)
}

/// `ptrace(PTRACE_DETACH, tid, 0, sig)`: lets the stopped tracee go,
/// delivering `sig` (0 for none).
pub fn detach(tid: i32, sig: i32) -> Result<(), Errno> {
    // SAFETY: integer arguments only.
    cvt(unsafe { libc::ptrace(libc::PTRACE_DETACH, tid, 0usize, sig as usize) }).map(drop)
}

/// `ptrace(PTRACE_CONT, tid, 0, sig)`: restarts the stopped tracee,
/// delivering `sig`.
pub fn cont(tid: i32, sig: i32) -> Result<(), Errno> {
    // SAFETY: integer arguments only.
    cvt(unsafe { libc::ptrace(libc::PTRACE_CONT, tid, 0usize, sig as usize) }).map(drop)
}

/// How a tracee's wait ended ([`wait_own_tracee`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// It stopped.
    Stop {
        /// The thread id it has now (an exec makes it the process's).
        tid: i32,
        /// The stop signal.
        signal: i32,
        /// The ptrace event, 0 for none.
        event: i32,
    },
    /// It is gone (exited or killed).
    Gone {
        /// The thread id it had.
        tid: i32,
    },
}

/// `waitpid(-1, __WALL | __WNOTHREAD)`: the next stop or death of a tracee
/// of the calling thread (never another thread's child or tracee), retried
/// on `EINTR`.
pub fn wait_own_tracee() -> Result<Stopped, Errno> {
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid int for the kernel to write.
        match cvt(unsafe { libc::waitpid(-1, &mut status, libc::__WALL | libc::__WNOTHREAD) } as libc::c_long) {
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(e),
            Ok(tid) => {
                let tid = tid as i32;
                return Ok(if libc::WIFSTOPPED(status) {
                    Stopped::Stop { tid, signal: libc::WSTOPSIG(status), event: (status >> 16) & 0xff }
                } else {
                    Stopped::Gone { tid }
                });
            }
        }
    }
}
