//! Exit statuses, signals and the audit trail.

use crate::common::*;
use std::process::Command;

#[test]
fn exit_statuses_follow_the_shell_convention() {
    let Some(t) = kernel_tree() else { return };
    let code = |cmd: &[&str]| t.command(&[], cmd).output().unwrap().status.code();
    assert_eq!(code(&["/bin/sh", "-c", "exit 7"]), Some(7));
    assert_eq!(code(&["/bin/sh", "-c", "kill -TERM $$"]), Some(128 + libc::SIGTERM));
    assert_eq!(code(&["no-such-command-anywhere"]), Some(127));
    std::fs::write(t.ws.join("not-executable"), "data").unwrap();
    assert_eq!(code(&["./not-executable"]), Some(126));
    assert_eq!(code(&["./missing"]), Some(127));
}

/// One table of exit statuses for every verb, in `--help` and the README:
/// 2 for usage (a flag or verb that does not exist, a value that does not
/// parse, a missing argument), 125 for interpose's own failure (a path flag
/// naming nothing, a file that is not a trail), 1 for an answer of no.
#[test]
fn exit_statuses_follow_one_table() {
    let code = |args: &[&str]| {
        let o = Command::new(interpose()).args(args).output().unwrap();
        (o.status.code(), stderr(&o))
    };
    let (c, err) = code(&["run", "--bogus-flag", "--", "true"]);
    assert_eq!(c, Some(2), "{err}");
    let (c, err) = code(&["run", "--rw", "/tmp"]);
    assert_eq!(c, Some(2), "a command is required: {err}");
    let (c, err) = code(&["report", "--verify", "--suggest", "x"]);
    assert_eq!(c, Some(2), "conflicting flags: {err}");
    let (c, err) = code(&["run", "--rw", "/no/such/dir", "--", "true"]);
    assert_eq!(c, Some(125));
    assert!(err.contains("--rw /no/such/dir"), "{err}");
    let (c, err) = code(&["report", "/no/such/trail.jsonl"]);
    assert_eq!(c, Some(125), "{err}");
    let (c, err) = code(&["why", "--rw", "/tmp", "/etc/shadow"]);
    assert_eq!(c, Some(1), "denied: {err}");
    let (c, _) = code(&["why", "--rw", "/tmp", "/tmp"]);
    assert_eq!(c, Some(0));
    let help = Command::new(interpose()).arg("--help").output().unwrap();
    let help = stdout(&help);
    for line in ["Exit status (every verb):", "2    usage", "125  interpose itself failed", "127 if it is not found"] {
        assert!(help.contains(line), "--help lacks {line:?}:\n{help}");
    }
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    assert!(readme.contains(interpose::cli::EXIT_STATUS), "the README's table is --help's");
}

#[test]
fn sigterm_to_interpose_reaches_the_command() {
    if !kernel_ok() {
        return;
    }
    sigterm_reaches_the_command(&[]);
    // With the audit writer running too: no thread of interpose may take the
    // signal itself (its default action would kill interpose).
    sigterm_reaches_the_command(&["--audit", "/dev/null"]);
}

fn sigterm_reaches_the_command(extra: &[&str]) {
    let t = Tree::new();
    let child = t
        .command(
            extra,
            &["/bin/sh", "-c", "trap 'echo got-term; exit 5' TERM; echo ready > ready; while :; do sleep 0.02; done"],
        )
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("the command never started", 20, || t.ws.join("ready").exists());
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(stdout(&o), "got-term\n");
    assert_eq!(o.status.code(), Some(5));
}

