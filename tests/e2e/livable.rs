//! What a new user runs into first: the default surface, private package
//! caches, start-up refusals that say why, and the forensic verbs that must
//! not mislead or lose data. Each test uses a home like a developer's.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A developer's home (git identity, an npm and a cargo cache with
/// credentials next to it, an SSH key) and a workspace.
struct Dev {
    _dir: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
    ws: PathBuf,
}

fn dev() -> Dev {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (home, ws) = (root.join("home"), root.join("ws"));
    for d in [".ssh", ".npm/_cacache", ".cargo/registry"] {
        std::fs::create_dir_all(home.join(d)).unwrap();
    }
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(home.join(".gitconfig"), "[user]\n\tname = Dev\n\temail = dev@example.org\n").unwrap();
    std::fs::write(home.join(".ssh/id_rsa"), "PRIVATE KEY\n").unwrap();
    std::fs::write(home.join(".npm/_cacache/index"), "cached\n").unwrap();
    std::fs::write(home.join(".cargo/credentials.toml"), "token = \"secret\"\n").unwrap();
    Dev { _dir: dir, root, home, ws }
}

impl Dev {
    /// `interpose ARGS` in the workspace with this home.
    fn interpose(&self, args: &[&str]) -> Command {
        let mut c = Command::new(interpose());
        c.args(args).current_dir(&self.ws).env("HOME", &self.home).env_remove("LD_LIBRARY_PATH");
        c.envs(TOOLING_VARS.iter().map(|v| (v, ""))).env("PWD", &self.ws);
        c.stdin(std::process::Stdio::null());
        c
    }

    /// `interpose run EXTRA -- sh -c SCRIPT`.
    fn sh(&self, extra: &[&str], script: &str) -> Output {
        let mut args = vec!["run"];
        args.extend(extra);
        args.extend(["--", "/bin/sh", "-c", script]);
        self.interpose(&args).output().unwrap()
    }

    fn trail(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }
}

fn first_record(trail: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(trail).unwrap();
    serde_json::from_str(text.lines().next().unwrap()).unwrap()
}

#[test]
fn flags_alone_read_the_tooling_profile_and_no_credential() {
    if !kernel_ok() {
        return;
    }
    let d = dev();
    let o = d.sh(&["--rw", "."], "git config user.name; cat ~/.ssh/id_rsa; ls ~");
    assert!(stdout(&o).starts_with("Dev\n"), "{}", stderr(&o));
    assert!(!stdout(&o).contains("PRIVATE"), "{}", stdout(&o));
    assert_eq!(stderr(&o).matches("Permission denied").count(), 2, "{}", stderr(&o));
    // Without the profile, git has no identity to read.
    let o = d.sh(&["--rw", ".", "--no-tooling"], "git config user.name || echo none");
    assert_eq!(stdout(&o), "none\n", "{}", stderr(&o));
}

#[test]
fn package_caches_are_private_to_the_session() {
    if !kernel_ok() {
        return;
    }
    let d = dev();
    let trail = d.trail("caches.jsonl");
    let o = d.sh(
        &["--rw", ".", "--audit", trail.to_str().unwrap()],
        "cat ~/.npm/_cacache/index && echo fresh > ~/.npm/_cacache/new && cat ~/.npm/_cacache/new \
         && mkdir -p ~/.cargo/registry/src/evil && echo poisoned > ~/.cargo/registry/src/evil/build.rs \
         && cat ~/.cargo/credentials.toml",
    );
    assert_eq!(stdout(&o), "cached\nfresh\n", "{}", stderr(&o));
    assert!(stderr(&o).contains("credentials.toml: No such file"), "hidden, not merely refused: {}", stderr(&o));
    // The host's caches did not change.
    assert!(!d.home.join(".npm/_cacache/new").exists());
    assert!(!d.home.join(".cargo/registry/src").exists());
    let kept = &first_record(&trail)["caches"];
    let npm = kept.as_array().unwrap().iter().find(|c| c["path"].as_str().unwrap().ends_with("/.npm")).unwrap();
    assert!(npm["kept"].as_str().unwrap().starts_with("overlay"), "{kept}");
    // The user's own grant shares the cache, as asked.
    let npm_dir = d.home.join(".npm");
    let o = d.sh(&["--rw", ".", "--rw", npm_dir.to_str().unwrap()], "echo shared > ~/.npm/_cacache/new");
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(d.home.join(".npm/_cacache/new")).unwrap(), "shared\n");
}

