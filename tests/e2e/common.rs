//! Helpers shared by the end-to-end tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// Variables the tooling profile expands besides `HOME`: tests that need
/// output independent of the machine set them empty (an empty variable
/// drops its entry, as an unset one does).
pub const TOOLING_VARS: &[&str] =
    &["CARGO_HOME", "RUSTUP_HOME", "PYENV_ROOT", "NVM_DIR", "ASDF_DATA_DIR", "GOPATH", "GOROOT"];

/// The binary under test.
pub fn interpose() -> &'static str {
    env!("CARGO_BIN_EXE_interpose")
}

/// Whether this kernel can enforce; prints why not. With
/// `INTERPOSE_REQUIRE_KERNEL=1` (CI) a missing feature fails the test
/// instead of skipping it.
pub fn kernel_ok() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        let out = Command::new(interpose()).arg("check").output().expect("run interpose check");
        let ok = out.status.success();
        if !ok {
            let why = String::from_utf8_lossy(&out.stdout);
            if std::env::var_os("INTERPOSE_REQUIRE_KERNEL").is_some() {
                panic!("INTERPOSE_REQUIRE_KERNEL is set but this kernel cannot enforce:\n{why}");
            }
            eprintln!("SKIP: this kernel cannot enforce:\n{why}");
        }
        ok
    })
}

/// The start of most tests: the kernel check (see [`kernel_ok`]) and a
/// fresh [`Tree`]; `None` where the test cannot run (never in CI).
pub fn kernel_tree() -> Option<Tree> {
    kernel_ok().then(Tree::new)
}

/// A test that cannot run here says why and passes, except in CI
/// (`INTERPOSE_REQUIRE_KERNEL` set, as `.ci/run` does), where every test
/// must run: there it fails, naming what is missing.
pub fn cannot_run(why: &str) {
    if std::env::var_os("INTERPOSE_REQUIRE_KERNEL").is_some() {
        panic!("this test cannot run here: {why} (INTERPOSE_REQUIRE_KERNEL is set: every test must run)");
    }
    eprintln!("SKIP: {why}");
}

/// A scratch tree: `ws` (passed as `--rw`), `ro` (passed as `--ro`, with
/// `data.txt` and an executable `tool.sh`), and `outside` (not in the
/// surface, with `secret`).
pub struct Tree {
    _dir: tempfile::TempDir,
    pub ws: PathBuf,
    pub ro: PathBuf,
    pub outside: PathBuf,
}

impl Tree {
    pub fn new() -> Tree {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().unwrap();
        let (ws, ro, outside) = (root.join("ws"), root.join("ro"), root.join("outside"));
        for d in [&ws, &ro, &outside] {
            std::fs::create_dir(d).unwrap();
        }
        std::fs::write(ro.join("data.txt"), "read-only data\n").unwrap();
        write_exec(&ro.join("tool.sh"), "#!/bin/sh\necho tool-ran\n");
        std::fs::write(outside.join("secret"), "top-secret-marker\n").unwrap();
        Tree { _dir: dir, ws, ro, outside }
    }

    /// `interpose run --rw ws --ro ro EXTRA -- CMD` in `ws`.
    pub fn command(&self, extra: &[&str], cmd: &[&str]) -> Command {
        let mut c = Command::new(interpose());
        c.arg("run").arg("--rw").arg(&self.ws).arg("--ro").arg(&self.ro).args(extra).arg("--").args(cmd);
        c.current_dir(&self.ws).stdin(Stdio::null());
        // cargo points the loader at its own build and toolchain directories;
        // the sandboxed programs need neither, and probing them is noise.
        c.env_remove("LD_LIBRARY_PATH").env("PWD", &self.ws);
        c.env("WS", &self.ws).env("RO", &self.ro).env("OUT", &self.outside);
        c
    }

    /// Runs a shell script under interpose (`$WS`, `$RO`, `$OUT` are set).
    pub fn sh(&self, script: &str) -> Output {
        self.command(&[], &["/bin/sh", "-c", script]).output().expect("run interpose")
    }
}

/// Runs a Python script under interpose after a prelude that defines
/// `attempt(name, f)`: it prints `name ok`, or `name EACCES` when `f`
/// raises `PermissionError` (any other error fails the script).
pub fn python_attempts(t: &Tree, extra: &[&str], body: &str) -> Output {
    python_command(t, extra, body).output().expect("run interpose")
}

/// The command [`python_attempts`] runs, to adjust before running it.
pub fn python_command(t: &Tree, extra: &[&str], body: &str) -> Command {
    const PRELUDE: &str = "import ctypes, os, signal, socket\n\
        def attempt(name, f):\n\
        \x20   try:\n\
        \x20       f()\n\
        \x20       print(name, 'ok')\n\
        \x20   except PermissionError:\n\
        \x20       print(name, 'EACCES')\n";
    t.command(extra, &["/usr/bin/python3", "-c", &format!("{PRELUDE}{body}")])
}

/// Polls `done` every 10 ms until it holds; fails the test with `what` after
/// `seconds`.
pub fn wait_until(what: &str, seconds: u64, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    while !done() {
        assert!(std::time::Instant::now() < deadline, "{what}");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

pub fn write_exec(path: &Path, content: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, content).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Compiles `tests/attacks/NAME.c` once per test run and returns the binary.
pub fn attack(name: &str) -> PathBuf {
    static BUILT: OnceLock<std::sync::Mutex<()>> = OnceLock::new();
    let _guard = BUILT.get_or_init(Default::default).lock().unwrap();
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("attack-{name}"));
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/attacks/{name}.c"));
    // Rebuild when the source or the shared header is newer than the binary.
    let header = src.with_file_name("flip.h");
    let newest = [&src, &header].iter().filter_map(|p| p.metadata().and_then(|m| m.modified()).ok()).max();
    let fresh = out.metadata().and_then(|o| o.modified()).is_ok_and(|built| newest.is_some_and(|n| built >= n));
    if !fresh {
        let mut cc = Command::new("cc");
        cc.args(["-O2", "-pthread", "-Wall", "-o"]).arg(&out).arg(&src);
        if name == "int80" {
            // The path must lie below 4 GiB for the 32-bit entry point.
            cc.arg("-no-pie");
        }
        let status = cc.status().expect("a C compiler (cc) is needed for the attack programs");
        assert!(status.success(), "compiling {}", src.display());
    }
    out
}

/// The pids (as this test sees them) of every process descended from
/// `ancestor`: interpose and the sandbox's processes, whose own pids, in
/// their PID namespace, mean nothing here.
pub fn descendants(ancestor: u32) -> Vec<u32> {
    let parent_of = |pid: u32| -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        stat[stat.rfind(')')? + 1..].split_whitespace().nth(1)?.parse().ok()
    };
    let all: Vec<u32> =
        std::fs::read_dir("/proc").unwrap().flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect();
    all.into_iter()
        .filter(|&p| {
            let mut at = p;
            for _ in 0..64 {
                match parent_of(at) {
                    Some(parent) if parent == ancestor => return true,
                    Some(parent) if parent > 1 => at = parent,
                    _ => return false,
                }
            }
            false
        })
        .collect()
}

/// The pid, as this test sees it, of the sandboxed process under
/// `interpose` whose pid in its own namespace is `inner`.
pub fn host_pid(interpose: u32, inner: u32) -> Option<u32> {
    descendants(interpose).into_iter().find(|p| {
        std::fs::read_to_string(format!("/proc/{p}/status")).is_ok_and(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("NSpid:"))
                .and_then(|v| v.split_whitespace().last()?.parse::<u32>().ok())
                == Some(inner)
        })
    })
}
