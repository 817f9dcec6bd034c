//! The ways of running a workload: natively, under each mechanism's floor,
//! under interpose, and under the prefixes compared against.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// One way of running a command.
#[derive(Debug, Clone)]
pub(super) struct BenchMode {
    pub(super) name: String,
    prefix: Vec<OsString>,
    /// A trail the mode writes: removed before every run, since interpose
    /// never overwrites one.
    trail: Option<PathBuf>,
}

pub(super) fn modes(exe: &Path, work: &Path, compare: &[String]) -> Vec<BenchMode> {
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
pub(super) fn run_one(mode: &BenchMode, cmd: &[OsString], cwd: &Path) -> Result<(String, f64), String> {
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

pub(super) fn parse_samples(out: &str) -> Result<(Vec<f64>, f64), String> {
    let v: serde_json::Value = serde_json::from_str(out.trim()).map_err(|e| format!("workload output: {e}"))?;
    let ns = v["ns"].as_array().ok_or("no samples")?.iter().filter_map(serde_json::Value::as_f64).collect();
    Ok((ns, v["elapsed_ns"].as_f64().unwrap_or(f64::NAN)))
}
