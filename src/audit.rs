//! The audit trail: one JSON line per decision, written off the hot path.
//!
//! Workers hand records to a bounded queue; one writer thread serializes and
//! writes them. If the queue is full, `allow` records are dropped and counted
//! (the count is itself recorded at the end); `deny` records wait for room, so
//! denials are never lost. The writer is woken once per batch (or every few
//! milliseconds), not once per record: a wake-up costs more than writing a
//! line. See `docs/audit.md` for the schema.

use base64::Engine;
use serde::{Serialize, Serializer};
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::sync_channel;
use std::sync::{Arc, Condvar, Mutex};

/// Version of the record schema in `docs/audit.md`.
pub const SCHEMA: u32 = 1;

/// Bytes that are written as a string when they are UTF-8 and as
/// `{"bytes": "<base64>"}` when not, so no path is ever lost or mangled.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Bytes(pub Vec<u8>);

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(&self.0) {
            Ok(text) => s.serialize_str(text),
            Err(_) => {
                use serde::ser::SerializeMap;
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("bytes", &base64::engine::general_purpose::STANDARD.encode(&self.0))?;
                m.end()
            }
        }
    }
}

/// An errno, written by its symbolic name (`"EACCES"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrnoName(pub nix::errno::Errno);

impl Serialize for ErrnoName {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{:?}", self.0))
    }
}

/// One decision on one path.
#[derive(Debug, Clone, Serialize)]
pub struct Decision {
    /// Sequence number, in the order decisions were made.
    pub seq: u64,
    /// Wall-clock time, nanoseconds since the Unix epoch.
    pub time_ns: u128,
    /// Process id of the caller.
    pub pid: u32,
    /// Thread id of the caller.
    pub tid: u32,
    /// The caller's thread name (`/proc/<tid>/comm`).
    pub comm: String,
    /// Syscall name.
    pub syscall: &'static str,
    /// Syscall number.
    pub nr: i32,
    /// The path as the program passed it.
    pub path: Bytes,
    /// For a relative path or a call on a descriptor: the directory
    /// descriptor it started from (-100, `AT_FDCWD`, for the cwd).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dirfd: Option<i32>,
    /// What that descriptor (or the cwd) pointed to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dirfd_path: Option<Bytes>,
    /// The canonical path the decision was made on (absent when resolution
    /// failed before there was one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved: Option<Bytes>,
    /// The access asked for.
    pub access: &'static str,
    /// `allow`, `deny`, or `error` (failed as the kernel would have failed
    /// it, before any decision: a missing file, a symlink loop).
    pub decision: &'static str,
    /// The errno returned to the program, if any (`EACCES` for a denial).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errno: Option<ErrnoName>,
    /// What decided.
    pub rule: String,
    /// Time the supervisor spent on the call, in nanoseconds.
    pub handling_ns: u64,
    /// For denials: where the call came from.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub context: Option<DenialContext>,
}

/// Where a denied call came from, gathered while the caller still waited.
#[derive(Debug, Clone, Serialize)]
pub struct DenialContext {
    /// The caller's working directory.
    pub cwd: Bytes,
    /// The caller, its parent, and so on up to the sandboxed command:
    /// `[pid, name]` pairs.
    pub ancestors: Vec<(u32, String)>,
    /// The instruction that made the call, as `file+0xoffset` through
    /// `/proc/<pid>/maps` (or the raw address when no file maps it).
    pub code: String,
}

/// An allowed exec.
#[derive(Debug, Clone, Serialize)]
pub struct Exec {
    /// Sequence number, shared with decisions.
    pub seq: u64,
    /// Wall-clock time, nanoseconds since the Unix epoch.
    pub time_ns: u128,
    /// Process id (it keeps it across the exec).
    pub pid: u32,
    /// Its parent, for drawing the process tree.
    pub ppid: u32,
    /// The program as resolved and checked.
    pub program: Bytes,
    /// The argument vector (at most 64 arguments of at most 512 bytes).
    pub argv: Vec<Bytes>,
    /// Whether arguments or their bytes were left out.
    pub argv_truncated: bool,
}

