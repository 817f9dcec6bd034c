//! `interpose hook`, `agent-config`, `preamble` and `mounts`: the other
//! layers, rendered from the same surface as `run` enforces.

use super::{AgentConfigArgs, HookArgs, MountsArgs, SurfaceOnly};
use crate::layers::{self, Agent, HookAnswer, Mount};
use std::io::Read;
use std::path::PathBuf;

/// Runs the hook: one JSON object on stdin, the answer on stdout. Whatever
/// goes wrong (a bad policy, unreadable input) is answered with a refusal.
pub fn hook(args: &HookArgs) -> anyhow::Result<i32> {
    let mut input = String::new();
    let answer = match (args.surface.build(), std::io::stdin().read_to_string(&mut input)) {
        (Ok(surface), Ok(_)) => layers::hook_decision(args.agent, &surface, &input),
        (Err(e), _) => HookAnswer::Deny(format!("interpose: the sandbox policy cannot be loaded ({e}); refused")),
        (_, Err(e)) => HookAnswer::Deny(format!("interpose: cannot read the hook input ({e}); refused")),
    };
    let out = layers::hook_output(args.agent, &answer);
    if !out.is_empty() {
        println!("{out}");
    }
    Ok(0)
}

/// Prints the preamble.
pub fn preamble(args: &SurfaceOnly) -> anyhow::Result<i32> {
    print!("{}", layers::preamble(&args.surface.build()?));
    Ok(0)
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct OperatorMounts {
    #[serde(default)]
    mount: Vec<Mount>,
}

/// Prints the surface as bind mounts; skipped and dropped mounts on stderr.
pub fn mounts(args: &MountsArgs) -> anyhow::Result<i32> {
    let (surface, policy) = args.surface.build_with_policy()?;
    let (surface_mounts, mut notes) = layers::surface_mounts(&surface);
    // Entries the policy left out on this host (a missing path, an unset
    // variable) are reported too.
    for (entry, outcome) in policy.iter().flat_map(|(_, r)| &r.outcomes) {
        if let crate::policy::file::Outcome::Skipped(why) = outcome {
            notes.insert(0, format!("{} {:?} skipped: {why} ({})", entry.field.key(), entry.text, entry.origin));
        }
    }
    let operator = match &args.operator_mounts {
        Some(file) => {
            let text = std::fs::read_to_string(file).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
            toml::from_str::<OperatorMounts>(&text).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?.mount
        }
        None => Vec::new(),
    };
    let (all, dropped) = layers::compose(surface_mounts, operator, args.surface_mode);
    notes.extend(dropped);
    for n in &notes {
        eprintln!("interpose: {n}");
    }
    print!("{}", layers::render_mounts(&all, args.format));
    Ok(0)
}

/// Writes the agent's per-session settings and prints the variables.
pub fn agent_config(args: &AgentConfigArgs) -> anyhow::Result<i32> {
    use crate::policy::{GlobEffect, Mode};
    let surface = args.surface.build()?;
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("interpose-agent-config-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir)?;
    let dir = dir.canonicalize()?;
    let exe = std::env::current_exe()?;
    // The hook runs with the same surface flags this command was given.
    let mut hook = format!("{} hook {}", shell_quote(&exe.display().to_string()), agent_name(args.agent));
    for flag in surface_flags(&args.surface) {
        hook.push(' ');
        hook.push_str(&shell_quote(&flag));
    }
    let rules = layers::user_rules(&surface);
    let user: Vec<String> =
        rules.iter().filter(|r| r.mode != Mode::Deny).map(|r| r.path.display().to_string()).collect();
    let denied: Vec<String> = rules
        .iter()
        .filter(|r| r.mode == Mode::Deny)
        .map(|r| r.path.display().to_string())
        .chain(surface.globs().iter().filter(|g| g.effect == GlobEffect::Deny).map(|g| g.pattern.display().to_string()))
        .collect();
    let (file, settings, vars) = match args.agent {
        Agent::Claude => {
            let deny: Vec<String> =
                denied.iter().flat_map(|p| ["Read", "Edit", "Write"].map(|t| format!("{t}({p})"))).collect();
            let settings = serde_json::json!({
                "permissions": { "additionalDirectories": user, "deny": deny },
                "hooks": { "PreToolUse": [{
                    "matcher": "Read|Write|Edit|MultiEdit|NotebookEdit|Glob|Grep|LS",
                    "hooks": [{ "type": "command", "command": hook }],
                }]},
            });
            let d = dir.join("claude");
            (d.join("settings.json"), settings, vec![("CLAUDE_CONFIG_DIR", d)])
        }
        Agent::Gemini => {
            let settings = serde_json::json!({
                "context": { "includeDirectories": user },
                "hooks": { "BeforeTool": [{
                    "matcher": "read_file|write_file|replace|glob|grep_search|list_directory|read_many_files",
                    "hooks": [{ "type": "command", "command": hook }],
                }]},
            });
            let f = dir.join("gemini/settings.json");
            (f.clone(), settings, vec![("GEMINI_CLI_SYSTEM_SETTINGS_PATH", f)])
        }
    };
    std::fs::create_dir_all(file.parent().expect("a settings file has a directory"))?;
    let tmp = file.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_string_pretty(&settings)? + "\n")?;
    std::fs::rename(&tmp, &file)?;
    eprintln!("interpose: wrote {}", file.display());
    for (k, v) in vars {
        println!("export {k}={}", shell_quote(&v.display().to_string()));
    }
    Ok(0)
}

fn agent_name(agent: Agent) -> &'static str {
    match agent {
        Agent::Claude => "claude",
        Agent::Gemini => "gemini",
    }
}

/// The surface flags as given, with paths made absolute (the hook runs
/// wherever the agent is).
fn surface_flags(args: &super::SurfaceArgs) -> Vec<String> {
    let abs = |p: &PathBuf| std::path::absolute(p).unwrap_or_else(|_| p.clone()).display().to_string();
    let mut out = Vec::new();
    if let Some(p) = &args.policy {
        out.extend(["--policy".to_string(), abs(p)]);
    }
    for (flag, paths) in [("--rw", &args.rw), ("--ro", &args.ro), ("--deny", &args.deny)] {
        for p in paths {
            out.extend([flag.to_string(), abs(p)]);
        }
    }
    if args.no_system {
        out.push("--no-system".into());
    }
    out
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-=:+,".contains(&b)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}
