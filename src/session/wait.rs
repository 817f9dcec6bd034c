//! Waiting for the command: signals passed on, orphans reaped, and what
//! the command left running killed at the end.

use super::{errno, io, RunError};
use crate::sandbox;
use crate::sys::{process, Errno};

/// Waits for the command, forwarding signals and reaping orphans; returns
/// its exit status as a shell would report it, and why its own `execve`
/// failed, if it did.
pub(super) async fn supervise(
    pid: libc::pid_t,
    channel: std::os::fd::OwnedFd,
    handled: nix::sys::signal::SigSet,
) -> Result<(i32, Option<Errno>), RunError> {
    // Learns whether the command's exec succeeded: the set-up channel ends
    // (it is close-on-exec) or carries the errno.
    let exec = tokio::task::spawn_blocking(move || sandbox::exec_result(&channel).err());
    let status = wait_for(pid, handled).await?;
    Ok((status, exec.await.ok().flatten()))
}

/// Waits for `pid`, forwarding signals and reaping orphans.
async fn wait_for(pid: libc::pid_t, handled: nix::sys::signal::SigSet) -> Result<i32, RunError> {
    use nix::sys::signalfd::{SfdFlags, SignalFd};
    use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};

    let sfd =
        SignalFd::with_flags(&handled, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC).map_err(errno("signalfd"))?;
    let sfd = crate::sys::reactor::register(sfd).map_err(io("signalfd"))?;
    loop {
        // Reap first: SIGCHLD may have been delivered before we listened.
        loop {
            match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(p, code)) if p.as_raw() == pid => return Ok(code),
                Ok(WaitStatus::Signaled(p, sig, _)) if p.as_raw() == pid => return Ok(128 + sig as i32),
                Ok(WaitStatus::StillAlive) | Err(_) => break,
                Ok(_) => continue, // an orphan re-parented to us
            }
        }
        let mut guard = sfd.readable().await.map_err(io("signalfd"))?;
        while let Ok(Some(info)) = guard.get_inner().read_signal() {
            let sig = info.ssi_signo as i32;
            // A signal the terminal sent (SI_KERNEL) went to the whole
            // foreground process group, the command included: passing it on
            // would deliver it twice.
            if sig != libc::SIGCHLD && info.ssi_code != libc::SI_KERNEL {
                let _ = process::kill(pid, sig);
            }
        }
        guard.clear_ready();
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
