//! Reading a session back: re-deciding its accesses under another surface
//! ([`replay`]) and the narrowest grants under which it would have had no
//! refusals ([`suggest`]). Both read the trail through the typed records of
//! [`crate::audit`] only.

pub mod replay;
pub mod report;
pub mod suggest;

use crate::audit::{self, AccessKind, RuleKind};
use crate::policy::{GlobEffect, Mode, Origin, Rule, Surface};
use std::path::{Path, PathBuf};

/// The surface a recorded run had, rebuilt from its session record: every
/// entry and pattern as recorded (canonical, absolute), and this host's
/// procfs mounts.
pub fn recorded_surface(start: &audit::SessionStart) -> Surface {
    let mut surface = Surface::new();
    for audit::SurfaceEntry(path, kind, origin) in &start.surface {
        let origin = Origin::Flag(format!("recorded: {origin}"));
        let mode = match kind.as_str() {
            "ro" => Some(Mode::Ro),
            "rw" => Some(Mode::Rw),
            "deny" => Some(Mode::Deny),
            _ => None,
        };
        let effect = match kind.as_str() {
            "glob:grant" => Some(GlobEffect::Grant),
            "glob:deny" => Some(GlobEffect::Deny),
            "glob:denywrites" => Some(GlobEffect::DenyWrites),
            _ => None,
        };
        match (mode, effect) {
            (Some(mode), _) => surface.add(Rule { path: PathBuf::from(path), mode, origin }),
            (_, Some(effect)) => {
                let _ = surface.add_glob(Path::new(path), effect, origin);
            }
            _ => {}
        }
    }
    for m in crate::policy::system::proc_mounts() {
        surface.add_proc_mount(m);
    }
    surface
}

/// Whether a recorded decision can be decided again by a surface: not one
/// about the recorded run's own session directories or processes (they do
/// not exist any more), an object it held, a network port, or a call that
/// failed before any decision.
pub fn replayable(d: &audit::Decision) -> bool {
    matches!(
        d.rule_kind,
        RuleKind::Entry | RuleKind::CarveOut | RuleKind::ProcOutside | RuleKind::Ancestor | RuleKind::NoEntry
    ) && d.access != AccessKind::Connect
        && d.decision != audit::Verdict::Error
}

/// Whether `surface` allows the recorded access (nobody is inside the
/// sandbox now, so `/proc/<pid>` is always refused).
pub fn allows(surface: &Surface, d: &audit::Decision) -> bool {
    let Some(access) = d.access.access() else { return false };
    surface.decide(&d.subject().0, access, &crate::policy::NoProcesses).allowed
}

pub use crate::policy::credentials::{credentials_beneath, is_credential};

/// `s` as one shell word: as it is where it needs no quoting, else in
/// single quotes.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-+=:,@%".contains(&b)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Text from the sandbox (a process name, a path) made safe for a
/// terminal, a comment in a generated file or a one-line message: control
/// characters (newlines, escape sequences) are written as `\u{..}`.
pub fn sanitize(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let escaped: Vec<char> =
                if c.is_control() { format!("\\u{{{:x}}}", u32::from(c)).chars().collect() } else { vec![c] };
            escaped
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_recognised_by_their_components() {
        for p in ["/home/u/.ssh/id_rsa", "/home/u/.aws", "/w/.env", "/w/.env.local", "/home/u/.config/gh/hosts.yml"] {
            assert!(is_credential(Path::new(p)), "{p}");
        }
        for p in ["/home/u/.sshd", "/w/env", "/home/u/.config/git", "/w/src/environment.rs"] {
            assert!(!is_credential(Path::new(p)), "{p}");
        }
    }

    #[test]
    fn control_characters_never_pass() {
        assert_eq!(sanitize("ls"), "ls");
        assert_eq!(sanitize("a\nadditional_writes = [\"/\"]"), "a\\u{a}additional_writes = [\"/\"]");
        assert_eq!(sanitize("\x1b[31mred"), "\\u{1b}[31mred");
    }
}
