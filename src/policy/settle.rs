//! Carve-out patterns settled against the files that exist when a session
//! starts.
//!
//! A `deny` or `deny_writes` pattern such as `**/*.key` names files wherever
//! they lie in a tree, and the kernel can only hold carve-outs that name
//! objects (a Landlock rule, a mount). So before the command starts, each
//! such pattern is matched against the granted trees beneath its base, and
//! every file or directory it matches then becomes a carve-out of its own,
//! decided by the trie and masked in the command's mount namespace
//! (`sandbox::landlock::Layout`). Names the session makes later are its
//! own: a project's test key that `npm install` unpacks is written, not
//! silently refused. A credential that exists when the session starts is
//! protected wherever the pattern finds it.
//!
//! Patterns that name one place (a literal path, or a literal directory
//! followed by `/**`: `secrets/**`, every `deny_writes` entry) are not
//! settled: they cover what is made there later too, and the kernel holds
//! them with one mask on that place ([`GlobRule::subtree`]).
//!
//! This walks the file system; the rest of `policy` does no I/O.

use super::{GlobEffect, GlobRule, Mode, Origin, Rule, Surface};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// What settling found, for `policy show` and the session record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settled {
    /// Per pattern settled (its text): how many existing names it matched.
    pub matched: Vec<(String, usize)>,
    /// Directory entries looked at.
    pub entries: usize,
}

impl Surface {
    /// Settles every carve-out pattern that does not name one place: its
    /// matches among the files that exist now become rules of their own
    /// (`deny`, or read-only where the tree around them is writable for a
    /// `deny_writes` pattern), and the pattern decides nothing more.
    pub fn settle_patterns(&mut self) -> Settled {
        let mut settled = Settled::default();
        let pending: Vec<usize> = self
            .globs
            .iter()
            .enumerate()
            .filter(|(_, g)| g.effect != GlobEffect::Grant && !g.settled && g.subtree().is_none())
            .map(|(i, _)| i)
            .collect();
        if pending.is_empty() {
            return settled;
        }
        // Every granted tree a pattern's base covers or holds is walked once,
        // against every pattern whose base covers it.
        let mut roots: Vec<PathBuf> = Vec::new();
        for &i in &pending {
            for root in self.granted_roots(&self.globs[i].base) {
                if !roots.iter().any(|r| root.starts_with(r)) {
                    roots.retain(|r| !r.starts_with(&root));
                    roots.push(root);
                }
            }
        }
        let mut found: Vec<(PathBuf, usize)> = Vec::new();
        for root in &roots {
            let patterns: Vec<&GlobRule> = pending.iter().map(|&i| &self.globs[i]).collect();
            settled.entries += walk(self, root, &patterns, &mut |path, k| found.push((path, pending[k])));
        }
        found.sort();
        found.dedup();
        let mut counts = vec![0usize; self.globs.len()];
        for (path, i) in found {
            let g = &self.globs[i];
            let mode = match g.effect {
                GlobEffect::Deny => Mode::Deny,
                // Read-only where it was writable; where it was read-only
                // already (or not granted at all) there is nothing to add.
                _ => match self.lookup(path.as_os_str().as_bytes()).map(|r| self.rules[r as usize].mode) {
                    Some(Mode::Rw) => Mode::Ro,
                    _ => continue,
                },
            };
            counts[i] += 1;
            let origin = Origin::Matched(g.pattern.display().to_string(), Box::new(g.origin.clone()));
            self.add(Rule { path, mode, origin });
        }
        for &i in &pending {
            self.globs[i].settled = true;
            settled.matched.push((self.globs[i].pattern.display().to_string(), counts[i]));
        }
        settled
    }

