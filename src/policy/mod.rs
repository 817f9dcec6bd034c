//! The surface: which paths the sandboxed command may read and write, and the
//! pure verdict function every trapped syscall is decided by.
//!
//! Nothing in this module does I/O except [`system`], which enumerates the
//! host at start-up to build the built-in system surface.

pub mod syscalls;
pub mod system;
pub mod table;
pub mod trie;

use serde::Serialize;
use std::path::{Path, PathBuf};
use trie::Trie;

/// What a surface entry grants beneath it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Nothing: a carve-out inside a granted tree.
    Deny,
    /// Read, list and execute.
    Ro,
    /// Everything: read, write, create, delete, rename, link, execute.
    Rw,
}

/// The kind of access a trapped syscall asks for on one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// Read a file or list a directory, or hold an `O_PATH` handle to it.
    Read,
    /// Change an existing file's content (write, truncate).
    Write,
    /// Create a new directory entry.
    Create,
    /// Remove a directory entry (unlink, rmdir, rename source).
    Delete,
    /// Make a second name for an existing file (hard-link source): the
    /// object becomes writable through the new name, so it needs `rw`.
    LinkSource,
    /// Execute a file.
    Exec,
    /// Read metadata (stat, access, readlink, xattrs) or make it the cwd.
    /// Also allowed on the directories that lead to a surface entry, so that
    /// `realpath` and `cd` work on the way to a granted path.
    Stat,
}

impl Access {
    /// Whether the access changes the file system.
    pub fn is_mutation(self) -> bool {
        !matches!(self, Access::Read | Access::Exec | Access::Stat)
    }
}

impl Mode {
    /// Whether this mode grants `access`.
    pub fn permits(self, access: Access) -> bool {
        match self {
            Mode::Deny => false,
            Mode::Ro => !access.is_mutation(),
            Mode::Rw => true,
        }
    }
}

/// Where a surface entry came from, for error messages and the audit trail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "detail")]
pub enum Origin {
    /// A command-line flag such as `--rw PATH`.
    Flag(String),
    /// The built-in system surface.
    System(&'static str),
    /// The private temporary directory interpose made for this run.
    TmpDir,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Flag(flag) => write!(f, "flag {flag}"),
            Origin::System(why) => write!(f, "system surface ({why})"),
            Origin::TmpDir => f.write_str("private TMPDIR"),
        }
    }
}

/// One surface entry: an absolute, canonical path and what it grants.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rule {
    /// Canonical absolute path; covers everything beneath it.
    pub path: PathBuf,
    /// What it grants.
    pub mode: Mode,
    /// Where it came from.
    pub origin: Origin,
}

/// Why a verdict came out as it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// The entry with this index in [`Surface::rules`] decided.
    Rule(u32),
    /// The path is `/proc/<pid>` of a process inside the sandbox.
    ProcInside(u32),
    /// The path is `/proc/<pid>` of a process outside the sandbox.
    ProcOutside(u32),
    /// The path leads to a surface entry (metadata access only).
    Ancestor,
    /// No entry covers the path.
    NoRule,
}

/// The outcome of checking one access against the surface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    /// Whether the access is allowed.
    pub allowed: bool,
    /// What decided it.
    pub reason: Reason,
}

/// Answers whether a pid belongs to the sandbox. The supervisor implements it
/// from `/proc`; tests implement it with a set.
pub trait Processes {
    /// Whether `pid` (a process or thread id) is the sandboxed command or one
    /// of its descendants.
    fn is_inside(&self, pid: u32) -> bool;
}

/// The resolved read/write surface of one run.
#[derive(Debug, Clone, Default)]
pub struct Surface {
    trie: Trie,
    rules: Vec<Rule>,
    /// Mount points of procfs instances, where `/<mount>/<pid>` is decided by
    /// sandbox membership instead of by the trie.
    proc_mounts: Vec<PathBuf>,
}

impl Surface {
    /// An empty surface: everything is denied.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an entry; a later entry for the same path replaces the earlier.
    pub fn add(&mut self, rule: Rule) {
        use std::os::unix::ffi::OsStrExt;
        let idx = self.rules.len() as u32;
        self.trie.insert(rule.path.as_os_str().as_bytes(), idx);
        self.rules.push(rule);
    }

