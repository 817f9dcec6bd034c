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
    pub(super) fn start(exe: &Path, dir: &Path, work: &Path, binds: &[&Path]) -> anyhow::Result<Agent> {
        let policies = dir.join("policies");
        std::fs::create_dir_all(&policies)?;
        let reads: Vec<String> = binds.iter().map(|b| format!("{:?}", b.display().to_string())).collect();
        let policy = format!("cwd = {:?}\nadditional_reads = [{}]\n", work.display().to_string(), reads.join(", "));
        std::fs::write(policies.join(POLICY), policy)?;
        let socket = dir.join("agent.sock");
        let child = Command::new(exe)
            .args(["oci-agent", "--socket"])
            .arg(&socket)
            .arg("--policy-dir")
            .arg(&policies)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !socket.exists() {
            anyhow::ensure!(std::time::Instant::now() < deadline, "the bench's oci-agent did not start");
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
pub fn run(listener: Option<&Path>, binds: &[PathBuf], command: &[OsString]) -> anyhow::Result<i32> {
    use std::os::unix::ffi::OsStrExt;
    let cwd = std::env::current_dir()?;
    let bundle = tempfile::Builder::new().prefix("interpose-container.").tempdir()?;
    let rootfs = bundle.path().join("rootfs");
    std::fs::create_dir_all(&rootfs)?;
    let o = Command::new(RUNC).arg("spec").current_dir(bundle.path()).output()?;
    anyhow::ensure!(o.status.success(), "runc spec: {}", String::from_utf8_lossy(&o.stderr));
    let mut config: serde_json::Value = serde_json::from_slice(&std::fs::read(bundle.path().join("config.json"))?)?;
    let mut mounts = Vec::new();
    let bind = |path: &Path, rw: bool, mounts: &mut Vec<serde_json::Value>| -> anyhow::Result<()> {
        std::fs::create_dir_all(rootfs.join(path.strip_prefix("/").unwrap_or(path)))?;
        let mode = if rw { "rw" } else { "ro" };
        mounts.push(serde_json::json!({
            "destination": path, "type": "bind", "source": path, "options": ["rbind", mode]
        }));
        Ok(())
    };
    for dir in SYSTEM.map(Path::new) {
        match std::fs::symlink_metadata(dir) {
            Ok(m) if m.file_type().is_symlink() => {
                std::os::unix::fs::symlink(std::fs::read_link(dir)?, rootfs.join(dir.strip_prefix("/")?))?
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
    std::fs::write(bundle.path().join("config.json"), config.to_string())?;
    let id = format!("interpose-bench-{}", std::process::id());
    let status = Command::new(RUNC)
        .arg("--root")
        .arg(bundle.path().join("state"))
        .args(["run", "--bundle"])
        .arg(bundle.path())
        .arg(&id)
        .stdin(Stdio::null())
        .status()?;
    let _ = Command::new(RUNC)
        .arg("--root")
        .arg(bundle.path().join("state"))
        .args(["delete", "-f", &id])
        .stderr(Stdio::null())
        .status();
    Ok(status.code().unwrap_or(125))
}
