//! Exec: decided on the resolved program, then made by the kernel (the
//! caller's memory is replaced by it), under the backstop or verified before
//! the new image runs; the argv of an allowed one for the trail.

use super::*;

impl Call<'_> {
    /// `execve`, `execveat`.
    pub(super) fn exec(&mut self) -> Result<Answer, Stop> {
        let OpArgs::Exec { argv } = self.args.op else { return Err(MISDECODED.into()) };
        let flags = self.args.flag_bits();
        let at = self.args.first();
        let written = self.read_path(at.addr)?;
        // A plain path with no symlink on the way (or missing before one:
        // execvp tries every directory of PATH), which the surface lets run
        // under a rule the backstop grants exactly, is continued as
        // written, as an open is: the kernel looks it up again as the
        // caller, fails a missing one as natively (ENOENT, or EACCES where
        // the caller may not search) and execs only what Landlock's
        // EXECUTE right allows, wherever a path swapped in leads (the full
        // route below ends in the same CONTINUE after its own lookup). It
        // acts on nothing before, so it takes no credentials. Through a
        // symlink the full route looks it up: a target outside the surface
        // is refused with its name (a start that fails says which `--ro`
        // would let it run).
        if let Some(cover) = Cover::backstop(self.cx.ground.backstop, Access::Exec) {
            if self.continues_as_written(&written, at.dirfd, (Access::Exec, Some(Access::Exec), true)) {
                return Ok(self.allowed_exec(argv, Answer::Continue(cover)));
            }
        }
        self.take_identity()?;
        let arg = self.based(written, at.dirfd, false)?;
        self.still_valid()?;
        let empty = flags & AT_EMPTY_PATH != 0;
        let follow = flags & AT_SYMLINK_NOFOLLOW == 0;
        let r = self.resolve(&arg, follow, empty, 0, false);
        let r = self.check(&arg, r, Access::Exec)?;
        match r.target {
            // Allowed by a grant pattern only, in a place the kernel
            // does not let programs run from (made after the start):
            // the kernel would refuse the exec the trail calls
            // allowed, so it is refused here, in words.
            Target::Exists { .. }
                if matches!(self.decided_by, Some(Reason::Glob(_))) && !self.cx.ground.backstop_runs(&r.path) =>
            {
                if let Some(c) = self.checks.last_mut() {
                    c.decision = Verdict::Deny;
                    c.errno = Some(Errno::EACCES);
                    c.reason = Why::Note(BACKSTOP_EXEC, RuleKind::Failure);
                    c.resolved = Some(r.path.clone());
                }
                Err(Errno::EACCES.into())
            }
            // The caller's memory is replaced by the exec, so only the
            // kernel can make it: with the backstop, whatever it finally
            // executes (a path swapped in, a script's interpreter, the ELF
            // interpreter) is one the surface lets run; without, the new
            // image is checked before it runs an instruction.
            Target::Exists { .. } => {
                let answer = match Cover::backstop(self.cx.ground.backstop, Access::Exec) {
                    Some(cover) => Answer::Continue(cover),
                    None if self.cx.ground.learn => Answer::Continue(Cover::learning()),
                    None => Answer::VerifiedExec(super::super::exec::Verify { tid: self.notif.pid }),
                };
                Ok(self.allowed_exec(argv, answer))
            }
            Target::Missing { .. } | Target::Absent => Err(Errno::ENOENT.into()),
            Target::Anonymous { .. } => Err(Errno::EACCES.into()),
        }
    }

    /// An exec allowed, to be made as `answer` says: every identity kept
    /// goes stale with it (the kernel computes the new program's
    /// credentials), and a trail records its arguments.
    fn allowed_exec(&mut self, argv: u64, answer: Answer) -> Answer {
        self.execs = true;
        if self.cx.ground.records {
            self.argv = Some(self.read_argv(argv));
        }
        answer
    }

    /// Reads up to [`ARGV_MAX`] arguments of an exec, each cut at
    /// [`ARG_MAX_LEN`] bytes; the flag says whether anything was left out.
    /// Best effort: an unreadable vector gives what was read so far.
    pub(super) fn read_argv(&self, addr: u64) -> (Vec<Vec<u8>>, bool) {
        let mut argv = Vec::new();
        let mut truncated = false;
        let mut buf = [0u8; mem::PATH_MAX];
        for i in 0..=ARGV_MAX {
            let mut ptr = [0u8; 8];
            if addr == 0 || mem::read(self.notif.pid, addr + 8 * i as u64, &mut ptr) != Ok(8) {
                break;
            }
            let p = u64::from_ne_bytes(ptr);
            if p == 0 {
                break;
            }
            if i == ARGV_MAX {
                truncated = true;
                break;
            }
            match mem::read_path(self.notif.pid, p, &mut buf) {
                Ok(n) => {
                    truncated |= n > ARG_MAX_LEN;
                    argv.push(buf[..n.min(ARG_MAX_LEN)].to_vec());
                }
                Err(Errno::ENAMETOOLONG) => {
                    truncated = true;
                    argv.push(buf[..ARG_MAX_LEN].to_vec());
                }
                Err(_) => break,
            }
        }
        (argv, truncated)
    }
}
