//! Opens (`open`, `creat`, `openat`, `openat2`): continued under a cover, or
//! performed on the checked object and installed with `ADDFD`, a wait the
//! caller would make handed to the retry queue.

use super::*;

impl Call<'_> {
    /// `open`, `creat`, `openat`, `openat2`: the supervisor opens the object
    /// it checked and installs the descriptor in the caller.
    pub(super) fn open(&mut self) -> Result<Answer, Stop> {
        let (flags, mode, resolve) = match self.args.op {
            OpArgs::Open { flags, mode } => (flags, mode, 0),
            OpArgs::Openat2 { how, size } => {
                let how = self.read_open_how(how, size)?;
                (how.flags as i32, how.mode as u32, how.resolve & !fs::RESOLVE_CACHED)
            }
            _ => return Err(MISDECODED.into()),
        };
        let anchored = resolve & (fs::RESOLVE_BENEATH | fs::RESOLVE_IN_ROOT) != 0;
        let at = self.args.first();
        let written = self.read_path(at.addr)?;

        let o_path = flags & libc::O_PATH != 0;
        let tmpfile = flags & libc::O_TMPFILE == libc::O_TMPFILE;
        let create = flags & libc::O_CREAT != 0 && !o_path && !tmpfile;
        let exclusive = create && flags & libc::O_EXCL != 0;
        let writes = flags & libc::O_ACCMODE != libc::O_RDONLY || flags & libc::O_TRUNC != 0;
        let follow = flags & libc::O_NOFOLLOW == 0 && !exclusive;
        let cloexec = flags & libc::O_CLOEXEC != 0;
        let asked = match () {
            _ if tmpfile || create => Access::Create,
            _ if writes => Access::Write,
            _ => Access::Read,
        };
        // What a continued open may do wherever the kernel's own lookup
        // leads: create (O_CREAT, O_TMPFILE), or what was asked.
        let sound = self.cx.ground.backstop;
        let cover = |access: Access| {
            let creates = (flags & libc::O_CREAT != 0 || tmpfile) && !o_path;
            Cover::backstop(sound, access).filter(|_| !creates || Cover::backstop(sound, Access::Create).is_some())
        };
        // With a journal, an open that may change a file is never the
        // kernel's to make: its object is kept first, by the supervisor,
        // on the very file it then opens (a path swapped after the check
        // would otherwise change a file the journal never saw).
        let journalled = self.cx.ground.journal.is_some() && (writes || create || tmpfile) && !o_path;
        if let Some(cover) = cover(asked).filter(|_| !o_path && resolve == 0 && !journalled) {
            // With a trail, what an existing object is opened for, as the
            // full resolution would record it (O_CREAT of a file already
            // there writes or reads it; O_EXCL fails, and is resolved).
            let existing = match () {
                _ if exclusive => None,
                _ if tmpfile => Some(Access::Create),
                _ if writes => Some(Access::Write),
                _ => Some(Access::Read),
            };
            if self.continues_as_written(&written, at.dirfd, (asked, existing, false)) {
                return Ok(Answer::Continue(cover));
            }
        }
        self.take_identity()?;
        let arg = self.based(written, at.dirfd, anchored)?;
        self.still_valid()?;
        // O_CREAT of a name written with a trailing slash: the kernel looks
        // up the directories on the way, then says EISDIR whatever is at
        // the name, creating nothing (a missing `new/` was made a file, a
        // file `f/` said ENOTDIR). Said where the directory's metadata may
        // be known; the rest goes on to be refused.
        let slashed = create && arg.bytes.ends_with(b"/");
        if slashed && resolve == 0 {
            if let Named::Entry(p) = self.parent(&arg, Access::Create)? {
                if self.cx.ground.surface.decide(&p.path, Access::Stat, &self.cx.ground.procs).allowed {
                    return Err(Errno::EISDIR.into());
                }
            }
        }

        let r = self.resolve(&arg, follow, false, resolve, create);
        let missing = matches!(r, Ok(Resolved { target: Target::Missing { .. }, .. }));
        // An O_PATH handle reads nothing: it names the object (to stat it,
        // make it the cwd, start further lookups from it, each checked on
        // its own), so it is decided like `stat` and allowed on the
        // directories that lead to the surface too (rsync opens `/` and
        // every directory down to its target that way).
        let access = if o_path {
            Access::Stat
        } else if tmpfile || (create && missing) || exclusive {
            Access::Create
        } else if writes {
            Access::Write
        } else {
            Access::Read
        };
        // A runtime's own FIFO, reopened by the container's first process
        // through its descriptor (runc's exec FIFO): the process holds it
        // already, and it is opened here, on the object resolved.
        let own_fifo = self.cx.ground.backstop.is_none()
            && own_descriptor_path(&arg.bytes)
            && matches!(&r, Ok(Resolved { target: Target::Exists { stat, .. }, .. }) if stat.st_mode & libc::S_IFMT == libc::S_IFIFO);
        // What the kernel answers from the lookup alone, before any
        // permission is checked: an existing name with O_CREAT|O_EXCL is
        // EEXIST, a directory opened to write or create is EISDIR. Said as
        // the kernel says it wherever the object's metadata may be known
        // (existence and type are then no secret); refused otherwise.
        if let Ok(Resolved { target: Target::Exists { stat, .. }, path, .. }) = &r {
            let is_dir = stat.st_mode & libc::S_IFMT == libc::S_IFDIR;
            let lookup_error = match () {
                _ if slashed => Some(Errno::EISDIR),
                _ if exclusive => Some(Errno::EEXIST),
                _ if is_dir && !o_path && !tmpfile && (writes || create) => Some(Errno::EISDIR),
                _ => None,
            };
            if let Some(e) = lookup_error {
                if self.cx.ground.surface.decide(path, Access::Stat, &self.cx.ground.procs).allowed {
                    return Err(e.into());
                }
            }
        }
        let r = match r {
            Ok(r) if own_fifo => {
                let why = Why::Note("the caller's own descriptor (a FIFO its runtime gave it)", RuleKind::Held);
                self.push(&arg, Some(&r.path), AccessKind::from(access), Verdict::Allow, None, why);
                r
            }
            r => self.check(&arg, r, access)?,
        };
        // Where Landlock enforces exactly this rule's answer, the kernel may
        // open the file itself: a path swapped in after the check reaches
        // nothing the surface refuses, and CONTINUE costs far less than
        // opening here and injecting the descriptor.
        // Never in procfs: the command's /proc may be its PID namespace's,
        // which the ruleset (built on the supervisor's) does not name.
        let proc = self.proc_entry(&r.path);
        let exact = matches!(self.decided_by, Some(Reason::Rule(i)) if self.cx.ground.landlock_exact(i))
            && proc == ProcEntry::NotProc;
        if o_path {
            // SECCOMP_IOCTL_NOTIF_ADDFD takes its descriptor with fget(),
            // which refuses O_PATH files, so the kernel opens it again: a
            // path swapped in meanwhile yields a handle on another object,
            // which grants nothing by itself (docs/design.md, "O_PATH").
            return match r.target {
                Target::Missing { .. } | Target::Absent => Err(Errno::ENOENT.into()),
                _ => Ok(Answer::Continue(Cover::handle())),
            };
        }
        // The kernel opens it itself where the backstop refuses whatever the
        // surface refuses (wherever its second lookup leads) and, for a
        // file or directory, grants what the rule allowed (else it would
        // refuse what the supervisor allows): a device, FIFO or socket is
        // then the caller's own to open (a FIFO waits for its peer in the
        // caller, and /dev/tty is the caller's terminal), as is an object
        // behind a sandboxed process's /proc/<pid>/fd/N.
        let continued = match &r.target {
            Target::Missing { .. } if create && exact && self.makes_in_parent(&r.path) => cover(access),
            Target::Exists { .. } if tmpfile && !(exact && self.cx.ground.making.makes_in(&r.path)) => None,
            Target::Exists { stat, .. } => match stat.st_mode & libc::S_IFMT {
                libc::S_IFREG | libc::S_IFDIR if exact && !exclusive => cover(access),
                libc::S_IFREG | libc::S_IFDIR | libc::S_IFLNK => None,
                // Opened here: terminals the command created (the ruleset
                // grants none) and the multiplexer that makes them.
                libc::S_IFCHR if self.ungranted_terminal(stat, &r.path) || stat.st_rdev == libc::makedev(5, 2) => None,
                _ if exclusive => None,
                _ => cover(access),
            },
            Target::Anonymous { .. } => cover(access),
            Target::Missing { .. } | Target::Absent => None,
        };
        // What a person allowed (`--ask`) the backstop does not grant: the
        // kernel would refuse it, so it is opened here; so is a change with
        // a journal.
        if let Some(cover) = continued.filter(|_| !self.approved && !journalled) {
            return Ok(Answer::Continue(cover));
        }
        let journal = if journalled { self.journal_for(&r.path) } else { None };
        // The caller's flags, for an object reopened here: never as a
        // controlling terminal.
        let reopen = flags & !(libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC) | libc::O_NOCTTY;
        let wait = Wait { blocking: flags & libc::O_NONBLOCK == 0, cloexec, fifo: false, reader: false };
        match r.target {
            Target::Absent => Err(Errno::ENOENT.into()),
            Target::Missing { fd: parent, name } => {
                if !create {
                    return Err(Errno::ENOENT.into());
                }
                // A name written with a trailing slash is never made a file
                // (under RESOLVE_* flags the parent is not looked up first).
                if slashed {
                    return Err(Errno::EISDIR.into());
                }
                // O_NOFOLLOW: if a symlink appeared at the name since the
                // check, fail instead of creating wherever it points.
                let flags = (flags | libc::O_NOFOLLOW) & !libc::O_CLOEXEC;
                let mode = self.creation_mode(parent.as_fd(), mode)?;
                if let Some(journal) = journal {
                    let fd = create_journalled(&journal, parent.as_fd(), &name, &r.path, flags, mode, exclusive)?;
                    return Ok(wait.done(fd)?);
                }
                let first = fs::openat(Dir::Fd(parent.as_fd()), &name, flags | libc::O_NONBLOCK, mode);
                self.install(first, wait, move || {
                    Ok(Opening { dir: parent, name, flags, mode, held: None, step: None })
                })
            }
            Target::Exists { .. } if exclusive => Err(Errno::EEXIST.into()),
            Target::Exists { stat, fd } => {
                let kind = stat.st_mode & libc::S_IFMT;
                if kind == libc::S_IFLNK {
                    // A link not followed: a directory was asked for first.
                    let e = if flags & libc::O_DIRECTORY != 0 { Errno::ENOTDIR } else { Errno::ELOOP };
                    return Err(e.into());
                }
                // The pseudo-terminal multiplexer: opened here, so that the
                // terminal it makes is known to be the command's (its slave
                // is granted to the command, no other).
                if kind == libc::S_IFCHR && stat.st_rdev == libc::makedev(5, 2) {
                    let master = self.cx.ground.resolver.reopen(fd.as_fd(), reopen, 0)?;
                    let n = fs::pty_number(master.as_fd())?;
                    // Its slave as the command names it: in the command's
                    // root (a container's `/dev/pts` is its own instance).
                    let name = std::ffi::CString::new(format!("/dev/pts/{n}")).expect("no NUL in a number");
                    let root = self.caller_root().ok_or(Errno::ESRCH)?;
                    let how = fs::OpenHow {
                        flags: (libc::O_PATH | libc::O_NOFOLLOW) as u64,
                        mode: 0,
                        resolve: fs::RESOLVE_IN_ROOT | fs::RESOLVE_NO_SYMLINKS,
                    };
                    let slave = fs::openat2(Dir::Fd(root.as_fd()), &name, how)?;
                    self.cx.memory.terminal_created(n, slave);
                    return Ok(Answer::Install { fd: master, cloexec });
                }
                let mode = if tmpfile { self.creation_mode(fd.as_fd(), mode)? } else { 0 };
                let fifo = kind == libc::S_IFIFO;
                let wait = Wait { fifo, reader: fifo && flags & libc::O_ACCMODE == libc::O_RDONLY, ..wait };
                // A regular file changed with a journal: opened without
                // O_TRUNC, kept from the descriptor opened, then truncated.
                let step = journal.filter(|_| kind == libc::S_IFREG && !tmpfile).map(|journal| JournalStep {
                    journal,
                    path: r.path.clone(),
                    truncate: reopen & libc::O_TRUNC != 0,
                });
                let reopen = if step.is_some() { reopen & !libc::O_TRUNC } else { reopen };
                let resolver = &self.cx.ground.resolver;
                let first = self.on_behalf(proc, || resolver.reopen(fd.as_fd(), reopen | libc::O_NONBLOCK, mode));
                let first = match (&step, first) {
                    (Some(step), Ok(opened)) => Ok(step.apply(opened)?),
                    (_, first) => first,
                };
                self.install(first, wait, move || {
                    let (dir, name) = resolver.reopening(fd.as_fd())?;
                    Ok(Opening { dir, name, flags: reopen, mode, held: Some(fd), step })
                })
            }
            Target::Anonymous { fd } => {
                Ok(Answer::Install { fd: self.cx.ground.resolver.reopen(fd.as_fd(), reopen, 0)?, cloexec })
            }
        }
    }

    /// Installs in the caller the descriptor `first` opened without
    /// blocking (`O_NONBLOCK`, cleared again unless the caller asked for
    /// it). Where the caller would have waited (the open breaks a lease the
    /// command holds: `EAGAIN`; a FIFO has no peer yet: `ENXIO` for a
    /// writer, no writer yet for a reader) the wait is the retry queue's,
    /// with the open `later` makes: a worker never waits on what the
    /// sandbox controls. A FIFO's reader is answered once a writer has
    /// written or come and gone (a writer that opens and waits before
    /// writing delays the reader's open until it writes).
    pub(super) fn install(
        &self,
        first: Result<OwnedFd, Errno>,
        wait: Wait,
        later: impl FnOnce() -> Result<Opening, Errno>,
    ) -> Result<Answer, Stop> {
        let waits = move |e: Errno| wait.blocking && (e == Errno::EAGAIN || (wait.fifo && e == Errno::ENXIO));
        let mut reader = match first {
            Ok(fd) if wait.reader && wait.blocking && !peer_ready(fd.as_fd()) => Some(fd),
            Ok(fd) => return Ok(wait.done(fd)?),
            Err(e) if waits(e) => None,
            Err(e) => return Err(e.into()),
        };
        let opening = later()?;
        let attempt = move || -> Result<Answer, Errno> {
            let fd = match reader.take() {
                Some(fd) => fd,
                None => match opening.open() {
                    Ok(fd) => fd,
                    Err(e) if waits(e) => return Err(Errno::EAGAIN),
                    Err(e) => return Err(e),
                },
            };
            if wait.reader && !peer_ready(fd.as_fd()) {
                reader = Some(fd);
                return Err(Errno::EAGAIN);
            }
            wait.done(fd)
        };
        Ok(Answer::Later(later::Retry { tid: self.notif.pid, fds: 4, attempt: Box::new(attempt) }))
    }

    /// Whether an open may be continued on the path as written, without
    /// resolving it: a path with no `.` or `..` (a relative one joined to
    /// the canonical path of its starting directory `dirfd`, as the kernel
    /// reads it back) that the surface allows by a rule the kernel also
    /// grants whole. Another thread may move that directory or change the
    /// cwd before the kernel looks the name up: what it then opens is
    /// decided by the backstop alone, as for a swapped absolute path. The kernel then
    /// resolves it under a backstop that refuses, wherever the path leads
    /// (symlinks included), what the surface refuses (the caller checks the
    /// backstop covers `access`), and allows the rule's own tree; where a
    /// symlink leads somewhere it grants less (`/proc/<pid>` without a
    /// procfs of the command's own, a grant pattern, a terminal the command
    /// created), the open fails closed.
    /// With a trail of allowed calls, whose records name the object and
    /// the directory a relative path started from, only where the joined
    /// path names an existing object with no symlink on the way (looked up
    /// once more, [`crate::supervisor::resolve::Resolver::canonical`]): it
    /// is then canonical as joined, and the record says what the check
    /// found; anything else is resolved in full. Not for paths in procfs
    /// (decided per process) or `/dev/ptmx` (opened here). With `canonical`,
    /// only such a path in any case (an exec: where a symlink leads
    /// elsewhere, the full route names the target a refusal is explained
    /// by). Nothing read from the caller is acted on, so the notification
    /// need not be checked as still pending: a stale one takes no answer.
    pub(super) fn continues_as_written(
        &mut self,
        written: &[u8],
        dirfd: i32,
        (access, existing, canonical): (Access, Option<Access>, bool),
    ) -> bool {
        let Some(plain) = self.plain_path(written, dirfd) else { return false };
        // The multiplexer is opened here, so that the terminal it makes is
        // known to be the command's. Any other device under a rule the
        // backstop holds exactly (`/dev/null`, which shell redirections
        // open all the time) is the kernel's to open: a path swapped in
        // reaches only what the backstop grants, and a terminal the command
        // made is none of it (nor of the surface's rules: its name takes
        // the full route).
        if &plain.path[..] == b"/dev/ptmx" {
            return false;
        }
        // Outside procfs: decided by the trie and the patterns.
        let v = self.cx.ground.surface.decide(&plain.path, access, &self.cx.ground.procs);
        let exact = matches!(v.reason, Reason::Rule(i) if v.allowed && self.cx.ground.landlock_exact(i));
        if !exact {
            return false;
        }
        // A name the kernel would make: only where it makes names (an
        // unnamed file, O_TMPFILE, in the directory named).
        let makes = match (access, existing) {
            (Access::Create, Some(Access::Create)) => self.cx.ground.making.makes_in(&plain.path),
            // An open that creates follows a symlink at the name, and
            // would make the name where it leads: that one takes the full
            // route (only in a held tree, where it matters).
            (Access::Create, Some(_)) if !self.cx.ground.making.is_empty() => {
                self.makes_in_parent(&plain.path) && !is_link(&plain.path)
            }
            (Access::Create, _) => self.makes_in_parent(&plain.path),
            _ => true,
        };
        if !makes {
            return false;
        }
        let (resolved, recorded) = match (self.cx.ground.records_allowed, existing) {
            (true, Some(existing)) => {
                let Some(canonical) = self.cx.ground.resolver.canonical(self.cx.ground.command_root(), &plain.path)
                else {
                    return false;
                };
                (Some(canonical), existing)
            }
            (true, None) => return false,
            (false, _)
                if canonical && !self.cx.ground.resolver.is_canonical(self.cx.ground.command_root(), &plain.path) =>
            {
                return false
            }
            (false, _) => (None, access),
        };
        self.allowed_as_written(written, dirfd, plain.base, resolved.as_deref(), (recorded, v.reason));
        true
    }

    /// Whether the kernel makes a name at `path` (canonical), in its
    /// directory ([`crate::sandbox::landlock::Making::makes_in`]).
    fn makes_in_parent(&self, path: &[u8]) -> bool {
        let dir = match path.iter().rposition(|&b| b == b'/') {
            Some(0) => &b"/"[..],
            Some(i) => &path[..i],
            None => return false,
        };
        self.cx.ground.making.makes_in(dir)
    }

    /// The absolute path a path with no `.` or `..` names: as written (a
    /// symlink of the root the command cannot change taken as where it
    /// leads, [`crate::supervisor::resolve::Resolver::through_root_link`]),
    /// or (relative) joined to the canonical path of its starting directory
    /// `dirfd`, as the kernel reads it back. `None` for anything else (a
    /// directory with no path, a removed one, `--isolate`'s per-process
    /// roots) and for paths in procfs, decided per process.
    pub(super) fn plain_path<'w>(&self, written: &'w [u8], dirfd: i32) -> Option<PlainPath<'w>> {
        let plain = written.split(|&b| b == b'/').all(|c| c != b"." && c != b"..");
        if written.is_empty() || !plain || self.cx.ground.isolated {
            return None;
        }
        let (path, base) = match written.first() {
            // Through a symlink of the root the command cannot change, as
            // the path it leads to: the kernel's lookup goes there too.
            Some(b'/') => (self.cx.ground.resolver.through_root_link(written), None),
            _ => {
                let dir = self.named_dir(dirfd)?;
                let base = self.cx.ground.records.then(|| dir.clone());
                (Cow::Owned(super::super::resolve::joined_path(dir, written)), base)
            }
        };
        matches!(self.cx.ground.surface.proc_place(&path), ProcPlace::NotProc).then_some(PlainPath { path, base })
    }

    /// Records a call allowed on the path as written (its object
    /// `resolved` where a lookup found it canonical), decided by `reason`.
    /// Allowed: its paths are kept only with a trail.
    pub(super) fn allowed_as_written(
        &mut self,
        written: &[u8],
        dirfd: i32,
        base: Option<Vec<u8>>,
        resolved: Option<&[u8]>,
        (access, reason): (Access, Reason),
    ) {
        self.decided_by = Some(reason);
        let arg = PathArg { bytes: if self.cx.ground.records { written.to_vec() } else { Vec::new() }, base: None };
        if let Some(base) = base {
            self.base_hint = Some((dirfd, arg.bytes.clone(), base));
        }
        self.push(&arg, resolved, AccessKind::from(access), Verdict::Allow, None, Why::Verdict(reason));
    }

    /// Reads an extensible struct of `size` bytes from the caller, of which
    /// this kernel interface knows the first `known`: as the kernel's
    /// `copy_struct_from_user`, shorter is `EINVAL`, more than a page
    /// `E2BIG`, and the bytes beyond `known` must be zeroes (`E2BIG`).
    pub(super) fn read_extensible(&self, addr: u64, size: u64, known: usize) -> Result<Vec<u8>, Errno> {
        if size < known as u64 {
            return Err(Errno::EINVAL);
        }
        if size > 4096 {
            return Err(Errno::E2BIG);
        }
        let mut buf = vec![0u8; size as usize];
        if mem::read(self.notif.pid, addr, &mut buf)? != buf.len() {
            return Err(Errno::EFAULT);
        }
        if buf[known..].iter().any(|&b| b != 0) {
            return Err(Errno::E2BIG);
        }
        Ok(buf)
    }

    /// Reads and validates the caller's `struct open_how` as `openat2` would.
    pub(super) fn read_open_how(&self, addr: u64, size: u64) -> Result<OpenHow, Errno> {
        let buf = self.read_extensible(addr, size, std::mem::size_of::<OpenHow>())?;
        let word = |i: usize| u64::from_ne_bytes(buf[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        let how = OpenHow { flags: word(0), mode: word(1), resolve: word(2) };
        let known = fs::RESOLVE_NO_XDEV
            | fs::RESOLVE_NO_MAGICLINKS
            | fs::RESOLVE_NO_SYMLINKS
            | fs::RESOLVE_BENEATH
            | fs::RESOLVE_IN_ROOT
            | fs::RESOLVE_CACHED;
        let creates =
            how.flags & (libc::O_CREAT as u64) != 0 || how.flags & (libc::O_TMPFILE as u64) == libc::O_TMPFILE as u64;
        if how.flags >> 32 != 0
            || how.resolve & !known != 0
            || how.resolve & (fs::RESOLVE_BENEATH | fs::RESOLVE_IN_ROOT) == fs::RESOLVE_BENEATH | fs::RESOLVE_IN_ROOT
            || (how.mode != 0 && !creates)
            || how.mode & !0o7777 != 0
        {
            return Err(Errno::EINVAL);
        }
        Ok(how)
    }

    /// The caller's umask, which the kernel would apply to a created file.
    /// The mode a file made in `dir` gets from the caller's `mode`: less
    /// its umask, unless `dir` has a default ACL, which the kernel applies
    /// instead of the umask (the supervisor's own umask is 0, so the mode
    /// passed on reaches the ACL whole).
    pub(super) fn creation_mode(&self, dir: std::os::fd::BorrowedFd<'_>, mode: u32) -> Result<u32, Stop> {
        let path = super::super::resolve::Resolver::proc_path(dir);
        let default_acl = match fs::getxattr(&path, c"system.posix_acl_default", &mut []) {
            Ok(_) | Err(Errno::ERANGE) => true,
            Err(_) => false,
        };
        Ok(if default_acl { mode & 0o7777 } else { mode & !self.umask()? & 0o7777 })
    }

    pub(super) fn umask(&self) -> Result<u32, Stop> {
        let v = super::super::resolve::proc_status_field(self.notif.pid, "Umask:").ok_or(Stop::Gone)?;
        self.still_valid()?;
        u32::from_str_radix(&v, 8).map_err(|_| Stop::Fail(Errno::EINVAL))
    }
}

/// How a descriptor opened for the caller is handed over ([`Call::install`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Wait {
    /// The caller did not ask for `O_NONBLOCK`: it would have waited.
    blocking: bool,
    /// Whether to install it close-on-exec.
    cloexec: bool,
    /// A FIFO: `ENXIO` (no reader for a writer) means wait too.
    fifo: bool,
    /// A FIFO opened for reading, which waits for a writer.
    reader: bool,
}

