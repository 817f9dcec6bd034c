//! Carve-outs: a denied entry inside a granted tree, enforced by the
//! supervisor and, for what the kernel resolves again, by Landlock.

use crate::common::*;
use std::process::Command;

#[test]
fn a_carve_out_in_the_workspace_is_refused_and_the_rest_works() {
    let Some(t) = kernel_tree() else { return };
    std::fs::write(t.ws.join(".env"), "API_KEY=top-secret-marker\n").unwrap();
    std::fs::write(t.ws.join("a"), "a\n").unwrap();
    let deny = t.ws.join(".env");
    let o = t
        .command(
            &["--deny", deny.to_str().unwrap()],
            &[
                "/bin/sh",
                "-c",
                // Everything a build does at the top of a repo, next to the
                // carve-out: new directories, renames, new files, exec.
                "cat .env; echo x >> .env; rm -f .env; mv .env e2; \
                 mkdir new && mv a b && echo hi > n && cat n && rm n && \
                 printf '#!/bin/sh\\necho ran\\n' > x && chmod +x x && ./x && echo done",
            ],
        )
        .output()
        .unwrap();
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(out.contains("hi\nran\ndone"), "stdout: {out}\nstderr: {err}");
    assert!(!out.contains("top-secret-marker"), "{out}");
    assert_eq!(err.matches("Permission denied").count(), 4, "{err}");
    assert_eq!(std::fs::read_to_string(&deny).unwrap(), "API_KEY=top-secret-marker\n");
    assert!(t.ws.join("new").is_dir() && t.ws.join("b").exists() && !t.ws.join("e2").exists());
}

/// Around a carve-out that does not exist yet the kernel makes names only
/// in subdirectories granted at the start (`Grant::NoMake`); everywhere
/// else the supervisor makes them. Everything a build does at the top of
/// a repository works the same, in full and fast mode: names beside the
/// carve-out, in a new directory, in a directory the kernel holds, in one
/// removed and made again under its name (`cargo clean`), through a link
/// back up, unnamed files, renames; and the carve-out is never made.
#[test]
fn names_are_made_everywhere_around_a_carve_out_that_does_not_exist_yet() {
    let Some(t) = kernel_tree() else { return };
    for d in ["target/debug", "src"] {
        std::fs::create_dir_all(t.ws.join(d)).unwrap();
    }
    std::os::unix::fs::symlink("..", t.ws.join("src/up")).unwrap();
    // A dangling link in a subdirectory, to a name beside the carve-out.
    std::os::unix::fs::symlink("../dangling-target", t.ws.join("src/dangling")).unwrap();
    std::fs::write(t.ws.join("Cargo.lock"), "old\n").unwrap();
    let body = "\
import os, shutil
def make(at):
    with open(at, 'w') as f: f.write('x')
    os.mkdir(at + '.d'); os.symlink('x', at + '.l'); os.mkfifo(at + '.p')
    fd = os.open(os.path.dirname(at) or '.', os.O_TMPFILE | os.O_WRONLY, 0o600); os.close(fd)
for at in ['top', 'target/debug/obj', 'src/up/via-link', 'fresh/inner']:
    if at == 'fresh/inner': os.mkdir('fresh')
    attempt(at, lambda: make(at))
shutil.rmtree('target'); os.makedirs('target/debug')
attempt('target again', lambda: make('target/debug/again'))
attempt('truncate existing', lambda: open('Cargo.lock', 'w').write('new'))
attempt('through a dangling link', lambda: open('src/dangling', 'w').write('d'))
attempt('rename up', lambda: os.rename('target/debug/again', 'moved'))
attempt('carve-out', lambda: open('.env', 'w'))
attempt('carve-out dir', lambda: os.mkdir('.env'))
";
    for extra in [&[][..], &["--fast"][..]] {
        let deny = t.ws.join(".env");
        let mut flags = vec!["--deny", deny.to_str().unwrap()];
        flags.extend_from_slice(extra);
        let o = python_attempts(&t, &flags, body);
        let (out, err) = (stdout(&o), stderr(&o));
        let expected = "top ok\ntarget/debug/obj ok\nsrc/up/via-link ok\nfresh/inner ok\ntarget again ok\n\
                        truncate existing ok\nthrough a dangling link ok\nrename up ok\ncarve-out EACCES\n\
                        carve-out dir EACCES\n";
        assert_eq!(out, expected, "{extra:?}: {err}");
        for made in ["top", "target/debug/again.d", "via-link.l", "fresh/inner.p", "moved"] {
            assert!(t.ws.join(made).symlink_metadata().is_ok(), "{extra:?}: {made} was not made");
        }
        assert!(!deny.exists());
        assert_eq!(std::fs::read_to_string(t.ws.join("Cargo.lock")).unwrap(), "new");
        // Again from a clean tree.
        assert_eq!(std::fs::read_to_string(t.ws.join("dangling-target")).unwrap(), "d");
        for made in [
            "top",
            "top.d",
            "top.l",
            "top.p",
            "moved",
            "via-link",
            "via-link.d",
            "via-link.l",
            "via-link.p",
            "dangling-target",
        ] {
            let p = t.ws.join(made);
            let _ = std::fs::remove_dir(&p).or_else(|_| std::fs::remove_file(&p));
        }
        std::fs::remove_dir_all(t.ws.join("fresh")).unwrap();
        std::fs::remove_dir_all(t.ws.join("target")).unwrap();
        std::fs::create_dir_all(t.ws.join("target/debug")).unwrap();
    }
}

