//! Project chores: `cargo xtask <command>`.
//!
//! - `setup`: install what a fresh machine lacks (libseccomp-dev).
//! - `codegen [--check]`: regenerate the syscall table, its docs, the
//!   golden BPF dump and the compiled filter programs from
//!   `bpf/syscalls.tsv`; `--check` fails if stale.
//! - `test`: setup (and the agent CLIs and Chromium, best effort), then the
//!   whole test suite.
//! - `demo`: setup, install `interpose` on PATH (as `install`), and run a
//!   real sandboxed command, ending with `interpose report` of its trail.
//! - `install`: `cargo install --path .` (into `~/.cargo/bin`, which
//!   rustup puts on PATH).
//! - `man`: the manual pages, from the same definitions as `--help`, to
//!   `target/man/` (`interpose.1` and one per verb).
//! - `fuzz [SECONDS]`: every cargo-fuzz target for SECONDS each (default
//!   120; CI runs a short round), installing cargo-fuzz if needed.
//! - `agents`: install the Claude, Gemini and Codex CLIs from the npm
//!   registry into `$TMPDIR/agent-clis-for-interpose` (the agent-profile test runs them).
//! - `chromium`: install Debian's Chromium (the HTML report test renders
//!   the page in it and takes a screenshot).
//! - `tools`: install the programs the real-workload suite runs that a
//!   fresh machine may lack (rsync, tmux, python3-venv, make, gcc, git,
//!   runc, busybox-static).
//! - `workloads [FILTER]`: setup, the agent CLIs and the tools, then the
//!   real-workload suite (`tests/workloads/`), natively and under interpose.
//! - `projects`: the real projects' own test suites of that suite alone.
//! - `soak`: a million trapped opens from 32 processes in one session, with
//!   the supervisor's descriptors and memory sampled between the halves.
//! - `ltp --src DIR [TEST...]`: the differential fidelity run (issue 27):
//!   builds the path-syscall tests of an LTP checkout (`xtask/ltp/dirs.txt`)
//!   into `target/ltp`, runs each natively, under `interpose run` and under
//!   `--fast`, and writes `target/ltp/results/table.md` (docs/fidelity.md).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

type Result<T> = std::result::Result<T, String>;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("setup") => setup(),
        Some("codegen") => codegen(args.iter().any(|a| a == "--check")),
        Some("test") => setup().and_then(|()| {
            // Some tests use these; without them they are skipped (CI makes
            // them required), so a failed install is a warning here.
            for (what, install) in
                [("agent CLIs", agents as fn() -> Result<()>), ("Chromium", chromium), ("workload tools", tools)]
            {
                if let Err(e) = install() {
                    eprintln!("xtask: warning: {what} not installed ({e}); the tests that need them will be skipped");
                }
            }
            test(&args[1..])
        }),
        Some("demo") => setup().and_then(|()| install()).and_then(|()| demo()),
        Some("install") => setup().and_then(|()| install()),
        Some("man") => setup().and_then(|()| man()),
        Some("soak") => setup().and_then(|()| soak()),
        Some("ltp") => setup().and_then(|()| ltp(&args[1..])),
        Some("agents") => agents(),
        Some("chromium") => chromium(),
        Some("tools") => tools(),
        Some("workloads") => setup().and_then(|()| agents()).and_then(|()| tools()).and_then(|()| {
            run(Command::new(env!("CARGO")).current_dir(root()).args(["test", "--test", "workloads", "--"]).args(&args[1..]))
        }),
        Some("projects") => setup().and_then(|()| tools()).and_then(|()| {
            run(Command::new(env!("CARGO")).current_dir(root()).args(["test", "--test", "workloads", "--", "project-"]))
        }),
        Some("fuzz") => setup().and_then(|()| {
            fuzz(
                args.get(1)
                    .map_or(Ok(120), |s| s.parse().map_err(|_| format!("fuzz: {s} is not a number of seconds")))?,
            )
        }),
        _ => {
            Err("usage: cargo xtask setup | codegen [--check] | test [ARGS] | demo | install | man | soak | ltp --src DIR [TEST...] | agents | chromium | tools | workloads [FILTER] | projects | fuzz [SECONDS]"
                .into())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace").to_path_buf()
}

fn run(cmd: &mut Command) -> Result<()> {
    eprintln!("xtask: running {cmd:?}");
    let status = cmd.status().map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed: {status}"))
    }
}

/// Installs libseccomp's development files (the `libseccomp` crate links
/// against `libseccomp.so`) when they are missing.
fn setup() -> Result<()> {
    let have = |p: &str| Path::new(p).exists();
    let libdirs = ["/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib"];
    if libdirs.iter().any(|d| have(&format!("{d}/libseccomp.so"))) {
        return Ok(());
    }
    let root_user = Command::new("id").arg("-u").output().map(|o| o.stdout == b"0\n").unwrap_or(false);
    if !root_user || !have("/usr/bin/apt-get") {
        return Err("libseccomp development files are missing; install them with: \
                    sudo apt-get install -y libseccomp-dev"
            .into());
    }
    run(Command::new("apt-get").args(["update", "-qq"]))?;
    run(Command::new("apt-get")
        .args(["install", "-y", "-qq", "libseccomp-dev"])
        .env("DEBIAN_FRONTEND", "noninteractive"))
}

