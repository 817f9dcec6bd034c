//! The built-in system surface: what ordinary programs need to start and run,
//! minus the host's secrets. Built once at start-up from the host's files.

use super::listings::{self, joined, DirId, Kept, Listing};
use super::{Mode, Origin, Rule, Surface};
use crate::sys::fs;
use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// Read-only trees: programs, libraries and configuration.
const READ_ONLY: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/proc",
    "/sys/devices/system/cpu",
    // NUMA nodes: memory figures read by ps, node and the JVM.
    "/sys/devices/system/node",
    "/sys/fs/cgroup",
    // Read by V8 (node) and other runtimes at start.
    "/sys/kernel/mm/transparent_hugepage",
];

/// Device nodes every program may read and write. Not `/dev/pts`: of the
/// terminals there, the command gets the one interpose runs in
/// ([`own_terminals`]) and those it creates through `/dev/ptmx` (the
/// supervisor records them), never another user's or session's.
const DEVICES: &[&str] =
    &["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx"];

/// Secrets inside the read-only trees, denied whatever their permissions.
const SECRETS: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssl/private",
    "/etc/security/opasswd",
    "/etc/krb5.keytab",
    // Kernel memory and logs, readable by root.
    "/proc/kcore",
    "/proc/kmsg",
    "/proc/kallsyms",
    "/proc/kpagecount",
    "/proc/kpageflags",
    "/proc/kpagecgroup",
    "/proc/sysrq-trigger",
    "/proc/timer_list",
];

/// A path that was left out of the surface, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The path as written in the profile or flag.
    pub path: String,
    /// Why it was left out.
    pub why: String,
}

/// The surface every policy starts from: the procfs mounts (with or
/// without the system surface, `/proc/<pid>` is decided by sandbox
/// membership: a policy or flag that grants procfs grants the sandbox's own
/// processes there, never the host's), the kept listings of `/etc` carved
/// out (a session that could write them would hide a secret from the next
/// one's walk, whatever either's surface), and with `system` the built-in
/// system surface (`add_system`, `remember` as there).
pub fn base(system: bool, remember: bool) -> Surface {
    let mut surface = Surface::new();
    for m in proc_mounts() {
        surface.add_proc_mount(m);
    }
    let kept_at = listings::default_path();
    if let Some(Ok(dir)) = kept_at.as_deref().and_then(Path::parent).map(super::canonical_lenient) {
        // Made before any command runs (a session that runs): a carve-out
        // that exists is masked whole in the command's namespace, and a
        // directory holding it is never moved away; one made later by the
        // command could be reached through a symlink it put on the way
        // (listings are read through none all the same).
        if remember {
            use std::os::unix::fs::DirBuilderExt;
            let _ = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&dir);
        }
        surface.add(Rule { path: dir, mode: Mode::Deny, origin: Origin::System("the kept listings of walks") });
    }
    if system {
        for skipped in add_system(&mut surface, remember, kept_at) {
            tracing::debug!("system surface: skipped {}: {}", skipped.path, skipped.why);
        }
    }
    surface
}

