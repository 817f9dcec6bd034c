//! The kernel's backstop: a Landlock ruleset and, where the command has a
//! mount namespace of its own, mounts over the carve-outs, both made from
//! the same surface as the trie.
//!
//! The supervisor decides every trapped call, but a call it answers with
//! CONTINUE is looked up again by the kernel, after the check, in memory
//! another thread may have changed. So the backstop holds one invariant,
//! by construction: **it never grants an object more than the surface
//! does**. Wherever a continued call ends up, the kernel then refuses what
//! the surface refuses ([`Sound`] is the proof a handler needs before it
//! may continue; see `supervisor::cover`).
//!
//! Landlock grants whole trees and cannot carve a denied entry out of a
//! granted one. With a mount namespace of the command's own each carve-out
//! that exists is masked there instead ([`Mask`]: an empty, read-only
//! object over a denied entry, a read-only bind over a read-only one inside
//! a writable tree), so the tree is granted whole and the kernel holds the
//! carve-out itself. Without one (`--no-namespace`, an ordinary user
//! without user namespaces), or around a carve-out that holds a grant of its
//! own, the tree is expanded instead: its directory is only listable and its
//! entries are granted one by one, leaving the carve-out out. A carve-out
//! that does not exist yet cannot be masked: the directories above it are
//! granted everything but making names ([`Grant::NoMake`]), their
//! subdirectories whole, so the kernel makes no name where it could
//! appear and the supervisor makes those ([`Making`]); under `--isolate`,
//! where the kernel could create it, creating continued calls are
//! emulated ([`Sound::creates`]). A grant
//! pattern (`~/.claude.json.*`) names files Landlock cannot: it is granted
//! nothing, and calls beneath it are emulated.

use crate::policy::{Access as SurfaceAccess, GlobEffect, Mode, ProcPlace, Surface};
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

/// One Landlock grant: a path and what it gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Grant {
    /// The whole tree (or file) with the rights of this mode.
    Tree(Mode),
    /// A directory of an expanded tree of this mode: listing only (its
    /// entries are granted one by one; see [`parent_rights`]).
    Parent(Mode),
    /// A directory on the way to a carve-out that does not exist yet, in a
    /// tree of this mode: everything the mode grants but making names (the
    /// `MAKE_*` rights, which Landlock adds up along a path), so that the
    /// kernel refuses to make the carve-out wherever a racing path leads;
    /// its subdirectories are granted whole on their own, and the kernel
    /// makes names there ([`Making`]).
    NoMake(Mode),
}

/// A mount in the command's mount namespace that holds a carve-out inside
/// a tree Landlock grants whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mask {
    /// The carve-out (canonical).
    pub path: PathBuf,
    /// What is mounted there.
    pub kind: MaskKind,
    /// Whether the entry was a directory when the mask was planned (a
    /// [`MaskKind::Hide`] mounts what fits it).
    pub dir: bool,
}

/// What a [`Mask`] mounts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaskKind {
    /// A denied entry: `/dev/null` on a read-only `nodev` bind over a file
    /// (opening it fails with `EACCES`), an empty read-only mode-000 tmpfs
    /// over a directory.
    Hide,
    /// A read-only entry inside a writable tree (`deny_writes`): bound onto
    /// itself read-only (`EROFS` for every change beneath it).
    ReadOnly,
    /// A writable entry inside a [`MaskKind::ReadOnly`] one: bound onto
    /// itself writable again.
    Writable,
}

/// Proof that the backstop refuses, for the continued calls it covers,
/// everything the surface refuses, wherever the kernel's own lookup leads:
/// made only by [`layout`], which builds the grants and masks to hold it.
/// Handlers answer CONTINUE only with it (`supervisor::cover::Cover`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sound {
    creates: bool,
    /// A carved-out file is a hard link of a file the ruleset grants: a
    /// rule on a file is on its inode, whatever name it was made from, so
    /// the kernel grants the carve-out with it.
    aliased: bool,
}

impl Sound {
    /// Whether a continued call asking `access` is refused by the kernel
    /// wherever the surface refuses it. Reading, writing and executing
    /// always are (every grant is within the surface, every carve-out that
    /// exists is masked or left out); creating is not where a carve-out
    /// that does not exist yet lies in a tree the kernel lets the command
    /// create in. Metadata (`stat`, `O_PATH`, `chdir`) is never Landlock's.
    pub fn covers(self, access: SurfaceAccess) -> bool {
        match access {
            SurfaceAccess::Read | SurfaceAccess::Write | SurfaceAccess::Exec => !self.aliased,
            SurfaceAccess::Create => self.creates,
            SurfaceAccess::Delete | SurfaceAccess::LinkSource | SurfaceAccess::Stat => false,
        }
    }

    /// Whether the kernel refuses every create the surface refuses.
    pub fn creates(self) -> bool {
        self.creates
    }
}

/// How the kernel is given the surface.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The Landlock grants: path, what it gets, and whether it is a
    /// directory.
    pub grants: Vec<(PathBuf, Grant, bool)>,
    /// Mounts over carve-outs, parents before children (empty without a
    /// mount namespace of the command's own).
    pub masks: Vec<Mask>,
    /// What the kernel then refuses as the surface does.
    pub sound: Sound,
    /// Carve-outs that do not exist yet, in trees the kernel lets the
    /// command create in (why [`Sound::creates`] is false): none with a
    /// mount namespace outside `--isolate`, where the ruleset holds them
    /// ([`Grant::NoMake`]).
    pub missing: Vec<PathBuf>,
    /// The symlinks in directories granted entry by entry: no rule is
    /// added for one (a rule is added on what a path opens, which is where
    /// the link leads); `--isolate`'s root makes them again as links.
    pub links: Vec<PathBuf>,
    /// Whether the ruleset also grants everything the surface lets be read:
    /// no tree expanded (a name made later in an expanded directory is
    /// granted nothing), no grant pattern, no entry granted before it
    /// exists. Fast mode leaves read-only opens to the kernel only then.
    pub reads_exact: bool,
    /// Whether it also does for names: reads are exact, creating is sound,
    /// no carve-out lies inside a writable tree (moving its directory
    /// would move it away from the name the surface protects) and none is
    /// held ([`Grant::NoMake`]: the kernel makes no name where it could
    /// appear, the supervisor does). Fast mode leaves name operations to
    /// the kernel only then.
    pub names_exact: bool,
    /// The rules' paths that are character devices (`/dev/null`): a
    /// device's node is the system's, made once, never saved over by a
    /// rename, so a grant of it holds the rule exactly ([`Layout::exact_rules`]).
    pub devices: Vec<PathBuf>,
    /// Whether every entry that grants exists at the start and no grant
    /// pattern grants a name made later (half of [`Layout::reads_exact`]).
    granted_at_start: bool,
    /// Why not, in words: the first such entry or pattern, and where it
    /// came from.
    granted_later: Option<String>,
    /// Where reads are not exact, why, in words.
    pub reads_inexact: Option<String>,
    /// Where the kernel makes names in a held tree.
    pub making: Making,
}

