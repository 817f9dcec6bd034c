//! The built-in system surface: what ordinary programs need to start and run,
//! minus the host's secrets. Built once at start-up from the host's files.

use super::{Mode, Origin, Rule, Surface};
use crate::sys::fs;
use std::ffi::{CStr, CString, OsStr};
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

/// Adds the built-in system surface to `surface`. Returns what was skipped.
/// The procfs mounts are the caller's to add ([`proc_mounts`]): with or
/// without this surface, `/proc/<pid>` is decided by sandbox membership.
pub fn add_system(surface: &mut Surface) -> Vec<Skipped> {
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
    // Files that /etc links to elsewhere, such as resolv.conf under /run.
    for target in etc_link_targets() {
        surface.add(Rule { path: target, mode: Mode::Ro, origin: Origin::System("target of a link in /etc") });
    }
    // Denied whether or not they exist yet, so a later-created one is too.
    for p in SECRETS {
        surface.add(Rule { path: PathBuf::from(p), mode: Mode::Deny, origin: Origin::System("host secret") });
    }
    // Whatever in /etc only its owner or group may read is a secret too
    // (SSH host keys, TLS keys, credential stores): the sandboxed command may
    // run as root, so file permissions alone would not stop it.
    for p in unreadable_by_others(Path::new("/etc"), 3) {
        surface.add(Rule { path: p, mode: Mode::Deny, origin: Origin::System("not world-readable") });
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

fn etc_link_targets() -> Vec<PathBuf> {
    let Ok(dir) = std::fs::read_dir("/etc") else { return Vec::new() };
    dir.flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_symlink()))
        .filter_map(|e| std::fs::canonicalize(e.path()).ok())
        .filter(|t| t.is_file() && !t.starts_with("/etc") && !t.starts_with("/proc"))
        .collect()
}

/// Entries beneath `dir`, to `depth` levels, whose mode denies "others"
/// read, sorted. The walk is a stat per entry (1,200 of them in a
/// desktop's `/etc`, a good part of interpose's start-up), so this thread
/// and one more take the top level's entries one at a time from a shared
/// cursor, directories first: the subtrees differ by hundreds of entries
/// (`alternatives`, `ssl`), and halves fixed in advance left one thread
/// with twice the other's work.
fn unreadable_by_others(dir: &Path, depth: u32) -> Vec<PathBuf> {
    let Ok(top) = CString::new(dir.as_os_str().as_bytes()) else { return Vec::new() };
    let Ok(top) = fs::openat(fs::Dir::Cwd, &top, fs::LIST_DIRECTORY, 0) else { return Vec::new() };
    let mut entries = names(top.as_fd());
    entries.sort_by_key(|(_, kind)| *kind != libc::DT_DIR);
    // One listing buffer per level below the top, for each thread's whole walk.
    let listings = || vec![vec![0u8; LISTING]; depth.saturating_sub(1) as usize];
    let mut out = crate::parallel::on_two_threads(&entries, listings, |(name, kind), listings, out| {
        look(top.as_fd(), dir, name, *kind, (depth, listings), out)
    });
    out.sort();
    out
}

/// The names in the directory open at `dir`, with their `d_type`s (what
/// could be read of them).
fn names(dir: BorrowedFd<'_>) -> Vec<(CString, u8)> {
    let mut names = Vec::new();
    let _ = fs::entries(dir, &mut vec![0u8; LISTING], |name, kind| names.push((name.to_owned(), kind)));
    names
}

/// How much of a directory one `getdents64` of the `/etc` walk reads.
const LISTING: usize = 16 * 1024;

/// [`unreadable_by_others`] for entry `name` (of type `kind`) of the
/// directory open at `dir`, whose path is `path`: looked at relative to its
/// directory's handle (no lookup from `/`), a subdirectory opened from it
/// and listed into the first of `listings` (the levels below use the rest,
/// so a listing is never read again while its entries recurse). A path is
/// made only for what is found and for a subdirectory.
fn look(
    dir: BorrowedFd<'_>,
    path: &Path,
    name: &CStr,
    kind: u8,
    (depth, listings): (u32, &mut [Vec<u8>]),
    out: &mut Vec<PathBuf>,
) {
    // The type comes with the directory entry; the mode needs a stat.
    if kind == libc::DT_LNK {
        return;
    }
    let Ok(st) = fs::fstatat(fs::Dir::Fd(dir), name, libc::AT_SYMLINK_NOFOLLOW) else { return };
    let format = st.st_mode & libc::S_IFMT;
    if format == libc::S_IFLNK {
        return;
    }
    if st.st_mode & 0o004 == 0 {
        out.push(path.join(OsStr::from_bytes(name.to_bytes())));
    } else if format == libc::S_IFDIR && depth > 1 {
        let Some((listing, deeper)) = listings.split_first_mut() else { return };
        let Ok(inner) = fs::openat(fs::Dir::Fd(dir), name, fs::LIST_DIRECTORY, 0) else { return };
        let at = path.join(OsStr::from_bytes(name.to_bytes()));
        let _ = fs::entries(inner.as_fd(), listing, |n, k| look(inner.as_fd(), &at, n, k, (depth - 1, deeper), out));
    }
}

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
    use crate::policy::{Access, NoProcesses as Nobody};

    #[test]
    fn the_walk_finds_what_others_may_not_read_as_deep_as_it_walks() {
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
        let found = unreadable_by_others(root.path(), 3);
        let want: Vec<PathBuf> =
            ["a/b/key", "a/secret", "closed", "many/f137", "top.key"].iter().map(|p| at(p)).collect();
        assert_eq!(found, want);
    }

    #[test]
    fn system_surface_reads_programs_but_not_secrets() {
        let mut s = Surface::new();
        for m in proc_mounts() {
            s.add_proc_mount(m);
        }
        add_system(&mut s);
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