    /// The granted trees a pattern based at `base` can match in: `base`
    /// itself if a grant covers it, and every grant beneath it, never a
    /// procfs or sysfs.
    fn granted_roots(&self, base: &Path) -> Vec<PathBuf> {
        let granted =
            |p: &Path| self.lookup(p.as_os_str().as_bytes()).is_some_and(|i| self.rules[i as usize].mode != Mode::Deny);
        let special = |p: &Path| self.proc_mounts().iter().any(|m| p.starts_with(m)) || p.starts_with("/sys");
        let mut roots: Vec<PathBuf> = Vec::new();
        if granted(base) && !special(base) {
            roots.push(base.to_path_buf());
        }
        for (_, r) in self.effective_rules() {
            if r.mode != Mode::Deny && r.path.starts_with(base) && r.path != base && !special(&r.path) {
                roots.push(r.path.clone());
            }
        }
        roots
    }
}

/// Walks `root` without following symlinks, calling `found` with each path
/// that a pattern of `patterns` matches (and its index there); a matched
/// directory is not entered, nor is a carve-out. Returns the entries seen.
fn walk(surface: &Surface, root: &Path, patterns: &[&GlobRule], found: &mut dyn FnMut(PathBuf, usize)) -> usize {
    let carved = |p: &Path| {
        surface.lookup(p.as_os_str().as_bytes()).is_some_and(|i| surface.rules()[i as usize].mode == Mode::Deny)
    };
    let mut seen = 0;
    let mut dirs = vec![root.to_path_buf()];
    if let Some(k) = patterns.iter().position(|g| g.matches(root.as_os_str().as_bytes())) {
        found(root.to_path_buf(), k);
        return 1;
    }
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            seen += 1;
            let path = entry.path();
            if let Some(k) = patterns.iter().position(|g| g.matches(path.as_os_str().as_bytes())) {
                found(path, k);
                continue;
            }
            if entry.file_type().is_ok_and(|t| t.is_dir()) && !carved(&path) {
                dirs.push(path);
            }
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_settle_on_what_exists_and_places_stay_patterns() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        for f in ["a.key", "sub/b.key", "sub/c.txt", "secrets/s", ".git/hooks/pre-commit", "ro/d.lock", "e.lock"] {
            let p = ws.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        let o = || Origin::Flag("t".into());
        let mut s = Surface::new();
        s.add(Rule { path: ws.clone(), mode: Mode::Rw, origin: o() });
        s.add(Rule { path: ws.join("ro"), mode: Mode::Ro, origin: o() });
        s.add_glob(&ws.join("**/*.key"), GlobEffect::Deny, o()).unwrap();
        s.add_glob(&ws.join("**/*.lock"), GlobEffect::DenyWrites, o()).unwrap();
        s.add_glob(&ws.join("secrets/**"), GlobEffect::Deny, o()).unwrap();
        s.add_glob(&ws.join(".git/hooks"), GlobEffect::DenyWrites, o()).unwrap();
        s.add_glob(&ws.join(".git/hooks/**"), GlobEffect::DenyWrites, o()).unwrap();
        let settled = s.settle_patterns();
        assert_eq!(settled.matched.len(), 2, "{settled:?}");
        let none = super::super::NoProcesses;
        let d = |p: &str, a| s.decide(ws.join(p).as_os_str().as_bytes(), a, &none);
        use super::super::Access;
        // What existed is carved out, by rules of its own.
        assert!(!d("a.key", Access::Read).allowed);
        assert!(!d("sub/b.key", Access::Read).allowed);
        assert!(s.is_carve_out(d("sub/b.key", Access::Read).reason));
        assert!(!d("e.lock", Access::Write).allowed && d("e.lock", Access::Read).allowed);
        // Read-only already: nothing added, still read-only.
        assert!(!d("ro/d.lock", Access::Write).allowed && d("ro/d.lock", Access::Read).allowed);
        // Names made later are the session's own.
        assert!(d("new.key", Access::Create).allowed);
        assert!(d("sub/new.key", Access::Write).allowed);
        assert!(d("new.lock", Access::Write).allowed);
        // Places stay patterns: later names there are covered too.
        assert!(!d("secrets/new", Access::Create).allowed);
        assert!(!d(".git/hooks/post-commit", Access::Create).allowed);
        assert!(d("sub/c.txt", Access::Write).allowed);
    }
}