/// An ordinary user gets the same: a user namespace of its own makes the
/// overlays (and a private /dev/shm) possible; without any namespace the
/// caches move to empty private directories and the host's stay read-only.
#[test]
fn ordinary_users_get_private_caches_too() {
    if !kernel_ok() {
        return;
    }
    let root = nix::unistd::geteuid().is_root();
    if !root || !Path::new("/usr/bin/setpriv").exists() {
        assert!(std::env::var_os("INTERPOSE_REQUIRE_KERNEL").is_none(), "CI runs as root with setpriv");
        cannot_run("needs root to switch to nobody, and setpriv");
        return;
    }
    let d = dev();
    for entry in walk(&d.root) {
        std::os::unix::fs::lchown(&entry, Some(65534), Some(65534)).unwrap();
    }
    let script = "cat ~/.npm/_cacache/index; echo x > ~/.npm/_cacache/new && echo wrote; \
                  echo y > \"${npm_config_cache:-/nonexistent}/new\" && echo moved; grep CapEff /proc/self/status";
    let as_nobody = |extra: &[&str], trail: &Path| {
        Command::new("/usr/bin/setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", interpose(), "run", "--rw", "."])
            .args(extra)
            .args(["--audit", trail.to_str().unwrap(), "--", "/bin/sh", "-c", script])
            .current_dir(&d.ws)
            .env("HOME", &d.home)
            .envs(TOOLING_VARS.iter().map(|v| (v, "")))
            .env_remove("npm_config_cache")
            .output()
            .unwrap()
    };
    let trail = d.trail("userns.jsonl");
    let o = as_nobody(&[], &trail);
    assert_eq!(stdout(&o), "cached\nwrote\nCapEff:\t0000000000000000\n", "{}", stderr(&o));
    assert!(!d.home.join(".npm/_cacache/new").exists(), "the host's cache is unchanged");
    assert!(first_record(&trail)["caches"].to_string().contains("overlay"));
    let trail = d.trail("moved.jsonl");
    let o = as_nobody(&["--no-namespace"], &trail);
    assert_eq!(stdout(&o), "cached\nmoved\nCapEff:\t0000000000000000\n", "{}", stderr(&o));
    assert!(stderr(&o).contains("Permission denied"), "the host's cache is read-only: {}", stderr(&o));
    assert!(!d.home.join(".npm/_cacache/new").exists());
    let kept = &first_record(&trail)["caches"];
    assert!(kept.to_string().contains("moved: $npm_config_cache="), "{kept}");
}

/// Under `--user`, a cache moved for the command (the host has none: Go's
/// build cache here) is the command's to make and write: the session's
/// directories on the way to it let that user through. They did not, and
/// `go build` as another user could not make its cache.
#[test]
fn a_command_run_as_another_user_makes_and_writes_its_moved_caches() {
    if !kernel_ok() {
        return;
    }
    if !nix::unistd::geteuid().is_root() {
        cannot_run("--user needs root");
        return;
    }
    let d = dev();
    let script = "mkdir -p \"$GOCACHE/x\" && echo y > \"$GOCACHE/x/f\" && cat \"$GOCACHE/x/f\"; id -u";
    let o = d
        .interpose(&["run", "--rw", ".", "--user", "65534:65534", "--", "/bin/sh", "-c", script])
        .env_remove("GOCACHE")
        .output()
        .unwrap();
    assert_eq!(stdout(&o), "y\n65534\n", "{}", stderr(&o));
}

