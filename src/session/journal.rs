//! The session's undo journal (`--journal DIR`): its directory made and
//! carved out of the surface before the backstop is built, started once
//! the trail's first line is known, sealed once the command is gone.

use super::{Config, RunError};
use crate::audit::{self, Bytes, TrailKey};
use crate::journal::{self, Journal, Scope};
use crate::policy::{Mode, Origin, Rule, Surface};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;
use std::sync::Arc;

/// What `--journal` asks for.
#[derive(Debug, Clone)]
pub struct JournalOptions {
    /// The directory (must not exist, or be empty).
    pub dir: PathBuf,
    /// The most bytes of content it keeps (`--journal-max`).
    pub budget: u64,
}

/// A journal's directory, made, and the key that anchors it.
pub(super) struct Prepared {
    dir: PathBuf,
    key: TrailKey,
}

/// Makes the journal's directory and carves it out of the surface (the
/// command can neither read, change nor remove its own journal), and loads
/// the key that will anchor it.
pub(super) fn prepare(args: &Config, surface: &mut Surface) -> Result<Option<Prepared>, RunError> {
    let Some(options) = &args.journal else { return Ok(None) };
    let key_path = args.audit_key.clone().or_else(audit::key::default_path).ok_or_else(|| RunError::TrailKey {
        path: "$HOME/.local/state/interpose/audit.key".into(),
        err: std::io::Error::other("HOME is unset"),
    })?;
    let key = TrailKey::load_or_create(&key_path).map_err(|err| RunError::TrailKey { path: key_path, err })?;
    let dir = journal::make_dir(&options.dir)?;
    surface.add(Rule { path: dir.clone(), mode: Mode::Deny, origin: Origin::Trail("the undo journal") });
    Ok(Some(Prepared { dir, key }))
}

/// Starts the journal for the changes `surface`'s writable trees may see;
/// `trail` is the hash of the audit trail's first line, when it has one.
pub(super) fn start(
    prepared: &Prepared,
    args: &Config,
    surface: &Surface,
    trail: Option<String>,
) -> Result<Arc<Journal>, RunError> {
    let options = args.journal.as_ref().expect("prepared from it");
    let scope = Scope::of(surface);
    if scope.roots.is_empty() {
        return Err(RunError::JournalNothing);
    }
    let config = journal::Config {
        dir: prepared.dir.clone(),
        budget: options.budget,
        command: args.command.iter().map(|a| Bytes(a.clone().into_vec())).collect(),
        trail,
    };
    Ok(Arc::new(Journal::start(config, scope)?))
}

/// Seals the journal once the command is gone and says what it holds;
/// the link the trail's end names it by.
pub(super) fn end(journal: &Journal, prepared: &Prepared, quiet: bool) -> Result<audit::JournalLink, RunError> {
    let summary = journal.seal(Some(&prepared.key))?;
    let dir = journal.dir().display().to_string();
    if summary.not_restorable > 0 {
        super::say(&format!(
            "journal {dir}: {} object(s) recorded as not restorable; undo will leave them as the session left them:",
            summary.not_restorable
        ));
        for (path, why) in &summary.not_restorable_examples {
            super::say(&format!("  {}: {why}", crate::forensics::sanitize(&String::from_utf8_lossy(path))));
        }
    }
    if !quiet {
        let reflinked = match summary.reflinked {
            0 => String::new(),
            r => format!(", {} of it shared by reflink", journal::undo::describe(r)),
        };
        super::say(&format!(
            "journal {dir}: {} change(s), {} of content kept{reflinked}; to put the trees back: interpose undo {}",
            summary.changes,
            journal::undo::describe(summary.bytes),
            crate::forensics::shell_quote(&dir)
        ));
    }
    Ok(audit::JournalLink {
        dir: Bytes(journal.dir().as_os_str().as_bytes().to_vec()),
        head: summary.head,
        changes: summary.changes,
    })
}
