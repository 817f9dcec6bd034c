//! Every call is handled with the caller's own credentials.
//!
//! The supervisor opens, creates, changes and connects on the command's
//! behalf. Done with interpose's own credentials, that would be a confused
//! deputy: a root supervisor would open `/proc/self/pagemap` with
//! `CAP_SYS_ADMIN` (physical addresses), write `security.capability`, or
//! present uid 0 to a unix socket's server, for a command that may do none
//! of it. So before a worker handles a call it takes the caller's
//! file-system uid and gid, supplementary groups and effective
//! capabilities (Linux keeps credentials per thread, and these changes are
//! reversible: real ids and the permitted set are untouched). Only
//! `CAP_SYS_PTRACE` stays on, for reading and writing the caller's memory
//! and taking its descriptors, which the supervisor does for itself.
//!
//! Credentials are read when a thread is first seen and cached per thread
//! until the sandbox execs or changes credentials (the filter traps the
//! setuid family and bumps the generation before the change takes effect).
//! A cached identity is kept with a pidfd of the task it was read from and
//! used only while that task lives: a thread number passes to another task
//! once its own exits, and that task must not act with the first one's
//! credentials. The ids come from the task's pidfd (`PIDFD_GET_INFO`) and
//! the capabilities from `capget(2)`, which cost a tenth of reading
//! `/proc/<tid>/status`; the supplementary groups, which only the status
//! file shows, are read there until they are known for every thread (see
//! [`SessionGroups`]).

use crate::sys::procfs::Status;
use crate::sys::{process, Errno};
use std::cell::RefCell;
use std::collections::HashMap;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// What a caller's credentials are, for the file system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// Real uid (what `access(2)` checks with).
    pub ruid: u32,
    /// Real gid.
    pub rgid: u32,
    /// Effective uid (what a unix socket's server sees in SO_PEERCRED).
    pub euid: u32,
    /// Effective gid.
    pub egid: u32,
    /// File-system uid.
    pub fsuid: u32,
    /// File-system gid.
    pub fsgid: u32,
    /// Supplementary groups.
    pub groups: Vec<u32>,
    /// Effective capabilities (bits by number).
    pub effective: u64,
    /// Permitted capabilities (what `access(2)` uses for a root caller).
    pub permitted: u64,
}

/// `CAP_SYS_PTRACE`, which the supervisor keeps for its own access to the
/// caller (its memory, its descriptors, its `/proc` entries).
const CAP_SYS_PTRACE: u64 = 1 << 19;

impl Identity {
    /// Parses the credentials lines of `/proc/<tid>/status`.
    pub fn parse(status: &Status) -> Option<Identity> {
        let field = |name: &str| status.field(name);
        // `Uid:` and `Gid:` list real, effective, saved and file-system ids.
        let id = |name: &str, n: usize| field(name)?.split_whitespace().nth(n)?.parse().ok();
        let fs = |name: &str| id(name, 3);
        let groups = field("Groups:")?.split_whitespace().map(|g| g.parse().ok()).collect::<Option<Vec<u32>>>()?;
        let caps = |name: &str| u64::from_str_radix(field(name)?, 16).ok();
        Some(Identity {
            ruid: id("Uid:", 0)?,
            rgid: id("Gid:", 0)?,
            euid: id("Uid:", 1)?,
            egid: id("Gid:", 1)?,
            fsuid: fs("Uid:")?,
            fsgid: fs("Gid:")?,
            groups,
            effective: caps("CapEff:")?,
            permitted: caps("CapPrm:")?,
        })
    }

    /// The credentials of thread `tid`, read now from its status file.
    pub fn of(tid: u32) -> Option<Identity> {
        Identity::parse(&Status::of(tid)?)
    }

    /// The credentials of thread `tid`, the task `task` names, whose
    /// supplementary groups are `groups`: its ids from the pidfd, its
    /// capabilities by number (asked first: the pidfd's answer, which
    /// fails once the task has exited, then says the number was still
    /// that task's), and its process id.
    fn of_task(tid: u32, task: &OwnedFd, groups: &[u32]) -> Result<(Identity, u32), Errno> {
        let (effective, permitted) = process::capabilities_of(tid as libc::pid_t)?;
        let ids = process::pidfd_ids(task.as_fd())?;
        let identity = Identity {
            ruid: ids.uid[0],
            rgid: ids.gid[0],
            euid: ids.uid[1],
            egid: ids.gid[1],
            fsuid: ids.uid[3],
            fsgid: ids.gid[3],
            groups: groups.to_vec(),
            effective,
            permitted,
        };
        Ok((identity, ids.tgid))
    }
}

