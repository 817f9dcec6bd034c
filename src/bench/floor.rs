//! interpose's own floors: the least a notification supervisor does,
//! measured with interpose's own filter so that the difference to
//! interpose is interpose's work and nothing else.
//!
//! `interpose debug floor continue -- CMD` runs CMD under interpose's
//! full-mode filter with a single-threaded supervisor that answers every
//! notification with CONTINUE (RECV, SEND, nothing read);
//! `... continue-every-cpu` does the same with a receiving thread per CPU,
//! all in `RECV` at once (the two-process figure). `... emulate`
//! performs every `openat` the TOCTOU-safe way with no policy: the path
//! read with `process_vm_readv`, a relative one from the caller's cwd or
//! descriptor through `/proc`, `ID_VALID`, `openat` with the caller's
//! flags, the descriptor installed with `ADDFD_FLAG_SEND`; everything else
//! is continued. `... emulate-stat` also performs every `newfstatat`, as
//! a supervisor that decides metadata must (a continued stat could be
//! raced into describing another file): the path read, looked up with no
//! symlink on the way (`openat2`, as interpose's first lookup is), the
//! object's `fstat` written into the caller after `ID_VALID`; a
//! descriptor's own (`AT_EMPTY_PATH`) taken with `pidfd_getfd`; and every
//! `readlink` of a name that is no symlink, which glibc's `realpath` asks
//! of every component: the same lookup, following the last component, whose
//! success says the object is no link (`EINVAL`); a name on or behind a
//! symlink is continued. All ask for
//! synchronous wake-ups on the listener, as `run` does, so the handshake
//! costs what it costs interpose. No namespace, no Landlock, no trail:
//! the floors enforce nothing (every CONTINUE here is unchecked by
//! design, as `run --bench-floor`'s), and are hidden `debug` verbs.
//!
//! The shared C floors (`interpose bench --floors DIR`) are the same
//! measurements written independently, to compare against.

use crate::sandbox::filter;
use crate::sys::{mem, process, seccomp, Errno};
use std::ffi::{CString, OsString};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

