//! Policy files on real runs: every field and rule kind enforced, templates
//! and globs checked, the environment sanitized, the session HOME made and
//! removed.

use crate::common::*;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// A workspace `repo` with a sibling `sib`, a fake home `home`, and a
/// policy file written next to them.
struct Setup {
    tree: Tree,
    repo: PathBuf,
    sib: PathBuf,
    home: PathBuf,
    policy: PathBuf,
}

impl Setup {
    fn new(policy: &str) -> Setup {
        let tree = Tree::new();
        let root = tree.ws.clone();
        let (repo, sib, home) = (root.join("repo"), root.join("sib"), root.join("home"));
        for d in [&repo, &sib, &home] {
            std::fs::create_dir(d).unwrap();
        }
        std::fs::write(sib.join("README"), "sibling\n").unwrap();
        std::fs::write(home.join(".gitconfig"), "[user]\n\tname = t\n").unwrap();
        let policy_path = tree.outside.join("agent.toml");
        std::fs::write(&policy_path, policy).unwrap();
        Setup { tree, repo, sib, home, policy: policy_path }
    }

    /// `interpose run --policy P EXTRA -- sh -c SCRIPT` in `repo` with
    /// `HOME` set to the fake home.
    fn command(&self, extra: &[&str], script: &str) -> Command {
        let mut c = Command::new(interpose());
        c.arg("run").arg("--policy").arg(&self.policy).args(extra).args(["--", "/bin/sh", "-c", script]);
        c.current_dir(&self.repo).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        c.env_remove("LD_LIBRARY_PATH").env("PWD", &self.repo).env("HOME", &self.home).env_remove("GOPATH");
        c.env("OUT", &self.tree.outside);
        c
    }

    fn sh(&self, extra: &[&str], script: &str) -> Output {
        self.command(extra, script).output().expect("run interpose")
    }
}

fn denials(o: &Output) -> usize {
    stderr(o).matches("Permission denied").count()
}

#[test]
fn sibling_reads_are_readable_not_writable() {
    if !kernel_ok() {
        return;
    }
    let s = Setup::new("extends = [\"system\"]\nsibling_reads = [\"../sib\"]\n");
    let o = s.sh(&[], "cat ../sib/README; echo x > ../sib/new; rm ../sib/README; echo mine > own && cat own");
    assert_eq!(stdout(&o), "sibling\nmine\n", "{}", stderr(&o));
    assert_eq!(denials(&o), 2, "{}", stderr(&o));
    assert!(s.sib.join("README").exists() && !s.sib.join("new").exists());
}

#[test]
fn an_unset_template_is_dropped_and_reported() {
    if !kernel_ok() {
        return;
    }
    let s = Setup::new("extends = [\"system\"]\ntooling_paths = [\"${GOPATH}/pkg/mod\", \"$HOME/.gitconfig\"]\n");
    let trail = s.tree.outside.join("trail.jsonl");
    let o = s.sh(&["--audit", trail.to_str().unwrap()], "cat ~/.gitconfig; ls /pkg/mod");
    assert!(stdout(&o).contains("name = t"), "{}", stderr(&o));
    let start: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(&trail).unwrap().lines().next().unwrap()).unwrap();
    // The policy's own entries (the tooling profile's are listed too).
    let skipped: Vec<&serde_json::Value> = start["policy"]["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["origin"].as_str().unwrap().contains("agent.toml"))
        .collect();
    assert_eq!(skipped.len(), 1, "{start}");
    assert_eq!(skipped[0]["entry"], "${GOPATH}/pkg/mod");
    assert_eq!(skipped[0]["why"], "$GOPATH is unset");
    assert!(skipped[0]["origin"].as_str().unwrap().ends_with("agent.toml:2"), "{skipped:?}");
    // No literal /pkg/mod entry was made from it.
    assert!(!start["surface"].to_string().contains("\"/pkg/mod"), "{start}");
    // And `policy show` says so.
    let show = Command::new(interpose())
        .args(["policy", "show"])
        .arg(&s.policy)
        .current_dir(&s.repo)
        .env("HOME", &s.home)
        .env_remove("GOPATH")
        .output()
        .unwrap();
    assert!(stdout(&show).contains("tooling_paths \"${GOPATH}/pkg/mod\": $GOPATH is unset"), "{}", stdout(&show));
}

