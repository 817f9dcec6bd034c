//! `interpose replay`: every access a trail recorded, decided again under
//! other flags, to see what a changed surface would break or open up before
//! deploying it. Usable as a CI gate: exit 1 when anything is newly denied.

use super::ReplayArgs;
use crate::audit::Reader;
use crate::forensics::replay::{replay, Change};
use crate::forensics::sanitize;

/// Runs the verb; prints the changes and a one-line summary. Returns 0, 1
/// when an access is newly denied, 125 on bad input.
pub fn run(args: &ReplayArgs) -> i32 {
    let name = sanitize(&args.file.display().to_string());
    let reader = match Reader::open(&args.file) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("interpose: {name}: {e}");
            return super::FAILED;
        }
    };
    let surface = match args.surface.build() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("interpose: {e}");
            return super::FAILED;
        }
    };
    let replayed = match replay(reader, &surface) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("interpose: {name}: {e}");
            return super::FAILED;
        }
    };
    println!("replayed {} decisions from {name}", replayed.decisions);
    for ((change, access, path), n) in &replayed.changes {
        let access = format!("{access:?}").to_lowercase();
        println!("{}: {access} {} ({n}x)", change.name(), sanitize(&path.lossy()));
    }
    if let Err(e) = &replayed.integrity {
        println!("warning: the trail is not intact: {e}");
    }
    let (denied, allowed) = (replayed.count(Change::NewlyDenied), replayed.count(Change::NewlyAllowed));
    if denied + allowed == 0 {
        println!("no change");
    }
    println!("replay: {denied} access(es) newly denied, {allowed} newly allowed, of {} decisions", replayed.decisions);
    i32::from(denied > 0)
}