/// Why the floor could not run the command (the messages are the
/// underlying errors' own).
#[derive(Debug, thiserror::Error)]
pub enum FloorError {
    /// Building the filter failed.
    #[error(transparent)]
    Filter(#[from] filter::FilterError),
    /// The command is not in `PATH`.
    #[error("{}: command not found", .0.to_string_lossy())]
    NotFound(OsString),
    /// The command, an argument or the environment holds a NUL byte.
    #[error("{0}")]
    Nul(#[from] std::ffi::NulError),
    /// `socketpair` for the listener's handover failed.
    #[error("{0}")]
    Socketpair(Errno),
    /// `fork` failed.
    #[error("{0}")]
    Fork(Errno),
    /// Receiving the listener's number from the child failed.
    #[error("{0}")]
    Receive(Errno),
    /// The child sent something other than its listener's number.
    #[error("the floor's child did not hand over its listener")]
    NoListener,
    /// `pidfd_open` of the child failed.
    #[error("{0}")]
    PidfdOpen(Errno),
    /// `pidfd_getfd` of the child's listener failed.
    #[error("{0}")]
    PidfdGetfd(Errno),
    /// Telling the child to go on failed.
    #[error("{0}")]
    Release(Errno),
    /// `waitpid` for the command failed.
    #[error("{0}")]
    Wait(Errno),
}

/// What the floor's supervisor does with a notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Floor {
    /// Answer every notification with CONTINUE.
    Continue,
    /// As `continue`, with a receiving thread per CPU, all waiting in
    /// `RECV` at once: what more receivers buy two processes that trap at
    /// once, and cost one alone (every notification wakes every thread
    /// waiting in `RECV`).
    ContinueEveryCpu,
    /// Perform `openat` (read, validate, open, ADDFD); continue the rest.
    Emulate,
    /// As `emulate`, and perform `newfstatat` too (read, look up with no
    /// symlink on the way, validate, `fstat`, write the result back), and
    /// `readlink` of a name that is no symlink (the same lookup: `EINVAL`);
    /// a lookup that meets a symlink is continued.
    EmulateStat,
}

/// Runs `command` under the floor; its exit status.
pub fn run(floor: Floor, command: &[OsString]) -> Result<i32, FloorError> {
    let program = filter::program()?;
    let path = crate::session::find_program(&command[0], std::env::var_os("PATH").as_deref())
        .ok_or_else(|| FloorError::NotFound(command[0].clone()))?;
    let path = CString::new(path.as_os_str().as_bytes())?;
    let argv: Vec<CString> = command.iter().map(|a| CString::new(a.as_bytes())).collect::<Result<_, _>>()?;
    let envp: Vec<CString> = std::env::vars_os()
        .map(|(k, v)| CString::new([k.as_bytes(), b"=", v.as_bytes()].concat()))
        .collect::<Result<_, _>>()?;
    let (argv, envp) = (process::ExecArgs::new(&argv), process::ExecArgs::new(&envp));
    let (ours, theirs) = nix::sys::socket::socketpair(
        nix::sys::socket::AddressFamily::Unix,
        nix::sys::socket::SockType::SeqPacket,
        None,
        nix::sys::socket::SockFlag::SOCK_CLOEXEC,
    )
    .map_err(FloorError::Socketpair)?;
    // SAFETY: the child makes only raw syscalls on memory prepared before
    // the fork (the filter, argv, envp) until it execs or exits.
    #[allow(unsafe_code)]
    let forked = unsafe { process::fork() }.map_err(FloorError::Fork)?;
    let pid = match forked {
        process::Fork::Child => {
            drop(ours);
            if process::set_no_new_privs().is_err() {
                process::exit_now(126);
            }
            let flags = seccomp::FILTER_FLAG_NEW_LISTENER | seccomp::FILTER_FLAG_WAIT_KILLABLE_RECV;
            let Ok(listener) = seccomp::install_filter(&program, flags) else { process::exit_now(126) };
            // Only untrapped calls until the parent holds the listener.
            if process::write_all(theirs.as_fd(), &listener.as_raw_fd().to_ne_bytes()).is_err() {
                process::exit_now(126);
            }
            if !matches!(process::read_byte(theirs.as_fd()), Ok(Some(b'G'))) {
                process::exit_now(126);
            }
            drop(listener);
            drop(theirs);
            let errno = process::execve(&path, &argv, &envp);
            process::exit_now(if errno == Errno::ENOENT { 127 } else { 126 })
        }
        process::Fork::Parent(pid) => pid,
    };
    drop(theirs);
    let mut number = [0u8; 4];
    let (n, _, _) = process::recv_with_fds(ours.as_fd(), &mut number).map_err(FloorError::Receive)?;
    if n != 4 {
        return Err(FloorError::NoListener);
    }
    let pidfd = process::pidfd_open(pid).map_err(FloorError::PidfdOpen)?;
    let listener = process::pidfd_getfd(pidfd.as_fd(), i32::from_ne_bytes(number)).map_err(FloorError::PidfdGetfd)?;
    let _ = seccomp::set_listener_flags(listener.as_fd(), seccomp::USER_NOTIF_FD_SYNC_WAKE_UP);
    process::write_all(ours.as_fd(), b"G").map_err(FloorError::Release)?;
    drop(ours);
    match floor {
        Floor::ContinueEveryCpu => {
            let receivers = std::thread::available_parallelism().map_or(1, usize::from);
            std::thread::scope(|s| {
                for _ in 0..receivers {
                    s.spawn(|| serve(Floor::Continue, &listener));
                }
            });
        }
        _ => serve(floor, &listener),
    }
    let status = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid), None).map_err(FloorError::Wait)?;
    Ok(match status {
        nix::sys::wait::WaitStatus::Exited(_, code) => code,
        nix::sys::wait::WaitStatus::Signaled(_, sig, _) => 128 + sig as i32,
        _ => 125,
    })
}

/// Answers notifications until no task uses the filter.
fn serve(floor: Floor, listener: &OwnedFd) {
    let continued = |id| seccomp::NotifResp { id, val: 0, error: 0, flags: seccomp::USER_NOTIF_FLAG_CONTINUE };
    // The pidfd of the last caller whose descriptor was taken: a floor's
    // caller is one thread at a time, and a pidfd of a task that has gone
    // fails, then is opened again.
    let mut task: Option<(u32, OwnedFd)> = None;
    loop {
        let notif = match seccomp::recv(listener.as_fd()) {
            Ok(n) => n,
            Err(Errno::EINTR) => continue,
            // ENOENT: the caller died; anything else once every task is
            // gone (a hang-up makes RECV fail at once).
            Err(Errno::ENOENT) if !hung_up(listener) => continue,
            Err(_) => return,
        };
        if floor == Floor::EmulateStat && notif.data.nr == libc::SYS_newfstatat as i32 {
            if let Some(answer) = stat_made(listener, &notif, &mut task) {
                let _ = seccomp::send(listener.as_fd(), answer);
                continue;
            }
        }
        if let Some(answer) = (floor == Floor::EmulateStat).then(|| no_link(&notif)).flatten() {
            let _ = seccomp::send(listener.as_fd(), answer);
            continue;
        }
        if floor != Floor::Continue && notif.data.nr == libc::SYS_openat as i32 {
            if let Some(fd) = opened(listener, &notif) {
                let cloexec = notif.data.args[2] & libc::O_CLOEXEC as u64 != 0;
                match seccomp::addfd_send(listener.as_fd(), notif.id, fd.as_fd(), cloexec) {
                    // Installed and answered, or the caller is gone.
                    Ok(_) | Err(Errno::ENOENT) => continue,
                    // Not installed (an `O_PATH` descriptor, which ADDFD
                    // cannot take: EBADF; the caller at its descriptor
                    // limit): the caller still waits, and makes the call
                    // itself.
                    Err(e) => tracing::debug!("floor: ADDFD failed ({e}); the open is continued"),
                }
            }
        }
        let _ = seccomp::send(listener.as_fd(), continued(notif.id));
    }
}

