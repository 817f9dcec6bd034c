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
pub mod close;
pub mod key;
pub mod schema;

pub use chain::{line_hash, ChainError, Reader};
pub use key::TrailKey;
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

/// Where the trail goes.
pub enum Output {
    /// A regular file (or a device or FIFO): a write that fails part-way
    /// is cut back to the last whole record where the file allows it.
    File(std::fs::File),
    /// A stream (stderr, a unix socket).
    Stream(Box<dyn Write + Send>),
}

/// What the writer does when the trail cannot be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum OnFailure {
    /// Kill the command: nothing runs unrecorded (the default).
    #[default]
    Stop,
    /// Let the command run on unrecorded; interpose still exits 125.
    Continue,
}

/// Why the trail could not be written, once it could not.
#[derive(Default)]
struct Failure {
    why: Mutex<Option<String>>,
    /// The process to kill on failure (`OnFailure::Stop`), once known.
    stop: std::sync::atomic::AtomicI32,
    /// While the writer is writing: when it started ([`monotonic_ns`]);
    /// 0 while it waits for records. A write that does not return is a
    /// reader that stopped reading.
    writing_since: AtomicU64,
    /// Set once the session gave the trail up as stalled: nothing waits
    /// for the writer any more, and what is sent is counted as lost.
    abandoned: std::sync::atomic::AtomicBool,
    /// Records queued or sent after the trail was given up.
    lost: AtomicU64,
}

/// How long a single write to the trail may block before the trail counts
/// as stalled (its reader stopped reading).
pub const STALL: std::time::Duration = std::time::Duration::from_secs(1);

/// Nanoseconds on the monotonic clock since the first call, plus one (0
/// means "not writing").
fn monotonic_ns() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START.get_or_init(std::time::Instant::now).elapsed().as_nanos() as u64 + 1
}

/// The sending side, shared by the workers.
#[derive(Clone)]
pub struct Sink {
    queue: Arc<Queue>,
    dropped: Arc<AtomicU64>,
    seq: Arc<AtomicU64>,
    failure: Arc<Failure>,
}

/// How a trail file is opened: readable too (a record cut short by a
/// failed write is found and removed from the end), mode 0600, never
/// through a symlink. A new trail adds `create_new`: a trail is never
/// truncated or appended to.
pub fn trail_file_options() -> std::fs::OpenOptions {
    use std::os::unix::fs::OpenOptionsExt;
    let mut open = std::fs::OpenOptions::new();
    open.read(true).write(true).mode(0o600).custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    open
}

/// Wall-clock nanoseconds since the Unix epoch.
pub fn now_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

impl Sink {
    /// Starts the writer thread on `out`. With a `key`, the trail ends
    /// with an anchor: a MAC of its last hash that only the key's holder
    /// can make.
    pub fn start(out: Output, key: Option<TrailKey>) -> Sink {
        let queue = Arc::new(Queue {
            items: Mutex::new(Vec::with_capacity(BATCH)),
            ready: Condvar::new(),
            room: Condvar::new(),
        });
        let failure = Arc::new(Failure::default());
        let (q, f) = (Arc::clone(&queue), Arc::clone(&failure));
        std::thread::Builder::new()
            .name("interpose-audit".into())
            .spawn(move || writer(&q, out, key.as_ref(), &f))
            .expect("spawning the audit writer");
        Sink { queue, dropped: Arc::new(AtomicU64::new(0)), seq: Arc::new(AtomicU64::new(0)), failure }
    }

    /// Kill `pid` (with SIGKILL) as soon as the trail cannot be written;
    /// if it already could not, at once.
    pub fn stop_on_failure(&self, pid: libc::pid_t) {
        self.failure.stop.store(pid, Ordering::SeqCst);
        if self.failure().is_some() {
            let _ = crate::sys::process::kill(pid, libc::SIGKILL);
        }
    }

