//! `--isolate`: the command gets a mount namespace whose root is a fresh
//! tmpfs holding only the surface, bind-mounted read-only or read-write as
//! the surface says, with a fresh `/proc`, entered with `pivot_root`.
//! Whatever the surface does not grant does not exist there: `ls /home`
//! lists nothing it does not grant and `/etc/shadow` is simply absent.
//!
//! The mounts are planned in the parent (which may allocate) as a list of
//! steps with every path ready as a C string, and carried out in the child
//! between `fork` and `exec` with plain system calls. Read-only trees with
//! a carve-out are rebuilt entry by entry, as a ruleset without masks
//! expands them, so the carve-out is not mounted at all; writable ones are
//! bound whole (names made in them later land on the host) and the
//! backstop's masks are mounted over their carve-outs.
//! Every destination equals its source, so the supervisor, resolving
//! absolute paths from the command's root, finds the same objects the
//! command does.

use super::landlock::{Grant, Layout};
use crate::policy::{Mode, Surface};
use crate::sys::{process, Errno};
use std::ffi::{CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// One thing to do under the new root (paths already prefixed with it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Create a directory.
    Dir(CString),
    /// Bind `source` onto `target` (a directory or an empty file made
    /// first), read-only unless `writable`.
    Bind {
        /// The host path.
        source: CString,
        /// The mount point under the new root.
        target: CString,
        /// Whether it stays writable.
        writable: bool,
        /// Whether the source is a directory.
        dir: bool,
    },
    /// Recreate a symlink with this target.
    Symlink {
        /// What the link points to.
        target: CString,
        /// Where it is made.
        at: CString,
    },
    /// Mount a fresh procfs.
    Proc(CString),
}

/// The plan carried into the child.
#[derive(Debug, Clone)]
pub struct Isolation {
    /// The staging directory the new root tmpfs is mounted on.
    pub root: CString,
    /// The steps, parents before children.
    pub steps: Vec<Step>,
    /// The backstop's masks, under the new root, made after the steps.
    pub masks: Vec<super::MaskPlan>,
    /// The directories of read-only trees rebuilt around a carve-out, as
    /// the command sees them once in the new root: the root's own
    /// directories, which the ruleset (built on the host's) does not reach,
    /// so the child grants each the listing the ruleset grants the host's
    /// ([`super::landlock::isolated`]).
    pub rebuilt: Vec<CString>,
    /// The directory to enter after the pivot (the caller's cwd if it is in
    /// the new root, else `/`).
    pub cwd: CString,
    /// Without root: a user namespace first, mapping only our own uid and
    /// gid (`uid_map` and `gid_map` lines, ready to write).
    pub user_namespace: Option<(Vec<u8>, Vec<u8>)>,
}

fn c(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).expect("paths from the file system have no NUL")
}