#[test]
fn a_write_glob_allows_temp_files_but_not_what_looks_like_them() {
    if !kernel_ok() {
        return;
    }
    let s = Setup::new("extends = [\"system\"]\nadditional_writes = [\"~/.claude.json\", \"~/.claude.json.*\"]\n");
    std::fs::write(s.home.join(".claude.json"), "{}").unwrap();
    std::fs::create_dir(s.home.join(".claude.json.bak")).unwrap();
    // The agent's atomic update: write a temp file next to the config, then
    // rename it over the config.
    let o = s.sh(
        &[],
        "echo '{\"n\":1}' > ~/.claude.json.tmp123 && mv ~/.claude.json.tmp123 ~/.claude.json && cat ~/.claude.json; \
         echo x > ~/.claude.json.bak/x; echo x > ~/.bashrc",
    );
    assert_eq!(stdout(&o), "{\"n\":1}\n", "{}", stderr(&o));
    assert_eq!(denials(&o), 2, "{}", stderr(&o));
    assert!(!s.home.join(".claude.json.bak/x").exists() && !s.home.join(".bashrc").exists());
}

#[test]
fn deny_carve_outs_block_files_created_after_start() {
    if !kernel_ok() {
        return;
    }
    let s = Setup::new(
        "extends = [\"system\"]\ndeny = [\".env\", \"secrets/**\", \"**/*.pem\"]\ndeny_writes = [\".git/hooks\"]\n",
    );
    std::fs::create_dir_all(s.repo.join(".git/hooks")).unwrap();
    std::fs::create_dir(s.repo.join("secrets")).unwrap();
    let child = s
        .command(
            &[],
            "while [ ! -e go ]; do sleep 0.01; done; \
             cat .env; cat secrets/key; cat deep/a.pem; echo x > secrets/mine; echo x > .env; \
             cat .git/hooks/pre-commit; echo x > .git/hooks/pre-commit; echo ok > normal && cat normal",
        )
        .spawn()
        .unwrap();
    // Created by someone else after the command started.
    std::fs::write(s.repo.join(".env"), "top-secret-marker\n").unwrap();
    std::fs::write(s.repo.join("secrets/key"), "top-secret-marker\n").unwrap();
    std::fs::create_dir(s.repo.join("deep")).unwrap();
    std::fs::write(s.repo.join("deep/a.pem"), "top-secret-marker\n").unwrap();
    std::fs::write(s.repo.join(".git/hooks/pre-commit"), "#!/bin/sh\n").unwrap();
    std::fs::write(s.repo.join("go"), "").unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(stdout(&o), "#!/bin/sh\nok\n", "{}", stderr(&o));
    // secrets/ existed at start: in the command's mount namespace it is
    // masked by an empty directory, so what appears in it later is not
    // there at all (refused, where there is no mount namespace).
    let hidden = stderr(&o).contains("secrets/key: No such file or directory");
    assert_eq!(denials(&o) + usize::from(hidden), 6, "{}", stderr(&o));
    assert!(!s.repo.join("secrets/mine").exists());
    assert_eq!(std::fs::read_to_string(s.repo.join(".env")).unwrap(), "top-secret-marker\n");
    assert_eq!(std::fs::read_to_string(s.repo.join(".git/hooks/pre-commit")).unwrap(), "#!/bin/sh\n");
}

