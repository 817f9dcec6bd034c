//! `interpose report`: what an audit trail says, grouped for a person (or a
//! machine) reviewing a session.

use super::SuggestFormat;
use super::{ReportArgs, ReportFormat};
use serde::Serialize;
use std::collections::BTreeMap;

/// Denials under one directory.
#[derive(Debug, Default, Serialize)]
struct DenialGroup {
    count: u64,
    first_ns: u128,
    last_ns: u128,
    accesses: Vec<String>,
    examples: Vec<String>,
    rules: Vec<String>,
    /// The flag that would allow these accesses, or why none would.
    allowed_by: String,
}

/// Counts for one process.
#[derive(Debug, Default, Serialize)]
struct ProcessCounts {
    comm: String,
    /// When the name was seen (ns), to keep the latest.
    #[serde(skip)]
    named_at: u64,
    /// From its last exec record, if any.
    ppid: Option<u64>,
    argv: Vec<String>,
    decisions: u64,
    denials: u64,
}

/// Counts for one syscall.
#[derive(Debug, Default, Serialize)]
struct SyscallCounts {
    allow: u64,
    deny: u64,
    error: u64,
}

/// The whole report.
#[derive(Debug, Default, Serialize)]
struct Report {
    chain: String,
    command: Vec<String>,
    exit_status: Option<i64>,
    decisions: u64,
    denials: u64,
    denials_by_directory: BTreeMap<String, DenialGroup>,
    processes: BTreeMap<u64, ProcessCounts>,
    syscalls: BTreeMap<String, SyscallCounts>,
}

fn path_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Object(o) => format!("<bytes {}>", o.get("bytes").and_then(|b| b.as_str()).unwrap_or("?")),
        _ => String::new(),
    }
}

fn parent(path: &str) -> String {
    match path.rfind('/') {
        Some(0) => "/".into(),
        Some(i) => path[..i].into(),
        None => path.into(),
    }
}

fn build(text: &str) -> Report {
    let mut r = Report {
        chain: match crate::audit::verify(text) {
            Ok(n) => format!("intact ({n} records)"),
            Err(e) => format!("NOT INTACT: {e}"),
        },
        ..Report::default()
    };
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        match v["type"].as_str() {
            Some("session_start") => {
                r.command = v["command"].as_array().map(|a| a.iter().map(path_text).collect()).unwrap_or_default();
            }
            Some("session_end") => r.exit_status = v["exit_status"].as_i64(),
            Some("exec") => {
                let p = r.processes.entry(v["pid"].as_u64().unwrap_or(0)).or_default();
                p.ppid = v["ppid"].as_u64();
                p.argv = v["argv"].as_array().map(|a| a.iter().map(path_text).collect()).unwrap_or_default();
            }
            Some("decision") => {
                r.decisions += 1;
                let decision = v["decision"].as_str().unwrap_or("?");
                let sc = r.syscalls.entry(v["syscall"].as_str().unwrap_or("?").to_string()).or_default();
                match decision {
                    "allow" => sc.allow += 1,
                    "deny" => sc.deny += 1,
                    _ => sc.error += 1,
                }
                let p = r.processes.entry(v["pid"].as_u64().unwrap_or(0)).or_default();
                p.decisions += 1;
                // The latest name: a process is known by what it exec'd last.
                // Records are written as workers finish, not in call order,
                // so "latest" is by time, and the exec call itself (made by
                // the image being replaced) does not count.
                let time = v["time_ns"].as_u64().unwrap_or(0);
                let exec = matches!(v["syscall"].as_str(), Some("execve" | "execveat"));
                if let Some(comm) = v["comm"].as_str().filter(|c| !c.is_empty() && !exec) {
                    if time >= p.named_at {
                        p.comm = comm.to_string();
                        p.named_at = time;
                    }
                }
                if decision != "deny" && decision != "would_deny" {
                    continue;
                }
                r.denials += 1;
                p.denials += 1;
                let resolved = if v["resolved"].is_null() { path_text(&v["path"]) } else { path_text(&v["resolved"]) };
                let time = v["time_ns"].as_u64().map_or(0, u128::from);
                let access = v["access"].as_str().unwrap_or("?").to_string();
                let rule = v["rule"].as_str().unwrap_or_default().to_string();
                let g = r.denials_by_directory.entry(parent(&resolved)).or_default();
                g.count += 1;
                g.first_ns = if g.first_ns == 0 { time } else { g.first_ns.min(time) };
                g.last_ns = g.last_ns.max(time);
                if !g.accesses.contains(&access) {
                    g.accesses.push(access);
                }
                if g.examples.len() < 3 && !g.examples.contains(&resolved) {
                    g.examples.push(resolved);
                }
                if !g.rules.contains(&rule) {
                    g.rules.push(rule);
                }
            }
            _ => {}
        }
    }
    for (dir, g) in &mut r.denials_by_directory {
        g.allowed_by = if g.rules.iter().any(|r| r.starts_with("deny ")) {
            "nothing: a carve-out of the surface".into()
        } else if g.rules.iter().any(|r| r.contains("outside the sandbox")) {
            "nothing: /proc of a process outside the sandbox".into()
        } else {
            // Never suggest the whole root: name the entries instead.
            let target = if dir == "/" { g.examples.join(" ") } else { dir.clone() };
            let flag = if g.accesses.iter().any(|a| !matches!(a.as_str(), "read" | "exec" | "stat")) {
                "--rw"
            } else {
                "--ro"
            };
            format!("{flag} {target}")
        };
    }
    r
}

