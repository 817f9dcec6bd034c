//! The workloads: version control, Python, Node, Rust, C, file tools, and
//! the three agent CLIs in each install layout.

use super::home::{install, Env, Layout};
use super::{same, Intended, Policy, Run, Workload};
use interpose::audit::{AccessKind, RuleKind};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

fn write(path: &Path, text: &str) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(path, text).unwrap();
}

/// Runs `script` natively in `dir` with the environment's variables (the
/// set-up of a workload, never under interpose).
fn prepare(env: &Env, dir: &Path, script: &str) {
    let o =
        Command::new("/bin/sh").args(["-c", script]).current_dir(dir).env_clear().envs(env.vars()).output().unwrap();
    assert!(o.status.success(), "set-up `{script}` failed: {}", String::from_utf8_lossy(&o.stderr));
}

/// A workload with the defaults: the example policy, both runs compared
/// with [`same`], nothing more to check.
pub(super) fn workload(name: &str, script: impl Fn(&Env) -> String + 'static) -> Workload {
    Workload {
        name: name.to_string(),
        network: false,
        setup: Box::new(|_| {}),
        script: Box::new(script),
        flags: Box::new(|_| Vec::new()),
        policy: Policy::Example,
        path_front: Box::new(|_| None),
        intended: Vec::new(),
        compare: Box::new(same),
        after: Box::new(|_, _| Ok(())),
        unchanged: Vec::new(),
        timeout: Duration::from_secs(120),
        wraps: false,
        files: None,
        trail_budget: None,
    }
}

fn fixed(script: &'static str) -> impl Fn(&Env) -> String {
    move |_| script.to_string()
}

fn git_repo(env: &Env) {
    write(&env.ws.join("README"), "hello\n");
    prepare(env, &env.ws, "git init -q && git add -A && git commit -qm init");
}

fn git() -> Vec<Workload> {
    let mut init = workload(
        "git-init-commit",
        fixed("git init -q && git add -A && git commit -qm init && git log --format='%s by %an' && git status --porcelain"),
    );
    init.setup = Box::new(|env| write(&env.ws.join("README"), "hello\n"));

    let mut clone = workload("git-clone-local", |env| {
        format!("git clone -q {} clone && git -C clone log --format=%s", env.root.join("remote.git").display())
    });
    clone.setup = Box::new(|env| {
        let src = env.root.join("src");
        write(&src.join("f"), "f\n");
        prepare(env, &src, "git init -q && git add -A && git commit -qm upstream");
        prepare(env, &env.root, "git clone -q --bare src remote.git");
    });
    clone.flags = Box::new(|env| vec!["--ro".into(), env.root.join("remote.git").display().to_string()]);
    // A local clone hard-links the objects of a read-only repository; a
    // hard link needs write access to its source (the object would be
    // writable through the new name), and git copies them instead.
    clone.intended = vec![Intended {
        what: "hard links to a read-only repository's objects (git copies them instead)",
        matches: |d, env| {
            d.access == AccessKind::LinkSource
                && d.subject().lossy().starts_with(&env.root.join("remote.git").display().to_string())
        },
    }];

    let mut commit = workload(
        "git-commit-status",
        fixed("echo more >> README && git commit -qam change && git status --porcelain && git log --format=%s"),
    );
    commit.setup = Box::new(git_repo);

    // The example policy's carve-out: the agent must not plant a hook (or
    // a command in the config) that git runs later outside the sandbox.
    let mut hook = workload(
        "git-hook-not-plantable",
        fixed(
            "(printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && echo hook-planted) 2>/dev/null || echo hook-refused; \
             (git config core.hooksPath evil && echo config-changed) 2>/dev/null || echo config-refused; \
             git commit -q --allow-empty -m more && echo committed",
        ),
    );
    hook.setup = Box::new(git_repo);
    hook.intended = vec![Intended {
        what: "writes to the repository's hooks and config (the example policy's deny_writes)",
        matches: |d, _| d.rule_kind == RuleKind::CarveOut && d.subject().lossy().contains("/.git/"),
    }];
    hook.compare = Box::new(|native, sandboxed| {
        let expect = |run: &Run, text: &str, who: &str| {
            if run.stdout == text {
                Ok(())
            } else {
                Err(format!("{who} printed {:?}, expected {text:?}", run.stdout))
            }
        };
        expect(native, "hook-planted\nconfig-changed\ncommitted\n", "natively")?;
        expect(sandboxed, "hook-refused\nconfig-refused\ncommitted\n", "under interpose")
    });
    hook.after = Box::new(|env, _| {
        let config = std::fs::read_to_string(env.ws.join(".git/config")).unwrap();
        if env.ws.join(".git/hooks/pre-commit").exists() || config.contains("evil") {
            Err("a hook or a config command was planted".into())
        } else {
            Ok(())
        }
    });
    vec![init, clone, commit, hook]
}

