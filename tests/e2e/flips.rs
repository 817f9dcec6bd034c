//! Every trapped path syscall, its path or socket address flipped after
//! the check (`tests/attacks/flip_every.c`): a second thread rewrites the
//! caller's buffer between an allowed object and a carve-out the surface
//! refuses, inside the writable workspace where Landlock alone would let
//! it through. Natively every call reaches the carve-out; under interpose,
//! with the backstop, without it, and in fast mode, none may: a call
//! answered CONTINUE must be one the kernel itself refuses there
//! (`src/supervisor/cover.rs`). A last test walks `bpf/syscalls.tsv` and
//! fails when a trapped row is covered by no attack.

use crate::common::*;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixDatagram, UnixListener};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// What a flipped call aims at and how its effect on the carve-out is
/// seen.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Aim {
    /// Reads `deny/f` (or its link target, attributes, size): the program
    /// counts what it saw.
    Read,
    /// As `Read`, from `/dev/null` (an allowed device).
    Device,
    /// Reads the link `deny/l`.
    Link,
    /// The allowed name is missing, the denied one exists.
    Exists,
    /// Changes `ro/f`: its content, mode, group, times and attributes must
    /// stay as they were.
    Change,
    /// Makes `ro/new`, which must not appear.
    Create,
    /// Removes `ro/f` (or `ro/dir`), which must stay.
    Remove,
    /// Runs `deny/run` (exits 42).
    Run,
    /// Connects to `deny/s.sock`.
    Connect,
    /// Sends a datagram to `deny/d.sock`.
    Send,
}

/// Each CALL of the attack program, the rows of the syscall table it
/// covers, and what it aims at.
const CASES: &[(&str, &[&str], Aim)] = &[
    ("open-read", &["open"], Aim::Read),
    ("open-read", &["open"], Aim::Device),
    ("openat-read", &["openat"], Aim::Read),
    ("openat-read", &["openat"], Aim::Device),
    ("openat2-read", &["openat2"], Aim::Read),
    ("open-write", &["open"], Aim::Change),
    ("open-create", &["open"], Aim::Create),
    ("creat", &["creat"], Aim::Create),
    ("truncate", &["truncate"], Aim::Change),
    ("chmod", &["chmod"], Aim::Change),
    ("fchmodat", &["fchmodat"], Aim::Change),
    ("fchmodat2", &["fchmodat2"], Aim::Change),
    ("chown", &["chown"], Aim::Change),
    ("lchown", &["lchown"], Aim::Change),
    ("fchownat", &["fchownat"], Aim::Change),
    ("utime", &["utime"], Aim::Change),
    ("utimes", &["utimes"], Aim::Change),
    ("futimesat", &["futimesat"], Aim::Change),
    ("utimensat", &["utimensat"], Aim::Change),
    ("setxattr", &["setxattr"], Aim::Change),
    ("lsetxattr", &["lsetxattr"], Aim::Change),
    ("removexattr", &["removexattr"], Aim::Change),
    ("lremovexattr", &["lremovexattr"], Aim::Change),
    ("getxattr", &["getxattr"], Aim::Read),
    ("lgetxattr", &["lgetxattr"], Aim::Read),
    ("getxattrat", &["getxattrat"], Aim::Read),
    ("listxattr", &["listxattr"], Aim::Read),
    ("llistxattr", &["llistxattr"], Aim::Read),
    ("listxattrat", &["listxattrat"], Aim::Read),
    ("readlink", &["readlink"], Aim::Link),
    ("readlinkat", &["readlinkat"], Aim::Link),
    ("stat", &["stat"], Aim::Read),
    ("lstat", &["lstat"], Aim::Read),
    ("newfstatat", &["newfstatat"], Aim::Read),
    ("statx", &["statx"], Aim::Read),
    ("access", &["access"], Aim::Exists),
    ("faccessat", &["faccessat"], Aim::Exists),
    ("faccessat2", &["faccessat2"], Aim::Exists),
    ("mkdir", &["mkdir"], Aim::Create),
    ("mkdirat", &["mkdirat"], Aim::Create),
    ("symlink", &["symlink"], Aim::Create),
    ("symlinkat", &["symlinkat"], Aim::Create),
    ("mknod", &["mknod"], Aim::Create),
    ("mknodat", &["mknodat"], Aim::Create),
    ("link-to", &["link"], Aim::Create),
    ("linkat-to", &["linkat"], Aim::Create),
    ("link-from", &["link"], Aim::Read),
    ("rename-to", &["rename"], Aim::Create),
    ("renameat-to", &["renameat"], Aim::Create),
    ("renameat2-to", &["renameat2"], Aim::Create),
    ("rename-from", &["rename"], Aim::Read),
    ("unlink", &["unlink"], Aim::Remove),
    ("unlinkat", &["unlinkat"], Aim::Remove),
    ("rmdir", &["rmdir"], Aim::Remove),
    ("execve", &["execve"], Aim::Run),
    ("execveat", &["execveat"], Aim::Run),
    ("bind", &["bind"], Aim::Create),
    ("connect", &["connect"], Aim::Connect),
    ("sendto", &["sendto"], Aim::Send),
    ("sendmsg", &["sendmsg"], Aim::Send),
    ("sendmmsg", &["sendmmsg"], Aim::Send),
    ("sendmsg-null", &["sendmsg"], Aim::Send),
];

