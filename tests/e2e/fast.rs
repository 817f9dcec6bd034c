//! Fast mode: only what Landlock cannot decide is trapped. The workspace
//! works, the outside stays closed (now partly by Landlock alone), and the
//! stated residual (metadata of outside paths) is what it says.

use crate::common::*;

#[test]
fn fast_mode_confines_like_full_mode_except_metadata() {
    let Some(t) = kernel_tree() else { return };
    let trail = t.outside.join("trail.jsonl");
    let o = t
        .command(
            &["--fast", "--audit", trail.to_str().unwrap()],
            &[
                "/bin/sh",
                "-c",
                "echo hi > x && cat x && mkdir d && mv x d/y && rm d/y && rmdir d && \
                 printf '#!/bin/sh\\necho ran\\n' > s && chmod +x s && ./s && $RO/tool.sh && echo ws-ok; \
                 cat $OUT/secret; echo x > $OUT/new; mkdir $OUT/d; rm -f $OUT/secret; mv $OUT/secret $WS/; \
                 ln $OUT/secret $WS/hard; chmod 777 $OUT/secret; head -c1 /proc/1/environ; \
                 grep -c Name /proc/self/status; stat -c %s $OUT/secret",
            ],
        )
        .output()
        .unwrap();
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(out.starts_with("hi\nran\ntool-ran\nws-ok\n"), "{out}\n{err}");
    assert!(!out.contains("top-secret-marker"), "{out}");
    // Refused: read, create, mkdir, unlink, rename out, hard link, chmod, and
    // another process's /proc.
    for what in ["cat:", "cannot create", "mkdir:", "rm:", "mv:", "chmod:", "head:"] {
        assert!(err.lines().any(|l| l.contains(what) && l.contains("denied")), "{what} not refused:\n{err}");
    }
    // Landlock refuses a hard link that would give the file more rights in
    // its new place with EXDEV.
    assert!(err.lines().any(|l| l.contains("ln:") && l.contains("cross-device")), "{err}");
    assert!(t.outside.join("secret").exists() && !t.outside.join("new").exists() && !t.ws.join("hard").exists());
    // The sandbox's own /proc works; the residual: an outside file's size.
    assert!(out.ends_with("1\n18\n"), "{out}");
    let start: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(&trail).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(start["mode"]["name"], "fast");
    assert_eq!(start["mode"]["landlock_exact"], true);
    assert!(start["mode"]["residual"].as_str().unwrap().contains("never its content"));
    let untrapped = start["mode"]["untrapped"].to_string();
    assert!(untrapped.contains("\"newfstatat\"") && untrapped.contains("\"unlinkat\""), "{untrapped}");
    assert!(!untrapped.contains("\"openat\""), "{untrapped}");
}

/// The residual is existence and attributes only: a link's target is
/// content and `access(2)` must say what the surface allows, so both stay
/// the supervisor's in fast mode and are refused outside the surface.
/// `access` with `F_OK` asks only whether the name exists, which a `stat`
/// says in fast mode too: the kernel answers it (full mode refuses it
/// outside the surface, so the answer shows who gave it).
#[test]
fn fast_mode_keeps_link_targets_and_access_of_outside_paths() {
    let Some(t) = kernel_tree() else { return };
    std::os::unix::fs::symlink("link-target-marker", t.outside.join("link")).unwrap();
    let exists = "python3 -c 'import os, sys; print(\"exists\" if os.access(sys.argv[1], os.F_OK) else \"refused\")'";
    let script = format!(
        "readlink $OUT/link; test -r $OUT/secret && echo outside-readable; \
         test -r $RO/data.txt && echo ro-readable; readlink $WS/here; {exists} $OUT/secret"
    );
    let script = script.as_str();
    std::os::unix::fs::symlink("ws-target", t.ws.join("here")).unwrap();
    let native = std::process::Command::new("/bin/sh")
        .args(["-c", script])
        .env("WS", &t.ws)
        .env("RO", &t.ro)
        .env("OUT", &t.outside)
        .output()
        .unwrap();
    assert_eq!(stdout(&native), "link-target-marker\noutside-readable\nro-readable\nws-target\nexists\n");
    let o = t.command(&["--fast"], &["/bin/sh", "-c", script]).output().unwrap();
    assert_eq!(stdout(&o), "ro-readable\nws-target\nexists\n", "{}", stderr(&o));
    let o = t.command(&[], &["/bin/sh", "-c", script]).output().unwrap();
    assert_eq!(stdout(&o), "ro-readable\nws-target\nrefused\n", "{}", stderr(&o));
}