/// A record in the trail.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    /// The run started.
    SessionStart {
        /// Schema version.
        schema: u32,
        /// interpose version.
        version: &'static str,
        /// The sandboxed command line.
        command: Vec<Bytes>,
        /// The surface: `[path, mode, origin]`.
        surface: Vec<serde_json::Value>,
        /// SHA-256 of the surface entries (path, mode) in effect, so runs
        /// under the same surface can be recognised.
        surface_digest: String,
        /// The policy file and profiles (names and SHA-256 of their text),
        /// the workspace, entries skipped on this host and why, and the HOME
        /// mode; absent without `--policy`.
        #[serde(skip_serializing_if = "Option::is_none", default)]
        policy: Option<serde_json::Value>,
        /// Environment variables removed before the command started, each
        /// with the rule that removed it (names only, never values).
        #[serde(default)]
        env_dropped: Vec<String>,
        /// `full` or `fast`, the syscalls left untrapped, and for fast mode
        /// the residual risk and whether Landlock's own denials were seen.
        #[serde(default)]
        mode: serde_json::Value,
        /// The package caches private to the session and how each was kept
        /// (`overlay`, `moved: $VAR=DIR`, `read-only (why)`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        caches: Vec<serde_json::Value>,
        /// Kernel features in use.
        features: serde_json::Value,
        /// Wall-clock start, nanoseconds since the Unix epoch.
        time_ns: u128,
    },
    /// A decision.
    Decision(Decision),
    /// An allowed exec.
    Exec(Exec),
    /// The run ended.
    SessionEnd {
        /// How the command ended: its exit code, or 128 + signal.
        exit_status: i32,
        /// Decisions that allowed.
        allowed: u64,
        /// Decisions that denied.
        denied: u64,
        /// `allow` records dropped because the writer fell behind.
        dropped_allow_records: u64,
        /// Wall-clock end, nanoseconds since the Unix epoch.
        time_ns: u128,
    },
}

enum Msg {
    Record(Box<Record>),
    Flush(std::sync::mpsc::SyncSender<()>),
}

/// Records waiting for the writer.
const CAPACITY: usize = 16 * 1024;
/// The writer is woken when this many are waiting ...
const BATCH: usize = 256;
/// ... or after this long, whichever comes first.
const LINGER: std::time::Duration = std::time::Duration::from_millis(5);

struct Queue {
    items: Mutex<Vec<Msg>>,
    /// Signalled when a batch is ready or a flush is asked for.
    ready: Condvar,
    /// Signalled when the writer has taken a batch (room again).
    room: Condvar,
}

/// The sending side, shared by the workers.
#[derive(Clone)]
pub struct Sink {
    queue: Arc<Queue>,
    dropped: Arc<AtomicU64>,
    seq: Arc<AtomicU64>,
}

/// Wall-clock nanoseconds since the Unix epoch.
pub fn now_ns() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0)
}

impl Sink {
    /// Starts the writer thread on `out`.
    pub fn start(out: Box<dyn Write + Send>) -> Sink {
        let queue = Arc::new(Queue {
            items: Mutex::new(Vec::with_capacity(BATCH)),
            ready: Condvar::new(),
            room: Condvar::new(),
        });
        let q = Arc::clone(&queue);
        std::thread::Builder::new()
            .name("interpose-audit".into())
            .spawn(move || writer(&q, out))
            .expect("spawning the audit writer");
        Sink { queue, dropped: Arc::new(AtomicU64::new(0)), seq: Arc::new(AtomicU64::new(0)) }
    }

    /// The next sequence number.
    pub fn next_seq(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Queues a record. Denials and session records wait for room; allows
    /// are dropped (and counted) when the queue is full.
    pub fn send(&self, record: Record) {
        let droppable =
            matches!(&record, Record::Decision(d) if d.decision != "deny") || matches!(record, Record::Exec(_));
        let mut items = self.queue.items.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if items.len() >= CAPACITY {
            if droppable {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                return;
            }
            self.queue.ready.notify_one();
            while items.len() >= CAPACITY {
                items = self.queue.room.wait(items).unwrap_or_else(std::sync::PoisonError::into_inner);
            }
        }
        items.push(Msg::Record(Box::new(record)));
        if items.len() >= BATCH {
            self.queue.ready.notify_one();
        }
    }

    /// Number of `allow` records dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Waits until everything queued so far is written and flushed.
    pub fn flush(&self) {
        let (ack, done) = sync_channel(1);
        {
            let mut items = self.queue.items.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            items.push(Msg::Flush(ack));
            self.queue.ready.notify_one();
        }
        let _ = done.recv();
    }
}

/// The `prev` value of the first record.
pub const CHAIN_START: &str = "0000000000000000000000000000000000000000000000000000000000000000";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 of one line of the trail (without its newline), in hex.
pub fn line_hash(line: &[u8]) -> String {
    use sha2::Digest;
    hex(&sha2::Sha256::digest(line))
}

/// Serializes `record` as one line whose first field, `prev`, is the hash of
/// the line before it: deleting or editing a line breaks the chain at the
/// line after it.
fn chained_line(record: &Record, prev: &str) -> serde_json::Result<String> {
    let body = serde_json::to_string(record)?;
    Ok(format!("{{\"prev\":\"{prev}\",{}", &body[1..]))
}

fn writer(queue: &Queue, out: Box<dyn Write + Send>) {
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, out);
    let mut failed = false;
    let mut prev = CHAIN_START.to_string();
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        {
            let mut items = queue.items.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if items.len() < BATCH && !items.iter().any(|m| matches!(m, Msg::Flush(_))) {
                items = queue.ready.wait_timeout(items, LINGER).unwrap_or_else(std::sync::PoisonError::into_inner).0;
            }
            std::mem::swap(&mut *items, &mut batch);
            queue.room.notify_all();
        }
        for msg in batch.drain(..) {
            match msg {
                Msg::Record(r) if !failed => {
                    let ok = match chained_line(&r, &prev) {
                        Ok(line) => {
                            prev = line_hash(line.as_bytes());
                            out.write_all(line.as_bytes()).and_then(|()| out.write_all(b"\n")).is_ok()
                        }
                        Err(_) => false,
                    };
                    if !ok {
                        failed = true;
                        eprintln!("interpose: writing the audit trail failed; further records are lost");
                    }
                }
                Msg::Record(_) => {}
                Msg::Flush(ack) => {
                    let _ = out.flush();
                    let _ = ack.send(());
                }
            }
        }
    }
}

