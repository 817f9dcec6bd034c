//! `interpose bench`: per-syscall and whole-command overhead, every figure a
//! ratio against floors measured in the same run.
//!
//! Modes (each a command prefix put in front of the same workloads):
//! - `native`: no sandbox;
//! - interpose's own floors: its filter with every action ALLOW, a
//!   Landlock ruleset granting everything, its filter with a minimal
//!   single-threaded supervisor answering CONTINUE, and one performing
//!   opens the TOCTOU-safe way with no policy (`floor.rs`);
//! - with `--floors DIR`, the shared C floors built from DIR, written
//!   independently, to compare the own ones with (`floors.rs`);
//! - `notify-floor`: a whole `interpose run` session whose supervisor
//!   answers CONTINUE at once, reading and deciding nothing;
//! - `interpose`, `interpose --fast`, `interpose+audit`: the real thing;
//! - `--compare NAME|PREFIX`: a reference sandbox by name or any prefix.
//!
//! The supervisor's memory is sampled over a long run (`memory.rs`), and
//! every target of issue 16 is judged (`targets.rs`).
//!
//! Micro workloads run a loop inside one process (`interpose debug
//! workload`) and time each operation, so start-up is not in them; whole
//! commands are timed from spawn to exit. Rounds are interleaved (every mode
//! runs a workload before any mode runs it again), so drift on a shared
//! machine spreads over all modes alike.

pub mod container;
mod fixture;
pub mod floor;
mod floors;
mod memory;
mod modes;
mod targets;
pub mod workload;

use fixture::fixture;
use modes::{modes, parse_samples, run_one};
use serde::Serialize;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Instant;
use targets::{table, targets, Target};
pub use workload::{workload, Workload};

