//! A generated developer's home: git identity, toolchains where version
//! managers put them (rustup in `~/.cargo` and `~/.rustup`, pyenv in
//! `~/.pyenv`), credentials that must stay out (`~/.ssh`, `~/.aws`), and the
//! agent CLIs in each supported layout.

use std::path::{Path, PathBuf};
use std::process::Command;

/// One fresh home and workspace; removed when dropped.
pub struct Env {
    _dir: tempfile::TempDir,
    /// The directory holding both (replaced by `$ROOT` when outputs are
    /// compared between two environments).
    pub root: PathBuf,
    /// `$HOME`.
    pub home: PathBuf,
    /// The workspace the command runs in.
    pub ws: PathBuf,
}

/// The part of every planted credential that must never appear in what a
/// sandboxed run prints or writes.
pub const SECRET: &str = "planted-secret-5f1c9e";

/// The planted credentials' contents (`{}` is [`SECRET`]), in the order of
/// [`Env::credentials`].
const CREDENTIALS: [&str; 4] = [
    "-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n-----END OPENSSH PRIVATE KEY-----\n",
    "[default]\naws_access_key_id = AKIA{}\naws_secret_access_key = {}\n",
    "[registry]\ntoken = \"cio{}\"\n",
    "//npm.corp.example/:_authToken=npm_{}\n",
];

/// Where `cargo xtask agents` installs the agent CLIs.
pub fn agents_dir() -> PathBuf {
    std::env::temp_dir().join("agent-clis-for-interpose/node_modules")
}

fn link_or_copy(from: &Path, to: &Path) {
    if std::fs::hard_link(from, to).is_err() {
        std::fs::copy(from, to).unwrap_or_else(|e| panic!("copying {}: {e}", from.display()));
    }
}

/// `cp -al`: the tree with its files hard-linked (the agent packages are
/// hundreds of megabytes), symlinks kept.
pub fn link_tree(from: &Path, to: &Path) {
    let status = Command::new("cp").arg("-al").arg(from).arg(to).status().unwrap();
    assert!(status.success(), "cp -al {} {}", from.display(), to.display());
}

impl Env {
    /// A fresh home. Toolchains found on this machine are linked in where a
    /// developer's would be; credentials are planted to prove they stay out.
    pub fn new() -> Env {
        // Not under /tmp (Codex refuses a home there) and not inside a git
        // repository (this checkout's would be found above the workspace).
        let base = Path::new("/var/tmp/interpose-workloads");
        std::fs::create_dir_all(base).unwrap();
        let dir = tempfile::Builder::new().prefix("env-").tempdir_in(base).unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (home, ws) = (root.join("home/dev"), root.join("work/repo"));
        for d in [".ssh", ".aws", ".cargo/bin", ".config", ".local/bin"] {
            std::fs::create_dir_all(home.join(d)).unwrap();
        }
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(
            home.join(".gitconfig"),
            "[user]\n\tname = Dev Eloper\n\temail = dev@example.org\n[init]\n\tdefaultBranch = main\n",
        )
        .unwrap();
        let real = PathBuf::from(std::env::var_os("HOME").expect("HOME is set"));
        // rustup: its proxies in ~/.cargo/bin, its toolchains in ~/.rustup.
        let rustup = real.join(".cargo/bin/rustup");
        if rustup.exists() {
            link_or_copy(&rustup, &home.join(".cargo/bin/rustup"));
            for proxy in ["cargo", "rustc", "rustdoc"] {
                std::os::unix::fs::symlink("rustup", home.join(".cargo/bin").join(proxy)).unwrap();
            }
            let toolchains = std::env::var_os("RUSTUP_HOME").map_or(real.join(".rustup"), PathBuf::from);
            std::os::unix::fs::symlink(toolchains, home.join(".rustup")).unwrap();
        }
        // pyenv: the whole tree (its shims name it by absolute path).
        let pyenv = std::env::var_os("PYENV_ROOT").map_or(real.join(".pyenv"), PathBuf::from);
        if pyenv.is_dir() {
            std::os::unix::fs::symlink(&pyenv, home.join(".pyenv")).unwrap();
        }
        let env = Env { _dir: dir, root, home, ws };
        for (file, text) in env.credentials().iter().zip(CREDENTIALS) {
            std::fs::write(file, text.replace("{}", SECRET)).unwrap();
        }
        env
    }

    /// The credentials planted in the home: ssh, aws, cargo, npm.
    pub fn credentials(&self) -> [PathBuf; 4] {
        [
            self.home.join(".ssh/id_ed25519"),
            self.home.join(".aws/credentials"),
            self.home.join(".cargo/credentials.toml"),
            self.home.join(".npmrc"),
        ]
    }