/// With a carve-out in the writable workspace, Landlock cannot decide the
/// workspace exactly, so fast mode keeps everything but metadata trapped:
/// the carve-out cannot be removed, renamed or replaced.
#[test]
fn fast_mode_keeps_carve_outs_closed() {
    let Some(t) = kernel_tree() else { return };
    let env = t.ws.join(".env");
    std::fs::write(&env, "top-secret-marker\n").unwrap();
    let o = t
        .command(
            &["--fast", "--deny", env.to_str().unwrap()],
            &["/bin/sh", "-c", "cat .env; rm -f .env; mv .env e; ln .env h; ln -s x .env; echo y > y && mv y .env; echo ok > ok && cat ok"],
        )
        .output()
        .unwrap();
    assert_eq!(stdout(&o), "ok\n", "{}", stderr(&o));
    // cat, rm, mv, ln and mv over it are refused; the symlink finds the
    // name taken.
    assert_eq!(stderr(&o).matches("denied").count(), 5, "{}", stderr(&o));
    assert!(stderr(&o).contains("'.env': File exists"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&env).unwrap(), "top-secret-marker\n");
}

#[test]
fn fast_mode_needs_landlock() {
    let t = Tree::new();
    let o = t.command(&["--fast", "--no-landlock"], &["/bin/true"]).output().unwrap();
    assert_eq!(o.status.code(), Some(125));
    assert!(stderr(&o).contains("--fast leaves decisions to Landlock"), "{}", stderr(&o));
}

/// With a PID namespace of its own (root here), fast mode leaves read-only
/// opens to Landlock: the command's `/proc` lists only its own processes, so
/// the one grant of it the child adds is what the surface says there, and
/// the surface's carve-outs in it are masked. A symlink in the workspace to
/// another process's `/proc/<pid>/environ` (the example) reaches
/// nothing; natively the same read shows the secret.
#[test]
fn read_only_opens_are_left_to_landlock_with_a_procfs_of_the_commands_own() {
    let Some(t) = kernel_tree() else { return };
    let mut victim =
        std::process::Command::new("/bin/sleep").arg("60").env("VICTIM_SECRET", "top-secret-marker").spawn().unwrap();
    let environ = format!("/proc/{}/environ", victim.id());
    // Natively the environment is readable (once sleep has exec'd).
    wait_until("the victim's environment to be readable", 10, || {
        std::fs::read_to_string(&environ).is_ok_and(|e| e.contains("top-secret-marker"))
    });
    std::fs::write(t.ws.join("mine"), "own data\n").unwrap();
    let trail = t.outside.join("trail.jsonl");
    let script = "ln -s $VICTIM link && cat mine && echo written > out && \
                  grep -c Name /proc/self/status && cat /proc/$$/cmdline >/dev/null && echo own-proc; \
                  cat link; cat $VICTIM; cat $OUT/secret; cat /proc/timer_list; cat /proc/kallsyms; \
                  echo 1 > /proc/sysrq-trigger; set -- /proc/[0-9]*; echo $#";
    let o = t
        .command(&["--fast", "--audit", trail.to_str().unwrap()], &["/bin/sh", "-c", script])
        .env("VICTIM", &environ)
        .output()
        .unwrap();
    let _ = victim.kill();
    let _ = victim.wait();
    let (out, err) = (stdout(&o), stderr(&o));
    // The shell's own listing of /proc: the namespace's init and the shell.
    assert_eq!(out, "own data\n1\nown-proc\n2\n", "{err}");
    assert!(!out.contains("top-secret-marker") && !err.contains("top-secret-marker"));
    let refused = err.lines().filter(|l| l.contains("Permission denied") || l.contains("No such file")).count();
    assert_eq!(refused, 6, "link, the victim's environ, the secret, two masks and sysrq-trigger:\n{err}");
    assert!(!err.contains("opens stay trapped"), "{err}");
    let trail = std::fs::read_to_string(&trail).unwrap();
    let start: serde_json::Value = serde_json::from_str(trail.lines().next().unwrap()).unwrap();
    assert_eq!(start["mode"]["untrapped_read_only"], serde_json::json!(["open", "openat"]), "{start}");
    // The write is the supervisor's to decide and is recorded; the reads
    // are Landlock's, and are not.
    assert!(trail.lines().any(|l| l.contains("\"decision\"") && l.contains("/out\"")), "{trail}");
    assert!(!trail.contains("/mine\""), "a read-only open was trapped:\n{trail}");
}

