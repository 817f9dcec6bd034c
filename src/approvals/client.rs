//! `interpose approvals SOCKET`: the terminal client, run in a second
//! terminal (never on the command's own). It shows each request and answers
//! the oldest with one key; on a terminal the key needs no Enter (`q` or
//! Ctrl-C quits).

use super::{Decision, FromClient, Request, Scope, ToClient};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use std::collections::VecDeque;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

/// Why the client stopped.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The socket could not be reached.
    #[error("connecting to {path}: {source} (is `interpose run --ask {path}` running?)")]
    Connect {
        /// The socket.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// Reading or writing failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The error.
        source: std::io::Error,
    },
    /// interpose sent a line this client does not understand.
    #[error("interpose sent a line this client does not understand: {0}")]
    Protocol(String),
}

/// The keys and what each answers.
const KEYS: &[(u8, Decision, Scope, &str)] = &[
    (b'y', Decision::Allow, Scope::Once, "allow once"),
    (b'p', Decision::Allow, Scope::Process, "allow for this process tree"),
    (b's', Decision::Allow, Scope::Session, "allow for the session"),
    (b'w', Decision::Allow, Scope::Policy, "allow and write it into the policy"),
    (b'n', Decision::Deny, Scope::Once, "deny once"),
    (b'N', Decision::Deny, Scope::Session, "deny for the session"),
];

/// Runs the client until interpose closes the socket (the session ended)
/// or the input ends.
pub fn run(socket: &Path) -> Result<(), ClientError> {
    let mut stream =
        UnixStream::connect(socket).map_err(|source| ClientError::Connect { path: socket.into(), source })?;
    let io = |what| move |source| ClientError::Io { what, source };
    let _raw = RawKeys::enable();
    let mut out = std::io::stderr();
    let mut queue: VecDeque<Request> = VecDeque::new();
    let mut inbuf = Vec::new();
    let mut policy = false;
    let mut stdin = std::io::stdin();
    let mut input_open = true;
    // Keys typed before the request they answer arrived (or read from a
    // pipe all at once), and the requests answered but not yet settled.
    let mut keys: VecDeque<u8> = VecDeque::new();
    let mut answered: std::collections::HashSet<u64> = std::collections::HashSet::new();
    loop {
        let (sock_ready, key_ready) = {
            let mut fds = vec![PollFd::new(stream.as_fd(), PollFlags::POLLIN)];
            if input_open {
                fds.push(PollFd::new(stdin.as_fd(), PollFlags::POLLIN));
            }
            match poll(&mut fds, PollTimeout::NONE) {
                Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                Err(e) => return Err(io("poll")(e.into())),
            }
            let ready = |f: &PollFd<'_>| !f.revents().unwrap_or(PollFlags::empty()).is_empty();
            (ready(&fds[0]), fds.get(1).is_some_and(ready))
        };
        let shown = head(&queue, &answered).map(|r| r.id);
        if sock_ready {
            let mut buf = [0u8; 8192];
            let n = stream.read(&mut buf).map_err(io("reading the socket"))?;
            if n == 0 {
                let _ = writeln!(out, "interpose closed the socket: the session ended");
                return Ok(());
            }
            inbuf.extend_from_slice(&buf[..n]);
            while let Some(end) = inbuf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = inbuf.drain(..=end).collect();
                let message: ToClient = serde_json::from_slice(&line)
                    .map_err(|e| ClientError::Protocol(format!("{e}: {}", String::from_utf8_lossy(&line))))?;
                match message {
                    ToClient::Hello { timeout_s, policy: p, session, .. } => {
                        policy = p;
                        let _ = writeln!(out, "connected to interpose {session}: questions wait {timeout_s} s");
                    }
                    ToClient::Request(r) => queue.push_back(r),
                    ToClient::Settled { id, decision, scope, by } => {
                        queue.retain(|r| r.id != id);
                        answered.remove(&id);
                        let _ = writeln!(out, "request {id}: {decision:?} ({}), by {by:?}", scope.name());
                    }
                    ToClient::Error { id, message } => {
                        let at = id.map(|i| format!(" (request {i})")).unwrap_or_default();
                        let _ = writeln!(out, "interpose refused an answer{at}: {message}");
                        // That request is open still: it can be answered again.
                        if let Some(i) = id {
                            answered.remove(&i);
                        }
                    }
                }
            }
        }
        if key_ready {
            let mut key = [0u8; 64];
            match stdin.read(&mut key).map_err(io("reading the keyboard"))? {
                0 => input_open = false,
                n => keys.extend(key[..n].iter().filter(|k| !k.is_ascii_whitespace())),
            }
        }
        while let (Some(&key), Some(r)) = (keys.front(), head(&queue, &answered)) {
            keys.pop_front();
            if key == b'q' || key == 3 {
                return Ok(());
            }
            let Some((_, decision, scope, what)) = KEYS.iter().find(|k| k.0 == key) else {
                let _ = writeln!(out, "{:?}: not an answer", key as char);
                continue;
            };
            let answer = FromClient::Answer { id: r.id, decision: *decision, scope: *scope };
            let mut line = serde_json::to_vec(&answer).expect("answers serialize");
            line.push(b'\n');
            stream.write_all(&line).map_err(io("answering"))?;
            let _ = writeln!(out, "request {}: {what}", r.id);
            answered.insert(r.id);
        }
        if keys.front().is_some_and(|&k| k == b'q' || k == 3) {
            return Ok(());
        }
        if let Some(r) = head(&queue, &answered).filter(|r| Some(r.id) != shown) {
            show(&mut out, r, policy);
        }
    }
}

