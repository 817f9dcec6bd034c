//! The server side of the approvals socket: one thread owns the listening
//! socket, the client (one at a time), the open questions and their
//! deadlines. Nothing here waits on the client: its socket is non-blocking,
//! what it has not read yet is bounded ([`MAX_OUTBOX`]; a client that stops
//! reading is dropped), and so is a line it sends ([`MAX_LINE`]). Whatever
//! ends a question without an answer (the timeout, the client going away,
//! the session ending) settles it as a denial.

use super::{Decision, FromClient, Request, Scope, SettledBy, ToClient};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Questions open at once; one more is refused without being asked.
pub const MAX_OPEN: usize = 32;
/// Bytes written for the client and not read by it yet: beyond this the
/// client is taken to have stopped reading, and dropped.
pub const MAX_OUTBOX: usize = 1 << 20;
/// The longest line a client may send.
pub const MAX_LINE: usize = 64 * 1024;

/// A question that ended, for the supervisor to act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settled {
    /// The question.
    pub id: u64,
    /// What the held calls get.
    pub decision: Decision,
    /// What the decision covers.
    pub scope: Scope,
    /// Who decided.
    pub by: SettledBy,
    /// How long the question was open.
    pub waited: Duration,
}

/// What is done with a settled question (called on the hub's thread, with
/// no lock of the hub's held: it may ask again).
pub type OnSettled = Box<dyn Fn(Settled) + Send>;

/// The questions and the client; see the module documentation.
pub struct Hub {
    state: Mutex<State>,
    /// The write end of the pipe that wakes the thread.
    wake: OwnedFd,
    timeout: Duration,
    policy: bool,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

#[derive(Default)]
struct State {
    client: bool,
    next_id: u64,
    open: BTreeMap<u64, Instant>,
    outbox: Vec<u8>,
    stopping: bool,
}

impl State {
    fn say(&mut self, message: &ToClient) {
        if !self.client {
            return;
        }
        let mut line = serde_json::to_vec(message).expect("protocol messages serialize");
        line.push(b'\n');
        self.outbox.extend_from_slice(&line);
    }
}

impl Hub {
    /// Starts the hub's thread on `listener`: questions wait `timeout`;
    /// `policy` says whether an answer may have the scope `policy`.
    pub fn start(
        listener: UnixListener,
        timeout: Duration,
        policy: bool,
        settle: OnSettled,
    ) -> std::io::Result<Arc<Hub>> {
        listener.set_nonblocking(true)?;
        let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_NONBLOCK | nix::fcntl::OFlag::O_CLOEXEC)?;
        let state = State { next_id: 1, ..State::default() };
        let hub = Arc::new(Hub { state: Mutex::new(state), wake: write, timeout, policy, thread: Mutex::default() });
        let me = Arc::clone(&hub);
        let thread = std::thread::Builder::new().name("interpose-ask".into()).spawn(move || {
            // A bug that panics here must not leave held calls waiting for
            // answers that can no longer come: every open question is
            // refused, and so is every later one.
            let run = std::panic::AssertUnwindSafe(|| me.run(listener, read, &settle));
            if std::panic::catch_unwind(run).is_err() {
                tracing::error!("approvals: the hub failed; every open and later question is refused");
                me.lock().stopping = true;
                me.end_all(SettledBy::SessionEnd).into_iter().for_each(&settle);
            }
        })?;
        *hub.thread.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(thread);
        Ok(hub)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn wake(&self) {
        // A full pipe has a wake-up pending already.
        let _ = nix::unistd::write(&self.wake, &[1]);
    }

    /// Asks the client: `request` is given the question's number. Refused
    /// at once (and the caller denies) when no client is connected or
    /// [`MAX_OPEN`] questions are open.
    pub fn ask(&self, request: impl FnOnce(u64) -> Request) -> Result<u64, SettledBy> {
        let mut s = self.lock();
        if s.stopping {
            return Err(SettledBy::SessionEnd);
        }
        if !s.client {
            return Err(SettledBy::NoClient);
        }
        if s.open.len() >= MAX_OPEN {
            return Err(SettledBy::TooMany);
        }
        let id = s.next_id;
        s.next_id += 1;
        s.open.insert(id, Instant::now());
        s.say(&ToClient::Request(request(id)));
        drop(s);
        self.wake();
        Ok(id)
    }

