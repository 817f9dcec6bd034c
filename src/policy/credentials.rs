//! Credential locations: the path components that mark a secret (`.ssh`,
//! `.aws`, `.npmrc`, ...). No suggestion hands one out without a
//! confirmation, and no suggested grant covers a tree that holds one.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Path components that mark credentials: never suggested without a
/// confirmation, because allowing them hands the command a secret.
pub const CREDENTIAL_NAMES: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".netrc",
    ".git-credentials",
    ".kube",
    ".docker",
    "keyrings",
    ".password-store",
    ".pgpass",
    ".npmrc",
    ".pypirc",
    "credentials",
    "credentials.toml",
    ".env",
];

/// Credential locations two components deep.
pub const CREDENTIAL_PAIRS: &[[&str; 2]] =
    &[[".config", "gh"], [".config", "gcloud"], [".azure", "msal_token_cache.json"]];

/// Whether `path` is, or lies inside, a credential location.
pub fn is_credential(path: &Path) -> bool {
    let parts: Vec<&[u8]> = path.iter().map(|c| c.as_bytes()).collect();
    parts.iter().any(|p| CREDENTIAL_NAMES.iter().any(|n| n.as_bytes() == *p) || p.starts_with(b".env."))
        || parts.windows(2).any(|w| CREDENTIAL_PAIRS.iter().any(|[a, b]| w[0] == a.as_bytes() && w[1] == b.as_bytes()))
}

/// Credential locations that exist beneath `dir` on this host, looked for
/// where they live (directly in it, or in `.config`), so that a grant of a
/// home directory is never mistaken for a harmless one.
pub fn credentials_beneath(dir: &Path) -> Vec<PathBuf> {
    let direct = CREDENTIAL_NAMES.iter().map(|n| dir.join(n));
    let pairs = CREDENTIAL_PAIRS.iter().map(|[a, b]| dir.join(a).join(b));
    direct.chain(pairs).filter(|p| p.symlink_metadata().is_ok()).collect()
}

/// Whether granting `dir` whole is never suggested: the root, the system
/// trees, a home (`home`, or any directory of `/home`), or a tree that is
/// or holds a credential location.
pub fn too_broad(dir: &Path, home: Option<&Path>) -> bool {
    dir == Path::new("/")
        || home.is_some_and(|h| dir == h)
        || ["/home", "/root", "/tmp", "/var", "/usr", "/etc", "/opt"].iter().any(|d| dir == Path::new(d))
        || dir.parent() == Some(Path::new("/home"))
        || is_credential(dir)
        || !credentials_beneath(dir).is_empty()
}

/// ", which holds .ssh, .aws" for the credential locations in `dir` (or ""),
/// to say why a tree is not suggested.
pub fn holding(dir: &Path, _home: Option<&Path>) -> String {
    let found: Vec<String> = credentials_beneath(dir)
        .iter()
        .filter_map(|p| p.strip_prefix(dir).ok().map(|r| r.display().to_string()))
        .collect();
    match found.is_empty() {
        true => String::new(),
        false => format!(", which holds {}", found.join(", ")),
    }
}

/// The fixed start of a generated name: everything before the first digit
/// that follows a `-`, `_` or `.` (`.node-spawn-wrap-4211-9f3a` ->
/// `.node-spawn-wrap-`), when that start is long enough to mean something
/// (3 bytes or more) and is not itself a credential.
pub fn generated_prefix(name: &std::ffi::OsStr) -> Option<String> {
    let name = name.to_str()?;
    let b = name.as_bytes();
    let i = (1..b.len()).find(|&i| b[i].is_ascii_digit() && b"-_.".contains(&b[i - 1]))?;
    let prefix = &name[..i];
    (prefix.len() >= 3 && !is_credential(Path::new(prefix))).then(|| prefix.to_string())
}