/// Adds the built-in system surface to `surface`. Returns what was skipped.
/// The procfs mounts and the kept listings' carve-out are [`base`]'s, with
/// or without this surface.
/// The walk of `/etc` uses the listings kept at `kept_at` and, with
/// `remember`, keeps its own there for the next session
/// ([`super::listings`]).
fn add_system(surface: &mut Surface, remember: bool, kept_at: Option<PathBuf>) -> Vec<Skipped> {
    let mut skipped = Vec::new();
    let mut add = |path: &str, mode: Mode, why: &'static str, surface: &mut Surface| {
        if let Err(e) = surface.add_path(Path::new(path), mode, Origin::System(why)) {
            skipped.push(Skipped { path: path.into(), why: e.to_string() });
        }
    };
    for p in READ_ONLY {
        add(p, Mode::Ro, "programs and libraries", surface);
    }
    for p in DEVICES {
        add(p, Mode::Rw, "standard devices", surface);
    }
    for p in own_terminals() {
        surface.add(Rule { path: p, mode: Mode::Rw, origin: Origin::System("the terminal interpose runs in") });
    }
    // Whatever in /etc only its owner or group may read is a secret too
    // (SSH host keys, TLS keys, credential stores): the sandboxed command may
    // run as root, so file permissions alone would not stop it.
    let kept = Kept::load(kept_at);
    let (secrets, walked) = unreadable_by_others(Path::new("/etc"), 3, (&kept, listings::now()));
    // Files that /etc links to elsewhere, such as resolv.conf under /run:
    // found among the names the walk has of /etc (its first listing).
    for target in walked.first().map(|etc| link_targets(Path::new("/etc"), etc.listing())).unwrap_or_default() {
        surface.add(Rule { path: target, mode: Mode::Ro, origin: Origin::System("target of a link in /etc") });
    }
    // Denied whether or not they exist yet, so a later-created one is too.
    for p in SECRETS {
        surface.add(Rule { path: PathBuf::from(p), mode: Mode::Deny, origin: Origin::System("host secret") });
    }
    for p in secrets {
        surface.add(Rule { path: p, mode: Mode::Deny, origin: Origin::System("not world-readable") });
    }
    if let Some(path) = &kept.path {
        // Written again only when a directory was listed afresh.
        if remember && walked.iter().any(|w| matches!(w, Walked::Listed(_))) {
            let listings: Vec<&Listing> = walked
                .iter()
                .filter_map(|w| match w {
                    Walked::Listed(l) => Some(l),
                    Walked::AsKept(l) => Some(*l),
                    Walked::Unlisted(_) => None,
                })
                .collect();
            if let Err(e) = kept.save(&listings) {
                tracing::debug!("the listings of /etc not kept at {}: {e}", path.display());
            }
        }
    }
    skipped
}

/// Whether `rdev` is a Unix98 pseudo-terminal slave (`/dev/pts/N`: majors
/// 136 to 143).
pub fn is_pty_slave(rdev: u64) -> bool {
    (136..=143).contains(&libc::major(rdev))
}

/// The pseudo-terminals interpose's standard input, output and error are
/// (the command inherits them), by their `/dev/pts` names.
fn own_terminals() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for fd in 0..=2 {
        let Ok(md) = std::fs::metadata(format!("/proc/self/fd/{fd}")) else { continue };
        if !md.file_type().is_char_device() || !is_pty_slave(md.rdev()) {
            continue;
        }
        let Ok(path) = std::fs::read_link(format!("/proc/self/fd/{fd}")) else { continue };
        if path.starts_with("/dev/pts/") && !out.contains(&path) {
            out.push(path);
        }
    }
    out
}

/// The files outside `top` and `/proc` that the symlinks among `top`'s
/// names (`listing`, the walk's) lead to.
fn link_targets(top: &Path, listing: &Listing) -> Vec<PathBuf> {
    listing
        .entries()
        .map(|(name, kind)| (top.join(std::ffi::OsStr::from_bytes(name)), kind))
        // A type the directory did not give is asked of the entry itself.
        .filter(|(path, kind)| match *kind {
            libc::DT_LNK => true,
            libc::DT_UNKNOWN => path.symlink_metadata().is_ok_and(|m| m.file_type().is_symlink()),
            _ => false,
        })
        .filter_map(|(path, _)| std::fs::canonicalize(path).ok())
        .filter(|t| t.is_file() && !t.starts_with(top) && !t.starts_with("/proc"))
        .collect()
}

/// Entries beneath `dir`, to `depth` levels, whose mode denies "others"
/// read, sorted; with the listing of every directory walked. The walk is
/// a stat per entry (1,200 of them in a desktop's `/etc`) and a listing
/// per directory, where `kept` holds the listings of an earlier walk (and
/// `now` is the time this one's are taken at): a
/// directory still the same is not listed again (its entries are still
/// stat'd, a `chmod o-r` changes no directory). This thread and one more
/// take the top level's entries one at a time from a shared cursor,
/// directories first: the subtrees differ by hundreds of entries
/// (`alternatives`, `ssl`), and halves fixed in advance left one thread
/// with twice the other's work.
fn unreadable_by_others<'k>(dir: &Path, depth: u32, (kept, now): (&'k Kept, i64)) -> (Vec<PathBuf>, Vec<Walked<'k>>) {
    let Ok(top) = CString::new(dir.as_os_str().as_bytes()) else { return Default::default() };
    let Ok(top) = fs::openat(fs::Dir::Cwd, &top, fs::LIST_DIRECTORY, 0) else { return Default::default() };
    let Ok(st) = fs::fstat(top.as_fd()) else { return Default::default() };
    let walk = Walk { top: top.as_fd(), dir, kept, now };
    let listed = walk.names(b"", &st, &mut vec![0u8; LISTING]);
    let mut entries: Vec<(&[u8], u8)> = listed.listing().entries().collect();
    entries.sort_by_key(|(_, kind)| *kind != libc::DT_DIR);
    let found = crate::parallel::on_two_threads(
        &entries,
        || (vec![0u8; LISTING], Vec::new()),
        |(name, kind), (listing, path), out| {
            path.clear();
            path.extend_from_slice(name);
            walk.look(path, *kind, (depth, listing), out)
        },
    );
    drop(entries);
    let (mut secrets, mut walked) = (Vec::new(), vec![listed]);
    for f in found {
        match f {
            Found::Secret(p) => secrets.push(p),
            Found::Walked(w) => walked.push(w),
        }
    }
    secrets.sort();
    (secrets, walked)
}