/// Python's multiprocessing needs POSIX semaphores in /dev/shm: the session
/// has a private one (never the host's, which holds other processes'
/// shared memory).
#[test]
fn multiprocessing_works_on_a_private_dev_shm() {
    if !kernel_ok() {
        return;
    }
    let d = dev();
    let host_segment = format!("/dev/shm/interpose-test-{}", std::process::id());
    std::fs::write(&host_segment, "host's shared memory\n").unwrap();
    let script = format!(
        "import multiprocessing as mp, os\nq = mp.Queue()\np = mp.Process(target=q.put, args=(42,))\np.start()\nprint(q.get())\np.join()\nprint(os.path.exists({host_segment:?}))"
    );
    let o = d.interpose(&["run", "--rw", ".", "--", "/usr/bin/python3", "-c", &script]).output().unwrap();
    let _ = std::fs::remove_file(&host_segment);
    assert_eq!(stdout(&o), "42\nFalse\n", "{}", stderr(&o));
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    if dir.symlink_metadata().is_ok_and(|m| m.is_dir()) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            out.extend(walk(&e.path()));
        }
    }
    out
}

#[test]
fn a_refused_start_names_the_path_the_rule_and_the_fix() {
    if !kernel_ok() {
        return;
    }
    let d = dev();
    let tools = d.root.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    // A native installer's layout: a link on PATH into a versions directory.
    std::fs::copy("/bin/true", tools.join("agent-1.0")).unwrap();
    let bin = d.home.join(".local/bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(tools.join("agent-1.0"), bin.join("agent")).unwrap();
    let o = d.interpose(&["run", "--rw", ".", "--"]).arg(bin.join("agent")).output().unwrap();
    assert_eq!(o.status.code(), Some(126));
    let err = stderr(&o);
    assert!(err.contains(&format!("resolved to {}", tools.join("agent-1.0").display())), "{err}");
    assert!(err.contains("no surface entry covers the path"), "{err}");
    assert!(err.contains(&format!("--ro {}", tools.display())), "{err}");
    // A script whose interpreter is missing.
    std::fs::write(d.ws.join("x.py"), "#!/usr/bin/python9\n").unwrap();
    write_exec(&d.ws.join("x.py"), "#!/usr/bin/python9\n");
    let o = d.interpose(&["run", "--rw", ".", "--", "./x.py"]).output().unwrap();
    assert!(stderr(&o).contains("its interpreter /usr/bin/python9 does not exist"), "{}", stderr(&o));
}

#[test]
fn a_policy_without_extends_has_the_system_surface_unless_it_opts_out() {
    if !kernel_ok() {
        return;
    }
    let d = dev();
    std::fs::write(d.root.join("bare.toml"), "cwd = \".\"\n").unwrap();
    std::fs::write(d.root.join("none.toml"), "cwd = \".\"\nsystem = false\n").unwrap();
    let bare = d.root.join("bare.toml");
    let o = d.interpose(&["run", "--policy", bare.to_str().unwrap(), "--", "cat", "/etc/hostname"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let none = d.root.join("none.toml");
    let o =
        d.interpose(&["run", "--policy", none.to_str().unwrap(), "--", "/bin/cat", "/etc/hostname"]).output().unwrap();
    assert_eq!(o.status.code(), Some(126));
    assert!(stderr(&o).contains("exec of /bin/cat") && stderr(&o).contains("--ro /"), "{}", stderr(&o));
    std::fs::write(d.root.join("both.toml"), "extends = [\"system\"]\nsystem = false\n").unwrap();
    let both = d.root.join("both.toml");
    let o = d.interpose(&["policy", "check", both.to_str().unwrap()]).output().unwrap();
    assert!(stderr(&o).contains("both.toml:2:10: `system = false` contradicts"), "{}", stderr(&o));
}

#[test]
fn a_trail_is_never_overwritten_or_followed() {
    if !kernel_ok() {
        return;
    }
    let d = dev();
    let old = d.trail("old.jsonl");
    std::fs::write(&old, "an earlier session\n").unwrap();
    let o = d.sh(&["--rw", ".", "--audit", old.to_str().unwrap()], "true");
    assert_eq!(o.status.code(), Some(125));
    assert!(stderr(&o).contains("exists; a trail is never overwritten"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&old).unwrap(), "an earlier session\n");
    let link = d.trail("link.jsonl");
    std::os::unix::fs::symlink(&old, &link).unwrap();
    let o = d.sh(&["--rw", ".", "--audit", link.to_str().unwrap()], "true");
    assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&old).unwrap(), "an earlier session\n");
    let o = d.sh(&["--rw", ".", "--audit", "/dev/null"], "true");
    assert!(o.status.success(), "a device holds no trail to lose: {}", stderr(&o));
}

#[test]
fn report_and_replay_refuse_what_is_not_a_trail() {
    let d = dev();
    let file = d.trail("notes.txt");
    std::fs::write(&file, "hello\n").unwrap();
    for verb in [&["report"][..], &["report", "--verify"], &["replay"], &["report", "--suggest"]] {
        let o = d.interpose(verb).arg(&file).output().unwrap();
        assert_eq!(o.status.code(), Some(125), "{verb:?}");
        assert!(stderr(&o).contains("not an interpose audit trail"), "{verb:?}: {}", stderr(&o));
    }
}

#[test]
fn policy_show_and_check_change_nothing() {
    let d = dev();
    let policy = d.root.join("state.toml");
    std::fs::write(&policy, "additional_writes = [\"~/.agent-state/\"]\n").unwrap();
    let show = d.interpose(&["policy", "show", policy.to_str().unwrap()]).output().unwrap();
    assert!(stdout(&show).contains("run creates"), "{}", stdout(&show));
    let check = d.interpose(&["policy", "check", policy.to_str().unwrap()]).output().unwrap();
    assert!(check.status.success(), "{}", stderr(&check));
    let why = d.interpose(&["why", "--policy", policy.to_str().unwrap(), "/etc/passwd"]).output().unwrap();
    assert!(why.status.success(), "{}", stdout(&why));
    assert!(!d.home.join(".agent-state").exists(), "nothing was created");
}

#[test]
fn a_learning_trail_says_so() {
    if !kernel_ok() {
        return;
    }
    let d = dev();
    let trail = d.trail("learn.jsonl");
    let o =
        d.sh(&["--rw", ".", "--learn", "--audit", trail.to_str().unwrap()], "cat ~/.bashrc-missing ~/.profile-x; ls ~");
    assert!(o.status.success() || o.status.code() == Some(1), "{}", stderr(&o));
    assert_eq!(first_record(&trail)["mode"]["name"], "learn");
    let report = d.interpose(&["report"]).arg(&trail).output().unwrap();
    let out = stdout(&report);
    assert!(out.contains("mode:       learn"), "{out}");
    assert!(out.contains("would have been denied under enforcement"), "{out}");
    assert!(out.contains(", 0 denied)"), "{out}");
}

#[test]
fn directories_on_the_way_to_the_surface_can_be_opened_as_paths() {
    if !kernel_ok() {
        return;
    }
    let d = dev();
    std::fs::create_dir_all(d.ws.join("src")).unwrap();
    std::fs::write(d.ws.join("src/f"), "f\n").unwrap();
    let script = "import os\n\
        for p in ['/', os.path.dirname(os.getcwd()), 'src']:\n\
        \x20   os.close(os.open(p, os.O_PATH | os.O_DIRECTORY))\n\
        try:\n\
        \x20   os.open(os.environ['HOME'] + '/.ssh', os.O_PATH)\n\
        \x20   print('opened')\n\
        except PermissionError:\n\
        \x20   print('refused')\n";
    let o = d.interpose(&["run", "--rw", ".", "--", "/usr/bin/python3", "-c", script]).output().unwrap();
    assert_eq!(stdout(&o), "refused\n", "{}", stderr(&o));
    let o = d.interpose(&["run", "--rw", ".", "--", "rsync", "-a", "src/", "copy/"]).output().unwrap();
    if o.status.code() == Some(127) && stderr(&o).contains("rsync") {
        assert!(std::env::var_os("INTERPOSE_REQUIRE_KERNEL").is_none(), "CI installs rsync");
        cannot_run("rsync is not installed");
        return;
    }
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(d.ws.join("copy/f")).unwrap(), "f\n");
}