/// The caller's `openat`, made here (a relative path from the caller's cwd
/// or descriptor, through `/proc/<tid>/cwd` or `/proc/<tid>/fd/N`): `None`
/// (continue it) on a failure.
fn opened(listener: &OwnedFd, notif: &seccomp::Notif) -> Option<OwnedFd> {
    use crate::sys::fs::{openat, Dir};
    let mut buf = [0u8; mem::PATH_MAX];
    let n = mem::read_path(notif.pid, notif.data.args[1], &mut buf).ok()?;
    if n == 0 {
        return None;
    }
    let path = CString::new(&buf[..n]).ok()?;
    let base = starting_dir(notif, buf[0] == b'/', notif.data.args[0] as i32)?;
    if !seccomp::id_valid(listener.as_fd(), notif.id) {
        return None;
    }
    let (flags, mode) = (notif.data.args[2] as i32 | libc::O_CLOEXEC, notif.data.args[3] as u32);
    match &base {
        Some(dir) => openat(Dir::Fd(dir.as_fd()), &path, flags, mode).ok(),
        None => openat(Dir::Cwd, &path, flags, mode).ok(),
    }
}

/// Where the caller's path starts: `Some(None)` for an absolute one, else
/// a handle on the caller's cwd or descriptor `at` (through
/// `/proc/<tid>/cwd` or `/proc/<tid>/fd/N`); `None` where none can be had.
fn starting_dir(notif: &seccomp::Notif, absolute: bool, at: i32) -> Option<Option<OwnedFd>> {
    use crate::sys::fs::{openat, Dir};
    let dir = match (absolute, at) {
        (true, _) => return Some(None),
        (false, libc::AT_FDCWD) => format!("/proc/{}/cwd", notif.pid),
        (false, fd) => format!("/proc/{}/fd/{fd}", notif.pid),
    };
    openat(Dir::Cwd, &CString::new(dir).ok()?, libc::O_PATH | libc::O_DIRECTORY, 0).ok().map(Some)
}

/// The caller's `newfstatat`, made here: an empty path with
/// `AT_EMPTY_PATH` on the caller's descriptor (taken through the pidfd in
/// `task`, opened again for another caller or a task that has gone) or its
/// cwd, any other path looked up from the caller's cwd or descriptor (as
/// [`opened`]) with no symlink and no magic link on the way, the result
/// written into the caller once the notification is still pending. The
/// answer, or `None` (continue it) where the path could not be read or
/// the lookup met a symlink or failed otherwise than by a missing name.
fn stat_made(
    listener: &OwnedFd,
    notif: &seccomp::Notif,
    task: &mut Option<(u32, OwnedFd)>,
) -> Option<seccomp::NotifResp> {
    use crate::sys::fs;
    let answer = |error: i32| seccomp::NotifResp { id: notif.id, val: 0, error: -error, flags: 0 };
    let mut buf = [0u8; mem::PATH_MAX];
    let n = mem::read_path(notif.pid, notif.data.args[1], &mut buf).ok()?;
    let flags = notif.data.args[3] as i32;
    let at = notif.data.args[0] as i32;
    // Flags beyond these are the kernel's to refuse (or to take).
    if flags & !(libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW) != 0 {
        return None;
    }
    let object = match (n, at) {
        (0, _) if flags & libc::AT_EMPTY_PATH == 0 => return Some(answer(libc::ENOENT)),
        (0, libc::AT_FDCWD) => starting_dir(notif, false, at)??,
        (0, fd) => {
            if task.as_ref().is_none_or(|(tid, _)| *tid != notif.pid) {
                *task = Some((notif.pid, process::pidfd_open_thread(notif.pid as libc::pid_t).ok()?));
            }
            let taken = task.as_ref().and_then(|(_, pidfd)| process::pidfd_getfd(pidfd.as_fd(), fd).ok());
            match taken {
                Some(fd) => fd,
                None => {
                    *task = None;
                    return None;
                }
            }
        }
        _ => match looked_up(notif, &buf[..n], at, flags & libc::AT_SYMLINK_NOFOLLOW == 0)? {
            Ok(fd) => fd,
            Err(e) => return seccomp::id_valid(listener.as_fd(), notif.id).then(|| answer(e as i32)),
        },
    };
    let stat = fs::fstat(object.as_fd()).ok()?;
    if !seccomp::id_valid(listener.as_fd(), notif.id) {
        return None;
    }
    match mem::write(notif.pid, notif.data.args[2], fs::bytes_of(&stat)) {
        Ok(()) => {
            tracing::debug!("floor: newfstatat performed ({})", if n == 0 { "descriptor" } else { "path" });
            Some(answer(0))
        }
        Err(Errno::EFAULT) => Some(answer(libc::EFAULT)),
        Err(_) => None,
    }
}