/// Installs Debian's `chromium` package when `/usr/bin/chromium` is missing.
fn chromium() -> Result<()> {
    if Path::new("/usr/bin/chromium").exists() {
        return Ok(());
    }
    run(Command::new("apt-get").args(["update", "-qq"]))?;
    run(Command::new("apt-get").args(["install", "-y", "-qq", "chromium"]).env("DEBIAN_FRONTEND", "noninteractive"))
}

/// Debian packages the real-workload suite runs: (program that shows it is
/// installed, package).
const TOOLS: [(&str, &str); 12] = [
    ("/usr/bin/rsync", "rsync"),
    // A generated `configure` must run under the shipped policy (fidelity),
    // and the autoconf project's `autoreconf -i` copies automake's
    // `install-sh`.
    ("/usr/bin/autoconf", "autoconf"),
    ("/usr/bin/automake", "automake"),
    // The OCI agent's tests: the runtimes, and a static busybox for the
    // containers' root file systems.
    ("/usr/sbin/runc", "runc"),
    ("/usr/share/doc/busybox-static", "busybox-static"),
    ("/usr/bin/tmux", "tmux"),
    ("/usr/bin/make", "make"),
    ("/usr/bin/gcc", "gcc"),
    ("/usr/bin/git", "git"),
    // The undo tests' tools that rewrite files by renaming over them.
    ("/usr/bin/patch", "patch"),
    ("/usr/bin/perl", "perl"),
    // The network proxy's tests and the demo.
    ("/usr/bin/curl", "curl"),
];

/// Installs the programs of [`TOOLS`] that are missing, and Debian's venv
/// module (`python3 -m venv` needs it).
fn tools() -> Result<()> {
    let venv = Command::new("/usr/bin/python3")
        .args(["-c", "import ensurepip, venv"])
        .output()
        .is_ok_and(|o| o.status.success());
    let mut missing: Vec<&str> = TOOLS.iter().filter(|(p, _)| !Path::new(p).exists()).map(|(_, pkg)| *pkg).collect();
    if !venv {
        missing.push("python3-venv");
    }
    if missing.is_empty() {
        return Ok(());
    }
    run(Command::new("apt-get").args(["update", "-qq"]))?;
    run(Command::new("apt-get").args(["install", "-y", "-qq"]).args(&missing).env("DEBIAN_FRONTEND", "noninteractive"))
}

/// The agent CLIs the built-in profiles are checked against.
const AGENTS: [&str; 3] = ["@anthropic-ai/claude-code", "@google/gemini-cli", "@openai/codex"];

/// Where the agent CLIs go: outside the checkout, because Gemini CLI looks
/// into the git repository that contains its installation.
fn agents_dir() -> PathBuf {
    std::env::temp_dir().join("agent-clis-for-interpose")
}

/// Installs the agent CLIs into [`agents_dir`] (Node.js and npm from the
/// distribution if missing); a no-op when they are there.
fn agents() -> Result<()> {
    let dir = agents_dir();
    let bin = dir.join("node_modules/.bin");
    if ["claude", "gemini", "codex"].iter().all(|b| bin.join(b).exists()) {
        return Ok(());
    }
    if Command::new("npm").arg("--version").output().is_err() {
        run(Command::new("apt-get").args(["update", "-qq"]))?;
        run(Command::new("apt-get")
            .args(["install", "-y", "-qq", "nodejs", "npm"])
            .env("DEBIAN_FRONTEND", "noninteractive"))?;
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    run(Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix"])
        .arg(&dir)
        .args(AGENTS))
}

/// Runs the whole suite, echoing cargo's output, and ends with one summary
/// line over every test binary (cargo prints one per binary, several of
/// which have no tests).
fn test(extra: &[String]) -> Result<()> {
    let mut totals = (0u64, 0u64);
    let doc = counted(Command::new(env!("CARGO")).current_dir(root()).args(["test", "--doc"]), &mut totals);
    let all = counted(
        Command::new(env!("CARGO")).current_dir(root()).args(["test", "--workspace", "--all-targets"]).args(extra),
        &mut totals,
    );
    println!("\ntests: {} passed, {} failed", totals.0, totals.1);
    doc.and(all)
}

/// Runs `cmd` with its stdout echoed line by line, adding the counts of its
/// `test result:` lines to `totals`.
fn counted(cmd: &mut Command, totals: &mut (u64, u64)) -> Result<()> {
    use std::io::BufRead;
    eprintln!("xtask: running {cmd:?}");
    let mut child = cmd.stdout(std::process::Stdio::piped()).spawn().map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    let out = child.stdout.take().expect("piped");
    for line in std::io::BufReader::new(out).lines() {
        let line = line.map_err(|e| e.to_string())?;
        println!("{line}");
        if let Some(rest) = line.strip_prefix("test result: ") {
            let count = |what: &str| {
                rest.split(';').find_map(|part| part.trim().strip_suffix(what)?.trim().rsplit(' ').next()?.parse().ok())
            };
            totals.0 += count("passed").unwrap_or(0);
            totals.1 += count("failed").unwrap_or(0);
        }
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed: {status}"))
    }
}

/// Installs the `interpose` binary with `cargo install --path .`, into
/// cargo's bin directory (`~/.cargo/bin`, on PATH where rustup set cargo
/// up), and says where it went.
fn install() -> Result<()> {
    run(Command::new(env!("CARGO"))
        .current_dir(root())
        .args(["install", "--path", ".", "--locked", "--quiet", "--force"]))?;
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))
        .ok_or("neither CARGO_HOME nor HOME is set")?;
    let bin = home.join("bin");
    let on_path = std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d == bin));
    eprintln!(
        "xtask: installed {}{}",
        bin.join("interpose").display(),
        if on_path { "" } else { " (not on PATH here: add that directory to PATH)" }
    );
    Ok(())
}

