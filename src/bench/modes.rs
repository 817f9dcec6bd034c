//! The ways of running a workload: natively, under each mechanism's floor,
//! under interpose, and under the prefixes compared against.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use super::floors::{Floors, FloorsError};

/// Why one run of a workload under a mode failed.
#[derive(Debug, thiserror::Error)]
pub(super) enum ModeError {
    /// The trail a mode writes could not be removed before its run.
    #[error("{}: {source}", .path.display())]
    RemoveTrail { path: PathBuf, source: std::io::Error },
    /// The mode's first program (or the command) could not be run.
    #[error("{}: {source}", .program.to_string_lossy())]
    Spawn { program: OsString, source: std::io::Error },
    /// It exited with a failure (the last line of its stderr).
    #[error("exit {code:?}: {last_line}")]
    Failed { code: Option<i32>, last_line: String },
    /// The workload's output is not its samples.
    #[error("workload output: {0}")]
    WorkloadOutput(serde_json::Error),
}

/// One way of running a command.
#[derive(Debug, Clone)]
pub(super) struct BenchMode {
    pub(super) name: String,
    prefix: Vec<OsString>,
    /// A trail the mode writes: removed before every run, since interpose
    /// never overwrites one.
    trail: Option<PathBuf>,
}

/// Mode names the targets refer to.
pub(super) const NATIVE: &str = "native";
/// interpose's filter, every action ALLOW: the BPF cost alone.
pub(super) const BPF_FLOOR: &str = "bpf-allow floor";
/// A Landlock ruleset granting everything: Landlock's cost alone.
pub(super) const LANDLOCK_FLOOR: &str = "landlock floor";
/// interpose's filter and a minimal supervisor answering CONTINUE
/// (`interpose debug floor continue`).
pub(super) const CONTINUE_FLOOR: &str = "continue floor";
/// As [`CONTINUE_FLOOR`], opens performed the TOCTOU-safe way with no
/// policy (`interpose debug floor emulate`).
pub(super) const EMULATE_FLOOR: &str = "emulate floor";
/// As [`EMULATE_FLOOR`], `newfstatat` performed too (`interpose debug
/// floor emulate-stat`): the least a supervisor that decides metadata does.
pub(super) const STAT_FLOOR: &str = "stat-emulate floor";
/// As [`CONTINUE_FLOOR`], a receiving thread per CPU (`interpose debug
/// floor continue-every-cpu`): measured with two processes only.
pub(super) const RECEIVERS_FLOOR: &str = "continue floor, a receiver per CPU";
/// interpose's own supervisor answering CONTINUE at once.
pub(super) const NOTIFY_FLOOR: &str = "notify-floor";
/// interpose, full mode.
pub(super) const FULL: &str = "interpose";
/// interpose, fast mode.
pub(super) const FAST: &str = "interpose --fast";
/// interpose, full mode, every decision in the trail.
pub(super) const AUDIT: &str = "interpose+audit";
/// A runc container, no filter.
pub(super) const RUNC: &str = "runc";
/// A runc container under `interpose oci-agent`.
pub(super) const RUNC_AGENT: &str = "runc+oci-agent";

/// The reference sandboxes `--compare NAME` knows by name: the program
/// that must be installed, and the prefix each gets (`{work}` is the
/// workspace, `{bin}` the directory of the interpose binary that runs the
/// micro workloads, `{home}` a `HOME` of its own beside the workspace). syd
/// 3.23 (the version the issue names) takes the capabilities by name, and
/// its own Landlock layer (`allow/lock/...`) must let the binary's
/// directory be read, or its exec fails; nono, too, runs nothing from a
/// directory it was not told to read, and refuses to grant a tree that
/// holds its own state (`~/.nono`), so its `HOME` is outside the
/// workspace.
pub(super) const REFERENCES: [(&str, &str, &str); 3] = [
    ("bwrap", "bwrap", "bwrap --ro-bind / / --bind {work} {work} --dev /dev --proc /proc --"),
    (
        "syd",
        "syd",
        "syd -puser -m allow/read,write,stat,exec+{work}/*** -m allow/read,stat,exec+{bin}/*** \
         -m allow/lock/write+{work} -m allow/lock/read+{bin} --",
    ),
    ("nono", "nono", "env HOME={home} nono run --allow {work} --read {bin} --"),
];