/// The oldest request not answered yet.
fn head<'q>(queue: &'q VecDeque<Request>, answered: &std::collections::HashSet<u64>) -> Option<&'q Request> {
    queue.iter().find(|r| !answered.contains(&r.id))
}

/// Prints a request and the keys that answer it.
fn show(out: &mut impl Write, r: &Request, policy: bool) {
    let argv: Vec<String> = r.argv.iter().map(|a| crate::forensics::sanitize(&a.lossy())).collect();
    let _ = writeln!(
        out,
        "\nrequest {}: {} {} ({}) by pid {} {}\n  {}\n  what else: {}",
        r.id,
        crate::forensics::sanitize(&format!("{:?}", r.access).to_lowercase()),
        crate::forensics::sanitize(&r.path.lossy()),
        r.syscall,
        r.pid,
        crate::forensics::sanitize(&r.exe.lossy()),
        argv.join(" "),
        crate::forensics::sanitize(&r.what_else),
    );
    let keys: Vec<String> = KEYS
        .iter()
        .filter(|k| policy || k.2 != Scope::Policy)
        .map(|(k, _, _, what)| format!("{} {what}", *k as char))
        .collect();
    let _ = writeln!(out, "  [{}]", keys.join(", "));
}

/// The terminal in non-canonical mode without echo while the client runs,
/// so one key answers; restored when dropped. Nothing on a pipe.
struct RawKeys(Option<nix::sys::termios::Termios>);

impl RawKeys {
    fn enable() -> RawKeys {
        use nix::sys::termios::{tcgetattr, tcsetattr, LocalFlags, SetArg};
        let stdin = std::io::stdin();
        let Ok(saved) = tcgetattr(&stdin) else { return RawKeys(None) };
        let mut raw = saved.clone();
        // Without ISIG, Ctrl-C is a key (it quits), so the terminal is
        // always restored.
        raw.local_flags.remove(LocalFlags::ICANON | LocalFlags::ECHO | LocalFlags::ISIG);
        match tcsetattr(&stdin, SetArg::TCSANOW, &raw) {
            Ok(()) => RawKeys(Some(saved)),
            Err(_) => RawKeys(None),
        }
    }
}

impl Drop for RawKeys {
    fn drop(&mut self) {
        if let Some(saved) = &self.0 {
            let _ = nix::sys::termios::tcsetattr(std::io::stdin(), nix::sys::termios::SetArg::TCSANOW, saved);
        }
    }
}
