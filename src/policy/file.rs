//! Policy files: the surface model (docs/design.md, "The surface") in TOML, with templates,
//! globs, carve-outs, built-in profiles, the environment rules and the
//! session home.
//!
//! Loading ([`Policy::load`]) parses and merges the `extends` chain and
//! checks everything that does not depend on the host; resolving
//! ([`Policy::resolve`]) expands templates against the environment, checks
//! the host and adds the entries to a [`Surface`], the one object every
//! enforcement layer reads. Every entry keeps the file and line it came
//! from, for errors, `interpose policy show` and the audit trail.

use super::env::EnvRules;
use super::glob::{self, Anchor, GlobError};
use super::{GlobEffect, Mode, Origin, Rule, Surface};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use toml::Spanned;

/// The built-in profiles: name, what it is for, and its text.
pub const PROFILES: &[(&str, &str, &str)] = &[
    ("system", "programs, libraries, /etc minus secrets, devices, /proc of the sandbox", ""),
    ("tooling", "git config, cargo/rustup, npm, pip and go caches, read-only", include_str!("profiles/tooling.toml")),
    ("claude", "Claude Code's settings and state", include_str!("profiles/claude.toml")),
    ("gemini", "Gemini CLI's settings and state", include_str!("profiles/gemini.toml")),
    ("codex", "Codex CLI's settings and state", include_str!("profiles/codex.toml")),
];

/// A policy that cannot be used, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}{}: {kind}", if *line == 0 { String::new() } else { format!(":{line}:{column}") })]
pub struct PolicyError {
    /// The file (or `profile NAME`).
    pub file: String,
    /// 1-based line (0 when the error is about the file as a whole).
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong.
    pub kind: ErrorKind,
}

/// What is wrong with a policy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ErrorKind {
    /// The file cannot be read.
    #[error("cannot read the policy: {0}")]
    Read(String),
    /// TOML syntax, an unknown key or a value of the wrong type.
    #[error("{0}")]
    Syntax(String),
    /// A pattern was refused.
    #[error("`{field}` entry {entry:?}: {error}")]
    Glob {
        /// The field it is in.
        field: &'static str,
        /// The entry as written.
        entry: String,
        /// Escape or malformed.
        error: GlobError,
    },
    /// `extends` names no built-in profile or policy file.
    #[error("unknown profile {0:?} in `extends` (see `interpose policy list`; a policy file is named by a path ending in .toml)")]
    UnknownProfile(String),
    /// A variable in the workspace's path (`cwd`) cannot be expanded.
    #[error("{0}")]
    Expand(ExpandError),
    /// A `[net] allow` entry is not a host.
    #[error("`[net] allow` entry {0}")]
    NetAllow(crate::policy::hosts::HostError),
    /// A `[[net.credentials]]` entry cannot be used.
    #[error("`[[net.credentials]]` entry: {0}")]
    Credential(crate::policy::hosts::CredentialError),
    /// Anything else, said in words.
    #[error("{0}")]
    Invalid(String),
    /// The first of several errors, and how many more there are.
    #[error("{0} (and {1} more: `interpose policy check FILE` lists them all)")]
    AndMore(Box<ErrorKind>, usize),
}

/// What the command gets as `HOME`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Home {
    /// The real home (the default).
    #[default]
    Real,
    /// A fresh directory per session, removed when the command ends.
    Session,
}

impl Home {
    /// `real` or `session`.
    pub fn name(self) -> &'static str {
        match self {
            Home::Real => "real",
            Home::Session => "session",
        }
    }
}

/// How much the filter traps (`mode` in a policy, `--fast` on the command
/// line).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunMode {
    /// Every path syscall trapped, decided and auditable.
    #[default]
    Full,
    /// Only what Landlock cannot decide is trapped (see `docs/performance.md`).
    Fast,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    #[serde(default)]
    extends: Vec<Spanned<String>>,
    /// `false` leaves out the built-in system surface (included otherwise).
    system: Option<Spanned<bool>>,
    /// `false` leaves out the built-in tooling profile (included otherwise).
    tooling: Option<Spanned<bool>>,
    mode: Option<RunMode>,
    cwd: Option<Spanned<String>>,
    #[serde(default)]
    additional_writes: Vec<Spanned<String>>,
    #[serde(default)]
    sibling_reads: Vec<Spanned<String>>,
    #[serde(default)]
    workspace_metadata: Vec<Spanned<String>>,
    #[serde(default)]
    tooling_paths: Vec<Spanned<String>>,
    #[serde(default)]
    additional_reads: Vec<Spanned<String>>,
    writable: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    deny: Vec<Spanned<String>>,
    #[serde(default)]
    deny_writes: Vec<Spanned<String>>,
    home: Option<Home>,
    #[serde(default)]
    home_seed: Vec<Spanned<String>>,
    #[serde(default)]
    caches: Vec<Spanned<RawCache>>,
    #[serde(default)]
    env: RawEnv,
    #[serde(default)]
    net: RawNet,
}

/// `[net]`: the hosts the command may reach through interpose's proxy.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNet {
    #[serde(default)]
    allow: Vec<Spanned<String>>,
    #[serde(default)]
    credentials: Vec<Spanned<RawCredential>>,
}

/// `[[net.credentials]]`: a credential the command never sees, added by
/// interpose to the requests it makes to one HTTPS host.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCredential {
    host: String,
    header: String,
    value: String,
    #[serde(default)]
    prefix: String,
    base_url: String,
    #[serde(default)]
    placeholder: Vec<String>,
}

/// One `caches` entry: a package cache the command may write to without
/// changing the host's copy.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCache {
    path: String,
    /// The environment variable that moves the cache, for hosts where no
    /// mount namespace can be had (the cache then starts empty).
    env: Option<String>,
    /// Names directly beneath the cache the command must not see (a
    /// credentials file kept next to a cache).
    #[serde(default)]
    hide: Vec<String>,
    /// Files directly beneath the cache copied into the private directory
    /// when the cache is moved (a tool's own configuration).
    #[serde(default)]
    seed: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEnv {
    #[serde(default)]
    keep: Vec<String>,
    #[serde(default)]
    drop: Vec<String>,
    #[serde(default)]
    set: BTreeMap<String, String>,
}

