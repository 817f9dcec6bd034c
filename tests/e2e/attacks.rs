//! Attacks that must work without interpose and fail under it.

use crate::common::*;
use std::process::Command;

fn copy_into(t: &Tree, name: &str) -> std::path::PathBuf {
    let dst = t.ws.join(name);
    // A hard link, not a copy: a file still open for writing when a
    // parallel test forks would make exec fail with ETXTBSY.
    if std::fs::hard_link(attack(name), &dst).is_err() {
        std::fs::copy(attack(name), &dst).unwrap();
    }
    dst
}

fn leaks(out: &str) -> u64 {
    out.split_whitespace().find_map(|w| w.strip_prefix("leaks=")).and_then(|n| n.parse().ok()).expect("leaks=N")
}

/// Runs a race natively until it wins once (at most ten runs): on a loaded
/// machine one run may lose every round, which says nothing about the
/// attack. Asserts that it won; the output of the winning run.
fn wins_natively(args: &[&str]) -> String {
    let mut last = String::new();
    for _ in 0..10 {
        let o = Command::new(args[0]).args(&args[1..]).output().unwrap();
        last = stdout(&o);
        if leaks(&last) > 0 {
            return last;
        }
    }
    panic!("the attack never won natively in ten runs: {last}");
}

/// A symlink in a directory the ruleset grants entry by entry (around a
/// carve-out: always so without a mount namespace of the command's own;
/// with one, around a denied directory that holds a grant) leads
/// elsewhere, as a repository's committed link can (`ws/link -> ~/.ssh`).
/// The ruleset grants nothing where it leads: an open continued under
/// another rule (`--ro`, granted whole), its path flipped after the check
/// to a file behind the link's target, reads nothing. When each entry was
/// granted at the path it leads to, the kernel let it read the secret.
#[test]
fn a_link_in_a_tree_granted_entry_by_entry_grants_nothing_where_it_leads() {
    let Some(t) = kernel_tree() else { return };
    let bin = copy_into(&t, "race_open");
    std::os::unix::fs::symlink(&t.outside, t.ws.join("link")).unwrap();
    let (env, denied_dir, inner) = (t.ws.join(".env"), t.ws.join("d"), t.ws.join("d/in"));
    std::fs::write(&env, "x\n").unwrap();
    std::fs::create_dir_all(&inner).unwrap();
    let (ok, secret) = (t.ro.join("data.txt"), t.outside.join("secret"));
    let args = [bin.to_str().unwrap(), ok.to_str().unwrap(), secret.to_str().unwrap(), "top-secret-marker", "20000"];
    wins_natively(&args);
    let (env, denied_dir, inner) = (env.to_str().unwrap(), denied_dir.to_str().unwrap(), inner.to_str().unwrap());
    for extra in [&["--no-namespace", "--deny", env][..], &["--deny", denied_dir, "--rw", inner][..]] {
        let o = t.command(extra, &args).output().unwrap();
        assert_eq!(leaks(&stdout(&o)), 0, "{extra:?}: {}", stdout(&o));
        assert_eq!(o.status.code(), Some(0), "{extra:?}: {}", stderr(&o));
    }
}

/// Two threads, one flipping a shared path between an allowed and a denied
/// file, the other opening and reading 20,000 times. Run with
/// `--no-landlock` the supervisor's answer is all that stands between the
/// program and the file: if opens were answered with CONTINUE instead of
/// being performed by the supervisor (ADDFD), the kernel would open the
/// swapped path and this test would fail.
#[test]
fn path_buffer_race_on_open_never_reads_the_denied_file() {
    let Some(t) = kernel_tree() else { return };
    let bin = copy_into(&t, "race_open");
    std::fs::write(t.ws.join("ok.txt"), "harmless\n").unwrap();
    let secret = t.outside.join("secret");
    let ok = t.ws.join("ok.txt");
    let args = [bin.to_str().unwrap(), ok.to_str().unwrap(), secret.to_str().unwrap(), "top-secret-marker", "20000"];

    wins_natively(&args);

    for extra in [&["--no-landlock"][..], &[][..]] {
        let o = t.command(extra, &args).output().unwrap();
        assert_eq!(leaks(&stdout(&o)), 0, "{extra:?}: {}", stdout(&o));
        assert_eq!(o.status.code(), Some(0), "{extra:?}: {}", stderr(&o));
    }
    // Relative names, which are continued too (decided on the cwd's path
    // joined to the name): flipped to a name that climbs out of the
    // workspace, and to a carve-out beside the harmless file.
    let carved = t.ws.join("key.txt");
    std::fs::write(&carved, "top-secret-marker\n").unwrap();
    let deny = ["--deny", carved.to_str().unwrap()];
    for denied in ["../outside/secret", "key.txt"] {
        let args = [bin.to_str().unwrap(), "ok.txt", denied, "top-secret-marker", "20000"];
        // Natively, from the workspace, the flip wins.
        let native = (0..10).any(|_| {
            let o = Command::new(args[0]).args(&args[1..]).current_dir(&t.ws).output().unwrap();
            leaks(&stdout(&o)) > 0
        });
        assert!(native, "{denied}: the attack never won natively in ten runs");
        for extra in [&[][..], &["--fast"][..], &["--no-landlock"][..]] {
            let o = t.command(&[&deny[..], extra].concat(), &args).output().unwrap();
            assert_eq!(leaks(&stdout(&o)), 0, "{denied} {extra:?}: {}", stdout(&o));
            assert_eq!(o.status.code(), Some(0), "{denied} {extra:?}: {}", stderr(&o));
        }
    }
}

/// The same race from `/dev/null`, which the kernel opens itself on the
/// path as written (a shell opens it at every redirection): a swapped path
/// reaches only what the backstop grants, so the secret is never read.
#[test]
fn path_buffer_race_from_dev_null_never_reads_the_denied_file() {
    let Some(t) = kernel_tree() else { return };
    let bin = copy_into(&t, "race_open");
    let secret = t.outside.join("secret");
    let args = [bin.to_str().unwrap(), "/dev/null", secret.to_str().unwrap(), "top-secret-marker", "20000"];

    wins_natively(&args);

    for extra in [&[][..], &["--no-landlock"][..]] {
        let o = t.command(extra, &args).output().unwrap();
        let out = stdout(&o);
        assert_eq!(leaks(&out), 0, "{extra:?}: {out}");
        assert_eq!(o.status.code(), Some(0), "{extra:?}: {}", stderr(&o));
        // /dev/null itself was opened, not refused along with the secret.
        let opened: u64 = out.split_whitespace().find_map(|w| w.strip_prefix("opened=")?.parse().ok()).unwrap();
        assert!(opened > 0, "{extra:?}: {out}");
    }
}

/// The same race aimed at another process's `/proc/<pid>/cmdline` (world
/// readable, no ptrace check), where the command sees the host's `/proc`
/// (`--no-namespace`) and its surface grants procfs whole (`--ro /proc`,
/// or `--ro /`): the surface refuses every `/proc/<pid>` outside the
/// sandbox, but a Landlock grant of a whole procfs would let the kernel
/// open the swapped path of a CONTINUEd open. Procfs is never granted
/// whole, so the race reaches nothing.
#[test]
fn path_buffer_race_on_open_never_reads_another_process_proc() {
    use std::os::unix::process::CommandExt;
    let Some(t) = kernel_tree() else { return };
    let bin = copy_into(&t, "race_open");
    std::fs::write(t.ws.join("ok.txt"), "harmless\n").unwrap();
    let mut outside = Command::new("/bin/sleep").arg0("top-secret-marker-proc").arg("120").spawn().unwrap();
    let cmdline = format!("/proc/{}/cmdline", outside.id());
    let ok = t.ws.join("ok.txt");
    let args = [bin.to_str().unwrap(), ok.to_str().unwrap(), &cmdline, "top-secret-marker", "20000"];

    wins_natively(&args);

    // The loader and libc: /usr (the others are its symlinks on merged-/usr
    // systems), and /lib64's loader where it is a directory of its own.
    let mut system = vec!["--no-namespace", "--no-system", "--ro", "/usr"];
    if std::fs::symlink_metadata("/lib64").is_ok_and(|m| m.is_dir()) {
        system.extend(["--ro", "/lib64"]);
    }
    for extra in [&["--ro", "/proc"][..], &["--ro", "/"][..]] {
        let o = t.command(&[&system[..], extra].concat(), &args).output().unwrap();
        assert_eq!(leaks(&stdout(&o)), 0, "{extra:?}: {}", stdout(&o));
        assert_eq!(o.status.code(), Some(0), "{extra:?}: {}", stderr(&o));
    }
    let _ = outside.kill();
    let _ = outside.wait();
}