#[test]
fn a_carve_out_covers_names_created_after_start() {
    let Some(t) = kernel_tree() else { return };
    std::fs::create_dir(t.ws.join("secrets")).unwrap();
    let deny = t.ws.join("secrets");
    // The file appears while the command runs, written from outside.
    let o = t
        .command(
            &["--deny", deny.to_str().unwrap()],
            &[
                "/bin/sh",
                "-c",
                "while [ ! -e ready ]; do sleep 0.01; done; cat secrets/new; ls secrets; echo x > secrets/mine",
            ],
        )
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::fs::write(t.ws.join("secrets/new"), "top-secret-marker\n").unwrap();
    std::fs::write(t.ws.join("ready"), "").unwrap();
    let o = o.wait_with_output().unwrap();
    let err = stderr(&o);
    assert!(!stdout(&o).contains("top-secret-marker"));
    // Masked by an empty directory in the command's mount namespace (where
    // it has one), the file made later is not there at all; else refused.
    let hidden = err.contains("secrets/new: No such file or directory");
    assert_eq!(err.matches("Permission denied").count() + usize::from(hidden), 3, "{err}");
    assert!(!t.ws.join("secrets/mine").exists());
}

/// The Landlock ruleset on its own keeps carve-outs closed: a read-only tree
/// with a carve-out no longer grants reading everything beneath it, and no
/// other process's /proc entry is granted.
#[test]
fn landlock_alone_keeps_system_carve_outs_closed() {
    if !kernel_ok() {
        return;
    }
    let o = Command::new(interpose())
        .args([
            "debug",
            "landlock",
            "--",
            "/bin/sh",
            "-c",
            "cat /etc/hostname >/dev/null && echo readable; cat /etc/shadow; head -c1 /proc/1/environ",
        ])
        .output()
        .unwrap();
    assert_eq!(stdout(&o), "readable\n", "{}", stderr(&o));
    assert!(stderr(&o).contains("/etc/shadow: Permission denied"), "{}", stderr(&o));
    // The processes that existed when the ruleset was built are not in it.
    assert!(stderr(&o).contains("'/proc/1/environ' for reading: Permission denied"), "{}", stderr(&o));
}

