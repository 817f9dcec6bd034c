//! The enforcement layers besides the OS one, each rendered from the one
//! resolved [`Surface`]: the agent CLI's pre-tool-use hook, a prompt
//! preamble, and container bind mounts. None of them is a boundary on its
//! own (a model can ignore a preamble, a hook runs in the agent's process);
//! they make the boundary visible early and cheaply, and they agree with the
//! supervisor because they read the same surface.

use crate::policy::{Access, GlobEffect, Mode, NoProcesses, Origin, Rule, Surface};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// The path the kernel would reach from `cwd`: symlinks of the existing
/// part followed, the missing rest appended.
pub fn resolve_like_kernel(cwd: &Path, path: &Path) -> PathBuf {
    let joined = cwd.join(path);
    crate::policy::canonical_lenient(&joined).unwrap_or(joined)
}

/// Whether the surface allows `access` to `path` (relative to `cwd`), and
/// the rule that decided, in words.
pub fn check(surface: &Surface, cwd: &Path, path: &Path, access: Access) -> (bool, PathBuf, String) {
    use std::os::unix::ffi::OsStrExt;
    let resolved = resolve_like_kernel(cwd, path);
    let access = if access == Access::Write && !resolved.exists() { Access::Create } else { access };
    let v = surface.decide(resolved.as_os_str().as_bytes(), access, &NoProcesses);
    (v.allowed, resolved, surface.describe(v.reason))
}

/// Which agent CLI `agent-config` writes settings for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ConfigAgent {
    /// Claude Code: `CLAUDE_CONFIG_DIR` with permissions and the hook.
    Claude,
    /// Gemini CLI: `GEMINI_CLI_SYSTEM_SETTINGS_PATH` with directories and
    /// the hook.
    Gemini,
    /// Codex CLI: `CODEX_HOME` whose `config.toml` turns Codex's own
    /// sandbox off (it needs namespaces interpose refuses; interpose is the
    /// sandbox).
    Codex,
}

/// Which agent CLI's hook protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Agent {
    /// Claude Code's `PreToolUse` hook.
    Claude,
    /// Gemini CLI's `BeforeTool` hook.
    Gemini,
}

/// What a tool call's argument reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Reach {
    /// One path, with the access the tool needs.
    Path(String, Access),
    /// The files under `root` whose path matches `pattern` (relative to
    /// `root`, or absolute): what a search or a glob reads.
    Walk { root: String, pattern: String },
}

/// Argument names that hold a path in some agent's tools: an unknown tool
/// that carries one is refused, since the hook cannot say what it touches.
const PATH_KEYS: &[&str] =
    &["file_path", "absolute_path", "notebook_path", "path", "paths", "dir_path", "directory", "include", "pattern"];

/// A tool the hook does not know, with an argument that may name files
/// ([`tool_reach`]): refused, since the hook cannot say what it touches.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("interpose: {tool} is not a tool the hook knows, and its `{key}` may name files; refused")]
struct UnknownTool {
    tool: String,
    /// The argument that may name files.
    key: String,
}

