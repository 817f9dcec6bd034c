//! Reading the audit trail back: `interpose report` and `interpose why`.

use crate::common::*;
use std::path::Path;
use std::process::Command;

fn audited_run(t: &Tree) -> std::path::PathBuf {
    let trail = t.outside.join("audit.jsonl");
    let o = t
        .command(
            &["--audit", trail.to_str().unwrap()],
            &["/bin/sh", "-c", "cat /etc/shadow; echo x > $OUT/new; cat $RO/data.txt"],
        )
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    trail
}

#[test]
fn report_groups_denials_and_says_what_would_allow_them() {
    let Some(t) = kernel_tree() else { return };
    let trail = audited_run(&t);
    let o = Command::new(interpose()).args(["report", "--format", "json"]).arg(&trail).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(r["chain"].as_str().unwrap().starts_with("intact"), "{r}");
    assert_eq!(r["exit_status"], 0);
    assert_eq!(r["denials"], 2, "{r}");
    let etc = &r["denials_by_directory"]["/etc"];
    assert_eq!(etc["examples"][0], "/etc/shadow");
    assert!(etc["allowed_by"].as_str().unwrap().contains("carve-out"), "{etc}");
    let out = &r["denials_by_directory"][t.outside.to_str().unwrap()];
    assert_eq!(out["accesses"][0], "create");
    let allowed_by = out["allowed_by"].as_str().unwrap();
    assert!(allowed_by.starts_with(&format!("--rw {} (in a policy: additional_writes", t.outside.display())), "{out}");
    let text = Command::new(interpose()).arg("report").arg(&trail).output().unwrap();
    assert!(stdout(&text).contains("allowed by: nothing: a carve-out of the surface"), "{}", stdout(&text));
}

#[test]
fn verify_catches_deleted_edited_and_truncated_trails() {
    let Some(t) = kernel_tree() else { return };
    let trail = audited_run(&t);
    let verify = |text: &str| {
        let f = t.outside.join("check.jsonl");
        std::fs::write(&f, text).unwrap();
        let o = Command::new(interpose()).args(["report", "--verify"]).arg(&f).output().unwrap();
        (o.status.code(), stdout(&o))
    };
    let good = std::fs::read_to_string(&trail).unwrap();
    assert_eq!(verify(&good).0, Some(0));
    let lines: Vec<&str> = good.lines().collect();
    assert!(lines.len() > 4);
    let deleted = [&lines[..2], &lines[3..]].concat().join("\n") + "\n";
    let (code, out) = verify(&deleted);
    assert_eq!(code, Some(1));
    assert!(out.contains("line 3: the chain is broken"), "{out}");
    let edited = good.replacen("/etc/shadow", "/etc/hosts!", 1);
    assert_eq!(verify(&edited).0, Some(1));
    let unanchored = lines[..lines.len() - 1].join("\n") + "\n";
    let (code, out) = verify(&unanchored);
    assert_eq!(code, Some(1));
    assert!(out.contains("no anchor"), "{out}");
    let truncated = lines[..lines.len() - 2].join("\n") + "\n";
    let (code, out) = verify(&truncated);
    assert_eq!(code, Some(1));
    assert!(out.contains("without a session_end"), "{out}");
    // Read by someone whose HOME holds no key (another user, a CI job):
    // the key is not found, the chain is said to be intact, and nothing
    // suggests the trail was tampered with.
    let other = t.outside.join("other-home");
    std::fs::create_dir(&other).unwrap();
    let o = Command::new(interpose()).args(["report", "--verify"]).arg(&trail).env("HOME", &other).output().unwrap();
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("the chain is intact") && out.contains("No such file"), "{out}");
    assert!(out.contains("pass the key with --audit-key"), "{out}");
    assert!(!out.contains("rewritten") && !out.contains("broken") && !out.contains("tamper"), "{out}");
}

#[test]
fn why_names_the_deciding_entry() {
    let t = Tree::new();
    let why = |args: &[&str]| {
        let o = Command::new(interpose()).arg("why").args(args).output().unwrap();
        (o.status.code(), stdout(&o))
    };
    let (code, out) = why(&["/etc/shadow"]);
    assert_eq!(code, Some(1));
    assert!(out.contains("deny /etc/shadow") && out.contains("carve-out"), "{out}");
    let new = t.ws.join("new-file");
    let (code, out) = why(&["--write", new.to_str().unwrap()]);
    assert_eq!(code, Some(1));
    assert!(out.contains(&format!("would be allowed by: --rw {}", t.ws.display())), "{out}");
    let (code, out) = why(&["--rw", t.ws.to_str().unwrap(), "--write", new.to_str().unwrap()]);
    assert_eq!(code, Some(0));
    assert!(out.contains(&format!("rw {} (flag --rw", t.ws.display())), "{out}");
    let (code, _) = why(&["--exec", "/usr/bin/env"]);
    assert_eq!(code, Some(0));
}

