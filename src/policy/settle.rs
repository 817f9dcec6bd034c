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
use crate::sys::fs;
use std::ffi::{CString, OsStr};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

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
///
/// The patterns are matched together ([`super::Patterns`]): matched one by
/// one, the ten of `examples/coding-agent.toml` made this walk 71 ms of a
/// session's start in a 25,000-entry Rust workspace (docs/performance.md).
/// Each directory is opened from its parent's handle, never by its whole
/// path (no lookup from `/` per directory, and a directory swapped for a
/// symlink meanwhile is not followed), and listed with `getdents64`; two
/// threads take the directories still to list from one stack.
fn walk(surface: &Surface, root: &Path, patterns: &[&GlobRule], found: &mut dyn FnMut(PathBuf, usize)) -> usize {
    let mut matching = super::Patterns::new(patterns);
    if let Some(k) = matching.first(root.as_os_str().as_bytes()) {
        found(root.to_path_buf(), k);
        return 1;
    }
    let Ok(top) = CString::new(root.as_os_str().as_bytes()) else { return 0 };
    let Ok(top) = fs::openat(fs::Dir::Cwd, &top, fs::LIST_DIRECTORY, 0) else { return 0 };
    let work = Work {
        state: Mutex::new(Pending { dirs: vec![(Place::Open(top), root.to_path_buf())], busy: 0 }),
        changed: Condvar::new(),
    };
    let other = matching.clone();
    let (seen, hits) = std::thread::scope(|s| {
        let helper = s.spawn(|| work.list_all(surface, other));
        let (mut seen, mut hits) = work.list_all(surface, matching);
        // A panic in the other thread must not drop what it found.
        let (more_seen, more_hits) = helper.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
        seen += more_seen;
        hits.extend(more_hits);
        (seen, hits)
    });
    for (path, k) in hits {
        found(path, k);
    }
    seen
}

/// A directory still to list: open already (the root), or a name in its
/// parent, whose handle its siblings share.
enum Place {
    Open(OwnedFd),
    In(Arc<OwnedFd>),
}

/// The directories still to list, and how many are being listed (whose
/// subdirectories may still come).
struct Pending {
    dirs: Vec<(Place, PathBuf)>,
    busy: usize,
}

/// The walk's shared stack.
struct Work {
    state: Mutex<Pending>,
    changed: Condvar,
}

/// One directory being listed: counted until dropped, a panic included, so
/// the other thread never waits for a listing that will not come.
struct Listing<'a>(&'a Work);

impl Drop for Listing<'_> {
    fn drop(&mut self) {
        self.0.state.lock().unwrap_or_else(PoisonError::into_inner).busy -= 1;
        self.0.changed.notify_all();
    }
}

