//! The hash chain, and reading a trail back as typed records.
//!
//! Every line's first field, `prev`, is the SHA-256 of the line before it,
//! so deleting or editing a line breaks the chain at the line after it. The
//! [`Reader`] streams a trail (one line in memory at a time), parses each
//! record into the types of [`super::schema`], and checks the chain as it
//! goes; readers show what is there and say whether it is intact.

use super::schema::{Anchor, Record, SessionStart, SupervisorLost, SCHEMA};
use std::io::BufRead;

/// The `prev` value of the first record.
pub const CHAIN_START: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The longest line a reader accepts: far above any record interpose
/// writes (paths are at most 4 KiB, argv at most 64 x 512 bytes).
const MAX_LINE: u64 = 1 << 20;

/// `bytes` in lowercase hex. Every record of a trail takes a hash in hex,
/// so this is a table, not a `format!` per byte (which was half of the
/// trail writer's time).
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

/// SHA-256 of one line of the trail (without its newline), in hex.
pub fn line_hash(line: &[u8]) -> String {
    use sha2::Digest;
    hex(&sha2::Sha256::digest(line))
}

/// Serializes `record` (a JSON object) as one line whose first field,
/// `prev`, is the hash of the line before it. The undo journal's lines are
/// chained the same way.
pub fn chained_line<T: serde::Serialize>(record: &T, prev: &str) -> serde_json::Result<String> {
    let mut line = Vec::with_capacity(512);
    line.extend_from_slice(b"{\"prev\":\"");
    line.extend_from_slice(prev.as_bytes());
    line.extend_from_slice(b"\",");
    let body = line.len();
    serde_json::to_writer(&mut line, record)?;
    // The record's own opening brace gives way to the `prev` field's.
    line.remove(body);
    Ok(String::from_utf8(line).expect("serde_json writes UTF-8"))
}

/// Why a trail is not intact.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainError {
    /// A line is not a record of this schema.
    #[error("line {line}: not a record of an interpose audit trail ({why})")]
    Malformed {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        why: String,
    },
    /// A line's `prev` does not match the line before it.
    #[error("line {line}: the chain is broken: the line before it was edited or deleted")]
    Broken {
        /// 1-based line number.
        line: usize,
    },
    /// The trail does not end with `session_end`.
    #[error(
        "the trail ends after line {lines} without a session_end record: it was truncated, or the run is still going"
    )]
    Truncated {
        /// Lines read.
        lines: usize,
    },
    /// No anchor after `session_end`: nothing shows that interpose, not
    /// somebody who could write the file, made the chain.
    #[error("the trail has no anchor after its session_end record: its chain may have been written by anyone")]
    Unanchored,
    /// The anchor was not made with the key, or for another chain.
    #[error("the anchor does not verify with key {key} ({path}): the trail was rewritten, or signed with another key")]
    BadAnchor {
        /// The key's id.
        key: String,
        /// Where the key was read from.
        path: String,
    },
    /// The key to check the anchor with cannot be read (the chain itself
    /// is intact: that is checked first).
    #[error("the chain is intact ({lines} records), but its anchor cannot be checked without the key: {why}; pass the key with --audit-key")]
    NoKey {
        /// Lines in the trail.
        lines: usize,
        /// Why the key could not be read.
        why: String,
    },
    /// The anchor names another key than the one given.
    #[error("the trail is anchored with key {found}, not with {key} ({path}); pass that key with --audit-key")]
    OtherKey {
        /// The anchor's key id.
        found: String,
        /// The given key's id.
        key: String,
        /// Where the given key was read from.
        path: String,
    },
}

/// Why a file cannot be read as a trail at all.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file cannot be opened or read.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// It does not start with a session record.
    #[error("not an interpose audit trail: {0}")]
    NotATrail(String),
    /// It was written with another schema version.
    #[error("an audit trail of schema {found}; this interpose reads schema {SCHEMA}")]
    Schema {
        /// The version the trail says.
        found: u32,
    },
}

/// A trail being read, record by record.
pub struct Reader<R> {
    input: R,
    buf: Vec<u8>,
    prev: String,
    line: usize,
    last_was_end: bool,
    /// The anchor after `session_end`, and the hash it signs.
    anchor: Option<(Anchor, String)>,
    /// The hash of the first line (the session its key is derived for).
    session: String,
    /// The first thing found wrong with the chain, if any.
    problem: Option<ChainError>,
    /// How the session ended without its supervisor, if it did.
    lost: Option<(SupervisorLost, u64)>,
    /// The session record (the first line).
    pub start: SessionStart,
}