fn records(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn denials_say_where_they_came_from_and_execs_draw_the_tree() {
    let Some(t) = kernel_tree() else { return };
    let trail = audited_run(&t);
    let all = records(&trail);
    let shadow = all.iter().find(|r| r["path"] == "/etc/shadow").unwrap();
    assert_eq!(shadow["comm"], "cat");
    assert_eq!(shadow["cwd"], t.ws.to_str().unwrap());
    let ancestors: Vec<&str> = shadow["ancestors"].as_array().unwrap().iter().map(|a| a[1].as_str().unwrap()).collect();
    assert_eq!(ancestors, ["cat", "sh"], "{shadow}");
    assert!(shadow["code"].as_str().unwrap().contains("libc.so"), "the open came from libc: {shadow}");
    let cat =
        all.iter().find(|r| r["type"] == "exec" && r["argv"][0] == "cat" && r["argv"][1] == "/etc/shadow").unwrap();
    assert_eq!(cat["program"], "/usr/bin/cat");
    assert_eq!(cat["pid"], shadow["pid"]);
    let sh = all.iter().find(|r| r["type"] == "exec" && r["argv"][0] == "/bin/sh").unwrap();
    assert_eq!(cat["ppid"], sh["pid"], "the tree links cat to its shell");
    let tree = Command::new(interpose()).arg("report").arg(&trail).output().unwrap();
    assert!(stdout(&tree).contains("cat /etc/shadow  ("), "{}", stdout(&tree));
}

#[test]
fn an_exec_record_keeps_the_first_arguments_each_cut_and_says_so() {
    let Some(t) = kernel_tree() else { return };
    let trail = t.outside.join("argv.jsonl");
    // 73 arguments: an empty one, one of 600 bytes, then numbers.
    let script = "import os; os.execv('/usr/bin/true', ['true', '', 'a' * 600] + [str(i) for i in range(70)])";
    let o = t.command(&["--audit", trail.to_str().unwrap()], &["python3", "-c", script]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let all = records(&trail);
    let true_ = all.iter().find(|r| r["type"] == "exec" && r["argv"][0] == "true").expect("the exec of true");
    let argv: Vec<&str> = true_["argv"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    let mut expected = vec!["true".to_string(), String::new(), "a".repeat(512)];
    expected.extend((0..61).map(|i| i.to_string()));
    assert_eq!(argv, expected, "the first 64 arguments, each at most 512 bytes");
    assert_eq!(true_["argv_truncated"], true);
    let python = all.iter().find(|r| r["type"] == "exec" && r["argv"][0] == "python3").expect("the exec of python3");
    assert_eq!(python["argv"], serde_json::json!(["python3", "-c", script]));
    assert_eq!(python["argv_truncated"], false);
    // The exec of true was made by the python3 process, whose parent made
    // python3.
    assert_eq!(true_["pid"], python["pid"]);
    assert_eq!(true_["ppid"], python["ppid"]);
}

#[test]
fn audit_level_deny_keeps_only_denials() {
    let Some(t) = kernel_tree() else { return };
    let trail = t.outside.join("deny.jsonl");
    let o = t
        .command(
            &["--audit", trail.to_str().unwrap(), "--audit-level", "deny"],
            &["/bin/sh", "-c", "cat /etc/shadow; cat $RO/data.txt"],
        )
        .output()
        .unwrap();
    assert!(o.status.success());
    let all = records(&trail);
    let kinds: Vec<&str> = all.iter().map(|r| r["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["session_start", "decision", "session_end", "anchor"], "{all:?}");
    assert_eq!(all[1]["path"], "/etc/shadow");
}

#[test]
fn a_command_killed_by_sigkill_still_leaves_a_complete_trail() {
    let Some(t) = kernel_tree() else { return };
    let trail = t.outside.join("killed.jsonl");
    let o = t
        .command(
            &["--audit", trail.to_str().unwrap()],
            &["/bin/sh", "-c", "cat /etc/shadow; kill -KILL $$; echo never"],
        )
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(128 + 9));
    let all = records(&trail);
    assert_eq!(all.last().unwrap()["type"], "anchor");
    let end = &all[all.len() - 2];
    assert_eq!(end["type"], "session_end");
    assert_eq!(end["exit_status"], 137);
    assert!(all.iter().any(|r| r["path"] == "/etc/shadow" && r["decision"] == "deny"));
    let v = Command::new(interpose()).args(["report", "--verify"]).arg(&trail).output().unwrap();
    assert_eq!(v.status.code(), Some(0), "{}", stdout(&v));
}

/// The flags `report --suggest` prints (its lines that are not comments).
fn suggested(trail: &std::path::Path, confirm: bool) -> Vec<String> {
    let mut cmd = Command::new(interpose());
    cmd.args(["report", "--suggest", "--as", "flags"]).arg(trail);
    if confirm {
        cmd.arg("--confirm-credentials");
    }
    let out = stdout(&cmd.output().unwrap());
    out.lines().filter(|l| !l.starts_with('#')).flat_map(|l| l.split_whitespace().map(String::from)).collect()
}

/// The object a decision was made on: `resolved`, written where it is not
/// `path`.
fn subject(r: &serde_json::Value) -> &str {
    r.get("resolved").unwrap_or(&r["path"]).as_str().unwrap()
}

fn denials(trail: &std::path::Path) -> Vec<String> {
    records(trail)
        .iter()
        .filter(|r| r["decision"] == "deny")
        .map(|r| format!("{} {}", r["access"].as_str().unwrap(), subject(r)))
        .collect()
}

/// `--learn` records what would be denied; `--suggest` turns it into flags
/// under which the same command runs without denials, except a credential it
/// touched, which needs `--confirm-credentials`; `replay` shows exactly what
/// a tightened surface would deny.
#[test]
fn learn_suggest_and_replay() {
    let Some(t) = kernel_tree() else { return };
    let (data, out, ssh) = (t.outside.join("data"), t.outside.join("out"), t.outside.join("home/.ssh"));
    for d in [&data, &out, &ssh] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(data.join("a"), "a\n").unwrap();
    std::fs::write(data.join("b"), "b\n").unwrap();
    std::fs::write(ssh.join("id_rsa"), "KEY\n").unwrap();
    let script = "cat $OUT/data/a $OUT/data/b $OUT/home/.ssh/id_rsa > /dev/null && echo x > $OUT/out/new";
    let run = |extra: &[String], trail: &std::path::Path| {
        let _ = std::fs::remove_file(out.join("new"));
        let mut args: Vec<&str> = extra.iter().map(String::as_str).collect();
        args.extend(["--audit", trail.to_str().unwrap()]);
        t.command(&args, &["/bin/sh", "-c", script]).output().unwrap()
    };

    let learned = t.outside.join("learn.jsonl");
    let o = run(&["--learn".to_string()], &learned);
    assert!(o.status.success(), "learning enforces nothing: {}", stderr(&o));
    assert!(records(&learned).iter().any(|r| r["decision"] == "would_deny"));

    let flags = suggested(&learned, false);
    assert!(!flags.iter().any(|f| f.contains(".ssh")), "no credential without confirmation: {flags:?}");
    let second = t.outside.join("second.jsonl");
    run(&flags, &second);
    assert_eq!(denials(&second), [format!("read {}", ssh.join("id_rsa").display())], "only the credential is denied");

    // The same as a policy file.
    let policy = |confirm: bool| {
        let mut cmd = Command::new(interpose());
        cmd.args(["report", "--suggest"]).arg(&learned);
        if confirm {
            cmd.arg("--confirm-credentials");
        }
        let text = stdout(&cmd.output().unwrap());
        let file = t.outside.join(format!("suggested-{confirm}.toml"));
        std::fs::write(&file, &text).unwrap();
        (file, text)
    };
    let (file, text) = policy(false);
    assert!(text.contains("# WARNING: not suggested: a credential location"), "{text}");
    let fourth = t.outside.join("fourth.jsonl");
    run(&["--policy".into(), file.display().to_string()], &fourth);
    assert_eq!(denials(&fourth), [format!("read {}", ssh.join("id_rsa").display())], "{text}");
    let (file, text) = policy(true);
    let fifth = t.outside.join("fifth.jsonl");
    let o = run(&["--policy".into(), file.display().to_string()], &fifth);
    assert!(o.status.success(), "{text}: {}", stderr(&o));
    assert_eq!(denials(&fifth), Vec::<String>::new(), "{text}");

    let confirmed = suggested(&learned, true);
    let third = t.outside.join("third.jsonl");
    let o = run(&confirmed, &third);
    assert!(o.status.success(), "{confirmed:?}: {}", stderr(&o));
    assert_eq!(denials(&third), Vec::<String>::new(), "{confirmed:?}");

    // Tighten: the same flags without data/b.
    let b = data.join("b").display().to_string();
    let mut tightened = confirmed.clone();
    let at = tightened.iter().position(|f| *f == b).expect("data/b was suggested on its own");
    tightened.drain(at - 1..=at);
    // The recorded runs also had the tree's own --rw and --ro.
    let base = ["--rw", t.ws.to_str().unwrap(), "--ro", t.ro.to_str().unwrap()];
    let o = Command::new(interpose()).arg("replay").arg(&third).args(base).args(&tightened).output().unwrap();
    let lines: Vec<String> = stdout(&o).lines().skip(1).map(String::from).collect();
    assert_eq!(lines[0], format!("newly denied: read {b} (1x)"), "{}", stderr(&o));
    assert!(lines[1].starts_with("replay: 1 access(es) newly denied, 0 newly allowed"), "{lines:?}");
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(o.status.code(), Some(1), "a CI gate: newly denied fails");
    let o = Command::new(interpose()).arg("replay").arg(&third).args(base).args(&confirmed).output().unwrap();
    assert!(stdout(&o).contains("no change"), "{}", stdout(&o));
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn the_trail_streams_to_a_unix_socket() {
    if !kernel_ok() {
        return;
    }
    use std::io::Read;
    let t = Tree::new();
    let socket = t.outside.join("audit.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let reader = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut text = String::new();
        conn.read_to_string(&mut text).unwrap();
        text
    });
    let o = t
        .command(&["--audit", &format!("unix:{}", socket.display())], &["/bin/sh", "-c", "cat /etc/shadow; true"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = reader.join().unwrap();
    let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.first().unwrap()["type"], "session_start");
    assert_eq!(lines[lines.len() - 2]["type"], "session_end");
    assert_eq!(lines.last().unwrap()["type"], "anchor");
    assert!(lines.iter().any(|r| r["path"] == "/etc/shadow" && r["decision"] == "deny"));
}

#[test]
fn records_name_the_starting_directory_and_the_surface_digest() {
    let Some(t) = kernel_tree() else { return };
    let trail = t.outside.join("dirfd.jsonl");
    // A symlink whose target ends with the same names as the path written
    // (ws/d -> ro/d, then `d/x`): the starting directory is still ws.
    std::fs::create_dir(t.ro.join("d")).unwrap();
    std::fs::write(t.ro.join("d/x"), "x\n").unwrap();
    std::os::unix::fs::symlink(t.ro.join("d"), t.ws.join("d")).unwrap();
    // A relative path whose last component is a symlink (ws/lk -> ro/y):
    // the record names the file opened, not the link.
    std::fs::write(t.ro.join("y"), "y\n").unwrap();
    std::os::unix::fs::symlink(t.ro.join("y"), t.ws.join("lk")).unwrap();
    // O_CREAT of a file already there writes it: recorded as a write.
    std::fs::write(t.ws.join("w.txt"), "w\n").unwrap();
    let script = "import os\nfd = os.open(os.environ['RO'], os.O_RDONLY)\nos.open('data.txt', os.O_RDONLY, dir_fd=fd)\nos.open('d/x', os.O_RDONLY)\nos.open('lk', os.O_RDONLY)\nos.open('w.txt', os.O_WRONLY | os.O_CREAT)\nprint(fd)";
    let o = t.command(&["--audit", trail.to_str().unwrap()], &["/usr/bin/python3", "-c", script]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let fd: i64 = stdout(&o).trim().parse().unwrap();
    let all = records(&trail);
    let rel = all.iter().find(|r| r["path"] == "data.txt").expect("the relative open");
    assert_eq!(rel["dirfd"], fd);
    assert_eq!(rel["dirfd_path"], t.ro.to_str().unwrap());
    assert_eq!(rel["resolved"], t.ro.join("data.txt").to_str().unwrap());
    let linked = all.iter().find(|r| r["path"] == "d/x").expect("the open through the link");
    assert_eq!(linked["resolved"], t.ro.join("d/x").to_str().unwrap());
    assert_eq!(linked["dirfd_path"], t.ws.to_str().unwrap(), "the directory it started from, not the link's");
    let last = all.iter().find(|r| r["path"] == "lk").expect("the open of the link");
    assert_eq!(last["resolved"], t.ro.join("y").to_str().unwrap(), "{last}");
    assert_eq!(last["dirfd_path"], t.ws.to_str().unwrap());
    let created = all.iter().find(|r| r["path"] == "w.txt").expect("the O_CREAT open");
    assert_eq!(created["access"], "write", "{created}");
    assert_eq!(created["resolved"], t.ws.join("w.txt").to_str().unwrap());
    // The same flags give the same digest; other flags another.
    let runs = std::cell::Cell::new(0);
    let digest = |extra: &[&str]| {
        runs.set(runs.get() + 1);
        let trail = t.outside.join(format!("digest-{}.jsonl", runs.get()));
        let mut args = vec!["--audit", trail.to_str().unwrap()];
        args.extend(extra);
        assert!(t.command(&args, &["/bin/true"]).status().unwrap().success());
        records(&trail)[0]["surface_digest"].as_str().unwrap().to_string()
    };
    assert_eq!(all[0]["surface_digest"].as_str().unwrap(), digest(&[]));
    assert_ne!(digest(&[]), digest(&["--ro", t.outside.to_str().unwrap()]));
}

/// `report --html` writes one self-contained page; headless Chromium renders
/// its process tree, timeline and table, and a screenshot is kept in
/// `target/report-screenshot.png`.
#[test]
fn the_html_report_renders_in_chromium() {
    let Some(t) = kernel_tree() else { return };
    let trail = t.outside.join("trail.jsonl");
    // A name that would end a <script> element if it were not escaped.
    std::fs::create_dir(t.outside.join("x<")).unwrap();
    let o = t
        .command(
            &["--audit", trail.to_str().unwrap()],
            &[
                "/bin/sh",
                "-c",
                "cat /etc/shadow; touch \"$OUT/x</script><b>y\"; sh -c 'ls /root; cat $OUT/secret'; \
                 curl -sS -o /dev/null https://blocked.example/ 2>/dev/null; \
                 /bin/echo argument-of-a-very-long-command-line-that-the-reports-shorten-to-eighty-characters >/dev/null",
            ],
        )
        .output()
        .unwrap();
    assert_eq!(stderr(&o).matches("Permission denied").count(), 4, "{}", stderr(&o));
    let html = t.outside.join("report.html");
    let r = Command::new(interpose()).arg("report").arg(&trail).arg("--html").arg(&html).output().unwrap();
    assert!(r.status.success(), "{}", stderr(&r));
    let page = std::fs::read_to_string(&html).unwrap();
    assert_eq!(page.matches("</script>").count(), 2, "only the page's own two script elements end");
    assert!(!page.contains(" src=") && !page.contains(" href="), "no external assets");
    let leftovers: Vec<_> = std::fs::read_dir(&t.outside)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // An existing page is never overwritten without --force.
    std::fs::write(&html, "an earlier page\n").unwrap();
    let again = Command::new(interpose()).arg("report").arg(&trail).arg("--html").arg(&html).output().unwrap();
    assert_eq!(again.status.code(), Some(125), "{}", stderr(&again));
    assert!(stderr(&again).contains("exists; not overwritten (--force replaces it)"), "{}", stderr(&again));
    assert_eq!(std::fs::read_to_string(&html).unwrap(), "an earlier page\n");
    let forced =
        Command::new(interpose()).arg("report").arg(&trail).args(["--force", "--html"]).arg(&html).output().unwrap();
    assert!(forced.status.success(), "{}", stderr(&forced));
    assert_eq!(std::fs::read_to_string(&html).unwrap(), page);
    // The text report counts time from the session's start, as the page does.
    let text = stdout(&r);
    let etc = text.lines().find(|l| l.trim_end().ends_with("/etc  [read]")).unwrap_or_else(|| panic!("{text}"));
    let first = etc.split_whitespace().nth(1).unwrap().split('-').next().unwrap().to_string();
    assert!(text.contains("…  ("), "a long command line is shortened: {text}");

    let chromium = std::path::Path::new("/usr/bin/chromium");
    if !chromium.exists() {
        assert!(std::env::var_os("INTERPOSE_REQUIRE_CHROMIUM").is_none(), "run `cargo xtask chromium` first");
        cannot_run("no /usr/bin/chromium; `cargo xtask chromium` installs it");
        return;
    }
    let browse = |extra: &[&str]| {
        let profile = tempfile::tempdir().unwrap();
        let out = Command::new(chromium)
            .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"])
            .args(["--disable-background-networking", "--disable-component-update", "--disable-sync"])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .args(extra)
            .arg(format!("file://{}", html.display()))
            .output()
            .unwrap();
        assert!(out.status.success(), "chromium: {}", stderr(&out));
        out
    };
    let dom = stdout(&browse(&["--dump-dom"]));
    assert!(dom.contains("data-rendered=\"yes\""), "the page's script did not finish:\n{dom}");
    // The tree: the shell, its children, the nested shell's children.
    for label in ["sh (", "cat (", "ls ("] {
        assert!(dom.contains(label), "process tree lacks {label}:\n{dom}");
    }
    let n = records(&trail).iter().filter(|r| r["type"] == "decision" && r["decision"] == "deny").count();
    assert!(n >= 4);
    assert!(dom.contains(&format!("{n} of {n} shown")), "{dom}");
    assert_eq!(dom.matches("<circle").count(), n, "one timeline mark per denial");
    assert!(dom.contains("/etc/shadow") && dom.contains("x&lt;/script&gt;&lt;b&gt;y"), "{dom}");
    assert!(dom.contains(&format!("<td>{first}</td>")), "the text's time {first} is the page's:\n{dom}");
    assert!(dom.contains("<h2>Hosts</h2>") && dom.contains("blocked.example:443"), "{dom}");
    assert!(dom.contains("eighty-characters\">") && dom.contains("…</span>"), "argv shortened, whole on hover:\n{dom}");
    let shot = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report-screenshot.png");
    let _ = std::fs::remove_file(&shot);
    browse(&["--window-size=1100,1300", &format!("--screenshot={}", shot.display())]);
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG") && png.len() > 20_000, "screenshot of {} bytes", png.len());
}

/// A trail inside the writable workspace, and the key that anchors it (here
/// in the workspace too, through XDG_STATE_HOME): the command can neither
/// read, replace, rename, link nor remove them, and a chain it writes
/// itself does not verify.
#[test]
fn the_command_cannot_reach_its_trail_or_forge_one() {
    let Some(t) = kernel_tree() else { return };
    let trail = t.ws.join("trail.jsonl");
    let key = t.ws.join("state/interpose/audit.key");
    let script = "for f in trail.jsonl state/interpose/audit.key; do \
                    cat $f >/dev/null 2>&1 && echo read $f; \
                    rm -f $f 2>/dev/null && echo removed $f; \
                    mv $f moved 2>/dev/null && echo renamed $f; \
                    ln $f linked 2>/dev/null && echo linked $f; \
                    echo forged 2>/dev/null > $f && echo wrote $f; \
                  done; mv state elsewhere 2>/dev/null && echo moved the directory; true";
    let o = t
        .command(&["--audit", trail.to_str().unwrap()], &["/bin/sh", "-c", script])
        .env("XDG_STATE_HOME", t.ws.join("state"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "", "the command reached the trail or its key");
    assert!(key.exists());
    let verify = |file: &std::path::Path| {
        let o = Command::new(interpose())
            .args(["report", "--verify", "--audit-key", key.to_str().unwrap(), file.to_str().unwrap()])
            .output()
            .unwrap();
        (o.status.code(), stdout(&o))
    };
    let (code, out) = verify(&trail);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("anchored with key"), "{out}");
    // What a program that could write the file would do: edit a record and
    // rebuild the chain after it (without the key, the anchor cannot be).
    use interpose::audit::{chain::chained_line, line_hash, Record};
    let text = std::fs::read_to_string(&trail).unwrap();
    let mut prev = "0".repeat(64);
    let mut forged = String::new();
    for line in text.replace("/etc/ld.so.cache", "/etc/ld.so.cach!").lines() {
        let record: Record = serde_json::from_str(line).unwrap();
        let line = chained_line(&record, &prev).unwrap();
        prev = line_hash(line.as_bytes());
        forged.push_str(&line);
        forged.push('\n');
    }
    let copy = t.outside.join("forged.jsonl");
    std::fs::write(&copy, &forged).unwrap();
    let (code, out) = verify(&copy);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("does not verify"), "{out}");
    // A record added after the anchor, chained to it.
    let last = text.lines().last().unwrap();
    let record: Record = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
    let appended = format!("{text}{}\n", chained_line(&record, &line_hash(last.as_bytes())).unwrap());
    std::fs::write(&copy, appended).unwrap();
    let (code, out) = verify(&copy);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("after the anchor"), "{out}");
}

/// A session without `--audit` makes the key too, and keeps it out of
/// reach: a command whose surface covers the key's place cannot plant a key
/// of its own there for a later audited session to sign with.
#[test]
fn no_session_can_plant_the_trail_key() {
    let Some(t) = kernel_tree() else { return };
    let state = t.ws.join("state");
    let key = state.join("interpose/audit.key");
    let plant =
        "mkdir -p state/interpose 2>/dev/null; echo planted-key-planted-key-planted-key > state/interpose/audit.key \
                 && echo planted; cat state/interpose/audit.key >/dev/null 2>&1 && echo read; true";
    let o = t.command(&[], &["/bin/sh", "-c", plant]).env("XDG_STATE_HOME", &state).output().unwrap();
    assert_eq!(stdout(&o), "", "{}", stderr(&o));
    let made = std::fs::read(&key).unwrap();
    assert_eq!(made.len(), 32, "the key interpose made, not the command's");
    // Natively the same script plants one where there is none.
    let native_state = t.outside.join("state");
    let o = Command::new("/bin/sh").args(["-c", plant]).current_dir(&t.outside).output().unwrap();
    assert!(stdout(&o).contains("planted"), "{}", stderr(&o));
    assert!(native_state.join("interpose/audit.key").exists());
}

/// The walk of `/etc` keeps its listings between sessions, and a kept
/// listing hides from it any name it leaves out: no session can read,
/// replace, rename or remove them, or plant the temporary file a session
/// renames into place, even one whose surface covers their directory, with
/// or without the system surface (the walk is not its only reader: the
/// next session's is).
#[test]
fn no_session_can_plant_the_listings_of_etc() {
    let Some(t) = kernel_tree() else { return };
    let kept = interpose::policy::listings::default_path().expect("this user is in /etc/passwd");
    let dir = kept.parent().unwrap();
    let state = dir.parent().and_then(Path::parent).unwrap();
    let attempts = |f: &Path| {
        format!(
            "f={}; d=$(dirname $f); cat $f >/dev/null 2>&1 && echo read; \
             echo forged 2>/dev/null >> $f && echo wrote; \
             echo forged 2>/dev/null > $d/.etc-listings.1 && echo planted; \
             ln -sf /dev/null $d.new 2>/dev/null; mv -f $d.new $f 2>/dev/null && echo replaced; \
             mv $f $f.old 2>/dev/null && echo renamed && mv $f.old $f; \
             mv $d $d.old 2>/dev/null && echo moved && mv $d.old $d; \
             rm $f 2>/dev/null && echo removed; true",
            f.display()
        )
    };
    let mut without_system = vec!["--no-system", "--ro", "/usr", "--rw", "/dev/null"];
    if std::fs::symlink_metadata("/lib64").is_ok_and(|m| m.is_dir()) {
        without_system.extend(["--ro", "/lib64"]);
    }
    for extra in [&[][..], &without_system[..]] {
        let flags = [&["--rw", state.to_str().unwrap()][..], extra].concat();
        let o = t.command(&flags, &["/usr/bin/sh", "-c", &attempts(&kept)]).output().unwrap();
        let _ = std::fs::remove_file(dir.with_extension("new"));
        assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
        assert_eq!(stdout(&o), "", "{extra:?}: the command reached the kept listings");
    }
    let text = std::fs::read(&kept).unwrap();
    assert!(text.starts_with(b"interpose etc listings 1\n") && text.ends_with(b"\0"), "not interpose's own");
    assert!(!dir.join(".etc-listings.1").exists());
    // Natively the same script does all of it (on a copy).
    let copy = t.outside.join("walk/etc-listings");
    std::fs::create_dir(copy.parent().unwrap()).unwrap();
    std::fs::write(&copy, &text).unwrap();
    let o = Command::new("/bin/sh").args(["-c", &attempts(&copy)]).output().unwrap();
    assert_eq!(stdout(&o), "read\nwrote\nplanted\nreplaced\nrenamed\nmoved\nremoved\n", "{}", stderr(&o));
}

/// File names and process names come from the sandboxed program: with an
/// escape sequence and a newline in them, `report` prints no control
/// character and `report --suggest` writes no line the program chose (a
/// newline in a comment would start an active grant).
#[test]
fn names_from_the_sandbox_reach_no_terminal_or_policy_raw() {
    let Some(t) = kernel_tree() else { return };
    let trail = t.outside.join("names.jsonl");
    let body = r##"
import ctypes
ctypes.CDLL(None).prctl(15, ctypes.c_char_p(b'e\n]\n"~"#\x1b'), 0, 0, 0)
try:
    open(__import__('os').environ['RO'] + '/\x1b]0;pwned\x07x"]\nadditional_writes = ["~"]\n#', 'w')
except PermissionError:
    print("refused")
"##;
    let o = t.command(&["--audit", trail.to_str().unwrap()], &["/usr/bin/python3", "-c", body]).output().unwrap();
    assert_eq!(stdout(&o), "refused\n", "{}", stderr(&o));
    let run = |args: &[&str]| {
        let o = Command::new(interpose()).args(args).arg(&trail).output().unwrap();
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        o.stdout
    };
    let report = run(&["report"]);
    assert!(!report.contains(&0x1b) && !report.contains(&0x07), "{}", String::from_utf8_lossy(&report));
    assert!(String::from_utf8_lossy(&report).contains("pwned"), "the name is shown, escaped");
    let suggested = run(&["report", "--suggest"]);
    assert!(!suggested.contains(&0x1b));
    let text = String::from_utf8(suggested).unwrap();
    let active: Vec<&str> =
        text.lines().map(|l| l.split('#').next().unwrap().trim()).filter(|l| !l.is_empty()).collect();
    assert!(active.iter().all(|l| !l.contains("\"~\"")), "the program wrote a grant: {text}");
    assert!(active.iter().any(|l| l.contains(t.ro.to_str().unwrap())), "{text}");
    let policy = t.outside.join("suggested.toml");
    std::fs::write(&policy, &text).unwrap();
    let check = Command::new(interpose()).args(["policy", "check"]).arg(&policy).output().unwrap();
    assert!(check.status.success(), "{}", stderr(&check));
}

/// After a refused create in a home that holds credentials, neither `why`
/// nor `report` suggests the home (`--rw $HOME` would hand out `.ssh` and
/// `.aws`): they propose the narrowest pattern covering the denied name,
/// a tool's generated scratch directory here, and say what it does not
/// grant and why.
#[test]
fn suggestions_never_grant_a_tree_that_holds_credentials() {
    let Some(t) = kernel_tree() else { return };
    let home = t.outside.join("home");
    for d in [".ssh", ".aws"] {
        std::fs::create_dir_all(home.join(d)).unwrap();
    }
    let trail = t.outside.join("trail.jsonl");
    let scratch = home.join(".node-spawn-wrap-4211-9f3a");
    let o = t
        .command(&["--audit", trail.to_str().unwrap()], &["/bin/sh", "-c", &format!("mkdir {}", scratch.display())])
        .env("HOME", &home)
        .output()
        .unwrap();
    assert!(!o.status.success(), "the create is refused");
    let why = Command::new(interpose()).args(["why", "--write"]).arg(&scratch).env("HOME", &home).output().unwrap();
    let report = Command::new(interpose()).arg("report").arg(&trail).env("HOME", &home).output().unwrap();
    for (what, out) in [("why", stdout(&why)), ("report", stdout(&report))] {
        let whole = [format!("--rw {}", home.display()), format!("--ro {}", home.display())];
        assert!(
            whole.iter().all(|w| !out.contains(&format!("{w} ")) && !out.contains(&format!("{w}\n"))),
            "{what}: {out}"
        );
        assert!(out.contains("\"$HOME/.node-spawn-wrap-*\""), "{what}: {out}");
        assert!(out.contains("which holds .ssh, .aws"), "{what}: {out}");
    }
}

/// A trail stays small: the same process allowed the same access to the
/// same object again is counted (one `repeats` record at the end), not
/// written again; every refusal is still a record of its own, the chain
/// verifies, and `report` counts every decision.
#[test]
fn repeated_allows_are_counted_and_every_refusal_kept() {
    let Some(t) = kernel_tree() else { return };
    for i in 0..50 {
        std::fs::write(t.ws.join(format!("f{i}")), "x").unwrap();
    }
    let trail = t.outside.join("trail.jsonl");
    let script = "import os\nfor _ in range(40):\n    for i in range(50):\n        open(f'f{i}').close()\n\
                  for _ in range(7):\n    try:\n        open('/etc/shadow')\n    except PermissionError:\n        pass\n";
    let o = t.command(&["--audit", trail.to_str().unwrap()], &["/usr/bin/python3", "-c", script]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let lines = records(&trail);
    let opens: Vec<_> = lines
        .iter()
        .filter(|r| r["type"] == "decision" && r["path"].as_str().is_some_and(|p| p.starts_with('f')))
        .collect();
    assert_eq!(opens.len(), 50, "one record per file: {}", opens.len());
    let denied = lines.iter().filter(|r| r["decision"] == "deny" && r["path"] == "/etc/shadow").count();
    assert_eq!(denied, 7, "every refusal is a record");
    let repeats: Vec<_> = lines.iter().filter(|r| r["type"] == "repeats").collect();
    assert_eq!(repeats.len(), 1);
    let again: u64 = repeats[0]["counts"].as_array().unwrap().iter().map(|c| c[1].as_u64().unwrap()).sum();
    assert!(again >= 50 * 39, "{again}");
    let v = Command::new(interpose()).args(["report", "--verify"]).arg(&trail).output().unwrap();
    assert_eq!(v.status.code(), Some(0), "{}", stdout(&v));
    let r = Command::new(interpose()).args(["report", "--format", "json"]).arg(&trail).output().unwrap();
    let r: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    assert!(r["decisions"].as_u64().unwrap() >= 2000 + 7, "{r}");
    assert_eq!(r["denials"], 7, "{r}");
}

/// A refused connect to a control socket outside the sandbox (a tmux
/// server's here; granting it would let the command run anything outside)
/// is never suggested: not by `why`, not by `report`, not by `report
/// --suggest` even with `--confirm-credentials`; each says what it is.
#[test]
fn control_sockets_are_never_suggested() {
    let Some(t) = kernel_tree() else { return };
    let dir = t.outside.join("tmux-4242");
    std::fs::create_dir(&dir).unwrap();
    let sock = dir.join("default");
    let _server = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let trail = t.outside.join("trail.jsonl");
    let script = format!("import socket\ns = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect({:?})\nexcept OSError as e:\n    print('refused', e.errno)\n", sock.display().to_string());
    let o = t.command(&["--audit", trail.to_str().unwrap()], &["/usr/bin/python3", "-c", &script]).output().unwrap();
    assert!(stdout(&o).contains("refused"), "{}{}", stdout(&o), stderr(&o));
    let why = Command::new(interpose()).args(["why", "--write"]).arg(&sock).output().unwrap();
    let report = Command::new(interpose()).arg("report").arg(&trail).output().unwrap();
    let suggest =
        Command::new(interpose()).args(["report", "--suggest", "--confirm-credentials"]).arg(&trail).output().unwrap();
    for (what, out) in [("why", stdout(&why)), ("report", stdout(&report)), ("suggest", stdout(&suggest))] {
        assert!(out.contains("tmux server's socket"), "{what}: {out}");
        assert!(!out.contains(&format!("--rw {}", dir.display())), "{what}: {out}");
        let granted = out.lines().any(|l| {
            !l.trim_start().starts_with('#')
                && l.contains(&sock.display().to_string())
                && l.contains("additional_writes")
        });
        assert!(!granted, "{what}: {out}");
    }
}

/// What a script reads comes as JSON: `why`, `report --verify` (verified,
/// and whether the chain alone is intact when the key is missing) and
/// `report --suggest` (each grant with its mode, and a withheld one with
/// its reason), with the same exit statuses as the text.
#[test]
fn why_verify_and_suggest_speak_json() {
    let Some(t) = kernel_tree() else { return };
    let json = |args: &[&str], home: Option<&std::path::Path>| {
        let mut c = Command::new(interpose());
        c.args(args);
        if let Some(h) = home {
            c.env("HOME", h);
        }
        let o = c.output().unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{args:?}: {e}: {}{}", stdout(&o), stderr(&o)));
        (o.status.code(), v)
    };
    let ws = t.ws.to_str().unwrap();
    let (code, v) = json(&["why", "--format", "json", "--rw", ws, "/etc/shadow"], None);
    assert_eq!(code, Some(1));
    assert_eq!(v["allowed"], false);
    assert_eq!(v["access"], "read");
    assert!(v["decided_by"].as_str().unwrap().contains("deny /etc/shadow"), "{v}");
    let (code, v) = json(&["why", "--format", "json", "--write", "--rw", ws, ws], None);
    assert_eq!((code, &v["allowed"], &v["allowed_by"]), (Some(0), &serde_json::json!(true), &serde_json::Value::Null));

    let trail = t.outside.join("trail.jsonl");
    let o = t
        .command(&["--audit", trail.to_str().unwrap()], &["/bin/sh", "-c", "cat $OUT/secret; ls $HOME; true"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let trail = trail.to_str().unwrap();
    let (code, v) = json(&["report", "--verify", "--format", "json", trail], None);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!((&v["verified"], &v["chain_intact"]), (&serde_json::json!(true), &serde_json::json!(true)));
    let other = t.outside.join("other-home");
    std::fs::create_dir(&other).unwrap();
    let (code, v) = json(&["report", "--verify", "--format", "json", trail], Some(&other));
    assert_eq!(code, Some(1), "{v}");
    assert_eq!((&v["verified"], &v["chain_intact"]), (&serde_json::json!(false), &serde_json::json!(true)));
    assert!(v["detail"].as_str().unwrap().contains("--audit-key"), "{v}");

    let (code, v) = json(&["report", "--suggest", "--format", "json", trail], None);
    assert_eq!(code, Some(0), "{v}");
    let grants = v["grants"].as_array().unwrap();
    let secret = t.outside.join("secret");
    let granted = grants.iter().find(|g| g["path"] == secret.to_str().unwrap()).unwrap_or_else(|| panic!("{v}"));
    assert_eq!((&granted["mode"], &granted["withheld"]), (&serde_json::json!("ro"), &serde_json::Value::Null));
    assert!(granted["processes"].as_array().unwrap().contains(&serde_json::json!("cat")), "{v}");
    let home = std::env::var("HOME").unwrap();
    let withheld = grants.iter().find(|g| g["path"] == home.as_str()).unwrap_or_else(|| panic!("{v}"));
    assert!(withheld["withheld"].as_str().unwrap().contains("never suggested whole"), "{v}");
    assert!(v["policy"].as_str().unwrap().contains("additional_reads"), "{v}");
    assert_eq!(v["chain"]["intact"], true);
}

/// A missing name is ENOENT inside the surface or out (as the kernel looks
/// a name up before any permission), whether its directory exists or not,
/// and its record names the path looked up: one lookup finds it missing
/// for a call that creates nothing.
#[test]
fn a_missing_name_is_enoent_everywhere_and_recorded_as_looked_up() {
    let Some(t) = kernel_tree() else { return };
    let trail = t.outside.join("missing.jsonl");
    let script = "import os, errno\n\
        def code(f):\n    try:\n        f(); return 'ok'\n    except OSError as e:\n        return errno.errorcode[e.errno]\n\
        ws, out = os.environ['WS'], os.environ['OUT']\n\
        for p in ['/nonexistent-dir/x', ws + '/no/such/file', ws + '/nofile', out + '/missing', 'rel/missing']:\n\
        \x20   print(code(lambda: os.stat(p)), code(lambda: os.open(p, os.O_RDONLY)))\n\
        print(code(lambda: os.open(ws + '/nodir', os.O_TMPFILE | os.O_WRONLY)))\n\
        print(code(lambda: os.open(ws + '/new', os.O_CREAT | os.O_WRONLY)))";
    let native = std::process::Command::new("/usr/bin/python3")
        .args(["-c", script])
        .env("WS", &t.ws)
        .env("OUT", &t.outside)
        .current_dir(&t.ws)
        .output()
        .unwrap();
    let expected = "ENOENT ENOENT\n".repeat(5) + "ENOENT\nok\n";
    assert_eq!(stdout(&native), expected, "{}", stderr(&native));
    std::fs::remove_file(t.ws.join("new")).unwrap();
    let o = t.command(&["--audit", trail.to_str().unwrap()], &["/usr/bin/python3", "-c", script]).output().unwrap();
    assert_eq!(stdout(&o), expected, "{}", stderr(&o));
    let all = records(&trail);
    let deep = format!("{}/no/such/file", t.ws.display());
    let r = all.iter().find(|r| r["path"] == deep.as_str() && r["syscall"] == "newfstatat").expect("the stat's record");
    assert_eq!(
        (&r["decision"], &r["errno"], &r["rule"]),
        (&"error".into(), &"ENOENT".into(), &"does not exist".into()),
        "{r}"
    );
    let rel = all
        .iter()
        .find(|r| r["path"] == "rel/missing" && r["syscall"] == "newfstatat")
        .expect("the relative stat's record");
    assert_eq!(rel["resolved"], t.ws.join("rel/missing").to_str().unwrap(), "{rel}");
    assert_eq!(rel["errno"], "ENOENT", "{rel}");
}