#[test]
fn writable_limits_the_workspace_to_its_patterns() {
    if !kernel_ok() {
        return;
    }
    let s = Setup::new("extends = [\"system\"]\nwritable = [\"src/**\", \"*.lock\"]\n");
    std::fs::create_dir(s.repo.join("src")).unwrap();
    std::fs::write(s.repo.join("README"), "readme\n").unwrap();
    let o = s.sh(
        &[],
        "mkdir src/m && echo a > src/m/a.rs && echo l > Cargo.lock && truncate -s 0 src/m/a.rs && cat README; \
         echo x > README; echo x > new.txt; mkdir other",
    );
    assert_eq!(stdout(&o), "readme\n", "{}", stderr(&o));
    assert_eq!(denials(&o), 3, "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(s.repo.join("src/m/a.rs")).unwrap(), "");
    assert!(s.repo.join("Cargo.lock").exists() && !s.repo.join("new.txt").exists());
}

#[test]
fn bad_policies_are_refused_at_start_with_where_and_why() {
    if !kernel_ok() {
        return;
    }
    let s = Setup::new("extends = [\"system\"]\nwritable = [\"src/**\", \"../../etc/**\"]\n");
    let o = s.sh(&[], "echo ran");
    assert_eq!(o.status.code(), Some(125));
    assert!(stdout(&o).is_empty());
    let err = stderr(&o);
    assert!(err.contains("agent.toml:2:23: `writable` entry \"../../etc/**\": escape:"), "{err}");

    std::fs::write(&s.policy, "extends = [\"system\"]\n\nsibling_read = [\"../sib\"]\n").unwrap();
    let o = s.sh(&[], "echo ran");
    assert_eq!(o.status.code(), Some(125));
    assert!(stderr(&o).contains("agent.toml:3:1: unknown field `sibling_read`"), "{}", stderr(&o));
    let check = Command::new(interpose()).args(["policy", "check"]).arg(&s.policy).output().unwrap();
    assert_eq!(check.status.code(), Some(1));
    assert!(stderr(&check).contains("agent.toml:3:1"), "{}", stderr(&check));
}

/// `policy check` names every error, each with file:line:column, not only
/// the first; warns (without failing) on entries that name nothing here;
/// a URL in `[net] allow` is told what to write instead. `run` refuses the
/// same policy with the first error and how many more there are.
#[test]
fn policy_check_names_every_error_and_what_is_missing_here() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("p.toml");
    std::fs::write(
        &policy,
        "additional_reads = [\"/no/such/place\", \"\"]\n\
         additional_writes = [\"~user/x\"]\n\
         deny = [\"{a,b}.txt\"]\n\
         [net]\n\
         allow = [\"https://api.example.com/v1\", \"ok.example\"]\n",
    )
    .unwrap();
    let check = Command::new(interpose()).args(["policy", "check"]).arg(&policy).output().unwrap();
    assert_eq!(check.status.code(), Some(1));
    let err = stderr(&check);
    for wanted in [
        "p.toml:1:39: `additional_reads` entry \"\": malformed pattern: empty entry",
        "p.toml:2:22: `additional_writes` entry \"~user/x\": escape",
        "p.toml:3:9: `deny` entry \"{a,b}.txt\": malformed pattern: brace alternatives",
        "p.toml:5:10: `[net] allow` entry \"https://api.example.com/v1\" is a URL; an allowlist entry is a host: write \"api.example.com\"",
        "warning: ",
        "p.toml:1:21: `additional_reads` entry \"/no/such/place\": left out here: /no/such/place does not exist",
        "p.toml: 4 error(s)",
    ] {
        assert!(err.contains(wanted), "lacks {wanted:?}:\n{err}");
    }
    assert!(!err.contains("profile tooling"), "a built-in profile's optional places are not the user's: {err}");
    let run =
        Command::new(interpose()).args(["run", "--policy"]).arg(&policy).args(["--", "/bin/true"]).output().unwrap();
    assert_eq!(run.status.code(), Some(125));
    assert!(
        stderr(&run).contains("p.toml:1:39:") && stderr(&run).contains("(and 3 more: `interpose policy check FILE`")
    );
    // Only a warning: the policy is otherwise valid.
    std::fs::write(&policy, "additional_reads = [\"/no/such/place\"]\n").unwrap();
    let check = Command::new(interpose()).args(["policy", "check"]).arg(&policy).output().unwrap();
    assert!(check.status.success(), "{}", stderr(&check));
    assert!(stdout(&check).contains("ok (") && stdout(&check).contains("1 warning(s)"), "{}", stdout(&check));
}

