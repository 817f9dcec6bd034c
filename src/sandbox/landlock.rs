//! The Landlock backstop: a ruleset built from the same surface as the trie.
//!
//! The supervisor decides every trapped call, but calls it answers with
//! CONTINUE are resolved again by the kernel, after the check. Landlock makes
//! the kernel enforce the same surface on that second resolution, so a path
//! swapped in between still cannot reach anything outside it.
//!
//! Landlock grants whole trees and cannot carve a denied entry out of a
//! granted one. Where the surface does (a secret inside `/etc`), the ruleset
//! grants the tree's entries one by one instead, leaving the carve-out out.

use crate::policy::{Mode, Surface};
use landlock::{
    Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr,
    Scope, ABI,
};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

/// Errors building the ruleset.
#[derive(Debug, thiserror::Error)]
pub enum LandlockError {
    /// The kernel offers no Landlock ABI.
    #[error("Landlock is not available ({0}); enable it with the `lsm=landlock,...` boot parameter (Linux 5.13+), or pass --no-landlock to run without the backstop")]
    Unavailable(nix::errno::Errno),
    /// A crate call failed.
    #[error("building the Landlock ruleset: {0}")]
    Ruleset(#[from] landlock::RulesetError),
    /// The ruleset came back without a descriptor.
    #[error("the Landlock ruleset was not created")]
    NotCreated,
}

/// What the ruleset covers, for `interpose check` and the session record.
#[derive(Debug)]
pub struct Backstop {
    /// The ruleset to apply in the child with `landlock_restrict_self`.
    pub ruleset: OwnedFd,
    /// The ABI version the ruleset was built for.
    pub abi: i32,
    /// Whether the ABI 6 scopes (signals, abstract unix sockets) are on.
    pub scoped: bool,
    /// Paths granted and what was granted, in order.
    pub rules: Vec<(PathBuf, Mode)>,
}

fn rights(mode: Mode, abi: ABI, is_dir: bool) -> BitFlags<AccessFs> {
    let all = match mode {
        Mode::Deny => BitFlags::empty(),
        Mode::Ro => AccessFs::ReadFile | AccessFs::ReadDir | AccessFs::Execute,
        // No device nodes, even in the workspace: one would give raw access
        // to a disk or to kernel memory.
        Mode::Rw => AccessFs::from_all(abi) & !(AccessFs::MakeChar | AccessFs::MakeBlock),
    };
    if is_dir {
        all
    } else {
        all & AccessFs::from_file(abi)
    }
}

/// The (path, mode) grants that express `surface` in Landlock terms.
pub fn grants(surface: &Surface) -> Vec<(PathBuf, Mode, bool)> {
    let mut out = Vec::new();
    for (_, rule) in surface.effective_rules() {
        if rule.mode == Mode::Deny {
            continue;
        }
        grant(surface, &rule.path, rule.mode, &mut out);
    }
    out
}

/// Grants `path` with `mode`, or, if a narrower entry lies beneath it, lists
/// the directory and grants its entries one by one.
fn grant(surface: &Surface, path: &Path, mode: Mode, out: &mut Vec<(PathBuf, Mode, bool)>) {
    let Ok(md) = path.metadata() else { return };
    if !md.is_dir() || !narrower_beneath(surface, path, mode) {
        out.push((path.to_path_buf(), mode, md.is_dir()));
        return;
    }
    // Listing the directory is harmless; its content is granted per entry.
    out.push((path.to_path_buf(), Mode::Ro, true));
    let Ok(entries) = std::fs::read_dir(path) else { return };
    for entry in entries.flatten() {
        let child = entry.path();
        if is_entry(surface, &child) {
            continue; // granted (or denied) by its own entry
        }
        grant(surface, &child, mode, out);
    }
}

fn is_entry(surface: &Surface, path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    surface.lookup(path.as_os_str().as_bytes()).is_some_and(|i| surface.rules()[i as usize].path == path)
}

fn narrower_beneath(surface: &Surface, path: &Path, mode: Mode) -> bool {
    surface.effective_rules().any(|(_, r)| r.path != path && r.path.starts_with(path) && r.mode < mode)
}

/// Builds the ruleset for `surface` at the highest ABI the kernel offers.
pub fn build(surface: &Surface) -> Result<Backstop, LandlockError> {
    let version = crate::sys::landlock::abi_version().map_err(LandlockError::Unavailable)?;
    let abi = ABI::from(version);
    let scoped = version >= 6;
    let mut ruleset =
        Ruleset::default().set_compatibility(CompatLevel::HardRequirement).handle_access(AccessFs::from_all(abi))?;
    if scoped {
        ruleset = ruleset.scope(Scope::AbstractUnixSocket | Scope::Signal)?;
    }
    let mut created = ruleset.create()?;
    let mut rules = Vec::new();
    for (path, mode, is_dir) in grants(surface) {
        let Ok(fd) = PathFd::new(&path) else { continue };
        created = created.add_rule(PathBeneath::new(fd, rights(mode, abi, is_dir)))?;
        rules.push((path, mode));
    }
    let fd: Option<OwnedFd> = created.into();
    let ruleset = fd.ok_or(LandlockError::NotCreated)?;
    Ok(Backstop { ruleset, abi: version, scoped, rules })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Origin, Rule};

    #[test]
    fn carve_outs_are_expanded_and_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for f in ["a", "secret", "sub/b", "sub/key"] {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        let mut s = Surface::new();
        let origin = Origin::Flag("test".into());
        s.add(Rule { path: root.clone(), mode: Mode::Ro, origin: origin.clone() });
        s.add(Rule { path: root.join("secret"), mode: Mode::Deny, origin: origin.clone() });
        s.add(Rule { path: root.join("sub/key"), mode: Mode::Deny, origin });
        let mut g: Vec<(PathBuf, Mode)> = grants(&s).into_iter().map(|(p, m, _)| (p, m)).collect();
        g.sort();
        assert_eq!(
            g,
            vec![
                (root.clone(), Mode::Ro),
                (root.join("a"), Mode::Ro),
                (root.join("sub"), Mode::Ro),
                (root.join("sub/b"), Mode::Ro),
            ]
        );
    }
}
