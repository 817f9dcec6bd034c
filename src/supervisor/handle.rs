//! Deciding one notification: read its paths, resolve, check, answer.

use super::context::Context;
use super::cover::Cover;
use super::identity;
use super::later;
use super::resolve::{Caller, Lookup, Nameless, ProcEntry, Request, ResolveError, Resolved, Target};
use super::Answer;
use crate::audit::{AccessKind, RuleKind, Verdict};
use crate::policy::{Access, ProcPlace, Reason};
use crate::sys::fs::{self, Dir, OpenHow};
use crate::sys::{mem, process, seccomp, Errno};
use crate::syscalls::table;
use crate::syscalls::{Args, Follow, Op, OpArgs, PathAt, Syscall};
use std::borrow::Cow;
use std::os::fd::{AsFd, OwnedFd};

mod exec;
mod metadata;
mod names;
mod open;
mod sockets;

/// One path decision, for the counters and the audit trail.
#[derive(Debug)]
pub struct Check {
    pub syscall: &'static str,
    pub path: Vec<u8>,
    pub resolved: Option<Vec<u8>>,
    pub access: AccessKind,
    /// What was decided (`Error`: the call failed before a decision, as the
    /// kernel would have failed it: a missing file, a loop).
    pub decision: Verdict,
    pub errno: Option<Errno>,
    pub reason: Why,
    /// For a relative path (or one on a descriptor): the caller's dirfd
    /// number (`AT_FDCWD` for its cwd) and what it pointed to. Filled only
    /// when auditing.
    pub dirfd: Option<(i32, Vec<u8>)>,
}

/// What decided a check; turned into text only when it is audited.
#[derive(Debug, Clone, Copy)]
pub enum Why {
    /// The surface's verdict.
    Verdict(Reason),
    /// A fixed explanation (resolution failed, does not exist, ...) and the
    /// kind of rule it is.
    Note(&'static str, RuleKind),
}

/// What to answer (nothing if the caller went away) and what was decided.
pub struct Outcome {
    pub answer: Option<Answer>,
    pub checks: Vec<Check>,
    /// For an allowed exec when auditing: its argument vector, read before
    /// the answer (after it the caller's memory is replaced).
    pub argv: Option<(Vec<Vec<u8>>, bool)>,
    /// An exec was allowed: the kernel recomputes the caller's credentials
    /// (a process that kept its capabilities across a change to another
    /// user loses them), and it gets a new name.
    pub execs: bool,
    /// With `--ask`: the call is held, unanswered, for a person to decide
    /// this, asked by this process (the refusal it would get otherwise is
    /// the last check).
    pub held: Option<(super::ask::Ask, u32)>,
}

impl Outcome {
    /// `answer`, nothing checked or recorded.
    pub fn unchecked(answer: Option<Answer>) -> Outcome {
        Outcome { answer, checks: Vec::new(), argv: None, execs: false, held: None }
    }