/// The list an entry is in, which decides what it grants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// `additional_writes`: rw; globs allowed.
    AdditionalWrites,
    /// `sibling_reads`: ro.
    SiblingReads,
    /// `workspace_metadata`: ro.
    WorkspaceMetadata,
    /// `tooling_paths`: ro.
    ToolingPaths,
    /// `additional_reads`: ro.
    AdditionalReads,
    /// `writable`: the only writable parts of the workspace, as patterns
    /// relative to it.
    Writable,
    /// `deny`: nothing at all, even inside granted trees.
    Deny,
    /// `deny_writes`: read-only, even inside writable trees.
    DenyWrites,
    /// `home_seed`: files copied from the real home into the session home.
    HomeSeed,
    /// `caches`: writable for the command, the host's copy unchanged.
    Caches,
}

impl Field {
    /// The key as written in the file.
    pub fn key(self) -> &'static str {
        match self {
            Field::AdditionalWrites => "additional_writes",
            Field::SiblingReads => "sibling_reads",
            Field::WorkspaceMetadata => "workspace_metadata",
            Field::ToolingPaths => "tooling_paths",
            Field::AdditionalReads => "additional_reads",
            Field::Writable => "writable",
            Field::Deny => "deny",
            Field::DenyWrites => "deny_writes",
            Field::HomeSeed => "home_seed",
            Field::Caches => "caches",
        }
    }

    /// Whether entries of this field are read-only grants.
    pub fn reads(self) -> bool {
        matches!(self, Field::SiblingReads | Field::WorkspaceMetadata | Field::ToolingPaths | Field::AdditionalReads)
    }
}

/// One path entry as written, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The list it is in.
    pub field: Field,
    /// The text, before expansion.
    pub text: String,
    /// File and line.
    pub origin: Origin,
    column: usize,
    /// For a `caches` entry: how it is kept private.
    pub cache: Option<CacheSpec>,
}

impl Entry {
    /// Where it was written: `file:line:column` (`profile NAME:line`).
    pub fn location(&self) -> String {
        match &self.origin {
            Origin::File { file, line } => format!("{file}:{line}:{}", self.column),
            Origin::Profile { name, line } => format!("profile {name}:{line}:{}", self.column),
            other => other.to_string(),
        }
    }
}

/// How a `caches` entry is kept private to the session.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CacheSpec {
    /// The variable that moves the cache where no overlay can be mounted.
    pub env: Option<String>,
    /// Names directly beneath it that the command does not see.
    pub hide: Vec<String>,
    /// Files directly beneath it copied into the private directory when
    /// it is moved.
    pub seed: Vec<String>,
}

/// Whether resolving a policy may change the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effects {
    /// Only look: `policy show`, `policy check`, `why`, `replay`, the hooks.
    None,
    /// Make the directories `run` needs (an `additional_writes` entry
    /// ending in `/`, a missing cache directory).
    Create,
}

/// A loaded policy: the merged `extends` chain, not yet expanded.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// Whether the built-in system surface is included (the default; `system
    /// = false` or `--no-system` leave it out).
    pub system: bool,
    /// Whether the workspace (`cwd`, default the directory interpose runs
    /// in) is part of the surface: true for a policy file, false for the
    /// surface made of flags alone.
    pub grants_workspace: bool,
    /// The workspace, as written, and where.
    pub cwd: Option<(String, Origin)>,
    /// Every path entry, profiles first, in order.
    pub entries: Vec<Entry>,
    /// Whether `writable` was given (the workspace is then read-only except
    /// for those patterns).
    pub restricts_workspace: bool,
    /// The environment rules.
    pub env: EnvRules,
    /// What `HOME` is.
    pub home: Home,
    /// How much is trapped, if the policy says.
    pub mode: Option<RunMode>,
    /// `[net] allow`: the hosts the proxy connects to, with where each
    /// was written.
    pub net_allow: Vec<crate::policy::hosts::HostRule>,
    /// `[[net.credentials]]`: credentials added on the way out.
    pub net_credentials: Vec<crate::policy::hosts::CredentialRule>,
    /// The files and profiles that make up the policy, in load order, with
    /// their text (for the digest in the session record).
    pub sources: Vec<(String, String)>,
    /// Errors in single entries, collected so that `policy check` can
    /// name them all; [`Policy::load`] refuses a policy that has any.
    errors: Vec<PolicyError>,
}

/// What became of one entry on this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryOutcome {
    /// Added to the surface as this path (or pattern).
    Added(PathBuf),
    /// Created (an `additional_writes` directory ending in `/`, a cache),
    /// then added.
    Created(PathBuf),
    /// Would be created by `run`; nothing was changed.
    WouldCreate(PathBuf),
    /// Left out, and why (an unset variable, a missing path).
    Skipped(String),
}

/// The surface a policy resolves to, with what happened to every entry.
#[derive(Debug)]
pub struct Resolution {
    /// The workspace (canonical).
    pub cwd: PathBuf,
    /// Every entry and what became of it.
    pub outcomes: Vec<(Entry, EntryOutcome)>,
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    Lines::new(text).line_col(text, offset)
}

/// Where each line of a text starts, and the last column worked out: a
/// policy of 200,000 entries on one line is located in linear time, not by
/// scanning from the start for every entry.
struct Lines {
    starts: Vec<usize>,
    /// (offset, column) of the last lookup, for the next one on its line.
    last: std::cell::Cell<(usize, usize)>,
}

impl Lines {
    fn new(text: &str) -> Lines {
        let starts = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect();
        Lines { starts, last: std::cell::Cell::new((0, 1)) }
    }

    fn line_col(&self, text: &str, offset: usize) -> (usize, usize) {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|&s| s <= offset);
        let start = self.starts[line - 1];
        let (last, col) = self.last.get();
        let column = if last >= start && last <= offset {
            col + text[last..offset].chars().count()
        } else {
            text[start..offset].chars().count() + 1
        };
        self.last.set((offset, column));
        (line, column)
    }
}