/// [`RECEIVERS_FLOOR`], which only the two-process figure runs.
pub(super) fn receivers_floor(exe: &Path) -> BenchMode {
    let prefix = ["debug", "floor", "continue-every-cpu", "--"].map(OsString::from);
    BenchMode {
        name: RECEIVERS_FLOOR.into(),
        prefix: [vec![exe.as_os_str().to_owned()], prefix.to_vec()].concat(),
        trail: None,
    }
}

/// Every mode of a run: native, interpose's own floors, the shared C floors
/// (with `--floors DIR`), interpose's session floor, interpose in each
/// mode, and what `compare` names (a reference sandbox by name, or any
/// prefix). Also returns what could not be run, in words.
pub(super) fn modes(
    exe: &Path,
    work: &Path,
    floors: Option<Result<&Floors, &FloorsError>>,
    agent: Result<&Path, &str>,
    compare: &[String],
) -> (Vec<BenchMode>, Vec<String>) {
    let bin_dir = exe.parent().unwrap_or(Path::new("/")).as_os_str().to_owned();
    let os = |s: &str| OsString::from(s);
    let surface = || vec![os("--rw"), work.as_os_str().to_owned(), os("--ro"), bin_dir.clone()];
    let exe = exe.as_os_str().to_owned();
    // The trail and its key outside the workspace: either is carved out of
    // the surface, and a carve-out inside the writable workspace would make
    // every open emulated, measuring that instead of the recording.
    let trail = work.parent().unwrap_or(work).join("audit.jsonl");
    let key = work.parent().unwrap_or(work).join("audit.key");
    let mode = |name: &str, prefix: Vec<OsString>| BenchMode { name: name.into(), prefix, trail: None };
    let mut missing = Vec::new();
    let mut out = vec![
        mode(NATIVE, vec![]),
        mode(BPF_FLOOR, vec![exe.clone(), os("debug"), os("seccomp-allow"), os("--")]),
        mode(LANDLOCK_FLOOR, vec![exe.clone(), os("debug"), os("landlock"), os("--rw"), os("/"), os("--")]),
        mode(CONTINUE_FLOOR, vec![exe.clone(), os("debug"), os("floor"), os("continue"), os("--")]),
        mode(EMULATE_FLOOR, vec![exe.clone(), os("debug"), os("floor"), os("emulate"), os("--")]),
        mode(STAT_FLOOR, vec![exe.clone(), os("debug"), os("floor"), os("emulate-stat"), os("--")]),
    ];
    match floors {
        Some(Ok(f)) => out.extend([
            mode("shared bpf-allow floor", vec![f.bpf_allow.clone().into(), os("--")]),
            mode("shared landlock floor", vec![f.landlock.clone().into(), work.as_os_str().to_owned(), os("--")]),
            mode("shared continue floor", vec![f.unotify_continue.clone().into(), os("--")]),
            mode("shared emulate floor", vec![f.unotify_emulate.clone().into(), os("--")]),
        ]),
        Some(Err(why)) => missing.push(format!("the shared C floors: {why}")),
        None => {}
    }
    out.extend([
        mode(NOTIFY_FLOOR, vec![exe.clone(), os("run"), os("--bench-floor"), os("--")]),
        mode(FULL, [vec![exe.clone(), os("run")], surface(), vec![os("--")]].concat()),
        mode(FAST, [vec![exe.clone(), os("run"), os("--fast")], surface(), vec![os("--")]].concat()),
        BenchMode {
            name: AUDIT.into(),
            prefix: [
                vec![exe.clone(), os("run")],
                surface(),
                vec![os("--audit"), trail.clone().into_os_string(), os("--audit-key"), key.into_os_string(), os("--")],
            ]
            .concat(),
            trail: Some(trail),
        },
    ]);
    // Containers: the workspace is the current directory, bound with the
    // binary's directory at the same paths.
    match agent {
        Ok(socket) => {
            let container = vec![exe.clone(), os("debug"), os("container"), os("--bind"), bin_dir.clone()];
            out.push(mode(RUNC, [container.clone(), vec![os("--")]].concat()));
            let listener = vec![os("--listener"), socket.as_os_str().to_owned(), os("--")];
            out.push(mode(RUNC_AGENT, [container, listener].concat()));
        }
        Err(why) => missing.push(why.to_string()),
    }
    let outside = work.parent().unwrap_or(work);
    for c in compare {
        let known = REFERENCES.iter().find(|(name, _, _)| name == c);
        let prefix = match known {
            Some((name, _, p)) => {
                let home = outside.join(format!("{name}-home"));
                if p.contains("{home}") {
                    let _ = std::fs::create_dir_all(&home);
                }
                p.replace("{work}", &work.to_string_lossy())
                    .replace("{bin}", &Path::new(&bin_dir).to_string_lossy())
                    .replace("{home}", &home.to_string_lossy())
            }
            None => c.clone(),
        };
        let prefix: Vec<OsString> = prefix.split_whitespace().map(OsString::from).collect();
        let path = std::env::var_os("PATH");
        if let Some((_, program, _)) = known {
            if crate::session::find_program(program.as_ref(), path.as_deref()).is_none() {
                missing.push(format!("{c}: not installed"));
                continue;
            }
        }
        out.push(mode(c, prefix));
    }
    (out, missing)
}