/// Writes the manual pages (`interpose man --dir`) to `target/man`.
fn man() -> Result<()> {
    let root = root();
    run(Command::new(env!("CARGO")).current_dir(&root).args(["build", "--release", "--quiet"]))?;
    let dir = root.join("target/man");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    run(Command::new(root.join("target/release/interpose")).arg("man").arg("--dir").arg(&dir))?;
    eprintln!("xtask: wrote the pages to {} (read one with: man {}/interpose.1)", dir.display(), dir.display());
    Ok(())
}

fn demo() -> Result<()> {
    let root = root();
    let bin = root.join("target/release/interpose");
    run(Command::new(env!("CARGO")).current_dir(&root).args(["build", "--release", "--quiet"]))?;
    let ws = std::env::temp_dir().join(format!("interpose-demo-{}", std::process::id()));
    std::fs::create_dir_all(&ws).map_err(|e| format!("{}: {e}", ws.display()))?;
    // The trail stays (beside the workspace, which goes) for `interpose
    // report` and `why` afterwards.
    let audit = std::env::temp_dir().join(format!("interpose-demo-{}.jsonl", std::process::id()));
    let script = "set -u
echo '$ echo hello > notes.txt && cat notes.txt      (inside --rw: allowed)'
echo hello > notes.txt && cat notes.txt
echo '$ head -c 40 /etc/shadow                      (host secret: denied)'
head -c 40 /etc/shadow
echo '$ touch /usr/local/pwned                       (read-only surface: denied)'
touch /usr/local/pwned
echo '$ ls ~                                          (outside the surface: denied)'
ls ~
echo '$ curl -sS -o /dev/null https://example.com      (not on the network allowlist: refused by the proxy)'
curl -sS -o /dev/null https://example.com
exit 0";
    let status = Command::new(&bin)
        .args(["run", "--rw"])
        .arg(&ws)
        .arg("--audit")
        .arg(&audit)
        .args(["--", "sh", "-c", script])
        .current_dir(&ws)
        // cargo points the loader at its own directories; the sandboxed
        // shell needs neither, and its probes there would be denials.
        .env_remove("LD_LIBRARY_PATH")
        .env("PWD", &ws)
        .status()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    let _ = std::fs::remove_dir_all(&ws);
    println!("\ninterpose exited with {status}; what the trail says (interpose report {}):\n", audit.display());
    run(Command::new(&bin).arg("report").arg(&audit))?;
    println!("\nThe trail stays at {}; try: interpose report --suggest {}", audit.display(), audit.display());
    if status.success() {
        Ok(())
    } else {
        Err(format!("the demo command failed: {status}"))
    }
}

/// Runs each fuzz target for `seconds`. cargo-fuzz needs unstable compiler
/// flags; RUSTC_BOOTSTRAP lets the machine's stable toolchain accept them.
fn fuzz(seconds: u64) -> Result<()> {
    let have = Command::new(env!("CARGO")).args(["fuzz", "--version"]).output().is_ok_and(|o| o.status.success());
    if !have {
        run(Command::new(env!("CARGO")).args(["install", "cargo-fuzz", "--locked"]))?;
    }
    for target in ["trie", "split_last"] {
        run(Command::new(env!("CARGO")).current_dir(root()).env("RUSTC_BOOTSTRAP", "1").args([
            "fuzz",
            "run",
            target,
            "--",
            &format!("-max_total_time={seconds}"),
        ]))?;
    }
    Ok(())
}