/// Plans the new root in `staging` (an empty directory) for `surface`,
/// whose backstop is laid out as `layout` ([`super::landlock::isolated`]).
pub fn plan(surface: &Surface, layout: &Layout, staging: &Path, cwd: &Path) -> Isolation {
    let under = |p: &Path| staging.join(p.strip_prefix("/").unwrap_or(p));
    let mut entries: Vec<(PathBuf, Grant, bool)> = layout.grants.clone();
    let procs: Vec<&PathBuf> = surface.proc_mounts().iter().collect();
    entries.retain(|(p, _, _)| !procs.iter().any(|m| p.starts_with(m)));
    // A grant pattern's base: the supervisor makes and opens the names it
    // grants there, so it is mounted whole and writable (Landlock grants
    // nothing there; the supervisor decides which names).
    for g in surface.globs() {
        if g.effect == crate::policy::GlobEffect::Grant && g.base.is_dir() {
            entries.push((g.base.clone(), Grant::Parent(Mode::Rw), true));
        }
    }
    // One mount per path; where a path is granted twice (a read-only entry
    // that is also a glob's base), the writable grant is the one kept.
    let writable = |g: &Grant| matches!(g, Grant::Tree(Mode::Rw) | Grant::Parent(Mode::Rw));
    entries.sort_by(|a, b| a.0.cmp(&b.0).then(writable(&b.1).cmp(&writable(&a.1))));
    entries.dedup_by(|a, b| a.0 == b.0);

    // A writable directory is mounted whole (a pattern's base and an
    // expanded tree too), so that names made in it later land on the host;
    // read-only trees beneath it are bound again on top, and its carve-outs
    // masked.
    let whole: Vec<PathBuf> = entries
        .iter()
        .filter(|(_, g, dir)| *dir && matches!(g, Grant::Parent(Mode::Rw) | Grant::Tree(Mode::Rw)))
        .map(|(p, _, _)| p.clone())
        .collect();
    entries.retain(|(p, g, _)| !(whole.iter().any(|w| p != w && p.starts_with(w)) && *g != Grant::Tree(Mode::Ro)));
    let mut steps = Vec::new();
    let mut rebuilt = Vec::new();
    let mut made: std::collections::HashSet<PathBuf> = std::collections::HashSet::new();
    let mut parents = |p: &Path, steps: &mut Vec<Step>| {
        let mut missing: Vec<&Path> = p.ancestors().skip(1).take_while(|a| *a != Path::new("/")).collect();
        missing.reverse();
        for a in missing {
            if made.insert(a.to_path_buf()) {
                steps.push(Step::Dir(c(&under(a))));
            }
        }
    };
    // A symlink is made again as a link, never bound (a bind lands on
    // where it leads).
    let link = |path: &Path| {
        std::fs::read_link(path).ok().map(|target| Step::Symlink { target: c(&target), at: c(&under(path)) })
    };
    for (path, grant, is_dir) in entries {
        parents(&path, &mut steps);
        let literal = path.symlink_metadata().is_ok_and(|m| m.file_type().is_symlink());
        match (grant, literal) {
            (_, true) => steps.extend(link(&path)),
            (Grant::Parent(Mode::Rw), false) => {
                steps.push(Step::Bind { source: c(&path), target: c(&under(&path)), writable: true, dir: true });
            }
            (Grant::Parent(_), false) => {
                steps.push(Step::Dir(c(&under(&path))));
                rebuilt.push(c(&path));
            }
            // (Held trees are not laid out for an isolated root.)
            (Grant::Tree(mode) | Grant::NoMake(mode), false) => steps.push(Step::Bind {
                source: c(&path),
                target: c(&under(&path)),
                writable: mode == Mode::Rw,
                dir: is_dir,
            }),
        }
    }
    // The symlinks of the directories rebuilt here, made again as links
    // (those beneath a directory mounted whole are there already, and a
    // procfs is mounted fresh).
    let rebuilt_link = |l: &&PathBuf| !whole.iter().chain(procs.iter().copied()).any(|w| l.starts_with(w));
    for path in layout.links.iter().filter(rebuilt_link) {
        parents(path, &mut steps);
        steps.extend(link(path));
    }
    for m in &procs {
        parents(m, &mut steps);
        steps.push(Step::Dir(c(&under(m))));
        steps.push(Step::Proc(c(&under(m))));
    }
    // The carve-outs inside writable trees, and those in /proc (a fresh
    // procfs, which the child grants whole in the command's own PID
    // namespace: `landlock::OwnProc`).
    let masks = layout
        .masks
        .iter()
        .filter(|m| whole.iter().chain(procs.iter().copied()).any(|w| m.path != *w && m.path.starts_with(w)))
        .map(|m| super::MaskPlan { target: c(&under(&m.path)), kind: m.kind, dir: m.dir })
        .collect();
    let inside = surface.lookup(cwd.as_os_str().as_bytes()).is_some();
    let (uid, gid) = (nix::unistd::geteuid().as_raw(), nix::unistd::getegid().as_raw());
    let user_namespace =
        (uid != 0).then(|| (format!("{uid} {uid} 1\n").into_bytes(), format!("{gid} {gid} 1\n").into_bytes()));
    Isolation {
        root: c(staging),
        steps,
        masks,
        rebuilt,
        cwd: if inside { c(cwd) } else { CString::from(c"/") },
        user_namespace,
    }
}

