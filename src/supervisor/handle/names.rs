//! Calls that make or remove names (`unlink`, `rmdir`, `mkdir`, `symlink`,
//! `mknod`, `rename`, `link`): performed on the pinned parent directory
//! the entry was decided in.

use super::*;

impl Call<'_> {
    /// The directory holding `arg`'s last component, pinned, and the name;
    /// or, for a last component that names no entry (`.`, `..`, `/`), which
    /// one it is and the directory the kernel would have resolved, decided
    /// as a lookup (`stat`) before the call refuses the name with its own
    /// errno: nothing is done for it, so nothing a racing thread writes can
    /// make it act.
    pub(super) fn parent(&mut self, arg: &PathArg, access: Access) -> Result<Named, Stop> {
        if let Some((dir, which)) = super::super::resolve::nameless(&arg.bytes) {
            let base = match &arg.base {
                Some((n, fd)) => Some((*n, fd.try_clone().map_err(|_| Errno::EMFILE)?)),
                None => None,
            };
            let dir_arg = PathArg { bytes: dir.to_vec(), base };
            let (fd, mode) = self.checked_object(&dir_arg, true, false, Access::Stat)?;
            if mode & libc::S_IFMT != libc::S_IFDIR {
                return Err(Errno::ENOTDIR.into());
            }
            return Ok(Named::Nameless(which, fd));
        }
        let root = self.root().map_err(|_| Stop::Gone)?;
        let req = Request { path: &arg.bytes, follow: false, empty_path: false, resolve: 0, creates: false };
        let caller = self.caller(arg, root.as_ref());
        match self.cx.ground.resolver.resolve_parent(&self.lookup(&caller), req) {
            Ok(Some(p)) => Ok(Named::Entry(p)),
            // An empty path: the kernel's lookup fails on it.
            Ok(None) => Err(Errno::ENOENT.into()),
            // Recorded (and refused) as any resolution failure is.
            Err(e) => self.check(arg, Err(e), access).map(|_| unreachable!("a failed resolution is refused")),
        }
    }

    /// Decides `access` to the entry `parent` names, failing first as the
    /// kernel would when it exists and must not (a create) or is missing
    /// and must be there (a removal).
    pub(super) fn check_entry(
        &mut self,
        arg: &PathArg,
        parent: &super::super::resolve::Parent,
        access: Access,
    ) -> Result<(), Stop> {
        let path = parent.entry_path();
        let exists = parent.entry()?.is_some();
        let failure = match (access, exists) {
            (Access::Create, true) => Some((Errno::EEXIST, "exists")),
            (Access::Delete, false) => Some((Errno::ENOENT, "does not exist")),
            _ => None,
        };
        if let Some((errno, why)) = failure {
            let why = Why::Note(why, RuleKind::Failure);
            self.push(arg, Some(&path), AccessKind::from(access), Verdict::Error, Some(errno), why);
            return Err(errno.into());
        }
        self.decide(arg, &path, access)
    }

    /// unlink, rmdir, mkdir, symlink, mknod: decided on the entry's real
    /// location and performed by the supervisor on its pinned handle of
    /// the directory, so a path or directory swapped after the check
    /// changes nothing; or, for a name made where the kernel holds the
    /// surface's answer, continued ([`Call::made_as_written`]).
    pub(super) fn entry_op(&mut self) -> Result<Answer, Stop> {
        let row = self.row;
        let flags = self.args.flag_bits();
        let at = if row.op == Op::Symlink { self.args.second() } else { self.args.first() };
        let written = self.read_path(at.addr)?;
        if let Some(cover) = self.made_as_written(&written, at.dirfd) {
            return Ok(Answer::Continue(cover));
        }
        let arg = self.based(written, at.dirfd, false)?;
        let target = match self.args.op {
            OpArgs::Symlink { target } => {
                // The target: a string, never resolved here.
                let mut buf = [0u8; mem::PATH_MAX];
                let n = mem::read_path(self.notif.pid, target, &mut buf)?;
                if n == 0 {
                    return Err(Errno::ENOENT.into());
                }
                Some(std::ffi::CString::new(&buf[..n]).map_err(|_| Errno::EINVAL)?)
            }
            _ => None,
        };
        self.still_valid()?;
        // What the kernel refuses before it looks anything up: an unknown
        // flag, a file type mknod cannot make.
        if row.op == Op::Unlink && flags & !(libc::AT_REMOVEDIR as u64) != 0 {
            return Err(Errno::EINVAL.into());
        }
        if let OpArgs::Mknod { mode, .. } = self.args.op {
            match mode & libc::S_IFMT {
                0 | libc::S_IFREG | libc::S_IFCHR | libc::S_IFBLK | libc::S_IFIFO | libc::S_IFSOCK => {}
                libc::S_IFDIR => return Err(Errno::EPERM.into()),
                _ => return Err(Errno::EINVAL.into()),
            }
        }
        let remove_dir = row.op == Op::Rmdir || (row.op == Op::Unlink && flags & (libc::AT_REMOVEDIR as u64) != 0);
        let creates = matches!(row.op, Op::Mkdir | Op::Symlink | Op::Mknod);
        let access = if creates { Access::Create } else { Access::Delete };
        let parent = match self.parent(&arg, access)? {
            Named::Entry(p) => p,
            // As the kernel's do_unlinkat, do_rmdir and filename_create.
            Named::Nameless(which, _) => {
                return Err(match (creates, remove_dir, which) {
                    (true, _, _) => Errno::EEXIST,
                    (false, false, _) => Errno::EISDIR,
                    (false, true, Nameless::Dot) => Errno::EINVAL,
                    (false, true, Nameless::DotDot) => Errno::ENOTEMPTY,
                    (false, true, Nameless::Root) => Errno::EBUSY,
                }
                .into())
            }
        };
        self.check_entry(&arg, &parent, access)?;
        let (dir, name) = (parent.fd.as_fd(), parent.name.as_c_str());
        // With a journal, the pre-images first and the change journalled,
        // all under its lock (no other change in the journalled trees can
        // come between).
        let path = parent.entry_path();
        let journal = self.journal_for(&path);
        let mut held = match &journal {
            Some(j) => Some(j.lock()?),
            None => None,
        };
        if let (Some(held), true) = (held.as_mut(), creates) {
            identity::as_supervisor(|| held.keep(dir, &parent.path, false))?;
        }
        let done = match (row.op, self.args.op) {
            (Op::Unlink | Op::Rmdir, _) => {
                if parent.trailing_slash && !remove_dir {
                    let is_dir = parent.entry()?.is_some_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFDIR);
                    return Err(if is_dir { Errno::EISDIR } else { Errno::ENOTDIR }.into());
                }
                let flags = if remove_dir { libc::AT_REMOVEDIR } else { 0 };
                match held.as_mut() {
                    Some(held) => {
                        let seq = identity::as_supervisor(|| held.removing(dir, name, &path, &parent.path))?;
                        let done = fs::unlinkat(dir, name, flags);
                        identity::as_supervisor(|| held.outcome(seq, done))?;
                        done
                    }
                    None => fs::unlinkat(dir, name, flags),
                }
            }
            (_, OpArgs::Mkdir { mode }) => fs::mkdirat(dir, name, self.creation_mode(dir, mode)?),
            (_, OpArgs::Symlink { .. }) => fs::symlinkat(target.as_deref().expect("read above"), dir, name),
            (_, OpArgs::Mknod { mode, dev }) => {
                let kind = if mode & libc::S_IFMT == 0 { libc::S_IFREG } else { mode & libc::S_IFMT };
                fs::mknodat(dir, name, kind | self.creation_mode(dir, mode)?, dev)
            }
            _ => Err(MISDECODED),
        };
        if let (Some(held), true, Ok(())) = (held.as_mut(), creates, done) {
            identity::as_supervisor(|| held.made_at(dir, name, &path))?;
        }
        done.map(|()| Answer::Value(0)).map_err(Stop::Fail)
    }

    /// `mkdir`, `symlink`, and `mknod` of a file, FIFO or socket, continued
    /// as written ([`Call::continues_as_written`]) where the backstop
    /// refuses every create the surface refuses (whatever path a racing
    /// thread swaps in) and the rule that allows this one is held exactly,
    /// as an open that creates is: the kernel then makes the name itself,
    /// as the caller, with its umask, its credentials and the directory's
    /// default ACL, which the supervisor would otherwise read and apply
    /// (the umask alone is a read of `/proc/<tid>/status`). Never with a
    /// journal, which keeps the directory before the change, nor for a
    /// device node, which the backstop never grants.
    fn made_as_written(&mut self, written: &[u8], dirfd: i32) -> Option<Cover> {
        let kind = match self.args.op {
            OpArgs::Mkdir { .. } | OpArgs::Symlink { .. } => true,
            OpArgs::Mknod { mode, .. } => {
                matches!(mode & libc::S_IFMT, 0 | libc::S_IFREG | libc::S_IFIFO | libc::S_IFSOCK)
            }
            _ => false,
        };
        if !kind || self.cx.ground.journal.is_some() {
            return None;
        }
        let cover = Cover::backstop(self.cx.ground.backstop, Access::Create)?;
        self.continues_as_written(written, dirfd, (Access::Create, None, false)).then_some(cover)
    }

    /// rename, link: both names decided on their real locations (a rename
    /// removes one and creates the other; an exchange does both on each
    /// side) and performed on the supervisor's pinned handles.
    pub(super) fn rename_or_link(&mut self) -> Result<Answer, Stop> {
        let row = self.row;
        let flags = self.args.flag_bits();
        // Flags the kernel refuses before it looks anything up.
        let known = match row.op {
            Op::Link => AT_SYMLINK_FOLLOW | AT_EMPTY_PATH,
            _ => u64::from(libc::RENAME_NOREPLACE | libc::RENAME_EXCHANGE | libc::RENAME_WHITEOUT),
        };
        let exchange = flags & u64::from(libc::RENAME_EXCHANGE) != 0;
        let noreplace = flags & u64::from(libc::RENAME_NOREPLACE) != 0;
        let exchange_with = flags & u64::from(libc::RENAME_NOREPLACE | libc::RENAME_WHITEOUT) != 0;
        if flags & !known != 0 || (row.op == Op::Rename && exchange && exchange_with) {
            return Err(Errno::EINVAL.into());
        }
        let src = self.path_arg(self.args.first(), false)?;
        let dst = self.path_arg(self.args.second(), false)?;
        self.still_valid()?;
        if row.op == Op::Link {
            let follow = flags & AT_SYMLINK_FOLLOW != 0;
            let empty = flags & AT_EMPTY_PATH != 0;
            // As the kernel's do_linkat: two mounts are EXDEV before any
            // permission is checked, said wherever the source's metadata
            // may be known.
            if let Ok(Resolved { target: Target::Exists { fd, .. }, path, .. }) =
                self.resolve(&src, follow, empty, 0, false)
            {
                let root = self.root().map_err(|_| Stop::Gone)?;
                let req = Request { path: &dst.bytes, follow: false, empty_path: false, resolve: 0, creates: false };
                let caller = self.caller(&dst, root.as_ref());
                let to = self.cx.ground.resolver.resolve_parent(&self.lookup(&caller), req);
                if let Ok(Some(to)) = to {
                    let visible = self.cx.ground.surface.decide(&path, Access::Stat, &self.cx.ground.procs).allowed;
                    if visible && fs::mount_id(fd.as_fd())? != fs::mount_id(to.fd.as_fd())? {
                        return Err(Errno::EXDEV.into());
                    }
                }
            }
            let (object, _, source) = self.checked_object_at(&src, follow, empty, Access::LinkSource)?;
            // The new name is made as filename_create makes it: `.`, `..`
            // and `/` exist already.
            let Named::Entry(to) = self.parent(&dst, Access::Create)? else { return Err(Errno::EEXIST.into()) };
            self.check_entry(&dst, &to, Access::Create)?;
            let path = to.entry_path();
            let journal = self.journal_for(&path);
            // A journalled object given a name outside the journalled
            // trees could be changed there unseen: refused as a link
            // across file systems is (callers copy instead).
            if journal.is_none() && self.journal_for(&source).is_some() {
                return Err(Errno::EXDEV.into());
            }
            let Some(journal) = journal else {
                return fs::link_handle(object.as_fd(), to.fd.as_fd(), &to.name)
                    .map(|()| Answer::Value(0))
                    .map_err(Stop::Fail);
            };
            let mut held = journal.lock()?;
            identity::as_supervisor(|| held.keep(to.fd.as_fd(), &to.path, false))?;
            fs::link_handle(object.as_fd(), to.fd.as_fd(), &to.name)?;
            identity::as_supervisor(|| held.made_at(to.fd.as_fd(), &to.name, &path))?;
            return Ok(Answer::Value(0));
        }
        let from = self.parent(&src, Access::Delete)?;
        let to = self.parent(&dst, Access::Create)?;
        let (from, to) = match (from, to) {
            (Named::Entry(from), Named::Entry(to)) => (from, to),
            // As the kernel's do_renameat2: two mounts first, then the
            // source's name, then the destination's.
            (from, to) => {
                if fs::mount_id(from.dir())? != fs::mount_id(to.dir())? {
                    return Err(Errno::EXDEV.into());
                }
                return Err(match (from, to) {
                    (Named::Nameless(..), _) => Errno::EBUSY,
                    _ if noreplace => Errno::EEXIST,
                    _ => Errno::EBUSY,
                }
                .into());
            }
        };
        self.check_entry(&src, &from, Access::Delete)?;
        if exchange {
            // Both names exist and both move: each is removed and created.
            self.check_entry(&dst, &to, Access::Delete)?;
            self.decide(&src, &from.entry_path(), Access::Create)?;
        } else if to.entry()?.is_some() {
            // Replacing what is there removes it.
            self.decide(&dst, &to.entry_path(), Access::Delete)?;
        }
        self.decide(&dst, &to.entry_path(), Access::Create)?;
        // A trailing slash names a directory on either side.
        for side in [&from, &to] {
            if side.trailing_slash {
                if let Some(st) = side.entry()? {
                    if st.st_mode & libc::S_IFMT != libc::S_IFDIR {
                        return Err(Errno::ENOTDIR.into());
                    }
                }
            }
        }
        let (from_path, to_path) = (from.entry_path(), to.entry_path());
        let rename = || fs::renameat2(from.fd.as_fd(), &from.name, to.fd.as_fd(), &to.name, flags as u32);
        let (journal_from, journal_to) = (self.journal_for(&from_path), self.journal_for(&to_path));
        let journal = match (&journal_from, &journal_to) {
            (None, None) => return rename().map(|()| Answer::Value(0)).map_err(Stop::Fail),
            // Out of the journalled trees (where the journal could not put
            // it back from), or swapped with a name outside them: refused
            // as a rename across file systems is, and programs copy and
            // remove instead (each journalled).
            (Some(_), None) => return Err(Errno::EXDEV.into()),
            (None, Some(_)) if exchange => return Err(Errno::EXDEV.into()),
            (_, Some(j)) => j,
        };
        let mut held = journal.lock()?;
        let inside = journal_from.is_some();
        let seq =
            identity::as_supervisor(|| held.renaming(side(&from, &from_path), inside, side(&to, &to_path), exchange))?;
        let done = rename();
        identity::as_supervisor(|| held.outcome(seq, done))?;
        if done.is_ok() && !inside && seq.is_some() {
            identity::as_supervisor(|| held.moved_in(to.fd.as_fd(), &to.name))?;
        }
        done.map(|()| Answer::Value(0)).map_err(Stop::Fail)
    }
}

/// One side of a rename, as the journal takes it.
fn side<'a>(p: &'a super::super::resolve::Parent, path: &'a [u8]) -> crate::journal::Side<'a> {
    crate::journal::Side { dir: p.fd.as_fd(), dir_path: &p.path, name: &p.name, path }
}
