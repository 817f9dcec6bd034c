//! The real-workload suite (`cargo xtask workloads`, also part of `cargo
//! xtask test`): real toolchains and agent CLIs, run natively and under
//! interpose with the shipped example policy and profiles, each in a fresh
//! generated developer's home. A workload passes when both runs end the same
//! way, the sandboxed run has no refusal beyond the ones the workload lists
//! as intended, and its own checks hold (the host's caches unchanged, a hook
//! not planted). Workloads that need a package registry are marked; where
//! none is reachable they report "skipped: no network" (a failure when
//! `INTERPOSE_REQUIRE_NETWORK` is set, as in CI). Each prints its native and
//! sandboxed wall time.
//!
//! `cargo xtask workloads [FILTER]` runs those whose name contains FILTER;
//! `INTERPOSE_WORKLOADS_TRAILS=DIR` keeps each sandboxed run's trail there.
//! `INTERPOSE_WORKLOADS_MODES=native,audit,floor,emulate,full,fast` runs each
//! workload again in those modes, each run in a fresh environment, for the
//! performance issue's whole-command ratios (a measurement, never asserted
//! beyond ending as the native run did), `INTERPOSE_WORKLOADS_ROUNDS` times
//! (default 1), every round in another order, and prints the medians:
//! `native` and `audit` as the two runs above, `floor` the same session
//! whose supervisor answers every call with CONTINUE at once (`run
//! --bench-floor`), `emulate` interpose's emulate floor (`debug floor
//! emulate`: no session, opens performed), `emulate-stat`
//! the same with `newfstatat` performed too (`debug floor emulate-stat`),
//! `full` the
//! shipped policy without `--audit`, `fast` the same with `--fast` and
//! Claude Code's configuration directory from `interpose agent-config
//! claude` (where the shipped policy lets fast mode engage).

mod home;
mod list;
mod projects;

use home::{Env, SECRET};
use interpose::audit::{self, Decision};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One command's result.
#[derive(Debug, Clone)]
pub struct Run {
    /// Exit status (128 + signal, -1 if it timed out).
    pub status: i32,
    /// Standard output, with the environment's root written `$ROOT`.
    pub stdout: String,
    /// Standard error, likewise.
    pub stderr: String,
    /// Wall time.
    pub elapsed: Duration,
    /// The time of the test suite alone, where the script says it
    /// (`suite-ms N` on stderr).
    pub suite: Option<Duration>,
}

/// A refusal a workload expects (and the test asserts nothing else is
/// refused).
pub struct Intended {
    /// Why it is refused, for the output.
    pub what: &'static str,
    /// Whether a refusal is this one (in the sandboxed run's environment).
    pub matches: fn(&Decision, &Env) -> bool,
}

/// Refused by design in every workload: `/proc` of processes outside the
/// sandbox (`ps` lists them all), and the metadata of the host's secrets in
/// `/etc` (programs that list `/etc` stat every entry).
pub const ALWAYS: &[Intended] = &[
    Intended {
        what: "/proc of processes outside the sandbox",
        matches: |d, _| d.rule_kind == audit::RuleKind::ProcOutside,
    },
    Intended {
        what: "the planted credentials",
        matches: |d, env| env.credentials().iter().any(|c| d.subject().0 == c.as_os_str().as_encoded_bytes()),
    },
    Intended {
        what: "metadata of the host's secrets in /etc",
        matches: |d, _| {
            d.rule_kind == audit::RuleKind::CarveOut
                && d.access == audit::AccessKind::Stat
                && d.subject().0.starts_with(b"/etc/")
        },
    },
];