struct Source<'a> {
    name: String,
    text: &'a str,
    profile: Option<&'a str>,
    lines: Lines,
}

impl<'a> Source<'a> {
    fn new(name: String, text: &'a str, profile: Option<&'a str>) -> Source<'a> {
        Source { name, text, profile, lines: Lines::new(text) }
    }

    fn line_col(&self, offset: usize) -> (usize, usize) {
        self.lines.line_col(self.text, offset)
    }
}

/// Parses one source's TOML.
fn parse(src: &Source<'_>) -> Result<Raw, PolicyError> {
    toml::from_str(src.text).map_err(|e| {
        let offset = e.span().map_or(usize::MAX, |s| s.start);
        src.error(offset, ErrorKind::Syntax(e.message().trim_end().to_string()))
    })
}

impl Source<'_> {
    fn error(&self, offset: usize, kind: ErrorKind) -> PolicyError {
        let (line, column) = if offset == usize::MAX { (0, 0) } else { self.line_col(offset) };
        PolicyError { file: self.name.clone(), line, column, kind }
    }

    fn origin(&self, offset: usize) -> Origin {
        let line = self.line_col(offset).0;
        match self.profile {
            Some(name) => Origin::Profile { name: name.to_string(), line },
            None => Origin::File { file: self.name.clone(), line },
        }
    }
}

/// The text of the policy file at `path` (`name` in errors); a byte that is
/// not UTF-8 is pointed at by line and column.
fn read_text(path: &Path, name: &str) -> Result<String, PolicyError> {
    let error = |line, column, kind| PolicyError { file: name.to_string(), line, column, kind };
    let bytes = std::fs::read(path).map_err(|e| error(0, 0, ErrorKind::Read(e.to_string())))?;
    String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let text = std::str::from_utf8(valid).expect("the valid prefix");
        let (line, column) = line_col(text, text.len());
        error(line, column, ErrorKind::Read("not UTF-8 text (a policy is a TOML file)".into()))
    })
}

/// Whether `name` is a built-in profile's (`interpose policy list`).
pub fn is_profile(name: &str) -> bool {
    PROFILES.iter().any(|(p, _, _)| *p == name)
}

impl Policy {
    /// Loads the policy file at `path`, every profile it extends, and the
    /// defaults it does not opt out of (`system = false`, `tooling = false`).
    pub fn load(path: &Path) -> Result<Policy, PolicyError> {
        Policy::load_unchecked(path)?.checked()
    }

    /// A policy loaded with the errors of its entries collected, not yet
    /// refused: the first (with how many more) if there are any.
    fn checked(mut self) -> Result<Policy, PolicyError> {
        if self.errors.is_empty() {
            return Ok(self);
        }
        let more = self.errors.len() - 1;
        let mut first = self.errors.swap_remove(0);
        if more > 0 {
            first.kind = ErrorKind::AndMore(Box::new(first.kind), more);
        }
        Err(first)
    }

    /// `policy check`: the policy as [`Policy::load_or_profile`] reads
    /// it, without the entries that have errors, and those errors in the
    /// order of the text; `Err` where nothing can be read (the file, its
    /// TOML).
    pub fn load_all(path: &Path) -> Result<(Policy, Vec<PolicyError>), PolicyError> {
        let mut policy = Policy::load_or_profile_unchecked(path)?;
        let errors = std::mem::take(&mut policy.errors);
        Ok((policy, errors))
    }

    /// The errors of single entries found while resolving (see
    /// [`Policy::resolve_all`]) join those of loading.
    fn load_unchecked(path: &Path) -> Result<Policy, PolicyError> {
        let name = path.display().to_string();
        let text = read_text(path, &name)?;
        let mut policy = Policy { grants_workspace: true, ..Policy::default() };
        policy.add_file(&Source::new(name, &text, None))?;
        Ok(policy)
    }

    /// `--policy NAME`: the file at `path`, or, where no such file exists
    /// and it is a bare name, the built-in profile of that name as a policy
    /// that extends it (`extends = ["NAME"]`: the system surface, the
    /// tooling profile and the workspace, as a file of that one line
    /// would have). A path that names no file and no profile is the file's
    /// read error.
    pub fn load_or_profile(path: &Path) -> Result<Policy, PolicyError> {
        Policy::load_or_profile_unchecked(path)?.checked()
    }

    fn load_or_profile_unchecked(path: &Path) -> Result<Policy, PolicyError> {
        let name = path.to_str().filter(|n| !n.contains('/') && !path.exists());
        match name.filter(|n| is_profile(n)) {
            Some(n) => {
                let mut policy = Policy { grants_workspace: true, ..Policy::default() };
                let text = format!("extends = [\"{n}\"]\n");
                policy.add_file(&Source::new(format!("profile {n} (built in)"), &text, None))?;
                Ok(policy)
            }
            None if name.is_some() => Policy::load_unchecked(path).map_err(|mut e| {
                let names: Vec<&str> = PROFILES.iter().map(|(n, _, _)| *n).collect();
                e.kind = ErrorKind::Read(format!(
                    "no such file, and no built-in profile of that name (profiles: {})",
                    names.join(", ")
                ));
                e
            }),
            None => Policy::load_unchecked(path),
        }
    }

    /// The surface of flags alone (no `--policy`): the built-in system
    /// surface and the tooling profile, no workspace of its own.
    pub fn defaults() -> Policy {
        let mut policy = Policy { system: true, ..Policy::default() };
        policy.add_profile("tooling", 1).expect("the built-in tooling profile loads");
        policy
    }

    /// Leaves out the built-in system surface (`--no-system`).
    pub fn without_system(&mut self) {
        self.system = false;
    }

    /// Leaves out the entries of the built-in tooling profile (`--no-tooling`).
    pub fn without_tooling(&mut self) {
        self.entries.retain(|e| !matches!(&e.origin, Origin::Profile { name, .. } if name == "tooling"));
        self.net_allow.retain(|r| !r.origin.starts_with("profile tooling"));
        self.sources.retain(|(name, _)| name != "profile tooling");
    }

