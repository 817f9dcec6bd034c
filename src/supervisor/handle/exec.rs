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
    /// Best effort: an unreadable vector gives what was read so far. Two
    /// reads of the caller's memory where most vectors are concerned (the
    /// pointers, then the strings: a compiler's hundred arguments were two
    /// hundred reads).
    pub(super) fn read_argv(&self, addr: u64) -> (Vec<Vec<u8>>, bool) {
        let mut words = [0u8; 8 * (ARGV_MAX + 1)];
        let n = if addr == 0 { 0 } else { mem::read(self.notif.pid, addr, &mut words).unwrap_or(0) };
        let pointers: Vec<u64> = words[..n - n % 8]
            .chunks_exact(8)
            .map(|w| u64::from_ne_bytes(w.try_into().unwrap_or_default()))
            .take_while(|&p| p != 0)
            .collect();
        // More pointers than are kept, none of them the end.
        let mut truncated = pointers.len() > ARGV_MAX;
        let strings = mem::read_strings(self.notif.pid, &pointers[..pointers.len().min(ARGV_MAX)], ARG_MAX_LEN);
        let argv = strings
            .into_iter()
            .map(|s| {
                truncated |= s.is_err();
                s.unwrap_or_else(|cut| cut)
            })
            .collect();
        (argv, truncated)
    }
}