#[test]
fn the_audit_trail_records_each_decision() {
    let Some(t) = kernel_tree() else { return };
    let trail = t.ws.join("audit.jsonl");
    let o = t
        .command(&["--audit", trail.to_str().unwrap()], &["/bin/sh", "-c", "cat $RO/data.txt; cat /etc/shadow; true"])
        .output()
        .unwrap();
    assert!(o.status.success());
    let records: Vec<serde_json::Value> =
        std::fs::read_to_string(&trail).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(records.first().unwrap()["type"], "session_start");
    assert_eq!(records.last().unwrap()["type"], "anchor");
    assert_eq!(records[records.len() - 2]["type"], "session_end");
    assert_eq!(records[records.len() - 2]["exit_status"], 0);
    let shadow = records.iter().find(|r| r["path"] == "/etc/shadow").expect("a record for /etc/shadow");
    assert_eq!(shadow["type"], "decision");
    assert_eq!(shadow["syscall"], "openat");
    assert!(shadow.get("resolved").is_none(), "written only where it is not the path: {shadow}");
    assert_eq!(shadow["access"], "read");
    assert_eq!(shadow["decision"], "deny");
    assert_eq!(shadow["errno"], "EACCES");
    assert!(shadow["rule"].as_str().unwrap().contains("deny /etc/shadow"), "{shadow}");
    assert!(shadow["pid"].as_u64().unwrap() > 1 && shadow["time_ns"].as_u64().unwrap() > 0);
    let data = t.ro.join("data.txt");
    let read = records
        .iter()
        .find(|r| r.get("resolved").unwrap_or(&r["path"]) == data.to_str().unwrap())
        .expect("a record for data.txt");
    assert_eq!(read["decision"], "allow");
    assert!(read["rule"].as_str().unwrap().contains("--ro"), "{read}");
    let exec = records.iter().find(|r| r["syscall"] == "execve").expect("the command's exec");
    assert_eq!(exec["decision"], "allow");
}

/// The command starts with SIGPIPE at its default, as outside: a writer
/// whose reader is gone ends quietly instead of printing EPIPE errors.
#[test]
fn sigpipe_is_not_inherited_ignored() {
    let Some(t) = kernel_tree() else { return };
    let o = t.sh("yes | head -1; grep SigIgn /proc/self/status");
    let out = stdout(&o);
    assert!(out.starts_with("y\nSigIgn:"), "{out}");
    let ignored = u64::from_str_radix(out.lines().nth(1).unwrap().split_whitespace().nth(1).unwrap(), 16).unwrap();
    assert_eq!(ignored & (1 << (libc::SIGPIPE - 1)), 0, "SIGPIPE is ignored: {out}");
    // Nothing but the notice of credentials removed from the environment,
    // if this machine's environment holds any.
    let err = stderr(&o);
    assert!(err.lines().all(|l| l.starts_with("interpose: removed from the command's environment")), "{err}");
}

/// A bug that panics a worker refuses that one call; the command and the
/// calls after it are answered as before. The fault is injected by a path
/// only debug builds of interpose recognize.
#[cfg(debug_assertions)]
#[test]
fn a_panic_while_handling_a_call_refuses_that_call_and_nothing_else() {
    let Some(t) = kernel_tree() else { return };
    let o = t.sh("cat /interpose-test/panic-the-worker; echo status=$?; echo after > after.txt; cat after.txt");
    assert!(stderr(&o).contains("panicked"), "{}", stderr(&o));
    assert!(stdout(&o).contains("status=1"), "{}", stdout(&o));
    assert!(stdout(&o).ends_with("after\n"), "{}", stdout(&o));
    assert_eq!(o.status.code(), Some(0));
}

/// What the command leaves running when it exits is killed, with a PID
/// namespace (its init's exit ends the namespace) and without one
/// (`--no-namespace`: interpose kills its children, then their orphans).
#[test]
fn processes_left_behind_are_killed_when_the_command_exits() {
    let Some(t) = kernel_tree() else { return };
    for (mode, marker) in [(&[][..], "271828"), (&["--no-namespace"][..], "314159")] {
        let script = format!("setsid sleep {marker} & sleep {marker} & echo started");
        let o = t.command(mode, &["/bin/sh", "-c", &script]).output().unwrap();
        assert_eq!(stdout(&o), "started\n", "{mode:?}: {}", stderr(&o));
        let left = || {
            std::fs::read_dir("/proc")
                .unwrap()
                .flatten()
                .filter(|e| {
                    std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c == format!("sleep\0{marker}\0").as_bytes())
                })
                .count()
        };
        wait_until(&format!("{mode:?}: the sleepers outlived the command"), 10, || left() == 0);
    }
}