impl Work {
    /// Lists directories from the stack until none is left and none is
    /// being listed: the entries seen, and each match with its pattern.
    fn list_all(&self, surface: &Surface, mut matching: super::Patterns<'_>) -> (usize, Vec<(PathBuf, usize)>) {
        let carved = |p: &[u8]| surface.lookup(p).is_some_and(|i| surface.rules()[i as usize].mode == Mode::Deny);
        let (mut seen, mut hits) = (0, Vec::new());
        let mut buf = vec![0u8; 32 * 1024];
        while let Some((place, path, listing)) = self.take() {
            let dir = match place {
                Place::Open(fd) => Some(fd),
                Place::In(parent) => path
                    .file_name()
                    .and_then(|n| CString::new(n.as_bytes()).ok())
                    .and_then(|n| fs::openat(fs::Dir::Fd(parent.as_fd()), &n, fs::LIST_DIRECTORY, 0).ok()),
            };
            // A directory that cannot be opened or read is passed over.
            let Some(dir) = dir.map(Arc::new) else { continue };
            let mut subdirs = Vec::new();
            // Each name is matched in one buffer holding the directory's
            // path: a path is made only for a match or a subdirectory.
            let mut child = path.as_os_str().as_bytes().to_vec();
            if child.last() != Some(&b'/') {
                child.push(b'/');
            }
            let stem = child.len();
            let _ = fs::entries(dir.as_fd(), &mut buf, |name, kind| {
                seen += 1;
                child.truncate(stem);
                child.extend_from_slice(name.to_bytes());
                let owned = || PathBuf::from(OsStr::from_bytes(&child));
                if let Some(k) = matching.first(&child) {
                    hits.push((owned(), k));
                    return;
                }
                let is_dir = match kind {
                    libc::DT_DIR => true,
                    libc::DT_UNKNOWN => fs::fstatat(fs::Dir::Fd(dir.as_fd()), name, libc::AT_SYMLINK_NOFOLLOW)
                        .is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFDIR),
                    _ => false,
                };
                if is_dir && !carved(&child) {
                    subdirs.push((Place::In(Arc::clone(&dir)), owned()));
                }
            });
            self.state.lock().unwrap_or_else(PoisonError::into_inner).dirs.extend(subdirs);
            drop(listing);
        }
        (seen, hits)
    }

    /// The next directory to list, counted as being listed; `None` once the
    /// stack is empty and nothing being listed can add to it.
    fn take(&self) -> Option<(Place, PathBuf, Listing<'_>)> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some((place, path)) = state.dirs.pop() {
                state.busy += 1;
                return Some((place, path, Listing(self)));
            }
            if state.busy == 0 {
                return None;
            }
            state = self.changed.wait(state).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_matched_together_match_as_each_does_alone() {
        let o = || Origin::Flag("t".into());
        let mut s = Surface::new();
        let texts = [
            "/ws/.env",
            "/ws/.env.*",
            "/ws/**/*.key",
            "/ws/**/*-key.pem",
            "/ws/**/id_rsa",
            "/ws/sub/**/*.p12",
            "/ws/a?c/*.txt",
            "/ws/[xy]/**",
            "/home/u/**/*.key",
            "/ws/lit\\*.key",
            "/ws/**/.git/config",
            "/ws/**/*.p12",
        ];
        for t in texts {
            s.add_glob(Path::new(t), GlobEffect::Deny, o()).unwrap();
        }
        let rules: Vec<&GlobRule> = s.globs.iter().collect();
        let mut together = super::super::Patterns::new(&rules);
        assert!(together.sets.is_some(), "the sets were not built");
        let paths = [
            "/ws",
            "/ws/",
            "/ws/.env",
            "/ws/.env.local",
            "/ws/.envx",
            "/ws/a.key",
            "/ws/d/e/f.key",
            "/ws/f.key.bak",
            "/ws/x-key.pem",
            "/ws/d/x_key.pem",
            "/ws/id_rsa",
            "/ws/d/id_rsa.pub",
            "/ws/d/id_rsa",
            "/ws/sub/b.p12",
            "/ws/b.p12",
            "/ws/sub/d/e.p12",
            "/ws/abc/t.txt",
            "/ws/abc/d/t.txt",
            "/ws/x/anything",
            "/ws/z/anything",
            "/home/u/k.key",
            "/home/u/d/k.key",
            "/home/uu/k.key",
            "/ws/lit*.key",
            "/ws/litx.key",
            "/ws/.git/config",
            "/ws/d/.git/config",
            "/wsx/a.key",
            "/ws/x/a.key",
            "/a.key",
            "/ws/sub/x/.env",
            "/ws/d\\e.key",
        ];
        for p in paths {
            let alone = rules.iter().position(|g| g.matches(p.as_bytes()));
            assert_eq!(together.first(p.as_bytes()), alone, "{p}");
        }
        assert_eq!(together.first(b"/ws/d/e/f.key"), Some(2));
        // Two patterns, the first given wins, as alone: of one base, and
        // of two (the first base's set yields the later pattern).
        assert_eq!(together.first(b"/ws/x/a.key"), Some(2));
        assert_eq!(together.first(b"/ws/sub/b.p12"), Some(5));
    }

    #[test]
    fn the_walk_finds_every_match_in_a_wide_tree_and_follows_no_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().canonicalize().unwrap();
        let ws = top.join("ws");
        let file = |p: &Path| {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        };
        // Wide enough that both threads list directories.
        for n in 0..300 {
            file(&ws.join(format!("d{n}/f.txt")));
        }
        file(&ws.join("d17/x/y/secret.key"));
        file(&ws.join("d150/id_rsa"));
        file(&ws.join("carved/c.key"));
        file(&top.join("outside/o.key"));
        std::os::unix::fs::symlink(top.join("outside"), ws.join("d3/link")).unwrap();
        let o = || Origin::Flag("t".into());
        let mut s = Surface::new();
        s.add(Rule { path: ws.clone(), mode: Mode::Rw, origin: o() });
        s.add(Rule { path: ws.join("carved"), mode: Mode::Deny, origin: o() });
        s.add_glob(&ws.join("**/*.key"), GlobEffect::Deny, o()).unwrap();
        s.add_glob(&ws.join("**/id_rsa"), GlobEffect::Deny, o()).unwrap();
        let settled = s.settle_patterns();
        let matched: Vec<usize> = settled.matched.iter().map(|(_, n)| *n).collect();
        assert_eq!(matched, [1, 1], "{settled:?}");
        // 300 directories and their files, x, y, the key, id_rsa, the link,
        // carved (not entered).
        assert_eq!(settled.entries, 600 + 2 + 1 + 1 + 1 + 1, "{settled:?}");
        let none = super::super::NoProcesses;
        use super::super::Access;
        let d = |p: &Path| s.decide(p.as_os_str().as_bytes(), Access::Read, &none).allowed;
        assert!(!d(&ws.join("d17/x/y/secret.key")) && !d(&ws.join("d150/id_rsa")));
        assert!(d(&ws.join("d17/f.txt")));
    }

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
