//! The surface: which paths the sandboxed command may read and write, and the
//! pure verdict function every trapped syscall is decided by.
//!
//! Nothing in this module does I/O except [`system`], which enumerates the
//! host at start-up to build the built-in system surface.

pub mod credentials;
pub mod env;
pub mod file;
pub mod glob;
pub mod hosts;
pub mod listings;
pub mod settle;
pub mod system;
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
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
    /// `ro`, `rw` or `deny`, as written in the trail and by `policy show`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Deny => "deny",
            Mode::Ro => "ro",
            Mode::Rw => "rw",
        }
    }

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
    /// A policy file, at this line.
    File {
        /// The file as named on the command line.
        file: String,
        /// The 1-based line of the entry.
        line: usize,
    },
    /// A built-in profile (`interpose policy list`), at this line of it.
    Profile {
        /// The profile's name.
        name: String,
        /// The 1-based line of the entry in the profile's text.
        line: usize,
    },
    /// The per-session home directory.
    SessionHome,
    /// The private directory a cache was moved to for this session (the
    /// cache entry's own origin as text).
    SessionCache(String),
    /// A policy's workspace taken from where interpose runs (no `cwd` key).
    Workspace,
    /// This run's audit trail, or the key that anchors trails: carved out
    /// so the command cannot reach them.
    Trail(&'static str),
    /// A file or directory a carve-out pattern matched when the session
    /// started (see [`settle`]): the pattern, and where it was written.
    Matched(String, Box<Origin>),
}

impl Origin {
    /// Whether the entry is one interpose made for this session only (its
    /// private TMPDIR, HOME or caches), whose path differs from run to run.
    pub fn is_session(&self) -> bool {
        matches!(self, Origin::TmpDir | Origin::SessionHome | Origin::SessionCache(_) | Origin::Trail(_))
    }

    /// Whether the entry is the user's own (a flag, the policy file, its
    /// workspace), not a built-in profile, the system surface or
    /// interpose's own session directories.
    pub fn is_user(&self) -> bool {
        match self {
            Origin::Matched(_, of) => of.is_user(),
            o => matches!(o, Origin::Flag(_) | Origin::File { .. } | Origin::Workspace),
        }
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Flag(flag) => write!(f, "flag {flag}"),
            Origin::System(why) => write!(f, "system surface ({why})"),
            Origin::TmpDir => f.write_str("private TMPDIR"),
            Origin::File { file, line } => write!(f, "{file}:{line}"),
            Origin::Profile { name, line } => write!(f, "profile {name}:{line}"),
            Origin::SessionHome => f.write_str("session HOME"),
            Origin::SessionCache(of) => write!(f, "private cache for {of}"),
            Origin::Workspace => f.write_str("workspace: the directory interpose runs in"),
            Origin::Trail(what) => f.write_str(what),
            Origin::Matched(pattern, of) => write!(f, "{of}, matched {pattern} at start"),
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

/// What a canonical path names in procfs ([`Surface::proc_place`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcPlace<'s> {
    /// Not beneath a procfs mount.
    NotProc,
    /// In procfs, outside any `/proc/<pid>` (`/proc/sys`, `/proc/meminfo`).
    Shared,
    /// In `/proc/<pid>` of the procfs mounted at the path given; `None`
    /// for a number too large to be a pid.
    Pid(&'s Path, Option<u32>),
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
    /// The glob rule with this index in [`Surface::globs`] decided.
    Glob(u32),
    /// No entry covers the path.
    NoRule,
}

/// What a glob rule does to the paths it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GlobEffect {
    /// Grants everything (`rw`), unless a more specific entry or a carve-out
    /// says otherwise.
    Grant,
    /// Denies everything, whatever grants it otherwise.
    Deny,
    /// Denies every mutation; reading stays as granted otherwise.
    DenyWrites,
}

impl GlobEffect {
    /// `grant`, `deny` or `denywrites`, as written in the trail.
    pub fn name(self) -> &'static str {
        match self {
            GlobEffect::Grant => "grant",
            GlobEffect::Deny => "deny",
            GlobEffect::DenyWrites => "denywrites",
        }
    }
}

/// A pattern rule, matched against the canonical path at decision time.
#[derive(Debug, Clone)]
pub struct GlobRule {
    /// The absolute pattern, with its base canonical.
    pub pattern: PathBuf,
    /// The literal directory the pattern starts with (canonical).
    pub base: PathBuf,
    /// What it does.
    pub effect: GlobEffect,
    /// Where it came from.
    pub origin: Origin,
    /// A carve-out pattern settled when the session started ([`settle`]):
    /// what it matched then are carve-outs of their own, and names made
    /// later are the session's, so it decides nothing any more.
    pub settled: bool,
    matcher: globset::GlobMatcher,
}

