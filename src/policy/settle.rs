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
//! The walk of a big workspace is most of a session's start (11 ms for
//! 11,000 entries here, most of it the kernel reading hashed directories),
//! so each directory's part is kept between sessions ([`super::listings`]):
//! its subdirectories and the names the patterns matched, with the
//! directory's identity; a directory whose names have not changed since
//! (its ctime and mtime the same, listed well after its last change) is
//! not read again. The listings are kept per tree walked and per set of
//! patterns, in the user's own directory every session carves out.
//!
//! This walks the file system; the rest of `policy` does no I/O.

use super::listings::{DirId, Kept, Listing};
use super::{GlobEffect, GlobRule, Mode, Origin, Rule, Surface};
use crate::sys::fs;
use std::ffi::{CStr, CString, OsStr};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

/// What settling found, for `policy show` and the session record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settled {
    /// Per pattern settled (its text): how many existing names it matched.
    pub matched: Vec<(String, usize)>,
    /// Directory entries looked at (of a directory listed as kept, only
    /// its subdirectories and matches).
    pub entries: usize,
    /// Directories whose kept listing was used instead of reading them.
    pub as_kept: usize,
}

/// Where the walks' listings are kept between sessions, and whether this
/// session writes its own back.
#[derive(Debug, Clone, Copy)]
pub struct KeptWalks<'a> {
    /// The directory (`listings::kept_dir`), carved out of every session.
    pub dir: &'a Path,
    /// Whether to write the listings back (a session that runs; not `policy
    /// show`).
    pub remember: bool,
}

impl Surface {
    /// Settles every carve-out pattern that does not name one place: its
    /// matches among the files that exist now become rules of their own
    /// (`deny`, or read-only where the tree around them is writable for a
    /// `deny_writes` pattern), and the pattern decides nothing more.
    pub fn settle_patterns(&mut self) -> Settled {
        self.settle_patterns_kept(None, super::listings::now())
    }

