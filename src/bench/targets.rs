//! The targets a run is held to, and the table it prints.

use super::{Cell, Results, Workload};
use serde::Serialize;

/// One target of issue 6, with what this run measured.
#[derive(Debug, Clone, Serialize)]
pub(super) struct Target {
    what: String,
    target: String,
    measured: String,
    /// None: not measured in this run (said why in `measured`).
    met: Option<bool>,
}

fn cell<'a>(rows: &'a [(String, Vec<(String, Cell)>)], row: &str, mode: &str) -> Option<&'a Cell> {
    let cells = &rows.iter().find(|(r, _)| r == row)?.1;
    cells.iter().find(|(m, _)| m == mode).map(|(_, c)| c).filter(|c| c.error.is_none() && !c.samples.is_empty())
}

/// `(mode - native) / (floor - native)` of the medians.
fn added_ratio(rows: &[(String, Vec<(String, Cell)>)], row: &str, mode: &str) -> Option<f64> {
    let native = cell(rows, row, "native")?.median;
    let floor = cell(rows, row, "notify-floor")?.median - native;
    Some((cell(rows, row, mode)?.median - native) / floor)
}

pub(super) fn targets(r: &Results) -> Vec<Target> {
    let mut out = Vec::new();
    let mut add =
        |what: &str, target: &str, value: Option<f64>, fmt: &dyn Fn(f64) -> String, ok: &dyn Fn(f64) -> bool| {
            out.push(Target {
                what: what.into(),
                target: target.into(),
                measured: value.map_or("not measured".into(), fmt),
                met: value.map(ok),
            });
        };
    let ratio = |x: f64| format!("{x:.2}x");
    let getppid = cell(&r.micro, Workload::Getppid.label(), "interpose")
        .zip(cell(&r.micro, Workload::Getppid.label(), "native"))
        .map(|(i, n)| i.median / n.median);
    add("untrapped syscall (getppid), interpose / native", "<= 1.10x", getppid, &ratio, &|x| x <= 1.10);
    for (what, workload, mode, limit) in [
        ("full: openat+close, audit off", Workload::Open, "interpose", 1.6),
        ("full: openat+close, audit all", Workload::Open, "interpose+audit", 1.8),
        ("full: newfstatat", Workload::Stat, "interpose", 1.5),
    ] {
        add(
            &format!("{what}: added cost / notify-floor's"),
            &format!("<= {limit}x"),
            added_ratio(&r.micro, workload.label(), mode),
            &ratio,
            &|x| x <= limit,
        );
    }
    for (name, _) in r.commands.iter().filter(|(n, _)| n != "/bin/true") {
        let v = cell(&r.commands, name, "interpose")
            .zip(cell(&r.commands, name, "notify-floor"))
            .map(|(i, f)| i.median / f.median);
        add(&format!("full: {name}: wall / notify-floor's"), "<= 1.3x", v, &ratio, &|x| x <= 1.3);
    }
    for (name, _) in r.commands.iter().filter(|(n, _)| n != "/bin/true") {
        let v = cell(&r.commands, name, "interpose --fast")
            .zip(cell(&r.commands, name, "native"))
            .map(|(f, n)| f.median / n.median);
        add(&format!("fast: {name}: wall / native"), "<= 1.2x", v, &ratio, &|x| x <= 1.2);
    }
    let parallel = r.parallel.iter().find(|(m, _)| m == "interpose").map(|(_, x)| *x);
    add("two processes trapping at once: aggregate / one", ">= 1.5x", parallel, &ratio, &|x| x >= 1.5);
    let startup = cell(&r.commands, "/bin/true", "interpose")
        .zip(cell(&r.commands, "/bin/true", "native"))
        .map(|(i, n)| i.median - n.median);
    add("interpose -- /bin/true: added wall time", "<= 5 ms", startup, &|x| format!("{x:.1} ms"), &|x| x <= 5.0);
    add("trie lookup at 10,000 entries", "<= 100 ns", Some(r.trie_ns_per_lookup), &|x| format!("{x:.0} ns"), &|x| {
        x <= 100.0
    });
    add(
        "trie memory per entry at 10,000 entries",
        "<= 128 B",
        Some(r.trie_bytes_per_entry),
        &|x| format!("{x:.0} B"),
        &|x| x <= 128.0,
    );
    out
}

pub(super) fn table(r: &Results) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "interpose bench: {} on {} (Linux {}, {} CPUs), {} round(s); median and p99 of every mode, its median over native's, and its added cost over notify-floor's",
        r.date, r.machine, r.kernel, r.cpus, r.rounds
    );
    let section = |s: &mut String, title: &str, rows: &[(String, Vec<(String, Cell)>)], unit: &str, scale: f64| {
        let _ = writeln!(
            s,
            "\n{title:<24} {:<18} {:>12} {:>12} {:>9} {:>12}",
            "mode", unit, "p99", "x native", "added/floor"
        );
        for (row, cells) in rows {
            let native = cell(rows, row, "native").map(|c| c.median);
            for (i, (mode, c)) in cells.iter().enumerate() {
                let name = if i == 0 { row.as_str() } else { "" };
                if let Some(e) = &c.error {
                    let _ = writeln!(s, "{name:<24} {mode:<18} failed: {e}");
                    continue;
                }
                let x = native.map_or(String::new(), |n| format!("{:.2}", c.median / n));
                let added = if mode == "native" || mode == "notify-floor" {
                    String::new()
                } else {
                    added_ratio(rows, row, mode).map_or(String::new(), |a| format!("{a:.2}"))
                };
                let _ = writeln!(
                    s,
                    "{name:<24} {mode:<18} {:>12.2} {:>12.2} {x:>9} {added:>12}",
                    c.median / scale,
                    c.p99 / scale
                );
            }
        }
    };
    section(&mut s, "per operation", &r.micro, "us/op", 1e3);
    section(&mut s, "whole commands", &r.commands, "ms", 1.0);
    let _ = writeln!(s, "\ntwo processes trapping openat at once, aggregate rate over one process:");
    for (mode, x) in &r.parallel {
        let _ = writeln!(s, "  {mode:<18} {x:.2}x");
    }
    let _ = writeln!(s, "\ntargets:");
    for t in &r.targets {
        let mark = match t.met {
            Some(true) => "met",
            Some(false) => "NOT MET",
            None => "n/a",
        };
        let _ = writeln!(s, "  {:<7} {:<62} {:>10}  (target {})", mark, t.what, t.measured, t.target);
    }
    s
}
