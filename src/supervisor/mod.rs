//! The supervisor: receives each trapped syscall, reads its paths from the
//! caller's memory, resolves them as the kernel would for that thread,
//! decides them against the surface and answers.
//!
//! Notifications are received by one worker at a time, blocked in
//! `SECCOMP_IOCTL_NOTIF_RECV` (with the listener's sync wake-up flag, the
//! kernel hands each call over on the caller's CPU and back): it receives,
//! answers and receives again. Others wait for the turn ([`turn`]) and take
//! it over from a worker busy with one call for too long, so one slow
//! answer never stalls the others; one is always waiting.

pub mod ask;
mod context;
pub mod cover;
mod exec;
mod handle;
mod held;
pub mod identity;
mod later;
pub mod procs;
pub mod resolve;
mod turn;

use crate::audit::{self, AccessKind, RuleKind, Sink, Verdict};
use crate::policy::{Access, Reason, Surface};
use crate::sys::fs::{self, Dir};
use crate::sys::seccomp::{self, NotifResp};
use crate::sys::Errno;
pub use context::NetRule;
use context::{Context, Ground, Memory};
use procs::Membership;
use resolve::Resolver;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// Upper bound on worker threads.
const MAX_WORKERS: usize = 64;

/// How an allowed or denied call is answered.
#[derive(Debug)]
pub enum Answer {
    /// Let the kernel run the call (`SECCOMP_USER_NOTIF_FLAG_CONTINUE`),
    /// for the reason given ([`cover`]: never without one).
    Continue(cover::Cover),
    /// Fail the call with this errno.
    Fail(Errno),
    /// Complete the call with this return value (the supervisor did it).
    Value(i64),
    /// The call would block on something the sandbox controls (a full
    /// backlog, a full socket queue): answered when a retry completes.
    Later(later::Retry),
    /// Let the kernel make an allowed exec that no backstop covers, and
    /// check the program it loaded before it runs ([`exec`]).
    VerifiedExec(exec::Verify),
    /// Complete the call by installing this descriptor in the caller
    /// (`SECCOMP_IOCTL_NOTIF_ADDFD` with `SECCOMP_ADDFD_FLAG_SEND`).
    Install {
        /// The descriptor the supervisor opened.
        fd: OwnedFd,
        /// Whether the caller asked for `O_CLOEXEC`.
        cloexec: bool,
    },
}

/// Counters, read at the end of the run.
#[derive(Debug, Default)]
pub struct Stats {
    /// Notifications answered.
    pub notifications: AtomicU64,
    /// Paths allowed.
    pub allowed: AtomicU64,
    /// Paths denied.
    pub denied: AtomicU64,
    /// Learning mode: paths enforcement would have denied.
    pub would_deny: AtomicU64,
}

/// The refusals of a session beyond their count ([`Stats::denied`]), for
/// its last line: how many were writes, and the distinct paths (hashed, up
/// to [`Refused::PATHS`]).
#[derive(Default)]
struct Refused {
    writes: u64,
    paths: std::collections::HashSet<u64>,
}

impl Refused {
    /// Distinct paths counted at most; a run that refuses more is told
    /// "or more".
    const PATHS: usize = 65_536;

    fn count(&mut self, c: &handle::Check, hasher: &std::hash::RandomState) {
        use std::hash::BuildHasher;
        if matches!(c.access, AccessKind::Write | AccessKind::Create | AccessKind::Delete) {
            self.writes += 1;
        }
        if self.paths.len() < Self::PATHS {
            self.paths.insert(hasher.hash_one(c.resolved.as_deref().unwrap_or(&c.path)));
        }
    }
}

/// The kind of rule a verdict came from, for the trail's readers.
fn rule_kind(surface: &Surface, reason: crate::policy::Reason) -> RuleKind {
    use crate::policy::Reason;
    match reason {
        _ if surface.is_carve_out(reason) => RuleKind::CarveOut,
        Reason::Rule(i) if surface.rules()[i as usize].origin.is_session() => RuleKind::Session,
        Reason::Rule(_) | Reason::Glob(_) => RuleKind::Entry,
        Reason::ProcInside(_) => RuleKind::ProcInside,
        Reason::ProcOutside(_) => RuleKind::ProcOutside,
        Reason::Ancestor => RuleKind::Ancestor,
        Reason::NoRule => RuleKind::NoEntry,
    }
}

/// Everything the workers share.
pub struct Supervisor {
    listener: OwnedFd,
    /// The session as the handlers decide against it.
    ground: Ground,
    /// What the handlers' calls leave for later ones.
    memory: Memory,
    audit: Option<Sink>,
    /// Counters.
    pub stats: Stats,
    idle: AtomicUsize,
    /// Which worker receives ([`turn`]).
    turn: turn::Turn,
    workers: AtomicUsize,
    /// The first worker's thread, made with the supervisor's state
    /// ([`Supervisor::prepare`]), until [`Supervisor::start`] hands it
    /// the supervisor.
    first_worker: std::sync::Mutex<Option<FirstWorker>>,
    audit_level: AuditLevel,
    /// `interpose bench`'s notification floor: every notification is
    /// answered CONTINUE at once, nothing read or decided.
    floor: bool,
    /// Each surface rule in words, as trail records name it: formatted
    /// once, not for every recorded decision.
    rule_names: Vec<String>,
    /// The first execs refused (denied, or failed before a decision), to
    /// explain a command that exits 126 or 127.
    exec_refusals: std::sync::Mutex<Vec<ExecRefusal>>,
    /// Refusals by carve-outs: how many, and the first few, for the
    /// session's end.
    carve_out_refusals: std::sync::Mutex<(u64, Vec<CarveOutRefusal>)>,
    /// Execs the backstop could not run ([`handle::BACKSTOP_EXEC`]): how
    /// many, and the first few programs.
    backstop_execs: std::sync::Mutex<(u64, Vec<Vec<u8>>)>,
    /// Every refusal, for the one line the session ends with.
    refused: std::sync::Mutex<Refused>,
    /// Allowed (and failed) decisions recorded once: (process, object,
    /// access, outcome) hashed to the first record's `seq` and the times
    /// decided the same way again since.
    repeats: std::sync::Mutex<std::collections::HashMap<u64, (u64, u64)>>,
    /// Keyed per session, so no command can make two objects collide.
    repeat_hasher: std::hash::RandomState,
    /// Calls that would block on something the sandbox controls, retried
    /// by a thread of their own so that no worker waits on them.
    later: later::Later,
    /// With `--ask`: the answers given, and the calls held for a person to
    /// decide.
    asking: Option<(ask::Answers, held::Questions)>,
    /// With `--ask`: the socket and the question's timeout, until the hub
    /// starts with the workers.
    ask_setup: std::sync::Mutex<Option<AskConfig>>,
}