#[test]
fn the_quick_benchmark_runs_every_mode_of_its_own() {
    if !kernel_ok() {
        return;
    }
    let o = Command::new(interpose()).args(["bench", "--quick", "--json"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rows = r["micro"].as_array().unwrap().iter().chain(r["commands"].as_array().unwrap());
    let mut cells = 0;
    for row in rows {
        for cell in row[1].as_array().unwrap() {
            let (mode, c) = (&cell[0], &cell[1]);
            assert!(c["error"].is_null(), "{} under {mode}: {}", row[0], c["error"]);
            assert!(!c["samples"].as_array().unwrap().is_empty(), "{} under {mode}: no samples", row[0]);
            cells += 1;
        }
    }
    // Seventeen rows (eleven per-call, six commands) by every mode: native,
    // interpose's own five floors (no copy of anyone's), its session floor
    // and its three modes, and a runc container without and with the
    // oci-agent.
    let modes: Vec<&str> = r["modes"].as_array().unwrap().iter().map(|m| m.as_str().unwrap()).collect();
    let ours = [
        "native",
        "bpf-allow floor",
        "landlock floor",
        "continue floor",
        "emulate floor",
        "stat-emulate floor",
        "notify-floor",
        "interpose",
        "interpose --fast",
        "interpose+audit",
    ];
    for m in ours.into_iter().chain(["runc", "runc+oci-agent"]) {
        assert!(modes.contains(&m), "{m} missing from {modes:?}");
    }
    assert_eq!(cells, 18 * modes.len());
    assert_eq!(r["missing"].as_array().unwrap().len(), 0, "{}", r["missing"]);
    // Two processes at once under the continue floor, the same with a
    // receiver per CPU, the session floor and interpose: each a ratio and
    // one process's rate.
    let parallel: Vec<(&str, f64, f64)> = r["parallel"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_str().unwrap(), p[1].as_f64().unwrap(), p[2].as_f64().unwrap()))
        .collect();
    let names: Vec<&str> = parallel.iter().map(|p| p.0).collect();
    assert_eq!(names, ["continue floor", "continue floor, a receiver per CPU", "notify-floor", "interpose"]);
    // Opens per second: a trapped open takes microseconds, not a millisecond.
    assert!(parallel.iter().all(|&(_, x, one)| x > 0.0 && one > 1_000.0), "{parallel:?}");
    // Every target of the issue is judged, the floors' ratios included.
    let targets = r["targets"].as_array().unwrap();
    let judged = |what: &str| targets.iter().any(|t| t["what"].as_str().unwrap().contains(what) && !t["met"].is_null());
    for what in [
        "emulate floor's",
        "continue floor's",
        "openat+close, relative added",
        "newfstatat added / continue floor's",
        "newfstatat added / stat-emulate floor's",
        "fstat (newfstatat AT_EMPTY_PATH) added / stat-emulate floor's",
        "readlink, not a link added / stat-emulate floor's",
        "every command's wall / stat-emulate floor's",
        "every command's wall",
        "peak memory",
        "flat",
        "/bin/true",
        "/dev/null added",
        "unix connect+accept+close added",
        "unix sendto+recv added",
        "fstat (newfstatat AT_EMPTY_PATH) added",
        "runc+oci-agent: openat+close added",
        "runc+oci-agent -- /bin/true",
    ] {
        assert!(judged(what), "no judged target {what:?} in {targets:?}");
    }
}

/// A trail that cannot be written is an error the user sees: a message at
/// once, exit 125, and by default the command stopped (`--audit-failure
/// continue` lets it run on). `--audit -` whose reader goes away ends the
/// same way, promptly, instead of wedging interpose and the command.
#[test]
fn a_trail_that_cannot_be_written_stops_the_command_and_says_so() {
    let Some(t) = kernel_tree() else { return };
    let marker = t.ws.join("ran-to-the-end");
    let script = "sleep 1; touch ran-to-the-end";
    for (extra, runs_on) in [(&[][..], false), (&["--audit-failure", "continue"][..], true)] {
        let _ = std::fs::remove_file(&marker);
        let o = t.command(&[&["--audit", "/dev/full"], extra].concat(), &["/bin/sh", "-c", script]).output().unwrap();
        assert_eq!(o.status.code(), Some(125), "{extra:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("writing the audit trail failed: No space left on device"), "{}", stderr(&o));
        assert_eq!(marker.exists(), runs_on, "{extra:?}");
    }
    // `--audit -`: the reader takes the first bytes and leaves.
    let mut child = t
        .command(&["--audit", "-"], &["/bin/sh", "-c", "while :; do cat /dev/null; done"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 100];
    std::io::Read::read_exact(child.stderr.as_mut().unwrap(), &mut first).unwrap();
    drop(child.stderr.take());
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > std::time::Duration::from_secs(30) {
            let _ = child.kill();
            panic!("interpose did not end after the trail's reader went away");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(125));
}

/// A trail whose reader stops reading (a collector that hangs) never makes
/// interpose deaf: the command waits for the trail, as nothing runs
/// unrecorded, but a SIGTERM ends the run within a second or two even when
/// the command ignores it, with exit 125 and what the trail lost said. A
/// FIFO as the trail (kept only while read, lost at the end with no reader)
/// is refused before anything runs.
#[test]
fn a_stalled_trail_never_makes_interpose_deaf_to_signals() {
    let Some(t) = kernel_tree() else { return };
    let socket = t.outside.join("collector.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let accepted = std::thread::spawn(move || listener.accept().map(|(conn, _)| conn));
    let mut child = t
        .command(
            &["--audit", &format!("unix:{}", socket.display())],
            &["/bin/sh", "-c", "trap '' TERM; while :; do cat /etc/hostname; done >/dev/null"],
        )
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Held open, never read: the socket's buffer fills within a second.
    let _held = accepted.join().unwrap().unwrap();
    std::thread::sleep(std::time::Duration::from_secs(4));
    assert!(child.try_wait().unwrap().is_none(), "the command runs on, waiting for its trail");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    let signalled = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if signalled.elapsed() > std::time::Duration::from_secs(20) {
            let _ = child.kill();
            panic!("interpose did not end after SIGTERM with its trail stalled");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(signalled.elapsed() < std::time::Duration::from_secs(3), "took {:?}", signalled.elapsed());
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(125), "{err}");
    assert!(err.contains("the audit trail's reader stopped reading"), "{err}");
    assert!(err.contains("record(s) were not written"), "{err}");

    let fifo = t.outside.join("trail.fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let marker = t.ws.join("ran");
    let o = t.command(&["--audit", fifo.to_str().unwrap()], &["/bin/sh", "-c", "touch ran"]).output().unwrap();
    assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
    assert!(stderr(&o).contains("a FIFO; a trail goes to a new regular file"), "{}", stderr(&o));
    assert!(!marker.exists(), "nothing ran");
}

/// On a file system that fills up, the trail is cut back to its last whole
/// record: it never ends mid-line, and `report --verify` calls it truncated.
#[test]
fn a_full_file_system_leaves_a_trail_of_whole_records() {
    if !kernel_ok() || !nix::unistd::geteuid().is_root() {
        assert!(std::env::var_os("INTERPOSE_REQUIRE_KERNEL").is_none(), "CI runs this as root");
        return;
    }
    let t = Tree::new();
    let small = t.outside.join("small");
    std::fs::create_dir(&small).unwrap();
    let mounted = Command::new("mount").args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"]).arg(&small).status().unwrap();
    assert!(mounted.success());
    let trail = small.join("trail.jsonl");
    let o = t
        .command(
            &["--audit", trail.to_str().unwrap()],
            &["/bin/sh", "-c", "for i in $(seq 400); do cat $RO/data.txt; done"],
        )
        .output()
        .unwrap();
    let text = std::fs::read(&trail).unwrap();
    let _ = Command::new("umount").arg(&small).status();
    assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
    assert!(stderr(&o).contains("No space left on device"), "{}", stderr(&o));
    assert!(!text.is_empty() && text.ends_with(b"\n"), "the trail ends mid-record");
    let copy = t.outside.join("copy.jsonl");
    std::fs::write(&copy, &text).unwrap();
    let v = Command::new(interpose()).args(["report", "--verify"]).arg(&copy).output().unwrap();
    assert_eq!(v.status.code(), Some(1));
    assert!(stdout(&v).contains("without a session_end"), "{}", stdout(&v));
}

/// Paths are resolved in the command's root with `RESOLVE_IN_ROOT`, under
/// which the kernel fails a lookup through `..` with `EAGAIN` whenever a
/// mount or rename happens anywhere on the system meanwhile. Mounts made by
/// others (a container runtime, a test next door) must not turn into
/// failed opens and execs inside the sandbox.
#[test]
fn mounts_elsewhere_do_not_fail_lookups_through_dotdot() {
    if !kernel_ok() || !nix::unistd::geteuid().is_root() {
        assert!(std::env::var_os("INTERPOSE_REQUIRE_KERNEL").is_none(), "CI runs this as root");
        return;
    }
    let t = Tree::new();
    std::fs::create_dir(t.ws.join("a")).unwrap();
    std::fs::write(t.ws.join("file"), "x").unwrap();
    let point = t.outside.join("churn");
    std::fs::create_dir(&point).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let churn = {
        let (stop, point) = (stop.clone(), point.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = Command::new("mount").args(["-t", "tmpfs", "tmpfs"]).arg(&point).status();
                let _ = Command::new("umount").arg(&point).status();
            }
        })
    };
    let script = "i=0; while [ $i -lt 1500 ]; do cat $WS/a/../file >/dev/null || exit 1; i=$((i+1)); done";
    let o = t.command(&[], &["/bin/sh", "-c", script]).output().unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    churn.join().unwrap();
    let _ = Command::new("umount").arg(&point).status();
    assert!(o.status.success(), "{}", stderr(&o));
}

/// A slip of a verb is an error that names the verb (exit 2), never a
/// program of that name run under the sandbox (`interpose mount` ran the
/// host's mount); the program still runs after `run` or `--`.
#[test]
fn a_misspelled_verb_names_the_verb_and_runs_nothing() {
    for (word, verb) in [("reprot", "report"), ("mount", "mounts")] {
        let o = std::process::Command::new(interpose()).args([word, "x.jsonl"]).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{word}: {}", stderr(&o));
        assert!(stderr(&o).contains(&format!("did you mean `{verb}`?")), "{}", stderr(&o));
    }
    let Some(t) = kernel_tree() else { return };
    let o = t.command(&[], &["/bin/sh", "-c", "echo ran"]).output().unwrap();
    assert_eq!(stdout(&o), "ran\n", "{}", stderr(&o));
}

/// A run with refusals says so itself at the end, one line: how many
/// accesses were refused, of how many paths, and what to run next (the
/// trail when there is one); a run with nothing writable that was refused
/// writes gets a hint; `--quiet` leaves the notices out, never the
/// command's own output.
#[test]
fn refusals_are_counted_at_the_end_and_quiet_leaves_notices_out() {
    let Some(t) = kernel_tree() else { return };
    let script = "cat $OUT/secret; cat $OUT/secret; touch /usr/interpose-x; echo end";
    let o = t.sh(script);
    let err = stderr(&o);
    assert_eq!(stdout(&o), "end\n", "{err}");
    let last = err.lines().last().unwrap_or_default();
    assert!(last.starts_with("interpose: ") && last.contains("accesses were refused, to 2 paths"), "{err}");
    assert!(last.contains("run again with --audit FILE, then: interpose report FILE"), "{err}");
    // With a trail, the line names it.
    let trail = t.outside.join("trail.jsonl");
    let o = t.command(&["--audit", trail.to_str().unwrap()], &["/bin/sh", "-c", script]).output().unwrap();
    assert!(stderr(&o).contains(&format!("see them with: interpose report {}", trail.display())), "{}", stderr(&o));
    // Nothing refused, nothing said.
    let o = t.command(&[], &["/bin/true"]).env_remove("GITHUB_TOKEN").output().unwrap();
    assert!(!stderr(&o).contains("refused"), "{}", stderr(&o));
    // No --rw and a refused write: the hint.
    let mut c = Command::new(interpose());
    c.args(["run", "--", "/bin/sh", "-c", "touch $OUT/made; echo end"]).env("OUT", &t.outside).current_dir(&t.ws);
    let o = c.output().unwrap();
    assert!(stderr(&o).contains("nothing was writable in this run: --rw DIR"), "{}", stderr(&o));
    // --quiet: the command's own output and errors, no notices.
    let o = t
        .command(&["--quiet"], &["/bin/sh", "-c", script])
        .env("OPENAI_API_KEY", "sk-secret-value-1")
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(stdout(&o), "end\n", "{err}");
    assert!(err.contains("Permission denied"), "the command's own errors stay: {err}");
    assert!(!err.contains("interpose:"), "{err}");
}

/// The README renders: every code fence opens with at most a language
/// name and closes bare (a closing fence with text after it turned the
/// rest of the README into code).
#[test]
fn the_readme_code_fences_close_cleanly() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let mut open = false;
    for (i, line) in readme.lines().enumerate() {
        let Some(rest) = line.trim_start().strip_prefix("```") else { continue };
        if open {
            assert!(rest.trim().is_empty(), "README.md:{}: a closing fence with text after it: {line}", i + 1);
        } else {
            assert!(rest.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'), "README.md:{}: {line}", i + 1);
        }
        open = !open;
    }
    assert!(!open, "README.md: a code fence is never closed");
}

/// Shell completions and the manual page come from the same definitions as
/// `--help`: every verb is in both, and the page carries the exit table.
#[test]
fn completions_and_the_manual_page_name_every_verb() {
    let out = |args: &[&str]| {
        let o = Command::new(interpose()).args(args).output().unwrap();
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        stdout(&o)
    };
    let verbs = ["run", "report", "why", "replay", "policy", "agent-config", "oci-agent", "completions", "man"];
    for shell in ["bash", "zsh", "fish"] {
        let script = out(&["completions", shell]);
        for verb in verbs {
            assert!(script.contains(verb), "{shell} completions lack {verb}");
        }
    }
    assert!(out(&["completions", "bash"]).contains("complete -F _interpose"), "a bash completion script");
    let page = out(&["man"]).replace("\\-", "-");
    assert!(page.contains(".TH interpose 1"), "{page}");
    for verb in verbs {
        assert!(page.contains(verb), "the manual page lacks {verb}");
    }
    assert!(page.contains("Exit status (every verb)"), "the page carries the exit table");
    // With --dir: the page and one per verb it refers to.
    let dir = tempfile::tempdir().unwrap();
    out(&["man", "--dir", dir.path().to_str().unwrap()]);
    for page in ["interpose.1", "interpose-run.1", "interpose-report.1", "interpose-policy-check.1"] {
        assert!(dir.path().join(page).exists(), "{page} not written");
    }
    let o = Command::new(interpose()).args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "an unknown shell is usage");
}

/// The README's synopsis and flag table name every flag `run` has (hidden
/// ones aside), as clap defines them: a flag added without its line fails.
#[test]
fn the_readme_names_every_flag_of_run() {
    use clap::CommandFactory;
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let synopsis = readme.lines().find(|l| l.starts_with("interpose [run]")).expect("the synopsis line");
    let table: Vec<&str> = readme.lines().filter(|l| l.starts_with("| `--")).collect();
    // Built: each verb's flags are made only when it is (`defer`).
    let mut cli = interpose::cli::Cli::command();
    cli.build();
    let run = cli.find_subcommand("run").expect("the run verb");
    assert!(run.get_arguments().any(|a| a.get_long() == Some("rw")), "run's flags were not built");
    let mut missing = Vec::new();
    for arg in run.get_arguments().filter(|a| !a.is_hide_set()) {
        // clap's own, added by the build.
        let Some(long) = arg.get_long().filter(|&l| l != "help") else { continue };
        let flag = format!("--{long}");
        let in_synopsis = synopsis.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')).any(|w| w == flag);
        let in_table = table.iter().any(|l| l.contains(&format!("`{flag}")));
        if !in_synopsis || !in_table {
            missing.push(format!("{flag} (synopsis: {in_synopsis}, table: {in_table})"));
        }
    }
    assert!(missing.is_empty(), "README lacks: {missing:?}");
}

/// interpose's own floors run a command as it runs natively (output and
/// exit status), under its filter: the emulate floor makes the command's
/// opens itself, relative ones included, and one it cannot install (`ln`
/// opens the directory it links into with `O_PATH`, which ADDFD does not
/// take) is made by the command.
#[test]
fn the_own_floors_run_commands_as_they_run_natively() {
    let Some(t) = kernel_tree() else { return };
    std::fs::write(t.ws.join("rel.txt"), "relative\n").unwrap();
    for floor in ["continue", "continue-every-cpu", "emulate", "emulate-stat"] {
        let _ = std::fs::remove_dir_all(t.ws.join("d"));
        std::fs::create_dir(t.ws.join("d")).unwrap();
        // glibc's `newfstatat` of a relative path, an absolute one, a
        // symlink (not followed, followed), a missing name and a
        // descriptor (Python's `os.stat`, `lstat`, `fstat`); `readlink` of
        // the link, of files that are none (relative, absolute), a missing
        // name and a name under a file.
        // Python runs in `d`, where the floor's own cwd is not.
        let script = "ln -s ../rel.txt d/ && cat d/rel.txt; cat $RO/data.txt; cd d && \
                      python3 -c 'import os, sys; s, r = os.stat, os.readlink
def errno(f, p):
    try:
        f(p)
    except OSError as e:
        return e.errno
print(s(\"../rel.txt\").st_size, s(sys.argv[1]).st_size, os.lstat(\"rel.txt\").st_size, \
      s(\"rel.txt\").st_size, errno(s, \"nope\"), errno(s, \"../rel.txt/x\"), os.fstat(0).st_size, \
      r(\"rel.txt\"), errno(r, \"../rel.txt\"), errno(r, sys.argv[1]), errno(r, \"nope\"), \
      errno(r, \"../rel.txt/x\"))' \
                      $RO/data.txt < ../rel.txt; exit 7";
        // Bounded: a floor that leaves a call unanswered hangs its caller.
        let o = Command::new("timeout")
            .arg("60")
            .arg(interpose())
            .args(["debug", "floor", floor, "--", "/bin/sh", "-c", script])
            .current_dir(&t.ws)
            .env("RO", &t.ro)
            .env("INTERPOSE_LOG", "interpose::bench::floor=debug")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(7), "{floor}: {}", stderr(&o));
        // The stat-emulate floor made the stats itself, of paths and of a
        // descriptor (Python's own at start among them), and answered the
        // readlinks of names that are no link; the others none.
        let err = stderr(&o);
        let (paths, descriptors, no_links) = (
            err.matches("floor: newfstatat performed (path)").count(),
            err.matches("floor: newfstatat performed (descriptor)").count(),
            err.matches("floor: readlink answered (").count(),
        );
        match floor {
            "emulate-stat" => assert!(
                paths >= 3 && descriptors >= 1 && no_links >= 4,
                "{floor}: {paths}, {descriptors}, {no_links}: {err}"
            ),
            _ => assert_eq!(paths + descriptors + no_links, 0, "{floor}: {err}"),
        }
        let link = "../rel.txt".len();
        let (enoent, enotdir, einval) = (libc::ENOENT, libc::ENOTDIR, libc::EINVAL);
        let expected = format!(
            "relative\nread-only data\n9 15 {link} 9 {enoent} {enotdir} 9 ../rel.txt {einval} {einval} {enoent} {enotdir}\n"
        );
        assert_eq!(stdout(&o), expected, "{floor}: {}", stderr(&o));
    }
    let o = Command::new(interpose()).args(["debug", "floor", "emulate", "--", "no-such-program"]).output().unwrap();
    assert_ne!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// The process that takes the end of interpose's namespaces off interpose's
/// exit (`sandbox::keeper`) holds none of the caller's descriptors (a pipe
/// reading interpose's output ends when interpose does), is no child of
/// interpose's (whose end reaps every child), holds the command's mount
/// namespace, and is gone once interpose is.
#[test]
fn the_namespace_keeper_holds_nothing_of_the_callers_and_ends_with_interpose() {
    use std::io::{BufRead, Write};
    use std::process::Stdio;
    let Some(t) = kernel_tree() else { return };
    let mut run = t
        .command(&[], &["/bin/sh", "-c", "echo ready; read line"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    std::io::BufReader::new(run.stdout.as_mut().unwrap()).read_line(&mut ready).unwrap();
    assert_eq!(ready, "ready\n");
    let me = run.id();
    let fd_targets = |pid: u32| -> Vec<String> {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return Vec::new() };
        fds.flatten().filter_map(|e| std::fs::read_link(e.path()).ok()).map(|l| l.display().to_string()).collect()
    };
    // A keeper names the interpose it waits for in its pidfd's fdinfo.
    let keeper_of = |interpose: u32| -> Option<u32> {
        std::fs::read_dir("/proc").ok()?.flatten().filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok()).find(
            |&p| {
                let comm = std::fs::read_to_string(format!("/proc/{p}/comm")).unwrap_or_default();
                comm == "interpose-keep\n"
                    && (0..8).any(|fd| {
                        std::fs::read_to_string(format!("/proc/{p}/fdinfo/{fd}"))
                            .is_ok_and(|i| i.lines().any(|l| l == format!("Pid:\t{interpose}")))
                    })
            },
        )
    };
    let keeper = keeper_of(me).expect("a keeper for this interpose");
    let stat = std::fs::read_to_string(format!("/proc/{keeper}/stat")).unwrap();
    let parent: u32 = stat[stat.rfind(')').unwrap() + 2..].split(' ').nth(1).unwrap().parse().unwrap();
    assert_ne!(parent, me, "the keeper is interpose's child");
    let held = fd_targets(keeper);
    for target in &held {
        assert!(
            target == "/dev/null"
                || target.starts_with("anon_inode:[pidfd]")
                || target.starts_with("mnt:[")
                || target.starts_with("socket:["),
            "the keeper holds {target}: {held:?}"
        );
    }
    assert!(held.iter().any(|t| t.starts_with("mnt:[")), "the command's mount namespace is not held: {held:?}");
    // It lives in interpose's own address space (made with CLONE_VM: no
    // page of interpose's is copied on its next write), and so takes no
    // signal (a handler would run on its stack, as interpose's code).
    // SAFETY: kcmp compares two processes' address spaces; integers only.
    let same_vm = unsafe {
        libc::syscall(libc::SYS_kcmp, me as libc::pid_t, keeper as libc::pid_t, 1 /* KCMP_VM */, 0, 0)
    };
    assert_eq!(same_vm, 0, "the keeper has an address space of its own");
    // Every signal the kernel lets a process block (all but SIGKILL and
    // SIGSTOP) is blocked.
    let status = std::fs::read_to_string(format!("/proc/{keeper}/status")).unwrap();
    let blocked = status.lines().find_map(|l| l.strip_prefix("SigBlk:\t")).map(|m| u64::from_str_radix(m, 16).unwrap());
    let unblockable = 1u64 << (libc::SIGKILL - 1) | 1u64 << (libc::SIGSTOP - 1);
    assert_eq!(blocked.map(|m| m | unblockable), Some(u64::MAX), "the keeper takes signals:\n{status}");
    run.stdin.as_mut().unwrap().write_all(b"done\n").unwrap();
    assert!(run.wait().unwrap().success());
    wait_until("the keeper outlived interpose", 10, || keeper_of(me).is_none());
}

/// A command that waits (an agent waiting on its model, a shell on its
/// user) does not wake the supervisor: its workers sleep until the next
/// call instead of looking a hundred times a second whether a call has
/// stalled.
#[test]
fn an_idle_command_leaves_the_supervisor_asleep() {
    let Some(t) = kernel_tree() else { return };
    let mut child = t.command(&[], &["/bin/sleep", "30"]).spawn().unwrap();
    // Until the command sleeps (in clock_nanosleep, 230), its start-up's
    // calls all made.
    let sleeping = || {
        descendants(child.id()).into_iter().any(|p| {
            std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c == "sleep\n")
                && std::fs::read_to_string(format!("/proc/{p}/syscall")).is_ok_and(|s| s.starts_with("230 "))
        })
    };
    wait_until("the command never reached its sleep", 30, sleeping);
    let threads = format!("/proc/{}/task", child.id());
    // Every thread's voluntary context switches, by thread id.
    let switches = || -> std::collections::BTreeMap<String, u64> {
        std::fs::read_dir(&threads)
            .unwrap()
            .flatten()
            .filter_map(|task| {
                let status = std::fs::read_to_string(task.path().join("status")).ok()?;
                let n = status.lines().find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))?.trim().parse().ok()?;
                Some((task.file_name().to_string_lossy().into_owned(), n))
            })
            .collect()
    };
    // Let the workers settle (a waiting one sleeps after 50 ms of looks).
    std::thread::sleep(std::time::Duration::from_millis(500));
    let before = switches();
    std::thread::sleep(std::time::Duration::from_secs(2));
    let after = switches();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(before.len() >= 2, "the supervisor's threads: {before:?}");
    let woken: u64 = after.iter().map(|(tid, n)| n - before.get(tid).copied().unwrap_or(0)).sum();
    // Looking every 10 ms made about 200 in these two seconds.
    assert!(
        woken <= 10,
        "the supervisor's threads woke {woken} times in 2 s of an idle command: {before:?} -> {after:?}"
    );
}
