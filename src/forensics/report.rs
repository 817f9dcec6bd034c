//! What an audit trail says, grouped for a person (or a machine) reviewing
//! a session. The trail is streamed through the typed records of
//! [`crate::audit`]; everything the sandbox controls (paths, process names,
//! argv) is shown with its control characters escaped.

use super::sanitize;
use crate::audit::{ModeName, Reader, Record, RuleKind, Verdict};
use serde::Serialize;
use std::collections::BTreeMap;

/// Refusals under one directory.
#[derive(Debug, Default, Serialize)]
struct DenialGroup {
    count: u64,
    first_ns: u64,
    last_ns: u64,
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
    ppid: Option<u32>,
    argv: Vec<String>,
    decisions: u64,
    denials: u64,
}

/// Counts for one syscall.
#[derive(Debug, Default, Serialize)]
struct SyscallCounts {
    allow: u64,
    deny: u64,
    would_deny: u64,
    error: u64,
}

/// The whole report.
#[derive(Debug, Default, Serialize)]
pub struct Report {
    chain: String,
    /// When the session started: every time in the text and the page is
    /// counted from it.
    start_ns: u64,
    command: Vec<String>,
    mode: ModeName,
    exit_status: Option<i32>,
    /// The session ended because its supervisor died.
    supervisor_lost: bool,
    decisions: u64,
    /// Refusals enforced.
    denials: u64,
    /// Learning mode: refusals enforcement would have made.
    would_deny: u64,
    denials_by_directory: BTreeMap<String, DenialGroup>,
    processes: BTreeMap<u32, ProcessCounts>,
    syscalls: BTreeMap<String, SyscallCounts>,
    /// Connections through the proxy, by `host:port`.
    hosts: BTreeMap<String, HostCounts>,
    /// Questions asked of a person (`--ask`), in the order they settled.
    questions: Vec<QuestionRow>,
}

/// One question asked of a person (`--ask`).
#[derive(Debug, Serialize)]
struct QuestionRow {
    id: u64,
    /// Seconds from the session's start to the question.
    at_ns: u64,
    pid: u32,
    exe: String,
    path: String,
    access: String,
    decision: Verdict,
    scope: String,
    by: String,
    wait_ms: u64,
    calls: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    policy_error: Option<String>,
}

/// Connections through the proxy to one `host:port`.
#[derive(Debug, Default, Serialize)]
struct HostCounts {
    allowed: u64,
    refused: u64,
    /// Allowed but unreachable.
    failed: u64,
    bytes_up: u64,
    bytes_down: u64,
    /// The allowlist entry that allowed it, or the flag that would.
    rule: String,
}

/// How many characters of a command line the text and the page show (the
/// JSON report keeps it whole).
const ARGV_SHOWN: usize = 80;

/// How many characters of the session's command the text and the page
/// show.
const COMMAND_SHOWN: usize = 200;

/// `s` cut to `n` characters, the cut marked with an ellipsis.
fn shorten(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    let mut cut: String = s.chars().take(n - 1).collect();
    cut.push('…');
    cut
}

fn parent(path: &str) -> String {
    match path.rfind('/') {
        Some(0) => "/".into(),
        Some(i) => path[..i].into(),
        None => path.into(),
    }
}

