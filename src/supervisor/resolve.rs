//! Path resolution as the kernel would do it for the trapped thread.
//!
//! The result is an `O_PATH` handle on the object the path names (or on its
//! parent directory, when the last component does not exist and the call
//! may create it; nothing when it creates nothing) plus the object's
//! canonical absolute path, which is what the surface decides on.
//! Holding the handle pins the object: later operations act on it, not on a
//! path a racing thread could change.
//!
//! The fast path is one `openat2(RESOLVE_NO_MAGICLINKS)` followed by reading
//! the handle's path back from `/proc/self/fd`. It is only trusted when it
//! did not go through procfs, because there `self` and the magic links
//! (`/proc/<pid>/{cwd,root,exe,fd/N}`) mean something different for the
//! supervisor than for the sandboxed thread. Everything else takes the slow
//! path: a component-by-component walk that maps `self` to the caller,
//! follows magic links of sandboxed processes only, and refuses to enter
//! `/proc/<pid>` of any other process.

use crate::policy::{ProcPlace, Processes, Surface};
use crate::sys::fs::{self, Dir, OpenHow};
use crate::sys::Errno;
use std::ffi::CString;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

/// The absolute directory a symlink in the root with `target` leads to,
/// where that is plain: no `.`, `..` or empty component (relative, it is
/// taken from the root, where it is).
fn plain_link_target(target: &[u8]) -> Option<Vec<u8>> {
    let rest = target.strip_prefix(b"/").unwrap_or(target);
    let plain = !rest.is_empty() && rest.split(|&b| b == b'/').all(|c| !c.is_empty() && c != b"." && c != b"..");
    plain.then(|| [b"/", rest].concat())
}

/// Maximum symlinks followed in one resolution, as the kernel's `MAXSYMLINKS`.
const MAX_SYMLINKS: u32 = 40;

/// What a path names.
#[derive(Debug)]
pub enum Target {
    /// An existing object: `fd` is an `O_PATH` handle on it (on the link
    /// itself when the last component is a symlink not followed).
    Exists {
        /// The handle.
        fd: OwnedFd,
        /// The object's `fstat`, taken when it was found (its type decides
        /// how it is answered; a `stat` call answers with it).
        stat: libc::stat,
    },
    /// The last component does not exist; `fd` is a handle on the directory
    /// that would hold it and `name` its name there.
    Missing {
        /// Handle on the parent directory.
        fd: OwnedFd,
        /// The missing entry's name.
        name: CString,
    },
    /// Nothing at the path, for a call that creates nothing: a component
    /// is missing, before any symlink or `..`, so the kernel's lookup fails
    /// there too (`ENOENT`, whatever the surface says).
    Absent,
    /// An object with no path, reached through a magic link of a sandboxed
    /// process (a pipe or socket behind `/proc/self/fd/N`).
    Anonymous {
        /// The handle.
        fd: OwnedFd,
    },
}

/// A resolved path.
#[derive(Debug)]
pub struct Resolved {
    /// What it names.
    pub target: Target,
    /// Canonical absolute path (for [`Target::Missing`], parent plus name;
    /// for [`Target::Absent`], the path as written, joined to its starting
    /// directory's; for [`Target::Anonymous`], the kernel's description
    /// such as `pipe:[7]`).
    pub path: Vec<u8>,
    /// Found by a lookup that crossed no symlink and no `..`: the path
    /// is then the base directory's path followed by the path as written.
    pub straight: bool,
}

impl Resolved {
    /// Marks a resolution that crossed no symlink and no `..` (a procfs
    /// path walked again is not: `found` walks those itself, and its
    /// path is then not known to be straight).
    fn straight(mut self) -> Self {
        self.straight = matches!(self.target, Target::Exists { .. });
        self
    }

    /// The directory a relative `written` path started from, when the
    /// lookup crossed no symlink and no `..`: the canonical path less the
    /// path as written (with `.` and repeated slashes folded).
    pub fn base_path(&self, written: &[u8]) -> Option<&[u8]> {
        if !self.straight || written.first() == Some(&b'/') {
            return None;
        }
        let rel = lexical(written);
        let rel = rel.strip_prefix(b"/").unwrap_or(&rel);
        if rel.is_empty() {
            return Some(&self.path);
        }
        let cut = self.path.len().checked_sub(rel.len() + 1)?;
        (self.path.ends_with(rel) && self.path[cut] == b'/')
            .then(|| if cut == 0 { &b"/"[..] } else { &self.path[..cut] })
    }
}

/// The directory holding a path's last component, and that component:
/// what unlink, rmdir, mkdir, rename, link, symlink and mknod act on.
#[derive(Debug)]
pub struct Parent {
    /// Handle on the directory.
    pub fd: OwnedFd,
    /// Its canonical path.
    pub path: Vec<u8>,
    /// The last component.
    pub name: CString,
    /// Whether the path ended with `/` (the entry must be a directory).
    pub trailing_slash: bool,
}

impl Parent {
    /// The entry's canonical path: the directory's and the name.
    pub fn entry_path(&self) -> Vec<u8> {
        let mut p = self.path.clone();
        push_component(&mut p, self.name.as_bytes());
        p
    }

    /// What is at the name now, if anything (not following a symlink).
    pub fn entry(&self) -> Result<Option<libc::stat>, Errno> {
        match fs::fstatat(Dir::Fd(self.fd.as_fd()), &self.name, libc::AT_SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(st)),
            Err(Errno::ENOENT) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// Why resolution failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResolveError {
    /// The kernel would fail the call with this errno.
    Errno(Errno),
    /// The path enters `/proc/<pid>` of a process outside the sandbox:
    /// the path up to that entry, and the pid.
    OutsideProc(Vec<u8>, u32),
}

impl From<Errno> for ResolveError {
    fn from(e: Errno) -> Self {
        ResolveError::Errno(e)
    }
}

/// One path argument to resolve.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The path bytes as the caller passed them (no NUL).
    pub path: &'a [u8],
    /// Whether a symlink in the last component is followed.
    pub follow: bool,
    /// Whether an empty path names the base itself (`AT_EMPTY_PATH`).
    pub empty_path: bool,
    /// The caller's `RESOLVE_*` flags (openat2), else 0.
    pub resolve: u64,
    /// Whether the call may create a missing last component: the
    /// directory that would hold it is then found too
    /// ([`Target::Missing`]); otherwise a missing name is
    /// [`Target::Absent`], found with one lookup.
    pub creates: bool,
}

impl Request<'_> {
    /// Whether the caller anchored the lookup at its directory
    /// (`RESOLVE_BENEATH` or `RESOLVE_IN_ROOT`): an absolute path then
    /// starts there too.
    fn anchored(&self) -> bool {
        self.resolve & (fs::RESOLVE_BENEATH | fs::RESOLVE_IN_ROOT) != 0
    }
}

/// The caller's identity and its starting directory.
pub struct Caller<'a> {
    /// Thread id of the caller.
    pub tid: u32,
    /// Its process id, looked up when first needed.
    pub tgid: &'a std::cell::OnceCell<u32>,
    /// Handle on the directory relative paths start from (the caller's cwd
    /// or dirfd), opened through `/proc/<tid>`.
    pub base: Option<BorrowedFd<'a>>,
    /// The caller's root directory when it differs from the supervisor's
    /// (`--isolate`, or a mount namespace of the command's own with its
    /// PID namespace's `/proc`): absolute paths are resolved from it, so
    /// they name what the caller sees.
    pub root: Option<BorrowedFd<'a>>,
    /// The caller's process and thread ids in its own PID namespace, looked
    /// up when first needed.
    pub own_ids: &'a std::cell::OnceCell<(u32, u32)>,
}