impl GlobRule {
    /// The directory whose whole subtree the pattern names, for a pattern
    /// that is a literal path (`.git/config`) or a literal directory
    /// followed by `/**` (`secrets/**`): such a pattern is a carve-out of
    /// one place, which the kernel can hold with one mask, and it covers
    /// names made there later too.
    pub fn subtree(&self) -> Option<&Path> {
        use std::os::unix::ffi::OsStrExt;
        let text = self.pattern.as_os_str().as_bytes();
        let literal = |p: &[u8]| !glob::is_glob(&String::from_utf8_lossy(p));
        if literal(text) {
            return Some(&self.pattern);
        }
        let dir = text.strip_suffix(b"/**")?;
        literal(dir).then(|| Path::new(std::ffi::OsStr::from_bytes(dir)))
    }

    /// Whether `path` (canonical, absolute) matches the pattern.
    pub fn matches(&self, path: &[u8]) -> bool {
        use std::os::unix::ffi::OsStrExt;
        self.under_base(path) && self.matcher.is_match(Path::new(std::ffi::OsStr::from_bytes(path)))
    }

    /// Whether `path` lies beneath the pattern's base (never the base
    /// itself): the first half of [`GlobRule::matches`].
    pub fn under_base(&self, path: &[u8]) -> bool {
        use std::os::unix::ffi::OsStrExt;
        let base = self.base.as_os_str().as_bytes();
        path.strip_prefix(base).is_some_and(|rest| rest.first() == Some(&b'/'))
    }

    /// The pattern less its base, as a glob matching paths taken from the
    /// base (`**/*.key` for `/ws/**/*.key`): the same names, and a form
    /// `globset` recognizes (an extension, a file name) where the absolute
    /// one needed its automaton.
    fn relative(&self) -> Option<globset::Glob> {
        let rest = self.pattern.strip_prefix(&self.base).ok()?.to_str()?;
        globset::GlobBuilder::new(rest).literal_separator(true).backslash_escape(true).build().ok()
    }
}

/// Patterns matched together ([`Patterns::first`]): one
/// [`globset::GlobSet`] per base, of the patterns less their base, so that
/// a name is looked at once for all of them and one no pattern's
/// extension, suffix or file name fits is turned away before any automaton
/// runs. Where a set cannot be built (the regex size limit), the patterns
/// are matched one by one.
#[derive(Clone)]
pub struct Patterns<'a> {
    patterns: &'a [&'a GlobRule],
    sets: Option<Vec<BaseSet<'a>>>,
    hits: Vec<usize>,
}

/// The patterns of one base: the base, their set, and the index in
/// [`Patterns`]'s list of each of the set's globs.
type BaseSet<'a> = (&'a [u8], globset::GlobSet, Vec<usize>);

impl<'a> Patterns<'a> {
    /// Compiles `patterns` into their sets.
    pub fn new(patterns: &'a [&'a GlobRule]) -> Patterns<'a> {
        use std::os::unix::ffi::OsStrExt;
        let mut groups: Vec<(&[u8], globset::GlobSetBuilder, Vec<usize>)> = Vec::new();
        let mut whole = true;
        for (i, g) in patterns.iter().enumerate() {
            let base = g.base.as_os_str().as_bytes();
            let Some(glob) = g.relative() else {
                whole = false;
                break;
            };
            match groups.iter_mut().find(|(b, _, _)| *b == base) {
                Some((_, set, indices)) => {
                    set.add(glob);
                    indices.push(i);
                }
                None => {
                    let mut set = globset::GlobSetBuilder::new();
                    set.add(glob);
                    groups.push((base, set, vec![i]));
                }
            }
        }
        let sets = whole
            .then(|| {
                groups.into_iter().map(|(b, set, ix)| Some((b, set.build().ok()?, ix))).collect::<Option<Vec<_>>>()
            })
            .flatten();
        Patterns { patterns, sets, hits: Vec::new() }
    }

    /// The index of the first pattern `path` (canonical, absolute) matches.
    pub fn first(&mut self, path: &[u8]) -> Option<usize> {
        use std::os::unix::ffi::OsStrExt;
        let Some(sets) = &self.sets else { return self.patterns.iter().position(|g| g.matches(path)) };
        let mut first = None;
        for (base, set, indices) in sets {
            let Some(rest) = path.strip_prefix(*base).and_then(|r| r.strip_prefix(b"/")) else { continue };
            set.matches_into(Path::new(std::ffi::OsStr::from_bytes(rest)), &mut self.hits);
            // A set's indices come in the order its globs were added.
            if let Some(&k) = self.hits.first() {
                first = Some(first.map_or(indices[k], |f: usize| f.min(indices[k])));
            }
        }
        first
    }
}