/// Where the kernel makes names in a tree held around a carve-out that
/// does not exist yet ([`Grant::NoMake`]): nowhere in a held directory
/// itself, and beneath each subdirectory of one granted whole, which is
/// the object its rule was added on (a directory made again under that
/// name later is granted nothing: its names are the supervisor's to
/// make). A creating call may be continued only where the kernel makes
/// the name ([`Making::makes_in`]), or the kernel would refuse what the
/// surface allows.
#[derive(Debug, Clone, Default)]
pub struct Making {
    /// The held directories.
    held: Vec<PathBuf>,
    /// Each subdirectory of a held one granted whole, and the device and
    /// inode its rule is on (`None` until the ruleset is built).
    whole: std::collections::HashMap<PathBuf, Option<(u64, u64)>>,
}

impl Making {
    /// Whether no tree is held.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    fn of(grants: &[(PathBuf, Grant, bool)]) -> Making {
        let held: Vec<PathBuf> =
            grants.iter().filter(|(_, g, _)| matches!(g, Grant::NoMake(_))).map(|(p, _, _)| p.clone()).collect();
        let whole = grants
            .iter()
            .filter(|(p, g, dir)| {
                *dir && *g == Grant::Tree(Mode::Rw) && p.parent().is_some_and(|d| held.iter().any(|h| h == d))
            })
            .map(|(p, _, _)| (p.clone(), None))
            .collect();
        Making { held, whole }
    }

    /// Whether the kernel makes a name in the directory `dir` (a canonical
    /// path): outside every held tree always; in one, only strictly beneath
    /// a subdirectory granted whole that is still the object granted, the
    /// directory reached from it with no symlink on the way. A directory
    /// moved or swapped between this and the kernel's own lookup only makes
    /// the kernel refuse the call.
    pub fn makes_in(&self, dir: &[u8]) -> bool {
        use crate::sys::fs;
        let under = |held: &&PathBuf| {
            let h = held.as_os_str().as_bytes();
            h == b"/" || (dir.starts_with(h) && matches!(dir.get(h.len()), None | Some(b'/')))
        };
        let Some(held) = self.held.iter().filter(under).max_by_key(|h| h.as_os_str().len()) else { return true };
        // What follows the held directory (`under` made it a prefix).
        let tail = &dir[held.as_os_str().len()..];
        let rest = tail.strip_prefix(b"/").unwrap_or(tail);
        if rest.is_empty() {
            return false;
        }
        let first = rest.iter().position(|&b| b == b'/').unwrap_or(rest.len());
        let child = &dir[..dir.len() - rest.len() + first];
        let after = rest[first..].strip_prefix(b"/").unwrap_or_default();
        let Some(Some((dev, ino))) = self.whole.get(Path::new(std::ffi::OsStr::from_bytes(child))) else {
            return false;
        };
        let strict = fs::RESOLVE_NO_SYMLINKS | fs::RESOLVE_NO_MAGICLINKS;
        let how = |resolve| fs::OpenHow { flags: (libc::O_PATH | libc::O_DIRECTORY) as u64, mode: 0, resolve };
        let (Ok(child), Ok(after)) = (std::ffi::CString::new(child), std::ffi::CString::new(after)) else {
            return false;
        };
        let Ok(top) = fs::openat2(fs::Dir::Cwd, &child, how(strict)) else { return false };
        let same = fs::fstat(top.as_fd()).is_ok_and(|st| (st.st_dev, st.st_ino) == (*dev, *ino));
        same && (after.is_empty()
            || fs::openat2(fs::Dir::Fd(top.as_fd()), &after, how(strict | fs::RESOLVE_BENEATH)).is_ok())
    }
}

/// What a directory of an expanded tree gets itself: listing only. Its
/// entries are granted one by one; a name made in it later is granted
/// nothing, so calls on it are the supervisor's (a Landlock right on a
/// directory reaches every file beneath it, a carve-out included).
pub(super) fn parent_rights() -> BitFlags<AccessFs> {
    AccessFs::ReadDir.into()
}

