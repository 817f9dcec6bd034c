//! Deciding one notification: read its paths, resolve, check, answer.

use super::cover::Cover;
use super::identity;
use super::later;
use super::resolve::{Caller, Lookup, Nameless, ProcEntry, Request, ResolveError, Resolved, Target};
use super::{Answer, Supervisor};
use crate::audit::{AccessKind, RuleKind, Verdict};
use crate::policy::{Access, ProcPlace, Reason};
use crate::sys::fs::{self, Dir, OpenHow};
use crate::sys::{mem, seccomp, Errno};
use crate::syscalls::table;
use crate::syscalls::{Follow, Op, Syscall};
use std::os::fd::{AsFd, OwnedFd};

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
}

impl Outcome {
    /// The call refused with `errno`, nothing recorded.
    pub fn refused(errno: Errno) -> Outcome {
        Outcome { answer: Some(Answer::Fail(errno)), checks: Vec::new(), argv: None }
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

const AT_EMPTY_PATH: u64 = libc::AT_EMPTY_PATH as u64;
const AT_SYMLINK_NOFOLLOW: u64 = libc::AT_SYMLINK_NOFOLLOW as u64;
const AT_SYMLINK_FOLLOW: u64 = libc::AT_SYMLINK_FOLLOW as u64;

pub fn handle(sup: &Supervisor, notif: &seccomp::Notif) -> Outcome {
    PIDFD.with(|c| c.borrow_mut().follow(notif.pid));
    let Some(row) = table::lookup(notif.data.nr) else {
        // The filter only traps table rows; anything else is a bug, and the
        // safe answer to a bug is no.
        return Outcome { answer: Some(Answer::Fail(Errno::ENOSYS)), checks: Vec::new(), argv: None };
    };
    // Fault injection for the test of panic containment, in debug builds
    // only: a path argument of exactly this text panics the worker.
    #[cfg(debug_assertions)]
    if row.path.is_some() {
        let mut buf = [0u8; mem::PATH_MAX];
        if mem::read_path(notif.pid, notif.data.args[row.path.unwrap_or(0) as usize], &mut buf)
            .is_ok_and(|n| &buf[..n] == b"/interpose-test/panic-the-worker")
        {
            panic!("fault injected for the test of panic containment");
        }
    }
    if row.op == Op::Creds {
        // The caller is about to change its credentials: what was cached
        // about them goes stale before the change takes effect.
        sup.credentials_change();
        return Outcome { answer: Some(Answer::Continue(Cover::credentials())), checks: Vec::new(), argv: None };
    }
    // Everything below runs with the caller's own credentials: never grant
    // through the supervisor what the caller could not do itself.
    match super::identity::act_as(notif.pid, sup.generation(), sup.sets_groups()) {
        Ok(()) => {}
        // The caller is gone: nobody to answer.
        Err(Errno::ESRCH) => return Outcome { answer: None, checks: Vec::new(), argv: None },
        Err(e) => {
            tracing::error!("taking the caller's credentials failed: {e}; the call is refused");
            return Outcome { answer: Some(Answer::Fail(Errno::EPERM)), checks: Vec::new(), argv: None };
        }
    }
    let mut cx = Call {
        sup,
        notif,
        row,
        checks: Vec::new(),
        tgid: std::cell::OnceCell::new(),
        own_ids: std::cell::OnceCell::new(),
        argv: None,
        decided_by: None,
        base_hint: None,
    };
    let answer = match cx.run() {
        Ok(a) => Some(a),
        Err(Stop::Fail(e)) => Some(Answer::Fail(e)),
        Err(Stop::Gone) => None,
    };
    Outcome { answer, checks: cx.checks, argv: cx.argv }
}

enum Stop {
    /// Fail the call with this errno.
    Fail(Errno),
    /// The notification is no longer valid: the caller is gone.
    Gone,
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
/// The pidfd of the thread whose calls a worker is answering, kept while
/// that thread's calls follow one another: `fstat`, the call a supervisor
/// performs on a caller's descriptor most (a test runner's output capture
/// makes a hundred thousand in a row), is then one `pidfd_getfd` instead of
/// `pidfd_open`, `pidfd_getfd` and `close`. A call from another thread
/// closes it, so a worker holds at most one, and never one for long after
/// its thread is gone.
#[derive(Default)]
struct KeptPidfd(Option<(u32, std::rc::Rc<OwnedFd>)>);

impl KeptPidfd {
    fn get(&self, tid: u32) -> Option<std::rc::Rc<OwnedFd>> {
        self.0.as_ref().filter(|(t, _)| *t == tid).map(|(_, fd)| fd.clone())
    }

    fn keep(&mut self, tid: u32, fd: std::rc::Rc<OwnedFd>) {
        self.0 = Some((tid, fd));
    }

    /// Closes the pidfd unless it is `tid`'s.
    fn follow(&mut self, tid: u32) {
        if self.0.as_ref().is_some_and(|(t, _)| *t != tid) {
            self.0 = None;
        }
    }
}

thread_local! {
    static PIDFD: std::cell::RefCell<KeptPidfd> = std::cell::RefCell::default();
}

struct Call<'a> {
    sup: &'a Supervisor,
    notif: &'a seccomp::Notif,
    row: &'static Syscall,
    checks: Vec<Check>,
    tgid: std::cell::OnceCell<u32>,
    /// The caller's ids in its own PID namespace.
    own_ids: std::cell::OnceCell<(u32, u32)>,
    argv: Option<(Vec<Vec<u8>>, bool)>,
    /// What allowed the last access checked.
    decided_by: Option<Reason>,
    /// With a trail: the directory a relative path started from, known
    /// from its resolution (dirfd number, path as written, directory), so
    /// the record need not read it back.
    base_hint: Option<(i32, Vec<u8>, Vec<u8>)>,
}

impl Call<'_> {
    fn arg(&self, i: Option<u8>) -> u64 {
        i.map_or(0, |i| self.notif.data.args[i as usize])
    }

    /// The `k`-th op-specific argument (a mode, an owner, a times or xattr
    /// pointer, a result buffer), counted from the row's `extra` index:
    /// every row whose op reads one names where they start.
    fn op_arg(&self, k: usize) -> u64 {
        let first =
            self.row.extra.unwrap_or_else(|| panic!("{}: the table names no op-specific argument", self.row.name));
        self.notif.data.args[first as usize + k]
    }

    /// Reads path argument `path` and opens its starting directory `dirfd`
    /// (the caller's cwd when there is no dirfd argument) if it is needed.
    fn path_arg(&self, dirfd: Option<u8>, path: Option<u8>, anchored: bool) -> Result<PathArg, Stop> {
        let mut buf = [0u8; mem::PATH_MAX];
        let n = mem::read_path(self.notif.pid, self.arg(path), &mut buf)?;
        let bytes = buf[..n].to_vec();
        let base = if bytes.first() == Some(&b'/') && !anchored {
            None
        } else {
            let dirfd = dirfd.map_or(libc::AT_FDCWD, |i| self.notif.data.args[i as usize] as i32);
            Some((dirfd, self.open_dir(dirfd)?))
        };
        Ok(PathArg { bytes, base })
    }

    /// A duplicate of the caller's descriptor `fd` (same open file
    /// description), taken with `pidfd_getfd` and checked to belong to the
    /// caller still waiting for this notification.
    fn caller_fd(&self, fd: i32) -> Result<OwnedFd, Stop> {
        let tid = self.notif.pid;
        // A pidfd kept from this thread number's last call: it names the
        // task it was opened for, and only one live task holds a number, so
        // while the caller waits here it is either this caller's or that of
        // a task that has gone (ESRCH, then a fresh one is opened).
        if let Some(pidfd) = PIDFD.with(|c| c.borrow().get(tid)) {
            match crate::sys::process::pidfd_getfd(pidfd.as_fd(), fd) {
                Err(Errno::ESRCH) => PIDFD.with(|c| c.borrow_mut().0 = None),
                other => {
                    self.still_valid()?;
                    return Ok(other?);
                }
            }
        }
        // The calling thread's own table (a thread that unshared its
        // descriptors has one of its own); before Linux 6.9, the process's.
        let pidfd = match crate::sys::process::pidfd_open_thread(tid as libc::pid_t) {
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
                crate::sys::process::pidfd_open(tgid as libc::pid_t)?
            }
            Err(e) => return Err(e.into()),
            Ok(thread) => {
                // Kept only once the notification is known to be this
                // thread's: the number was not reused before the open.
                self.still_valid()?;
                let thread = std::rc::Rc::new(thread);
                PIDFD.with(|c| c.borrow_mut().keep(tid, thread.clone()));
                return Ok(crate::sys::process::pidfd_getfd(thread.as_fd(), fd)?);
            }
        };
        self.still_valid()?;
        Ok(crate::sys::process::pidfd_getfd(pidfd.as_fd(), fd)?)
    }