    /// Adds an entry for `path` as given and, when that differs from its
    /// canonical form (a symlink on the way, as `/bin` -> `/usr/bin`), for the
    /// canonical path too: decisions are made on canonical paths, but
    /// `lstat`/`readlink` of the link itself name the path as given.
    pub fn add_path(&mut self, path: &Path, mode: Mode, origin: Origin) -> std::io::Result<()> {
        let canonical = std::fs::canonicalize(path)?;
        let literal = if path.is_absolute() { path.to_path_buf() } else { std::env::current_dir()?.join(path) };
        if literal != canonical && literal.symlink_metadata().is_ok_and(|m| m.file_type().is_symlink()) {
            self.add(Rule { path: literal, mode, origin: origin.clone() });
        }
        self.add(Rule { path: canonical, mode, origin });
        Ok(())
    }

    /// Decides `/<mount>/<pid>/...` by membership for every procfs `mount`.
    pub fn add_proc_mount(&mut self, mount: PathBuf) {
        if !self.proc_mounts.contains(&mount) {
            self.proc_mounts.push(mount);
        }
    }

    /// Every entry, in the order added (later ones win on equal paths).
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The entries that are in effect: the last one added for each path.
    pub fn effective_rules(&self) -> impl Iterator<Item = (u32, &Rule)> {
        use std::os::unix::ffi::OsStrExt;
        self.rules.iter().enumerate().filter_map(move |(i, r)| {
            (self.trie.lookup(r.path.as_os_str().as_bytes()) == Some(i as u32)).then_some((i as u32, r))
        })
    }

    /// The procfs mount points.
    pub fn proc_mounts(&self) -> &[PathBuf] {
        &self.proc_mounts
    }

