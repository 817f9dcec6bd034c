//! Starting the sandboxed command: fork, confine the child, hand the
//! seccomp listener to the parent, exec.
//!
//! Everything that allocates (the BPF program, the Landlock ruleset, argv and
//! the environment) is prepared in the parent; the child only makes raw
//! syscalls between `fork` and `execve`, in the order the threat model needs
//! (the stages of [`Stage`], as `child` runs them): restore SIGPIPE and the
//! signal mask, close inherited descriptors, die with the parent (and stop
//! if it is already gone), the namespaces (PID's /proc, network, IPC, the
//! isolated root), drop capabilities, switch user, no_new_privs, Landlock,
//! the seccomp filter with its listener, hand the listener over and wait
//! for the parent's go, then (with a PID namespace) become its init and
//! start the command as its child, exec.

pub mod caches;
pub mod channel;
pub mod features;
pub mod filter;
pub mod isolate;
pub mod keeper;
pub mod landlock;
pub mod namespace;
pub mod pids;
mod programs;

use crate::sys::process::{self, Fork};
use crate::sys::{seccomp, Errno};
use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

/// A step of the child's set-up, reported to the parent when it fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Stage {
    /// Restoring the signal mask.
    SignalMask = 1,
    /// Closing inherited descriptors.
    CloseFds = 2,
    /// `PR_SET_PDEATHSIG`.
    DeathSignal = 3,
    /// The parent died before the child was set up.
    ParentGone = 4,
    /// Dropping capabilities.
    Capabilities = 10,
    /// Switching to the requested user.
    Credentials = 11,
    /// `PR_SET_NO_NEW_PRIVS`.
    NoNewPrivs = 5,
    /// `landlock_restrict_self`.
    Landlock = 6,
    /// Installing the seccomp filter.
    Seccomp = 7,
    /// Handing the listener to the parent.
    SendListener = 8,
    /// `execve` of the command.
    Exec = 9,
    /// A new network namespace with loopback up (`--net none`).
    Network = 12,
    /// The mount namespace with only the surface (`--isolate`).
    Isolate = 13,
    /// An IPC namespace of its own.
    Ipc = 14,
    /// A PID namespace of its own, with its own `/proc`.
    PidNamespace = 15,
    /// The PID namespace's `pid_max`, the default task limit.
    PidMax = 16,
    /// Granting the new `/proc` in the ruleset.
    OwnProc = 17,
    /// Masking the surface's carve-outs in the command's mount namespace.
    Masks = 18,
    /// Listening for a forwarded loopback service in the command's network
    /// namespace.
    Forward = 19,
    /// Entering the working directory again by its path, through the
    /// command's mounts.
    WorkingDirectory = 20,
}

impl Stage {
    fn from_u8(v: u8) -> Option<Stage> {
        use Stage::*;
        [
            SignalMask,
            PidNamespace,
            PidMax,
            OwnProc,
            Masks,
            Forward,
            WorkingDirectory,
            Network,
            Ipc,
            Isolate,
            CloseFds,
            DeathSignal,
            ParentGone,
            Capabilities,
            Credentials,
            NoNewPrivs,
            Landlock,
            Seccomp,
            SendListener,
            Exec,
        ]
        .into_iter()
        .find(|s| *s as u8 == v)
    }

    /// What the stage does, for error messages.
    pub fn describe(self) -> &'static str {
        match self {
            Stage::SignalMask => "restoring the signal mask",
            Stage::Network => "creating a network namespace with loopback only (--net none needs root)",
            Stage::Ipc => "creating an IPC namespace of its own",
            Stage::PidNamespace => "making the PID namespace's /proc and its init",
            Stage::PidMax => "setting the PID namespace's pid_max, the default task limit (--max-procs N uses a pids cgroup instead)",
            Stage::OwnProc => "granting the PID namespace's /proc to Landlock",
            Stage::Masks => "masking the surface's carve-outs in the command's mount namespace",
            Stage::Forward => {
                "listening in the command's network namespace for a loopback service the allowlist names (is IPv6 off, for ::1?)"
            }
            Stage::WorkingDirectory => {
                "entering the working directory again by its path, through the command's mounts (a carve-out masks it, or it is gone: start interpose elsewhere)"
            }
            Stage::Isolate => {
                "building the isolated root (a mount namespace of the session's own, as root or in interpose's user namespace)"
            }
            Stage::CloseFds => "closing inherited file descriptors",
            Stage::DeathSignal => "setting the parent-death signal",
            Stage::ParentGone => "checking that interpose is still running",
            Stage::Capabilities => "dropping capabilities",
            Stage::Credentials => "switching to the requested user",
            Stage::NoNewPrivs => "setting no_new_privs",
            Stage::Landlock => "applying the Landlock ruleset",
            Stage::Seccomp => "installing the seccomp filter",
            Stage::SendListener => "handing the seccomp listener to the supervisor",
            Stage::Exec => "executing the command",
        }
    }
}