fn seconds(ns: u128, start: u128) -> f64 {
    ns.saturating_sub(start) as f64 / 1e9
}

fn print_text(r: &Report) {
    println!("command:    {}", r.command.join(" "));
    println!("exit:       {}", r.exit_status.map_or("(no session_end)".into(), |s| s.to_string()));
    println!("chain:      {}", r.chain);
    println!("decisions:  {} ({} denied)", r.decisions, r.denials);
    let start = r.denials_by_directory.values().map(|g| g.first_ns).min().unwrap_or(0);
    if !r.denials_by_directory.is_empty() {
        println!("\ndenials by directory (times in seconds from the first denial):");
        let mut groups: Vec<_> = r.denials_by_directory.iter().collect();
        groups.sort_by(|a, b| b.1.count.cmp(&a.1.count).then(a.0.cmp(b.0)));
        for (dir, g) in groups {
            println!(
                "  {:>5}  {:>7.3}-{:<7.3}  {dir}  [{}]",
                g.count,
                seconds(g.first_ns, start),
                seconds(g.last_ns, start),
                g.accesses.join(",")
            );
            for e in &g.examples {
                println!("           e.g. {e}");
            }
            println!("           allowed by: {}", g.allowed_by);
        }
    }
    println!("\nprocess tree (decisions, denials):");
    let children = |parent: Option<u64>| -> Vec<u64> {
        r.processes
            .iter()
            .filter(|(pid, p)| match parent {
                Some(pp) => p.ppid == Some(pp) && **pid != pp,
                None => p.ppid.is_none_or(|pp| !r.processes.contains_key(&pp)),
            })
            .map(|(pid, _)| *pid)
            .collect()
    };
    fn walk(r: &Report, pid: u64, depth: usize, children: &dyn Fn(Option<u64>) -> Vec<u64>) {
        let p = &r.processes[&pid];
        let what = if p.argv.is_empty() { p.comm.clone() } else { p.argv.join(" ") };
        let what: String = what.chars().take(80).collect();
        println!("  {:indent$}{pid} {what}  ({}, {} denied)", "", p.decisions, p.denials, indent = depth * 2);
        if depth < 32 {
            for child in children(Some(pid)) {
                walk(r, child, depth + 1, children);
            }
        }
    }
    for root in children(None) {
        walk(r, root, 0, &children);
    }
    println!("\nsyscalls:           allow   deny  error");
    for (name, c) in &r.syscalls {
        println!("  {name:<16} {:>7} {:>6} {:>6}", c.allow, c.deny, c.error);
    }
}

/// Path components that mark credentials: never suggested without a
/// confirmation, because allowing them hands the command a secret.
const CREDENTIALS: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".netrc",
    ".git-credentials",
    ".kube",
    ".docker",
    "keyrings",
    ".password-store",
    ".pgpass",
];

fn is_credential(path: &str) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    parts.iter().any(|p| CREDENTIALS.contains(p) || *p == ".env" || p.starts_with(".env."))
        || parts.windows(2).any(|w| w == [".config", "gh"] || w == [".config", "gcloud"])
}