/// In a root holding only the surface (`--isolate` as root: a PID namespace
/// and procfs of the command's own), fast mode leaves `readlink` to the
/// kernel too, and read-only opens: a link outside the surface does not
/// exist there to be read (natively its target is), nor does another
/// process's `/proc` entry, a link inside the surface reads as it is, a
/// directory rebuilt around a carve-out (`/etc`) lists, and the carve-outs
/// stay closed.
#[test]
fn fast_mode_in_an_isolated_root_leaves_link_targets_to_the_kernel() {
    let Some(t) = kernel_tree() else { return };
    if !nix::unistd::geteuid().is_root() {
        cannot_run("--isolate leaves reads to the kernel only as root (a procfs of the command's own)");
        return;
    }
    let mut victim = std::process::Command::new("/bin/sleep").arg("60").current_dir(&t.outside).spawn().unwrap();
    std::os::unix::fs::symlink("link-target-marker", t.outside.join("link")).unwrap();
    std::os::unix::fs::symlink("ws-target", t.ws.join("here")).unwrap();
    let env = t.ws.join(".env");
    std::fs::write(&env, "top-secret-marker\n").unwrap();
    let trail = t.outside.join("trail.jsonl");
    let script = "readlink $OUT/link; readlink $VICTIM/cwd; readlink $WS/here; readlink /proc/self/exe; \
                  cat $RO/data.txt; ls /etc | grep -cx passwd; cat .env; cat /etc/shadow; cat $OUT/secret; \
                  cat /proc/timer_list; set -- /proc/[0-9]*; echo $#";
    let native = std::process::Command::new("/bin/sh")
        .args(["-c", "readlink $OUT/link; readlink $VICTIM/cwd"])
        .env("OUT", &t.outside)
        .env("VICTIM", format!("/proc/{}", victim.id()))
        .output()
        .unwrap();
    assert_eq!(stdout(&native), format!("link-target-marker\n{}\n", t.outside.display()));
    let flags = ["--isolate", "--fast", "--deny", env.to_str().unwrap(), "--audit", trail.to_str().unwrap()];
    let o =
        t.command(&flags, &["/bin/sh", "-c", script]).env("VICTIM", format!("/proc/{}", victim.id())).output().unwrap();
    let _ = victim.kill();
    let _ = victim.wait();
    let (out, err) = (stdout(&o), stderr(&o));
    // The shell's own listing of /proc: the namespace's init and the shell.
    assert_eq!(out, "ws-target\n/usr/bin/readlink\nread-only data\n1\n2\n", "{err}");
    assert!(!err.contains("top-secret-marker") && !err.contains("opens stay trapped"), "{err}");
    // The carve-outs, in the workspace and in the new root's /proc.
    for masked in [".env", "/proc/timer_list"] {
        assert!(err.lines().any(|l| l.contains(masked) && l.contains("Permission denied")), "{masked}:\n{err}");
    }
    for absent in ["/etc/shadow", "secret"] {
        assert!(err.lines().any(|l| l.contains(absent) && l.contains("No such file")), "{absent}:\n{err}");
    }
    let trail = std::fs::read_to_string(&trail).unwrap();
    let start: serde_json::Value = serde_json::from_str(trail.lines().next().unwrap()).unwrap();
    let untrapped = start["mode"]["untrapped"].to_string();
    assert!(untrapped.contains("\"readlink\"") && untrapped.contains("\"readlinkat\""), "{start}");
    assert!(start["mode"]["residual"].as_str().unwrap().contains("holds only the surface"), "{start}");
    assert_eq!(start["mode"]["untrapped_read_only"], serde_json::json!(["open", "openat"]), "{start}");
    assert!(!trail.contains("\"syscall\":\"readlink\""), "a readlink was trapped:\n{trail}");
    // Without --isolate the host's names exist: readlink stays trapped.
    let o = t.command(&["--fast"], &["/bin/sh", "-c", "readlink $OUT/link; readlink $WS/here"]).output().unwrap();
    assert_eq!(stdout(&o), "ws-target\n", "{}", stderr(&o));
    // A carve-out that is a link itself (a policy's deny pattern matched
    // its name; no mask covers a link: a mount lands on what it points to)
    // keeps link targets trapped, as full mode refuses its target.
    std::os::unix::fs::symlink(t.outside.join("secret"), t.ws.join("id.key")).unwrap();
    let policy = t.outside.join("keys.toml");
    std::fs::write(&policy, "cwd = \".\"\ndeny = [\"**/*.key\"]\n").unwrap();
    let script = "readlink id.key; readlink here";
    for mode in [&["--isolate", "--fast"][..], &[]] {
        let flags = [&["--policy", policy.to_str().unwrap()][..], mode].concat();
        let o = t.command(&flags, &["/bin/sh", "-c", script]).output().unwrap();
        assert_eq!(stdout(&o), "ws-target\n", "{mode:?}: {}", stderr(&o));
    }
    let flags = ["--policy", policy.to_str().unwrap(), "--isolate", "--fast"];
    let o = t.command(&flags, &["/bin/sh", "-c", script]).output().unwrap();
    assert!(stderr(&o).contains("link targets stay trapped"), "{}", stderr(&o));
}