/// Which policy the sandboxed run uses.
#[derive(Debug, Clone, Copy)]
pub enum Policy {
    /// `examples/coding-agent.toml` as shipped (it extends `claude`).
    Example,
    /// The example policy plus this agent's profile.
    Agent(&'static str),
}

/// Something computed from the environment.
pub type FromEnv<T> = Box<dyn Fn(&Env) -> T>;
/// A comparison of the two runs, or a check of one.
pub type Check<A, B> = Box<dyn Fn(&A, &B) -> Result<(), String>>;

/// One workload.
pub struct Workload {
    /// Its name.
    pub name: String,
    /// Whether it needs a package registry.
    pub network: bool,
    /// Prepares the environment (natively, before either run).
    pub setup: FromEnv<()>,
    /// The shell script both runs execute in the workspace.
    pub script: FromEnv<String>,
    /// More `interpose run` flags (a local repository to read).
    pub flags: FromEnv<Vec<String>>,
    /// The policy.
    pub policy: Policy,
    /// A directory put first on PATH (an nvm-installed node).
    pub path_front: FromEnv<Option<PathBuf>>,
    /// Refusals this workload expects besides [`ALWAYS`].
    pub intended: Vec<Intended>,
    /// How the two runs must compare.
    pub compare: Check<Run, Run>,
    /// Checks of the sandboxed environment after its run.
    pub after: Check<Env, Run>,
    /// Directories of the home (package caches) that the sandboxed run must
    /// leave exactly as the set-up left them.
    pub unchanged: Vec<&'static str>,
    /// How long a run may take.
    pub timeout: Duration,
    /// The script runs outside the sandbox in both runs and puts
    /// `$SANDBOX` in front of the command to confine (a terminal
    /// multiplexer holding the agent's UI).
    pub wraps: bool,
    /// Compare the files the two runs leave in the workspace, by name,
    /// except those this says vary between any two runs: a file written
    /// natively and missing under interpose was dropped.
    pub files: Option<fn(&str) -> bool>,
    /// The largest trail this workload may leave.
    pub trail_budget: Option<u64>,
}

/// Both runs ended the same way and printed the same.
pub fn same(native: &Run, sandboxed: &Run) -> Result<(), String> {
    if native.status != sandboxed.status {
        return Err(format!("exit {} natively, {} under interpose", native.status, sandboxed.status));
    }
    if native.stdout != sandboxed.stdout {
        return Err(format!("output differs:\n--- native\n{}--- interpose\n{}", native.stdout, sandboxed.stdout));
    }
    Ok(())
}

fn wait(mut child: std::process::Child, timeout: Duration) -> (i32, String, String) {
    use std::io::Read;
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    let errs = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        s
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            use std::os::unix::process::ExitStatusExt;
            break st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0));
        }
        if Instant::now() > deadline {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(child.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
            std::thread::sleep(Duration::from_secs(2));
            let _ = child.kill();
            let _ = child.wait();
            break -1;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let text = |v: Vec<u8>| String::from_utf8_lossy(&v).into_owned();
    (status, text(reader.join().unwrap()), text(errs.join().unwrap()))
}

/// How a run is sandboxed: interpose's arguments up to `--` (an
/// `interpose run` takes the workload's own flags after them, a floor
/// none), and more environment variables.
struct Sandbox {
    args: Vec<String>,
    vars: Vec<(String, String)>,
}

impl Sandbox {
    /// `interpose run` with `policy`, a trail where one is given, and `flags`.
    fn session(policy: &Path, trail: Option<&Path>, flags: &[&str]) -> Sandbox {
        let mut args = vec!["run".to_string(), "--policy".to_string(), policy.display().to_string()];
        if let Some(trail) = trail {
            args.extend(["--audit".to_string(), trail.display().to_string()]);
        }
        args.extend(flags.iter().map(|f| f.to_string()));
        Sandbox { args, vars: Vec::new() }
    }
}

/// Runs `script` in `env`, natively or under interpose.
fn run(w: &Workload, env: &Env, sandbox: Option<&Sandbox>) -> Run {
    let script = (w.script)(env);
    let mut vars = env.vars();
    if let Some(sandbox) = sandbox {
        vars.extend(sandbox.vars.iter().cloned());
    }
    if let Some(front) = (w.path_front)(env) {
        for (k, v) in &mut vars {
            if k == "PATH" {
                *v = format!("{}:{v}", front.display());
            }
        }
    }
    let mut prefix = String::new();
    if let (true, Some(sandbox)) = (w.wraps, sandbox) {
        prefix = format!("{} {} --", env!("CARGO_BIN_EXE_interpose"), sandbox.args.join(" "));
    }
    vars.push(("SANDBOX".into(), prefix));
    let mut cmd = match sandbox {
        None => Command::new("/bin/sh"),
        Some(_) if w.wraps => Command::new("/bin/sh"),
        Some(sandbox) => {
            let mut c = Command::new(env!("CARGO_BIN_EXE_interpose"));
            c.args(&sandbox.args);
            if sandbox.args[0] == "run" {
                c.args((w.flags)(env));
            }
            c.args(["--", "/bin/sh"]);
            c
        }
    };
    cmd.args(["-c", &script]).current_dir(&env.ws).env_clear().envs(vars);
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let started = Instant::now();
    let child = cmd.spawn().expect("spawn");
    let (status, stdout, stderr) = wait(child, w.timeout);
    let suite = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("suite-ms ")?.trim().parse().ok())
        .next_back()
        .map(Duration::from_millis);
    Run { status, stdout: env.normalize(&stdout), stderr: env.normalize(&stderr), elapsed: started.elapsed(), suite }
}