/// The supplementary groups every sandboxed thread has while none has
/// changed them: only `setgroups` changes them (an exec keeps
/// them, and a child has its parent's; the rest of the setuid family
/// leaves them alone), so until a sandboxed thread calls `setgroups` they
/// are the command's own, learnt from the first status file read.
#[derive(Debug, Default)]
pub struct SessionGroups {
    /// A sandboxed thread was about to change its groups: set before the
    /// change takes effect.
    changed: AtomicBool,
    /// The groups of the first thread read while none had.
    first: OnceLock<Vec<u32>>,
}

impl SessionGroups {
    /// A sandboxed thread is about to change its groups (`setgroups`):
    /// from now on every thread's groups are read from its status file.
    pub fn change(&self) {
        self.changed.store(true, Ordering::SeqCst);
    }

    fn known(&self) -> Option<&[u32]> {
        match self.changed.load(Ordering::SeqCst) {
            true => None,
            false => self.first.get().map(Vec::as_slice),
        }
    }

    /// `groups` were read of a thread that waits for its answer (so they
    /// could not change meanwhile): if no change had been asked for by
    /// then, they are every thread's.
    fn learn(&self, groups: &[u32]) {
        if !self.changed.load(Ordering::SeqCst) {
            self.first.get_or_init(|| groups.to_vec());
        }
    }
}

/// A cached identity and the task it was read from.
struct Known {
    identity: Identity,
    /// The generation the identity (and the name) was read in: stale in a
    /// later one, read again through the same pidfd while its task lives.
    generation: u64,
    task: OwnedFd,
    /// The task's process id, where the pidfd gave it with the identity.
    tgid: Option<u32>,
    /// The task's process and thread ids as its own PID namespace numbers
    /// them, once read (what `/proc/self` names in the command's procfs).
    own_ids: Option<(u32, u32)>,
    /// For the trail: the task's process id and name, once read.
    name: Option<(u32, String)>,
    /// A notification of this task was found pending while the pidfd was
    /// held ([`with_task`]), in this entry's generation.
    confirmed: bool,
}

impl Known {
    /// Whether a notification of this task was found pending in
    /// `generation`, the current one. Not one found before an exec: a
    /// thread other than the leader that execs takes the leader's number,
    /// and the kept pidfd then names it, while a notification the leader
    /// made before is no longer pending (the leader is gone).
    fn confirmed_in(&self, generation: u64) -> bool {
        self.confirmed && self.generation == generation
    }
}

/// Forgets every identity this thread keeps, closing their pidfds: a
/// worker that stops receiving (another has the turn, or nothing waits to
/// be retried) holds no descriptor for tasks that may be long gone.
pub fn forget() {
    KNOWN.with_borrow_mut(HashMap::clear);
}