/// Under the example policy: `git init` works, the hooks of a repository
/// that is there at start cannot be planted or changed, and the key
/// carve-outs refuse keys but not the CA bundles every TLS client needs.
#[test]
fn the_example_policy_carves_out_hooks_and_keys_without_breaking_git_or_tls() {
    if !kernel_ok() {
        return;
    }
    let d = dev();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/coding-agent.toml");
    let policy = ["--policy", example.to_str().unwrap()];
    let o = d.sh(&policy, "git init -q && git commit -q --allow-empty -m first && git log --format=%s");
    assert_eq!(stdout(&o), "first\n", "a repository the agent creates is its own: {}", stderr(&o));
    let o = d.sh(
        &policy,
        "echo evil > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit.sample; \
         git config core.fsmonitor evil; mv .git/hooks .git/h2; echo done",
    );
    assert_eq!(stdout(&o), "done\n");
    assert!(!d.ws.join(".git/hooks/pre-commit").exists(), "{}", stderr(&o));
    assert!(!std::fs::read_to_string(d.ws.join(".git/config")).unwrap().contains("fsmonitor"));
    assert!(d.ws.join(".git/hooks").is_dir());
    std::fs::create_dir_all(d.ws.join("certs")).unwrap();
    std::fs::write(d.ws.join("certs/cacert.pem"), "CERT\n").unwrap();
    std::fs::write(d.ws.join("certs/server.key"), "KEY\n").unwrap();
    std::fs::write(d.ws.join("id_ed25519"), "KEY\n").unwrap();
    let o = d.sh(
        &policy,
        "cat certs/cacert.pem; cat certs/server.key; cat id_ed25519; echo new > certs/new.pem && echo wrote",
    );
    assert_eq!(stdout(&o), "CERT\nwrote\n", "{}", stderr(&o));
    assert_eq!(stderr(&o).matches("Permission denied").count(), 2, "{}", stderr(&o));
}

