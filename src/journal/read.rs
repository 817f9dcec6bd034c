//! Reading a journal back: every line parsed into [`Line`], the hash chain
//! checked as it goes, and the anchor checked with the key.

use super::schema::{self, After, Line, Seal, Start};
use crate::audit::chain::{line_hash, CHAIN_START};
use crate::audit::{Anchor, TrailKey};
use std::path::{Path, PathBuf};

/// Why a directory cannot be read as a journal at all.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The journal file cannot be read.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// It does not start as a journal does.
    #[error("{}: not an interpose undo journal: {why}", .path.display())]
    NotAJournal {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// Another version wrote it.
    #[error("{}: a journal of schema {found}; this interpose reads schema {}", .path.display(), schema::SCHEMA)]
    Schema {
        /// The file.
        path: PathBuf,
        /// Its version.
        found: u32,
    },
}

/// Why a journal cannot be trusted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Tampered {
    /// A line does not follow from the one before it.
    #[error("line {0}: the hash chain is broken: a line before it was edited, removed or moved")]
    Broken(usize),
    /// A line is not a journal line.
    #[error("line {line}: not a journal line ({why})")]
    Malformed {
        /// 1-based.
        line: usize,
        /// What is wrong.
        why: String,
    },
    /// No seal: the session did not end it.
    #[error(
        "the journal has no seal after line {0}: the session's interpose was killed, or the disk filled before it \
         could end it; its lines are chained, but nothing proves them complete or unedited, and changes made \
         after the session cannot be told"
    )]
    Unsealed(usize),
    /// No anchor after the seal.
    #[error("the journal's seal has no anchor: anyone who could write its directory could have made its chain")]
    Unanchored,
    /// The anchor does not verify.
    #[error(
        "the journal's anchor does not verify with key {key} ({path}): it was rewritten, or signed with another key"
    )]
    BadAnchor {
        /// The key's id.
        key: String,
        /// Its file.
        path: String,
    },
    /// The anchor names another key.
    #[error("the journal is anchored with key {found}, not {key} ({path}); pass that key with --audit-key")]
    OtherKey {
        /// The anchor's key id.
        found: String,
        /// The given key's id.
        key: String,
        /// Its file.
        path: String,
    },
    /// No key to check the anchor with.
    #[error("the journal's anchor cannot be checked without the key it was made with: pass it with --audit-key")]
    NoKey,
    /// A name lies outside the journalled trees.
    #[error("line {line}: {path} is outside the journal's trees")]
    Outside {
        /// 1-based.
        line: usize,
        /// The name.
        path: String,
    },
}

/// A journal as read.
#[derive(Debug)]
pub struct Journal {
    /// Its directory.
    pub dir: PathBuf,
    /// The first line.
    pub start: Start,
    /// The change lines, in order (no `after`, seal or anchor).
    pub lines: Vec<Line>,
    /// The names as the session left them.
    pub after: Vec<After>,
    /// The seal, if it was sealed.
    pub seal: Option<Seal>,
    /// Why the session's journal failed, if it did.
    pub failure: Option<String>,
    anchor: Option<Anchor>,
    /// The hash of the first line, and of the line the anchor signs.
    session: String,
    signed: String,
    /// Lines read.
    pub count: usize,
    /// The first thing found wrong with the chain.
    problem: Option<Tampered>,
}