#[test]
fn credential_variables_are_dropped_unless_kept() {
    if !kernel_ok() {
        return;
    }
    let s = Setup::new("extends = [\"system\"]\n[env]\nkeep = [\"ANTHROPIC_API_KEY\"]\nset = { AGENT = \"1\" }\n");
    let script = "echo \"${AWS_SECRET_ACCESS_KEY:-none} ${GITHUB_TOKEN:-none} ${ANTHROPIC_API_KEY:-none} \
                  ${OPENAI_API_KEY:-none} ${AGENT:-none} ${SSH_AUTH_SOCK:-none}\"";
    let run = |extra: &[&str]| {
        let mut c = s.command(extra, script);
        c.env("AWS_SECRET_ACCESS_KEY", "aws").env("GITHUB_TOKEN", "gh").env("ANTHROPIC_API_KEY", "ant");
        c.env("OPENAI_API_KEY", "oai").env("SSH_AUTH_SOCK", "/tmp/agent.sock");
        c.output().unwrap()
    };
    assert_eq!(stdout(&run(&[])), "none none ant none 1 none\n");
    assert_eq!(stdout(&run(&["--env-keep", "OPENAI_API_KEY"])), "none none ant oai 1 none\n");
}

fn sessions_of(pid: u32) -> Vec<PathBuf> {
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(&format!("interpose-{pid}-")))
        .collect()
}

#[test]
fn the_session_home_is_made_seeded_and_removed() {
    if !kernel_ok() {
        return;
    }
    let s = Setup::new("extends = [\"system\"]\nhome = \"session\"\nhome_seed = [\"~/.gitconfig\"]\n");
    let o = s.sh(&[], "echo $HOME; cat ~/.gitconfig; echo s > ~/state; ls -A ~; cd $TMPDIR && touch t && echo tmp-ok");
    let out = stdout(&o);
    let home = PathBuf::from(out.lines().next().unwrap());
    assert!(home.starts_with(std::env::temp_dir()) && home.ends_with("home"), "{out}");
    assert!(out.contains("name = t\n.gitconfig\nstate\ntmp-ok"), "{out}\n{}", stderr(&o));
    assert!(!home.exists(), "the session home outlived the session");
    assert!(!s.home.join("state").exists());

    // --keep-session keeps it and says where.
    let o = s.sh(&["--keep-session"], "echo $HOME");
    let home = PathBuf::from(stdout(&o).trim());
    assert!(home.join(".gitconfig").exists());
    let kept = format!("session directory kept (until you remove it): {}", home.parent().unwrap().display());
    assert!(stderr(&o).contains(&kept), "{}", stderr(&o));
    // The next run's sweep of sessions left by dead runs leaves it alone.
    let o = s.sh(&[], "true");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(home.join(".gitconfig").exists(), "a kept session was swept by the next run");
    std::fs::remove_dir_all(home.parent().unwrap()).unwrap();
}

#[test]
fn the_session_home_is_removed_when_the_command_is_killed() {
    if !kernel_ok() {
        return;
    }
    let s = Setup::new("extends = [\"system\"]\nhome = \"session\"\n");
    let child = s.command(&[], "echo $HOME; echo $$ > $HOME/pid; exec sleep 60").spawn().unwrap();
    let sessions = || sessions_of(child.id());
    let pid_file = || sessions().first().map(|d| d.join("home/pid")).filter(|p| p.exists());
    wait_until("the command to start", 10, || {
        pid_file().is_some_and(|p| std::fs::read_to_string(p).unwrap().ends_with('\n'))
    });
    let inner: u32 = std::fs::read_to_string(pid_file().unwrap()).unwrap().trim().parse().unwrap();
    let pid = host_pid(child.id(), inner).expect("the command's pid as seen from here") as i32;
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(137));
    let home = PathBuf::from(stdout(&o).trim());
    assert!(!home.exists() && !home.parent().unwrap().exists(), "{}", home.display());
}