/// The rights that make a name in a directory.
fn making() -> BitFlags<AccessFs> {
    AccessFs::MakeChar
        | AccessFs::MakeDir
        | AccessFs::MakeReg
        | AccessFs::MakeSock
        | AccessFs::MakeFifo
        | AccessFs::MakeBlock
        | AccessFs::MakeSym
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

/// A carve-out: a place the surface grants less than the tree around it.
#[derive(Debug, Clone)]
struct Carve {
    path: PathBuf,
    mode: Mode,
}

/// The mode of the deepest rule strictly above `path`, if any.
fn covering_mode(surface: &Surface, path: &Path) -> Option<Mode> {
    let parent = path.parent()?;
    surface.lookup(parent.as_os_str().as_bytes()).map(|i| surface.rules()[i as usize].mode)
}

/// Every carve-out of `surface` inside a tree it grants: rules narrower than
/// the rule above them, and the places of deny patterns that name one
/// place. `/proc/<pid>` is decided by membership, not carved.
fn carve_outs(surface: &Surface) -> Vec<Carve> {
    let hidden: Vec<u32> = surface.hidden_by_overlay().collect();
    let mut out: Vec<Carve> = Vec::new();
    for (i, r) in surface.effective_rules() {
        // A name an overlay hides does not exist for the command.
        if hidden.contains(&i) || matches!(surface.proc_place(r.path.as_os_str().as_bytes()), ProcPlace::Pid(..)) {
            continue;
        }
        if covering_mode(surface, &r.path).is_some_and(|cover| r.mode < cover) {
            out.push(Carve { path: r.path.clone(), mode: r.mode });
        }
    }
    for g in surface.globs().iter().filter(|g| g.effect != GlobEffect::Grant && !g.settled) {
        let Some(place) = g.subtree() else { continue };
        let mode = if g.effect == GlobEffect::Deny { Mode::Deny } else { Mode::Ro };
        let cover = surface.lookup(place.as_os_str().as_bytes()).map(|i| surface.rules()[i as usize].mode);
        if cover.is_some_and(|c| mode < c) {
            match out.iter_mut().find(|c| c.path == place) {
                Some(c) => c.mode = c.mode.min(mode),
                None => out.push(Carve { path: place.to_path_buf(), mode }),
            }
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// A denied carve-out of `surface` that is a symlink itself (a link named
/// like a key, which a deny pattern matched): no mask can cover a link (a
/// mount lands on what it points to), so the kernel would read its target.
pub fn denied_link(surface: &Surface) -> Option<PathBuf> {
    carve_outs(surface)
        .into_iter()
        .filter(|c| c.mode == Mode::Deny)
        .map(|c| c.path)
        .find(|p| p.symlink_metadata().is_ok_and(|md| md.file_type().is_symlink()))
}

/// For every directory above a place that forces its tree to be expanded,
/// the narrowest mode beneath it: a directory is expanded when that is
/// narrower than its own grant.
struct Beneath {
    narrowest: std::collections::HashMap<PathBuf, Mode>,
    /// The directories above a carve-out that does not exist yet, which the
    /// ruleset holds ([`Grant::NoMake`]).
    held: std::collections::HashSet<PathBuf>,
}

impl Beneath {
    fn of(forced: &[Carve], held: &[PathBuf]) -> Beneath {
        let mut narrowest = std::collections::HashMap::new();
        for c in forced {
            for a in c.path.ancestors().skip(1) {
                let m = narrowest.entry(a.to_path_buf()).or_insert(c.mode);
                *m = (*m).min(c.mode);
            }
        }
        let held = held.iter().flat_map(|p| p.ancestors().skip(1)).map(Path::to_path_buf).collect();
        Beneath { narrowest, held }
    }

    fn narrower(&self, path: &Path, mode: Mode) -> bool {
        self.narrowest.get(path).is_some_and(|m| *m < mode)
    }

    /// Whether names may not be made in `path`, a directory granted `mode`.
    fn holds(&self, path: &Path, mode: Mode) -> bool {
        mode == Mode::Rw && self.held.contains(path)
    }
}

/// The backstop for `surface`: with `mounts` (the command has a mount
/// namespace of its own, with its own `/proc`), carve-outs that exist are
/// masked and trees granted whole; without, trees with carve-outs are
/// expanded.
pub fn layout(surface: &Surface, mounts: bool) -> Layout {
    laid_out(surface, mounts, mounts)
}

/// [`layout`], where `hold` says whether a carve-out that does not exist
/// yet is held by the ruleset ([`Grant::NoMake`]) rather than left to the
/// supervisor (every creating call emulated, [`Sound::creates`]).
fn laid_out(surface: &Surface, mounts: bool, hold: bool) -> Layout {
    let carves = carve_outs(surface);
    // What each rule's path is now (`None`: absent; else its file type:
    // a directory, a device), looked at once: the carve-outs, the grants,
    // the entries granted later and the devices each asked again.
    let kinds: std::collections::HashMap<&Path, Option<std::fs::FileType>> = surface
        .effective_rules()
        .filter(|(_, r)| !matches!(surface.proc_place(r.path.as_os_str().as_bytes()), ProcPlace::Pid(..)))
        .map(|(_, r)| (r.path.as_path(), r.path.metadata().ok().map(|m| m.file_type())))
        .collect();
    let kind_of = |p: &Path| {
        kinds.get(p).copied().unwrap_or_else(|| p.metadata().ok().map(|m| m.file_type())).map(|t| t.is_dir())
    };
    let devices = {
        use std::os::unix::fs::FileTypeExt;
        kinds.iter().filter(|(_, t)| t.is_some_and(|t| t.is_char_device())).map(|(p, _)| p.to_path_buf()).collect()
    };
    // The granting rules' paths, split once: whether one lies beneath a
    // directory is a comparison of components (`Path::starts_with` split
    // both paths again for every pair).
    let granting: Vec<Vec<std::path::Component<'_>>> = surface
        .effective_rules()
        .filter(|(_, r)| r.mode != Mode::Deny)
        .map(|(_, r)| r.path.components().collect())
        .collect();
    let grants_beneath = |dir: &Path| {
        let dir: Vec<std::path::Component<'_>> = dir.components().collect();
        granting.iter().any(|r| r.len() > dir.len() && r[..dir.len()] == dir[..])
    };
    // Places the ruleset must expand around: every carve-out without
    // mounts; with them, a denied directory that holds a grant (a mask
    // would hide the grant too).
    let mut forced: Vec<Carve> = Vec::new();
    let mut masks: Vec<Mask> = Vec::new();
    let mut missing_carves: Vec<Carve> = Vec::new();
    for c in carves {
        let found = kind_of(&c.path);
        let (exists, dir) = (found.is_some(), found == Some(true));
        if !mounts {
            forced.push(c);
        } else if !exists {
            missing_carves.push(c);
        } else if c.mode == Mode::Deny && grants_beneath(&c.path) {
            forced.push(c);
        } else {
            let kind = if c.mode == Mode::Deny { MaskKind::Hide } else { MaskKind::ReadOnly };
            masks.push(Mask { path: c.path, kind, dir });
        }
    }
    // A procfs is never granted whole where it numbers the host's
    // processes: that would grant every process's /proc/<pid>, which the
    // surface refuses outside the sandbox. With mounts the command's /proc
    // is its PID namespace's own, which the child grants itself (see
    // [`own_proc`]); any other procfs is expanded around.
    for m in surface.proc_mounts() {
        if !mounts || m != Path::new("/proc") {
            forced.push(Carve { path: m.join("0"), mode: Mode::Deny });
        }
    }
    // Writable entries inside a read-only mask are bound writable again.
    let readonly: Vec<PathBuf> =
        masks.iter().filter(|m| m.kind == MaskKind::ReadOnly).map(|m| m.path.clone()).collect();
    for (_, r) in surface.effective_rules() {
        if r.mode != Mode::Rw || !readonly.iter().any(|m| r.path != *m && r.path.starts_with(m)) {
            continue;
        }
        if let Some(dir) = kind_of(&r.path) {
            masks.push(Mask { path: r.path.clone(), kind: MaskKind::Writable, dir });
        }
    }
    masks.sort_by(|a, b| a.path.cmp(&b.path));

    let grants_with = |beneath: &Beneath| {
        let (mut grants, mut links) = (Vec::new(), Vec::new());
        for (_, rule) in surface.effective_rules() {
            let path = rule.path.as_os_str().as_bytes();
            // `/proc/<pid>` is decided by sandbox membership, which no rule
            // expresses; with mounts, the command's /proc is not this one.
            let in_a_process = matches!(surface.proc_place(path), ProcPlace::Pid(..));
            let own_proc = mounts && rule.path.starts_with("/proc");
            if rule.mode == Mode::Deny || in_a_process || own_proc {
                continue;
            }
            // Granted before it exists (Claude Code's first `~/.claude.json`):
            // nothing to grant; the supervisor makes and opens it.
            if let Some(is_dir) = kind_of(&rule.path) {
                grant(surface, beneath, &rule.path, rule.mode, is_dir, (&mut grants, &mut links));
            }
        }
        (grants, links)
    };
    let (mut grants, mut links) = grants_with(&Beneath::of(&forced, &[]));
    let creatable = |grants: &[(PathBuf, Grant, bool)]| -> Vec<PathBuf> {
        missing_carves
            .iter()
            .filter(|c| c.path.parent().is_some_and(|dir| kernel_creates_in(dir, grants, &masks)))
            .map(|c| c.path.clone())
            .collect()
    };
    let mut missing = creatable(&grants);
    // Held: the directories above them keep every right but making names,
    // their subdirectories granted whole, so the kernel refuses to make
    // the carve-outs and makes names anywhere else. Only where each such
    // directory exists and can be neither removed nor renamed (the
    // surface refuses it, for the carve-out beneath): a directory granted
    // whole, moved to where one is missing or was, would make names there;
    // nor may the carve-out's own place be made (a directory moved there
    // would bring its rules). Every carve-out or none is held: one left to
    // the supervisor leaves every create to it ([`Sound::creates`]).
    let fixed = |c: &PathBuf| {
        let procs = crate::policy::NoProcesses;
        let place = c.as_os_str().as_bytes();
        !surface.decide(place, SurfaceAccess::Create, &procs).allowed
            && c.parent().is_some_and(|p| kind_of(p) == Some(true))
            && c.ancestors().skip(1).all(|a| {
                let a = a.as_os_str().as_bytes();
                let mode = surface.lookup(a).map(|i| surface.rules()[i as usize].mode);
                mode != Some(Mode::Rw) || !surface.decide(a, SurfaceAccess::Delete, &procs).allowed
            })
    };
    if hold && !missing.is_empty() && missing.iter().all(fixed) {
        (grants, links) = grants_with(&Beneath::of(&forced, &missing));
        missing = creatable(&grants);
    }
    let sound = Sound { creates: missing.is_empty(), aliased: aliased(&forced, &grants) };
    // An entry that does not exist yet is granted later by nothing, unless
    // an existing tree granted whole holds it (`$CLAUDE_CONFIG_DIR/.claude.json`
    // in `$CLAUDE_CONFIG_DIR/`); a grant pattern likewise, unless the tree
    // its base lies in grants everything it could.
    let granted_later = surface.effective_rules().find(|(_, r)| {
        r.mode != Mode::Deny
            && !matches!(surface.proc_place(r.path.as_os_str().as_bytes()), ProcPlace::Pid(..))
            && kind_of(&r.path).is_none()
            && !surface.granted_by_existing_tree(&r.path, r.mode)
    });
    let pattern = surface.globs().iter().find(|g| g.effect == GlobEffect::Grant && !surface.grant_pattern_redundant(g));
    let granted_later = match (granted_later, pattern) {
        (Some((_, r)), _) => {
            Some(format!("{} is granted before it exists ({}){}", r.path.display(), r.origin, remedy(&r.origin)))
        }
        (None, Some(g)) => Some(format!(
            "the grant pattern {} names files made later ({}){}",
            g.pattern.display(),
            g.origin,
            remedy(&g.origin)
        )),
        (None, None) => None,
    };
    let granted_at_start = granted_later.is_none();
    let making = Making::of(&grants);
    let mut layout = Layout {
        grants,
        masks,
        sound,
        missing,
        links,
        reads_exact: false,
        names_exact: false,
        devices,
        granted_at_start,
        granted_later,
        reads_inexact: None,
        making,
    };
    layout.settle_exactness(|(_, g, _)| matches!(g, Grant::Parent(_)));
    layout
}

/// How to make an entry of a built-in profile one Landlock can grant, where
/// there is a way.
fn remedy(origin: &crate::policy::Origin) -> &'static str {
    match origin {
        crate::policy::Origin::Profile { name, .. } if name == "claude" => {
            "; with CLAUDE_CONFIG_DIR set as `interpose agent-config claude` prints it, Claude Code keeps that file \
             in a directory of its own, which Landlock grants whole"
        }
        _ => "",
    }
}

impl Layout {
    /// Sets [`Layout::reads_exact`] and [`Layout::names_exact`] from the
    /// grants and masks, where `inexact` says which grants leave a name made
    /// later ungranted (a directory of an expanded tree).
    fn settle_exactness(&mut self, inexact: impl Fn(&(PathBuf, Grant, bool)) -> bool) {
        let writable_carve = self.masks.iter().any(|m| {
            m.kind != MaskKind::Writable
                && m.path.parent().is_some_and(|d| kernel_creates_in(d, &self.grants, &self.masks))
        });
        let expanded = self.grants.iter().find(|g| inexact(g));
        self.reads_exact = self.granted_at_start && expanded.is_none();
        self.reads_inexact = self.granted_later.clone().or_else(|| {
            expanded.map(|(dir, _, _)| {
                format!(
                    "{} is granted entry by entry around a carve-out (a name made there later is not)",
                    dir.display()
                )
            })
        });
        // Held carve-outs leave making names in their directories to the
        // supervisor.
        self.names_exact = self.reads_exact && self.sound.creates && !writable_carve && self.making.is_empty();
    }
}

/// Whether a carved-out file the ruleset was expanded around is a hard
/// link of a file it grants by a rule of its own (see [`Sound`]).
fn aliased(carves: &[Carve], grants: &[(PathBuf, Grant, bool)]) -> bool {
    use std::os::unix::fs::MetadataExt;
    let linked: Vec<(u64, u64)> = carves
        .iter()
        .filter_map(|c| std::fs::symlink_metadata(&c.path).ok())
        .filter(|m| m.is_file() && m.nlink() > 1)
        .map(|m| (m.dev(), m.ino()))
        .collect();
    !linked.is_empty()
        && grants
            .iter()
            .filter(|(_, _, dir)| !dir)
            .any(|(p, _, _)| std::fs::metadata(p).is_ok_and(|m| linked.contains(&(m.dev(), m.ino()))))
}

/// The layout under `--isolate`, whose root holds bind mounts of the
/// granted objects. A read-only tree with a carve-out is rebuilt around it
/// (the carve-out does not exist there), so its grants are those of the
/// ruleset without masks, entry by entry: a rule on a host directory would
/// not reach the entries bound beneath the root's own directory, which the
/// child grants listing itself once it is in the root
/// ([`super::isolate::Isolation::rebuilt`]); a name the host makes later in
/// it does not appear there, so such a tree is granted exactly. A writable
/// tree with a carve-out is bound whole, its carve-outs masked
/// ([`super::isolate::plan`]): its directory is the host's, so it is granted
/// whole as with masks, and a name the command makes in it later (a program
/// it builds and runs) is granted with it.
pub fn isolated(surface: &Surface) -> Layout {
    let rebuilt = layout(surface, false);
    // A tree the root binds whole keeps its carve-outs that do not exist
    // yet to the supervisor: its creating calls are emulated.
    let mut masked = laid_out(surface, true, false);
    let bound_whole: Vec<PathBuf> =
        rebuilt.grants.iter().filter(|(_, g, _)| *g == Grant::Parent(Mode::Rw)).map(|(p, _, _)| p.clone()).collect();
    let beneath = |p: &Path| bound_whole.iter().any(|w| p.starts_with(w));
    masked.grants.retain(|(p, _, _)| beneath(p));
    masked.grants.extend(rebuilt.grants.into_iter().filter(|(p, _, _)| !beneath(p)));
    // Links beneath a tree bound whole are there with it; the rebuilt
    // trees' are made again.
    masked.links = rebuilt.links.into_iter().filter(|p| !beneath(p)).collect();
    masked.sound.aliased |= rebuilt.sound.aliased;
    // Only an expanded directory of the host's, beneath a tree bound whole,
    // leaves a name made there later ungranted.
    masked.settle_exactness(|(p, g, _)| matches!(g, Grant::Parent(_)) && beneath(p));
    masked
}

/// Whether the kernel lets the command make a name in `dir`: a tree granted
/// whole read-write covers it (Landlock's rights add up along the path, and
/// a directory of an expanded tree gets none), and no read-only mask lies
/// between.
fn kernel_creates_in(dir: &Path, grants: &[(PathBuf, Grant, bool)], masks: &[Mask]) -> bool {
    let landlock = grants.iter().any(|(p, g, _)| *g == Grant::Tree(Mode::Rw) && dir.starts_with(p));
    let mount = masks
        .iter()
        .filter(|m| dir.starts_with(&m.path))
        .max_by_key(|m| m.path.as_os_str().len())
        .is_none_or(|m| m.kind == MaskKind::Writable);
    landlock && mount
}

/// Grants `path` with `mode`, or, if a place beneath it forces expansion,
/// lists the directory and grants its entries one by one into `out`, its
/// symlinks none (they go to `links`). `is_dir` is known for every path
/// granted (a rule's kind, or its directory entry's type), which saves a
/// stat per entry of an expanded tree.
fn grant(
    surface: &Surface,
    beneath: &Beneath,
    path: &Path,
    mode: Mode,
    is_dir: bool,
    (out, links): (&mut Vec<(PathBuf, Grant, bool)>, &mut Vec<PathBuf>),
) {
    if is_dir && !beneath.narrower(path, mode) && beneath.holds(path, mode) {
        // Its files are the directory's grant's; its subdirectories are
        // granted on their own (whole, or held further down).
        out.push((path.to_path_buf(), Grant::NoMake(mode), true));
        let Ok(entries) = std::fs::read_dir(path) else { return };
        for entry in entries.flatten() {
            let child = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) && !is_entry(surface, &child) {
                grant(surface, beneath, &child, mode, true, (&mut *out, &mut *links));
            }
        }
        return;
    }
    if !is_dir || !beneath.narrower(path, mode) {
        out.push((path.to_path_buf(), Grant::Tree(mode), is_dir));
        return;
    }
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
        // A symlink gets no rule: one is added on what its path opens,
        // which is where the link leads (a repository's `link -> ~/.ssh`
        // would grant `~/.ssh`). What is reached through it is granted,
        // or not, at that place by the rules of its own.
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_symlink() {
            links.push(child);
            continue;
        }
        grant(surface, beneath, &child, mode, kind.is_dir(), (&mut *out, &mut *links));
    }
}

fn is_entry(surface: &Surface, path: &Path) -> bool {
    surface.lookup(path.as_os_str().as_bytes()).is_some_and(|i| surface.rules()[i as usize].path == path)
}

impl Layout {
    /// The trees and files the kernel lets programs run from: those granted
    /// whole (every mode but `Deny` carries execute). A program elsewhere
    /// (one made after the start under a name only a grant pattern covers)
    /// the kernel refuses to run whatever the surface says.
    pub fn exec_roots(&self) -> Vec<PathBuf> {
        let runs = |g: &Grant| matches!(g, Grant::Tree(m) | Grant::NoMake(m) if *m != Mode::Deny);
        self.grants.iter().filter(|(_, g, _)| runs(g)).map(|(p, _, _)| p.clone()).collect()
    }

    /// For each surface rule, whether the kernel also grants what the rule
    /// does, so that a call it allowed may be continued without being
    /// refused where the supervisor would allow it: the rule is granted as
    /// a whole tree with its own mode (carve-outs beneath it masked), or is
    /// a device granted with its mode.
    pub fn exact_rules(&self, surface: &Surface) -> Vec<bool> {
        let trees: std::collections::HashMap<&Path, Mode> = self
            .grants
            .iter()
            .filter_map(|(p, g, dir)| match g {
                // A rule on a file holds its inode, which a rename over the
                // name replaces (an editor's or agent's atomic save): the
                // kernel would then refuse the name the surface grants. A
                // device's node is the system's, made once (`/dev/null`).
                // A held directory grants all but making names, which are
                // asked of the kernel per call ([`Making::makes_in`]).
                Grant::Tree(m) | Grant::NoMake(m) if *dir || self.devices.contains(p) => Some((p.as_path(), *m)),
                Grant::Tree(_) | Grant::NoMake(_) | Grant::Parent(_) => None,
            })
            .collect();
        let mut exact = vec![false; surface.rules().len()];
        for (i, r) in surface.effective_rules() {
            exact[i as usize] = r.mode != Mode::Deny && trees.get(r.path.as_path()) == Some(&r.mode);
        }
        exact
    }
}

/// What the backstop holds once built.
#[derive(Debug)]
pub struct Backstop {
    /// The ruleset to apply in the child with `landlock_restrict_self`.
    pub ruleset: OwnedFd,
    /// The ABI version the ruleset was built for.
    pub abi: i32,
    /// Whether the ABI 6 scopes (signals, abstract unix sockets) are on.
    pub scoped: bool,
    /// The layout the ruleset was built from (its masks are the child's).
    pub layout: Layout,
    /// With a PID namespace of the command's own: the grant the child adds
    /// for its procfs ([`own_proc`]).
    pub own_proc: Option<OwnProc>,
}

impl Backstop {
    /// The proof handlers need to continue a call.
    pub fn sound(&self) -> Sound {
        self.layout.sound
    }
}

/// What the child adds to the ruleset for the procfs it mounts in its own
/// PID namespace: that procfs lists only the sandbox's processes, so the
/// surface's answer there (the command's own `/proc/<pid>` allowed, every
/// other process's refused) is the whole tree's: one grant of its root, made
/// in the child after the mount (the ruleset built here names the
/// supervisor's procfs, whose inodes the command no longer reaches). The
/// surface's carve-outs there (`/proc/kcore`, ...) are masked like any
/// other ([`Mask`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnProc {
    /// Landlock rights on the new procfs's root (none where the surface
    /// lets nothing there be read).
    pub access: u64,
}

