//! `report --suggest`: the narrowest grants under which a recorded run would
//! have had no refusals.
//!
//! Every suggestion is
//! - **needed**: each grant is proven necessary by replaying the trail's
//!   refusals without it against the recorded surface; one that another
//!   grant makes redundant is dropped;
//! - **valid**: what is suggested, added to the recorded surface, allows
//!   every refusal it claims to (checked here; a test runs the command again
//!   under the suggested policy and sees no refusal);
//! - **safe**: a grant that is a credential location, or that would cover
//!   one (a whole home directory holding `~/.ssh`), is printed only as a
//!   commented warning unless `--confirm-credentials`; carve-outs and
//!   `/proc` of outside processes are listed as what nothing can allow.
//!
//! Hosts the proxy refused become `--net allow=` (`[net] allow` in a
//! policy); refused TCP connects under `--net connect=` become `--net
//! connect=PORTS`, never a path; direct connections refused because every
//! connection goes through the proxy are listed, as nothing a policy lifts.

use super::{allows, credentials_beneath, is_credential, recorded_surface, replayable, sanitize};
use crate::audit::{self, AccessKind, ChainError, Reader, RuleKind};
use crate::policy::{Mode, Origin, Rule, Surface};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One suggested grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The path to grant.
    pub path: PathBuf,
    /// Read-write (else read-only).
    pub write: bool,
    /// How many recorded refusals asked for it.
    pub accesses: u64,
    /// The processes that asked.
    pub who: BTreeSet<String>,
    /// Printed only as a commented warning, for this reason.
    pub withheld: Option<String>,
}

/// What `--suggest` found.
#[derive(Debug, Default)]
pub struct Suggestion {
    /// The grants, active and withheld, sorted by path.
    pub grants: Vec<Grant>,
    /// Refusals nothing can lift: path and the rule that refused it.
    pub impossible: BTreeMap<String, String>,
    /// Refused TCP ports and how often.
    pub ports: BTreeMap<u16, u64>,
    /// Hosts the proxy refused (`host`, port) and how often.
    pub hosts: BTreeMap<(String, u16), u64>,
    /// Direct connections refused (the program did not use the proxy).
    pub direct: BTreeSet<String>,
    /// Refused paths a policy file cannot name (not UTF-8).
    pub unexpressible: BTreeSet<String>,
    /// The policy file the recorded run had, if any (the suggestion adds
    /// to it).
    pub policy_file: Option<String>,
    /// Whether the trail's chain is intact.
    pub integrity: Option<Result<usize, ChainError>>,
}

/// A refusal to lift.
struct Need {
    decision: audit::Decision,
    target: PathBuf,
    write: bool,
}

