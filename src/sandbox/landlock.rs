//! The Landlock backstop: a ruleset built from the same surface as the trie.
//!
//! The supervisor decides every trapped call, but calls it answers with
//! CONTINUE are resolved again by the kernel, after the check. Landlock makes
//! the kernel enforce the same surface on that second resolution, so a path
//! swapped in between still cannot reach anything outside it.
//!
//! Landlock grants whole trees and cannot carve a denied entry out of a
//! granted one. Where the surface does (a secret inside `/etc`), the ruleset
//! grants the tree's entries one by one instead, leaving the carve-out out,
//! and gives the directory itself less: listing only for a read-only tree;
//! for a read-write one everything but writing and truncating files, so that
//! new names in a workspace with a carve-out can still be created, renamed,
//! removed and executed (the kernel's exec needs read and execute rights).
//! Opens are emulated by the supervisor, so reading and writing a name
//! created later is decided there, never by these rights.

use crate::policy::{Mode, ProcPlace, Surface};
use landlock::{
    Access, AccessFs, BitFlags, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr, Scope, ABI,
};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
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
    /// `--net connect=` needs Landlock's network rules.
    #[error("--net connect= needs Landlock ABI 4 (Linux 6.7) for TCP port rules; this kernel offers ABI {0}")]
    NoNetwork(i32),
    /// The ruleset came back without a descriptor.
    #[error("the Landlock ruleset was not created")]
    NotCreated,
    /// A path rule was refused (the entry changed type while the ruleset
    /// was built, say).
    #[error("adding the Landlock rule for {0}: {1}")]
    Rule(PathBuf, nix::errno::Errno),
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
    pub rules: Vec<(PathBuf, Grant)>,
    /// With a PID namespace of the command's own and an exact ruleset: the
    /// grant the child adds for its procfs ([`own_proc`]).
    pub own_proc: Option<OwnProc>,
}

/// What a directory with a carve-out beneath it gets itself (Landlock rights
/// on a directory reach every file beneath it, the carve-out included):
/// never a right that writes or truncates a file.
fn parent_rights(mode: Mode, abi: ABI) -> BitFlags<AccessFs> {
    let content = AccessFs::WriteFile | AccessFs::Truncate;
    match mode {
        Mode::Deny => BitFlags::empty(),
        Mode::Ro => AccessFs::ReadDir.into(),
        Mode::Rw => rights(Mode::Rw, abi, true) & !content,
    }
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

/// One Landlock grant: a path and what it gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Grant {
    /// The whole tree (or file) with the rights of this mode.
    Tree(Mode),
    /// The directory of an expanded tree: see [`parent_rights`].
    Parent(Mode),
    /// The literal base directory of a grant glob: Landlock gets the rights
    /// of a writable parent ([`parent_rights`]); the supervisor decides which
    /// names beneath it match.
    GlobBase,
}

/// For every directory above an entry, the narrowest mode of the entries
/// beneath it: a directory needs expanding when that is narrower than its
/// own grant.
struct Beneath(std::collections::HashMap<PathBuf, Mode>);

impl Beneath {
    fn of(surface: &Surface) -> Beneath {
        let mut map = std::collections::HashMap::new();
        // A procfs mount is never granted whole: granted whole, it would
        // grant every process's /proc/<pid> (the host's, where the command
        // has no PID namespace of its own), which the surface refuses
        // outside the sandbox, and a CONTINUEd open whose path is swapped
        // after its check would reach them. So it, and every directory
        // above it, is expanded as around a carve-out (`grant` then skips
        // its pid entries).
        for m in surface.proc_mounts() {
            for a in m.ancestors() {
                map.insert(a.to_path_buf(), Mode::Deny);
            }
        }
        // A name an overlay hides does not exist for the command: no
        // carve-out is needed around it.
        let hidden: Vec<u32> = surface.hidden_by_overlay().collect();
        for (i, r) in surface.effective_rules() {
            if hidden.contains(&i) {
                continue;
            }
            for a in r.path.ancestors().skip(1) {
                let m = map.entry(a.to_path_buf()).or_insert(r.mode);
                *m = (*m).min(r.mode);
            }
        }
        Beneath(map)
    }