/// Trapped rows another attack covers, by test.
const ELSEWHERE: &[(&str, &str)] = &[
    ("statfs", "attacks::path_buffer_races_on_metadata_calls_never_describe_the_denied_object"),
    ("chdir", "attacks::path_buffer_races_on_metadata_calls_never_describe_the_denied_object"),
    ("inotify_add_watch", "attacks::path_buffer_races_on_metadata_calls_never_describe_the_denied_object"),
];

const MARKER: &str = "top-secret-marker";
/// The size of the denied file (`DENIED_SIZE` in the attack).
const DENIED_SIZE: usize = 4242;

/// A workspace with a denied directory (`deny/`) and a read-only one
/// (`ro/`) inside it, and the sockets the calls aim at, served.
struct Scene {
    t: Tree,
    stop: Arc<AtomicBool>,
    accepted: Arc<AtomicUsize>,
    denied_dgram: UnixDatagram,
    _ok_dgram: UnixDatagram,
    servers: Vec<std::thread::JoinHandle<()>>,
}

fn set_marker(path: &Path, value: &str) {
    let p = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: NUL-terminated strings and a value of the given length.
    let r = unsafe { libc::setxattr(p.as_ptr(), c"user.marker".as_ptr(), value.as_ptr().cast(), value.len(), 0) };
    assert_eq!(r, 0, "user xattrs on {}: {}", path.display(), std::io::Error::last_os_error());
}