    /// The call refused with `errno`, nothing recorded.
    pub fn refused(errno: Errno) -> Outcome {
        Outcome::unchecked(Some(Answer::Fail(errno)))
    }
}

/// The largest extended attribute value or list the kernel handles.
const XATTR_SIZE_MAX: u64 = 65536;

/// What a metadata call asks, read from its arguments before any lookup.
enum Asked {
    /// `access`: the mode, and whether with the effective ids.
    Access { mode: u32, effective: bool },
    /// `getxattr`: the name, where the value goes and how much room it has.
    Getxattr { name: std::ffi::CString, value: u64, size: usize },
    /// `listxattr`: where the list goes and how much room it has.
    Listxattr { list: u64, size: usize },
    /// The stat family and readlink, whose arguments are read later.
    Other,
}

/// At most this many arguments, each at most this long, go into an exec
/// record; `argv_truncated` says when more were left out.
const ARGV_MAX: usize = 64;
/// Why an exec the surface allows through a grant pattern alone is refused.
pub(super) const BACKSTOP_EXEC: &str = "made after the start where only a grant pattern allows it, and the \
    kernel's backstop (Landlock) runs programs only from places granted at the start";
const ARG_MAX_LEN: usize = 512;

/// What a call whose decoded arguments do not fit its op is refused with:
/// a bug, and the safe answer to a bug is no (as for a call not in the
/// table).
const MISDECODED: Errno = Errno::ENOSYS;

const AT_EMPTY_PATH: u64 = libc::AT_EMPTY_PATH as u64;
const AT_SYMLINK_NOFOLLOW: u64 = libc::AT_SYMLINK_NOFOLLOW as u64;
const AT_SYMLINK_FOLLOW: u64 = libc::AT_SYMLINK_FOLLOW as u64;

pub fn handle(cx: &Context<'_>, notif: &seccomp::Notif) -> Outcome {
    let Some(row) = table::lookup(notif.data.nr) else {
        // The filter only traps table rows; anything else is a bug, and the
        // safe answer to a bug is no.
        return Outcome::refused(Errno::ENOSYS);
    };
    // Fault injection for the test of panic containment, in debug builds
    // only: a path argument of exactly this text panics the worker.
    #[cfg(debug_assertions)]
    if let Some(addr) = Args::decode(row, &notif.data.args).path {
        let mut buf = [0u8; mem::PATH_MAX];
        if mem::read_path(notif.pid, addr, &mut buf).is_ok_and(|n| &buf[..n] == b"/interpose-test/panic-the-worker") {
            panic!("fault injected for the test of panic containment");
        }
    }
    if row.op == Op::Creds {
        // The caller is about to change its credentials: what was cached
        // about them goes stale before the change takes effect.
        cx.memory.caller_changes_credentials(row.nr == libc::SYS_setgroups as i32);
        return Outcome::unchecked(Some(Answer::Continue(Cover::credentials())));
    }
    let mut call = Call {
        cx: *cx,
        notif,
        row,
        args: Args::decode(row, &notif.data.args),
        checks: Vec::new(),
        tgid: std::cell::OnceCell::new(),
        own_ids: std::cell::OnceCell::new(),
        argv: None,
        execs: false,
        decided_by: None,
        base_hint: None,
        joined: None,
        approved: false,
        held: None,
        as_caller: false,
        ids_kept: false,
    };
    // Everything below runs with the caller's own credentials: never grant
    // through the supervisor what the caller could not do itself. An open
    // or exec continued as written acts on nothing before the kernel makes
    // it with the caller's own credentials, so without a trail (whose
    // records name the process from what is kept with them) they are taken
    // only where the call is not continued so ([`Call::open`],
    // [`Call::exec`]).
    // A stat on a descriptor the caller holds acts on that descriptor alone
    // ([`Call::held_descriptor`]), which needs no credentials either; a
    // stat by path takes them first ([`Call::metadata`]).
    let deferred =
        matches!(row.op, Op::Open | Op::Creat | Op::Openat2 | Op::Exec | Op::Statbuf | Op::Statx | Op::Statfs)
            && !cx.ground.records;
    let ready = if deferred { Ok(()) } else { call.take_identity() };
    let answer = match ready.and_then(|()| call.run()) {
        Ok(a) => Some(a),
        Err(Stop::Fail(e)) => Some(Answer::Fail(e)),
        Err(Stop::Gone | Stop::Held) => None,
    };
    // Numbers read of a task whose identity the call took are kept with it
    // (every `/proc/self` a program's start reads asks for them), once the
    // call is found still pending after they were read: the caller was
    // then alive throughout, so the numbers and the entry kept for its
    // thread number (taken in this call) are its own, whatever a retaking
    // of the identity within the call replaced.
    if let (true, Some(&ids), false) = (call.as_caller, call.own_ids.get(), call.ids_kept) {
        if cx.still_pending(notif.id) {
            identity::keep_own_ids(notif.pid, cx.memory.generation(), ids);
        }
    }
    Outcome { answer, checks: call.checks, argv: call.argv, execs: call.execs, held: call.held }
}

enum Stop {
    /// Fail the call with this errno.
    Fail(Errno),
    /// The notification is no longer valid: the caller is gone.
    Gone,
    /// Held for a person to decide (`--ask`): nothing is answered now.
    Held,
}

impl From<Errno> for Stop {
    fn from(e: Errno) -> Self {
        Stop::Fail(e)
    }
}

/// A path argument read from the caller, with its starting directory.
struct PathArg {
    bytes: Vec<u8>,
    /// The starting directory's descriptor number in the caller (`AT_FDCWD`
    /// for its cwd) and our handle on it, when the path needed one.
    base: Option<(i32, OwnedFd)>,
}

/// A path with no `.` or `..`, as the kernel would start its lookup
/// ([`Call::plain_path`]).
struct PlainPath<'w> {
    /// Absolute: as written, or joined to its starting directory's path.
    path: Cow<'w, [u8]>,
    /// That directory's path, kept for the trail.
    base: Option<Vec<u8>>,
}

/// What a call on a name acts on ([`Call::parent`]).
enum Named {
    /// The directory holding the name, and the name.
    Entry(super::resolve::Parent),
    /// A last component that names no entry, and the directory it is in.
    Nameless(Nameless, OwnedFd),
}

impl Named {
    /// The directory the name is in.
    fn dir(&self) -> std::os::fd::BorrowedFd<'_> {
        match self {
            Named::Entry(p) => p.fd.as_fd(),
            Named::Nameless(_, fd) => fd.as_fd(),
        }
    }
}

/// A root to resolve absolute paths from.
enum Root<'a> {
    /// The caller's own, opened for this call.
    Own(OwnedFd),
    /// The command's, held by the supervisor.
    Shared(std::os::fd::BorrowedFd<'a>),
}

impl Root<'_> {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        match self {
            Root::Own(fd) => fd.as_fd(),
            Root::Shared(fd) => *fd,
        }
    }
}

/// One trapped call being answered: the notification, its table row, and
/// what has been learned and checked about it so far.
struct Call<'a> {
    /// What the handler is given of the supervisor.
    cx: Context<'a>,
    notif: &'a seccomp::Notif,
    row: &'static Syscall,
    /// The call's arguments, decoded once through its row.
    args: Args,
    checks: Vec<Check>,
    tgid: std::cell::OnceCell<u32>,
    /// The caller's ids in its own PID namespace.
    own_ids: std::cell::OnceCell<(u32, u32)>,
    argv: Option<(Vec<Vec<u8>>, bool)>,
    /// An exec was allowed ([`Outcome::execs`]).
    execs: bool,
    /// What allowed the last access checked.
    decided_by: Option<Reason>,
    /// With a trail: the directory a relative path started from, known
    /// from its resolution (dirfd number, path as written, directory), so
    /// the record need not read it back.
    base_hint: Option<(i32, Vec<u8>, Vec<u8>)>,
    /// A person allowed the last access checked (`--ask`): the call is
    /// performed here, never continued, since the backstop does not grant
    /// it.
    approved: bool,
    /// What the call is held for ([`Stop::Held`]), and the asking process.
    held: Option<(super::ask::Ask, u32)>,
    /// A stat's relative path already resolved by its starting directory's
    /// path ([`Call::by_joined_path`]).
    joined: Option<Resolved>,
    /// The worker has taken the caller's credentials ([`Call::take_identity`]).
    as_caller: bool,
    /// The caller's numbers in its own PID namespace came from what is
    /// kept with its identity.
    ids_kept: bool,
}

