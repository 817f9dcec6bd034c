//! The records of the audit trail, one set of types for the writer and every
//! reader (`report`, `replay`, `--suggest`, the HTML page). `docs/audit.md`
//! describes them field by field; a test checks that it names every field.

use base64::Engine;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// Version of the record schema in `docs/audit.md`. Readers refuse trails
/// of another version with a message saying which.
pub const SCHEMA: u32 = 3;

/// Bytes that are written as a string when they are UTF-8 and as
/// `{"bytes": "<base64>"}` when not, so no path is ever lost or mangled.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub struct Bytes(pub Vec<u8>);

impl Bytes {
    /// The bytes as text for people: UTF-8 as is, anything else replaced.
    pub fn lossy(&self) -> String {
        String::from_utf8_lossy(&self.0).into_owned()
    }
}

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

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Text(String),
            Encoded { bytes: String },
        }
        match Form::deserialize(d)? {
            Form::Text(t) => Ok(Bytes(t.into_bytes())),
            Form::Encoded { bytes } => base64::engine::general_purpose::STANDARD
                .decode(bytes)
                .map(Bytes)
                .map_err(|e| serde::de::Error::custom(format!("bad base64 in a path: {e}"))),
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

impl<'de> Deserialize<'de> for ErrnoName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        (1..4096)
            .map(nix::errno::Errno::from_raw)
            .find(|e| format!("{e:?}") == name)
            .map(ErrnoName)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown errno {name:?}")))
    }
}

/// What was decided about one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Allowed.
    Allow,
    /// Refused (`EACCES`).
    Deny,
    /// Learning mode: enforcement would have refused it; it went ahead.
    WouldDeny,
    /// Failed as the kernel would have failed it, before any decision (a
    /// missing file, a loop, an existing name for mkdir).
    Error,
}

impl Verdict {
    /// A refusal, real or (in learning mode) one enforcement would make.
    pub fn refuses(self) -> bool {
        matches!(self, Verdict::Deny | Verdict::WouldDeny)
    }
}

/// The access a decision was about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AccessKind {
    /// Read a file, list a directory.
    Read,
    /// Change a file's content or attributes.
    Write,
    /// Create a name.
    Create,
    /// Remove a name.
    Delete,
    /// Give a file a second name.
    LinkSource,
    /// Execute.
    Exec,
    /// Metadata, an `O_PATH` handle, the cwd.
    Stat,
    /// A network connection: a connect the supervisor decided (the path
    /// is `tcp:HOST:PORT` or `udp:HOST:PORT`), or one through the proxy.
    Connect,
}

impl From<crate::policy::Access> for AccessKind {
    fn from(a: crate::policy::Access) -> Self {
        use crate::policy::Access;
        match a {
            Access::Read => AccessKind::Read,
            Access::Write => AccessKind::Write,
            Access::Create => AccessKind::Create,
            Access::Delete => AccessKind::Delete,
            Access::LinkSource => AccessKind::LinkSource,
            Access::Exec => AccessKind::Exec,
            Access::Stat => AccessKind::Stat,
        }
    }
}

impl AccessKind {
    /// The surface access this names; `None` for a network connect, which
    /// the surface does not decide.
    pub fn access(self) -> Option<crate::policy::Access> {
        use crate::policy::Access;
        Some(match self {
            AccessKind::Read => Access::Read,
            AccessKind::Write => Access::Write,
            AccessKind::Create => Access::Create,
            AccessKind::Delete => Access::Delete,
            AccessKind::LinkSource => Access::LinkSource,
            AccessKind::Exec => Access::Exec,
            AccessKind::Stat => Access::Stat,
            AccessKind::Connect => return None,
        })
    }

    /// Whether it changes the file system.
    pub fn is_mutation(self) -> bool {
        self.access().is_some_and(crate::policy::Access::is_mutation)
    }
}

