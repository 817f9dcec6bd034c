//! `interpose oci-agent`: the seccomp agent of OCI runtimes. A runtime
//! whose bundle names this agent's socket in `linux.seccomp.listenerPath`
//! (runc >= 1.1, crun >= 0.19) connects once per container and sends the
//! container's state (`ContainerProcessState`) with the filter's listener
//! attached. Each container gets the same [`Supervisor`] as `interpose
//! run`, resolving paths in the container's root and mount namespace, and a
//! hash-chained trail of its own.
//!
//! What differs from `interpose run`: the runtime installs the filter, so
//! there is no Landlock backstop, and nothing is answered CONTINUE on its
//! strength. Every allowed open, name operation and socket address is
//! performed by the supervisor on the object it checked; an allowed exec is
//! checked again once the kernel has loaded it, before it runs
//! (`supervisor::exec`). Every path is resolved in the caller's own root
//! (`RESOLVE_IN_ROOT` from `/proc/<pid>/root`), the parent of a name that
//! does not exist yet included, so a container's `/tmp/x` is made in the
//! container, never in the host's `/tmp`.

use crate::audit::{self, Sink};
use crate::policy::file::{Field, Policy};
use crate::policy::{Mode, Origin, Rule, Surface};
use crate::supervisor::{self, Supervisor};
use crate::sys::fs::{self, Dir};
use crate::sys::process;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

/// The annotation naming a container's policy (a file of `--policy-dir`).
pub const POLICY_ANNOTATION: &str = "org.interpose.policy";

/// The largest state message taken; a runtime's is a few KiB.
const MAX_STATE: usize = 256 * 1024;

/// How long a connection may take to send its state.
const STATE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// How the agent runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// The socket runtimes connect to.
    pub socket: PathBuf,
    /// Where the policies annotations name live.
    pub policy_dir: Option<PathBuf>,
    /// Where each container's trail is written (`<id>.jsonl`).
    pub audit_dir: Option<PathBuf>,
    /// The key that anchors the trails (default: the state directory's).
    pub audit_key: Option<PathBuf>,
}

/// Why the agent could not start.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// Another process listens on the socket already.
    #[error("{0}: another agent is listening there")]
    InUse(PathBuf),
    /// The socket path holds something that is not a socket.
    #[error("{0}: exists and is not a socket; name another path")]
    NotASocket(PathBuf),
    /// Binding or setting up the socket failed.
    #[error("{path}: {source}")]
    Io {
        /// The socket.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// Another agent writes its trails to the same directory.
    #[error("--audit-dir {0}: another agent is using it (it closes the trails of dead agents, so it must be alone)")]
    AuditDirInUse(PathBuf),
    /// The trails' key cannot be read or made.
    #[error("--audit-key {}: {err}", .path.display())]
    Key {
        /// The key file.
        path: PathBuf,
        /// What went wrong.
        err: std::io::Error,
    },
}

