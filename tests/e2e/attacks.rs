//! Attacks that must work without interpose and fail under it.

use crate::common::*;
use std::process::Command;

fn copy_into(t: &Tree, name: &str) -> std::path::PathBuf {
    let dst = t.ws.join(name);
    std::fs::copy(attack(name), &dst).unwrap();
    dst
}

fn leaks(out: &str) -> u64 {
    out.split_whitespace().find_map(|w| w.strip_prefix("leaks=")).and_then(|n| n.parse().ok()).expect("leaks=N")
}

/// Two threads, one flipping a shared path between an allowed and a denied
/// file, the other opening and reading 20,000 times. Run with
/// `--no-landlock` the supervisor's answer is all that stands between the
/// program and the file: if opens were answered with CONTINUE instead of
/// being performed by the supervisor (ADDFD), the kernel would open the
/// swapped path and this test would fail.
#[test]
fn path_buffer_race_on_open_never_reads_the_denied_file() {
    if !kernel_ok() {
        return;
    }
    let t = Tree::new();
    let bin = copy_into(&t, "race_open");
    std::fs::write(t.ws.join("ok.txt"), "harmless\n").unwrap();
    let secret = t.outside.join("secret");
    let ok = t.ws.join("ok.txt");
    let args = [bin.to_str().unwrap(), ok.to_str().unwrap(), secret.to_str().unwrap(), "top-secret-marker", "20000"];

    let native = Command::new(args[0]).args(&args[1..]).output().unwrap();
    assert!(leaks(&stdout(&native)) > 0, "the attack works natively: {}", stdout(&native));

    for extra in [&["--no-landlock"][..], &[][..]] {
        let o = t.command(extra, &args).output().unwrap();
        assert_eq!(leaks(&stdout(&o)), 0, "{extra:?}: {}", stdout(&o));
        assert_eq!(o.status.code(), Some(0), "{extra:?}: {}", stderr(&o));
    }
}

/// The 32-bit entry point uses other syscall numbers (5 is open); the filter
/// must kill the process rather than let them through.
#[test]
fn int80_open_kills_the_process() {
    if !kernel_ok() {
        return;
    }
    let t = Tree::new();
    let bin = copy_into(&t, "int80");
    let secret = t.outside.join("secret");
    let native = Command::new(&bin).arg(&secret).output().unwrap();
    if !stdout(&native).contains("top-secret-marker") {
        // Without IA32 emulation in the kernel there is nothing to attack.
        assert!(std::env::var_os("INTERPOSE_REQUIRE_KERNEL").is_none(), "no IA32 emulation: {}", stdout(&native));
        eprintln!("SKIP: this kernel has no 32-bit entry point");
        return;
    }
    let o = t.command(&[], &[bin.to_str().unwrap(), secret.to_str().unwrap()]).output().unwrap();
    assert_eq!(o.status.code(), Some(128 + libc::SIGSYS), "killed by SIGSYS: {}", stdout(&o));
    assert!(!stdout(&o).contains("top-secret-marker"));
}

/// 16 processes x 4 threads x 500 opens of an allowed file, all at once:
/// every call is answered, none fails, nothing hangs.
#[test]
fn many_processes_and_threads_trapping_at_once() {
    if !kernel_ok() {
        return;
    }
    let t = Tree::new();
    let bin = copy_into(&t, "storm");
    std::fs::write(t.ws.join("ok.txt"), "data\n").unwrap();
    let o = t
        .command(
            &[],
            &["timeout", "300", bin.to_str().unwrap(), t.ws.join("ok.txt").to_str().unwrap(), "16", "4", "500"],
        )
        .output()
        .unwrap();
    assert_eq!(stdout(&o), "processes failed: 0\n", "{}", stderr(&o));
    assert!(o.status.success());
}