/// Reads the whole trail once: the report, and the refusals for the page.
pub fn build<R: std::io::BufRead>(reader: &mut Reader<R>) -> std::io::Result<(Report, Vec<Denial>)> {
    let start_ns = reader.start.time_ns;
    let mut r = Report {
        command: reader.start.command.iter().map(|a| sanitize(&a.lossy())).collect(),
        mode: reader.start.mode.name,
        start_ns,
        ..Report::default()
    };
    let surface = crate::forensics::recorded_surface(&reader.start);
    let mut rows = Vec::new();
    for record in reader.by_ref() {
        match record? {
            Record::SessionStart(_) | Record::Anchor(_) => {}
            // Allowed again after their first record: counted as decisions.
            Record::Repeats(rep) => r.decisions += rep.counts.iter().map(|[_, n]| n).sum::<u64>(),
            Record::SessionEnd(end) => {
                r.exit_status = Some(end.exit_status);
                r.supervisor_lost = end.supervisor_lost.is_some();
            }
            Record::Connection(c) => {
                let host = if c.host.contains(':') { format!("[{}]", c.host) } else { c.host.clone() };
                let h = r.hosts.entry(sanitize(&format!("{host}:{}", c.port))).or_default();
                match c.decision {
                    Verdict::Allow => h.allowed += 1,
                    Verdict::Error => h.failed += 1,
                    Verdict::Deny | Verdict::WouldDeny => h.refused += 1,
                }
                h.bytes_up += c.bytes_up;
                h.bytes_down += c.bytes_down;
                if h.rule.is_empty() || c.decision == Verdict::Allow {
                    h.rule = sanitize(&c.rule);
                }
            }
            Record::Question(q) => r.questions.push(QuestionRow {
                id: q.id,
                at_ns: q.time_ns,
                pid: q.pid,
                exe: sanitize(&q.exe.lossy()),
                path: sanitize(&q.path.lossy()),
                access: format!("{:?}", q.access).to_lowercase(),
                decision: q.decision,
                scope: sanitize(&q.scope),
                by: sanitize(&q.by),
                wait_ms: q.wait_ms,
                calls: q.calls,
                policy_error: q.policy_error.as_deref().map(sanitize),
            }),
            Record::Exec(e) => {
                let p = r.processes.entry(e.pid).or_default();
                p.ppid = Some(e.ppid);
                p.argv = e.argv.iter().map(|a| sanitize(&a.lossy())).collect();
            }
            Record::Decision(d) => {
                r.decisions += 1;
                let sc = r.syscalls.entry(d.syscall.to_string()).or_default();
                match d.decision {
                    Verdict::Allow => sc.allow += 1,
                    Verdict::Deny => sc.deny += 1,
                    Verdict::WouldDeny => sc.would_deny += 1,
                    Verdict::Error => sc.error += 1,
                }
                let p = r.processes.entry(d.pid).or_default();
                p.decisions += 1;
                // The latest name: a process is known by what it exec'd last.
                // Records are written as workers finish, not in call order,
                // so "latest" is by time, and the exec call itself (made by
                // the image being replaced) does not count.
                let exec = matches!(d.syscall.as_ref(), "execve" | "execveat");
                if !d.comm.is_empty() && !exec && d.time_ns >= p.named_at {
                    p.comm = sanitize(&d.comm);
                    p.named_at = d.time_ns;
                }
                if !d.decision.refuses() {
                    continue;
                }
                match d.decision {
                    Verdict::WouldDeny => r.would_deny += 1,
                    _ => r.denials += 1,
                }
                p.denials += 1;
                let subject = sanitize(&d.subject().lossy());
                let access = format!("{:?}", d.access).to_lowercase();
                let g = r.denials_by_directory.entry(parent(&subject)).or_default();
                g.count += 1;
                g.first_ns = if g.first_ns == 0 { d.time_ns } else { g.first_ns.min(d.time_ns) };
                g.last_ns = g.last_ns.max(d.time_ns);
                if !g.accesses.contains(&access) {
                    g.accesses.push(access.clone());
                }
                if g.examples.len() < 3 && !g.examples.contains(&subject) {
                    g.examples.push(subject.clone());
                }
                let rule = sanitize(&d.rule);
                if !g.rules.contains(&rule) {
                    g.rules.push(rule.clone());
                }
                if g.allowed_by.is_empty() {
                    g.allowed_by = match (d.rule_kind, d.access.access()) {
                        (RuleKind::CarveOut, _) => "nothing: a carve-out of the surface".into(),
                        (RuleKind::ProcOutside, _) => "nothing: /proc of a process outside the sandbox".into(),
                        (RuleKind::Terminal, _) => "nothing: a terminal the command did not create".into(),
                        (_, None) => "--net connect= with the port".into(),
                        // The denied path itself: the remedy picks the
                        // narrowest grant that covers it, never a tree that
                        // is too broad or holds credentials.
                        (_, Some(a)) => {
                            surface.remedy(std::path::Path::new(&subject), a, crate::policy::Reason::NoRule)
                        }
                    };
                }
                rows.push(Denial {
                    t: d.time_ns.saturating_sub(start_ns) as f64 / 1e9,
                    pid: d.pid,
                    comm: sanitize(&d.comm),
                    syscall: d.syscall.to_string(),
                    access,
                    path: subject,
                    rule,
                    code: d.context.as_ref().map(|c| sanitize(&c.code)).unwrap_or_default(),
                    decision: d.decision,
                });
            }
        }
    }
    r.chain = match checked(reader, None) {
        Ok(what) => what,
        Err(e) => format!("NOT INTACT: {e}"),
    };
    Ok((r, rows))
}

fn seconds(ns: u64, start: u64) -> f64 {
    ns.saturating_sub(start) as f64 / 1e9
}

