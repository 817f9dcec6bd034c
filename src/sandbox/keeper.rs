//! A process that outlives interpose by a moment, holding its namespaces.
//!
//! The last process to leave a mount namespace takes all its mounts down,
//! and the kernel then waits for an RCU grace period before it may free
//! them, in that process's exit. For interpose that wait was the largest
//! part of a session's end: ~1.7 ms of `run -- /bin/true` on the test
//! machine (`docs/performance.md`, "The namespaces' end"), paid after the
//! command had exited and before the caller could see interpose exit. The
//! command's own mount namespace, whose last process is the command,
//! costs its exit (and so interpose's wait) the same.
//!
//! The keeper shares interpose's address space (`CLONE_VM`, made twice so
//! that it is no child of interpose's: the end of a session kills and
//! reaps every child), so that making it copies nothing and leaves none of
//! interpose's pages to be copied on their next write
//! ([`crate::sys::keeper`]); it then holds that address space too, and
//! interpose's exit does not tear it down. It sits in interpose's
//! namespaces, receives descriptors of the command's namespaces over a
//! socket, and waits on a pidfd for interpose to be gone, whole, before it
//! exits: the namespaces end in its exit, which nothing waits for. It holds
//! no other descriptor (not the terminal: a pipeline reading interpose's
//! output ends when interpose does) and leaves the terminal's session (a
//! Ctrl-C is for the command).

use crate::sys::process;
use crate::sys::Errno;
use std::mem::ManuallyDrop;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

/// interpose's end of the socket to its keeper. Never closed: the keeper
/// waits for interpose's exit, not for this handle.
#[derive(Debug)]
pub struct Keeper {
    sock: ManuallyDrop<OwnedFd>,
}

impl Keeper {
    /// Starts the keeper: where it cannot be made, `None`, and the
    /// namespaces end in interpose's own exit, as they would have.
    pub fn start() -> Option<Keeper> {
        match start() {
            Ok(keeper) => Some(keeper),
            Err(e) => {
                tracing::debug!("no keeper for the namespaces: {e}");
                None
            }
        }
    }

    /// Hands the mount namespace of process `pid` (the command's, before
    /// it execs) to the keeper: the namespace then lives until interpose
    /// has exited, and the command's exit does not wait for its end.
    pub fn hold_mounts_of(&self, pid: libc::pid_t) {
        match std::fs::File::open(format!("/proc/{pid}/ns/mnt")) {
            Ok(ns) => self.hold(ns.as_fd()),
            Err(e) => tracing::debug!("keeper: the command's mount namespace: {e}"),
        }
    }

    /// Hands `ns`, a namespace descriptor, to the keeper: the namespace
    /// then lives until interpose has exited. Best effort, as the keeper is
    /// (a keeper that is gone is no `SIGPIPE`).
    fn hold(&self, ns: BorrowedFd<'_>) {
        use nix::sys::socket::{sendmsg, ControlMessage, MsgFlags};
        let fds = [ns.as_raw_fd()];
        let sent = sendmsg::<()>(
            self.sock.as_raw_fd(),
            &[std::io::IoSlice::new(b"n")],
            &[ControlMessage::ScmRights(&fds)],
            MsgFlags::MSG_NOSIGNAL,
            None,
        );
        if let Err(e) = sent {
            tracing::debug!("keeper: a namespace not handed over: {e}");
        }
    }
}

fn start() -> Result<Keeper, Errno> {
    use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};
    let me = process::pidfd_open(std::process::id() as libc::pid_t)?;
    let (ours, theirs) = socketpair(AddressFamily::Unix, SockType::SeqPacket, None, SockFlag::SOCK_CLOEXEC)?;
    // The keeper takes copies of both; ours are closed on return. The first
    // child exits at once, the keeper re-parented away from interpose; that
    // child is reaped with any other child that ends (waiting for it here
    // would cost start-up the time of its exit).
    crate::sys::keeper::start(me.as_raw_fd(), theirs.as_raw_fd())?;
    Ok(Keeper { sock: ManuallyDrop::new(ours) })
}
