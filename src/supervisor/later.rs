//! Calls that would wait on something the sandbox controls.
//!
//! A unix `connect` to a server whose backlog is full, a datagram to a
//! socket whose queue is full, an open of a file under a lease the command
//! holds or of a FIFO without its peer, blocks until the other side moves;
//! done by a
//! worker, that would hand the sandbox a way to stop every answer (a server
//! that never accepts, and as many connecting threads as there are
//! workers). So the supervisor makes these calls without blocking, and
//! when they would block it hands them here: one thread retries each with
//! a growing pause (1 ms to 50 ms) until it completes, fails, or its caller
//! stops waiting (killed, or interrupted by a signal: the kernel then
//! restarts the call as a new notification). What waits here is bounded:
//! beyond half the supervisor's descriptor limit held for waiting calls
//! (which the supervisor raises to its hard limit at start; at least
//! [`MIN_HELD_FDS`]), a call that would wait fails with `EAGAIN` at once — a
//! denial of service never turns into an allowed call, and never into a
//! stalled supervisor. The sandbox's task limit bounds the waiting calls
//! too: each is a thread of it.

use super::{identity, Answer, Supervisor};
use crate::sys::{seccomp, Errno};
use std::os::fd::AsFd;
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

/// Descriptors (sockets, socket files, passed rights) all waiting calls may
/// hold together, at least.
pub const MIN_HELD_FDS: usize = 512;

/// The first and the longest pause between two tries.
const FIRST_PAUSE: Duration = Duration::from_millis(1);
const LONGEST_PAUSE: Duration = Duration::from_millis(50);

/// A call made without blocking that would have blocked: `attempt` makes
/// it again (without blocking), as thread `tid`, and gives the answer (the
/// syscall's return value, a descriptor to install), or `EAGAIN` to be
/// tried again later.
pub struct Retry {
    /// The calling thread, whose credentials each try is made with.
    pub tid: u32,
    /// How many descriptors `attempt` holds.
    pub fds: usize,
    /// One try.
    pub attempt: Box<dyn FnMut() -> Result<Answer, Errno> + Send>,
}

impl std::fmt::Debug for Retry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Retry").field("tid", &self.tid).field("fds", &self.fds).finish_non_exhaustive()
    }
}

struct Waiting {
    id: u64,
    retry: Retry,
    due: Instant,
    pause: Duration,
}

/// The waiting calls and the thread that retries them.
pub struct Later {
    queue: Mutex<Queue>,
    wake: Condvar,
    /// How many descriptors waiting calls may hold together.
    max_held_fds: usize,
}

#[derive(Default)]
struct Queue {
    waiting: Vec<Waiting>,
    held_fds: usize,
    running: bool,
}

impl Later {
    /// An empty queue whose calls may hold half of `fd_limit` descriptors.
    pub fn new(fd_limit: u64) -> Later {
        let max_held_fds = usize::try_from(fd_limit / 2).unwrap_or(usize::MAX).max(MIN_HELD_FDS);
        Later { queue: Mutex::default(), wake: Condvar::new(), max_held_fds }
    }

    /// Takes notification `id` to answer when `retry` completes; gives it
    /// back if the bound is reached.
    pub fn wait(&self, sup: &Arc<Supervisor>, id: u64, retry: Retry) -> Result<(), Retry> {
        let mut q = self.queue.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if q.held_fds + retry.fds > self.max_held_fds {
            return Err(retry);
        }
        q.held_fds += retry.fds;
        q.waiting.push(Waiting { id, retry, due: Instant::now() + FIRST_PAUSE, pause: FIRST_PAUSE });
        if !q.running {
            let me = Arc::downgrade(sup);
            let spawned = std::thread::Builder::new().name("interpose-later".into()).spawn(move || run(me));
            match spawned {
                Ok(_) => q.running = true,
                Err(_) => {
                    // Without the thread nothing would answer: give it back.
                    let w = q.waiting.pop().expect("pushed above");
                    q.held_fds -= w.retry.fds;
                    return Err(w.retry);
                }
            }
        }
        drop(q);
        self.wake.notify_one();
        Ok(())
    }
}

/// The retrying thread: it holds the supervisor only while it works, and
/// ends when the supervisor is gone.
fn run(sup: Weak<Supervisor>) {
    loop {
        let Some(sup) = sup.upgrade() else { return };
        let later = &sup.later;
        let due = {
            let mut q = later.queue.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let next = q.waiting.iter().map(|w| w.due).min();
            let timeout = next.map_or(Duration::from_secs(1), |d| d.saturating_duration_since(Instant::now()));
            if !timeout.is_zero() {
                q = later.wake.wait_timeout(q, timeout).unwrap_or_else(std::sync::PoisonError::into_inner).0;
            }
            let now = Instant::now();
            let (due, not_yet): (Vec<_>, Vec<_>) =
                std::mem::take(&mut q.waiting).into_iter().partition(|w| w.due <= now);
            q.waiting = not_yet;
            due
        };
        let mut again = Vec::new();
        let mut released = 0;
        for mut w in due {
            match try_once(&sup, &mut w) {
                Try::Done(answer) => {
                    sup.answer(w.id, answer);
                    released += w.retry.fds;
                }
                Try::Gone => released += w.retry.fds,
                Try::Again => {
                    w.pause = (w.pause * 2).min(LONGEST_PAUSE);
                    w.due = Instant::now() + w.pause;
                    again.push(w);
                }
            }
        }
        let mut q = later.queue.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        q.held_fds -= released;
        q.waiting.extend(again);
        if q.waiting.is_empty() {
            identity::forget();
        }
    }
}

enum Try {
    Done(Answer),
    Again,
    /// The caller stopped waiting.
    Gone,
}

/// One try of a waiting call.
fn try_once(sup: &Supervisor, w: &mut Waiting) -> Try {
    // A caller that stopped waiting (killed, or interrupted by a signal,
    // after which the kernel restarts the call as a new notification) must
    // not have the call completed behind its back.
    if !seccomp::id_valid(sup.listener.as_fd(), w.id) {
        return Try::Gone;
    }
    match identity::act_as(w.retry.tid, sup.memory.generation(), (sup.ground.set_groups, &sup.memory.groups)) {
        Ok(()) => {}
        Err(Errno::ESRCH) => return Try::Gone,
        Err(e) => return Try::Done(Answer::Fail(e)),
    }
    match (w.retry.attempt)() {
        Err(Errno::EAGAIN) => Try::Again,
        Ok(answer) => Try::Done(answer),
        Err(e) => Try::Done(Answer::Fail(e)),
    }
}
