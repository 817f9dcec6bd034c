//! `interpose bench`: per-syscall and whole-command overhead, every figure a
//! ratio against floors measured in the same run.
//!
//! Modes (each a command prefix put in front of the same workloads):
//! - `native`: no sandbox;
//! - `seccomp-allow`: interpose's filter with every action ALLOW (BPF only);
//! - `landlock`: the Landlock ruleset of the surface alone;
//! - `notify-floor`: the filter with a supervisor that answers CONTINUE at
//!   once, reading and deciding nothing: the round trip every trapped call
//!   pays at least;
//! - `interpose`, `interpose+audit`: the real thing, without and with
//!   `--audit-level all`;
//! - `--compare PREFIX`: any other command prefix (`strace -f -o /dev/null`).
//!
//! Micro workloads run a loop inside one process (`interpose debug
//! workload`) and time each operation, so start-up is not in them; whole
//! commands are timed from spawn to exit. Rounds are interleaved (every mode
//! runs a workload before any mode runs it again), so drift on a shared
//! machine spreads over all modes alike.

use clap::{Args, ValueEnum};
use serde::Serialize;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// A micro-benchmark loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Workload {
    /// `openat` + `close` of an allowed file.
    Open,
    /// `newfstatat` of an allowed file (glibc's `stat`).
    Stat,
    /// `getppid`, which is never trapped (timed in batches of 100).
    Getppid,
    /// `fork` + `exec /bin/true` + `wait`.
    ForkExec,
    /// `openat` of a file outside the surface (denied when sandboxed).
    DeniedOpen,
}

impl Workload {
    fn label(self) -> &'static str {
        match self {
            Workload::Open => "openat+close",
            Workload::Stat => "newfstatat",
            Workload::Getppid => "getppid (untrapped)",
            Workload::ForkExec => "fork+exec /bin/true",
            Workload::DeniedOpen => "openat, denied",
        }
    }
}

/// Flags of `interpose bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// A short run that only proves every mode and workload works (CI).
    #[arg(long)]
    pub quick: bool,
    /// Print the results as JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Also run the workloads under this command prefix (split on spaces),
    /// e.g. `--compare 'strace -f -o /dev/null'`. Repeatable.
    #[arg(long, value_name = "PREFIX")]
    pub compare: Vec<String>,
    /// Rounds (default 5, or 1 with --quick).
    #[arg(long, value_name = "N")]
    pub rounds: Option<usize>,
    /// Save `results.json` and `table.txt` in DIR (created).
    #[arg(long, value_name = "DIR")]
    pub save: Option<PathBuf>,
}

/// Runs one loop and prints `{"ns": [...], "elapsed_ns": N}` on stdout.
pub fn workload(kind: Workload, count: usize, path: &Path) -> anyhow::Result<i32> {
    use nix::fcntl::{open, OFlag};
    use nix::sys::stat::Mode;
    let mut samples = Vec::with_capacity(count);
    let start = Instant::now();
    for _ in 0..count {
        let t = Instant::now();
        match kind {
            Workload::Open | Workload::DeniedOpen => {
                // A denied open is the point of DeniedOpen; its error is not.
                if let Ok(fd) = open(path, OFlag::O_RDONLY | OFlag::O_CLOEXEC, Mode::empty()) {
                    drop(fd);
                }
            }
            Workload::Stat => {
                std::hint::black_box(nix::sys::stat::stat(path)?);
            }
            Workload::Getppid => {
                for _ in 0..100 {
                    std::hint::black_box(nix::unistd::getppid());
                }
            }
            Workload::ForkExec => {
                let status = Command::new("/bin/true").status()?;
                anyhow::ensure!(status.success(), "/bin/true failed: {status}");
            }
        }
        let ns = t.elapsed().as_nanos() as f64;
        samples.push(if kind == Workload::Getppid { ns / 100.0 } else { ns });
    }
    let elapsed = start.elapsed().as_nanos() as u64;
    println!("{}", serde_json::json!({ "ns": samples, "elapsed_ns": elapsed }));
    Ok(0)
}