/// What the arguments of a tool call reach; `None` for a tool the hook
/// does not judge (a shell command: the OS layer decides what it does), an
/// error naming the argument for an unknown tool that carries a path.
fn tool_reach(agent: Agent, tool: &str, input: &serde_json::Value) -> Result<Option<Vec<Reach>>, UnknownTool> {
    let s = |k: &str| input.get(k).and_then(serde_json::Value::as_str).map(str::to_string);
    let first = |keys: &[&str]| keys.iter().find_map(|k| s(k));
    let path = |keys: &[&str], access| first(keys).map(|p| vec![Reach::Path(p, access)]).unwrap_or_default();
    let root = |keys: &[&str]| first(keys).unwrap_or_else(|| ".".into());
    // A search's file filter: `*.rs` (no `/`) matches the name at any depth,
    // as ripgrep's --glob does; none means every file.
    let filter = |g: Option<String>| match g {
        Some(g) if g.contains('/') => g,
        Some(g) => format!("**/{g}"),
        None => "**/*".into(),
    };
    let walk = |root: String, pattern: String| vec![Reach::Walk { root, pattern }];
    let strings = |k: &str| -> Vec<String> {
        match input.get(k) {
            Some(serde_json::Value::String(p)) => vec![p.clone()],
            Some(serde_json::Value::Array(a)) => a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect(),
            _ => Vec::new(),
        }
    };
    Ok(Some(match (agent, tool) {
        (_, "Bash" | "run_shell_command") => return Ok(None),
        (Agent::Claude, "Read") => path(&["file_path"], Access::Read),
        (Agent::Claude, "Write" | "Edit" | "MultiEdit") => path(&["file_path"], Access::Write),
        (Agent::Claude, "NotebookEdit") => path(&["notebook_path"], Access::Write),
        (Agent::Claude, "LS") => vec![Reach::Path(root(&["path"]), Access::Read)],
        (Agent::Claude, "Glob") => first(&["pattern"]).map(|p| walk(root(&["path"]), p)).unwrap_or_default(),
        (Agent::Claude, "Grep") => walk(root(&["path"]), filter(s("glob"))),
        (Agent::Gemini, "read_file") => path(&["file_path", "absolute_path", "path"], Access::Read),
        (Agent::Gemini, "write_file" | "replace") => path(&["file_path", "absolute_path"], Access::Write),
        (Agent::Gemini, "list_directory") => vec![Reach::Path(root(&["dir_path", "path"]), Access::Read)],
        (Agent::Gemini, "glob") => {
            first(&["pattern"]).map(|p| walk(root(&["dir_path", "path"]), p)).unwrap_or_default()
        }
        (Agent::Gemini, "grep_search" | "search_file_content") => {
            walk(root(&["dir_path", "path"]), filter(s("include")))
        }
        (Agent::Gemini, "read_many_files") => strings("paths")
            .into_iter()
            .chain(strings("include"))
            .map(|p| Reach::Walk { root: ".".into(), pattern: p })
            .collect(),
        _ => {
            let keys = input.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>()).unwrap_or_default();
            let carries =
                keys.iter().find(|k| PATH_KEYS.contains(&k.as_str()) || k.ends_with("_path") || k.ends_with("_dir"));
            return match carries {
                Some(k) => Err(UnknownTool { tool: tool.into(), key: k.clone() }),
                None => Ok(None),
            };
        }
    }))
}

/// One character position of a glob component.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Token {
    /// `*`: any run of characters.
    Star,
    /// `?` or a character class (taken as any character: the check may
    /// say "overlaps" where the class would not, never the reverse).
    One,
    /// A literal character.
    Lit(char),
}

fn tokens(component: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut chars = component.chars();
    while let Some(c) = chars.next() {
        out.push(match c {
            '*' => Token::Star,
            '?' => Token::One,
            '[' => {
                // Up to the closing `]` (a `]` first is a member).
                let mut first = true;
                for c in chars.by_ref() {
                    if c == ']' && !first {
                        break;
                    }
                    first = false;
                }
                Token::One
            }
            '\\' => Token::Lit(chars.next().unwrap_or('\\')),
            c => Token::Lit(c),
        });
    }
    out
}

/// Whether two sequences of pattern items can match one common sequence:
/// a `wild` item matches any run of items (`*` in a name, `**` in a path),
/// two other items must `meet` (match one common item). A search over pairs
/// of positions, each visited once.
fn sequences_intersect<T>(a: &[T], b: &[T], wild: impl Fn(&T) -> bool, meet: impl Fn(&T, &T) -> bool) -> bool {
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![(0, 0)];
    while let Some((i, j)) = stack.pop() {
        if !seen.insert((i, j)) {
            continue;
        }
        if i == a.len() && j == b.len() {
            return true;
        }
        let (x, y) = (a.get(i), b.get(j));
        // A wild item matches nothing more (skip it), or one more item of
        // the other side (stay on it).
        if x.is_some_and(&wild) {
            stack.push((i + 1, j));
            if y.is_some() {
                stack.push((i, j + 1));
            }
        }
        if y.is_some_and(&wild) {
            stack.push((i, j + 1));
            if x.is_some() {
                stack.push((i + 1, j));
            }
        }
        if let (Some(x), Some(y)) = (x, y) {
            if !wild(x) && !wild(y) && meet(x, y) {
                stack.push((i + 1, j + 1));
            }
        }
    }
    false
}

