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
//! The keeper is forked twice while interpose is still single-threaded, so
//! that it is no child of interpose's (the end of a session kills and reaps
//! every child) and is free to allocate. It sits in interpose's namespaces,
//! receives descriptors of the command's namespaces over a socket, and
//! waits on a pidfd for interpose to be gone, whole, before it exits: the
//! namespaces end in its exit, which nothing waits for. It holds no other
//! descriptor (not the terminal: a pipeline reading interpose's output
//! ends when interpose does) and leaves the terminal's process group (a
//! Ctrl-C is for the command).

use crate::sys::process::{self, Fork};
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
    /// Starts the keeper, which interpose must do while it is
    /// single-threaded (the keeper then allocates freely): with another
    /// thread running, or where it cannot be made, `None`, and the
    /// namespaces end in interpose's own exit, as they would have.
    pub fn start() -> Option<Keeper> {
        if crate::sys::procfs::own_thread_count() != Some(1) {
            tracing::debug!("no keeper for the namespaces: interpose runs threads already");
            return None;
        }
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
    // SAFETY: the process is single-threaded (checked by the caller), so
    // the child may do anything the parent could.
    #[allow(unsafe_code)]
    let forked = unsafe { process::fork() }?;
    match forked {
        Fork::Child => {
            drop(ours);
            // SAFETY: still single-threaded.
            #[allow(unsafe_code)]
            let keeper = unsafe { process::fork() };
            if let Ok(Fork::Child) = keeper {
                keep(me.as_fd(), theirs.as_fd());
            }
            process::exit_now(0)
        }
        Fork::Parent(_) => {
            drop(theirs);
            // The first child exits at once, its child, the keeper,
            // re-parented away from interpose; it is reaped with any other
            // child that ends (waiting for it here would cost start-up the
            // time of its exit).
            Ok(Keeper { sock: ManuallyDrop::new(ours) })
        }
    }
}

/// The keeper's life: hold what arrives on `sock` until `interpose` (a
/// pidfd) has exited, then exit.
fn keep(interpose: BorrowedFd<'_>, sock: BorrowedFd<'_>) -> ! {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let _ = nix::unistd::setsid();
    let _ = nix::sys::prctl::set_name(c"interpose-keep");
    for fd in 0..=2 {
        let _ = process::redirect_to_null(fd);
    }
    let mut keep_fds = [interpose.as_raw_fd(), sock.as_raw_fd()];
    keep_fds.sort_unstable();
    let _ = process::close_fds_except(&keep_fds);
    // What arrives is held until the keeper exits.
    let mut held: Vec<OwnedFd> = Vec::new();
    let mut open = true;
    loop {
        let mut fds = vec![PollFd::new(interpose, PollFlags::POLLIN)];
        if open {
            fds.push(PollFd::new(sock, PollFlags::POLLIN));
        }
        match poll(&mut fds, PollTimeout::NONE) {
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => break,
            Ok(_) => {}
        }
        if fds[0].revents().is_some_and(|r| !r.is_empty()) {
            break;
        }
        if open && fds.get(1).and_then(PollFd::revents).is_some_and(|r| !r.is_empty()) {
            match process::recv_with_fds(sock, &mut [0u8; 1]) {
                Ok((0, fds, _)) if fds.is_empty() => open = false,
                Ok((_, fds, _)) => held.extend(fds),
                Err(_) => open = false,
            }
        }
    }
    process::exit_now(0)
}