impl Call<'_> {
    /// Takes the caller's credentials for whatever the worker does next on
    /// its behalf (once a call): `Gone` if the caller is, refused if they
    /// cannot be taken (never acted on with the supervisor's own).
    fn take_identity(&mut self) -> Result<(), Stop> {
        if self.as_caller {
            return Ok(());
        }
        self.act_as_caller()?;
        self.as_caller = true;
        // What is kept with the identity just taken is this task's: its
        // numbers need no read of its status file.
        let (tgid, own_ids) = identity::kept_numbers(self.notif.pid, self.cx.memory.generation());
        if let Some(t) = tgid {
            let _ = self.tgid.set(t);
        }
        if let Some(ids) = own_ids {
            self.ids_kept = self.own_ids.set(ids).is_ok();
        }
        Ok(())
    }

    /// [`identity::act_as`] for the caller, which also keeps its pidfd.
    fn act_as_caller(&self) -> Result<(), Stop> {
        let (cx, tid) = (self.cx, self.notif.pid);
        match identity::act_as(tid, cx.memory.generation(), (cx.ground.set_groups, &cx.memory.groups)) {
            Ok(()) => Ok(()),
            Err(Errno::ESRCH) => Err(Stop::Gone),
            Err(e) => {
                tracing::error!("taking the caller's credentials failed: {e}; the call is refused");
                Err(Stop::Fail(Errno::EPERM))
            }
        }
    }

    /// Reads the path at `at` and opens its starting directory (the
    /// caller's cwd when there is no dirfd argument) if it is needed.
    fn path_arg(&self, at: PathAt, anchored: bool) -> Result<PathArg, Stop> {
        let bytes = self.read_path(at.addr)?;
        self.based(bytes, at.dirfd, anchored)
    }

    /// The path at `addr` in the caller.
    fn read_path(&self, addr: u64) -> Result<Vec<u8>, Stop> {
        Ok(with_path_buf(|buf| mem::read_path(self.notif.pid, addr, buf).map(|n| buf[..n].to_vec()))?)
    }

    /// `bytes` with its starting directory `dirfd` opened if it needs one
    /// (a relative path, or one anchored there).
    fn based(&self, bytes: Vec<u8>, dirfd: i32, anchored: bool) -> Result<PathArg, Stop> {
        let base = if bytes.first() == Some(&b'/') && !anchored { None } else { Some((dirfd, self.open_dir(dirfd)?)) };
        Ok(PathArg { bytes, base })
    }

    /// `newfstatat`, `statx` and `access` of a relative path with no `..`: looked up
    /// as its starting directory's path (read back from procfs, one
    /// `readlink`) joined to it, instead of from a handle on the directory
    /// whose result's path is read back (an `open`, a `readlink` and a
    /// `close` more, on the hottest call of `git status` and `find`). Where
    /// the joined path crosses no symlink and no `..` the object is the one
    /// at that path, canonical as joined, and that is what is decided and
    /// answered: a directory another thread moves meanwhile is the race
    /// the kernel has too, and nothing is mounted over a directory the
    /// command is in (it cannot mount; interpose's mounts come before the
    /// command enters its working directory). A missing name is answered
    /// there ([`crate::supervisor::resolve::Resolver::joined`]); anything
    /// else (a symlink, a directory with no path, procfs) gives the path
    /// back to be resolved from a handle as before.
    fn by_joined_path(&mut self, written: Vec<u8>, dirfd: i32, follow: bool) -> Result<PathArg, Vec<u8>> {
        if !matches!(self.row.op, Op::Statbuf | Op::Statx | Op::Access)
            || written.first().is_none_or(|&c| c == b'/')
            || self.cx.ground.isolated
            || written.split(|&b| b == b'/').any(|c| c == b"..")
        {
            return Err(written);
        }
        let Some(dir) = self.named_dir(dirfd) else { return Err(written) };
        let root = match self.root() {
            Ok(root) => root,
            Err(_) => return Err(written),
        };
        let no_base = PathArg { bytes: Vec::new(), base: None };
        let caller = self.caller(&no_base, root.as_ref());
        let req = Request { path: &written, follow, empty_path: false, resolve: 0, creates: false };
        let Some(r) = self.cx.ground.resolver.joined(&self.lookup(&caller), req, &dir) else { return Err(written) };
        self.joined = Some(r);
        if self.cx.ground.records {
            self.base_hint = Some((dirfd, written.clone(), dir));
        }
        Ok(PathArg { bytes: written, base: None })
    }

    /// A duplicate of the caller's descriptor `fd` (same open file
    /// description), taken with `pidfd_getfd` and checked to belong to the
    /// caller still waiting for this notification.
    fn caller_fd(&self, fd: i32) -> Result<OwnedFd, Stop> {
        let (dup, pending) = self.dup_caller_fd(fd)?;
        if !pending {
            self.still_valid()?;
        }
        Ok(dup)
    }

    /// [`Call::caller_fd`] for a caller that checks the notification is
    /// still pending itself before it acts on anything it read; and
    /// whether that is known already. It is when the duplicate came through
    /// the pidfd kept with the caller's identity
    /// ([`identity::with_task`]) once a notification of that task was
    /// found pending: the task it names is alive, so no other task has held
    /// its number since, and (where a signal cannot end the wait) a live
    /// caller still waits for the answer. `fstat`, the call a supervisor
    /// performs on a caller's descriptor most (a test runner's output
    /// capture makes a hundred thousand in a row), is then one
    /// `pidfd_getfd`.
    ///
    /// The pidfd is used as kept, without asking first whether its task is
    /// alive: a descriptor taken through it shows that it is, and then it
    /// is the caller (only one live task holds a number). Only a failure
    /// asks: a task that ended is another's number now, and the caller's
    /// identity (with its pidfd) is taken afresh. A caller whose identity
    /// was never taken has it taken here, which keeps its pidfd.
    fn dup_caller_fd(&self, fd: i32) -> Result<(OwnedFd, bool), Stop> {
        let waits = !self.cx.ground.signals_interrupt;
        let tid = self.notif.pid;
        for fresh in [false, true] {
            let generation = self.cx.memory.generation();
            let kept = identity::with_task(tid, generation, |task, confirmed| match process::pidfd_getfd(task, fd) {
                Ok(dup) => Some(Ok((dup, confirmed))),
                Err(e) if fresh || process::pidfd_alive(task) => Some(Err(e)),
                Err(_) => None,
            });
            match kept.flatten() {
                Some(taken) => {
                    let (dup, confirmed) = taken?;
                    if !confirmed {
                        self.still_valid()?;
                        identity::confirm_task(tid);
                    }
                    return Ok((dup, waits));
                }
                None if !fresh => self.act_as_caller()?,
                None => break,
            }
        }
        // No identity kept (a supervisor that takes none, a kernel before
        // 6.9): the calling thread's own table (a thread that unshared its
        // descriptors has one of its own); before Linux 6.9, the process's.
        let pidfd = match process::pidfd_open_thread(tid as libc::pid_t) {
            Err(Errno::EINVAL) => {
                let tgid = match self.tgid.get() {
                    Some(&t) => t,
                    None => {
                        let t = super::resolve::proc_status_field(tid, "Tgid:")
                            .and_then(|v| v.parse().ok())
                            .ok_or(Stop::Gone)?;
                        *self.tgid.get_or_init(|| t)
                    }
                };
                process::pidfd_open(tgid as libc::pid_t)?
            }
            other => other?,
        };
        Ok((process::pidfd_getfd(pidfd.as_fd(), fd)?, false))
    }

    /// The caller's root directory, through `/proc/<tid>/root`.
    fn caller_root(&self) -> Option<OwnedFd> {
        let path = std::ffi::CString::new(format!("/proc/{}/root", self.notif.pid)).ok()?;
        identity::retry_as_supervisor(|| fs::openat(Dir::Cwd, &path, libc::O_PATH | libc::O_DIRECTORY, 0)).ok()
    }

    /// `/proc/<tid>/cwd` for `AT_FDCWD`, else `/proc/<tid>/fd/<dirfd>`.
    fn dir_link(&self, dirfd: i32) -> Result<std::ffi::CString, Errno> {
        let path = if dirfd == libc::AT_FDCWD {
            format!("/proc/{}/cwd", self.notif.pid)
        } else if dirfd < 0 {
            return Err(Errno::EBADF);
        } else {
            format!("/proc/{}/fd/{dirfd}", self.notif.pid)
        };
        std::ffi::CString::new(path).map_err(|_| Errno::EINVAL)
    }

    /// The canonical path of the caller's cwd or descriptor `dirfd`, as
    /// the kernel reads it back (without opening it).
    fn dir_path(&self, dirfd: i32) -> Result<Vec<u8>, Errno> {
        let link = self.dir_link(dirfd)?;
        identity::retry_as_supervisor(|| {
            with_path_buf(|buf| fs::readlinkat(Dir::Cwd, &link, buf).map(|n| buf[..n].to_vec()))
        })
    }

    /// [`Call::dir_path`] where the directory has a path a lookup can take:
    /// not an object with none (a pipe, a socket), not a removed directory.
    fn named_dir(&self, dirfd: i32) -> Option<Vec<u8>> {
        self.dir_path(dirfd).ok().filter(|d| d.first() == Some(&b'/') && !d.ends_with(b" (deleted)"))
    }

    /// The caller's cwd (`AT_FDCWD`) or descriptor `dirfd`, as a handle to
    /// look names up from. A descriptor is the caller's own, duplicated
    /// through the pidfd kept for its thread (one system call, where
    /// opening `/proc/<tid>/fd/<n>` walks procfs: find's `openat(dirfd,
    /// name)` and `newfstatat(dirfd, name)` of every entry); the cwd has no
    /// such route and is opened through `/proc/<tid>/cwd`. Every caller
    /// checks that the notification is still pending before it acts on
    /// what it looks up.
    fn open_dir(&self, dirfd: i32) -> Result<OwnedFd, Stop> {
        if dirfd >= 0 {
            return Ok(self.dup_caller_fd(dirfd)?.0);
        }
        let cpath = self.dir_link(dirfd)?;
        // The caller's own starting point, looked up by the supervisor for
        // it (a caller that changed its credentials has its /proc entries
        // owned by root).
        Ok(identity::retry_as_supervisor(|| fs::openat(Dir::Cwd, &cpath, libc::O_PATH, 0))?)
    }

    /// Before an answer is written into the caller's memory: it is still
    /// the caller's ([`Call::still_valid`]), or is known to be without
    /// asking. That is so where the caller's identity was taken for this
    /// call from the entry kept for its thread number, whose task was
    /// found alive then (its number is no other task's) and once had a
    /// notification found pending while this worker held it: this worker
    /// takes notifications in order, so the task is the one that made this
    /// one, and the write reaches it as after an `ID_VALID` (both leave the
    /// caller the time of one call to die and have its number reused).
    fn still_the_caller(&self) -> Result<(), Stop> {
        if self.as_caller && identity::confirmed(self.notif.pid, self.cx.memory.generation()) {
            return Ok(());
        }
        self.still_valid()?;
        if self.as_caller {
            identity::confirm_task(self.notif.pid);
        }
        Ok(())
    }

    /// Everything read from the caller so far belongs to it only if the
    /// notification is still pending: after the caller dies its tid can be
    /// reused by another process.
    fn still_valid(&self) -> Result<(), Stop> {
        if self.cx.still_pending(self.notif.id) {
            Ok(())
        } else {
            Err(Stop::Gone)
        }
    }

    /// The root absolute paths start from, when it is not the
    /// supervisor's: in `--isolate` the caller's own (read per call), else
    /// the command's (a mount namespace of its own, whose `/proc` is its PID
    /// namespace's). Without it, resolving from the supervisor's root would
    /// decide on other objects: fails closed.
    fn root(&self) -> Result<Option<Root<'_>>, Errno> {
        if self.cx.ground.isolated {
            return self.caller_root().map(|r| Some(Root::Own(r))).ok_or(Errno::ESRCH);
        }
        Ok(self.cx.ground.command_root().map(Root::Shared))
    }

    fn caller<'c>(&'c self, arg: &'c PathArg, root: Option<&'c Root<'c>>) -> Caller<'c> {
        Caller {
            tid: self.notif.pid,
            tgid: &self.tgid,
            base: arg.base.as_ref().map(|(_, b)| b.as_fd()),
            root: root.map(Root::as_fd),
            own_ids: &self.own_ids,
        }
    }

    /// A lookup for `caller` against the supervisor's surface.
    fn lookup<'c>(&'c self, caller: &'c Caller<'c>) -> Lookup<'c> {
        Lookup { surface: &self.cx.ground.surface, procs: &self.cx.ground.procs, caller }
    }

    /// Resolves `arg` for this caller; `creates` for a call that may create
    /// a missing last component ([`Request::creates`]).
    fn resolve(
        &self,
        arg: &PathArg,
        follow: bool,
        empty_path: bool,
        resolve: u64,
        creates: bool,
    ) -> Result<Resolved, ResolveError> {
        let root = self.root()?;
        let req = Request { path: &arg.bytes, follow, empty_path, resolve, creates };
        let caller = self.caller(arg, root.as_ref());
        self.cx.ground.resolver.resolve(&self.lookup(&caller), req)
    }

    /// Whose `/proc` the canonical `path` lies in, for this caller.
    fn proc_entry(&self, path: &[u8]) -> ProcEntry {
        self.with_lookup(|at| self.cx.ground.resolver.proc_entry(at, path))
    }

    /// Runs `f` with a lookup for the caller that starts from no directory
    /// of its own (for a canonical path).
    fn with_lookup<T>(&self, f: impl FnOnce(&Lookup<'_>) -> T) -> T {
        let no_base = PathArg { bytes: Vec::new(), base: None };
        let caller = self.caller(&no_base, None);
        f(&self.lookup(&caller))
    }

    /// The text of a procfs `self` or `thread-self` link at the canonical
    /// `path`, as the caller reads it.
    fn self_link_text(&self, path: &[u8]) -> Option<Vec<u8>> {
        self.with_lookup(|at| self.cx.ground.resolver.self_link_text(at, path))
    }

    /// Runs `f`, which acts on an object in procfs for the caller: with the
    /// caller's credentials alone when the object is another process's.
    fn on_behalf<T>(&self, proc: ProcEntry, f: impl FnOnce() -> Result<T, Errno>) -> Result<T, Errno> {
        match proc {
            ProcEntry::Other => identity::without_ptrace(f),
            _ => f(),
        }
    }

    /// Decides `access` to what `arg` resolved to and records the decision.
    /// Returns the resolution when allowed.
    fn check(
        &mut self,
        arg: &PathArg,
        resolved: Result<Resolved, ResolveError>,
        access: Access,
    ) -> Result<Resolved, Stop> {
        let name = AccessKind::from(access);
        let r = match resolved {
            Ok(r) => r,
            Err(ResolveError::Errno(e)) => {
                self.push(arg, None, name, Verdict::Error, Some(e), Why::Note("resolution failed", RuleKind::Failure));
                return Err(Stop::Fail(e));
            }
            Err(ResolveError::OutsideProc(path, pid)) => {
                self.push(
                    arg,
                    Some(&path),
                    name,
                    Verdict::Deny,
                    Some(Errno::EACCES),
                    Why::Verdict(Reason::ProcOutside(pid)),
                );
                return Err(Stop::Fail(Errno::EACCES));
            }
        };
        // Absent: a call that creates nothing (or an O_TMPFILE directory
        // that is not there).
        if matches!(r.target, Target::Absent)
            || (matches!(r.target, Target::Missing { .. }) && access != Access::Create)
        {
            // Reading, executing, writing, connecting to or removing what
            // does not exist fails with ENOENT inside the surface or out,
            // as the kernel looks a name up before it checks a permission:
            // programs probe for optional files and sockets
            // (`/run/docker.sock`) and treat EACCES as an error. Existence
            // alone is no secret; stat reveals it too. Only creating, where
            // the missing name is the point, is decided.
            let why = Why::Note("does not exist", RuleKind::Failure);
            self.push(arg, Some(&r.path), name, Verdict::Error, Some(Errno::ENOENT), why);
            return Err(Stop::Fail(Errno::ENOENT));
        }
        match &r.target {
            // Reached only through a magic link of a sandboxed process: an
            // object (pipe, socket) the caller's family already holds.
            Target::Anonymous { .. } => {
                let why = Why::Note("object held by a sandboxed process", RuleKind::Held);
                self.push(arg, Some(&r.path), name, Verdict::Allow, None, why);
            }
            Target::Exists { fd, stat } if self.ungranted_terminal(stat, &r.path) => {
                // A terminal no surface entry grants (any /dev/pts/N but the
                // one interpose runs in) is one the command created, or
                // someone else's, refused even when learning: another
                // session's terminal would give its keystrokes away.
                if !self.cx.memory.created_terminal(&fs::fstat(fd.as_fd())?) {
                    let why = Why::Note("a terminal the command did not create", RuleKind::Terminal);
                    self.push(arg, Some(&r.path), name, Verdict::Deny, Some(Errno::EACCES), why);
                    return Err(Stop::Fail(Errno::EACCES));
                }
                let why = Why::Note("a terminal the command created", RuleKind::Terminal);
                self.push(arg, Some(&r.path), name, Verdict::Allow, None, why);
            }
            _ => {
                if let (Some((number, _)), true) = (&arg.base, self.cx.ground.records) {
                    self.base_hint = r.base_path(&arg.bytes).map(|base| (*number, arg.bytes.clone(), base.to_vec()));
                }
                self.decide(arg, &r.path, access)?
            }
        }
        Ok(r)
    }

    /// Whether the object of `stat`, at `path`, is a pseudo-terminal slave
    /// that no surface entry grants.
    fn ungranted_terminal(&self, stat: &libc::stat, path: &[u8]) -> bool {
        stat.st_mode & libc::S_IFMT == libc::S_IFCHR
            && crate::policy::system::is_pty_slave(stat.st_rdev)
            && !self.cx.ground.surface.decide(path, Access::Read, &self.cx.ground.procs).allowed
    }

    /// Decides `access` to the canonical `path` against the surface and
    /// records the decision; `EACCES` when refused (learning mode records
    /// what enforcement would refuse and goes on, except for carve-outs).
    fn decide(&mut self, arg: &PathArg, path: &[u8], access: Access) -> Result<(), Stop> {
        let name = AccessKind::from(access);
        let procs = CallerInside { procs: &self.cx.ground.procs, own: self.own_ids.get().copied() };
        let v = self.cx.ground.surface.decide(path, access, &procs);
        self.decided_by = Some(v.reason);
        let why = Why::Verdict(v.reason);
        // Learning allows what a wider surface could allow; carve-outs (host
        // secrets) no flag can allow, so even learning does not hand them out.
        if !v.allowed && self.cx.ground.learn && !self.cx.ground.surface.is_carve_out(v.reason) {
            self.push(arg, Some(path), name, Verdict::WouldDeny, None, why);
            return Ok(());
        }
        self.approved = false;
        if !v.allowed && !self.cx.ground.learn && !self.cx.ground.surface.is_carve_out(v.reason) {
            if let Some(asking) = self.cx.ask.filter(|a| a.askable(path, access)) {
                return self.ask(asking, arg, path, access, why);
            }
        }
        let errno = (!v.allowed).then_some(Errno::EACCES);
        self.push(arg, Some(path), name, if v.allowed { Verdict::Allow } else { Verdict::Deny }, errno, why);
        if v.allowed {
            Ok(())
        } else {
            Err(Stop::Fail(Errno::EACCES))
        }
    }

    /// `--ask`: decides an access the surface refuses by an answer already
    /// given, or holds the call for a question ([`super::ask`]). Another
    /// process's `/proc` and carve-outs never come here.
    fn ask(
        &mut self,
        asking: &super::ask::Answers,
        arg: &PathArg,
        path: &[u8],
        access: Access,
        why: Why,
    ) -> Result<(), Stop> {
        use crate::approvals::Decision;
        let name = AccessKind::from(access);
        let ask = super::ask::Ask { path: path.to_vec(), access };
        let tgid = self.tgid();
        match asking.remembered(self.notif.id, tgid, &ask) {
            Some(r) if r.decision == Decision::Allow => {
                let why = Why::Note(super::ask::allowed_note(r.scope), RuleKind::Approval);
                self.push(arg, Some(path), name, Verdict::Allow, None, why);
                self.approved = true;
                Ok(())
            }
            Some(r) => {
                let why = Why::Note(super::ask::refused_note(r.scope), RuleKind::Approval);
                self.push(arg, Some(path), name, Verdict::Deny, Some(Errno::EACCES), why);
                Err(Stop::Fail(Errno::EACCES))
            }
            None => {
                // The refusal it gets if nobody allows it, kept with the
                // held call.
                self.push(arg, Some(path), name, Verdict::Deny, Some(Errno::EACCES), why);
                self.held = Some((ask, tgid));
                Err(Stop::Held)
            }
        }
    }

    /// Records one check. The paths are copied only when auditing: without
    /// a trail, the counters need just the decision.
    fn push(
        &mut self,
        arg: &PathArg,
        resolved: Option<&[u8]>,
        access: AccessKind,
        decision: Verdict,
        errno: Option<Errno>,
        reason: Why,
    ) {
        let audited = self.cx.ground.records;
        // The starting directory of a relative path: as its resolution or
        // the continued open's check found it (the hint), else read back.
        let hinted = self
            .base_hint
            .take()
            .filter(|(n, written, _)| *written == arg.bytes && arg.base.as_ref().is_none_or(|(number, _)| number == n));
        let dirfd = match (hinted, &arg.base) {
            _ if !audited => None,
            (Some((number, _, base)), _) => Some((number, base)),
            (None, Some((number, fd))) => {
                let mut path = Vec::new();
                let _ = self.cx.ground.resolver.fd_path(fd.as_fd(), &mut path);
                Some((*number, path))
            }
            (None, None) => None,
        };
        // Refusals keep their paths even without a trail (rare, so cheap):
        // the session's end counts the paths refused and names the first
        // carve-out refusals; a refused exec explains a command that cannot
        // start.
        let keep = audited || decision == Verdict::Deny || (access == AccessKind::Exec && decision != Verdict::Allow);
        self.checks.push(Check {
            syscall: self.row.name,
            path: if keep { arg.bytes.clone() } else { Vec::new() },
            resolved: resolved.filter(|_| keep).map(<[u8]>::to_vec),
            access,
            decision,
            errno,
            reason,
            dirfd,
        });
    }

    /// Resolves `arg`, checks `access` and returns a handle on the existing
    /// object with its mode (0 for an anonymous one); `ENOENT` if missing.
    fn checked_object(
        &mut self,
        arg: &PathArg,
        follow: bool,
        empty: bool,
        access: Access,
    ) -> Result<(OwnedFd, u32), Stop> {
        self.checked_object_at(arg, follow, empty, access).map(|(fd, mode, _)| (fd, mode))
    }

    /// [`Call::checked_object`], and the object's canonical path.
    fn checked_object_at(
        &mut self,
        arg: &PathArg,
        follow: bool,
        empty: bool,
        access: Access,
    ) -> Result<(OwnedFd, u32, Vec<u8>), Stop> {
        let r = self.resolve(arg, follow, empty, 0, false);
        let r = self.check(arg, r, access)?;
        match r.target {
            Target::Exists { fd, stat } => Ok((fd, stat.st_mode, r.path)),
            Target::Anonymous { fd } => Ok((fd, 0, r.path)),
            Target::Missing { .. } | Target::Absent => Err(Errno::ENOENT.into()),
        }
    }

    /// The caller's process id (`Tgid` in `/proc/<tid>/status`), read
    /// once per call.
    fn tgid(&self) -> u32 {
        *self.tgid.get_or_init(|| {
            super::resolve::proc_status_field(self.notif.pid, "Tgid:")
                .and_then(|v| v.parse().ok())
                .unwrap_or(self.notif.pid)
        })
    }

    /// The undo journal, when a change at the canonical `path` is one it
    /// covers (the user's own writable trees).
    fn journal_for(&self, path: &[u8]) -> Option<std::sync::Arc<crate::journal::Journal>> {
        let journal = self.cx.ground.journal.as_ref()?;
        let v = self.cx.ground.surface.decide(path, Access::Write, &self.cx.ground.procs);
        (v.allowed && journal.scope().covers(v.reason)).then(|| journal.clone())
    }

    fn run(&mut self) -> Result<Answer, Stop> {
        let row = self.row;
        match row.op {
            Op::Open | Op::Creat | Op::Openat2 => self.open(),
            Op::Exec => self.exec(),
            Op::Unlink | Op::Rmdir | Op::Mkdir | Op::Symlink | Op::Mknod => self.entry_op(),
            Op::Rename | Op::Link => self.rename_or_link(),
            Op::Truncate => {
                let OpArgs::Truncate { length } = self.args.op else { return Err(MISDECODED.into()) };
                let arg = self.path_arg(self.args.first(), false)?;
                self.still_valid()?;
                let (fd, mode, path) = self.checked_object_at(&arg, true, false, Access::Write)?;
                let journal = self.journal_for(&path).map(|j| (j, path));
                match mode & libc::S_IFMT {
                    libc::S_IFREG => {}
                    libc::S_IFDIR => return Err(Errno::EISDIR.into()),
                    _ => return Err(Errno::EINVAL.into()),
                }
                if length < 0 {
                    return Err(Errno::EINVAL.into());
                }
                // Opened without blocking: a file the command holds a lease
                // on would hold the worker until the lease breaks (45 s by
                // default, and every thread of the command can ask at
                // once); the call then waits in the retry queue instead.
                let (dir, name) = self.cx.ground.resolver.reopening(fd.as_fd())?;
                // The caller's file size limit, not the supervisor's: growing
                // a file past it is EFBIG and SIGXFSZ to the caller. Where a
                // signal would interrupt the call (and have it restarted,
                // again and again), EFBIG alone.
                let tid = self.notif.pid;
                let signal = !self.cx.ground.signals_interrupt;
                let limit = crate::sys::process::file_size_limit(tid)?;
                let attempt = move || -> Result<Answer, Errno> {
                    let _checked = &fd;
                    let flags = libc::O_WRONLY | libc::O_NOCTTY | libc::O_NONBLOCK | libc::O_CLOEXEC;
                    // EWOULDBLOCK (EAGAIN) while a lease is being broken.
                    let file = fs::openat(Dir::Fd(dir.as_fd()), &name, flags, 0)?;
                    let grows = fs::fstat(file.as_fd())?.st_size < length;
                    if grows && limit.is_some_and(|l| length as u64 > l) {
                        if signal {
                            let _ = crate::sys::process::signal_thread(tid, libc::SIGXFSZ);
                        }
                        return Err(Errno::EFBIG);
                    }
                    // With a journal: the content is kept first, under
                    // the journal's lock, from the very file truncated.
                    let _held = match &journal {
                        Some((j, path)) => Some(kept(j, file.as_fd(), path, true)?),
                        None => None,
                    };
                    nix::unistd::ftruncate(&file, length)?;
                    Ok(Answer::Value(0))
                };
                self.now_or_later(attempt, true, 3)
            }
            Op::Chdir => {
                let (arg, follow, empty) = self.target()?;
                self.still_valid()?;
                let r = self.resolve(&arg, follow, empty, 0, false);
                self.check(&arg, r, Access::Stat)?;
                // Only the caller can change its own cwd; one it leaves
                // grants nothing by itself.
                Ok(Answer::Continue(Cover::handle()))
            }
            Op::Statbuf | Op::Statx | Op::Statfs | Op::Access | Op::Getxattr | Op::Listxattr | Op::Readlink => {
                self.metadata()
            }
            Op::Watch => self.watch(),
            Op::Chmod | Op::Chown | Op::Utime | Op::Utimes | Op::Utimensat | Op::Setxattr | Op::Removexattr => {
                self.attribute()
            }
            Op::Connect | Op::Bind | Op::Sendto | Op::Sendmsg | Op::Sendmmsg => self.socket(),
            Op::Refuse => Err(Errno::EPERM.into()),
            Op::Creds => Ok(Answer::Continue(Cover::credentials())),
        }
    }
}

