//! A session: build the surface, start the sandbox, supervise it, record
//! it, and end with the command's status. `interpose run` parses its flags
//! into a [`Config`] and calls [`run`]; the library and other entry points
//! start a session the same way.

pub mod ask;
mod dir;
mod enforcement;
mod explain;
mod journal;
mod net;
mod record;
pub mod surface;
mod wait;

use crate::audit::{self, Sink};
use crate::policy::{Mode, Origin, Rule, Surface};
use crate::sandbox::{self, filter, Plan};
use crate::supervisor::{self, Supervisor};
use crate::sys::{process, seccomp, Errno};
use dir::{SessionDir, StagingDir};
pub use enforcement::Enforcement;
pub use journal::JournalOptions;
use nix::sys::signal::SigSet;
use record::{mode_record, open_trail, session_start, with_namespace};
use std::ffi::{CString, OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use wait::{end_sandbox, supervise};

/// What network the command gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Net {
    /// The host's network.
    Host,
    /// Only loopback, in a namespace of its own.
    None,
    /// TCP connects only to these ports.
    Connect(Vec<u16>),
    /// Only through interpose's proxy, to the hosts the policy allows and
    /// these (the default).
    Proxy(Vec<crate::policy::hosts::HostRule>),
}

/// Everything a session is started with.
#[derive(Debug, Clone)]
pub struct Config {
    /// The surface.
    pub surface: surface::SurfaceSpec,
    /// Where the trail goes (a file, `-` for stderr, `unix:PATH`).
    pub audit: Option<PathBuf>,
    /// Which decisions the trail records.
    pub audit_level: crate::supervisor::AuditLevel,
    /// The key that anchors the trail (default: the state directory's).
    pub audit_key: Option<PathBuf>,
    /// What happens when the trail cannot be written.
    pub audit_failure: audit::OnFailure,
    /// Run the command as this user (`UID[:GID]` or a name).
    pub user: Option<String>,
    /// The task limit of the pids cgroup.
    pub max_procs: Option<u32>,
    /// How the surface is enforced (settled with the policy's `mode`).
    pub enforcement: Enforcement,
    /// Credential variables passed through anyway.
    pub env_keep: Vec<String>,
    /// Keep the session directory after the run.
    pub keep_session: bool,
    /// Leave out notices (not errors or warnings).
    pub quiet: bool,
    /// An isolated root holding only the surface.
    pub isolate: bool,
    /// The network the command gets.
    pub net: Net,
    /// Names the proxy resolves to these addresses without DNS (tests).
    pub net_resolve: Vec<(String, std::net::IpAddr)>,
    /// Stay in the host's mount namespace.
    pub no_namespace: bool,
    /// `--ask`: hold what the surface does not grant for a person.
    pub ask: Option<ask::Ask>,
    /// Keep an undo journal (`--journal DIR`).
    pub journal: Option<JournalOptions>,
    /// The command and its arguments.
    pub command: Vec<OsString>,
}

