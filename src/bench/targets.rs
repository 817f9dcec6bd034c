//! The targets a run is held to, and the table it prints.

use super::modes::{
    AUDIT, CONTINUE_FLOOR, EMULATE_FLOOR, FAST, FULL, NATIVE, NOTIFY_FLOOR, RUNC, RUNC_AGENT, STAT_FLOOR,
};
use super::{Cell, Results, Workload, STARTUP};
use serde::Serialize;

/// One target (of issues 16, 26, 33 and 36), with what this run measured.
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

/// What `mode` adds over native on `row` (median).
fn added(rows: &[(String, Vec<(String, Cell)>)], row: &str, mode: &str) -> Option<f64> {
    Some(cell(rows, row, mode)?.median - cell(rows, row, NATIVE)?.median)
}

/// `mode`'s added cost on `row` over `floor`'s added cost on `floor_row`.
fn added_ratio(
    rows: &[(String, Vec<(String, Cell)>)],
    row: &str,
    mode: &str,
    floor: &str,
    floor_row: &str,
) -> Option<f64> {
    Some(added(rows, row, mode)? / added(rows, floor_row, floor)?)
}

/// The floor the table's last column divides by: the emulate floor
/// when it was built, else interpose's own notification floor.
fn reference_floor(r: &Results) -> &'static str {
    if r.modes.iter().any(|m| m == EMULATE_FLOOR) {
        EMULATE_FLOOR
    } else {
        NOTIFY_FLOOR
    }
}

/// The worst ratio of `num` over `den` across the whole commands (all
/// but start-up), naming the command; `None` if any is missing.
fn worst_command(r: &Results, num: &str, den: &str) -> Option<(f64, String)> {
    let mut worst: Option<(f64, String)> = None;
    for (name, _) in r.commands.iter().filter(|(n, _)| n != STARTUP) {
        let x = cell(&r.commands, name, num)?.median / cell(&r.commands, name, den)?.median;
        if worst.as_ref().is_none_or(|(w, _)| x > *w) {
            worst = Some((x, name.clone()));
        }
    }
    worst
}