/// Errors starting the sandbox.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// A call in the parent failed.
    #[error("{what}: {errno}")]
    Parent {
        /// The failed step.
        what: &'static str,
        /// Its errno.
        errno: Errno,
    },
    /// The child failed a set-up step and reported it.
    #[error("in the sandboxed child, {}: {errno}", stage.describe())]
    Child {
        /// The step.
        stage: Stage,
        /// Its errno.
        errno: Errno,
    },
    /// The child ended without saying why.
    #[error("the sandboxed child exited during set-up")]
    ChildVanished,
}

/// Which network namespace the command runs in.
#[derive(Debug)]
pub enum NetNamespace {
    /// interpose's own.
    Shared,
    /// One of its own with only loopback, made by the child.
    Own,
    /// One of its own with only loopback, made ahead by the session while
    /// it set up the rest (making one takes ~0.5 ms): the child enters it.
    Made(OwnedFd),
}

/// What the child needs, prepared in the parent.
pub struct Plan {
    /// Absolute or relative path of the program to exec.
    pub program: CString,
    /// Its argument vector.
    pub argv: Vec<CString>,
    /// Its environment, `NAME=value`.
    pub env: Vec<CString>,
    /// The BPF program.
    pub filter: Vec<libc::sock_filter>,
    /// The Landlock ruleset, unless running without the backstop.
    pub landlock: Option<OwnedFd>,
    /// Capabilities the command may keep, as a bit mask ([`kept_capabilities`]).
    pub capabilities: u64,
    /// Run as this `(uid, gid)` instead of interpose's own.
    pub user: Option<(u32, u32)>,
    /// The command's network namespace.
    pub net_namespace: NetNamespace,
    /// In that namespace: listen on `127.0.0.1:PORT` for interpose's proxy
    /// (the socket is handed to the parent, which serves it from outside).
    pub proxy_port: Option<u16>,
    /// In that namespace: listen on these loopback addresses and ports for
    /// the host's loopback services the allowlist names (at most
    /// [`MAX_FORWARDS`]; handed to the parent, which forwards them).
    pub forwards: Vec<std::net::SocketAddr>,
    /// Give the command an IPC namespace of its own (System V objects and
    /// POSIX message queues of its own; the filter refuses them otherwise).
    pub new_ipc: bool,
    /// Give the command a root holding only the surface.
    pub isolate: Option<isolate::Isolation>,
    /// Start the command in a PID namespace of its own, under an init that
    /// dies with interpose (and the kernel then kills every process of the
    /// namespace), with a `/proc` of that namespace in a mount namespace of
    /// its own.
    pub pid_namespace: bool,
    /// With a PID namespace: the command's process shares its init's
    /// memory until its exec (`CLONE_VM | CLONE_VFORK`) instead of taking a
    /// copy. Only where the supervisor may read a process that is not
    /// dumpable (the init is not, nor then the command until its exec):
    /// with `CAP_SYS_PTRACE` where interpose's memory belongs, not in a
    /// user namespace it made for itself.
    pub command_shares_memory: bool,
    /// With a PID namespace: its `pid_max`, written by its init (decimal
    /// text), bounding how many tasks the command can have at once.
    pub pid_max: Option<Vec<u8>>,
    /// With a PID namespace: the Landlock rights its new procfs's root
    /// gets (see [`landlock::OwnProc`]).
    pub own_proc: Option<u64>,
    /// With a mount namespace of the command's own (a PID namespace, or
    /// `--isolate`, which applies them in its new root): the mounts that
    /// hold the surface's carve-outs ([`landlock::Mask`]).
    pub masks: Vec<MaskPlan>,
    /// The working directory's path, entered again once the command's
    /// mounts are made (not with `isolate`, which enters it in its own
    /// root). The directory inherited is the one beneath any mount made
    /// since interpose started there: a carve-out's mask or a cache's
    /// overlay would leave it in what the mount hides, where the kernel
    /// reads a masked secret by a relative path. `None` where the process
    /// has no working directory to name (removed, or outside its root).
    pub cwd: Option<CString>,
}

/// A [`landlock::Mask`] prepared for the child, which cannot allocate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MaskPlan {
    /// The carve-out.
    pub target: CString,
    /// What is mounted there.
    pub kind: landlock::MaskKind,
    /// The entry was a directory when the mask was planned.
    pub dir: bool,
}

impl MaskPlan {
    /// Prepares the masks of `layout` for the child.
    pub fn all(layout: &landlock::Layout) -> Vec<MaskPlan> {
        use std::os::unix::ffi::OsStrExt;
        // A name with a NUL in it names no file: nothing to mask.
        layout
            .masks
            .iter()
            .filter_map(|m| {
                Some(MaskPlan { target: CString::new(m.path.as_os_str().as_bytes()).ok()?, kind: m.kind, dir: m.dir })
            })
            .collect()
    }
}