/// The narrowest `--ro`/`--rw` flags that would have allowed every denied
/// (or, in learning mode, would-be-denied) access of the trail.
fn suggest(text: &str, confirm: bool, format: SuggestFormat) -> String {
    // Whether the recorded run had the system surface.
    let system = text.lines().next().is_some_and(|l| l.contains("system surface ("));
    // path -> (needs write, accesses, processes)
    let mut wanted: BTreeMap<String, (bool, u64, Vec<String>)> = BTreeMap::new();
    let mut impossible: BTreeMap<String, String> = BTreeMap::new();
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        if v["type"] != "decision" || !matches!(v["decision"].as_str(), Some("deny" | "would_deny")) {
            continue;
        }
        let Some(path) = v["resolved"].as_str() else { continue };
        let rule = v["rule"].as_str().unwrap_or_default();
        if rule.starts_with("deny ") || rule.contains("outside the sandbox") {
            impossible.insert(path.to_string(), rule.to_string());
            continue;
        }
        let access = v["access"].as_str().unwrap_or_default();
        let write = !matches!(access, "read" | "exec" | "stat");
        // A created (or removed) entry does not exist before (or after) the
        // run; its directory is what can be granted.
        let target = if matches!(access, "create" | "delete") { parent(path) } else { path.to_string() };
        let e = wanted.entry(target).or_default();
        e.0 |= write;
        e.1 += 1;
        let comm = v["comm"].as_str().unwrap_or_default().to_string();
        if !e.2.contains(&comm) {
            e.2.push(comm);
        }
    }
    let credentials: Vec<String> = wanted.keys().filter(|p| is_credential(p)).cloned().collect();
    // Three or more entries of one directory: grant the directory instead.
    let mut by_dir: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in wanted.keys() {
        by_dir.entry(parent(p)).or_default().push(p.clone());
    }
    for (dir, paths) in by_dir {
        if paths.len() >= 3 && dir != "/" {
            let mut merged = (false, 0, Vec::new());
            for p in paths {
                let (w, n, who) = wanted.remove(&p).unwrap_or_default();
                merged.0 |= w;
                merged.1 += n;
                merged.2.extend(who.into_iter().filter(|c| !merged.2.contains(c)).collect::<Vec<_>>());
            }
            let e = wanted.entry(dir).or_default();
            e.0 |= merged.0;
            e.1 += merged.1;
            e.2.extend(merged.2);
        }
    }
    // A grant is withheld (printed only as a commented warning) when it is
    // the root, a credential, or would cover a credential the run touched.
    let exposes = |g: &str| credentials.iter().any(|c| c.starts_with(&format!("{g}/")));
    let withheld = |g: &str| g == "/" || (!confirm && (is_credential(g) || exposes(g)));
    // Drop entries already covered by a suggested ancestor with enough rights.
    let granted: Vec<(String, bool)> =
        wanted.iter().filter(|(p, _)| !withheld(p)).map(|(p, e)| (p.clone(), e.0)).collect();
    wanted.retain(|p, e| !granted.iter().any(|(g, w)| g != p && (*w || !e.0) && p.starts_with(&format!("{g}/"))));
    let mut items = Vec::new();
    for (path, (write, n, who)) in &wanted {
        let why = format!("{n} access(es) by {}", who.join(", "));
        if path == "/" {
            items.push(Item { path, write: *write, why, withheld: Some("would grant the whole file system".into()) });
            continue;
        }
        // A grant that would also cover a credential the run touched is
        // as good as suggesting the credential itself.
        let exposed: Vec<&String> =
            credentials.iter().filter(|c| c.starts_with(&format!("{path}/")) && !is_credential(path)).collect();
        let withheld = if !exposed.is_empty() && !confirm {
            Some(format!(
                "WARNING: not suggested, it would also expose the credential location(s) {}",
                exposed.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ")
            ))
        } else if is_credential(path) && !confirm {
            Some("WARNING: credential location, not suggested".into())
        } else {
            None
        };
        let why = if is_credential(path) && confirm {
            format!("{why}; credential location, included because of --confirm-credentials")
        } else {
            why
        };
        items.push(Item { path, write: *write, why, withheld });
    }
    let mut out = match format {
        SuggestFormat::Flags => flags(&items),
        SuggestFormat::Policy => policy(&items, system),
    };
    for (path, rule) in &impossible {
        out.push_str(&format!("# cannot be allowed: {path} ({rule})\n"));
    }
    out
}

struct Item<'a> {
    path: &'a str,
    write: bool,
    why: String,
    /// Printed only as a commented warning, for this reason.
    withheld: Option<String>,
}

