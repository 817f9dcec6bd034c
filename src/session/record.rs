//! The trail's start: where it is written, its key, and the session
//! record that opens it.

use super::{io, io_at, surface, Config, RunError};
use crate::audit;
use crate::policy::{Mode, Origin, Rule, Surface};
use crate::sandbox;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Opens where `--audit` writes, and the key that anchors it; a trail file
/// and the key are carved out of the surface wherever it reaches them, so
/// the command can neither read, replace nor remove them. The key is made
/// and carved out in every session, with or without `--audit`: were it
/// missing, a command whose surface reaches its place could plant a key of
/// its own there for later sessions to sign with.
pub(super) fn open_trail(
    args: &Config,
    surface: &mut Surface,
) -> Result<Option<(audit::Output, audit::TrailKey)>, RunError> {
    let key_path = match args.audit_key.clone().or_else(audit::key::default_path) {
        Some(k) => k,
        None if args.audit.is_none() => return Ok(None),
        None => {
            let (path, err) = ("$HOME/.local/state/interpose/audit.key".into(), std::io::Error::other("HOME is unset"));
            return Err(RunError::TrailKey { path, err });
        }
    };
    let key = audit::TrailKey::load_or_create(&key_path);
    let mut carve = |path: &Path, what: &'static str| {
        if let Ok(canonical) = std::fs::canonicalize(path) {
            surface.add(Rule { path: canonical, mode: Mode::Deny, origin: Origin::Trail(what) });
        }
    };
    carve(&key_path, "the audit trail's key");
    let Some(p) = &args.audit else {
        if let Err(e) = key {
            tracing::debug!("no trail key at {}: {e}", key_path.display());
        }
        return Ok(None);
    };
    let key = key.map_err(|err| RunError::TrailKey { path: key_path.clone(), err })?;
    let out = if p.as_os_str() == "-" {
        // A descriptor of its own on stderr, not `std::io::stderr()`: the
        // writer would hold stderr's lock while blocked on a reader that
        // stopped reading, and every message interpose then writes would
        // wait behind it.
        let own = std::os::fd::AsFd::as_fd(&std::io::stderr()).try_clone_to_owned().map_err(io("--audit -: stderr"))?;
        audit::Output::Stream(Box::new(std::fs::File::from(own)))
    } else if let Some(socket) = p.as_os_str().as_bytes().strip_prefix(b"unix:") {
        let socket = Path::new(OsStr::from_bytes(socket));
        let stream =
            std::os::unix::net::UnixStream::connect(socket).map_err(io_at("--audit: connecting to", socket))?;
        audit::Output::Stream(Box::new(stream))
    } else {
        // A trail is never destroyed: an existing file (or a symlink
        // planted in its place) is refused, never truncated or followed.
        // A character device (/dev/null) holds no trail to lose. A FIFO is
        // refused: opened for writing by interpose alone it keeps what is
        // written until the run ends and loses it then, and a reader that
        // stops reading would stop the command (`unix:SOCKET` streams to a
        // collector, `-` to stderr).
        use std::os::unix::fs::FileTypeExt;
        let open = audit::trail_file_options();
        let f = match open.clone().create_new(true).open(p) {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let kind = std::fs::symlink_metadata(p).map(|m| m.file_type());
                if kind.as_ref().is_ok_and(std::fs::FileType::is_fifo) {
                    return Err(RunError::TrailFifo(p.clone()));
                }
                if !kind.is_ok_and(|k| k.is_char_device()) {
                    return Err(RunError::TrailExists(p.clone()));
                }
                open.open(p)
            }
            other => other,
        }
        .map_err(io_at("--audit", p))?;
        if f.metadata().is_ok_and(|m| m.is_file()) {
            carve(p, "the audit trail");
        }
        audit::Output::File(f)
    };
    Ok(Some((out, key)))
}

/// Adds to the session record which namespaces the session got: the mount
/// namespace (or why not) and whether the command has a PID namespace.
pub(super) fn with_namespace(mut record: audit::Record, namespace: &sandbox::namespace::Namespace) -> audit::Record {
    if let audit::Record::SessionStart(start) = &mut record {
        let detail = namespace.to_string();
        start.features.insert("session_namespace".into(), audit::Feature { present: namespace.can_mount(), detail });
        let detail = if namespace.can_mount() {
            "the command runs under an init of its own, with its own /proc; every process dies with interpose".into()
        } else {
            "none without a mount namespace: processes the command leaves behind are killed when it exits, not if interpose is killed".into()
        };
        start.features.insert("pid_namespace".into(), audit::Feature { present: namespace.can_mount(), detail });
    }
    record
}

