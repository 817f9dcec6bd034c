//! The other layers rendered from the same surface: agent hooks, the
//! preamble and container mounts, checked against golden files in
//! `tests/golden/` (temporary paths written as `$ROOT`).

use crate::common::*;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A root with `home/.ssh/id_rsa`, a workspace `ws` with `.env`, a sibling
/// `lib`, and a policy naming them plus one path that does not exist.
struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    policy: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    for d in ["home/.ssh", "home/.cargo", "ws/src", "lib", "scratch"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::write(root.join("home/.ssh/id_rsa"), "KEY\n").unwrap();
    // The tooling profile's part: a git config to read, a cache to write.
    std::fs::write(root.join("home/.gitconfig"), "[user]\n\tname = t\n").unwrap();
    std::fs::write(root.join("ws/.env"), "SECRET=1\n").unwrap();
    let policy = root.join("policy.toml");
    std::fs::write(
        &policy,
        "cwd = \"ws\"\nsibling_reads = [\"../lib\", \"../missing\"]\nadditional_writes = [\"../scratch/\", \"~/.tool.json.*\"]\ndeny = [\".env\"]\n",
    )
    .unwrap();
    Fixture { _dir: dir, root, policy }
}

impl Fixture {
    fn run(&self, args: &[&str], stdin: &str) -> (String, String) {
        let mut child = Command::new(interpose())
            .args(args)
            .arg("--policy")
            .arg(&self.policy)
            .current_dir(&self.root)
            .env("HOME", self.root.join("home"))
            .envs(TOOLING_VARS.iter().map(|v| (v, "")))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        let root = self.root.display().to_string();
        (stdout(&o).replace(&root, "$ROOT"), stderr(&o).replace(&root, "$ROOT"))
    }

    fn hook(&self, agent: &str, tool: &str, input: serde_json::Value) -> String {
        let json = serde_json::json!({
            "session_id": "s1", "cwd": self.root.join("ws"), "hook_event_name": "x",
            "tool_name": tool, "tool_input": input,
        });
        self.run(&["hook", agent], &json.to_string()).0.trim_end().to_string()
    }
}