impl Wait {
    /// The answer that installs `fd`, in the caller's blocking mode.
    fn done(self, fd: OwnedFd) -> Result<Answer, Errno> {
        if self.blocking {
            fs::set_status_flags(fd.as_fd(), fs::status_flags(fd.as_fd())? & !libc::O_NONBLOCK)?;
        }
        Ok(Answer::Install { fd, cloexec: self.cloexec })
    }
}

/// An open the supervisor makes again for a caller that waits: `name` in
/// `dir` (a name to create, or `N` in `/proc/self/fd` for a handle it
/// holds in `held`), always without blocking.
pub(super) struct Opening {
    dir: OwnedFd,
    name: std::ffi::CString,
    flags: i32,
    mode: u32,
    held: Option<OwnedFd>,
    /// What the journal does with the file once it is open.
    step: Option<JournalStep>,
}

impl Opening {
    fn open(&self) -> Result<OwnedFd, Errno> {
        let _ = &self.held;
        let fd = fs::openat(Dir::Fd(self.dir.as_fd()), &self.name, self.flags | libc::O_NONBLOCK, self.mode)?;
        match &self.step {
            Some(step) => step.apply(fd),
            None => Ok(fd),
        }
    }
}

/// An existing regular file opened to be changed, with a journal: its
/// pre-image is kept from the descriptor opened (the object the caller
/// gets, whatever its path says by now), then it is truncated if the
/// caller asked for `O_TRUNC`, all under the journal's lock.
pub(super) struct JournalStep {
    journal: std::sync::Arc<crate::journal::Journal>,
    path: Vec<u8>,
    truncate: bool,
}

