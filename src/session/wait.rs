//! Waiting for the command: signals passed on, orphans reaped, and what
//! the command left running killed at the end.

use super::{errno, io, RunError};
use crate::sandbox;
use crate::sys::{process, Errno};

/// Waits for the command, forwarding signals and reaping orphans; returns
/// its exit status as a shell would report it, and why its own `execve`
/// failed, if it did.
/// `trail`: the session's trail, whose stall (a reader that stopped
/// reading) makes a SIGINT, SIGTERM, SIGHUP or SIGQUIT end the run
/// within a second instead of waiting for a command that waits for the
/// trail.
pub(super) async fn supervise(
    pid: libc::pid_t,
    channel: std::os::fd::OwnedFd,
    handled: nix::sys::signal::SigSet,
    trail: Option<crate::audit::Sink>,
) -> Result<(i32, Option<Errno>), RunError> {
    let status = wait_for(pid, handled, trail).await?;
    // Read once the command has ended (no thread of its own for a read
    // that blocked until the exec, ~0.1 ms of every start).
    Ok((status, sandbox::exec_result(&channel).err()))
}

/// Waits for `pid`, forwarding signals and reaping orphans.
async fn wait_for(
    pid: libc::pid_t,
    handled: nix::sys::signal::SigSet,
    trail: Option<crate::audit::Sink>,
) -> Result<i32, RunError> {
    use nix::sys::signalfd::{SfdFlags, SignalFd};
    use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};

    let sfd =
        SignalFd::with_flags(&handled, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC).map_err(errno("signalfd"))?;
    let sfd = crate::sys::reactor::register(sfd).map_err(io("signalfd"))?;
    // After a signal that asks the run to end: when to look whether the
    // trail has stalled (the command may be waiting for it, deaf to the
    // signal), and then end the run without it.
    let mut recheck: Option<tokio::time::Instant> = None;
    let give_up_if_stalled = |trail: &Option<crate::audit::Sink>| {
        if let Some(sink) = trail.as_ref().filter(|t| t.stalled().is_some()) {
            sink.abandon();
            let _ = process::kill(pid, libc::SIGKILL);
        }
    };
    loop {
        // Reap first: SIGCHLD may have been delivered before we listened.
        let mut held = false;
        loop {
            match next_ended() {
                Ended::Dead(p) => match waitpid(nix::unistd::Pid::from_raw(p), Some(WaitPidFlag::WNOHANG)) {
                    Ok(WaitStatus::Exited(_, code)) if p == pid => return Ok(code),
                    Ok(WaitStatus::Signaled(_, sig, _)) if p == pid => return Ok(128 + sig as i32),
                    _ => continue, // an orphan re-parented to us
                },
                Ended::Traced => {
                    held = true;
                    break;
                }
                Ended::None => break,
            }
        }
        // A stopped tracee of an exec being checked hides the children
        // behind it until its checker lets it go, within milliseconds.
        let readable = sfd.readable();
        let wake = match (held, recheck) {
            (true, _) => Some(tokio::time::Instant::now() + std::time::Duration::from_millis(5)),
            (false, at) => at,
        };
        let mut guard = match wake {
            Some(at) => match tokio::time::timeout_at(at, readable).await {
                Ok(guard) => guard.map_err(io("signalfd"))?,
                Err(_) => {
                    if recheck.is_some_and(|r| r <= tokio::time::Instant::now()) {
                        recheck = None;
                        give_up_if_stalled(&trail);
                    }
                    continue;
                }
            },
            None => readable.await.map_err(io("signalfd"))?,
        };
        while let Ok(Some(info)) = guard.get_inner().read_signal() {
            let sig = info.ssi_signo as i32;
            // A signal the terminal sent (SI_KERNEL) went to the whole
            // foreground process group, the command included: passing it on
            // would deliver it twice.
            if sig != libc::SIGCHLD && info.ssi_code != libc::SI_KERNEL {
                let _ = process::kill(pid, sig);
            }
            if [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT].contains(&sig) {
                give_up_if_stalled(&trail);
                recheck =
                    Some(tokio::time::Instant::now() + crate::audit::STALL + std::time::Duration::from_millis(100));
            }
        }
        guard.clear_ready();
    }
}

/// What waiting for any child would report first.
enum Ended {
    /// Child `.0` exited or was killed, not reaped yet.
    Dead(libc::pid_t),
    /// A thread a supervisor worker traces stopped
    /// ([`crate::supervisor::exec`]): its stop is the worker's to take.
    Traced,
    /// Nothing ended.
    None,
}

/// Looks at the next child that ended without reaping it
/// (`waitid(P_ALL, WEXITED | WNOHANG | WNOWAIT)`): the stops of tracees are
/// reported to every thread of the tracer's process, and reaping them here
/// would take a stop away from the worker that waits for it.
fn next_ended() -> Ended {
    use nix::sys::wait::{waitid, Id, WaitPidFlag, WaitStatus};
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
    match waitid(Id::All, flags) {
        Ok(WaitStatus::Exited(p, _) | WaitStatus::Signaled(p, _, _)) => Ended::Dead(p.as_raw()),
        Ok(WaitStatus::StillAlive) | Err(_) => Ended::None,
        Ok(_) => Ended::Traced,
    }
}

/// Kills whatever the command left running (it would run on unsupervised,
/// with every trapped call failing) and reaps it. With a PID namespace the
/// init's exit has done so already. Otherwise interpose, a subreaper, kills
/// its own children only, then reaps them, whose orphans then become its
/// children, and so on: a child's pid cannot be reused by another process
/// before its parent reaps it, so no signal can reach a process that merely
/// took a recycled pid (as one sent to a pid read from `/proc` could).
pub(super) fn end_sandbox() {
    use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
    let me = std::process::id();
    for _ in 0..4096 {
        // With no child left (ECHILD), nothing of the sandbox is left.
        if waitpid(None, Some(WaitPidFlag::WNOHANG)) == Err(nix::errno::Errno::ECHILD) {
            return;
        }
        let children: Vec<u32> = std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|&p| crate::supervisor::procs::parent_of(p) == Some(me))
            .collect();
        for &p in &children {
            let _ = process::kill(p as libc::pid_t, libc::SIGKILL);
        }
        // Reap them all (their orphans are re-parented to us as they die).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let mut left = children.len();
        while left > 0 && std::time::Instant::now() < deadline {
            match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) => std::thread::sleep(std::time::Duration::from_millis(1)),
                Ok(WaitStatus::Exited(p, _) | WaitStatus::Signaled(p, _, _)) => {
                    left -= usize::from(children.contains(&(p.as_raw() as u32)));
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
    }
}