    /// Ends the hub: open questions are settled as denials, the thread
    /// stops and the listening socket is closed; returns when it has.
    pub fn stop(&self) {
        self.lock().stopping = true;
        self.wake();
        let thread = self.thread.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        if let Some(t) = thread.filter(|t| t.thread().id() != std::thread::current().id()) {
            let _ = t.join();
        }
    }

    fn run(&self, listener: UnixListener, wake: OwnedFd, settle: &OnSettled) {
        let mut client: Option<(UnixStream, Vec<u8>)> = None;
        loop {
            let (next_deadline, want_write, stopping) = {
                let s = self.lock();
                let first = s.open.values().min().map(|asked| *asked + self.timeout);
                (first, !s.outbox.is_empty(), s.stopping)
            };
            if stopping {
                let ended = self.end_all(SettledBy::SessionEnd);
                ended.into_iter().for_each(settle);
                return;
            }
            let timeout = next_deadline.map_or(PollTimeout::NONE, |d| {
                let ms = d.saturating_duration_since(Instant::now()).as_millis().saturating_add(1);
                PollTimeout::try_from(ms.min(60_000) as i32).unwrap_or(PollTimeout::MAX)
            });
            let (listen_ready, client_events) = {
                let mut fds = vec![
                    PollFd::new(listener.as_fd(), PollFlags::POLLIN),
                    PollFd::new(wake.as_fd(), PollFlags::POLLIN),
                ];
                if let Some((stream, _)) = &client {
                    let mut flags = PollFlags::POLLIN;
                    if want_write {
                        flags |= PollFlags::POLLOUT;
                    }
                    fds.push(PollFd::new(stream.as_fd(), flags));
                }
                match poll(&mut fds, timeout) {
                    Ok(_) => {}
                    Err(nix::errno::Errno::EINTR) => continue,
                    Err(e) => {
                        tracing::error!("approvals: poll failed: {e}; every open question is refused");
                        self.lock().stopping = true;
                        continue;
                    }
                }
                let ready = |f: &PollFd<'_>| f.revents().unwrap_or(PollFlags::empty());
                (ready(&fds[0]).contains(PollFlags::POLLIN), fds.get(2).map(ready).unwrap_or(PollFlags::empty()))
            };
            let mut drain = [0u8; 64];
            while nix::unistd::read(&wake, &mut drain).is_ok_and(|n| n > 0) {}
            if listen_ready {
                self.accept(&listener, &mut client);
            }
            let mut settled = Vec::new();
            let mut gone = false;
            if let Some((stream, inbuf)) = &mut client {
                if !client_events.is_empty() {
                    gone = self.read_lines(stream, inbuf, &mut settled);
                }
                if !gone {
                    gone = self.flush(stream);
                }
            }
            if gone {
                client = None;
                let mut s = self.lock();
                s.client = false;
                s.outbox.clear();
                drop(s);
                settled.extend(self.end_all(SettledBy::ClientGone));
            }
            settled.extend(self.expire());
            settled.into_iter().for_each(settle);
        }
    }

    /// Takes a new connection as the client, or turns it away when there
    /// is one already.
    fn accept(&self, listener: &UnixListener, client: &mut Option<(UnixStream, Vec<u8>)>) {
        loop {
            let mut stream = match listener.accept() {
                Ok((stream, _)) => stream,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // Out of descriptors, say: the connection stays queued,
                    // and the next poll would report it at once.
                    tracing::warn!("approvals: accepting a client failed: {e}");
                    std::thread::sleep(Duration::from_millis(50));
                    return;
                }
            };
            if client.is_some() {
                let busy = ToClient::Error { id: None, message: "another approvals client is connected".into() };
                let _ = stream.set_nonblocking(true);
                let _ = stream.write_all(&[serde_json::to_vec(&busy).unwrap_or_default(), b"\n".to_vec()].concat());
                continue;
            }
            if stream.set_nonblocking(true).is_err() {
                continue;
            }
            let mut s = self.lock();
            s.client = true;
            let hello = ToClient::Hello {
                version: super::VERSION,
                session: std::process::id(),
                timeout_s: self.timeout.as_secs(),
                policy: self.policy,
            };
            s.say(&hello);
            *client = Some((stream, Vec::new()));
        }
    }

