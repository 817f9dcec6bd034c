//! Containers for `interpose bench`: the same workloads run by `runc` in a
//! container whose root holds the host's system directories and the bench's
//! own (bound at the same paths), with and without `interpose oci-agent`
//! behind its filter, so that a container's start-up and per-call cost are
//! measured in the run that measures everything else.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// Where runc is.
pub(super) const RUNC: &str = "/usr/sbin/runc";

/// The policy the bench's containers get (a file of the agent's
/// `--policy-dir`).
const POLICY: &str = "bench.toml";

/// The host's system directories a container's root is made of: bound
/// read-only where they are directories, linked where they are links.
const SYSTEM: [&str; 9] = ["/usr", "/etc", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32", "/opt"];

/// Why the bench's agent or container could not be set up (the messages
/// are the underlying errors' own; the variants keep the path).
#[derive(Debug, thiserror::Error)]
pub enum ContainerError {
    /// The current directory cannot be read.
    #[error("{0}")]
    CurrentDir(std::io::Error),
    /// Making the bundle's temporary directory failed.
    #[error("{0}")]
    TempDir(std::io::Error),
    /// Creating a directory (a policy directory, a mount point) failed.
    #[error("{source}")]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// Writing a file (the policy, the bundle's config) failed.
    #[error("{source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// Reading the bundle's config failed.
    #[error("{source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The config `runc spec` wrote is not JSON.
    #[error("{0}")]
    Config(serde_json::Error),
    /// Reading a system directory's link failed.
    #[error("{source}")]
    ReadLink {
        /// The link.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// Linking a system directory into the root failed.
    #[error("{source}")]
    Symlink {
        /// The link made.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// Starting the agent failed.
    #[error("{0}")]
    SpawnAgent(std::io::Error),
    /// The agent's socket did not appear in time.
    #[error("the bench's oci-agent did not start")]
    AgentNotStarted,
    /// Running `runc` failed.
    #[error("{0}")]
    Runc(std::io::Error),
    /// `runc spec` failed (its stderr).
    #[error("runc spec: {0}")]
    RuncSpec(String),
}

/// `std::fs::create_dir_all`, its error naming the directory.
fn create_dir(path: &Path) -> Result<(), ContainerError> {
    std::fs::create_dir_all(path).map_err(|source| ContainerError::CreateDir { path: path.into(), source })
}

/// `std::fs::write`, its error naming the file.
fn write(path: &Path, contents: impl AsRef<[u8]>) -> Result<(), ContainerError> {
    std::fs::write(path, contents).map_err(|source| ContainerError::Write { path: path.into(), source })
}

/// Why containers cannot be measured here, if they cannot.
pub(super) fn unavailable() -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some("containers: runc needs root".into());
    }
    if !Path::new(RUNC).exists() {
        return Some(format!("containers: {RUNC} is not installed (`cargo xtask tools`)"));
    }
    None
}

/// An `oci-agent` for the bench's containers, killed when dropped.
pub(super) struct Agent {
    child: Child,
    pub(super) socket: PathBuf,
}

impl Agent {
    /// Starts the agent in `dir` with one policy: `work` writable, `binds`
    /// readable, the container system read-only.
    pub(super) fn start(exe: &Path, dir: &Path, work: &Path, binds: &[&Path]) -> Result<Agent, ContainerError> {
        let policies = dir.join("policies");
        create_dir(&policies)?;
        let reads: Vec<String> = binds.iter().map(|b| format!("{:?}", b.display().to_string())).collect();
        let policy = format!("cwd = {:?}\nadditional_reads = [{}]\n", work.display().to_string(), reads.join(", "));
        write(&policies.join(POLICY), policy)?;
        let socket = dir.join("agent.sock");
        let child = Command::new(exe)
            .args(["oci-agent", "--socket"])
            .arg(&socket)
            .arg("--policy-dir")
            .arg(&policies)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(ContainerError::SpawnAgent)?;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !socket.exists() {
            if std::time::Instant::now() >= deadline {
                return Err(ContainerError::AgentNotStarted);
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        Ok(Agent { child, socket })
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `interpose debug container`: runs `command` with runc in a container
/// of the host's system directories and `binds` (read-write, at the same
/// paths), in the current directory (bound too), with this environment;
/// under the agent at `listener` when given. Returns its exit status.
pub fn run(listener: Option<&Path>, binds: &[PathBuf], command: &[OsString]) -> Result<i32, ContainerError> {
    use std::os::unix::ffi::OsStrExt;
    let cwd = std::env::current_dir().map_err(ContainerError::CurrentDir)?;
    let bundle = tempfile::Builder::new().prefix("interpose-container.").tempdir().map_err(ContainerError::TempDir)?;
    let rootfs = bundle.path().join("rootfs");
    create_dir(&rootfs)?;
    let o = Command::new(RUNC).arg("spec").current_dir(bundle.path()).output().map_err(ContainerError::Runc)?;
    if !o.status.success() {
        return Err(ContainerError::RuncSpec(String::from_utf8_lossy(&o.stderr).into_owned()));
    }
    let config_path = bundle.path().join("config.json");
    let text =
        std::fs::read(&config_path).map_err(|source| ContainerError::Read { path: config_path.clone(), source })?;
    let mut config: serde_json::Value = serde_json::from_slice(&text).map_err(ContainerError::Config)?;
    let mut mounts = Vec::new();
    let bind = |path: &Path, rw: bool, mounts: &mut Vec<serde_json::Value>| -> Result<(), ContainerError> {
        create_dir(&rootfs.join(path.strip_prefix("/").unwrap_or(path)))?;
        let mode = if rw { "rw" } else { "ro" };
        mounts.push(serde_json::json!({
            "destination": path, "type": "bind", "source": path, "options": ["rbind", mode]
        }));
        Ok(())
    };
    for dir in SYSTEM.map(Path::new) {
        match std::fs::symlink_metadata(dir) {
            Ok(m) if m.file_type().is_symlink() => {
                let target =
                    std::fs::read_link(dir).map_err(|source| ContainerError::ReadLink { path: dir.into(), source })?;
                // SYSTEM's paths are absolute.
                let link = rootfs.join(dir.strip_prefix("/").unwrap_or(dir));
                std::os::unix::fs::symlink(target, &link)
                    .map_err(|source| ContainerError::Symlink { path: link, source })?
            }
            Ok(m) if m.is_dir() => bind(dir, false, &mut mounts)?,
            _ => {}
        }
    }
    for dir in binds.iter().map(PathBuf::as_path).chain([cwd.as_path()]) {
        bind(dir, true, &mut mounts)?;
    }
    // runc's own mounts (/proc, /dev, /sys, ...) first, then the binds.
    config["mounts"].as_array_mut().expect("runc spec has mounts").extend(mounts);
    let env: Vec<String> =
        std::env::vars_os().filter_map(|(k, v)| Some(format!("{}={}", k.to_str()?, v.to_str()?))).collect();
    config["process"]["terminal"] = false.into();
    config["process"]["args"] =
        command.iter().map(|a| String::from_utf8_lossy(a.as_bytes()).into_owned()).collect::<Vec<_>>().into();
    config["process"]["env"] = env.into();
    config["process"]["cwd"] = cwd.to_string_lossy().into_owned().into();
    config["root"]["readonly"] = true.into();
    if let Some(listener) = listener {
        config["linux"]["seccomp"] = crate::oci::config::seccomp_section(listener, None);
        config["annotations"] = serde_json::json!({ crate::oci::agent::POLICY_ANNOTATION: POLICY });
    }
    write(&config_path, config.to_string())?;
    let id = format!("interpose-bench-{}", std::process::id());
    let status = Command::new(RUNC)
        .arg("--root")
        .arg(bundle.path().join("state"))
        .args(["run", "--bundle"])
        .arg(bundle.path())
        .arg(&id)
        .stdin(Stdio::null())
        .status()
        .map_err(ContainerError::Runc)?;
    let _ = Command::new(RUNC)
        .arg("--root")
        .arg(bundle.path().join("state"))
        .args(["delete", "-f", &id])
        .stderr(Stdio::null())
        .status();
    Ok(status.code().unwrap_or(125))
}