/// Why Landlock cannot decide the command's `/proc` with one grant
/// ([`own_proc`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OwnProcRefusal {
    /// Another procfs, mounted here, shows the host's processes: the grant
    /// made for the command's own would not hold there.
    #[error("a procfs is mounted at {} too, numbered as the host's processes", .0.display())]
    OtherProcfs(PathBuf),
    /// A surface entry inside `/proc` (a grant, or a carve-out in a
    /// process's directory) that one grant of the whole cannot say.
    #[error("the surface's entry {} is more than Landlock can say about /proc", .0.display())]
    EntryInProc(PathBuf),
}

/// The [`OwnProc`] grant for `surface`, or why Landlock cannot decide its
/// `/proc` with it (then the command's procfs is granted nothing, and
/// every open there is the supervisor's).
pub fn own_proc(surface: &Surface, abi: i32) -> Result<OwnProc, OwnProcRefusal> {
    let proc = Path::new("/proc");
    if let Some(other) = surface.proc_mounts().iter().find(|m| *m != proc) {
        return Err(OwnProcRefusal::OtherProcfs(other.clone()));
    }
    for (_, rule) in surface.effective_rules() {
        let Ok(rest) = rule.path.strip_prefix(proc) else { continue };
        let name = rest.as_os_str().as_bytes();
        let top_level = rest.components().count() == 1
            && !name.iter().all(u8::is_ascii_digit)
            && name != b"self"
            && name != b"thread-self";
        match rule.mode {
            Mode::Deny if top_level => {}
            // Anything else (a grant inside /proc, a carve-out in a
            // process's directory) is beyond one grant and masks.
            _ if name.is_empty() => {}
            _ => return Err(OwnProcRefusal::EntryInProc(rule.path.clone())),
        }
    }
    let readable =
        surface.lookup(b"/proc").is_some_and(|i| surface.rules()[i as usize].mode.permits(SurfaceAccess::Read));
    let access = if readable { rights(Mode::Ro, ABI::from(abi), true).bits() } else { 0 };
    Ok(OwnProc { access })
}