/// The caller's `readlink` or `readlinkat` of a name that is no symlink,
/// answered here: the path read and looked up from the caller's cwd or
/// descriptor (as [`opened`]) with no symlink and no magic link on the way,
/// the last component followed, so that a lookup that succeeds found no
/// link (`EINVAL`), and one that fails on a missing name fails there in the
/// kernel's own too. Nothing is written into the caller, so a stale
/// notification needs no check: it takes no answer. `None` (continue it)
/// for any other call, an empty name (the descriptor itself), a path that
/// cannot be read, and a lookup that meets a symlink.
fn no_link(notif: &seccomp::Notif) -> Option<seccomp::NotifResp> {
    let (at, addr) = match notif.data.nr as libc::c_long {
        libc::SYS_readlink => (libc::AT_FDCWD, notif.data.args[0]),
        libc::SYS_readlinkat => (notif.data.args[0] as i32, notif.data.args[1]),
        _ => return None,
    };
    let mut buf = [0u8; mem::PATH_MAX];
    let n = mem::read_path(notif.pid, addr, &mut buf).ok()?;
    if n == 0 {
        return None;
    }
    let error = match looked_up(notif, &buf[..n], at, true)? {
        Ok(_) => libc::EINVAL,
        Err(e) => e as i32,
    };
    tracing::debug!("floor: readlink answered ({})", Errno::from_raw(error));
    Some(seccomp::NotifResp { id: notif.id, val: 0, error: -error, flags: 0 })
}

/// The caller's non-empty `path`, looked up from its cwd or descriptor
/// `at` (as [`opened`]) with no symlink and no magic link on the way, the
/// last component followed where `follow`: a handle on what it names, or
/// the missing name's error (`ENOENT`, `ENOTDIR`: no symlink came before
/// it, so the kernel's own lookup fails there too). `None` where the lookup
/// met a symlink or failed otherwise (the caller continues the call).
fn looked_up(notif: &seccomp::Notif, path: &[u8], at: i32, follow: bool) -> Option<Result<OwnedFd, Errno>> {
    use crate::sys::fs::{self, openat2, Dir, OpenHow};
    let c = CString::new(path).ok()?;
    let base = starting_dir(notif, path[0] == b'/', at)?;
    let how = OpenHow {
        flags: (libc::O_PATH | libc::O_CLOEXEC | if follow { 0 } else { libc::O_NOFOLLOW }) as u64,
        mode: 0,
        resolve: fs::RESOLVE_NO_SYMLINKS | fs::RESOLVE_NO_MAGICLINKS,
    };
    match openat2(base.as_ref().map_or(Dir::Cwd, |b| Dir::Fd(b.as_fd())), &c, how) {
        Ok(fd) => Some(Ok(fd)),
        Err(e @ (Errno::ENOENT | Errno::ENOTDIR)) => Some(Err(e)),
        Err(_) => None,
    }
}

/// Whether no task uses the listener's filter any more.
fn hung_up(listener: &OwnedFd) -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let mut fds = [PollFd::new(listener.as_fd(), PollFlags::empty())];
    poll(&mut fds, PollTimeout::ZERO).is_ok()
        && fds[0].revents().is_some_and(|r| r.intersects(PollFlags::POLLHUP | PollFlags::POLLERR))
}