/// The entries of `base` that earlier runs of interpose made and left
/// behind: named `interpose-<pid>` or `interpose-<pid>-<anything>`, whose
/// pid no longer runs interpose (it was killed before it could clean up).
/// This process's own are never among them, nor those of a process with
/// this one's name (a copy of interpose under another name).
pub fn left_by_dead_runs(base: &std::path::Path) -> Vec<std::fs::DirEntry> {
    let Ok(entries) = std::fs::read_dir(base) else { return Vec::new() };
    let comm = |pid: &dyn std::fmt::Display| {
        crate::sys::procfs::read(format!("/proc/{pid}/comm")).ok().map(|c| c.trim_ascii_end().to_vec())
    };
    let own = (std::process::id(), comm(&"self"));
    entries
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let pid = name.to_str().and_then(|n| n.strip_prefix("interpose-")?.split('-').next()?.parse::<u32>().ok());
            pid.is_some_and(|pid| {
                let name = if pid == own.0 { own.1.clone() } else { comm(&pid) };
                !name.is_some_and(|n| n == b"interpose" || Some(&n) == own.1.as_ref())
            })
        })
        .collect()
}

/// The capabilities a (root) command keeps: those a container runtime grants
/// by default, less `CAP_MKNOD` (a device node in the workspace would open
/// the raw disk), `CAP_SYS_CHROOT`, `CAP_SETFCAP` and `CAP_NET_RAW` (a packet
/// socket on the host's network reads other processes' traffic). Everything that
/// reaches the kernel itself (modules, mounts, raw I/O, BPF, ptrace of
/// others, namespaces administration) is gone, for the command and anything
/// it execs.
pub fn kept_capabilities() -> u64 {
    use caps::Capability::*;
    [
        CAP_CHOWN,
        CAP_DAC_OVERRIDE,
        CAP_FOWNER,
        CAP_FSETID,
        CAP_KILL,
        CAP_SETGID,
        CAP_SETUID,
        CAP_SETPCAP,
        CAP_NET_BIND_SERVICE,
        CAP_AUDIT_WRITE,
    ]
    .into_iter()
    .fold(0, |mask, cap| mask | 1 << cap.index())
}

/// A started sandbox whose command has not necessarily exec'd yet.
pub struct Started {
    /// The command's pid.
    pub pid: libc::pid_t,
    /// The seccomp listener.
    pub listener: OwnedFd,
    /// The parent's end of the set-up channel: end-of-stream once the
    /// command has exec'd, or an `Exec` failure report.
    pub channel: OwnedFd,
    /// With a PID namespace: the command's root directory (that of its
    /// mount namespace, whose `/proc` is the namespace's), from which the
    /// supervisor resolves the command's paths.
    pub root: Option<OwnedFd>,
    /// With [`Plan::proxy_port`]: the listening socket made in the
    /// command's network namespace.
    pub proxy: Option<OwnedFd>,
    /// With [`Plan::forwards`]: their listening sockets, in that order.
    pub forwards: Vec<OwnedFd>,
}

pub use channel::MAX_FORWARDS;

