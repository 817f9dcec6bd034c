//! Trails whose supervisor died before the session ended.
//!
//! A supervisor that is killed (an `oci-agent` restarted, say) leaves its
//! sessions' trails without a `session_end`: read back, such a trail is
//! "truncated", which cannot be told apart from one somebody cut short.
//! While a session runs, its supervisor keeps a *lease* beside the trail
//! (`.<name>.open`): a MAC, made with the trail key for that session, that
//! says "this trail is open, and interpose opened it". A restarted agent
//! closes the trails whose lease verifies: it removes a record the death
//! cut short, appends a `session_end` marked [`SupervisorLost`] (the counts
//! are the records found) and anchors it, so `report --verify` says the
//! supervisor died, not that the trail was truncated. A trail without a
//! valid lease (not opened by interpose with this key) is never signed, so
//! closing cannot be used to anchor a trail somebody else wrote.
//!
//! What the close vouches for is said where it is read: the lines before
//! it are hash-chained as any trail's, but the supervisor that wrote them
//! never anchored them.

use super::chain::{chained_line, line_hash, Reader};
use super::schema::{Anchor, Record, SessionEnd, SupervisorLost, Verdict};
use super::TrailKey;
use std::io::{BufReader, Read, Seek, Write};
use std::path::{Path, PathBuf};

/// What the lease's MAC is made over, with the session's key.
const LEASE: &str = "interpose trail open";

/// The lease file of the trail at `trail`: `.<name>.open` beside it.
pub fn lease_path(trail: &Path) -> PathBuf {
    let name = trail.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    trail.with_file_name(format!(".{name}.open"))
}

/// The hash of a trail's first line when its session record is `start`,
/// as the writer chains it.
pub fn session_hash(start: &Record) -> String {
    line_hash(chained_line(start, super::chain::CHAIN_START).expect("a record serializes").as_bytes())
}

/// Writes the lease of the trail at `trail`, whose first line hashes to
/// `session` (never over an existing file).
pub fn open_lease(trail: &Path, session: &str, key: &TrailKey) -> std::io::Result<()> {
    let mut f = super::trail_file_options().create_new(true).open(lease_path(trail))?;
    f.write_all(key.anchor(session, LEASE).mac.as_bytes())?;
    f.sync_all()
}

/// Removes the lease: the session ended and its trail says so.
pub fn release(trail: &Path) {
    let _ = std::fs::remove_file(lease_path(trail));
}

/// What closing a trail did.
#[derive(Debug, PartialEq, Eq)]
pub enum Closed {
    /// Its `session_end` marked as lost was appended and anchored, after
    /// `records` records; `torn` bytes of a cut-short record were removed.
    Closed {
        /// Records in the trail before the close.
        records: usize,
        /// Bytes removed from the end.
        torn: u64,
    },
    /// The trail had ended after all; only its lease was left.
    AlreadyEnded,
}

/// Why a trail was not closed.
#[derive(Debug, thiserror::Error)]
pub enum CloseError {
    /// No lease, or one this key did not make for this trail.
    #[error("{0}: not opened by interpose with this key (no valid lease); left as it is")]
    NoLease(PathBuf),
    /// The trail's chain is broken or it does not parse: closing it would
    /// sign what is wrong with it.
    #[error("{0}: {1}; left as it is")]
    Damaged(PathBuf, String),
    /// Reading or writing failed.
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
}

/// Closes the trail at `trail`, whose supervisor died, as described in the
/// module documentation.
pub fn close(trail: &Path, key: &TrailKey) -> Result<Closed, CloseError> {
    let io = |e| CloseError::Io(trail.to_path_buf(), e);
    let damaged = |why: String| CloseError::Damaged(trail.to_path_buf(), why);
    let lease = std::fs::read_to_string(lease_path(trail)).map_err(|_| CloseError::NoLease(trail.to_path_buf()))?;
    let mut file = super::trail_file_options().open(trail).map_err(io)?;
    if !file.metadata().map_err(io)?.is_file() {
        return Err(damaged("not a regular file".into()));
    }
    let whole = super::last_whole_record(&file).map_err(io)?;
    let torn = file.metadata().map_err(io)?.len() - whole;
    let mut reader = Reader::new(BufReader::new((&file).take(whole))).map_err(|e| damaged(e.to_string()))?;
    let anchor = Anchor { key_id: key.id.clone(), mac: lease.trim().to_string() };
    if !key.verifies(&anchor, reader.session_hash(), LEASE) {
        return Err(CloseError::NoLease(trail.to_path_buf()));
    }
    let (mut allowed, mut denied, mut would_deny) = (0, 0, 0);
    for record in reader.by_ref() {
        if let Record::Decision(d) = record.map_err(io)? {
            match d.decision {
                Verdict::Allow => allowed += 1,
                Verdict::Deny => denied += 1,
                Verdict::WouldDeny => would_deny += 1,
                Verdict::Error => {}
            }
        }
    }
    match reader.integrity() {
        Ok(_) if torn == 0 => {
            release(trail);
            return Ok(Closed::AlreadyEnded);
        }
        Ok(_) => return Err(damaged(format!("{torn} bytes after its session_end"))),
        Err(super::ChainError::Truncated { .. }) => {}
        Err(e) => return Err(damaged(e.to_string())),
    }
    let end = Record::SessionEnd(SessionEnd {
        journal: None,
        exit_status: -1,
        allowed,
        denied,
        would_deny,
        dropped_allow_records: 0,
        time_ns: super::now_ns(),
        supervisor_lost: Some(SupervisorLost { closed_by_pid: std::process::id(), torn_bytes: torn }),
    });
    let end_line = chained_line(&end, reader.last_hash()).map_err(|e| io(std::io::Error::other(e)))?;
    let end_hash = line_hash(end_line.as_bytes());
    let anchor = Record::Anchor(key.anchor(reader.session_hash(), &end_hash));
    let anchor_line = chained_line(&anchor, &end_hash).map_err(|e| io(std::io::Error::other(e)))?;
    let records = reader.lines();
    drop(reader);
    // The torn record goes; the close is written in one piece after it.
    file.set_len(whole).map_err(io)?;
    file.seek(std::io::SeekFrom::Start(whole)).map_err(io)?;
    file.write_all(format!("{end_line}\n{anchor_line}\n").as_bytes()).map_err(io)?;
    file.sync_all().map_err(io)?;
    release(trail);
    Ok(Closed::Closed { records, torn })
}