impl Caller<'_> {
    /// The caller's process id (`Tgid` in `/proc/<tid>/status`).
    pub fn tgid(&self) -> u32 {
        *self.tgid.get_or_init(|| proc_status_field(self.tid, "Tgid:").and_then(|v| v.parse().ok()).unwrap_or(self.tid))
    }

    /// The caller's process and thread ids as its own PID namespace numbers
    /// them (the last of `NStgid` and `NSpid` in `/proc/<tid>/status`). One
    /// read of the status gives its process id too: the file is made afresh
    /// at every read (its memory figures walk the caller's mappings), and a
    /// path in `/proc/self` asks for both.
    pub fn ids_in_own_namespace(&self) -> (u32, u32) {
        *self.own_ids.get_or_init(|| self.status_ids())
    }

    /// Both, and the process id, from one read of the status.
    fn status_ids(&self) -> (u32, u32) {
        let status = crate::sys::procfs::Status::of(self.tid);
        let number = |field, last: bool| {
            let value = status.as_ref()?.field(field)?;
            let n = if last { value.split_whitespace().last()? } else { value };
            n.parse().ok()
        };
        let tgid = *self.tgid.get_or_init(|| number("Tgid:", false).unwrap_or(self.tid));
        (number("NStgid:", true).unwrap_or(tgid), number("NSpid:", true).unwrap_or(self.tid))
    }

    /// The caller's process and thread ids as the procfs mounted at `mount`
    /// numbers them: the command's own numbers in its PID namespace's.
    fn numbers_in(&self, procs: &dyn Processes, mount: &std::path::Path) -> (u32, u32) {
        match procs.numbers_as_the_command(mount) {
            // Asked of the namespace that procfs numbers by (every caller's
            // own, [`crate::supervisor::procs::Membership::command_namespace`]),
            // where the status file would be rendered whole for two numbers.
            true => {
                *self.own_ids.get_or_init(|| procs.numbers_of(mount, self.tid).unwrap_or_else(|| self.status_ids()))
            }
            false => (self.tgid(), self.tid),
        }
    }
}

/// A field of `/proc/<tid>/status`, trimmed.
pub fn proc_status_field(tid: u32, field: &str) -> Option<String> {
    crate::sys::procfs::Status::of(tid)?.field(field).map(str::to_string)
}

/// Who a lookup is for and what it is decided against: the surface, the
/// sandbox's processes (for `/proc/<pid>`) and the calling thread.
#[derive(Clone, Copy)]
pub struct Lookup<'a> {
    /// The surface.
    pub surface: &'a Surface,
    /// Which processes are the sandbox's.
    pub procs: &'a dyn Processes,
    /// The calling thread.
    pub caller: &'a Caller<'a>,
}

/// State shared by every resolution.
pub struct Resolver {
    /// `/proc/self/fd`, to read back the paths of our handles.
    proc_self_fd: OwnedFd,
    /// The root directory.
    root: OwnedFd,
    /// The symlinks in the command's root that it can neither remove nor
    /// replace ([`Resolver::learn_root_links`]).
    root_links: Vec<RootLink>,
}

/// A symlink directly in the command's root, such as a merged `/usr`'s
/// `/bin -> usr/bin`: `from` is its path and `to` the directory it leads
/// to, both with a trailing `/`.
#[derive(Debug)]
struct RootLink {
    from: Vec<u8>,
    to: Vec<u8>,
}

/// How many symlinks of the root are kept: a root holds a handful.
const MAX_ROOT_LINKS: usize = 16;

impl Resolver {
    /// Opens the handles the resolver keeps.
    pub fn new() -> Result<Self, Errno> {
        Ok(Self {
            proc_self_fd: fs::openat(Dir::Cwd, c"/proc/self/fd", libc::O_PATH | libc::O_DIRECTORY, 0)?,
            root: fs::openat(Dir::Cwd, c"/", libc::O_PATH | libc::O_DIRECTORY, 0)?,
            root_links: Vec::new(),
        })
    }

