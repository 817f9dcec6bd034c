//! `interpose report`: verify a trail, suggest a policy from it, or print
//! what it says ([`crate::forensics::report`]).

use super::SuggestFormat;
use super::{ReportArgs, ReportFormat};
use crate::audit::Reader;
use crate::forensics::report::{build, checked, print_text, write_html};
use crate::forensics::sanitize;

/// Runs the verb; returns the exit code: 0, 1 for `--verify` of a trail
/// that is not intact, 125 for a file that is not a trail.
pub fn run(args: &ReportArgs) -> i32 {
    let name = sanitize(&args.file.display().to_string());
    let mut reader = match Reader::open(&args.file) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("interpose: {name}: {e}");
            return super::FAILED;
        }
    };
    let failed = |e: std::io::Error| {
        eprintln!("interpose: {name}: {e}");
        super::FAILED
    };
    if args.verify {
        for record in reader.by_ref() {
            if let Err(e) = record {
                return failed(e);
            }
        }
        let verdict = checked(&reader, args.audit_key.as_deref());
        let (intact, what) = match &verdict {
            Ok(what) => (true, what.clone()),
            Err(e) => (false, e.to_string()),
        };
        match args.format {
            ReportFormat::Text => println!("{name}: {what}"),
            ReportFormat::Json => println!(
                "{}",
                serde_json::json!({
                    "file": name,
                    "verified": intact,
                    "chain_intact": reader.integrity().is_ok(),
                    "detail": what,
                })
            ),
        }
        return i32::from(!intact);
    }
    if args.suggest {
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        let s = match crate::forensics::suggest::suggest(reader, args.confirm_credentials, home.as_deref()) {
            Ok(s) => s,
            Err(e) => return failed(e),
        };
        use crate::forensics::suggest::{as_flags, as_json, as_policy};
        match (args.format, args.suggest_as) {
            (ReportFormat::Json, _) => {
                println!("{}", serde_json::to_string_pretty(&as_json(&s)).expect("serializable"))
            }
            (ReportFormat::Text, SuggestFormat::Flags) => print!("{}", as_flags(&s)),
            (ReportFormat::Text, SuggestFormat::Policy) => print!("{}", as_policy(&s)),
        }
        return 0;
    }
    let (report, rows) = match build(&mut reader) {
        Ok(r) => r,
        Err(e) => return failed(e),
    };
    if let Some(out) = &args.html {
        if let Err(e) = write_html(out, &report, &rows, args.force) {
            eprintln!("interpose: --html {}: {e}", out.display());
            return super::FAILED;
        }
    }
    match args.format {
        ReportFormat::Text => print_text(&report),
        ReportFormat::Json => println!("{}", serde_json::to_string_pretty(&report).expect("serializable")),
    }
    0
}
