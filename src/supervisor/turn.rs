//! Which worker receives notifications: one at a time, and the same one
//! for as long as it keeps up.
//!
//! Every thread blocked in `SECCOMP_IOCTL_NOTIF_RECV` is woken by each
//! notification (the listener's wait queue is not exclusive), and with the
//! listener's sync wake-up those wake-ups run one after the other on the
//! caller's CPU, before the call is answered. Handing the turn to another
//! thread after each receive costs a futex wake on the same path instead.
//! So one worker holds the turn: it receives, answers and receives again,
//! and the others wait here. A call that takes long (a lookup on a FUSE
//! mount served by the sandbox itself, a slow network file system) must not
//! stall every other call: a waiting worker takes the turn over when the
//! holder has been busy with one call for longer than [`STALL`], and the old
//! holder, once done, waits like the rest.

use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long the holder may be busy with one call before a waiting worker
/// takes the turn over.
pub const STALL: Duration = Duration::from_millis(5);

/// How often a waiting worker looks whether the holder is stuck.
const LOOK_EVERY: Duration = Duration::from_millis(10);

/// [`STALL`] and [`LOOK_EVERY`]; in a debug build (the tests') both
/// `INTERPOSE_TEST_STALL_US` microseconds where it is set, so that a test
/// can have calls taken over at will (races between workers show then).
fn timing() -> (Duration, Duration) {
    #[cfg(debug_assertions)]
    {
        static SET: std::sync::OnceLock<Option<Duration>> = std::sync::OnceLock::new();
        let set =
            SET.get_or_init(|| std::env::var("INTERPOSE_TEST_STALL_US").ok()?.parse().ok().map(Duration::from_micros));
        if let Some(d) = *set {
            return (d, d);
        }
    }
    (STALL, LOOK_EVERY)
}

#[derive(Debug, Default)]
struct State {
    /// Whether a worker holds the turn.
    taken: bool,
    /// Which tenure holds it: bumped at every take and takeover.
    tenure: u64,
    /// Since when the holder has been handling one call (`None` while it
    /// waits for one).
    busy_since: Option<Instant>,
    /// Workers waiting for the turn.
    waiting: usize,
    /// The listener hung up: nobody takes the turn any more.
    closed: bool,
}

/// The turn to receive.
#[derive(Debug, Default)]
pub struct Turn {
    state: Mutex<State>,
    freed: Condvar,
}

/// A worker's hold on the turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tenure(u64);

impl Tenure {
    /// Whether this is the first turn a worker took.
    pub fn is_first(self) -> bool {
        self.0 == 1
    }
}

impl Turn {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for the turn: until nobody holds it, or its holder has been
    /// busy with one call for longer than [`STALL`]. Also says whether no
    /// other worker is left waiting (the caller should start one, so that
    /// someone can take over from it in turn). `None` once the listener has
    /// hung up: the worker ends.
    pub fn take(&self) -> Option<(Tenure, bool)> {
        let (stall, look_every) = timing();
        let mut s = self.lock();
        s.waiting += 1;
        loop {
            if s.closed {
                s.waiting -= 1;
                return None;
            }
            let stuck = s.busy_since.is_some_and(|t| t.elapsed() >= stall);
            if !s.taken || stuck {
                s.taken = true;
                s.tenure += 1;
                s.busy_since = None;
                s.waiting -= 1;
                return Some((Tenure(s.tenure), s.waiting == 0));
            }
            s = self.freed.wait_timeout(s, look_every).unwrap_or_else(PoisonError::into_inner).0;
        }
    }

    /// The holder received a call at `since` and is handling it.
    pub fn busy(&self, t: Tenure, since: Instant) {
        let mut s = self.lock();
        if s.tenure == t.0 {
            s.busy_since = Some(since);
        }
    }

    /// The holder answered its call; true if it still holds the turn (else
    /// it was taken over and the worker must [`Turn::take`] it again).
    pub fn done(&self, t: Tenure) -> bool {
        let mut s = self.lock();
        if s.tenure == t.0 {
            s.busy_since = None;
            true
        } else {
            false
        }
    }

    /// The holder stops because the listener hung up: every worker waiting
    /// for the turn ends too.
    pub fn close(&self) {
        let mut s = self.lock();
        s.closed = true;
        s.taken = false;
        s.busy_since = None;
        drop(s);
        self.freed.notify_all();
    }

    /// The holder stops for an error of its own: another worker may take it.
    pub fn release(&self, t: Tenure) {
        let mut s = self.lock();
        if s.tenure == t.0 {
            s.taken = false;
            s.busy_since = None;
            drop(s);
            self.freed.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_at_a_time_and_a_stuck_one_is_taken_over() {
        let turn = std::sync::Arc::new(Turn::default());
        let (first, alone) = turn.take().unwrap();
        assert!(alone);
        // Holding, not busy: another worker waits (here: for longer than a
        // stall, and still does not get it).
        let other = std::sync::Arc::clone(&turn);
        let waiter = std::thread::spawn(move || other.take().unwrap().0);
        std::thread::sleep(STALL * 4);
        assert!(!waiter.is_finished());
        assert!(turn.done(first));
        // Busy with one call past the stall: taken over.
        turn.busy(first, Instant::now());
        let second = waiter.join().unwrap();
        assert_ne!(second, first);
        assert!(!turn.done(first), "the old holder lost the turn");
        assert!(turn.done(second));
        // Released: free for the next.
        turn.release(second);
        let (third, _) = turn.take().unwrap();
        assert_ne!(third, second);
        // Closed: the holder and every waiter end.
        let other = std::sync::Arc::clone(&turn);
        let waiter = std::thread::spawn(move || other.take());
        turn.close();
        assert!(waiter.join().unwrap().is_none());
        assert!(turn.take().is_none());
    }
}
