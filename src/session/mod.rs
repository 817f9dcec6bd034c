//! A session: build the surface, start the sandbox, supervise it, record
//! it, and end with the command's status. `interpose run` parses its flags
//! into a [`Config`] and calls [`run`]; the library and other entry points
//! start a session the same way.

pub mod surface;

use crate::audit::{self, Sink};
use crate::policy::{Mode, Origin, Rule, Surface};
use crate::sandbox::{self, filter, Plan};
use crate::supervisor::{self, Supervisor};
use crate::sys::{process, seccomp, Errno};
use std::ffi::{CString, OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// What network the command gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Net {
    /// The host's network.
    Host,
    /// Only loopback, in a namespace of its own.
    None,
    /// TCP connects only to these ports.
    Connect(Vec<u16>),
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
    /// Learning mode: nothing enforced, would-be refusals recorded.
    pub learn: bool,
    /// Credential variables passed through anyway.
    pub env_keep: Vec<String>,
    /// Keep the session directory after the run.
    pub keep_session: bool,
    /// An isolated root holding only the surface.
    pub isolate: bool,
    /// Fast mode: leave to Landlock what it decides exactly.
    pub fast: bool,
    /// The network the command gets.
    pub net: Net,
    /// `interpose bench`'s notification floor.
    pub bench_floor: bool,
    /// `SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP` on the listener.
    pub sync_wake_up: bool,
    /// Stay in the host's mount namespace.
    pub no_namespace: bool,
    /// Run without the Landlock backstop.
    pub no_landlock: bool,
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
    /// Building the Landlock ruleset failed.
    #[error(transparent)]
    Landlock(#[from] sandbox::landlock::LandlockError),
    /// Starting the sandbox failed.
    #[error(transparent)]
    Spawn(#[from] sandbox::SpawnError),
    /// Another system call failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: std::io::Error,
    },
    /// `--max-procs` cannot be enforced here.
    #[error("--max-procs: {0}")]
    MaxProcs(sandbox::pids::PidsError),
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
    /// `--audit FILE` names something that exists.
    #[error("--audit {}: exists; a trail is never overwritten or appended to: name a new file", .0.display())]
    TrailExists(PathBuf),
    /// The command contains a NUL byte.
    #[error("the command line or environment contains a NUL byte")]
    Nul,
}

pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> RunError {
    let what = what.into();
    move |source| RunError::Io { what, source }
}

pub(crate) fn errno(what: &'static str) -> impl FnOnce(Errno) -> RunError {
    move |e| RunError::Io { what: what.into(), source: std::io::Error::from(e) }
}

/// The task limit when `--max-procs` is not given: far above what a build
/// or an agent needs, far below what exhausts the host.
const DEFAULT_MAX_PROCS: u32 = 4096;

/// Signals that reach interpose and are passed on to the command.
const FORWARDED: [i32; 6] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT, libc::SIGUSR1, libc::SIGUSR2];

/// The session directory: the command's private `TMPDIR` (`tmp/`) and, with
/// `home = "session"`, its `HOME` (`home/`). Removed when dropped, unless
/// kept; one left behind by a killed interpose is removed by the next run.
struct SessionDir {
    root: PathBuf,
    keep: bool,
}

