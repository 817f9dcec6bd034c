//! Every access a trail recorded, decided again under another surface: what
//! a changed policy would break (newly denied) or open up (newly allowed)
//! before it is deployed.

use super::{allows, replayable};
use crate::audit::{self, AccessKind, Bytes, ChainError, Reader};
use crate::policy::Surface;
use std::collections::BTreeMap;

/// Which way a decision changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Change {
    /// Allowed then, refused now.
    NewlyDenied,
    /// Refused (or would have been) then, allowed now.
    NewlyAllowed,
}

impl Change {
    /// As printed.
    pub fn name(self) -> &'static str {
        match self {
            Change::NewlyDenied => "newly denied",
            Change::NewlyAllowed => "newly allowed",
        }
    }
}

/// The result of a replay.
#[derive(Debug)]
pub struct Replayed {
    /// Decisions decided again.
    pub decisions: u64,
    /// Each change, by access and path, with how often it was recorded.
    pub changes: BTreeMap<(Change, AccessKind, Bytes), u64>,
    /// Whether the trail's chain is intact.
    pub integrity: Result<usize, ChainError>,
}

impl Replayed {
    /// How many distinct accesses changed which way.
    pub fn count(&self, which: Change) -> usize {
        self.changes.keys().filter(|(c, _, _)| *c == which).count()
    }
}

/// Decides every replayable decision of the trail again under `surface`.
pub fn replay<R: std::io::BufRead>(mut reader: Reader<R>, surface: &Surface) -> std::io::Result<Replayed> {
    let mut decisions = 0;
    let mut changes = BTreeMap::new();
    for record in reader.by_ref() {
        let audit::Record::Decision(d) = record? else { continue };
        if !replayable(&d) {
            continue;
        }
        decisions += 1;
        let was = d.decision == audit::Verdict::Allow;
        let change = match (was, allows(surface, &d)) {
            (true, false) => Change::NewlyDenied,
            (false, true) => Change::NewlyAllowed,
            _ => continue,
        };
        *changes.entry((change, d.access, d.subject().clone())).or_default() += 1;
    }
    Ok(Replayed { decisions, changes, integrity: reader.integrity() })
}