/// Forks and starts the command under `plan`. `child_mask` is the signal
/// mask the command starts with (the parent keeps its signals blocked for
/// its signalfd).
///
/// `meanwhile` runs in the parent while the child sets itself up (before
/// its listener comes); `before_exec` runs in the parent once the child
/// exists and before it may exec (interpose uses it to move the child into
/// its pids cgroup).
pub fn start(
    plan: &Plan,
    child_mask: &libc::sigset_t,
    meanwhile: impl FnOnce(),
    before_exec: impl FnOnce(libc::pid_t) -> Result<(), SpawnError>,
) -> Result<Started, SpawnError> {
    let parent_err = |what| move |errno| SpawnError::Parent { what, errno };
    let (ours, theirs) = nix::sys::socket::socketpair(
        nix::sys::socket::AddressFamily::Unix,
        nix::sys::socket::SockType::SeqPacket,
        None,
        nix::sys::socket::SockFlag::SOCK_CLOEXEC,
    )
    .map_err(parent_err("creating the set-up channel"))?;

    let argv = process::ExecArgs::new(&plan.argv);
    let envp = process::ExecArgs::new(&plan.env);
    let parent = std::process::id() as libc::pid_t;
    let every_signal = nix::sys::signal::SigSet::all();
    // The command's stack in the init's memory (see `child`), made here:
    // the child allocates nothing.
    let stack = match plan.pid_namespace && plan.command_shares_memory {
        true => Some(process::ChildStack::new(256 * 1024).map_err(parent_err("a stack for the command's process"))?),
        false => None,
    };

    // SAFETY: the child runs only `child`, which makes raw syscalls through
    // `sys` on memory prepared before the fork (argv, envp, the filter, the
    // ruleset) until it execs or exits; it allocates nothing and takes no
    // lock.
    #[allow(unsafe_code)]
    let forked = unsafe {
        if plan.pid_namespace {
            process::clone_process(libc::CLONE_NEWPID)
        } else {
            process::fork()
        }
    };
    match forked.map_err(parent_err("fork"))? {
        Fork::Child => {
            drop(ours);
            let masks = Masks { command: child_mask, every_signal: every_signal.as_ref() };
            child(plan, masks, theirs, parent, (&argv, &envp), stack.as_ref())
        }
        Fork::Parent(pid) => {
            drop(theirs);
            meanwhile();
            // The child waits for our go: it is killed, not only reaped.
            let fail = |e| {
                let _ = process::kill(pid, libc::SIGKILL);
                reap(pid);
                e
            };
            let handover = match channel::receive(ours.as_fd()) {
                Some(channel::FromChild::Ready(h)) if h.count == plan.forwards.len().min(MAX_FORWARDS) => h,
                Some(channel::FromChild::Failed { stage, errno }) => {
                    return Err(fail(SpawnError::Child { stage, errno }));
                }
                _ => return Err(fail(SpawnError::ChildVanished)),
            };
            // The child names its descriptors; we take copies with
            // pidfd_getfd, then tell it to close its own and exec.
            let pidfd = process::pidfd_open(pid)
                .map_err(|errno| fail(SpawnError::Parent { what: "pidfd_open of the child", errno }))?;
            let take = |number: i32, what: &'static str| {
                process::pidfd_getfd(pidfd.as_fd(), number).map_err(|errno| SpawnError::Parent { what, errno })
            };
            let listener = take(handover.listener, "taking the seccomp listener (pidfd_getfd)").map_err(fail)?;
            let proxy = match handover.proxy {
                None => None,
                Some(n) => Some(take(n, "taking the proxy's socket (pidfd_getfd)").map_err(fail)?),
            };
            let mut forwards = Vec::new();
            for n in &handover.forwards[..handover.count] {
                forwards.push(take(*n, "taking a forwarded port's socket (pidfd_getfd)").map_err(fail)?);
            }
            // The child has made its mount namespace and /proc by now.
            let root = match plan.pid_namespace {
                true => Some(command_root(pid).map_err(|errno| {
                    fail(SpawnError::Parent { what: "opening the command's root (/proc/<pid>/root)", errno })
                })?),
                false => None,
            };
            before_exec(pid).map_err(fail)?;
            channel::go(ours.as_fd())
                .map_err(|errno| fail(SpawnError::Parent { what: "releasing the child", errno }))?;
            // The child, woken by that write, waits on this CPU (the kernel
            // places a woken task beside its waker) while this thread goes
            // on starting the supervisor, often with the other CPU idle:
            // made to wait its turn the command's start waited ~0.2 ms.
            // Yielding lets it run now, or this thread move.
            let _ = nix::sched::sched_yield();
            Ok(Started { pid, listener, channel: ours, root, proxy, forwards })
        }
    }
}

/// The root directory of process `pid`, as a handle.
fn command_root(pid: libc::pid_t) -> Result<OwnedFd, Errno> {
    let path = CString::new(format!("/proc/{pid}/root")).expect("no NUL in a number");
    crate::sys::fs::openat(crate::sys::fs::Dir::Cwd, &path, libc::O_PATH | libc::O_DIRECTORY, 0)
}

/// The signal masks of the child: the command's, and the init's (every
/// signal blocked, each taken with `sigwaitinfo`).
#[derive(Clone, Copy)]
struct Masks<'a> {
    command: &'a libc::sigset_t,
    every_signal: &'a libc::sigset_t,
}

fn reap(pid: libc::pid_t) {
    let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid), None);
}

/// Once the command has ended: why its `execve` failed, if it reported
/// that on the set-up channel (which ends at a successful exec: `Ok`).
/// Every holder of the channel's other end has ended with the command, so
/// what it says is there already; the read never waits all the same.
pub fn exec_result(ours: &OwnedFd) -> Result<(), Errno> {
    let nonblocking = nix::fcntl::fcntl(ours, nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK));
    if nonblocking.is_err() {
        return Ok(());
    }
    match channel::receive(ours.as_fd()) {
        Some(channel::FromChild::Failed { stage: Stage::Exec, errno }) => Err(errno),
        _ => Ok(()),
    }
}