/// Builds the suggestion from a trail. `home` is the user's home
/// directory, never suggested as a whole.
pub fn suggest<R: std::io::BufRead>(
    mut reader: Reader<R>,
    confirm: bool,
    home: Option<&Path>,
) -> std::io::Result<Suggestion> {
    let mut out =
        Suggestion { policy_file: reader.start.policy.as_ref().and_then(|p| p.file.clone()), ..Suggestion::default() };
    let recorded = recorded_surface(&reader.start);
    let mut needs: Vec<Need> = Vec::new();
    let mut seen: std::collections::HashMap<(audit::Bytes, AccessKind), usize> = std::collections::HashMap::new();
    for record in reader.by_ref() {
        let d = match record? {
            audit::Record::Decision(d) => d,
            audit::Record::Connection(c) if c.decision.refuses() => {
                *out.hosts.entry((c.host.clone(), c.port)).or_default() += 1;
                continue;
            }
            _ => continue,
        };
        if !d.decision.refuses() {
            continue;
        }
        if d.access == AccessKind::Connect && d.rule == audit::DIRECT_REFUSED {
            out.direct.insert(sanitize(&d.path.lossy()));
            continue;
        }
        if d.access == AccessKind::Connect {
            let port = d.path.lossy().rsplit(':').next().and_then(|p| p.parse().ok());
            if let Some(port) = port {
                *out.ports.entry(port).or_default() += 1;
            }
            continue;
        }
        let subject = d.subject().lossy();
        if matches!(d.rule_kind, RuleKind::CarveOut | RuleKind::ProcOutside | RuleKind::Terminal) {
            out.impossible.insert(sanitize(&subject), sanitize(&d.rule));
            continue;
        }
        if !replayable(&d) {
            continue;
        }
        if std::str::from_utf8(&d.subject().0).is_err() {
            out.unexpressible.insert(sanitize(&subject));
            continue;
        }
        if let Some(&first) = seen.get(&(d.subject().clone(), d.access)) {
            // The same access again: counted on its grant.
            let (target, write) = (needs[first].target.clone(), needs[first].write);
            needs.push(Need { decision: *d, target, write });
            continue;
        }
        seen.insert((d.subject().clone(), d.access), needs.len());
        let path = PathBuf::from(&subject);
        // A created (or removed) entry does not exist before (or after)
        // the run: its directory is what can be granted.
        let target = match d.access {
            AccessKind::Create | AccessKind::Delete => path.parent().map_or(path.clone(), Path::to_path_buf),
            _ => path,
        };
        let write = d.access.is_mutation();
        needs.push(Need { decision: *d, target, write });
    }
    out.integrity = Some(reader.integrity());

    // One grant per target, then siblings merged into their directory.
    let mut grants: BTreeMap<PathBuf, Grant> = BTreeMap::new();
    for n in &needs {
        let g = grants.entry(n.target.clone()).or_insert_with(|| Grant {
            path: n.target.clone(),
            write: false,
            accesses: 0,
            who: BTreeSet::new(),
            withheld: None,
        });
        g.write |= n.write;
        g.accesses += 1;
        g.who.insert(sanitize(&n.decision.comm));
    }
    let credentials: Vec<PathBuf> =
        needs.iter().map(|n| PathBuf::from(n.decision.subject().lossy())).filter(|p| is_credential(p)).collect();
    let exposes = |dir: &Path| -> Vec<PathBuf> {
        let mut found: Vec<PathBuf> = credentials.iter().filter(|c| c.starts_with(dir) && *c != dir).cloned().collect();
        found.extend(credentials_beneath(dir));
        found.sort();
        found.dedup();
        found
    };
    let mut by_dir: BTreeMap<PathBuf, Vec<PathBuf>> = BTreeMap::new();
    for p in grants.keys() {
        if let Some(dir) = p.parent() {
            by_dir.entry(dir.to_path_buf()).or_default().push(p.clone());
        }
    }
    for (dir, paths) in by_dir {
        if paths.len() < 3 || crate::policy::credentials::too_broad(&dir, home) || !exposes(&dir).is_empty() {
            continue;
        }
        let mut merged = Grant { path: dir.clone(), write: false, accesses: 0, who: BTreeSet::new(), withheld: None };
        for p in paths {
            if let Some(g) = grants.remove(&p) {
                merged.write |= g.write;
                merged.accesses += g.accesses;
                merged.who.extend(g.who);
            }
        }
        match grants.get_mut(&dir) {
            Some(existing) => {
                existing.write |= merged.write;
                existing.accesses += merged.accesses;
                existing.who.extend(merged.who);
            }
            None => {
                grants.insert(dir, merged);
            }
        }
    }
    for g in grants.values_mut() {
        g.withheld = if g.path == Path::new("/") {
            Some("it would grant the whole file system".into())
        } else if let Some(what) = crate::policy::credentials::control_socket(&g.path) {
            // Never, confirmed or not: it is a way out, not a credential.
            Some(format!("{what}; granting it hands the command a way out of the sandbox"))
        } else if crate::policy::credentials::too_broad(&g.path, home) && !is_credential(&g.path) {
            // A home, /tmp, /usr, /etc whole: it holds everything else.
            Some(format!("{} is never suggested whole: it holds far more than the run needed", g.path.display()))
        } else if confirm {
            None
        } else if is_credential(&g.path) {
            Some("a credential location".into())
        } else {
            let exposed = exposes(&g.path);
            (!exposed.is_empty()).then(|| {
                format!(
                    "it would also expose the credential location(s) {}",
                    exposed.iter().map(|p| sanitize(&p.display().to_string())).collect::<Vec<_>>().join(", ")
                )
            })
        };
    }

    // Each active grant must be needed: replay the refusals it is meant to
    // lift without it; if the others (and the recorded surface) already
    // allow them all, it goes.
    let wanted: Vec<&audit::Decision> = needs
        .iter()
        .filter(|n| {
            grants.values().any(|g| g.withheld.is_none() && n.target.starts_with(&g.path) && (g.write || !n.write))
        })
        .map(|n| &n.decision)
        .collect();
    let with = |grants: &BTreeMap<PathBuf, Grant>, without: Option<&Path>| -> Surface {
        let mut s = recorded.clone();
        for g in grants.values().filter(|g| g.withheld.is_none() && Some(g.path.as_path()) != without) {
            let mode = if g.write { Mode::Rw } else { Mode::Ro };
            s.add(Rule { path: g.path.clone(), mode, origin: Origin::Flag("suggested".into()) });
        }
        s
    };
    let active: Vec<PathBuf> = grants.values().filter(|g| g.withheld.is_none()).map(|g| g.path.clone()).collect();
    for path in active.iter().rev() {
        let surface = with(&grants, Some(path));
        if wanted.iter().all(|d| allows(&surface, d)) {
            grants.remove(path);
        }
    }
    let all = with(&grants, None);
    debug_assert!(wanted.iter().all(|d| allows(&all, d)), "the suggestion allows what it was made for");
    out.grants = grants.into_values().collect();
    Ok(out)
}