    fn add_profile(&mut self, name: &str, depth: usize) -> Result<(), PolicyError> {
        let Some((n, _, text)) = PROFILES.iter().find(|(n, _, _)| *n == name) else {
            return Err(PolicyError {
                file: name.into(),
                line: 0,
                column: 0,
                kind: ErrorKind::UnknownProfile(name.into()),
            });
        };
        let src = Source::new(format!("profile {n}"), text, Some(n));
        let raw = parse(&src)?;
        self.apply(&src, raw, depth)
    }

    /// Another policy file named in `extends` (a path ending in `.toml`,
    /// relative to the file that names it): its entries come first.
    fn add_extended(&mut self, src: &Source<'_>, name: &str, at: usize, depth: usize) -> Result<(), PolicyError> {
        let base = Path::new(&src.name).parent().unwrap_or(Path::new("."));
        let path = base.join(name);
        let canonical = std::fs::canonicalize(&path)
            .map_err(|e| src.error(at, ErrorKind::Invalid(format!("extends {name:?}: {}: {e}", path.display()))))?;
        let key = canonical.display().to_string();
        if self.sources.iter().any(|(n, _)| *n == key) {
            return Ok(());
        }
        let text = read_text(&canonical, &key)?;
        let extended = Source::new(key, &text, None);
        let raw = parse(&extended)?;
        if let Some(key) = raw.system.as_ref().or(raw.tooling.as_ref()) {
            return Err(extended.error(
                key.span().start,
                ErrorKind::Invalid("only the policy given to --policy may set `system` or `tooling`".into()),
            ));
        }
        self.apply(&extended, raw, depth)
    }

    /// A policy file: the defaults it does not opt out of come first, so
    /// that its own entries are added after them.
    fn add_file(&mut self, src: &Source<'_>) -> Result<(), PolicyError> {
        let raw = parse(src)?;
        let extends = |name: &str| raw.extends.iter().any(|e| e.get_ref() == name);
        let default_on = |key: &Option<Spanned<bool>>, name: &str| match key {
            Some(v) if !*v.get_ref() && extends(name) => Err(src.error(
                v.span().start,
                ErrorKind::Invalid(format!("`{name} = false` contradicts `extends = [\"{name}\"]`")),
            )),
            Some(v) => Ok(*v.get_ref()),
            None => Ok(true),
        };
        self.system = default_on(&raw.system, "system")?;
        if default_on(&raw.tooling, "tooling")? && !extends("tooling") {
            self.add_profile("tooling", 1)?;
        }
        self.apply(src, raw, 0)
    }

    fn apply(&mut self, src: &Source<'_>, raw: Raw, depth: usize) -> Result<(), PolicyError> {
        self.sources.push((src.name.clone(), src.text.to_string()));
        if let Some(key) = raw.system.as_ref().or(raw.tooling.as_ref()).filter(|_| src.profile.is_some()) {
            return Err(
                src.error(key.span().start, ErrorKind::Invalid("a profile cannot set `system` or `tooling`".into()))
            );
        }
        for ext in &raw.extends {
            let name = ext.get_ref().as_str();
            let already = self.sources.iter().any(|(n, _)| *n == format!("profile {name}"));
            match PROFILES.iter().find(|(n, _, _)| *n == name) {
                Some(("system", _, _)) => self.system = true,
                Some(_) if already => {}
                Some((n, _, _)) if depth < 4 => self.add_profile(n, depth + 1)?,
                None if name.ends_with(".toml") && src.profile.is_none() && depth < 4 => {
                    self.add_extended(src, name, ext.span().start, depth + 1)?
                }
                _ => return Err(src.error(ext.span().start, ErrorKind::UnknownProfile(name.to_string()))),
            }
        }
        if let Some(cwd) = &raw.cwd {
            if src.profile.is_some() {
                return Err(src.error(cwd.span().start, ErrorKind::Invalid("a profile cannot set `cwd`".into())));
            }
            self.cwd = Some((cwd.get_ref().clone(), src.origin(cwd.span().start)));
        }
        let lists = [
            (Field::SiblingReads, &raw.sibling_reads),
            (Field::WorkspaceMetadata, &raw.workspace_metadata),
            (Field::ToolingPaths, &raw.tooling_paths),
            (Field::AdditionalReads, &raw.additional_reads),
            (Field::AdditionalWrites, &raw.additional_writes),
            (Field::Deny, &raw.deny),
            (Field::DenyWrites, &raw.deny_writes),
            (Field::HomeSeed, &raw.home_seed),
        ];
        for (field, list) in lists {
            for item in list {
                if let Err(e) = self.entry(src, field, item, None) {
                    self.errors.push(e);
                }
            }
        }
        for cache in &raw.caches {
            let c = cache.get_ref();
            let bad = c.hide.iter().chain(&c.seed).find(|n| n.is_empty() || n.contains('/') || *n == "." || *n == "..");
            if let Some(name) = bad {
                self.errors.push(src.error(
                    cache.span().start,
                    ErrorKind::Invalid(format!("cache entry {name:?}: a name directly beneath the cache")),
                ));
                continue;
            }
            let item = Spanned::new(cache.span(), c.path.clone());
            let spec = CacheSpec { env: c.env.clone(), hide: c.hide.clone(), seed: c.seed.clone() };
            if let Err(e) = self.entry(src, Field::Caches, &item, Some(spec)) {
                self.errors.push(e);
            }
        }
        if let Some(writable) = &raw.writable {
            if writable.get_ref().is_empty() {
                self.errors.push(src.error(
                    writable.span().start,
                    ErrorKind::Invalid(
                        "`writable` is empty: leave it out to make the whole workspace writable, or list what may be written"
                            .into(),
                    ),
                ));
            }
            self.restricts_workspace = true;
            for item in writable.get_ref() {
                if let Err(e) = self.entry(src, Field::Writable, item, None) {
                    self.errors.push(e);
                }
            }
        }
        self.env.merge(&EnvRules { keep: raw.env.keep, drop: raw.env.drop, set: raw.env.set });
        if let Some(home) = raw.home {
            self.home = home;
        }
        if raw.mode.is_some() {
            self.mode = raw.mode;
        }
        for host in &raw.net.allow {
            let origin = src.origin(host.span().start).to_string();
            let rule = match crate::policy::hosts::HostRule::parse(host.get_ref(), &origin) {
                Ok(rule) => rule,
                Err(why) => {
                    self.errors.push(src.error(host.span().start, ErrorKind::NetAllow(why)));
                    continue;
                }
            };
            if !self.net_allow.iter().any(|r| r.host == rule.host && r.port == rule.port) {
                self.net_allow.push(rule);
            }
        }
        for c in &raw.net.credentials {
            let origin = src.origin(c.span().start).to_string();
            let r = c.get_ref();
            let parsed = crate::policy::hosts::CredentialRule::parse(
                (&r.host, &r.header, &r.value, &r.prefix),
                (&r.base_url, &r.placeholder),
                &origin,
            );
            match parsed {
                Ok(rule) => self.net_credentials.push(rule),
                Err(why) => self.errors.push(src.error(c.span().start, ErrorKind::Credential(why))),
            }
        }
        Ok(())
    }