/// A directory the walk went through, and its names: listed now, as kept,
/// or listed not whole (walked as far as it went, never kept: a later walk
/// must not take its missing names as the directory's).
#[derive(Debug)]
enum Walked<'k> {
    Listed(Listing),
    AsKept(&'k Listing),
    Unlisted(Listing),
}

impl Walked<'_> {
    fn listing(&self) -> &Listing {
        match self {
            Walked::Listed(l) | Walked::Unlisted(l) => l,
            Walked::AsKept(l) => l,
        }
    }
}

enum Found<'k> {
    Secret(PathBuf),
    Walked(Walked<'k>),
}

/// One walk: its top directory's handle and path, the kept listings and
/// the time its own listings are taken at.
struct Walk<'a, 'k> {
    top: BorrowedFd<'a>,
    dir: &'a Path,
    kept: &'k Kept,
    now: i64,
}

impl<'k> Walk<'_, 'k> {
    /// The names in the directory at `rel` below the top (the top itself
    /// if empty), now `st`: as kept if its listing still holds, else read
    /// with `getdents64` into `buf`.
    fn names(&self, rel: &[u8], st: &libc::stat, buf: &mut [u8]) -> Walked<'k> {
        let id = DirId::of(st);
        if let Some(l) = self.kept.by_rel.get(rel).filter(|l| l.holds_for(&id)) {
            return Walked::AsKept(l);
        }
        let mut listing = Listing::new(rel, id, self.now);
        let opened = match rel.is_empty() {
            true => Ok(None),
            false => CString::new(rel)
                .map_err(|_| crate::sys::Errno::EINVAL)
                .and_then(|c| fs::openat(fs::Dir::Fd(self.top), &c, fs::LIST_DIRECTORY, 0))
                .map(Some),
        };
        let listed = opened.and_then(|fd| {
            let dir = fd.as_ref().map_or(self.top, |fd| fd.as_fd());
            fs::entries(dir, buf, |name, kind| listing.push(name.to_bytes(), kind))
        });
        // Failed part of the way: a directory this user may not read, no
        // descriptor left.
        match listed {
            Ok(()) => Walked::Listed(listing),
            Err(_) => Walked::Unlisted(listing),
        }
    }

    /// [`unreadable_by_others`] for the entry at `rel` below the top (of
    /// type `kind`): stat'd from the top's handle with the rest of its path
    /// (each directory on it was found to be one, no symlink), a
    /// subdirectory's names taken with [`Walk::names`] into `listing`. A
    /// full path is made only for what is found.
    fn look(&self, rel: &mut Vec<u8>, kind: u8, (depth, listing): (u32, &mut [u8]), out: &mut Vec<Found<'k>>) {
        // The type comes with the directory entry; the mode needs a stat.
        if kind == libc::DT_LNK {
            return;
        }
        rel.push(0);
        let st = CStr::from_bytes_with_nul(rel)
            .map_err(|_| crate::sys::Errno::EINVAL)
            .and_then(|c| fs::fstatat(fs::Dir::Fd(self.top), c, libc::AT_SYMLINK_NOFOLLOW));
        rel.pop();
        let Ok(st) = st else { return };
        let format = st.st_mode & libc::S_IFMT;
        if format == libc::S_IFLNK {
            return;
        }
        if st.st_mode & 0o004 == 0 {
            out.push(Found::Secret(joined(self.dir, rel)));
        } else if format == libc::S_IFDIR && depth > 1 {
            let walked = self.names(rel, &st, listing);
            let len = rel.len();
            for (name, kind) in walked.listing().entries() {
                rel.push(b'/');
                rel.extend_from_slice(name);
                self.look(rel, kind, (depth - 1, listing), out);
                rel.truncate(len);
            }
            out.push(Found::Walked(walked));
        }
    }
}