/// The policy file for `w` in `env`.
fn policy_file(w: &Workload, env: &Env) -> PathBuf {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/coding-agent.toml");
    match w.policy {
        Policy::Example => example,
        Policy::Agent(agent) => {
            let file = env.root.join(format!("{agent}.toml"));
            let text = format!("extends = [{:?}, {agent:?}]\n", example.display().to_string());
            std::fs::write(&file, text).unwrap();
            file
        }
    }
}

/// The refusals in `trail` that no intended entry explains.
fn unexpected(w: &Workload, env: &Env, trail: &Path) -> Result<Vec<String>, String> {
    let mut reader = audit::Reader::open(trail).map_err(|e| format!("{}: {e}", trail.display()))?;
    let mut out = Vec::new();
    for record in reader.by_ref() {
        let audit::Record::Decision(d) = record.map_err(|e| e.to_string())? else { continue };
        if !d.decision.refuses() || ALWAYS.iter().chain(&w.intended).any(|i| (i.matches)(&d, env)) {
            continue;
        }
        let line = format!("{:?} {} by {} ({})", d.access, d.subject().lossy(), d.comm, d.rule).to_lowercase();
        if !out.contains(&line) {
            out.push(line);
        }
    }
    // Anchored with the key `run` made in the workload's home.
    let key = audit::TrailKey::load(&env.home.join(".local/state/interpose/audit.key"))
        .map_err(|e| format!("the trail's key: {e}"))?;
    reader.verified(&key).map_err(|e| format!("the trail is not intact: {e}"))?;
    Ok(out)
}

/// Whether the package registries answer (a TCP connect to each).
fn network() -> bool {
    use std::net::ToSocketAddrs;
    [
        "registry.npmjs.org:443",
        "pypi.org:443",
        "files.pythonhosted.org:443",
        "index.crates.io:443",
        "static.crates.io:443",
    ]
    .iter()
    .all(|host| {
        host.to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .is_some_and(|addr| std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5)).is_ok())
    })
}