/// `interpose run --ask SOCKET`: where questions are asked and how long
/// they wait.
#[derive(Debug)]
pub struct AskConfig {
    /// The listening socket (made by the session where the command cannot
    /// reach it).
    pub listener: std::os::unix::net::UnixListener,
    /// How long a question waits for an answer.
    pub timeout: std::time::Duration,
    /// `--ask-policy`: where a `policy` answer's rule is written.
    pub policy_file: Option<std::path::PathBuf>,
}

/// An exec the supervisor refused, kept to explain why a command did not run.
#[derive(Debug, Clone)]
pub struct ExecRefusal {
    /// The path as the program passed it.
    pub path: Vec<u8>,
    /// What it resolved to, if it got that far.
    pub resolved: Option<Vec<u8>>,
    /// The rule (or the failure) that decided.
    pub rule: String,
    /// What would allow it, for a denial.
    pub remedy: Option<String>,
    /// The errno the program got.
    pub errno: Option<Errno>,
}

/// How many exec refusals are kept.
const EXEC_REFUSALS_KEPT: usize = 8;

/// Which decisions go to the audit trail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum AuditLevel {
    /// Denials only (and the session records).
    Deny,
    /// Every decision and every allowed exec.
    #[default]
    All,
}

/// The instruction at `ip` of process `pid` (thread `tid`) as `file+0xoffset`
/// through its memory map, or the raw address when no file maps it. The
/// file-backed mappings are cached per worker until the next exec anywhere
/// in the sandbox, and re-read whenever `ip` falls outside them (a library
/// loaded since).
fn code_location(pid: u32, tid: u32, ip: u64, generation: u64) -> String {
    use std::cell::RefCell;
    use std::collections::HashMap;
    type Maps = Vec<crate::sys::procfs::Mapping>;
    thread_local! {
        static MAPS: RefCell<(u64, HashMap<u32, Maps>)> = RefCell::new((0, HashMap::new()));
    }
    let find = |maps: &Maps| {
        maps.iter()
            .find(|(lo, hi, _, _)| (*lo..*hi).contains(&ip))
            .map(|(lo, _, off, file)| format!("{file}+{:#x}", off + (ip - lo)))
    };
    let hit = MAPS.with_borrow_mut(|(g, all)| {
        if *g != generation || all.len() > 256 {
            *g = generation;
            all.clear();
        }
        all.get(&pid).and_then(find)
    });
    if let Some(hit) = hit {
        return hit;
    }
    let maps: Maps = crate::sys::procfs::maps(tid);
    let found = find(&maps);
    MAPS.with_borrow_mut(|(_, all)| all.insert(pid, maps));
    found.unwrap_or_else(|| format!("{ip:#x}"))
}

/// Everything a supervisor is built with: complete when built, nothing set
/// later.
pub struct Config {
    /// The surface every call is decided against.
    pub surface: Surface,
    /// Where decisions are recorded, and which.
    pub audit: Option<(Sink, AuditLevel)>,
    /// Whether workers set the caller's supplementary groups (not in an
    /// unprivileged user namespace, where setgroups is refused).
    pub set_groups: bool,
    /// Learning mode: decisions are recorded but nothing is refused.
    pub learn: bool,
    /// `interpose bench`'s notification floor: every notification is
    /// answered CONTINUE at once, nothing read or decided.
    pub floor: bool,
    /// Per surface rule: whether the kernel also grants what the rule
    /// allows ([`crate::sandbox::landlock::Layout::exact_rules`]); empty for
    /// none.
    pub landlock_exact: Vec<bool>,
    /// Where the backstop lets programs run
    /// ([`crate::sandbox::landlock::Layout::exec_roots`]); empty for none.
    pub exec_roots: Vec<std::path::PathBuf>,
    /// Where the kernel makes names in a tree the backstop holds around a
    /// carve-out that does not exist yet (none without one).
    pub making: crate::sandbox::landlock::Making,
    /// The backstop's proof that it refuses what the surface refuses, when
    /// there is one (a Landlock ruleset from the same surface, with its
    /// masks; none with `--no-landlock` or a runtime's filter).
    pub backstop: Option<crate::sandbox::landlock::Sound>,
    /// What IPv4 and IPv6 addresses connects and sends may name.
    pub net: NetRule,
    /// With `--isolate`: absolute paths are resolved from each caller's
    /// own root.
    pub isolated: bool,
    /// The filter was installed by an OCI runtime, not by `interpose run`:
    /// the callers may not wait killable only (so a descriptor is installed
    /// and answered in one step).
    pub runtime_filter: bool,
    /// A container's first process (as the host numbers it): its `/proc`
    /// may show processes that are not the container's (a host PID
    /// namespace), so there a process is inside only if it is in the first
    /// process's PID namespace and control groups, never by presence alone.
    pub container_init: Option<u32>,
    /// `--ask`: hold what the surface does not grant for a person to decide.
    pub ask: Option<AskConfig>,
    /// The undo journal (`run --journal`), when there is one.
    pub journal: Option<Arc<crate::journal::Journal>>,
}

/// One refusal by a carve-out: the access, the path, the rule.
type CarveOutRefusal = (AccessKind, Vec<u8>, String);

/// The most distinct allowed (process or program, object, access) keys whose
/// repeats are counted instead of recorded (about 40 bytes each); beyond
/// it every allowed decision is a record again, so a command that touches
/// endless distinct names costs trail, never unbounded memory.
const REPEATS_KEPT: usize = 65_536;