    /// Why the trail could not be written, if it could not.
    pub fn failure(&self) -> Option<String> {
        self.failure.why.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// The next sequence number.
    pub fn next_seq(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Queues a record. Allows and errors are dropped (and counted) when
    /// the queue is full; everything else waits for room.
    pub fn send(&self, record: Record) {
        self.send_waiting(record, false);
    }

    /// As [`Sink::send`], at the session's end: a record that waits for
    /// room gives the trail up ([`Sink::abandon`]) once the writer is
    /// stalled, where a worker's waits on (the command waits with it, and
    /// nothing runs unrecorded).
    pub fn send_last(&self, record: Record) {
        self.send_waiting(record, true);
    }

    fn send_waiting(&self, record: Record, give_up_when_stalled: bool) {
        // Refusals (and would-be refusals, which --suggest is made from),
        // execs (the process tree) and the session records wait for room;
        // only allows and errors may be dropped, and are counted.
        let droppable = matches!(&record, Record::Decision(d) if matches!(d.decision, Verdict::Allow | Verdict::Error));
        if self.abandoned() {
            self.failure.lost.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let mut items = self.queue.items.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if items.len() >= CAPACITY {
            if droppable {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                return;
            }
            self.queue.ready.notify_one();
            while items.len() >= CAPACITY {
                if give_up_when_stalled && self.stalled().is_some() {
                    drop(items);
                    self.abandon();
                    self.failure.lost.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                if self.abandoned() {
                    self.failure.lost.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                let wait = self.queue.room.wait_timeout(items, std::time::Duration::from_millis(100));
                items = wait.unwrap_or_else(std::sync::PoisonError::into_inner).0;
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

    /// Waits until everything queued so far is written and flushed, or
    /// until the writer has been stuck in one write for [`STALL`]: then the
    /// trail is given up ([`Sink::abandon`]).
    pub fn flush(&self) {
        if self.abandoned() {
            return;
        }
        let (ack, done) = sync_channel(1);
        {
            let mut items = self.queue.items.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            items.push(Msg::Flush(ack));
            self.queue.ready.notify_one();
        }
        loop {
            match done.recv_timeout(std::time::Duration::from_millis(100)) {
                Ok(()) | Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) if self.stalled().is_some() => {
                    return self.abandon();
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            }
        }
    }

    /// How long the writer has been stuck in one write, once that is
    /// [`STALL`] or more: the trail's reader (a pipe, a socket, stderr)
    /// stopped reading.
    pub fn stalled(&self) -> Option<std::time::Duration> {
        let since = self.failure.writing_since.load(Ordering::SeqCst);
        let stuck = std::time::Duration::from_nanos(monotonic_ns().saturating_sub(since));
        (since != 0 && stuck >= STALL).then_some(stuck)
    }

    /// Gives the trail up: nothing waits for the writer any more (a
    /// worker waiting for room goes on, a flush returns), what was queued
    /// and what is sent from now on is counted as lost, and the failure is
    /// said in words. The writer may stay blocked in its write.
    pub fn abandon(&self) {
        if self.failure.abandoned.swap(true, Ordering::SeqCst) {
            return;
        }
        let queued = {
            let items = self.queue.items.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            items.iter().filter(|m| matches!(m, Msg::Record(_))).count() as u64
        };
        self.failure.lost.fetch_add(queued, Ordering::Relaxed);
        self.queue.room.notify_all();
        let stuck = self.stalled().unwrap_or(STALL).as_secs_f64();
        let mut why = self.failure.why.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        why.get_or_insert_with(|| {
            format!("the audit trail's reader stopped reading (no write went through for {stuck:.1} s): the trail ends early, without its session end and anchor")
        });
    }

    /// Whether the trail was given up ([`Sink::abandon`]).
    pub fn abandoned(&self) -> bool {
        self.failure.abandoned.load(Ordering::SeqCst)
    }

    /// Records that never reached the trail after it was given up (queued
    /// then, or sent since), and allows dropped for want of room.
    pub fn lost(&self) -> u64 {
        self.failure.lost.load(Ordering::Relaxed) + self.dropped()
    }
}

/// The length of `file` up to and including its last newline: a record cut
/// short by a failed write is removed from the end.
pub(crate) fn last_whole_record(file: &std::fs::File) -> std::io::Result<u64> {
    use std::os::unix::fs::FileExt;
    let len = file.metadata()?.len();
    let mut end = len;
    let mut buf = vec![0u8; 64 * 1024];
    while end > 0 {
        let start = end.saturating_sub(buf.len() as u64);
        let chunk = &mut buf[..(end - start) as usize];
        file.read_exact_at(chunk, start)?;
        if let Some(i) = chunk.iter().rposition(|&b| b == b'\n') {
            return Ok(start + i as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

fn writer(queue: &Queue, out: Output, key: Option<&TrailKey>, failure: &Failure) {
    let (file, out): (Option<std::fs::File>, Box<dyn Write + Send>) = match out {
        Output::File(f) => (f.try_clone().ok(), Box::new(f)),
        Output::Stream(s) => (None, s),
    };
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, out);
    let mut failed = false;
    let mut prev = CHAIN_START.to_string();
    // The hash of the session_start line: the session its key is derived for.
    let mut session: Option<String> = None;
    let mut batch = Vec::with_capacity(BATCH);
    let fail = |e: std::io::Error, out: &mut std::io::BufWriter<Box<dyn Write + Send>>| {
        let why = format!("writing the audit trail failed: {e}");
        // stderr may be the trail itself, gone with its reader: a warning
        // that cannot be written is dropped, never a panic.
        let _ = writeln!(std::io::stderr().lock(), "interpose: {why}");
        *failure.why.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(why);
        let pid = failure.stop.load(Ordering::SeqCst);
        if pid > 0 {
            let _ = crate::sys::process::kill(pid, libc::SIGKILL);
        }
        // What the buffer still holds is lost; a regular file is cut back
        // to its last whole record.
        // into_parts: dropped without the flush a BufWriter's drop would
        // try on the output that just failed.
        let _ = std::mem::replace(out, std::io::BufWriter::new(Box::new(std::io::sink()))).into_parts();
        if let Some(f) = file.as_ref().filter(|f| f.metadata().is_ok_and(|m| m.is_file())) {
            if let Ok(len) = last_whole_record(f) {
                let _ = f.set_len(len);
            }
        }
    };
    loop {
        {
            let mut items = queue.items.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if items.len() < BATCH && !items.iter().any(|m| matches!(m, Msg::Flush(_))) {
                items = queue.ready.wait_timeout(items, LINGER).unwrap_or_else(std::sync::PoisonError::into_inner).0;
            }
            std::mem::swap(&mut *items, &mut batch);
            queue.room.notify_all();
        }
        failure.writing_since.store(monotonic_ns(), Ordering::SeqCst);
        for msg in batch.drain(..) {
            match msg {
                Msg::Record(r) if !failed => {
                    let end = matches!(*r, Record::SessionEnd(_));
                    let mut write = |r: &Record, prev: &mut String| -> std::io::Result<()> {
                        let line = chained_line(r, prev).map_err(std::io::Error::other)?;
                        *prev = line_hash(line.as_bytes());
                        out.write_all(line.as_bytes())?;
                        out.write_all(b"\n")
                    };
                    let mut result = write(&r, &mut prev);
                    session.get_or_insert_with(|| prev.clone());
                    if let (Ok(()), true, Some(key), Some(session)) = (&result, end, key, &session) {
                        let anchor = Record::Anchor(key.anchor(session, &prev));
                        result = write(&anchor, &mut prev);
                    }
                    if let Err(e) = result {
                        failed = true;
                        fail(e, &mut out);
                    }
                }
                Msg::Record(_) => {}
                Msg::Flush(ack) => {
                    if !failed {
                        if let Err(e) = out.flush() {
                            failed = true;
                            fail(e, &mut out);
                        }
                    }
                    let _ = ack.send(());
                }
            }
        }
        // Each batch reaches the file (one write per batch, not per
        // record): a trail that cannot be written is known within
        // milliseconds, not when the buffer fills or the run ends.
        if !failed {
            if let Err(e) = out.flush() {
                failed = true;
                fail(e, &mut out);
            }
        }
        failure.writing_since.store(0, Ordering::SeqCst);
    }
}

/// Records for the tests of this module's parts.
#[cfg(test)]
pub(crate) mod test_support {
    use super::*;

    pub(crate) fn test_start() -> SessionStart {
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
                untrapped_read_only: vec![],
                landlock_exact: None,
                residual: None,
                landlock_denials: None,
            },
            caches: vec![],
            features: Default::default(),
            container: None,
            time_ns: 0,
        }
    }

    /// A session record.
    pub(crate) fn start() -> Record {
        Record::SessionStart(Box::new(test_start()))
    }

    /// Decision `seq`, decided `verdict`.
    pub(crate) fn decision(seq: u64, verdict: Verdict) -> Record {
        Record::Decision(Box::new(Decision {
            seq,
            time_ns: seq,
            pid: 1,
            tid: 1,
            comm: "t".into(),
            syscall: "openat".into(),
            nr: 257,
            path: Bytes(b"/x".to_vec()),
            dirfd: None,
            dirfd_path: None,
            resolved: None,
            access: AccessKind::Read,
            decision: verdict,
            errno: None,
            rule: "r".into(),
            rule_kind: RuleKind::Entry,
            handling_ns: 0,
            context: None,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::test_start;
    use super::*;

    fn trail(n: usize) -> String {
        let mut prev = CHAIN_START.to_string();
        let mut out = String::new();
        for i in 0..n {
            let r = if i + 1 == n {
                Record::SessionEnd(SessionEnd {
                    journal: None,
                    exit_status: 0,
                    allowed: 1,
                    denied: 0,
                    would_deny: 0,
                    dropped_allow_records: 0,
                    time_ns: 7,
                    supervisor_lost: None,
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
        let truncated = lines[..4].join("\n") + "\n";
        assert_eq!(verify(&truncated), Err(ChainError::Truncated { lines: 4 }));
        // Cut in the middle of a line (its writer killed while writing it):
        // truncated there, not a malformed record.
        let cut = truncated.clone() + &lines[4][..lines[4].len() / 2];
        assert_eq!(verify(&cut), Err(ChainError::Truncated { lines: 4 }));
        assert!(matches!(Reader::new(&b"not json"[..]), Err(chain::ReadError::NotATrail(_))));
        let other = good.replacen(&format!("\"schema\":{SCHEMA}"), "\"schema\":1", 1);
        assert!(matches!(Reader::new(other.as_bytes()), Err(chain::ReadError::Schema { found: 1 })));
    }

    #[test]
    fn only_an_anchor_made_with_the_key_proves_the_trail() {
        let dir = tempfile::tempdir().unwrap();
        let key = TrailKey::load_or_create(&dir.path().join("k")).unwrap();
        let anchored = |text: &str, key: &TrailKey| {
            let prev = line_hash(text.lines().last().unwrap().as_bytes());
            let session = line_hash(text.lines().next().unwrap().as_bytes());
            let line = chained_line(&Record::Anchor(key.anchor(&session, &prev)), &prev).unwrap();
            format!("{text}{line}\n")
        };
        let check = |text: &str| {
            let mut r = Reader::new(text.as_bytes()).unwrap();
            for record in r.by_ref() {
                record.unwrap();
            }
            r.verified(&key)
        };
        let good = trail(4);
        assert_eq!(check(&anchored(&good, &key)), Ok(5));
        assert_eq!(check(&good), Err(ChainError::Unanchored), "a chain anybody could have made");
        // A forger rewrites a record and the chain after it, and keeps the
        // old anchor, or anchors with a key of their own.
        let forged = {
            let mut prev = CHAIN_START.to_string();
            let mut out = String::new();
            for line in good.replacen("cmd1", "cmdX", 1).lines() {
                let record: Record = serde_json::from_str(line).unwrap();
                let line = chained_line(&record, &prev).unwrap();
                prev = line_hash(line.as_bytes());
                out.push_str(&line);
                out.push('\n');
            }
            out
        };
        assert_eq!(verify(&forged), Ok(4), "the chain alone is intact");
        let old_anchor = anchored(&good, &key).lines().last().unwrap().to_string();
        let prev = line_hash(forged.lines().last().unwrap().as_bytes());
        let mut reanchored: serde_json::Value = serde_json::from_str(&old_anchor).unwrap();
        reanchored["prev"] = prev.into();
        assert!(matches!(check(&format!("{forged}{reanchored}\n")), Err(ChainError::BadAnchor { .. })));
        let theirs = TrailKey::load_or_create(&dir.path().join("theirs")).unwrap();
        assert!(matches!(check(&anchored(&forged, &theirs)), Err(ChainError::OtherKey { .. })));
        // Nothing may follow the anchor.
        let extra = anchored(&good, &key) + good.lines().nth(1).unwrap() + "\n";
        assert!(matches!(check(&extra), Err(ChainError::Broken { .. } | ChainError::Malformed { .. })));
    }

    /// A writer that falls behind: allows are dropped and counted;
    /// would-be refusals (what `--suggest` is made from) and refusals wait
    /// for room and all arrive.
    #[test]
    fn under_back_pressure_only_allows_are_dropped() {
        type Gate = Arc<(Mutex<bool>, Condvar)>;
        /// Blocks every write until the gate opens.
        struct Gated(Arc<Mutex<Vec<u8>>>, Gate);
        impl Write for Gated {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                let (open, cv) = &*self.1;
                let mut g = open.lock().unwrap();
                while !*g {
                    g = cv.wait(g).unwrap();
                }
                self.0.lock().unwrap().extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let written = Arc::new(Mutex::new(Vec::new()));
        let gate: Gate = Arc::new((Mutex::new(false), Condvar::new()));
        let sink = Sink::start(Output::Stream(Box::new(Gated(Arc::clone(&written), Arc::clone(&gate)))), None);
        let decision = |verdict: Verdict| test_support::decision(sink.next_seq(), verdict);
        // The writer is stuck: past one queue's worth, allows are dropped.
        let allows = 3 * CAPACITY;
        for _ in 0..allows {
            sink.send(decision(Verdict::Allow));
        }
        assert!(sink.dropped() >= CAPACITY as u64, "dropped {}", sink.dropped());
        // Refusals wait for room, which the writer makes once unstuck.
        let opener = {
            let gate = Arc::clone(&gate);
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(100));
                *gate.0.lock().unwrap() = true;
                gate.1.notify_all();
            })
        };
        let refusals = 2 * CAPACITY;
        for i in 0..refusals {
            sink.send(decision(if i % 2 == 0 { Verdict::WouldDeny } else { Verdict::Deny }));
        }
        sink.flush();
        opener.join().unwrap();
        let text = String::from_utf8(written.lock().unwrap().clone()).unwrap();
        let count = |what: &str| text.lines().filter(|l| l.contains(what)).count();
        assert_eq!(count("\"decision\":\"would_deny\""), CAPACITY);
        assert_eq!(count("\"decision\":\"deny\""), CAPACITY);
        assert_eq!(count("\"decision\":\"allow\"") as u64 + sink.dropped(), allows as u64);
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