enum Verdict {
    Ok,
    Skipped(&'static str),
    Failed(String),
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let filter: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let workloads: Vec<Workload> = list::all()
        .into_iter()
        .chain(projects::all())
        .filter(|w| filter.is_empty() || filter.iter().any(|f| w.name.contains(f)))
        .collect();
    let require_network = std::env::var_os("INTERPOSE_REQUIRE_NETWORK").is_some();
    let require_agents = std::env::var_os("INTERPOSE_REQUIRE_AGENTS").is_some();
    let online = workloads.iter().any(|w| w.network) && network();
    let agents = home::agents_dir().join(".bin/claude").exists();
    println!(
        "{:<34} {:>10} {:>11} {:>10} {:>11} {:>6} {:>8}  result",
        "workload", "native", "interpose", "suite", "interpose", "ratio", "trail"
    );
    let mut results = Vec::new();
    for w in &workloads {
        let needs_agents = ["claude", "gemini", "codex"].iter().any(|a| w.name.starts_with(a));
        let skip = if w.network && !online {
            Some("skipped: no network")
        } else if needs_agents && !agents {
            Some("skipped: agent CLIs not installed (cargo xtask agents)")
        } else {
            None
        };
        let verdict = match skip {
            Some(why) => {
                println!("{:<34} {:>10} {:>11} {:>38}  {why}", tag(w), "-", "-", "");
                Verdict::Skipped(why)
            }
            None => execute(w),
        };
        results.push((w.name.clone(), verdict));
    }
    let count = |f: fn(&Verdict) -> bool| results.iter().filter(|(_, v)| f(v)).count();
    let (passed, skipped, failed) = (
        count(|v| matches!(v, Verdict::Ok)),
        count(|v| matches!(v, Verdict::Skipped(_))),
        count(|v| matches!(v, Verdict::Failed(_))),
    );
    for (name, v) in &results {
        if let Verdict::Failed(why) = v {
            println!("\n=== {name} failed:\n{why}");
        }
    }
    println!("\nworkloads: {passed} passed, {skipped} skipped, {failed} failed");
    // In libtest's words too, so `cargo xtask test` counts these.
    let word = if failed == 0 { "ok" } else { "FAILED" };
    println!("test result: {word}. {passed} passed; {failed} failed; {skipped} ignored; 0 measured; 0 filtered out");
    let required = results.iter().any(|(_, v)| match v {
        Verdict::Skipped(why) => {
            (why.contains("network") && require_network) || (why.contains("agent") && require_agents)
        }
        _ => false,
    });
    if required {
        println!(
            "a workload was skipped although INTERPOSE_REQUIRE_NETWORK / INTERPOSE_REQUIRE_AGENTS asks for every one"
        );
    }
    if failed > 0 || required {
        std::process::exit(1);
    }
}

fn tag(w: &Workload) -> String {
    if w.network {
        format!("{} [network]", w.name)
    } else {
        w.name.clone()
    }
}

/// Runs one workload natively and under interpose, each in a fresh
/// environment, and prints its row.
fn execute(w: &Workload) -> Verdict {
    let (native_env, sandbox_env) = (Env::new(), Env::new());
    (w.setup)(&native_env);
    (w.setup)(&sandbox_env);
    let native = run(w, &native_env, None);
    let policy = policy_file(w, &sandbox_env);
    let trail = sandbox_env.root.join("trail.jsonl");
    let before: Vec<Vec<String>> = w.unchanged.iter().map(|d| listing(&sandbox_env.home.join(d))).collect();
    let started = std::time::SystemTime::now();
    let audited = Sandbox::session(&policy, Some(&trail), &[]);
    let sandboxed = run(w, &sandbox_env, Some(&audited));
    if w.wraps {
        // interpose ran in a terminal the script has closed: it ends its
        // trail once the command it forwarded the hang-up to is gone.
        let deadline = Instant::now() + Duration::from_secs(20);
        let ended = || {
            std::fs::read_to_string(&trail).is_ok_and(|t| t.lines().last().is_some_and(|l| l.contains("\"anchor\"")))
        };
        while !ended() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let mut problems = Vec::new();
    if let Err(e) = (w.compare)(&native, &sandboxed) {
        problems.push(e);
    }
    match unexpected(w, &sandbox_env, &trail) {
        Ok(u) if u.is_empty() => {}
        Ok(u) => problems.push(format!("refused beyond what the workload intends:\n  {}", u.join("\n  "))),
        Err(e) => problems.push(e),
    }
    if let Err(e) = (w.after)(&sandbox_env, &sandboxed) {
        problems.push(e);
    }
    if let Some(volatile) = w.files {
        let (native_files, sandboxed_files) = (names(&native_env.ws, volatile), names(&sandbox_env.ws, volatile));
        let dropped: Vec<&String> = native_files.iter().filter(|f| !sandboxed_files.contains(f)).collect();
        let extra: Vec<&String> = sandboxed_files.iter().filter(|f| !native_files.contains(f)).collect();
        if !dropped.is_empty() || !extra.is_empty() {
            problems.push(format!(
                "the workspace's files differ: {} written natively are missing under interpose {:?}, {} are new {:?}",
                dropped.len(),
                dropped.iter().take(5).collect::<Vec<_>>(),
                extra.len(),
                extra.iter().take(5).collect::<Vec<_>>()
            ));
        }
    }
    let leaks = leaked(&sandbox_env, &sandboxed, started);
    if !leaks.is_empty() {
        problems.push(format!("a planted credential's value appears in: {}", leaks.join(", ")));
    }
    let trail_size = std::fs::metadata(&trail).map_or(0, |m| m.len());
    if let Some(keep) = std::env::var_os("INTERPOSE_WORKLOADS_TRAILS") {
        // For a look at what a workload's trail holds.
        let _ = std::fs::create_dir_all(&keep);
        let _ = std::fs::copy(&trail, Path::new(&keep).join(format!("{}.jsonl", w.name)));
    }
    if let Some(budget) = w.trail_budget.filter(|b| trail_size > *b) {
        problems.push(format!("the trail is {trail_size} bytes, over the {budget} budget"));
    }
    for (dir, before) in w.unchanged.iter().zip(before) {
        let after = listing(&sandbox_env.home.join(dir));
        if after != before {
            let new: Vec<&String> = after.iter().filter(|e| !before.contains(e)).take(3).collect();
            problems.push(format!("the host's ~/{dir} changed under interpose (new: {new:?})"));
        }
    }
    let modes = if w.wraps { Vec::new() } else { measured_modes() };
    let mut measured: Vec<(Mode, Run)> = Vec::new();
    for round in 0..measured_rounds() {
        let mut order = modes.clone();
        order.rotate_left(round % modes.len().max(1));
        for mode in order {
            let env = Env::new();
            (w.setup)(&env);
            let policy = policy_file(w, &env);
            let trail = env.root.join("trail.jsonl");
            let run = run(w, &env, mode.sandbox(&policy, &trail, &env).as_ref());
            // A mode that enforces the policy must end as the asserted run
            // may (a refused hook, the proxy's answer); a floor enforces
            // nothing and must end as the native run did.
            let ended = match mode.enforces() {
                true => (w.compare)(&native, &run),
                false => same(&native, &run),
            };
            if let Err(e) = ended {
                problems.push(format!("in the measured mode {}: {e}", mode.name()));
            }
            measured.push((mode, run));
        }
    }
    let verdict = if problems.is_empty() {
        Verdict::Ok
    } else {
        problems.push(format!(
            "--- native stderr\n{}--- interpose stderr\n{}",
            tail(&native.stderr),
            tail(&sandboxed.stderr)
        ));
        Verdict::Failed(problems.join("\n"))
    };
    let result = match &verdict {
        Verdict::Ok => "ok",
        _ => "FAILED",
    };
    let suite = match (native.suite, sandboxed.suite) {
        (Some(n), Some(s)) => format!("{:>10} {:>11} {:>5.2}x", ms(n), ms(s), s.as_secs_f64() / n.as_secs_f64()),
        _ => format!("{:>10} {:>11} {:>6}", "", "", ""),
    };
    println!(
        "{:<34} {:>10} {:>11} {suite} {:>8}  {result}",
        tag(w),
        ms(native.elapsed),
        ms(sandboxed.elapsed),
        kib(trail_size)
    );
    if !measured.is_empty() {
        println!("{}", modes_line(&modes, &measured));
    }
    verdict
}

/// A mode a workload is measured in (`INTERPOSE_WORKLOADS_MODES`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// No sandbox.
    Native,
    /// The shipped policy with `--audit`, as the asserted run.
    Audit,
    /// The same session, its supervisor answering CONTINUE at once.
    Floor,
    /// interpose's emulate floor (`debug floor emulate`): its filter and
    /// a supervisor that performs absolute-path opens, no session.
    Emulate,
    /// As [`Mode::Emulate`], `newfstatat` performed too (`debug floor
    /// emulate-stat`).
    EmulateStat,
    /// The shipped policy without a trail.
    Full,
    /// `--fast` with Claude Code's configuration directory set.
    Fast,
    /// The shipped policy in a root holding only the surface (`--isolate`).
    Isolate,
    /// `--fast --isolate`, with Claude Code's configuration directory set.
    FastIsolate,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Native => "native",
            Mode::Audit => "audit",
            Mode::Floor => "floor",
            Mode::Emulate => "emulate",
            Mode::EmulateStat => "emulate-stat",
            Mode::Full => "full",
            Mode::Fast => "fast",
            Mode::Isolate => "isolate",
            Mode::FastIsolate => "fast-isolate",
        }
    }

    /// Whether this mode enforces the policy (the floors enforce nothing).
    fn enforces(self) -> bool {
        !matches!(self, Mode::Native | Mode::Floor | Mode::Emulate | Mode::EmulateStat)
    }

    /// How this mode's run is sandboxed (with `trail` for `audit`).
    fn sandbox(self, policy: &Path, trail: &Path, env: &Env) -> Option<Sandbox> {
        Some(match self {
            Mode::Native => return None,
            Mode::Audit => Sandbox::session(policy, Some(trail), &[]),
            Mode::Floor => Sandbox::session(policy, None, &["--bench-floor"]),
            Mode::Emulate => {
                Sandbox { args: ["debug", "floor", "emulate"].map(String::from).to_vec(), vars: Vec::new() }
            }
            Mode::EmulateStat => {
                Sandbox { args: ["debug", "floor", "emulate-stat"].map(String::from).to_vec(), vars: Vec::new() }
            }
            Mode::Full => Sandbox::session(policy, None, &[]),
            Mode::Fast => Sandbox {
                vars: vec![("CLAUDE_CONFIG_DIR".to_string(), agent_config_dir(env))],
                ..Sandbox::session(policy, None, &["--fast"])
            },
            Mode::Isolate => Sandbox::session(policy, None, &["--isolate"]),
            Mode::FastIsolate => Sandbox {
                vars: vec![("CLAUDE_CONFIG_DIR".to_string(), agent_config_dir(env))],
                ..Sandbox::session(policy, None, &["--fast", "--isolate"])
            },
        })
    }
}