fn flags(items: &[Item<'_>]) -> String {
    let mut out = String::from("# flags that would have allowed every denied access of this run\n");
    for i in items {
        let flag = if i.write { "--rw" } else { "--ro" };
        match &i.withheld {
            Some(w) => out.push_str(&format!("# {w} ({}); if you mean it:\n#   {flag} {}\n", i.why, i.path)),
            None => out.push_str(&format!("{flag} {}\n# ^ {}\n", i.path, i.why)),
        }
    }
    out
}

/// The suggestion as a policy file (`run --policy`), each entry with a
/// comment saying which accesses asked for it.
fn policy(items: &[Item<'_>], system: bool) -> String {
    let quote = |p: &str| serde_json::to_string(p).expect("a string serializes");
    let mut out = String::from(
        "# A policy that would have allowed every denied access of this run\n\
         # (interpose report --suggest). Review it before use; run with the\n\
         # run's own flags too: interpose run --policy THIS_FILE --rw ... -- CMD\n",
    );
    if system {
        out.push_str("extends = [\"system\"]\n");
    }
    let mut warnings = String::new();
    for (key, write) in [("additional_reads", false), ("additional_writes", true)] {
        let mut list = String::new();
        for i in items.iter().filter(|i| i.write == write) {
            match &i.withheld {
                Some(w) => warnings.push_str(&format!(
                    "# {w} ({}); if you mean it, add to {key}:\n#   {},\n",
                    i.why,
                    quote(i.path)
                )),
                None => list.push_str(&format!("    {},  # {}\n", quote(i.path), i.why)),
            }
        }
        if !list.is_empty() {
            out.push_str(&format!("{key} = [\n{list}]\n"));
        }
    }
    out.push_str(&warnings);
    out
}

/// One denial, for the HTML page's timeline and table.
#[derive(Debug, Serialize)]
struct Denial {
    /// Seconds since the session started.
    t: f64,
    pid: u64,
    comm: String,
    syscall: String,
    access: String,
    path: String,
    rule: String,
    code: String,
}

fn denial_rows(text: &str) -> Vec<Denial> {
    let mut start = None;
    let mut out = Vec::new();
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        let time = v["time_ns"].as_u64().unwrap_or(0);
        if v["type"] == "session_start" {
            start = Some(time);
        }
        if v["type"] != "decision" || !matches!(v["decision"].as_str(), Some("deny" | "would_deny")) {
            continue;
        }
        let base = *start.get_or_insert(time);
        let resolved = if v["resolved"].is_null() { path_text(&v["path"]) } else { path_text(&v["resolved"]) };
        let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
        out.push(Denial {
            t: time.saturating_sub(base) as f64 / 1e9,
            pid: v["pid"].as_u64().unwrap_or(0),
            comm: s("comm"),
            syscall: s("syscall"),
            access: s("access"),
            path: resolved,
            rule: s("rule"),
            code: s("code"),
        });
    }
    out
}

/// The page: a fixed template with the report's data embedded as JSON and
/// rendered by its own script. Written to a temporary name and renamed, so
/// OUT is never left half-written.
fn write_html(out: &std::path::Path, report: &Report, text: &str) -> std::io::Result<()> {
    const TEMPLATE: &str = include_str!("report.html");
    let data = serde_json::json!({ "report": report, "denials": denial_rows(text) });
    // Inside <script>, `</` could end the element early; `<\/` is the same
    // JSON string.
    let data = serde_json::to_string(&data).expect("serializable").replace("</", "<\\/").replace("<!--", "<\\u0021--");
    let page = TEMPLATE.replacen("/*DATA*/", &data, 1);
    let mut tmp = out.as_os_str().to_owned();
    tmp.push(".tmp");
    std::fs::write(&tmp, page)?;
    std::fs::rename(&tmp, out)
}

/// Runs the verb; returns the exit code.
pub fn run(args: &ReportArgs) -> i32 {
    let text = match std::fs::read_to_string(&args.file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("interpose: {}: {e}", args.file.display());
            return 2;
        }
    };
    if args.verify {
        return match crate::audit::verify(&text) {
            Ok(n) => {
                println!("{}: chain intact, {n} records", args.file.display());
                0
            }
            Err(e) => {
                println!("{}: {e}", args.file.display());
                1
            }
        };
    }
    if args.suggest {
        print!("{}", suggest(&text, args.confirm_credentials, args.suggest_as));
        return 0;
    }
    let report = build(&text);
    if let Some(out) = &args.html {
        if let Err(e) = write_html(out, &report, &text) {
            eprintln!("interpose: --html {}: {e}", out.display());
            return 2;
        }
    }
    match args.format {
        ReportFormat::Text => print_text(&report),
        ReportFormat::Json => println!("{}", serde_json::to_string_pretty(&report).expect("serializable")),
    }
    0
}
