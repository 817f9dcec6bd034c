//! `interpose undo DIR`: the trees a journalled session changed, put back.

use super::UndoArgs;
use crate::audit::TrailKey;
use crate::forensics::sanitize;
use crate::journal::undo::{undo, Options, UndoError};

/// Runs the verb: 0 when every tree is back as it was, 1 when undo refused
/// (a journal not as its session wrote it, files changed after the
/// session) or could not put everything back (each named), 125 when the
/// journal cannot be read.
pub fn run(args: &UndoArgs) -> i32 {
    let name = sanitize(&args.dir.display().to_string());
    let key_path = args.audit_key.clone().or_else(crate::audit::key::default_path);
    let key = key_path.as_deref().and_then(|p| TrailKey::load(p).ok());
    let options = Options { force: args.force, dry_run: args.dry_run };
    let report = match undo(&args.dir, key.as_ref(), options, &mut |line| println!("{line}")) {
        Ok(r) => r,
        Err(UndoError::Read(e)) => {
            eprintln!("interpose: undo: {e}");
            return super::FAILED;
        }
        Err(e) => {
            eprintln!("interpose: undo: {e}");
            return 1;
        }
    };
    if let Some(why) = &report.unsealed {
        eprintln!("interpose: undo: warning: {why}; undone anyway (--force)");
    }
    if let Some(why) = &report.stopped {
        eprintln!("interpose: undo: the session was stopped when its journal could not be written ({why}); every change before that is undone");
    }
    for changed in &report.overridden {
        eprintln!("interpose: undo: changed after the session, overwritten (--force): {changed}");
    }
    for nr in &report.not_restorable {
        eprintln!("interpose: undo: not restored (recorded when the session ran): {nr}");
    }
    for p in &report.problems {
        eprintln!("interpose: undo: {p}");
    }
    let verb = if args.dry_run { "would undo" } else { "undid" };
    println!(
        "{verb} {} change(s) in {name}{}",
        report.actions.len(),
        if report.complete() { "" } else { "; not everything is back as it was (above)" }
    );
    i32::from(!report.complete())
}