fn xattrs(path: &Path) -> Vec<u8> {
    let p = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    let mut buf = vec![0u8; 1024];
    // SAFETY: a NUL-terminated path and a buffer of the given length.
    let n = unsafe { libc::listxattr(p.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    buf.truncate(n.max(0) as usize);
    buf
}

/// Everything a change could alter about a file.
fn snapshot(path: &Path) -> (Vec<u8>, u32, u32, i64, Vec<u8>) {
    let md = std::fs::symlink_metadata(path).unwrap();
    (std::fs::read(path).unwrap(), md.mode(), md.gid(), md.mtime(), xattrs(path))
}

impl Scene {
    fn new() -> Scene {
        let t = Tree::new();
        let (deny, ro) = (t.ws.join("deny"), t.ws.join("ro"));
        for d in [&deny, &ro, &ro.join("dir")] {
            std::fs::create_dir(d).unwrap();
        }
        let secret = format!("{MARKER}\n{}", ".".repeat(DENIED_SIZE - MARKER.len() - 1));
        for f in [deny.join("f"), ro.join("f")] {
            std::fs::write(&f, &secret).unwrap();
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
            set_marker(&f, "secret");
        }
        std::os::unix::fs::symlink(format!("{MARKER}-target"), deny.join("l")).unwrap();
        write_exec(&deny.join("run"), "#!/bin/sh\nexit 42\n");
        std::fs::write(t.ws.join("a"), "harmless\n").unwrap();
        std::fs::write(t.ws.join("new.source"), "harmless\n").unwrap();
        std::os::unix::fs::symlink("harmless", t.ws.join("al")).unwrap();
        write_exec(&t.ws.join("ok"), "#!/bin/sh\nexit 0\n");
        // A hard link, not a copy (a copy still open for writing when a
        // parallel test forks fails to exec with ETXTBSY).
        let bin = t.ws.join("flip_every");
        if std::fs::hard_link(attack("flip_every"), &bin).is_err() {
            std::fs::copy(attack("flip_every"), &bin).unwrap();
        }
        let stop = Arc::new(AtomicBool::new(false));
        let accepted = Arc::new(AtomicUsize::new(0));
        let mut servers = Vec::new();
        for (path, count) in [(t.ws.join("ok.sock"), false), (deny.join("s.sock"), true)] {
            let l = UnixListener::bind(&path).unwrap();
            l.set_nonblocking(true).unwrap();
            let (stop, accepted) = (Arc::clone(&stop), Arc::clone(&accepted));
            servers.push(std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    match l.accept() {
                        Ok(_) if count => drop(accepted.fetch_add(1, Ordering::Relaxed)),
                        Ok(_) => {}
                        Err(_) => std::thread::sleep(std::time::Duration::from_micros(200)),
                    }
                }
            }));
        }
        let ok_dgram = UnixDatagram::bind(t.ws.join("ok.dgram")).unwrap();
        let denied_dgram = UnixDatagram::bind(deny.join("d.dgram")).unwrap();
        for s in [&ok_dgram, &denied_dgram] {
            s.set_nonblocking(true).unwrap();
        }
        Scene { t, stop, accepted, denied_dgram, _ok_dgram: ok_dgram, servers }
    }

    fn p(&self, rel: &str) -> String {
        self.t.ws.join(rel).to_str().unwrap().to_owned()
    }

    /// The allowed and the denied argument for `aim`.
    fn args(&self, call: &str, aim: Aim) -> (String, String) {
        match aim {
            Aim::Read if call.ends_with("-from") => (self.p("r"), self.p("deny/f")),
            Aim::Read => (self.p("a"), self.p("deny/f")),
            Aim::Device => ("/dev/null".into(), self.p("deny/f")),
            Aim::Link => (self.p("al"), self.p("deny/l")),
            Aim::Exists => (self.p("missing"), self.p("deny/f")),
            Aim::Change => (self.p("a"), self.p("ro/f")),
            Aim::Create => (self.p("new"), self.p("ro/new")),
            Aim::Remove if call == "rmdir" => (self.p("u"), self.p("ro/dir")),
            Aim::Remove => (self.p("u"), self.p("ro/f")),
            Aim::Run => (self.p("ok"), self.p("deny/run")),
            Aim::Connect => (self.p("ok.sock"), self.p("deny/s.sock")),
            Aim::Send => (self.p("ok.dgram"), self.p("deny/d.dgram")),
        }
    }

    /// Datagrams that reached the denied socket.
    fn received(&self) -> usize {
        let mut buf = [0u8; 16];
        std::iter::from_fn(|| self.denied_dgram.recv(&mut buf).ok()).count()
    }

    /// Runs `cmd` (the attack, natively or under interpose) and says what
    /// reached the carve-out, if anything.
    fn reached(&self, call: &str, aim: Aim, mut cmd: Command) -> Option<String> {
        let ro_f = self.t.ws.join("ro/f");
        let before = snapshot(&ro_f);
        let o = cmd.output().unwrap();
        let out = stdout(&o);
        let leaks: u64 = out
            .split_whitespace()
            .find_map(|w| w.strip_prefix("leaks="))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{call}: no leaks=N: {out} {}", stderr(&o)));
        let what = match aim {
            _ if leaks > 0 => format!("saw the carve-out {leaks} time(s)"),
            Aim::Change if snapshot(&ro_f) != before => "changed ro/f".into(),
            Aim::Create if self.t.ws.join("ro/new").symlink_metadata().is_ok() => "made ro/new".into(),
            Aim::Remove if !self.t.ws.join(if call == "rmdir" { "ro/dir" } else { "ro/f" }).exists() => {
                "removed it".into()
            }
            Aim::Read if call == "rename-from" && !self.t.ws.join("deny/f").exists() => "moved deny/f".into(),
            Aim::Connect if self.accepted.load(Ordering::Relaxed) > 0 => "connected".into(),
            Aim::Send => match self.received() {
                0 => return None,
                n => format!("{n} datagram(s) arrived"),
            },
            _ => return None,
        };
        Some(format!("{what} ({out}{})", stderr(&o)))
    }
}