/// One way of running a command.
#[derive(Debug, Clone, Serialize)]
struct BenchMode {
    name: String,
    #[serde(skip)]
    prefix: Vec<OsString>,
    /// A trail the mode writes: removed before every run, since interpose
    /// never overwrites one.
    #[serde(skip)]
    trail: Option<PathBuf>,
}

/// What one (workload, mode) pair measured.
#[derive(Debug, Clone, Default, Serialize)]
struct Cell {
    /// Micro: nanoseconds per operation; commands: milliseconds per run.
    samples: Vec<f64>,
    median: f64,
    p99: f64,
    error: Option<String>,
}

/// The results of a run, as `--json` prints them.
#[derive(Debug, Serialize)]
struct Results {
    date: String,
    machine: String,
    kernel: String,
    cpus: usize,
    rounds: usize,
    modes: Vec<String>,
    /// Nanoseconds per operation.
    micro: Vec<(String, Vec<(String, Cell)>)>,
    /// Milliseconds per run.
    commands: Vec<(String, Vec<(String, Cell)>)>,
    /// Aggregate trapped opens per second with two processes, over one.
    parallel: Vec<(String, f64)>,
    trie_ns_per_lookup: f64,
    trie_bytes_per_entry: f64,
    targets: Vec<Target>,
}

/// One target of issue 6, with what this run measured.
#[derive(Debug, Clone, Serialize)]
struct Target {
    what: String,
    target: String,
    measured: String,
    /// None: not measured in this run (said why in `measured`).
    met: Option<bool>,
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

impl Cell {
    fn finish(&mut self) {
        let mut s = self.samples.clone();
        s.sort_by(f64::total_cmp);
        self.median = percentile(&s, 50.0);
        self.p99 = percentile(&s, 99.0);
    }
}

/// The fixtures: a workspace with a file, a tree, a repository and a C
/// file, and a file outside it.
struct Fixture {
    _dir: tempfile::TempDir,
    work: PathBuf,
    file: PathBuf,
    denied: PathBuf,
}

fn fixture(quick: bool) -> anyhow::Result<Fixture> {
    let dir = tempfile::Builder::new().prefix("interpose-bench.").tempdir()?;
    let root = dir.path().canonicalize()?;
    let work = root.join("work");
    std::fs::create_dir_all(root.join("outside"))?;
    std::fs::create_dir_all(&work)?;
    std::fs::create_dir_all(work.join("home"))?;
    std::fs::create_dir_all(work.join("tmp"))?;
    let file = work.join("file.txt");
    std::fs::write(&file, "x\n")?;
    let denied = root.join("outside/secret");
    std::fs::write(&denied, "secret\n")?;
    let (tree_files, repo_files) = if quick { (500, 300) } else { (5_000, 3_000) };
    for i in 0..tree_files {
        let d = work.join(format!("tree/d{}", i / 100));
        std::fs::create_dir_all(&d)?;
        std::fs::write(d.join(format!("f{i}.txt")), format!("file {i}\n"))?;
    }
    let repo = work.join("repo");
    for i in 0..repo_files {
        let d = repo.join(format!("src/m{}", i / 100));
        std::fs::create_dir_all(&d)?;
        std::fs::write(d.join(format!("f{i}.rs")), format!("// {i}\n"))?;
    }
    let git = |args: &[&str]| -> anyhow::Result<()> {
        let o = Command::new("git").arg("-C").arg(&repo).args(args).stdout(Stdio::null()).output()?;
        anyhow::ensure!(o.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&o.stderr));
        Ok(())
    };
    git(&["init", "-q"])?;
    git(&["add", "-A"])?;
    git(&["-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-q", "-m", "bench"])?;
    std::fs::write(work.join("small.c"), "#include <stdio.h>\nint main(void) { puts(\"hi\"); return 0; }\n")?;
    Ok(Fixture { _dir: dir, work, file, denied })
}

