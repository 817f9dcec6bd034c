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
//!
//! Waiting workers look at the holder every [`LOOK_EVERY`] only while the
//! sandbox makes calls. Once they have seen the holder idle, with no call
//! since, [`IDLE_LOOKS`] times in a row, they sleep until the holder's next
//! call wakes them, so that a sandbox that waits (an agent waiting on its
//! model, a shell waiting on its user) does not wake the supervisor a
//! hundred times a second. Only the first call after such a pause pays a
//! wake-up; a takeover still comes within [`STALL`] plus [`LOOK_EVERY`] of
//! the call that stalls.

use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long the holder may be busy with one call before a waiting worker
/// takes the turn over.
pub const STALL: Duration = Duration::from_millis(5);

/// How often a waiting worker looks whether the holder is stuck.
const LOOK_EVERY: Duration = Duration::from_millis(10);

/// How many looks in a row that find the holder idle, with no call since
/// the look before, make a waiting worker sleep until the next call.
const IDLE_LOOKS: u32 = 5;

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
    /// Of those, the ones asleep until the holder's next call.
    sleeping: usize,
    /// Calls the holders received (what tells a waiting worker that the
    /// holder was not idle all along between two looks).
    calls: u64,
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
        // Looks in a row that found the holder idle with no call since the
        // one before, and the count of calls at the last look.
        let (mut idle_looks, mut seen) = (0, s.calls);
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
            let idle = s.busy_since.is_none() && s.calls == seen;
            idle_looks = if idle { idle_looks + 1 } else { 0 };
            seen = s.calls;
            if idle_looks > IDLE_LOOKS {
                // Until the holder's next call, a release or the end (each
                // notifies): nothing can stall before a call arrives.
                s.sleeping += 1;
                s = self.freed.wait(s).unwrap_or_else(PoisonError::into_inner);
                s.sleeping -= 1;
                idle_looks = 0;
                continue;
            }
            s = self.freed.wait_timeout(s, look_every).unwrap_or_else(PoisonError::into_inner).0;
        }
    }

    /// The holder received a call at `since` and is handling it: workers
    /// asleep until a call are woken to watch it.
    pub fn busy(&self, t: Tenure, since: Instant) {
        let mut s = self.lock();
        s.calls += 1;
        if s.tenure == t.0 {
            s.busy_since = Some(since);
        }
        let sleeping = s.sleeping > 0;
        drop(s);
        if sleeping {
            self.freed.notify_all();
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

    /// A waiting worker stops looking while the holder idles, and the
    /// holder's next call wakes it to watch that call: a call that stalls
    /// after a pause is still taken over.
    #[test]
    fn waiters_sleep_while_the_holder_idles_and_still_take_over_a_stalled_call() {
        let (stall, look_every) = timing();
        let turn = std::sync::Arc::new(Turn::default());
        let (first, _) = turn.take().unwrap();
        let other = std::sync::Arc::clone(&turn);
        let (tx, took) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(other.take().unwrap().0));
        // Idle for longer than the looks that put the waiter to sleep.
        let asleep = || turn.lock().sleeping == 1;
        let deadline = Instant::now() + look_every * (IDLE_LOOKS + 1) * 20 + Duration::from_secs(2);
        while !asleep() {
            assert!(Instant::now() < deadline, "the waiter kept looking at an idle holder");
            std::thread::sleep(look_every);
        }
        // A call wakes it (it looks again while the holder is busy, never
        // asleep then); this one is told as starting an hour from now, so
        // that a slow machine never has it taken over.
        turn.busy(first, Instant::now() + Duration::from_secs(3600));
        let deadline = Instant::now() + Duration::from_secs(2);
        while asleep() {
            assert!(Instant::now() < deadline, "a call did not wake the sleeping waiter");
            std::thread::sleep(Duration::from_micros(100));
        }
        assert!(turn.done(first));
        assert!(took.try_recv().is_err(), "a call that did not stall was taken over");
        // Idle again, asleep again; then a call that stalls is taken over.
        let deadline = Instant::now() + look_every * (IDLE_LOOKS + 1) * 20 + Duration::from_secs(2);
        while !asleep() {
            assert!(Instant::now() < deadline, "the waiter kept looking at an idle holder");
            std::thread::sleep(look_every);
        }
        let stalled_at = Instant::now();
        turn.busy(first, stalled_at);
        let second = took.recv_timeout(Duration::from_secs(10)).expect("the stalled call was never taken over");
        assert_ne!(second, first);
        assert!(stalled_at.elapsed() >= stall, "taken over before the call stalled");
        assert!(!turn.done(first), "the old holder lost the turn");
    }
}