/// How much of a directory one `getdents64` of the `/etc` walk reads.
const LISTING: usize = 16 * 1024;

/// Mount points of every procfs in this mount namespace.
pub fn proc_mounts() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> =
        crate::sys::procfs::mounts().into_iter().filter(|m| m.fstype == "proc").map(|m| m.point).collect();
    if out.is_empty() {
        out.push("/proc".into());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_links_lead_to_outside_are_found_by_the_listing() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (top, outside) = (root.join("etc"), root.join("run"));
        for d in [&top, &outside, &outside.join("dir")] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(outside.join("resolv.conf"), "x").unwrap();
        std::fs::write(outside.join("other"), "x").unwrap();
        std::fs::write(top.join("real"), "x").unwrap();
        let link = |to: &Path, name: &str| std::os::unix::fs::symlink(to, top.join(name)).unwrap();
        link(&outside.join("resolv.conf"), "resolv.conf");
        link(&outside.join("dir"), "to-a-directory");
        link(&top.join("real"), "inside");
        link(&outside.join("gone"), "dangling");
        link(&outside.join("other"), "typed-unknown");
        let st = fs::fstat(
            fs::openat(fs::Dir::Cwd, &CString::new(top.as_os_str().as_bytes()).unwrap(), fs::LIST_DIRECTORY, 0)
                .unwrap()
                .as_fd(),
        )
        .unwrap();
        let mut listing = Listing::new(b"", listings::DirId::of(&st), 0);
        for e in std::fs::read_dir(&top).unwrap().flatten() {
            let name = e.file_name();
            // As a file system that gives no types would list it.
            let kind = match (name.to_str(), e.file_type().unwrap()) {
                (Some("typed-unknown"), _) => libc::DT_UNKNOWN,
                (_, t) if t.is_symlink() => libc::DT_LNK,
                (_, t) if t.is_dir() => libc::DT_DIR,
                _ => libc::DT_REG,
            };
            listing.push(name.as_bytes(), kind);
        }
        let mut found = link_targets(&top, &listing);
        found.sort();
        assert_eq!(found, vec![outside.join("other"), outside.join("resolv.conf")]);
    }

    use crate::policy::{Access, NoProcesses as Nobody};

    #[test]
    fn the_walk_finds_what_others_may_not_read_as_deep_as_it_walks() {
        // No listings kept from an earlier walk.
        let nothing = Kept::default();
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().unwrap();
        let at = |p: &str| root.path().join(p);
        let file = |p: &str, mode: u32| {
            std::fs::write(at(p), "x").unwrap();
            std::fs::set_permissions(at(p), std::fs::Permissions::from_mode(mode)).unwrap();
        };
        for d in ["a/b/c", "closed", "many"] {
            std::fs::create_dir_all(at(d)).unwrap();
        }
        file("open.txt", 0o644);
        file("top.key", 0o600);
        file("a/secret", 0o600);
        file("a/b/key", 0o640);
        // Below the depth walked: not looked at.
        file("a/b/c/deep", 0o600);
        // A heavy subtree beside light ones, whichever thread takes it.
        for n in 0..200 {
            file(&format!("many/f{n}"), if n == 137 { 0o600 } else { 0o644 });
        }
        std::os::unix::fs::symlink(at("a/secret"), at("link")).unwrap();
        std::fs::set_permissions(at("closed"), std::fs::Permissions::from_mode(0o700)).unwrap();
        let (found, walked) = unreadable_by_others(root.path(), 3, (&nothing, listings::now()));
        let want: Vec<PathBuf> =
            ["a/b/key", "a/secret", "closed", "many/f137", "top.key"].iter().map(|p| at(p)).collect();
        assert_eq!(found, want);
        // Every directory walked was listed: the top, a, a/b, many.
        let mut listed: Vec<&[u8]> = walked
            .iter()
            .map(|w| match w {
                Walked::Listed(l) => &l.rel[..],
                other => panic!("nothing was kept, nothing failed: {other:?}"),
            })
            .collect();
        listed.sort();
        assert_eq!(listed, [&b""[..], b"a", b"a/b", b"many"]);
    }

    /// The listings of one walk, as the next one reads them (taken `later`
    /// seconds after the directories last changed).
    fn kept_from(walked: Vec<Walked>) -> Kept {
        let by_rel = walked
            .into_iter()
            .map(|w| match w {
                Walked::Listed(l) => (l.rel.clone(), l),
                other => panic!("kept from a walk that listed: {other:?}"),
            })
            .collect();
        let mut kept = Kept::default();
        kept.by_rel = by_rel;
        kept
    }

    #[test]
    fn a_kept_listing_spares_the_listing_never_the_stat_and_only_while_its_directory_is_unchanged() {
        // No listings kept from an earlier walk.
        let nothing = Kept::default();
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().unwrap();
        let at = |p: &str| root.path().join(p);
        let mode = |p: &str, m: u32| std::fs::set_permissions(at(p), std::fs::Permissions::from_mode(m)).unwrap();
        for d in ["a/b", "c"] {
            std::fs::create_dir_all(at(d)).unwrap();
        }
        for f in ["top", "a/one", "a/b/two", "c/three"] {
            std::fs::write(at(f), "x").unwrap();
        }
        // Listed now, the directories changed a moment ago: such listings
        // are not used again (a change within the same second could go
        // unseen where times are whole seconds).
        let (found, walked) = unreadable_by_others(root.path(), 3, (&nothing, listings::now()));
        assert!(found.is_empty());
        let kept = kept_from(walked);
        let (_, walked) = unreadable_by_others(root.path(), 3, (&kept, listings::now()));
        assert!(walked.iter().all(|w| matches!(w, Walked::Listed(_))), "{walked:?}");
        // Listed well after the last change: used again, and every entry
        // still stat'd (a chmod changes the file, not its directory).
        let later = listings::now() + 10;
        let (_, walked) = unreadable_by_others(root.path(), 3, (&nothing, later));
        let kept = kept_from(walked);
        mode("a/b/two", 0o600);
        let (found, walked) = unreadable_by_others(root.path(), 3, (&kept, later));
        assert!(walked.iter().all(|w| matches!(w, Walked::AsKept(_))), "{walked:?}");
        assert_eq!(found, [at("a/b/two")]);
        // A name added changes its directory: listed again, and found.
        std::fs::write(at("c/four"), "x").unwrap();
        mode("c/four", 0o640);
        // Another directory in the place of one kept: listed again.
        std::fs::rename(at("a/b"), at("old")).unwrap();
        std::fs::create_dir(at("a/b")).unwrap();
        std::fs::write(at("a/b/five"), "x").unwrap();
        mode("a/b/five", 0o600);
        let (found, walked) = unreadable_by_others(root.path(), 3, (&kept, later));
        assert_eq!(found, [at("a/b/five"), at("c/four"), at("old/two")]);
        let mut listed: Vec<&[u8]> = walked
            .iter()
            .filter_map(|w| match w {
                Walked::Listed(l) => Some(&l.rel[..]),
                Walked::AsKept(_) => None,
                Walked::Unlisted(_) => panic!("every directory here can be listed"),
            })
            .collect();
        listed.sort();
        // The top and `a` changed too (a name moved out, one made), and
        // `old` is new to the walk.
        assert_eq!(listed, [&b""[..], b"a", b"a/b", b"c", b"old"]);
    }

    #[test]
    fn system_surface_reads_programs_but_not_secrets() {
        let s = base(true, false);
        let ok = |p: &str, a| s.decide(p.as_bytes(), a, &Nobody).allowed;
        assert!(ok("/usr/bin/env", Access::Exec));
        assert!(ok("/etc/passwd", Access::Read));
        assert!(!ok("/etc/passwd", Access::Write));
        assert!(!ok("/etc/shadow", Access::Read));
        assert!(ok("/dev/null", Access::Write));
        assert!(!ok("/root/.bashrc", Access::Read));
        assert!(!ok("/tmp/x", Access::Read));
        assert!(!ok("/proc/1/environ", Access::Read));
        assert!(!ok("/proc/kcore", Access::Read));
        assert!(!ok("/proc/kmsg", Access::Read));
        assert!(ok("/proc/cpuinfo", Access::Read));
        assert!(s.proc_mounts().iter().any(|m| m == Path::new("/proc")));
    }
}