/// interpose's own failures (exit status 125).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The surface (flags or policy) cannot be built.
    #[error(transparent)]
    Surface(#[from] surface::SurfaceError),
    /// The kernel lacks a feature enforcement needs.
    #[error("this kernel cannot enforce the surface: {0} is missing (see `interpose check`)")]
    MissingFeature(&'static str),
    /// Building the filter failed.
    #[error(transparent)]
    Filter(#[from] filter::FilterError),
    /// `--ask` cannot be had as given.
    #[error(transparent)]
    Ask(#[from] ask::AskError),
    /// Building the Landlock ruleset failed.
    #[error(transparent)]
    Landlock(#[from] sandbox::landlock::LandlockError),
    /// Starting the sandbox failed.
    #[error(transparent)]
    Spawn(#[from] sandbox::SpawnError),
    /// Another system call failed.
    #[error("{what}{}: {source}", .path.as_ref().map(|p| format!(" {}", p.display())).unwrap_or_default())]
    Io {
        /// What was being done.
        what: &'static str,
        /// The file it was done to, where there is one.
        path: Option<PathBuf>,
        /// The error.
        source: std::io::Error,
    },
    /// `--max-procs` cannot be enforced here.
    #[error("--max-procs: {0}")]
    MaxProcs(sandbox::pids::PidsError),
    /// The network the flags and policy ask for cannot be had.
    #[error("--net: {0}")]
    Net(String),
    /// `--user` is malformed, unknown, or used without root.
    #[error("--user {0}")]
    BadUser(String),
    /// `--net connect=` is enforced by Landlock.
    #[error("--net connect= is enforced by Landlock: it cannot be combined with --no-landlock")]
    NetNeedsLandlock,
    /// Fast mode leaves most decisions to Landlock, so it cannot run without.
    #[error("--fast leaves decisions to Landlock: it cannot be combined with --no-landlock, --learn or a kernel without Landlock")]
    FastNeedsLandlock,
    /// The trail's key cannot be read or made.
    #[error("--audit-key {}: {err}; name a key file interpose can create or read", .path.display())]
    TrailKey {
        /// The key file.
        path: PathBuf,
        /// What went wrong.
        err: std::io::Error,
    },
    /// The trail could not be written.
    #[error("{why}{}", if *.stopped { "; the command was stopped (--audit-failure continue lets it run on unrecorded)" } else { "; the command ran on unrecorded" })]
    TrailFailed {
        /// What failed.
        why: String,
        /// Whether the command was stopped for it.
        stopped: bool,
    },
    /// The trail's reader stopped reading, and the run was ended (by a
    /// signal) or ended without the trail's end.
    #[error("{0}")]
    TrailStalled(String),
    /// `--audit FILE` names something that exists.
    #[error("--audit {}: exists; a trail is never overwritten or appended to: name a new file", .0.display())]
    TrailExists(PathBuf),
    /// `--audit` names a FIFO.
    #[error("--audit {}: a FIFO; a trail goes to a new regular file (a pipe keeps it only while read, and a reader that stops would stop the command): stream it with `--audit unix:SOCKET` or `--audit -` (stderr) instead", .0.display())]
    TrailFifo(PathBuf),
    /// The command contains a NUL byte.
    #[error("the command line or environment contains a NUL byte")]
    Nul,
    /// The journal cannot be kept in this mode.
    #[error("--journal {0}")]
    JournalMode(&'static str),
    /// The journal cannot be started or sealed.
    #[error(transparent)]
    Journal(#[from] crate::journal::JournalError),
    /// Nothing the journal could follow is writable.
    #[error("--journal: nothing is writable in this run (no --rw, no writable entry in the policy): there is nothing to journal")]
    JournalNothing,
    /// The journal could not be written during the session.
    #[error("the journal could not be written: {0}; the command was stopped; what was journalled before it can be undone with interpose undo")]
    JournalFailed(String),
}

pub(crate) fn io(what: &'static str) -> impl FnOnce(std::io::Error) -> RunError {
    move |source| RunError::Io { what, path: None, source }
}

/// As [`io`], for an operation on `path` (said after `what`).
pub(crate) fn io_at(what: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> RunError {
    let path = Some(path.into());
    move |source| RunError::Io { what, path, source }
}

pub(crate) fn errno(what: &'static str) -> impl FnOnce(Errno) -> RunError {
    move |e| RunError::Io { what, path: None, source: std::io::Error::from(e) }
}

/// The task limit when `--max-procs` is not given: far above what a build
/// or an agent needs, far below what exhausts the host.
const DEFAULT_MAX_PROCS: u32 = 4096;

/// Signals that reach interpose and are passed on to the command.
const FORWARDED: [i32; 6] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT, libc::SIGUSR1, libc::SIGUSR2];

/// `UID[:GID]` or a user name; the group defaults to the user's primary group
/// (or the uid's number when the user is not in the password database).
fn parse_user(spec: &str) -> Result<(u32, u32), RunError> {
    if !nix::unistd::geteuid().is_root() {
        return Err(RunError::BadUser(format!("{spec}: switching users needs root")));
    }
    let (user, group) = match spec.split_once(':') {
        Some((u, g)) => (u, Some(g)),
        None => (spec, None),
    };
    let entry = match user.parse::<u32>() {
        Ok(uid) => nix::unistd::User::from_uid(uid.into()).ok().flatten(),
        Err(_) => Some(
            nix::unistd::User::from_name(user)
                .ok()
                .flatten()
                .ok_or_else(|| RunError::BadUser(format!("{spec}: no such user")))?,
        ),
    };
    let uid = user.parse::<u32>().ok().or(entry.as_ref().map(|e| e.uid.as_raw())).expect("a number or a known name");
    let gid = match group {
        Some(g) => g.parse::<u32>().map_err(|_| RunError::BadUser(format!("{spec}: the group must be numeric")))?,
        None => entry.map_or(uid, |e| e.gid.as_raw()),
    };
    if uid == 0 {
        return Err(RunError::BadUser(format!("{spec}: the command already runs as root without --user")));
    }
    Ok((uid, gid))
}

/// Finds `program` the way `execvp` would, in `path` (the command's PATH).
pub(crate) fn find_program(program: &OsStr, path: Option<&OsStr>) -> Option<PathBuf> {
    if program.as_bytes().contains(&b'/') {
        return Some(PathBuf::from(program));
    }
    let path = path.map_or_else(|| OsString::from("/usr/local/bin:/usr/bin:/bin"), OsStr::to_os_string);
    std::env::split_paths(&path).map(|dir| dir.join(program)).find(|candidate| {
        use std::os::unix::fs::PermissionsExt;
        candidate.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

fn cstring(s: impl Into<Vec<u8>>) -> Result<CString, RunError> {
    CString::new(s).map_err(|_| RunError::Nul)
}

fn require(present: bool, name: &'static str) -> Result<(), RunError> {
    if present {
        Ok(())
    } else {
        Err(RunError::MissingFeature(name))
    }
}

/// Runs the command; returns interpose's exit status.
pub fn run(args: &Config) -> Result<i32, RunError> {
    let t0 = std::time::Instant::now();
    let phase = |what: &str| tracing::debug!("start-up: {what} at {} us", t0.elapsed().as_micros());
    phase("session starts");
    validate(args)?;
    let (handled, original) = block_handled_signals()?;
    // While interpose is single-threaded: the session's own mount namespace
    // (with a user namespace when not root), which the command inherits.
    let namespace = sandbox::namespace::enter(!args.no_namespace);
    let keeper = sandbox::keeper::Keeper::start();
    require_kernel()?;
    let net_ahead = net::NetAhead::start(args, &namespace);
    let user = args.user.as_deref().map(parse_user).transpose()?;
    phase("namespace, kernel features");

    let session = SessionDir::create(args.keep_session)?;
    phase("session directory");
    let mut parts = assemble(args, &session, &namespace, user)?;
    let (enforcement, unused) = args.enforcement.with_policy(parts.loaded.0.mode)?;
    // The approvals socket: out of the command's reach, carved out.
    let asking = match &args.ask {
        Some(a) => {
            ask_allowed(enforcement)?;
            a.guard(&mut parts.surface)?;
            Some((a.listen()?, a.timeout(), a.policy.clone()))
        }
        None => None,
    };
    if args.journal.is_some() {
        journal_mode(enforcement)?;
    }
    parts.notes.extend(unused.map(String::from));
    parts.notes.extend(namespace_note(&namespace, args.no_namespace));
    phase("surface, session home, caches");
    let trail = open_trail(args, &mut parts.surface)?;
    let journal_dir = journal::prepare(args, &mut parts.surface)?;
    let policy_net = (&parts.loaded.0.net_allow[..], &parts.loaded.0.net_credentials[..]);
    let mut network = net::NetSetup::plan(args, policy_net, namespace.unprivileged())?;
    if enforcement.learns() {
        eprintln!("interpose: learning mode: nothing is enforced; what would be denied is recorded as would_deny");
    }
    let (landlock, trapping) = backstop(args, enforcement, &parts, (&namespace, &network))?;
    // The isolated root is built on an empty directory next to the session
    // directory (inside it, the session's own bind would contain it).
    let staging = match args.isolate {
        true => Some(StagingDir::beside(&session)?),
        false => None,
    };
    let (env, dropped) = environment(args, &parts, &session, &network);
    for note in parts.notes.iter().chain(&network.notes()).filter(|_| !args.quiet) {
        eprintln!("interpose: {note}");
    }
    // Nothing the user set is lost without a word: the names (never the
    // values) of what was removed, and a keep that keeps nothing.
    let by_reference = network.withheld();
    let dropped_here: Vec<_> = dropped.iter().filter(|d| !by_reference.iter().any(|n| d.name == n.as_str())).collect();
    if !dropped_here.is_empty() && !args.quiet {
        let names: Vec<String> = dropped_here.iter().map(|d| d.name.to_string_lossy().into_owned()).collect();
        eprintln!(
            "interpose: removed from the command's environment (credentials): {}; keep one with --env-keep NAME \
             ([env] keep in a policy)",
            crate::forensics::sanitize(&names.join(", "))
        );
    }
    for name in args.env_keep.iter().filter(|n| !n.contains('*') && std::env::var_os(n).is_none()) {
        eprintln!("interpose: --env-keep {}: not set here, so nothing is kept", crate::forensics::sanitize(name));
    }
    let path_var = env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v.clone());
    let Some(program) = find_program(&args.command[0], path_var.as_deref()) else {
        eprintln!("interpose: {}: command not found", args.command[0].to_string_lossy());
        return Ok(127);
    };
    // With the backstop, a call it refuses as the surface does may be
    // continued; where it also allows what the rule allows, an allowed one
    // is continued without being refused there.
    let sound = landlock.as_ref().map(sandbox::landlock::Backstop::sound);
    let continuable = landlock.as_ref().map(|b| b.layout.exact_rules(&parts.surface));
    let exec_roots = landlock.as_ref().map(|b| b.layout.exec_roots()).unwrap_or_default();
    let making = landlock.as_ref().map(|b| b.layout.making.clone()).unwrap_or_default();
    let plan = plan(
        args,
        &parts.surface,
        (&namespace, &network),
        user,
        trapping,
        (program, &env),
        net_ahead,
        landlock,
        staging.as_deref(),
    )?;
    phase("landlock ruleset, environment, filter");

    let pids = pids_cgroup(args, &plan)?;
    let sink = trail.map(|(out, key)| Sink::start(out, Some(key)));
    let mut trail_head = None;
    if let Some(sink) = &sink {
        let mode = mode_record(trapping, enforcement.learns());
        let record = session_start(args, &parts.surface, &parts.loaded, &dropped, mode, &parts.caches);
        let mut record = with_namespace(record, &namespace);
        if let audit::Record::SessionStart(start) = &mut record {
            let detail = match (&pids, &plan.pid_max) {
                (Some(_), _) => format!("a pids cgroup, pids.max {}", args.max_procs.unwrap_or(DEFAULT_MAX_PROCS)),
                (None, Some(max)) => format!("pid_max {} in the command's PID namespace", String::from_utf8_lossy(max)),
                (None, None) => "none: no pids cgroup could be made here".into(),
            };
            let present = pids.is_some() || plan.pid_max.is_some();
            start.features.insert("task_limit".into(), audit::Feature { present, detail });
            start.features.insert("network".into(), network.feature(args));
        }
        trail_head = Some(audit::close::session_hash(&record));
        sink.send(record);
    }
    // A trail to stderr or a socket has no file a journal could name.
    let trail_head = trail_head.filter(|_| {
        args.audit.as_ref().is_some_and(|a| a.as_os_str() != "-" && !a.as_os_str().as_bytes().starts_with(b"unix:"))
    });
    let journal = match &journal_dir {
        Some(prepared) => Some(journal::start(prepared, args, &parts.surface, trail_head)?),
        None => None,
    };
    process::set_child_subreaper().map_err(errno("PR_SET_CHILD_SUBREAPER"))?;
    phase("audit sink, pids cgroup");
    let config = supervisor::Config {
        surface: parts.surface,
        audit: sink.clone().map(|s| (s, args.audit_level)),
        set_groups: !namespace.unprivileged(),
        learn: enforcement.learns(),
        floor: enforcement.floor(),
        landlock_exact: continuable.unwrap_or_default(),
        exec_roots,
        making,
        backstop: sound,
        net: network.rule.clone(),
        isolated: args.isolate,
        runtime_filter: false,
        container_init: None,
        ask: asking
            .as_ref()
            .map(|((l, _), timeout, policy_file)| -> Result<_, RunError> {
                Ok(supervisor::AskConfig {
                    listener: l.try_clone().map_err(io("the approvals socket"))?,
                    timeout: *timeout,
                    policy_file: policy_file.clone(),
                })
            })
            .transpose()?,
        journal: journal.clone(),
    };
    // The supervisor's state is made while the command's process sets
    // itself up (its mounts, Landlock, the filter), where interpose would
    // only wait; it gets the listener and the command's root after.
    let prepared = std::cell::OnceCell::new();
    let made_meanwhile = || _ = prepared.set(Supervisor::prepare(config));
    let started = sandbox::start(&plan, original.as_ref(), made_meanwhile, |pid| {
        // Without a supervisor the command never starts.
        if let Some(Err(errno)) = prepared.get() {
            return Err(sandbox::SpawnError::Parent { what: "starting the supervisor", errno: *errno });
        }
        if let Some(keeper) = &keeper {
            keeper.hold_mounts_of(pid);
        }
        match &pids {
            Some(cgroup) => cgroup.add(pid).map_err(|e| sandbox::SpawnError::Parent {
                what: "moving the command into its pids cgroup",
                errno: Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)),
            }),
            None => Ok(()),
        }
    })?;
    let program = PathBuf::from(OsStr::from_bytes(plan.program.as_bytes()));
    drop(plan);
    // The supervisor creates files for the command with the command's umask,
    // applied by hand; its own must not interfere.
    process::umask(0);
    let sandbox::Started { pid, listener, channel, root, proxy, forwards } = started;
    let proxy = network.start_proxy(proxy, forwards, &args.net_resolve, enforcement.learns(), sink.clone())?;
    if let (Some(sink), audit::OnFailure::Stop) = (&sink, args.audit_failure) {
        sink.stop_on_failure(pid);
    }
    if let Some(journal) = &journal {
        journal.stop_on_failure(pid);
    }
    // The caller and the one receiving worker hand each call back and
    // forth on one CPU (Linux 6.6): without it every call pays a wake-up
    // on another CPU (docs/performance.md). Older kernels go without.
    if let Err(e) =
        seccomp::set_listener_flags(std::os::fd::AsFd::as_fd(&listener), seccomp::USER_NOTIF_FD_SYNC_WAKE_UP)
    {
        tracing::debug!("no synchronous wake-up on the listener: {e}");
    }
    let supervisor = prepared
        .into_inner()
        .expect("made while the command's process set itself up")
        .and_then(|prepared| prepared.finish(listener, root))
        .map_err(errno("starting the supervisor"))?;
    supervisor.start_asking().map_err(io("starting the approvals hub"))?;
    supervisor.start();
    phase("sandbox started, supervisor running");

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(io("tokio runtime"))?;
    let (status, exec_error) = runtime.block_on(supervise(pid, channel, handled, sink.clone()))?;
    if sink.as_ref().is_some_and(audit::Sink::abandoned) && args.audit.as_deref() == Some(Path::new("-")) {
        // The trail went to stderr and its reader stopped reading: nothing
        // more can be said there without blocking as the trail did; the
        // exit status (125) says it.
        let _ = process::redirect_to_null(libc::STDERR_FILENO);
    }
    explain_failed_start(&supervisor, &program, status, exec_error);
    phase("command exited");
    end_sandbox();
    drop(pids);
    supervisor.quiesce();
    // Questions still open are refused (and recorded) before the trail ends.
    supervisor.stop_asking();
    drop(asking);
    if !args.quiet {
        for line in supervisor.carve_out_summary().into_iter().chain(end_notes(args, &supervisor)) {
            say(&line);
        }
    }
    // The proxy winds down (its runtime, its last records) on its thread
    // while the journal is sealed and the session's directory removed.
    if let Some(proxy) = &proxy {
        proxy.ask_to_stop();
    }
    phase("leftovers killed, pids cgroup removed, proxy asked to stop");
    // Sealed once no worker can change anything more: the command is gone.
    // A journal that cannot be sealed fails the run, after the trail is
    // ended (its session_end then names no journal).
    let (link, unsealed) = match (&journal, &journal_dir) {
        (Some(j), Some(prepared)) => match journal::end(j, prepared, args.quiet) {
            Ok(link) => (Some(link), None),
            Err(e) => (None, Some(e)),
        },
        _ => (None, None),
    };
    drop(parts.caches);
    drop(session);
    phase("session directory removed");
    // Stopped before the trail ends: what it refused is in it.
    net::stop_proxy(proxy);
    if let Some(why) = supervisor.end_trail(status, link) {
        if sink.as_ref().is_some_and(audit::Sink::abandoned) {
            return Err(RunError::TrailStalled(why));
        }
        return Err(RunError::TrailFailed { why, stopped: args.audit_failure == audit::OnFailure::Stop });
    }
    phase("proxy stopped, trail ended");
    if let Some(why) = journal.as_ref().and_then(|j| j.failure()) {
        return Err(RunError::JournalFailed(why));
    }
    if let Some(e) = unsealed {
        return Err(e);
    }
    Ok(status)
}

/// Refuses, before anything is set up, what the flags ask for together
/// but cannot be had together.
fn validate(args: &Config) -> Result<(), RunError> {
    let e = args.enforcement;
    if matches!(args.net, Net::Connect(_)) && !e.backstop() && !e.learns() {
        return Err(RunError::NetNeedsLandlock);
    }
    if let Some(a) = &args.ask {
        a.validate()?;
        ask_allowed(e)?;
    }
    if args.journal.is_some() {
        journal_mode(e)?;
    }
    Ok(())
}

/// `--ask` needs every call it would ask about trapped, and refusals that
/// are enforced.
fn ask_allowed(e: Enforcement) -> Result<(), ask::AskError> {
    if e.learns() {
        return Err(ask::AskError::Mode("--learn", "learning refuses nothing, so there is nothing to ask"));
    }
    if e.fast() {
        return Err(ask::AskError::Mode(
            "--fast (or a policy's mode = \"fast\")",
            "fast mode leaves reads to the kernel, which refuses them without asking",
        ));
    }
    Ok(())
}

/// Whether an undo journal can be kept in mode `e`: only where every change
/// is made by the supervisor (full mode, with or without the backstop).
fn journal_mode(e: Enforcement) -> Result<(), RunError> {
    match e {
        Enforcement::Full | Enforcement::Unbacked => Ok(()),
        Enforcement::Fast => Err(RunError::JournalMode(
            "cannot be kept in fast mode (--fast, or the policy's mode = \"fast\"): fast mode leaves changes \
             (unlink, rename, mkdir, truncate, ...) to the kernel, unseen by the journal",
        )),
        Enforcement::Learn => Err(RunError::JournalMode(
            "cannot be kept while learning (--learn): the command may then change what no writable tree covers, \
             which undo would not put back",
        )),
        Enforcement::Floor => Err(RunError::JournalMode("cannot be kept under the bench's floor")),
    }
}

/// What the session could not have here, said before the command runs: a
/// mount namespace the user did not turn off and the kernel did not give.
fn namespace_note(namespace: &sandbox::namespace::Namespace, turned_off: bool) -> Option<String> {
    match namespace {
        sandbox::namespace::Namespace::Host(why) if !turned_off => Some(format!(
            "no mount namespace of its own ({why}): the package caches are empty private directories, \
             /dev/shm is refused, and no PID namespace bounds the command's processes"
        )),
        _ => None,
    }
}

/// Blocks the signals interpose handles through a signalfd, first of all:
/// threads started later (audit writer, workers) inherit the mask, so none
/// of them can take a SIGCHLD or SIGTERM meant for the signalfd. Returns
/// them, and the original mask, which the command gets back.
fn block_handled_signals() -> Result<(SigSet, SigSet), RunError> {
    let mut handled = SigSet::empty();
    for s in FORWARDED.into_iter().chain([libc::SIGCHLD]) {
        handled.add(nix::sys::signal::Signal::try_from(s).expect("a valid signal"));
    }
    let original = handled.thread_swap_mask(nix::sys::signal::SigmaskHow::SIG_BLOCK).map_err(errno("sigprocmask"))?;
    Ok((handled, original))
}

/// Fails closed: refuses to start without what enforcement needs.
fn require_kernel() -> Result<(), RunError> {
    require(seccomp::action_available(seccomp::RET_USER_NOTIF), "seccomp user notification")?;
    require(
        seccomp::filter_flags_supported(seccomp::FILTER_FLAG_NEW_LISTENER | seccomp::FILTER_FLAG_WAIT_KILLABLE_RECV),
        "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (Linux 5.19)",
    )?;
    let sizes = seccomp::notif_sizes().map_err(errno("SECCOMP_GET_NOTIF_SIZES"))?;
    require(
        usize::from(sizes.seccomp_notif) <= std::mem::size_of::<seccomp::Notif>(),
        "a struct seccomp_notif layout interpose knows",
    )
}

/// The surface of a session and what was set up for it.
struct Parts {
    surface: Surface,
    loaded: surface::LoadedPolicy,
    caches: sandbox::caches::Caches,
    /// Whether the command gets the session's own `HOME`.
    session_home: bool,
    /// What the user is told before the command starts.
    notes: Vec<String>,
}

/// Builds the surface (system, policy, flags) and adds the session's own
/// places: its `TMPDIR`, its `HOME` with the policy's seeds, the private
/// caches and `/dev/shm`.
fn assemble(
    args: &Config,
    session: &SessionDir,
    namespace: &sandbox::namespace::Namespace,
    user: Option<(u32, u32)>,
) -> Result<Parts, RunError> {
    use crate::policy::file::{EntryOutcome, Field, Home};
    let (mut surface, loaded) = args.surface.build_with_policy(crate::policy::file::Effects::Create)?;
    let (policy, resolved) = &loaded;
    surface.add(Rule { path: session.tmp(), mode: Mode::Rw, origin: Origin::TmpDir });
    let session_home = policy.home == Home::Session;
    let mut notes = Vec::new();
    if session_home {
        let seeds: Vec<PathBuf> = resolved
            .outcomes
            .iter()
            .filter(|(e, _)| e.field == Field::HomeSeed)
            .filter_map(|(_, o)| match o {
                EntryOutcome::Added(p) => Some(p.clone()),
                _ => None,
            })
            .collect();
        let real_home = std::env::var_os("HOME").map(PathBuf::from);
        notes = session.make_home(real_home.as_deref(), &seeds)?;
        surface.add(Rule { path: session.home(), mode: Mode::Rw, origin: Origin::SessionHome });
    }
    // Made before the session is given to --user, so that it is given too:
    // the caches moved into it are reached through it.
    let caches_dir = session.caches()?;
    if let Some((uid, gid)) = user {
        session.chown(uid, gid)?;
    }
    let caches = sandbox::caches::set_up(&mut surface, &caches_dir, namespace, user);
    match sandbox::namespace::private_shm(namespace) {
        Ok(()) => surface.add(Rule {
            path: "/dev/shm".into(),
            mode: Mode::Rw,
            origin: Origin::System("private shared memory"),
        }),
        // Without a namespace the note above says so already.
        Err(e) if namespace.can_mount() => {
            notes.push(format!("no private /dev/shm ({e}): POSIX shared memory is refused"))
        }
        Err(_) => {}
    }
    Ok(Parts { surface, loaded, caches, session_home, notes })
}

/// The Landlock backstop (none with `--no-landlock`, `--learn` or the
/// bench's floor) and which calls the filter traps with it.
fn backstop(
    args: &Config,
    enforcement: Enforcement,
    parts: &Parts,
    (namespace, network): (&sandbox::namespace::Namespace, &net::NetSetup),
) -> Result<(Option<sandbox::landlock::Backstop>, crate::syscalls::Trapping), RunError> {
    use crate::syscalls::Trapping;
    let landlock = if !enforcement.backstop() {
        if enforcement == Enforcement::Unbacked {
            eprintln!("interpose: warning: --no-landlock: running without the Landlock backstop; calls answered with CONTINUE can be raced");
        }
        None
    } else {
        // The command has a mount namespace of its own (with its PID
        // namespace, or --isolate's): its carve-outs are masked there.
        let layout = match args.isolate {
            true => sandbox::landlock::isolated(&parts.surface),
            false => sandbox::landlock::layout(&parts.surface, namespace.can_mount()),
        };
        for missing in &layout.missing {
            tracing::debug!("carve-out {} does not exist: creating calls are emulated", missing.display());
        }
        for (held, _, _) in layout.grants.iter().filter(|(_, g, _)| matches!(g, sandbox::landlock::Grant::NoMake(_))) {
            tracing::debug!(
                "{} holds a carve-out that does not exist: names made in it are the supervisor's, in its subdirectories the kernel's",
                held.display()
            );
        }
        let backstop = sandbox::landlock::build_with(layout, network.landlock_ports.as_deref())?;
        if !backstop.scoped {
            eprintln!(
                "interpose: warning: Landlock ABI {} has no scopes; the command can signal processes outside the sandbox",
                backstop.abi
            );
        }
        Some(backstop)
    };
    let fast = enforcement.fast();
    let mut landlock = landlock;
    let Some(b) = &mut landlock else {
        return Ok((None, Trapping::All));
    };
    // With a procfs of its own, the child grants it whole (its carve-outs
    // masked): an open continued on the path as written that a symlink
    // leads into /proc reads it as the surface allows, and fast mode may
    // leave read-only opens to Landlock where it also grants everything
    // the surface lets be read.
    let own_proc = match () {
        _ if !namespace.can_mount() => Err(ReadsTrapped::NoPidNamespace),
        _ if args.isolate && !nix::unistd::geteuid().is_root() => Err(ReadsTrapped::Isolated),
        _ => sandbox::landlock::own_proc(&parts.surface, b.abi).map_err(ReadsTrapped::OwnProc),
    };
    b.own_proc = own_proc.as_ref().ok().cloned();
    let exact = b.layout.names_exact;
    let reads = match own_proc {
        Ok(_) if b.layout.reads_exact => Ok(()),
        Ok(_) => Err(ReadsTrapped::ReadsInexact(b.layout.reads_inexact.clone().unwrap_or_default())),
        Err(why) => Err(why),
    };
    // In a root holding only the surface, with a procfs of the command's
    // own, a link the kernel reads is one the surface lets be read, unless
    // a carve-out is a link itself.
    let links = fast
        && args.isolate
        && reads.is_ok()
        && match sandbox::landlock::denied_link(&parts.surface) {
            Some(link) => {
                eprintln!(
                    "interpose: fast mode: link targets stay trapped: the carve-out {} is a symlink",
                    link.display()
                );
                false
            }
            None => true,
        };
    let trapping = match (fast, reads) {
        (false, _) => Trapping::All,
        (true, Ok(())) => Trapping::Fast { exact, reads: true, links },
        (true, Err(why)) => {
            eprintln!("interpose: fast mode: opens stay trapped: {why}");
            Trapping::Fast { exact, reads: false, links: false }
        }
    };
    Ok((landlock, trapping))
}

/// Why fast mode leaves no read-only open to Landlock.
#[derive(Debug, thiserror::Error)]
enum ReadsTrapped {
    #[error("the command has no PID namespace of its own (run as root, or with user namespaces)")]
    NoPidNamespace,
    #[error("--isolate without root binds /proc into its root rather than mounting a procfs of its own there")]
    Isolated,
    #[error(transparent)]
    OwnProc(sandbox::landlock::OwnProcRefusal),
    #[error("Landlock cannot grant everything this surface lets be read: {0}")]
    ReadsInexact(String),
}

/// The command's environment: the policy's rules applied to interpose's
/// own, then the session's `TMPDIR`, caches and `HOME`. Also returns what
/// was dropped, for the session record.
fn environment(
    args: &Config,
    parts: &Parts,
    session: &SessionDir,
    network: &net::NetSetup,
) -> (Vec<(OsString, OsString)>, Vec<crate::policy::env::Dropped>) {
    let mut rules = parts.loaded.0.env.clone();
    rules.keep.extend(args.env_keep.iter().cloned());
    let (mut env, dropped) = rules.apply(std::env::vars_os().filter(|(k, _)| k != "TMPDIR"));
    env.push(("TMPDIR".into(), session.tmp().into_os_string()));
    env.retain(|(k, _)| !parts.caches.env.iter().any(|(name, _)| name == k));
    env.extend(parts.caches.env.iter().cloned());
    if parts.session_home {
        env.retain(|(k, _)| k != "HOME");
        env.push(("HOME".into(), session.home().into_os_string()));
    }
    // The proxy's variables, over any the caller had (a proxy of the host's
    // is not reachable from the sandbox).
    let proxy = network.environment();
    // A credential taken by reference never reaches the command, whatever
    // keeps it.
    let withheld = network.withheld();
    env.retain(|(k, _)| {
        !proxy.iter().any(|(name, _)| k.as_bytes() == name.as_bytes())
            && !withheld.iter().any(|name| k.as_bytes() == name.as_bytes())
    });
    env.extend(proxy.into_iter().map(|(k, v)| (k.into(), v.into())));
    (env, dropped)
}

/// As root, or with interpose's own user namespace, the command gets an IPC
/// namespace of its own; otherwise the filter refuses System V IPC and
/// POSIX message queues.
fn own_ipc(namespace: &sandbox::namespace::Namespace) -> bool {
    nix::unistd::geteuid().is_root() || namespace.unprivileged()
}

/// What the child does between fork and exec.
#[allow(clippy::too_many_arguments)]
fn plan(
    args: &Config,
    surface: &Surface,
    (namespace, network): (&sandbox::namespace::Namespace, &net::NetSetup),
    user: Option<(u32, u32)>,
    trapping: crate::syscalls::Trapping,
    (program, env): (PathBuf, &[(OsString, OsString)]),
    net_ahead: Option<net::NetAhead>,
    landlock: Option<sandbox::landlock::Backstop>,
    staging: Option<&Path>,
) -> Result<Plan, RunError> {
    let own_ipc = own_ipc(namespace);
    let options = filter::Options { trapping, own_ipc };
    let filter = filter::program_for(options)?;
    Ok(Plan {
        program: cstring(program.into_os_string().into_vec())?,
        argv: args.command.iter().map(|a| cstring(a.as_bytes())).collect::<Result<_, _>>()?,
        env: env.iter().map(|(k, v)| cstring([k.as_bytes(), b"=", v.as_bytes()].concat())).collect::<Result<_, _>>()?,
        filter,
        own_proc: landlock.as_ref().and_then(|b| b.own_proc.as_ref()).map(|o| o.access),
        masks: landlock.as_ref().map(|b| sandbox::MaskPlan::all(&b.layout)).unwrap_or_default(),
        // In a user namespace of its own interpose holds capabilities the
        // user does not have outside it: the command keeps none.
        capabilities: if namespace.unprivileged() { 0 } else { sandbox::kept_capabilities() },
        user,
        net_namespace: net::NetAhead::take(net_ahead, network),
        proxy_port: network.child_proxy_port(),
        forwards: network.child_forwards(),
        new_ipc: own_ipc,
        isolate: match staging {
            Some(dir) => {
                let mut plan = sandbox::isolate::plan(
                    surface,
                    &landlock.as_ref().map_or_else(|| sandbox::landlock::isolated(surface), |b| b.layout.clone()),
                    dir,
                    &std::env::current_dir().map_err(io("the current directory"))?,
                );
                // The rebuilt directories' listing is granted only where
                // fast mode leaves reads to Landlock: a right on a directory
                // reaches every mount beneath it, a pattern's base bound
                // whole without a rule of its own too, so elsewhere the
                // supervisor lists them.
                if !trapping.leaves_reads(crate::syscalls::Op::Open) {
                    plan.rebuilt.clear();
                }
                Some(plan)
            }
            None => None,
        },
        cwd: match staging {
            Some(_) => None,
            None => std::env::current_dir().ok().map(|d| cstring(d.into_os_string().into_vec())).transpose()?,
        },
        landlock: landlock.map(|b| b.ruleset),
        // Where the session has a mount namespace, the command gets a PID
        // namespace too: every process of it dies with interpose.
        pid_namespace: namespace.can_mount(),
        command_shares_memory: matches!(namespace, sandbox::namespace::Namespace::Mount)
            && caps::has_cap(None, caps::CapSet::Permitted, caps::Capability::CAP_SYS_PTRACE).unwrap_or(false),
        pid_max: task_limit_by_pid_max(args, namespace).then(|| (DEFAULT_MAX_PROCS + 1).to_string().into_bytes()),
    })
}

/// Whether the default task limit is the PID namespace's own `pid_max`
/// rather than a pids cgroup: on cgroup v1, moving the child into a cgroup
/// waits for an RCU grace period (10-14 ms of every start-up on the test
/// machine), while the namespace's init sets its `pid_max` at no cost. An
/// explicit `--max-procs` (which may be below `pid_max`'s floor of 301)
/// keeps the cgroup.
fn task_limit_by_pid_max(args: &Config, namespace: &sandbox::namespace::Namespace) -> bool {
    args.max_procs.is_none() && namespace.can_mount() && sandbox::features::pid_max_per_namespace()
}

/// The pids cgroup that bounds the command's tasks: required with
/// `--max-procs`, best effort otherwise (unless `pid_max` bounds them).
fn pids_cgroup(args: &Config, plan: &Plan) -> Result<Option<sandbox::pids::PidsCgroup>, RunError> {
    if plan.pid_max.is_some() {
        return Ok(None);
    }
    match sandbox::pids::PidsCgroup::create(args.max_procs.unwrap_or(DEFAULT_MAX_PROCS)) {
        Ok(cgroup) => Ok(Some(cgroup)),
        Err(e) if args.max_procs.is_some() => Err(RunError::MaxProcs(e)),
        Err(e) => {
            if !args.quiet {
                say(&format!("no task limit for the command: no pids cgroup could be made ({e})"));
            }
            Ok(None)
        }
    }
}

/// One line on stderr after the command has run: the terminal may be gone
/// by then (a closed tmux pane, a hung-up pty), and a line that cannot be
/// written must not stop the trail from being ended.
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "interpose: {line}");
}

/// What a session with refusals ends with: how many, and what to run next;
/// a hint when writes were refused and nothing was made writable.
fn end_notes(args: &Config, supervisor: &Supervisor) -> Vec<String> {
    let next = match args.audit.as_ref().map(|a| a.to_string_lossy()) {
        None => "to see them, run again with --audit FILE, then: interpose report FILE".to_string(),
        Some(a) if a == "-" || a.starts_with("unix:") => "the trail has them".to_string(),
        Some(a) => format!("see them with: interpose report {}", crate::forensics::shell_quote(&a)),
    };
    let mut notes: Vec<String> = supervisor.refusal_summary(&next).into_iter().collect();
    if supervisor.refused_writes() && args.surface.rw.is_empty() && args.surface.policy.is_none() {
        notes.push("nothing was writable in this run: --rw DIR makes a directory (your project, say) writable".into());
    }
    notes
}

/// A command that could not start, or one whose own execs were refused
/// (126: cannot execute, 127: not found), is told why in terms of the
/// surface, not only the errno.
fn explain_failed_start(supervisor: &Supervisor, program: &Path, status: i32, exec_error: Option<Errno>) {
    let lines = match exec_error {
        Some(e) => explain::start_failure(program, e, &supervisor.exec_refusals(), supervisor.surface()),
        None if matches!(status, 126 | 127) => supervisor.exec_refusals().iter().map(explain::refusal).collect(),
        None => Vec::new(),
    };
    for line in lines {
        say(&line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_namespace_not_given_is_said_unless_turned_off() {
        use sandbox::namespace::Namespace;
        let host = Namespace::Host("unshare(CLONE_NEWNS): EPERM".into());
        assert!(namespace_note(&host, false).is_some_and(|n| n.contains("EPERM") && n.contains("/dev/shm")));
        assert_eq!(namespace_note(&host, true), None);
        assert_eq!(namespace_note(&Namespace::Mount, false), None);
    }

    #[test]
    fn programs_are_found_like_execvp() {
        assert_eq!(find_program(OsStr::new("sh"), Some(OsStr::new("/nonexistent:/bin"))), Some("/bin/sh".into()));
        assert_eq!(find_program(OsStr::new("./x"), None), Some("./x".into()));
        assert_eq!(find_program(OsStr::new("no-such-program-here"), Some(OsStr::new("/bin"))), None);
    }
}