/// What kind of rule decided, so that readers never parse `rule`'s text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleKind {
    /// A surface entry (`ro` or `rw`) or a grant pattern.
    Entry,
    /// A carve-out: a `deny` entry or pattern, or `deny_writes`. No flag
    /// widens it.
    CarveOut,
    /// The private TMPDIR, HOME or cache directory of the recorded run,
    /// which exists only for that run.
    Session,
    /// `/proc/<pid>` of a process inside the sandbox.
    ProcInside,
    /// `/proc/<pid>` of a process outside the sandbox: never allowed.
    ProcOutside,
    /// A directory on the way to a surface entry (metadata only).
    Ancestor,
    /// No entry covers the path.
    NoEntry,
    /// An object a sandboxed process already holds (a pipe behind
    /// `/proc/self/fd/N`).
    Held,
    /// A terminal (`/dev/pts/N`) no surface entry grants: allowed when the
    /// command created it (through `/dev/ptmx`), never otherwise.
    Terminal,
    /// The network: a `--net connect=` port, the proxy's allowlist, or
    /// the rule that every connection goes through the proxy.
    Network,
    /// The call failed before a decision.
    Failure,
    /// A person's answer to a question (`--ask`), or its absence (no
    /// client, no answer in time: refused).
    Approval,
}

/// Where a denied call came from, gathered while the caller still waited.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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

/// One decision on one path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    /// Sequence number, in the order decisions were queued.
    pub seq: u64,
    /// Wall-clock time the call reached the supervisor, nanoseconds since
    /// the Unix epoch.
    pub time_ns: u64,
    /// Process id of the caller.
    pub pid: u32,
    /// Thread id of the caller.
    pub tid: u32,
    /// The caller's thread name (`/proc/<tid>/comm`).
    pub comm: String,
    /// Syscall name.
    pub syscall: Cow<'static, str>,
    /// Syscall number.
    pub nr: i32,
    /// The path as the program passed it.
    pub path: Bytes,
    /// For a relative path or a call on a descriptor: the directory
    /// descriptor it started from (-100, `AT_FDCWD`, for the cwd).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dirfd: Option<i32>,
    /// What that descriptor (or the cwd) pointed to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dirfd_path: Option<Bytes>,
    /// The canonical path the decision was made on, where it is not `path`
    /// (absent too when resolution failed before there was one: then
    /// `rule_kind` is `failure`). [`Decision::subject`] is the one to read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<Bytes>,
    /// The access asked for.
    pub access: AccessKind,
    /// What was decided.
    pub decision: Verdict,
    /// The errno returned to the program, if any (`EACCES` for a denial).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errno: Option<ErrnoName>,
    /// What decided, in words.
    pub rule: String,
    /// What kind of rule decided.
    pub rule_kind: RuleKind,
    /// Time the supervisor spent on the call, in nanoseconds.
    pub handling_ns: u64,
    /// For refusals: where the call came from.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub context: Option<DenialContext>,
}

impl Decision {
    /// The path the decision was made on: the resolved one if there was
    /// one, else the path as given.
    pub fn subject(&self) -> &Bytes {
        self.resolved.as_ref().unwrap_or(&self.path)
    }
}

/// A question asked of a person (`interpose run --ask`): a call the surface
/// does not grant, held until it was answered or refused without an answer.
/// The held calls' own decision records follow it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Question {
    /// Sequence number, shared with decisions.
    pub seq: u64,
    /// Wall-clock time the question was asked, nanoseconds since the Unix
    /// epoch.
    pub time_ns: u64,
    /// The question's number on the approvals socket (0 when it was never
    /// asked: no client, too many open).
    pub id: u64,
    /// The asking process and thread.
    pub pid: u32,
    /// The asking thread.
    pub tid: u32,
    /// Its program.
    pub exe: Bytes,
    /// The syscall.
    pub syscall: String,
    /// The object, as resolved.
    pub path: Bytes,
    /// The access asked for.
    pub access: AccessKind,
    /// What the held calls got.
    pub decision: Verdict,
    /// What the answer covers: `once`, `process`, `session`, `policy`.
    pub scope: String,
    /// Who settled it: `client`, `timeout`, `no_client`, `client_gone`,
    /// `too_many`, `session_end`.
    pub by: String,
    /// How long it waited for the answer, in milliseconds.
    pub wait_ms: u64,
    /// How many held calls the answer covered (identical calls of the same
    /// process are asked once).
    pub calls: u32,
    /// For a `policy` answer whose rule could not be written: why (the
    /// answer then covered the session only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_error: Option<String>,
}

