//! Answers (`interpose run --ask SOCKET`): a call the surface does not
//! grant is not answered at once; it is held, offered to a person through
//! the approvals hub ([`crate::approvals::hub`]; the held calls are
//! [`super::held`]'s), and answered when they decide, with what their
//! answer's scope covers remembered here for later calls, which the
//! handlers consult. The worker that held it goes back to the listener at
//! once, so every other thread and process keeps running while the
//! question is open.
//!
//! What is never asked: carve-outs (deny entries and patterns, the host's
//! secrets, the trail's key), credential locations, another process's
//! `/proc`, metadata reads (the stat family: programs probe), and execs
//! (only the kernel can make an exec, and its checks, the Landlock ruleset
//! fixed at the start or the verification of the new image, would refuse
//! the program whatever the answer). An allowed call is
//! performed by the supervisor on the object it checked, never continued:
//! the kernel's backstop does not grant what the surface does not.
//!
//! Identical questions (same process, object and access, a call restarted
//! after a signal included) are asked once: a call held while its question
//! is open joins it and gets the same answer.

use crate::approvals::{Decision, Scope};
use crate::policy::Access;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// What a call asks: the object (canonical) and the access.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Ask {
    /// The object, as resolved.
    pub path: Vec<u8>,
    /// The access the surface does not grant.
    pub access: Access,
}

/// The answers given in one session; see the module documentation.
pub struct Answers {
    state: Mutex<State>,
    /// `--ask-policy`: where a `policy` answer's rule is written.
    pub policy_file: Option<PathBuf>,
}

#[derive(Default)]
struct State {
    /// What the whole session got for an object and access.
    session: HashMap<Ask, Decision>,
    /// What a process and its descendants got.
    process: HashMap<(u32, Ask), Decision>,
    /// What one held call gets, by notification id (for its re-run).
    once: HashMap<u64, (Ask, Decision)>,
}

/// A remembered answer that decides a call without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Remembered {
    /// Allowed or refused.
    pub decision: Decision,
    /// The scope it was given with.
    pub scope: Scope,
}

impl Answers {
    /// Approvals for a session, writing `policy` answers to `policy_file`.
    pub fn new(policy_file: Option<PathBuf>) -> Answers {
        Answers { state: Mutex::default(), policy_file }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether a refusal of `access` to `path` may be asked about at all
    /// (the refusal's rule is not a carve-out: the caller checks that).
    pub fn askable(&self, path: &[u8], access: Access) -> bool {
        use std::os::unix::ffi::OsStrExt;
        !matches!(access, Access::Stat | Access::Exec)
            && !crate::policy::credentials::is_credential(Path::new(std::ffi::OsStr::from_bytes(path)))
    }

    /// The answer already given that covers `ask` for notification `id`
    /// of process `tgid`, if any.
    pub fn remembered(&self, id: u64, tgid: u32, ask: &Ask) -> Option<Remembered> {
        let s = self.lock();
        if let Some((once, decision)) = s.once.get(&id) {
            if once == ask {
                return Some(Remembered { decision: *decision, scope: Scope::Once });
            }
        }
        if let Some(d) = s.session.get(ask) {
            return Some(Remembered { decision: *d, scope: Scope::Session });
        }
        if s.process.is_empty() {
            return None;
        }
        // The process or one of its ancestors inside the sandbox.
        let me = std::process::id();
        let mut at = tgid;
        for _ in 0..64 {
            if let Some(d) = s.process.get(&(at, ask.clone())) {
                return Some(Remembered { decision: *d, scope: Scope::Process });
            }
            match super::procs::parent_of(at) {
                Some(p) if p > 1 && p != me => at = p,
                _ => break,
            }
        }
        None
    }

    /// Remembers what an answer of `decision` with `scope` to `ask`, asked
    /// by process `tgid` for the held notifications `ids`, covers; a
    /// `once` allow is found by notification id by each held call's re-run
    /// ([`Answers::forget_once`] after).
    pub fn remember(&self, (decision, scope): (Decision, Scope), tgid: u32, ask: &Ask, ids: &[u64]) {
        let mut s = self.lock();
        match scope {
            Scope::Once if decision == Decision::Allow => {
                for id in ids {
                    s.once.insert(*id, (ask.clone(), Decision::Allow));
                }
            }
            Scope::Once => {}
            Scope::Process => {
                s.process.insert((tgid, ask.clone()), decision);
            }
            Scope::Session | Scope::Policy => {
                s.session.insert(ask.clone(), decision);
            }
        }
    }

    /// Forgets the `once` answers of notifications `ids` (their calls
    /// were answered).
    pub fn forget_once(&self, ids: &[u64]) {
        let mut s = self.lock();
        for id in ids {
            s.once.remove(id);
        }
    }
}

/// The program of process `pid` and its arguments (at most 16, each cut at
/// 256 bytes), for a request.
pub fn process_words(pid: u32) -> (Vec<u8>, Vec<Vec<u8>>) {
    use std::os::unix::ffi::OsStrExt;
    let exe =
        std::fs::read_link(format!("/proc/{pid}/exe")).map(|p| p.as_os_str().as_bytes().to_vec()).unwrap_or_default();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let argv =
        cmdline.split(|&b| b == 0).filter(|a| !a.is_empty()).take(16).map(|a| a[..a.len().min(256)].to_vec()).collect();
    (exe, argv)
}

/// The rule a call allowed by a remembered answer is recorded under.
pub fn allowed_note(scope: Scope) -> &'static str {
    match scope {
        Scope::Once => "allowed by a person, once (--ask)",
        Scope::Process => "allowed by a person for this process tree (--ask)",
        Scope::Session => "allowed by a person for the session (--ask)",
        Scope::Policy => "allowed by a person, and written into the policy (--ask)",
    }
}