    /// Reads the symlinks directly in the command's `root` (ours if `None`)
    /// that `unchangeable` says the command can neither remove nor replace
    /// and that lead, with no `.`, `..` or other symlink on the way, to a
    /// directory: a merged `/usr`'s `/bin`, `/sbin`, `/lib` and `/lib64`.
    /// A path through one is then looked up as the path it leads to
    /// ([`Resolver::through_root_link`]), which is where the kernel's own
    /// lookup goes: `/bin/sh` is `/usr/bin/sh` for as long as `/bin` is
    /// that link, and the command cannot make it anything else. An `exec`
    /// of `/bin/true` is then decided on the plain path and continued,
    /// where it took the route for paths through symlinks, a dozen calls
    /// more (a stat under `/lib` likewise). Call once, before any worker
    /// runs; not for per-process roots (`--isolate`).
    pub fn learn_root_links(&mut self, root: Option<BorrowedFd<'_>>, unchangeable: impl Fn(&[u8]) -> bool) {
        let top = root.unwrap_or(self.root.as_fd());
        let Ok(dir) = fs::openat(Dir::Fd(top), c".", libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC, 0) else {
            return;
        };
        let mut names = Vec::new();
        let listed = fs::entries(dir.as_fd(), &mut [0u8; 4096], |name, kind| {
            if kind == libc::DT_LNK && names.len() < MAX_ROOT_LINKS {
                names.push(name.to_owned());
            }
        });
        if listed.is_err() {
            return;
        }
        let mut target = [0u8; 256];
        for name in names {
            let Ok(n) = fs::readlinkat(Dir::Fd(top), &name, &mut target) else { continue };
            let Some(to) = plain_link_target(&target[..n]) else { continue };
            let from = [b"/", name.to_bytes()].concat();
            let leads_to_a_directory = self
                .straight(root, &to, true)
                .and_then(|fd| fs::fstat(fd.as_fd()))
                .is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFDIR);
            if leads_to_a_directory && unchangeable(&from) {
                self.root_links.push(RootLink { from: [&from[..], b"/"].concat(), to: [&to[..], b"/"].concat() });
            }
        }
    }

    /// The absolute `path` with a leading symlink of the root
    /// ([`Resolver::learn_root_links`]) replaced by where it leads:
    /// `/bin/sh` as `/usr/bin/sh`. Anything else as it is, the link itself
    /// (`/bin`) too, and a path the replacement would make longer than the
    /// kernel takes (which the kernel itself follows).
    pub fn through_root_link<'p>(&self, path: &'p [u8]) -> std::borrow::Cow<'p, [u8]> {
        let link = self.root_links.iter().find(|l| path.starts_with(&l.from));
        match link.filter(|l| path.len() - l.from.len() + l.to.len() < libc::PATH_MAX as usize) {
            Some(l) => std::borrow::Cow::Owned([&l.to[..], &path[l.from.len()..]].concat()),
            None => std::borrow::Cow::Borrowed(path),
        }
    }

    /// The canonical path of one of our handles, from `/proc/self/fd/N`.
    pub fn fd_path(&self, fd: BorrowedFd<'_>, out: &mut Vec<u8>) -> Result<(), Errno> {
        use std::os::fd::AsRawFd;
        let mut num = [0u8; 24];
        let name = fs::decimal(fd.as_raw_fd() as u64, &mut num);
        out.clear();
        out.resize(crate::sys::mem::PATH_MAX, 0);
        let n = fs::readlinkat(Dir::Fd(self.proc_self_fd.as_fd()), name, out)?;
        out.truncate(n);
        const DELETED: &[u8] = b" (deleted)";
        if out.ends_with(DELETED) && fs::fstat(fd)?.st_nlink == 0 {
            // Unlinked (or an O_TMPFILE never linked): decide on the name it
            // had, where it was created or opened under the surface's rules.
            out.truncate(out.len() - DELETED.len());
        }
        Ok(())
    }

    /// Opens `fd` again with `flags`, through `/proc/self/fd/N`: the new
    /// description refers to the same object, whatever has happened to the
    /// path since it was resolved.
    pub fn reopen(&self, fd: BorrowedFd<'_>, flags: i32, mode: u32) -> Result<OwnedFd, Errno> {
        use std::os::fd::AsRawFd;
        let mut num = [0u8; 24];
        let name = fs::decimal(fd.as_raw_fd() as u64, &mut num);
        fs::openat(Dir::Fd(self.proc_self_fd.as_fd()), name, flags, mode)
    }

    /// Where [`Resolver::reopen`] opens `fd` again, as a directory and a
    /// name of its own (a duplicate of `/proc/self/fd` and `N`), for an open
    /// made later by another thread.
    pub fn reopening(&self, fd: BorrowedFd<'_>) -> Result<(OwnedFd, CString), Errno> {
        use std::os::fd::AsRawFd;
        let dir = self.proc_self_fd.try_clone().map_err(|_| Errno::EMFILE)?;
        Ok((dir, CString::new(fd.as_raw_fd().to_string()).expect("no NUL in a number")))
    }

    /// `/proc/self/fd/N` for one of our handles: a path that leads to the very
    /// object, for calls that only take paths (chmod, setxattr, connect).
    pub fn proc_path(fd: BorrowedFd<'_>) -> CString {
        use std::os::fd::AsRawFd;
        CString::new(format!("/proc/self/fd/{}", fd.as_raw_fd())).expect("no NUL in a number")
    }

    /// Whether the absolute `path` names an existing object with no symlink
    /// and no magic link on the way (the last component included), in
    /// `root` when the command has one of its own: then it is canonical as
    /// written. One lookup, its handle closed at once.
    pub fn is_canonical(&self, root: Option<BorrowedFd<'_>>, path: &[u8]) -> bool {
        // A symlink as the last component too: O_NOFOLLOW would open the
        // link itself.
        self.straight(root, path, true).is_ok()
    }

    /// Whether the absolute `path` is canonical as written
    /// ([`Resolver::is_canonical`]) or missing before any symlink on the
    /// way: then a lookup of it as written ends where this one did, on the
    /// object or on the missing name.
    pub fn straight_or_missing(&self, root: Option<BorrowedFd<'_>>, path: &[u8]) -> bool {
        matches!(self.straight(root, path, true), Ok(_) | Err(Errno::ENOENT))
    }

    /// `path` folded (`//` and a trailing `/`) where [`Resolver::is_canonical`].
    pub fn canonical(&self, root: Option<BorrowedFd<'_>>, path: &[u8]) -> Option<Vec<u8>> {
        self.is_canonical(root, path).then(|| lexical(path))
    }

    /// A handle on what the absolute `path` names, looked up from `root`
    /// (the command's own, else ours) with no symlink and no magic link on
    /// the way; the last component is not followed unless `follow` (and a
    /// symlink there is then `ELOOP`).
    fn straight(&self, root: Option<BorrowedFd<'_>>, path: &[u8], follow: bool) -> Result<OwnedFd, Errno> {
        let cpath = CString::new(path).map_err(|_| Errno::EINVAL)?;
        let how = OpenHow {
            flags: libc::O_PATH as u64 | if follow { 0 } else { libc::O_NOFOLLOW as u64 },
            mode: 0,
            resolve: fs::RESOLVE_NO_SYMLINKS
                | fs::RESOLVE_NO_MAGICLINKS
                | if root.is_some() { fs::RESOLVE_IN_ROOT } else { 0 },
        };
        fs::openat2(Dir::Fd(root.unwrap_or(self.root.as_fd())), &cpath, how)
    }

    /// A relative `req` (no `..`) looked up from the root as `dir`, the
    /// canonical path of the directory it starts from, joined to it, with
    /// no symlink and no magic link allowed on the way (the last component
    /// not followed unless `req.follow`): the object found is the one at
    /// that path, which is canonical as joined. A missing name, for a call
    /// that creates nothing, is [`Target::Absent`] there: the lookup
    /// crossed no symlink before the component it found missing, so the
    /// kernel's own fails at the same one. `None` where that lookup fails
    /// otherwise or the path lies in procfs: the caller resolves from a
    /// handle on the directory.
    pub fn joined(&self, at: &Lookup<'_>, req: Request<'_>, dir: &[u8]) -> Option<Resolved> {
        // As written (a trailing `/` asks for a directory), and folded for
        // the decision.
        let joined = joined_path(dir.to_vec(), req.path);
        let path = lexical(&joined);
        if at.surface.proc_relative(&path).is_some() {
            return None;
        }
        match self.straight(at.caller.root, &joined, req.follow) {
            Ok(fd) => {
                let stat = fs::fstat(fd.as_fd()).ok()?;
                Some(Resolved { target: Target::Exists { fd, stat }, path, straight: true })
            }
            Err(Errno::ENOENT) if !req.creates => Some(Resolved { target: Target::Absent, path, straight: false }),
            Err(_) => None,
        }
    }

    /// Resolves `req` for `caller` the way the kernel would.
    pub fn resolve(&self, at: &Lookup<'_>, req: Request<'_>) -> Result<Resolved, ResolveError> {
        let Lookup { caller, .. } = *at;
        let absolute = req.path.first() == Some(&b'/');
        let anchored = req.anchored();
        let caller_forbids_links = req.resolve & (fs::RESOLVE_NO_SYMLINKS | fs::RESOLVE_NO_MAGICLINKS) != 0;
        // A caller that forbids symlinks is refused at the root's link, as
        // by the kernel.
        let through = match absolute && !anchored && !caller_forbids_links {
            true => self.through_root_link(req.path),
            false => std::borrow::Cow::Borrowed(req.path),
        };
        let req = Request { path: &through, ..req };
        let root = caller.root.unwrap_or(self.root.as_fd());
        let base = if absolute && !anchored { root } else { caller.base.ok_or(Errno::EBADF)? };
        if req.path.is_empty() {
            if !req.empty_path {
                return Err(Errno::ENOENT.into());
            }
            let fd = base.try_clone_to_owned().map_err(|_| Errno::EMFILE)?;
            return self.finish_existing(at, req, fd);
        }
        // Every object in procfs is walked (`found`, `absent` and `missing`
        // send it there): an absolute path written into a procfs mount
        // starts there, without the lookups that could only fail on the
        // way (`/proc/self` names no one for the supervisor, which is not
        // in the command's PID namespace: four failed `openat2`s on every
        // start of a Rust or Node program, which reads `/proc/self/maps`
        // and `/proc/self/exe`).
        if absolute && !anchored && at.surface.proc_relative(req.path).is_some() {
            return self.walk(at, req);
        }
        let cpath = CString::new(req.path).map_err(|_| Errno::EINVAL)?;
        let nofollow = if req.follow { 0 } else { libc::O_NOFOLLOW as u64 };
        // An absolute path ignores openat2's directory unless it is the
        // root of the resolution: from the caller's own root (--isolate),
        // "/" and absolute symlinks mean that root.
        let how = OpenHow {
            flags: libc::O_PATH as u64 | nofollow,
            mode: 0,
            resolve: req.resolve | fs::RESOLVE_NO_MAGICLINKS | in_callers_root(caller, req),
        };
        let dotdot = req.path.split(|&c| c == b'/').any(|c| c == b"..");
        // Most paths cross no symlink: one strict lookup first. Without a
        // `..` an absolute path is then canonical as written (with `.`
        // folded), so it need not be read back from /proc/self/fd; a
        // relative one is read back, and the trail can name the directory
        // it started from without reading that one back too (the path's
        // prefix). A `..` is never folded by the text for an object found:
        // under a directory another thread moves, the kernel's `..` is the
        // directory's parent at that moment, wherever that is, so the name
        // is read back from the object. A `..` is looked up strictly only
        // for a call that creates nothing (loaders' `$ORIGIN/../lib`,
        // gcc's `12/../../..`: dozens of missing names at every start) and
        // not from a relative path in a root of the caller's own, which it
        // could climb out of. Where a name is missing the kernel's lookup
        // fails the same way: ENOENT whatever the path; `absent` records it
        // folded (a directory moved meanwhile could make that differ from
        // the one looked up: the answer does not depend on it) and walks a
        // path in procfs, whose `self` is the caller's (a `..` leads into
        // procfs only from a path that starts there).
        if !anchored && (!dotdot || (!req.creates && !confined(caller, req))) {
            let strict = OpenHow { resolve: how.resolve | fs::RESOLVE_NO_SYMLINKS, ..how };
            match fs::openat2(Dir::Fd(base), &cpath, strict) {
                Ok(fd) if dotdot => return self.finish_existing(at, req, fd),
                Ok(fd) if absolute => return self.found(at, req, fd, lexical(req.path)).map(Resolved::straight),
                Ok(fd) => return self.finish_existing(at, req, fd).map(Resolved::straight),
                Err(Errno::ENOENT) if !req.creates => return self.absent(at, req, base),
                Err(Errno::ENOENT) => return self.missing(at, req, base),
                Err(_) if confined(caller, req) => return self.walk(at, req),
                // A symlink on the way (ELOOP), or an error the general path
                // reports the same way.
                Err(_) => {}
            }
        }
        if confined(caller, req) {
            // openat2 would take an absolute symlink, or `..`, from the
            // supervisor's root: the walk takes them from the caller's.
            return self.walk(at, req);
        }
        match fs::openat2(Dir::Fd(base), &cpath, how) {
            Ok(fd) => self.finish_existing(at, req, fd),
            Err(Errno::ELOOP) if !caller_forbids_links => self.walk(at, req),
            Err(Errno::ENOENT) => self.missing(at, req, base),
            Err(e) => Err(e.into()),
        }
    }

    /// Resolves the directory holding `req.path`'s last component (every
    /// component before it followed as the kernel would). `None` when the
    /// last component is `.` or `..` or there is none: calls that act on a
    /// name refuse those by themselves.
    pub fn resolve_parent(&self, at: &Lookup<'_>, req: Request<'_>) -> Result<Option<Parent>, ResolveError> {
        let Some((dir, name)) = split_last(req.path) else { return Ok(None) };
        let dir = if dir.is_empty() { &b"."[..] } else { dir };
        let name = CString::new(name).map_err(|_| Errno::EINVAL)?;
        let dir = Request { path: dir, follow: true, empty_path: false, resolve: req.resolve, creates: false };
        let r = self.resolve(at, dir)?;
        match r.target {
            Target::Exists { fd, stat } if stat.st_mode & libc::S_IFMT == libc::S_IFDIR => {
                Ok(Some(Parent { fd, path: r.path, name, trailing_slash: req.path.ends_with(b"/") }))
            }
            Target::Missing { .. } | Target::Absent => Err(Errno::ENOENT.into()),
            _ => Err(Errno::ENOTDIR.into()),
        }
    }

    /// The fast path found an object: trust it unless it lies in procfs.
    fn finish_existing(&self, at: &Lookup<'_>, req: Request<'_>, fd: OwnedFd) -> Result<Resolved, ResolveError> {
        let mut path = Vec::new();
        self.fd_path(fd.as_fd(), &mut path)?;
        if path.first() != Some(&b'/') {
            // An fd of the caller that has no path (pipe, socket, anon inode).
            return Ok(Resolved { target: Target::Anonymous { fd }, path, straight: false });
        }
        self.found(at, req, fd, path)
    }

    /// An object found at canonical `path`: procfs paths are walked again
    /// component by component (membership decides `/proc/<pid>`), except an
    /// empty path, which names the caller's own descriptor.
    fn found(&self, at: &Lookup<'_>, req: Request<'_>, fd: OwnedFd, path: Vec<u8>) -> Result<Resolved, ResolveError> {
        let Lookup { surface, .. } = *at;
        if !req.path.is_empty() && surface.proc_relative(&path).is_some() {
            return self.walk(at, req);
        }
        let stat = fs::fstat(fd.as_fd())?;
        Ok(Resolved { target: Target::Exists { fd, stat }, path, straight: false })
    }

    /// The strict lookup (no symlink, no `..`) found nothing, for a call
    /// that creates nothing: the kernel's own lookup crosses the same
    /// components up to the missing one and fails there the same way, so
    /// the directory that would hold the name is not looked for. Its path
    /// is the one written (joined to its starting directory's); procfs
    /// paths are walked, as everywhere.
    fn absent(&self, at: &Lookup<'_>, req: Request<'_>, base: BorrowedFd<'_>) -> Result<Resolved, ResolveError> {
        let path = if req.path.first() == Some(&b'/') {
            lexical(req.path)
        } else {
            let mut dir = Vec::new();
            self.fd_path(base, &mut dir)?;
            if dir.first() != Some(&b'/') {
                return self.missing(at, req, base);
            }
            lexical(&joined_path(dir, req.path))
        };
        if at.surface.proc_relative(&path).is_some() {
            return self.walk(at, req);
        }
        Ok(Resolved { target: Target::Absent, path, straight: false })
    }

    /// The fast path found nothing: find the parent for a create.
    fn missing(&self, at: &Lookup<'_>, req: Request<'_>, base: BorrowedFd<'_>) -> Result<Resolved, ResolveError> {
        let Lookup { surface, caller, .. } = *at;
        let (dir, name) = split_last(req.path).ok_or(Errno::ENOENT)?;
        let cdir = CString::new(if dir.is_empty() { &b"."[..] } else { dir }).map_err(|_| Errno::EINVAL)?;
        let how = OpenHow {
            flags: (libc::O_PATH | libc::O_DIRECTORY) as u64,
            mode: 0,
            resolve: req.resolve
                | fs::RESOLVE_NO_MAGICLINKS
                | in_callers_root(caller, req)
                // A symlink on the way is the walk's (see `resolve`).
                | if confined(caller, req) { fs::RESOLVE_NO_SYMLINKS } else { 0 },
        };
        // An absolute path whose directory crosses no symlink and no `..`
        // (what the strict lookup that sent it here found, but for its last
        // name) names that directory as written: looked up strictly, its
        // canonical path is the one written, folded, as in `resolve`, and
        // is not read back from /proc/self/fd (a magic link's walk, as long
        // as the lookup itself, on every create, mkdir and symlink).
        let plain =
            req.path.first() == Some(&b'/') && !req.anchored() && !dir.split(|&c| c == b'/').any(|c| c == b"..");
        let strict = OpenHow { resolve: how.resolve | fs::RESOLVE_NO_SYMLINKS, ..how };
        let (parent, mut path) = match plain.then(|| fs::openat2(Dir::Fd(base), &cdir, strict).ok()).flatten() {
            Some(fd) => (fd, lexical(dir)),
            None => {
                let parent = match fs::openat2(Dir::Fd(base), &cdir, how) {
                    Ok(fd) => fd,
                    Err(Errno::ELOOP) => return self.walk(at, req),
                    // In the caller's own root its procfs may belong to a
                    // PID namespace the supervisor is not in, where `self`
                    // names no one for the supervisor: the walk maps it to
                    // the caller.
                    Err(Errno::ENOENT) if caller.root.is_some() => return self.walk(at, req),
                    Err(e) => return Err(e.into()),
                };
                let mut path = Vec::new();
                self.fd_path(parent.as_fd(), &mut path)?;
                (parent, path)
            }
        };
        if surface.proc_relative(&path).is_some() {
            return self.walk(at, req);
        }
        let cname = CString::new(name).map_err(|_| Errno::EINVAL)?;
        match fs::fstatat(Dir::Fd(parent.as_fd()), &cname, libc::AT_SYMLINK_NOFOLLOW) {
            Err(Errno::ENOENT) => {
                push_component(&mut path, name);
                Ok(Resolved { target: Target::Missing { fd: parent, name: cname }, path, straight: false })
            }
            // A dangling symlink (followed, it names a missing target
            // elsewhere) or an entry that appeared meanwhile: walk it.
            Ok(_) => self.walk(at, req),
            Err(e) => Err(e.into()),
        }
    }

    /// The slow path: resolve one component at a time.
    fn walk(&self, at: &Lookup<'_>, req: Request<'_>) -> Result<Resolved, ResolveError> {
        let Lookup { surface, procs, caller } = *at;
        if req.resolve & fs::RESOLVE_NO_XDEV != 0 {
            // Mount crossings are not tracked by the walk; refuse rather than
            // risk allowing what the caller asked to forbid.
            return Err(Errno::EXDEV.into());
        }
        let beneath = req.resolve & fs::RESOLVE_BENEATH != 0;
        let in_root = req.resolve & fs::RESOLVE_IN_ROOT != 0;
        let no_symlinks = req.resolve & fs::RESOLVE_NO_SYMLINKS != 0;
        let no_magic = req.resolve & fs::RESOLVE_NO_MAGICLINKS != 0;
        // Where the walk starts and where an absolute link returns it to,
        // borrowed: only the cursor that moves holds a descriptor of its own.
        let root = Base { fd: caller.root.unwrap_or(self.root.as_fd()), path: b"/".to_vec() };
        let start;
        let anchor = match caller.base {
            Some(b) => {
                let mut p = Vec::new();
                self.fd_path(b, &mut p)?;
                start = Base { fd: b, path: p };
                &start
            }
            None => &root,
        };
        let top = if in_root || beneath { anchor } else { &root };
        // The fstat of what `cur` holds, once a step has taken it.
        let mut cur_stat: Option<libc::stat> = None;
        // The device and inode of the top, once a `..` needs them.
        let top_id = std::cell::OnceCell::new();
        let mut cur = if req.path.first() == Some(&b'/') {
            if beneath {
                return Err(Errno::EXDEV.into());
            }
            top.cursor()
        } else {
            anchor.cursor()
        };

        let mut queue: std::collections::VecDeque<Vec<u8>> =
            req.path.split(|&c| c == b'/').filter(|c| !c.is_empty()).map(<[u8]>::to_vec).collect();
        let mut must_dir = req.path.ends_with(b"/");
        let mut links = 0u32;
        let mut name_buf = [0u8; 24];
        let mut link_buf = vec![0u8; crate::sys::mem::PATH_MAX];

        while let Some(mut name) = queue.pop_front() {
            let last = queue.is_empty();
            if name == b"." {
                continue;
            }
            if name == b".." {
                // At the top by identity, not by name: the caller's root
                // may be read back under another name than `/`.
                let top_id = *top_id.get_or_init(|| fs::fstat(top.fd).map(|st| (st.st_dev, st.st_ino)).ok());
                let at_top = cur.path == top.path
                    || fs::fstat(cur.fd.as_fd()).is_ok_and(|st| Some((st.st_dev, st.st_ino)) == top_id);
                if at_top {
                    if beneath {
                        return Err(Errno::EXDEV.into());
                    }
                    continue; // `..` at the root stays there
                }
                let fd = fs::openat(Dir::Fd(cur.fd.as_fd()), c"..", libc::O_PATH | libc::O_DIRECTORY, 0)?;
                // The real parent, wherever the directory is now: its name
                // is read back, never worked out from the text.
                self.fd_path(fd.as_fd(), &mut cur.path)?;
                cur.fd = Handle::Owned(fd);
                // What was taken of the directory left describes it, not
                // its parent (a path ending in `..` is answered with the
                // parent's own).
                cur_stat = None;
                continue;
            }
            // At the root of a procfs: `self` is the caller, numbered as
            // that procfs numbers it, and `/proc/<pid>` is entered only for
            // a process of the sandbox.
            let proc_root = surface.proc_mount_of(&cur.path).filter(|(_, r)| r.iter().all(|&c| c == b'/'));
            // `self` and `thread-self` last and not followed (`lstat`,
            // `readlink`, `O_NOFOLLOW`) are the links themselves, looked
            // up as any name (`readlink` answers their text for the
            // caller, [`Resolver::self_link_text`]).
            let self_link = name == b"self" || name == b"thread-self";
            let the_link = last && !req.follow && !must_dir && self_link;
            if let Some((mount, _)) = proc_root.filter(|_| !the_link) {
                if self_link && no_symlinks {
                    // Both are symlinks, which the caller forbade.
                    return Err(Errno::ELOOP.into());
                }
                let (tgid, tid) = caller.numbers_in(procs, mount);
                if name == b"self" {
                    name = fs::decimal(tgid.into(), &mut name_buf).to_bytes().to_vec();
                } else if name == b"thread-self" {
                    name = fs::decimal(tgid.into(), &mut name_buf).to_bytes().to_vec();
                    queue.push_front(fs::decimal(tid.into(), &mut name_buf).to_bytes().to_vec());
                    queue.push_front(b"task".to_vec());
                }
                if name.iter().all(u8::is_ascii_digit) {
                    let pid = std::str::from_utf8(&name).ok().and_then(|s| s.parse::<u32>().ok());
                    // The caller is inside by definition (its call came
                    // through the sandbox's filter), and needs no lookup.
                    let inside = |p: u32| p == tgid || p == tid || procs.is_inside(mount, p);
                    if !pid.is_some_and(inside) {
                        let mut p = cur.path.clone();
                        push_component(&mut p, &name);
                        return Err(ResolveError::OutsideProc(p, pid.unwrap_or(0)));
                    }
                }
            }
            let cname = CString::new(name.clone()).map_err(|_| Errno::EINVAL)?;
            let lookup =
                |flags| fs::openat(Dir::Fd(cur.fd.as_fd()), &cname, libc::O_PATH | libc::O_NOFOLLOW | flags, 0);
            // In procfs, the caller's own /proc/<pid> may belong to root
            // (after it changed its credentials), which never stops a
            // process from reading its own: the supervisor looks there
            // itself. Another process's (membership was checked above) is
            // looked up with the caller's credentials alone, as the kernel
            // would for it.
            let proc_entry = self.proc_entry(at, &cur.path);
            let look_up = |flags| match proc_entry {
                ProcEntry::Other => super::identity::without_ptrace(|| lookup(flags)),
                ProcEntry::Own | ProcEntry::Shared => super::identity::retry_as_supervisor(|| lookup(flags)),
                ProcEntry::NotProc => lookup(flags),
            };
            // A name the walk goes on through is asked for as a directory
            // first, which needs no fstat after; a link or anything else
            // (ENOTDIR then) is looked up again as any name.
            let through = !last || must_dir;
            let (looked_up, a_dir) = match through.then(|| look_up(libc::O_DIRECTORY)) {
                Some(Ok(fd)) => (Ok(fd), true),
                Some(Err(Errno::ENOTDIR)) | None => (look_up(0), false),
                Some(Err(e)) => (Err(e), false),
            };
            let fd = match looked_up {
                Ok(fd) => fd,
                Err(Errno::ENOENT) if last => {
                    let mut path = cur.path.clone();
                    push_component(&mut path, &name);
                    let fd = cur.fd.into_owned()?;
                    return Ok(Resolved { target: Target::Missing { fd, name: cname }, path, straight: false });
                }
                Err(e) => return Err(e.into()),
            };
            if a_dir {
                push_component(&mut cur.path, &name);
                cur.fd = Handle::Owned(fd);
                cur_stat = None;
                continue;
            }
            let st = fs::fstat(fd.as_fd())?;
            let is_link = st.st_mode & libc::S_IFMT == libc::S_IFLNK;
            if is_link && (!last || req.follow || must_dir) {
                if no_symlinks {
                    return Err(Errno::ELOOP.into());
                }
                let in_pid_dir = surface.proc_relative(&cur.path).is_some_and(|r| !r.iter().all(|&c| c == b'/'));
                if in_pid_dir {
                    // A magic link of a sandboxed process (we only get here
                    // after its /proc/<pid> passed the membership check):
                    // jump to the object it designates, as the kernel does.
                    if no_magic {
                        return Err(Errno::ELOOP.into());
                    }
                    let jump = || fs::openat(Dir::Fd(cur.fd.as_fd()), &cname, libc::O_PATH, 0);
                    let obj = match proc_entry {
                        ProcEntry::Other => super::identity::without_ptrace(jump),
                        _ => super::identity::retry_as_supervisor(jump),
                    }?;
                    let mut path = Vec::new();
                    self.fd_path(obj.as_fd(), &mut path)?;
                    if path.first() != Some(&b'/') {
                        if !last {
                            return Err(Errno::ENOTDIR.into());
                        }
                        return Ok(Resolved { target: Target::Anonymous { fd: obj }, path, straight: false });
                    }
                    cur = Cursor { fd: Handle::Owned(obj), path };
                    cur_stat = None;
                    continue;
                }
                links += 1;
                if links > MAX_SYMLINKS {
                    return Err(Errno::ELOOP.into());
                }
                let n = fs::readlinkat(Dir::Fd(fd.as_fd()), c"", &mut link_buf)?;
                let target = &link_buf[..n];
                if target.ends_with(b"/") {
                    must_dir = must_dir || last;
                }
                for comp in target.split(|&c| c == b'/').filter(|c| !c.is_empty()).rev() {
                    queue.push_front(comp.to_vec());
                }
                if target.first() == Some(&b'/') {
                    if beneath {
                        return Err(Errno::EXDEV.into());
                    }
                    cur = top.cursor();
                    cur_stat = None;
                }
                continue;
            }
            let is_dir = st.st_mode & libc::S_IFMT == libc::S_IFDIR;
            if (!last || must_dir) && !is_dir && !is_link {
                return Err(Errno::ENOTDIR.into());
            }
            push_component(&mut cur.path, &name);
            cur.fd = Handle::Owned(fd);
            cur_stat = Some(st);
        }
        let stat = match cur_stat {
            Some(st) => st,
            None => fs::fstat(cur.fd.as_fd())?,
        };
        Ok(Resolved { target: Target::Exists { fd: cur.fd.into_owned()?, stat }, path: cur.path, straight: false })
    }
}

