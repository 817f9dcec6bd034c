//! The other enforcement layers of the seeds, each rendered from the one
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

/// The path arguments of a tool call that the hook checks, with the access
/// each needs; `None` for a tool the hook does not judge (a shell command:
/// the OS layer decides what it does).
fn tool_paths(agent: Agent, tool: &str, input: &serde_json::Value) -> Option<Vec<(String, Access)>> {
    let s = |k: &str| input.get(k).and_then(serde_json::Value::as_str).map(str::to_string);
    let read = |k: &str| vec![(s(k).unwrap_or_else(|| ".".into()), Access::Read)];
    let needed = |k: &str, access| s(k).map(|p| vec![(p, access)]).unwrap_or_default();
    Some(match (agent, tool) {
        (Agent::Claude, "Read") => needed("file_path", Access::Read),
        (Agent::Claude, "Write" | "Edit" | "MultiEdit") => needed("file_path", Access::Write),
        (Agent::Claude, "NotebookEdit") => needed("notebook_path", Access::Write),
        (Agent::Claude, "Glob" | "Grep" | "LS") => read("path"),
        (Agent::Gemini, "read_file") => needed("file_path", Access::Read),
        (Agent::Gemini, "write_file" | "replace") => needed("file_path", Access::Write),
        (Agent::Gemini, "glob" | "grep_search" | "list_directory") => read("dir_path"),
        (Agent::Gemini, "read_many_files") => input
            .get("include")
            .and_then(serde_json::Value::as_array)
            .map(|a| a.iter().filter_map(|v| v.as_str()).map(|p| (glob_base(p), Access::Read)).collect())
            .unwrap_or_default(),
        _ => return None,
    })
}

/// For a pattern, the literal directory it starts with (what it can reach).
fn glob_base(pattern: &str) -> String {
    if !crate::policy::glob::is_glob(pattern) {
        return pattern.to_string();
    }
    let base = crate::policy::glob::static_prefix(Path::new(&format!("{pattern}/x")));
    if base.as_os_str().is_empty() {
        ".".into()
    } else {
        base.display().to_string()
    }
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
    let Some(paths) = tool_paths(agent, tool, &v["tool_input"]) else { return HookAnswer::Allow };
    if paths.is_empty() {
        return HookAnswer::Deny(format!("interpose: {tool} without a path argument; refused"));
    }
    for (path, access) in paths {
        let (allowed, resolved, rule) = check(surface, Path::new(cwd), Path::new(&path), access);
        if !allowed {
            let what = if access == Access::Read { "read" } else { "write" };
            return HookAnswer::Deny(format!(
                "interpose: {tool} may not {what} {}; the sandbox surface refuses it ({rule})",
                resolved.display()
            ));
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
