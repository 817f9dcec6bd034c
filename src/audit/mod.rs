//! The audit trail: one JSON line per decision, written off the hot path.
//!
//! Workers hand records to a bounded queue; one writer thread serializes and
//! writes them. If the queue is full, `allow` and `error` records are
//! dropped and counted (the count is itself recorded at the end); refusals,
//! would-be refusals, execs and the session records wait for room, so they
//! are never lost. The writer is woken once per batch (or every few
//! milliseconds), not once per record: a wake-up costs more than writing a
//! line. The record types are in [`schema`] (described in `docs/audit.md`);
//! [`chain`] reads a trail back and checks its hash chain.

pub mod chain;
pub mod schema;

pub use chain::{line_hash, ChainError, Reader};
pub use schema::*;

use chain::{chained_line, CHAIN_START};
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::sync_channel;
use std::sync::{Arc, Condvar, Mutex};

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
pub fn now_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
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

    /// Queues a record. Allows and errors are dropped (and counted) when
    /// the queue is full; everything else waits for room.
    pub fn send(&self, record: Record) {
        // Refusals (and would-be refusals, which --suggest is made from),
        // execs (the process tree) and the session records wait for room;
        // only allows and errors may be dropped, and are counted.
        let droppable = matches!(&record, Record::Decision(d) if matches!(d.decision, Verdict::Allow | Verdict::Error));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn trail(n: usize) -> String {
        let mut prev = CHAIN_START.to_string();
        let mut out = String::new();
        for i in 0..n {
            let r = if i + 1 == n {
                Record::SessionEnd(SessionEnd {
                    exit_status: 0,
                    allowed: 1,
                    denied: 0,
                    would_deny: 0,
                    dropped_allow_records: 0,
                    time_ns: 7,
                })
            } else if i == 0 {
                let mut start = test_start();
                start.command = vec![Bytes(b"cmd0".to_vec())];
                Record::SessionStart(Box::new(start))
            } else {
                Record::Exec(Box::new(Exec {
                    seq: i as u64,
                    time_ns: i as u64,
                    pid: 1,
                    ppid: 0,
                    program: Bytes(format!("/bin/cmd{i}").into_bytes()),
                    argv: vec![],
                    argv_truncated: false,
                }))
            };
            let line = chained_line(&r, &prev).unwrap();
            prev = line_hash(line.as_bytes());
            out.push_str(&line);
            out.push('\n');
        }
        out
    }

    fn test_start() -> SessionStart {
        SessionStart {
            schema: SCHEMA,
            version: "t".into(),
            command: vec![],
            surface: vec![],
            surface_digest: String::new(),
            policy: None,
            env_dropped: vec![],
            mode: ModeRecord {
                name: ModeName::Full,
                untrapped: vec![],
                landlock_exact: None,
                residual: None,
                landlock_denials: None,
            },
            caches: vec![],
            features: Default::default(),
            time_ns: 0,
        }
    }

    fn verify(text: &str) -> Result<usize, ChainError> {
        let mut r = Reader::new(text.as_bytes()).map_err(|e| ChainError::Malformed { line: 1, why: e.to_string() })?;
        for record in r.by_ref() {
            record.unwrap();
        }
        r.integrity()
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
        assert!(matches!(Reader::new(&b"not json"[..]), Err(chain::ReadError::NotATrail(_))));
        let other = good.replacen(&format!("\"schema\":{SCHEMA}"), "\"schema\":1", 1);
        assert!(matches!(Reader::new(other.as_bytes()), Err(chain::ReadError::Schema { found: 1 })));
    }

    #[test]
    fn records_read_back_as_written() {
        let text = trail(4);
        let mut r = Reader::new(text.as_bytes()).unwrap();
        assert_eq!(r.start.command, vec![Bytes(b"cmd0".to_vec())]);
        let records: Vec<Record> = r.by_ref().map(Result::unwrap).collect();
        assert!(matches!(&records[0], Record::Exec(e) if e.program.0 == b"/bin/cmd1"));
        assert!(matches!(records.last(), Some(Record::SessionEnd(_))));
    }

    #[test]
    fn non_utf8_paths_are_base64_and_back() {
        let v = serde_json::to_value(Bytes(b"/tmp/\xff".to_vec())).unwrap();
        assert_eq!(v, serde_json::json!({"bytes": "L3RtcC//"}));
        assert_eq!(serde_json::from_value::<Bytes>(v).unwrap(), Bytes(b"/tmp/\xff".to_vec()));
        let v = serde_json::to_value(Bytes(b"/tmp/ok".to_vec())).unwrap();
        assert_eq!(v, serde_json::json!("/tmp/ok"));
        let e: ErrnoName = serde_json::from_value(serde_json::json!("EACCES")).unwrap();
        assert_eq!(e, ErrnoName(nix::errno::Errno::EACCES));
    }
}