/// `--suggest` proposes only what a recorded refusal needed, never a home
/// directory that holds credentials, never what a carve-out refused, and
/// `--net connect=` for a refused port.
#[test]
fn suggestions_are_minimal_and_safe() {
    if !kernel_ok() {
        return;
    }
    let d = dev();
    let data = d.root.join("data");
    std::fs::create_dir_all(&data).unwrap();
    for f in ["a", "b", "c"] {
        std::fs::write(data.join(f), "x\n").unwrap();
    }
    std::fs::write(d.home.join("notes"), "n\n").unwrap();
    std::fs::write(d.home.join("todo"), "t\n").unwrap();
    std::fs::write(d.home.join("plan"), "p\n").unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let trail = d.trail("learn.jsonl");
    let script = format!(
        "ls {data} >/dev/null; cat {data}/a {data}/b; cat ~/notes ~/todo ~/plan >/dev/null; \
         echo no > ~/.ssh/id_rsa; python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}))'",
        data = data.display()
    );
    let o = d.sh(&["--rw", ".", "--net", "connect=1", "--learn", "--audit", trail.to_str().unwrap()], &script);
    assert!(trail.exists(), "{}", stderr(&o));
    let flags = d.interpose(&["report", "--suggest", "--as", "flags"]).arg(&trail).output().unwrap();
    let text = stdout(&flags);
    let active: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    // The listing needs the directory; the files in it then need nothing.
    assert!(active.contains(&format!("--ro {}", data.display()).as_str()), "{text}");
    assert!(!active.iter().any(|l| l.contains(&format!("{}/", data.display()))), "minimal: {text}");
    // Three files in the home directory: each on its own, never the home.
    assert!(!active.contains(&format!("--ro {}", d.home.display()).as_str()), "{text}");
    assert!(active.contains(&format!("--ro {}", d.home.join("notes").display()).as_str()), "{text}");
    assert!(!active.iter().any(|l| l.contains(".ssh")), "{text}");
    assert!(active.contains(&format!("--net connect={port}").as_str()), "{text}");
    assert!(!text.contains("tcp:"), "{text}");
}