    /// The caller's root directory, through `/proc/<tid>/root`.
    fn caller_root(&self) -> Option<OwnedFd> {
        let path = std::ffi::CString::new(format!("/proc/{}/root", self.notif.pid)).ok()?;
        identity::retry_as_supervisor(|| fs::openat(Dir::Cwd, &path, libc::O_PATH | libc::O_DIRECTORY, 0)).ok()
    }

    /// Opens the caller's cwd or descriptor `dirfd` through `/proc/<tid>`.
    fn open_dir(&self, dirfd: i32) -> Result<OwnedFd, Errno> {
        let path = if dirfd == libc::AT_FDCWD {
            format!("/proc/{}/cwd", self.notif.pid)
        } else if dirfd < 0 {
            return Err(Errno::EBADF);
        } else {
            format!("/proc/{}/fd/{dirfd}", self.notif.pid)
        };
        let cpath = std::ffi::CString::new(path).map_err(|_| Errno::EINVAL)?;
        // The caller's own starting point, looked up by the supervisor for
        // it (a caller that changed its credentials has its /proc entries
        // owned by root).
        match identity::retry_as_supervisor(|| fs::openat(Dir::Cwd, &cpath, libc::O_PATH, 0)) {
            Err(Errno::ENOENT) if dirfd != libc::AT_FDCWD => Err(Errno::EBADF),
            other => other,
        }
    }