/// `INTERPOSE_WORKLOADS_ROUNDS` (1 when unset).
fn measured_rounds() -> usize {
    std::env::var("INTERPOSE_WORKLOADS_ROUNDS").map_or(1, |r| {
        r.parse().ok().filter(|&n| n > 0).unwrap_or_else(|| panic!("INTERPOSE_WORKLOADS_ROUNDS: {r:?} is no count"))
    })
}

/// The modes `INTERPOSE_WORKLOADS_MODES` names (none when unset).
fn measured_modes() -> Vec<Mode> {
    let Some(list) = std::env::var_os("INTERPOSE_WORKLOADS_MODES") else { return Vec::new() };
    list.to_string_lossy()
        .split(',')
        .filter(|m| !m.is_empty())
        .map(|m| match m {
            "native" => Mode::Native,
            "audit" => Mode::Audit,
            "floor" => Mode::Floor,
            "emulate" => Mode::Emulate,
            "emulate-stat" => Mode::EmulateStat,
            "full" => Mode::Full,
            "fast" => Mode::Fast,
            "isolate" => Mode::Isolate,
            "fast-isolate" => Mode::FastIsolate,
            other => {
                panic!(
                    "INTERPOSE_WORKLOADS_MODES: unknown mode {other:?} \
                     (native, audit, floor, emulate, emulate-stat, full, fast, isolate, fast-isolate)"
                )
            }
        })
        .collect()
}

