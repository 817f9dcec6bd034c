//! `interpose hook`, `agent-config`, `preamble` and `mounts`: the other
//! layers, rendered from the same surface as `run` enforces.

use super::{AgentConfigArgs, HookArgs, MountsArgs, SurfaceError, SurfaceOnly};
use crate::forensics::shell_quote;
use crate::layers::{self, Agent, ConfigAgent, HookAnswer, Mount};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Why `preamble`, `mounts` or `agent-config` failed. Where a message
/// says no path it is the io::Error's own text; the variant keeps the
/// path all the same.
#[derive(Debug, thiserror::Error)]
pub enum LayersError {
    /// The surface (flags or policy) cannot be built.
    #[error(transparent)]
    Surface(#[from] SurfaceError),
    /// `--operator-mounts FILE` cannot be read.
    #[error("{}: {source}", .path.display())]
    ReadMounts {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// `--operator-mounts FILE` is not a list of mounts.
    #[error("{}: {source}", .path.display())]
    ParseMounts {
        /// The file.
        path: PathBuf,
        /// The error.
        source: toml::de::Error,
    },
    /// No `--dir`, and no state directory without `HOME`.
    #[error("HOME is unset: name the directory with --dir")]
    NoHome,
    /// The current directory cannot be read.
    #[error("{0}")]
    CurrentDir(std::io::Error),
    /// interpose's own binary cannot be found (for the hook's command).
    #[error("{0}")]
    CurrentExe(std::io::Error),
    /// Creating a directory failed.
    #[error("{source}")]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// Canonicalizing the settings directory failed.
    #[error("{source}")]
    Canonicalize {
        /// The directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// Linking the user's login into the settings directory failed.
    #[error("{source}")]
    LinkLogin {
        /// The settings directory.
        dir: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// Serializing the settings failed.
    #[error("{0}")]
    Json(serde_json::Error),
    /// Writing a settings file (its temporary name) failed.
    #[error("{source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// Renaming a settings file into place failed.
    #[error("{source}")]
    Rename {
        /// The file it was to become.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// `std::fs::create_dir_all`, its error naming the directory.
fn create_dir(path: &Path) -> Result<(), LayersError> {
    std::fs::create_dir_all(path).map_err(|source| LayersError::CreateDir { path: path.into(), source })
}

/// Writes `text` to `file` through a temporary name beside it (`tmp_ext`
/// its extension), so a reader never sees half of it.
fn replace(file: &Path, tmp_ext: &str, text: String) -> Result<(), LayersError> {
    let tmp = file.with_extension(tmp_ext);
    std::fs::write(&tmp, text).map_err(|source| LayersError::Write { path: tmp.clone(), source })?;
    std::fs::rename(&tmp, file).map_err(|source| LayersError::Rename { path: file.into(), source })
}

/// Runs the hook: one JSON object on stdin, the answer on stdout. Whatever
/// goes wrong (a bad policy, unreadable input) is answered with a refusal,
/// so it never fails.
pub fn hook(args: &HookArgs) -> i32 {
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
    0
}

/// Prints the preamble.
pub fn preamble(args: &SurfaceOnly) -> Result<i32, LayersError> {
    let (surface, (policy, _)) = args.surface.build_with_policy(crate::policy::file::Effects::None)?;
    print!("{}{}", layers::preamble(&surface), layers::network_preamble(&policy.net_allow));
    Ok(0)
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct OperatorMounts {
    #[serde(default)]
    mount: Vec<Mount>,
}

/// Prints the surface as bind mounts; skipped and dropped mounts on stderr.
pub fn mounts(args: &MountsArgs) -> Result<i32, LayersError> {
    let (surface, (_, resolved)) = args.surface.build_with_policy(crate::policy::file::Effects::None)?;
    let (surface_mounts, mut notes) = layers::surface_mounts(&surface);
    // The user's entries left out on this host (a missing path, an unset
    // variable) are reported too; the built-in profiles' (a toolchain this
    // host does not have) are `policy show`'s business.
    for (entry, outcome) in resolved.outcomes.iter().filter(|(e, _)| e.origin.is_user()) {
        if let crate::policy::file::EntryOutcome::Skipped(why) = outcome {
            notes.insert(0, format!("{} {:?} skipped: {why} ({})", entry.field.key(), entry.text, entry.origin));
        }
    }
    let operator = match &args.operator_mounts {
        Some(file) => {
            let text = std::fs::read_to_string(file)
                .map_err(|source| LayersError::ReadMounts { path: file.clone(), source })?;
            toml::from_str::<OperatorMounts>(&text)
                .map_err(|source| LayersError::ParseMounts { path: file.clone(), source })?
                .mount
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
pub fn agent_config(args: &AgentConfigArgs) -> Result<i32, LayersError> {
    use crate::policy::{GlobEffect, Mode};
    let surface = args.surface.build()?;
    // By default one directory per agent and surface in interpose's state
    // directory, made again on every call: the agent keeps its state there
    // from session to session (as it would in its own home), and nothing is
    // left behind in /tmp by a command that exits at once.
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => {
            use sha2::Digest;
            let mut digest = sha2::Sha256::new();
            for flag in surface_flags(&args.surface) {
                digest.update(flag.as_bytes());
                digest.update([0]);
            }
            digest.update(std::env::current_dir().map_err(LayersError::CurrentDir)?.as_os_str().as_encoded_bytes());
            let id = crate::audit::chain::hex(&digest.finalize()[..8]);
            crate::audit::key::state_dir()
                .ok_or(LayersError::NoHome)?
                .join("agent-config")
                .join(format!("{}-{id}", agent_word(args.agent)))
        }
    };
    create_dir(&dir)?;
    let dir = dir.canonicalize().map_err(|source| LayersError::Canonicalize { path: dir.clone(), source })?;
    if args.agent == ConfigAgent::Codex {
        return codex_config(&dir);
    }
    let agent = if args.agent == ConfigAgent::Claude { Agent::Claude } else { Agent::Gemini };
    let exe = std::env::current_exe().map_err(LayersError::CurrentExe)?;
    // The hook runs with the same surface flags this command was given.
    let mut hook = format!("{} hook {}", shell_quote(&exe.display().to_string()), agent_name(agent));
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
    let (file, settings, vars) = match agent {
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
            link_login(&d, &claude_home(), ".credentials.json")?;
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
    create_dir(file.parent().expect("a settings file has a directory"))?;
    replace(&file, "json.tmp", serde_json::to_string_pretty(&settings).map_err(LayersError::Json)? + "\n")?;
    eprintln!("interpose: wrote {}", file.display());
    for (k, v) in vars {
        println!("export {k}={}", shell_quote(&v.display().to_string()));
    }
    Ok(0)
}

/// Codex's own sandbox (bubblewrap) needs user and mount namespaces, which
/// interpose refuses inside the sandbox, so every shell command Codex ran
/// for the model would fail. Under interpose, interpose is the sandbox:
/// `DIR/codex/config.toml` says `sandbox_mode = "danger-full-access"`
/// (Codex's name for "no sandbox of its own"), after the user's own
/// settings, and the user's login is linked in.
fn codex_config(dir: &Path) -> Result<i32, LayersError> {
    let home = dir.join("codex");
    create_dir(&home)?;
    let real = std::env::var_os("CODEX_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".codex")));
    let mine = real.as_ref().and_then(|r| std::fs::read_to_string(r.join("config.toml")).ok()).unwrap_or_default();
    // A top-level key must come before the first table; the user's own
    // `sandbox_mode`, if any, is left out.
    let kept: String =
        mine.lines().filter(|l| !l.trim_start().starts_with("sandbox_mode")).map(|l| format!("{l}\n")).collect();
    let text = format!(
        "# Written by `interpose agent-config codex`. Codex runs inside interpose,\n\
         # which is its sandbox: Codex's own (bubblewrap) cannot run nested, so it\n\
         # is off. Everything Codex runs is still confined by interpose.\n\
         sandbox_mode = \"danger-full-access\"\n\n{kept}"
    );
    let file = home.join("config.toml");
    replace(&file, "toml.tmp", text)?;
    link_login(&home, &real, "auth.json")?;
    eprintln!("interpose: wrote {} (Codex's own sandbox off: interpose is the sandbox)", file.display());
    eprintln!("interpose: or, without this directory: codex --sandbox danger-full-access");
    println!("export CODEX_HOME={}", shell_quote(&home.display().to_string()));
    Ok(0)
}

/// Claude Code's own configuration directory: `$CLAUDE_CONFIG_DIR` as the
/// user set it, else `~/.claude`.
fn claude_home() -> Option<PathBuf> {
    std::env::var_os("CLAUDE_CONFIG_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".claude")))
}

/// Links the user's login file `name` from `real` into the session
/// directory `dir`, so the agent pointed at `dir` is still signed in.
fn link_login(dir: &Path, real: &Option<PathBuf>, name: &str) -> Result<(), LayersError> {
    let failed = |source| LayersError::LinkLogin { dir: dir.into(), source };
    std::fs::create_dir_all(dir).map_err(failed)?;
    let Some(source) = real.as_ref().map(|r| r.join(name)).filter(|s| s.exists()) else { return Ok(()) };
    if source.parent().and_then(|p| p.canonicalize().ok()) == dir.canonicalize().ok() {
        return Ok(());
    }
    let link = dir.join(name);
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(source, link).map_err(failed)
}

fn agent_word(agent: ConfigAgent) -> &'static str {
    match agent {
        ConfigAgent::Claude => "claude",
        ConfigAgent::Gemini => "gemini",
        ConfigAgent::Codex => "codex",
    }
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
        // A built-in profile's name stays a name (`--policy claude`).
        let profile = p.to_str().filter(|n| !n.contains('/') && !p.exists() && crate::policy::file::is_profile(n));
        out.extend(["--policy".to_string(), profile.map_or_else(|| abs(p), str::to_string)]);
    }
    for (flag, paths) in [("--rw", &args.rw), ("--ro", &args.ro), ("--deny", &args.deny)] {
        for p in paths {
            out.extend([flag.to_string(), abs(p)]);
        }
    }
    if args.no_system {
        out.push("--no-system".into());
    }
    if args.no_tooling {
        out.push("--no-tooling".into());
    }
    out
}