    /// If `path` lies beneath a procfs mount, the rest of it after the mount.
    pub fn proc_relative<'p>(&self, path: &'p [u8]) -> Option<&'p [u8]> {
        use std::os::unix::ffi::OsStrExt;
        self.proc_mounts.iter().find_map(|m| {
            let m = m.as_os_str().as_bytes();
            let rest = path.strip_prefix(m)?;
            (rest.is_empty() || rest[0] == b'/').then_some(rest)
        })
    }

    /// The entry that covers `path`, if any.
    pub fn lookup(&self, path: &[u8]) -> Option<u32> {
        self.trie.lookup(path)
    }

    /// Decides `access` to the canonical absolute `path`.
    ///
    /// `/proc/<pid>` (under any procfs mount) is allowed in full for processes
    /// inside the sandbox and denied for every other process, whatever the
    /// trie says; the rest of procfs is decided by the trie like any path.
    pub fn decide(&self, path: &[u8], access: Access, procs: &dyn Processes) -> Verdict {
        if let Some(rest) = self.proc_relative(path) {
            let first = trie::components(rest).next().unwrap_or_default();
            if !first.is_empty() && first.iter().all(u8::is_ascii_digit) {
                let covered = self.trie.lookup(path).is_some_and(|i| self.rules[i as usize].mode != Mode::Deny);
                let pid = std::str::from_utf8(first).ok().and_then(|s| s.parse::<u32>().ok());
                return match pid {
                    Some(pid) if covered && procs.is_inside(pid) => {
                        Verdict { allowed: true, reason: Reason::ProcInside(pid) }
                    }
                    Some(pid) => Verdict { allowed: false, reason: Reason::ProcOutside(pid) },
                    None => Verdict { allowed: false, reason: Reason::NoRule },
                };
            }
        }
        let verdict = match self.trie.lookup(path) {
            Some(i) => Verdict { allowed: self.rules[i as usize].mode.permits(access), reason: Reason::Rule(i) },
            None => Verdict { allowed: false, reason: Reason::NoRule },
        };
        if !verdict.allowed && access == Access::Stat && verdict.reason == Reason::NoRule && self.trie.reaches(path) {
            return Verdict { allowed: true, reason: Reason::Ancestor };
        }
        verdict
    }

    /// Human-readable description of a verdict's reason.
    pub fn describe(&self, reason: Reason) -> String {
        match reason {
            Reason::Rule(i) => {
                let r = &self.rules[i as usize];
                format!("{} {} ({})", mode_name(r.mode), r.path.display(), r.origin)
            }
            Reason::ProcInside(pid) => format!("/proc/{pid} is inside the sandbox"),
            Reason::ProcOutside(pid) => format!("/proc/{pid} is outside the sandbox"),
            Reason::Ancestor => "leads to a surface entry (metadata only)".into(),
            Reason::NoRule => "no surface entry covers the path".into(),
        }
    }
}

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Deny => "deny",
        Mode::Ro => "ro",
        Mode::Rw => "rw",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    struct Set(HashSet<u32>);
    impl Processes for Set {
        fn is_inside(&self, pid: u32) -> bool {
            self.0.contains(&pid)
        }
    }

    fn surface() -> Surface {
        let mut s = Surface::new();
        let mut add = |p: &str, mode| s.add(Rule { path: p.into(), mode, origin: Origin::Flag("test".into()) });
        add("/usr", Mode::Ro);
        add("/work/repo", Mode::Rw);
        add("/etc", Mode::Ro);
        add("/etc/shadow", Mode::Deny);
        add("/proc", Mode::Ro);
        add("/proc/kcore", Mode::Deny);
        s.add_proc_mount("/proc".into());
        s
    }

    #[test]
    fn modes_grant_what_they_say() {
        let s = surface();
        let none = Set(HashSet::new());
        assert!(s.decide(b"/usr/bin/ls", Access::Exec, &none).allowed);
        assert!(s.decide(b"/usr/bin/ls", Access::Read, &none).allowed);
        for a in [Access::Write, Access::Create, Access::Delete, Access::LinkSource] {
            assert!(!s.decide(b"/usr/bin/ls", a, &none).allowed, "{a:?}");
            assert!(s.decide(b"/work/repo/x", a, &none).allowed, "{a:?}");
        }
        assert!(!s.decide(b"/etc/shadow", Access::Read, &none).allowed);
        assert!(s.decide(b"/etc/passwd", Access::Read, &none).allowed);
        assert_eq!(s.decide(b"/home/u/.ssh/id_rsa", Access::Read, &none).reason, Reason::NoRule);
        assert!(!s.decide(b"/work/repo2", Access::Read, &none).allowed);
    }

    #[test]
    fn metadata_is_allowed_on_the_way_to_an_entry_only() {
        let s = surface();
        let none = Set(HashSet::new());
        assert_eq!(s.decide(b"/", Access::Stat, &none).reason, Reason::Ancestor);
        assert!(s.decide(b"/work", Access::Stat, &none).allowed);
        assert!(!s.decide(b"/work", Access::Read, &none).allowed, "listing it is not");
        assert!(!s.decide(b"/work/other", Access::Stat, &none).allowed);
        assert!(!s.decide(b"/etc/shadow", Access::Stat, &none).allowed, "a carve-out is not a way through");
        assert!(s.decide(b"/usr/bin/ls", Access::Stat, &none).allowed);
    }

    #[test]
    fn proc_pids_are_decided_by_membership() {
        let s = surface();
        let inside = Set([42].into_iter().collect());
        assert!(s.decide(b"/proc/42/status", Access::Write, &inside).allowed);
        assert_eq!(s.decide(b"/proc/1/environ", Access::Read, &inside).reason, Reason::ProcOutside(1));
        assert!(s.decide(b"/proc/cpuinfo", Access::Read, &inside).allowed);
        assert!(!s.decide(b"/proc/cpuinfo", Access::Write, &inside).allowed);
        assert!(!s.decide(b"/proc/kcore", Access::Read, &inside).allowed);
        assert!(!s.decide(b"/proc/99999999999999999999/x", Access::Read, &inside).allowed);
    }

    #[test]
    fn without_a_proc_entry_even_inside_pids_are_denied() {
        let mut s = Surface::new();
        s.add_proc_mount("/proc".into());
        let inside = Set([42].into_iter().collect());
        assert!(!s.decide(b"/proc/42/status", Access::Read, &inside).allowed);
    }
}
