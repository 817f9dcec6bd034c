//! Metadata and attributes: the stat family, `access`, `readlink`, xattrs,
//! `inotify_add_watch`, and the changes Landlock cannot express (`chmod`,
//! `chown`, times, xattrs), performed on the checked object.

use super::*;

impl Call<'_> {
    /// The path argument of a single-path call, whether its last symlink is
    /// followed, and whether an empty path names the descriptor itself. Rows
    /// without a path (fchmod, fsetxattr) and utimensat with a NULL path act
    /// on the descriptor.
    pub(super) fn target(&mut self) -> Result<(PathArg, bool, bool), Stop> {
        let (row, args) = (self.row, self.args);
        let flags = args.flag_bits();
        let follow = match row.follow {
            Follow::No => false,
            Follow::UnlessNofollowFlag => flags & AT_SYMLINK_NOFOLLOW == 0,
            Follow::Yes | Follow::NotApplicable => true,
        };
        let on_descriptor = args.path.is_none() || (row.op == Op::Utimensat && args.path == Some(0));
        if on_descriptor {
            let fd = args.first().dirfd;
            if args.path.is_some() {
                // utimensat(fd, NULL): the kernel reads a NULL name for the
                // cwd (EFAULT), and takes no flags on a descriptor.
                if fd == libc::AT_FDCWD {
                    return Err(Errno::EFAULT.into());
                }
                if flags != 0 {
                    return Err(Errno::EINVAL.into());
                }
            }
            if fd < 0 {
                return Err(Errno::EBADF.into());
            }
            // These take an open file: an O_PATH descriptor is EBADF to
            // them (fstat, fstatfs and fchdir take one).
            let open_file = matches!(
                row.op,
                Op::Chmod | Op::Chown | Op::Utimensat | Op::Setxattr | Op::Removexattr | Op::Getxattr | Op::Listxattr
            );
            let held = self.open_dir(fd)?;
            if open_file && fs::status_flags(held.as_fd())? & libc::O_PATH != 0 {
                return Err(Errno::EBADF.into());
            }
            return Ok((PathArg { bytes: Vec::new(), base: Some((fd, held)) }, follow, true));
        }
        // readlinkat takes an empty name for its descriptor (an O_PATH
        // handle on a symlink), without a flag to say so; never for the cwd.
        let names_descriptor = row.op == Op::Readlink && args.dirfd.is_some_and(|fd| fd >= 0);
        let empty = flags & AT_EMPTY_PATH != 0 || names_descriptor;
        let at = args.first();
        let written = self.read_path(at.addr)?;
        if row.op == Op::Readlink && self.not_a_link(&written, at.dirfd) {
            return Err(Errno::EINVAL.into());
        }
        let arg = match self.by_joined_path(written, at.dirfd, follow) {
            Ok(arg) => arg,
            Err(written) => self.based(written, at.dirfd, false)?,
        };
        Ok((arg, follow, empty))
    }

    /// Whether `readlink` of `written` (from `dirfd`) names an object that
    /// is no symlink, which the surface lets be described: a path with no
    /// `.` or `..` ([`Call::plain_path`]) found by one lookup from the
    /// command's root that crosses no symlink and no magic link and fails
    /// on a symlink as its last component
    /// ([`crate::supervisor::resolve::Resolver::canonical`]). The object is
    /// then the one at that very path, and the call fails with `EINVAL`
    /// without the handle, the `fstat` and the pending check of the full
    /// route (it acts on nothing: a stale notification takes no answer).
    /// glibc's `realpath` asks this of every component of every path it
    /// makes canonical: most of the calls rustc and cc1 make trapped. A
    /// link, a missing name, a refusal or a path in `/dev` (terminals are
    /// decided by who made them) takes the full route.
    fn not_a_link(&mut self, written: &[u8], dirfd: i32) -> bool {
        let Some(plain) = self.plain_path(written, dirfd) else { return false };
        if plain.path.starts_with(b"/dev/") {
            return false;
        }
        let v = self.cx.ground.surface.decide(&plain.path, Access::Stat, &self.cx.ground.procs);
        if !v.allowed {
            return false;
        }
        // The folded path is made only for the trail.
        let (resolver, root) = (&self.cx.ground.resolver, self.cx.ground.command_root());
        let resolved = match self.cx.ground.records {
            true => match resolver.canonical(root, &plain.path) {
                Some(path) => Some(path),
                None => return false,
            },
            false if resolver.is_canonical(root, &plain.path) => None,
            false => return false,
        };
        self.allowed_as_written(written, dirfd, plain.base, resolved.as_deref(), (Access::Stat, v.reason));
        true
    }

    /// The stat family, statfs, access, xattr reads and readlink: the
    /// supervisor reads what the call asks about the object it checked and
    /// writes it into the caller, so a swapped path reveals nothing.
    pub(super) fn metadata(&mut self) -> Result<Answer, Stop> {
        let (row, args) = (self.row, self.args);
        let flags = args.flag_bits();
        // What the call's own arguments must be, before anything is looked up.
        let request = match args.op {
            OpArgs::Access { mode } => {
                let known = (libc::AT_EACCESS | libc::AT_SYMLINK_NOFOLLOW) as u64 | AT_EMPTY_PATH;
                if flags & !known != 0 || mode & !0o7 != 0 {
                    return Err(Errno::EINVAL.into());
                }
                Asked::Access { mode: mode as u32, effective: flags & libc::AT_EACCESS as u64 != 0 }
            }
            OpArgs::Getxattr { name, value, size } => {
                let name = self.read_xattr_name(name)?;
                Asked::Getxattr { name, value, size: size.min(XATTR_SIZE_MAX) as usize }
            }
            OpArgs::GetxattrAt { name, args, size } => {
                let name = self.read_xattr_name(name)?;
                let (value, size) = self.xattr_args(args, size)?;
                Asked::Getxattr { name, value, size: size.min(XATTR_SIZE_MAX) as usize }
            }
            OpArgs::Listxattr { list, size } => Asked::Listxattr { list, size: size.min(XATTR_SIZE_MAX) as usize },
            // The buffer's size before the lookup, as the kernel checks it.
            OpArgs::Readlink { size, .. } if size <= 0 => return Err(Errno::EINVAL.into()),
            _ => Asked::Other,
        };
        if row.op != Op::Statx && row.op != Op::Access {
            // getxattrat and listxattrat take these two only; newfstatat
            // also what statx takes of its flags (`vfs_statx`): it never
            // automounts its last component, and the sync bits are asked
            // of the file system, which the supervisor's own `fstat` does
            // the same for.
            let taken = match row.op {
                Op::Statbuf => (libc::AT_NO_AUTOMOUNT | libc::AT_STATX_SYNC_TYPE) as u64,
                _ => 0,
            };
            if flags & !(AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW | taken) != 0 {
                return Err(Errno::EINVAL.into());
            }
        }
        // The object, and its canonical path unless the caller held it.
        let (fd, stat, path) = match self.held_descriptor()? {
            Some(fd) => {
                let stat = fs::fstat(fd.as_fd())?;
                (fd, Some(stat), None)
            }
            None => {
                // A stat by path is the caller's lookup, made as the caller.
                self.take_identity()?;
                let (arg, follow, empty) = self.target()?;
                // What is recorded or asked about must be the caller's own
                // path: with a trail or approvals it is known to be first
                // (as an answer written into the caller is, without asking
                // again once its kept task was confirmed, where no signal
                // can end the caller's wait; a runtime's callers are asked
                // about every time). Without, only an answer that writes
                // into the caller needs that; an error or access(2)'s
                // answer acts on nothing, and a stale notification takes
                // no answer.
                let recorded = self.cx.ground.records || self.cx.ask.is_some();
                match (recorded, self.cx.ground.signals_interrupt) {
                    (true, false) => self.still_the_caller()?,
                    (true, true) => self.still_valid()?,
                    (false, _) => {}
                }
                let r = match self.joined.take() {
                    Some(r) => Ok(r),
                    None => self.resolve(&arg, follow, empty, 0, false),
                };
                let r = self.check(&arg, r, Access::Stat)?;
                if !recorded && row.op != Op::Access {
                    self.still_the_caller()?;
                }
                match r.target {
                    Target::Exists { fd, stat } => (fd, Some(stat), Some(r.path)),
                    Target::Anonymous { fd } => (fd, None, None),
                    Target::Missing { .. } | Target::Absent => return Err(Errno::ENOENT.into()),
                }
            }
        };
        let pid = self.notif.pid;
        let mode = stat.map_or(0, |s| s.st_mode);
        let is_link = mode & libc::S_IFMT == libc::S_IFLNK;
        match (row.op, args.op, request) {
            (Op::Statbuf, OpArgs::Stat { buf }, _) => {
                let st = match stat {
                    Some(st) => st,
                    None => fs::fstat(fd.as_fd())?,
                };
                mem::write(pid, buf, fs::bytes_of(&st))?;
                Ok(Answer::Value(0))
            }
            (_, OpArgs::Statx { mask, buf }, _) => {
                // Only the sync-type bits of the caller's flags still mean
                // something once the object is resolved.
                let sync = flags as i32 & libc::AT_STATX_SYNC_TYPE;
                let stx = fs::statx_fd(fd.as_fd(), sync, mask)?;
                mem::write(pid, buf, fs::bytes_of(&stx))?;
                Ok(Answer::Value(0))
            }
            (Op::Statfs, OpArgs::Stat { buf }, _) => {
                let st = fs::fstatfs(fd.as_fd())?;
                mem::write(pid, buf, fs::bytes_of(&st))?;
                Ok(Answer::Value(0))
            }
            (_, _, Asked::Access { mode: bits, effective }) => {
                // With AT_EACCESS the worker's ids are the caller's already;
                // without, the kernel checks with the real ids.
                let check = || fs::access_fd(fd.as_fd(), bits);
                if effective { check() } else { identity::with_callers_real_ids(check) }?;
                // And what the sandbox allows: `test -w` on a read-only
                // tree says no, as the write would. Not recorded: a probe
                // is not an attempt (--suggest must not grant what a
                // program only asked about), and learning answers as the
                // kernel does.
                if let Some(path) = path.filter(|_| !self.cx.ground.learn) {
                    let is_dir = mode & libc::S_IFMT == libc::S_IFDIR;
                    let wanted = [
                        (libc::R_OK, Access::Read),
                        (libc::W_OK, Access::Write),
                        // Searching a directory is what every lookup through
                        // it does: allowed wherever its metadata is (the
                        // directories above the surface included).
                        (libc::X_OK, if is_dir { Access::Stat } else { Access::Exec }),
                    ];
                    let refused = wanted.iter().any(|&(bit, access)| {
                        bits & bit as u32 != 0
                            && !self.cx.ground.surface.decide(&path, access, &self.cx.ground.procs).allowed
                    });
                    if refused {
                        return Err(Errno::EACCES.into());
                    }
                }
                Ok(Answer::Value(0))
            }
            (_, _, Asked::Getxattr { name, value, size }) => {
                // The handle is O_PATH, which the xattr calls on descriptors
                // refuse, so the value is read through its /proc name; that
                // would follow a symlink, which then has no value here
                // (Linux allows user.* attributes on none).
                if is_link {
                    return Err(Errno::ENODATA.into());
                }
                let path = super::super::resolve::Resolver::proc_path(fd.as_fd());
                let mut buf = vec![0u8; size];
                let n = fs::getxattr(&path, &name, &mut buf)?;
                if size > 0 {
                    mem::write(pid, value, &buf[..n])?;
                }
                Ok(Answer::Value(n as i64))
            }
            (_, _, Asked::Listxattr { list, size }) => {
                if is_link {
                    return Ok(Answer::Value(0));
                }
                let path = super::super::resolve::Resolver::proc_path(fd.as_fd());
                let mut buf = vec![0u8; size];
                let n = fs::listxattr(&path, &mut buf)?;
                if size > 0 {
                    mem::write(pid, list, &buf[..n])?;
                }
                Ok(Answer::Value(n as i64))
            }
            (_, OpArgs::Readlink { buf: to, size }, _) => {
                if !is_link {
                    return Err(Errno::EINVAL.into());
                }
                if size <= 0 {
                    return Err(Errno::EINVAL.into());
                }
                let mut buf = vec![0u8; mem::PATH_MAX + 1];
                if let Some(text) = path.as_deref().and_then(|p| self.self_link_text(p)) {
                    let n = text.len().min(size as usize);
                    mem::write(pid, to, &text[..n])?;
                    return Ok(Answer::Value(n as i64));
                }
                let proc = path.as_deref().map_or(ProcEntry::NotProc, |p| self.proc_entry(p));
                let n = self.on_behalf(proc, || fs::readlinkat(Dir::Fd(fd.as_fd()), c"", &mut buf))?;
                let n = n.min(size as usize);
                mem::write(pid, to, &buf[..n])?;
                Ok(Answer::Value(n as i64))
            }
            _ => Err(MISDECODED.into()),
        }
    }

    /// For `fstat`, `fstatfs` and an empty path with `AT_EMPTY_PATH`: the
    /// caller's own descriptor, which it holds already and which is
    /// answered from without a check (stdin redirected from a file outside
    /// the surface is the caller's to describe). Not so an `O_PATH`
    /// descriptor, which an open whose path was swapped after its check
    /// may have aimed anywhere, nor the cwd, which a swapped `chdir` may
    /// have: `None` then, and their real location is decided. The
    /// descriptor is taken with `pidfd_getfd`, so its flags and the object
    /// answered about are one and the same open file.
    pub(super) fn held_descriptor(&self) -> Result<Option<OwnedFd>, Stop> {
        let args = self.args;
        if !matches!(self.row.op, Op::Statbuf | Op::Statx | Op::Statfs) {
            return Ok(None);
        }
        let PathAt { dirfd: fd, addr } = args.first();
        let named = args.path.is_none()
            || (args.flag_bits() & AT_EMPTY_PATH != 0 && {
                let mut buf = [0u8; mem::PATH_MAX];
                // Read once: what the kernel would look up is this answer's
                // business only if it is empty now.
                mem::read_path(self.notif.pid, addr, &mut buf)? == 0
            });
        if !named || fd == libc::AT_FDCWD {
            return Ok(None);
        }
        if fd < 0 {
            return Err(Errno::EBADF.into());
        }
        let held = self.caller_fd(fd)?;
        Ok((fs::status_flags(held.as_fd())? & libc::O_PATH == 0).then_some(held))
    }

    /// A `struct xattr_args` (`getxattrat`): where the value goes and its
    /// size. Sizes beyond the known struct must be zeroes, as the kernel's
    /// `copy_struct_from_user` demands.
    pub(super) fn xattr_args(&self, addr: u64, size: u64) -> Result<(u64, u64), Errno> {
        let buf = self.read_extensible(addr, size, 16)?;
        let value = u64::from_ne_bytes(buf[0..8].try_into().expect("8 bytes"));
        let length = u32::from_ne_bytes(buf[8..12].try_into().expect("4 bytes"));
        let flags = u32::from_ne_bytes(buf[12..16].try_into().expect("4 bytes"));
        if flags != 0 {
            return Err(Errno::EINVAL);
        }
        Ok((value, u64::from(length)))
    }

    /// `inotify_add_watch`: decided as a read of the object (a watch
    /// reports the names made and removed in a directory), then added by
    /// the supervisor to the caller's own inotify instance on the object it
    /// checked, with the caller's credentials.
    pub(super) fn watch(&mut self) -> Result<Answer, Stop> {
        let OpArgs::Watch { instance, mask } = self.args.op else { return Err(MISDECODED.into()) };
        let arg = self.path_arg(self.args.first(), false)?;
        let instance = self.caller_fd(instance)?;
        let (fd, _) = self.checked_object(&arg, mask & libc::IN_DONT_FOLLOW == 0, false, Access::Read)?;
        // The handle's /proc name leads to the checked object itself (a
        // symlink too, for IN_DONT_FOLLOW), never beyond it.
        let path = super::super::resolve::Resolver::proc_path(fd.as_fd());
        Ok(Answer::Value(fs::inotify_add_watch(instance.as_fd(), &path, mask & !libc::IN_DONT_FOLLOW)?.into()))
    }

    /// chmod, chown, utime*, setxattr, removexattr: Landlock cannot express
    /// them, so the supervisor performs them on the object it checked.
    pub(super) fn attribute(&mut self) -> Result<Answer, Stop> {
        enum Work {
            Mode(u32),
            Owner(u32, u32),
            Times(Option<[libc::timespec; 2]>),
            SetXattr(std::ffi::CString, Vec<u8>, i32),
            RemoveXattr(std::ffi::CString),
        }
        // The flags first, as the kernel checks them: an unknown bit is
        // EINVAL, never ignored.
        if self.args.flag_bits() & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
            return Err(Errno::EINVAL.into());
        }
        let (arg, follow, empty) = self.target()?;
        let work = match (self.row.op, self.args.op) {
            (_, OpArgs::Chmod { mode }) => Work::Mode(mode & 0o7777),
            (_, OpArgs::Chown { uid, gid }) => Work::Owner(uid, gid),
            (Op::Utime, OpArgs::Times { at }) => Work::Times(self.read_times(at, TimeFormat::Utimbuf)?),
            (Op::Utimes, OpArgs::Times { at }) => Work::Times(self.read_times(at, TimeFormat::Timeval)?),
            (_, OpArgs::Times { at }) => Work::Times(self.read_times(at, TimeFormat::Timespec)?),
            (_, OpArgs::Setxattr { name, value: at, size, flags }) => {
                let name = self.read_xattr_name(name)?;
                let size = size as usize;
                if size > 65536 {
                    return Err(Errno::E2BIG.into());
                }
                let mut value = vec![0u8; size];
                if size > 0 && mem::read(self.notif.pid, at, &mut value)? != size {
                    return Err(Errno::EFAULT.into());
                }
                Work::SetXattr(name, value, flags)
            }
            (_, OpArgs::Removexattr { name }) => Work::RemoveXattr(self.read_xattr_name(name)?),
            _ => return Err(MISDECODED.into()),
        };
        self.still_valid()?;
        let (fd, mode, canonical) = self.checked_object_at(&arg, follow, empty, Access::Write)?;
        let is_link = mode & libc::S_IFMT == libc::S_IFLNK;
        // With a journal, its attributes are kept first, from the handle
        // the change is made through, under the journal's lock.
        let journal = self.journal_for(&canonical);
        let _held = match &journal {
            Some(j) => Some(kept(j, fd.as_fd(), &canonical, false)?),
            None => None,
        };
        let path = super::super::resolve::Resolver::proc_path(fd.as_fd());
        let done = match work {
            // Linux has no mode on symlinks; times and xattrs on a symlink
            // itself are not supported here (the path would follow it).
            Work::Mode(_) | Work::Times(_) if is_link => Err(Errno::EOPNOTSUPP),
            Work::SetXattr(..) | Work::RemoveXattr(_) if is_link => Err(Errno::EPERM),
            Work::Mode(m) => fs::chmod(&path, m),
            Work::Owner(uid, gid) => fs::chown_fd(fd.as_fd(), uid, gid),
            Work::Times(t) => fs::utimens(&path, t.as_ref()),
            Work::SetXattr(name, value, flags) => fs::setxattr(&path, &name, &value, flags),
            Work::RemoveXattr(name) => fs::removexattr(&path, &name),
        };
        done.map(|()| Answer::Value(0)).map_err(Stop::Fail)
    }

    pub(super) fn read_xattr_name(&self, addr: u64) -> Result<std::ffi::CString, Errno> {
        let mut buf = [0u8; mem::PATH_MAX];
        let n = mem::read_path(self.notif.pid, addr, &mut buf)?;
        if n == 0 || n > 255 {
            return Err(Errno::ERANGE);
        }
        std::ffi::CString::new(&buf[..n]).map_err(|_| Errno::EINVAL)
    }

    /// Reads a pair of times in the caller's format; `None` (a NULL pointer)
    /// means "now".
    pub(super) fn read_times(&self, addr: u64, format: TimeFormat) -> Result<Option<[libc::timespec; 2]>, Errno> {
        if addr == 0 {
            return Ok(None);
        }
        let size = if format == TimeFormat::Utimbuf { 16 } else { 32 };
        let mut buf = [0u8; 32];
        if mem::read(self.notif.pid, addr, &mut buf[..size])? != size {
            return Err(Errno::EFAULT);
        }
        let word = |i: usize| i64::from_ne_bytes(buf[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        let ts = |sec: i64, nsec: i64| libc::timespec { tv_sec: sec, tv_nsec: nsec };
        Ok(Some(match format {
            TimeFormat::Utimbuf => [ts(word(0), 0), ts(word(1), 0)],
            TimeFormat::Timeval => {
                if [word(1), word(3)].iter().any(|us| !(0..1_000_000).contains(us)) {
                    return Err(Errno::EINVAL);
                }
                [ts(word(0), word(1) * 1000), ts(word(2), word(3) * 1000)]
            }
            // UTIME_NOW, UTIME_OMIT and range errors are the kernel's to judge.
            TimeFormat::Timespec => [ts(word(0), word(1)), ts(word(2), word(3))],
        }))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TimeFormat {
    /// `struct utimbuf`: two `time_t` seconds.
    Utimbuf,
    /// `struct timeval[2]`.
    Timeval,
    /// `struct timespec[2]`.
    Timespec,
}