impl JournalStep {
    fn apply(&self, fd: OwnedFd) -> Result<OwnedFd, Errno> {
        let _held = kept(&self.journal, fd.as_fd(), &self.path, self.truncate || writes_content(&fd))?;
        if self.truncate {
            truncate(&fd)?;
        }
        Ok(fd)
    }
}

/// Whether `fd` was opened to write (not `O_RDONLY` with `O_TRUNC` alone).
fn writes_content(fd: &OwnedFd) -> bool {
    fs::status_flags(fd.as_fd()).is_ok_and(|f| f & libc::O_ACCMODE != libc::O_RDONLY)
}

/// Truncates the file `fd` opened to length 0, as `O_TRUNC` would (an
/// `O_RDONLY | O_TRUNC` open truncates too, where the caller may write:
/// the file is opened again for writing, with the caller's credentials).
fn truncate(fd: &OwnedFd) -> Result<(), Errno> {
    if writes_content(fd) {
        return nix::unistd::ftruncate(fd, 0);
    }
    let again = fs::openat(
        Dir::Cwd,
        &super::super::resolve::Resolver::proc_path(fd.as_fd()),
        libc::O_WRONLY | libc::O_NOCTTY | libc::O_NONBLOCK,
        0,
    )?;
    nix::unistd::ftruncate(&again, 0)
}