    fn narrower(&self, path: &Path, mode: Mode) -> bool {
        self.0.get(path).is_some_and(|m| *m < mode)
    }
}

/// The grants that express `surface` in Landlock terms.
pub fn grants(surface: &Surface) -> Vec<(PathBuf, Grant, bool)> {
    let mut out = Vec::new();
    let beneath = Beneath::of(surface);
    for (_, rule) in surface.effective_rules() {
        // `/proc/<pid>` is decided by sandbox membership, which no rule
        // expresses: the supervisor opens what the command may reach there.
        let in_a_process = matches!(surface.proc_place(rule.path.as_os_str().as_bytes()), ProcPlace::Pid(..));
        if rule.mode == Mode::Deny || in_a_process {
            continue;
        }
        grant(surface, &beneath, &rule.path, rule.mode, None, &mut out);
    }
    // A glob names files Landlock cannot: the base directory gets what
    // creating, renaming and removing names beneath it needs, and the
    // supervisor decides which names. (Its opens are emulated, so the
    // missing write right never applies to them.)
    for g in surface.globs() {
        if g.effect == crate::policy::GlobEffect::Grant && g.base.is_dir() {
            out.push((g.base.clone(), Grant::GlobBase, true));
        }
    }
    out
}

/// Grants `path` with `mode`, or, if a narrower entry lies beneath it, lists
/// the directory and grants its entries one by one. `is_dir` is known for an
/// entry listed that way (its directory entry's type, unless a symlink),
/// which saves a stat per entry of an expanded tree.
fn grant(
    surface: &Surface,
    beneath: &Beneath,
    path: &Path,
    mode: Mode,
    is_dir: Option<bool>,
    out: &mut Vec<(PathBuf, Grant, bool)>,
) {
    let is_dir = match is_dir {
        Some(d) => d,
        None => match path.metadata() {
            Ok(md) => md.is_dir(),
            Err(_) => return granted_before_it_exists(path, mode, out),
        },
    };
    if !is_dir || !beneath.narrower(path, mode) {
        out.push((path.to_path_buf(), Grant::Tree(mode), is_dir));
        return;
    }
    // The directory gets no content rights; its entries are granted one by one.
    out.push((path.to_path_buf(), Grant::Parent(mode), true));
    let Ok(entries) = std::fs::read_dir(path) else { return };
    let procfs = surface.proc_mounts().iter().any(|m| m == path);
    for entry in entries.flatten() {
        // In procfs, the processes that exist now (interpose, init, the
        // host's) are never granted, nor `self`, which would name the
        // builder: the sandbox's own /proc/<pid> entries are opened by the
        // supervisor, and a magic link such as /proc/self/exe is checked by
        // Landlock at the file it points to.
        let name = entry.file_name();
        let name = name.as_encoded_bytes();
        if procfs && (name.iter().all(u8::is_ascii_digit) || name == b"self" || name == b"thread-self") {
            continue;
        }
        let child = entry.path();
        if is_entry(surface, &child) {
            continue; // granted (or denied) by its own entry
        }
        let is_dir = entry.file_type().ok().filter(|t| !t.is_symlink()).map(|t| t.is_dir());
        grant(surface, beneath, &child, mode, is_dir, out);
    }
}

/// A name granted before it exists (Claude Code's first `~/.claude.json`):
/// its directory gets what creating and renaming a name there needs, like a
/// glob's base; the supervisor decides which name.
fn granted_before_it_exists(path: &Path, mode: Mode, out: &mut Vec<(PathBuf, Grant, bool)>) {
    if mode == Mode::Rw {
        if let Some(dir) = path.parent().filter(|d| d.is_dir()) {
            out.push((dir.to_path_buf(), Grant::GlobBase, true));
        }
    }
}