    /// [`Surface::settle_patterns`], with each walked tree's listings kept
    /// in `kept` (none: every directory is read), taken at `now` (seconds
    /// since the epoch).
    pub fn settle_patterns_kept(&mut self, kept: Option<KeptWalks<'_>>, now: i64) -> Settled {
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
        let patterns: Vec<&GlobRule> = pending.iter().map(|&i| &self.globs[i]).collect();
        let header = header(&patterns);
        for root in &roots {
            // Only where the file system changes a directory's times with
            // its names, and nothing else does (no network file system's
            // cached attributes, no FUSE tree with fixed times).
            let kept = kept.filter(|_| times_hold(root));
            let memory = Kept::load_as(kept.map(|k| k.dir.join(file_name(root))), header.clone());
            let walked = walk(self, root, &patterns, (&memory, now), &mut |path, k| found.push((path, pending[k])));
            settled.entries += walked.seen;
            settled.as_kept += walked.as_kept.len();
            // Written back when a listing read now can be used next time
            // (one of a directory changed within the last seconds cannot).
            let usable: Vec<&Listing> = walked.listed.iter().filter(|l| l.settled()).collect();
            let worth = usable.len() + walked.as_kept.len() >= KEEP_FROM;
            if let Some(k) = kept.filter(|k| k.remember && !usable.is_empty() && worth) {
                let all: Vec<&Listing> = usable.into_iter().chain(walked.as_kept.iter().copied()).collect();
                if let Err(e) = memory.save(&all) {
                    tracing::debug!("the walk of {} not kept: {e}", root.display());
                }
                forget_old_walks(k.dir);
            }
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

/// The fewest directories a walk is kept for: a smaller tree is read in
/// well under a millisecond, and a file for each (a test's temporary
/// workspace, a scratch clone) would only pile up.
const KEEP_FROM: usize = 64;

/// How long a tree's kept walk stays once no session has written it: a
/// scratch clone's is removed by a later session's save.
const FORGET_AFTER: std::time::Duration = std::time::Duration::from_secs(30 * 24 * 3600);

/// Removes the kept walks in `dir` no session has written for
/// [`FORGET_AFTER`].
fn forget_old_walks(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let old = e.metadata().ok().and_then(|m| m.modified().ok()).and_then(|t| t.elapsed().ok());
        if e.file_name().as_bytes().starts_with(b"settle-") && old.is_some_and(|age| age > FORGET_AFTER) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Whether directories' times in the file system at `root` change with
/// their names and only then: local file systems (ext4, xfs, btrfs, f2fs,
/// zfs, tmpfs, overlay). A network file system answers `stat` from
/// attributes it cached for up to a minute, and a FUSE tree over an object
/// store may give fixed times: their directories are read every time.
fn times_hold(root: &Path) -> bool {
    const LOCAL: [i64; 7] = [0xEF53, 0x5846_5342, 0x9123_683E, 0xF2F5_2010, 0x2FC1_2FC1, 0x0102_1994, 0x794C_7630];
    let Ok(c) = CString::new(root.as_os_str().as_bytes()) else { return false };
    let Ok(fd) = fs::openat(fs::Dir::Cwd, &c, libc::O_PATH | libc::O_DIRECTORY, 0) else { return false };
    // `f_type`'s width differs between architectures.
    #[allow(clippy::unnecessary_cast)]
    fs::fstatfs(fd.as_fd()).is_ok_and(|st| LOCAL.contains(&(st.f_type as i64)))
}

/// Where the walk of `root` is kept for this user (none without a home).
pub fn kept_walk(root: &Path) -> Option<PathBuf> {
    super::listings::kept_dir().map(|dir| dir.join(file_name(root)))
}

/// The kept listings' file for a walk of `root`: one per tree.
fn file_name(root: &Path) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(root.as_os_str().as_bytes());
    let hex: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
    format!("settle-{hex}")
}

/// The first line of a walk's kept listings: the tree's listings hold
/// only the names these patterns matched, so another set of patterns (a
/// policy changed) reads none of them.
fn header(patterns: &[&GlobRule]) -> Vec<u8> {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    for g in patterns {
        h.update(g.pattern.as_os_str().as_bytes());
        h.update([0]);
    }
    let hex: String = h.finalize()[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("interpose settle listings 3 {hex}\n").into_bytes()
}

/// What one walk saw: the entries looked at, the directories it read (as
/// the next walk keeps them) and those whose kept listing it used.
struct Walked<'k> {
    seen: usize,
    listed: Vec<Listing>,
    as_kept: Vec<&'k Listing>,
}

/// Walks `root` without following symlinks, calling `found` with each path
/// that a pattern of `patterns` matches (and its index there); a matched
/// directory is not entered, nor is a carve-out. A directory whose listing
/// in `kept` still holds (`now` being the time this walk's are taken at)
/// is not read: its kept subdirectories and matches are used.
///
/// The patterns are matched together ([`super::Patterns`]): matched one by
/// one, the ten of `examples/coding-agent.toml` made this walk 71 ms of a
/// session's start in a 25,000-entry Rust workspace (docs/performance.md).
/// A directory read is opened from its parent's handle (no lookup from `/`
/// per directory), or below a kept one by its path from the tree's handle
/// through no symlink, and listed with `getdents64`; two threads take the
/// directories still to list from one stack. A kept directory is only
/// `stat`'d, from its parent's handle or by its path from the tree's,
/// which follows a symlink on the way that something racing the walk
/// swapped in: its listing is used only for the same directory, whose
/// matches are then carved out at the path walked too. The walk is not
/// one atomic view of the tree, kept or not: a directory moved meanwhile
/// from where the walk has not been to where it has been is missed either
/// way.
fn walk<'k>(
    surface: &Surface,
    root: &Path,
    patterns: &[&GlobRule],
    (kept, now): (&'k Kept, i64),
    found: &mut dyn FnMut(PathBuf, usize),
) -> Walked<'k> {
    let mut walked = Walked { seen: 0, listed: Vec::new(), as_kept: Vec::new() };
    let mut matching = super::Patterns::new(patterns);
    if let Some(k) = matching.first(root.as_os_str().as_bytes()) {
        found(root.to_path_buf(), k);
        walked.seen = 1;
        return walked;
    }
    let Ok(top) = CString::new(root.as_os_str().as_bytes()) else { return walked };
    let Ok(top) = fs::openat(fs::Dir::Cwd, &top, fs::LIST_DIRECTORY, 0) else { return walked };
    let Ok(top_st) = fs::fstat(top.as_fd()) else { return walked };
    let work = Work {
        state: Mutex::new(Pending { dirs: vec![(Place::Root, root.to_path_buf())], busy: 0 }),
        changed: Condvar::new(),
        dev: top_st.st_dev,
        top,
        root: root.as_os_str().as_bytes(),
        kept,
        now,
    };
    let other = matching.clone();
    let hits = std::thread::scope(|s| {
        let helper = s.spawn(|| work.list_all(surface, other));
        let mine = work.list_all(surface, matching);
        // A panic in the other thread must not drop what it found.
        let theirs = helper.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
        let mut hits = Vec::new();
        for part in [mine, theirs] {
            walked.seen += part.seen;
            walked.listed.extend(part.listed);
            walked.as_kept.extend(part.as_kept);
            hits.extend(part.hits);
        }
        hits
    });
    for (path, k) in hits {
        found(path, k);
    }
    walked
}

/// The kind a kept listing gives a name a pattern matched (a directory's
/// is `DT_DIR`; no `d_type` is this one).
const MATCHED: u8 = 24;

/// A directory still to list: the root (open in [`Work::top`]), a name
/// in its parent, whose handle its siblings share, or a path below the
/// root where its parent was not opened (listed as kept).
enum Place {
    Root,
    In(Arc<OwnedFd>),
    Beneath,
}

/// The directories still to list, and how many are being listed (whose
/// subdirectories may still come).
struct Pending {
    dirs: Vec<(Place, PathBuf)>,
    busy: usize,
}

/// The walk's shared stack, and what every directory is looked at with.
struct Work<'a, 'k> {
    state: Mutex<Pending>,
    changed: Condvar,
    /// The tree walked, open, and its path; its directories' listings are
    /// kept by their paths below it.
    top: OwnedFd,
    /// The tree's device: a directory on another (a mount point in the
    /// tree) is read every time, its file system perhaps not one whose
    /// times hold.
    dev: u64,
    root: &'a [u8],
    kept: &'k Kept,
    now: i64,
}

/// What one thread of the walk saw.
struct Part<'k> {
    seen: usize,
    hits: Vec<(PathBuf, usize)>,
    listed: Vec<Listing>,
    as_kept: Vec<&'k Listing>,
}

/// One directory being listed: counted until dropped, a panic included, so
/// the other thread never waits for a listing that will not come.
struct Busy<'w, 'a, 'k>(&'w Work<'a, 'k>);