/// The built-in agent profiles let the real CLIs start with no denial. The
/// CLIs come from `cargo xtask agents` ($TMPDIR/agent-clis-for-interpose); without them the
/// test is skipped, unless `INTERPOSE_REQUIRE_AGENTS` is set (CI).
#[test]
fn agent_profiles_run_the_real_clis_without_denials() {
    if !kernel_ok() {
        return;
    }
    // Outside the checkout: Gemini CLI looks into the git repository that
    // contains its installation.
    let agents = std::env::temp_dir().join("agent-clis-for-interpose");
    let bin = agents.join("node_modules/.bin");
    if !bin.join("claude").exists() {
        assert!(std::env::var_os("INTERPOSE_REQUIRE_AGENTS").is_none(), "run `cargo xtask agents` first");
        cannot_run(&format!("no agent CLIs in {}; `cargo xtask agents` installs them", bin.display()));
        return;
    }
    for (agent, banner) in [("claude", "Claude Code"), ("gemini", "Usage: gemini"), ("codex", "Codex CLI")] {
        // A fresh home, so that the CLIs create their state as on first use.
        let s = Setup::new(&format!(
            "extends = [\"system\", \"tooling\", \"{agent}\"]\nadditional_reads = [\"{}\"]\n",
            agents.display()
        ));
        for args in ["--version", "--help"] {
            let trail = s.tree.outside.join(format!("{agent}{args}.jsonl"));
            let path = format!("{}:/usr/bin:/bin", bin.display());
            let o = s
                .command(&["--audit", trail.to_str().unwrap(), "--audit-level", "deny"], &format!("{agent} {args}"))
                .env("PATH", path)
                .output()
                .unwrap();
            assert_eq!(o.status.code(), Some(0), "{agent} {args}: {}", stderr(&o));
            if args == "--help" {
                assert!(stdout(&o).contains(banner), "{agent} {args}: {}", stdout(&o));
            }
            let trail = std::fs::read_to_string(&trail).unwrap();
            let denied: Vec<&str> = trail.lines().filter(|l| l.contains("\"decision\":\"deny\"")).collect();
            assert!(denied.is_empty(), "{agent} {args} was denied:\n{}", denied.join("\n"));
        }
    }
}

#[test]
fn the_examples_are_valid_policies() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        if entry.path().extension().is_some_and(|e| e == "toml") {
            let o = Command::new(interpose()).args(["policy", "check"]).arg(entry.path()).output().unwrap();
            assert!(o.status.success(), "{}: {}", entry.path().display(), stderr(&o));
            checked += 1;
        }
    }
    assert!(checked > 0, "no example policies in {}", dir.display());
}

/// A tool's scratch directories granted by pattern, a wildcard component
/// then everything beneath it (nyc's `~/.node-spawn-wrap-<pid>-<hex>`):
/// the grammar takes it, the directories and their files can be made, and
/// nothing else of the home is granted by it.
#[test]
fn a_wildcard_directory_pattern_grants_a_tools_scratch_directories_and_nothing_else() {
    let Some(t) = kernel_tree() else { return };
    let home = t.outside.join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_rsa"), "PRIVATE-KEY-MARKER\n").unwrap();
    let policy = t.outside.join("p.toml");
    std::fs::write(&policy, "additional_writes = [\"$HOME/.node-spawn-wrap-*\", \"$HOME/.node-spawn-wrap-*/**\"]\n")
        .unwrap();
    let script =
        "d=\"$HOME/.node-spawn-wrap-42-beef\"; mkdir \"$d\" && mkdir \"$d/sub\" && echo shim > \"$d/sub/node\" \
                  && cat \"$d/sub/node\"; cat \"$HOME/.ssh/id_rsa\"; echo x > \"$HOME/.bashrc\"; echo end";
    let o = t
        .command(&["--policy", policy.to_str().unwrap()], &["/bin/sh", "-c", script])
        .env("HOME", &home)
        .output()
        .unwrap();
    let out = stdout(&o);
    assert!(o.status.success() && out.contains("shim") && out.contains("end"), "{out}{}", stderr(&o));
    assert!(!out.contains("PRIVATE-KEY-MARKER"), "{out}");
    assert_eq!(std::fs::read_to_string(home.join(".node-spawn-wrap-42-beef/sub/node")).unwrap(), "shim\n");
    assert!(!home.join(".bashrc").exists(), "the home itself was not granted");
}