fn is_entry(surface: &Surface, path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    surface.lookup(path.as_os_str().as_bytes()).is_some_and(|i| surface.rules()[i as usize].path == path)
}

/// For each surface rule, whether the ruleset enforces exactly what the
/// surface says beneath it, so that the supervisor may answer an allowed
/// open with CONTINUE and let the kernel open it: the rule is granted as a
/// whole tree with its own mode, and nowhere does the ruleset allow more
/// than the surface (no read-write directory expanded around a carve-out,
/// whose files stay readable to Landlock; no glob, which Landlock cannot
/// express). A path swapped in after the check can then reach nothing the
/// supervisor would refuse. `None` when some part of the ruleset is looser.
pub fn exact_rules(surface: &Surface, granted: &[(PathBuf, Grant)]) -> Option<Vec<bool>> {
    if granted.iter().any(|(_, g)| matches!(g, Grant::Parent(Mode::Rw) | Grant::GlobBase))
        || !surface.globs().is_empty()
    {
        return None;
    }
    let trees: std::collections::HashMap<&Path, Mode> = granted
        .iter()
        .filter_map(|(p, g)| match g {
            Grant::Tree(m) => Some((p.as_path(), *m)),
            Grant::Parent(_) | Grant::GlobBase => None,
        })
        .collect();
    let mut exact = vec![false; surface.rules().len()];
    for (i, r) in surface.effective_rules() {
        exact[i as usize] = r.mode != Mode::Deny && trees.get(r.path.as_path()) == Some(&r.mode);
    }
    Some(exact)
}

/// What the child adds to the ruleset for the procfs it mounts in its own
/// PID namespace, where Landlock decides the rest of the surface exactly:
/// fast mode then leaves read-only opens to Landlock, and an open continued
/// on the path as written that a symlink leads into `/proc` is decided the
/// same way as one resolved by the supervisor.
///
/// That procfs lists only the sandbox's processes, so the surface's answer
/// there (the command's own `/proc/<pid>` allowed, every other process's
/// refused) is the whole tree's: one grant of its root, made in the child
/// after the mount (the ruleset built here names the supervisor's procfs,
/// whose inodes the command no longer reaches). Landlock cannot carve the
/// surface's denied entries (`/proc/kcore`, `/proc/timer_list`...) out of
/// that grant, so the child mounts over each a read-only, `nodev` bind of
/// `/dev/null` (a device on a `nodev` mount cannot be opened: `EACCES`, as
/// in full mode) or, over a directory, an empty mode-000 tmpfs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnProc {
    /// Landlock rights on the new procfs's root (none where the surface
    /// lets nothing there be read).
    pub access: u64,
    /// The surface's carve-outs in `/proc`, masked in the child.
    pub masks: Vec<PathBuf>,
}

/// The [`OwnProc`] grant for `surface`, or why Landlock cannot decide its
/// `/proc` (then fast mode keeps read-only opens trapped).
pub fn own_proc(surface: &Surface, abi: i32) -> Result<OwnProc, String> {
    let proc = Path::new("/proc");
    if let Some(other) = surface.proc_mounts().iter().find(|m| *m != proc) {
        return Err(format!("a procfs is mounted at {} too, numbered as the host's processes", other.display()));
    }
    let mut masks = Vec::new();
    for (_, rule) in surface.effective_rules() {
        let Ok(rest) = rule.path.strip_prefix(proc) else { continue };
        let name = rest.as_os_str().as_bytes();
        let top_level = rest.components().count() == 1
            && !name.iter().all(u8::is_ascii_digit)
            && name != b"self"
            && name != b"thread-self";
        match rule.mode {
            Mode::Deny if top_level => masks.push(rule.path.clone()),
            // Anything else (a grant inside /proc, a carve-out in a
            // process's directory) is beyond one grant and masks.
            _ if name.is_empty() => {}
            _ => {
                return Err(format!(
                    "the surface's entry {} is more than Landlock can say about /proc",
                    rule.path.display()
                ))
            }
        }
    }
    let readable =
        surface.lookup(b"/proc").is_some_and(|i| surface.rules()[i as usize].mode.permits(crate::policy::Access::Read));
    let access = if readable { rights(Mode::Ro, ABI::from(abi), true).bits() } else { 0 };
    Ok(OwnProc { access, masks })
}