/// An allowed exec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exec {
    /// Sequence number, shared with decisions.
    pub seq: u64,
    /// Wall-clock time, nanoseconds since the Unix epoch.
    pub time_ns: u64,
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

/// The rule of a refused direct connection (one that did not go through
/// the proxy), as decision records name it.
pub const DIRECT_REFUSED: &str =
    "direct connections are refused: the network is reached through interpose's proxy (HTTPS_PROXY, --net allow=)";

/// How a connection reached the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProxyProtocol {
    /// An HTTP `CONNECT` tunnel (HTTPS through `HTTPS_PROXY`).
    HttpConnect,
    /// A plain HTTP request in absolute form (`HTTP_PROXY`).
    Http,
    /// A SOCKS5 `CONNECT` (`ALL_PROXY=socks5h://`).
    Socks5,
    /// A plain TCP connect to a host loopback service the allowlist names
    /// (`127.0.0.1:PORT`, `[::1]:PORT`, `localhost:PORT`), forwarded from
    /// the same address and port in the command's namespace.
    Forward,
    /// A plain HTTP request to interpose's endpoint for a host of
    /// `[[net.credentials]]`, sent on to the host over TLS with the
    /// credential added (never recorded).
    Credential,
}

/// One connection through interpose's network proxy: written when it
/// ends (or is refused).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Connection {
    /// Sequence number, shared with decisions.
    pub seq: u64,
    /// Wall-clock time the connection was accepted, nanoseconds since the
    /// Unix epoch.
    pub time_ns: u64,
    /// Always `connect`.
    pub access: AccessKind,
    /// How the client asked.
    pub protocol: ProxyProtocol,
    /// The host as the client named it (normalized: lower case).
    pub host: String,
    /// The port.
    pub port: u16,
    /// The address the proxy connected to, if it got that far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// Allowed, refused, would be refused (learning), or failed (the host
    /// was allowed but could not be reached).
    pub decision: Verdict,
    /// The allowlist entry that allowed it and where it came from, or why
    /// it was refused or failed.
    pub rule: String,
    /// Always `network`.
    pub rule_kind: RuleKind,
    /// Bytes from the command to the host.
    pub bytes_up: u64,
    /// Bytes from the host to the command.
    pub bytes_down: u64,
    /// How long the connection lasted, in milliseconds.
    pub duration_ms: u64,
}

/// Which mode the run was in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModeName {
    /// Every path syscall trapped and enforced.
    #[default]
    Full,
    /// Only what Landlock cannot decide trapped.
    Fast,
    /// Learning: nothing enforced but host secrets; refusals recorded as
    /// `would_deny`.
    Learn,
}

/// The mode of the run and what it leaves unchecked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModeRecord {
    /// The mode.
    pub name: ModeName,
    /// The path syscalls of the table the filter does not trap.
    pub untrapped: Vec<String>,
    /// Fast mode with the command's own procfs: the open syscalls the filter
    /// does not trap when their flags make them read-only (Landlock decides
    /// them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub untrapped_read_only: Vec<String>,
    /// Fast mode: whether Landlock decides the surface exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub landlock_exact: Option<bool>,
    /// What the mode leaves unchecked, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub residual: Option<String>,
    /// Whether Landlock's own refusals are in the trail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub landlock_denials: Option<String>,
}

/// One source of the policy: a file or a built-in profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicySource {
    /// The file as named, or `profile NAME`.
    pub name: String,
    /// SHA-256 of its text.
    pub sha256: String,
}