/// Two rounds of 32 processes x 4 threads x 3,907 opens (about a million
/// trapped calls) under one interpose; samples the supervisor after each.
/// The LTP differential run: build (once; again with `--rebuild`), run,
/// tabulate. LTP is not vendored: pass a checkout of
/// `linux-test-project/ltp` (its build needs autoconf, automake and
/// libacl1-dev, installed here when missing).
fn ltp(args: &[String]) -> Result<()> {
    let mut src = None;
    let mut rebuild = false;
    let mut tests = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--src" => src = it.next().map(PathBuf::from),
            "--rebuild" => rebuild = true,
            t => tests.push(t.to_string()),
        }
    }
    let src = src.ok_or("ltp: --src DIR (a checkout of linux-test-project/ltp) is needed")?;
    let src = src.canonicalize().map_err(|e| format!("ltp: {}: {e}", src.display()))?;
    if !src.join("runtest/syscalls").exists() {
        return Err(format!("ltp: {} is not an LTP checkout (no runtest/syscalls)", src.display()));
    }
    let root = root();
    let work = root.join("target/ltp");
    let scripts = root.join("xtask/ltp");
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let missing: Vec<&str> = [
        ("/usr/bin/automake", "automake"),
        ("/usr/bin/autoconf", "autoconf"),
        ("/usr/include/sys/acl.h", "libacl1-dev"),
        ("/usr/bin/bc", "bc"),
    ]
    .iter()
    .filter(|(p, _)| !Path::new(p).exists())
    .map(|(_, pkg)| *pkg)
    .collect();
    if !missing.is_empty() {
        run(Command::new("apt-get")
            .args(["install", "-y", "-qq"])
            .args(&missing)
            .env("DEBIAN_FRONTEND", "noninteractive"))?;
    }
    run(Command::new(env!("CARGO")).current_dir(&root).args(["build", "--release", "--quiet"]))?;
    std::fs::copy(root.join("target/release/interpose"), work.join("interpose")).map_err(|e| e.to_string())?;
    if rebuild || !work.join("bin").exists() {
        run(Command::new(scripts.join("build.sh")).env("SRC", &src).env("WORK", &work))?;
    }
    let out = work.join("results");
    let _ = std::fs::remove_dir_all(&out);
    run(Command::new(scripts.join("run.sh")).args(&tests).env("SRC", &src).env("WORK", &work).env("OUT", &out))?;
    run(Command::new("python3").arg(scripts.join("table.py")).arg(&out).env("SRC", &src))?;
    eprintln!("xtask: ltp: the table is {}", out.join("table.md").display());
    Ok(())
}

fn soak() -> Result<()> {
    let root = root();
    run(Command::new(env!("CARGO")).current_dir(&root).args(["build", "--release", "--quiet"]))?;
    let ws = std::env::temp_dir().join(format!("interpose-soak-{}", std::process::id()));
    std::fs::create_dir_all(&ws).map_err(|e| e.to_string())?;
    let storm = ws.join("storm");
    run(Command::new("cc").args(["-O2", "-pthread", "-o"]).arg(&storm).arg(root.join("tests/attacks/storm.c")))?;
    std::fs::write(ws.join("ok.txt"), "data\n").map_err(|e| e.to_string())?;
    let round = format!("{} {} 32 4 3907", storm.display(), ws.join("ok.txt").display());
    let script = format!("{round} && touch round1 && sleep 1 && {round} && touch round2 && sleep 1");
    let started = std::time::Instant::now();
    let mut child = Command::new(root.join("target/release/interpose"))
        .args(["run", "--rw"])
        .arg(&ws)
        .args(["--", "sh", "-c", &script])
        .current_dir(&ws)
        .spawn()
        .map_err(|e| e.to_string())?;
    let sample = |marker: &str| -> (usize, String, usize) {
        while !ws.join(marker).exists() {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let fds = std::fs::read_dir(format!("/proc/{}/fd", child.id())).map(|d| d.count()).unwrap_or(0);
        let threads = std::fs::read_dir(format!("/proc/{}/task", child.id())).map(|d| d.count()).unwrap_or(0);
        let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
        let rss = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap_or("VmRSS: ?").to_string();
        (fds, rss, threads)
    };
    let first = sample("round1");
    let half = started.elapsed();
    let second = sample("round2");
    let status = child.wait().map_err(|e| e.to_string())?;
    let total = 2 * 32 * 4 * 3907u64;
    println!(
        "soak: {total} trapped opens in {:.1} s ({:.0} calls/s over both rounds)",
        started.elapsed().as_secs_f64() - 2.0,
        total as f64 / (started.elapsed().as_secs_f64() - 2.0)
    );
    println!("after round 1 ({:.1} s): {} fds, {} threads, {}", half.as_secs_f64(), first.0, first.2, first.1);
    println!("after round 2: {} fds, {} threads, {}", second.0, second.2, second.1);
    let _ = std::fs::remove_dir_all(&ws);
    if status.success() && first.0 == second.0 {
        Ok(())
    } else {
        Err(format!("soak failed: {status}, fds {} -> {}", first.0, second.0))
    }
}

struct Row {
    name: String,
    nr: i32,
    op: String,
    args: [Option<u8>; 5],
    follow: String,
    extra: Option<u8>,
    action: String,
    note: String,
}

const OPS: &[&str] = &[
    "open",
    "creat",
    "openat2",
    "exec",
    "unlink",
    "rmdir",
    "mkdir",
    "rename",
    "link",
    "symlink",
    "truncate",
    "mknod",
    "chdir",
    "statbuf",
    "statx",
    "statfs",
    "access",
    "getxattr",
    "listxattr",
    "readlink",
    "watch",
    "chmod",
    "chown",
    "utime",
    "utimes",
    "utimensat",
    "setxattr",
    "removexattr",
    "connect",
    "bind",
    "sendto",
    "sendmsg",
    "sendmmsg",
    "refuse",
    "creds",
];

/// A condition of an action on an argument.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Cond {
    /// `ARG&MASK`: any bit of MASK set.
    AnyBit(u8, u64),
    /// `ARG=V,V...`: the low 32 bits equal one of the values.
    Equals(u8, Vec<u32>),
}