/// Builds the ruleset for `surface` at the highest ABI the kernel offers.
pub fn build(surface: &Surface) -> Result<Backstop, LandlockError> {
    build_with_network(surface, None)
}

/// As [`build`]; with `tcp_connect`, TCP connects are allowed only to those
/// ports (Landlock ABI 4, Linux 6.7).
pub fn build_with_network(surface: &Surface, tcp_connect: Option<&[u16]>) -> Result<Backstop, LandlockError> {
    let version = crate::sys::landlock::abi_version().map_err(LandlockError::Unavailable)?;
    let abi = ABI::from(version);
    let scoped = version >= 6;
    let mut ruleset =
        Ruleset::default().set_compatibility(CompatLevel::HardRequirement).handle_access(AccessFs::from_all(abi))?;
    if tcp_connect.is_some() {
        if version < 4 {
            return Err(LandlockError::NoNetwork(version));
        }
        ruleset = ruleset.handle_access(landlock::AccessNet::ConnectTcp)?;
    }
    if scoped {
        ruleset = ruleset.scope(Scope::AbstractUnixSocket | Scope::Signal)?;
    }
    let mut created = ruleset.create()?;
    for &port in tcp_connect.unwrap_or_default() {
        created = created.add_rule(landlock::NetPort::new(port, landlock::AccessNet::ConnectTcp))?;
    }
    let fd: Option<OwnedFd> = created.into();
    let ruleset = fd.ok_or(LandlockError::NotCreated)?;
    // The path rules are added directly: an expanded /etc or /proc is a few
    // hundred of them, and the crate's rule checks stat each descriptor
    // again (the type is known here already).
    let mut rules = Vec::new();
    for (path, grant, is_dir) in grants(surface) {
        let Ok(name) = std::ffi::CString::new(path.as_os_str().as_bytes()) else { continue };
        let Ok(fd) = crate::sys::fs::openat(crate::sys::fs::Dir::Cwd, &name, libc::O_PATH | libc::O_CLOEXEC, 0) else {
            continue;
        };
        let access = match grant {
            Grant::Tree(mode) => rights(mode, abi, is_dir),
            Grant::Parent(mode) => parent_rights(mode, abi),
            Grant::GlobBase => parent_rights(Mode::Rw, abi),
        };
        crate::sys::landlock::add_path_rule(ruleset.as_fd(), access.bits(), fd.as_fd())
            .map_err(|errno| LandlockError::Rule(path.clone(), errno))?;
        rules.push((path, grant));
    }
    Ok(Backstop { ruleset, abi: version, scoped, rules, own_proc: None })
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
        let mut g: Vec<(PathBuf, Grant)> = grants(&s).into_iter().map(|(p, m, _)| (p, m)).collect();
        g.sort();
        assert_eq!(
            g,
            vec![
                (root.clone(), Grant::Parent(Mode::Ro)),
                (root.join("a"), Grant::Tree(Mode::Ro)),
                (root.join("sub"), Grant::Parent(Mode::Ro)),
                (root.join("sub/b"), Grant::Tree(Mode::Ro)),
            ]
        );
        // The parents of a carve-out get no right that reaches file content.
        let abi = ABI::V5;
        assert_eq!(parent_rights(Mode::Ro, abi), BitFlags::from(AccessFs::ReadDir));
        assert!(!parent_rights(Mode::Rw, abi).intersects(AccessFs::WriteFile | AccessFs::Truncate));
        assert!(parent_rights(Mode::Rw, abi).contains(AccessFs::MakeReg | AccessFs::RemoveFile | AccessFs::Refer));
    }
}