/// `journal` locked for one change, with the pre-image of the object behind
/// `fd` (at `path`; with `content`, a regular file's content too) kept
/// first, as interpose.
fn kept<'j>(
    journal: &'j crate::journal::Journal,
    fd: std::os::fd::BorrowedFd<'_>,
    path: &[u8],
    content: bool,
) -> Result<crate::journal::Guard<'j>, Errno> {
    let mut held = journal.lock()?;
    identity::as_supervisor(|| held.keep(fd, path, content))?;
    Ok(held)
}

/// Whether `path` names one of the caller's own descriptors through procfs
/// (`/proc/self/fd/N`, `/proc/thread-self/fd/N`).
fn own_descriptor_path(path: &[u8]) -> bool {
    [&b"/proc/self/fd/"[..], b"/proc/thread-self/fd/"]
        .iter()
        .filter_map(|p| path.strip_prefix(*p))
        .any(|n| !n.is_empty() && n.iter().all(u8::is_ascii_digit))
}

/// The sandbox's processes as a call sees them: its caller, at its own
/// numbers in a procfs that numbers every caller as it numbers itself, is
/// inside without a lookup (its call came through the sandbox's filter).
/// Elsewhere (a container's processes may sit in a namespace of their own
/// below their procfs's) each number is looked up.
struct CallerInside<'a> {
    procs: &'a dyn crate::policy::Processes,
    own: Option<(u32, u32)>,
}

