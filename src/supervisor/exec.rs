//! Execs that no backstop covers, checked after the kernel has loaded them.
//!
//! Only the kernel can make an exec (the caller's memory is replaced), so
//! an allowed one is answered CONTINUE, and the kernel reads its path
//! again, after the check. Where the backstop covers execs it refuses
//! whatever the surface does not let run, wherever that lookup leads
//! ([`super::cover::Cover::backstop`]). Without one (`--no-landlock`, a
//! container's runtime filter) the supervisor seizes the calling thread
//! before it answers (`PTRACE_SEIZE` with `PTRACE_O_TRACEEXEC`) and
//! interrupts it (`PTRACE_INTERRUPT`: before the answer where the thread
//! waits for it killably, after where any signal would end that wait), so
//! that the thread stops either right after the kernel has loaded the new
//! program, before its first instruction (`PTRACE_EVENT_EXEC`), or, if the
//! exec failed, on its way back. At the exec stop every file the kernel
//! mapped to run (the program or a script's interpreter, and the ELF
//! interpreter) is decided as an exec on its real location; one the
//! surface does not let run kills the process (`SIGKILL`) before it runs,
//! and the refusal is recorded. Then the thread is let go
//! (`PTRACE_DETACH`). A script the kernel swapped in is read by its
//! interpreter through a trapped open, decided as any other.

use super::handle::{Check, Why};
use super::{NotifResp, Supervisor};
use crate::audit::{AccessKind, Verdict};
use crate::policy::Access;
use crate::sys::ptrace::{self, Stopped};
use crate::sys::{process, seccomp, Errno};
use std::os::fd::AsFd;

/// An allowed exec that no backstop covers: the thread that waits for it.
#[derive(Debug)]
pub struct Verify {
    /// The calling thread.
    pub tid: u32,
}