/// Every denied file is masked by a read-only, `nosuid`, `nodev`,
/// `noexec` bind of `/dev/null` in the command's mount namespace (opening
/// one fails with EACCES, whatever the backstop would allow): the first
/// takes the flags by a remount, every later one by being bound from it.
#[test]
fn every_file_mask_is_a_read_only_nodev_null() {
    let Some(t) = kernel_tree() else { return };
    let o = t.command(&[], &["/bin/cat", "/proc/self/mountinfo"]).output().unwrap();
    let out = stdout(&o);
    // mountinfo: id, parent, major:minor, root, mount point, options, ...
    let masks: Vec<(&str, &str)> = out
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f.get(3) == Some(&"/null")).then(|| (f[4], f[5]))
        })
        .collect();
    // The system surface's secrets in procfs are masked on every host.
    assert!(masks.iter().any(|(at, _)| *at == "/proc/kallsyms"), "{out}");
    assert!(masks.len() >= 3, "{out}");
    for (at, options) in &masks {
        let options: Vec<&str> = options.split(',').collect();
        for flag in ["ro", "nosuid", "nodev", "noexec"] {
            assert!(options.contains(&flag), "{at} is masked without {flag}: {options:?}");
        }
    }
}

/// Without a PID namespace of its own the command's `/proc` is the host's,
/// so fast mode says at start that opens stay trapped, and they are.
#[test]
fn without_a_pid_namespace_fast_mode_keeps_opens_trapped() {
    let Some(t) = kernel_tree() else { return };
    std::fs::write(t.ws.join("mine"), "own data\n").unwrap();
    let trail = t.outside.join("trail.jsonl");
    let o = t
        .command(&["--fast", "--no-namespace", "--audit", trail.to_str().unwrap()], &["/bin/cat", "mine"])
        .output()
        .unwrap();
    assert_eq!(stdout(&o), "own data\n", "{}", stderr(&o));
    assert!(stderr(&o).contains("interpose: fast mode: opens stay trapped: the command has no PID namespace"));
    let trail = std::fs::read_to_string(&trail).unwrap();
    let start: serde_json::Value = serde_json::from_str(trail.lines().next().unwrap()).unwrap();
    assert!(start["mode"].get("untrapped_read_only").is_none(), "{start}");
    assert!(trail.lines().any(|l| l.contains("\"decision\"") && l.contains("/mine\"")), "{trail}");
}