/// Prints the report for a person.
pub fn print_text(r: &Report) {
    println!("command:    {}", shorten(&r.command.join(" "), COMMAND_SHOWN));
    let exit = match (r.exit_status, r.supervisor_lost) {
        (_, true) => "(unknown: the supervisor died before the session ended)".into(),
        (Some(s), false) => s.to_string(),
        (None, false) => "(no session_end)".into(),
    };
    println!("exit:       {exit}");
    println!("chain:      {}", r.chain);
    println!("mode:       {}", format!("{:?}", r.mode).to_lowercase());
    match r.mode {
        ModeName::Learn => println!(
            "decisions:  {} ({} would have been denied under enforcement; learning enforced only the carve-outs, {} denied)",
            r.decisions, r.would_deny, r.denials
        ),
        _ => println!("decisions:  {} ({} denied)", r.decisions, r.denials),
    }
    let start = r.start_ns;
    if !r.denials_by_directory.is_empty() {
        println!("\ndenials by directory (first-last, in seconds from the session's start):");
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
    if !r.hosts.is_empty() {
        println!("\nhosts (proxy, loopback forwards): allowed refused failed   bytes up/down");
        for (host, h) in &r.hosts {
            println!(
                "  {host:<32} {:>6} {:>7} {:>6}   {}/{}  {}",
                h.allowed, h.refused, h.failed, h.bytes_up, h.bytes_down, h.rule
            );
        }
    }
    if !r.questions.is_empty() {
        println!("\nquestions (--ask; seconds from the start, the answer, its scope, who settled it, time to answer):");
        for q in &r.questions {
            let decision = if q.decision == Verdict::Allow { "allowed" } else { "refused" };
            println!(
                "  {:>7.3}  #{} {} {} by {} {}: {decision} ({}), by {}, after {} ms{}",
                seconds(q.at_ns, start),
                q.id,
                q.access,
                q.path,
                q.pid,
                q.exe,
                q.scope,
                q.by,
                q.wait_ms,
                if q.calls > 1 { format!(", {} calls", q.calls) } else { String::new() }
            );
            if let Some(e) = &q.policy_error {
                println!("           the rule was not written into the policy: {e}");
            }
        }
    }
    println!("\nprocess tree (decisions, denials):");
    let children = |parent: Option<u32>| -> Vec<u32> {
        r.processes
            .iter()
            .filter(|(pid, p)| match parent {
                Some(pp) => p.ppid == Some(pp) && **pid != pp,
                None => p.ppid.is_none_or(|pp| !r.processes.contains_key(&pp)),
            })
            .map(|(pid, _)| *pid)
            .collect()
    };
    fn walk(r: &Report, pid: u32, depth: usize, children: &dyn Fn(Option<u32>) -> Vec<u32>) {
        let p = &r.processes[&pid];
        let what = if p.argv.is_empty() { p.comm.clone() } else { p.argv.join(" ") };
        let what = shorten(&what, ARGV_SHOWN);
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

/// One refusal, for the HTML page's timeline and table.
#[derive(Debug, Serialize)]
pub struct Denial {
    /// Seconds since the session started.
    t: f64,
    pid: u32,
    comm: String,
    syscall: String,
    access: String,
    path: String,
    rule: String,
    code: String,
    decision: Verdict,
}

/// The page: a fixed template with the report's data embedded as JSON and
/// rendered by its own script (as text, never as markup). Written to a
/// temporary name and renamed, so OUT is never left half-written.
pub fn write_html(out: &std::path::Path, report: &Report, rows: &[Denial], force: bool) -> std::io::Result<()> {
    use std::io::Write;
    const TEMPLATE: &str = include_str!("report.html");
    let data = serde_json::json!({ "report": report, "denials": rows });
    // Inside <script>, `</` could end the element early; `<\/` is the same
    // JSON string.
    let data = serde_json::to_string(&data).expect("serializable").replace("</", "<\\/").replace("<!--", "<\\u0021--");
    let page = TEMPLATE.replacen("/*DATA*/", &data, 1);
    let mut tmp = out.as_os_str().to_owned();
    tmp.push(format!(".{}.tmp", std::process::id()));
    let tmp = std::path::PathBuf::from(tmp);
    std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?.write_all(page.as_bytes())?;
    // Never over a file that exists, unless asked: without --force a hard
    // link puts the page in place only where no name is (no window between
    // a check and the write), and the temporary name goes.
    let placed = if force { std::fs::rename(&tmp, out) } else { std::fs::hard_link(&tmp, out) };
    let _ = std::fs::remove_file(&tmp);
    placed.map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => {
            std::io::Error::new(e.kind(), "exists; not overwritten (--force replaces it)")
        }
        _ => e,
    })
}

/// The chain checked, and its anchor with the key at `key` (or the
/// default key): what holds, in words, or what does not. Without a key
/// file the anchor cannot be checked, which is an error too.
pub fn checked<R: std::io::BufRead>(
    reader: &Reader<R>,
    key: Option<&std::path::Path>,
) -> Result<String, crate::audit::ChainError> {
    use crate::audit::{ChainError, TrailKey};
    let lines = reader.integrity()?;
    let path = key.map(std::path::Path::to_path_buf).or_else(crate::audit::key::default_path);
    match path.as_deref().map(TrailKey::load) {
        Some(Ok(key)) => reader.verified(&key).map(|n| {
            let what = format!("intact and anchored with key {} ({n} records)", key.id);
            match reader.supervisor_lost() {
                None => what,
                Some((lost, closed_ns)) => format!(
                    "{what}; but its supervisor died before the session ended: a restarted agent (pid {}) closed                      the trail {:.1} s after the session started{}. The records before the close are chained, never                      anchored by the supervisor that wrote them; the calls made after its death failed (ENOSYS)                      and are not recorded",
                    lost.closed_by_pid,
                    seconds(*closed_ns, reader.start.time_ns),
                    match lost.torn_bytes {
                        0 => String::new(),
                        n => format!(", removing {n} bytes of a record its death cut short"),
                    }
                ),
            }
        }),
        _ if reader.anchor_key().is_none() => Err(ChainError::Unanchored),
        Some(Err(e)) => Err(ChainError::NoKey { lines, why: format!("{}: {e}", path.unwrap_or_default().display()) }),
        None => Err(ChainError::NoKey { lines, why: "HOME is unset".into() }),
    }
}