impl crate::policy::Processes for CallerInside<'_> {
    fn is_inside(&self, mount: &std::path::Path, pid: u32) -> bool {
        let own = self.own.is_some_and(|(tgid, tid)| pid == tgid || pid == tid);
        (own && self.procs.numbers_every_caller(mount)) || self.procs.is_inside(mount, pid)
    }

    fn numbers_as_the_command(&self, mount: &std::path::Path) -> bool {
        self.procs.numbers_as_the_command(mount)
    }

    fn numbers_of(&self, mount: &std::path::Path, tid: u32) -> Option<(u32, u32)> {
        self.procs.numbers_of(mount, tid)
    }

    fn numbers_every_caller(&self, mount: &std::path::Path) -> bool {
        self.procs.numbers_every_caller(mount)
    }
}

/// Runs `f` with this worker's path buffer: one `PATH_MAX` buffer a thread,
/// not one zeroed (and, on the heap, allocated and freed) a call; a nested
/// use gets a fresh one.
fn with_path_buf<R>(f: impl FnOnce(&mut [u8; mem::PATH_MAX]) -> R) -> R {
    thread_local! {
        static BUF: std::cell::RefCell<Box<[u8; mem::PATH_MAX]>> = std::cell::RefCell::new(Box::new([0; mem::PATH_MAX]));
    }
    BUF.with(|b| match b.try_borrow_mut() {
        Ok(mut buf) => f(&mut buf),
        Err(_) => f(&mut Box::new([0; mem::PATH_MAX])),
    })
}