/// Reads the journal in `dir`.
pub fn read(dir: &Path) -> Result<Journal, ReadError> {
    let path = dir.join(schema::FILE);
    let text = std::fs::read(&path).map_err(|source| ReadError::Io { path: path.clone(), source })?;
    let not = |why: &str| ReadError::NotAJournal { path: path.clone(), why: why.into() };
    let mut prev = CHAIN_START.to_string();
    let mut problem: Option<Tampered> = None;
    let flag = |p: Tampered, problem: &mut Option<Tampered>| {
        problem.get_or_insert(p);
    };
    let mut start = None;
    let mut journal = Journal {
        dir: dir.to_path_buf(),
        start: Start {
            schema: 0,
            version: String::new(),
            command: vec![],
            roots: vec![],
            budget: 0,
            trail: None,
            time_ns: 0,
        },
        lines: Vec::new(),
        after: Vec::new(),
        seal: None,
        failure: None,
        anchor: None,
        session: String::new(),
        signed: String::new(),
        count: 0,
        problem: None,
    };
    let whole = text.ends_with(b"\n");
    let mut raw: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
    if whole || raw.last().is_some_and(|l| l.is_empty()) {
        raw.pop();
    }
    for (i, line) in raw.iter().enumerate() {
        let n = i + 1;
        journal.count = n;
        #[derive(serde::Deserialize)]
        struct Prev {
            prev: String,
        }
        match serde_json::from_slice::<Prev>(line) {
            Ok(p) if p.prev == prev => {}
            Ok(_) => flag(Tampered::Broken(n), &mut problem),
            Err(_) if n == 1 => return Err(not("its first line is not a JSON line with a `prev`")),
            Err(_) => flag(Tampered::Malformed { line: n, why: "no `prev` field".into() }, &mut problem),
        }
        let signed = std::mem::replace(&mut prev, line_hash(line));
        if n == 1 {
            journal.session = prev.clone();
        }
        if journal.anchor.is_some() {
            flag(Tampered::Malformed { line: n, why: "a line after the anchor".into() }, &mut problem);
        }
        if n == 1 {
            #[derive(serde::Deserialize)]
            struct Head {
                #[serde(rename = "type")]
                kind: String,
                schema: Option<u32>,
            }
            let head: Head = serde_json::from_slice(line).map_err(|_| not("its first line has no type"))?;
            if head.kind != "journal_start" {
                return Err(not("its first line is not journal_start"));
            }
            if let Some(found) = head.schema.filter(|&s| s != schema::SCHEMA) {
                return Err(ReadError::Schema { path: path.clone(), found });
            }
        }
        let parsed = match serde_json::from_slice::<Line>(line) {
            Ok(l) => l,
            Err(e) if n == 1 => return Err(not(&e.to_string())),
            Err(e) => {
                flag(Tampered::Malformed { line: n, why: e.to_string() }, &mut problem);
                continue;
            }
        };
        match parsed {
            Line::JournalStart(s) if n == 1 => start = Some(*s),
            Line::JournalStart(_) => flag(Tampered::Malformed { line: n, why: "a second start".into() }, &mut problem),
            Line::Anchor(a) => {
                if journal.seal.is_none() {
                    flag(Tampered::Malformed { line: n, why: "an anchor before the seal".into() }, &mut problem);
                }
                journal.anchor = Some(a);
                journal.signed = signed;
            }
            Line::Seal(s) => {
                if journal.seal.is_some() {
                    flag(Tampered::Malformed { line: n, why: "a second seal".into() }, &mut problem);
                }
                journal.seal = Some(s);
            }
            _ if journal.seal.is_some() => {
                flag(Tampered::Malformed { line: n, why: "a line after the seal".into() }, &mut problem);
            }
            Line::After(a) => journal.after.push(a),
            Line::Failure(f) => {
                journal.failure.get_or_insert(f.why);
            }
            other => {
                if !journal.after.is_empty() {
                    flag(Tampered::Malformed { line: n, why: "a change after the session's end".into() }, &mut problem);
                }
                journal.lines.push(other);
            }
        }
    }
    if !whole && !raw.is_empty() {
        flag(Tampered::Malformed { line: raw.len(), why: "the last line is cut short".into() }, &mut problem);
    }
    journal.start = start.ok_or_else(|| not("no journal_start"))?;
    journal.problem = problem;
    Ok(journal)
}

impl Journal {
    /// Whether the journal is what the session wrote: the chain intact,
    /// sealed, and (with `key`) anchored with it; every name within its
    /// trees.
    pub fn verify(&self, key: Option<&TrailKey>) -> Result<(), Tampered> {
        if let Some(p) = &self.problem {
            return Err(p.clone());
        }
        self.inside_roots()?;
        if self.seal.is_none() {
            return Err(Tampered::Unsealed(self.count));
        }
        let Some(anchor) = &self.anchor else { return Err(Tampered::Unanchored) };
        let Some(key) = key else { return Err(Tampered::NoKey) };
        let path = key.path.display().to_string();
        if anchor.key_id != key.id {
            return Err(Tampered::OtherKey { found: anchor.key_id.clone(), key: key.id.clone(), path });
        }
        if !key.verifies(anchor, &self.session, &self.signed) {
            return Err(Tampered::BadAnchor { key: key.id.clone(), path });
        }
        Ok(())
    }

    /// [`Journal::verify`] short of the seal: the lines there are chained
    /// and within the trees (for `undo --force` of a journal the session
    /// could not end).
    pub fn chain_intact(&self) -> Result<(), Tampered> {
        if let Some(p) = &self.problem {
            return Err(p.clone());
        }
        self.inside_roots()
    }

    fn inside_roots(&self) -> Result<(), Tampered> {
        let inside = |p: &[u8]| {
            self.start
                .roots
                .iter()
                .any(|r| p.starts_with(&r.0) && (p.len() == r.0.len() || p[r.0.len()] == b'/' || r.0.ends_with(b"/")))
        };
        for (i, line) in self.lines.iter().enumerate() {
            let paths: Vec<&[u8]> = match line {
                Line::Keep(k) => vec![&k.path.0],
                Line::Create(c) => vec![&c.path.0],
                Line::Remove(r) => vec![&r.path.0],
                Line::Rename(r) => r.from.iter().map(|f| f.0.as_slice()).chain([r.to.0.as_slice()]).collect(),
                _ => vec![],
            };
            if let Some(p) = paths.into_iter().find(|p| !inside(p)) {
                return Err(Tampered::Outside { line: i + 2, path: String::from_utf8_lossy(p).into() });
            }
        }
        Ok(())
    }
}
