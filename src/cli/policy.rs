//! `interpose policy check|show|list`.

use super::PolicyCommand;
use crate::policy::file::{Effects, EntryOutcome, Policy, PROFILES};
use crate::policy::{GlobEffect, Surface};
use std::path::Path;

/// Runs a `policy` verb; returns the exit status.
pub fn run(cmd: &PolicyCommand) -> i32 {
    match cmd {
        PolicyCommand::List => {
            for (name, what, _) in PROFILES {
                println!("{name:<8} {what}");
            }
            0
        }
        PolicyCommand::Check { file } => {
            let (entries, warnings, errors) = check(file);
            for w in &warnings {
                eprintln!("warning: {w}");
            }
            for e in &errors {
                eprintln!("{e}");
            }
            match entries {
                Some(n) if errors.is_empty() => {
                    let warned = match warnings.len() {
                        0 => String::new(),
                        n => format!(", {n} warning(s)"),
                    };
                    println!("{}: ok ({n} entries{warned})", file.display());
                    0
                }
                _ => {
                    eprintln!("{}: {} error(s)", file.display(), errors.len());
                    1
                }
            }
        }
        PolicyCommand::Show { file } => match show(file) {
            Ok(text) => {
                print!("{text}");
                0
            }
            Err(e) => {
                eprintln!("{e}");
                1
            }
        },
    }
}

fn load(file: &Path) -> Result<Policy, crate::policy::file::PolicyError> {
    Policy::load_or_profile(file)
}

/// Loads and resolves `file` as `run` would, without changing the host:
/// the number of entries (`None` if it cannot be loaded at all), the
/// entries left out here (a path that does not exist, a variable that is
/// not set), and every error, each with file:line:column.
fn check(file: &Path) -> (Option<usize>, Vec<String>, Vec<String>) {
    let (policy, loading) = match Policy::load_all(file) {
        Ok(loaded) => loaded,
        Err(e) => return (None, Vec::new(), vec![e.to_string()]),
    };
    let Ok(cwd) = std::env::current_dir() else {
        return (None, Vec::new(), vec!["the current directory cannot be read".into()]);
    };
    // What loads of it is resolved too: a pattern can escape once expanded.
    let (resolution, resolving) = match policy.resolve_all(&super::env_vars(), &cwd, &mut Surface::new(), Effects::None)
    {
        Ok(r) => r,
        Err(e) => return (None, Vec::new(), loading.iter().chain([&e]).map(ToString::to_string).collect()),
    };
    // The policy's own entries: a built-in profile lists places that many
    // machines lack, and leaving those out is what it is made for.
    let warnings = resolution
        .outcomes
        .iter()
        .filter(|(entry, _)| matches!(entry.origin, crate::policy::Origin::File { .. }))
        .filter_map(|(entry, outcome)| match outcome {
            EntryOutcome::Skipped(why) => Some(format!(
                "{}: `{}` entry {:?}: left out here: {why}",
                entry.location(),
                entry.field.key(),
                entry.text
            )),
            _ => None,
        })
        .collect();
    let errors = loading.iter().chain(&resolving).map(ToString::to_string).collect();
    (Some(policy.entries.len()), warnings, errors)
}

/// Why `policy show` has nothing to show.
#[derive(Debug, thiserror::Error)]
pub enum ShowError {
    /// The policy cannot be loaded, or resolved here.
    #[error(transparent)]
    Policy(#[from] crate::policy::file::PolicyError),
    /// The current directory (the workspace) cannot be read.
    #[error("{0}")]
    CurrentDir(std::io::Error),
}

fn show(file: &Path) -> Result<String, ShowError> {
    use std::fmt::Write;
    let policy = load(file)?;
    let cwd = std::env::current_dir().map_err(ShowError::CurrentDir)?;
    let mut surface = Surface::new();
    let resolved = policy.resolve(&super::env_vars(), &cwd, &mut surface, Effects::None)?;
    let mut out = String::new();
    let _ = writeln!(out, "# policy {}", file.display());
    let _ = writeln!(
        out,
        "system surface: {}",
        if policy.system { "included (extends \"system\"; see `interpose why`)" } else { "not included" }
    );
    let workspace_mode = if policy.restricts_workspace { "ro, writable only where `writable` says" } else { "rw" };
    let _ = writeln!(out, "workspace (cwd): {} {workspace_mode}", resolved.cwd.display());
    let _ = writeln!(out, "\n# entries");
    for (_, rule) in surface.effective_rules() {
        let _ = writeln!(
            out,
            "{:<5} {}  ({})",
            format!("{:?}", rule.mode).to_lowercase(),
            rule.path.display(),
            rule.origin
        );
    }
    for g in surface.globs() {
        let what = match g.effect {
            GlobEffect::Grant => "rw",
            GlobEffect::Deny => "deny",
            GlobEffect::DenyWrites => "ro",
        };
        let _ = writeln!(out, "{what:<5} {}  (glob, {})", g.pattern.display(), g.origin);
    }
    let mut skipped = resolved.outcomes.iter().filter(|(_, o)| matches!(o, EntryOutcome::Skipped(_))).peekable();
    if skipped.peek().is_some() {
        let _ = writeln!(out, "\n# skipped");
        for (e, o) in skipped {
            if let EntryOutcome::Skipped(why) = o {
                let _ = writeln!(out, "{} {:?}: {why}  ({})", e.field.key(), e.text, e.origin);
            }
        }
    }
    for (e, o) in &resolved.outcomes {
        if let EntryOutcome::WouldCreate(p) = o {
            let _ = writeln!(out, "run creates {} for {} {:?} ({})", p.display(), e.field.key(), e.text, e.origin);
        }
    }
    let _ = writeln!(out, "\n# environment");
    let (_, dropped) = policy.env.apply(std::env::vars_os());
    for d in &dropped {
        let _ = writeln!(out, "drop {}  (matches {})", d.name.to_string_lossy(), d.rule);
    }
    if dropped.is_empty() {
        let _ = writeln!(out, "nothing in the current environment would be dropped");
    }
    for (k, v) in &policy.env.set {
        let _ = writeln!(out, "set  {k}={v}");
    }
    let _ = writeln!(out, "HOME: {}", format!("{:?}", policy.home).to_lowercase());
    let _ = writeln!(out, "\n# network (through interpose's proxy; `--net allow=` adds, `--net host` lifts)");
    if policy.net_allow.is_empty() {
        let _ = writeln!(out, "no host is allowed");
    }
    for rule in &policy.net_allow {
        let _ = writeln!(out, "allow {rule}  ({})", rule.origin);
    }
    Ok(out)
}