/// `RESOLVE_IN_ROOT` where an absolute path must start from the caller's
/// own root (a container's, `--isolate`'s) rather than the supervisor's:
/// `openat2` ignores the directory of an absolute path unless it is the
/// root of the resolution. Every lookup of the caller's paths, the parent of
/// a missing name included, takes it.
fn in_callers_root(caller: &Caller<'_>, req: Request<'_>) -> u64 {
    match caller.root.is_some() && req.path.first() == Some(&b'/') && !req.anchored() {
        true => fs::RESOLVE_IN_ROOT,
        false => 0,
    }
}

/// Whether `req` is a relative path of a caller whose root is not the
/// supervisor's (a container's, `--isolate`'s) that the caller did not
/// anchor itself: `openat2` from its directory would resolve an absolute
/// symlink on the way, and `..` past the caller's root, in the
/// supervisor's root, so such a path is walked unless it crosses neither.
fn confined(caller: &Caller<'_>, req: Request<'_>) -> bool {
    caller.root.is_some() && req.path.first() != Some(&b'/') && !req.anchored()
}

/// Whose `/proc` a path lies in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcEntry {
    /// Not in procfs.
    NotProc,
    /// In procfs, outside any `/proc/<pid>` (`/proc/sys`, `/proc/meminfo`).
    Shared,
    /// In the caller's own `/proc/<pid>`.
    Own,
    /// In another process's `/proc/<pid>`.
    Other,
}