impl Drop for Busy<'_, '_, '_> {
    fn drop(&mut self) {
        self.0.state.lock().unwrap_or_else(PoisonError::into_inner).busy -= 1;
        self.0.changed.notify_all();
    }
}

impl<'a, 'k> Work<'a, 'k> {
    /// Lists directories from the stack until none is left and none is
    /// being listed: the entries seen, each match with its pattern, and
    /// the listings read or used as kept.
    fn list_all(&self, surface: &Surface, mut matching: super::Patterns<'_>) -> Part<'k> {
        let carved = |p: &[u8]| surface.lookup(p).is_some_and(|i| surface.rules()[i as usize].mode == Mode::Deny);
        let mut part = Part { seen: 0, hits: Vec::new(), listed: Vec::new(), as_kept: Vec::new() };
        let mut buf = vec![0u8; 32 * 1024];
        while let Some((place, path, busy)) = self.take() {
            // Each name is matched in one buffer holding the directory's
            // path: a path is made only for a match or a subdirectory.
            let mut child = path.as_os_str().as_bytes().to_vec();
            let Some(rel) = child.strip_prefix(self.root).map(|r| r.strip_prefix(b"/").unwrap_or(r).to_vec()) else {
                continue;
            };
            let Ok(c_rel) = CString::new(&rel[..]) else { continue };
            let name = path.file_name().and_then(|n| CString::new(n.as_bytes()).ok());
            if child.last() != Some(&b'/') {
                child.push(b'/');
            }
            let stem = child.len();
            // A directory listed before is asked only its identity, with
            // no descriptor opened for it: its kept listing holds while the
            // identity is the same (the same inode, its names unchanged).
            let kept = self.kept.by_rel.get(&rel).filter(|l| {
                let st = match (&place, &name) {
                    (Place::Root, _) => fs::fstat(self.top.as_fd()),
                    (Place::In(parent), Some(name)) => {
                        fs::fstatat(fs::Dir::Fd(parent.as_fd()), name, libc::AT_SYMLINK_NOFOLLOW)
                    }
                    (Place::Beneath, _) => {
                        fs::fstatat(fs::Dir::Fd(self.top.as_fd()), &c_rel, libc::AT_SYMLINK_NOFOLLOW)
                    }
                    (Place::In(_), None) => return false,
                };
                st.is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFDIR && l.holds_for(&DirId::of(&st)))
            });
            let mut subdirs = Vec::new();
            if let Some(l) = kept {
                // The patterns are the ones the listing was taken with: only
                // its matches are matched again (for which pattern).
                for (name, kind) in l.entries() {
                    part.seen += 1;
                    child.truncate(stem);
                    child.extend_from_slice(name);
                    match kind {
                        MATCHED => part
                            .hits
                            .extend(matching.first(&child).map(|k| (PathBuf::from(OsStr::from_bytes(&child)), k))),
                        libc::DT_DIR if !carved(&child) => {
                            subdirs.push((Place::Beneath, PathBuf::from(OsStr::from_bytes(&child))))
                        }
                        _ => {}
                    }
                }
                part.as_kept.push(l);
                self.state.lock().unwrap_or_else(PoisonError::into_inner).dirs.extend(subdirs);
                drop(busy);
                continue;
            }
            let dir = match (place, &name) {
                (Place::Root, _) => fs::openat(fs::Dir::Fd(self.top.as_fd()), c".", fs::LIST_DIRECTORY, 0).ok(),
                (Place::In(parent), Some(name)) => {
                    fs::openat(fs::Dir::Fd(parent.as_fd()), name, fs::LIST_DIRECTORY, 0).ok()
                }
                // Below the root by its path, through no symlink.
                (Place::Beneath, _) => {
                    let how = fs::OpenHow {
                        flags: fs::LIST_DIRECTORY as u64,
                        mode: 0,
                        resolve: fs::RESOLVE_BENEATH | fs::RESOLVE_NO_SYMLINKS,
                    };
                    fs::openat2(fs::Dir::Fd(self.top.as_fd()), &c_rel, how).ok()
                }
                (Place::In(_), None) => None,
            };
            // A directory that cannot be opened or read is passed over.
            let Some(dir) = dir.map(Arc::new) else { continue };
            // The name as kept: a match, or a directory; nothing for a name
            // neither (the next walk needs none of those).
            let mut look = |name: &CStr, kind: u8| -> Option<u8> {
                part.seen += 1;
                child.truncate(stem);
                child.extend_from_slice(name.to_bytes());
                let owned = || PathBuf::from(OsStr::from_bytes(&child));
                if let Some(k) = matching.first(&child) {
                    part.hits.push((owned(), k));
                    return Some(MATCHED);
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
                is_dir.then_some(libc::DT_DIR)
            };
            // The identity kept is taken from the handle the names are read
            // through: the listing is of this directory, whatever is renamed
            // into its place meanwhile.
            match fs::fstat(dir.as_fd()) {
                Ok(st) => {
                    let mut fresh = Listing::new(&rel, DirId::of(&st), self.now);
                    let read = fs::entries(dir.as_fd(), &mut buf, |name, kind| {
                        if let Some(kind) = look(name, kind) {
                            fresh.push(name.to_bytes(), kind);
                        }
                    });
                    // One read part of the way is never kept: its missing
                    // names would be taken as the directory's.
                    if read.is_ok() && st.st_dev == self.dev {
                        part.listed.push(fresh);
                    }
                }
                Err(_) => _ = fs::entries(dir.as_fd(), &mut buf, |name, kind| _ = look(name, kind)),
            }
            self.state.lock().unwrap_or_else(PoisonError::into_inner).dirs.extend(subdirs);
            drop(busy);
        }
        part
    }

    /// The next directory to list, counted as being listed; `None` once the
    /// stack is empty and nothing being listed can add to it.
    fn take(&self) -> Option<(Place, PathBuf, Busy<'_, 'a, 'k>)> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some((place, path)) = state.dirs.pop() {
                state.busy += 1;
                return Some((place, path, Busy(self)));
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
    fn a_kept_walk_is_used_only_for_unchanged_directories_and_only_by_the_same_patterns() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().canonicalize().unwrap();
        let (ws, kept_dir) = (top.join("ws"), top.join("kept"));
        for n in 0..40 {
            std::fs::create_dir_all(ws.join(format!("d{n}/sub"))).unwrap();
            std::fs::write(ws.join(format!("d{n}/sub/f.txt")), "x").unwrap();
        }
        std::fs::write(ws.join("d3/sub/a.key"), "x").unwrap();
        std::fs::create_dir_all(top.join("elsewhere/inner")).unwrap();
        std::fs::write(top.join("elsewhere/inner/o.key"), "x").unwrap();
        let settle = |patterns: &[&str], now: i64| {
            let o = || Origin::Flag("t".into());
            let mut s = Surface::new();
            s.add(Rule { path: ws.clone(), mode: Mode::Rw, origin: o() });
            for p in patterns {
                s.add_glob(&ws.join(p), GlobEffect::Deny, o()).unwrap();
            }
            let settled = s.settle_patterns_kept(Some(KeptWalks { dir: &kept_dir, remember: true }), now);
            let none = super::super::NoProcesses;
            let denied =
                |p: &str| !s.decide(ws.join(p).as_os_str().as_bytes(), super::super::Access::Read, &none).allowed;
            let found: Vec<&str> = ["d3/sub/a.key", "d7/sub/b.key", "d9/inner/o.key", "d4/sub/f.txt"]
                .into_iter()
                .filter(|p| denied(p))
                .collect();
            (settled, found.join(" "))
        };
        let real = super::super::listings::now();
        // Listed a moment after the directories were made: not used again
        // (a change within the same second could go unseen).
        let (first, found) = settle(&["**/*.key"], real);
        assert_eq!((first.as_kept, found.as_str()), (0, "d3/sub/a.key"), "{first:?}");
        let (second, _) = settle(&["**/*.key"], real);
        assert_eq!(second.as_kept, 0, "{second:?}");
        // Listed well after: the next walk reads no directory again, and
        // sees only the subdirectories and the matches (the root's 40, one
        // in each, the key).
        let later = real + 10;
        settle(&["**/*.key"], later);
        let (kept, found) = settle(&["**/*.key"], later);
        assert_eq!((kept.as_kept, found.as_str()), (81, "d3/sub/a.key"), "{kept:?}");
        assert_eq!(kept.entries, 40 + 40 + 1, "{kept:?}");
        // A key made since changes its directory, which is read again; a
        // directory swapped for a symlink to a tree holding one is not
        // followed, as in a walk with nothing kept.
        std::fs::write(ws.join("d7/sub/b.key"), "x").unwrap();
        std::fs::rename(ws.join("d9"), top.join("d9-moved")).unwrap();
        std::os::unix::fs::symlink(top.join("elsewhere"), ws.join("d9")).unwrap();
        let (changed, found) = settle(&["**/*.key"], later);
        assert_eq!(found, "d3/sub/a.key d7/sub/b.key", "{changed:?}");
        // ws and d7/sub changed; d9 and d9/sub are gone.
        assert_eq!(changed.as_kept, 81 - 4, "{changed:?}");
        // Other patterns read none of the kept listings: they hold only
        // what the first ones matched.
        let (other, found) = settle(&["**/*.txt"], later);
        assert_eq!((other.as_kept, found.as_str()), (0, "d4/sub/f.txt"), "{other:?}");
        // A tree of fewer directories is not kept at all.
        let small = top.join("small");
        std::fs::create_dir_all(small.join("a/b")).unwrap();
        let mut s = Surface::new();
        s.add(Rule { path: small.clone(), mode: Mode::Rw, origin: Origin::Flag("t".into()) });
        s.add_glob(&small.join("**/*.key"), GlobEffect::Deny, Origin::Flag("t".into())).unwrap();
        s.settle_patterns_kept(Some(KeptWalks { dir: &kept_dir, remember: true }), later);
        assert!(!kept_dir.join(file_name(&small)).exists());
    }

    #[test]
    fn walks_are_kept_only_on_file_systems_whose_times_hold() {
        let dir = tempfile::tempdir().unwrap();
        // This machine's temporary directory is ext4 or tmpfs; procfs and
        // sysfs give times that say nothing of their names.
        assert!(times_hold(dir.path()));
        assert!(!times_hold(Path::new("/proc")) && !times_hold(Path::new("/sys")));
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