/// If interpose dies, the command must not go on with access: it is killed
/// (parent-death signal) and its trapped calls fail.
#[test]
fn killing_interpose_kills_the_command() {
    if !kernel_ok() {
        return;
    }
    let t = Tree::new();
    let log = t.ws.join("log");
    let mut child = t
        .command(&[], &["/bin/sh", "-c", "echo $$ > pid; while :; do echo tick >> log; sleep 0.02; done"])
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::fs::read_to_string(&log).map_or(true, |s| s.lines().count() < 3) {
        assert!(std::time::Instant::now() < deadline, "the command never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let shell: i32 = std::fs::read_to_string(t.ws.join("pid")).unwrap().trim().parse().unwrap();
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // The shell dies at once; give the kernel a moment to deliver it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::path::Path::new(&format!("/proc/{shell}")).exists()
        && !std::fs::read_to_string(format!("/proc/{shell}/stat")).unwrap_or_default().contains(") Z")
    {
        assert!(std::time::Instant::now() < deadline, "the command outlived interpose");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let before = std::fs::read_to_string(&log).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(std::fs::read_to_string(&log).unwrap(), before, "nothing was written after interpose died");
    // The killed run could not remove its private TMPDIR; the next run does.
    let stale = format!("interpose-{}-", child.id());
    let leftovers = || {
        std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(&stale))
            .count()
    };
    assert_eq!(leftovers(), 1, "the killed run left its TMPDIR");
    assert!(t.command(&[], &["/bin/true"]).status().unwrap().success());
    assert_eq!(leftovers(), 0, "the next run removed it");
}

/// A root command keeps no capability that reaches the kernel: no device
/// nodes (a block device in the workspace would expose the raw disk), no
/// modules, mounts, raw I/O or BPF.
#[test]
fn root_command_cannot_make_device_nodes_or_keep_kernel_capabilities() {
    if !kernel_ok() {
        return;
    }
    let t = Tree::new();
    let native = Command::new("mknod").arg(t.outside.join("disk")).args(["b", "7", "0"]).status().unwrap();
    if !native.success() {
        eprintln!("SKIP: not root, so the attack does not work natively either");
        return;
    }
    let o = t.sh("grep CapBnd /proc/self/status; mknod $WS/disk b 7 0; mknod $WS/mem c 1 1; echo done");
    assert!(!t.ws.join("disk").exists() && !t.ws.join("mem").exists(), "{}", stderr(&o));
    let out = stdout(&o);
    let hex = out.split_whitespace().nth(1).expect("CapBnd value");
    let bounding = u64::from_str_radix(hex, 16).unwrap();
    for (name, bit) in [
        ("CAP_SYS_ADMIN", 21),
        ("CAP_SYS_MODULE", 16),
        ("CAP_MKNOD", 27),
        ("CAP_SYS_RAWIO", 17),
        ("CAP_SYS_PTRACE", 19),
        ("CAP_BPF", 39),
    ] {
        assert_eq!(bounding & (1 << bit), 0, "{name} is still in the bounding set: {hex}");
    }
    assert!(out.ends_with("done\n"));
}

/// Trapped opens interrupted by a stream of signals: every call returns,
/// no descriptor leaks into the caller, nothing hangs.
#[test]
fn signals_during_trapped_calls_do_not_wedge_or_leak() {
    if !kernel_ok() {
        return;
    }
    let t = Tree::new();
    let bin = copy_into(&t, "signal_storm");
    std::fs::write(t.ws.join("ok.txt"), "data\n").unwrap();
    let o = t
        .command(&[], &["timeout", "120", bin.to_str().unwrap(), t.ws.join("ok.txt").to_str().unwrap(), "5000"])
        .output()
        .unwrap();
    let out = stdout(&o);
    assert!(o.status.success(), "{out} {}", stderr(&o));
    let signals: u64 = out.split_whitespace().find_map(|w| w.strip_prefix("signals=")).unwrap().parse().unwrap();
    assert!(signals > 100, "the calls were really interrupted: {out}");
}