/// Compares with `tests/golden/NAME`; `INTERPOSE_BLESS=1` rewrites it.
fn golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(name);
    if std::env::var_os("INTERPOSE_BLESS").is_some() {
        std::fs::write(&path, actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(actual, expected, "{name} differs from its golden file");
}

#[test]
fn claude_and_gemini_hooks_deny_outside_and_allow_inside() {
    let f = fixture();
    let key = f.root.join("home/.ssh/id_rsa");
    let key = key.to_str().unwrap();
    let mut out = String::new();
    for (agent, read, write, path_key) in
        [("claude", "Read", "Write", "file_path"), ("gemini", "read_file", "write_file", "file_path")]
    {
        for (label, tool, path) in [
            ("read ~/.ssh/id_rsa", read, key),
            ("write outside", write, "../lib/new.rs"),
            ("write inside", write, "src/new.rs"),
            ("read a carve-out", read, ".env"),
        ] {
            let answer = f.hook(agent, tool, serde_json::json!({ path_key: path }));
            out.push_str(&format!("{agent} {label}: {answer}\n"));
        }
        let (malformed, _) = f.run(&["hook", agent], "{\"tool_name\": ");
        out.push_str(&format!("{agent} malformed input: {}\n", malformed.trim_end()));
    }
    let list = f.hook("gemini", "list_directory", serde_json::json!({ "dir_path": "/" }));
    out.push_str(&format!("gemini list /: {list}\n"));
    let shell = f.hook("claude", "Bash", serde_json::json!({ "command": "cat ~/.ssh/id_rsa" }));
    out.push_str(&format!("claude Bash (left to the OS layer): {shell}\n"));
    golden("hooks.txt", &out);
}

#[test]
fn mounts_in_every_format_and_both_surface_modes() {
    let f = fixture();
    let operator = f.root.join("operator.toml");
    std::fs::write(
        &operator,
        format!(
            "[[mount]]\nsource = \"/opt/cache\"\ndestination = \"/cache\"\nwritable = true\n\n\
             [[mount]]\nsource = \"/elsewhere\"\ndestination = \"{}\"\nwritable = false\n",
            f.root.join("ws").display()
        ),
    )
    .unwrap();
    let op = operator.to_str().unwrap();
    let mut out = String::new();
    for format in ["docker", "podman", "bwrap", "oci-json"] {
        let (o, e) = f.run(&["mounts", "--format", format, "--operator-mounts", op], "");
        out.push_str(&format!("== {format}, additive\n{o}-- stderr\n{e}"));
    }
    let (o, e) = f.run(&["mounts", "--format", "docker", "--operator-mounts", op, "--surface-mode", "exclusive"], "");
    out.push_str(&format!("== docker, exclusive\n{o}-- stderr\n{e}"));
    golden("mounts.txt", &out);

    let bad = Command::new(interpose())
        .args(["mounts", "--format", "docker", "--surface-mode", "exlusive"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(stderr(&bad).contains("possible values: additive, exclusive"), "{}", stderr(&bad));
}

#[test]
fn the_preamble_is_exact_and_deterministic() {
    let f = fixture();
    let (a, _) = f.run(&["preamble"], "");
    let (b, _) = f.run(&["preamble"], "");
    assert_eq!(a, b);
    golden("preamble.txt", &a);
}

#[test]
fn agent_config_registers_the_hook() {
    let f = fixture();
    let dir = f.root.join("session");
    let (vars, _) = f.run(&["agent-config", "claude", "--dir", dir.to_str().unwrap()], "");
    assert_eq!(vars, "export CLAUDE_CONFIG_DIR=$ROOT/session/claude\n");
    let settings: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("claude/settings.json")).unwrap()).unwrap();
    let command = settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"].as_str().unwrap();
    assert!(command.contains(" hook claude --policy ") && command.contains("policy.toml"), "{command}");
    assert!(settings["permissions"]["deny"].to_string().contains("Read("), "{settings}");
    let (vars, _) = f.run(&["agent-config", "gemini", "--dir", dir.to_str().unwrap()], "");
    assert_eq!(vars, "export GEMINI_CLI_SYSTEM_SETTINGS_PATH=$ROOT/session/gemini/settings.json\n");
    // The registered command works as the hook.
    let json = serde_json::json!({"cwd": f.root.join("ws"), "tool_name": "read_file", "tool_input": {"file_path": "/etc/shadow"}});
    let mut child = Command::new("/bin/sh")
        .args(["-c", &format!("{} hook gemini --policy {}", interpose(), f.policy.display())])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(json.to_string().as_bytes()).unwrap();
    assert!(stdout(&child.wait_with_output().unwrap()).contains("\"decision\":\"deny\""));
}

/// A search over a tree holding a carve-out: refused by the hook where the
/// carved-out file can be read (the hook used on its own), allowed inside
/// interpose, where the OS layer refuses the file to the search itself.
#[test]
fn hooks_refuse_searches_that_would_read_a_carve_out() {
    if !kernel_ok() {
        return;
    }
    let f = fixture();
    let grep = serde_json::json!({
        "session_id": "s1", "cwd": f.root.join("ws"), "hook_event_name": "x",
        "tool_name": "Grep", "tool_input": { "pattern": "SECRET" },
    })
    .to_string();
    let (outside, _) = f.run(&["hook", "claude"], &grep);
    assert!(outside.contains("\"deny\"") && outside.contains(".env"), "{outside}");
    let glob = grep.replace("\"Grep\"", "\"Glob\"").replace("\"SECRET\"", "\"*/../.env\"");
    assert!(f.run(&["hook", "claude"], &glob).0.contains("`..`"));
    // Inside interpose, with the same policy: the hook allows the search,
    // and the search itself cannot read .env.
    let trail = f.root.join("trail.jsonl");
    let policy = f.policy.to_str().unwrap();
    let script = format!(
        "printf '%s' '{grep}' | {} hook claude --policy {policy}; cd ws && grep -r SECRET . ; true",
        interpose()
    );
    let o = Command::new(interpose())
        .args([
            "run",
            "--policy",
            policy,
            "--ro",
            policy,
            "--ro",
            Path::new(interpose()).parent().unwrap().to_str().unwrap(),
        ])
        .arg("--audit")
        .arg(&trail)
        .args(["--", "sh", "-c", &script])
        .current_dir(&f.root)
        .env("HOME", f.root.join("home"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stdout(&o).contains("deny") && !stdout(&o).contains("SECRET=1"), "{}", stdout(&o));
    let trail = std::fs::read_to_string(&trail).unwrap();
    let env: Vec<&str> =
        trail.lines().filter(|l| l.contains("\"decision\":\"deny\"") && l.contains("ws/.env")).collect();
    assert!(env.iter().any(|l| l.contains("\"comm\":\"grep\"")), "grep's open of .env is refused: {env:#?}");
}

/// `agent-config` and `run` work together as the README shows: the
/// settings go to a directory of interpose's state (one per agent and
/// surface, nothing left in TMPDIR), the user's login is linked in, the
/// profile named by `--policy claude` grants that directory to the agent
/// under `run`, and the hook it registers answers inside the sandbox.
#[test]
fn agent_config_and_run_work_together() {
    if !kernel_ok() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (home, ws, tmp) = (root.join("home"), root.join("ws"), root.join("tmp"));
    for d in [home.join(".claude"), ws.clone(), tmp.clone()] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(home.join(".claude/.credentials.json"), "{\"login\":\"marker\"}\n").unwrap();
    let o = Command::new(interpose())
        .args(["agent-config", "claude", "--policy", "claude"])
        .current_dir(&ws)
        .env("HOME", &home)
        .env("TMPDIR", &tmp)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("XDG_STATE_HOME")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let config = stdout(&o).trim().strip_prefix("export CLAUDE_CONFIG_DIR=").unwrap().to_string();
    assert!(
        config.starts_with(&home.join(".local/state/interpose/agent-config/claude-").display().to_string()),
        "{config}"
    );
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "nothing left in TMPDIR");
    let settings: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(Path::new(&config).join("settings.json")).unwrap()).unwrap();
    let hook = settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"].as_str().unwrap().to_string();
    assert!(hook.ends_with(" hook claude --policy claude"), "a profile stays a name: {hook}");
    let input = serde_json::json!({"cwd": ws, "tool_name": "Read", "tool_input": {"file_path": "/etc/shadow"}});
    let script = format!(
        "head -c 1 \"$CLAUDE_CONFIG_DIR/settings.json\"; cat \"$CLAUDE_CONFIG_DIR/.credentials.json\"; \
         echo state > \"$CLAUDE_CONFIG_DIR/history.jsonl\" && echo wrote; echo '{input}' | {hook}"
    );
    let bin = Path::new(interpose()).parent().unwrap().to_str().unwrap().to_string();
    let o = Command::new(interpose())
        .args(["run", "--policy", "claude", "--ro", &bin, "--", "/bin/sh", "-c", &script])
        .current_dir(&ws)
        .env("HOME", &home)
        .env("CLAUDE_CONFIG_DIR", &config)
        .env("PWD", &ws)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    let out = stdout(&o);
    assert!(out.starts_with("{{\"login\":\"marker\"}\nwrote\n"), "{out}{}", stderr(&o));
    assert!(out.contains("\"permissionDecision\":\"deny\""), "the hook answers inside: {out}{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(Path::new(&config).join("history.jsonl")).unwrap(), "state\n");
    // Made again on a second call, in the same place.
    let again = Command::new(interpose())
        .args(["agent-config", "claude", "--policy", "claude"])
        .current_dir(&ws)
        .env("HOME", &home)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("XDG_STATE_HOME")
        .output()
        .unwrap();
    assert_eq!(stdout(&again).trim(), format!("export CLAUDE_CONFIG_DIR={config}"));
}