    fn entry(
        &mut self,
        src: &Source<'_>,
        field: Field,
        item: &Spanned<String>,
        cache: Option<CacheSpec>,
    ) -> Result<(), PolicyError> {
        let text = item.get_ref();
        let at = item.span().start;
        let refuse = |error| src.error(at, ErrorKind::Glob { field: field.key(), entry: text.clone(), error });
        if text.is_empty() {
            return Err(refuse(GlobError::Malformed("empty entry")));
        }
        if text.starts_with('~') && !(text == "~" || text.starts_with("~/")) {
            return Err(refuse(GlobError::Escape("`~` is only allowed as `~/` at the start (no `~user`)")));
        }
        // `{a,b}` is shell syntax, not ours: taken as a literal name it
        // would protect nothing the author meant (`deny = ["{a,b}.txt"]`).
        if strip_templates(text).contains(['{', '}']) {
            return Err(refuse(GlobError::Malformed(
                "brace alternatives are not supported; write one entry per alternative",
            )));
        }
        if glob::is_glob(text) || field == Field::Writable {
            let allowed = matches!(field, Field::AdditionalWrites | Field::Writable | Field::Deny | Field::DenyWrites);
            if !allowed {
                return Err(refuse(GlobError::Malformed(
                    "patterns are allowed only in additional_writes, writable, deny and deny_writes",
                )));
            }
            let anchor = if field == Field::Writable { Anchor::Workspace } else { Anchor::Anywhere };
            // Templates are checked once expanded; the shape is checked on
            // the text with `${NAME}` taken as a plain component.
            glob::validate(&strip_templates(text), anchor).map_err(refuse)?;
        }
        let column = src.line_col(at).1;
        self.entries.push(Entry { field, text: text.clone(), origin: src.origin(at), column, cache });
        Ok(())
    }

    /// The surface this policy resolves to here: the built-in system surface
    /// (unless left out), then [`Policy::resolve`]. The caller adds its own
    /// flags, then calls [`Surface::prefer_user_grants`].
    pub fn surface(
        &self,
        vars: &HashMap<String, String>,
        cwd: &Path,
        effects: Effects,
    ) -> Result<(Surface, Resolution), PolicyError> {
        let mut surface = super::system::base(self.system, effects == Effects::Create);
        let resolved = self.resolve(vars, cwd, &mut surface, effects)?;
        Ok((surface, resolved))
    }

    /// Expands every entry against `vars` (the environment interpose was
    /// started with), checks the host, and adds the result to `surface`:
    /// reads first, then the workspace and writes, then carve-outs. `cwd` is
    /// where interpose runs; a relative `cwd` in the policy is taken from it.
    /// With [`Effects::None`] nothing on the host is changed (a directory
    /// `run` would make is reported as such).
    pub fn resolve(
        &self,
        vars: &HashMap<String, String>,
        cwd: &Path,
        surface: &mut Surface,
        effects: Effects,
    ) -> Result<Resolution, PolicyError> {
        let (resolution, mut errors) = self.resolve_all(vars, cwd, surface, effects)?;
        match errors.is_empty() {
            true => Ok(resolution),
            false => Err(errors.swap_remove(0)),
        }
    }

    /// As [`Policy::resolve`], with the entries that cannot be resolved
    /// here left out and their errors collected (`policy check` names
    /// them all); `Err` only where nothing can be resolved (the
    /// workspace).
    pub fn resolve_all(
        &self,
        vars: &HashMap<String, String>,
        cwd: &Path,
        surface: &mut Surface,
        effects: Effects,
    ) -> Result<(Resolution, Vec<PolicyError>), PolicyError> {
        let mut errors = Vec::new();
        let (workspace, origin) = match &self.cwd {
            Some((text, origin)) => {
                let expanded = expand(text, vars).map_err(|why| self.error_at(origin, ErrorKind::Expand(why)))?;
                (cwd.join(expanded), origin.clone())
            }
            None => (cwd.to_path_buf(), Origin::Workspace),
        };
        let workspace = std::fs::canonicalize(&workspace)
            .map_err(|e| self.error_at(&origin, ErrorKind::Invalid(format!("cwd {}: {e}", workspace.display()))))?;
        let mut outcomes = Vec::new();
        let ordered = self
            .entries
            .iter()
            .filter(|e| e.field.reads())
            .chain(self.entries.iter().filter(|e| matches!(e.field, Field::AdditionalWrites | Field::Caches)));
        for e in ordered {
            match self.apply_entry(e, vars, &workspace, surface, effects) {
                Ok(outcome) => outcomes.push((e.clone(), outcome)),
                Err(error) => errors.push(error),
            }
        }
        if self.grants_workspace {
            let mode = if self.restricts_workspace { Mode::Ro } else { Mode::Rw };
            surface.add(Rule { path: workspace.clone(), mode, origin });
        }
        for e in self.entries.iter().filter(|e| matches!(e.field, Field::Writable | Field::Deny | Field::DenyWrites)) {
            match self.apply_entry(e, vars, &workspace, surface, effects) {
                Ok(outcome) => outcomes.push((e.clone(), outcome)),
                Err(error) => errors.push(error),
            }
        }
        for e in self.entries.iter().filter(|e| e.field == Field::HomeSeed) {
            let outcome = match expand(&e.text, vars) {
                Ok(p) => EntryOutcome::Added(workspace.join(p)),
                Err(why) => EntryOutcome::Skipped(why.to_string()),
            };
            outcomes.push((e.clone(), outcome));
        }
        Ok((Resolution { cwd: workspace, outcomes }, errors))
    }