/// A carve-out holds against operations on its ancestors: moving or
/// removing a directory that holds one (or a pattern's base) would carry the
/// protected file to a name the carve-out does not cover.
#[test]
fn moving_a_directory_that_holds_a_carve_out_is_refused() {
    let Some(t) = kernel_tree() else { return };
    for d in ["a/protected", "secrets", ".git/hooks"] {
        std::fs::create_dir_all(t.ws.join(d)).unwrap();
    }
    std::fs::write(t.ws.join("a/protected/key"), "top-secret-marker\n").unwrap();
    std::fs::write(t.ws.join("secrets/token"), "top-secret-marker\n").unwrap();
    std::fs::write(t.ws.join(".git/hooks/pre-commit.sample"), "#!/bin/sh\n").unwrap();
    let policy = t.outside.join("carve.toml");
    std::fs::write(
        &policy,
        format!(
            "cwd = {:?}\ndeny = [\"a/protected\", \"secrets/**\"]\ndeny_writes = [\".git/hooks\", \"config/prod.yml\"]\n",
            t.ws.display()
        ),
    )
    .unwrap();
    std::fs::create_dir(t.ws.join("config")).unwrap();
    std::fs::write(t.ws.join("config/prod.yml"), "kept\n").unwrap();
    let script =
        "mv a b; cat b/protected/key; mv secrets s2; cat s2/token; mv .git .g2; rm -r a; mv config c2; echo done";
    // Natively, the moves carry the files out of the carve-outs' names.
    let native = std::process::Command::new("/bin/sh").args(["-c", script]).current_dir(&t.ws).output().unwrap();
    assert!(stdout(&native).contains("top-secret-marker"), "the attack works natively");
    for (from, to) in [("b", "a"), ("s2", "secrets"), (".g2", ".git"), ("c2", "config")] {
        std::fs::rename(t.ws.join(from), t.ws.join(to)).unwrap();
    }
    for mode in [&[][..], &["--fast"][..]] {
        let mut args = vec!["--policy", policy.to_str().unwrap()];
        args.extend(mode);
        let o = t.command(&args, &["/bin/sh", "-c", script]).output().unwrap();
        assert_eq!(stdout(&o), "done\n", "{mode:?}: {}", stderr(&o));
        assert!(stderr(&o).matches("Permission denied").count() >= 5, "{mode:?}: {}", stderr(&o));
        for kept in ["a/protected/key", "secrets/token", ".git/hooks/pre-commit.sample", "config/prod.yml"] {
            assert!(t.ws.join(kept).exists(), "{mode:?}: {kept} moved or removed");
        }
        // A read-only entry given as a flag (as a settled pattern's match
        // is kept): its directory stays too.
        let ro = t.ws.join("config/prod.yml");
        let mut args = vec!["--ro", ro.to_str().unwrap()];
        args.extend(mode);
        let o = t.command(&args, &["/bin/sh", "-c", "mv config c2; rm -r config; echo done"]).output().unwrap();
        assert_eq!(stdout(&o), "done\n", "{mode:?}: {}", stderr(&o));
        assert!(ro.exists() && !t.ws.join("c2").exists(), "{mode:?}: config moved or removed: {}", stderr(&o));
    }
}

/// The example policy's credential patterns (`**/*.key`) protect the keys
/// that exist when the session starts, not a project's own files: a test
/// key a package manager unpacks during the session is written and read
/// back (npm dropped it silently before, and git clone failed). What a
/// carve-out does refuse is said at the session's end, since a program
/// may go on without it.
#[test]
fn credential_patterns_protect_existing_keys_and_refusals_are_said_aloud() {
    let Some(t) = kernel_tree() else { return };
    std::fs::write(t.ws.join("deploy.key"), "EXISTING-KEY-MARKER\n").unwrap();
    let policy = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/coding-agent.toml");
    let script = "cat deploy.key; mkdir -p test/fixtures && echo fixture > test/fixtures/server.key \
                  && cat test/fixtures/server.key; echo end";
    let o = t.command(&["--policy", policy.to_str().unwrap()], &["/bin/sh", "-c", script]).output().unwrap();
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(!out.contains("EXISTING-KEY-MARKER"), "{out}");
    assert!(out.contains("fixture") && out.contains("end"), "{out}{err}");
    assert_eq!(std::fs::read_to_string(t.ws.join("test/fixtures/server.key")).unwrap(), "fixture\n");
    assert!(err.contains("1 call(s) refused by carve-outs"), "{err}");
    assert!(err.contains(&format!("read {}", t.ws.join("deploy.key").display())), "{err}");
    // A session with nothing refused by a carve-out says nothing.
    let quiet = t.command(&["--policy", policy.to_str().unwrap()], &["/bin/true"]).output().unwrap();
    assert!(!stderr(&quiet).contains("refused by carve-outs"), "{}", stderr(&quiet));
    // A clone of a project that carries a test key works (it failed
    // outright while the pattern refused every new match).
    let src = t.ro.join("project");
    std::fs::create_dir_all(src.join("test")).unwrap();
    std::fs::write(src.join("test/server.key"), "project-test-key\n").unwrap();
    let git = |args: &[&str]| {
        let o = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.org"])
            .args(args)
            .current_dir(&src)
            .output()
            .unwrap();
        assert!(o.status.success(), "git {args:?}: {}", stderr(&o));
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "init"]);
    let clone = format!("git clone -q {} clone && cat clone/test/server.key", src.display());
    let o = t.command(&["--policy", policy.to_str().unwrap()], &["/bin/sh", "-c", &clone]).output().unwrap();
    assert_eq!(stdout(&o), "project-test-key\n", "{}", stderr(&o));
}