/// A newline in a process name must not end a comment in the suggested
/// policy and add an active grant.
#[test]
fn sandbox_text_cannot_inject_into_a_suggested_policy() {
    if !kernel_ok() {
        return;
    }
    let d = dev();
    let outside = d.root.join("data");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("f"), "x\n").unwrap();
    let trail = d.trail("inject.jsonl");
    let script = format!(
        "import ctypes\nctypes.CDLL(None).prctl(15, b'x\\nadditional_writes = [\"/\"]', 0, 0, 0)\ntry:\n    open('{}')\nexcept OSError:\n    pass\n",
        outside.join("f").display()
    );
    let o = d
        .interpose(&["run", "--rw", ".", "--audit", trail.to_str().unwrap(), "--", "/usr/bin/python3", "-c", &script])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = d.interpose(&["report", "--suggest"]).arg(&trail).output().unwrap();
    let text = stdout(&out);
    assert!(text.contains("\\u{a}"), "{text}");
    let policy = d.trail("suggested.toml");
    std::fs::write(&policy, &text).unwrap();
    let show = d.interpose(&["policy", "show", policy.to_str().unwrap()]).output().unwrap();
    assert!(show.status.success(), "{}", stderr(&show));
    assert!(!stdout(&show).lines().any(|l| l.starts_with("rw    / ")), "{}", stdout(&show));
    let report = d.interpose(&["report"]).arg(&trail).output().unwrap();
    assert!(!stdout(&report).contains("x\nadditional_writes"), "{}", stdout(&report));
}

/// A program made at run time under a name only a grant pattern covers
/// (nyc 10 writes `~/.node-spawn-wrap-PID-HEX/node` and runs it) is one the
/// Landlock backstop cannot let run: the exec is refused (`EACCES`, as the
/// kernel would), recorded as a refusal that says why (before, the trail
/// called it allowed and the kernel refused it), and named on stderr at the
/// end. Writing there works, as the pattern grants.
#[test]
fn a_program_made_where_only_a_pattern_grants_is_refused_in_words() {
    if !kernel_ok() {
        return;
    }
    let d = dev();
    let policy = d.root.join("scratch.toml");
    std::fs::write(&policy, "additional_writes = [\"~/.scratch-tool-*\", \"~/.scratch-tool-*/**\"]\n").unwrap();
    let trail = d.trail("scratch.jsonl");
    let script = "mkdir ~/.scratch-tool-42 && cp /bin/true ~/.scratch-tool-42/prog && echo written \
                  && ~/.scratch-tool-42/prog; echo exit=$?";
    std::fs::create_dir_all(d.root.join("native")).unwrap();
    let native = Command::new("/bin/sh").args(["-c", script]).env("HOME", d.root.join("native")).output().unwrap();
    assert_eq!(stdout(&native), "written\nexit=0\n", "natively the program runs");
    let o = d.sh(&["--policy", policy.to_str().unwrap(), "--audit", trail.to_str().unwrap()], script);
    assert_eq!(stdout(&o), "written\nexit=126\n", "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("1 exec(s) of a program made after the start where only a grant pattern allows it"), "{err}");
    assert!(err.contains(&format!("exec {}", d.home.join(".scratch-tool-42/prog").display())), "{err}");
    let text = std::fs::read_to_string(&trail).unwrap();
    let exec = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|r| r["syscall"] == "execve" && r["path"].as_str().is_some_and(|p| p.ends_with("/prog")))
        .expect("the exec's record");
    assert_eq!(exec["decision"], "deny", "{exec}");
    assert_eq!(exec["errno"], "EACCES", "{exec}");
    assert!(exec["rule"].as_str().unwrap().contains("backstop (Landlock)"), "{exec}");
}