/// The same race aimed at a carve-out inside the workspace. Landlock cannot
/// keep a file of a writable tree out (the tree's directory keeps the read
/// right that exec needs), so here opens must be emulated, not continued:
/// the race then reaches nothing, with or without the backstop.
#[test]
fn path_buffer_race_on_open_never_reaches_a_carve_out() {
    let Some(t) = kernel_tree() else { return };
    let bin = copy_into(&t, "race_open");
    std::fs::write(t.ws.join("ok.txt"), "harmless\n").unwrap();
    std::fs::write(t.ws.join(".env"), "top-secret-marker\n").unwrap();
    let secret = t.ws.join(".env");
    // From a file next to the carve-out, and from one in a read-only tree
    // that Landlock does cover exactly: the race may land anywhere the
    // ruleset allows, so one loose spot makes every open emulated. Under
    // --isolate the workspace is granted whole with the carve-out masked,
    // as without it: the race must not reach it there either.
    for ok in [t.ws.join("ok.txt"), t.ro.join("data.txt")] {
        let args =
            [bin.to_str().unwrap(), ok.to_str().unwrap(), secret.to_str().unwrap(), "top-secret-marker", "20000"];
        for extra in [&["--no-landlock"][..], &[][..], &["--isolate"][..]] {
            let extra = [extra, &["--deny", secret.to_str().unwrap()]].concat();
            let o = t.command(&extra, &args).output().unwrap();
            assert_eq!(leaks(&stdout(&o)), 0, "{ok:?} {extra:?}: {}", stdout(&o));
            assert_eq!(o.status.code(), Some(0), "{extra:?}: {}", stderr(&o));
        }
    }
}

/// `..` under a moving directory: `ws/p/q/../../outside/secret` names
/// `ws/outside/secret` as written, but while another thread moves `q` to
/// `ws/q` and back, the kernel's walk can climb to `ws/..` and reach the
/// outside file. A decision on the folded text would allow, and the
/// supervisor would act on the outside object.
#[test]
fn dotdot_under_a_moving_directory_never_reaches_outside() {
    if !kernel_ok() {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let t = Tree::new();
    let bin = copy_into(&t, "race_dotdot");
    let secret = t.outside.join("secret");
    wins_natively(&[
        bin.to_str().unwrap(),
        t.ws.to_str().unwrap(),
        "outside/secret",
        "read",
        "20000",
        "top-secret-marker",
    ]);
    let _ = std::fs::remove_dir_all(t.ws.join("p"));
    let _ = std::fs::remove_dir_all(t.ws.join("q"));
    for mode in [&[][..], &["--fast"][..], &["--deny", t.ws.join("carved").to_str().unwrap()][..]] {
        for op in ["read", "chmod", "truncate"] {
            let args =
                [bin.to_str().unwrap(), t.ws.to_str().unwrap(), "outside/secret", op, "5000", "top-secret-marker"];
            let o = t.command(mode, &args).output().unwrap();
            assert!(stdout(&o).contains("leaks="), "{mode:?} {op}: {}{}", stdout(&o), stderr(&o));
            assert_eq!(leaks(&stdout(&o)), 0, "{mode:?} {op}: {}{}", stdout(&o), stderr(&o));
            assert_eq!(std::fs::read_to_string(&secret).unwrap(), "top-secret-marker\n", "{mode:?} {op}");
            let perm = secret.metadata().unwrap().permissions().mode() & 0o7777;
            assert_eq!(perm, 0o644, "{mode:?} {op}: the outside file's mode changed");
            let _ = std::fs::remove_dir_all(t.ws.join("p"));
            let _ = std::fs::remove_dir_all(t.ws.join("q"));
        }
    }
}

/// A relative open decided on the cwd read back, while another thread moves
/// the process between a directory holding a harmless file of that name and
/// one holding a carve-out of it: a checker that continues the open on the
/// cwd it read is deciding on one directory while the kernel may look the
/// name up in the other. Natively the secret is read; under interpose the
/// backstop refuses (masks) it whatever the kernel resolves, in full and
/// fast mode, and without the backstop the supervisor resolves the name
/// from the cwd it opened (never continued) and opens that object.
#[test]
fn cwd_race_on_a_relative_open_never_reads_a_carve_out() {
    let Some(t) = kernel_tree() else { return };
    let bin = copy_into(&t, "race_cwd");
    let a = t.ws.join("a");
    std::fs::create_dir(&a).unwrap();
    std::fs::write(a.join("key.txt"), "harmless\n").unwrap();
    let secret = t.ws.join("key.txt");
    std::fs::write(&secret, "top-secret-marker\n").unwrap();
    let (a, ws) = (a.to_str().unwrap(), t.ws.to_str().unwrap());
    let args = [bin.to_str().unwrap(), a, ws, "key.txt", "20000", "top-secret-marker"];
    wins_natively(&args);
    let deny = ["--deny", secret.to_str().unwrap()];
    for extra in [&[][..], &["--fast"][..], &["--no-landlock"][..]] {
        let flags = [&deny[..], extra].concat();
        let o = t.command(&flags, &args).output().unwrap();
        let out = stdout(&o);
        assert_eq!(leaks(&out), 0, "{extra:?}: {out}{}", stderr(&o));
        // The harmless file is opened, so the race ran both ways.
        let opened: u64 = out.split_whitespace().find_map(|w| w.strip_prefix("opened=")).unwrap().parse().unwrap();
        assert!(opened > 0, "{extra:?}: {out}{}", stderr(&o));
    }
}

/// The same race on `stat`: the supervisor stats the object it checked and
/// writes the result into the caller, so the denied file's metadata never
/// comes back, with or without the backstop (Landlock does not cover stat).
#[test]
fn path_buffer_race_on_stat_never_describes_the_denied_file() {
    let Some(t) = kernel_tree() else { return };
    let bin = copy_into(&t, "race_stat");
    std::fs::write(t.ws.join("ok.txt"), "harmless\n").unwrap();
    let (ok, secret) = (t.ws.join("ok.txt"), t.outside.join("secret"));
    let args = [bin.to_str().unwrap(), ok.to_str().unwrap(), secret.to_str().unwrap(), "20000"];
    wins_natively(&args);
    for extra in [&["--no-landlock"][..], &[][..]] {
        let o = t.command(extra, &args).output().unwrap();
        assert_eq!(stdout(&o), "leaks=0 direct=0\n", "{extra:?}: {}", stderr(&o));
    }
    // Relative paths, as git and find make them: the allowed name is
    // looked up as its directory's path joined to it, the denied one
    // crosses a symlink out of the workspace (ws/out -> outside) and is
    // resolved from a handle on the cwd; the flip never makes either
    // describe the other.
    std::os::unix::fs::symlink(&t.outside, t.ws.join("out")).unwrap();
    let rel = [bin.to_str().unwrap(), "ok.txt", "out/secret", "20000"];
    let mut native =
        (0..10).map(|_| stdout(&Command::new(rel[0]).args(&rel[1..]).current_dir(&t.ws).output().unwrap()));
    assert!(native.any(|o| leaks(&o) > 0), "the relative attack works natively");
    for extra in [&["--no-landlock"][..], &[][..]] {
        let o = t.command(extra, &rel).output().unwrap();
        assert_eq!(stdout(&o), "leaks=0 direct=0\n", "relative {extra:?}: {}", stderr(&o));
    }
}

/// The 32-bit entry point uses other syscall numbers (5 is open); the filter
/// must kill the process rather than let them through.
#[test]
fn int80_open_kills_the_process() {
    let Some(t) = kernel_tree() else { return };
    let bin = copy_into(&t, "int80");
    let secret = t.outside.join("secret");
    let native = Command::new(&bin).arg(&secret).output().unwrap();
    if !stdout(&native).contains("top-secret-marker") {
        // Without IA32 emulation in the kernel there is nothing to attack.
        assert!(std::env::var_os("INTERPOSE_REQUIRE_KERNEL").is_none(), "no IA32 emulation: {}", stdout(&native));
        cannot_run("this kernel has no 32-bit entry point");
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
    let Some(t) = kernel_tree() else { return };
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
    let Some(t) = kernel_tree() else { return };
    let log = t.ws.join("log");
    // A temp base of this test's own, so no other test's run cleans it up.
    let tmp_base = t.outside.join("tmp");
    std::fs::create_dir(&tmp_base).unwrap();
    // Grandchildren too, one in a session of its own: orphaned when their
    // parent dies, they used to run on once interpose was killed.
    let script = "setsid sleep 300 & sleep 300 & while :; do echo tick >> log; sleep 0.02; done";
    let mut child = t.command(&[], &["/bin/sh", "-c", script]).env("TMPDIR", &tmp_base).spawn().unwrap();
    wait_until("the command never started", 20, || std::fs::read_to_string(&log).is_ok_and(|s| s.lines().count() >= 3));
    let sandbox: Vec<u32> = descendants(child.id());
    let sleepers = sandbox
        .iter()
        .filter(|p| std::fs::read_to_string(format!("/proc/{p}/cmdline")).is_ok_and(|c| c.starts_with("sleep\x00300")))
        .count();
    assert_eq!(sleepers, 2, "both grandchildren run");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // Every process of the sandbox dies at once; give the kernel a moment.
    let alive = |p: &u32| {
        std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|s| !s.contains(") Z") && !s.contains(") X"))
    };
    wait_until("the sandbox outlived interpose", 10, || !sandbox.iter().any(alive));
    let before = std::fs::read_to_string(&log).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(std::fs::read_to_string(&log).unwrap(), before, "nothing was written after interpose died");
    // The killed run could not remove its private TMPDIR; the next run does.
    let stale = format!("interpose-{}-", child.id());
    let leftovers = || {
        std::fs::read_dir(&tmp_base)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(&stale))
            .count()
    };
    assert_eq!(leftovers(), 1, "the killed run left its TMPDIR");
    assert!(t.command(&[], &["/bin/true"]).env("TMPDIR", &tmp_base).status().unwrap().success());
    assert_eq!(leftovers(), 0, "the next run removed it");
}