/// `path` made absolute and canonical as far as it exists (and may be looked
/// at), with the missing rest appended as written (`..` in the missing rest is refused by callers).
pub fn canonical_lenient(path: &Path) -> std::io::Result<PathBuf> {
    let path = if path.is_absolute() { path.to_path_buf() } else { std::env::current_dir()?.join(path) };
    let mut existing = path.as_path();
    let mut rest = Vec::new();
    loop {
        match std::fs::canonicalize(existing) {
            Ok(c) => {
                let mut out = c;
                out.extend(rest.iter().rev());
                return Ok(out);
            }
            // A name that cannot be looked at (a carve-out seen from inside
            // the sandbox, where the hook loads its policy) is taken as
            // written, like one that does not exist.
            Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied) => {
                let (Some(parent), Some(name)) = (existing.parent(), existing.file_name()) else { return Err(e) };
                rest.push(name.to_os_string());
                existing = parent;
            }
            Err(e) => return Err(e),
        }
    }
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
    /// Whether `pid` (a process or thread id, numbered as the procfs
    /// mounted at `mount` numbers it) is the sandboxed command or one of its
    /// descendants.
    fn is_inside(&self, mount: &Path, pid: u32) -> bool;

    /// Whether the procfs at `mount` numbers processes as the command's own
    /// PID namespace does (then `self` there is the caller's pid in that
    /// namespace), rather than as the supervisor's.
    fn numbers_as_the_command(&self, _mount: &Path) -> bool {
        false
    }

    /// The process and thread ids the procfs at `mount` gives the task the
    /// supervisor numbers `tid`, where they can be asked of its namespace
    /// at once; `None` to read them elsewhere.
    fn numbers_of(&self, _mount: &Path, _tid: u32) -> Option<(u32, u32)> {
        None
    }

    /// Whether every caller's own numbers are those the procfs at `mount`
    /// gives it: no caller is in a PID namespace below the one it numbers
    /// by, so a caller found at its own number there is itself.
    fn numbers_every_caller(&self, _mount: &Path) -> bool {
        false
    }
}

/// Nobody is inside the sandbox when nothing runs (`why`, `replay`, the
/// hooks, the library): `/proc/<pid>` is then always denied.
pub struct NoProcesses;

impl Processes for NoProcesses {
    fn is_inside(&self, _: &Path, _: u32) -> bool {
        false
    }
}

/// A package cache (`~/.npm`, `~/.cargo`): writable for the command while
/// the host's copy stays unchanged. `run` mounts an overlay on it whose
/// upper layer lives in the session directory, or, where no mount namespace
/// can be had or the cache does not exist, moves the cache with `env` to an
/// empty private directory (`sandbox::caches`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cache {
    /// The cache directory (canonical as far as it exists).
    pub path: PathBuf,
    /// The rule that grants it, if it exists; the cache is private only
    /// while that rule is the one in effect for `path` (a user's own `--rw`
    /// of it, or of a directory above it, shares it as asked).
    pub rule: Option<u32>,
    /// The variable that moves it where no overlay can be mounted.
    pub env: Option<String>,
    /// Names directly beneath it that the command does not see: denied by
    /// their own rules (listed here), and absent from an overlay.
    pub hide: Vec<(String, u32)>,
    /// Files directly beneath it copied into the private directory when it
    /// is moved.
    pub seed: Vec<String>,
    /// Where the entry came from.
    pub origin: Origin,
}

/// The resolved read/write surface of one run.
#[derive(Debug, Clone, Default)]
pub struct Surface {
    trie: Trie,
    rules: Vec<Rule>,
    globs: Vec<GlobRule>,
    caches: Vec<Cache>,
    /// Caches mounted as overlays in this process's mount namespace.
    overlaid: Vec<PathBuf>,
    /// Mount points of procfs instances, where `/<mount>/<pid>` is decided by
    /// sandbox membership instead of by the trie.
    proc_mounts: Vec<PathBuf>,
    /// Which entries are in effect ([`Surface::effective_rules`]), found
    /// once after the last entry was added: the session's start asks for
    /// them in loops over the carve-outs.
    effective: std::sync::OnceLock<Vec<u32>>,
}

