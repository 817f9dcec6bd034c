//! The micro workloads: a loop of one operation inside one process, each
//! iteration timed, so start-up is not in the figures.

use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// A micro-benchmark loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Workload {
    /// `openat` + `close` of an allowed file.
    Open,
    /// `openat` + `close` of the same file by its name relative to the cwd
    /// (the loop changes into its directory first).
    OpenRelative,
    /// `newfstatat` of an allowed file (glibc's `stat`).
    Stat,
    /// `fstat` of a descriptor the loop holds: glibc makes it
    /// `newfstatat(fd, "", AT_EMPTY_PATH)`, the call pytest's output
    /// capture makes a hundred thousand times a suite.
    Fstat,
    /// `readlink` of the allowed file, which is no symlink (`EINVAL`): what
    /// glibc's `realpath` asks of every component of every path it makes
    /// canonical, nine in ten of the calls a `cargo test` leaves trapped
    /// in fast mode, which keeps link targets from the kernel.
    Readlink,
    /// `getppid`, which is never trapped (timed in batches of 100).
    Getppid,
    /// `fork` + `exec /bin/true` + `wait`.
    ForkExec,
    /// `openat` of a file outside the surface (denied when sandboxed).
    DeniedOpen,
    /// `openat` + `close` of a character device (`/dev/null`): continued as
    /// written where the rule that grants it is held exactly, performed
    /// under a runtime's filter.
    DevOpen,
    /// `socket` + `connect` to a unix socket at the path (a listener the
    /// loop starts there first) + `accept` + `close`: the connect is made
    /// by the supervisor on a copy of the socket.
    UnixConnect,
    /// `sendto` of one byte to a unix datagram socket at the path (bound
    /// by the loop first) + `recv`: the send is made by the supervisor.
    UnixSendto,
    /// `mkdir` + `rmdir` of a new name beside the file (`PATH.dir`): the
    /// names a build or an install makes and removes by the thousand.
    Mkdir,
}

impl Workload {
    /// The name of the workload in tables.
    pub fn label(self) -> &'static str {
        match self {
            Workload::Open => "openat+close",
            Workload::OpenRelative => "openat+close, relative",
            Workload::Stat => "newfstatat",
            Workload::Fstat => "fstat (newfstatat AT_EMPTY_PATH)",
            Workload::Readlink => "readlink, not a link",
            Workload::Getppid => "getppid (untrapped)",
            Workload::ForkExec => "fork+exec /bin/true",
            Workload::DeniedOpen => "openat, denied",
            Workload::DevOpen => "openat+close /dev/null",
            Workload::UnixConnect => "unix connect+accept+close",
            Workload::UnixSendto => "unix sendto+recv",
            Workload::Mkdir => "mkdir+rmdir",
        }
    }
}