fn modes(exe: &Path, work: &Path, compare: &[String]) -> Vec<BenchMode> {
    let bin_dir = exe.parent().unwrap_or(Path::new("/")).as_os_str().to_owned();
    let os = |s: &str| OsString::from(s);
    let surface = || vec![os("--rw"), work.as_os_str().to_owned(), os("--ro"), bin_dir.clone()];
    let exe = exe.as_os_str().to_owned();
    let trail = work.join("audit.jsonl");
    let key = work.parent().unwrap_or(work).join("audit.key");
    let mut out = vec![
        BenchMode { name: "native".into(), prefix: vec![], trail: None },
        BenchMode {
            name: "seccomp-allow".into(),
            prefix: vec![exe.clone(), os("debug"), os("seccomp-allow"), os("--")],
            trail: None,
        },
        BenchMode {
            name: "landlock".into(),
            prefix: [vec![exe.clone(), os("debug"), os("landlock")], surface(), vec![os("--")]].concat(),
            trail: None,
        },
        BenchMode {
            name: "notify-floor".into(),
            prefix: vec![exe.clone(), os("run"), os("--bench-floor"), os("--")],
            trail: None,
        },
        BenchMode {
            name: "interpose".into(),
            prefix: [vec![exe.clone(), os("run")], surface(), vec![os("--")]].concat(),
            trail: None,
        },
        BenchMode {
            name: "interpose --fast".into(),
            prefix: [vec![exe.clone(), os("run"), os("--fast")], surface(), vec![os("--")]].concat(),
            trail: None,
        },
        BenchMode {
            name: "interpose+audit".into(),
            prefix: [
                vec![exe.clone(), os("run")],
                surface(),
                // The key outside the workspace: a carve-out inside it would
                // make every open emulated and measure something else.
                vec![os("--audit"), trail.clone().into_os_string(), os("--audit-key"), key.into_os_string(), os("--")],
            ]
            .concat(),
            trail: Some(trail),
        },
    ];
    for c in compare {
        out.push(BenchMode {
            name: c.clone(),
            prefix: c.split_whitespace().map(OsString::from).collect(),
            trail: None,
        });
    }
    out
}

/// Runs `prefix + cmd` in `cwd`; its stdout, and the wall time in ms. Every
/// mode gets the same environment: HOME and TMPDIR inside the workspace, so
/// that no mode reads the real home's configuration or the host's /tmp.
fn run_one(mode: &BenchMode, cmd: &[OsString], cwd: &Path) -> Result<(String, f64), String> {
    if let Some(trail) = &mode.trail {
        match std::fs::remove_file(trail) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(format!("{}: {e}", trail.display())),
            _ => {}
        }
    }
    let all: Vec<&OsString> = mode.prefix.iter().chain(cmd).collect();
    let mut c = Command::new(all[0]);
    c.args(&all[1..]).current_dir(cwd).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    c.env("HOME", cwd.join("home")).env("TMPDIR", cwd.join("tmp")).env_remove("LD_LIBRARY_PATH");
    let t = Instant::now();
    let o = c.output().map_err(|e| format!("{}: {e}", all[0].to_string_lossy()))?;
    let ms = t.elapsed().as_secs_f64() * 1e3;
    if !o.status.success() {
        let err = String::from_utf8_lossy(&o.stderr);
        return Err(format!("exit {:?}: {}", o.status.code(), err.lines().last().unwrap_or_default()));
    }
    Ok((String::from_utf8_lossy(&o.stdout).into_owned(), ms))
}

fn parse_samples(out: &str) -> Result<(Vec<f64>, f64), String> {
    let v: serde_json::Value = serde_json::from_str(out.trim()).map_err(|e| format!("workload output: {e}"))?;
    let ns = v["ns"].as_array().ok_or("no samples")?.iter().filter_map(serde_json::Value::as_f64).collect();
    Ok((ns, v["elapsed_ns"].as_f64().unwrap_or(f64::NAN)))
}