/// A workspace's walk for the credential patterns is kept for the next
/// session (in a big workspace it was most of the start), and a kept walk
/// never hides a key: one made since, in a directory the walk had read, is
/// protected by the next session, which reads again only the directories
/// that changed.
#[test]
fn a_kept_walk_of_the_workspace_never_hides_a_key_made_since() {
    let Some(t) = kernel_tree() else { return };
    for n in 0..40 {
        std::fs::create_dir_all(t.ws.join(format!("pkg{n}/src"))).unwrap();
        std::fs::write(t.ws.join(format!("pkg{n}/src/lib.rs")), "").unwrap();
    }
    // A directory is kept only if it had not changed for a while when it
    // was read (a change within the same second could go unseen).
    let settle = interpose::policy::listings::SETTLE_SECS as u64;
    std::thread::sleep(std::time::Duration::from_millis(settle * 1000 + 200));
    let policy = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/coding-agent.toml");
    let run = |script: &str| {
        let o = t
            .command(&["--policy", policy.to_str().unwrap()], &["/bin/sh", "-c", script])
            .env("INTERPOSE_LOG", "interpose::session::surface=debug")
            .output()
            .unwrap();
        let err = stderr(&o);
        let as_kept = err
            .split("as_kept: ")
            .nth(1)
            .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|n| n.parse::<usize>().ok());
        (stdout(&o), as_kept.unwrap_or_else(|| panic!("no walk reported: {err}")), err)
    };
    let (_, first, err) = run("true");
    assert_eq!(first, 0, "a new workspace has no kept walk: {err}");
    std::fs::write(t.ws.join("pkg7/src/late.key"), "LATE-KEY-MARKER\n").unwrap();
    let (out, second, err) = run("cat pkg7/src/late.key; cat pkg8/src/lib.rs && echo end");
    assert!(!out.contains("LATE-KEY-MARKER"), "the kept walk hid the key made since: {out}");
    assert!(out.contains("end") && err.contains("Permission denied"), "{out}{err}");
    // The 40 packages and 39 of their sources were not read again.
    assert!(second >= 79, "the kept walk was not used: {second}; {err}");
    // Natively the key is read.
    let o = Command::new("cat").arg(t.ws.join("pkg7/src/late.key")).output().unwrap();
    assert_eq!(stdout(&o), "LATE-KEY-MARKER\n");
    // The kept walk of this temporary workspace goes with it.
    let kept = interpose::policy::settle::kept_walk(&t.ws.canonicalize().unwrap()).unwrap();
    std::fs::remove_file(&kept).unwrap_or_else(|e| panic!("{}: {e}", kept.display()));
}

/// A merged `/usr`'s links in the root (`/lib -> usr/lib`, `/bin ->
/// usr/bin`) are looked through to where they lead, the place the surface
/// decides: a carve-out there is refused when reached through the link,
/// for a read, a stat and an exec alike, and the trail names the object
/// the kernel would have reached. Natively (the same commands without the
/// sandbox) all three succeed.
#[test]
fn a_carve_out_reached_through_a_link_of_the_root_is_refused_by_its_name() {
    let Some(t) = kernel_tree() else { return };
    let merged = ["/lib", "/bin"].iter().all(|l| std::fs::read_link(l).is_ok_and(|to| to.starts_with("usr")));
    if !merged {
        return cannot_run("/lib and /bin are not links into /usr here (a merged /usr)");
    }
    // A file and a program the system has: only carve-outs are added.
    let (file, program) = ("/usr/lib/os-release", "/usr/bin/true");
    assert!(std::path::Path::new(file).is_file() && std::path::Path::new(program).is_file());
    let script = "cat /lib/os-release > /dev/null; echo cat=$?; stat -c %s /lib/os-release > /dev/null; \
                  echo stat=$?; /bin/true; echo true=$?";
    let native = Command::new("/bin/sh").args(["-c", script]).output().unwrap();
    assert_eq!(stdout(&native), "cat=0\nstat=0\ntrue=0\n");
    let trail = t.outside.join("trail.jsonl");
    let o = t
        .command(&["--deny", file, "--deny", program, "--audit", trail.to_str().unwrap()], &["/bin/sh", "-c", script])
        .output()
        .unwrap();
    assert_eq!(stdout(&o), "cat=1\nstat=1\ntrue=126\n", "{}", stderr(&o));
    let records = std::fs::read_to_string(&trail).unwrap();
    for (path, resolved) in [("/lib/os-release", file), ("/bin/true", program)] {
        let denied = records.lines().any(|l| {
            l.contains("\"decision\":\"deny\"")
                && l.contains(&format!("\"path\":\"{path}\""))
                && l.contains(&format!("\"resolved\":\"{resolved}\""))
        });
        assert!(denied, "no refusal of {path} as {resolved} in the trail:\n{records}");
    }
}