/// Runs `prefix + cmd` in `cwd` ([`command`]); its stdout, and the wall
/// time in ms.
pub(super) fn run_one(mode: &BenchMode, cmd: &[OsString], cwd: &Path) -> Result<(String, f64), ModeError> {
    let mut c = command(mode, cmd, cwd)?;
    let t = Instant::now();
    let o = c
        .output()
        .map_err(|source| ModeError::Spawn { program: mode.prefix.first().unwrap_or(&cmd[0]).clone(), source })?;
    let ms = t.elapsed().as_secs_f64() * 1e3;
    if !o.status.success() {
        let err = String::from_utf8_lossy(&o.stderr);
        let last_line = err.lines().last().unwrap_or_default().to_string();
        return Err(ModeError::Failed { code: o.status.code(), last_line });
    }
    Ok((String::from_utf8_lossy(&o.stdout).into_owned(), ms))
}

/// Waits (at most half a second) until no namespace keeper of an earlier
/// run is still exiting (`interpose-keep`, `src/sys/keeper.rs`; one that
/// has exited waits as a zombie for whoever reaps orphans): a run's
/// namespaces end in its keeper's exit, after interpose's, and that
/// teardown (~2 ms of CPU here) would otherwise fall on the next run timed,
/// so back-to-back start-ups measured each mode by the one before it.
pub(super) fn settle() {
    let exiting = |stat: &[u8]| {
        let Some(end) = stat.iter().rposition(|&b| b == b')') else { return false };
        stat.get(end + 2).is_some_and(|&state| state != b'Z')
    };
    let keeper_left = || {
        std::fs::read_dir("/proc").into_iter().flatten().flatten().any(|e| {
            e.file_name().as_bytes().iter().all(u8::is_ascii_digit)
                && std::fs::read(e.path().join("comm")).is_ok_and(|c| c == b"interpose-keep\n")
                && std::fs::read(e.path().join("stat")).is_ok_and(|s| exiting(&s))
        })
    };
    let t = Instant::now();
    while keeper_left() && t.elapsed() < std::time::Duration::from_millis(500) {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// `prefix + cmd` to run in `cwd`, output piped. Every mode gets the same
/// environment: HOME and TMPDIR inside the workspace, so that no mode
/// reads the real home's configuration or the host's /tmp. A trail the
/// mode writes is removed first.
pub(super) fn command(mode: &BenchMode, cmd: &[OsString], cwd: &Path) -> Result<Command, ModeError> {
    if let Some(trail) = &mode.trail {
        match std::fs::remove_file(trail) {
            Err(source) if source.kind() != std::io::ErrorKind::NotFound => {
                return Err(ModeError::RemoveTrail { path: trail.clone(), source })
            }
            _ => {}
        }
    }
    let all: Vec<&OsString> = mode.prefix.iter().chain(cmd).collect();
    let mut c = Command::new(all[0]);
    c.args(&all[1..]).current_dir(cwd).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    c.env("HOME", cwd.join("home")).env("TMPDIR", cwd.join("tmp")).env_remove("LD_LIBRARY_PATH");
    Ok(c)
}

/// What `interpose debug workload` prints (no samples with `--summary`).
#[derive(serde::Deserialize)]
struct Samples {
    #[serde(default)]
    ns: Vec<f64>,
    elapsed_ns: f64,
}

/// A workload's samples (ns per operation; none from `--summary`) and its
/// whole loop's time.
pub(super) fn parse_samples(out: &str) -> Result<(Vec<f64>, f64), ModeError> {
    let s: Samples = serde_json::from_str(out.trim()).map_err(ModeError::WorkloadOutput)?;
    Ok((s.ns, s.elapsed_ns))
}