/// An entry left out on this host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedEntry {
    /// The entry as written.
    pub entry: String,
    /// The key it is under.
    pub field: String,
    /// Where it came from.
    pub origin: String,
    /// Why it was left out.
    pub why: String,
}

/// The policy the surface was made from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyRecord {
    /// The policy file given with `--policy`, if any.
    #[serde(default)]
    pub file: Option<String>,
    /// The file and every profile it took in, in load order.
    pub sources: Vec<PolicySource>,
    /// The workspace.
    pub cwd: String,
    /// Entries left out on this host, and why.
    pub skipped: Vec<SkippedEntry>,
    /// `real` or `session`.
    pub home: String,
}

/// One surface entry: `[path, kind, origin]`, kind `ro`, `rw`, `deny` or
/// `glob:grant`, `glob:deny`, `glob:denywrites`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SurfaceEntry(pub String, pub String, pub String);

impl SurfaceEntry {
    /// Every entry of `surface` in effect, then its patterns.
    pub fn all_of(surface: &crate::policy::Surface) -> Vec<SurfaceEntry> {
        surface
            .effective_rules()
            .map(|(_, r)| SurfaceEntry(r.path.to_string_lossy().into(), r.mode.name().into(), r.origin.to_string()))
            .chain(surface.globs().iter().map(|g| {
                SurfaceEntry(
                    g.pattern.to_string_lossy().into(),
                    format!("glob:{}", g.effect.name()),
                    g.origin.to_string(),
                )
            }))
            .collect()
    }
}

/// SHA-256 of the sorted `(mode, path)` entries of `surface` in effect,
/// without a run's own session directories: equal for runs under the same
/// surface (`surface_digest`).
pub fn surface_digest(surface: &crate::policy::Surface) -> String {
    let mut entries: Vec<String> = surface
        .effective_rules()
        .filter(|(_, r)| !r.origin.is_session())
        .map(|(_, r)| format!("{} {}", r.mode.name(), r.path.display()))
        .collect();
    entries.sort();
    super::line_hash(entries.join("\n").as_bytes())
}

/// A kernel feature probed at start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Feature {
    /// Whether it is there.
    pub present: bool,
    /// What was found.
    pub detail: String,
}

/// How a package cache was kept private.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheRecord {
    /// The cache.
    pub path: String,
    /// `overlay ...`, `moved: $VAR=DIR ...` or `read-only (why)`.
    pub kept: String,
}

/// The run started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionStart {
    /// Schema version ([`SCHEMA`]).
    pub schema: u32,
    /// interpose version.
    pub version: String,
    /// The sandboxed command line.
    pub command: Vec<Bytes>,
    /// Every surface entry in effect, then the patterns.
    pub surface: Vec<SurfaceEntry>,
    /// SHA-256 of the sorted `(mode, path)` entries in effect, without the
    /// run's own session directories: equal for runs under the same surface.
    pub surface_digest: String,
    /// The policy (a file's, or the defaults of the flags).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<PolicyRecord>,
    /// Environment variables removed before the command started, as `NAME
    /// (RULE)`; names only, never values.
    #[serde(default)]
    pub env_dropped: Vec<String>,
    /// The mode and what it leaves unchecked.
    pub mode: ModeRecord,
    /// The package caches private to the session and how each was kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub caches: Vec<CacheRecord>,
    /// Kernel features probed at start.
    pub features: BTreeMap<String, Feature>,
    /// For a container supervised by `interpose oci-agent`: which one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<ContainerRecord>,
    /// Wall-clock start, nanoseconds since the Unix epoch.
    pub time_ns: u64,
}

/// The container an `oci-agent` trail is about, as its runtime described it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerRecord {
    /// The container's id.
    pub id: String,
    /// Its init process, as the host numbers it.
    pub pid: i32,
    /// Its bundle directory.
    pub bundle: String,
    /// Its annotations.
    pub annotations: BTreeMap<String, String>,
    /// The policy it was given (a file of `--policy-dir`, or `default`).
    pub policy: String,
}