/// Why a trail failed verification.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainError {
    /// A line is not a JSON object with a `prev` field.
    #[error("line {line}: not a record of an interpose audit trail")]
    Malformed {
        /// 1-based line number.
        line: usize,
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
}

/// Checks the hash chain of a whole trail; returns the number of records.
pub fn verify(text: &str) -> Result<usize, ChainError> {
    let mut prev = CHAIN_START.to_string();
    let mut last_type = String::new();
    let mut count = 0;
    for (i, line) in text.lines().enumerate() {
        let v: serde_json::Value = serde_json::from_str(line).map_err(|_| ChainError::Malformed { line: i + 1 })?;
        let claimed = v["prev"].as_str().ok_or(ChainError::Malformed { line: i + 1 })?;
        if claimed != prev {
            return Err(ChainError::Broken { line: i + 1 });
        }
        prev = line_hash(line.as_bytes());
        last_type = v["type"].as_str().unwrap_or_default().to_string();
        count += 1;
    }
    if last_type != "session_end" {
        return Err(ChainError::Truncated { lines: count });
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trail(n: usize) -> String {
        let mut prev = CHAIN_START.to_string();
        let mut out = String::new();
        for i in 0..n {
            let r = if i + 1 == n {
                Record::SessionEnd { exit_status: 0, allowed: 1, denied: 0, dropped_allow_records: 0, time_ns: 7 }
            } else {
                Record::SessionStart {
                    schema: SCHEMA,
                    version: "t",
                    command: vec![Bytes(format!("cmd{i}").into_bytes())],
                    surface: vec![],
                    surface_digest: String::new(),
                    policy: None,
                    env_dropped: vec![],
                    mode: serde_json::Value::Null,
                    caches: vec![],
                    features: serde_json::Value::Null,
                    time_ns: i as u128,
                }
            };
            let line = chained_line(&r, &prev).unwrap();
            prev = line_hash(line.as_bytes());
            out.push_str(&line);
            out.push('\n');
        }
        out
    }

    #[test]
    fn the_chain_catches_deleted_edited_and_truncated_trails() {
        let good = trail(5);
        assert_eq!(verify(&good), Ok(5));
        let lines: Vec<&str> = good.lines().collect();
        let deleted = [&lines[..2], &lines[3..]].concat().join("\n");
        assert_eq!(verify(&deleted), Err(ChainError::Broken { line: 3 }));
        let edited = good.replacen("cmd1", "cmdX", 1);
        assert_eq!(verify(&edited), Err(ChainError::Broken { line: 3 }));
        let truncated = lines[..4].join("\n");
        assert_eq!(verify(&truncated), Err(ChainError::Truncated { lines: 4 }));
        assert_eq!(verify("not json"), Err(ChainError::Malformed { line: 1 }));
    }

    #[test]
    fn non_utf8_paths_are_base64() {
        let v = serde_json::to_value(Bytes(b"/tmp/\xff".to_vec())).unwrap();
        assert_eq!(v, serde_json::json!({"bytes": "L3RtcC//"}));
        let v = serde_json::to_value(Bytes(b"/tmp/ok".to_vec())).unwrap();
        assert_eq!(v, serde_json::json!("/tmp/ok"));
    }
}
