//! `interpose why`: which surface entry decides an access, without running
//! anything.

use super::WhyArgs;
use crate::policy::{Access, NoProcesses};
use std::os::unix::ffi::OsStrExt;

/// Prints the verdict; returns 0 when allowed, 1 when denied, 125 when the surface cannot be built.
pub fn run(args: &WhyArgs) -> i32 {
    let surface = match args.surface.build().map_err(|e| e.to_string()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("interpose: {e}");
            return super::FAILED;
        }
    };
    let access = if args.write {
        Access::Write
    } else if args.exec {
        Access::Exec
    } else {
        Access::Read
    };
    // As the supervisor would decide it: canonical as far as it exists.
    let path = crate::policy::canonical_lenient(&args.path).unwrap_or_else(|_| args.path.clone());
    let verdict = surface.decide(path.as_os_str().as_bytes(), access, &NoProcesses);
    let word = if verdict.allowed { "allowed" } else { "denied" };
    let what = match access {
        Access::Write => "write",
        Access::Exec => "exec",
        _ => "read",
    };
    let remedy = (!verdict.allowed).then(|| surface.remedy(&path, access, verdict.reason));
    if args.format == super::ReportFormat::Json {
        let json = serde_json::json!({
            "path": path.display().to_string(),
            "as_given": args.path.display().to_string(),
            "access": what,
            "allowed": verdict.allowed,
            "decided_by": surface.describe(verdict.reason),
            "allowed_by": remedy,
        });
        println!("{json}");
        return i32::from(!verdict.allowed);
    }
    println!("{what} {}: {word}", path.display());
    println!("  decided by: {}", surface.describe(verdict.reason));
    if path != args.path {
        println!("  (resolved from {})", args.path.display());
    }
    if let Some(remedy) = remedy {
        println!("  would be allowed by: {remedy}");
    }
    print_modes(&surface);
    i32::from(!verdict.allowed)
}

/// What each mode traps for this surface.
fn print_modes(surface: &crate::policy::Surface) {
    use crate::syscalls::Trapping;
    let Ok(abi) = crate::sys::landlock::abi_version() else {
        println!("  modes: Landlock is not available here; only full mode can run");
        return;
    };
    // As a run with a mount and PID namespace of its own would lay it out.
    let layout = crate::sandbox::landlock::layout(surface, true);
    let exact = layout.names_exact;
    let reads = layout.reads_exact && crate::sandbox::landlock::own_proc(surface, abi).is_ok();
    let fast = Trapping::Fast { exact, reads, links: false };
    println!("  full mode (default): every path syscall is trapped and decided by the supervisor");
    println!(
        "  fast mode (--fast): Landlock {} this surface exactly; left to Landlock or unchecked (metadata): {}",
        if exact { "decides" } else { "cannot decide" },
        fast.untrapped().join(" ")
    );
    if reads {
        println!(
            "  fast mode, with a PID namespace of its own (as root or with user namespaces): read-only {} too",
            fast.untrapped_when_read_only().join(" ")
        );
    }
    if let Some(why) = &layout.reads_inexact {
        println!("  fast mode keeps read-only opens trapped here: {why}");
    }
}