/// The mode is settled once, from the flags and the policy: a policy asking
/// for fast mode makes a plain run fast (the trail's mode says so), a
/// learning run learns and says the policy's mode is not used, and
/// `--no-landlock` cannot be fast.
#[test]
fn a_policy_asking_for_fast_mode_is_settled_with_the_flags() {
    let Some(t) = kernel_tree() else { return };
    let policy = t.outside.join("fast.toml");
    std::fs::write(&policy, "mode = \"fast\"\ncwd = \".\"\n").unwrap();
    let p = policy.to_str().unwrap();
    let mode_of = |trail: &std::path::Path| {
        let text = std::fs::read_to_string(trail).unwrap();
        let start: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        start["mode"]["name"].as_str().unwrap_or_default().to_string()
    };
    let trail = t.outside.join("fast.jsonl");
    let o = t.command(&["--policy", p, "--audit", trail.to_str().unwrap()], &["/bin/true"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(mode_of(&trail), "fast");
    let trail = t.outside.join("learn.jsonl");
    let o =
        t.command(&["--policy", p, "--learn", "--audit", trail.to_str().unwrap()], &["/bin/true"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("mode = \"fast\" is not used while learning"), "{}", stderr(&o));
    assert_eq!(mode_of(&trail), "learn");
    let o = t.command(&["--policy", p, "--no-landlock"], &["/bin/true"]).output().unwrap();
    assert_eq!(o.status.code(), Some(125));
    assert!(stderr(&o).contains("--fast leaves decisions to Landlock"), "{}", stderr(&o));
}

/// Fast mode engages under the shipped policy when Claude Code keeps its
/// state in a directory of its own (`CLAUDE_CONFIG_DIR`, as `interpose
/// agent-config claude` sets it): the claude profile then grants its config
/// file inside that directory, and nothing the kernel cannot hold exactly.
/// Without it the profile grants `~/.claude.json` (a file Claude replaces
/// by a rename) and a pattern next to it, and read-only opens stay trapped,
/// saying which entry keeps them so and how to change that.
#[test]
fn fast_mode_engages_under_the_shipped_policy_with_an_agent_config_dir() {
    let Some(t) = kernel_tree() else { return };
    let home = t.outside.join("home");
    let config = t.outside.join("agent-config");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&config).unwrap();
    let policy = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/coding-agent.toml");
    let untrapped_reads = |trail: &std::path::Path| {
        let text = std::fs::read_to_string(trail).unwrap();
        let start: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        start["mode"]["untrapped_read_only"].as_array().map_or(0, Vec::len)
    };
    let run = |name: &str, config: Option<&std::path::Path>| {
        let trail = t.outside.join(name);
        let mut c = t.command(
            &["--fast", "--policy", policy.to_str().unwrap(), "--audit", trail.to_str().unwrap()],
            &["cat", "/etc/hostname"],
        );
        c.env("HOME", &home).env_remove("CLAUDE_CONFIG_DIR");
        if let Some(dir) = config {
            c.env("CLAUDE_CONFIG_DIR", dir);
        }
        let o = c.output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
        (stderr(&o), untrapped_reads(&trail))
    };
    let (err, untrapped) = run("with-config-dir.jsonl", Some(&config));
    assert!(!err.contains("opens stay trapped"), "{err}");
    assert!(untrapped > 0, "fast mode left no read-only open to the kernel: {err}");
    let (err, untrapped) = run("home-config.jsonl", None);
    assert!(err.contains("opens stay trapped"), "{err}");
    assert_eq!(untrapped, 0);
    // What keeps them trapped is named, with where it came from and the
    // way out.
    let named = format!("{} is granted before it exists (profile claude:", home.join(".claude.json").display());
    assert!(err.contains(&named) && err.contains("set as `interpose agent-config claude` prints it"), "{err}");
}

/// A command started inside a carve-out, its working directory beneath
/// the mount that masks the carve-out in the command's namespace, enters
/// the mask: a relative path reaches nothing under it, in full and fast
/// mode (left where it was started, fast mode read the file, since the
/// kernel opened it beneath the mask).
#[test]
fn a_command_started_inside_a_carve_out_reads_nothing_of_it() {
    let Some(t) = kernel_tree() else { return };
    let secrets = t.ws.join("secrets");
    std::fs::create_dir(&secrets).unwrap();
    std::fs::write(secrets.join("key"), "top-secret-marker\n").unwrap();
    let native = std::process::Command::new("/bin/cat").arg("key").current_dir(&secrets).output().unwrap();
    assert_eq!(stdout(&native), "top-secret-marker\n", "the attack works natively");
    for mode in [&[][..], &["--fast"][..]] {
        let mut args = mode.to_vec();
        args.extend(["--deny", secrets.to_str().unwrap()]);
        let o = t
            .command(&args, &["/bin/sh", "-c", "cat key; cat ./key; ls -a; pwd"])
            .current_dir(&secrets)
            .env("PWD", &secrets)
            .output()
            .unwrap();
        assert!(!stdout(&o).contains("top-secret"), "{mode:?} read the carve-out: {}", stdout(&o));
        assert!(!stdout(&o).contains("key"), "{mode:?} listed the carve-out: {}", stdout(&o));
        assert!(stdout(&o).ends_with(&format!("{}\n", secrets.display())), "{mode:?}: {}", stdout(&o));
    }
}