/// An action's kind (`emulate`, `continue`, an errno, ...) and condition.
type Parsed = (String, Option<Cond>);

/// Parses an action, and the refusal the filter makes first in every mode
/// if it has one (`continue+EPERM:4&0x4`).
fn parse_full_action(action: &str) -> Option<(Parsed, Option<(String, Cond)>)> {
    match action.split_once('+') {
        None => Some((parse_action(action)?, None)),
        Some((main, refuse)) => {
            let (errno, cond) = parse_action(refuse)?;
            Some((parse_action(main)?, Some((errno, cond?))))
        }
    }
}

/// Parses an action: `emulate`, `continue`, `ipc-namespace`, `ERRNO`,
/// `ERRNO:ARG&MASK` or `ERRNO:ARG=VALUE,VALUE...`.
fn parse_action(action: &str) -> Option<Parsed> {
    match action {
        "allow" | "emulate" | "continue" | "ipc-namespace" => return Some((action.to_string(), None)),
        _ => {}
    }
    let (errno, cond) = match action.split_once(':') {
        Some((e, c)) => (e, Some(c)),
        None => (action, None),
    };
    if !errno.starts_with('E') || !errno[1..].chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit()) {
        return None;
    }
    let hex = |v: &str| u64::from_str_radix(v.strip_prefix("0x")?, 16).ok();
    let cond = match cond {
        None => None,
        Some(c) if c.contains('&') => {
            let (arg, mask) = c.split_once('&')?;
            let arg: u8 = arg.parse().ok().filter(|a| *a <= 5)?;
            Some(Cond::AnyBit(arg, hex(mask).filter(|m| *m != 0)?))
        }
        Some(c) => {
            let (arg, values) = c.split_once('=')?;
            let arg: u8 = arg.parse().ok().filter(|a| *a <= 5)?;
            let values =
                values.split(',').map(|v| hex(v).and_then(|v| u32::try_from(v).ok())).collect::<Option<Vec<_>>>()?;
            Some(Cond::Equals(arg, values))
        }
    };
    Some((errno.to_string(), cond))
}

fn parse_table(text: &str) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = |what: &str| format!("bpf/syscalls.tsv:{}: {what}", i + 1);
        let mut fields = line.split_whitespace();
        let mut next = |what: &str| fields.next().ok_or_else(|| at(&format!("missing column {what}")));
        let name = next("name")?.to_string();
        let nr = next("nr")?.parse().map_err(|_| at("nr is not a number"))?;
        let op = next("op")?.to_string();
        let mut args = [None; 5];
        for (slot, what) in args.iter_mut().zip(["dirfd", "path", "dirfd2", "path2", "flags"]) {
            let v = next(what)?;
            if v != "-" {
                let n: u8 = v.parse().map_err(|_| at(&format!("{what} must be 0-5 or -")))?;
                if n > 5 {
                    return Err(at(&format!("{what} must be 0-5 or -")));
                }
                *slot = Some(n);
            }
        }
        let follow = next("follow")?.to_string();
        if !["yes", "no", "flags", "-"].contains(&follow.as_str()) {
            return Err(at("follow must be yes, no, flags or -"));
        }
        let extra = match next("extra")? {
            "-" => None,
            v => Some(v.parse::<u8>().ok().filter(|n| *n <= 5).ok_or_else(|| at("extra must be 0-5 or -"))?),
        };
        let action = next("action")?.to_string();
        let note = fields.collect::<Vec<_>>().join(" ");
        if (op == "-") != (action == "allow") {
            return Err(at("op `-` goes with action `allow`, and only with it"));
        }
        if op != "-" && !OPS.contains(&op.as_str()) {
            return Err(at(&format!("unknown op {op}")));
        }
        match parse_full_action(&action) {
            None => return Err(at(&format!("unknown action {action}"))),
            Some(((main, _), Some((_, Cond::Equals(..))))) if main == "emulate" || main == "continue" => {
                return Err(at("a trapped row's extra refusal must test bits (ARG&MASK)"));
            }
            Some(_) => {}
        }
        if note.is_empty() {
            return Err(at("every row needs a note saying why its disposition is safe"));
        }
        rows.push(Row { name, nr, op, args, follow, extra, action, note });
    }
    let mut nrs: Vec<i32> = rows.iter().map(|r| r.nr).collect();
    nrs.sort_unstable();
    if nrs.windows(2).any(|w| w[0] == w[1]) {
        return Err("bpf/syscalls.tsv: a syscall number appears twice".into());
    }
    let highest = nrs.last().copied().unwrap_or(0);
    let expected: Vec<i32> = (0..=highest).filter(|n| !UNUSED.contains(n)).collect();
    if nrs != expected {
        let missing: Vec<String> = expected.iter().filter(|n| !nrs.contains(n)).map(i32::to_string).collect();
        let unused: Vec<String> = nrs.iter().filter(|n| UNUSED.contains(n)).map(i32::to_string).collect();
        return Err(format!(
            "bpf/syscalls.tsv: every x86_64 syscall number needs a row; missing: [{}], unused on x86_64: [{}]",
            missing.join(", "),
            unused.join(", ")
        ));
    }
    Ok(rows)
}