/// Whether some name matches both component patterns.
fn names_intersect(a: &[Token], b: &[Token]) -> bool {
    sequences_intersect(a, b, |t| *t == Token::Star, |x, y| !matches!((x, y), (Token::Lit(p), Token::Lit(q)) if p != q))
}

/// Whether some path matches both absolute patterns (components; `**` is
/// any number of components, a literal path is a pattern without
/// wildcards).
fn paths_intersect(a: &[Vec<Token>], b: &[Vec<Token>]) -> bool {
    let deep = |c: &Vec<Token>| c.len() == 2 && c.iter().all(|t| *t == Token::Star);
    sequences_intersect(a, b, deep, |x, y| names_intersect(x, y))
}

fn pattern_tokens(path: &Path) -> Vec<Vec<Token>> {
    path.iter().skip(1).map(|c| tokens(&c.to_string_lossy())).collect()
}

/// Whether a walk matching `pattern` may reach `carved` (a literal path:
/// the entry itself, or anything in it when it is a directory).
fn may_reach(pattern: &[Vec<Token>], carved: &Path) -> bool {
    let tokens = pattern_tokens(carved);
    let inside = [tokens.clone(), vec![vec![Token::Star, Token::Star], vec![Token::Star]]].concat();
    paths_intersect(pattern, &tokens) || (carved.is_dir() && paths_intersect(pattern, &inside))
}

/// The most entries a hook walks to look for carved-out files a search
/// would reach; a bigger tree is refused (narrow the search).
const WALK_BUDGET: usize = 200_000;

/// Whether this process can read `path`: a carve-out the kernel refuses
/// here (the hook runs inside the agent's sandbox, whose OS layer refuses
/// it), or that does not exist, is out of a walk's reach. `access`, not
/// `open`: it reads nothing.
fn readable_here(path: &Path) -> bool {
    nix::unistd::access(path, nix::unistd::AccessFlags::R_OK).is_ok()
}

/// Why the hook refuses a search or a glob ([`check_walk`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum WalkRefusal {
    /// The pattern climbs out of where it starts.
    #[error("the pattern {0:?} climbs with `..`")]
    Climbs(String),
    /// The surface refuses the file or directory the walk starts from
    /// (`rule` says which entry decided).
    #[error("{} is refused ({rule})", .path.display())]
    StartRefused { path: PathBuf, rule: String },
    /// The pattern is not one the hook accepts.
    #[error("the pattern {pattern:?}: {source}")]
    Pattern { pattern: String, source: crate::policy::glob::GlobError },
    /// A deny pattern of the surface does not compile.
    #[error("a deny pattern: {0}")]
    DenyPattern(crate::policy::glob::GlobError),
    /// The walk may reach a carved-out entry (`rule` describes it).
    #[error("it may reach {}, which is carved out ({rule}); search a narrower path or pattern", .path.display())]
    MayReach { path: PathBuf, rule: String },
    /// Too many entries under `root` to look for carved-out files.
    #[error("{} holds more than {WALK_BUDGET} entries to check against carve-outs; search a narrower path", .0.display())]
    TooLarge(PathBuf),
    /// The walk would reach a file a deny pattern carves out.
    #[error("it would reach {}, which is carved out ({}); search a narrower path or pattern", .path.display(), .pattern.display())]
    WouldReach { path: PathBuf, pattern: PathBuf },
}