/// The run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionEnd {
    /// How the command ended: its exit code, or 128 + signal.
    pub exit_status: i32,
    /// Decisions that allowed.
    pub allowed: u64,
    /// Decisions that refused.
    pub denied: u64,
    /// Learning mode: decisions enforcement would have refused.
    #[serde(default)]
    pub would_deny: u64,
    /// `allow` and `error` decisions not recorded because the writer fell
    /// behind (refusals and execs are never dropped).
    pub dropped_allow_records: u64,
    /// Wall-clock end, nanoseconds since the Unix epoch.
    pub time_ns: u64,
    /// Set when the supervisor that wrote the trail died before the
    /// session ended, and a restarted `oci-agent` closed the trail: the
    /// counts are then the records found, `exit_status` is -1, and
    /// `time_ns` is when it was closed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supervisor_lost: Option<SupervisorLost>,
    /// The session's undo journal (`run --journal`), whose chain this
    /// record thereby covers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal: Option<JournalLink>,
}

/// Where a session's undo journal is, and the hash of its seal: the trail
/// covers the journal's every line through it, and the journal names the
/// trail's first line in turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalLink {
    /// The journal's directory.
    pub dir: Bytes,
    /// The hash of its seal line (what its anchor signs).
    pub head: String,
    /// Its change lines.
    pub changes: u64,
}

/// How a trail whose supervisor died was closed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SupervisorLost {
    /// The process that closed it (the restarted agent).
    pub closed_by_pid: u32,
    /// Bytes of a record cut short by the death, removed from the end.
    pub torn_bytes: u64,
}

/// Allowed (or failed) decisions repeated after their first record: the
/// same object and access decided the same way again, for the same process
/// where the access changes something, for any process of the same program
/// (`comm`) where it reads, looks or executes. Written
/// once, before `session_end`: the first record's `seq` and how many more
/// times it was decided so. Every refusal, exec and first allow is a
/// record of its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repeats {
    /// `[seq of the first record, times allowed again]`, by `seq`.
    pub counts: Vec<[u64; 2]>,
}

/// A record in the trail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    /// The run started.
    SessionStart(Box<SessionStart>),
    /// A decision.
    Decision(Box<Decision>),
    /// An allowed exec.
    Exec(Box<Exec>),
    /// A connection through the network proxy.
    Connection(Box<Connection>),
    /// Allowed decisions repeated after their first record.
    Repeats(Repeats),
    /// A question asked of a person (`--ask`), written when it settled.
    Question(Box<Question>),
    /// The run ended.
    SessionEnd(SessionEnd),
    /// The last line: the trail's final hash, signed with interpose's key.
    Anchor(Anchor),
}