/// Why one container is not supervised (its connection is dropped, and
/// its first process told why).
#[derive(Debug, thiserror::Error)]
pub enum ContainerError {
    /// Bounding the wait for the state failed.
    #[error("{0}")]
    SetTimeout(std::io::Error),
    /// Receiving the state and its descriptors failed.
    #[error("receiving: {0}")]
    Receive(crate::sys::Errno),
    /// The state is too large, or its descriptors were cut.
    #[error("the state message is too large or its descriptors were cut")]
    StateTooLarge,
    /// The message is not a `ContainerProcessState`.
    #[error("not a container process state: {0}")]
    NotAState(serde_json::Error),
    /// The container id could name another file than its trail.
    #[error("container id {0:?}: not a plain name")]
    BadId(String),
    /// The state names no listener, or no process.
    #[error("container {id}: expected its seccompFd among {names} descriptor(s) and a pid, got {fds} and pid {pid} ({oci_version})")]
    NoListener {
        /// The container.
        id: String,
        /// The descriptors the state names.
        names: usize,
        /// The descriptors that came with it.
        fds: usize,
        /// The pid it gives.
        pid: i32,
        /// Its `ociVersion`.
        oci_version: String,
    },
    /// `pidfd_open` of the container's first process failed.
    #[error("container {id}: pid {pid}: {source}")]
    PidfdOpen {
        /// The container.
        id: String,
        /// Its first process.
        pid: i32,
        /// The error.
        source: crate::sys::Errno,
    },
    /// Opening the container's root (`/proc/<pid>/root`) failed.
    #[error("container {id}: its root: {source}")]
    OpenRoot {
        /// The container.
        id: String,
        /// The error.
        source: crate::sys::Errno,
    },
    /// The first process was gone before it could be supervised.
    #[error("container {id}: its first process (pid {pid}) exited before it was supervised")]
    Exited {
        /// The container.
        id: String,
        /// Its first process.
        pid: i32,
    },
    /// A mount of the container shows the agent's own files.
    #[error("container {id}: {exposure}; not supervised, so its trapped calls fail")]
    Exposed {
        /// The container.
        id: String,
        /// What it shows, and where.
        exposure: Exposure,
    },
    /// The container's surface cannot be built.
    #[error("container {id}: {source}")]
    Surface {
        /// The container.
        id: String,
        /// Why (boxed: a policy's error is large, and rare).
        source: Box<ContainerPolicyError>,
    },
    /// Creating the container's trail failed.
    #[error("trail {}: {source}", .path.display())]
    CreateTrail {
        /// The trail.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// Writing the trail's lease failed.
    #[error("trail {}: its lease: {source}", .path.display())]
    Lease {
        /// The trail.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// Starting the container's supervisor failed.
    #[error("container {id}: starting its supervisor: {source}")]
    StartSupervisor {
        /// The container.
        id: String,
        /// The error.
        source: crate::sys::Errno,
    },
    /// The trail could not be ended.
    #[error("container {id}: {why}")]
    EndTrail {
        /// The container.
        id: String,
        /// Why, as the trail's writer says it.
        why: String,
    },
}

/// How a container reaches the agent's own files ([`exposed`]).
#[derive(Debug, thiserror::Error)]
pub enum Exposure {
    /// Its mounts cannot be read: taken to show them.
    #[error("its mounts cannot be read ({0})")]
    MountsUnreadable(std::io::Error),
    /// Its mount at `at` shows the agent's `what` (at `path` on the host).
    #[error("its mount at {} shows the agent's {what} ({})", .at.display(), .path.display())]
    Shows {
        /// The mount point in the container.
        at: PathBuf,
        /// Which of the agent's files.
        what: &'static str,
        /// Where that is on the host.
        path: PathBuf,
    },
}

/// Why a container's policy cannot be its surface.
#[derive(Debug, thiserror::Error)]
pub enum ContainerPolicyError {
    /// A policy is named, but the agent has no directory of them.
    #[error("policy {0:?}: the agent has no --policy-dir")]
    NoPolicyDir(String),
    /// The name is not a file name (a path, `.`, `..`).
    #[error("policy {0:?}: not a file name in --policy-dir")]
    NotAFileName(String),
    /// The policy file cannot be loaded.
    #[error(transparent)]
    Policy(#[from] crate::policy::file::PolicyError),
    /// An entry with variables or patterns.
    #[error("{origin} {text:?}: containers take plain paths (no variables or patterns)")]
    NotPlain {
        /// Where it was written.
        origin: Origin,
        /// The entry.
        text: String,
    },
    /// An entry of a field containers do not take.
    #[error("{origin} `{field}` {text:?}: not supported for containers")]
    Unsupported {
        /// Where it was written.
        origin: Origin,
        /// The field.
        field: &'static str,
        /// The entry.
        text: String,
    },
    /// A path with a NUL byte.
    #[error("{}: NUL in a path", .0.display())]
    Nul(PathBuf),
    /// Resolving a path in the container's root failed.
    #[error("{}: {source}", .path.display())]
    Resolve {
        /// The path.
        path: PathBuf,
        /// The error.
        source: crate::sys::Errno,
    },
    /// Reading back where a resolved path leads failed.
    #[error("{}: {source}", .path.display())]
    ReadLink {
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// The state a runtime sends (OCI runtime spec, `ContainerProcessState`).
#[derive(Debug, Deserialize)]
struct ProcessState {
    #[serde(rename = "ociVersion")]
    oci_version: String,
    fds: Vec<String>,
    pid: i32,
    #[serde(default)]
    metadata: String,
    state: ContainerState,
}

#[derive(Debug, Deserialize)]
struct ContainerState {
    id: String,
    #[serde(default)]
    bundle: String,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

/// Runs the agent until it is killed.
pub fn run(opts: &Options) -> Result<(), AgentError> {
    let key = match &opts.audit_dir {
        Some(_) => {
            let path = opts.audit_key.clone().or_else(audit::key::default_path).unwrap_or_default();
            Some(audit::TrailKey::load_or_create(&path).map_err(|err| AgentError::Key { path, err })?)
        }
        None => None,
    };
    // The audit directory is this agent's alone, so every trail there
    // still open was left by a dead agent: each is closed as such.
    let _held = match (&opts.audit_dir, &key) {
        (Some(dir), Some(key)) => {
            let held = hold(dir)?;
            for said in audit::close::close_all(dir, key) {
                eprintln!("interpose oci-agent: {said}");
            }
            Some(held)
        }
        _ => None,
    };
    let listener = bind(&opts.socket)?;
    let own = std::sync::Arc::new(own_state(opts));
    eprintln!("interpose oci-agent: listening on {}", opts.socket.display());
    for conn in listener.incoming() {
        let Ok(conn) = conn else { continue };
        let (opts, key, own) = (opts.clone(), key.clone(), std::sync::Arc::clone(&own));
        // One thread per connection: a runtime that connects and sends
        // nothing holds only its own thread, and only for STATE_TIMEOUT.
        let _ = std::thread::Builder::new().name("interpose-oci".into()).spawn(move || {
            if let Err(e) = container(&opts, key, &own, &conn) {
                eprintln!("interpose oci-agent: {e}; connection dropped");
            }
        });
    }
    Ok(())
}

/// Takes the audit directory for this agent alone (an exclusive lock on
/// `.agent.lock` in it, held while the agent lives).
fn hold(dir: &Path) -> Result<nix::fcntl::Flock<std::fs::File>, AgentError> {
    use nix::fcntl::{Flock, FlockArg};
    let io = |source| AgentError::Io { path: dir.to_path_buf(), source };
    std::fs::create_dir_all(dir).map_err(io)?;
    let file = audit::trail_file_options().create(true).open(dir.join(".agent.lock")).map_err(io)?;
    Flock::lock(file, FlockArg::LockExclusiveNonblock).map_err(|_| AgentError::AuditDirInUse(dir.to_path_buf()))
}

/// Binds the socket (mode 0600), replacing one a dead agent left behind.
fn bind(path: &Path) -> Result<UnixListener, AgentError> {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    let io = |source| AgentError::Io { path: path.to_path_buf(), source };
    match std::fs::symlink_metadata(path) {
        Ok(m) if !m.file_type().is_socket() => return Err(AgentError::NotASocket(path.to_path_buf())),
        Ok(_) if UnixStream::connect(path).is_ok() => return Err(AgentError::InUse(path.to_path_buf())),
        Ok(_) => std::fs::remove_file(path).map_err(io)?,
        Err(_) => {}
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let listener = UnixListener::bind(path).map_err(io)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(io)?;
    Ok(listener)
}

/// The agent's own files (its socket's directory, policies, trails and
/// key), each with where it lives: the device of its file system and its
/// path from that file system's root.
type OwnState = Vec<(&'static str, PathBuf, (String, PathBuf))>;

fn own_state(opts: &Options) -> OwnState {
    let mounts = crate::sys::procfs::mounts();
    let key = opts.audit_dir.as_ref().and(opts.audit_key.clone().or_else(audit::key::default_path));
    let files = [
        ("socket directory", opts.socket.parent().map(Path::to_path_buf)),
        ("policy directory", opts.policy_dir.clone()),
        ("audit directory", opts.audit_dir.clone()),
        ("trail key", key),
    ];
    files
        .into_iter()
        .filter_map(|(what, p)| {
            let p = std::fs::canonicalize(p?).ok()?;
            let place = crate::sys::procfs::place_of(&p, &mounts)?;
            Some((what, p, place))
        })
        .collect()
}

/// Which of the agent's own files a mount of the container's shows, and
/// where: a container that could reach them could read the key, forge or
/// remove trails, change policies or register fake containers. Checked
/// before it is supervised; a container whose mounts cannot be read is
/// taken to show them.
fn exposed(own: &OwnState, pid: i32) -> Option<Exposure> {
    let mounts = match crate::sys::procfs::mounts_of(pid as u32) {
        Ok(m) => m,
        Err(e) => return Some(Exposure::MountsUnreadable(e)),
    };
    own.iter().find_map(|(what, path, place)| {
        let at = crate::sys::procfs::shows(&mounts, place)?;
        Some(Exposure::Shows { at, what, path: path.clone() })
    })
}

/// Takes one container's state and listener and supervises it until its
/// last process has exited.
fn container(
    opts: &Options,
    key: Option<audit::TrailKey>,
    own: &OwnState,
    conn: &UnixStream,
) -> Result<(), ContainerError> {
    conn.set_read_timeout(Some(STATE_TIMEOUT)).map_err(ContainerError::SetTimeout)?;
    let mut buf = vec![0u8; MAX_STATE];
    let (n, mut fds, cut) = process::recv_with_fds(conn.as_fd(), &mut buf).map_err(ContainerError::Receive)?;
    if cut || n == MAX_STATE {
        return Err(ContainerError::StateTooLarge);
    }
    let state: ProcessState = serde_json::from_slice(&buf[..n]).map_err(ContainerError::NotAState)?;
    let id = &state.state.id;
    let valid_id = !id.is_empty()
        && id.len() <= 255
        && id.bytes().all(|c| c.is_ascii_alphanumeric() || b"_.-".contains(&c))
        && !id.starts_with('.');
    if !valid_id {
        return Err(ContainerError::BadId(id.clone()));
    }
    let at = state.fds.iter().position(|f| f == "seccompFd");
    let listener = match at {
        Some(i) if fds.len() == state.fds.len() && state.pid > 0 => fds.swap_remove(i),
        _ => {
            return Err(ContainerError::NoListener {
                id: id.clone(),
                names: state.fds.len(),
                fds: fds.len(),
                pid: state.pid,
                oci_version: state.oci_version.clone(),
            })
        }
    };
    drop(fds);
    // A copy of the listener, held until a refusal has been told: while it
    // is open the container's first trapped call waits, so its process is
    // still there to be told (without it the call fails at once, and the
    // process may be gone before the reason is written).
    let held = listener.try_clone().ok();
    let result = supervise(opts, key, own, &state, listener).inspect_err(|why| tell(state.pid, why));
    drop(held);
    result
}

/// Says why a container is not supervised where its user sees it: on its
/// first process's stderr (the runtime passes it on), before the runtime
/// reports the failure of the call that then finds no listener. Taken with
/// `pidfd_getfd`, so it is that process's own, never a successor's.
fn tell(pid: i32, why: &ContainerError) {
    let Ok(pidfd) = process::pidfd_open(pid) else { return };
    let Ok(stderr) = process::pidfd_getfd(pidfd.as_fd(), 2) else { return };
    // Never wait on a full pipe nobody reads: non-blocking for this one
    // write (the flag is the open file's, shared with the container, whose
    // process waits in its trapped call meanwhile), then as it was.
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    let Ok(flags) = fcntl(&stderr, FcntlArg::F_GETFL) else { return };
    let flags = OFlag::from_bits_truncate(flags);
    if fcntl(&stderr, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK)).is_ok() {
        let _ = nix::unistd::write(&stderr, format!("interpose oci-agent: {why}\n").as_bytes());
        let _ = fcntl(&stderr, FcntlArg::F_SETFL(flags));
    }
}

/// Supervises the container `state` describes on `listener` until its last
/// process has exited.
fn supervise(
    opts: &Options,
    key: Option<audit::TrailKey>,
    own: &OwnState,
    state: &ProcessState,
    listener: std::os::fd::OwnedFd,
) -> Result<(), ContainerError> {
    let id = &state.state.id;
    let policy_name = state
        .state
        .annotations
        .get(POLICY_ANNOTATION)
        .cloned()
        .or_else(|| (!state.metadata.is_empty()).then(|| state.metadata.clone()));
    // The container's root: its first process is pinned by a pidfd, its
    // root opened through /proc/<pid>, and the pidfd then says the process
    // has not exited meanwhile (a pid is not reused while it lives), so the
    // root is that process's, not a successor's.
    let pidfd = process::pidfd_open(state.pid).map_err(|source| ContainerError::PidfdOpen {
        id: id.clone(),
        pid: state.pid,
        source,
    })?;
    let root_path = CString::new(format!("/proc/{}/root", state.pid)).expect("no NUL in a number");
    let root = fs::openat(Dir::Cwd, &root_path, libc::O_PATH | libc::O_DIRECTORY, 0)
        .map_err(|source| ContainerError::OpenRoot { id: id.clone(), source })?;
    if exited(pidfd.as_fd()) {
        return Err(ContainerError::Exited { id: id.clone(), pid: state.pid });
    }
    if let Some(exposure) = exposed(own, state.pid) {
        return Err(ContainerError::Exposed { id: id.clone(), exposure });
    }
    let (surface, policy_label) = surface(opts, policy_name.as_deref(), root.as_fd())
        .map_err(|source| ContainerError::Surface { id: id.clone(), source: Box::new(source) })?;
    let start = start_record(state, &surface, &policy_label);
    let trail_path = opts.audit_dir.as_ref().map(|dir| dir.join(format!("{id}.jsonl")));
    let sink = match (&trail_path, key) {
        (Some(path), Some(key)) => Some(trail(path, &start, key)?),
        _ => None,
    };
    if let Some(sink) = &sink {
        sink.send(start);
    }
    let config = supervisor::Config {
        surface,
        audit: sink.clone().map(|s| (s, supervisor::AuditLevel::All)),
        set_groups: true,
        learn: false,
        floor: false,
        // No Landlock backstop: nothing is continued on its strength.
        landlock_exact: Vec::new(),
        exec_roots: Vec::new(),
        making: Default::default(),
        backstop: None,
        net: supervisor::NetRule::Open,
        // Every caller's root is read from its own /proc/<pid>/root.
        isolated: true,
        runtime_filter: true,
        container_init: Some(state.pid as u32),
        ask: None,
        journal: None,
    };
    // As `interpose run` does: the caller and the receiving worker hand
    // each call back and forth on one CPU (Linux 6.6; older go without).
    let sync =
        crate::sys::seccomp::set_listener_flags(listener.as_fd(), crate::sys::seccomp::USER_NOTIF_FD_SYNC_WAKE_UP);
    if let Err(e) = sync {
        tracing::debug!("container {id}: no synchronous wake-up on its listener: {e}");
    }
    let sup = Supervisor::new(listener, Some(root), config)
        .map_err(|source| ContainerError::StartSupervisor { id: id.clone(), source })?;
    sup.start();
    eprintln!("interpose oci-agent: container {id} (pid {}) under policy {policy_label}", state.pid);
    sup.wait_for_hang_up();
    sup.quiesce();
    // The runtime reaps the container; the agent does not see its status.
    if let Some(why) = sup.end_trail(-1, None) {
        return Err(ContainerError::EndTrail { id: id.clone(), why });
    }
    // Ended: the trail says so itself.
    if let (Some(path), Some(_)) = (&trail_path, &sink) {
        audit::close::release(path);
    }
    eprintln!("interpose oci-agent: container {id} ended");
    Ok(())
}

/// Whether the process behind `pidfd` has exited (its pidfd is readable).
fn exited(pidfd: std::os::fd::BorrowedFd<'_>) -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let mut fds = [PollFd::new(pidfd, PollFlags::POLLIN)];
    poll(&mut fds, PollTimeout::ZERO).map_or(true, |n| n > 0)
}

/// A new trail at `path` (never an existing one) that starts with `start`,
/// and its lease: while the container runs, the trail is open, and a
/// restarted agent closes it if this one dies ([`audit::close`]).
fn trail(path: &Path, start: &audit::Record, key: audit::TrailKey) -> Result<Sink, ContainerError> {
    let file = audit::trail_file_options()
        .create_new(true)
        .open(path)
        .map_err(|source| ContainerError::CreateTrail { path: path.into(), source })?;
    audit::close::open_lease(path, &audit::close::session_hash(start), &key)
        .map_err(|source| ContainerError::Lease { path: path.into(), source })?;
    Ok(Sink::start(audit::Output::File(file), Some(key)))
}

/// The session record of a container's trail.
fn start_record(state: &ProcessState, surface: &Surface, policy: &str) -> audit::Record {
    audit::Record::SessionStart(Box::new(audit::SessionStart {
        schema: audit::SCHEMA,
        version: env!("CARGO_PKG_VERSION").into(),
        command: vec![audit::Bytes(b"oci-agent".to_vec()), audit::Bytes(state.state.id.as_bytes().to_vec())],
        surface_digest: audit::surface_digest(surface),
        surface: audit::SurfaceEntry::all_of(surface),
        policy: None,
        env_dropped: Vec::new(),
        mode: audit::ModeRecord {
            name: audit::ModeName::Full,
            untrapped: Vec::new(),
            untrapped_read_only: Vec::new(),
            landlock_exact: None,
            residual: Some("no Landlock backstop (the runtime installs the filter): every allowed call is performed by the supervisor on the object it checked, and an allowed exec is checked again before it runs".into()),
            landlock_denials: None,
        },
        caches: Vec::new(),
        features: BTreeMap::new(),
        container: Some(audit::ContainerRecord {
            id: state.state.id.clone(),
            pid: state.pid,
            bundle: state.state.bundle.clone(),
            annotations: state.state.annotations.clone(),
            policy: policy.into(),
        }),
        time_ns: audit::now_ns(),
    }))
}

/// The container's surface, in the container's own paths: its policy
/// (a file of `--policy-dir` named by the annotation, else the default:
/// the container's system directories read-only, `/tmp` writable), each
/// entry resolved in the container's root.
fn surface(
    opts: &Options,
    name: Option<&str>,
    root: std::os::fd::BorrowedFd<'_>,
) -> Result<(Surface, String), ContainerPolicyError> {
    let mut surface = Surface::new();
    surface.add_proc_mount("/proc".into());
    let Some(name) = name else {
        add_container_system(&mut surface, root);
        surface.add(Rule {
            path: "/tmp".into(),
            mode: Mode::Rw,
            origin: Origin::Flag("default container policy".into()),
        });
        return Ok((surface, "default".into()));
    };
    let plain = !name.is_empty() && !name.contains('/') && name != "." && name != "..";
    let dir = opts.policy_dir.as_ref().ok_or_else(|| ContainerPolicyError::NoPolicyDir(name.into()))?;
    if !plain {
        return Err(ContainerPolicyError::NotAFileName(name.into()));
    }
    let mut policy = Policy::load(&dir.join(name))?;
    // The host's toolchains and caches mean nothing in a container.
    policy.without_tooling();
    if policy.system {
        add_container_system(&mut surface, root);
    }
    // Containers take plain paths: no host variables, no patterns.
    let plain_path = |text: &str, origin: &Origin| match text.contains(['$', '*', '?', '[', '{', '~']) {
        true => Err(ContainerPolicyError::NotPlain { origin: origin.clone(), text: text.into() }),
        false => Ok(()),
    };
    if let Some((c, origin)) = &policy.cwd {
        plain_path(c, origin)?;
    }
    let cwd = policy.cwd.as_ref().map(|(c, _)| PathBuf::from(c));
    if let (true, Some(cwd)) = (policy.grants_workspace, &cwd) {
        let path = in_container(root, cwd)?;
        surface.add(Rule { path, mode: Mode::Rw, origin: Origin::Workspace });
    }
    for e in &policy.entries {
        let mode = match e.field {
            f if f.reads() => Mode::Ro,
            Field::AdditionalWrites => Mode::Rw,
            Field::Deny => Mode::Deny,
            f => {
                let (origin, text) = (e.origin.clone(), e.text.clone());
                return Err(ContainerPolicyError::Unsupported { origin, field: f.key(), text });
            }
        };
        plain_path(&e.text, &e.origin)?;
        let p = Path::new(&e.text);
        let p = match (&cwd, p.is_absolute()) {
            (_, true) => p.to_path_buf(),
            (Some(c), false) => c.join(p),
            (None, false) => Path::new("/").join(p),
        };
        surface.add(Rule { path: in_container(root, &p)?, mode, origin: e.origin.clone() });
    }
    Ok((surface, name.into()))
}

/// Where `path` leads in the container: resolved in its root (symlinks
/// followed there), or as written when it does not exist.
fn in_container(root: std::os::fd::BorrowedFd<'_>, path: &Path) -> Result<PathBuf, ContainerPolicyError> {
    let c = CString::new(path.as_os_str().as_bytes()).map_err(|_| ContainerPolicyError::Nul(path.into()))?;
    let how = fs::OpenHow { flags: libc::O_PATH as u64, mode: 0, resolve: fs::RESOLVE_IN_ROOT };
    match fs::openat2(Dir::Fd(root), &c, how) {
        Ok(fd) => {
            // The container's root is the root of its own mount namespace,
            // so the name read back is the container's.
            let link = std::fs::read_link(format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&fd)))
                .map_err(|source| ContainerPolicyError::ReadLink { path: path.into(), source })?;
            Ok(link)
        }
        Err(crate::sys::Errno::ENOENT) => Ok(path.to_path_buf()),
        Err(source) => Err(ContainerPolicyError::Resolve { path: path.into(), source }),
    }
}

/// The container's own system: its programs and libraries read-only, its
/// `/proc` (membership decides `/proc/<pid>`), and the harmless devices.
fn add_container_system(surface: &mut Surface, root: std::os::fd::BorrowedFd<'_>) {
    let origin = || Origin::System("container system");
    for p in ["/bin", "/sbin", "/lib", "/lib64", "/usr", "/etc", "/proc", "/dev/urandom", "/dev/random"] {
        if let Ok(path) = in_container(root, Path::new(p)) {
            surface.add(Rule { path, mode: Mode::Ro, origin: origin() });
        }
    }
    for p in ["/dev/null", "/dev/zero", "/dev/full"] {
        surface.add(Rule { path: p.into(), mode: Mode::Rw, origin: origin() });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_states_are_refused_with_a_reason() {
        let parse = |s: &str| serde_json::from_str::<ProcessState>(s).map(|_| ()).map_err(|e| e.to_string());
        assert!(parse("{}").is_err());
        assert!(parse(r#"{"ociVersion":"1.0.2","fds":["seccompFd"],"pid":1,"state":{"id":"a"}}"#).is_ok());
        assert!(parse(r#"{"ociVersion":"1.0.2","fds":"x","pid":1,"state":{"id":"a"}}"#).is_err());
    }

    #[test]
    fn container_policies_take_plain_paths_from_their_own_directory() {
        let dir = tempfile::tempdir().unwrap();
        let policies = dir.path().join("policies");
        std::fs::create_dir_all(&policies).unwrap();
        std::fs::write(policies.join("vars.toml"), "cwd = \"$HOME/work\"\n").unwrap();
        std::fs::write(policies.join("glob.toml"), "cwd = \"/data\"\ndeny = [\"/data/*.key\"]\n").unwrap();
        std::fs::write(policies.join("ok.toml"), "cwd = \"/data\"\ndeny = [\"/data/secret\"]\n").unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("data")).unwrap();
        let root = fs::openat(Dir::Cwd, &CString::new(root.as_os_str().as_bytes()).unwrap(), libc::O_PATH, 0).unwrap();
        let opts = Options { socket: "/x".into(), policy_dir: Some(policies), audit_dir: None, audit_key: None };
        let err = |name: &str| surface(&opts, Some(name), root.as_fd()).map(|_| ()).unwrap_err();
        let e = err("vars.toml");
        assert!(matches!(&e, ContainerPolicyError::NotPlain { text, .. } if text == "$HOME/work"), "{e}");
        assert!(
            e.to_string()
                .ends_with("vars.toml:1 \"$HOME/work\": containers take plain paths (no variables or patterns)"),
            "{e}"
        );
        assert!(matches!(err("glob.toml"), ContainerPolicyError::NotPlain { .. }), "{}", err("glob.toml"));
        let e = err("../ok.toml");
        assert!(matches!(&e, ContainerPolicyError::NotAFileName(n) if n == "../ok.toml"), "{e}");
        assert_eq!(e.to_string(), "policy \"../ok.toml\": not a file name in --policy-dir");
        let (s, name) = surface(&opts, Some("ok.toml"), root.as_fd()).unwrap();
        assert_eq!(name, "ok.toml");
        // (Paths that exist are read back as the container names them only
        // where its root is its mount namespace's: tests/e2e/oci.rs.)
        let decide = |p: &str| s.decide(p.as_bytes(), crate::policy::Access::Read, &crate::policy::NoProcesses).allowed;
        assert!(decide("/bin/sh") && !decide("/data/secret/x"));
    }

    #[test]
    fn an_existing_non_socket_is_never_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("not-a-socket");
        std::fs::write(&file, "keep").unwrap();
        assert!(matches!(bind(&file), Err(AgentError::NotASocket(_))));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep");
        let sock = dir.path().join("agent.sock");
        let first = bind(&sock).unwrap();
        assert!(matches!(bind(&sock), Err(AgentError::InUse(_))));
        drop(first);
        // A socket a dead agent left behind is replaced.
        assert!(bind(&sock).is_ok());
    }
}