    fn error_at(&self, origin: &Origin, kind: ErrorKind) -> PolicyError {
        let (file, line) = match origin {
            Origin::File { file, line } => (file.clone(), *line),
            Origin::Profile { name, line } => (format!("profile {name}"), *line),
            other => (other.to_string(), 0),
        };
        PolicyError { file, line, column: 1, kind }
    }

    fn entry_error(&self, e: &Entry, error: GlobError) -> PolicyError {
        let mut err = self.error_at(&e.origin, ErrorKind::Glob { field: e.field.key(), entry: e.text.clone(), error });
        err.column = e.column;
        err
    }

    /// Expands one entry (an unset variable skips it) and adds it.
    fn apply_entry(
        &self,
        e: &Entry,
        vars: &HashMap<String, String>,
        workspace: &Path,
        surface: &mut Surface,
        effects: Effects,
    ) -> Result<EntryOutcome, PolicyError> {
        let expanded = match expand(&e.text, vars) {
            Ok(x) => x,
            Err(why) => return Ok(EntryOutcome::Skipped(why.to_string())),
        };
        match e.field {
            Field::Writable | Field::Deny | Field::DenyWrites => self.restrict(e, &expanded, workspace, surface),
            _ => self.grant(e, &expanded, workspace, surface, effects),
        }
    }

    fn grant(
        &self,
        e: &Entry,
        expanded: &str,
        workspace: &Path,
        surface: &mut Surface,
        effects: Effects,
    ) -> Result<EntryOutcome, PolicyError> {
        let path = workspace.join(expanded);
        if glob::is_glob(&e.text) {
            glob::validate(expanded, Anchor::Anywhere).map_err(|g| self.entry_error(e, g))?;
            surface.add_glob(&path, GlobEffect::Grant, e.origin.clone()).map_err(|g| self.entry_error(e, g))?;
            return Ok(EntryOutcome::Added(path));
        }
        let writes = matches!(e.field, Field::AdditionalWrites | Field::Caches);
        let mode = if writes { Mode::Rw } else { Mode::Ro };
        // A state directory (a trailing `/`) the program would create
        // itself: made by `run` (0700) so that the grant, and Landlock's,
        // have an object.
        let make = e.field == Field::AdditionalWrites && e.text.ends_with('/');
        let mut created = false;
        if make && std::fs::symlink_metadata(&path).is_err() {
            if effects == Effects::None {
                return Ok(EntryOutcome::WouldCreate(path));
            }
            use std::os::unix::fs::DirBuilderExt;
            if let Err(err) = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&path) {
                return Ok(EntryOutcome::Skipped(format!("cannot create {}: {err}", path.display())));
            }
            created = true;
        }
        let added = match &e.cache {
            Some(spec) => surface.add_cache(&path, spec, e.origin.clone()),
            None => surface.add_path(&path, mode, e.origin.clone()),
        };
        match added {
            Ok(()) if created => Ok(EntryOutcome::Created(path)),
            Ok(()) => Ok(EntryOutcome::Added(path)),
            // A file the program creates later (Claude Code's first
            // `~/.claude.json`): granted by name, in a directory that exists.
            Err(err) if err.kind() == std::io::ErrorKind::NotFound && writes && !make => {
                match path.parent().map(std::fs::canonicalize) {
                    Some(Ok(dir)) if dir.is_dir() => {
                        let name = path.file_name().expect("a path with a parent has a name");
                        surface.add(Rule { path: dir.join(name), mode, origin: e.origin.clone() });
                        Ok(EntryOutcome::Added(path))
                    }
                    _ => {
                        Ok(EntryOutcome::Skipped(format!("{} does not exist, nor does its directory", path.display())))
                    }
                }
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                Ok(EntryOutcome::Skipped(format!("{} does not exist", path.display())))
            }
            Err(err) => Ok(EntryOutcome::Skipped(format!("{}: {err}", path.display()))),
        }
    }

    fn restrict(
        &self,
        e: &Entry,
        expanded: &str,
        workspace: &Path,
        surface: &mut Surface,
    ) -> Result<EntryOutcome, PolicyError> {
        let anchor = if e.field == Field::Writable { Anchor::Workspace } else { Anchor::Anywhere };
        if glob::is_glob(&e.text) || e.field == Field::Writable {
            glob::validate(expanded, anchor).map_err(|g| self.entry_error(e, g))?;
        }
        let path = workspace.join(expanded);
        let add = |surface: &mut Surface, p: &Path, effect| {
            surface.add_glob(p, effect, e.origin.clone()).map_err(|g| self.entry_error(e, g))
        };
        match e.field {
            Field::Writable => add(surface, &path, GlobEffect::Grant)?,
            Field::Deny if glob::is_glob(&e.text) => add(surface, &path, GlobEffect::Deny)?,
            Field::Deny => {
                // A carve-out holds whether or not the path exists yet.
                let canonical = super::canonical_lenient(&path).map_err(|err| {
                    self.error_at(&e.origin, ErrorKind::Invalid(format!("deny {}: {err}", path.display())))
                })?;
                surface.add(Rule { path: canonical, mode: Mode::Deny, origin: e.origin.clone() });
            }
            Field::DenyWrites if glob::is_glob(&e.text) => add(surface, &path, GlobEffect::DenyWrites)?,
            Field::DenyWrites => {
                // Protects what is there when the session starts: where the
                // directory that would hold the entry does not exist yet, the
                // tree is one the command makes (`git init`, `git clone`
                // creating `.git`), and its contents are its own.
                if let Some(dir) = path.parent().filter(|d| !d.is_dir()) {
                    return Ok(EntryOutcome::Skipped(format!(
                        "{} does not exist: a tree the command creates is its own",
                        dir.display()
                    )));
                }
                // The path itself and everything beneath it, existing or not.
                add(surface, &path, GlobEffect::DenyWrites)?;
                add(surface, &path.join("**"), GlobEffect::DenyWrites)?;
            }
            _ => unreachable!("restrict is called for writable, deny and deny_writes"),
        }
        Ok(EntryOutcome::Added(path))
    }
}