/// Closes every trail in `dir` that has a lease: at the start of an agent
/// that holds the directory alone, every such trail's supervisor is dead.
/// One line per trail closed or left, for the agent's log.
pub fn close_all(dir: &Path, key: &TrailKey) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut said = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(trail) = name.strip_prefix('.').and_then(|n| n.strip_suffix(".open")) else { continue };
        let path = dir.join(trail);
        said.push(match close(&path, key) {
            Ok(Closed::Closed { records, torn }) => format!(
                "{}: its supervisor died; closed after {records} records{}",
                path.display(),
                if torn > 0 { format!(" ({torn} bytes of a cut-short record removed)") } else { String::new() }
            ),
            Ok(Closed::AlreadyEnded) => format!("{}: had ended; its lease removed", path.display()),
            Err(e) => e.to_string(),
        });
    }
    said.sort();
    said
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::{Output, Sink};

    fn key(dir: &Path) -> TrailKey {
        TrailKey::load_or_create(&dir.join("key")).unwrap()
    }

    /// A trail written by a real [`Sink`] that "dies" before session_end,
    /// with its lease.
    fn orphan(dir: &Path, key: &TrailKey, decisions: u64) -> PathBuf {
        let path = dir.join("c.jsonl");
        let file = crate::audit::trail_file_options().create_new(true).open(&path).unwrap();
        let sink = Sink::start(Output::File(file), Some(key.clone()));
        let start = crate::audit::test_support::start();
        open_lease(&path, &session_hash(&start), key).unwrap();
        sink.send(start);
        for i in 0..decisions {
            let verdict = if i % 2 == 0 { Verdict::Allow } else { Verdict::Deny };
            sink.send(crate::audit::test_support::decision(i, verdict));
        }
        sink.flush();
        path
    }

    fn verify(path: &Path, key: &TrailKey) -> Result<usize, crate::audit::ChainError> {
        let mut r = Reader::open(path).unwrap();
        for rec in r.by_ref() {
            rec.unwrap();
        }
        r.verified(key)
    }

    #[test]
    fn a_dead_supervisors_trail_is_closed_marked_and_anchored() {
        let dir = tempfile::tempdir().unwrap();
        let key = key(dir.path());
        let path = orphan(dir.path(), &key, 4);
        assert!(matches!(verify(&path, &key), Err(crate::audit::ChainError::Truncated { .. })));
        // A record cut short by the death.
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"{\"prev\":\"12").unwrap();
        assert_eq!(close(&path, &key).unwrap(), Closed::Closed { records: 5, torn: 11 });
        assert_eq!(verify(&path, &key).unwrap(), 7);
        let mut r = Reader::open(&path).unwrap();
        let end = r.by_ref().filter_map(Result::ok).find_map(|rec| match rec {
            Record::SessionEnd(e) => Some(e),
            _ => None,
        });
        let end = end.unwrap();
        assert_eq!((end.exit_status, end.allowed, end.denied), (-1, 2, 2));
        assert_eq!(end.supervisor_lost.as_ref().map(|l| l.torn_bytes), Some(11));
        assert!(r.supervisor_lost().is_some());
        assert!(!lease_path(&path).exists());
        // Nothing is left to close.
        assert!(close_all(dir.path(), &key).is_empty());
    }

    #[test]
    fn a_trail_without_a_lease_this_key_made_is_never_signed() {
        let dir = tempfile::tempdir().unwrap();
        let key = key(dir.path());
        let path = orphan(dir.path(), &key, 2);
        let before = std::fs::read(&path).unwrap();
        // A lease copied from another trail, or made up.
        std::fs::write(lease_path(&path), "00".repeat(32)).unwrap();
        assert!(matches!(close(&path, &key), Err(CloseError::NoLease(_))));
        std::fs::remove_file(lease_path(&path)).unwrap();
        assert!(matches!(close(&path, &key), Err(CloseError::NoLease(_))));
        // Another key's lease.
        let other = TrailKey::load_or_create(&dir.path().join("other")).unwrap();
        let start = crate::audit::test_support::start();
        open_lease(&path, &session_hash(&start), &other).unwrap();
        assert!(matches!(close(&path, &key), Err(CloseError::NoLease(_))));
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }

    #[test]
    fn a_damaged_trail_is_left_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let key = key(dir.path());
        let path = orphan(dir.path(), &key, 3);
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        lines.remove(2);
        let edited = lines.join("\n") + "\n";
        std::fs::write(&path, &edited).unwrap();
        let err = close(&path, &key).unwrap_err();
        assert!(matches!(err, CloseError::Damaged(..)), "{err}");
        assert!(err.to_string().contains("chain is broken"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), edited);
        assert!(lease_path(&path).exists());
    }
}