/// A root command keeps no capability that reaches the kernel: no device
/// nodes (a block device in the workspace would expose the raw disk), no
/// modules, mounts, raw I/O or BPF.
#[test]
fn root_command_cannot_make_device_nodes_or_keep_kernel_capabilities() {
    let Some(t) = kernel_tree() else { return };
    let native = Command::new("mknod").arg(t.outside.join("disk")).args(["b", "7", "0"]).status().unwrap();
    if !native.success() {
        cannot_run("not root, so the attack does not work natively either");
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
    let Some(t) = kernel_tree() else { return };
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

/// Symlink swapped on an intermediate directory while another thread opens
/// through it, by absolute path: without the Landlock backstop the
/// supervisor opens what it resolved; with it, an open in a tree Landlock
/// enforces exactly is continued on the path as written, and the kernel's
/// own resolution under the ruleset reaches nothing outside. Either way the
/// denied file is never read (a ruleset granting more than the surface, or
/// a CONTINUE without one, would lose the race).
#[test]
fn symlink_swap_race_on_an_intermediate_directory() {
    let Some(t) = kernel_tree() else { return };
    let bin = copy_into(&t, "race_symlink");
    std::fs::create_dir(t.ws.join("dir")).unwrap();
    std::fs::write(t.ws.join("dir/secret"), "harmless\n").unwrap();
    let (ws, dir, out) = (t.ws.to_str().unwrap(), t.ws.join("dir"), t.outside.to_str().unwrap());
    let args = [bin.to_str().unwrap(), ws, dir.to_str().unwrap(), out, "secret", "top-secret-marker", "20000"];
    wins_natively(&args);
    for extra in [&["--no-landlock"][..], &[][..]] {
        for l in ["link", "link.a", "link.b"] {
            let _ = std::fs::remove_file(t.ws.join(l));
        }
        let o = t.command(extra, &args).output().unwrap();
        assert_eq!(leaks(&stdout(&o)), 0, "{extra:?}: {} {}", stdout(&o), stderr(&o));
    }
}

/// Exec through a path buffer flipped between an allowed and a denied
/// binary. Only the kernel can exec, so an allowed exec is continued and
/// the kernel reads the path again: natively the race is won. With the
/// backstop, Landlock's EXECUTE right refuses the swapped path; without it
/// (`--no-landlock`) the supervisor stops the thread at its exec event
/// (ptrace) and kills it before the denied program runs an instruction.
/// `/usr/bin/true` is canonical, so it is decided as written, without a
/// lookup of its own (`/bin/true` is a symlink here and is looked up).
#[test]
fn exec_through_a_swapped_path_never_runs_the_denied_program() {
    let Some(t) = kernel_tree() else { return };
    let bin = copy_into(&t, "race_exec");
    let src = t.outside.join("evil.c");
    std::fs::write(&src, "int main(void) { return 42; }\n").unwrap();
    let evil = t.outside.join("evil");
    assert!(Command::new("cc").arg("-o").arg(&evil).arg(&src).status().unwrap().success());
    let ran = |o: &std::process::Output| -> u64 {
        stdout(o)
            .split_whitespace()
            .find_map(|w| w.strip_prefix("ran_denied="))
            .and_then(|n| n.parse().ok())
            .expect("ran_denied=N")
    };
    for allowed in ["/bin/true", "/usr/bin/true"] {
        let args = [bin.to_str().unwrap(), allowed, evil.to_str().unwrap(), "2000"];
        let won_natively = (0..10).any(|_| ran(&Command::new(args[0]).args(&args[1..]).output().unwrap()) > 0);
        assert!(won_natively, "the race is won natively");
        for extra in [&["--no-landlock"][..], &[][..], &["--fast"][..]] {
            let o = t.command(extra, &args).output().unwrap();
            assert_eq!(ran(&o), 0, "{allowed} {extra:?}: {}", stderr(&o));
        }
    }
}

/// Rename to a destination buffer flipped between the workspace and a
/// denied directory. Rename is performed by the supervisor between its
/// pinned handles of the directories it checked, so the swapped destination
/// reaches nothing, with or without the Landlock backstop. (When renames
/// were decided and then continued, this race won without Landlock within
/// 2,000 tries.)
#[test]
fn rename_through_a_swapped_destination_reaches_nothing() {
    let Some(t) = kernel_tree() else { return };
    let bin = copy_into(&t, "race_rename");
    let landed = t.outside.join("dst");
    let args = [bin.to_str().unwrap(), t.ws.to_str().unwrap(), t.outside.to_str().unwrap(), "2000"];
    for extra in [&["--no-landlock"][..], &[][..], &["--fast"][..]] {
        for _ in 0..3 {
            let o = t.command(extra, &args).output().unwrap();
            assert_eq!(stdout(&o), "done\n", "{extra:?}: {}", stderr(&o));
            assert!(!landed.exists(), "{extra:?}: a file was renamed into the denied directory");
        }
    }
}

#[test]
fn descriptor_and_signal_tricks_fail() {
    let Some(t) = kernel_tree() else { return };
    let script = r#"
ro = os.environ["RO"] + "/data.txt"
fd = os.open(ro, os.O_RDONLY)
# Re-opening our own read-only descriptor for writing through /proc.
attempt("reopen-rw", lambda: os.open(f"/proc/self/fd/{fd}", os.O_RDWR))
attempt("reopen-ro", lambda: os.open(f"/proc/self/fd/{fd}", os.O_RDONLY))
# An O_PATH handle on a workspace directory, then up and out.
p = os.open(os.environ["WS"], os.O_PATH)
attempt("opath-reopen-escape", lambda: os.open(f"/proc/self/fd/{p}/../outside/secret", os.O_RDONLY))
# Swapping a workspace file with an outside one in one atomic step.
open(os.environ["WS"] + "/mine", "w").close()
libc = ctypes.CDLL(None, use_errno=True)
def exchange():
    if libc.renameat2(-100, (os.environ["WS"] + "/mine").encode(), -100, (os.environ["OUT"] + "/secret").encode(), 2) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")
attempt("rename-exchange", exchange)
# Signalling the PID namespace's init: it ignores what comes from inside
# (SIGKILL included) and passes nothing back. interpose itself is outside
# the namespace, with no pid here to name it.
attempt("signal-init", lambda: (os.kill(1, signal.SIGTERM), os.kill(1, signal.SIGKILL), __import__("time").sleep(0.2)))
leaked = []
for n in os.listdir("/proc/self/fd"):
    try:
        if "secret" in os.readlink(f"/proc/self/fd/{n}"):
            leaked.append(int(n))
    except OSError:
        pass
print("inherited", leaked, os.path.exists("/proc/self/fd/9"))
"#;
    // Hand interpose an open descriptor on the secret, as a careless parent
    // might; the command must not inherit it.
    let secret = std::fs::File::open(t.outside.join("secret")).unwrap();
    let mut cmd = python_command(&t, &[], script);
    let raw = std::os::fd::AsRawFd::as_raw_fd(&secret);
    // SAFETY: the closure runs between fork and exec and only calls dup2,
    // which is async-signal-safe.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
            libc::dup2(raw, 9);
            Ok(())
        });
    }
    let o = cmd.output().unwrap();
    let out = stdout(&o);
    assert!(out.contains("reopen-rw EACCES\n"), "{out}{}", stderr(&o));
    assert!(out.contains("reopen-ro ok\n"), "{out}");
    assert!(out.contains("opath-reopen-escape EACCES\n"), "{out}");
    assert!(out.contains("rename-exchange EACCES\n"), "{out}");
    assert!(out.contains("signal-init ok\n"), "{out}");
    assert!(out.contains("inherited [] False\n"), "{out}");
    assert_eq!(std::fs::read_to_string(t.outside.join("secret")).unwrap(), "top-secret-marker\n");
}