/// The directory `interpose agent-config claude` makes for Claude Code in
/// `env`'s home, as a user would export it.
fn agent_config_dir(env: &Env) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_interpose"))
        .args(["agent-config", "claude"])
        .env_clear()
        .envs(env.vars())
        .output()
        .expect("interpose agent-config claude");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("export CLAUDE_CONFIG_DIR="))
        .unwrap_or_else(|| panic!("interpose agent-config claude printed no directory: {text}"))
        .to_string()
}

/// The suite's median time in every measured mode, and the ratios issue
/// 33 sets targets for: full over the floors, audit over full, fast over
/// native.
fn modes_line(modes: &[Mode], measured: &[(Mode, Run)]) -> String {
    let median = |mode: Mode| {
        let mut t: Vec<f64> = measured
            .iter()
            .filter(|(m, _)| *m == mode)
            .map(|(_, r)| r.suite.unwrap_or(r.elapsed).as_secs_f64())
            .collect();
        t.sort_by(f64::total_cmp);
        (!t.is_empty()).then(|| t[t.len() / 2])
    };
    let rounds = measured.len() / modes.len().max(1);
    let mut line = format!("{:<34} suite, median of {rounds}:", "");
    for &mode in modes {
        if let Some(t) = median(mode) {
            line.push_str(&format!(" {} {t:.2} s", mode.name()));
        }
    }
    let ratios = [
        ("full/floor", Mode::Full, Mode::Floor),
        ("full/emulate", Mode::Full, Mode::Emulate),
        ("full/emulate-stat", Mode::Full, Mode::EmulateStat),
        ("audit/full", Mode::Audit, Mode::Full),
        ("fast/native", Mode::Fast, Mode::Native),
        ("fast-isolate/native", Mode::FastIsolate, Mode::Native),
    ];
    for (name, a, b) in ratios {
        if let (Some(a), Some(b)) = (median(a), median(b)) {
            line.push_str(&format!("; {name} {:.2}x", a / b));
        }
    }
    line
}