impl Reader<std::io::BufReader<std::fs::File>> {
    /// Opens the trail at `path` and reads its session record.
    pub fn open(path: &std::path::Path) -> Result<Self, ReadError> {
        Reader::new(std::io::BufReader::with_capacity(256 * 1024, std::fs::File::open(path)?))
    }
}

#[derive(serde::Deserialize)]
struct Head {
    #[serde(rename = "type")]
    kind: String,
    schema: Option<u32>,
}

impl<R: BufRead> Reader<R> {
    /// Reads the session record from `input`.
    pub fn new(input: R) -> Result<Self, ReadError> {
        let mut r = Reader {
            input,
            buf: Vec::new(),
            prev: CHAIN_START.to_string(),
            line: 0,
            last_was_end: false,
            anchor: None,
            session: String::new(),
            problem: None,
            lost: None,
            start: empty_start(),
        };
        let not_a_trail = |why: &str| ReadError::NotATrail(why.to_string());
        if !r.next_line()? {
            return Err(not_a_trail("the file is empty"));
        }
        let head: Head = serde_json::from_slice(&r.buf)
            .map_err(|_| not_a_trail("its first line is not a JSON record with a type"))?;
        if head.kind != "session_start" {
            return Err(not_a_trail("its first record is not session_start"));
        }
        match head.schema {
            Some(SCHEMA) => {}
            Some(found) => return Err(ReadError::Schema { found }),
            None => return Err(not_a_trail("its session record has no schema version")),
        }
        match r.parse() {
            Some(Record::SessionStart(start)) => r.start = *start,
            _ => return Err(not_a_trail("its session record does not parse")),
        }
        Ok(r)
    }

    /// Reads the next line into `buf`; false at the end.
    fn next_line(&mut self) -> std::io::Result<bool> {
        use std::io::Read;
        self.buf.clear();
        let n = (&mut self.input).take(MAX_LINE).read_until(b'\n', &mut self.buf)?;
        if n == 0 {
            return Ok(false);
        }
        if self.buf.last() != Some(&b'\n') && (n as u64) < MAX_LINE {
            // The last line, cut off in the middle (its writer was killed
            // while writing it): the trail ends before it, truncated.
            self.buf.clear();
            return Ok(false);
        }
        self.line += 1;
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
        } else if n as u64 == MAX_LINE {
            // An overlong line: skip the rest of it.
            let mut rest = Vec::new();
            self.input.read_until(b'\n', &mut rest)?;
            self.flag(ChainError::Malformed { line: self.line, why: "longer than any record".into() });
        }
        Ok(true)
    }

    fn flag(&mut self, problem: ChainError) {
        if self.problem.is_none() {
            self.problem = Some(problem);
        }
    }

    /// Checks the chain at the current line and parses it.
    fn parse(&mut self) -> Option<Record> {
        #[derive(serde::Deserialize)]
        struct Prev {
            prev: String,
        }
        let line = self.line;
        match serde_json::from_slice::<Prev>(&self.buf) {
            Ok(p) if p.prev == self.prev => {}
            Ok(_) => self.flag(ChainError::Broken { line }),
            Err(_) => self.flag(ChainError::Malformed { line, why: "no `prev` field".into() }),
        }
        let signed = std::mem::replace(&mut self.prev, line_hash(&self.buf));
        if line == 1 {
            self.session = self.prev.clone();
        }
        if self.anchor.is_some() {
            self.flag(ChainError::Malformed { line, why: "a line after the anchor".into() });
        }
        match serde_json::from_slice::<Record>(&self.buf) {
            Ok(Record::Anchor(a)) => {
                if !self.last_was_end {
                    self.flag(ChainError::Malformed { line, why: "an anchor before session_end".into() });
                }
                self.anchor = Some((a.clone(), signed));
                Some(Record::Anchor(a))
            }
            Ok(record) => {
                self.last_was_end = matches!(record, Record::SessionEnd(_));
                if let Record::SessionEnd(end) = &record {
                    self.lost = end.supervisor_lost.clone().map(|l| (l, end.time_ns));
                }
                Some(record)
            }
            Err(e) => {
                self.flag(ChainError::Malformed { line, why: e.to_string() });
                self.last_was_end = false;
                None
            }
        }
    }

    /// Whether the trail read so far is intact; at the end, also whether it
    /// ends with `session_end`. Returns the number of lines.
    pub fn integrity(&self) -> Result<usize, ChainError> {
        match &self.problem {
            Some(p) => Err(p.clone()),
            None if !self.last_was_end => Err(ChainError::Truncated { lines: self.line }),
            None => Ok(self.line),
        }
    }

    /// [`Self::integrity`], and the anchor checked with `key`: the proof
    /// that interpose wrote this chain. Without a key only the chain is
    /// checked (anyone who could write the file could have made it).
    pub fn verified(&self, key: &super::TrailKey) -> Result<usize, ChainError> {
        let lines = self.integrity()?;
        let Some((anchor, signed)) = &self.anchor else { return Err(ChainError::Unanchored) };
        let path = key.path.display().to_string();
        if anchor.key_id != key.id {
            return Err(ChainError::OtherKey { found: anchor.key_id.clone(), key: key.id.clone(), path });
        }
        if !key.verifies(anchor, &self.session, signed) {
            return Err(ChainError::BadAnchor { key: key.id.clone(), path });
        }
        Ok(lines)
    }

    /// The anchor's key id, if the trail has an anchor.
    pub fn anchor_key(&self) -> Option<&str> {
        self.anchor.as_ref().map(|(a, _)| a.key_id.as_str())
    }

    /// Whether the session ended because its supervisor died (the trail
    /// closed afterwards by a restarted agent), and when it was closed.
    pub fn supervisor_lost(&self) -> Option<&(SupervisorLost, u64)> {
        self.lost.as_ref()
    }

    /// The hash of the last line read (what the next line's `prev` is).
    pub fn last_hash(&self) -> &str {
        &self.prev
    }

    /// The hash of the session record (what the session's key is derived
    /// for).
    pub fn session_hash(&self) -> &str {
        &self.session
    }

    /// Lines read so far.
    pub fn lines(&self) -> usize {
        self.line
    }
}