/// The child's side. Raw syscalls only; never returns.
fn child(
    plan: &Plan,
    masks: Masks<'_>,
    channel: OwnedFd,
    parent: libc::pid_t,
    (argv, envp): (&process::ExecArgs<'_>, &process::ExecArgs<'_>),
    stack: Option<&process::ChildStack>,
) -> ! {
    let report = |stage: Stage, errno: Errno| -> ! { fail(channel.as_fd(), stage, errno) };

    // The Rust runtime ignores SIGPIPE, and an ignored signal stays ignored
    // across exec: without this, `yes | head -1` would print "Broken pipe"
    // errors instead of ending quietly.
    if let Err(e) = process::default_signal(libc::SIGPIPE) {
        report(Stage::SignalMask, e);
    }
    // The init of a PID namespace takes every signal with sigwaitinfo; the
    // command gets the mask it was started with.
    let mask = if plan.pid_namespace { masks.every_signal } else { masks.command };
    if let Err(e) = process::set_signal_mask(mask) {
        report(Stage::SignalMask, e);
    }
    // The network namespace made ahead is entered below (close-on-exec:
    // the command never holds it).
    let made_namespace = match &plan.net_namespace {
        NetNamespace::Made(ns) => ns.as_raw_fd(),
        _ => -1,
    };
    let mut keep = [channel.as_raw_fd(), plan.landlock.as_ref().map_or(-1, |f| f.as_raw_fd()), made_namespace];
    keep.sort_unstable();
    let absent = keep.iter().take_while(|&&fd| fd < 0).count();
    let keep = &keep[absent..];
    if let Err(e) = process::close_fds_except(keep) {
        report(Stage::CloseFds, e);
    }
    if let Err(e) = process::set_parent_death_signal(libc::SIGKILL) {
        report(Stage::DeathSignal, e);
    }
    // If interpose died before the line above, the death signal will never
    // come: stop here rather than run unsupervised. (In a PID namespace the
    // parent is outside it, and getppid says 0; there the wait for the
    // parent's go below ends at once if it has died.)
    if process::parent_pid() != if plan.pid_namespace { 0 } else { parent } {
        report(Stage::ParentGone, Errno::ESRCH);
    }
    if plan.pid_namespace {
        if let Err(e) = pid_namespace_proc() {
            report(Stage::PidNamespace, e);
        }
        // The namespace's own pid_max (Linux 6.14; the session checks the
        // kernel before asking: earlier kernels share one system-wide).
        if let Some(max) = &plan.pid_max {
            if let Err(e) = process::write_file(c"/proc/sys/kernel/pid_max", max) {
                report(Stage::PidMax, e);
            }
        }
        if plan.isolate.is_none() {
            if let Err(e) = apply_masks(&plan.masks) {
                report(Stage::Masks, e);
            }
        }
        // Under --isolate the procfs granted is the one in the new root.
        if let (Some(access), Some(ruleset), None) = (plan.own_proc, &plan.landlock, &plan.isolate) {
            if let Err(e) = own_proc(access, ruleset.as_fd()) {
                report(Stage::OwnProc, e);
            }
        }
    }
    // Into what the mounts above, and the session's (the caches'
    // overlays), now show at the working directory's path.
    if let Some(cwd) = &plan.cwd {
        if let Err(e) = process::chdir(cwd) {
            report(Stage::WorkingDirectory, e);
        }
    }
    let network = match &plan.net_namespace {
        NetNamespace::Shared => Ok(()),
        NetNamespace::Own => process::unshare(libc::CLONE_NEWNET).and_then(|()| process::loopback_up()),
        NetNamespace::Made(ns) => process::setns(ns.as_fd(), libc::CLONE_NEWNET),
    };
    if let Err(e) = network {
        report(Stage::Network, e);
    }
    let proxy = match plan.proxy_port.map(|port| process::listen_on(std::net::SocketAddr::from(([127, 0, 0, 1], port))))
    {
        Some(Err(e)) => report(Stage::Network, e),
        Some(Ok(sock)) => Some(sock),
        None => None,
    };
    // No allocation after the fork: the sockets go into a fixed array.
    let mut forwards: [Option<OwnedFd>; MAX_FORWARDS] = Default::default();
    for (slot, at) in forwards.iter_mut().zip(&plan.forwards) {
        match process::listen_on(*at) {
            Ok(sock) => *slot = Some(sock),
            Err(e) => report(Stage::Forward, e),
        }
    }
    if plan.new_ipc {
        if let Err(e) = process::unshare(libc::CLONE_NEWIPC) {
            report(Stage::Ipc, e);
        }
    }
    if let Some(iso) = &plan.isolate {
        if let Err(e) = isolate::enter(iso) {
            report(Stage::Isolate, e);
        }
        if let Some(ruleset) = &plan.landlock {
            if let Err(e) = isolate::grant_rebuilt(iso, ruleset.as_fd()) {
                report(Stage::Isolate, e);
            }
            if let (Some(access), true) = (plan.own_proc, plan.pid_namespace) {
                if let Err(e) = own_proc(access, ruleset.as_fd()) {
                    report(Stage::OwnProc, e);
                }
            }
        }
    }
    if let Err(e) = process::limit_capabilities(plan.capabilities) {
        report(Stage::Capabilities, e);
    }
    if let Some((uid, gid)) = plan.user {
        if let Err(e) = process::become_user(uid, gid) {
            report(Stage::Credentials, e);
        }
    }
    if let Some(ruleset) = &plan.landlock {
        if let Err(e) = process::set_no_new_privs() {
            report(Stage::NoNewPrivs, e);
        }
        if let Err(e) = crate::sys::landlock::restrict_self(ruleset.as_fd()) {
            report(Stage::Landlock, e);
        }
    } else if let Err(e) = process::set_no_new_privs() {
        report(Stage::NoNewPrivs, e);
    }
    let flags = seccomp::FILTER_FLAG_NEW_LISTENER | seccomp::FILTER_FLAG_WAIT_KILLABLE_RECV;
    let listener = match seccomp::install_filter(&plan.filter, flags) {
        Ok(fd) => fd,
        Err(e) => report(Stage::Seccomp, e),
    };
    // From here on every trapped syscall would wait for a supervisor that
    // does not hold the listener yet, so until the parent has taken it only
    // untrapped calls are made: write the listener's number, wait for the
    // parent's go (it copies the listener with pidfd_getfd), close ours.
    let mut handover = channel::Handover {
        listener: listener.as_raw_fd(),
        proxy: proxy.as_ref().map(|p| p.as_raw_fd()),
        forwards: [-1; MAX_FORWARDS],
        count: plan.forwards.len().min(MAX_FORWARDS),
    };
    for (slot, sock) in handover.forwards.iter_mut().zip(&forwards) {
        *slot = sock.as_ref().map_or(-1, |s| s.as_raw_fd());
    }
    if let Err(e) = channel::send(channel.as_fd(), &channel::FromChild::Ready(handover)) {
        report(Stage::SendListener, e);
    }
    if let Err(e) = channel::await_go(channel.as_fd()) {
        report(Stage::SendListener, e);
    }
    // The command must not hold its own listener: it could answer its own
    // notifications. Nor the proxy's socket: it could take connections
    // meant for the proxy.
    drop(listener);
    drop(proxy);
    drop(forwards);
    if plan.pid_namespace {
        // The init holds a copy of interpose's memory and environment: once
        // the supervisor has taken what it needs from it (the listener, its
        // root), its /proc entries belong to root and no process of the
        // command's may read them.
        if let Err(e) = process::set_dumpable(false) {
            report(Stage::PidNamespace, e);
        }
        // This process is the namespace's init: the command runs as its
        // child, and when this init dies (with interpose, by its death
        // signal) the kernel kills every process of the namespace.
        let command = match stack {
            // The command shares this process's memory until its exec,
            // while this one waits: nothing is copied for it, nothing torn
            // down at its exec. Until then it is not dumpable either (the
            // memory is this one's): the supervisor reads its exec's path
            // with CAP_SYS_PTRACE, and the exec makes it dumpable as it
            // makes any program.
            Some(stack) => {
                let exec =
                    CommandExec { program: &plan.program, argv, envp, mask: masks.command, channel: channel.as_fd() };
                // SAFETY: we are the forked child already, single-threaded;
                // `exec_command` makes only raw syscalls on its own stack
                // until it execs or exits, and `exec` lives on this frame,
                // which waits for it.
                #[allow(unsafe_code)]
                let spawned =
                    unsafe { process::spawn_on(stack, exec_command, std::ptr::from_ref(&exec).cast_mut().cast()) };
                spawned.unwrap_or_else(|e| report(Stage::PidNamespace, e))
            }
            // SAFETY: we are the forked child already, single-threaded; the
            // grandchild, like us, makes only raw syscalls until it execs.
            #[allow(unsafe_code)]
            None => match unsafe { process::clone_process(0) } {
                Ok(Fork::Child) => {
                    // Dumpable again (exec would make it so anyway): the
                    // supervisor reads the command's memory from its first
                    // call on, the exec itself, as the same user.
                    if let Err(e) = process::set_signal_mask(masks.command).and_then(|_| process::set_dumpable(true)) {
                        report(Stage::SignalMask, e);
                    }
                    let errno = process::execve(&plan.program, argv, envp);
                    report(Stage::Exec, errno)
                }
                Ok(Fork::Parent(command)) => command,
                Err(e) => report(Stage::PidNamespace, e),
            },
        };
        // The command held the channel until it exec'd; the init needs no
        // descriptor (the Landlock ruleset is still open).
        drop(channel);
        let _ = process::close_fds_except(&[]);
        init(command, masks.every_signal)
    }
    let errno = process::execve(&plan.program, argv, envp);
    report(Stage::Exec, errno)
}