impl SessionDir {
    fn create(keep: bool) -> Result<SessionDir, RunError> {
        let base = std::env::temp_dir();
        remove_stale(&base);
        for attempt in 0..16u32 {
            let nonce = audit::now_ns() ^ (u64::from(attempt) << 48);
            let path = base.join(format!("interpose-{}-{nonce:x}", std::process::id()));
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => {
                    let root = path.canonicalize().map_err(io("the session directory"))?;
                    let session = SessionDir { root, keep };
                    std::fs::DirBuilder::new().mode(0o700).create(session.tmp()).map_err(io("the private TMPDIR"))?;
                    return Ok(session);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io(format!("creating a session directory in {}", base.display()))(e)),
            }
        }
        Err(RunError::Io {
            what: "creating a session directory".into(),
            source: std::io::ErrorKind::AlreadyExists.into(),
        })
    }

    fn tmp(&self) -> PathBuf {
        self.root.join("tmp")
    }

    /// Where the private caches keep their layers: inside the session, out
    /// of the command's surface.
    fn caches(&self) -> Result<PathBuf, RunError> {
        let dir = self.root.join("caches");
        std::fs::DirBuilder::new().mode(0o700).create(&dir).map_err(io("the session's cache directory"))?;
        Ok(dir)
    }

    fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    /// Makes the session home and copies `seeds` (files of the real home)
    /// into it at the same relative place. Returns what could not be copied.
    fn make_home(&self, real_home: Option<&Path>, seeds: &[PathBuf]) -> Result<Vec<String>, RunError> {
        let home = self.home();
        std::fs::DirBuilder::new().mode(0o700).create(&home).map_err(io("the session HOME"))?;
        let mut skipped = Vec::new();
        for seed in seeds {
            let relative = real_home.and_then(|h| seed.strip_prefix(h).ok()).map(Path::to_path_buf);
            let Some(relative) = relative.or_else(|| seed.file_name().map(PathBuf::from)) else { continue };
            let target = home.join(&relative);
            let copied = target
                .parent()
                .map_or(Ok(()), |p| std::fs::DirBuilder::new().recursive(true).mode(0o700).create(p))
                .and_then(|()| match seed.metadata() {
                    Ok(m) if m.is_file() => std::fs::copy(seed, &target).map(drop),
                    Ok(_) => Err(std::io::Error::other("not a regular file")),
                    Err(e) => Err(e),
                });
            if let Err(e) = copied {
                skipped.push(format!("home_seed {}: {e}", seed.display()));
            }
        }
        Ok(skipped)
    }

    fn chown(&self, uid: u32, gid: u32) -> Result<(), RunError> {
        fn walk(p: &Path, uid: u32, gid: u32) -> std::io::Result<()> {
            std::os::unix::fs::lchown(p, Some(uid), Some(gid))?;
            if p.symlink_metadata()?.is_dir() {
                for e in std::fs::read_dir(p)? {
                    walk(&e?.path(), uid, gid)?;
                }
            }
            Ok(())
        }
        walk(&self.root, uid, gid).map_err(io("giving the session directory to --user"))
    }
}

use std::os::unix::fs::DirBuilderExt;