/// TOML (and JSON) string syntax for a UTF-8 path.
fn quote(p: &Path) -> String {
    serde_json::to_string(&p.to_string_lossy()).expect("a string serializes")
}

fn why(g: &Grant) -> String {
    let who: Vec<&str> = g.who.iter().map(String::as_str).collect();
    format!("{} refusal(s), by {}", g.accesses, who.join(", "))
}

/// The hosts refused, as `--net allow=` entries.
fn hosts(s: &Suggestion) -> Vec<String> {
    s.hosts
        .keys()
        .map(|(host, port)| {
            let host = if host.contains(':') { format!("[{host}]") } else { host.clone() };
            if crate::policy::hosts::DEFAULT_PORTS.contains(port) {
                host
            } else {
                format!("{host}:{port}")
            }
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

fn footer(s: &Suggestion, out: &mut String) {
    for d in &s.direct {
        out.push_str(&format!(
            "# a direct connection to {d} was refused: the program did not use the proxy (HTTPS_PROXY); no allowlist lifts that
"
        ));
    }
    for (path, rule) in &s.impossible {
        out.push_str(&format!("# nothing can allow {path}: {rule}\n"));
    }
    for path in &s.unexpressible {
        out.push_str(&format!("# {path}: not UTF-8, a policy file cannot name it\n"));
    }
    if let Some(Err(e)) = &s.integrity {
        out.push_str(&format!("# WARNING: the trail is not intact ({e}); the suggestion covers what it holds\n"));
    }
}

fn ports(s: &Suggestion) -> String {
    s.ports.keys().map(u16::to_string).collect::<Vec<_>>().join(",")
}

/// The suggestion as one JSON object, for scripts: every grant with its
/// mode, count, processes and (for a withheld one) why it is withheld;
/// what nothing can allow; the network; the chain; and the same
/// suggestion rendered as a policy file and as flags.
pub fn as_json(s: &Suggestion) -> serde_json::Value {
    use serde_json::json;
    let grants: Vec<_> = s
        .grants
        .iter()
        .map(|g| {
            json!({
                "path": sanitize(&g.path.display().to_string()),
                "mode": if g.write { "rw" } else { "ro" },
                "accesses": g.accesses,
                "processes": g.who,
                "withheld": g.withheld,
            })
        })
        .collect();
    let impossible: Vec<_> = s.impossible.iter().map(|(path, rule)| json!({ "path": path, "rule": rule })).collect();
    let chain = match &s.integrity {
        Some(Ok(n)) => json!({ "intact": true, "records": n }),
        Some(Err(e)) => json!({ "intact": false, "error": e.to_string() }),
        None => serde_json::Value::Null,
    };
    json!({
        "policy_file": s.policy_file,
        "grants": grants,
        "impossible": impossible,
        "net_allow": hosts(s),
        "tcp_ports": s.ports.keys().collect::<Vec<_>>(),
        "direct_connections_refused": s.direct,
        "unexpressible": s.unexpressible,
        "chain": chain,
        "policy": as_policy(s),
        "flags": as_flags(s),
    })
}

/// The suggestion as `--ro`/`--rw` flags (and `--net connect=`).
pub fn as_flags(s: &Suggestion) -> String {
    let mut out = String::from("# flags that, added to the run's own, would have allowed every refusal of this run\n");
    if let Some(file) = &s.policy_file {
        out.push_str(&format!("# (the run had --policy {})\n", sanitize(file)));
    }
    for g in &s.grants {
        let flag = if g.write { "--rw" } else { "--ro" };
        match &g.withheld {
            Some(w) => out.push_str(&format!(
                "# WARNING: not suggested: {w} ({}); if you mean it:\n#   {flag} {}\n",
                why(g),
                sanitize(&g.path.display().to_string())
            )),
            None => out.push_str(&format!("{flag} {}\n# ^ {}\n", g.path.display(), why(g))),
        }
    }
    if !s.ports.is_empty() {
        out.push_str(&format!("--net connect={}\n# ^ refused TCP connects\n", ports(s)));
    }
    if !s.hosts.is_empty() {
        out.push_str(&format!("--net allow={}\n# ^ hosts the proxy refused\n", hosts(s).join(",")));
    }
    footer(s, &mut out);
    out
}

/// The suggestion as a policy file: it extends the run's own policy file
/// (if it had one) and adds what was refused.
pub fn as_policy(s: &Suggestion) -> String {
    let mut out = String::from(
        "# A policy that would have allowed every refusal of this run that can be\n\
         # allowed (interpose report --suggest). Review it before use. Use it with\n\
         # the run's own flags: interpose run --policy THIS_FILE ... -- CMD\n",
    );
    if let Some(file) = &s.policy_file {
        out.push_str(&format!("extends = [{}]\n", quote(Path::new(file))));
    }
    let mut warnings = String::new();
    for (key, write) in [("additional_reads", false), ("additional_writes", true)] {
        let mut list = String::new();
        for g in s.grants.iter().filter(|g| g.write == write) {
            match &g.withheld {
                Some(w) => warnings.push_str(&format!(
                    "# WARNING: not suggested: {w} ({}); if you mean it, add to {key}:\n#   {},\n",
                    why(g),
                    sanitize(&quote(&g.path))
                )),
                None => list.push_str(&format!("    {},  # {}\n", quote(&g.path), why(g))),
            }
        }
        if !list.is_empty() {
            out.push_str(&format!("{key} = [\n{list}]\n"));
        }
    }
    out.push_str(&warnings);
    if !s.ports.is_empty() {
        out.push_str(&format!("# refused TCP connects: add --net connect={} to the command line\n", ports(s)));
    }
    footer(s, &mut out);
    if !s.hosts.is_empty() {
        // Last: a table takes every key after it.
        let list: Vec<String> =
            hosts(s).iter().map(|h| format!("    {},  # refused by the proxy\n", quote(Path::new(h)))).collect();
        out.push_str(&format!("[net]\nallow = [\n{}]\n", list.concat()));
    }
    out
}