/// Checks a walk: no `..` in the pattern, the directory it starts from
/// readable, and no carved-out file it would reach that can be read from
/// here (a carve-out the OS layer enforces, or one that does not exist,
/// leaves the search alone). `Err` is the refusal.
fn check_walk(surface: &Surface, cwd: &Path, root: &str, pattern: &str) -> Result<(), WalkRefusal> {
    use crate::policy::glob;
    if Path::new(pattern).components().any(|c| c == std::path::Component::ParentDir) {
        return Err(WalkRefusal::Climbs(pattern.into()));
    }
    let root = resolve_like_kernel(cwd, Path::new(root));
    let absolute = root.join(pattern);
    if !glob::is_glob(pattern) {
        // A literal name: that file, or everything under that directory.
        let (allowed, resolved, rule) = check(surface, cwd, &absolute, Access::Read);
        if !allowed {
            return Err(WalkRefusal::StartRefused { path: resolved, rule });
        }
        return if resolved.is_dir() { check_walk(surface, cwd, &resolved.to_string_lossy(), "**/*") } else { Ok(()) };
    }
    let bad_pattern = |source| WalkRefusal::Pattern { pattern: pattern.into(), source };
    glob::validate(pattern, glob::Anchor::Anywhere).map_err(bad_pattern)?;
    let start = glob::static_prefix(&absolute.join("x"));
    let (allowed, resolved, rule) = check(surface, cwd, &start, Access::Read);
    if !allowed {
        return Err(WalkRefusal::StartRefused { path: resolved, rule });
    }
    let absolute = resolved.join(absolute.strip_prefix(&start).unwrap_or(Path::new("")));
    let mine = pattern_tokens(&absolute);
    for (i, r) in surface.effective_rules() {
        if r.mode == Mode::Deny && may_reach(&mine, &r.path) && readable_here(&r.path) {
            let rule = surface.describe(crate::policy::Reason::Rule(i));
            return Err(WalkRefusal::MayReach { path: r.path.clone(), rule });
        }
    }
    // Deny patterns the walk's pattern overlaps: look for files both match.
    let denied: Vec<(&crate::policy::GlobRule, globset::GlobMatcher)> = surface
        .globs()
        .iter()
        .filter(|g| g.effect == GlobEffect::Deny && paths_intersect(&mine, &pattern_tokens(&g.pattern)))
        .map(|g| glob::compile(&g.pattern).map(|m| (g, m)))
        .collect::<Result<_, _>>()
        .map_err(WalkRefusal::DenyPattern)?;
    if denied.is_empty() {
        return Ok(());
    }
    let matcher = glob::compile(&absolute).map_err(bad_pattern)?;
    let mut budget = WALK_BUDGET;
    let mut dirs = vec![resolved.clone()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            budget = budget.checked_sub(1).ok_or_else(|| WalkRefusal::TooLarge(resolved.clone()))?;
            let path = entry.path();
            // Searches do not follow symlinks to directories.
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                dirs.push(path.clone());
            }
            if let Some((g, _)) = denied.iter().find(|(_, m)| m.is_match(&path)) {
                if matcher.is_match(&path) && readable_here(&path) {
                    return Err(WalkRefusal::WouldReach { path, pattern: g.pattern.clone() });
                }
            }
        }
    }
    Ok(())
}

/// What the hook answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookAnswer {
    /// Let the agent's own permission flow go on.
    Allow,
    /// Refuse, with this reason (shown to the model).
    Deny(String),
}

/// Decides one hook invocation from its JSON input. Malformed input is
/// refused, never allowed.
pub fn hook_decision(agent: Agent, surface: &Surface, input: &str) -> HookAnswer {
    let v: serde_json::Value = match serde_json::from_str(input) {
        Ok(v) => v,
        Err(e) => return HookAnswer::Deny(format!("interpose: malformed hook input ({e}); refused")),
    };
    let (Some(tool), Some(cwd)) = (v["tool_name"].as_str(), v["cwd"].as_str()) else {
        return HookAnswer::Deny("interpose: hook input without tool_name or cwd; refused".into());
    };
    let reach = match tool_reach(agent, tool, &v["tool_input"]) {
        Ok(Some(reach)) => reach,
        Ok(None) => return HookAnswer::Allow,
        Err(why) => return HookAnswer::Deny(why.to_string()),
    };
    if reach.is_empty() {
        return HookAnswer::Deny(format!("interpose: {tool} without a path argument; refused"));
    }
    for r in reach {
        match r {
            Reach::Path(path, access) => {
                let (allowed, resolved, rule) = check(surface, Path::new(cwd), Path::new(&path), access);
                if !allowed {
                    let what = if access == Access::Read { "read" } else { "write" };
                    return HookAnswer::Deny(format!(
                        "interpose: {tool} may not {what} {}; the sandbox surface refuses it ({rule})",
                        resolved.display()
                    ));
                }
            }
            Reach::Walk { root, pattern } => {
                if let Err(why) = check_walk(surface, Path::new(cwd), &root, &pattern) {
                    return HookAnswer::Deny(format!("interpose: {tool} refused: {why}"));
                }
            }
        }
    }
    HookAnswer::Allow
}