/// Runs `f` on the pidfd of thread `tid`'s task kept with its identity,
/// if any (its task alive when [`act_as`] took the identity, or as long
/// as what `f` does through it succeeds), and on whether a notification
/// of that task was once found pending while it was held
/// ([`confirm_task`]): then the pidfd is the caller's, since only one live
/// task holds a number.
pub fn with_task<T>(tid: u32, generation: u64, f: impl FnOnce(BorrowedFd<'_>, bool) -> T) -> Option<T> {
    KNOWN.with_borrow(|known| known.get(&tid).map(|k| f(k.task.as_fd(), k.confirmed_in(generation))))
}

/// Whether thread `tid`'s kept task once had a notification found pending
/// while its pidfd was held ([`confirm_task`]).
pub fn confirmed(tid: u32, generation: u64) -> bool {
    KNOWN.with_borrow(|known| known.get(&tid).is_some_and(|k| k.confirmed_in(generation)))
}

/// A notification of thread `tid` was found pending after [`with_task`]
/// used its pidfd.
pub fn confirm_task(tid: u32) {
    KNOWN.with_borrow_mut(|known| known.get_mut(&tid).map(|k| k.confirmed = true));
}

/// Thread `tid`'s process id and name for the trail, kept with its
/// identity: for the task this worker found alive under that number when
/// it took the identity for the call being handled ([`act_as`]), never for
/// a later holder of the number, and only while `generation` is the one
/// it was taken in (an exec or a change of credentials since makes it
/// stale). `read` reads them where they are not kept (`None`: not
/// readable, not kept), given the process id where the pidfd gave it with
/// the identity (only the name is then left to read).
pub fn process_name(
    tid: u32,
    generation: u64,
    read: impl FnOnce(Option<u32>) -> Option<(u32, String)>,
) -> Option<(u32, String)> {
    let kept = |known: &HashMap<u32, Known>| match known.get(&tid).filter(|k| k.generation == generation) {
        Some(k) => k.name.clone().ok_or(k.tgid),
        None => Err(None),
    };
    let tgid = match KNOWN.with_borrow(kept) {
        Ok(kept) => return Some(kept),
        Err(tgid) => tgid,
    };
    let name = read(tgid)?;
    KNOWN.with_borrow_mut(|known| {
        if let Some(k) = known.get_mut(&tid).filter(|k| k.generation == generation) {
            k.name = Some(name.clone());
        }
    });
    Some(name)
}

/// Thread `tid`'s process id (in the supervisor's PID namespace) and its
/// process and thread ids in its own, where they are kept with its
/// identity. Only for the task [`act_as`] has just taken the identity of
/// for the call being handled: it found that task alive under the number
/// then, so the numbers are its own (a task's numbers are fixed for its
/// life; only a later holder of the number could have others).
pub fn kept_numbers(tid: u32, generation: u64) -> (Option<u32>, Option<(u32, u32)>) {
    KNOWN.with_borrow(|known| match known.get(&tid).filter(|k| k.generation == generation) {
        Some(k) => (k.tgid, k.own_ids),
        None => (None, None),
    })
}

/// Keeps thread `tid`'s ids in its own PID namespace with its identity,
/// read while [`act_as`] had taken that identity for the call being
/// handled (as [`kept_numbers`]).
pub fn keep_own_ids(tid: u32, generation: u64, ids: (u32, u32)) {
    KNOWN.with_borrow_mut(|known| {
        if let Some(k) = known.get_mut(&tid).filter(|k| k.generation == generation) {
            k.own_ids = Some(ids);
        }
    });
}

/// How many threads a worker keeps the identity of (each with a pidfd).
const KNOWN_MAX: usize = 64;

/// Reads the identity of thread `tid` and a pidfd of its task; the pidfd
/// is `None` where none can be had (a kernel before 6.9, no descriptor
/// left), and then the identity must not be kept.
fn read(tid: u32, groups: &SessionGroups) -> Result<(Task, Option<OwnedFd>), Errno> {
    let task = match process::pidfd_open_thread(tid as libc::pid_t) {
        Ok(task) => task,
        Err(Errno::ESRCH) => return Err(Errno::ESRCH),
        Err(_) => return Identity::of(tid).map(|i| ((i, None), None)).ok_or(Errno::ESRCH),
    };
    Ok((read_task(tid, &task, groups)?, Some(task)))
}

/// An identity and, where the pidfd gave it, the task's process id.
type Task = (Identity, Option<u32>);

/// Reads the identity of thread `tid`, the task `task` names (`ESRCH` if
/// that task has exited).
fn read_task(tid: u32, task: &OwnedFd, groups: &SessionGroups) -> Result<Task, Errno> {
    let fast = groups.known().map(|g| Identity::of_task(tid, task, g));
    let identity = match fast {
        Some(Ok((identity, tgid))) => return Ok((identity, Some(tgid))),
        Some(Err(Errno::ESRCH)) => return Err(Errno::ESRCH),
        // No groups known yet, or a kernel without PIDFD_GET_INFO.
        _ => {
            let identity = Identity::of(tid).ok_or(Errno::ESRCH)?;
            // Read by number: the pidfd's task's only if it is alive still.
            if !process::pidfd_alive(task.as_fd()) {
                return Err(Errno::ESRCH);
            }
            groups.learn(&identity.groups);
            identity
        }
    };
    Ok((identity, None))
}

/// The supervisor's own identity, read at start.
static SUPERVISOR: std::sync::OnceLock<Option<Identity>> = std::sync::OnceLock::new();

/// Reads the supervisor's own identity; call once, before any worker
/// thread takes another.
pub fn init() {
    SUPERVISOR.get_or_init(|| Identity::parse(&Status::own_thread()?));
}

/// Runs `f` with the supervisor's own credentials, for its own bookkeeping
/// of the caller: looking into `/proc/<tid>` of a caller that is no longer
/// dumpable (after it changed its credentials, its `/proc` entries belong
/// to root). What `f` returns must not be used to act on the caller's
/// behalf.
pub fn as_supervisor<T>(f: impl FnOnce() -> T) -> T {
    let (Some(Some(own)), Some(taken)) = (SUPERVISOR.get(), TAKEN.with_borrow_mut(Option::take)) else {
        return f();
    };
    // Groups are restored only where they were set (not in a user
    // namespace whose setgroups is denied).
    let groups = GROUPS.with(std::cell::Cell::get);
    // If the switch fails, `f` runs as the caller and fails as it would.
    let _ = apply(own, groups);
    let result = f();
    let restored = apply(&taken, groups).map(|()| TAKEN.with_borrow_mut(|t| *t = Some(taken.clone())));
    if restored.is_err() {
        // The thread holds neither identity for sure: the next call takes
        // its caller's afresh.
        tracing::error!("restoring the caller's credentials failed");
    }
    result
}

/// Runs `f` as the caller; if the kernel refuses it (`EACCES`), again with
/// the supervisor's credentials. For the supervisor's own lookups in the
/// caller's `/proc` entries only.
pub fn retry_as_supervisor<T>(f: impl Fn() -> Result<T, Errno>) -> Result<T, Errno> {
    match f() {
        Err(Errno::EACCES) => as_supervisor(f),
        other => other,
    }
}

thread_local! {
    /// Whether this worker sets supplementary groups.
    static GROUPS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The identity this worker thread has taken, if any.
    static TAKEN: RefCell<Option<Identity>> = const { RefCell::new(None) };
    /// `tid -> identity`, each with the generation it was read in.
    static KNOWN: RefCell<HashMap<u32, Known>> = RefCell::new(HashMap::new());
    /// The generation this worker last let go of the identities of tasks
    /// gone in.
    static SWEPT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Makes this worker thread act as thread `tid` for the call it handles.
/// `generation` changes whenever a cached identity may be stale; `groups`
/// says whether supplementary groups can be set (not in a user namespace
/// whose setgroups is denied, where they are the command's already).
/// Fails if the caller is gone or the identity cannot be taken: the call
/// must then not be handled with the supervisor's own credentials.
pub fn act_as(tid: u32, generation: u64, (groups, session): (bool, &SessionGroups)) -> Result<(), Errno> {
    // A supervisor without any capability (an ordinary user, no user
    // namespace) has nothing its callers lack: same uid, no privilege.
    static PRIVILEGED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if !*PRIVILEGED.get_or_init(|| process::permitted_capabilities().ok().is_none_or(|p| p != 0)) {
        return Ok(());
    }
    GROUPS.with(|g| g.set(groups));
    // `None`: the worker holds the cached identity already.
    let cached = KNOWN.with_borrow_mut(|known| -> Result<_, Errno> {
        if known.len() >= KNOWN_MAX && !known.contains_key(&tid) {
            known.clear();
        }
        // Once a generation, the identities of tasks gone since are let go
        // (their pidfds closed), all asked in one poll: an exec or a change
        // of credentials makes every identity stale, and most of the tasks
        // a build started have exited by then.
        // The caller's own entry, if it was asked then and is kept, lives.
        let mut alive = false;
        if SWEPT.get() != generation && !known.is_empty() {
            SWEPT.set(generation);
            // Keys and values of an unchanged map come in the same order.
            let gone = process::pidfds_gone(known.values().map(|k| k.task.as_fd()));
            let dead: Vec<u32> = known.keys().zip(gone).filter(|(_, gone)| *gone).map(|(&t, _)| t).collect();
            for t in &dead {
                known.remove(t);
            }
            alive = known.contains_key(&tid);
        }
        match known.get_mut(&tid) {
            Some(k) if alive || process::pidfd_alive(k.task.as_fd()) => {
                // Stale (an exec or a change of credentials since): read
                // again through the pidfd kept, which names the task that
                // holds the number now (alive, so no other has had it; after
                // an exec by another thread than the leader, that thread),
                // and not confirmed for this generation yet.
                if k.generation != generation {
                    match read_task(tid, &k.task, session) {
                        Ok((identity, tgid)) => {
                            (k.identity, k.generation, k.tgid, k.own_ids, k.name, k.confirmed) =
                                (identity, generation, tgid, None, None, false)
                        }
                        Err(e) => {
                            known.remove(&tid);
                            return Err(e);
                        }
                    }
                }
                let held = TAKEN.with_borrow(|t| t.as_ref() == Some(&k.identity));
                Ok(Some((!held).then(|| k.identity.clone())))
            }
            // Its task has exited: the number is another's now.
            Some(_) => Ok(known.remove(&tid).and(None)),
            None => Ok(None),
        }
    })?;
    let wanted = match cached {
        Some(None) => return Ok(()),
        Some(Some(i)) => i,
        None => {
            let ((identity, tgid), task) = read(tid, session)?;
            if let Some(task) = task {
                KNOWN.with_borrow_mut(|known| {
                    let known_now = Known {
                        identity: identity.clone(),
                        generation,
                        task,
                        tgid,
                        own_ids: None,
                        name: None,
                        confirmed: false,
                    };
                    known.insert(tid, known_now)
                });
            }
            identity
        }
    };
    if TAKEN.with_borrow(|t| t.as_ref() == Some(&wanted)) {
        return Ok(());
    }
    TAKEN.with_borrow_mut(|t| *t = None);
    apply(&wanted, groups)?;
    TAKEN.with_borrow_mut(|t| *t = Some(wanted));
    Ok(())
}

/// Runs `f` with the caller's effective uid and gid too (set per thread,
/// the real and saved ids untouched): the kernel records them, not the
/// file-system ids, as a unix socket's peer credentials. The caller's
/// identity is taken again afterwards.
pub fn with_callers_effective_ids<T>(f: impl FnOnce() -> T) -> T {
    let Some(taken) = TAKEN.with_borrow(Clone::clone) else { return f() };
    let groups = GROUPS.with(std::cell::Cell::get);
    let own = SUPERVISOR.get().and_then(Option::as_ref).map_or((0, 0), |o| (o.euid, o.egid));
    if (taken.euid, taken.egid) == own {
        // The worker's effective ids are the caller's already (its groups
        // and capabilities were taken with its identity).
        return f();
    }
    // Changing effective ids needs CAP_SETUID and CAP_SETGID in effect;
    // then the caller's file-system identity and capabilities again (a
    // change of effective uid also changes the effective capabilities).
    let switched = process::raise_effective_capabilities()
        .and_then(|()| process::set_thread_effective_ids(taken.euid, taken.egid))
        .and_then(|()| apply(&taken, groups));
    let result = f();
    if switched.is_ok() {
        let restored = process::raise_effective_capabilities()
            .and_then(|()| process::set_thread_effective_ids(own.0, own.1))
            .and_then(|()| apply(&taken, groups));
        if restored.is_err() {
            tracing::error!("restoring the worker's credentials after a connect failed");
            TAKEN.with_borrow_mut(|t| *t = None);
        }
    } else {
        TAKEN.with_borrow_mut(|t| *t = None);
    }
    result
}

/// Runs `f` with the caller's effective capabilities alone, without the
/// `CAP_SYS_PTRACE` the worker keeps for its own access to the caller: for
/// what the supervisor opens or reads in another process's `/proc/<pid>`
/// on the caller's behalf (its memory, environment, descriptors), where
/// that capability would let the caller see what the kernel keeps from it
/// (a process that made itself non-dumpable, such as ssh-agent).
pub fn without_ptrace<T>(f: impl FnOnce() -> Result<T, Errno>) -> Result<T, Errno> {
    let Some(taken) = TAKEN.with_borrow(Clone::clone) else { return f() };
    if taken.effective & CAP_SYS_PTRACE != 0 {
        return f();
    }
    let groups = GROUPS.with(std::cell::Cell::get);
    TAKEN.with_borrow_mut(|t| *t = None);
    let groups_arg = groups.then_some(taken.groups.as_slice());
    let result =
        process::take_identity_in_this_thread(taken.fsuid, taken.fsgid, groups_arg, taken.effective).and_then(|()| f());
    match apply(&taken, groups) {
        Ok(()) => TAKEN.with_borrow_mut(|t| *t = Some(taken)),
        Err(_) => tracing::error!("taking the caller's credentials back after a /proc access failed"),
    }
    result
}

/// Runs `f` with the credentials `access(2)` checks with: the caller's
/// real uid and gid as file-system ids, and no effective capability unless
/// its real uid is 0 (then its permitted ones), as the kernel's
/// `access_override_creds` makes them. The caller's identity is taken
/// again afterwards.
pub fn with_callers_real_ids<T>(f: impl FnOnce() -> Result<T, Errno>) -> Result<T, Errno> {
    // Where the caller's file-system ids are its real ones and its
    // effective capabilities what access(2) would give it (root with all it
    // is permitted, anyone else with none), the worker holds them already.
    let held = TAKEN.with_borrow(|t| {
        t.as_ref().is_none_or(|t| {
            let effective = if t.ruid == 0 { t.permitted } else { 0 };
            (t.fsuid, t.fsgid, t.effective) == (t.ruid, t.rgid, effective)
        })
    });
    if held {
        return f();
    }
    let Some(taken) = TAKEN.with_borrow(Clone::clone) else { return f() };
    let groups = GROUPS.with(std::cell::Cell::get);
    let effective = if taken.ruid == 0 { taken.permitted } else { 0 };
    let real = Identity { fsuid: taken.ruid, fsgid: taken.rgid, effective, ..taken.clone() };
    // Whatever happens, the thread's next call takes its caller afresh
    // unless the caller's identity is back for sure.
    TAKEN.with_borrow_mut(|t| *t = None);
    let result = apply(&real, groups).and_then(|()| f());
    match apply(&taken, groups) {
        Ok(()) => TAKEN.with_borrow_mut(|t| *t = Some(taken)),
        Err(_) => tracing::error!("taking the caller's credentials back after access(2) failed"),
    }
    result
}

/// Gives this thread `who`'s file-system identity and effective
/// capabilities, and CAP_SYS_PTRACE for the supervisor's own access to the
/// caller.
fn apply(who: &Identity, groups: bool) -> Result<(), Errno> {
    process::take_identity_in_this_thread(
        who.fsuid,
        who.fsgid,
        groups.then_some(who.groups.as_slice()),
        who.effective | CAP_SYS_PTRACE,
    )
}

/// Runs `f` with `dir` as this thread's cwd and `umask` as its umask, as the
/// calls the kernel makes a name for from the calling thread's own (a unix
/// socket's `bind`) need. The thread takes a file-system context of its
/// own for this, once (`unshare(CLONE_FS)`: cwd, root and umask), so no
/// other thread of the supervisor is affected; its umask is put back after.
pub fn in_directory<T>(
    dir: std::os::fd::BorrowedFd<'_>,
    umask: u32,
    f: impl FnOnce() -> Result<T, Errno>,
) -> Result<T, Errno> {
    thread_local! {
        static OWN_FS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }
    if !OWN_FS.get() {
        process::unshare(libc::CLONE_FS)?;
        OWN_FS.set(true);
    }
    process::fchdir(dir)?;
    let before = process::umask(umask);
    let result = f();
    process::umask(before);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_read_from_status() {
        let status = "Name:\tsh\nUid:\t999\t1000\t1000\t1001\nGid:\t99\t100\t100\t101\nGroups:\t4 27 \nCapPrm:\t0000000000000c00\nCapEff:\t0000000000000400\n";
        let i = Identity::parse(&Status::parse(status.into())).unwrap();
        assert_eq!(
            i,
            Identity {
                ruid: 999,
                rgid: 99,
                euid: 1000,
                egid: 100,
                fsuid: 1001,
                fsgid: 101,
                groups: vec![4, 27],
                effective: 0x400,
                permitted: 0xc00
            }
        );
        assert!(Identity::parse(&Status::parse("Name:\tx\n".into())).is_none());
        assert_eq!(
            Identity::parse(&Status::parse(status.replace("Groups:\t4 27 ", "Groups:"))).unwrap().groups,
            Vec::<u32>::new()
        );
    }

    #[test]
    fn a_task_confirmed_before_an_exec_is_not_confirmed_after_it() {
        let tid = nix::unistd::gettid().as_raw() as u32;
        let task = process::pidfd_open_thread(tid as libc::pid_t).unwrap();
        let identity = Identity::of(tid).unwrap();
        let k = Known { identity, generation: 3, task, tgid: None, own_ids: None, name: None, confirmed: true };
        assert!(k.confirmed_in(3));
        // An exec (or a change of credentials) since: the number may be
        // another thread's of the same process now, and the notification
        // that confirmed it no longer pending.
        assert!(!k.confirmed_in(4));
    }

    #[test]
    fn only_setgroups_makes_the_sessions_groups_unknown() {
        let memory = crate::supervisor::context::Memory::default();
        memory.groups.learn(&[4, 27]);
        let before = memory.generation();
        // setresuid, setresgid, capset: cached credentials go stale, the
        // groups stay every thread's.
        memory.caller_changes_credentials(false);
        assert!(memory.generation() > before);
        assert_eq!(memory.groups.known(), Some(&[4, 27][..]));
        // setgroups: read from each thread's status from now on.
        memory.caller_changes_credentials(true);
        assert_eq!(memory.groups.known(), None);
        memory.groups.learn(&[1]);
        assert_eq!(memory.groups.known(), None);
    }
}