/// A supervisor's state made before its listener and the command's root
/// exist ([`Supervisor::prepare`]); [`Prepared::finish`] makes the
/// supervisor.
pub struct Prepared {
    ground: Ground,
    first_worker: Option<FirstWorker>,
    rule_names: Vec<String>,
    audit: Option<Sink>,
    audit_level: AuditLevel,
    floor: bool,
    container_init: Option<u32>,
    ask: Option<AskConfig>,
}

/// A worker's thread made before the supervisor exists, waiting for it
/// ([`Supervisor::start`]): a thread takes tens of microseconds to make,
/// which the command's first call would otherwise wait for.
struct FirstWorker {
    start: std::sync::mpsc::SyncSender<Arc<Supervisor>>,
}

impl FirstWorker {
    /// The thread, waiting; `None` if none could be made (the first worker
    /// is then made at the start). A supervisor dropped unstarted ends it.
    fn spawn() -> Option<FirstWorker> {
        let (start, started) = std::sync::mpsc::sync_channel::<Arc<Supervisor>>(1);
        let wait = move || {
            if let Ok(me) = started.recv() {
                me.worker();
            }
        };
        std::thread::Builder::new().name("interpose-worker".into()).spawn(wait).ok()?;
        Some(FirstWorker { start })
    }
}

impl Prepared {
    /// The supervisor for `listener`. With a PID namespace, `command_root`
    /// is the command's root directory, in a mount namespace whose `/proc`
    /// is that PID namespace's: absolute paths are resolved from it, and
    /// `/proc` is decided by presence there (every process it shows is the
    /// command's init or one of its descendants).
    pub fn finish(self, listener: OwnedFd, command_root: Option<OwnedFd>) -> Result<Arc<Supervisor>, Errno> {
        let Prepared { mut ground, first_worker, rule_names, audit, audit_level, floor, container_init, ask } = self;
        if let Some(root) = &command_root {
            let proc = fs::openat(Dir::Fd(root.as_fd()), c"proc", libc::O_PATH | libc::O_DIRECTORY, 0)?;
            let like = match container_init {
                Some(pid) => Some(procs::Registration::of_host_pid(pid).ok_or(Errno::ESRCH)?),
                None => None,
            };
            ground.procs.command_namespace("/proc".into(), proc, like);
        }
        ground.command_root = command_root;
        // The links of the command's root it cannot replace: where the
        // surface refuses it and nobody may allow it later (learning refuses
        // nothing; an approval could allow it).
        if !ground.isolated && !ground.learn && ask.is_none() {
            let root = ground.command_root.as_ref().map(AsFd::as_fd);
            let (surface, procs) = (&ground.surface, &ground.procs);
            let unchangeable =
                |path: &[u8]| [Access::Create, Access::Delete].iter().all(|&a| !surface.decide(path, a, procs).allowed);
            ground.resolver.learn_root_links(root, unchangeable);
        }
        Ok(Arc::new(Supervisor {
            rule_names,
            listener,
            ground,
            memory: Memory::default(),
            audit,
            stats: Stats::default(),
            idle: AtomicUsize::new(0),
            turn: turn::Turn::default(),
            workers: AtomicUsize::new(0),
            first_worker: std::sync::Mutex::new(first_worker),
            audit_level,
            floor,
            exec_refusals: std::sync::Mutex::new(Vec::new()),
            carve_out_refusals: std::sync::Mutex::new((0, Vec::new())),
            backstop_execs: std::sync::Mutex::new((0, Vec::new())),
            refused: std::sync::Mutex::default(),
            repeats: std::sync::Mutex::new(std::collections::HashMap::new()),
            repeat_hasher: std::hash::RandomState::new(),
            // Waiting calls hold descriptors; the command was started
            // with its own limits already.
            later: later::Later::new(crate::sys::process::raise_descriptor_limit().unwrap_or(1024)),
            asking: ask.as_ref().map(|a| (ask::Answers::new(a.policy_file.clone()), held::Questions::default())),
            ask_setup: std::sync::Mutex::new(ask),
        }))
    }
}

impl Supervisor {
    /// A supervisor for the listener of a sandbox started by this process,
    /// with the command's root where it has a mount namespace of its own.
    pub fn new(listener: OwnedFd, command_root: Option<OwnedFd>, config: Config) -> Result<Arc<Self>, Errno> {
        Self::prepare(config)?.finish(listener, command_root)
    }

    /// What of a supervisor needs neither the listener nor the command's
    /// root: made while the command's process sets itself up (its mounts,
    /// Landlock, the filter), where interpose would only wait.
    pub fn prepare(config: Config) -> Result<Prepared, Errno> {
        let Config {
            mut surface,
            audit,
            set_groups,
            learn,
            floor,
            landlock_exact,
            exec_roots,
            making,
            backstop,
            net,
            isolated,
            runtime_filter,
            container_init,
            ask,
            journal,
        } = config;
        let (audit, audit_level) = match audit {
            Some((sink, level)) => (Some(sink), level),
            None => (None, AuditLevel::All),
        };
        identity::init();
        surface.shrink();
        let rule_names = match audit {
            Some(_) => (0..surface.rules().len() as u32).map(|i| surface.describe(Reason::Rule(i))).collect(),
            None => Vec::new(),
        };
        let records = audit.is_some();
        let ground = Ground {
            surface,
            procs: Membership::new(std::process::id()),
            resolver: Resolver::new()?,
            learn,
            backstop,
            exact: landlock_exact,
            exec_roots,
            making,
            net,
            isolated,
            signals_interrupt: runtime_filter,
            command_root: None,
            host_netns: fs::fstat(
                fs::openat(Dir::Cwd, c"/proc/self/ns/net", libc::O_PATH | libc::O_CLOEXEC, 0)?.as_fd(),
            )?
            .st_ino,
            set_groups,
            records,
            records_allowed: records && audit_level == AuditLevel::All,
            journal,
        };
        let first_worker = FirstWorker::spawn();
        Ok(Prepared { ground, first_worker, rule_names, audit, audit_level, floor, container_init, ask })
    }