/// The rule a call refused by a remembered answer is recorded under.
pub fn refused_note(scope: Scope) -> &'static str {
    match scope {
        Scope::Process => "refused by a person for this process tree (--ask)",
        _ => "refused by a person for the session (--ask)",
    }
}

/// What an allow would also cover, for the request's `what_else`
/// (`policy`: whether answers may write a policy file).
pub fn what_else(path: &[u8], access: Access, policy: bool) -> String {
    use std::os::unix::ffi::OsStrExt;
    let p = Path::new(std::ffi::OsStr::from_bytes(path));
    let field = if access.is_mutation() { "additional_writes" } else { "additional_reads" };
    let flag = if access.is_mutation() { "--rw" } else { "--ro" };
    let mut text = "an allow covers this object and this access only (once: this call; process: the asking process \
        and its children; session: every process until the session ends"
        .to_string();
    if policy {
        text.push_str(&format!("; policy: also {field} = [\"{}\"] in the policy file", p.display()));
    }
    text.push(')');
    if access == Access::Write {
        text.push_str("; writing a file also lets the call read it");
    }
    if let Some(dir) = p.parent() {
        let others = std::fs::read_dir(dir).map(|d| d.take(10_000).count().saturating_sub(1)).unwrap_or(0);
        let credentials = crate::policy::credentials::holding(dir, None);
        let entries = if others == 1 { "entry" } else { "entries" };
        text.push_str(&format!(
            "; granting its directory instead ({flag} {}) would also cover {others} other {entries}{credentials}",
            dir.display()
        ));
    }
    text
}

/// Adds the narrowest rule for `ask` (the object itself) to the policy
/// file at `file` (made if missing), written whole to a new file and
/// renamed over the old one, so it is never half-written.
pub fn write_policy_rule(file: &Path, ask: &Ask) -> Result<(), String> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::str::from_utf8(&ask.path).map_err(|_| {
        format!(
            "{} is not UTF-8: a policy file cannot name it",
            Path::new(std::ffi::OsStr::from_bytes(&ask.path)).display()
        )
    })?;
    let field = if ask.access.is_mutation() { "additional_writes" } else { "additional_reads" };
    let mut doc: toml::Table = match std::fs::read_to_string(file) {
        Ok(text) => text.parse().map_err(|e| format!("{}: not a policy file this can add to: {e}", file.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => toml::Table::new(),
        Err(e) => return Err(format!("{}: {e}", file.display())),
    };
    let list = doc.entry(field).or_insert_with(|| toml::Value::Array(Vec::new()));
    let toml::Value::Array(list) = list else {
        return Err(format!("{}: {field} is not a list", file.display()));
    };
    if !list.iter().any(|v| v.as_str() == Some(path)) {
        list.push(toml::Value::String(path.to_string()));
    }
    let text = format!(
        "# Rules a person approved through `interpose run --ask` (comments here are not kept).\n{}",
        toml::to_string(&doc).map_err(|e| e.to_string())?
    );
    let dir = file.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    std::io::Write::write_all(&mut tmp, text.as_bytes()).map_err(|e| format!("{}: {e}", file.display()))?;
    tmp.as_file().sync_all().map_err(|e| format!("{}: {e}", file.display()))?;
    tmp.persist(file).map_err(|e| format!("{}: {e}", file.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_rule_is_added_once_to_a_file_that_stays_a_policy() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("approved.toml");
        let read = Ask { path: b"/data/a.txt".to_vec(), access: Access::Read };
        let write = Ask { path: b"/data/out".to_vec(), access: Access::Create };
        write_policy_rule(&file, &read).unwrap();
        write_policy_rule(&file, &read).unwrap();
        write_policy_rule(&file, &write).unwrap();
        let doc: toml::Table = std::fs::read_to_string(&file).unwrap().parse().unwrap();
        assert_eq!(doc["additional_reads"].as_array().unwrap().len(), 1);
        assert_eq!(doc["additional_writes"].as_array().unwrap()[0].as_str(), Some("/data/out"));
        std::fs::write(&file, "additional_reads = 3\n").unwrap();
        assert!(write_policy_rule(&file, &read).unwrap_err().contains("not a list"));
        let not_utf8 = Ask { path: b"/x/\xff".to_vec(), access: Access::Read };
        assert!(write_policy_rule(&file, &not_utf8).unwrap_err().contains("not UTF-8"));
    }

    #[test]
    fn stat_exec_and_credentials_are_never_asked() {
        let asking = Answers::new(None);
        assert!(asking.askable(b"/data/a", Access::Read));
        assert!(asking.askable(b"/data/a", Access::Create));
        assert!(!asking.askable(b"/data/a", Access::Stat));
        assert!(!asking.askable(b"/home/u/.ssh/id_rsa", Access::Read));
        assert!(!asking.askable(b"/home/u/.aws", Access::Write));
        assert!(!asking.askable(b"/data/tool", Access::Exec));
    }
}