/// The hook's stdout for `answer`, in `agent`'s protocol (empty for Claude
/// Code's allow, which defers to its normal permission flow).
pub fn hook_output(agent: Agent, answer: &HookAnswer) -> String {
    match (agent, answer) {
        (Agent::Claude, HookAnswer::Allow) => String::new(),
        (Agent::Claude, HookAnswer::Deny(reason)) => serde_json::json!({
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        })
        .to_string(),
        (Agent::Gemini, HookAnswer::Allow) => "{}".into(),
        (Agent::Gemini, HookAnswer::Deny(reason)) => {
            serde_json::json!({ "decision": "deny", "reason": reason }).to_string()
        }
    }
}

/// The surface entries a person (or a model) needs to know about: the ones
/// that did not come from the built-in system surface or the run itself,
/// sorted by path.
pub fn user_rules(surface: &Surface) -> Vec<&Rule> {
    let mut rules: Vec<&Rule> = surface
        .effective_rules()
        .map(|(_, r)| r)
        .filter(|r| !matches!(r.origin, Origin::System(_)) && !r.origin.is_session())
        .collect();
    rules.sort_by(|a, b| a.path.cmp(&b.path));
    rules
}

/// A short, exact description of the surface for an agent's system prompt.
/// Deterministic for a given surface.
pub fn preamble(surface: &Surface) -> String {
    let rules = user_rules(surface);
    let list = |mode: Mode| -> String {
        rules.iter().filter(|r| r.mode == mode).map(|r| format!("- {}\n", r.path.display())).collect()
    };
    let mut globs: Vec<(String, GlobEffect)> =
        surface.globs().iter().map(|g| (g.pattern.display().to_string(), g.effect)).collect();
    globs.sort_by(|a, b| a.0.cmp(&b.0));
    let glob_list = |effect: GlobEffect| -> String {
        globs.iter().filter(|(_, e)| *e == effect).map(|(p, _)| format!("- {p}\n")).collect()
    };
    let system = surface.effective_rules().any(|(_, r)| matches!(r.origin, Origin::System(_)));
    let mut out = String::from(
        "You are running inside an interpose sandbox. The operating system refuses every file access \
         outside the paths below; do not try to work around a refusal, ask the user instead.\n",
    );
    let mut section = |title: &str, body: String| {
        if !body.is_empty() {
            out.push_str(&format!("\n{title}\n{body}"));
        }
    };
    section("You may read and write beneath:", list(Mode::Rw));
    section("You may also write files matching:", glob_list(GlobEffect::Grant));
    section("You may read, but not change, beneath:", list(Mode::Ro));
    section("Never accessible, even inside the paths above:", list(Mode::Deny) + &glob_list(GlobEffect::Deny));
    section("Readable but never writable:", glob_list(GlobEffect::DenyWrites));
    out.push_str(if system {
        "\nSystem programs and libraries (/usr, /etc without its secrets, /dev/null, ...) are readable. \
         Everything else is refused.\n"
    } else {
        "\nEverything else is refused.\n"
    });
    out
}

/// What the preamble says about the network (the default, the proxy): the
/// hosts reachable, and that nothing else is.
pub fn network_preamble(allow: &[crate::policy::hosts::HostRule]) -> String {
    let mut out = String::from(
        "\nThe network is reached only through a proxy (HTTPS_PROXY, HTTP_PROXY and ALL_PROXY are set); \
         it connects only to the hosts below and refuses every other one, naming it. DNS does not work \
         inside the sandbox; direct connections are refused.\n",
    );
    if allow.is_empty() {
        out.push_str("No host is allowed.\n");
    }
    for rule in allow {
        out.push_str(&format!("- {rule}\n"));
    }
    out
}