/// Runs `round` (a shell command) three times in one session and samples
/// the supervisor after the last two: every call must be answered, and its
/// descriptors and memory must not grow between them. (The first round
/// warms up: the worker pool grows with the concurrency it meets, up to its
/// cap, and each worker's stack counts.) Returns the output.
///
/// A worker keeps a pidfd with each identity it caches and lets go of
/// those of exited tasks once a generation (an exec or a change of
/// credentials): at a sample, during `sleep`, whose exec began a
/// generation, it may hold those of the tasks still alive (the shell,
/// `sleep`), which vary with the worker that took their last calls, and
/// none of a task that has exited. So the pidfds are checked by what they
/// name (and a few at most), every other descriptor by number.
fn rounds_stay_flat(t: &Tree, round: &str) -> String {
    let script = format!("{round} && {round} && touch round1 && sleep 1 && {round} && touch round2 && sleep 1");
    let child = t.command(&[], &["/bin/sh", "-c", &script]).stdout(std::process::Stdio::piped()).spawn().unwrap();
    // What each descriptor of the supervisor is, a pidfd with the task it
    // names (`Pid: -1` once that has exited).
    let descriptors = || -> Vec<String> {
        let dir = format!("/proc/{}", child.id());
        let entries = std::fs::read_dir(format!("{dir}/fd")).unwrap();
        let described = entries.filter_map(|e| {
            let e = e.ok()?;
            let link = std::fs::read_link(e.path()).ok()?.display().to_string();
            if link != "anon_inode:[pidfd]" {
                return Some(link);
            }
            let info = std::fs::read_to_string(format!("{dir}/fdinfo/{}", e.file_name().to_string_lossy())).ok()?;
            let pid = info.lines().find_map(|l| l.strip_prefix("Pid:")).map_or("?", str::trim).to_string();
            Some(format!("pidfd of {pid}"))
        });
        described.collect()
    };
    let sample = |marker: &str| {
        wait_until(&format!("{marker} never came"), 120, || t.ws.join(marker).exists());
        // Let the calls around the marker (the touch, the exec of sleep)
        // finish, so only what stays is counted.
        std::thread::sleep(std::time::Duration::from_millis(300));
        let fds = descriptors();
        let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
        let rss_kib: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap();
        (fds, rss_kib)
    };
    let (fds1, rss1) = sample("round1");
    let (fds2, rss2) = sample("round2");
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    for fds in [&fds1, &fds2] {
        assert!(!fds.iter().any(|d| d == "pidfd of -1"), "a pidfd of an exited task is kept: {fds:?}");
        // Two tasks are alive: a pidfd a call would leave behind counts up.
        assert!(fds.iter().filter(|d| d.starts_with("pidfd of ")).count() <= 8, "pidfds kept: {fds:?}");
    }
    let others = |fds: &[String]| fds.iter().filter(|d| !d.starts_with("pidfd of ")).count();
    assert_eq!(others(&fds1), others(&fds2), "descriptors leaked between rounds: {fds1:?} -> {fds2:?}");
    assert!(rss2 <= rss1 + 1024, "memory grew by {} KiB between rounds ({rss1} -> {rss2})", rss2.saturating_sub(rss1));
    stdout(&o)
}

/// A small soak: three rounds of 32 processes x 2 threads x 500 opens in one
/// session (`cargo xtask soak` runs the million-call version).
#[test]
fn supervisor_resources_stay_flat_across_rounds() {
    let Some(t) = kernel_tree() else { return };
    let bin = copy_into(&t, "storm");
    std::fs::write(t.ws.join("ok.txt"), "data\n").unwrap();
    let out = rounds_stay_flat(&t, &format!("{} {} 32 2 500", bin.display(), t.ws.join("ok.txt").display()));
    assert_eq!(out, "processes failed: 0\n".repeat(3));
}

/// Callers that go away with calls pending: processes that exec from a
/// non-leader thread while their other threads trap opens, and processes
/// killed mid-call. Nothing may wedge the supervisor or leak its
/// descriptors.
#[test]
fn callers_vanishing_mid_call_leave_nothing_behind() {
    let Some(t) = kernel_tree() else { return };
    let bin = copy_into(&t, "chaos");
    std::fs::write(t.ws.join("ok.txt"), "data\n").unwrap();
    let out = rounds_stay_flat(&t, &format!("{} {} 100", bin.display(), t.ws.join("ok.txt").display()));
    assert_eq!(out, "rounds=100\n".repeat(3));
}

/// Without `--max-procs`, on a kernel where each PID namespace has its own
/// `pid_max` (6.14), the command's namespace is bounded by its own
/// (4097) instead of a pids cgroup, whose migration costs every start-up
/// an RCU grace period on cgroup v1: a fork bomb stops near 4,096 tasks,
/// the supervisor keeps answering, the host's `pid_max` is unchanged, and
/// the trail says which limit held.
#[test]
fn without_max_procs_the_pid_namespace_bounds_a_fork_bomb() {
    if !kernel_ok() {
        return;
    }
    let release = nix::sys::utsname::uname().unwrap().release().to_string_lossy().into_owned();
    let mut v = release.split(|c: char| !c.is_ascii_digit()).filter_map(|p| p.parse::<u32>().ok());
    if (v.next().unwrap_or(0), v.next().unwrap_or(0)) < (6, 14) {
        cannot_run(&format!("pid_max is system-wide before Linux 6.14 (this is {release})"));
        return;
    }
    let t = Tree::new();
    std::fs::write(t.ws.join("ok.txt"), "still answering\n").unwrap();
    let host_pid_max = std::fs::read_to_string("/proc/sys/kernel/pid_max").unwrap();
    let script = "
import os, time
kids = 0
try:
    while kids < 10000:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        kids += 1
except BlockingIOError:
    print('pid_max stopped forks at', kids)
print(open('ok.txt').read().strip())
";
    let trail = t.outside.join("bomb.jsonl");
    let o = t
        .command(
            &["--audit", trail.to_str().unwrap(), "--audit-key", t.outside.join("k").to_str().unwrap()],
            &["/usr/bin/python3", "-c", script],
        )
        .output()
        .unwrap();
    let out = stdout(&o);
    let refused: u32 = out
        .lines()
        .find_map(|l| l.strip_prefix("pid_max stopped forks at "))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("never refused: {out}{}", stderr(&o)));
    assert!((3000..4097).contains(&refused), "{out}");
    assert!(out.ends_with("still answering\n"), "{out}{}", stderr(&o));
    assert_eq!(std::fs::read_to_string("/proc/sys/kernel/pid_max").unwrap(), host_pid_max);
    let start: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(&trail).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(start["features"]["task_limit"]["detail"], "pid_max 4097 in the command's PID namespace");
}

