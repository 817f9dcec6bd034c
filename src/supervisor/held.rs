//! Calls held for a question (`interpose run --ask SOCKET`): the open
//! questions, the calls each holds (identical ones asked once), and asking
//! them through the approvals hub. The supervisor holds and settles them;
//! what an answer covers is [`super::ask::Answers`]'.

use super::ask::Ask;
use super::handle::Check;
use crate::approvals::hub::{Hub, Settled};
use crate::approvals::SettledBy;
use crate::sys::seccomp;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// One call held for a question.
pub struct Held {
    /// The notification, still pending.
    pub notif: seccomp::Notif,
    /// What its handling decided before it was held (the refusal last).
    pub checks: Vec<Check>,
    /// When it reached the supervisor, for the trail.
    pub received_ns: u64,
}

/// An open question and the calls that wait for it.
pub struct Question {
    /// The asking process.
    pub tgid: u32,
    /// What was asked.
    pub ask: Ask,
    /// The calls held for it.
    pub calls: Vec<Held>,
    /// The request as sent.
    pub request: crate::approvals::Request,
    /// When it was asked, for the trail.
    pub asked_ns: u64,
}

/// The open questions of one session.
#[derive(Default)]
pub struct Questions {
    /// Started with the supervisor's workers.
    pub hub: OnceLock<Arc<Hub>>,
    state: Mutex<Open>,
}

#[derive(Default)]
struct Open {
    /// Open questions by id, and their ids by (process, object, access).
    by_id: HashMap<u64, Question>,
    by_key: HashMap<(u32, Ask), u64>,
}

impl Questions {
    fn lock(&self) -> std::sync::MutexGuard<'_, Open> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Joins `held` to the open question of the same process, object and
    /// access; gives it back when there is none.
    pub fn join(&self, tgid: u32, ask: &Ask, held: Held) -> Result<(), Held> {
        let mut s = self.lock();
        let Some(id) = s.by_key.get(&(tgid, ask.clone())).copied() else { return Err(held) };
        match s.by_id.get_mut(&id) {
            Some(q) => {
                q.calls.push(held);
                Ok(())
            }
            None => Err(held),
        }
    }

    /// Asks `question` through the hub; gives it back with why it was not
    /// asked (no client, too many open).
    pub fn ask(&self, question: Question) -> Result<u64, Box<(Question, SettledBy)>> {
        let Some(hub) = self.hub.get() else { return Err(Box::new((question, SettledBy::NoClient))) };
        // Held across the hub's ask, so the question is in place before
        // anything can settle it (the hub settles on its own thread, which
        // takes this lock without holding its own).
        let mut s = self.lock();
        let request = question.request.clone();
        match hub.ask(move |id| crate::approvals::Request { id, ..request }) {
            Ok(id) => {
                let mut question = question;
                question.request.id = id;
                s.by_key.insert((question.tgid, question.ask.clone()), id);
                s.by_id.insert(id, question);
                Ok(id)
            }
            Err(by) => Err(Box::new((question, by))),
        }
    }

    /// Takes the question `settled` ends, calling `remember` on it first
    /// with this lock held, so no identical call can miss both the open
    /// question and the answer and be asked again.
    pub fn settle(&self, settled: &Settled, remember: impl FnOnce(&Question)) -> Option<Question> {
        let mut s = self.lock();
        let q = s.by_id.remove(&settled.id)?;
        s.by_key.remove(&(q.tgid, q.ask.clone()));
        remember(&q);
        Some(q)
    }
}