    /// The environment a developer's shell would pass: a PATH through the
    /// version managers, the locale, and the machine's certificate and proxy
    /// settings (a corporate network's), nothing else.
    pub fn vars(&self) -> Vec<(String, String)> {
        let path = format!(
            "{h}/.local/bin:{h}/.cargo/bin:{h}/.pyenv/shims:{h}/.pyenv/bin:/usr/local/bin:/usr/bin:/bin",
            h = self.home.display()
        );
        let mut vars = vec![
            ("HOME".to_string(), self.home.display().to_string()),
            ("PATH".into(), path),
            ("LANG".into(), "C.UTF-8".into()),
            ("TERM".into(), "xterm-256color".into()),
            ("USER".into(), "dev".into()),
            ("PWD".into(), self.ws.display().to_string()),
            ("GIT_CONFIG_NOSYSTEM".into(), "1".into()),
            ("PIP_DISABLE_PIP_VERSION_CHECK".into(), "1".into()),
            ("npm_config_update_notifier".into(), "false".into()),
            ("npm_config_fund".into(), "false".into()),
            ("npm_config_audit".into(), "false".into()),
        ];
        for (k, v) in std::env::vars() {
            let certificates = k.ends_with("_CA_BUNDLE") || k.starts_with("SSL_CERT") || k == "NODE_EXTRA_CA_CERTS";
            let proxy = k.to_ascii_lowercase().ends_with("_proxy") || k == "PIP_CERT" || k == "GIT_SSL_CAINFO";
            if certificates || proxy {
                vars.push((k, v));
            }
        }
        vars
    }

    /// Replaces this environment's root with `$ROOT`, so that the outputs of
    /// two environments compare.
    pub fn normalize(&self, text: &str) -> String {
        text.replace(&self.root.display().to_string(), "$ROOT")
    }
}

/// How an agent CLI is installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `npm install` in the workspace: `./node_modules/.bin/NAME`.
    NpmLocal,
    /// `npm install -g` under nvm: `~/.nvm/versions/node/vX/bin/NAME`, with
    /// that node first on PATH.
    Nvm,
    /// Claude Code's native installer: `~/.local/bin/claude` linking into
    /// `~/.local/share/claude/versions/X`.
    Native,
}

impl Layout {
    /// As printed.
    pub fn name(self) -> &'static str {
        match self {
            Layout::NpmLocal => "npm-local",
            Layout::Nvm => "nvm",
            Layout::Native => "native",
        }
    }
}

/// The package and its entry point relative to the package, per agent.
fn package(agent: &str) -> (&'static str, &'static str) {
    match agent {
        "claude" => ("@anthropic-ai/claude-code", "bin/claude.exe"),
        "gemini" => ("@google/gemini-cli", "bundle/gemini.js"),
        "codex" => ("@openai/codex", "bin/codex.js"),
        other => panic!("unknown agent {other}"),
    }
}

/// Installs `agent` in `layout` into `env`; returns the command to run it
/// by and the PATH entry that layout adds in front.
pub fn install(env: &Env, agent: &str, layout: Layout) -> (String, Option<PathBuf>) {
    let source = agents_dir();
    let (pkg, entry) = package(agent);
    match layout {
        Layout::NpmLocal => {
            let modules = env.ws.join("node_modules");
            if !modules.exists() {
                link_tree(&source, &modules);
            }
            (format!("./node_modules/.bin/{agent}"), None)
        }
        Layout::Nvm => {
            let version = Command::new("node").arg("--version").output().unwrap();
            let version = String::from_utf8_lossy(&version.stdout).trim().to_string();
            let prefix = env.home.join(".nvm/versions/node").join(&version);
            let (bin, lib) = (prefix.join("bin"), prefix.join("lib"));
            if !bin.exists() {
                std::fs::create_dir_all(&bin).unwrap();
                std::fs::create_dir_all(&lib).unwrap();
                let node = which("node").expect("node is installed");
                link_or_copy(&node, &bin.join("node"));
                link_tree(&source, &lib.join("node_modules"));
            }
            std::os::unix::fs::symlink(format!("../lib/node_modules/{pkg}/{entry}"), bin.join(agent)).unwrap();
            (agent.to_string(), Some(bin))
        }
        Layout::Native => {
            assert_eq!(agent, "claude", "only Claude Code has a native installer");
            let version = "2.1.0-native";
            let versions = env.home.join(".local/share/claude/versions");
            std::fs::create_dir_all(&versions).unwrap();
            link_or_copy(&source.join(pkg).join(entry), &versions.join(version));
            std::os::unix::fs::symlink(versions.join(version), env.home.join(".local/bin/claude")).unwrap();
            ("claude".to_string(), None)
        }
    }
}

/// The first executable `name` on this process's PATH.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file()).and_then(|p| p.canonicalize().ok())
}