impl Surface {
    /// An empty surface: everything is denied.
    pub fn new() -> Self {
        Self::default()
    }

    /// Gives back the lookup structure's spare room, once the surface is
    /// complete (the supervisor's holds it for the whole session).
    pub fn shrink(&mut self) {
        self.trie.shrink();
    }

    /// Adds an entry; a later entry for the same path replaces the earlier.
    pub fn add(&mut self, rule: Rule) {
        use std::os::unix::ffi::OsStrExt;
        let idx = self.rules.len() as u32;
        self.trie.insert(rule.path.as_os_str().as_bytes(), idx);
        self.rules.push(rule);
        self.effective = std::sync::OnceLock::new();
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

    /// Adds a cache (see [`Cache`]): read-write for the command, private to
    /// the session, with the names in `hide` carved out. A cache that does
    /// not exist is kept only if `env` can move it.
    pub fn add_cache(&mut self, path: &Path, spec: &file::CacheSpec, origin: Origin) -> std::io::Result<()> {
        let env = spec.env.clone();
        let canonical = match std::fs::canonicalize(path) {
            Ok(c) if c.is_dir() => c,
            Ok(_) => return Err(std::io::Error::other("not a directory")),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && env.is_some() => {
                let path = canonical_lenient(path)?;
                self.caches.retain(|c| c.path != path);
                self.caches.push(Cache { path, rule: None, env, hide: Vec::new(), seed: spec.seed.clone(), origin });
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        self.add(Rule { path: canonical.clone(), mode: Mode::Rw, origin: origin.clone() });
        let rule = self.rules.len() as u32 - 1;
        let hide = spec
            .hide
            .iter()
            .map(|name| {
                self.add(Rule { path: canonical.join(name), mode: Mode::Deny, origin: origin.clone() });
                (name.clone(), self.rules.len() as u32 - 1)
            })
            .collect();
        self.caches.retain(|c| c.path != canonical);
        self.caches.push(Cache { path: canonical, rule: Some(rule), env, hide, seed: spec.seed.clone(), origin });
        Ok(())
    }

    /// The caches that are private to the session: missing ones, and those
    /// whose own rule is still the one in effect.
    pub fn caches(&self) -> impl Iterator<Item = &Cache> {
        use std::os::unix::ffi::OsStrExt;
        self.caches.iter().filter(|c| c.rule.is_none_or(|r| self.trie.lookup(c.path.as_os_str().as_bytes()) == Some(r)))
    }

    /// Whether rule `i` grants a private cache.
    pub fn is_cache(&self, i: u32) -> bool {
        self.caches().any(|c| c.rule == Some(i))
    }

    /// The rules of names hidden from caches that an overlay leaves out
    /// (the session's overlays make them not exist, so Landlock needs no
    /// carve-out for them).
    pub fn hidden_by_overlay(&self) -> impl Iterator<Item = u32> + '_ {
        self.caches().filter(|c| self.overlaid.contains(&c.path)).flat_map(|c| c.hide.iter().map(|(_, r)| *r))
    }

    /// Records that `path`, a cache, is an overlay in this process's mount
    /// namespace.
    pub fn set_overlaid(&mut self, path: PathBuf) {
        self.overlaid.push(path);
    }

    /// Grants the private directory a cache was moved to.
    pub fn grant_moved(&mut self, cache: &Cache, dir: PathBuf) {
        self.add(Rule { path: dir, mode: Mode::Rw, origin: Origin::SessionCache(cache.origin.to_string()) });
    }

    /// Makes a cache that could not be kept private read-only: the command
    /// may read the host's copy (its programs, say `~/.cargo/bin`), never
    /// change it.
    pub fn share_read_only(&mut self, cache: &Cache) {
        if let Some(r) = cache.rule {
            let rule = self.rules[r as usize].clone();
            self.add(Rule { mode: Mode::Ro, ..rule });
        }
    }

    /// Makes the user's own grants (flags, the policy file, the workspace)
    /// win over the built-in profiles and system surface beneath them: a
    /// profile's read-only entry inside `--rw ~/.npm` becomes writable, and a
    /// private cache inside a user's read-write grant is shared as the user
    /// asked. Carve-outs are never lifted.
    pub fn prefer_user_grants(&mut self) {
        let user: Vec<Rule> = self
            .effective_rules()
            .map(|(_, r)| r)
            .filter(|r| r.mode != Mode::Deny && r.origin.is_user())
            .cloned()
            .collect();
        let built_in: Vec<(u32, Rule)> = self
            .effective_rules()
            .filter(|(_, r)| r.mode != Mode::Deny && !r.origin.is_user() && !r.origin.is_session())
            .map(|(i, r)| (i, r.clone()))
            .collect();
        for (i, rule) in built_in {
            // The most specific user grant that covers this entry.
            let Some(cover) =
                user.iter().filter(|u| rule.path.starts_with(&u.path)).max_by_key(|u| u.path.as_os_str().len())
            else {
                continue;
            };
            let shared_cache = self.is_cache(i) && cover.mode == Mode::Rw;
            // The carve-outs of a cache the user shares stay: they are
            // credentials, which only a grant of their own can lift.
            if cover.mode > rule.mode || shared_cache {
                self.add(Rule { path: rule.path.clone(), mode: cover.mode, origin: cover.origin.clone() });
            }
        }
    }

    /// Adds a glob rule for an absolute `pattern` (validated by the caller
    /// with [`glob::validate`]); its literal base is canonicalized as far as
    /// it exists.
    pub fn add_glob(&mut self, pattern: &Path, effect: GlobEffect, origin: Origin) -> Result<(), glob::GlobError> {
        let literal_base = glob::static_prefix(pattern);
        let rest = pattern.strip_prefix(&literal_base).map_err(|_| glob::GlobError::Malformed("no literal base"))?;
        let base = canonical_lenient(&literal_base).map_err(|_| glob::GlobError::Malformed("base not resolvable"))?;
        let pattern = base.join(rest);
        let matcher = glob::compile(&pattern)?;
        self.globs.push(GlobRule { pattern, base, effect, origin, settled: false, matcher });
        Ok(())
    }

    /// Every glob rule, in the order added.
    pub fn globs(&self) -> &[GlobRule] {
        &self.globs
    }

    /// Whether `reason` is a carve-out: a deny entry or deny glob, which no
    /// flag can widen.
    pub fn is_carve_out(&self, reason: Reason) -> bool {
        match reason {
            Reason::Rule(i) => self.rules[i as usize].mode == Mode::Deny,
            Reason::Glob(i) => self.globs[i as usize].effect != GlobEffect::Grant,
            _ => false,
        }
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

    /// Whether `path`, which need not exist, lies in a tree an existing
    /// entry grants with at least `mode`: the entry deciding it is such an
    /// entry (no carve-out or narrower one in between), so what the surface
    /// allows there, a grant of `path` itself included, the entry allows
    /// already.
    pub fn granted_by_existing_tree(&self, path: &Path, mode: Mode) -> bool {
        use std::os::unix::ffi::OsStrExt;
        let Some(parent) = path.parent() else { return false };
        self.trie.lookup(parent.as_os_str().as_bytes()).is_some_and(|i| {
            let r = &self.rules[i as usize];
            let covers = match mode {
                Mode::Rw => r.mode == Mode::Rw,
                Mode::Ro => r.mode != Mode::Deny,
                Mode::Deny => false,
            };
            covers && r.path.is_dir()
        })
    }

    /// Whether grant pattern `g` allows nothing its base's own entry does
    /// not: that entry grants read and write and decides the base itself,
    /// and a pattern only ever grants below the entry that decided (see
    /// [`Surface::decide`]), so every name it matches is allowed without
    /// it.
    pub fn grant_pattern_redundant(&self, g: &GlobRule) -> bool {
        use std::os::unix::ffi::OsStrExt;
        g.effect == GlobEffect::Grant
            && self.trie.lookup(g.base.as_os_str().as_bytes()).is_some_and(|i| {
                let r = &self.rules[i as usize];
                r.mode == Mode::Rw && r.path.is_dir()
            })
    }

    /// The entries that are in effect: the last one added for each path.
    pub fn effective_rules(&self) -> impl Iterator<Item = (u32, &Rule)> {
        use std::os::unix::ffi::OsStrExt;
        let effective = self.effective.get_or_init(|| {
            (0..self.rules.len() as u32)
                .filter(|&i| self.trie.lookup(self.rules[i as usize].path.as_os_str().as_bytes()) == Some(i))
                .collect()
        });
        effective.iter().map(|&i| (i, &self.rules[i as usize]))
    }

    /// The procfs mount points.
    pub fn proc_mounts(&self) -> &[PathBuf] {
        &self.proc_mounts
    }

    /// If `path` lies beneath a procfs mount, the rest of it after the mount.
    pub fn proc_relative<'p>(&self, path: &'p [u8]) -> Option<&'p [u8]> {
        self.proc_mount_of(path).map(|(_, rest)| rest)
    }

    /// If `path` lies beneath a procfs mount, that mount and the rest of
    /// the path after it.
    pub fn proc_mount_of<'p>(&self, path: &'p [u8]) -> Option<(&Path, &'p [u8])> {
        use std::os::unix::ffi::OsStrExt;
        self.proc_mounts.iter().find_map(|m| {
            let rest = path.strip_prefix(m.as_os_str().as_bytes())?;
            (rest.is_empty() || rest[0] == b'/').then_some((m.as_path(), rest))
        })
    }