/// Why `interpose bench` could not run or save its results. The messages
/// are the underlying errors' own; the variants keep the path.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Finding interpose's own binary failed.
    #[error("{0}")]
    CurrentExe(std::io::Error),
    /// Making the fixtures' temporary directory failed.
    #[error("{0}")]
    TempDir(std::io::Error),
    /// Canonicalizing a fixture's path failed.
    #[error("{source}")]
    Canonicalize {
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// Creating a fixture's directory failed.
    #[error("{source}")]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// Writing a fixture's file failed.
    #[error("{source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// `git` could not be run for the repository fixture.
    #[error("{0}")]
    RunGit(std::io::Error),
    /// `git` failed on the repository fixture.
    #[error("git {args:?}: {stderr}")]
    Git {
        /// Its arguments.
        args: Vec<String>,
        /// What it wrote on stderr.
        stderr: String,
    },
    /// Serializing the results failed.
    #[error("{0}")]
    Json(serde_json::Error),
    /// Saving the results (`--save`) failed.
    #[error("{source}")]
    Save {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// What `interpose bench` is asked to run.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// A short run that only proves every mode and workload works (CI).
    pub quick: bool,
    /// Print the results as JSON instead of the table.
    pub json: bool,
    /// Other command prefixes to run the workloads under.
    pub compare: Vec<String>,
    /// Rounds (default 5, or 1 with `quick`).
    pub rounds: Option<usize>,
    /// Where `results.json` and `table.txt` are saved.
    pub save: Option<PathBuf>,
    /// The shared C floors' sources, built and measured too.
    pub floors: Option<PathBuf>,
}

/// The start-up row: `/bin/true`.
const STARTUP: &str = "/bin/true";

/// The whole command that starts a process per step: make running its
/// makefile's recipes, each through `/bin/sh -c`.
const MAKE: &str = "make, 100 sh recipes";
const _: () = assert!(fixture::RECIPES == 100, "the make row's name says how many recipes");

/// How many times a round every mode runs the start-up row.
const STARTUP_RUNS: usize = 15;

/// The order of `len` modes in turn `turn` of round `round`: every mode
/// once, starting one further each round and each turn, and stepping
/// through them by a stride prime to `len` that changes with the turn, so
/// that which mode runs right before which changes too (turn 0 steps by 1).
fn order(len: usize, round: usize, turn: usize) -> impl Iterator<Item = usize> {
    let gcd = |mut a: usize, mut b: usize| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    let strides: Vec<usize> = (1..len.max(2)).filter(|&s| gcd(s, len) == 1).collect();
    let stride = strides[turn % strides.len()];
    (0..len).map(move |k| (k * stride + round + turn) % len)
}

/// Rows of cells: a workload, and what each mode measured on it.
type Rows = Vec<(String, Vec<(String, Cell)>)>;

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
    micro: Rows,
    /// Milliseconds per run.
    commands: Rows,
    /// Aggregate trapped opens per second with two processes, over one,
    /// and one process's opens per second.
    parallel: Vec<(String, f64, f64)>,
    /// The supervisor's resident memory over a long run of trapped calls.
    memory: Option<memory::Memory>,
    /// What could not be run here, in words (the C floors without a
    /// compiler, a reference sandbox not installed).
    missing: Vec<String>,
    trie_ns_per_lookup: f64,
    trie_bytes_per_entry: f64,
    targets: Vec<Target>,
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

fn trie_figures() -> (f64, f64) {
    use crate::policy::trie::Trie;
    let n = 10_000;
    let mut trie = Trie::new();
    let paths: Vec<String> =
        (0..n).map(|i| format!("/home/user/work/project{}/src/module{}/file{}.rs", i % 97, i % 13, i)).collect();
    for (i, p) in paths.iter().enumerate() {
        trie.insert(p.as_bytes(), i as u32);
    }
    // As the supervisor holds it: built, then shrunk.
    trie.shrink();
    let probes: Vec<String> = paths.iter().step_by(97).map(|p| format!("{p}/deeper/still/file.txt")).collect();
    // The median of 7 batches of 200,000 lookups over the 103 probes: one
    // batch alone moves by half with what the host does meanwhile.
    let reps = 200_000;
    let mut batches: Vec<f64> = (0..7)
        .map(|_| {
            let t = Instant::now();
            for i in 0..reps {
                std::hint::black_box(trie.lookup(std::hint::black_box(probes[i % probes.len()].as_bytes())));
            }
            t.elapsed().as_nanos() as f64 / reps as f64
        })
        .collect();
    batches.sort_by(f64::total_cmp);
    (batches[batches.len() / 2], trie.heap_bytes() as f64 / n as f64)
}

fn uname() -> (String, String) {
    let u = nix::sys::utsname::uname().ok();
    let get = |f: fn(&nix::sys::utsname::UtsName) -> &std::ffi::OsStr| {
        u.as_ref().map(|u| f(u).to_string_lossy().into_owned()).unwrap_or_default()
    };
    (get(|u| u.nodename()), get(|u| u.release()))
}

/// Runs the benchmark; returns the exit status.
pub fn run(args: &Options) -> Result<i32, BenchError> {
    let exe = std::env::current_exe().map_err(BenchError::CurrentExe)?;
    let rounds = args.rounds.unwrap_or(if args.quick { 1 } else { 5 }).max(1);
    let fx = fixture(args.quick)?;
    let floors = args.floors.as_ref().map(|src| floors::build(src, &fx.work.join("floors")));
    // The containers' agent, outside the workspace (a container whose
    // mounts showed its files would be refused).
    let bin_dir = exe.parent().unwrap_or(Path::new("/")).to_path_buf();
    let agent = match container::unavailable() {
        None => container::Agent::start(&exe, &fx.root.join("agent"), &fx.work, &[&bin_dir])
            .map_err(|e| format!("containers: {e}")),
        Some(why) => Err(why),
    };
    let socket = agent.as_ref().map(|a| a.socket.as_path()).map_err(String::as_str);
    let floors = floors.as_ref().map(Result::as_ref);
    let (modes, mut missing) = modes(&exe, &fx.work, floors, socket, &args.compare);
    let os = |s: &str| OsString::from(s);
    let (open_n, fork_n) = if args.quick { (300, 5) } else { (3_000, 40) };
    let micro: Vec<(Workload, usize, &Path)> = vec![
        (Workload::Open, open_n, &fx.file),
        (Workload::OpenRelative, open_n, &fx.file),
        (Workload::Stat, open_n, &fx.file),
        (Workload::Fstat, open_n, &fx.file),
        (Workload::Readlink, open_n, &fx.file),
        (Workload::Getppid, open_n, &fx.file),
        (Workload::ForkExec, fork_n, &fx.file),
        (Workload::DeniedOpen, open_n, &fx.denied),
        (Workload::DevOpen, open_n, Path::new("/dev/null")),
        (Workload::UnixConnect, open_n, &fx.socket),
        (Workload::UnixSendto, open_n, &fx.socket),
        (Workload::Mkdir, open_n, &fx.file),
    ];
    let python = if Path::new("/usr/bin/python3").exists() { "/usr/bin/python3" } else { "python3" };
    let commands: Vec<(&str, Vec<OsString>)> = vec![
        (STARTUP, vec![os("/bin/true")]),
        ("find+cat tree", vec![os("sh"), os("-c"), os("find tree -type f -exec cat {} + >/dev/null")]),
        ("git status", vec![os("git"), os("-C"), os("repo"), os("status"), os("--porcelain")]),
        ("python3 imports", vec![os(python), os("-c"), os("import json, email, asyncio, decimal")]),
        ("gcc -c", vec![os("gcc"), os("-c"), os("small.c"), os("-o"), os("small.o")]),
        (MAKE, vec![os("make"), os("-s"), os("-f"), os("recipes.mk")]),
    ];
    let mut micro_rows: Rows = micro
        .iter()
        .map(|(w, _, _)| (w.label().to_string(), modes.iter().map(|m| (m.name.clone(), Cell::default())).collect()))
        .collect();
    let mut command_rows: Rows = commands
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
                os(clap::ValueEnum::to_possible_value(w).expect("a value").get_name()),
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
                    Err(e) => c.error = Some(e.to_string()),
                }
            }
        }
        for (i, (name, cmd)) in commands.iter().enumerate() {
            // A start-up is one run of 10 ms whose time moves with the
            // other vCPU's load and with what the run before left to the
            // kernel: the modes take turns STARTUP_RUNS times a round, each
            // turn in another order (so no mode always follows the same
            // one), each run once the one before has ended whole
            // ([`modes::settle`]).
            let turns = if *name == STARTUP && !args.quick { STARTUP_RUNS } else { 1 };
            for turn in 0..turns {
                for j in order(modes.len(), round, turn) {
                    let m = &modes[j];
                    let c = &mut command_rows[i].1[j].1;
                    if *name == STARTUP {
                        modes::settle();
                    }
                    match run_one(m, cmd, &fx.work) {
                        Ok((_, ms)) => c.samples.push(ms),
                        Err(e) => c.error = Some(e.to_string()),
                    }
                }
            }
        }
    }
    for (_, cells) in micro_rows.iter_mut().chain(command_rows.iter_mut()) {
        for (_, c) in cells.iter_mut() {
            c.finish();
        }
    }
    // Two processes at once against one, under the same prefix. Each
    // prints its count and time only (`--summary`): a line of samples
    // (tens of KiB) written by both into one pipe could interleave with
    // the other's, a short one is written whole.
    let mut parallel = Vec::new();
    let n = if args.quick { 300 } else { 5_000 };
    let one = format!("{} debug workload open {n} {} --summary", exe.display(), fx.file.display());
    // The continue floor with a receiver per CPU runs here only: what
    // more receivers buy two processes, and cost one.
    let receivers = modes::receivers_floor(&exe);
    let named = |name: &str| modes.iter().find(|m| m.name == name);
    let measured = [named(modes::CONTINUE_FLOOR), Some(&receivers), named(modes::NOTIFY_FLOOR), named(modes::FULL)];
    for m in measured.into_iter().flatten() {
        let single = run_one(m, &[os("sh"), os("-c"), os(&one)], &fx.work)
            .and_then(|(out, _)| parse_samples(&out))
            .map(|(_, elapsed_ns)| n as f64 / elapsed_ns * 1e9);
        let pair =
            run_one(m, &[os("sh"), os("-c"), os(&format!("{one} & {one}; wait"))], &fx.work).and_then(|(out, _)| {
                let runs: Vec<(Vec<f64>, f64)> = out.lines().map(parse_samples).collect::<Result<_, _>>()?;
                if runs.len() != 2 {
                    return Err(modes::ModeError::Failed {
                        code: None,
                        last_line: format!("{} of 2 runs printed", runs.len()),
                    });
                }
                let longest = runs.iter().map(|(_, e)| *e).fold(0.0, f64::max);
                Ok(2.0 * n as f64 / longest * 1e9)
            });
        match (single, pair) {
            (Ok(s), Ok(p)) => parallel.push((m.name.clone(), p / s, s)),
            (Err(e), _) | (_, Err(e)) => missing.push(format!("two processes trapping at once under {}: {e}", m.name)),
        }
    }
    // The workload keeps no samples (`--summary`): only the supervisor grows.
    let memory = {
        let calls = if args.quick { 50_000 } else { 10_000_000 };
        let mode = modes.iter().find(|m| m.name == modes::FULL).expect("interpose's own mode");
        let cmd = [
            exe.clone().into_os_string(),
            os("debug"),
            os("workload"),
            os("stat"),
            os(&calls.to_string()),
            fx.file.clone().into(),
            os("--summary"),
        ];
        Some(memory::measure(mode, &cmd, &fx.work, calls))
    };
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
        memory,
        missing,
        trie_ns_per_lookup: trie_ns,
        trie_bytes_per_entry: trie_bytes,
        targets: Vec::new(),
    };
    results.targets = targets(&results);
    let text = table(&results);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&results).map_err(BenchError::Json)?);
    } else {
        print!("{text}");
        eprintln!("interpose bench: {:.0} s", started.elapsed().as_secs_f64());
    }
    if let Some(dir) = &args.save {
        let save = |path: PathBuf| move |source| BenchError::Save { path, source };
        std::fs::create_dir_all(dir).map_err(save(dir.clone()))?;
        let json = serde_json::to_string_pretty(&results).map_err(BenchError::Json)?;
        std::fs::write(dir.join("results.json"), json).map_err(save(dir.join("results.json")))?;
        std::fs::write(dir.join("table.txt"), &text).map_err(save(dir.join("table.txt")))?;
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

    #[test]
    fn every_turn_runs_every_mode_once_and_the_one_before_each_changes() {
        for len in [1, 2, 11, 12, 15] {
            let mut before = std::collections::HashSet::new();
            for turn in 0..STARTUP_RUNS {
                let o: Vec<usize> = order(len, 1, turn).collect();
                let mut sorted = o.clone();
                sorted.sort();
                assert_eq!(sorted, (0..len).collect::<Vec<_>>(), "len {len} turn {turn}");
                before.extend(o.windows(2).map(|w| (w[0], w[1])));
            }
            // Over the turns each mode follows several others, not one.
            if len > 2 {
                assert!(before.len() >= 3 * len, "len {len}: {} pairs", before.len());
            }
        }
        // A row timed once a round keeps the order it had: one further each round.
        assert_eq!(order(5, 2, 0).collect::<Vec<_>>(), [2, 3, 4, 0, 1]);
    }
}