fn python() -> Vec<Workload> {
    let venv = workload(
        "python-venv-pyenv",
        fixed("python3 -m venv .venv && .venv/bin/python -c 'import sys, ssl; print(sys.prefix.endswith(\".venv\"))'"),
    );
    let debian = workload(
        "python-venv-debian",
        fixed("/usr/bin/python3 -m venv .venv && .venv/bin/python -c 'import json, ssl; print(\"ok\")'"),
    );
    let mut wheel = workload(
        "pip-local-wheel",
        fixed(
            "python3 -m venv .venv && .venv/bin/pip install -q --no-index --find-links wheels demo_pkg \
             && .venv/bin/python -c 'import demo_pkg; print(demo_pkg.VALUE)'",
        ),
    );
    wheel.setup = Box::new(|env| {
        // A wheel is a zip archive with the package and its metadata.
        let script = r#"
import zipfile, hashlib, base64
files = {"demo_pkg/__init__.py": b"VALUE = 42\n",
         "demo_pkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: demo_pkg\nVersion: 1.0\n",
         "demo_pkg-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
record = ""
for name, data in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record += f"{name},sha256={digest},{len(data)}\n"
record += "demo_pkg-1.0.dist-info/RECORD,,\n"
with zipfile.ZipFile("wheels/demo_pkg-1.0-py3-none-any.whl", "w") as z:
    for name, data in files.items():
        z.writestr(name, data)
    z.writestr("demo_pkg-1.0.dist-info/RECORD", record)
"#;
        std::fs::create_dir_all(env.ws.join("wheels")).unwrap();
        write(&env.root.join("make_wheel.py"), script);
        prepare(env, &env.ws, &format!("python3 {}", env.root.join("make_wheel.py").display()));
    });
    let mut pytest = workload(
        "pip-registry-pytest",
        fixed(
            "python3 -m venv .venv && .venv/bin/pip install -q pytest \
             && .venv/bin/python -m pytest -q -p no:cacheprovider test_demo.py > /dev/null && echo tests-passed",
        ),
    );
    pytest.network = true;
    pytest.timeout = Duration::from_secs(300);
    pytest.setup = Box::new(|env| write(&env.ws.join("test_demo.py"), "def test_sum():\n    assert 1 + 1 == 2\n"));
    pytest.unchanged = vec![".cache/pip"];
    vec![venv, debian, wheel, pytest]
}

fn node() -> Vec<Workload> {
    let mut tarball = workload(
        "npm-local-tarball",
        fixed(
            "npm init -y > /dev/null && npm install ./demo-pkg-1.0.0.tgz > /dev/null \
             && node -e \"console.log(require('demo-pkg').value)\"",
        ),
    );
    tarball.setup = Box::new(|env| {
        let pkg = env.root.join("demo-pkg");
        write(&pkg.join("package.json"), "{\"name\":\"demo-pkg\",\"version\":\"1.0.0\",\"main\":\"index.js\"}\n");
        write(&pkg.join("index.js"), "module.exports = { value: 'from a tarball' };\n");
        prepare(env, &pkg, &format!("npm pack --silent --pack-destination {} > /dev/null", env.ws.display()));
    });
    tarball.unchanged = vec![".npm"];
    let mut registry = workload(
        "npm-registry",
        fixed(
            "npm init -y > /dev/null && npm install is-number@7.0.0 > /dev/null \
             && node -e \"console.log(require('is-number')(5))\"",
        ),
    );
    registry.network = true;
    registry.timeout = Duration::from_secs(300);
    registry.unchanged = vec![".npm"];
    let script = workload(
        "node-script",
        fixed("node -e \"const fs = require('fs'); fs.writeFileSync('out.txt', 'hi'); console.log(fs.readFileSync('out.txt', 'utf8'))\""),
    );
    vec![tarball, registry, script]
}

fn rust_and_c() -> Vec<Workload> {
    let mut cargo = workload("cargo-build-new-dependency", fixed("cargo build -q 2> /dev/null; ./target/debug/app"));
    cargo.network = true;
    cargo.timeout = Duration::from_secs(600);
    cargo.setup = Box::new(|env| {
        write(
            &env.ws.join("Cargo.toml"),
            "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nitoa = \"1\"\n",
        );
        write(&env.ws.join("src/main.rs"), "fn main() { println!(\"{}\", itoa::Buffer::new().format(42)); }\n");
    });
    cargo.unchanged = vec![".cargo"];
    let mut make = workload("c-make-gcc", fixed("make -s && ./hello"));
    make.setup = Box::new(|env| {
        write(&env.ws.join("hello.c"), "#include <stdio.h>\nint main(void) { puts(\"hello from C\"); return 0; }\n");
        write(&env.ws.join("Makefile"), "hello: hello.c\n\tcc -O2 -o hello hello.c\n");
    });
    vec![cargo, make]
}

fn file_tools() -> Vec<Workload> {
    let tree = |env: &Env| {
        for (f, text) in [("src/a.txt", "needle one\n"), ("src/sub/b.txt", "hay\n"), ("src/sub/c.txt", "needle two\n")]
        {
            write(&env.ws.join(f), text);
        }
    };
    let mut rsync = workload("rsync", fixed("rsync -a src/ dst/ && find dst -type f | sort && cat dst/a.txt"));
    rsync.setup = Box::new(tree);
    let mut tar =
        workload("tar", fixed("tar czf out.tgz src && mkdir x && tar xzf out.tgz -C x && find x -type f | sort"));
    tar.setup = Box::new(tree);
    let mut find = workload(
        "find-grep-sed",
        fixed("find src -name '*.txt' | sort | xargs grep -l needle | xargs sed -i 's/needle/pin/' && grep -r pin src | sort"),
    );
    find.setup = Box::new(tree);
    vec![rsync, tar, find]
}

/// `path` is a directory above `of` (on the way to it, not it).
fn above(path: &[u8], of: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let of = of.as_os_str().as_bytes();
    of.len() > path.len() && of.starts_with(path) && (of[path.len()] == b'/' || path == b"/")
}

/// What the agent CLIs do that the surface refuses by design, with the
/// same result natively and under interpose: look at whether they run in a
/// container, list the home directory or the directories above the
/// workspace (the names of what the surface does not grant stay hidden),
/// look at top-level directories outside the surface.
const AGENT_PROBES: &[Intended] = &[
    Intended {
        what: "whether it runs in a container (/.dockerenv)",
        matches: |d, _| d.access == AccessKind::Stat && d.subject().0 == b"/.dockerenv",
    },
    Intended {
        what: "listing the home directory or a directory above the workspace",
        matches: |d, env| {
            d.access == AccessKind::Read
                && d.rule_kind == RuleKind::NoEntry
                && (d.subject().0 == env.home.as_os_str().as_encoded_bytes() || above(&d.subject().0, &env.ws))
        },
    },
    Intended {
        what: "metadata of top-level directories outside the surface (/opt, /run)",
        matches: |d, _| d.access == AccessKind::Stat && matches!(d.subject().0.as_slice(), b"/opt" | b"/run"),
    },
];

fn agent_probes() -> Vec<Intended> {
    AGENT_PROBES.iter().map(|i| Intended { what: i.what, matches: i.matches }).collect()
}

/// The three agent CLIs, in every layout each supports, with `--version`,
/// `--help` and a non-interactive prompt that ends at the login (or, for
/// Codex, the network) failure.
fn agents() -> Vec<Workload> {
    let mut out = Vec::new();
    let layouts: &[(&str, &[Layout])] = &[
        ("claude", &[Layout::NpmLocal, Layout::Nvm, Layout::Native]),
        ("gemini", &[Layout::NpmLocal, Layout::Nvm]),
        ("codex", &[Layout::NpmLocal, Layout::Nvm]),
    ];
    for &(agent, layouts) in layouts {
        for &layout in layouts {
            let prompt = match agent {
                "claude" => "-p hello",
                "gemini" => "-p hello",
                _ => "exec --skip-git-repo-check hello",
            };
            for (what, args) in [("version", "--version"), ("help", "--help"), ("prompt", prompt)] {
                let name = format!("{agent}-{}-{what}", layout.name());
                let command = std::rc::Rc::new(std::cell::RefCell::new(String::new()));
                let (c1, c2) = (command.clone(), command.clone());
                let timed = agent == "codex" && what == "prompt";
                let mut w = workload(&name, move |_| {
                    let cmd = c1.borrow().clone();
                    // Codex retries an unreachable API without end.
                    if timed {
                        format!("timeout 8 {cmd} {args} 2>&1; echo exit=$?")
                    } else {
                        format!("{cmd} {args} 2>&1; echo exit=$?")
                    }
                });
                w.setup = Box::new(move |env| {
                    let (cmd, _) = install(env, agent, layout);
                    *c2.borrow_mut() = cmd;
                });
                if layout == Layout::Nvm {
                    w.path_front = Box::new(move |env| {
                        let v = Command::new("node").arg("--version").output().unwrap();
                        let v = String::from_utf8_lossy(&v.stdout).trim().to_string();
                        Some(env.home.join(".nvm/versions/node").join(v).join("bin"))
                    });
                }
                if agent != "claude" {
                    w.policy = Policy::Agent(agent);
                }
                w.intended = agent_probes();
                w.timeout = Duration::from_secs(60);
                w.compare = Box::new(move |native, sandboxed| match what {
                    "prompt" => {
                        // The prompt ends at the login or network failure:
                        // the same exit, the same failure.
                        let status = |r: &Run| r.stdout.lines().last().unwrap_or_default().to_string();
                        let marker = match agent {
                            "claude" => "Not logged in",
                            "gemini" => "Please set an Auth method",
                            _ => "OpenAI Codex",
                        };
                        if status(native) != status(sandboxed) {
                            return Err(format!("{} natively, {} under interpose", status(native), status(sandboxed)));
                        }
                        if !native.stdout.contains(marker) || !sandboxed.stdout.contains(marker) {
                            return Err(format!(
                                "expected {marker:?} in both:\n--- native\n{}--- interpose\n{}",
                                native.stdout, sandboxed.stdout
                            ));
                        }
                        Ok(())
                    }
                    _ => same(native, sandboxed),
                });
                out.push(w);
            }
        }
    }
    out
}

/// Claude Code's interactive UI in a terminal (tmux): it starts and shows
/// its welcome screen under interpose as it does natively.
fn tui() -> Vec<Workload> {
    let mut w = workload("claude-native-tui", |env| {
        // tmux runs outside the sandbox, as a user's terminal would; the
        // agent in its pane runs under `$SANDBOX` (interpose, or nothing
        // natively). The script waits for the first screen, takes it, and
        // stops the session.
        format!(
            "tmux -S {s} new-session -d -x 100 -y 30 \"$SANDBOX claude\"; \
             for i in $(seq 1 200); do tmux -S {s} capture-pane -p | grep -q 'Welcome to Claude Code' && break; sleep 0.1; done; \
             tmux -S {s} capture-pane -p | grep -o 'Welcome to Claude Code'; tmux -S {s} kill-server",
            s = env.root.join("tmux.sock").display()
        )
    });
    w.wraps = true;
    let mut intended = agent_probes();
    // Claude Code asks tmux about the terminal it runs in. The tmux server
    // lies outside the sandbox and runs whatever its clients ask for
    // (send-keys, new-window), so its socket is refused, and the UI goes on
    // without the answer.
    intended.push(Intended {
        what: "the tmux client inside the sandbox reaching the tmux server outside (it would run commands unconfined)",
        matches: |d, env| {
            d.comm.starts_with("tmux")
                && (d.subject().0 == env.root.join("tmux.sock").as_os_str().as_encoded_bytes()
                    || d.subject().0 == env.home.join(".config").as_os_str().as_encoded_bytes())
        },
    });
    w.intended = intended;
    w.setup = Box::new(|env| {
        install(env, "claude", Layout::Native);
    });
    w.compare = Box::new(|native, sandboxed| {
        same(native, sandboxed)?;
        if native.stdout.contains("Welcome to Claude Code") {
            Ok(())
        } else {
            Err(format!("no welcome screen: {:?}", native.stdout))
        }
    });
    vec![w]
}

/// Every workload, in the order they run.
pub fn all() -> Vec<Workload> {
    [git(), python(), node(), rust_and_c(), file_tools(), agents(), tui()].into_iter().flatten().collect()
}
