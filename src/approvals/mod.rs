//! Approvals (`interpose run --ask SOCKET`): a trapped call the surface does
//! not grant is held while a person decides, and the answer's scope is
//! honoured for the rest of the session.
//!
//! The protocol is JSON Lines on a unix socket interpose creates (mode
//! 0600, where the command cannot reach it): [`ToClient`] messages one way,
//! [`FromClient`] the other (`docs/approvals.md`). [`hub`] is the server
//! side, one thread that owns the socket, the client, the open questions
//! and their deadlines; the supervisor holds the calls and decides what an
//! answer covers (`supervisor::ask`). [`client`] is the terminal client,
//! `interpose approvals SOCKET`.

use crate::audit::{AccessKind, Bytes};
use serde::{Deserialize, Serialize};

pub mod client;
pub mod hub;

/// The protocol's version, sent in the greeting.
pub const VERSION: u32 = 1;

/// A message from interpose to the client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToClient {
    /// The first line on a connection.
    Hello {
        /// [`VERSION`].
        version: u32,
        /// interpose's process id.
        session: u32,
        /// Seconds a question waits for an answer before it is refused.
        timeout_s: u64,
        /// Whether an answer may have the scope `policy` (`--ask-policy`).
        policy: bool,
    },
    /// A held call: answer it with [`FromClient::Answer`].
    Request(Request),
    /// A question ended: answered (this confirms the answer), or refused
    /// without one (the timeout, or the session ending).
    Settled {
        /// The question.
        id: u64,
        /// What the held calls got.
        decision: Decision,
        /// What the decision covers.
        scope: Scope,
        /// Who decided.
        by: SettledBy,
    },
    /// A line this client sent was refused; nothing was allowed by it.
    Error {
        /// The question the line named, when it named one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<u64>,
        /// What was wrong.
        message: String,
    },
}

/// One question: a call the surface does not grant, held until answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// The question's number, to name in the answer.
    pub id: u64,
    /// The asking process.
    pub pid: u32,
    /// The asking thread.
    pub tid: u32,
    /// Its program (`/proc/<pid>/exe`).
    pub exe: Bytes,
    /// Its arguments (at most 16 of at most 256 bytes).
    pub argv: Vec<Bytes>,
    /// The syscall.
    pub syscall: String,
    /// The object, as resolved (canonical).
    pub path: Bytes,
    /// The access asked for.
    pub access: AccessKind,
    /// What each scope of an allow would also cover.
    pub what_else: String,
}

/// A message from the client to interpose.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum FromClient {
    /// The answer to a request.
    Answer {
        /// The request's `id`.
        id: u64,
        /// Allow or deny.
        decision: Decision,
        /// What the answer covers (default `once`).
        #[serde(default)]
        scope: Scope,
    },
}

/// Allow or deny.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The call goes ahead.
    Allow,
    /// The call fails with `EACCES`.
    Deny,
}

/// What an answer covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// The held call (and identical ones held with it).
    #[default]
    Once,
    /// The same object and access for the asking process and its
    /// descendants, for the rest of the session.
    Process,
    /// The same object and access for every process, for the rest of the
    /// session.
    Session,
    /// As `session`, and the narrowest rule is written into the policy
    /// file named by `--ask-policy` (an allow only).
    Policy,
}

impl Scope {
    /// The scope as written in the protocol and the trail.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Once => "once",
            Scope::Process => "process",
            Scope::Session => "session",
            Scope::Policy => "policy",
        }
    }
}

/// Who settled a question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SettledBy {
    /// The client's answer.
    Client,
    /// Nobody answered in time.
    Timeout,
    /// No client was connected when the call was held.
    NoClient,
    /// The client went away (or stopped reading) before answering.
    ClientGone,
    /// As many questions as allowed were open already.
    TooMany,
    /// The session ended.
    SessionEnd,
}

impl SettledBy {
    /// As written in the protocol and the trail.
    pub fn name(self) -> &'static str {
        match self {
            SettledBy::Client => "client",
            SettledBy::Timeout => "timeout",
            SettledBy::NoClient => "no_client",
            SettledBy::ClientGone => "client_gone",
            SettledBy::TooMany => "too_many",
            SettledBy::SessionEnd => "session_end",
        }
    }

    /// Why a call was refused without a person's answer, in words.
    pub fn refusal(self) -> &'static str {
        match self {
            SettledBy::Client => "refused by a person (--ask)",
            SettledBy::Timeout => "nobody answered the question in time (--ask-timeout)",
            SettledBy::NoClient => "no approvals client was connected to ask (--ask)",
            SettledBy::ClientGone => "the approvals client went away before answering (--ask)",
            SettledBy::TooMany => "too many questions were open at once (--ask)",
            SettledBy::SessionEnd => "the session ended before an answer (--ask)",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_parse_with_the_default_scope_and_refuse_unknown_fields() {
        let a: FromClient = serde_json::from_str(r#"{"type":"answer","id":3,"decision":"allow"}"#).unwrap();
        assert_eq!(a, FromClient::Answer { id: 3, decision: Decision::Allow, scope: Scope::Once });
        let a: FromClient =
            serde_json::from_str(r#"{"type":"answer","id":4,"decision":"deny","scope":"session"}"#).unwrap();
        assert_eq!(a, FromClient::Answer { id: 4, decision: Decision::Deny, scope: Scope::Session });
        assert!(serde_json::from_str::<FromClient>(r#"{"type":"answer","id":4,"decision":"maybe"}"#).is_err());
        assert!(serde_json::from_str::<FromClient>(r#"{"type":"answer","id":4,"decision":"allow","x":1}"#).is_err());
        assert!(serde_json::from_str::<FromClient>(r#"{"type":"request","id":4}"#).is_err());
        for by in [SettledBy::Client, SettledBy::NoClient, SettledBy::ClientGone, SettledBy::SessionEnd] {
            assert_eq!(serde_json::to_value(by).unwrap(), by.name());
        }
    }

    #[test]
    fn requests_write_paths_that_are_not_utf8_as_base64() {
        let r = ToClient::Request(Request {
            id: 1,
            pid: 2,
            tid: 2,
            exe: Bytes(b"/bin/cat".to_vec()),
            argv: vec![Bytes(b"cat".to_vec())],
            syscall: "openat".into(),
            path: Bytes(b"/x/\xff".to_vec()),
            access: AccessKind::Read,
            what_else: String::new(),
        });
        let line = serde_json::to_string(&r).unwrap();
        assert!(line.starts_with(r#"{"type":"request","id":1,"#), "{line}");
        assert!(line.contains(r#""path":{"bytes":"L3gv/w=="}"#), "{line}");
        assert_eq!(serde_json::from_str::<ToClient>(&line).unwrap(), r);
    }
}