/// One bind mount.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Mount {
    /// The host path.
    pub source: PathBuf,
    /// Where it appears in the container.
    pub destination: PathBuf,
    /// Read-write or read-only.
    pub writable: bool,
}

/// How operator mounts compose with the surface's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SurfaceMode {
    /// Operator mounts are added; on the same destination the surface entry
    /// wins (an operator cannot demote `rw` to `ro`, or widen it).
    Additive,
    /// Operator mounts are dropped; only the surface ships.
    Exclusive,
}

/// Output formats of `interpose mounts`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MountFormat {
    /// `docker run` arguments, one per line.
    Docker,
    /// `podman run` arguments, one per line.
    Podman,
    /// `bwrap` arguments, one mount per line.
    Bwrap,
    /// The `mounts` array of an OCI runtime spec.
    OciJson,
}

/// The surface as bind mounts: writable entries `rw`, the readable rest
/// `ro`, source equal to destination, sorted by destination. Entries whose
/// source does not exist are returned as skipped; carve-outs and globs,
/// which bind mounts cannot express, are returned as not expressible.
pub fn surface_mounts(surface: &Surface) -> (Vec<Mount>, Vec<String>) {
    let mut mounts = Vec::new();
    let mut notes = Vec::new();
    let caches: Vec<&Path> = surface.caches().map(|c| c.path.as_path()).collect();
    for r in user_rules(surface) {
        let cache = caches.contains(&r.path.as_path());
        match r.mode {
            Mode::Deny => notes.push(format!("{}: a carve-out; bind mounts cannot express it", r.path.display())),
            _ if !r.path.exists() => notes.push(format!("{}: skipped, the source does not exist", r.path.display())),
            // A container cannot get the session's private copy of a
            // cache: the host's is mounted read-only (writable, anything
            // the container downloaded would run in the host's next build).
            Mode::Rw if cache => {
                notes.push(format!(
                    "{}: a package cache, mounted read-only; give the container a volume of its own to install into",
                    r.path.display()
                ));
                mounts.push(Mount { source: r.path.clone(), destination: r.path.clone(), writable: false });
            }
            mode => {
                mounts.push(Mount { source: r.path.clone(), destination: r.path.clone(), writable: mode == Mode::Rw })
            }
        }
    }
    for g in surface.globs() {
        notes.push(format!("{}: a pattern; bind mounts cannot express it", g.pattern.display()));
    }
    mounts.sort_by(|a, b| a.destination.cmp(&b.destination));
    (mounts, notes)
}

/// Composes operator mounts with the surface's.
pub fn compose(surface: Vec<Mount>, operator: Vec<Mount>, mode: SurfaceMode) -> (Vec<Mount>, Vec<String>) {
    let mut out = surface;
    let mut notes = Vec::new();
    for m in operator {
        match mode {
            SurfaceMode::Exclusive => notes.push(format!(
                "operator mount {} -> {} dropped (--surface-mode exclusive)",
                m.source.display(),
                m.destination.display()
            )),
            SurfaceMode::Additive if out.iter().any(|s| s.destination == m.destination) => notes.push(format!(
                "operator mount {} -> {} conflicts with the surface entry for {}: the surface entry is kept",
                m.source.display(),
                m.destination.display(),
                m.destination.display()
            )),
            SurfaceMode::Additive => out.push(m),
        }
    }
    out.sort_by(|a, b| a.destination.cmp(&b.destination));
    (out, notes)
}