    /// What the canonical `path` names in procfs: the one place that tells
    /// a process's `/proc/<pid>` from the rest of procfs.
    pub fn proc_place(&self, path: &[u8]) -> ProcPlace<'_> {
        let Some((mount, rest)) = self.proc_mount_of(path) else { return ProcPlace::NotProc };
        let first = trie::components(rest).next().unwrap_or_default();
        if first.is_empty() || !first.iter().all(u8::is_ascii_digit) {
            return ProcPlace::Shared;
        }
        ProcPlace::Pid(mount, std::str::from_utf8(first).ok().and_then(|s| s.parse::<u32>().ok()))
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
        if let ProcPlace::Pid(mount, pid) = self.proc_place(path) {
            let covered = self.trie.lookup(path).is_some_and(|i| self.rules[i as usize].mode != Mode::Deny);
            return match pid {
                Some(pid) if covered && procs.is_inside(mount, pid) => {
                    Verdict { allowed: true, reason: Reason::ProcInside(pid) }
                }
                Some(pid) => Verdict { allowed: false, reason: Reason::ProcOutside(pid) },
                None => Verdict { allowed: false, reason: Reason::NoRule },
            };
        }
        let verdict = match self.trie.lookup(path) {
            Some(i) => Verdict { allowed: self.rules[i as usize].mode.permits(access), reason: Reason::Rule(i) },
            None => Verdict { allowed: false, reason: Reason::NoRule },
        };
        let verdict = if self.globs.is_empty() { verdict } else { self.decide_globs(path, access, verdict) };
        if !verdict.allowed && access == Access::Stat && verdict.reason == Reason::NoRule && self.reaches(path) {
            return Verdict { allowed: true, reason: Reason::Ancestor };
        }
        if verdict.allowed && access == Access::Delete {
            // Removing or renaming a directory would carry a carve-out
            // beneath it (or a pattern anchored there) to a name it no
            // longer covers: `mv secrets s2` and `secrets/**` no longer
            // matches.
            if let Some(reason) = self.carve_out_beneath(path) {
                return Verdict { allowed: false, reason };
            }
        }
        if verdict.allowed && access == Access::Create {
            // The place a `dir/**` carve-out names, made during the
            // session: a directory moved there would bring what it holds
            // (and its own Landlock rules) under a name the pattern refuses.
            let place = |g: &GlobRule| {
                g.effect != GlobEffect::Grant
                    && !g.settled
                    && g.base.as_os_str().as_encoded_bytes() == path
                    && g.subtree().is_some()
            };
            if let Some(i) = self.globs.iter().position(place) {
                return Verdict { allowed: false, reason: Reason::Glob(i as u32) };
            }
        }
        verdict
    }

    /// A carve-out strictly beneath `path`, or a deny pattern whose literal
    /// base is `path` or beneath it.
    fn carve_out_beneath(&self, path: &[u8]) -> Option<Reason> {
        use std::os::unix::ffi::OsStrExt;
        let under = |p: &[u8], strict: bool| {
            p.strip_prefix(path).is_some_and(|r| (r.is_empty() && !strict) || r.first() == Some(&b'/'))
                || (path == b"/" && p != b"/")
        };
        // A read-only entry inside a writable tree (`deny_writes`) too:
        // its mask moves with its directory, and the name it protected is
        // left for anything to be made at.
        self.effective_rules()
            .find(|(_, r)| r.mode != Mode::Rw && under(r.path.as_os_str().as_bytes(), true))
            .map(|(i, _)| Reason::Rule(i))
            .or_else(|| {
                self.globs
                    .iter()
                    .position(|g| {
                        g.effect != GlobEffect::Grant && !g.settled && under(g.base.as_os_str().as_bytes(), false)
                    })
                    .map(|i| Reason::Glob(i as u32))
            })
    }

    /// Applies the glob rules on top of the trie's verdict: a matching deny
    /// glob always denies, a matching deny-writes glob denies mutations, and
    /// a matching grant allows unless the trie entry that decided is more
    /// specific than the glob's base (a carve-out inside it, say).
    fn decide_globs(&self, path: &[u8], access: Access, verdict: Verdict) -> Verdict {
        for (i, g) in self.globs.iter().enumerate().filter(|(_, g)| !g.settled) {
            let denies = match g.effect {
                GlobEffect::Deny => true,
                GlobEffect::DenyWrites => access.is_mutation(),
                GlobEffect::Grant => false,
            };
            if denies && g.matches(path) {
                return Verdict { allowed: false, reason: Reason::Glob(i as u32) };
            }
        }
        if verdict.allowed {
            return verdict;
        }
        let deciding = match verdict.reason {
            Reason::Rule(r) => Some(&self.rules[r as usize].path),
            _ => None,
        };
        for (i, g) in self.globs.iter().enumerate() {
            if g.effect == GlobEffect::Grant && deciding.is_none_or(|p| g.base.starts_with(p)) && g.matches(path) {
                return Verdict { allowed: true, reason: Reason::Glob(i as u32) };
            }
        }
        verdict
    }

    /// Whether `path` is a directory on the way to a surface entry or to a
    /// glob rule's base.
    fn reaches(&self, path: &[u8]) -> bool {
        use std::os::unix::ffi::OsStrExt;
        self.trie.reaches(path)
            || self.globs.iter().any(|g| {
                g.effect == GlobEffect::Grant
                    && g.base.as_os_str().as_bytes().strip_prefix(path).is_some_and(|r| r.is_empty() || r[0] == b'/')
            })
    }

    /// What would allow `access` to `path`, which the surface refused for
    /// `reason`: the flag (and the policy key that says the same), or why
    /// nothing can.
    pub fn remedy(&self, path: &Path, access: Access, reason: Reason) -> String {
        if self.is_carve_out(reason) {
            return format!(
                "nothing on the command line: it is a carve-out ({}); only removing that entry allows it",
                self.describe(reason)
            );
        }
        if matches!(reason, Reason::ProcOutside(_)) {
            return "nothing: /proc of a process outside the sandbox is never allowed".into();
        }
        if let Some(what) = credentials::control_socket(path) {
            return format!(
                "nothing is suggested: {} is {what}; granting it hands the command a way out of the sandbox. \
                 Grant it by its exact path only if that is what you mean",
                path.display()
            );
        }
        let (flag, key) =
            if access.is_mutation() { ("--rw", "additional_writes") } else { ("--ro", "additional_reads") };
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let dir = if path.is_dir() { path } else { path.parent().unwrap_or(path) };
        // A pattern for the generated names of `parent` that `name` is one
        // of (a tool's `.node-spawn-wrap-<pid>-<hex>`), never the parent.
        let pattern = |parent: &Path, name: &std::ffi::OsStr| {
            let prefix = credentials::generated_prefix(name)?;
            // Written as a policy would write it: `$HOME/...` in the home.
            let p = match home.as_deref().and_then(|h| parent.strip_prefix(h).ok()) {
                Some(rest) => Path::new("$HOME").join(rest).join(format!("{prefix}*")),
                None => parent.join(format!("{prefix}*")),
            };
            Some(format!(
                "in a policy: {key} = [{:?}, {:?}] (every name in {} starting with {prefix:?}, and what is beneath \
                 them; nothing else of {}{})",
                p.display().to_string(),
                p.join("**").display().to_string(),
                parent.display(),
                parent.display(),
                credentials::holding(parent, home.as_deref()),
            ))
        };
        if !credentials::too_broad(dir, home.as_deref()) {
            // The directory itself a generated name in a tree never
            // suggested whole: the pattern, in that tree.
            if let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) {
                if credentials::too_broad(parent, home.as_deref()) {
                    if let Some(p) = pattern(parent, name) {
                        return p;
                    }
                }
            }
            return format!(
                "{flag} {} (in a policy: {key} = [{:?}]; it also grants everything else in {})",
                dir.display(),
                dir.display().to_string(),
                dir.display()
            );
        }
        // A tree too broad to grant, or holding credentials: the name
        // itself, or a pattern of its generated siblings.
        if dir == path {
            return format!(
                "nothing narrower than {} covers it, and {} is never suggested whole{}; grant the entries the \
                 command needs one by one",
                dir.display(),
                dir.display(),
                credentials::holding(dir, home.as_deref())
            );
        }
        if let Some(p) = path.file_name().and_then(|name| pattern(dir, name)) {
            return p;
        }
        format!(
            "{flag} {} (in a policy: {key} = [{:?}]; that name only: {} is never suggested whole{})",
            path.display(),
            path.display().to_string(),
            dir.display(),
            credentials::holding(dir, home.as_deref())
        )
    }

    /// Human-readable description of a verdict's reason.
    pub fn describe(&self, reason: Reason) -> String {
        match reason {
            Reason::Rule(i) => {
                let r = &self.rules[i as usize];
                format!("{} {} ({})", r.mode.name(), r.path.display(), r.origin)
            }
            Reason::ProcInside(pid) => format!("/proc/{pid} is inside the sandbox"),
            Reason::ProcOutside(pid) => format!("/proc/{pid} is outside the sandbox"),
            Reason::Ancestor => "leads to a surface entry (metadata only)".into(),
            Reason::Glob(i) => {
                let g = &self.globs[i as usize];
                let what = match g.effect {
                    GlobEffect::Grant => "rw",
                    GlobEffect::Deny => "deny",
                    GlobEffect::DenyWrites => "deny-writes",
                };
                format!("{what} glob {} ({})", g.pattern.display(), g.origin)
            }
            Reason::NoRule => "no surface entry covers the path".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    struct Set(HashSet<u32>);
    impl Processes for Set {
        fn is_inside(&self, _: &Path, pid: u32) -> bool {
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
    fn globs_grant_and_carve_out_at_decision_time() {
        // Paths that do not exist: the bases are taken as written.
        let mut s = surface();
        let o = || Origin::Flag("test".into());
        s.add(Rule { path: "/nonexistent-home".into(), mode: Mode::Ro, origin: o() });
        s.add(Rule { path: "/nonexistent-home/.claude.json.d".into(), mode: Mode::Deny, origin: o() });
        s.add_glob(Path::new("/nonexistent-home/.claude.json.*"), GlobEffect::Grant, o()).unwrap();
        s.add_glob(Path::new("/work/repo/**/.env"), GlobEffect::Deny, o()).unwrap();
        s.add_glob(Path::new("/work/repo/.git/hooks/**"), GlobEffect::DenyWrites, o()).unwrap();
        let none = Set(HashSet::new());
        let d = |p: &str, a| s.decide(p.as_bytes(), a, &none);
        assert!(d("/nonexistent-home/.claude.json.tmp.1.ab", Access::Create).allowed);
        assert_eq!(d("/nonexistent-home/.claude.json.lock", Access::Write).reason, Reason::Glob(0));
        // `*` stays in one component, and a more specific entry wins.
        assert!(!d("/nonexistent-home/.claude.json.bak/x", Access::Create).allowed);
        assert!(!d("/nonexistent-home/.claude.json.d", Access::Write).allowed);
        assert!(!d("/nonexistent-home/.bashrc", Access::Write).allowed);
        // Carve-out globs beat the rw workspace, for names made at any time.
        assert!(!d("/work/repo/.env", Access::Read).allowed);
        assert!(!d("/work/repo/a/b/.env", Access::Create).allowed);
        assert!(s.is_carve_out(d("/work/repo/a/.env", Access::Read).reason));
        assert!(d("/work/repo/.git/hooks/pre-commit", Access::Read).allowed);
        assert!(!d("/work/repo/.git/hooks/pre-commit", Access::Write).allowed);
        assert!(d("/work/repo/.git/config", Access::Write).allowed);
        // The way to a glob's base may be looked at, not listed.
        assert!(d("/nonexistent-home", Access::Stat).allowed);
    }

    #[test]
    fn a_directory_holding_a_carve_out_cannot_be_moved_away() {
        let mut s = surface();
        let o = || Origin::Flag("test".into());
        s.add(Rule { path: "/work/repo/a/protected".into(), mode: Mode::Deny, origin: o() });
        s.add_glob(Path::new("/work/repo/secrets/**"), GlobEffect::Deny, o()).unwrap();
        s.add_glob(Path::new("/work/repo/.git/hooks/**"), GlobEffect::DenyWrites, o()).unwrap();
        let none = Set(HashSet::new());
        let d = |p: &str, a| s.decide(p.as_bytes(), a, &none);
        for dir in ["/work/repo/a", "/work/repo/secrets", "/work/repo/.git", "/work/repo/.git/hooks"] {
            assert!(!d(dir, Access::Delete).allowed, "{dir}");
            assert!(s.is_carve_out(d(dir, Access::Delete).reason), "{dir}");
        }
        assert!(d("/work/repo/b", Access::Delete).allowed);
        assert!(d("/work/repo/a/other", Access::Delete).allowed, "a sibling of the carve-out");
        assert!(d("/work/repo/a", Access::Create).allowed, "making the name (mkdir -p) is not moving it");
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