/// What `path` is, when it is (or holds) the control socket of a program
/// outside the sandbox: granting it hands the command a way out (a tmux
/// window, a container, a signature, keystrokes), so no suggestion ever
/// proposes it, and saying so is the suggestion.
pub fn control_socket(path: &Path) -> Option<&'static str> {
    let name = |c: &std::ffi::OsStr| c.to_str().unwrap_or_default().to_string();
    let parts: Vec<String> = path.iter().map(name).collect();
    let file = parts.last().map(String::as_str).unwrap_or_default();
    let is_tmux = |p: &String| p.strip_prefix("tmux-").is_some_and(|uid| uid.bytes().all(|b| b.is_ascii_digit()));
    if parts.iter().any(is_tmux) {
        return Some("a tmux server's socket (a new window there runs anything outside the sandbox)");
    }
    if ["docker.sock", "containerd.sock", "podman.sock", "crio.sock", "buildkitd.sock"].contains(&file) {
        return Some("a container engine's control socket (it runs anything on the host)");
    }
    if file.starts_with("S.gpg-agent") || parts.iter().any(|p| p == "gnupg") && file.starts_with("S.") {
        return Some("gpg-agent's socket (it signs and decrypts as you)");
    }
    if file.starts_with("agent.") && parts.iter().rev().nth(1).is_some_and(|d| d.starts_with("ssh-")) {
        return Some("an ssh agent's socket (it signs as you, on any host your keys open)");
    }
    if file == "system_bus_socket"
        || (file == "bus" && parts.iter().any(|p| p == "run"))
        || path == Path::new("/run/systemd/private")
    {
        return Some("a D-Bus or systemd control socket (it starts services outside the sandbox)");
    }
    if parts.iter().any(|p| p == ".X11-unix") || file.starts_with("wayland-") {
        return Some("the display server's socket (a client can type into your other windows)");
    }
    use std::os::unix::fs::FileTypeExt;
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket()) {
        return Some(
            "the unix socket of a program outside the sandbox (what it does for a client, interpose cannot see)",
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table of README "What no suggestion proposes": every control
    /// socket named, with what it is.
    #[test]
    fn control_sockets_are_named() {
        let cases = [
            ("/tmp/tmux-1000/default", "tmux server"),
            ("/tmp/tmux-0", "tmux server"),
            ("/run/docker.sock", "container engine"),
            ("/var/run/docker.sock", "container engine"),
            ("/run/containerd/containerd.sock", "container engine"),
            ("/run/user/1000/podman/podman.sock", "container engine"),
            ("/run/crio/crio.sock", "container engine"),
            ("/run/buildkit/buildkitd.sock", "container engine"),
            ("/run/user/1000/gnupg/S.gpg-agent", "gpg-agent"),
            ("/home/u/.gnupg/S.gpg-agent.ssh", "gpg-agent"),
            ("/tmp/ssh-XXXXabc/agent.4242", "ssh agent"),
            ("/run/dbus/system_bus_socket", "D-Bus or systemd"),
            ("/run/user/1000/bus", "D-Bus or systemd"),
            ("/run/systemd/private", "D-Bus or systemd"),
            ("/tmp/.X11-unix/X0", "display server"),
            ("/run/user/1000/wayland-0", "display server"),
        ];
        for (path, what) in cases {
            let said = control_socket(Path::new(path)).unwrap_or_else(|| panic!("{path} is not named"));
            assert!(said.contains(what), "{path}: {said}");
        }
        for path in ["/home/u/project/app.sock.txt", "/tmp/tmux-notes/x", "/run/user/1000/busy"] {
            assert_eq!(control_socket(Path::new(path)), None, "{path}");
        }
    }

    /// Credential locations, and the trees never granted whole.
    #[test]
    fn credential_locations_and_broad_trees_are_known() {
        for path in [
            "/home/u/.ssh/id_ed25519",
            "/home/u/.aws/credentials",
            "/home/u/.gnupg",
            "/home/u/.netrc",
            "/home/u/.git-credentials",
            "/home/u/.kube/config",
            "/home/u/.docker/config.json",
            "/home/u/.local/share/keyrings",
            "/home/u/.password-store",
            "/home/u/.pgpass",
            "/home/u/.npmrc",
            "/home/u/.pypirc",
            "/home/u/.cargo/credentials.toml",
            "/home/u/work/.env",
            "/home/u/work/.env.local",
            "/home/u/.config/gh/hosts.yml",
            "/home/u/.config/gcloud",
            "/home/u/.azure/msal_token_cache.json",
        ] {
            assert!(is_credential(Path::new(path)), "{path}");
        }
        assert!(!is_credential(Path::new("/home/u/work/src/environment.rs")));
        let home = Path::new("/home/u");
        for dir in ["/", "/home", "/home/u", "/home/v", "/root", "/tmp", "/var", "/usr", "/etc", "/opt", "/home/u/.ssh"]
        {
            assert!(too_broad(Path::new(dir), Some(home)), "{dir}");
        }
        assert!(!too_broad(Path::new("/home/u/work/project"), Some(home)));
    }
}