fn kib(bytes: u64) -> String {
    format!("{} KiB", bytes.div_ceil(1024))
}

/// The files under `ws`, relative to it, with runs of eight or more hex
/// digits (pids, random ids, hashes) written `#`, less those `volatile`
/// says differ between any two runs.
fn names(ws: &Path, volatile: fn(&str) -> bool) -> Vec<String> {
    let prefix = ws.display().to_string();
    let mut out: Vec<String> = listing(ws)
        .into_iter()
        .filter_map(|l| {
            let path = l.rsplit_once(' ')?.0.strip_prefix(&prefix)?.to_string();
            (!volatile(&path)).then(|| hex_runs(&path))
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

fn hex_runs(text: &str) -> String {
    let mut out = String::new();
    let mut run = String::new();
    for c in text.chars().chain(std::iter::once('/')) {
        if c.is_ascii_hexdigit() {
            run.push(c);
            continue;
        }
        out.push_str(if run.len() >= 8 { "#" } else { &run });
        run.clear();
        out.push(c);
    }
    out.pop();
    out
}

/// Where the planted credentials' value shows up after the sandboxed run:
/// its output, its trail, or a file written during the run anywhere in
/// the environment (the planted files themselves aside).
fn leaked(env: &Env, run: &Run, since: std::time::SystemTime) -> Vec<String> {
    fn walk(dir: &Path, since: std::time::SystemTime, skip: &[PathBuf], out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries.flatten() {
            let path = e.path();
            let Ok(md) = path.symlink_metadata() else { continue };
            if md.is_dir() {
                walk(&path, since, skip, out);
            } else if md.is_file()
                && !skip.contains(&path)
                && md.modified().is_ok_and(|m| m >= since)
                && std::fs::read(&path).is_ok_and(|data| data.windows(SECRET.len()).any(|w| w == SECRET.as_bytes()))
            {
                out.push(path.display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    if run.stdout.contains(SECRET) {
        out.push("its standard output".to_string());
    }
    if run.stderr.contains(SECRET) {
        out.push("its standard error".to_string());
    }
    walk(&env.root, since, &env.credentials(), &mut out);
    out
}

/// A listing of a tree (paths and sizes), to tell whether it changed.
fn listing(dir: &Path) -> Vec<String> {
    fn walk(dir: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries.flatten() {
            let Ok(md) = e.path().symlink_metadata() else { continue };
            out.push(format!("{} {}", e.path().display(), md.len()));
            if md.is_dir() {
                walk(&e.path(), out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, &mut out);
    out.sort();
    out
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let from = lines.len().saturating_sub(15);
    lines[from..].iter().map(|l| format!("{l}\n")).collect()
}