/// A fork bomb is bounded by `--max-procs` (a pids cgroup), the supervisor
/// keeps answering, and everything the bomb left is killed at the end.
#[test]
fn fork_bomb_is_bounded_and_the_supervisor_keeps_answering() {
    let Some(t) = kernel_tree() else { return };
    std::fs::write(t.ws.join("ok.txt"), "still answering\n").unwrap();
    let script = "
import os, time
kids = []
try:
    while len(kids) < 1000:
        pid = os.fork()
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        kids.append(pid)
except BlockingIOError:
    print('fork refused after', len(kids))
print(open('ok.txt').read().strip())
";
    let o = t.command(&["--max-procs", "50"], &["/usr/bin/python3", "-c", script]).output().unwrap();
    if stderr(&o).contains("--max-procs: no pids cgroup") {
        assert!(std::env::var_os("INTERPOSE_REQUIRE_KERNEL").is_none(), "{}", stderr(&o));
        cannot_run("no pids cgroup here");
        return;
    }
    // 50 tasks: the PID namespace's init, python, and 48 children.
    assert_eq!(stdout(&o), "fork refused after 48\nstill answering\n", "{}", stderr(&o));
    assert!(o.status.success());
    let survivors = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("cmdline")).ok())
        // The bomb's processes are python's; interpose's namespace keeper,
        // which outlives interpose by a moment, carries the script in
        // interpose's own command line.
        .filter(|c| c.starts_with("/usr/bin/python3\0") && c.contains("fork refused after"))
        .count();
    assert_eq!(survivors, 0, "the bomb's children were killed when the command ended");
}

/// The calls that return information about a path without opening it,
/// each raced by a thread flipping the path between an allowed and a
/// denied object (`tests/attacks/race_meta.c`). They used to be decided
/// and then continued, so the kernel sometimes looked up the swapped path:
/// now the supervisor answers each on the object it checked (and an
/// `O_PATH` descriptor or a cwd a swapped open or chdir may have aimed
/// outside is decided again when it is described).
#[test]
fn path_buffer_races_on_metadata_calls_never_describe_the_denied_object() {
    let Some(t) = kernel_tree() else { return };
    let bin = copy_into(&t, "race_meta");
    std::fs::write(t.ws.join("ok.txt"), "harmless\n").unwrap();
    std::fs::create_dir(t.ws.join("sub")).unwrap();
    let secret = t.outside.join("secret");
    let set = |path: &std::path::Path| {
        let p = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: NUL-terminated strings and a 6-byte value.
        let r = unsafe { libc::setxattr(p.as_ptr(), c"user.marker".as_ptr(), c"secret".as_ptr().cast(), 6, 0) };
        assert_eq!(r, 0, "user xattrs on {}: {}", path.display(), std::io::Error::last_os_error());
    };
    set(&secret);
    let p = |p: &std::path::Path| p.to_str().unwrap().to_owned();
    let (ok, missing, sub) = (p(&t.ws.join("ok.txt")), p(&t.ws.join("missing")), p(&t.ws.join("sub")));
    // /sys/block (outside the surface) lies on another type of file system
    // than the workspace.
    let routes: &[(&str, &str, String)] = &[
        ("getxattr", &ok, p(&secret)),
        ("listxattr", &ok, p(&secret)),
        ("access", &missing, p(&secret)),
        ("statfs", &ok, "/sys/block".into()),
        ("opath", &ok, p(&secret)),
        ("fstatfs", &ok, "/sys/block".into()),
        ("chdir", &sub, p(&t.outside)),
        ("inotify", &ok, p(&secret)),
    ];
    for (route, allowed, denied) in routes {
        let args = [bin.to_str().unwrap(), route, allowed, denied, "5000"];
        // Natively the race is won within a few tries even on a loaded
        // machine (the flipping thread must run while the call does).
        let native = (0..10).map(|_| Command::new(args[0]).args(&args[1..]).output().unwrap());
        let mut native = native.map(|o| stdout(&o)).skip_while(|o| leaks(o) == 0);
        assert!(native.next().is_some(), "{route}: the attack works natively");
        for extra in [&["--no-landlock"][..], &[][..]] {
            let o = t.command(extra, &args).output().unwrap();
            assert_eq!(stdout(&o), "leaks=0 direct=0\n", "{route} {extra:?}: {}", stderr(&o));
        }
    }
    // A watch is the content of a directory: decided in fast mode too. The
    // direct probe there is the kernel's (access with F_OK asks only
    // whether the file exists, which fast mode's stat says too: its stated
    // residual), the watch never.
    let args = [bin.to_str().unwrap(), "inotify", &ok, &p(&secret), "5000"];
    let o = t.command(&["--fast"], &args).output().unwrap();
    assert_eq!(stdout(&o), "leaks=0 direct=1\n", "fast: {}", stderr(&o));
}

/// Datagrams to a pathname unix socket, with a thread flipping the address
/// between an allowed and a denied socket (`tests/attacks/race_dgram.c`).
/// When sends were decided and then continued, the kernel re-read the
/// address and some datagrams reached the denied socket; now the
/// supervisor sends each one itself, to the socket file it checked.
#[test]
fn path_buffer_race_on_datagram_sends_never_reaches_the_denied_socket() {
    if !kernel_ok() {
        return;
    }
    use std::os::unix::net::UnixDatagram;
    let t = Tree::new();
    let bin = copy_into(&t, "race_dgram");
    let (ok, denied) = (t.ws.join("ok.sock"), t.outside.join("denied.sock"));
    let ok_socket = UnixDatagram::bind(&ok).unwrap();
    let denied_socket = UnixDatagram::bind(&denied).unwrap();
    for s in [&ok_socket, &denied_socket] {
        s.set_nonblocking(true).unwrap();
    }
    let drain = |s: &UnixDatagram| std::iter::from_fn(|| s.recv(&mut [0u8; 16]).ok()).count();
    for how in ["sendto", "sendmsg", "sendmmsg"] {
        let args = [bin.to_str().unwrap(), how, ok.to_str().unwrap(), denied.to_str().unwrap(), "5000"];
        // Natively the race is won within a few tries (the receiving
        // queues are drained between them).
        let won = (0..10).any(|_| {
            let o = Command::new(args[0]).args(&args[1..]).output().unwrap();
            assert!(stdout(&o).starts_with("sent="), "{}", stderr(&o));
            drain(&ok_socket);
            drain(&denied_socket) > 0
        });
        assert!(won, "{how}: the attack works natively");
        for extra in [&["--no-landlock"][..], &[][..], &["--fast"][..]] {
            let o = t.command(extra, &args).output().unwrap();
            assert!(o.status.success(), "{how} {extra:?}: {}", stderr(&o));
            let (delivered, leaked) = (drain(&ok_socket), drain(&denied_socket));
            assert_eq!(leaked, 0, "{how} {extra:?}: {} datagrams reached the denied socket", leaked);
            assert!(delivered > 0, "{how} {extra:?}: the allowed socket still gets datagrams: {}", stdout(&o));
        }
    }
}

/// A server that never accepts, and more connecting threads than the
/// supervisor has workers: every other call is still answered (the
/// connects wait without holding a worker), and once the server accepts,
/// every client connects. Before, 64 threads blocked in connect stopped
/// every answer.
#[test]
fn a_server_that_never_accepts_cannot_wedge_the_supervisor() {
    let Some(t) = kernel_tree() else { return };
    let script = r#"
import os, signal, socket, sys, threading, time
N = 300
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind('srv.sock')
srv.listen(16)
open('ok.txt', 'w').write('ok')
connected = []
def client():
    c = socket.socket(socket.AF_UNIX)
    c.connect('srv.sock')
    connected.append(c)
threads = [threading.Thread(target=client) for _ in range(N)]
for t in threads:
    t.start()
while sum(1 for _ in os.listdir(f'/proc/self/task')) < N // 2:
    time.sleep(0.01)
time.sleep(0.5)
# Killed (exit 142) if these are not answered within 20 s.
signal.alarm(20)
for _ in range(200):
    open('ok.txt').read()
print('answered while', 'many' if N - len(connected) > 200 else 'few', 'clients wait')
for _ in range(N):
    srv.accept()[0].close()
for t in threads:
    t.join()
print('connected', len(connected))
"#;
    let native = Command::new("/usr/bin/python3").args(["-c", script]).current_dir(&t.ws).output().unwrap();
    let expected = "answered while many clients wait\nconnected 300\n";
    assert_eq!(stdout(&native), expected, "{}", stderr(&native));
    std::fs::remove_file(t.ws.join("srv.sock")).unwrap();
    let o = t.command(&[], &["/usr/bin/python3", "-c", script]).output().unwrap();
    assert_eq!(stdout(&o), expected, "{}", stderr(&o));
    assert_eq!(o.status.code(), Some(0));
}