/// Numbers x86_64 never assigned (kept free to line up with other
/// architectures' tables); every other number up to the highest has a row.
const UNUSED: std::ops::RangeInclusive<i32> = 336..=423;

fn camel(op: &str) -> String {
    op.split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next().map(|f| f.to_ascii_uppercase().to_string() + c.as_str()).unwrap_or_default()
        })
        .collect()
}

fn render_rust(rows: &[Row]) -> Result<String> {
    let mut s = String::from(
        "//! Generated by `cargo xtask codegen` from `bpf/syscalls.tsv`; do not edit.\n\n\
         use super::row::{Action, Follow, Op, Syscall, When};\n\n\
         /// Every syscall the filter traps or refuses, in table order.\n\
         pub static TABLE: &[Syscall] = &[\n",
    );
    let opt = |v: Option<u8>| v.map_or("None".to_string(), |n| format!("Some({n})"));
    let trapped: Vec<&Row> = rows.iter().filter(|r| r.action != "allow").collect();
    for r in &trapped {
        let ((kind, cond), also) = parse_full_action(&r.action).expect("validated");
        let action = match kind.as_str() {
            "emulate" => "Action::Emulate".to_string(),
            "continue" => "Action::Continue".to_string(),
            "ipc-namespace" => "Action::IpcNamespace".to_string(),
            e => format!("Action::Errno(libc::{e})"),
        };
        let render = |cond: &Cond| match cond {
            Cond::AnyBit(arg, mask) => format!("When::AnyBit {{ arg: {arg}, mask: {mask:#x} }}"),
            Cond::Equals(arg, values) => {
                let values: Vec<String> = values.iter().map(|v| format!("{v:#x}")).collect();
                format!("When::Equals {{ arg: {arg}, values: &[{}] }}", values.join(", "))
            }
        };
        let when = cond.as_ref().map_or("None".to_string(), |c| format!("Some({})", render(c)));
        let refuse = also.map_or("None".to_string(), |(errno, c)| format!("Some((libc::{errno}, {}))", render(&c)));
        let follow = match r.follow.as_str() {
            "yes" => "Follow::Yes",
            "no" => "Follow::No",
            "flags" => "Follow::UnlessNofollowFlag",
            _ => "Follow::NotApplicable",
        };
        let [dirfd, path, dirfd2, path2, flags] = r.args.map(opt);
        writeln!(
            s,
            "Syscall {{ name: {:?}, nr: {}, op: Op::{}, dirfd: {dirfd}, path: {path}, dirfd2: {dirfd2}, \
             path2: {path2}, flags: {flags}, follow: {follow}, extra: {}, action: {action}, when: {when}, refuse: {refuse}, note: {:?} }},",
            r.name,
            r.nr,
            camel(&r.op),
            opt(r.extra),
            r.note
        )
        .unwrap();
    }
    s.push_str("];\n\n/// The row for syscall `nr`, if the filter traps or refuses it.\n");
    s.push_str("pub fn lookup(nr: i32) -> Option<&'static Syscall> {\n    let i = match nr {\n");
    for (i, r) in trapped.iter().enumerate() {
        writeln!(s, "        {} => {i},", r.nr).unwrap();
    }
    s.push_str("        _ => return None,\n    };\n    Some(&TABLE[i])\n}\n");
    s.push_str(
        "\n/// The syscalls allowed untrapped, by name (for runtimes' profiles).\npub static ALLOWED: &[&str] = &[\n",
    );
    for r in rows.iter().filter(|r| r.action == "allow") {
        writeln!(s, "    {:?},", r.name).unwrap();
    }
    s.push_str("];\n");
    let highest = rows.iter().map(|r| r.nr).max().unwrap_or(0);
    writeln!(
        s,
        "\n/// The highest x86_64 syscall number the table names; the filter answers\n\
         /// `ENOSYS` above it, so a call a newer kernel adds is refused until the\n\
         /// table has a row for it.\npub const HIGHEST: u32 = {highest};"
    )
    .unwrap();
    rustfmt(&s)
}