/// Why a workload's loop stopped (the messages are the underlying
/// errors' own).
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// Binding the socket workloads' other end failed.
    #[error("{source}")]
    Bind {
        /// The socket.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// Making the unbound sending socket failed.
    #[error("{0}")]
    Unbound(std::io::Error),
    /// Opening the file `fstat` is made on failed.
    #[error("{source}")]
    Open {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A timed `stat` failed.
    #[error("{0}")]
    Stat(nix::errno::Errno),
    /// A timed `fstat` failed.
    #[error("{0}")]
    Fstat(nix::errno::Errno),
    /// A timed `readlink` did not fail with `EINVAL` (the file is no
    /// symlink): the mode answered it wrong, so its time says nothing.
    #[error("readlink of a file that is no symlink: {0}")]
    Readlink(String),
    /// Running `/bin/true` failed.
    #[error("{0}")]
    Spawn(std::io::Error),
    /// `/bin/true` exited with a failure.
    #[error("/bin/true failed: {0}")]
    TrueFailed(std::process::ExitStatus),
    /// A timed `connect` failed.
    #[error("{0}")]
    Connect(std::io::Error),
    /// A timed `accept` failed.
    #[error("{0}")]
    Accept(std::io::Error),
    /// A timed `sendto` failed.
    #[error("{0}")]
    Send(std::io::Error),
    /// A timed `recv` failed.
    #[error("{0}")]
    Receive(std::io::Error),
    /// A timed `mkdir` or `rmdir` failed.
    #[error("{0}")]
    Mkdir(std::io::Error),
}

/// Runs one loop and prints `{"ns": [...], "elapsed_ns": N}` on stdout;
/// with `summary`, `{"count": N, "elapsed_ns": N}`, keeping no samples.
pub fn workload(kind: Workload, count: usize, path: &Path, summary: bool) -> Result<i32, WorkloadError> {
    use nix::fcntl::{open, OFlag};
    use nix::sys::stat::Mode;
    use std::os::unix::net::{UnixDatagram, UnixListener, UnixStream};
    let mut samples = Vec::with_capacity(if summary { 0 } else { count });
    // The socket workloads' other end, made before the clock starts.
    let _ = matches!(kind, Workload::UnixConnect | Workload::UnixSendto).then(|| std::fs::remove_file(path));
    let bind = |source| WorkloadError::Bind { path: path.into(), source };
    let listener = (kind == Workload::UnixConnect).then(|| UnixListener::bind(path)).transpose().map_err(bind)?;
    let receiver = (kind == Workload::UnixSendto).then(|| UnixDatagram::bind(path)).transpose().map_err(bind)?;
    let sender =
        (kind == Workload::UnixSendto).then(UnixDatagram::unbound).transpose().map_err(WorkloadError::Unbound)?;
    let held = (kind == Workload::Fstat)
        .then(|| std::fs::File::open(path))
        .transpose()
        .map_err(|source| WorkloadError::Open { path: path.into(), source })?;
    // The directory the mkdir loop makes and removes, gone before it starts.
    let made = (kind == Workload::Mkdir).then(|| {
        let mut name = path.as_os_str().to_owned();
        name.push(".dir");
        let _ = std::fs::remove_dir(&name);
        PathBuf::from(name)
    });
    // The relative open names the file from its directory.
    let path = match (kind, path.parent(), path.file_name()) {
        (Workload::OpenRelative, Some(dir), Some(name)) => {
            std::env::set_current_dir(dir).map_err(|source| WorkloadError::Open { path: dir.into(), source })?;
            Path::new(name)
        }
        _ => path,
    };
    let start = Instant::now();
    for _ in 0..count {
        let t = Instant::now();
        match kind {
            Workload::Open | Workload::OpenRelative | Workload::DeniedOpen | Workload::DevOpen => {
                // A denied open is the point of DeniedOpen; its error is not.
                if let Ok(fd) = open(path, OFlag::O_RDONLY | OFlag::O_CLOEXEC, Mode::empty()) {
                    drop(fd);
                }
            }
            Workload::Stat => {
                std::hint::black_box(nix::sys::stat::stat(path).map_err(WorkloadError::Stat)?);
            }
            Workload::Fstat => {
                // nix calls glibc's fstat, which is newfstatat(fd, "", AT_EMPTY_PATH).
                std::hint::black_box(
                    nix::sys::stat::fstat(held.as_ref().expect("opened above")).map_err(WorkloadError::Fstat)?,
                );
            }
            Workload::Readlink => match nix::fcntl::readlink(path) {
                Err(nix::errno::Errno::EINVAL) => {}
                Err(e) => return Err(WorkloadError::Readlink(e.to_string())),
                Ok(target) => return Err(WorkloadError::Readlink(format!("answered {target:?}"))),
            },
            Workload::Getppid => {
                for _ in 0..100 {
                    std::hint::black_box(nix::unistd::getppid());
                }
            }
            Workload::ForkExec => {
                let status = Command::new("/bin/true").status().map_err(WorkloadError::Spawn)?;
                if !status.success() {
                    return Err(WorkloadError::TrueFailed(status));
                }
            }
            Workload::UnixConnect => {
                let client = UnixStream::connect(path).map_err(WorkloadError::Connect)?;
                let (server, _) = listener.as_ref().expect("made above").accept().map_err(WorkloadError::Accept)?;
                drop((client, server));
            }
            Workload::UnixSendto => {
                sender.as_ref().expect("made above").send_to(b"x", path).map_err(WorkloadError::Send)?;
                let mut byte = [0u8; 1];
                receiver.as_ref().expect("made above").recv(&mut byte).map_err(WorkloadError::Receive)?;
            }
            Workload::Mkdir => {
                let dir = made.as_deref().expect("named above");
                std::fs::create_dir(dir).and_then(|()| std::fs::remove_dir(dir)).map_err(WorkloadError::Mkdir)?;
            }
        }
        if !summary {
            let ns = t.elapsed().as_nanos() as f64;
            samples.push(if kind == Workload::Getppid { ns / 100.0 } else { ns });
        }
    }
    let elapsed = start.elapsed().as_nanos() as u64;
    if listener.is_some() || receiver.is_some() {
        let _ = std::fs::remove_file(path);
    }
    match summary {
        true => println!("{}", serde_json::json!({ "count": count, "elapsed_ns": elapsed })),
        false => println!("{}", serde_json::json!({ "ns": samples, "elapsed_ns": elapsed })),
    }
    Ok(0)
}