/// A process that makes itself non-dumpable (as ssh-agent and gpg-agent
/// do) keeps its memory and environment from other processes of its user
/// that lack CAP_SYS_PTRACE, which the command does. The supervisor opens
/// `/proc` files for the command: it must do so with the command's
/// credentials alone, not with the CAP_SYS_PTRACE it keeps for itself.
#[test]
fn a_non_dumpable_process_keeps_its_environment_from_its_siblings() {
    let Some(t) = kernel_tree() else { return };
    let script = r#"
import ctypes, os, sys, time
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    os.write(w, b"x")
    time.sleep(30)
    os._exit(0)
os.read(r, 1)
for what in ["environ", "mem", "maps", "fd/0"]:
    try:
        with open(f"/proc/{pid}/{what}", "rb") as f:
            data = f.read(64)
        print(what, "read", b"AGENT_SECRET" in data if what == "environ" else len(data) > 0)
    except OSError as e:
        print(what, type(e).__name__)
os.kill(pid, 9)
"#;
    let run = |c: &mut Command| c.env("AGENT_SECRET", "hunter2").output().unwrap();
    let native = run(Command::new("/usr/bin/python3").args(["-c", script]).current_dir(&t.ws));
    assert!(stdout(&native).starts_with("environ read True\n"), "natively root reads it: {}", stdout(&native));
    let o = run(&mut t.command(&["--env-keep", "AGENT_SECRET"], &["/usr/bin/python3", "-c", script]));
    assert_eq!(
        stdout(&o),
        "environ PermissionError\nmem PermissionError\nmaps PermissionError\nfd/0 PermissionError\n",
        "{}",
        stderr(&o)
    );
}

/// The command's PID namespace has an init (pid 1 there) that holds a
/// copy of interpose's memory (an init sharing it was measured and not
/// kept: the supervisor's own opens of `/proc/1/mem` reached interpose
/// itself, docs/performance.md). Every way one process reaches another's
/// memory or descriptors is tried on it; natively root takes them all
/// from a process that is not dumpable (as the init is). A refusal must
/// be one of permission: "no such address" would mean the way was open.
#[test]
fn the_command_cannot_reach_its_inits_memory() {
    let Some(t) = kernel_tree() else { return };
    let script = r#"
import ctypes, errno, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
buf = ctypes.create_string_buffer(b"marker-in-memory", 64)
if sys.argv[1] == "child":
    r, w = os.pipe()
    target = os.fork()
    if target == 0:
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
        os.write(w, b"x")
        time.sleep(30)
        os._exit(0)
    os.read(r, 1)
else:
    target = int(sys.argv[1])
def vm(call):
    local = ctypes.create_string_buffer(64)
    mine, theirs = iovec(ctypes.addressof(local), 16), iovec(ctypes.addressof(buf), 16)
    return call(target, ctypes.byref(mine), 1, ctypes.byref(theirs), 1, 0) == 16
def getfd():
    pidfd = os.pidfd_open(target)
    return libc.syscall(438, pidfd, 0, 0) >= 0  # pidfd_getfd
routes = [
    ("mem", lambda: open(f"/proc/{target}/mem", "r+b").close() is None),
    ("environ", lambda: len(open(f"/proc/{target}/environ", "rb").read()) > 0),
    ("readv", lambda: vm(libc.process_vm_readv)),
    ("writev", lambda: vm(libc.process_vm_writev)),
    ("getfd", getfd),
    ("ptrace", lambda: libc.ptrace(0x4206, target, 0, 0) == 0),  # PTRACE_SEIZE
]
for name, route in routes:
    ctypes.set_errno(0)
    try:
        ok = route()
        code = ctypes.get_errno()
    except OSError as e:
        ok, code = False, e.errno
    print(name, "open" if ok else errno.errorcode.get(code, str(code)))
if sys.argv[1] == "child":
    os.kill(target, 9)
"#;
    let native = Command::new("/usr/bin/python3").args(["-c", script, "child"]).output().unwrap();
    assert_eq!(
        stdout(&native),
        "mem open\nenviron open\nreadv open\nwritev open\ngetfd open\nptrace open\n",
        "natively root reaches a process that is not dumpable: {}",
        stderr(&native)
    );
    for extra in [&[][..], &["--no-landlock"][..]] {
        let o = t.command(extra, &["/usr/bin/python3", "-c", script, "1"]).output().unwrap();
        let out = stdout(&o);
        let routes: Vec<&str> = out.lines().collect();
        assert_eq!(routes.len(), 6, "{extra:?}: {out}{}", stderr(&o));
        for line in routes {
            let (name, answer) = line.split_once(' ').unwrap();
            assert!(["EPERM", "EACCES"].contains(&answer), "{extra:?}: {name} on pid 1: {answer}\n{out}{}", stderr(&o));
        }
    }
}

/// An exec recomputes a process's capabilities: a process that set its ids
/// to nobody keeping its capabilities (`PR_SET_KEEPCAPS`, then `capset`)
/// loses them all when it execs a program. The supervisor performs a stat
/// for the new program with the credentials it has after the exec, not
/// those it cached before: a file in a directory only root may search
/// stays out of its reach, with a trail or without.
#[test]
fn a_program_execd_after_dropping_to_nobody_has_none_of_the_old_capabilities() {
    let Some(t) = tree_with_a_locked_directory() else { return };
    let script = r#"
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
class Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]
class Data(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]
libc.prctl(8, 1, 0, 0, 0)  # PR_SET_KEEPCAPS
os.setresgid(65534, 65534, 65534)
os.setgroups([])
os.setresuid(65534, 65534, 65534)
h, d = Header(0x20080522, 0), (Data * 2)()
assert libc.capget(ctypes.byref(h), d) == 0
d[0].effective, d[1].effective = d[0].permitted, d[1].permitted
assert libc.capset(ctypes.byref(h), d) == 0
print("before exec", os.stat("locked/f").st_size, os.readlink("locked/l"))
os.execv("/usr/bin/python3", ["python3", "-c", """
import os
for name, f in [("stat", lambda: os.stat("locked/f").st_size), ("readlink", lambda: os.readlink("locked/l"))]:
    try:
        print("after exec", name, f())
    except PermissionError:
        print("after exec", name, "EACCES")
"""])
"#;
    // Fast mode leaves stat to the kernel but performs readlink itself.
    let want = "before exec 1 link-target-marker\nafter exec stat EACCES\nafter exec readlink EACCES\n";
    prints_as_natively_in_every_mode(&t, script, want);
}

/// Supplementary groups are the caller's own when the supervisor looks a
/// path up for it, whichever member of the setuid family ran before: a
/// directory only group 4242 may search (root's, mode 0710, group 4242) is
/// looked into by a process that dropped to nobody keeping that group
/// (`setgroups([4242])`, then `setresgid` and `setresuid`, as GNU make's
/// children call them), not by one that dropped it, and again by a third
/// that kept it; all after a root process's call had taught the
/// supervisor the session's groups.
#[test]
fn a_lookup_for_a_caller_is_made_with_the_groups_it_set_last() {
    let Some(t) = tree_with_a_locked_directory() else { return };
    let grouped = t.ws.join("grouped");
    std::fs::create_dir(&grouped).unwrap();
    std::fs::write(grouped.join("f"), "x").unwrap();
    nix::unistd::chown(&grouped, None, Some(nix::unistd::Gid::from_raw(4242))).unwrap();
    std::fs::set_permissions(&grouped, std::os::unix::fs::PermissionsExt::from_mode(0o710)).unwrap();
    let script = r#"
import os
os.stat("locked/f")
def child(groups):
    pid = os.fork()
    if pid == 0:
        os.setgroups(groups)
        os.setresgid(65534, 65534, 65534)
        os.setresuid(65534, 65534, 65534)
        for name, f in [("stat", lambda: os.stat("grouped/f").st_size), ("access", lambda: os.access("grouped/f", os.R_OK))]:
            try:
                print(groups, name, f())
            except PermissionError:
                print(groups, name, "EACCES")
        os._exit(0)
    os.waitpid(pid, 0)
child([4242])
child([])
child([4242])
"#;
    let want = "[4242] stat 1\n[4242] access True\n[] stat EACCES\n[] access False\n\
                [4242] stat 1\n[4242] access True\n";
    prints_as_natively_in_every_mode(&t, script, want);
}

/// Runs the Python `script` in `t`'s workspace natively, then under
/// interpose in full mode, with a trail and in fast mode: each prints
/// `want`.
fn prints_as_natively_in_every_mode(t: &Tree, script: &str, want: &str) {
    let native = Command::new("/usr/bin/python3").args(["-c", script]).current_dir(&t.ws).output().unwrap();
    assert_eq!(stdout(&native), want, "{}", stderr(&native));
    let trail = t.outside.join("trail.jsonl");
    for extra in [&[][..], &["--audit", trail.to_str().unwrap()][..], &["--fast"][..]] {
        let o = t.command(extra, &["/usr/bin/python3", "-c", script]).output().unwrap();
        assert_eq!(stdout(&o), want, "{extra:?}: {}", stderr(&o));
    }
}