pub(super) fn targets(r: &Results) -> Vec<Target> {
    let mut out = Vec::new();
    let mut add = |what: &str, target: &str, measured: Option<String>, met: Option<bool>| {
        out.push(Target {
            what: what.into(),
            target: target.into(),
            measured: measured.unwrap_or_else(|| "not measured".into()),
            met,
        });
    };
    let ratio = |x: Option<f64>, limit: f64, at_most: bool| {
        (x.map(|x| format!("{x:.2}x")), x.map(|x| if at_most { x <= limit } else { x >= limit }))
    };
    let open = Workload::Open.label();
    let relative = Workload::OpenRelative.label();
    let stat = Workload::Stat.label();
    let (m, ok) = ratio(added_ratio(&r.micro, open, FULL, EMULATE_FLOOR, open), 1.0, true);
    add("full: openat+close added / emulate floor's", "<= 1.00x", m, ok);
    // Issue 33: an open, absolute or relative, at most 1.2x what the
    // continue floor adds; a stat, which must also be read and written
    // back, 1.5x.
    for row in [open, relative] {
        let (m, ok) = ratio(added_ratio(&r.micro, row, FULL, CONTINUE_FLOOR, row), 1.2, true);
        add(&format!("full: {row} added / continue floor's"), "<= 1.20x", m, ok);
    }
    let (m, ok) = ratio(added_ratio(&r.micro, stat, FULL, CONTINUE_FLOOR, stat), 1.5, true);
    add("full: newfstatat added / continue floor's", "<= 1.50x", m, ok);
    let (m, ok) = ratio(added_ratio(&r.micro, stat, FULL, EMULATE_FLOOR, open), 1.0, true);
    add("full: newfstatat added / emulate floor's openat added", "<= 1.00x", m, ok);
    // This project's own yardstick, beside the issue's: a stat performed
    // the least a supervisor deciding metadata can (the stat-emulate
    // floor), held to what issue 33 allows an open over the emulate floor;
    // so is a `readlink` of a name that is no link, which that floor
    // answers with the same lookup.
    for w in [Workload::Stat, Workload::Fstat, Workload::Readlink] {
        let (m, ok) = ratio(added_ratio(&r.micro, w.label(), FULL, STAT_FLOOR, w.label()), 1.25, true);
        add(&format!("full: {} added / stat-emulate floor's", w.label()), "<= 1.25x", m, ok);
    }
    // Calls the supervisor always performs itself (issue 26), held to the
    // target of opens against the same call continued by the continue
    // floor (its filter is interpose's, so it traps the socket calls too).
    for (w, floor, name) in [
        (Workload::DevOpen, CONTINUE_FLOOR, "continue floor's"),
        (Workload::UnixConnect, CONTINUE_FLOOR, "continue floor's"),
        (Workload::UnixSendto, CONTINUE_FLOOR, "continue floor's"),
        (Workload::Fstat, CONTINUE_FLOOR, "continue floor's"),
    ] {
        let (m, ok) = ratio(added_ratio(&r.micro, w.label(), FULL, floor, w.label()), 1.2, true);
        add(&format!("full: {} added / {name}", w.label()), "<= 1.20x", m, ok);
    }
    // A container under the agent (issue 36): no Landlock under it, so
    // every open is performed; start-up over the same container without.
    let (m, ok) = ratio(added_ratio(&r.micro, open, RUNC_AGENT, CONTINUE_FLOOR, open), 1.2, true);
    add("runc+oci-agent: openat+close added / continue floor's", "<= 1.20x", m, ok);
    let x =
        cell(&r.commands, STARTUP, RUNC_AGENT).zip(cell(&r.commands, STARTUP, RUNC)).map(|(a, n)| a.median - n.median);
    add(
        "runc+oci-agent -- /bin/true: added over runc alone",
        "<= 5 ms",
        x.map(|x| format!("{x:.1} ms")),
        x.map(|x| x <= 5.0),
    );
    let getppid = Workload::Getppid.label();
    let x = cell(&r.micro, getppid, FULL).zip(cell(&r.micro, getppid, NATIVE)).map(|(i, n)| i.median / n.median);
    let (m, ok) = ratio(x, 1.10, true);
    add("untrapped syscall (getppid), interpose / native", "<= 1.10x", m, ok);
    for (what, num, den, limit) in [
        ("full: every command's wall / emulate floor's", FULL, EMULATE_FLOOR, 1.25),
        ("full: every command's wall / stat-emulate floor's", FULL, STAT_FLOOR, 1.25),
        ("audit all: every command's wall / full mode's", AUDIT, FULL, 1.10),
        ("fast: every command's wall / native", FAST, NATIVE, 1.2),
    ] {
        let worst = worst_command(r, num, den);
        let met = worst.as_ref().map(|(x, _)| *x <= limit);
        add(what, &format!("<= {limit:.2}x"), worst.map(|(x, name)| format!("{x:.2}x ({name})")), met);
    }
    for mode in [FULL, FAST] {
        let x = added(&r.commands, STARTUP, mode);
        add(
            &format!("{mode} -- /bin/true: added wall time"),
            "<= 3 ms",
            x.map(|x| format!("{x:.1} ms")),
            x.map(|x| x <= 3.0),
        );
    }
    let parallel = r.parallel.iter().find(|(m, ..)| m == FULL).map(|(_, x, _)| *x);
    let (m, ok) = ratio(parallel, 1.5, false);
    add("two processes trapping at once: aggregate / one", ">= 1.50x", m, ok);
    match &r.memory {
        Some(mem) if mem.error.is_none() => {
            let calls = mem.calls;
            add(
                &format!("supervisor peak memory over {calls} trapped calls"),
                "<= 16 MiB",
                Some(format!("{:.1} MiB", mem.peak_kib as f64 / 1024.0)),
                Some(mem.peak_kib <= 16 * 1024),
            );
            // Flat: what the last tenth holds is within 1 MiB of the first.
            let growth = mem.late_kib.saturating_sub(mem.early_kib);
            add(
                "supervisor memory flat (last tenth over first)",
                "<= +1 MiB",
                Some(format!("+{:.2} MiB", growth as f64 / 1024.0)),
                Some(growth <= 1024),
            );
        }
        Some(mem) => add("supervisor memory", "<= 16 MiB, flat", mem.error.clone(), None),
        None => add("supervisor memory", "<= 16 MiB, flat", Some("not measured".into()), None),
    }
    add(
        "trie lookup at 10,000 entries",
        "<= 100 ns",
        Some(format!("{:.0} ns", r.trie_ns_per_lookup)),
        Some(r.trie_ns_per_lookup <= 100.0),
    );
    add(
        "trie memory per entry at 10,000 entries",
        "<= 128 B",
        Some(format!("{:.0} B", r.trie_bytes_per_entry)),
        Some(r.trie_bytes_per_entry <= 128.0),
    );
    out
}