/// Renders mounts in `format`.
pub fn render_mounts(mounts: &[Mount], format: MountFormat) -> String {
    let line = |m: &Mount| -> String {
        let (s, d) = (m.source.display(), m.destination.display());
        match format {
            MountFormat::Docker => {
                format!("--mount=type=bind,source={s},target={d}{}\n", if m.writable { "" } else { ",readonly" })
            }
            MountFormat::Podman => {
                format!("--mount=type=bind,source={s},target={d}{}\n", if m.writable { "" } else { ",ro=true" })
            }
            MountFormat::Bwrap => format!("{} {s} {d}\n", if m.writable { "--bind" } else { "--ro-bind" }),
            MountFormat::OciJson => unreachable!("rendered as a whole"),
        }
    };
    if format == MountFormat::OciJson {
        let spec: Vec<serde_json::Value> = mounts
            .iter()
            .map(|m| {
                serde_json::json!({
                    "destination": m.destination,
                    "type": "bind",
                    "source": m.source,
                    "options": ["rbind", if m.writable { "rw" } else { "ro" }],
                })
            })
            .collect();
        return serde_json::to_string_pretty(&spec).expect("serializable") + "\n";
    }
    mounts.iter().map(line).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn surface(root: &Path) -> Surface {
        let mut s = Surface::new();
        let o = || Origin::Flag("test".into());
        s.add(Rule { path: root.join("ws"), mode: Mode::Rw, origin: o() });
        s.add(Rule { path: root.join("ws/.env"), mode: Mode::Deny, origin: o() });
        s.add(Rule { path: root.join("lib"), mode: Mode::Ro, origin: o() });
        s.add(Rule { path: "/usr".into(), mode: Mode::Ro, origin: Origin::System("programs") });
        s
    }

    #[test]
    fn hooks_refuse_outside_and_malformed_input() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("ws")).unwrap();
        std::fs::write(root.join("ws/.env"), "TOKEN=1").unwrap();
        let s = surface(&root);
        let ws = root.join("ws");
        let input = |tool: &str, key: &str, path: &str| {
            serde_json::json!({"cwd": ws, "tool_name": tool, "tool_input": {key: path}}).to_string()
        };
        assert_eq!(hook_decision(Agent::Claude, &s, &input("Write", "file_path", "new.rs")), HookAnswer::Allow);
        assert!(matches!(hook_decision(Agent::Claude, &s, &input("Read", "file_path", ".env")), HookAnswer::Deny(_)));
        assert!(matches!(
            hook_decision(Agent::Claude, &s, &input("Write", "file_path", "../lib/x")),
            HookAnswer::Deny(_)
        ));
        assert_eq!(hook_decision(Agent::Claude, &s, &input("Read", "file_path", "../lib/x")), HookAnswer::Allow);
        assert_eq!(hook_decision(Agent::Claude, &s, &input("Bash", "command", "cat /etc/shadow")), HookAnswer::Allow);
        assert!(
            matches!(hook_decision(Agent::Claude, &s, "{not json"), HookAnswer::Deny(r) if r.contains("malformed"))
        );
        assert!(matches!(
            hook_decision(Agent::Gemini, &s, &input("read_file", "file_path", "/etc/x")),
            HookAnswer::Deny(_)
        ));
        let many = serde_json::json!({"cwd": ws, "tool_name": "read_many_files", "tool_input": {"include": ["src/**", "/root/**"]}});
        assert!(
            matches!(hook_decision(Agent::Gemini, &s, &many.to_string()), HookAnswer::Deny(r) if r.contains("/root"))
        );
    }

    /// Patterns are checked for what they may reach: `..`, a start outside
    /// the surface, and walks over a carve-out (a literal one or a deny
    /// pattern) are refused; unknown tools that carry a path are refused.
    #[test]
    fn hooks_check_patterns_and_unknown_tools() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("ws/src")).unwrap();
        std::fs::write(root.join("ws/.env"), "TOKEN=1").unwrap();
        let mut s = surface(&root);
        s.add_glob(&root.join("ws/**/*.key"), GlobEffect::Deny, Origin::Flag("test".into())).unwrap();
        let ws = root.join("ws");
        let call = |agent, tool: &str, input: serde_json::Value| {
            hook_decision(
                agent,
                &s,
                &serde_json::json!({"cwd": ws, "tool_name": tool, "tool_input": input}).to_string(),
            )
        };
        let allowed = |agent, tool: &str, input: serde_json::Value| {
            let answer = call(agent, tool, input.clone());
            assert_eq!(answer, HookAnswer::Allow, "{tool} {input}");
        };
        let refused = |agent, tool: &str, input: serde_json::Value, why: &str| {
            let answer = call(agent, tool, input.clone());
            assert!(matches!(&answer, HookAnswer::Deny(r) if r.contains(why)), "{tool} {input}: {answer:?}");
        };
        use serde_json::json;
        let c = Agent::Claude;
        allowed(c, "Glob", json!({"pattern": "**/*.rs"}));
        allowed(c, "Glob", json!({"pattern": "src/*.rs", "path": ws}));
        refused(c, "Glob", json!({"pattern": "*/../.env"}), "`..`");
        refused(c, "Glob", json!({"pattern": "**/*"}), ".env");
        refused(c, "Glob", json!({"pattern": ".env*"}), ".env");
        refused(c, "Glob", json!({"pattern": "/etc/*"}), "/etc");
        refused(c, "Glob", json!({"pattern": "*", "path": "/root"}), "/root");
        allowed(c, "Glob", json!({"pattern": "**/id.*"}));
        allowed(c, "Grep", json!({"pattern": "TODO", "glob": "*.rs"}));
        // A deny pattern refuses a search only where a file it carves out
        // exists and can be read from here.
        allowed(c, "Grep", json!({"pattern": "TODO", "path": "src"}));
        std::fs::write(ws.join("src/id.key"), "k").unwrap();
        refused(c, "Grep", json!({"pattern": "TODO", "path": "src"}), "src/id.key");
        allowed(c, "Grep", json!({"pattern": "TODO", "path": "src", "glob": "*.rs"}));
        std::fs::remove_file(ws.join("src/id.key")).unwrap();
        refused(c, "Grep", json!({"pattern": "TOKEN"}), ".env");
        std::fs::write(ws.join("a.key"), "k").unwrap();
        refused(c, "Grep", json!({"pattern": "x", "glob": "*.key"}), "a.key");
        refused(c, "Glob", json!({"pattern": "**/?.*"}), "a.key");
        refused(c, "Grep", json!({"pattern": "x", "glob": "../*"}), "`..`");
        refused(c, "Grep", json!({"pattern": "x", "path": "../lib", "glob": "{a,b}"}), "brace");
        let g = Agent::Gemini;
        allowed(g, "grep_search", json!({"pattern": "x", "include": "*.rs"}));
        refused(g, "grep_search", json!({"pattern": "x", "include": "*.env"}), ".env");
        refused(g, "glob", json!({"pattern": "**/.e?v"}), ".env");
        allowed(g, "read_many_files", json!({"paths": ["src/main.rs", "src/**/*.rs"]}));
        refused(g, "read_many_files", json!({"paths": ["."]}), ".env");
        // An unknown tool: refused if it may name files, left alone if not.
        refused(c, "SuperRead", json!({"file_path": ".env"}), "`file_path`");
        refused(g, "mcp_fs_read", json!({"target_dir": "/"}), "`target_dir`");
        allowed(c, "WebFetch", json!({"url": "https://example.org", "prompt": "x"}));
    }

    #[test]
    fn mounts_compose_additively_and_exclusively() {
        let m = |s: &str, d: &str, w| Mount { source: s.into(), destination: d.into(), writable: w };
        let surface = vec![m("/ws", "/ws", true), m("/lib", "/lib", false)];
        let operator = vec![m("/scratch", "/scratch", true), m("/elsewhere", "/ws", false)];
        let (out, notes) = compose(surface.clone(), operator.clone(), SurfaceMode::Additive);
        assert_eq!(out, vec![m("/lib", "/lib", false), m("/scratch", "/scratch", true), m("/ws", "/ws", true)]);
        assert_eq!(notes.len(), 1);
        let (out, notes) = compose(surface, operator, SurfaceMode::Exclusive);
        assert_eq!(out, vec![m("/lib", "/lib", false), m("/ws", "/ws", true)]);
        assert_eq!(notes.len(), 2);
    }
}