impl Drop for Scene {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for s in self.servers.drain(..) {
            let _ = s.join();
        }
    }
}

/// Runs every case natively (where each must reach the carve-out within
/// a few runs: up to 30, as a race a loaded machine schedules unluckily
/// can take more than 10; the first win ends the tries) and under
/// interpose in `modes` (where none may).
fn flip_all(cases: &[(&str, &[&str], Aim)], modes: &[&[&str]]) {
    let mut failures = Vec::new();
    for &(call, _, aim) in cases {
        let iterations = if aim == Aim::Run { "300" } else { "3000" };
        let native = (0..30).find_map(|_| {
            let s = Scene::new();
            let (allowed, denied) = s.args(call, aim);
            let mut c = Command::new(s.p("flip_every"));
            c.args([call, &allowed, &denied, iterations]).current_dir(&s.t.ws);
            s.reached(call, aim, c)
        });
        if native.is_none() {
            failures.push(format!("{call} ({aim:?}): never reached the carve-out natively"));
        }
        for extra in modes {
            let s = Scene::new();
            let (allowed, denied) = s.args(call, aim);
            let (deny, ro) = (s.p("deny"), s.p("ro"));
            let mut flags = vec!["--deny", &deny, "--ro", &ro];
            flags.extend_from_slice(extra);
            let cmd = s.t.command(&flags, &[&s.p("flip_every"), call, &allowed, &denied, iterations]);
            if let Some(what) = s.reached(call, aim, cmd) {
                failures.push(format!("{call} ({aim:?}) {extra:?}: {what}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn flipped_paths_never_reach_a_carve_out_with_the_backstop() {
    if !kernel_ok() {
        return;
    }
    flip_all(CASES, &[&[]]);
}

#[test]
fn flipped_paths_never_reach_a_carve_out_without_the_backstop() {
    if !kernel_ok() {
        return;
    }
    flip_all(CASES, &[&["--no-landlock"]]);
}

/// A carve-out that does not exist when the session starts cannot be
/// masked: the ruleset holds it instead, granting the directories above it
/// everything but making names (their subdirectories whole), so a create
/// there is the supervisor's and a create in a subdirectory is the
/// kernel's (`Grant::NoMake`). Every call that makes a name, its path
/// flipped between a new allowed name (beside the carve-out, in a
/// subdirectory granted whole, deeper in a held tree) and the missing
/// carve-out, never makes it. Natively each does within a few runs.
#[test]
fn flipped_creates_never_make_a_carve_out_missing_at_start() {
    if !kernel_ok() {
        return;
    }
    let calls = ["open-create", "creat", "mkdir", "mkdirat", "symlink", "symlinkat", "mknod", "mknodat"];
    // (allowed name, carve-out): beside it; in a subdirectory the kernel
    // makes names in; in a subdirectory of a held directory below the
    // workspace.
    let pairs = [("new", "later"), ("sub/new", "later"), ("d/e/new", "d/later")];
    let scene = || {
        let s = Scene::new();
        for d in ["sub", "d", "d/e"] {
            std::fs::create_dir(s.t.ws.join(d)).unwrap();
        }
        s
    };
    let mut failures = Vec::new();
    for call in calls {
        for (new, later) in pairs {
            let made = |s: &Scene| s.t.ws.join(later).symlink_metadata().is_ok();
            let native = (0..30).any(|_| {
                let s = scene();
                let mut c = Command::new(s.p("flip_every"));
                c.args([call, &s.p(new), &s.p(later), "3000"]).current_dir(&s.t.ws);
                c.output().unwrap();
                made(&s)
            });
            if !native {
                failures.push(format!("{call} {new}: never made {later} natively"));
            }
            for extra in [&[][..], &["--fast"][..]] {
                let s = scene();
                let carve_out = s.p(later);
                let mut flags = vec!["--deny", carve_out.as_str()];
                flags.extend_from_slice(extra);
                let o =
                    s.t.command(&flags, &[&s.p("flip_every"), call, &s.p(new), &carve_out, "3000"]).output().unwrap();
                if made(&s) {
                    failures.push(format!("{call} {new} {extra:?}: made {later} ({}{})", stdout(&o), stderr(&o)));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A `dir/**` carve-out that does not exist at the start names a place
/// the command may not make: a directory granted whole, moved there, would
/// bring its Landlock rules (the right to make names) under the pattern,
/// and a create continued in another subdirectory, its path flipped into
/// the place, would make a name there. Natively the move and a flip make
/// `secrets/key`; under interpose the move is refused, and so is every
/// flipped create.
#[test]
fn a_directory_moved_into_a_missing_pattern_place_makes_nothing_there() {
    if !kernel_ok() {
        return;
    }
    let scene = || {
        let s = Scene::new();
        for d in ["w", "w2"] {
            std::fs::create_dir(s.t.ws.join(d)).unwrap();
        }
        s
    };
    let script = "mv w secrets; mkdir secrets; ./flip_every open-create w2/x secrets/key 3000 >/dev/null; \
                  ./flip_every mkdir w2/y secrets/dir 3000 >/dev/null; ls secrets 2>&1";
    let native = (0..10).any(|_| {
        let s = scene();
        Command::new("/bin/sh").args(["-c", script]).current_dir(&s.t.ws).output().unwrap();
        s.t.ws.join("secrets/key").exists()
    });
    assert!(native, "natively the move and a flip make secrets/key");
    for extra in [&[][..], &["--fast"][..]] {
        let s = scene();
        let policy = s.t.outside.join("p.toml");
        std::fs::write(&policy, format!("cwd = {:?}\ndeny = [\"secrets/**\"]\n", s.t.ws.display())).unwrap();
        let mut flags = vec!["--policy", policy.to_str().unwrap()];
        flags.extend_from_slice(extra);
        let o = s.t.command(&flags, &["/bin/sh", "-c", script]).output().unwrap();
        let err = stderr(&o);
        assert!(!s.t.ws.join("secrets").exists(), "{extra:?}: secrets was made: {}{err}", stdout(&o));
        assert!(s.t.ws.join("w").is_dir(), "{extra:?}: w moved");
        assert!(err.matches("Permission denied").count() >= 2, "{extra:?}: {err}");
    }
}

/// Fast mode leaves `stat`-like metadata to Landlock, which does not hold
/// it (its stated residual risk): every other call must hold.
#[test]
fn flipped_paths_never_reach_a_carve_out_in_fast_mode() {
    if !kernel_ok() {
        return;
    }
    let metadata = ["stat", "lstat", "newfstatat", "statx"];
    let cases: Vec<_> = CASES.iter().copied().filter(|(call, _, _)| !metadata.contains(call)).collect();
    flip_all(&cases, &[&["--fast"]]);
}

/// Every trapped row of the syscall table that takes a path or a socket
/// address is flipped by a case above or by the attack named for it; a
/// row acting on a descriptor only, or changing the caller's own
/// credentials, has no pointer the kernel would read again.
#[test]
fn every_trapped_path_syscall_is_flipped() {
    let table = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("bpf/syscalls.tsv")).unwrap();
    let mut missing = Vec::new();
    for line in table.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let cols: Vec<&str> = line.split_whitespace().collect();
        let (name, op, path, action) = (cols[0], cols[2], cols[4], cols[10]);
        let trapped = action.starts_with("emulate") || action.starts_with("continue");
        let socket = ["connect", "bind", "sendto", "sendmsg", "sendmmsg"].contains(&op);
        if !trapped || op == "creds" || (path == "-" && !socket) {
            continue;
        }
        let flipped = CASES.iter().any(|(_, rows, _)| rows.contains(&name));
        if !flipped && !ELSEWHERE.iter().any(|(row, _)| *row == name) {
            missing.push(name);
        }
    }
    assert!(missing.is_empty(), "trapped rows no flip covers: {missing:?}");
}
