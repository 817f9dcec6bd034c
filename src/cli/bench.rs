//! `interpose bench`: its flags; the benchmark itself is [`crate::bench`].

use clap::Args;
use std::path::PathBuf;

/// Measure per-syscall and whole-command overhead against native and
/// against floors taken in the same run (seccomp BPF alone, Landlock
/// alone, a supervisor that only answers CONTINUE).
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// A short run that only proves every mode and workload works (CI).
    #[arg(long)]
    pub quick: bool,
    /// Print the results as JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Also run the workloads under this command prefix (split on spaces),
    /// e.g. `--compare 'strace -f -o /dev/null'`, or under a reference
    /// sandbox by name: `bwrap`, `syd`, `nono` (one not installed is named
    /// as missing). Repeatable.
    #[arg(long, value_name = "PREFIX")]
    pub compare: Vec<String>,
    /// Rounds (default 5, or 1 with --quick).
    #[arg(long, value_name = "N")]
    pub rounds: Option<usize>,
    /// Save `results.json` and `table.txt` in DIR (created).
    #[arg(long, value_name = "DIR")]
    pub save: Option<PathBuf>,
    /// Also build the shared C floors from DIR (their Makefile, `make
    /// OUT=...`) and measure them beside interpose's own, to compare.
    #[arg(long, value_name = "DIR")]
    pub floors: Option<PathBuf>,
}

impl BenchArgs {
    /// What the benchmark is asked to run.
    pub fn options(&self) -> crate::bench::Options {
        crate::bench::Options {
            quick: self.quick,
            json: self.json,
            compare: self.compare.clone(),
            rounds: self.rounds,
            save: self.save.clone(),
            floors: self.floors.clone(),
        }
    }
}
