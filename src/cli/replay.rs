//! `interpose replay`: every access a trail recorded, decided again under
//! other flags, to see what a changed surface would break or open up before
//! deploying it.

use super::ReplayArgs;
use crate::policy::Access;
use crate::policy::NoProcesses;
use std::collections::BTreeMap;

fn access(name: &str) -> Option<Access> {
    Some(match name {
        "read" => Access::Read,
        "write" => Access::Write,
        "create" => Access::Create,
        "delete" => Access::Delete,
        "link_source" => Access::LinkSource,
        "exec" => Access::Exec,
        "stat" => Access::Stat,
        _ => return None,
    })
}

/// Runs the verb; prints the changes and returns 0 (2 on bad input).
pub fn run(args: &ReplayArgs) -> i32 {
    let text = match std::fs::read_to_string(&args.file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("interpose: {}: {e}", args.file.display());
            return 2;
        }
    };
    let surface = match args.surface.build().map_err(|e| e.to_string()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("interpose: {e}");
            return 2;
        }
    };
    // (change, access, path) -> count
    let mut changes: BTreeMap<(&'static str, String, String), u64> = BTreeMap::new();
    let mut replayed = 0u64;
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        if v["type"] != "decision" {
            continue;
        }
        let (Some(path), Some(acc)) = (v["resolved"].as_str(), v["access"].as_str().and_then(access)) else {
            continue;
        };
        let was_allowed = match v["decision"].as_str() {
            Some("allow") => true,
            Some("deny" | "would_deny") => false,
            _ => continue,
        };
        // The private TMPDIR of the recorded run and /proc entries of its
        // processes do not exist any more: keep their recorded answer.
        let rule = v["rule"].as_str().unwrap_or_default();
        if rule.contains("private TMPDIR") || rule.contains("is inside the sandbox") {
            continue;
        }
        replayed += 1;
        let now = surface.decide(path.as_bytes(), acc, &NoProcesses).allowed;
        let change = match (was_allowed, now) {
            (true, false) => "newly denied",
            (false, true) => "newly allowed",
            _ => continue,
        };
        *changes.entry((change, v["access"].as_str().unwrap_or("?").to_string(), path.to_string())).or_default() += 1;
    }
    println!("replayed {replayed} decisions from {}", args.file.display());
    if changes.is_empty() {
        println!("no change");
    }
    for ((change, access, path), n) in &changes {
        println!("{change}: {access} {path} ({n}x)");
    }
    0
}