/// The anchor, written after `session_end`: its `prev` is the hash of the
/// `session_end` line, which through the chain covers every line before,
/// and `mac` is HMAC-SHA-256 of that hash under the session's key, derived
/// from a key the sandboxed command cannot read (`super::key`). Anyone can recompute the chain; only the key's holder can
/// make the anchor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Anchor {
    /// Which key: the first 16 hex digits of its SHA-256.
    pub key_id: String,
    /// HMAC-SHA-256(session key, prev), in hex.
    pub mac: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field of every record type, with every optional one present.
    fn samples() -> Vec<Record> {
        let decision = Decision {
            seq: 1,
            time_ns: 2,
            pid: 3,
            tid: 3,
            comm: "cat".into(),
            syscall: "openat".into(),
            nr: 257,
            path: Bytes(b"x".to_vec()),
            dirfd: Some(-100),
            dirfd_path: Some(Bytes(b"/w".to_vec())),
            resolved: Some(Bytes(b"/w/x".to_vec())),
            access: AccessKind::Read,
            decision: Verdict::Deny,
            errno: Some(ErrnoName(nix::errno::Errno::EACCES)),
            rule: "r".into(),
            rule_kind: RuleKind::NoEntry,
            handling_ns: 4,
            context: Some(DenialContext {
                cwd: Bytes(b"/w".to_vec()),
                ancestors: vec![(3, "cat".into())],
                code: "c".into(),
            }),
        };
        let start = SessionStart {
            schema: SCHEMA,
            version: "v".into(),
            command: vec![],
            surface: vec![SurfaceEntry("/".into(), "ro".into(), "o".into())],
            surface_digest: "d".into(),
            policy: Some(PolicyRecord {
                file: Some("p.toml".into()),
                sources: vec![PolicySource { name: "n".into(), sha256: "s".into() }],
                cwd: "/w".into(),
                skipped: vec![SkippedEntry {
                    entry: "e".into(),
                    field: "f".into(),
                    origin: "o".into(),
                    why: "w".into(),
                }],
                home: "real".into(),
            }),
            env_dropped: vec![],
            mode: ModeRecord {
                name: ModeName::Fast,
                untrapped: vec![],
                untrapped_read_only: vec!["openat".into()],
                landlock_exact: Some(true),
                residual: Some("r".into()),
                landlock_denials: Some("l".into()),
            },
            caches: vec![CacheRecord { path: "/c".into(), kept: "k".into() }],
            features: [("F".to_string(), Feature { present: true, detail: "d".into() })].into_iter().collect(),
            container: Some(ContainerRecord {
                id: "c".into(),
                pid: 1,
                bundle: "/b".into(),
                annotations: BTreeMap::new(),
                policy: "p.toml".into(),
            }),
            time_ns: 0,
        };
        let exec = Exec {
            seq: 1,
            time_ns: 2,
            pid: 3,
            ppid: 1,
            program: Bytes(b"/bin/cat".to_vec()),
            argv: vec![],
            argv_truncated: false,
        };
        let end = SessionEnd {
            journal: None,
            exit_status: 0,
            allowed: 0,
            denied: 0,
            would_deny: 0,
            dropped_allow_records: 0,
            time_ns: 0,
            supervisor_lost: None,
        };
        vec![
            Record::SessionStart(Box::new(start)),
            Record::Decision(Box::new(decision)),
            Record::Exec(Box::new(exec)),
            Record::Question(Box::new(Question {
                seq: 5,
                time_ns: 6,
                id: 1,
                pid: 3,
                tid: 4,
                exe: Bytes(b"/bin/cat".to_vec()),
                syscall: "openat".into(),
                path: Bytes(b"/data/a".to_vec()),
                access: AccessKind::Read,
                decision: Verdict::Allow,
                scope: "policy".into(),
                by: "client".into(),
                wait_ms: 7,
                calls: 2,
                policy_error: Some("e".into()),
            })),
            Record::SessionEnd(end),
            Record::Anchor(Anchor { key_id: "k".into(), mac: "m".into() }),
        ]
    }

    fn keys(v: &serde_json::Value, out: &mut Vec<String>) {
        if let serde_json::Value::Object(map) = v {
            for (k, v) in map {
                out.push(k.clone());
                // Maps keyed by data (the feature names) hold no field names.
                if k != "features" {
                    keys(v, out);
                }
            }
        } else if let serde_json::Value::Array(items) = v {
            items.iter().for_each(|i| keys(i, out));
        }
    }

    #[test]
    fn docs_audit_md_names_every_field_and_the_records_round_trip() {
        let doc = include_str!("../../docs/audit.md");
        assert!(doc.contains(&format!("Schema\nversion **{SCHEMA}**")), "docs/audit.md states schema {SCHEMA}");
        for record in samples() {
            let value = serde_json::to_value(&record).unwrap();
            let mut names = Vec::new();
            keys(&value, &mut names);
            for name in names {
                assert!(doc.contains(&format!("`{name}`")), "docs/audit.md does not describe `{name}`");
            }
            let back: Record = serde_json::from_value(value).unwrap();
            assert_eq!(back, record);
        }
        for kind in [
            "entry",
            "carve_out",
            "session",
            "proc_inside",
            "proc_outside",
            "ancestor",
            "no_entry",
            "held",
            "network",
            "failure",
        ] {
            assert!(doc.contains(&format!("`{kind}`")), "rule_kind {kind}");
        }
    }
}