/// A Python script that, as root, stats `locked/f` (the supervisor answers
/// a root process), then forks a child that drops to nobody and runs
/// `body` (top-level code, `os` imported), and waits for it.
fn as_nobody_after_a_roots_call(body: &str) -> String {
    let body: String = body.trim_start_matches('\n').lines().map(|l| format!("    {l}\n")).collect();
    format!(
        "import os\nos.stat(\"locked/f\")\npid = os.fork()\nif pid == 0:\n    \
         os.setgroups([]); os.setgid(65534); os.setuid(65534)\n{body}    os._exit(0)\nos.waitpid(pid, 0)\n"
    )
}

/// As root, a [`Tree`] whose workspace holds `locked` (mode 0700, root's)
/// with a file `f` ("x") and a link `l` to `link-target-marker`: only a
/// caller with root's capabilities may look into it. `None` where the test
/// cannot run (never in CI, which runs as root).
fn tree_with_a_locked_directory() -> Option<Tree> {
    let t = kernel_tree()?;
    if !nix::unistd::geteuid().is_root() {
        assert!(std::env::var_os("INTERPOSE_REQUIRE_KERNEL").is_none(), "CI runs this as root");
        return None;
    }
    let locked = t.ws.join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::write(locked.join("f"), "x").unwrap();
    std::os::unix::fs::symlink("link-target-marker", locked.join("l")).unwrap();
    std::fs::set_permissions(&locked, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    Some(t)
}

/// An open continued as written is the kernel's, made with the caller's
/// credentials; one the supervisor resolves first (a path with `..` takes
/// the full route) must be looked up with them too, though the worker
/// answered a root process just before: a process that dropped to nobody
/// opens a file, and a name that is not there, in a directory only root
/// may search, by both routes, and is refused every time, as natively (a
/// lookup made as root would say the missing name is missing).
#[test]
fn an_open_the_supervisor_performs_after_a_roots_call_is_made_as_the_caller() {
    let Some(t) = tree_with_a_locked_directory() else { return };
    let script = as_nobody_after_a_roots_call(
        r#"
for name, path in [("dotdot", "locked/../locked/f"), ("plain", "locked/f"),
                   ("dotdot-missing", "locked/../locked/missing"), ("plain-missing", "locked/missing")]:
    try:
        os.close(os.open(path, os.O_RDONLY))
        print(name, "ok")
    except PermissionError:
        print(name, "EACCES")
"#,
    );
    let want = "dotdot EACCES\nplain EACCES\ndotdot-missing EACCES\nplain-missing EACCES\n";
    prints_as_natively_in_every_mode(&t, &script, want);
}

/// An exec continued as written takes no credentials, and the kernel fails
/// a missing program as the caller: a process that dropped to nobody execs
/// a name that is not there, and a file that is, in a directory only root
/// may search (absolute paths, no symlink: the route that is continued as
/// written), and is refused as natively (a lookup made as root would say
/// the missing name is missing).
#[test]
fn an_exec_continued_as_written_fails_as_the_caller() {
    let Some(t) = tree_with_a_locked_directory() else { return };
    let script = as_nobody_after_a_roots_call(
        r#"
for name in ["missing", "f"]:
    try:
        os.execv(os.path.abspath("locked/" + name), ["x"])
    except OSError as e:
        print(name, os.strerror(e.errno))
"#,
    );
    let want = "missing Permission denied\nf Permission denied\n";
    prints_as_natively_in_every_mode(&t, &script, want);
}

/// A thread number passes to another task once its own has exited, and
/// the supervisor keeps each thread's credentials by number: a task given
/// the number of a root process that made a call and exited must not be
/// served as that root. A process that dropped to nobody forks a child
/// with the number of such a root process; the child's stat of a file in
/// a directory only root may search is refused, as natively. (The test
/// brings the number round at once by writing the host's `ns_last_pid`;
/// an attacker gets there by forking through the number space.)
#[test]
fn a_reused_thread_number_does_not_inherit_a_dead_roots_credentials() {
    let Some(t) = tree_with_a_locked_directory() else { return };
    // P drops to nobody (the supervisor forgets what it cached), then root
    // process A stats the file (its credentials are cached) and exits;
    // then P forks B, which the test gives A's number.
    let script = r#"
import ctypes, os, sys, time
libc = ctypes.CDLL(None)
def wait(name):
    while not os.path.exists(name):
        time.sleep(0.005)
go_r, go_w = os.pipe()
dropped_r, dropped_w = os.pipe()
p = os.fork()
if p == 0:
    os.setgroups([]); os.setgid(65534); os.setuid(65534)
    os.write(dropped_w, b"d")
    os.read(go_r, 1)
    b = os.fork()
    if b == 0:
        libc.prctl(15, b"reuse-b", 0, 0, 0)
        try:
            os.stat("locked/f")
            print("B stat ok")
        except PermissionError:
            print("B EACCES")
        sys.stdout.flush()
        wait("b-seen")
        os._exit(0)
    os.waitpid(b, 0)
    os._exit(0)
os.read(dropped_r, 1)
a = os.fork()
if a == 0:
    libc.prctl(15, b"reuse-a", 0, 0, 0)
    print("A stat", os.stat("locked/f").st_size)
    sys.stdout.flush()
    open("a-ready", "w").close()
    wait("a-go")
    os._exit(0)
os.waitpid(a, 0)
open("a-gone", "w").close()
wait("b-go")
os.write(go_w, b"x")
os.waitpid(p, 0)
"#;
    prints_as_natively_once_b_has_as_number(&t, script, ("A stat 1\n", "B EACCES\n"));
}

/// The supervisor takes a caller's descriptor (`fstat`) through the pidfd
/// it keeps for the caller's thread number without asking first whether
/// that task still runs: a task given the number of one that took a
/// descriptor and exited is answered about its own descriptor, never
/// refused because the number's old task is gone. A opens and stats a
/// one-byte file and exits; B, given A's number, opens a two-byte one on
/// the same descriptor number and stats it.
#[test]
fn a_reused_thread_number_stats_its_own_descriptor() {
    let Some(t) = kernel_tree() else { return };
    std::fs::write(t.ws.join("one"), "1").unwrap();
    std::fs::write(t.ws.join("two"), "22").unwrap();
    let script = r#"
import ctypes, os, sys, time
libc = ctypes.CDLL(None)
def wait(name):
    while not os.path.exists(name):
        time.sleep(0.005)
def stat_of(who, name):
    fd = os.open(name, os.O_RDONLY)
    try:
        print(who, fd, os.fstat(fd).st_size)
    except OSError as e:
        print(who, fd, os.strerror(e.errno))
    sys.stdout.flush()
a = os.fork()
if a == 0:
    libc.prctl(15, b"reuse-a", 0, 0, 0)
    stat_of("A stat", "one")
    open("a-ready", "w").close()
    wait("a-go")
    os._exit(0)
os.waitpid(a, 0)
open("a-gone", "w").close()
wait("b-go")
b = os.fork()
if b == 0:
    libc.prctl(15, b"reuse-b", 0, 0, 0)
    stat_of("B", "two")
    wait("b-seen")
    os._exit(0)
os.waitpid(b, 0)
"#;
    prints_as_natively_once_b_has_as_number(&t, script, ("A stat 3 1\n", "B 3 2\n"));
}

/// Runs `script` (the part of [`drive_reuse`]) natively, then under
/// interpose until B is given A's number (eight tries): each time it
/// prints A's line, then B's, as natively.
fn prints_as_natively_once_b_has_as_number(t: &Tree, script: &str, (a, b): (&str, &str)) {
    let piped = std::process::Stdio::piped;
    let want = format!("{a}{b}");
    let native = Command::new("/usr/bin/python3").args(["-c", script]).current_dir(&t.ws).stdout(piped()).spawn();
    let (_, out) = drive_reuse(&t.ws, native.unwrap(), "natively");
    assert_eq!(out, want, "natively");
    for attempt in 0..8 {
        for f in ["a-ready", "a-go", "a-gone", "b-go", "b-seen"] {
            let _ = std::fs::remove_file(t.ws.join(f));
        }
        let child = t.command(&[], &["/usr/bin/python3", "-c", script]).stdout(piped()).spawn().unwrap();
        let (same, out) = drive_reuse(&t.ws, child, "under interpose");
        assert!(out.starts_with(a), "attempt {attempt}: {out}");
        if same {
            assert_eq!(out, want, "attempt {attempt}");
            return;
        }
    }
    panic!("B never got A's number (other tasks took it first, eight times)");
}

/// Plays the test's part in the script of
/// [`a_reused_thread_number_does_not_inherit_a_dead_roots_credentials`]:
/// lets A exit, makes the next number the kernel gives A's, lets P fork B.
/// Returns whether B got A's number, and what the script printed.
fn drive_reuse(ws: &std::path::Path, mut child: std::process::Child, how: &str) -> (bool, String) {
    let pid_named = |name: &str| {
        std::fs::read_dir("/proc").unwrap().flatten().find_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            (std::fs::read_to_string(e.path().join("comm")).ok()?.trim() == name).then_some(pid)
        })
    };
    wait_until(&format!("A ready {how}"), 30, || ws.join("a-ready").exists());
    let a = pid_named("reuse-a").expect("A's number");
    std::fs::write(ws.join("a-go"), "").unwrap();
    wait_until(&format!("A gone {how}"), 30, || ws.join("a-gone").exists());
    std::fs::write("/proc/sys/kernel/ns_last_pid", (a - 1).to_string()).unwrap();
    std::fs::write(ws.join("b-go"), "").unwrap();
    let mut b = None;
    wait_until(&format!("B forked {how}"), 30, || {
        b = pid_named("reuse-b");
        b.is_some()
    });
    std::fs::write(ws.join("b-seen"), "").unwrap();
    let mut out = String::new();
    if let Some(mut o) = child.stdout.take() {
        std::io::Read::read_to_string(&mut o, &mut out).unwrap();
    }
    assert!(child.wait().unwrap().success(), "{how}: {out}");
    (b == Some(a), out)
}