impl Resolver {
    /// What `readlink` of the canonical `path` reads for the caller where
    /// it is a procfs's `self` or `thread-self` link, whose target the
    /// kernel makes for whoever reads it (for the supervisor, outside the
    /// command's PID namespace, nothing): the caller's numbers as that
    /// procfs numbers them.
    pub fn self_link_text(&self, at: &Lookup<'_>, path: &[u8]) -> Option<Vec<u8>> {
        let Lookup { surface, procs, caller } = *at;
        let (mount, rest) = surface.proc_mount_of(path).filter(|(_, r)| *r == b"/self" || *r == b"/thread-self")?;
        let (tgid, tid) = caller.numbers_in(procs, mount);
        Some(match rest {
            b"/self" => tgid.to_string().into_bytes(),
            _ => format!("{tgid}/task/{tid}").into_bytes(),
        })
    }

    /// Whose `/proc` the canonical `path` lies in, for the caller.
    pub fn proc_entry(&self, at: &Lookup<'_>, path: &[u8]) -> ProcEntry {
        let Lookup { surface, procs, caller } = *at;
        let (mount, pid) = match surface.proc_place(path) {
            ProcPlace::NotProc => return ProcEntry::NotProc,
            ProcPlace::Shared | ProcPlace::Pid(_, None) => return ProcEntry::Shared,
            ProcPlace::Pid(mount, Some(pid)) => (mount, pid),
        };
        let (own, _) = caller.numbers_in(procs, mount);
        if pid == own {
            ProcEntry::Own
        } else {
            ProcEntry::Other
        }
    }
}