/// Carries out the plan in the child: a private mount namespace, the tmpfs
/// root, the steps, `pivot_root`. Async-signal-safe: no allocation.
pub fn enter(plan: &Isolation) -> Result<(), Errno> {
    const NONE: Option<&CStr> = None;
    match &plan.user_namespace {
        // Unprivileged: a user namespace of our own gives the capabilities
        // to mount in the new mount namespace; our uid and gid map to
        // themselves, so files keep their owners.
        Some((uid_map, gid_map)) => {
            process::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS)?;
            process::write_file(c"/proc/self/setgroups", b"deny")?;
            process::write_file(c"/proc/self/uid_map", uid_map)?;
            process::write_file(c"/proc/self/gid_map", gid_map)?;
        }
        None => process::unshare(libc::CLONE_NEWNS)?,
    }
    process::mount(NONE, c"/", NONE, libc::MS_REC | libc::MS_PRIVATE, NONE)?;
    process::mount(Some(c"tmpfs"), &plan.root, Some(c"tmpfs"), libc::MS_NOSUID | libc::MS_NODEV, Some(c"mode=0755"))?;
    for step in &plan.steps {
        match step {
            Step::Dir(p) => process::mkdir_existing_ok(p, 0o755)?,
            Step::Symlink { target, at } => match process::symlink(target, at) {
                Ok(()) | Err(Errno::EEXIST) => {}
                Err(e) => return Err(e),
            },
            Step::Bind { source, target, writable, dir } => {
                // Inside an earlier bind the mount point exists already (its
                // source is the same tree); in the tmpfs it is made here.
                let made = if *dir { process::mkdir_existing_ok(target, 0o755) } else { process::touch(target) };
                match made {
                    Ok(()) | Err(Errno::EROFS) | Err(Errno::EACCES) => {}
                    Err(e) => return Err(e),
                }
                process::mount(Some(source), target, NONE, libc::MS_BIND | libc::MS_REC, NONE)?;
                if !writable {
                    let flags = libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV;
                    process::mount(NONE, target, NONE, flags, NONE).or_else(|_| {
                        process::mount(NONE, target, NONE, libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY, NONE)
                    })?;
                }
            }
            // A new procfs needs privilege over the PID namespace, which a
            // user namespace of our own does not give: then the host's is
            // bound instead (the supervisor decides /proc/<pid> either way).
            Step::Proc(p) if plan.user_namespace.is_some() => {
                process::mount(Some(c"/proc"), p, NONE, libc::MS_BIND | libc::MS_REC, NONE)?
            }
            Step::Proc(p) => process::mount(
                Some(c"proc"),
                p,
                Some(c"proc"),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                NONE,
            )?,
        }
    }
    super::apply_masks(&plan.masks)?;
    process::chdir(&plan.root)?;
    process::pivot_to_cwd()?;
    process::chdir(&plan.cwd).or_else(|_| process::chdir(c"/"))
}

/// Grants the rebuilt directories ([`Isolation::rebuilt`]) their listing
/// in `ruleset`, once in the new root. Async-signal-safe.
pub fn grant_rebuilt(plan: &Isolation, ruleset: std::os::fd::BorrowedFd<'_>) -> Result<(), Errno> {
    use crate::sys::fs::{openat, Dir};
    use std::os::fd::AsFd;
    let access = super::landlock::parent_rights().bits();
    for dir in &plan.rebuilt {
        let fd = openat(Dir::Cwd, dir, libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC, 0)?;
        crate::sys::landlock::add_path_rule(ruleset, access, fd.as_fd())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Origin, Rule};

    #[test]
    fn a_glob_base_that_is_also_read_only_is_mounted_writable() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap();
        let mut s = Surface::new();
        s.add(Rule { path: home.clone(), mode: Mode::Ro, origin: Origin::Flag("t".into()) });
        s.add_glob(&home.join(".tool.json.*"), crate::policy::GlobEffect::Grant, Origin::Flag("t".into())).unwrap();
        let p = plan(&s, &crate::sandbox::landlock::isolated(&s), Path::new("/new"), Path::new("/"));
        let binds: Vec<&Step> = p.steps.iter().filter(|st| matches!(st, Step::Bind { .. })).collect();
        assert_eq!(binds.len(), 1, "{:?}", p.steps);
        assert!(matches!(binds[0], Step::Bind { writable: true, .. }), "{:?}", p.steps);
    }

    #[test]
    fn carve_outs_are_left_out_and_parents_come_first() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for f in ["etc/passwd", "etc/shadow", "ws/a"] {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        let mut s = Surface::new();
        let o = || Origin::Flag("t".into());
        s.add(Rule { path: root.join("etc"), mode: Mode::Ro, origin: o() });
        s.add(Rule { path: root.join("etc/shadow"), mode: Mode::Deny, origin: o() });
        s.add(Rule { path: root.join("ws"), mode: Mode::Rw, origin: o() });
        let staging = Path::new("/new");
        let p = plan(&s, &crate::sandbox::landlock::isolated(&s), staging, &root.join("ws"));
        let text = format!("{:?}", p.steps);
        assert!(text.contains("etc/passwd") && !text.contains("shadow"), "{text}");
        assert_eq!(p.masks, vec![], "a read-only tree is rebuilt around its carve-out, not masked");
        let pos = |needle: &str| p.steps.iter().position(|st| format!("{st:?}").contains(needle)).unwrap();
        assert!(pos(&format!("Dir(\"/new{}\")", root.display())) < pos("etc/passwd"));
        assert_eq!(p.cwd, c(&root.join("ws")));
    }
}