fn trie_figures() -> (f64, f64) {
    use crate::policy::trie::Trie;
    let n = 10_000;
    let mut trie = Trie::new();
    let paths: Vec<String> =
        (0..n).map(|i| format!("/home/user/work/project{}/src/module{}/file{}.rs", i % 97, i % 13, i)).collect();
    for (i, p) in paths.iter().enumerate() {
        trie.insert(p.as_bytes(), i as u32);
    }
    let probes: Vec<String> = paths.iter().step_by(97).map(|p| format!("{p}/deeper/still/file.txt")).collect();
    let reps = 200_000;
    let t = Instant::now();
    for i in 0..reps {
        std::hint::black_box(trie.lookup(std::hint::black_box(probes[i % probes.len()].as_bytes())));
    }
    (t.elapsed().as_nanos() as f64 / reps as f64, trie.heap_bytes() as f64 / n as f64)
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

fn targets(r: &Results) -> Vec<Target> {
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

fn table(r: &Results) -> String {
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

fn uname() -> (String, String) {
    let u = nix::sys::utsname::uname().ok();
    let get = |f: fn(&nix::sys::utsname::UtsName) -> &std::ffi::OsStr| {
        u.as_ref().map(|u| f(u).to_string_lossy().into_owned()).unwrap_or_default()
    };
    (get(|u| u.nodename()), get(|u| u.release()))
}

/// Runs the benchmark; returns the exit status.
pub fn run(args: &BenchArgs) -> anyhow::Result<i32> {
    let exe = std::env::current_exe()?;
    let rounds = args.rounds.unwrap_or(if args.quick { 1 } else { 5 }).max(1);
    let fx = fixture(args.quick)?;
    let modes = modes(&exe, &fx.work, &args.compare);
    let os = |s: &str| OsString::from(s);
    let (open_n, fork_n) = if args.quick { (300, 5) } else { (3_000, 40) };
    let micro: Vec<(Workload, usize, &Path)> = vec![
        (Workload::Open, open_n, &fx.file),
        (Workload::Stat, open_n, &fx.file),
        (Workload::Getppid, open_n, &fx.file),
        (Workload::ForkExec, fork_n, &fx.file),
        (Workload::DeniedOpen, open_n, &fx.denied),
    ];
    let python = if Path::new("/usr/bin/python3").exists() { "/usr/bin/python3" } else { "python3" };
    let commands: Vec<(&str, Vec<OsString>)> = vec![
        ("/bin/true", vec![os("/bin/true")]),
        ("find+cat tree", vec![os("sh"), os("-c"), os("find tree -type f -exec cat {} + >/dev/null")]),
        ("git status", vec![os("git"), os("-C"), os("repo"), os("status"), os("--porcelain")]),
        ("python3 imports", vec![os(python), os("-c"), os("import json, email, asyncio, decimal")]),
        ("gcc -c", vec![os("gcc"), os("-c"), os("small.c"), os("-o"), os("small.o")]),
    ];
    let mut micro_rows: Vec<(String, Vec<(String, Cell)>)> = micro
        .iter()
        .map(|(w, _, _)| (w.label().to_string(), modes.iter().map(|m| (m.name.clone(), Cell::default())).collect()))
        .collect();
    let mut command_rows: Vec<(String, Vec<(String, Cell)>)> = commands
        .iter()
        .map(|(n, _)| (n.to_string(), modes.iter().map(|m| (m.name.clone(), Cell::default())).collect()))
        .collect();
    let started = Instant::now();
    // One untimed round of the commands first: caches warm for every mode.
    for (_, cmd) in &commands {
        for m in &modes {
            let _ = run_one(m, cmd, &fx.work);
        }
    }
    for round in 0..rounds {
        if !args.json {
            eprintln!(
                "interpose bench: round {}/{rounds} ({:.0} s so far)",
                round + 1,
                started.elapsed().as_secs_f64()
            );
        }
        for (i, (w, n, path)) in micro.iter().enumerate() {
            let cmd = vec![
                exe.as_os_str().to_owned(),
                os("debug"),
                os("workload"),
                os(w.to_possible_value().expect("a value").get_name()),
                os(&n.to_string()),
                path.as_os_str().to_owned(),
            ];
            // Each round starts with another mode, so whatever one mode
            // leaves behind (a long strace run, say) does not always land on
            // the same next one.
            for j in (0..modes.len()).map(|k| (k + round) % modes.len()) {
                let m = &modes[j];
                let c = &mut micro_rows[i].1[j].1;
                match run_one(m, &cmd, &fx.work).and_then(|(out, _)| parse_samples(&out)) {
                    Ok((ns, _)) => c.samples.extend(ns),
                    Err(e) => c.error = Some(e),
                }
            }
        }
        for (i, (_, cmd)) in commands.iter().enumerate() {
            for j in (0..modes.len()).map(|k| (k + round) % modes.len()) {
                let m = &modes[j];
                let c = &mut command_rows[i].1[j].1;
                match run_one(m, cmd, &fx.work) {
                    Ok((_, ms)) => c.samples.push(ms),
                    Err(e) => c.error = Some(e),
                }
            }
        }
    }
    for (_, cells) in micro_rows.iter_mut().chain(command_rows.iter_mut()) {
        for (_, c) in cells.iter_mut() {
            c.finish();
        }
    }
    // Two processes at once against one, under the same prefix.
    let mut parallel = Vec::new();
    let n = if args.quick { 300 } else { 5_000 };
    let one = format!("{} debug workload open {n} {}", exe.display(), fx.file.display());
    for m in modes.iter().filter(|m| ["notify-floor", "interpose"].contains(&m.name.as_str())) {
        let single = run_one(m, &[os("sh"), os("-c"), os(&one)], &fx.work)
            .and_then(|(out, _)| parse_samples(&out))
            .map(|(_, e)| n as f64 / e);
        let pair =
            run_one(m, &[os("sh"), os("-c"), os(&format!("{one} & {one}; wait"))], &fx.work).and_then(|(out, _)| {
                let runs: Vec<(Vec<f64>, f64)> = out.lines().map(parse_samples).collect::<Result<_, _>>()?;
                let longest = runs.iter().map(|(_, e)| *e).fold(0.0, f64::max);
                Ok(2.0 * n as f64 / longest)
            });
        if let (Ok(s), Ok(p)) = (single, pair) {
            parallel.push((m.name.clone(), p / s));
        }
    }
    let (trie_ns, trie_bytes) = trie_figures();
    let (machine, kernel) = uname();
    let mut results = Results {
        date: utc_date(),
        machine,
        kernel,
        cpus: std::thread::available_parallelism().map_or(0, usize::from),
        rounds,
        modes: modes.iter().map(|m| m.name.clone()).collect(),
        micro: micro_rows,
        commands: command_rows,
        parallel,
        trie_ns_per_lookup: trie_ns,
        trie_bytes_per_entry: trie_bytes,
        targets: Vec::new(),
    };
    results.targets = targets(&results);
    let text = table(&results);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&results)?);
    } else {
        print!("{text}");
        eprintln!("interpose bench: {:.0} s", started.elapsed().as_secs_f64());
    }
    if let Some(dir) = &args.save {
        std::fs::create_dir_all(dir)?;
        std::fs::write(dir.join("results.json"), serde_json::to_string_pretty(&results)?)?;
        std::fs::write(dir.join("table.txt"), &text)?;
    }
    // A compared prefix may be missing here; our own modes may not fail,
    // and each failure is named on stderr, which CI keeps.
    let mut failed = false;
    for (row, cells) in results.micro.iter().chain(&results.commands) {
        for (m, c) in cells {
            if let Some(e) = c.error.as_ref().filter(|_| !args.compare.contains(m)) {
                eprintln!("interpose bench: {row} under {m} failed: {e}");
                failed = true;
            }
        }
    }
    Ok(if failed { 1 } else { 0 })
}

/// Today's date (UTC) as `YYYY-MM-DD`.
fn utc_date() -> String {
    let days = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() / 86_400);
    // Howard Hinnant's days-to-civil.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_dates() {
        let s: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&s, 50.0), 50.0);
        assert_eq!(percentile(&s, 99.0), 99.0);
        assert_eq!(percentile(&[3.0], 99.0), 3.0);
        let d = utc_date();
        assert_eq!(d.len(), 10);
        assert!(d.starts_with("20"));
    }
}