    /// The surface every call is decided against.
    pub fn surface(&self) -> &Surface {
        &self.ground.surface
    }

    /// Which processes are inside the sandbox (`/proc/<pid>` decisions).
    pub(crate) fn procs(&self) -> &Membership {
        &self.ground.procs
    }

    /// Learning mode: refusals are recorded, not enforced.
    pub fn learns(&self) -> bool {
        self.ground.learn
    }

    /// Whether decisions go to a trail.
    pub fn records(&self) -> bool {
        self.audit.is_some()
    }

    /// What a handler is given of this supervisor.
    fn context(&self) -> Context<'_> {
        Context::new(&self.ground, &self.memory, self.listener.as_fd(), self.asking.as_ref().map(|(a, _)| a))
    }

    /// Starts the first worker (it starts the one waiting to take over):
    /// the thread made ahead, if there is one.
    pub fn start(self: &Arc<Self>) {
        let ahead = self.first_worker.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        match ahead {
            Some(first) if self.enlist() => {
                if first.start.send(Arc::clone(self)).is_err() {
                    self.leave();
                    self.spawn_worker();
                }
            }
            _ => self.spawn_worker(),
        }
    }

    /// With `--ask`: starts the approvals hub, before [`Supervisor::start`].
    pub fn start_asking(self: &Arc<Self>) -> std::io::Result<()> {
        let setup = self.ask_setup.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        let (Some(setup), Some((_, questions))) = (setup, &self.asking) else { return Ok(()) };
        let me = Arc::downgrade(self);
        let settle = Box::new(move |s| {
            if let Some(me) = me.upgrade() {
                me.settled(s);
            }
        });
        let policy = setup.policy_file.is_some();
        let hub = crate::approvals::hub::Hub::start(setup.listener, setup.timeout, policy, settle)?;
        let _ = questions.hub.set(hub);
        Ok(())
    }

    /// Ends the approvals hub (open questions are refused) at the
    /// session's end.
    pub fn stop_asking(&self) {
        if let Some(hub) = self.asking.as_ref().and_then(|(_, q)| q.hub.get()) {
            hub.stop();
        }
    }

    fn spawn_worker(self: &Arc<Self>) {
        if !self.enlist() {
            return;
        }
        let me = Arc::clone(self);
        let spawned = std::thread::Builder::new().name("interpose-worker".into()).spawn(move || me.worker());
        if spawned.is_err() {
            self.leave();
        }
    }

    /// Counts one more worker, idle; false (and counted nothing) when
    /// there are as many as there may be.
    fn enlist(&self) -> bool {
        if self.workers.fetch_add(1, Ordering::SeqCst) >= MAX_WORKERS {
            self.workers.fetch_sub(1, Ordering::SeqCst);
            return false;
        }
        self.idle.fetch_add(1, Ordering::SeqCst);
        true
    }

    /// Counts a worker, idle, out.
    fn leave(&self) {
        self.workers.fetch_sub(1, Ordering::SeqCst);
        self.idle.fetch_sub(1, Ordering::SeqCst);
    }

    fn worker(self: Arc<Self>) {
        let mut held = None;
        // The one to take over from the first holder is started once its
        // first call is answered: until then the only sandboxed task is
        // the command's first, waiting for that very call (its exec), so
        // no other call can wait behind it, and the thread is not made
        // while the command waits.
        let mut standby_due = false;
        loop {
            let tenure = match held {
                Some(t) => t,
                None => {
                    let Some((t, alone)) = self.turn.take() else { return self.leave() };
                    match alone {
                        true if t.is_first() => standby_due = true,
                        // Nobody is left to take over from us if a call
                        // stalls: start someone who can.
                        true => self.spawn_worker(),
                        false => {}
                    }
                    held = Some(t);
                    t
                }
            };
            let received = match seccomp::recv(self.listener.as_fd()) {
                // The caller was killed before we read it, or no task uses
                // the filter any more: then the listener reports a hang-up
                // and RECV would fail at once forever.
                Err(Errno::ENOENT) if self.listener_hung_up() => None,
                other => Some(other),
            };
            let notif = match received {
                Some(Ok(n)) => n,
                Some(Err(Errno::EINTR | Errno::ENOENT)) => continue,
                // Hung up: every worker ends, none is started.
                None => {
                    self.turn.close();
                    return self.leave();
                }
                Some(Err(e)) => {
                    tracing::error!("receiving notifications failed: {e}; the worker stops");
                    self.turn.release(tenure);
                    return self.leave();
                }
            };
            if self.floor {
                // `interpose bench`'s notification floor, which enforces
                // nothing and says so (a hidden flag): the bare round trip.
                let resp = NotifResp { id: notif.id, val: 0, error: 0, flags: seccomp::USER_NOTIF_FLAG_CONTINUE };
                let _ = seccomp::send(self.listener.as_fd(), resp);
                continue;
            }
            let started = std::time::Instant::now();
            self.turn.busy(tenure, started);
            self.idle.fetch_sub(1, Ordering::SeqCst);
            self.stats.notifications.fetch_add(1, Ordering::Relaxed);
            self.dispatch(&notif, started);
            self.idle.fetch_add(1, Ordering::SeqCst);
            if std::mem::take(&mut standby_due) {
                self.spawn_worker();
            }
            if !self.turn.done(tenure) {
                // Taken over while this call stalled: wait like the rest.
                held = None;
                identity::forget();
            }
        }
    }

    /// Handles notification `notif` (received at `started`) and answers
    /// it, or holds it for a question.
    fn dispatch(self: &Arc<Self>, notif: &seccomp::Notif, started: std::time::Instant) {
        // Records carry the time the call arrived: workers write them in
        // the order they finish, which is not the order of the calls.
        let received_ns = if self.audit.is_some() { audit::now_ns() } else { 0 };
        // A bug that panics while handling a call must not leave the
        // caller waiting or the worker gone: the call is refused, and
        // the worker goes on.
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handle::handle(&self.context(), notif)))
            .unwrap_or_else(|_| {
                tracing::error!("handling syscall {} panicked; the call is refused", notif.data.nr);
                handle::Outcome::refused(Errno::EPERM)
            });
        if let Some((ask, tgid)) = outcome.held {
            return self.hold(notif, (ask, tgid), outcome.checks, received_ns);
        }
        self.finish(notif, outcome, (started, received_ns));
    }

    /// Answers a handled notification and records what was decided.
    fn finish(
        self: &Arc<Self>,
        notif: &seccomp::Notif,
        outcome: handle::Outcome,
        (started, received_ns): (std::time::Instant, u64),
    ) {
        // Where a denied call came from is read while the caller still
        // waits for the answer, so it describes the moment of the call.
        let context = (self.audit.is_some() && outcome.checks.iter().any(|c| c.decision.refuses()))
            .then(|| self.denial_context(notif));
        // The caller's pid and name, also read while it waits: after the
        // answer it may exec, and a name read then could be the new
        // program's, or (cached) the old one's for the new program.
        let recorded = match self.audit_level {
            AuditLevel::All => !outcome.checks.is_empty(),
            AuditLevel::Deny => context.is_some(),
        };
        let who = (self.audit.is_some() && recorded).then(|| self.process_of(notif.pid, context.as_ref()));
        if outcome.execs {
            // An allowed exec: after it the caller has a new name (and a
            // thread that execs becomes the process) and the credentials
            // the kernel computes for the new program, so every cached
            // name and identity is read again; bumped before the answer
            // lets it happen.
            self.memory.credentials_change();
        }
        // Kept before the answer: a command whose exec is refused may
        // exit at once, and the explanation is read when it has.
        for c in outcome.checks.iter().filter(|c| c.access == AccessKind::Exec && c.decision != Verdict::Allow) {
            self.keep_exec_refusal(c);
        }
        for c in outcome.checks.iter().filter(|c| c.decision == Verdict::Deny) {
            self.keep_carve_out_refusal(c);
            self.refused.lock().unwrap_or_else(std::sync::PoisonError::into_inner).count(c, &self.repeat_hasher);
        }
        let mut checks = outcome.checks;
        // The time to the answer: once it is sent, the caller may run on
        // this worker's CPU (a synchronous wake-up) until its next call, and
        // an exec's whole start would be counted as the supervisor's.
        let mut answered = None;
        match outcome.answer {
            Some(Answer::Later(retry)) => self.answer_later(notif.id, retry),
            Some(Answer::VerifiedExec(v)) => {
                if let Some(refused) = self.verified_exec(notif.id, v) {
                    self.keep_exec_refusal(&refused);
                    checks.push(refused);
                }
            }
            Some(answer) => {
                answered = Some(started.elapsed());
                self.answer(notif.id, answer);
            }
            None => {}
        }
        let handling = answered.unwrap_or_else(|| started.elapsed());
        self.record(notif, checks, outcome.argv, context, who, (handling, received_ns));
    }

    /// `--ask`: holds `notif`, which asks `ask`, for a question (joining
    /// an identical open one), or refuses it at once when it cannot be
    /// asked (no client, too many questions open).
    fn hold(
        self: &Arc<Self>,
        notif: &seccomp::Notif,
        (ask, tgid): (ask::Ask, u32),
        checks: Vec<handle::Check>,
        received_ns: u64,
    ) {
        let Some((answers, questions)) = &self.asking else {
            return self.answer(notif.id, Answer::Fail(Errno::EACCES));
        };
        let held = held::Held { notif: *notif, checks, received_ns };
        let Err(held) = questions.join(tgid, &ask, held) else { return };
        let (exe, argv) = ask::process_words(tgid);
        let request = crate::approvals::Request {
            id: 0,
            pid: tgid,
            tid: notif.pid,
            exe: audit::Bytes(exe),
            argv: argv.into_iter().map(audit::Bytes).collect(),
            syscall: held.checks.last().map_or("?", |c| c.syscall).to_string(),
            path: audit::Bytes(ask.path.clone()),
            access: AccessKind::from(ask.access),
            what_else: ask::what_else(&ask.path, ask.access, answers.policy_file.is_some()),
        };
        let question = held::Question { tgid, ask, calls: vec![held], request, asked_ns: audit::now_ns() };
        if let Err(refused) = questions.ask(question) {
            let (question, by) = *refused;
            self.refuse_held(question, by, 0, std::time::Duration::ZERO, None);
        }
    }

    /// The approvals hub settled question `s`: the held calls are performed
    /// (an allow: handled again, now finding the answer) or refused.
    fn settled(self: &Arc<Self>, s: crate::approvals::hub::Settled) {
        use crate::approvals::{Decision, Scope};
        let Some((answers, questions)) = &self.asking else { return };
        let remember = |q: &held::Question| {
            let ids: Vec<u64> = q.calls.iter().map(|c| c.notif.id).collect();
            answers.remember((s.decision, s.scope), q.tgid, &q.ask, &ids);
        };
        let Some(mut question) = questions.settle(&s, remember) else { return };
        let mut policy_error = None;
        if s.decision == Decision::Allow && s.scope == Scope::Policy {
            if let Some(file) = &answers.policy_file {
                // As interpose, not as the last caller this thread acted for.
                if let Err(e) = identity::as_supervisor(|| ask::write_policy_rule(file, &question.ask)) {
                    tracing::warn!("approvals: the rule was not written ({e}); allowed for the session");
                    policy_error = Some(e);
                }
            }
        }
        if s.decision == Decision::Deny {
            return self.refuse_held(question, s.by, s.id, s.waited, Some(s.scope));
        }
        self.record_question(&question, (Verdict::Allow, s.scope, s.by), s.id, s.waited, policy_error);
        let calls = std::mem::take(&mut question.calls);
        let ids: Vec<u64> = calls.iter().map(|c| c.notif.id).collect();
        for held in calls {
            self.dispatch(&held.notif, std::time::Instant::now());
        }
        answers.forget_once(&ids);
    }

    /// Refuses every call held for `question` (`by` says why), recording
    /// the refusal each would have had.
    fn refuse_held(
        self: &Arc<Self>,
        mut question: held::Question,
        by: crate::approvals::SettledBy,
        id: u64,
        waited: std::time::Duration,
        scope: Option<crate::approvals::Scope>,
    ) {
        let scope = scope.unwrap_or_default();
        self.record_question(&question, (Verdict::Deny, scope, by), id, waited, None);
        for held in std::mem::take(&mut question.calls) {
            let mut checks = held.checks;
            if let Some(last) = checks.last_mut() {
                last.reason = handle::Why::Note(by.refusal(), RuleKind::Approval);
            }
            let outcome = handle::Outcome { checks, ..handle::Outcome::refused(Errno::EACCES) };
            self.finish(&held.notif, outcome, (std::time::Instant::now(), held.received_ns));
        }
    }

    /// Writes the question record of a settled question.
    fn record_question(
        &self,
        q: &held::Question,
        (decision, scope, by): (Verdict, crate::approvals::Scope, crate::approvals::SettledBy),
        id: u64,
        waited: std::time::Duration,
        policy_error: Option<String>,
    ) {
        let Some(sink) = &self.audit else { return };
        sink.send(audit::Record::Question(Box::new(audit::Question {
            seq: sink.next_seq(),
            time_ns: q.asked_ns,
            id,
            pid: q.tgid,
            tid: q.request.tid,
            exe: q.request.exe.clone(),
            syscall: q.request.syscall.clone(),
            path: q.request.path.clone(),
            access: q.request.access,
            decision,
            scope: scope.name().to_string(),
            by: by.name().to_string(),
            wait_ms: waited.as_millis() as u64,
            calls: q.calls.len() as u32,
            policy_error,
        })));
    }

    /// Waits (up to a second) until no worker is handling a notification, so
    /// that every decision already made has reached the audit queue. Called
    /// once the sandbox's processes are gone, when no new one can come.
    pub fn quiesce(&self) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
        while self.idle.load(Ordering::SeqCst) < self.workers.load(Ordering::SeqCst)
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// Ends the trail, if there is one, with `exit_status` and this
    /// supervisor's counts, and waits until it is written; why writing it
    /// failed, if it did.
    pub fn end_trail(&self, exit_status: i32, journal: Option<audit::JournalLink>) -> Option<String> {
        let sink = self.audit.as_ref()?;
        let seen = std::mem::take(&mut *self.repeats.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
        let mut counts: Vec<[u64; 2]> =
            seen.into_values().filter(|&(_, again)| again > 0).map(|(seq, again)| [seq, again]).collect();
        if sink.stalled().is_some() {
            sink.abandon();
        }
        if !counts.is_empty() {
            counts.sort_unstable();
            sink.send_last(audit::Record::Repeats(audit::Repeats { counts }));
        }
        sink.send_last(audit::Record::SessionEnd(audit::SessionEnd {
            exit_status,
            allowed: self.stats.allowed.load(Ordering::Relaxed),
            denied: self.stats.denied.load(Ordering::Relaxed),
            would_deny: self.stats.would_deny.load(Ordering::Relaxed),
            dropped_allow_records: sink.dropped(),
            time_ns: audit::now_ns(),
            supervisor_lost: None,
            journal,
        }));
        sink.flush();
        let why = sink.failure()?;
        Some(match sink.abandoned() {
            true => format!("{why}; {} record(s) were not written", sink.lost()),
            false => why,
        })
    }

    /// Blocks until no task uses the listener's filter any more (every
    /// process it was installed on has exited).
    pub fn wait_for_hang_up(&self) {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        loop {
            // No events asked for: only a hang-up or an error wakes us.
            let mut fds = [PollFd::new(self.listener.as_fd(), PollFlags::empty())];
            match poll(&mut fds, PollTimeout::NONE) {
                Ok(_) if fds[0].revents().is_some_and(|r| r.intersects(PollFlags::POLLHUP | PollFlags::POLLERR)) => {
                    return
                }
                Ok(_) | Err(Errno::EINTR) => {}
                Err(_) => return,
            }
        }
    }

    /// Waits until the listener has a notification or has hung up; true for
    /// a hang-up (every sandboxed task has exited).
    fn listener_hung_up(&self) -> bool {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        let mut fds = [PollFd::new(self.listener.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) => fds[0].revents().is_some_and(|r| r.contains(PollFlags::POLLHUP)),
            Err(_) => false,
        }
    }

    /// Hands a call that would block to the retry queue; refuses it with
    /// `EAGAIN` when as many calls wait already as the bound allows.
    fn answer_later(self: &Arc<Self>, id: u64, retry: later::Retry) {
        if self.later.wait(self, id, retry).is_err() {
            self.answer(id, Answer::Fail(Errno::EAGAIN));
        }
    }

    fn answer(&self, id: u64, answer: Answer) {
        let listener = self.listener.as_fd();
        let result = match answer {
            Answer::Continue(_) => {
                seccomp::send(listener, NotifResp { id, val: 0, error: 0, flags: seccomp::USER_NOTIF_FLAG_CONTINUE })
            }
            Answer::Fail(e) => seccomp::send(listener, NotifResp { id, val: 0, error: -(e as i32), flags: 0 }),
            Answer::Value(val) => seccomp::send(listener, NotifResp { id, val, error: 0, flags: 0 }),
            // Waiting calls go to `later` before this, and execs to be
            // checked to `verified_exec`; never left unanswered.
            Answer::Later(_) | Answer::VerifiedExec(_) => {
                seccomp::send(listener, NotifResp { id, val: 0, error: -libc::EAGAIN, flags: 0 })
            }
            // A runtime's callers may not wait killable only: a signal could
            // end the call between two steps and leave the descriptor
            // behind, so it is installed and answered in one.
            Answer::Install { fd, cloexec } if self.ground.signals_interrupt => {
                match seccomp::addfd_send(listener, id, fd.as_fd(), cloexec) {
                    Ok(_) | Err(Errno::ENOENT) => Ok(()),
                    Err(e) => seccomp::send(listener, NotifResp { id, val: 0, error: -(e as i32), flags: 0 }),
                }
            }
            // Installed, then answered with its number: SEND wakes the
            // caller on this CPU (sync wake-up), where ADDFD_FLAG_SEND wakes
            // it like any completion, on whichever CPU (an allowed open in a
            // loop: 55 against 78 us, docs/performance.md). Nothing can come
            // between the two for the caller: it waits killable only
            // (WAIT_KILLABLE_RECV), so only its death ends the wait, and
            // the descriptor dies with it.
            Answer::Install { fd, cloexec } => match seccomp::addfd(listener, id, fd.as_fd(), cloexec) {
                Ok(n) => seccomp::send(listener, NotifResp { id, val: i64::from(n), error: 0, flags: 0 }),
                Err(Errno::ENOENT) => Ok(()),
                // Installing failed (the caller is out of descriptors, say):
                // the syscall fails with that error instead.
                Err(e) => seccomp::send(listener, NotifResp { id, val: 0, error: -(e as i32), flags: 0 }),
            },
        };
        match result {
            // ENOENT: the caller went away (killed, or interrupted) meanwhile.
            Ok(()) | Err(Errno::ENOENT) => {}
            Err(e) => tracing::warn!("answering notification {id} failed: {e}"),
        }
    }

    /// Gathers where a denied call came from: cwd, ancestry up to the
    /// sandboxed command, and the calling instruction mapped to a file and
    /// offset.
    fn denial_context(&self, notif: &seccomp::Notif) -> audit::DenialContext {
        use std::os::unix::ffi::OsStrExt;
        let tid = notif.pid;
        let cwd = std::fs::read_link(format!("/proc/{tid}/cwd"))
            .map(|p| p.as_os_str().as_bytes().to_vec())
            .unwrap_or_default();
        let me = std::process::id();
        let mut ancestors = Vec::new();
        let mut at = self.process_of(tid, None).0;
        let init_shim = self.ground.command_root.is_some();
        while at > 1 && at != me && ancestors.len() < 64 {
            // One read of /proc/<pid>/stat gives the name and the parent.
            let Some((name, parent)) = crate::sys::procfs::name_and_parent(at) else { break };
            if init_shim && parent == me {
                // The PID namespace's init, a copy of interpose: not a
                // program of the command's.
                break;
            }
            ancestors.push((at, name));
            at = parent;
        }
        let ip = notif.data.instruction_pointer;
        let code = code_location(ancestors.first().map_or(tid, |a| a.0), tid, ip, self.memory.generation());
        audit::DenialContext { cwd: audit::Bytes(cwd), ancestors, code }
    }

    /// The process id and name of thread `tid`, from one read of
    /// `/proc/<tid>/status` (its first lines hold Name and Tgid), kept with
    /// the worker's identity of that thread until the next exec anywhere in
    /// the sandbox ([`identity::process_name`]). Called only while `tid`
    /// waits for an answer, so it cannot exec meanwhile: a kept name is the
    /// program's that made the call, and an exec bumps the generation
    /// before it is answered. A denied process may be gone by the time its
    /// record is written; the denial context, taken before the answer,
    /// names it then.
    fn process_of(&self, tid: u32, context: Option<&audit::DenialContext>) -> (u32, String) {
        // The context was read before the answer, while the caller waited:
        // it names the process even if it is gone now.
        if let Some((pid, name)) = context.and_then(|c| c.ancestors.first()) {
            return (*pid, name.clone());
        }
        // With the process id known from the identity's pidfd, only the
        // name is read: `comm` is a third of the status file's cost.
        let read = |tgid: Option<u32>| match tgid {
            Some(pid) => Some((pid, crate::sys::procfs::comm(tid)?)),
            None => {
                let status = crate::sys::procfs::Status::of(tid)?;
                let pid = status.field("Tgid:").and_then(|v| v.parse().ok()).unwrap_or(tid);
                Some((pid, status.field("Name:").map(str::to_string).unwrap_or_default()))
            }
        };
        identity::process_name(tid, self.memory.generation(), read).unwrap_or((tid, String::new()))
    }

    fn keep_exec_refusal(&self, c: &handle::Check) {
        use std::os::unix::ffi::OsStrExt;
        let mut kept = self.exec_refusals.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if kept.len() >= EXEC_REFUSALS_KEPT {
            return;
        }
        let (rule, remedy) = match c.reason {
            handle::Why::Verdict(r) => {
                let at = c.resolved.as_deref().unwrap_or(&c.path);
                let at = std::path::Path::new(std::ffi::OsStr::from_bytes(at));
                (self.ground.surface.describe(r), Some(self.ground.surface.remedy(at, crate::policy::Access::Exec, r)))
            }
            handle::Why::Note(n, _) => (n.to_string(), None),
        };
        kept.push(ExecRefusal { path: c.path.clone(), resolved: c.resolved.clone(), rule, remedy, errno: c.errno });
    }

    fn keep_carve_out_refusal(&self, c: &handle::Check) {
        if let handle::Why::Note(handle::BACKSTOP_EXEC, _) = c.reason {
            let mut kept = self.backstop_execs.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            kept.0 += 1;
            if kept.1.len() < 3 {
                kept.1.push(c.resolved.clone().unwrap_or_else(|| c.path.clone()));
            }
            return;
        }
        let handle::Why::Verdict(r) = c.reason else { return };
        if !self.ground.surface.is_carve_out(r) {
            return;
        }
        let mut kept = self.carve_out_refusals.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        kept.0 += 1;
        if kept.1.len() < 3 {
            let path = c.resolved.clone().unwrap_or_else(|| c.path.clone());
            kept.1.push((c.access, path, self.ground.surface.describe(r)));
        }
    }

    /// What the session's carve-outs refused, and the programs the backstop
    /// could not run: a program may go on without what it was refused (npm
    /// skips a file it cannot write, nyc measures no coverage), so the
    /// session's end says so. Empty when nothing was refused so.
    pub fn carve_out_summary(&self) -> Vec<String> {
        let mut lines = Vec::new();
        let execs = self.backstop_execs.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if execs.0 > 0 {
            lines.push(format!("{} exec(s) of a program {}:", execs.0, handle::BACKSTOP_EXEC));
            for path in &execs.1 {
                lines.push(format!("  exec {}", crate::forensics::sanitize(&String::from_utf8_lossy(path))));
            }
        }
        drop(execs);
        let kept = self.carve_out_refusals.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if kept.0 == 0 {
            return lines;
        }
        lines.push(format!(
            "{} call(s) refused by carve-outs; a program may have gone on without them{}:",
            kept.0,
            if self.records() { " (the trail has them all)" } else { " (--audit FILE records them all)" }
        ));
        for (access, path, rule) in &kept.1 {
            let path = crate::forensics::sanitize(&String::from_utf8_lossy(path));
            let access =
                serde_json::to_value(access).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
            lines.push(format!("  {access} {path}: {rule}"));
        }
        lines
    }

    /// The line a session with refusals ends with: how many accesses were
    /// refused, of how many paths, and `next`: what to run to see them.
    /// `None` when nothing was refused.
    pub fn refusal_summary(&self, next: &str) -> Option<String> {
        let calls = self.stats.denied.load(Ordering::Relaxed);
        if calls == 0 {
            return None;
        }
        let refused = self.refused.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let paths = refused.paths.len();
        let more = if paths >= Refused::PATHS { " or more" } else { "" };
        Some(format!(
            "{} access{} refused, to {paths}{more} path{}; {next}",
            calls,
            if calls == 1 { " was" } else { "es were" },
            if paths == 1 && more.is_empty() { "" } else { "s" },
        ))
    }

    /// Whether any write, create or delete was refused this session.
    pub fn refused_writes(&self) -> bool {
        self.refused.lock().unwrap_or_else(std::sync::PoisonError::into_inner).writes > 0
    }

    /// The execs refused so far (the first few), oldest first.
    pub fn exec_refusals(&self) -> Vec<ExecRefusal> {
        self.exec_refusals.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    fn record(
        &self,
        notif: &seccomp::Notif,
        checks: Vec<handle::Check>,
        argv: Option<(Vec<Vec<u8>>, bool)>,
        context: Option<audit::DenialContext>,
        who: Option<(u32, String)>,
        (handling, received_ns): (std::time::Duration, u64),
    ) {
        for c in &checks {
            match c.decision {
                Verdict::Allow => self.stats.allowed.fetch_add(1, Ordering::Relaxed),
                Verdict::Deny => self.stats.denied.fetch_add(1, Ordering::Relaxed),
                Verdict::WouldDeny => self.stats.would_deny.fetch_add(1, Ordering::Relaxed),
                Verdict::Error => 0,
            };
        }
        let Some(sink) = &self.audit else { return };
        let handling_ns = handling.as_nanos() as u64;
        let Some((pid, comm)) = who else { return };
        for c in checks {
            if self.audit_level == AuditLevel::Deny && !c.decision.refuses() {
                continue;
            }
            // The same access to the same object decided the same way again
            // (an exec is always recorded: its argv is the tree's): by the
            // same process where it changes something, by any process of the
            // same program where it only reads or looks (a build's hundred
            // `sed`s reading the same locale files are one record).
            let mut first = None;
            if matches!(c.decision, Verdict::Allow | Verdict::Error) && argv.is_none() {
                use std::hash::BuildHasher;
                let object = c.resolved.as_deref().unwrap_or(&c.path);
                let who = match c.access {
                    AccessKind::Read | AccessKind::Stat | AccessKind::Exec => (0, comm.as_str()),
                    _ => (pid, ""),
                };
                let key = self.repeat_hasher.hash_one((who, object, c.access, c.decision, c.errno.map(|e| e as i32)));
                let mut seen = self.repeats.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                if let Some((_, again)) = seen.get_mut(&key) {
                    *again += 1;
                    continue;
                }
                let seq = sink.next_seq();
                if seen.len() < REPEATS_KEPT {
                    seen.insert(key, (seq, 0));
                }
                first = Some(seq);
            }
            let seq = first.unwrap_or_else(|| sink.next_seq());
            let (rule, rule_kind) = match c.reason {
                handle::Why::Verdict(r) => {
                    let named = match r {
                        Reason::Rule(i) => self.rule_names.get(i as usize).cloned(),
                        _ => None,
                    };
                    (named.unwrap_or_else(|| self.ground.surface.describe(r)), rule_kind(&self.ground.surface, r))
                }
                handle::Why::Note(n, kind) => (n.to_string(), kind),
            };
            // Written only where it is not the path as given (a third of
            // a record's bytes in a tree of long absolute paths).
            let resolved = c.resolved.as_ref().filter(|r| **r != c.path).cloned().map(audit::Bytes);
            sink.send(audit::Record::Decision(Box::new(audit::Decision {
                seq,
                time_ns: received_ns,
                pid,
                tid: notif.pid,
                comm: comm.clone(),
                syscall: std::borrow::Cow::Borrowed(c.syscall),
                nr: notif.data.nr,
                path: audit::Bytes(c.path),
                dirfd: c.dirfd.as_ref().map(|(n, _)| *n),
                dirfd_path: c.dirfd.map(|(_, p)| audit::Bytes(p)),
                resolved,
                access: c.access,
                decision: c.decision,
                errno: c.errno.map(audit::ErrnoName),
                rule,
                rule_kind,
                handling_ns,
                context: if c.decision.refuses() { context.clone() } else { None },
            })));
            if let (Some((argv, truncated)), AuditLevel::All) = (&argv, self.audit_level) {
                // The parent through the pidfd kept with the caller's
                // identity (its task alive: a leader that exec'd), else
                // from its stat file.
                let kept = identity::with_task(notif.pid, self.memory.generation(), |task, _| {
                    crate::sys::process::pidfd_ids(task).map(|ids| ids.ppid).ok()
                });
                let parent = kept.flatten().or_else(|| procs::parent_of(pid)).unwrap_or(0);
                sink.send(audit::Record::Exec(Box::new(audit::Exec {
                    seq: sink.next_seq(),
                    time_ns: received_ns,
                    pid,
                    ppid: parent,
                    program: audit::Bytes(c.resolved.unwrap_or_default()),
                    argv: argv.iter().map(|a| audit::Bytes(a.clone())).collect(),
                    argv_truncated: *truncated,
                })));
            }
        }
    }
}