/// Credentials removed from the command's environment are named on stderr
/// (names only, never values) with the flag that keeps one; a keep of a
/// variable that is not set says so (a typo keeps nothing).
#[test]
fn removed_credentials_are_named_and_a_keep_of_nothing_is_said() {
    let Some(t) = kernel_tree() else { return };
    let o = t
        .command(
            &["--env-keep", "ANTHROPIC_API_KEY", "--env-keep", "ANTHROPIC_APY_KEY"],
            &["/bin/sh", "-c", "echo ${OPENAI_API_KEY:-unset} ${ANTHROPIC_API_KEY:-unset}"],
        )
        .env("OPENAI_API_KEY", "sk-secret-value-1")
        .env("GITHUB_TOKEN", "ghp-secret-value-2")
        .env("ANTHROPIC_API_KEY", "kept-value")
        .output()
        .unwrap();
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(out, "unset kept-value\n", "{err}");
    assert!(err.contains("removed from the command's environment (credentials):"), "{err}");
    assert!(err.contains("GITHUB_TOKEN") && err.contains("OPENAI_API_KEY") && err.contains("--env-keep NAME"), "{err}");
    assert!(!err.contains("secret-value") && !err.contains("ANTHROPIC_API_KEY,"), "values never shown: {err}");
    assert!(err.contains("--env-keep ANTHROPIC_APY_KEY: not set here"), "{err}");
}

/// `--policy claude` takes a built-in profile by name, as `policy show
/// claude` does: a policy of the one line `extends = ["claude"]` (the
/// system surface, the workspace, the profile's own places). A name that
/// is neither a file nor a profile says both and lists the profiles.
#[test]
fn a_builtin_profile_is_a_policy_by_name() {
    let Some(t) = kernel_tree() else { return };
    let home = t.outside.join("home");
    std::fs::create_dir_all(home.join(".claude")).unwrap();
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".claude/settings.json"), "{\"profile-marker\": 1}\n").unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "PRIVATE-KEY-MARKER\n").unwrap();
    let run = |policy: &str| {
        let mut c = Command::new(interpose());
        c.args(["run", "--policy", policy, "--", "/bin/sh", "-c"])
            .arg("cat ~/.claude/settings.json; echo made > made.txt; cat ~/.ssh/id_ed25519; echo end")
            .current_dir(&t.ws)
            .env("HOME", &home)
            .env("PWD", &t.ws)
            .env_remove("LD_LIBRARY_PATH");
        c.output().unwrap()
    };
    let o = run("claude");
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(out.contains("profile-marker") && out.ends_with("end\n"), "{out}{err}");
    assert!(!out.contains("PRIVATE-KEY-MARKER"), "{out}");
    assert_eq!(std::fs::read_to_string(t.ws.join("made.txt")).unwrap(), "made\n", "the workspace is writable");
    // Natively the profile's name is no file: the name is a profile only
    // where no such file exists in the cwd.
    let o = run("claud");
    assert_eq!(o.status.code(), Some(125));
    let err = stderr(&o);
    assert!(err.contains("claud: cannot read the policy: no such file, and no built-in profile"), "{err}");
    assert!(err.contains("claude, gemini, codex"), "{err}");
}