/// Where a walk is: a handle of its own on the directory it has reached,
/// and that directory's path.
struct Cursor<'a> {
    fd: Handle<'a>,
    path: Vec<u8>,
}

/// The directory a cursor is at: the base it started from, borrowed, until
/// its first step gives it a handle of its own.
enum Handle<'a> {
    Borrowed(BorrowedFd<'a>),
    Owned(OwnedFd),
}

impl Handle<'_> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Handle::Borrowed(fd) => *fd,
            Handle::Owned(fd) => fd.as_fd(),
        }
    }

    /// A handle of its own, for a walk that ends where it is: a duplicate
    /// of a base that never moved.
    fn into_owned(self) -> Result<OwnedFd, ResolveError> {
        match self {
            Handle::Borrowed(fd) => fd.try_clone_to_owned().map_err(|_| ResolveError::Errno(Errno::EMFILE)),
            Handle::Owned(fd) => Ok(fd),
        }
    }
}

/// A directory a walk starts from or goes back to (the caller's root, the
/// directory of a relative path), borrowed for the walk, and its path.
struct Base<'a> {
    fd: BorrowedFd<'a>,
    path: Vec<u8>,
}

impl<'a> Base<'a> {
    /// A cursor at this directory, on its handle until it moves.
    fn cursor(&self) -> Cursor<'a> {
        Cursor { fd: Handle::Borrowed(self.fd), path: self.path.clone() }
    }
}