impl<R: BufRead> Iterator for Reader<R> {
    type Item = Result<Record, std::io::Error>;

    /// The next record after the session record; lines that do not parse
    /// are skipped (and make the chain not intact).
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.next_line() {
                Err(e) => return Some(Err(e)),
                Ok(false) => return None,
                Ok(true) => {}
            }
            if let Some(record) = self.parse() {
                return Some(Ok(record));
            }
        }
    }
}

fn empty_start() -> SessionStart {
    use super::schema::{ModeName, ModeRecord};
    SessionStart {
        schema: SCHEMA,
        version: String::new(),
        command: Vec::new(),
        surface: Vec::new(),
        surface_digest: String::new(),
        policy: None,
        env_dropped: Vec::new(),
        mode: ModeRecord {
            name: ModeName::Full,
            untrapped: Vec::new(),
            untrapped_read_only: Vec::new(),
            landlock_exact: None,
            residual: None,
            landlock_denials: None,
        },
        caches: Vec::new(),
        features: Default::default(),
        container: None,
        time_ns: 0,
    }
}

/// Checks the whole trail at `path`, streaming: the number of lines, or
/// what is wrong.
pub fn verify(path: &std::path::Path) -> Result<Result<usize, ChainError>, ReadError> {
    let mut reader = Reader::open(path)?;
    for record in reader.by_ref() {
        record?;
    }
    Ok(reader.integrity())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_lowercase_two_digits_a_byte() {
        let all: Vec<u8> = (0..=255).collect();
        let expected: String = all.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex(&all), expected);
        assert_eq!(hex(&[]), "");
    }

    #[test]
    fn a_chained_line_puts_prev_first_and_keeps_the_record() {
        let record = serde_json::json!({"type": "decision", "path": "/a \"b\"", "seq": 3});
        let line = chained_line(&record, CHAIN_START).unwrap();
        assert!(line.starts_with(&format!("{{\"prev\":\"{CHAIN_START}\",\"")), "{line}");
        let parsed: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(parsed["prev"], CHAIN_START);
        assert_eq!(parsed["path"], "/a \"b\"");
        assert_eq!(parsed["seq"], 3);
        assert_eq!(parsed.as_object().unwrap().len(), 4);
    }
}