    /// Reads what the client sent and acts on each whole line; `true` when
    /// the client is gone (closed, failed, or sent a line too long).
    fn read_lines(&self, stream: &mut UnixStream, inbuf: &mut Vec<u8>, settled: &mut Vec<Settled>) -> bool {
        let mut buf = [0u8; 8192];
        let mut closed = false;
        loop {
            match stream.read(&mut buf) {
                Ok(0) => {
                    closed = true;
                    break;
                }
                Ok(n) => inbuf.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    closed = true;
                    break;
                }
            }
            if inbuf.len() > MAX_LINE && !inbuf[..MAX_LINE].contains(&b'\n') {
                break;
            }
        }
        while let Some(end) = inbuf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = inbuf.drain(..=end).collect();
            if let Some(s) = self.line(&line[..line.len() - 1]) {
                settled.push(s);
            }
        }
        if inbuf.len() > MAX_LINE {
            let mut s = self.lock();
            s.say(&ToClient::Error { id: None, message: format!("a line longer than {MAX_LINE} bytes: disconnected") });
            drop(s);
            let _ = self.flush(stream);
            return true;
        }
        closed
    }

    /// Acts on one line from the client: an answer to an open question
    /// settles it; anything else is an error to the client, and allows
    /// nothing.
    fn line(&self, line: &[u8]) -> Option<Settled> {
        if line.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        let mut s = self.lock();
        let (id, decision, scope) = match serde_json::from_slice::<FromClient>(line) {
            Ok(FromClient::Answer { id, decision, scope }) => (id, decision, scope),
            Err(e) => {
                let message = format!("not an answer this protocol knows ({e}); nothing was decided");
                s.say(&ToClient::Error { id: None, message });
                return None;
            }
        };
        let refuse = |s: &mut State, message: String| {
            s.say(&ToClient::Error { id: Some(id), message });
            None
        };
        let Some(asked) = s.open.get(&id).copied() else {
            let message = match id > 0 && id < s.next_id {
                true => format!("request {id} was settled already; this answer changes nothing"),
                false => format!("there is no request {id}"),
            };
            return refuse(&mut s, message);
        };
        if scope == Scope::Policy && decision == Decision::Deny {
            return refuse(
                &mut s,
                "the scope policy writes allows only; deny once, for the process or for the session".into(),
            );
        }
        if scope == Scope::Policy && !self.policy {
            let message = "the scope policy needs `interpose run --ask-policy FILE`; the question is still open".into();
            return refuse(&mut s, message);
        }
        s.open.remove(&id);
        s.say(&ToClient::Settled { id, decision, scope, by: SettledBy::Client });
        Some(Settled { id, decision, scope, by: SettledBy::Client, waited: asked.elapsed() })
    }

    /// Writes what the client has not been sent; `true` when the client is
    /// gone (failed, or [`MAX_OUTBOX`] bytes it does not read).
    fn flush(&self, stream: &mut UnixStream) -> bool {
        let mut s = self.lock();
        while !s.outbox.is_empty() {
            match stream.write(&s.outbox) {
                Ok(0) => return true,
                Ok(n) => {
                    s.outbox.drain(..n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => return true,
            }
        }
        if s.outbox.len() > MAX_OUTBOX {
            tracing::warn!("approvals: the client does not read what it is sent; disconnected");
            return true;
        }
        false
    }

    /// Settles every open question as refused `by`.
    fn end_all(&self, by: SettledBy) -> Vec<Settled> {
        let mut s = self.lock();
        let open = std::mem::take(&mut s.open);
        open.into_iter()
            .map(|(id, asked)| {
                s.say(&ToClient::Settled { id, decision: Decision::Deny, scope: Scope::Once, by });
                Settled { id, decision: Decision::Deny, scope: Scope::Once, by, waited: asked.elapsed() }
            })
            .collect()
    }

    /// Settles the questions whose time is up as refused.
    fn expire(&self) -> Vec<Settled> {
        let mut s = self.lock();
        let now = Instant::now();
        let due: Vec<(u64, Instant)> =
            s.open.iter().filter(|(_, asked)| **asked + self.timeout <= now).map(|(id, a)| (*id, *a)).collect();
        due.into_iter()
            .map(|(id, asked)| {
                s.open.remove(&id);
                let by = SettledBy::Timeout;
                s.say(&ToClient::Settled { id, decision: Decision::Deny, scope: Scope::Once, by });
                Settled { id, decision: Decision::Deny, scope: Scope::Once, by, waited: asked.elapsed() }
            })
            .collect()
    }
}