/// Reports a failed `stage` to the parent and exits: 127 for a program not
/// found, 126 for one that cannot run, 125 for interpose's own failure.
fn fail(channel: BorrowedFd<'_>, stage: Stage, errno: Errno) -> ! {
    let _ = channel::send(channel, &channel::FromChild::Failed { stage, errno });
    let code = match (stage, errno) {
        (Stage::Exec, Errno::ENOENT) => 127,
        (Stage::Exec, _) => 126,
        _ => 125,
    };
    process::exit_now(code)
}

/// What the command's process needs for its exec, from its init's frame.
struct CommandExec<'a> {
    program: &'a CStr,
    argv: &'a process::ExecArgs<'a>,
    envp: &'a process::ExecArgs<'a>,
    mask: &'a libc::sigset_t,
    channel: BorrowedFd<'a>,
}

/// The command's process, sharing its init's memory: its signal mask, then
/// the exec. Raw syscalls only.
extern "C" fn exec_command(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the init's `CommandExec`, alive while the init waits
    // for this exec (CLONE_VFORK).
    #[allow(unsafe_code)]
    let exec = unsafe { &*arg.cast::<CommandExec<'_>>() };
    if let Err(e) = process::set_signal_mask(exec.mask) {
        fail(exec.channel, Stage::SignalMask, e);
    }
    let errno = process::execve(exec.program, exec.argv, exec.envp);
    fail(exec.channel, Stage::Exec, errno)
}

/// In the new PID namespace: a mount namespace of its own (a slave of the
/// session's, so nothing mounted here leaks out) with a `/proc` that shows
/// the namespace's processes, numbered as the command sees them.
fn pid_namespace_proc() -> Result<(), Errno> {
    process::unshare(libc::CLONE_NEWNS)?;
    process::mount(None, c"/", None, libc::MS_REC | libc::MS_SLAVE, None)?;
    process::mount(Some(c"proc"), c"/proc", Some(c"proc"), libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC, None)
}

/// The grant of the whole new procfs (see [`landlock::OwnProc`]). The
/// command holds no capability to unmount a mask, Landlock forbids a
/// restricted process to mount or unmount, and the filter refuses the mount
/// calls.
fn own_proc(access: u64, ruleset: BorrowedFd<'_>) -> Result<(), Errno> {
    if access != 0 {
        let proc = crate::sys::fs::openat(
            crate::sys::fs::Dir::Cwd,
            c"/proc",
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            0,
        )?;
        crate::sys::landlock::add_path_rule(ruleset, access, proc.as_fd())?;
    }
    Ok(())
}

/// Mounts each mask of `masks` (parents before children) in this process's
/// mount namespace (`--isolate` passes them under its staging root): over a
/// denied file a read-only,
/// `nodev` bind of `/dev/null` (opening it fails with `EACCES`), over a
/// denied directory an empty read-only mode-000 tmpfs, over a read-only
/// entry inside a writable tree a read-only bind of itself (a writable one
/// inside that, writable again). A denied entry takes the form that fits
/// what it was when planned, and the other only if it changed since: a
/// mount of the wrong form fails (`ENOTDIR`), and the kernel undoes a
/// failed mount only after an RCU grace period (`synchronize_rcu_expedited`,
/// 0.1-0.25 ms on this VM, and once in a while far more). A carve-out that
/// is gone since it was planned could now be made by the command where the
/// backstop was built assuming a mask: that fails the start, except in
/// procfs, where nothing can be made. Only the first denied file takes a
/// bind of `/dev/null` and a remount: every later one is bound from that
/// mask, and a bind mount keeps its source's flags (one mount call each,
/// not two). Raw syscalls only.
pub fn apply_masks(masks: &[MaskPlan]) -> Result<(), Errno> {
    const NONE: Option<&CStr> = None;
    let hidden = libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
    let empty_dir =
        |target: &CStr| process::mount(Some(c"tmpfs"), target, Some(c"tmpfs"), hidden, Some(c"size=0,mode=000"));
    // The first denied file masked: a read-only `nodev` `/dev/null`.
    let mut null: Option<&CStr> = None;
    for m in masks {
        let target = m.target.as_c_str();
        match m.kind {
            landlock::MaskKind::Hide => {
                let mut null_over = |target| {
                    let bound = match null {
                        Some(masked) => process::mount(Some(masked), target, NONE, libc::MS_BIND, NONE),
                        None => process::mount(Some(c"/dev/null"), target, NONE, libc::MS_BIND, NONE)
                            .and_then(|()| process::remount_bind(target, true, hidden)),
                    };
                    if bound.is_ok() {
                        null.get_or_insert(target);
                    }
                    bound
                };
                // The form planned; the other where the entry changed since.
                let planned = if m.dir { empty_dir(target) } else { null_over(target) };
                let made = match planned {
                    Err(Errno::ENOTDIR) if m.dir => null_over(target),
                    Err(Errno::ENOTDIR) => empty_dir(target),
                    other => other,
                };
                match made {
                    Ok(()) => {}
                    Err(Errno::ENOENT) if target.to_bytes().starts_with(b"/proc/") => {}
                    Err(e) => return Err(e),
                }
            }
            landlock::MaskKind::ReadOnly | landlock::MaskKind::Writable => {
                process::mount(Some(target), target, NONE, libc::MS_BIND | libc::MS_REC, NONE)?;
                process::remount_bind(target, m.kind == landlock::MaskKind::ReadOnly, 0)?;
            }
        }
    }
    Ok(())
}

/// The PID namespace's init: reaps every orphan, passes on the signals
/// interpose sends (from outside the namespace; a terminal's signals
/// reach the command's process group by themselves, and signals from
/// inside the namespace are dropped), and exits with the command's status
/// when the command ends, which ends every other process of the namespace.
fn init(command: libc::pid_t, every_signal: &libc::sigset_t) -> ! {
    loop {
        let (sig, code, from) = process::wait_signal(every_signal);
        if sig == libc::SIGCHLD {
            while let Some((pid, status)) = process::reap_any() {
                if pid == command {
                    let code =
                        if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { 128 + libc::WTERMSIG(status) };
                    process::exit_now(code)
                }
            }
        } else if from == 0 && code != libc::SI_KERNEL {
            let _ = process::kill(command, sig);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_dead_runs_left_is_stale() {
        let dir = tempfile::tempdir().unwrap();
        // A live process named interpose, and pid 1, which is not one.
        let exe = dir.path().join("interpose");
        std::os::unix::fs::symlink("/bin/sleep", &exe).unwrap();
        let mut live = std::process::Command::new(&exe).arg("30").spawn().unwrap();
        let base = dir.path().join("base");
        // This test's own process (a copy of interpose under another name,
        // for the sweep) is alive too.
        let names = [
            format!("interpose-{}-a", live.id()),
            format!("interpose-{}-own", std::process::id()),
            "interpose-1-b".into(),
            "interpose-1".into(),
            "other-1".into(),
        ];
        for n in &names {
            std::fs::create_dir_all(base.join(n)).unwrap();
        }
        // The child has exec'd once /proc shows its new name.
        let comm = format!("/proc/{}/comm", live.id());
        while std::fs::read_to_string(&comm).map_or(true, |c| c.trim() != "interpose") {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let mut stale: Vec<String> =
            left_by_dead_runs(&base).iter().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        stale.sort();
        let _ = live.kill();
        let _ = live.wait();
        assert_eq!(stale, ["interpose-1", "interpose-1-b"]);
    }

    /// A denied entry is masked in the form that fits what it is, whether
    /// planned so or (changed since it was planned) not: a file becomes a
    /// `/dev/null` that refuses being opened, a directory an empty one.
    #[test]
    fn a_mask_fits_its_entry_whatever_was_planned() {
        use std::os::unix::ffi::OsStringExt;
        if !nix::unistd::geteuid().is_root() {
            let required = std::env::var_os("INTERPOSE_REQUIRE_KERNEL").is_some();
            assert!(!required, "masks need root (INTERPOSE_REQUIRE_KERNEL is set: every test must run)");
            eprintln!("SKIP: masks need root");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for name in ["file", "file-planned-as-directory"] {
            std::fs::write(root.join(name), "secret").unwrap();
        }
        for name in ["directory", "directory-planned-as-file"] {
            std::fs::create_dir(root.join(name)).unwrap();
            std::fs::write(root.join(name).join("inside"), "secret").unwrap();
        }
        let path = |name: &str| CString::new(root.join(name).into_os_string().into_vec()).unwrap();
        let hide = |name: &str, dir| MaskPlan { target: path(name), kind: landlock::MaskKind::Hide, dir };
        let masks = [
            hide("directory", true),
            hide("directory-planned-as-file", false),
            hide("file", false),
            hide("file-planned-as-directory", true),
        ];
        let at = root.clone();
        // On a thread of its own, in a mount namespace of its own whose
        // mounts reach no one else.
        let seen = std::thread::spawn(move || {
            process::unshare(libc::CLONE_NEWNS | libc::CLONE_FS).unwrap();
            process::mount(None, c"/", None, libc::MS_REC | libc::MS_PRIVATE, None).unwrap();
            apply_masks(&masks).unwrap();
            let read = |name: &str| std::fs::read(at.join(name)).map(drop).map_err(|e| e.kind());
            let list = |name: &str| std::fs::read_dir(at.join(name)).map(Iterator::count).map_err(|e| e.kind());
            (read("file"), read("file-planned-as-directory"), list("directory"), list("directory-planned-as-file"))
        })
        .join()
        .unwrap();
        let refused = Err(std::io::ErrorKind::PermissionDenied);
        assert_eq!(seen, (refused, refused, Ok(0), Ok(0)));
        // Nothing of it outside that namespace.
        assert_eq!(std::fs::read_to_string(root.join("file")).unwrap(), "secret");
        assert_eq!(std::fs::read_dir(root.join("directory")).unwrap().count(), 1);
    }

    #[test]
    fn the_child_makes_no_trapped_call_between_filter_and_exec() {
        // After installing the filter the child only writes, reads, closes
        // and exits until the parent holds the listener: a trapped call
        // there would wait forever for an answer.
        for nr in [libc::SYS_write, libc::SYS_read, libc::SYS_close, libc::SYS_exit_group, libc::SYS_exit] {
            let row = crate::syscalls::table::lookup(nr as i32);
            assert!(row.is_none(), "{row:?} is trapped");
        }
    }
}