/// Splits a path into the directory part and its last component, ignoring
/// trailing slashes. `None` when the last component is `.`/`..` or there is
/// none (`/`), since such a path cannot name a new entry.
pub fn split_last(path: &[u8]) -> Option<(&[u8], &[u8])> {
    let trimmed = {
        let mut end = path.len();
        while end > 0 && path[end - 1] == b'/' {
            end -= 1;
        }
        &path[..end]
    };
    if trimmed.is_empty() {
        return None;
    }
    let (dir, name) = match trimmed.iter().rposition(|&c| c == b'/') {
        Some(i) => (&trimmed[..=i], &trimmed[i + 1..]),
        None => (&b""[..], trimmed),
    };
    if name == b"." || name == b".." {
        return None;
    }
    Some((dir, name))
}

/// A last component that names no entry: what `unlink`, `mkdir`, `rename`
/// and the other calls on names refuse, each with its own errno.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nameless {
    /// `.`
    Dot,
    /// `..`
    DotDot,
    /// No component at all: `/`.
    Root,
}

/// For a path whose last component names no entry ([`Nameless`]), the
/// directory the kernel resolves before refusing it (`x/` for `x/..`, `.`
/// for `.`, `/` for `/`), and which one it is; `None` for any other path.
pub fn nameless(path: &[u8]) -> Option<(&[u8], Nameless)> {
    let mut end = path.len();
    while end > 0 && path[end - 1] == b'/' {
        end -= 1;
    }
    let trimmed = &path[..end];
    if trimmed.is_empty() {
        return (!path.is_empty()).then_some((&b"/"[..], Nameless::Root));
    }
    let (dir, name) = match trimmed.iter().rposition(|&c| c == b'/') {
        Some(i) => (&trimmed[..=i], &trimmed[i + 1..]),
        None => (&b"."[..], trimmed),
    };
    match name {
        b"." => Some((dir, Nameless::Dot)),
        b".." => Some((dir, Nameless::DotDot)),
        _ => None,
    }
}

/// The relative path `written` appended to the directory path `dir`, as
/// written (its `.`, repeated and trailing slashes kept).
pub fn joined_path(mut dir: Vec<u8>, written: &[u8]) -> Vec<u8> {
    if dir.last() != Some(&b'/') {
        dir.push(b'/');
    }
    dir.extend_from_slice(written);
    dir
}

/// An absolute path with empty components and `.` dropped and `..` applied,
/// which is its canonical form when it crosses no symlink and no `..` (for
/// a path with `..`, only where the answer does not depend on it: a
/// missing name's record).
fn lexical(path: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(path.len());
    out.push(b'/');
    for name in path.split(|&c| c == b'/') {
        match name {
            b"" | b"." => {}
            b".." => pop_component(&mut out),
            _ => push_component(&mut out, name),
        }
    }
    out
}

fn push_component(path: &mut Vec<u8>, name: &[u8]) {
    if path.last() != Some(&b'/') {
        path.push(b'/');
    }
    path.extend_from_slice(name);
}