/// Builds the ruleset for `surface` at the highest ABI the kernel offers,
/// laid out for a process without a mount namespace of its own (`interpose
/// debug landlock`, `why`).
pub fn build(surface: &Surface) -> Result<Backstop, LandlockError> {
    build_with(layout(surface, false), None)
}

/// Builds the ruleset for `layout`; with `tcp_connect`, TCP connects are
/// allowed only to those ports (Landlock ABI 4, Linux 6.7).
pub fn build_with(mut layout: Layout, tcp_connect: Option<&[u16]>) -> Result<Backstop, LandlockError> {
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
    // The path rules are added directly: an expanded tree is a few hundred
    // of them, and the crate's rule checks stat each descriptor again (the
    // type is known here already).
    for (path, grant, is_dir) in &layout.grants {
        let Ok(name) = std::ffi::CString::new(path.as_os_str().as_bytes()) else { continue };
        let Ok(fd) = crate::sys::fs::openat(crate::sys::fs::Dir::Cwd, &name, libc::O_PATH | libc::O_CLOEXEC, 0) else {
            continue;
        };
        let access = match grant {
            Grant::Tree(mode) => rights(*mode, abi, *is_dir),
            Grant::Parent(_) => parent_rights(),
            Grant::NoMake(mode) => rights(*mode, abi, *is_dir) & !making(),
        };
        crate::sys::landlock::add_path_rule(ruleset.as_fd(), access.bits(), fd.as_fd())
            .map_err(|errno| LandlockError::Rule(path.clone(), errno))?;
        // The object the rule is on, where names are made beneath it.
        if let Some(object) = layout.making.whole.get_mut(path) {
            *object = crate::sys::fs::fstat(fd.as_fd()).ok().map(|st| (st.st_dev, st.st_ino));
        }
    }
    Ok(Backstop { ruleset, abi: version, scoped, layout, own_proc: None })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Origin, Rule};
    use std::os::unix::ffi::OsStringExt;

    fn tree(files: &[&str]) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for f in files {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        (dir, root)
    }

    fn rule(s: &mut Surface, path: PathBuf, mode: Mode) {
        s.add(Rule { path, mode, origin: Origin::Flag("test".into()) });
    }

    /// The layout's grants without their kinds, sorted.
    fn sorted_grants(l: &Layout) -> Vec<(PathBuf, Grant)> {
        let mut g: Vec<(PathBuf, Grant)> = l.grants.iter().map(|(p, m, _)| (p.clone(), *m)).collect();
        g.sort();
        g
    }

    #[test]
    fn own_proc_refuses_what_one_grant_cannot_say() {
        let mut s = Surface::new();
        s.add_proc_mount("/proc".into());
        rule(&mut s, "/proc".into(), Mode::Ro);
        rule(&mut s, "/proc/kcore".into(), Mode::Deny);
        assert!(own_proc(&s, 1).is_ok(), "a carve-out of a top-level entry is masked");
        rule(&mut s, "/proc/sys".into(), Mode::Rw);
        let e = own_proc(&s, 1).unwrap_err();
        assert_eq!(e, OwnProcRefusal::EntryInProc("/proc/sys".into()));
        assert_eq!(e.to_string(), "the surface's entry /proc/sys is more than Landlock can say about /proc");
        s.add_proc_mount("/host/proc".into());
        let e = own_proc(&s, 1).unwrap_err();
        assert_eq!(e, OwnProcRefusal::OtherProcfs("/host/proc".into()));
        assert_eq!(e.to_string(), "a procfs is mounted at /host/proc too, numbered as the host's processes");
    }

    #[test]
    fn without_mounts_carve_outs_are_expanded_and_directories_only_listed() {
        let (_d, root) = tree(&["a", "secret", "sub/b", "sub/key"]);
        let mut s = Surface::new();
        rule(&mut s, root.clone(), Mode::Rw);
        rule(&mut s, root.join("secret"), Mode::Deny);
        rule(&mut s, root.join("sub/key"), Mode::Deny);
        let l = layout(&s, false);
        let mut g: Vec<(PathBuf, Grant)> = l.grants.into_iter().map(|(p, m, _)| (p, m)).collect();
        g.sort();
        assert_eq!(
            g,
            vec![
                (root.clone(), Grant::Parent(Mode::Rw)),
                (root.join("a"), Grant::Tree(Mode::Rw)),
                (root.join("sub"), Grant::Parent(Mode::Rw)),
                (root.join("sub/b"), Grant::Tree(Mode::Rw)),
            ]
        );
        assert!(l.masks.is_empty());
        // A directory of an expanded tree reaches no file's content, and
        // makes no name: everything on a name made there later is the
        // supervisor's.
        assert_eq!(parent_rights(), BitFlags::from(AccessFs::ReadDir));
        assert!(l.sound.creates() && !l.names_exact);
    }

    /// A symlink in an expanded directory gets no rule: a rule is added on
    /// what its path opens, which is where it leads (a repository's
    /// `link -> ~/.ssh` granted `~/.ssh`). It is kept as a link, which
    /// `--isolate` makes again in its root.
    #[test]
    fn a_link_in_an_expanded_tree_is_granted_nothing_and_kept_as_a_link() {
        let (_d, root) = tree(&["ws/a", "ws/.env", "outside/secret"]);
        std::os::unix::fs::symlink(root.join("outside"), root.join("ws/link")).unwrap();
        std::os::unix::fs::symlink(root.join("outside/secret"), root.join("ws/file-link")).unwrap();
        let mut s = Surface::new();
        rule(&mut s, root.join("ws"), Mode::Rw);
        rule(&mut s, root.join("ws/.env"), Mode::Deny);
        let l = layout(&s, false);
        let granted: Vec<&PathBuf> = l.grants.iter().map(|(p, _, _)| p).collect();
        assert_eq!(granted.len(), 2, "{granted:?}");
        assert!(granted.contains(&&root.join("ws")) && granted.contains(&&root.join("ws/a")), "{granted:?}");
        let mut links = l.links.clone();
        links.sort();
        assert_eq!(links, vec![root.join("ws/file-link"), root.join("ws/link")]);
    }

    /// A rule on a file is not held exactly (a rename over the name leaves
    /// the kernel's rule on the old inode); one on a device is.
    #[test]
    fn a_device_is_held_exactly_a_file_is_not() {
        let (_d, root) = tree(&["notes.txt"]);
        let mut s = Surface::new();
        rule(&mut s, root.join("notes.txt"), Mode::Rw);
        rule(&mut s, "/dev/null".into(), Mode::Rw);
        rule(&mut s, "/dev/zero".into(), Mode::Ro);
        let l = layout(&s, true);
        let exact = l.exact_rules(&s);
        let held = |p: &Path| exact[s.lookup(p.as_os_str().as_bytes()).unwrap() as usize];
        assert!(!held(&root.join("notes.txt")));
        assert!(held(Path::new("/dev/null")) && held(Path::new("/dev/zero")));
        assert_eq!(l.devices.len(), 2);
    }

    #[test]
    fn with_mounts_trees_are_whole_and_carve_outs_masked() {
        let (_d, root) = tree(&["ws/a", "ws/.env", "ws/.git/config", "ws/.git/hooks/x", "etc/passwd", "etc/shadow"]);
        let mut s = Surface::new();
        rule(&mut s, root.join("ws"), Mode::Rw);
        rule(&mut s, root.join("ws/.env"), Mode::Deny);
        rule(&mut s, root.join("etc"), Mode::Ro);
        rule(&mut s, root.join("etc/shadow"), Mode::Deny);
        let o = || Origin::Flag("t".into());
        s.add_glob(&root.join("ws/.git/hooks"), GlobEffect::DenyWrites, o()).unwrap();
        s.add_glob(&root.join("ws/.git/hooks/**"), GlobEffect::DenyWrites, o()).unwrap();
        s.add_glob(&root.join("ws/secrets/**"), GlobEffect::Deny, o()).unwrap();
        let l = layout(&s, true);
        let g = sorted_grants(&l);
        // `secrets` does not exist: the workspace keeps every right but
        // making names, its subdirectories granted whole, so the kernel
        // cannot make the carve-out wherever a racing path leads.
        assert_eq!(
            g,
            vec![
                (root.join("etc"), Grant::Tree(Mode::Ro)),
                (root.join("ws"), Grant::NoMake(Mode::Rw)),
                (root.join("ws/.git"), Grant::Tree(Mode::Rw)),
            ]
        );
        let masks: Vec<(PathBuf, MaskKind)> = l.masks.iter().map(|m| (m.path.clone(), m.kind)).collect();
        assert_eq!(
            masks,
            vec![
                (root.join("etc/shadow"), MaskKind::Hide),
                (root.join("ws/.env"), MaskKind::Hide),
                (root.join("ws/.git/hooks"), MaskKind::ReadOnly),
            ]
        );
        assert!(l.missing.is_empty());
        assert!(l.sound.creates() && l.sound.covers(SurfaceAccess::Read));
        assert_eq!(l.exact_rules(&s).iter().filter(|e| **e).count(), 2);
        // Fast mode leaves names to the supervisor there.
        assert!(l.reads_exact && !l.names_exact);
        assert_eq!(l.making.held, vec![root.join("ws")]);
        assert_eq!(l.making.whole.keys().collect::<Vec<_>>(), vec![&root.join("ws/.git")]);
        // Laid out for an isolated root, the carve-out is left to the
        // supervisor as before.
        let unheld = laid_out(&s, true, false);
        assert_eq!(unheld.missing, vec![root.join("ws/secrets")]);
        assert!(!unheld.sound.creates());
    }

    /// A carve-out is held only where every directory above it exists and
    /// the surface lets none be removed or renamed (a directory granted
    /// whole moved into its place would make names there): one under a
    /// directory that does not exist leaves every create to the supervisor.
    #[test]
    fn a_carve_out_is_held_only_under_directories_that_cannot_move() {
        let (_d, root) = tree(&["ws/a", "ws/config/other"]);
        let mut s = Surface::new();
        rule(&mut s, root.join("ws"), Mode::Rw);
        rule(&mut s, root.join("ws/nope/later"), Mode::Deny);
        let l = layout(&s, true);
        assert!(l.grants.iter().all(|(_, g, _)| !matches!(g, Grant::NoMake(_))), "{:?}", l.grants);
        assert_eq!(l.missing, vec![root.join("ws/nope/later")]);
        assert!(!l.sound.creates());
        // Denied or read-only, its directory cannot move (`carve_out_beneath`).
        for mode in [Mode::Deny, Mode::Ro] {
            let mut s = Surface::new();
            rule(&mut s, root.join("ws"), Mode::Rw);
            rule(&mut s, root.join("ws/config/prod.yml"), mode);
            let l = layout(&s, true);
            assert!(l.missing.is_empty() && l.sound.creates(), "{mode:?}");
            assert_eq!(l.making.held, vec![root.join("ws"), root.join("ws/config")]);
        }
    }

    /// The kernel itself, under a held ruleset: no name is made in a held
    /// directory (the missing carve-out least of all, however it is asked
    /// for), names are made beneath its subdirectories granted whole, and
    /// [`Making::makes_in`] says so, also of a directory made again under a
    /// granted name, which the kernel refuses.
    #[test]
    fn a_held_tree_refuses_making_names_where_a_carve_out_could_appear() {
        let (_d, root) = tree(&["ws/a", "ws/sub/b", "ws/sub/deep/c"]);
        let mut s = Surface::new();
        rule(&mut s, root.join("ws"), Mode::Rw);
        s.add_glob(&root.join("ws/secrets/**"), GlobEffect::Deny, Origin::Flag("t".into())).unwrap();
        rule(&mut s, root.join("ws/.env"), Mode::Deny);
        let backstop = build_with(layout(&s, true), None).unwrap();
        let making = backstop.layout.making.clone();
        let p = |rel: &str| root.join(rel);
        let bytes = |rel: &str| p(rel).into_os_string().into_vec();
        assert!(!making.makes_in(&bytes("ws")));
        assert!(making.makes_in(&bytes("ws/sub")) && making.makes_in(&bytes("ws/sub/deep")));
        assert!(!making.makes_in(&bytes("ws/nope")) && making.makes_in(b"/elsewhere"));
        let ruleset = backstop.ruleset;
        let (ws, sub) = (p("ws"), p("ws/sub"));
        let tried = std::thread::spawn(move || {
            use std::os::unix::fs::symlink;
            // On this thread alone, as the ruleset.
            crate::sys::process::set_no_new_privs().unwrap();
            crate::sys::landlock::restrict_self(ruleset.as_fd()).unwrap();
            // (A rename or link Landlock refuses may say EXDEV.)
            let refused =
                |r: std::io::Result<()>| r.is_err_and(|e| matches!(e.raw_os_error(), Some(libc::EACCES | libc::EXDEV)));
            let made = [
                ("mkdir secrets", refused(std::fs::create_dir(ws.join("secrets")))),
                ("create .env", refused(std::fs::write(ws.join(".env"), "k").map(drop))),
                ("symlink .env", refused(symlink("a", ws.join(".env")))),
                ("link .env", refused(std::fs::hard_link(ws.join("a"), ws.join(".env")))),
                ("rename into .env", refused(std::fs::rename(sub.join("b"), ws.join(".env")))),
                ("mkdir in ws", refused(std::fs::create_dir(ws.join("other")))),
            ];
            let allowed = [
                ("write a", std::fs::write(ws.join("a"), "changed").is_ok()),
                ("read a", std::fs::read(ws.join("a")).is_ok()),
                ("create in sub", std::fs::write(sub.join("new"), "n").is_ok()),
                ("mkdir in deep", std::fs::create_dir(sub.join("deep/d")).is_ok()),
                ("remove in ws", std::fs::remove_file(ws.join("a")).is_ok()),
            ];
            (made, allowed)
        });
        let (made, allowed) = tried.join().unwrap();
        for (what, refused) in made {
            assert!(refused, "{what}: the kernel made a name in the held directory");
        }
        for (what, ok) in allowed {
            assert!(ok, "{what}: refused under the held ruleset");
        }
        assert!(!p("ws/secrets").exists() && !p("ws/.env").exists());
        // `sub` moved away and made again: not the object granted.
        std::fs::rename(p("ws/sub"), p("ws/old")).unwrap();
        std::fs::create_dir(p("ws/sub")).unwrap();
        assert!(!making.makes_in(&bytes("ws/sub")));
        // A link named like a granted directory is no way into it.
        std::fs::remove_dir(p("ws/sub")).unwrap();
        std::os::unix::fs::symlink(p("ws/old"), p("ws/sub")).unwrap();
        assert!(!making.makes_in(&bytes("ws/sub")));
    }

    /// Under --isolate a read-only tree with a carve-out is rebuilt in the
    /// root's own directories, so it is granted entry by entry; a writable
    /// one is the host's directory bound whole, so it is granted whole (a
    /// program made in it later runs) and its carve-out masked.
    #[test]
    fn isolated_rebuilt_trees_are_expanded_and_trees_bound_whole_granted_whole() {
        let (_d, root) = tree(&["ws/a", "ws/.env", "etc/passwd", "etc/shadow"]);
        let mut s = Surface::new();
        rule(&mut s, root.join("ws"), Mode::Rw);
        rule(&mut s, root.join("ws/.env"), Mode::Deny);
        rule(&mut s, root.join("etc"), Mode::Ro);
        rule(&mut s, root.join("etc/shadow"), Mode::Deny);
        let l = isolated(&s);
        let g = sorted_grants(&l);
        assert_eq!(
            g,
            vec![
                (root.join("etc"), Grant::Parent(Mode::Ro)),
                (root.join("etc/passwd"), Grant::Tree(Mode::Ro)),
                (root.join("ws"), Grant::Tree(Mode::Rw)),
            ]
        );
        assert!(l.masks.iter().any(|m| m.path == root.join("ws/.env") && m.kind == MaskKind::Hide));
        let exact = l.exact_rules(&s);
        assert!(exact[s.lookup(root.join("ws").as_os_str().as_bytes()).unwrap() as usize]);
        // The rebuilt /etc holds what the surface grants and nothing made
        // later: reads are exact; the carve-out in the writable tree leaves
        // names to the supervisor.
        assert!(l.reads_exact && !l.names_exact);
        // Without mounts the same tree expanded is not.
        assert!(!layout(&s, false).reads_exact);
    }

    #[test]
    fn a_denied_directory_holding_a_grant_is_expanded_around_and_a_grant_pattern_gets_nothing() {
        let (_d, root) = tree(&["home/.config/tool/x", "home/.config/other/y", "home/.bashrc"]);
        let mut s = Surface::new();
        rule(&mut s, root.join("home"), Mode::Ro);
        rule(&mut s, root.join("home/.config"), Mode::Deny);
        rule(&mut s, root.join("home/.config/tool"), Mode::Rw);
        s.add_glob(&root.join("home/.tool.json.*"), GlobEffect::Grant, Origin::Flag("t".into())).unwrap();
        let l = layout(&s, true);
        let g = sorted_grants(&l);
        assert_eq!(
            g,
            vec![
                (root.join("home"), Grant::Parent(Mode::Ro)),
                (root.join("home/.bashrc"), Grant::Tree(Mode::Ro)),
                (root.join("home/.config/tool"), Grant::Tree(Mode::Rw)),
            ]
        );
        assert!(l.masks.is_empty(), "a mask over .config would hide its grant: {:?}", l.masks);
        assert!(!l.names_exact);
    }

    #[test]
    fn a_writable_grant_inside_a_read_only_one_is_bound_writable_again() {
        let (_d, root) = tree(&["ws/.git/hooks/x", "ws/.git/hooks/mine/y"]);
        let mut s = Surface::new();
        rule(&mut s, root.join("ws"), Mode::Rw);
        rule(&mut s, root.join("ws/.git/hooks"), Mode::Ro);
        rule(&mut s, root.join("ws/.git/hooks/mine"), Mode::Rw);
        let l = layout(&s, true);
        let masks: Vec<(PathBuf, MaskKind)> = l.masks.iter().map(|m| (m.path.clone(), m.kind)).collect();
        assert_eq!(
            masks,
            vec![
                (root.join("ws/.git/hooks"), MaskKind::ReadOnly),
                (root.join("ws/.git/hooks/mine"), MaskKind::Writable)
            ]
        );
    }
}