/// Opens in the workspace (a tree Landlock enforces exactly) are continued
/// on the path as written, unresolved: what a symlink there leads to is
/// decided by the kernel under the ruleset alone. Each link below leads
/// somewhere the surface refuses (another process's environment, a host
/// secret, a /proc carve-out, the user's home) or allows (the command's own
/// /proc, the read-only tree); natively root reads them all.
#[test]
fn symlinks_in_the_workspace_reach_only_what_the_surface_allows() {
    let Some(t) = kernel_tree() else { return };
    let mut victim = Command::new("/bin/sleep").arg("60").env("VICTIM_SECRET", "top-secret-marker").spawn().unwrap();
    let environ = format!("/proc/{}/environ", victim.id());
    wait_until("the victim's environment to be readable", 10, || {
        std::fs::read_to_string(&environ).is_ok_and(|e| e.contains("top-secret-marker"))
    });
    let links = [
        ("environ", environ.as_str()),
        ("secret", t.outside.join("secret").to_str().unwrap().to_owned().leak()),
        ("timers", "/proc/timer_list"),
        ("status", "/proc/self/status"),
        ("data", t.ro.join("data.txt").to_str().unwrap().to_owned().leak()),
    ];
    for (name, target) in links {
        std::os::unix::fs::symlink(target, t.ws.join(name)).unwrap();
    }
    let script = "for l in environ secret timers status data; do \
                  if head -c 4096 $WS/$l > /dev/null 2>&1; then echo $l read; else echo $l refused; fi; done; \
                  grep -c top-secret-marker $WS/environ $WS/secret 2>/dev/null; true";
    let native = Command::new("/bin/sh").args(["-c", script]).env("WS", &t.ws).output().unwrap();
    assert!(
        stdout(&native).starts_with("environ read\nsecret read\ntimers read\nstatus read\ndata read\n"),
        "{}",
        stdout(&native)
    );
    for mode in [&[][..], &["--fast"][..]] {
        let o = t.command(mode, &["/bin/sh", "-c", script]).output().unwrap();
        assert_eq!(
            stdout(&o),
            "environ refused\nsecret refused\ntimers refused\nstatus read\ndata read\n",
            "{mode:?}: {}",
            stderr(&o)
        );
    }
    let _ = victim.kill();
    let _ = victim.wait();
}

/// A wedge: the command holds a lease on a file and 200 of its threads
/// truncate it. Each truncate breaks the lease, which the kernel lets the
/// holder keep for `lease-break-time` (45 s): made by a supervisor worker
/// with a blocking open, the workers waited that long and the session
/// could not end before. The truncates now wait in the retry queue: a
/// sibling process's calls are answered meanwhile, and the session ends
/// with the command.
#[test]
fn a_lease_and_many_truncating_threads_stop_no_other_process() {
    let Some(t) = kernel_tree() else { return };
    std::fs::write(t.ws.join("leased"), "data\n").unwrap();
    std::fs::write(t.ws.join("other"), "sibling-ok\n").unwrap();
    let body = r#"
import fcntl, os, signal, subprocess, threading, time
# The holder ignores the lease-break signal and never gives the lease up.
signal.signal(signal.SIGIO, signal.SIG_IGN)
f = os.open('leased', os.O_RDONLY)
fcntl.fcntl(f, fcntl.F_SETLEASE, fcntl.F_RDLCK)
done = []
def truncate():
    os.truncate('leased', 0)
    done.append(1)
for _ in range(200):
    threading.Thread(target=truncate, daemon=True).start()
time.sleep(0.5)
# Well inside lease-break-time: a wedged supervisor answers nothing before it.
r = subprocess.run(['cat', 'other'], capture_output=True, timeout=30)
print(r.stdout.decode().strip(), "while", 200 - len(done), "truncates wait")
os._exit(0)
"#;
    // The kernel lets a lease holder keep the lease this long after a break
    // starts; a worker blocked in the truncate's open is held as long, and
    // the session with it (the sibling ran, but interpose could not end).
    let lease_break: u64 = std::fs::read_to_string("/proc/sys/fs/lease-break-time").unwrap().trim().parse().unwrap();
    let started = std::time::Instant::now();
    let o = t.command(&[], &["/usr/bin/python3", "-c", body]).output().unwrap();
    let out = stdout(&o);
    assert!(out.starts_with("sibling-ok while "), "{out} {}", stderr(&o));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(lease_break.saturating_sub(5).max(1)),
        "the session waited for the lease break: {:?}",
        started.elapsed()
    );
}

/// A program refused by a carve-out, named as a script's interpreter
/// (`#!`): the kernel opens the interpreter itself, so no trapped call sees
/// that name. Where the ruleset is expanded around the carve-out (no mount
/// namespace), a hard link of the refused program granted under another
/// name carries its rule to the same inode, so Landlock alone would let it
/// run; interpose then checks every exec at its exec event. Natively the
/// script runs its interpreter; under interpose it never does, in any
/// mode, while the other name (allowed by its path) still runs.
#[test]
fn a_refused_interpreter_never_runs_through_a_shebang_or_a_hard_links_rule() {
    let Some(t) = kernel_tree() else { return };
    let bin = t.ws.join("bin");
    std::fs::create_dir(&bin).unwrap();
    let src = t.outside.join("interp.c");
    std::fs::write(&src, "#include <stdio.h>\nint main(void) { puts(\"interpreter-ran\"); return 0; }\n").unwrap();
    assert!(Command::new("cc").arg("-o").arg(bin.join("interp")).arg(&src).status().unwrap().success());
    std::fs::hard_link(bin.join("interp"), bin.join("alias")).unwrap();
    write_exec(&t.ws.join("s.sh"), &format!("#!{}\n", bin.join("interp").display()));
    let native = Command::new(t.ws.join("s.sh")).output().unwrap();
    assert!(stdout(&native).contains("interpreter-ran"), "natively the interpreter runs");
    let deny = bin.join("interp");
    let script = "./s.sh; echo shebang=$?; ./bin/alias && echo alias-ok";
    for extra in [&[][..], &["--no-namespace"][..], &["--fast"][..], &["--no-landlock"][..]] {
        let args: Vec<&str> = ["--deny", deny.to_str().unwrap()].iter().chain(extra).copied().collect();
        let o = t.command(&args, &["/bin/sh", "-c", script]).output().unwrap();
        let out = stdout(&o);
        assert!(out.contains("shebang=") && !out.contains("interpreter-ran\nshebang=0"), "{extra:?}: {out}");
        assert_eq!(out.matches("interpreter-ran").count(), 1, "{extra:?}: only the alias runs: {out}{}", stderr(&o));
        assert!(out.contains("alias-ok"), "{extra:?}: {out}{}", stderr(&o));
    }
}