impl Supervisor {
    /// Answers notification `id`, an allowed exec of `v.tid`, and checks
    /// what the kernel executed; the refusal, if the kernel ran a program
    /// the surface does not let run.
    pub(super) fn verified_exec(&self, id: u64, v: Verify) -> Option<Check> {
        let tid = v.tid as i32;
        let options = (libc::PTRACE_O_TRACEEXEC | libc::PTRACE_O_EXITKILL) as libc::c_ulong;
        let fail = |e: Errno| {
            let resp = NotifResp { id, val: 0, error: -(e as i32), flags: 0 };
            let _ = seccomp::send(self.listener.as_fd(), resp);
        };
        // The thread is made to stop after the exec, or on its way back from
        // one that failed, by an interrupt. Where its wait for the answer
        // is killable only, the interrupt is sent before the answer, and
        // waits for the thread's way back. Where any signal ends that wait
        // (a runtime's filter), an interrupt sent before the answer would
        // end it too: the call, never answered, would be made again, a new
        // notification, seized and interrupted again, over and over (runc's
        // exec of a container's program went round hundreds of times). It
        // is sent once the exec is answered: the exec stop comes first all
        // the same (the seizing asked for it), and after a failed exec the
        // thread stops at its next chance.
        let interrupt_first = !self.ground.signals_interrupt;
        // The worker's own credentials are the caller's: seizing needs the
        // supervisor's (CAP_SYS_PTRACE it keeps; the rest for a caller that
        // changed its own). Interrupting a tracee needs none.
        let seize = || {
            super::identity::as_supervisor(|| {
                ptrace::seize(tid, options).and_then(|()| if interrupt_first { ptrace::interrupt(tid) } else { Ok(()) })
            })
        };
        let mut seized = seize();
        // A runtime's caller waits interruptibly: a signal (Go preempts its
        // threads with SIGURG) ends the wait, and the exec is made again, a
        // new notification, while the worker that took the first one still
        // holds the thread, about to let it go at the stop its interrupt
        // makes. Seizing fails then (EPERM, traced already); it is tried
        // again while the tracer is this supervisor or, let go since,
        // nobody, for a bounded while.
        let until = std::time::Instant::now() + std::time::Duration::from_millis(100);
        while seized == Err(Errno::EPERM) && traced_by_us_or_none(v.tid) && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_micros(200));
            seized = seize();
        }
        match seized {
            Ok(()) => {}
            // Gone: nobody to answer.
            Err(Errno::ESRCH) => return None,
            // Traced by someone else, say: the exec cannot be checked, so
            // it is refused.
            Err(e) => {
                tracing::warn!("an exec cannot be checked (ptrace: {e}); it is refused");
                fail(Errno::EPERM);
                return None;
            }
        }
        let resp = NotifResp { id, val: 0, error: 0, flags: seccomp::USER_NOTIF_FLAG_CONTINUE };
        if let Err(e) = seccomp::send(self.listener.as_fd(), resp) {
            // The caller was interrupted or killed meanwhile: it runs on
            // (or not) without executing anything.
            tracing::debug!("answering an exec failed: {e}");
        }
        if !interrupt_first {
            // Gone meanwhile: the wait below says so.
            let _ = ptrace::interrupt(tid);
        }
        loop {
            match ptrace::wait_own_tracee() {
                Ok(Stopped::Stop { tid, event: ptrace::EVENT_EXEC, .. }) => {
                    let refused = self.executed(tid as u32);
                    // Learning, the refusal is recorded and the program runs.
                    if refused.is_some() && !self.learns() {
                        let _ = process::kill(tid, libc::SIGKILL);
                        // Killed at a stop, it can no longer be detached: it
                        // dies still traced, and its parent sees it only
                        // once this thread has waited for it (in a
                        // container nothing else would).
                        loop {
                            match ptrace::wait_own_tracee() {
                                Ok(Stopped::Gone { tid: gone }) if gone == tid => break,
                                Ok(_) => {}
                                Err(_) => break,
                            }
                        }
                        return refused;
                    }
                    let _ = ptrace::detach(tid, 0);
                    return refused;
                }
                // The interrupt (the exec failed, or never ran) or a
                // group-stop: nothing new runs; a group-stopped thread
                // stays stopped once let go.
                Ok(Stopped::Stop { tid, event: ptrace::EVENT_STOP, .. }) => {
                    let _ = ptrace::detach(tid, 0);
                    return None;
                }
                // A signal on its way: passed on.
                Ok(Stopped::Stop { tid, signal, .. }) => {
                    let _ = ptrace::cont(tid, signal);
                }
                Ok(Stopped::Gone { .. }) | Err(_) => return None,
            }
        }
    }

    /// At the exec stop of `tid`: the first file it maps to run that the
    /// surface does not let run, as a refused check (one that would have
    /// been refused, when learning).
    fn executed(&self, tid: u32) -> Option<Check> {
        use std::os::unix::ffi::OsStrExt;
        let exe = match std::fs::read_link(format!("/proc/{tid}/exe")) {
            Ok(exe) => exe,
            // What runs cannot be named, so it cannot be let run.
            Err(_) => {
                return Some(Check {
                    syscall: "execve",
                    path: format!("/proc/{tid}/exe").into_bytes(),
                    resolved: None,
                    access: AccessKind::Exec,
                    decision: if self.learns() { Verdict::WouldDeny } else { Verdict::Deny },
                    errno: None,
                    reason: Why::Note("the executed program cannot be read back", crate::audit::RuleKind::Failure),
                    dirfd: None,
                })
            }
        };
        let exe = exe.as_os_str().as_bytes();
        let exe = exe.strip_suffix(b" (deleted)").unwrap_or(exe).to_vec();
        let mapped = crate::sys::procfs::executable_files(tid);
        std::iter::once(exe).chain(mapped.into_iter().map(String::into_bytes)).find_map(|path| {
            let v = self.surface().decide(&path, Access::Exec, self.procs());
            (!v.allowed).then(|| Check {
                syscall: "execve",
                path: path.clone(),
                resolved: Some(path),
                access: AccessKind::Exec,
                decision: if self.learns() { Verdict::WouldDeny } else { Verdict::Deny },
                errno: None,
                reason: Why::Verdict(v.reason),
                dirfd: None,
            })
        })
    }
}

/// Whether thread `tid` is traced by a thread of this process (a worker
/// checking an exec of it: `TracerPid` names the tracing thread) or by none.
fn traced_by_us_or_none(tid: u32) -> bool {
    let tracer = crate::sys::procfs::Status::of(tid).and_then(|s| s.field("TracerPid:")?.parse::<u32>().ok());
    tracer.is_some_and(|t| t == 0 || std::path::Path::new(&format!("/proc/self/task/{t}")).exists())
}