fn rustfmt(code: &str) -> Result<String> {
    use std::io::Write;
    let mut child = Command::new("rustfmt")
        .args(["--edition", "2021", "--emit", "stdout", "--config-path"])
        .arg(root().join("rustfmt.toml"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run rustfmt: {e}"))?;
    child.stdin.take().expect("piped").write_all(code.as_bytes()).map_err(|e| e.to_string())?;
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err("rustfmt rejected the generated table".into());
    }
    String::from_utf8(out.stdout).map_err(|e| e.to_string())
}

fn render_docs(rows: &[Row]) -> String {
    let highest = rows.iter().map(|r| r.nr).max().unwrap_or(0);
    let mut s = String::from(
        "# Syscall coverage\n\n\
         Generated by `cargo xtask codegen` from `bpf/syscalls.tsv`; do not edit.\n\n\
         Every x86_64 syscall number has a row below: trapped by the seccomp\n\
         filter, refused by it outright, or allowed untrapped with the reason it\n\
         needs no decision. `cargo xtask codegen --check` (run in CI) fails when a\n\
         number is missing.\n\n\
         Dispositions:\n\n\
         - **emulate**: the supervisor performs the operation itself on the object\n\
         \x20 it checked (for opens: it opens the file and injects the descriptor with\n\
         \x20 `SECCOMP_IOCTL_NOTIF_ADDFD`), so rewriting the path after the check\n\
         \x20 gains nothing.\n\
         - **continue**: the supervisor decides, then lets the kernel run the call\n\
         \x20 (`SECCOMP_USER_NOTIF_FLAG_CONTINUE`), and the kernel reads the\n\
         \x20 arguments again, after another thread may have changed them. So the\n\
         \x20 answer can only be built with a cover (`src/supervisor/cover.rs`):\n\
         \x20 the backstop (a Landlock ruleset that grants nothing the surface\n\
         \x20 refuses, carve-outs masked in the command's mount namespace) refuses\n\
         \x20 the access wherever the surface does; the call changes only the\n\
         \x20 caller's own credentials; the call makes a handle (`O_PATH`, a cwd)\n\
         \x20 every use of which is trapped; or, learning, nothing is enforced.\n\
         \x20 `tests/e2e/flips.rs` flips every trapped call's pointer arguments\n\
         \x20 after the check and expects the kernel to refuse.\n\
         - **E…**: refused by the BPF filter with that errno; no notification.\n\
         \x20 `EPERM:A&M` refuses only when a bit of mask `M` is set in argument `A`;\n\
         \x20 other values are allowed untrapped.\n\
         - **allow**: not trapped; the Landlock ruleset still confines what the\n\
         \x20 call can reach on the file system.\n\n",
    );
    writeln!(
        s,
        "A number above {highest} (a syscall of a newer kernel) is refused with `ENOSYS`.\n\
         Any other architecture (32-bit `int 0x80`, x32) kills the process.\n\n\
         ## Trapped or refused\n\n| syscall | nr | disposition | why |\n|---|---|---|---|"
    )
    .unwrap();
    for r in rows.iter().filter(|r| r.action != "allow") {
        writeln!(s, "| `{}` | {} | {} | {} |", r.name, r.nr, r.action, r.note.replace('|', "\\|")).unwrap();
    }
    s.push_str("\n## Allowed untrapped\n\n| syscall | nr | why it needs no decision |\n|---|---|---|\n");
    let mut allowed: Vec<&Row> = rows.iter().filter(|r| r.action == "allow").collect();
    allowed.sort_by_key(|r| r.nr);
    for r in allowed {
        writeln!(s, "| `{}` | {} | {} |", r.name, r.nr, r.note.replace('|', "\\|")).unwrap();
    }
    s
}

/// What `interpose debug <verb>` prints (`filter-pfc`, `filter-programs`).
fn debug_output(verb: &str) -> Result<String> {
    let out = Command::new(env!("CARGO"))
        .current_dir(root())
        .args(["run", "--quiet", "--bin", "interpose", "--", "debug", verb])
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !out.status.success() {
        return Err(format!("interpose debug {verb} failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    String::from_utf8(out.stdout).map_err(|e| e.to_string())
}

fn codegen(check: bool) -> Result<()> {
    let root = root();
    let table = std::fs::read_to_string(root.join("bpf/syscalls.tsv")).map_err(|e| format!("bpf/syscalls.tsv: {e}"))?;
    let rows = parse_table(&table)?;
    let mut stale = Vec::new();
    let mut emit = |rel: &str, content: String| -> Result<()> {
        let path = root.join(rel);
        let old = std::fs::read_to_string(&path).unwrap_or_default();
        if old != content {
            if check {
                stale.push(rel.to_string());
            } else {
                std::fs::write(&path, content).map_err(|e| format!("{rel}: {e}"))?;
                eprintln!("xtask: wrote {rel}");
            }
        }
        Ok(())
    };
    emit("src/syscalls/table.rs", render_rust(&rows)?)?;
    emit("docs/syscalls.md", render_docs(&rows))?;
    // The filter is built from the generated table, so dump it after
    // writing; its programs are kept compiled for every option.
    emit("bpf/filter.pfc", debug_output("filter-pfc")?)?;
    emit("src/sandbox/programs.rs", debug_output("filter-programs")?)?;
    if stale.is_empty() {
        Ok(())
    } else {
        Err(format!("generated files are stale: {}; run `cargo xtask codegen`", stale.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_rows_parse_and_bad_rows_are_named() {
        let rows = parse_table("# c\nread 0 - - - - - - - - allow why\nwrite 1 - - - - - - - - allow why\nopen 2 open - 0 - - 1 - - emulate why it is safe\n").unwrap();
        assert_eq!(rows.len(), 3);
        let rows = rows.into_iter().skip(2).collect::<Vec<_>>();
        assert_eq!(rows[0].args, [None, Some(0), None, None, Some(1)]);
        assert_eq!(rows[0].note, "why it is safe");
        let err = parse_table("x 1 bogus - - - - - - - EPERM note\n").err().unwrap();
        assert!(err.contains("bpf/syscalls.tsv:1") && err.contains("unknown op"), "{err}");
        assert!(parse_table("x 1 refuse - - - - - - - EPERM\n").err().unwrap().contains("note"));
        assert!(parse_table("x 1 refuse - 9 - - - - - EPERM n\n").is_err());
        assert!(parse_table("a 1 refuse - - - - - - - EPERM n\nb 1 refuse - - - - - - - EPERM n\n").is_err());
        assert_eq!(parse_action("EPERM:1&0x8"), Some(("EPERM".into(), Some(Cond::AnyBit(1, 8)))));
        assert_eq!(
            parse_action("EPERM:1=0x5412,0x541c"),
            Some(("EPERM".into(), Some(Cond::Equals(1, vec![0x5412, 0x541c]))))
        );
        assert_eq!(parse_action("EPERM:1=0x1ffffffff"), None);
        assert_eq!(parse_action("EPERM:7&0x8"), None);
        assert_eq!(parse_action("EPERM:1&8"), None);
        assert_eq!(parse_action("maybe"), None);
        // Completeness: a gap is named, and so is a number x86_64 never used.
        let err =
            parse_table("read 0 - - - - - - - - allow why\nopen 2 open - 0 - - 1 - - emulate why\n").err().unwrap();
        assert!(err.contains("missing: [1]"), "{err}");
        let mut all: String = (0..=335).map(|n| format!("s{n} {n} - - - - - - - - allow why\n")).collect();
        assert_eq!(parse_table(&all).unwrap().len(), 336);
        all.push_str("s400 400 - - - - - - - - allow why\n");
        assert!(parse_table(&all).err().unwrap().contains("unused on x86_64: [400]"));
        // `allow` is for untrapped rows only, and an untrapped row must say so.
        assert!(parse_table("read 0 open - 0 - - - - - allow why\n").err().unwrap().contains("op `-`"));
        assert!(parse_table("read 0 - - - - - - - - EPERM why\n").err().unwrap().contains("op `-`"));
    }

    #[test]
    fn the_committed_table_parses() {
        let text = std::fs::read_to_string(root().join("bpf/syscalls.tsv")).unwrap();
        assert!(parse_table(&text).unwrap().iter().any(|r| r.name == "openat"));
    }

    /// The table's names and numbers agree with the C library's header
    /// (which may be older than the table: it cannot name every row).
    #[test]
    fn the_table_agrees_with_the_system_header() {
        let header = "/usr/include/x86_64-linux-gnu/asm/unistd_64.h";
        let header = std::fs::read_to_string(header).expect("the libc headers (linux-libc-dev) are installed");
        let rows = parse_table(&std::fs::read_to_string(root().join("bpf/syscalls.tsv")).unwrap()).unwrap();
        let mut checked = 0;
        for line in header.lines() {
            let mut w = line.split_whitespace();
            let (Some("#define"), Some(name), Some(nr)) = (w.next(), w.next(), w.next()) else { continue };
            let (Some(name), Ok(nr)) = (name.strip_prefix("__NR_"), nr.parse::<i32>()) else { continue };
            let row = rows.iter().find(|r| r.nr == nr).unwrap_or_else(|| panic!("no row for {name} ({nr})"));
            assert_eq!(row.name, name, "syscall {nr}");
            checked += 1;
        }
        assert!(checked > 300, "only {checked} syscalls in the header");
    }
}