/// Removes the private temporary directories of earlier runs that were
/// killed before they could clean up: `interpose-<pid>-<nonce>` owned by us
/// whose pid no longer runs interpose.
fn remove_stale(base: &Path) {
    use std::os::unix::fs::MetadataExt;
    let uid = nix::unistd::geteuid().as_raw();
    for entry in sandbox::left_by_dead_runs(base) {
        // symlink_metadata: a link planted under that name is not followed,
        // and remove_dir_all removes only the link.
        let ours = entry.path().symlink_metadata().is_ok_and(|m| m.is_dir() && m.uid() == uid);
        if ours {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The empty directory the isolated root was mounted on (in the command's
/// namespace only), removed at the end.
struct StagingDir(PathBuf);

impl std::ops::Deref for StagingDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for StagingDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

impl Drop for SessionDir {
    fn drop(&mut self) {
        if self.keep {
            eprintln!("interpose: session directory kept: {}", self.root.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }
}

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
fn find_program(program: &OsStr, path: Option<&OsStr>) -> Option<PathBuf> {
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
    // Block the signals we handle through a signalfd first of all: threads
    // started later (audit writer, workers) inherit the mask, so none of them
    // can take a SIGCHLD or SIGTERM meant for the signalfd. The child
    // restores the original mask.
    let mut handled = nix::sys::signal::SigSet::empty();
    for s in FORWARDED.into_iter().chain([libc::SIGCHLD]) {
        handled.add(nix::sys::signal::Signal::try_from(s).expect("a valid signal"));
    }
    let original = handled.thread_swap_mask(nix::sys::signal::SigmaskHow::SIG_BLOCK).map_err(errno("sigprocmask"))?;
    // While interpose is single-threaded: the session's own mount namespace
    // (with a user namespace when not root), which the command inherits.
    let namespace = sandbox::namespace::enter(!args.no_namespace);

    // Fail closed: refuse to start without what enforcement needs.
    require(seccomp::action_available(seccomp::RET_USER_NOTIF), "seccomp user notification")?;
    require(
        seccomp::filter_flags_supported(seccomp::FILTER_FLAG_NEW_LISTENER | seccomp::FILTER_FLAG_WAIT_KILLABLE_RECV),
        "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (Linux 5.19)",
    )?;
    let sizes = seccomp::notif_sizes().map_err(errno("SECCOMP_GET_NOTIF_SIZES"))?;
    require(
        usize::from(sizes.seccomp_notif) <= std::mem::size_of::<seccomp::Notif>(),
        "a struct seccomp_notif layout interpose knows",
    )?;

    let user = args.user.as_deref().map(parse_user).transpose()?;
    let t0 = std::time::Instant::now();
    let phase = |what: &str| tracing::debug!("start-up: {what} at {} us", t0.elapsed().as_micros());
    let session = SessionDir::create(args.keep_session)?;
    phase("session directory");
    let (mut surface, loaded) = args.surface.build_with_policy(crate::policy::file::Effects::Create)?;
    let (policy, resolved) = &loaded;
    phase("surface");
    surface.add(Rule { path: session.tmp(), mode: Mode::Rw, origin: Origin::TmpDir });
    let session_home = policy.home == crate::policy::file::Home::Session;
    let mut notes = Vec::new();
    if session_home {
        let seeds: Vec<PathBuf> = resolved
            .outcomes
            .iter()
            .filter(|(e, _)| e.field == crate::policy::file::Field::HomeSeed)
            .filter_map(|(_, o)| match o {
                crate::policy::file::EntryOutcome::Added(p) => Some(p.clone()),
                _ => None,
            })
            .collect();
        let real_home = std::env::var_os("HOME").map(PathBuf::from);
        notes = session.make_home(real_home.as_deref(), &seeds)?;
        surface.add(Rule { path: session.home(), mode: Mode::Rw, origin: Origin::SessionHome });
    }
    if let Some((uid, gid)) = user {
        session.chown(uid, gid)?;
    }
    let caches = sandbox::caches::set_up(&mut surface, &session.caches()?, &namespace, user);
    match sandbox::namespace::private_shm(&namespace) {
        Ok(()) => surface.add(Rule {
            path: "/dev/shm".into(),
            mode: Mode::Rw,
            origin: Origin::System("private shared memory"),
        }),
        Err(e) => tracing::debug!("no private /dev/shm: {e}"),
    }
    phase("caches");

    let trail = open_trail(args, &mut surface)?;
    phase("audit trail");
    if args.learn {
        eprintln!("interpose: learning mode: nothing is enforced; what would be denied is recorded as would_deny");
    }
    phase("session home");
    let mut continuable = None;
    let landlock = if args.no_landlock || args.learn || args.bench_floor {
        if !args.learn && !args.bench_floor {
            eprintln!("interpose: warning: --no-landlock: running without the Landlock backstop; calls answered with CONTINUE can be raced");
        }
        None
    } else {
        let ports = match &args.net {
            Net::Connect(ports) => Some(ports.as_slice()),
            _ => None,
        };
        let backstop = sandbox::landlock::build_with_network(&surface, ports)?;
        if !backstop.scoped {
            eprintln!(
                "interpose: warning: Landlock ABI {} has no scopes; the command can signal processes outside the sandbox",
                backstop.abi
            );
        }
        Some(backstop)
    };

    if matches!(args.net, Net::Connect(_)) && landlock.is_none() && !args.learn {
        return Err(RunError::NetNeedsLandlock);
    }
    let fast = args.fast || policy.mode == Some(crate::policy::file::RunMode::Fast);
    let trapping = match (&landlock, fast) {
        (_, false) => crate::syscalls::Trapping::All,
        (None, true) => return Err(RunError::FastNeedsLandlock),
        (Some(b), true) => {
            crate::syscalls::Trapping::Fast { exact: sandbox::landlock::exact_rules(&surface, &b.rules).is_some() }
        }
    };
    // The isolated root is built on an empty directory next to the session
    // directory (inside it, the session's own bind would contain it).
    let staging = if args.isolate {
        let mut dir = session.root.clone().into_os_string();
        dir.push("-root");
        let dir = PathBuf::from(dir);
        std::fs::DirBuilder::new().mode(0o700).create(&dir).map_err(io("the isolated root's mount point"))?;
        Some(StagingDir(dir))
    } else {
        None
    };
    let mut rules = policy.env.clone();
    rules.keep.extend(args.env_keep.iter().cloned());
    let (mut env, dropped) = rules.apply(std::env::vars_os().filter(|(k, _)| k != "TMPDIR"));
    env.push(("TMPDIR".into(), session.tmp().into_os_string()));
    env.retain(|(k, _)| !caches.env.iter().any(|(name, _)| name == k));
    env.extend(caches.env.iter().cloned());
    if session_home {
        env.retain(|(k, _)| k != "HOME");
        env.push(("HOME".into(), session.home().into_os_string()));
    }
    for note in &notes {
        eprintln!("interpose: {note}");
    }
    // As root, or with interpose's own user namespace, the command gets an
    // IPC namespace of its own; otherwise the filter refuses System V IPC
    // and POSIX message queues.
    let own_ipc = nix::unistd::geteuid().is_root() || namespace.unprivileged();
    let path_var = env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v.clone());
    let program = &args.command[0];
    let Some(resolved) = find_program(program, path_var.as_deref()) else {
        eprintln!("interpose: {}: command not found", program.to_string_lossy());
        return Ok(127);
    };

    let plan = Plan {
        program: cstring(resolved.into_os_string().into_vec())?,
        argv: args.command.iter().map(|a| cstring(a.as_bytes())).collect::<Result<_, _>>()?,
        env: env.iter().map(|(k, v)| cstring([k.as_bytes(), b"=", v.as_bytes()].concat())).collect::<Result<_, _>>()?,
        filter: filter::program_for(filter::Options { trapping, own_ipc })?,
        landlock: landlock.map(|b| {
            continuable = sandbox::landlock::exact_rules(&surface, &b.rules);
            b.ruleset
        }),
        // In a user namespace of its own interpose holds capabilities the
        // user does not have outside it: the command keeps none.
        capabilities: if namespace.unprivileged() { 0 } else { sandbox::kept_capabilities() },
        user,
        no_network: args.net == Net::None,
        new_ipc: own_ipc,
        isolate: match &staging {
            Some(dir) => Some(sandbox::isolate::plan(
                &surface,
                dir,
                &std::env::current_dir().map_err(io("the current directory"))?,
            )),
            None => None,
        },
        // Where the session has a mount namespace, the command gets a PID
        // namespace too: every process of it dies with interpose.
        pid_namespace: namespace.can_mount(),
    };

    phase("landlock ruleset, environment, filter");
    let sink = trail.map(|(out, key)| Sink::start(out, Some(key)));
    if let Some(sink) = &sink {
        let record = session_start(args, &surface, &loaded, &dropped, mode_record(trapping, args.learn), &caches);
        sink.send(with_namespace(record, &namespace));
    }

    process::set_child_subreaper().map_err(errno("PR_SET_CHILD_SUBREAPER"))?;

    phase("audit sink");
    let pids = match sandbox::pids::PidsCgroup::create(args.max_procs.unwrap_or(DEFAULT_MAX_PROCS)) {
        Ok(cgroup) => Some(cgroup),
        Err(e) if args.max_procs.is_some() => return Err(RunError::MaxProcs(e)),
        Err(e) => {
            tracing::debug!("no default task limit: {e}");
            None
        }
    };
    phase("pids cgroup");
    let started = sandbox::start(&plan, original.as_ref(), |pid| match &pids {
        Some(cgroup) => cgroup.add(pid).map_err(|e| sandbox::SpawnError::Parent {
            what: "moving the command into its pids cgroup",
            errno: Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)),
        }),
        None => Ok(()),
    })?;
    let plan_program = plan.program.clone();
    drop(plan);
    // The supervisor creates files for the command with the command's umask,
    // applied by hand; its own must not interfere.
    process::umask(0);
    // SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP is left off: emulated opens, most of
    // the traffic, complete through ADDFD with a plain wake-up anyway, and on
    // the 2-vCPU test machine an allowed openat+close measured ~40 us with it
    // against ~32 us without (tests/attacks-style C loop, 4 alternating runs).
    // (SECCOMP_IOCTL_NOTIF_SET_FLAGS, 0x40082104, takes the flag word as the
    // ioctl argument itself, not through a pointer.)
    let sandbox::Started { pid, listener, channel, root } = started;
    if let (Some(sink), audit::OnFailure::Stop) = (&sink, args.audit_failure) {
        sink.stop_on_failure(pid);
    }
    if args.sync_wake_up {
        seccomp::set_listener_flags(std::os::fd::AsFd::as_fd(&listener), seccomp::USER_NOTIF_FD_SYNC_WAKE_UP)
            .map_err(errno("SECCOMP_IOCTL_NOTIF_SET_FLAGS"))?;
    }
    let supervisor = Supervisor::new(
        listener,
        supervisor::Config {
            surface,
            audit: sink.clone().map(|s| (s, args.audit_level)),
            set_groups: !namespace.unprivileged(),
            learn: args.learn,
            floor: args.bench_floor,
            landlock_exact: continuable.unwrap_or_default(),
            tcp_ports: match &args.net {
                Net::Connect(ports) => Some(ports.clone()),
                _ => None,
            },
            isolated: args.isolate,
            command_root: root,
        },
    )
    .map_err(errno("starting the supervisor"))?;
    supervisor.start(2);
    phase("sandbox started, supervisor running");

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(io("tokio runtime"))?;
    let (status, exec_error) = runtime.block_on(supervise(pid, channel, handled))?;
    // A command that could not start, or one whose own execs were refused
    // (126: cannot execute, 127: not found), is told why in terms of the
    // surface, not only the errno.
    let lines = match exec_error {
        Some(e) => sandbox::explain::start_failure(
            Path::new(OsStr::from_bytes(plan_program.as_bytes())),
            e,
            &supervisor.exec_refusals(),
            supervisor.surface(),
        ),
        None if matches!(status, 126 | 127) => {
            supervisor.exec_refusals().iter().map(sandbox::explain::refusal).collect()
        }
        None => Vec::new(),
    };
    for line in lines {
        eprintln!("interpose: {line}");
    }

    phase("command exited");
    end_sandbox();
    phase("leftovers killed");
    drop(pids);
    phase("pids cgroup removed");
    supervisor.quiesce();
    if let Some(sink) = &sink {
        use std::sync::atomic::Ordering::Relaxed;
        sink.send(audit::Record::SessionEnd(audit::SessionEnd {
            exit_status: status,
            allowed: supervisor.stats.allowed.load(Relaxed),
            denied: supervisor.stats.denied.load(Relaxed),
            would_deny: supervisor.stats.would_deny.load(Relaxed),
            dropped_allow_records: sink.dropped(),
            time_ns: audit::now_ns(),
        }));
        sink.flush();
        if let Some(why) = sink.failure() {
            return Err(RunError::TrailFailed { why, stopped: args.audit_failure == audit::OnFailure::Stop });
        }
    }
    drop(caches);
    drop(session);
    phase("session directory removed");
    Ok(status)
}

/// Opens where `--audit` writes, and the key that anchors it; a trail file
/// and the key are carved out of the surface wherever it reaches them, so
/// the command can neither read, replace nor remove them.
fn open_trail(args: &Config, surface: &mut Surface) -> Result<Option<(audit::Output, audit::TrailKey)>, RunError> {
    let Some(p) = &args.audit else { return Ok(None) };
    let key_path = match args.audit_key.clone().or_else(audit::key::default_path) {
        Some(k) => k,
        None => {
            let (path, err) = ("$HOME/.local/state/interpose/audit.key".into(), std::io::Error::other("HOME is unset"));
            return Err(RunError::TrailKey { path, err });
        }
    };
    let key =
        audit::TrailKey::load_or_create(&key_path).map_err(|err| RunError::TrailKey { path: key_path.clone(), err })?;
    let mut carve = |path: &Path, what: &'static str| {
        if let Ok(canonical) = std::fs::canonicalize(path) {
            surface.add(Rule { path: canonical, mode: Mode::Deny, origin: Origin::Trail(what) });
        }
    };
    carve(&key_path, "the audit trail's key");
    let out = if p.as_os_str() == "-" {
        audit::Output::Stream(Box::new(std::io::stderr()))
    } else if let Some(socket) = p.as_os_str().as_bytes().strip_prefix(b"unix:") {
        let socket = Path::new(OsStr::from_bytes(socket));
        let stream = std::os::unix::net::UnixStream::connect(socket)
            .map_err(io(format!("--audit: connecting to {}", socket.display())))?;
        audit::Output::Stream(Box::new(stream))
    } else {
        // A trail is never destroyed: an existing file (or a symlink
        // planted in its place) is refused, never truncated or followed.
        // A device or a FIFO (/dev/null, a pipe to a collector) holds no
        // trail to lose.
        use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
        let mut open = std::fs::OpenOptions::new();
        // Readable too: a record cut short by a failed write is found and
        // removed from the end.
        open.read(true).write(true).mode(0o600).custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
        let f = match open.clone().create_new(true).open(p) {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let stream = std::fs::symlink_metadata(p)
                    .is_ok_and(|m| m.file_type().is_char_device() || m.file_type().is_fifo());
                if !stream {
                    return Err(RunError::TrailExists(p.clone()));
                }
                open.open(p)
            }
            other => other,
        }
        .map_err(io(format!("--audit {}", p.display())))?;
        if f.metadata().is_ok_and(|m| m.is_file()) {
            carve(p, "the audit trail");
        }
        audit::Output::File(f)
    };
    Ok(Some((out, key)))
}

/// Adds to the session record which namespaces the session got: the mount
/// namespace (or why not) and whether the command has a PID namespace.
fn with_namespace(mut record: audit::Record, namespace: &sandbox::namespace::Namespace) -> audit::Record {
    if let audit::Record::SessionStart(start) = &mut record {
        let detail = namespace.to_string();
        start.features.insert("session_namespace".into(), audit::Feature { present: namespace.can_mount(), detail });
        let detail = if namespace.can_mount() {
            "the command runs under an init of its own, with its own /proc; every process dies with interpose".into()
        } else {
            "none without a mount namespace: processes the command leaves behind are killed when it exits, not if interpose is killed".into()
        };
        start.features.insert("pid_namespace".into(), audit::Feature { present: namespace.can_mount(), detail });
    }
    record
}

fn session_start(
    args: &Config,
    surface: &Surface,
    (policy, resolved): &surface::LoadedPolicy,
    dropped: &[crate::policy::env::Dropped],
    mode: audit::ModeRecord,
    caches: &sandbox::caches::Caches,
) -> audit::Record {
    use sha2::Digest;
    let features = crate::sandbox::features::probe()
        .into_iter()
        .map(|f| (f.name.to_string(), audit::Feature { present: f.present, detail: f.detail }))
        .collect();
    let policy = audit::PolicyRecord {
        file: args
            .surface
            .policy
            .as_ref()
            .map(|f| std::fs::canonicalize(f).unwrap_or_else(|_| f.clone()).display().to_string()),
        sources: policy
            .sources
            .iter()
            .map(|(name, text)| audit::PolicySource {
                name: name.clone(),
                sha256: sha2::Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect(),
            })
            .collect(),
        cwd: resolved.cwd.to_string_lossy().into_owned(),
        skipped: resolved
            .outcomes
            .iter()
            .filter_map(|(e, o)| match o {
                crate::policy::file::EntryOutcome::Skipped(why) => Some(audit::SkippedEntry {
                    entry: e.text.clone(),
                    field: e.field.key().into(),
                    origin: e.origin.to_string(),
                    why: why.clone(),
                }),
                _ => None,
            })
            .collect(),
        home: policy.home.name().into(),
    };
    audit::Record::SessionStart(Box::new(audit::SessionStart {
        schema: audit::SCHEMA,
        version: env!("CARGO_PKG_VERSION").into(),
        command: args.command.iter().map(|a| audit::Bytes(a.as_bytes().to_vec())).collect(),
        surface: surface
            .effective_rules()
            .map(|(_, r)| {
                audit::SurfaceEntry(r.path.to_string_lossy().into(), r.mode.name().into(), r.origin.to_string())
            })
            .chain(surface.globs().iter().map(|g| {
                audit::SurfaceEntry(
                    g.pattern.to_string_lossy().into(),
                    format!("glob:{}", g.effect.name()),
                    g.origin.to_string(),
                )
            }))
            .collect(),
        policy: Some(policy),
        env_dropped: dropped.iter().map(|d| format!("{} ({})", d.name.to_string_lossy(), d.rule)).collect(),
        mode,
        caches: caches
            .kept
            .iter()
            .map(|(path, kept)| audit::CacheRecord { path: path.to_string_lossy().into(), kept: kept.to_string() })
            .collect(),
        surface_digest: {
            // Sorted (mode, path) pairs of the entries in effect, without the
            // run's own session directories.
            let mut entries: Vec<String> = surface
                .effective_rules()
                .filter(|(_, r)| !r.origin.is_session())
                .map(|(_, r)| format!("{} {}", r.mode.name(), r.path.display()))
                .collect();
            entries.sort();
            audit::line_hash(entries.join("\n").as_bytes())
        },
        features,
        time_ns: audit::now_ns(),
    }))
}

/// What the session record says about the mode.
fn mode_record(trapping: crate::syscalls::Trapping, learn: bool) -> audit::ModeRecord {
    use crate::syscalls::Trapping;
    let untrapped = trapping.untrapped().into_iter().map(String::from).collect();
    match trapping {
        _ if learn => audit::ModeRecord {
            name: audit::ModeName::Learn,
            untrapped,
            landlock_exact: None,
            residual: Some(
                "learning: nothing was enforced but the carve-outs (host secrets); refusals enforcement would have made are recorded as would_deny".into(),
            ),
            landlock_denials: None,
        },
        Trapping::All => audit::ModeRecord {
            name: audit::ModeName::Full,
            untrapped,
            landlock_exact: None,
            residual: None,
            landlock_denials: None,
        },
        Trapping::Fast { exact } => audit::ModeRecord {
            name: audit::ModeName::Fast,
            untrapped,
            landlock_exact: Some(exact),
            residual: Some("untrapped metadata calls (stat family, readlink, access, statfs, chdir, xattr reads, inotify) are not checked: a program can learn that a path outside the surface exists and its attributes, never its content".into()),
            landlock_denials: Some("not observed: calls Landlock refuses are not in this trail".into()),
        },
    }
}

/// Waits for the command, forwarding signals and reaping orphans; returns
/// its exit status as a shell would report it, and why its own `execve`
/// failed, if it did.
async fn supervise(
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
fn end_sandbox() {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_are_found_like_execvp() {
        assert_eq!(find_program(OsStr::new("sh"), Some(OsStr::new("/nonexistent:/bin"))), Some("/bin/sh".into()));
        assert_eq!(find_program(OsStr::new("./x"), None), Some("./x".into()));
        assert_eq!(find_program(OsStr::new("no-such-program-here"), Some(OsStr::new("/bin"))), None);
    }
}