/// `${NAME}` replaced by `NAME`, so that the braces of a template are not
/// taken for glob alternatives.
fn strip_templates(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        match rest[at..].find('}') {
            Some(end) => {
                out.push_str(&rest[at + 2..at + end]);
                rest = &rest[at + end + 1..];
            }
            None => {
                out.push_str(&rest[at..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// Why [`expand`] could not expand an entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpandError {
    /// The variable is not set (`~` is `$HOME`).
    #[error("${0} is unset")]
    Unset(String),
    /// The variable is set to nothing.
    #[error("${0} is empty")]
    Empty(String),
    /// `${` without its `}`, in this entry.
    #[error("unclosed `${{` in {0:?}")]
    Unclosed(String),
    /// `$` followed by no name (or a digit), in this entry.
    #[error("`$` without a variable name in {0:?}")]
    NoName(String),
}

/// Expands a leading `~` and every `$NAME` / `${NAME}` from `vars`. An unset
/// or empty variable is an error that says which, so that the entry is
/// dropped, never turned into a literal path such as `/pkg/mod`.
/// `${NAME:-DEFAULT}` is `DEFAULT` where `NAME` is unset or empty, as in
/// the shell; `DEFAULT` is literal text, or `~` (`$HOME`) at its start
/// (`${CLAUDE_CONFIG_DIR:-~}/.claude.json`: where the agent keeps that
/// file, whichever way it was started).
pub fn expand(text: &str, vars: &HashMap<String, String>) -> Result<String, ExpandError> {
    let lookup = |name: &str| match vars.get(name) {
        Some(v) if !v.is_empty() => Ok(v.clone()),
        Some(_) => Err(ExpandError::Empty(name.into())),
        None => Err(ExpandError::Unset(name.into())),
    };
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    if let Some(after) = rest.strip_prefix('~') {
        out.push_str(&lookup("HOME")?);
        rest = after;
    }
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, next) = if let Some(braced) = after.strip_prefix('{') {
            let end = braced.find('}').ok_or_else(|| ExpandError::Unclosed(text.into()))?;
            (&braced[..end], &braced[end + 1..])
        } else {
            let end = after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(after.len());
            (&after[..end], &after[end..])
        };
        let (name, default) = match name.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (name, None),
        };
        let bad = |c: char| !(c.is_ascii_alphanumeric() || c == '_');
        if name.is_empty()
            || name.starts_with(|c: char| c.is_ascii_digit())
            || (default.is_some() && name.contains(bad))
        {
            return Err(ExpandError::NoName(text.into()));
        }
        match (lookup(name), default) {
            (Ok(value), _) => out.push_str(&value),
            (Err(_), Some(default)) if default.contains('$') => return Err(ExpandError::NoName(text.into())),
            (Err(_), Some(default)) => match default.strip_prefix('~') {
                Some(after) if after.is_empty() || after.starts_with('/') => {
                    out.push_str(&lookup("HOME")?);
                    out.push_str(after);
                }
                _ => out.push_str(default),
            },
            (Err(e), None) => return Err(e),
        }
        rest = next;
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn parse(text: &str) -> Result<Policy, PolicyError> {
        let mut p = Policy::default();
        p.add_file(&Source::new("agent.toml".into(), text, None))?;
        p.checked()
    }

    #[test]
    fn a_default_stands_in_for_an_unset_or_empty_variable() {
        let v = vars(&[("HOME", "/home/a"), ("CCD", "/cfg"), ("EMPTY", "")]);
        assert_eq!(expand("${CCD:-~}/.claude.json", &v).unwrap(), "/cfg/.claude.json");
        assert_eq!(expand("${UNSET:-~}/.claude.json", &v).unwrap(), "/home/a/.claude.json");
        assert_eq!(expand("${EMPTY:-~/x}/y", &v).unwrap(), "/home/a/x/y");
        assert_eq!(expand("${UNSET:-/opt/tool}/bin", &v).unwrap(), "/opt/tool/bin");
        // `~` means HOME only at the start of the default, as in the shell.
        assert_eq!(expand("${UNSET:-a~}/b", &v).unwrap(), "a~/b");
        // No nesting: a variable in a default is refused, not read literally.
        assert!(matches!(expand("${UNSET:-$HOME}", &v), Err(ExpandError::NoName(_))));
        assert!(matches!(expand("${BAD-NAME:-x}", &v), Err(ExpandError::NoName(_))));
        let no_home = vars(&[]);
        assert_eq!(expand("${UNSET:-~}/x", &no_home), Err(ExpandError::Unset("HOME".into())));
    }

    #[test]
    fn templates_expand_and_unset_variables_drop_the_entry() {
        let v = vars(&[("HOME", "/home/a"), ("GOPATH", "/go"), ("EMPTY", "")]);
        assert_eq!(expand("$HOME/.gitconfig", &v).unwrap(), "/home/a/.gitconfig");
        assert_eq!(expand("${GOPATH}/pkg/mod", &v).unwrap(), "/go/pkg/mod");
        assert_eq!(expand("~/.cargo", &v).unwrap(), "/home/a/.cargo");
        assert_eq!(expand("$EMPTY/x", &v).unwrap_err(), ExpandError::Empty("EMPTY".into()));
        assert_eq!(expand("$EMPTY/x", &v).unwrap_err().to_string(), "$EMPTY is empty");
        assert_eq!(expand("a$/b", &v).unwrap_err(), ExpandError::NoName("a$/b".into()));
        assert_eq!(expand("a$/b", &v).unwrap_err().to_string(), "`$` without a variable name in \"a$/b\"");
        assert_eq!(expand("${HOME", &v).unwrap_err().to_string(), "unclosed `${` in \"${HOME\"");
    }

    #[test]
    fn an_unknown_variable_is_named() {
        let v = vars(&[("HOME", "/home/a")]);
        let e = expand("${GOROOT}/src", &v).unwrap_err();
        assert_eq!(e, ExpandError::Unset("GOROOT".into()));
        assert_eq!(e.to_string(), "$GOROOT is unset");
        assert_eq!(expand("~/x", &HashMap::new()).unwrap_err(), ExpandError::Unset("HOME".into()));
        // As a policy's workspace it fails the policy, and keeps the error.
        let p = parse("cwd = \"$GOROOT/w\"\n").unwrap();
        let e = p.resolve_all(&v, Path::new("/"), &mut Surface::new(), Effects::None).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Expand(ExpandError::Unset("GOROOT".into())));
        assert_eq!(e.to_string(), "agent.toml:1:1: $GOROOT is unset");
    }

    #[test]
    fn a_policy_that_is_not_utf8_is_pointed_at() {
        let dir = tempfile::tempdir().unwrap();
        let (top, other) = (dir.path().join("top.toml"), dir.path().join("other.toml"));
        std::fs::write(&top, b"cwd = \".\"\ndeny = [\"a\xffb\"]\n").unwrap();
        let e = Policy::load(&top).unwrap_err();
        assert_eq!((e.line, e.column), (2, 11), "{e}");
        assert!(
            e.to_string().ends_with("top.toml:2:11: cannot read the policy: not UTF-8 text (a policy is a TOML file)"),
            "{e}"
        );
        std::fs::write(&top, b"extends = [\"other.toml\"]\n").unwrap();
        std::fs::write(&other, b"\n\n  \xfe").unwrap();
        let e = Policy::load(&top).unwrap_err();
        assert!(e.file.ends_with("other.toml") && (e.line, e.column) == (3, 3), "{e}");
        let e = Policy::load(&dir.path().join("missing.toml")).unwrap_err();
        assert!(e.to_string().contains("missing.toml: cannot read"), "{e}");
    }

    #[test]
    fn lines_and_columns_are_found_in_any_order() {
        let text = "ab\ncé d\n\nxyz";
        let lines = Lines::new(text);
        let naive = |offset: usize| {
            let before = &text[..offset];
            let line = before.matches('\n').count() + 1;
            (line, before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1)
        };
        let offsets: Vec<usize> = (0..=text.len()).filter(|&o| text.is_char_boundary(o)).collect();
        for &o in offsets.iter().chain(offsets.iter().rev()).chain([6, 1, 9, 3].iter()) {
            assert_eq!(lines.line_col(text, o), naive(o), "offset {o}");
        }
    }

    #[test]
    fn a_typo_is_reported_with_line_and_column() {
        let e = parse("cwd = \".\"\naditional_reads = [\"/x\"]\n").unwrap_err();
        assert_eq!((e.file.as_str(), e.line, e.column), ("agent.toml", 2, 1));
        assert!(matches!(&e.kind, ErrorKind::Syntax(m) if m.contains("unknown field `aditional_reads`")), "{e}");
        let e = parse("deny = \".env\"\n").unwrap_err();
        assert_eq!((e.line, e.column), (1, 8));
        assert!(e.to_string().contains("agent.toml:1:8: invalid type: string"), "{e}");
    }

    #[test]
    fn escaping_and_malformed_patterns_are_rejected_at_load() {
        let e = parse("writable = [\"src/**\", \"../other/**\"]").unwrap_err();
        assert_eq!((e.line, e.column), (1, 23));
        assert!(matches!(e.kind, ErrorKind::Glob { field: "writable", error: GlobError::Escape(_), .. }), "{e}");
        let e = parse("writable = [\"/etc/**\"]").unwrap_err();
        assert!(matches!(e.kind, ErrorKind::Glob { error: GlobError::Escape(_), .. }), "{e}");
        let e = parse("additional_writes = [\"~root/.ssh/*\"]").unwrap_err();
        assert!(matches!(e.kind, ErrorKind::Glob { error: GlobError::Escape(_), .. }), "{e}");
        let e = parse("writable = [\"src/{a,b}/**\"]").unwrap_err();
        assert!(matches!(e.kind, ErrorKind::Glob { error: GlobError::Malformed(_), .. }), "{e}");
        // Braces without a wildcard are no literal name either: refused.
        for field in ["deny", "deny_writes", "additional_reads", "additional_writes"] {
            let e = parse(&format!("{field} = [\"{{a,b}}.txt\"]")).unwrap_err();
            assert!(matches!(e.kind, ErrorKind::Glob { error: GlobError::Malformed(_), .. }), "{field}: {e}");
        }
        let e = parse("tooling_paths = [\"~/.cargo/*\"]").unwrap_err();
        assert!(matches!(e.kind, ErrorKind::Glob { error: GlobError::Malformed(_), .. }), "{e}");
        let e = parse("writable = []").unwrap_err();
        assert!(matches!(e.kind, ErrorKind::Invalid(_)), "{e}");
        assert!(parse("additional_writes = [\"${HOME}/.claude.json.*\"]").is_ok());
    }

    #[test]
    fn extends_merges_profiles_and_rejects_unknown_ones() {
        let p = parse("extends = [\"system\", \"claude\"]\n[env]\nkeep = [\"ANTHROPIC_API_KEY\"]\n").unwrap();
        assert!(p.system);
        assert!(p
            .entries
            .iter()
            .any(|e| e.text == "~/.claude/" && matches!(&e.origin, Origin::Profile { name, .. } if name == "claude")));
        assert!(p.env.keep.contains(&"ANTHROPIC_API_KEY".to_string()));
        let e = parse("\nextends = [\"sytem\"]").unwrap_err();
        assert_eq!((e.line, e.column), (2, 12));
        assert!(matches!(e.kind, ErrorKind::UnknownProfile(_)));
    }

    #[test]
    fn every_built_in_profile_loads() {
        for (name, _, _) in PROFILES {
            // As `--policy NAME` loads it: a policy extending the profile,
            // no error in any entry.
            let policy = Policy::load_or_profile(Path::new(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(policy.sources.iter().any(|(n, _)| n.contains(name)) || *name == "system", "{name}");
        }
    }
}