fn pop_component(path: &mut Vec<u8>) {
    if let Some(i) = path.iter().rposition(|&c| c == b'/') {
        path.truncate(if i == 0 { 1 } else { i });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_last_component() {
        assert_eq!(split_last(b"/a/b"), Some((&b"/a/"[..], &b"b"[..])));
        assert_eq!(split_last(b"a"), Some((&b""[..], &b"a"[..])));
        assert_eq!(split_last(b"a/b//"), Some((&b"a/"[..], &b"b"[..])));
        assert_eq!(split_last(b"/"), None);
        assert_eq!(split_last(b"a/.."), None);
        assert_eq!(split_last(b"."), None);
    }

    #[test]
    fn nameless_last_components() {
        assert_eq!(nameless(b"a/."), Some((&b"a/"[..], Nameless::Dot)));
        assert_eq!(nameless(b"a/../"), Some((&b"a/"[..], Nameless::DotDot)));
        assert_eq!(nameless(b".."), Some((&b"."[..], Nameless::DotDot)));
        assert_eq!(nameless(b"//"), Some((&b"/"[..], Nameless::Root)));
        assert_eq!(nameless(b"/a/b"), None);
        assert_eq!(nameless(b""), None);
        assert_eq!(nameless(b"a/.b"), None);
    }

    #[test]
    fn lexical_paths() {
        assert_eq!(lexical(b"/a//b/./c/"), b"/a/b/c");
        assert_eq!(lexical(b"/a/b/../c"), b"/a/c");
        assert_eq!(lexical(b"/../.."), b"/");
        assert_eq!(lexical(b"/"), b"/");
    }

    #[test]
    fn a_path_through_a_link_of_the_root_is_looked_up_where_it_leads() {
        use crate::supervisor::procs::ProcTree;
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path();
        std::fs::create_dir_all(top.join("usr/bin")).unwrap();
        std::fs::write(top.join("usr/bin/x"), "x").unwrap();
        for (link, target) in [
            ("bin", "usr/bin"),
            ("sbin", "/usr/bin"),
            ("up", "../usr"),
            ("dotted", "./usr"),
            ("doubled", "usr//bin"),
            ("file", "usr/bin/x"),
            ("chain", "bin"),
            ("dangling", "nowhere"),
            ("guarded", "usr/bin"),
        ] {
            symlink(target, top.join(link)).unwrap();
        }
        let root = fs::openat(Dir::Cwd, &CString::new(top.as_os_str().as_bytes()).unwrap(), libc::O_PATH, 0).unwrap();
        let mut resolver = Resolver::new().unwrap();
        // The command could replace `/guarded`: never taken as its target.
        resolver.learn_root_links(Some(root.as_fd()), |path| path != b"/guarded");
        let through = |p: &str| String::from_utf8(resolver.through_root_link(p.as_bytes()).into_owned()).unwrap();
        assert_eq!(through("/bin/x"), "/usr/bin/x");
        assert_eq!(through("/sbin/x"), "/usr/bin/x", "an absolute target, from the command's root");
        assert_eq!(through("/bin/"), "/usr/bin/");
        // The link itself, a longer name, a relative path: as written.
        for same in ["/bin", "/binary/x", "bin/x", "//bin/x"] {
            assert_eq!(through(same), same);
        }
        // Longer than the kernel takes once replaced: as written.
        let long = format!("/bin/{}", "a".repeat(libc::PATH_MAX as usize - 6));
        assert_eq!(through(&long), long);
        let fits = format!("/bin/{}", "a".repeat(libc::PATH_MAX as usize - 10));
        assert_eq!(through(&fits).len(), libc::PATH_MAX as usize - 1);
        // `..`, `.`, an empty component, a file, a link to a link, a
        // missing target, a link the command could replace: as written.
        for name in ["up", "dotted", "doubled", "file", "chain", "dangling", "guarded"] {
            let path = format!("/{name}/x");
            assert_eq!(through(&path), path);
        }
        // The resolver follows it as the kernel would, except for a caller
        // that forbids symlinks, which the kernel refuses at the link.
        let (surface, procs) = (Surface::new(), ProcTree { supervisor: 0 });
        let (tgid, own_ids) = (std::cell::OnceCell::new(), std::cell::OnceCell::new());
        let tid = nix::unistd::gettid().as_raw() as u32;
        let caller = Caller { tid, tgid: &tgid, base: None, root: Some(root.as_fd()), own_ids: &own_ids };
        let at = Lookup { surface: &surface, procs: &procs, caller: &caller };
        let req = |resolve| Request { path: b"/bin/x", follow: true, empty_path: false, resolve, creates: false };
        match resolver.resolve(&at, req(0)) {
            Ok(Resolved { target: Target::Exists { .. }, path, .. }) => assert_eq!(path, b"/usr/bin/x"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(resolver.resolve(&at, req(fs::RESOLVE_NO_SYMLINKS)), Err(ResolveError::Errno(Errno::ELOOP))));
    }

    #[test]
    fn components_push_and_pop() {
        let mut p = b"/".to_vec();
        push_component(&mut p, b"a");
        push_component(&mut p, b"b");
        assert_eq!(p, b"/a/b");
        pop_component(&mut p);
        assert_eq!(p, b"/a");
        pop_component(&mut p);
        assert_eq!(p, b"/");
        pop_component(&mut p);
        assert_eq!(p, b"/");
    }
}

#[cfg(test)]
mod differential {
    //! The resolver against the kernel's own resolution (`realpath` through
    //! `std::fs::canonicalize`) on random trees of directories, files and
    //! symlinks (relative, absolute, dangling, looping), for random paths.
    use super::*;
    use crate::supervisor::procs::ProcTree;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
            xs[(self.next() % xs.len() as u64) as usize]
        }
    }

    const NAMES: &[&str] = &["a", "b", "c", "l1", "l2", "l3", "f"];

    fn random_tree(rng: &mut Rng, root: &Path) {
        for d in ["a", "a/b", "b", "b/c", "a/b/c"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        for f in ["f", "a/f", "a/b/f", "b/c/f"] {
            std::fs::write(root.join(f), "x").unwrap();
        }
        let dirs = ["", "a", "a/b", "b", "b/c"];
        for _ in 0..6 {
            let at = root.join(rng.pick(&dirs)).join(rng.pick(&["l1", "l2", "l3"]));
            let target = match rng.next() % 5 {
                0 => format!("{}/{}", root.display(), rng.pick(&dirs)),
                1 => "..".to_string(),
                2 => format!("../{}", rng.pick(NAMES)),
                3 => rng.pick(NAMES).to_string(),
                _ => format!("{}/{}", rng.pick(NAMES), rng.pick(NAMES)),
            };
            let _ = std::os::unix::fs::symlink(target, at);
        }
    }

    use std::path::Path;

    #[test]
    fn agrees_with_the_kernel_on_random_trees() {
        let resolver = Resolver::new().unwrap();
        let mut surface = Surface::new();
        surface.add_proc_mount("/proc".into());
        let procs = ProcTree { supervisor: 0 };
        let tid = nix::unistd::gettid().as_raw() as u32;
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut compared = 0;
        for _ in 0..20 {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path().canonicalize().unwrap();
            random_tree(&mut rng, &root);
            let base =
                fs::openat(Dir::Cwd, &CString::new(root.as_os_str().as_bytes()).unwrap(), libc::O_PATH, 0).unwrap();
            let (tgid, own_ids) = (std::cell::OnceCell::new(), std::cell::OnceCell::new());
            let caller = Caller { tid, tgid: &tgid, base: Some(base.as_fd()), root: None, own_ids: &own_ids };
            for _ in 0..200 {
                let depth = 1 + rng.next() % 4;
                let rel: Vec<&str> =
                    (0..depth).map(|_| rng.pick(&["a", "b", "c", "l1", "l2", "l3", "f", "..", "."])).collect();
                let rel = rel.join("/");
                // Half the lookups as for a create (the directory that would
                // hold a missing name found too), half not.
                let creates = rng.next() % 2 == 0;
                // As written, and as the absolute path it names.
                let abs = format!("{}/{rel}", root.display());
                for written in [&rel, &abs] {
                    let req =
                        Request { path: written.as_bytes(), follow: true, empty_path: false, resolve: 0, creates };
                    let ours = resolver.resolve(&Lookup { surface: &surface, procs: &procs, caller: &caller }, req);
                    let kernel = std::fs::canonicalize(root.join(&rel));
                    match (&ours, &kernel) {
                        (Ok(Resolved { target: Target::Exists { .. }, path, .. }), Ok(k)) => {
                            assert_eq!(path.as_slice(), k.as_os_str().as_bytes(), "{written}");
                        }
                        // The directory a create would make the name in: the
                        // one the kernel's lookup reaches, named canonically
                        // (where the name is no dangling link, which a create
                        // follows to wherever it points).
                        (Ok(Resolved { target: Target::Missing { fd, name }, path, .. }), Err(e))
                            if std::fs::symlink_metadata(root.join(&rel)).is_err() =>
                        {
                            assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{written}: ours missing, kernel {e}");
                            let (dir, last) = split_last(rel.as_bytes()).expect("a missing name");
                            let dir = std::fs::canonicalize(root.join(std::ffi::OsStr::from_bytes(dir))).unwrap();
                            let mut want = dir.as_os_str().as_bytes().to_vec();
                            push_component(&mut want, last);
                            assert_eq!(path, &want, "{written}");
                            assert_eq!(name.as_bytes(), last, "{written}");
                            let (held, there) = (fs::fstat(fd.as_fd()).unwrap(), std::fs::metadata(&dir).unwrap());
                            assert_eq!((held.st_dev, held.st_ino), (there.dev(), there.ino()), "{written}");
                        }
                        (Ok(Resolved { target: Target::Missing { .. } | Target::Absent, .. }), Err(e)) => {
                            assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{written}: ours missing, kernel {e}");
                        }
                        (Err(ResolveError::Errno(ours)), Err(e)) => {
                            assert_eq!(Some(*ours as i32), e.raw_os_error(), "{written}");
                        }
                        _ => panic!("{written}: ours {ours:?}, kernel {kernel:?}"),
                    }
                    compared += 1;
                }
            }
        }
        assert_eq!(compared, 8000);
    }
}