    /// Everything read from the caller so far belongs to it only if the
    /// notification is still pending: after the caller dies its tid can be
    /// reused by another process.
    fn still_valid(&self) -> Result<(), Stop> {
        if self.sup.still_pending(self.notif.id) {
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
        if self.sup.isolated() {
            return self.caller_root().map(|r| Some(Root::Own(r))).ok_or(Errno::ESRCH);
        }
        Ok(self.sup.command_root().map(Root::Shared))
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
        Lookup { surface: self.sup.surface(), procs: self.sup.procs(), caller }
    }

    fn resolve(&self, arg: &PathArg, follow: bool, empty_path: bool, resolve: u64) -> Result<Resolved, ResolveError> {
        let root = self.root()?;
        let req = Request { path: &arg.bytes, follow, empty_path, resolve };
        let caller = self.caller(arg, root.as_ref());
        self.sup.resolver().resolve(&self.lookup(&caller), req)
    }

    /// Whose `/proc` the canonical `path` lies in, for this caller.
    fn proc_entry(&self, path: &[u8]) -> ProcEntry {
        let no_base = PathArg { bytes: Vec::new(), base: None };
        let caller = self.caller(&no_base, None);
        self.sup.resolver().proc_entry(&self.lookup(&caller), path)
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
        if matches!(r.target, Target::Missing { .. }) && access != Access::Create {
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
                if !self.sup.created_terminal(&fs::fstat(fd.as_fd())?) {
                    let why = Why::Note("a terminal the command did not create", RuleKind::Terminal);
                    self.push(arg, Some(&r.path), name, Verdict::Deny, Some(Errno::EACCES), why);
                    return Err(Stop::Fail(Errno::EACCES));
                }
                let why = Why::Note("a terminal the command created", RuleKind::Terminal);
                self.push(arg, Some(&r.path), name, Verdict::Allow, None, why);
            }
            _ => {
                if let (Some((number, _)), true) = (&arg.base, self.sup.records()) {
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
            && !self.sup.surface().decide(path, Access::Read, self.sup.procs()).allowed
    }

    /// Decides `access` to the canonical `path` against the surface and
    /// records the decision; `EACCES` when refused (learning mode records
    /// what enforcement would refuse and goes on, except for carve-outs).
    fn decide(&mut self, arg: &PathArg, path: &[u8], access: Access) -> Result<(), Stop> {
        let name = AccessKind::from(access);
        let v = self.sup.surface().decide(path, access, self.sup.procs());
        self.decided_by = Some(v.reason);
        let why = Why::Verdict(v.reason);
        // Learning allows what a wider surface could allow; carve-outs (host
        // secrets) no flag can allow, so even learning does not hand them out.
        if !v.allowed && self.sup.learns() && !self.sup.surface().is_carve_out(v.reason) {
            self.push(arg, Some(path), name, Verdict::WouldDeny, None, why);
            return Ok(());
        }
        let errno = (!v.allowed).then_some(Errno::EACCES);
        self.push(arg, Some(path), name, if v.allowed { Verdict::Allow } else { Verdict::Deny }, errno, why);
        if v.allowed {
            Ok(())
        } else {
            Err(Stop::Fail(Errno::EACCES))
        }
    }

    /// The directory holding `arg`'s last component, pinned, and the name;
    /// or, for a last component that names no entry (`.`, `..`, `/`), which
    /// one it is and the directory the kernel would have resolved, decided
    /// as a lookup (`stat`) before the call refuses the name with its own
    /// errno: nothing is done for it, so nothing a racing thread writes can
    /// make it act.
    fn parent(&mut self, arg: &PathArg, access: Access) -> Result<Named, Stop> {
        if let Some((dir, which)) = super::resolve::nameless(&arg.bytes) {
            let base = match &arg.base {
                Some((n, fd)) => Some((*n, fd.try_clone().map_err(|_| Errno::EMFILE)?)),
                None => None,
            };
            let dir_arg = PathArg { bytes: dir.to_vec(), base };
            let (fd, mode) = self.checked_object(&dir_arg, true, false, Access::Stat)?;
            if mode & libc::S_IFMT != libc::S_IFDIR {
                return Err(Errno::ENOTDIR.into());
            }
            return Ok(Named::Nameless(which, fd));
        }
        let root = self.root().map_err(|_| Stop::Gone)?;
        let req = Request { path: &arg.bytes, follow: false, empty_path: false, resolve: 0 };
        let caller = self.caller(arg, root.as_ref());
        match self.sup.resolver().resolve_parent(&self.lookup(&caller), req) {
            Ok(Some(p)) => Ok(Named::Entry(p)),
            // An empty path: the kernel's lookup fails on it.
            Ok(None) => Err(Errno::ENOENT.into()),
            // Recorded (and refused) as any resolution failure is.
            Err(e) => self.check(arg, Err(e), access).map(|_| unreachable!("a failed resolution is refused")),
        }
    }

    /// Decides `access` to the entry `parent` names, failing first as the
    /// kernel would when it exists and must not (a create) or is missing
    /// and must be there (a removal).
    fn check_entry(&mut self, arg: &PathArg, parent: &super::resolve::Parent, access: Access) -> Result<(), Stop> {
        let path = parent.entry_path();
        let exists = parent.entry()?.is_some();
        let failure = match (access, exists) {
            (Access::Create, true) => Some((Errno::EEXIST, "exists")),
            (Access::Delete, false) => Some((Errno::ENOENT, "does not exist")),
            _ => None,
        };
        if let Some((errno, why)) = failure {
            let why = Why::Note(why, RuleKind::Failure);
            self.push(arg, Some(&path), AccessKind::from(access), Verdict::Error, Some(errno), why);
            return Err(errno.into());
        }
        self.decide(arg, &path, access)
    }

    /// unlink, rmdir, mkdir, symlink, mknod: decided on the entry's real
    /// location and performed by the supervisor on its pinned handle of
    /// the directory, so a path or directory swapped after the check
    /// changes nothing.
    fn entry_op(&mut self) -> Result<Answer, Stop> {
        let row = self.row;
        let a = self.notif.data.args;
        let (d, p) = if row.op == Op::Symlink { (row.dirfd2, row.path2) } else { (row.dirfd, row.path) };
        let arg = self.path_arg(d, p, false)?;
        let target = match row.op {
            Op::Symlink => {
                // The target (a string, never resolved here) is the first
                // argument of symlink and symlinkat alike.
                let mut buf = [0u8; mem::PATH_MAX];
                let n = mem::read_path(self.notif.pid, a[0], &mut buf)?;
                if n == 0 {
                    return Err(Errno::ENOENT.into());
                }
                Some(std::ffi::CString::new(&buf[..n]).map_err(|_| Errno::EINVAL)?)
            }
            _ => None,
        };
        self.still_valid()?;
        // What the kernel refuses before it looks anything up: an unknown
        // flag, a file type mknod cannot make.
        if row.op == Op::Unlink && row.flags.is_some() && self.arg(row.flags) & !(libc::AT_REMOVEDIR as u64) != 0 {
            return Err(Errno::EINVAL.into());
        }
        if row.op == Op::Mknod {
            match self.op_arg(0) as u32 & libc::S_IFMT {
                0 | libc::S_IFREG | libc::S_IFCHR | libc::S_IFBLK | libc::S_IFIFO | libc::S_IFSOCK => {}
                libc::S_IFDIR => return Err(Errno::EPERM.into()),
                _ => return Err(Errno::EINVAL.into()),
            }
        }
        let remove_dir =
            row.op == Op::Rmdir || (row.op == Op::Unlink && self.arg(row.flags) & (libc::AT_REMOVEDIR as u64) != 0);
        let creates = matches!(row.op, Op::Mkdir | Op::Symlink | Op::Mknod);
        let access = if creates { Access::Create } else { Access::Delete };
        let parent = match self.parent(&arg, access)? {
            Named::Entry(p) => p,
            // As the kernel's do_unlinkat, do_rmdir and filename_create.
            Named::Nameless(which, _) => {
                return Err(match (creates, remove_dir, which) {
                    (true, _, _) => Errno::EEXIST,
                    (false, false, _) => Errno::EISDIR,
                    (false, true, Nameless::Dot) => Errno::EINVAL,
                    (false, true, Nameless::DotDot) => Errno::ENOTEMPTY,
                    (false, true, Nameless::Root) => Errno::EBUSY,
                }
                .into())
            }
        };
        self.check_entry(&arg, &parent, access)?;
        let (dir, name) = (parent.fd.as_fd(), parent.name.as_c_str());
        let done = match row.op {
            Op::Unlink | Op::Rmdir => {
                if parent.trailing_slash && !remove_dir {
                    let is_dir = parent.entry()?.is_some_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFDIR);
                    return Err(if is_dir { Errno::EISDIR } else { Errno::ENOTDIR }.into());
                }
                fs::unlinkat(dir, name, if remove_dir { libc::AT_REMOVEDIR } else { 0 })
            }
            Op::Mkdir => {
                let mode = self.arg(row.extra) as u32;
                fs::mkdirat(dir, name, self.creation_mode(dir, mode)?)
            }
            Op::Symlink => fs::symlinkat(target.as_deref().expect("read above"), dir, name),
            _ => {
                let mode = self.op_arg(0) as u32;
                let kind = if mode & libc::S_IFMT == 0 { libc::S_IFREG } else { mode & libc::S_IFMT };
                fs::mknodat(dir, name, kind | self.creation_mode(dir, mode)?, self.op_arg(1))
            }
        };
        done.map(|()| Answer::Value(0)).map_err(Stop::Fail)
    }

    /// rename, link: both names decided on their real locations (a rename
    /// removes one and creates the other; an exchange does both on each
    /// side) and performed on the supervisor's pinned handles.
    fn rename_or_link(&mut self) -> Result<Answer, Stop> {
        let row = self.row;
        let flags = self.arg(row.flags);
        // Flags the kernel refuses before it looks anything up.
        let known = match row.op {
            Op::Link => AT_SYMLINK_FOLLOW | AT_EMPTY_PATH,
            _ => u64::from(libc::RENAME_NOREPLACE | libc::RENAME_EXCHANGE | libc::RENAME_WHITEOUT),
        };
        let exchange = flags & u64::from(libc::RENAME_EXCHANGE) != 0;
        let noreplace = flags & u64::from(libc::RENAME_NOREPLACE) != 0;
        let exchange_with = flags & u64::from(libc::RENAME_NOREPLACE | libc::RENAME_WHITEOUT) != 0;
        if row.flags.is_some() && (flags & !known != 0 || (row.op == Op::Rename && exchange && exchange_with)) {
            return Err(Errno::EINVAL.into());
        }
        let src = self.path_arg(row.dirfd, row.path, false)?;
        let dst = self.path_arg(row.dirfd2, row.path2, false)?;
        self.still_valid()?;
        if row.op == Op::Link {
            let follow = flags & AT_SYMLINK_FOLLOW != 0;
            let empty = row.flags.is_some() && flags & AT_EMPTY_PATH != 0;
            // As the kernel's do_linkat: two mounts are EXDEV before any
            // permission is checked, said wherever the source's metadata
            // may be known.
            if let Ok(Resolved { target: Target::Exists { fd, .. }, path, .. }) = self.resolve(&src, follow, empty, 0) {
                let root = self.root().map_err(|_| Stop::Gone)?;
                let req = Request { path: &dst.bytes, follow: false, empty_path: false, resolve: 0 };
                let caller = self.caller(&dst, root.as_ref());
                let to = self.sup.resolver().resolve_parent(&self.lookup(&caller), req);
                if let Ok(Some(to)) = to {
                    let visible = self.sup.surface().decide(&path, Access::Stat, self.sup.procs()).allowed;
                    if visible && fs::mount_id(fd.as_fd())? != fs::mount_id(to.fd.as_fd())? {
                        return Err(Errno::EXDEV.into());
                    }
                }
            }
            let (object, _) = self.checked_object(&src, follow, empty, Access::LinkSource)?;
            // The new name is made as filename_create makes it: `.`, `..`
            // and `/` exist already.
            let Named::Entry(to) = self.parent(&dst, Access::Create)? else { return Err(Errno::EEXIST.into()) };
            self.check_entry(&dst, &to, Access::Create)?;
            return fs::link_handle(object.as_fd(), to.fd.as_fd(), &to.name)
                .map(|()| Answer::Value(0))
                .map_err(Stop::Fail);
        }
        let from = self.parent(&src, Access::Delete)?;
        let to = self.parent(&dst, Access::Create)?;
        let (from, to) = match (from, to) {
            (Named::Entry(from), Named::Entry(to)) => (from, to),
            // As the kernel's do_renameat2: two mounts first, then the
            // source's name, then the destination's.
            (from, to) => {
                if fs::mount_id(from.dir())? != fs::mount_id(to.dir())? {
                    return Err(Errno::EXDEV.into());
                }
                return Err(match (from, to) {
                    (Named::Nameless(..), _) => Errno::EBUSY,
                    _ if noreplace => Errno::EEXIST,
                    _ => Errno::EBUSY,
                }
                .into());
            }
        };
        self.check_entry(&src, &from, Access::Delete)?;
        if exchange {
            // Both names exist and both move: each is removed and created.
            self.check_entry(&dst, &to, Access::Delete)?;
            self.decide(&src, &from.entry_path(), Access::Create)?;
        } else if to.entry()?.is_some() {
            // Replacing what is there removes it.
            self.decide(&dst, &to.entry_path(), Access::Delete)?;
        }
        self.decide(&dst, &to.entry_path(), Access::Create)?;
        // A trailing slash names a directory on either side.
        for side in [&from, &to] {
            if side.trailing_slash {
                if let Some(st) = side.entry()? {
                    if st.st_mode & libc::S_IFMT != libc::S_IFDIR {
                        return Err(Errno::ENOTDIR.into());
                    }
                }
            }
        }
        fs::renameat2(from.fd.as_fd(), &from.name, to.fd.as_fd(), &to.name, flags as u32)
            .map(|()| Answer::Value(0))
            .map_err(Stop::Fail)
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
        let audited = self.sup.records();
        let dirfd = match &arg.base {
            Some((number, fd)) if audited => {
                let hinted = self.base_hint.take().filter(|(n, written, _)| n == number && *written == arg.bytes);
                let path = match hinted {
                    Some((_, _, base)) => base,
                    None => {
                        let mut path = Vec::new();
                        let _ = self.sup.resolver().fd_path(fd.as_fd(), &mut path);
                        path
                    }
                };
                Some((*number, path))
            }
            _ => None,
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
        let r = self.resolve(arg, follow, empty, 0);
        let r = self.check(arg, r, access)?;
        match r.target {
            Target::Exists { fd, stat } => Ok((fd, stat.st_mode)),
            Target::Anonymous { fd } => Ok((fd, 0)),
            Target::Missing { .. } => Err(Errno::ENOENT.into()),
        }
    }

    fn run(&mut self) -> Result<Answer, Stop> {
        let row = self.row;
        match row.op {
            Op::Open | Op::Creat | Op::Openat2 => self.open(),
            Op::Exec => {
                let flags = self.arg(row.flags);
                let arg = self.path_arg(row.dirfd, row.path, false)?;
                self.still_valid()?;
                let empty = row.flags.is_some() && flags & AT_EMPTY_PATH != 0;
                let follow = flags & AT_SYMLINK_NOFOLLOW == 0;
                let r = self.resolve(&arg, follow, empty, 0);
                let r = self.check(&arg, r, Access::Exec)?;
                match r.target {
                    // Allowed by a grant pattern only, in a place the kernel
                    // does not let programs run from (made after the start):
                    // the kernel would refuse the exec the trail calls
                    // allowed, so it is refused here, in words.
                    Target::Exists { .. }
                        if matches!(self.decided_by, Some(Reason::Glob(_))) && !self.sup.backstop_runs(&r.path) =>
                    {
                        if let Some(c) = self.checks.last_mut() {
                            c.decision = Verdict::Deny;
                            c.errno = Some(Errno::EACCES);
                            c.reason = Why::Note(BACKSTOP_EXEC, RuleKind::Failure);
                            c.resolved = Some(r.path.clone());
                        }
                        Err(Errno::EACCES.into())
                    }
                    Target::Exists { .. } => {
                        if self.sup.records() {
                            let argv_at = if row.flags.is_some() { 2 } else { 1 };
                            self.argv = Some(self.read_argv(self.notif.data.args[argv_at]));
                        }
                        // The caller's memory is replaced by the exec, so
                        // only the kernel can make it: with the backstop,
                        // whatever it finally executes (a path swapped in,
                        // a script's interpreter, the ELF interpreter) is
                        // one the surface lets run; without, the new image
                        // is checked before it runs an instruction.
                        Ok(match Cover::backstop(self.sup.sound(), Access::Exec) {
                            Some(cover) => Answer::Continue(cover),
                            None if self.sup.learns() => Answer::Continue(Cover::learning()),
                            None => Answer::VerifiedExec(super::exec::Verify { tid: self.notif.pid }),
                        })
                    }
                    Target::Missing { .. } => Err(Errno::ENOENT.into()),
                    Target::Anonymous { .. } => Err(Errno::EACCES.into()),
                }
            }
            Op::Unlink | Op::Rmdir | Op::Mkdir | Op::Symlink | Op::Mknod => self.entry_op(),
            Op::Rename | Op::Link => self.rename_or_link(),
            Op::Truncate => {
                let length = self.arg(row.extra) as i64;
                let arg = self.path_arg(row.dirfd, row.path, false)?;
                self.still_valid()?;
                let (fd, mode) = self.checked_object(&arg, true, false, Access::Write)?;
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
                let (dir, name) = self.sup.resolver().reopening(fd.as_fd())?;
                // The caller's file size limit, not the supervisor's: growing
                // a file past it is EFBIG and SIGXFSZ to the caller. Where a
                // signal would interrupt the call (and have it restarted,
                // again and again), EFBIG alone.
                let tid = self.notif.pid;
                let signal = !self.sup.signals_interrupt();
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
                    nix::unistd::ftruncate(&file, length)?;
                    Ok(Answer::Value(0))
                };
                self.now_or_later(attempt, true, 3)
            }
            Op::Chdir => {
                let (arg, follow, empty) = self.target()?;
                self.still_valid()?;
                let r = self.resolve(&arg, follow, empty, 0);
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

    /// The path argument of a single-path call, whether its last symlink is
    /// followed, and whether an empty path names the descriptor itself. Rows
    /// without a path (fchmod, fsetxattr) and utimensat with a NULL path act
    /// on the descriptor.
    fn target(&self) -> Result<(PathArg, bool, bool), Stop> {
        let row = self.row;
        let flags = self.arg(row.flags);
        let follow = match row.follow {
            Follow::No => false,
            Follow::UnlessNofollowFlag => flags & AT_SYMLINK_NOFOLLOW == 0,
            Follow::Yes | Follow::NotApplicable => true,
        };
        let on_descriptor = row.path.is_none() || (row.op == Op::Utimensat && self.arg(row.path) == 0);
        if on_descriptor {
            let fd = self.arg(row.dirfd) as i32;
            if row.path.is_some() {
                // utimensat(fd, NULL): the kernel reads a NULL name for the
                // cwd (EFAULT), and takes no flags on a descriptor.
                if fd == libc::AT_FDCWD {
                    return Err(Errno::EFAULT.into());
                }
                if flags != 0 {
                    return Err(Errno::EINVAL.into());
                }
            }
            if fd < 0 {
                return Err(Errno::EBADF.into());
            }
            // These take an open file: an O_PATH descriptor is EBADF to
            // them (fstat, fstatfs and fchdir take one).
            let open_file = matches!(
                row.op,
                Op::Chmod | Op::Chown | Op::Utimensat | Op::Setxattr | Op::Removexattr | Op::Getxattr | Op::Listxattr
            );
            if open_file && fs::status_flags(self.caller_fd(fd)?.as_fd())? & libc::O_PATH != 0 {
                return Err(Errno::EBADF.into());
            }
            return Ok((PathArg { bytes: Vec::new(), base: Some((fd, self.open_dir(fd)?)) }, follow, true));
        }
        // readlinkat takes an empty name for its descriptor (an O_PATH
        // handle on a symlink), without a flag to say so; never for the cwd.
        let names_descriptor = row.op == Op::Readlink && row.dirfd.is_some_and(|_| self.arg(row.dirfd) as i32 >= 0);
        let empty = (row.flags.is_some() && flags & AT_EMPTY_PATH != 0) || names_descriptor;
        Ok((self.path_arg(row.dirfd, row.path, false)?, follow, empty))
    }

    /// The stat family, statfs, access, xattr reads and readlink: the
    /// supervisor reads what the call asks about the object it checked and
    /// writes it into the caller, so a swapped path reveals nothing.
    fn metadata(&mut self) -> Result<Answer, Stop> {
        let row = self.row;
        let a = self.notif.data.args;
        // What the call's own arguments must be, before anything is looked up.
        let request = match row.op {
            Op::Access => {
                let flags = if row.flags.is_some() { self.arg(row.flags) } else { 0 };
                let known = (libc::AT_EACCESS | libc::AT_SYMLINK_NOFOLLOW) as u64 | AT_EMPTY_PATH;
                if flags & !known != 0 || self.op_arg(0) & !0o7 != 0 {
                    return Err(Errno::EINVAL.into());
                }
                Asked::Access { mode: self.op_arg(0) as u32, effective: flags & libc::AT_EACCESS as u64 != 0 }
            }
            Op::Getxattr => {
                let name = self.read_xattr_name(self.op_arg(0))?;
                let (value, size) = if row.flags.is_some() {
                    self.xattr_args(self.op_arg(1), self.op_arg(2))?
                } else {
                    (self.op_arg(1), self.op_arg(2))
                };
                Asked::Getxattr { name, value, size: size.min(XATTR_SIZE_MAX) as usize }
            }
            Op::Listxattr => {
                Asked::Listxattr { list: self.op_arg(0), size: self.op_arg(1).min(XATTR_SIZE_MAX) as usize }
            }
            // The buffer's size before the lookup, as the kernel checks it.
            Op::Readlink if self.op_arg(1) as i64 <= 0 => return Err(Errno::EINVAL.into()),
            _ => Asked::Other,
        };
        if row.flags.is_some() && row.op != Op::Statx && row.op != Op::Access {
            // newfstatat, getxattrat, listxattrat take these two only.
            if self.arg(row.flags) & !(AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0 {
                return Err(Errno::EINVAL.into());
            }
        }
        // The object, and its canonical path unless the caller held it.
        let (fd, stat, path) = match self.held_descriptor()? {
            Some(fd) => {
                let stat = fs::fstat(fd.as_fd())?;
                (fd, Some(stat), None)
            }
            None => {
                let (arg, follow, empty) = self.target()?;
                self.still_valid()?;
                let r = self.resolve(&arg, follow, empty, 0);
                let r = self.check(&arg, r, Access::Stat)?;
                match r.target {
                    Target::Exists { fd, stat } => (fd, Some(stat), Some(r.path)),
                    Target::Anonymous { fd } => (fd, None, None),
                    Target::Missing { .. } => return Err(Errno::ENOENT.into()),
                }
            }
        };
        let pid = self.notif.pid;
        let mode = stat.map_or(0, |s| s.st_mode);
        let is_link = mode & libc::S_IFMT == libc::S_IFLNK;
        match (row.op, request) {
            (Op::Statbuf, _) => {
                let st = match stat {
                    Some(st) => st,
                    None => fs::fstat(fd.as_fd())?,
                };
                mem::write(pid, self.op_arg(0), fs::bytes_of(&st))?;
                Ok(Answer::Value(0))
            }
            (Op::Statx, _) => {
                // Only the sync-type bits of the caller's flags still mean
                // something once the object is resolved.
                let sync = a[2] as i32 & libc::AT_STATX_SYNC_TYPE;
                let stx = fs::statx_fd(fd.as_fd(), sync, a[3] as u32)?;
                mem::write(pid, self.op_arg(0), fs::bytes_of(&stx))?;
                Ok(Answer::Value(0))
            }
            (Op::Statfs, _) => {
                let st = fs::fstatfs(fd.as_fd())?;
                mem::write(pid, self.op_arg(0), fs::bytes_of(&st))?;
                Ok(Answer::Value(0))
            }
            (_, Asked::Access { mode: bits, effective }) => {
                // With AT_EACCESS the worker's ids are the caller's already;
                // without, the kernel checks with the real ids.
                let check = || fs::access_fd(fd.as_fd(), bits);
                if effective { check() } else { identity::with_callers_real_ids(check) }?;
                // And what the sandbox allows: `test -w` on a read-only
                // tree says no, as the write would. Not recorded: a probe
                // is not an attempt (--suggest must not grant what a
                // program only asked about), and learning answers as the
                // kernel does.
                if let Some(path) = path.filter(|_| !self.sup.learns()) {
                    let is_dir = mode & libc::S_IFMT == libc::S_IFDIR;
                    let wanted = [
                        (libc::R_OK, Access::Read),
                        (libc::W_OK, Access::Write),
                        // Searching a directory is what every lookup through
                        // it does: allowed wherever its metadata is (the
                        // directories above the surface included).
                        (libc::X_OK, if is_dir { Access::Stat } else { Access::Exec }),
                    ];
                    let refused = wanted.iter().any(|&(bit, access)| {
                        bits & bit as u32 != 0 && !self.sup.surface().decide(&path, access, self.sup.procs()).allowed
                    });
                    if refused {
                        return Err(Errno::EACCES.into());
                    }
                }
                Ok(Answer::Value(0))
            }
            (_, Asked::Getxattr { name, value, size }) => {
                // The handle is O_PATH, which the xattr calls on descriptors
                // refuse, so the value is read through its /proc name; that
                // would follow a symlink, which then has no value here
                // (Linux allows user.* attributes on none).
                if is_link {
                    return Err(Errno::ENODATA.into());
                }
                let path = super::resolve::Resolver::proc_path(fd.as_fd());
                let mut buf = vec![0u8; size];
                let n = fs::getxattr(&path, &name, &mut buf)?;
                if size > 0 {
                    mem::write(pid, value, &buf[..n])?;
                }
                Ok(Answer::Value(n as i64))
            }
            (_, Asked::Listxattr { list, size }) => {
                if is_link {
                    return Ok(Answer::Value(0));
                }
                let path = super::resolve::Resolver::proc_path(fd.as_fd());
                let mut buf = vec![0u8; size];
                let n = fs::listxattr(&path, &mut buf)?;
                if size > 0 {
                    mem::write(pid, list, &buf[..n])?;
                }
                Ok(Answer::Value(n as i64))
            }
            _ => {
                if !is_link {
                    return Err(Errno::EINVAL.into());
                }
                let size = self.op_arg(1) as i64;
                if size <= 0 {
                    return Err(Errno::EINVAL.into());
                }
                let mut buf = vec![0u8; mem::PATH_MAX + 1];
                let proc = path.as_deref().map_or(ProcEntry::NotProc, |p| self.proc_entry(p));
                let n = self.on_behalf(proc, || fs::readlinkat(Dir::Fd(fd.as_fd()), c"", &mut buf))?;
                let n = n.min(size as usize);
                mem::write(pid, self.op_arg(0), &buf[..n])?;
                Ok(Answer::Value(n as i64))
            }
        }
    }

    /// For `fstat`, `fstatfs` and an empty path with `AT_EMPTY_PATH`: the
    /// caller's own descriptor, which it holds already and which is
    /// answered from without a check (stdin redirected from a file outside
    /// the surface is the caller's to describe). Not so an `O_PATH`
    /// descriptor, which an open whose path was swapped after its check
    /// may have aimed anywhere, nor the cwd, which a swapped `chdir` may
    /// have: `None` then, and their real location is decided. The
    /// descriptor is taken with `pidfd_getfd`, so its flags and the object
    /// answered about are one and the same open file.
    fn held_descriptor(&self) -> Result<Option<OwnedFd>, Stop> {
        let row = self.row;
        if !matches!(row.op, Op::Statbuf | Op::Statx | Op::Statfs) {
            return Ok(None);
        }
        let fd = self.arg(row.dirfd) as i32;
        let named = row.path.is_none()
            || (self.arg(row.flags) & AT_EMPTY_PATH != 0 && {
                let mut buf = [0u8; mem::PATH_MAX];
                // Read once: what the kernel would look up is this answer's
                // business only if it is empty now.
                mem::read_path(self.notif.pid, self.arg(row.path), &mut buf)? == 0
            });
        if !named || fd == libc::AT_FDCWD {
            return Ok(None);
        }
        if fd < 0 {
            return Err(Errno::EBADF.into());
        }
        let held = self.caller_fd(fd)?;
        Ok((fs::status_flags(held.as_fd())? & libc::O_PATH == 0).then_some(held))
    }

    /// A `struct xattr_args` (`getxattrat`): where the value goes and its
    /// size. Sizes beyond the known struct must be zeroes, as the kernel's
    /// `copy_struct_from_user` demands.
    fn xattr_args(&self, addr: u64, size: u64) -> Result<(u64, u64), Errno> {
        let buf = self.read_extensible(addr, size, 16)?;
        let value = u64::from_ne_bytes(buf[0..8].try_into().expect("8 bytes"));
        let length = u32::from_ne_bytes(buf[8..12].try_into().expect("4 bytes"));
        let flags = u32::from_ne_bytes(buf[12..16].try_into().expect("4 bytes"));
        if flags != 0 {
            return Err(Errno::EINVAL);
        }
        Ok((value, u64::from(length)))
    }

    /// `inotify_add_watch`: decided as a read of the object (a watch
    /// reports the names made and removed in a directory), then added by
    /// the supervisor to the caller's own inotify instance on the object it
    /// checked, with the caller's credentials.
    fn watch(&mut self) -> Result<Answer, Stop> {
        let a = self.notif.data.args;
        let mask = a[self.row.extra.expect("the watch row names its mask") as usize] as u32;
        let arg = self.path_arg(self.row.dirfd, self.row.path, false)?;
        let instance = self.caller_fd(a[0] as i32)?;
        let (fd, _) = self.checked_object(&arg, mask & libc::IN_DONT_FOLLOW == 0, false, Access::Read)?;
        // The handle's /proc name leads to the checked object itself (a
        // symlink too, for IN_DONT_FOLLOW), never beyond it.
        let path = super::resolve::Resolver::proc_path(fd.as_fd());
        Ok(Answer::Value(fs::inotify_add_watch(instance.as_fd(), &path, mask & !libc::IN_DONT_FOLLOW)?.into()))
    }

    /// chmod, chown, utime*, setxattr, removexattr: Landlock cannot express
    /// them, so the supervisor performs them on the object it checked.
    fn attribute(&mut self) -> Result<Answer, Stop> {
        enum Work {
            Mode(u32),
            Owner(u32, u32),
            Times(Option<[libc::timespec; 2]>),
            SetXattr(std::ffi::CString, Vec<u8>, i32),
            RemoveXattr(std::ffi::CString),
        }
        let row = self.row;
        // The flags first, as the kernel checks them: an unknown bit is
        // EINVAL, never ignored.
        if row.flags.is_some() && self.arg(row.flags) & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
            return Err(Errno::EINVAL.into());
        }
        let (arg, follow, empty) = self.target()?;
        let work = match row.op {
            Op::Chmod => Work::Mode(self.op_arg(0) as u32 & 0o7777),
            Op::Chown => Work::Owner(self.op_arg(0) as u32, self.op_arg(1) as u32),
            Op::Utime => Work::Times(self.read_times(self.op_arg(0), TimeFormat::Utimbuf)?),
            Op::Utimes => Work::Times(self.read_times(self.op_arg(0), TimeFormat::Timeval)?),
            Op::Utimensat => Work::Times(self.read_times(self.op_arg(0), TimeFormat::Timespec)?),
            Op::Setxattr => {
                let name = self.read_xattr_name(self.op_arg(0))?;
                let size = self.op_arg(2) as usize;
                if size > 65536 {
                    return Err(Errno::E2BIG.into());
                }
                let mut value = vec![0u8; size];
                if size > 0 && mem::read(self.notif.pid, self.op_arg(1), &mut value)? != size {
                    return Err(Errno::EFAULT.into());
                }
                Work::SetXattr(name, value, self.op_arg(3) as i32)
            }
            _ => Work::RemoveXattr(self.read_xattr_name(self.op_arg(0))?),
        };
        self.still_valid()?;
        let (fd, mode) = self.checked_object(&arg, follow, empty, Access::Write)?;
        let is_link = mode & libc::S_IFMT == libc::S_IFLNK;
        let path = super::resolve::Resolver::proc_path(fd.as_fd());
        let done = match work {
            // Linux has no mode on symlinks; times and xattrs on a symlink
            // itself are not supported here (the path would follow it).
            Work::Mode(_) | Work::Times(_) if is_link => Err(Errno::EOPNOTSUPP),
            Work::SetXattr(..) | Work::RemoveXattr(_) if is_link => Err(Errno::EPERM),
            Work::Mode(m) => fs::chmod(&path, m),
            Work::Owner(uid, gid) => fs::chown_fd(fd.as_fd(), uid, gid),
            Work::Times(t) => fs::utimens(&path, t.as_ref()),
            Work::SetXattr(name, value, flags) => fs::setxattr(&path, &name, &value, flags),
            Work::RemoveXattr(name) => fs::removexattr(&path, &name),
        };
        done.map(|()| Answer::Value(0)).map_err(Stop::Fail)
    }

    fn read_xattr_name(&self, addr: u64) -> Result<std::ffi::CString, Errno> {
        let mut buf = [0u8; mem::PATH_MAX];
        let n = mem::read_path(self.notif.pid, addr, &mut buf)?;
        if n == 0 || n > 255 {
            return Err(Errno::ERANGE);
        }
        std::ffi::CString::new(&buf[..n]).map_err(|_| Errno::EINVAL)
    }

    /// Reads a pair of times in the caller's format; `None` (a NULL pointer)
    /// means "now".
    fn read_times(&self, addr: u64, format: TimeFormat) -> Result<Option<[libc::timespec; 2]>, Errno> {
        if addr == 0 {
            return Ok(None);
        }
        let size = if format == TimeFormat::Utimbuf { 16 } else { 32 };
        let mut buf = [0u8; 32];
        if mem::read(self.notif.pid, addr, &mut buf[..size])? != size {
            return Err(Errno::EFAULT);
        }
        let word = |i: usize| i64::from_ne_bytes(buf[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        let ts = |sec: i64, nsec: i64| libc::timespec { tv_sec: sec, tv_nsec: nsec };
        Ok(Some(match format {
            TimeFormat::Utimbuf => [ts(word(0), 0), ts(word(1), 0)],
            TimeFormat::Timeval => {
                if [word(1), word(3)].iter().any(|us| !(0..1_000_000).contains(us)) {
                    return Err(Errno::EINVAL);
                }
                [ts(word(0), word(1) * 1000), ts(word(2), word(3) * 1000)]
            }
            // UTIME_NOW, UTIME_OMIT and range errors are the kernel's to judge.
            TimeFormat::Timespec => [ts(word(0), word(1)), ts(word(2), word(3))],
        }))
    }

    /// `open`, `creat`, `openat`, `openat2`: the supervisor opens the object
    /// it checked and installs the descriptor in the caller.
    fn open(&mut self) -> Result<Answer, Stop> {
        let row = self.row;
        let a = &self.notif.data.args;
        let (flags, mode, resolve) = match row.op {
            Op::Creat => (libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC, a[1] as u32, 0),
            Op::Openat2 => {
                let how = self.read_open_how(a[2], a[3])?;
                (how.flags as i32, how.mode as u32, how.resolve & !fs::RESOLVE_CACHED)
            }
            _ => {
                let i = row.flags.expect("open rows name their flags") as usize;
                (a[i] as i32, a[i + 1] as u32, 0)
            }
        };
        let anchored = resolve & (fs::RESOLVE_BENEATH | fs::RESOLVE_IN_ROOT) != 0;
        let arg = self.path_arg(row.dirfd, row.path, anchored)?;

        let o_path = flags & libc::O_PATH != 0;
        let tmpfile = flags & libc::O_TMPFILE == libc::O_TMPFILE;
        let create = flags & libc::O_CREAT != 0 && !o_path && !tmpfile;
        let exclusive = create && flags & libc::O_EXCL != 0;
        let writes = flags & libc::O_ACCMODE != libc::O_RDONLY || flags & libc::O_TRUNC != 0;
        let follow = flags & libc::O_NOFOLLOW == 0 && !exclusive;
        let cloexec = flags & libc::O_CLOEXEC != 0;
        let asked = match () {
            _ if tmpfile || create => Access::Create,
            _ if writes => Access::Write,
            _ => Access::Read,
        };
        // What a continued open may do wherever the kernel's own lookup
        // leads: create (O_CREAT, O_TMPFILE), or what was asked.
        let sound = self.sup.sound();
        let cover = |access: Access| {
            let creates = (flags & libc::O_CREAT != 0 || tmpfile) && !o_path;
            Cover::backstop(sound, access).filter(|_| !creates || Cover::backstop(sound, Access::Create).is_some())
        };
        if let Some(cover) = cover(asked).filter(|_| !o_path && resolve == 0) {
            if self.continues_as_written(&arg, asked) {
                return Ok(Answer::Continue(cover));
            }
        }
        self.still_valid()?;

        let r = self.resolve(&arg, follow, false, resolve);
        let missing = matches!(r, Ok(Resolved { target: Target::Missing { .. }, .. }));
        // An O_PATH handle reads nothing: it names the object (to stat it,
        // make it the cwd, start further lookups from it, each checked on
        // its own), so it is decided like `stat` and allowed on the
        // directories that lead to the surface too (rsync opens `/` and
        // every directory down to its target that way).
        let access = if o_path {
            Access::Stat
        } else if tmpfile || (create && missing) || exclusive {
            Access::Create
        } else if writes {
            Access::Write
        } else {
            Access::Read
        };
        // A runtime's own FIFO, reopened by the container's first process
        // through its descriptor (runc's exec FIFO): the process holds it
        // already, and it is opened here, on the object resolved.
        let own_fifo = self.sup.sound().is_none()
            && own_descriptor_path(&arg.bytes)
            && matches!(&r, Ok(Resolved { target: Target::Exists { stat, .. }, .. }) if stat.st_mode & libc::S_IFMT == libc::S_IFIFO);
        // What the kernel answers from the lookup alone, before any
        // permission is checked: an existing name with O_CREAT|O_EXCL is
        // EEXIST, a directory opened to write or create is EISDIR. Said as
        // the kernel says it wherever the object's metadata may be known
        // (existence and type are then no secret); refused otherwise.
        if let Ok(Resolved { target: Target::Exists { stat, .. }, path, .. }) = &r {
            let is_dir = stat.st_mode & libc::S_IFMT == libc::S_IFDIR;
            let lookup_error = match () {
                _ if exclusive => Some(Errno::EEXIST),
                _ if is_dir && !o_path && !tmpfile && (writes || create) => Some(Errno::EISDIR),
                _ => None,
            };
            if let Some(e) = lookup_error {
                if self.sup.surface().decide(path, Access::Stat, self.sup.procs()).allowed {
                    return Err(e.into());
                }
            }
        }
        let r = match r {
            Ok(r) if own_fifo => {
                let why = Why::Note("the caller's own descriptor (a FIFO its runtime gave it)", RuleKind::Held);
                self.push(&arg, Some(&r.path), AccessKind::from(access), Verdict::Allow, None, why);
                r
            }
            r => self.check(&arg, r, access)?,
        };
        // Where Landlock enforces exactly this rule's answer, the kernel may
        // open the file itself: a path swapped in after the check reaches
        // nothing the surface refuses, and CONTINUE costs far less than
        // opening here and injecting the descriptor.
        // Never in procfs: the command's /proc may be its PID namespace's,
        // which the ruleset (built on the supervisor's) does not name.
        let proc = self.proc_entry(&r.path);
        let exact = matches!(self.decided_by, Some(Reason::Rule(i)) if self.sup.landlock_exact(i))
            && proc == ProcEntry::NotProc;
        if o_path {
            // SECCOMP_IOCTL_NOTIF_ADDFD takes its descriptor with fget(),
            // which refuses O_PATH files, so the kernel opens it again: a
            // path swapped in meanwhile yields a handle on another object,
            // which grants nothing by itself (docs/design.md, "O_PATH").
            return match r.target {
                Target::Missing { .. } => Err(Errno::ENOENT.into()),
                _ => Ok(Answer::Continue(Cover::handle())),
            };
        }
        // The kernel opens it itself where the backstop refuses whatever the
        // surface refuses (wherever its second lookup leads) and, for a
        // file or directory, grants what the rule allowed (else it would
        // refuse what the supervisor allows): a device, FIFO or socket is
        // then the caller's own to open (a FIFO waits for its peer in the
        // caller, and /dev/tty is the caller's terminal), as is an object
        // behind a sandboxed process's /proc/<pid>/fd/N.
        let continued = match &r.target {
            Target::Missing { .. } if create && exact => cover(access),
            Target::Exists { stat, .. } => match stat.st_mode & libc::S_IFMT {
                libc::S_IFREG | libc::S_IFDIR if exact && !exclusive => cover(access),
                libc::S_IFREG | libc::S_IFDIR | libc::S_IFLNK => None,
                // Opened here: terminals the command created (the ruleset
                // grants none) and the multiplexer that makes them.
                libc::S_IFCHR if self.ungranted_terminal(stat, &r.path) || stat.st_rdev == libc::makedev(5, 2) => None,
                _ if exclusive => None,
                _ => cover(access),
            },
            Target::Anonymous { .. } => cover(access),
            Target::Missing { .. } => None,
        };
        if let Some(cover) = continued {
            return Ok(Answer::Continue(cover));
        }
        // The caller's flags, for an object reopened here: never as a
        // controlling terminal.
        let reopen = flags & !(libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC) | libc::O_NOCTTY;
        let wait = Wait { blocking: flags & libc::O_NONBLOCK == 0, cloexec, fifo: false, reader: false };
        match r.target {
            Target::Missing { fd: parent, name } => {
                if !create {
                    return Err(Errno::ENOENT.into());
                }
                // O_NOFOLLOW: if a symlink appeared at the name since the
                // check, fail instead of creating wherever it points.
                let flags = (flags | libc::O_NOFOLLOW) & !libc::O_CLOEXEC;
                let mode = self.creation_mode(parent.as_fd(), mode)?;
                let first = fs::openat(Dir::Fd(parent.as_fd()), &name, flags | libc::O_NONBLOCK, mode);
                self.install(first, wait, move || Ok(Opening { dir: parent, name, flags, mode, held: None }))
            }
            Target::Exists { .. } if exclusive => Err(Errno::EEXIST.into()),
            Target::Exists { stat, fd } => {
                let kind = stat.st_mode & libc::S_IFMT;
                if kind == libc::S_IFLNK {
                    return Err(Errno::ELOOP.into());
                }
                // The pseudo-terminal multiplexer: opened here, so that the
                // terminal it makes is known to be the command's (its slave
                // is granted to the command, no other).
                if kind == libc::S_IFCHR && stat.st_rdev == libc::makedev(5, 2) {
                    let master = self.sup.resolver().reopen(fd.as_fd(), reopen, 0)?;
                    let n = fs::pty_number(master.as_fd())?;
                    // Its slave as the command names it: in the command's
                    // root (a container's `/dev/pts` is its own instance).
                    let name = std::ffi::CString::new(format!("/dev/pts/{n}")).expect("no NUL in a number");
                    let root = self.caller_root().ok_or(Errno::ESRCH)?;
                    let how = fs::OpenHow {
                        flags: (libc::O_PATH | libc::O_NOFOLLOW) as u64,
                        mode: 0,
                        resolve: fs::RESOLVE_IN_ROOT | fs::RESOLVE_NO_SYMLINKS,
                    };
                    let slave = fs::openat2(Dir::Fd(root.as_fd()), &name, how)?;
                    self.sup.terminal_created(n, slave);
                    return Ok(Answer::Install { fd: master, cloexec });
                }
                let mode = if tmpfile { self.creation_mode(fd.as_fd(), mode)? } else { 0 };
                let fifo = kind == libc::S_IFIFO;
                let wait = Wait { fifo, reader: fifo && flags & libc::O_ACCMODE == libc::O_RDONLY, ..wait };
                let resolver = self.sup.resolver();
                let first = self.on_behalf(proc, || resolver.reopen(fd.as_fd(), reopen | libc::O_NONBLOCK, mode));
                self.install(first, wait, move || {
                    let (dir, name) = resolver.reopening(fd.as_fd())?;
                    Ok(Opening { dir, name, flags: reopen, mode, held: Some(fd) })
                })
            }
            Target::Anonymous { fd } => {
                Ok(Answer::Install { fd: self.sup.resolver().reopen(fd.as_fd(), reopen, 0)?, cloexec })
            }
        }
    }

    /// Installs in the caller the descriptor `first` opened without
    /// blocking (`O_NONBLOCK`, cleared again unless the caller asked for
    /// it). Where the caller would have waited (the open breaks a lease the
    /// command holds: `EAGAIN`; a FIFO has no peer yet: `ENXIO` for a
    /// writer, no writer yet for a reader) the wait is the retry queue's,
    /// with the open `later` makes: a worker never waits on what the
    /// sandbox controls. A FIFO's reader is answered once a writer has
    /// written or come and gone (a writer that opens and waits before
    /// writing delays the reader's open until it writes).
    fn install(
        &self,
        first: Result<OwnedFd, Errno>,
        wait: Wait,
        later: impl FnOnce() -> Result<Opening, Errno>,
    ) -> Result<Answer, Stop> {
        let waits = move |e: Errno| wait.blocking && (e == Errno::EAGAIN || (wait.fifo && e == Errno::ENXIO));
        let mut reader = match first {
            Ok(fd) if wait.reader && wait.blocking && !peer_ready(fd.as_fd()) => Some(fd),
            Ok(fd) => return Ok(wait.done(fd)?),
            Err(e) if waits(e) => None,
            Err(e) => return Err(e.into()),
        };
        let opening = later()?;
        let attempt = move || -> Result<Answer, Errno> {
            let fd = match reader.take() {
                Some(fd) => fd,
                None => match opening.open() {
                    Ok(fd) => fd,
                    Err(e) if waits(e) => return Err(Errno::EAGAIN),
                    Err(e) => return Err(e),
                },
            };
            if wait.reader && !peer_ready(fd.as_fd()) {
                reader = Some(fd);
                return Err(Errno::EAGAIN);
            }
            wait.done(fd)
        };
        Ok(Answer::Later(later::Retry { tid: self.notif.pid, fds: 4, attempt: Box::new(attempt) }))
    }

    /// Whether an open may be continued on the path as written, without
    /// resolving it: an absolute path with no `.` or `..` that the surface
    /// allows by a rule the kernel also grants whole. The kernel then
    /// resolves it under a backstop that refuses, wherever the path leads
    /// (symlinks included), what the surface refuses (the caller checks the
    /// backstop covers `access`), and allows the rule's own tree; where a
    /// symlink leads somewhere it grants less (`/proc/<pid>` without a
    /// procfs of the command's own, a grant pattern, a terminal the command
    /// created), the open fails closed.
    /// Not with a trail of allowed calls (their records name the resolved
    /// object), not for paths in procfs or `/dev` (decided per process or
    /// opened here). Nothing read from the caller is acted on, so the
    /// notification need not be checked as still pending: a stale one
    /// takes no answer.
    fn continues_as_written(&mut self, arg: &PathArg, access: Access) -> bool {
        let path = arg.bytes.as_slice();
        let plain = path.split(|&b| b == b'/').all(|c| c != b"." && c != b"..");
        if arg.base.is_some() || !plain || self.sup.records_allowed() || self.sup.isolated() {
            return false;
        }
        let surface = self.sup.surface();
        if !matches!(surface.proc_place(path), ProcPlace::NotProc) || path.starts_with(b"/dev/") {
            return false;
        }
        // Outside procfs: decided by the trie and the patterns.
        match surface.decide(path, access, self.sup.procs()) {
            v @ crate::policy::Verdict { allowed: true, reason: Reason::Rule(i) } if self.sup.landlock_exact(i) => {
                self.decided_by = Some(v.reason);
                self.push(arg, None, AccessKind::from(access), Verdict::Allow, None, Why::Verdict(v.reason));
                true
            }
            _ => false,
        }
    }

    /// Reads up to [`ARGV_MAX`] arguments of an exec, each cut at
    /// [`ARG_MAX_LEN`] bytes; the flag says whether anything was left out.
    /// Best effort: an unreadable vector gives what was read so far.
    fn read_argv(&self, addr: u64) -> (Vec<Vec<u8>>, bool) {
        let mut argv = Vec::new();
        let mut truncated = false;
        let mut buf = [0u8; mem::PATH_MAX];
        for i in 0..=ARGV_MAX {
            let mut ptr = [0u8; 8];
            if addr == 0 || mem::read(self.notif.pid, addr + 8 * i as u64, &mut ptr) != Ok(8) {
                break;
            }
            let p = u64::from_ne_bytes(ptr);
            if p == 0 {
                break;
            }
            if i == ARGV_MAX {
                truncated = true;
                break;
            }
            match mem::read_path(self.notif.pid, p, &mut buf) {
                Ok(n) => {
                    truncated |= n > ARG_MAX_LEN;
                    argv.push(buf[..n.min(ARG_MAX_LEN)].to_vec());
                }
                Err(Errno::ENAMETOOLONG) => {
                    truncated = true;
                    argv.push(buf[..ARG_MAX_LEN].to_vec());
                }
                Err(_) => break,
            }
        }
        (argv, truncated)
    }

    /// Reads an extensible struct of `size` bytes from the caller, of which
    /// this kernel interface knows the first `known`: as the kernel's
    /// `copy_struct_from_user`, shorter is `EINVAL`, more than a page
    /// `E2BIG`, and the bytes beyond `known` must be zeroes (`E2BIG`).
    fn read_extensible(&self, addr: u64, size: u64, known: usize) -> Result<Vec<u8>, Errno> {
        if size < known as u64 {
            return Err(Errno::EINVAL);
        }
        if size > 4096 {
            return Err(Errno::E2BIG);
        }
        let mut buf = vec![0u8; size as usize];
        if mem::read(self.notif.pid, addr, &mut buf)? != buf.len() {
            return Err(Errno::EFAULT);
        }
        if buf[known..].iter().any(|&b| b != 0) {
            return Err(Errno::E2BIG);
        }
        Ok(buf)
    }

    /// Reads and validates the caller's `struct open_how` as `openat2` would.
    fn read_open_how(&self, addr: u64, size: u64) -> Result<OpenHow, Errno> {
        let buf = self.read_extensible(addr, size, std::mem::size_of::<OpenHow>())?;
        let word = |i: usize| u64::from_ne_bytes(buf[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        let how = OpenHow { flags: word(0), mode: word(1), resolve: word(2) };
        let known = fs::RESOLVE_NO_XDEV
            | fs::RESOLVE_NO_MAGICLINKS
            | fs::RESOLVE_NO_SYMLINKS
            | fs::RESOLVE_BENEATH
            | fs::RESOLVE_IN_ROOT
            | fs::RESOLVE_CACHED;
        let creates =
            how.flags & (libc::O_CREAT as u64) != 0 || how.flags & (libc::O_TMPFILE as u64) == libc::O_TMPFILE as u64;
        if how.flags >> 32 != 0
            || how.resolve & !known != 0
            || how.resolve & (fs::RESOLVE_BENEATH | fs::RESOLVE_IN_ROOT) == fs::RESOLVE_BENEATH | fs::RESOLVE_IN_ROOT
            || (how.mode != 0 && !creates)
            || how.mode & !0o7777 != 0
        {
            return Err(Errno::EINVAL);
        }
        Ok(how)
    }

    /// The caller's umask, which the kernel would apply to a created file.
    /// The mode a file made in `dir` gets from the caller's `mode`: less
    /// its umask, unless `dir` has a default ACL, which the kernel applies
    /// instead of the umask (the supervisor's own umask is 0, so the mode
    /// passed on reaches the ACL whole).
    fn creation_mode(&self, dir: std::os::fd::BorrowedFd<'_>, mode: u32) -> Result<u32, Stop> {
        let path = super::resolve::Resolver::proc_path(dir);
        let default_acl = match fs::getxattr(&path, c"system.posix_acl_default", &mut []) {
            Ok(_) | Err(Errno::ERANGE) => true,
            Err(_) => false,
        };
        Ok(if default_acl { mode & 0o7777 } else { mode & !self.umask()? & 0o7777 })
    }

    fn umask(&self) -> Result<u32, Stop> {
        let v = super::resolve::proc_status_field(self.notif.pid, "Umask:").ok_or(Stop::Gone)?;
        self.still_valid()?;
        u32::from_str_radix(&v, 8).map_err(|_| Stop::Fail(Errno::EINVAL))
    }
}

/// How a descriptor opened for the caller is handed over ([`Call::install`]).
#[derive(Debug, Clone, Copy)]
struct Wait {
    /// The caller did not ask for `O_NONBLOCK`: it would have waited.
    blocking: bool,
    /// Whether to install it close-on-exec.
    cloexec: bool,
    /// A FIFO: `ENXIO` (no reader for a writer) means wait too.
    fifo: bool,
    /// A FIFO opened for reading, which waits for a writer.
    reader: bool,
}

impl Wait {
    /// The answer that installs `fd`, in the caller's blocking mode.
    fn done(self, fd: OwnedFd) -> Result<Answer, Errno> {
        if self.blocking {
            fs::set_status_flags(fd.as_fd(), fs::status_flags(fd.as_fd())? & !libc::O_NONBLOCK)?;
        }
        Ok(Answer::Install { fd, cloexec: self.cloexec })
    }
}

/// An open the supervisor makes again for a caller that waits: `name` in
/// `dir` (a name to create, or `N` in `/proc/self/fd` for a handle it
/// holds in `held`), always without blocking.
struct Opening {
    dir: OwnedFd,
    name: std::ffi::CString,
    flags: i32,
    mode: u32,
    held: Option<OwnedFd>,
}

impl Opening {
    fn open(&self) -> Result<OwnedFd, Errno> {
        let _ = &self.held;
        fs::openat(Dir::Fd(self.dir.as_fd()), &self.name, self.flags | libc::O_NONBLOCK, self.mode)
    }
}

/// Whether a FIFO opened for reading has seen its writer: data to read,
/// or a writer that came and went.
fn peer_ready(fd: std::os::fd::BorrowedFd<'_>) -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
    poll(&mut fds, PollTimeout::ZERO).is_ok_and(|n| n > 0)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TimeFormat {
    /// `struct utimbuf`: two `time_t` seconds.
    Utimbuf,
    /// `struct timeval[2]`.
    Timeval,
    /// `struct timespec[2]`.
    Timespec,
}

/// Whether `path` names one of the caller's own descriptors through procfs
/// (`/proc/self/fd/N`, `/proc/thread-self/fd/N`).
fn own_descriptor_path(path: &[u8]) -> bool {
    [&b"/proc/self/fd/"[..], b"/proc/thread-self/fd/"]
        .iter()
        .filter_map(|p| path.strip_prefix(*p))
        .any(|n| !n.is_empty() && n.iter().all(u8::is_ascii_digit))
}