pub(super) fn session_start(
    args: &Config,
    surface: &Surface,
    (policy, resolved): &surface::LoadedPolicy,
    dropped: &[crate::policy::env::Dropped],
    mode: audit::ModeRecord,
    caches: &sandbox::caches::Caches,
) -> audit::Record {
    use sha2::Digest;
    let features = crate::sandbox::features::probe()
        .into_iter()
        .map(|f| (f.name.to_string(), audit::Feature { present: f.present, detail: f.detail }))
        .collect();
    let policy = audit::PolicyRecord {
        file: args
            .surface
            .policy
            .as_ref()
            .map(|f| std::fs::canonicalize(f).unwrap_or_else(|_| f.clone()).display().to_string()),
        sources: policy
            .sources
            .iter()
            .map(|(name, text)| audit::PolicySource {
                name: name.clone(),
                sha256: audit::chain::hex(&sha2::Sha256::digest(text.as_bytes())),
            })
            .collect(),
        cwd: resolved.cwd.to_string_lossy().into_owned(),
        skipped: resolved
            .outcomes
            .iter()
            .filter_map(|(e, o)| match o {
                crate::policy::file::EntryOutcome::Skipped(why) => Some(audit::SkippedEntry {
                    entry: e.text.clone(),
                    field: e.field.key().into(),
                    origin: e.origin.to_string(),
                    why: why.clone(),
                }),
                _ => None,
            })
            .collect(),
        home: policy.home.name().into(),
    };
    audit::Record::SessionStart(Box::new(audit::SessionStart {
        schema: audit::SCHEMA,
        version: env!("CARGO_PKG_VERSION").into(),
        command: args.command.iter().map(|a| audit::Bytes(a.as_bytes().to_vec())).collect(),
        surface: audit::SurfaceEntry::all_of(surface),
        policy: Some(policy),
        env_dropped: dropped.iter().map(|d| format!("{} ({})", d.name.to_string_lossy(), d.rule)).collect(),
        mode,
        caches: caches
            .kept
            .iter()
            .map(|(path, kept)| audit::CacheRecord { path: path.to_string_lossy().into(), kept: kept.to_string() })
            .collect(),
        surface_digest: audit::surface_digest(surface),
        features,
        container: None,
        time_ns: audit::now_ns(),
    }))
}

/// What fast mode leaves unchecked in every case.
const FAST_RESIDUAL: &str = "untrapped metadata calls (stat family, statfs, chdir, access with F_OK) are not checked: a program can learn that a path outside the surface exists and its attributes, never its content";

const FAST_READS: &str = "read-only opens are decided by Landlock alone and not recorded; the surface's carve-outs in /proc are masked (they open and read empty)";

/// What the session record says about the mode.
pub(super) fn mode_record(trapping: crate::syscalls::Trapping, learn: bool) -> audit::ModeRecord {
    use crate::syscalls::Trapping;
    let untrapped = trapping.untrapped().into_iter().map(String::from).collect();
    let untrapped_read_only = trapping.untrapped_when_read_only().into_iter().map(String::from).collect();
    match trapping {
        _ if learn => audit::ModeRecord {
            name: audit::ModeName::Learn,
            untrapped,
            untrapped_read_only,
            landlock_exact: None,
            residual: Some(
                "learning: nothing was enforced but the carve-outs (host secrets); refusals enforcement would have made are recorded as would_deny".into(),
            ),
            landlock_denials: None,
        },
        Trapping::All => audit::ModeRecord {
            name: audit::ModeName::Full,
            untrapped,
            untrapped_read_only,
            landlock_exact: None,
            residual: None,
            landlock_denials: None,
        },
        Trapping::Fast { exact, reads, links } => audit::ModeRecord {
            name: audit::ModeName::Fast,
            untrapped,
            untrapped_read_only,
            landlock_exact: Some(exact),
            residual: Some(match (reads, links) {
                (false, _) => FAST_RESIDUAL.into(),
                (true, false) => format!("{FAST_RESIDUAL}; {FAST_READS}"),
                (true, true) => format!("the root holds only the surface (--isolate): what it does not grant does not exist there, and untrapped metadata calls (stat family, statfs, chdir, access with F_OK) and link targets (readlink) are answered by the kernel from it, unrecorded; {FAST_READS}"),
            }),
            landlock_denials: Some("not observed: calls Landlock refuses are not in this trail".into()),
        },
    }
}