/// Creates `name` in `parent` (at `path`) for an open with a journal: the
/// directory's attributes kept first, the file made exclusively so that
/// the journal knows it is the session's, and journalled as made. A name
/// that appeared since the check (and the caller did not ask `O_EXCL`) is
/// opened as the existing file it is, kept, and truncated if asked.
fn create_journalled(
    journal: &crate::journal::Journal,
    parent: std::os::fd::BorrowedFd<'_>,
    name: &std::ffi::CStr,
    path: &[u8],
    flags: i32,
    mode: u32,
    exclusive: bool,
) -> Result<OwnedFd, Errno> {
    let dir_path = &path[..path.iter().rposition(|&b| b == b'/').unwrap_or(0).max(1)];
    let mut held = kept(journal, parent, dir_path, false)?;
    match fs::openat(Dir::Fd(parent), name, flags | libc::O_EXCL | libc::O_NONBLOCK, mode) {
        Ok(fd) => {
            identity::as_supervisor(|| held.made_at(parent, name, path))?;
            Ok(fd)
        }
        Err(Errno::EEXIST) if !exclusive => {
            let existing = flags & !(libc::O_CREAT | libc::O_TRUNC);
            let fd = fs::openat(Dir::Fd(parent), name, existing | libc::O_NONBLOCK, 0)?;
            if fs::fstat(fd.as_fd())?.st_mode & libc::S_IFMT == libc::S_IFREG {
                identity::as_supervisor(|| held.keep(fd.as_fd(), path, true))?;
                if flags & libc::O_TRUNC != 0 {
                    truncate(&fd)?;
                }
            }
            Ok(fd)
        }
        Err(e) => Err(e),
    }
}

/// Whether a FIFO opened for reading has seen its writer: data to read,
/// or a writer that came and went.
pub(super) fn peer_ready(fd: std::os::fd::BorrowedFd<'_>) -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
    poll(&mut fds, PollTimeout::ZERO).is_ok_and(|n| n > 0)
}

/// Whether `path` (absolute) names a symlink now.
fn is_link(path: &[u8]) -> bool {
    std::ffi::CString::new(path).is_ok_and(|p| {
        fs::fstatat(Dir::Cwd, &p, libc::AT_SYMLINK_NOFOLLOW).is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFLNK)
    })
}