pub(super) fn table(r: &Results) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let floor = reference_floor(r);
    let _ = writeln!(
        s,
        "interpose bench: {} on {} (Linux {}, {} CPUs), {} round(s); median and p99 of every mode, its median over native's, and its added cost over the {floor}'s",
        r.date, r.machine, r.kernel, r.cpus, r.rounds
    );
    for m in &r.missing {
        let _ = writeln!(s, "not run here: {m}");
    }
    let section = |s: &mut String, title: &str, rows: &[(String, Vec<(String, Cell)>)], unit: &str, scale: f64| {
        let _ = writeln!(
            s,
            "\n{title:<24} {:<22} {:>10} {:>10} {:>9} {:>12}",
            "mode", unit, "p99", "x native", "added/floor"
        );
        for (row, cells) in rows {
            let native = cell(rows, row, NATIVE).map(|c| c.median);
            for (i, (mode, c)) in cells.iter().enumerate() {
                let name = if i == 0 { row.as_str() } else { "" };
                if let Some(e) = &c.error {
                    let _ = writeln!(s, "{name:<24} {mode:<22} failed: {e}");
                    continue;
                }
                let x = native.map_or(String::new(), |n| format!("{:.2}", c.median / n));
                let added = match mode.as_str() {
                    NATIVE => String::new(),
                    _ => added_ratio(rows, row, mode, floor, row).map_or(String::new(), |a| format!("{a:.2}")),
                };
                let _ = writeln!(
                    s,
                    "{name:<24} {mode:<22} {:>10.2} {:>10.2} {x:>9} {added:>12}",
                    c.median / scale,
                    c.p99 / scale
                );
            }
        }
    };
    section(&mut s, "per operation", &r.micro, "us/op", 1e3);
    section(&mut s, "whole commands", &r.commands, "ms", 1.0);
    let _ = writeln!(s, "\ntwo processes trapping openat at once, aggregate rate over one process:");
    for (mode, x, one) in &r.parallel {
        let _ = writeln!(s, "  {mode:<36} {x:.2}x  (one process alone: {one:.0} opens/s)");
    }
    if let Some(m) = &r.memory {
        let _ = writeln!(
            s,
            "\nsupervisor resident memory over {} trapped stats: peak {} KiB, after the first tenth {} KiB, in the last tenth {} KiB{}",
            m.calls,
            m.peak_kib,
            m.early_kib,
            m.late_kib,
            m.error.as_ref().map_or(String::new(), |e| format!(" (failed: {e})"))
        );
    }
    let _ = writeln!(s, "\ntargets:");
    for t in &r.targets {
        let mark = match t.met {
            Some(true) => "met",
            Some(false) => "NOT MET",
            None => "n/a",
        };
        let _ = writeln!(s, "  {:<7} {:<58} {:>18}  (target {})", mark, t.what, t.measured, t.target);
    }
    s
}
