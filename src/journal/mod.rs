//! The undo journal (`interpose run --journal DIR`, `interpose undo DIR`).
//!
//! Before the first change of an object in a journalled tree the
//! supervisor keeps its pre-image once (attributes, a symlink's target,
//! extended attributes, and a regular file's content by reflink or copy);
//! names made, removed and renamed go into the same ordered journal. Every
//! line is hash-chained as the audit trail's are, and the journal ends
//! with the names as the session left them, a seal and an anchor made
//! with the session's key ([`crate::audit::TrailKey`]): an edited,
//! reordered, truncated or re-chained journal is refused by `undo`.
//!
//! The journal is written by the worker that makes the change, under one
//! lock, before the change (a removal or rename: its line first, then a
//! `void` line if the call failed) or right after it (a name made), so the
//! order of the lines is the order of the changes and a change the
//! journal cannot hold is refused. [`Journal`] is the session's side;
//! [`read`] reads one back, [`undo`] puts the trees back.

mod keep;
pub mod read;
pub mod schema;
pub mod seal;
pub mod undo;

use crate::audit::chain::{chained_line, line_hash, CHAIN_START};
use crate::audit::{Bytes, TrailKey};
use crate::policy::{Reason, Surface};
use crate::sys::fs::{self, Dir};
use crate::sys::Errno;
use schema::{Create, Failure, Keep, Kind, Line, ObjectId, Remove, Rename, Seal, Start, Void};
use std::collections::{HashMap, HashSet};
use std::ffi::CStr;
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Mutex;

/// The budget when `--journal-max` is not given.
pub const DEFAULT_BUDGET: u64 = 4 << 30;

/// Space set aside in the journal's directory when it starts, given back
/// when writing fails: the lines that say so, the names as the session
/// left them and the seal still fit on a full disk.
const RESERVE: u64 = 4 << 20;

/// The reserve's name in the journal's directory.
const RESERVE_FILE: &str = ".reserve";

/// Why a journal cannot be started or ended.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// The directory cannot be made or used.
    #[error("--journal {}: {source}", .path.display())]
    Dir {
        /// The directory.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The directory exists and holds something.
    #[error("--journal {}: not empty; a journal is never overwritten: name a new directory", .0.display())]
    NotEmpty(PathBuf),
    /// Writing the journal failed.
    #[error("writing the journal {}: {source}", .path.display())]
    Write {
        /// The journal's directory.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
}

/// Makes the journal's directory `path` (mode 0700) or takes an empty one;
/// returns it canonical.
pub fn make_dir(path: &Path) -> Result<PathBuf, JournalError> {
    use std::os::unix::fs::DirBuilderExt;
    let dir_error = |source| JournalError::Dir { path: path.to_path_buf(), source };
    match std::fs::DirBuilder::new().mode(0o700).create(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let meta = std::fs::symlink_metadata(path).map_err(dir_error)?;
            if !meta.is_dir() {
                return Err(dir_error(std::io::Error::other("exists and is not a directory")));
            }
            if std::fs::read_dir(path).map_err(dir_error)?.next().is_some() {
                return Err(JournalError::NotEmpty(path.to_path_buf()));
            }
        }
        Err(e) => return Err(dir_error(e)),
    }
    std::fs::canonicalize(path).map_err(dir_error)
}

/// What a journal is started with.
pub struct Config {
    /// Its directory, made by [`make_dir`] (canonical).
    pub dir: PathBuf,
    /// The most bytes of content it keeps.
    pub budget: u64,
    /// The command.
    pub command: Vec<Bytes>,
    /// The hash of the audit trail's first line, if the session has one.
    pub trail: Option<String>,
}

/// Which changes are journalled: those the surface allows by the user's own
/// writable entries and grant patterns (flags, the policy file, its
/// workspace). The session's own directories (TMPDIR, HOME, caches) and
/// what built-in profiles grant (an agent's own state) are not.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    rules: Vec<bool>,
    globs: Vec<bool>,
    /// The trees, canonical: the roots `undo` works in.
    pub roots: Vec<PathBuf>,
}

impl Scope {
    /// The scope of `surface`.
    pub fn of(surface: &Surface) -> Scope {
        use crate::policy::{GlobEffect, Mode};
        let rules: Vec<bool> = surface.rules().iter().map(|r| r.mode == Mode::Rw && r.origin.is_user()).collect();
        let globs: Vec<bool> =
            surface.globs().iter().map(|g| g.effect == GlobEffect::Grant && g.origin.is_user()).collect();
        let mut roots: Vec<PathBuf> =
            surface.rules().iter().zip(&rules).filter(|(_, &j)| j).map(|(r, _)| r.path.clone()).collect();
        roots.extend(surface.globs().iter().zip(&globs).filter(|(_, &j)| j).map(|(g, _)| g.base.clone()));
        roots.sort();
        roots.dedup();
        // A root inside another is covered by it.
        let outer: Vec<PathBuf> =
            roots.iter().filter(|r| !roots.iter().any(|o| o != *r && r.starts_with(o))).cloned().collect();
        Scope { rules, globs, roots: outer }
    }

    /// Whether a change the surface decided with `reason` is journalled.
    pub fn covers(&self, reason: Reason) -> bool {
        match reason {
            Reason::Rule(i) => self.rules.get(i as usize).copied().unwrap_or(false),
            Reason::Glob(i) => self.globs.get(i as usize).copied().unwrap_or(false),
            _ => false,
        }
    }
}

/// What the session says when the journal ends.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Change lines.
    pub changes: u64,
    /// Bytes of content kept.
    pub bytes: u64,
    /// Of which shared by reflink.
    pub reflinked: u64,
    /// Objects not restorable, and the first few (path, why).
    pub not_restorable: u64,
    /// The first few.
    pub not_restorable_examples: Vec<(Vec<u8>, String)>,
    /// Why the journal failed, if it did.
    pub failure: Option<String>,
    /// Whether it was sealed (and anchored, with a key).
    pub sealed: bool,
    /// The hash of its last line before the anchor.
    pub head: String,
}

/// What is kept of an object so far.
#[derive(Debug, Clone, Copy)]
struct Kept {
    /// Its content (or it has none to keep).
    content: bool,
}

struct State {
    out: std::fs::File,
    prev: String,
    /// The hash of the first line (the session the key is derived for).
    session: String,
    seq: u64,
    objects: OwnedFd,
    pack: keep::Pack,
    reserve: Option<PathBuf>,
    kept: HashMap<ObjectId, Kept>,
    /// Objects the session made: never kept, and names made inside a
    /// directory it made are not journalled (undo removes it whole).
    born: HashSet<ObjectId>,
    budget: u64,
    summary: Summary,
    ended: bool,
}

/// A session's journal: one per session, shared by the workers.
pub struct Journal {
    dir: PathBuf,
    scope: Scope,
    state: Mutex<State>,
    failed: AtomicBool,
    /// The process to kill when the journal fails.
    stop: AtomicI32,
}

/// Errors that are the journal's own failure (the disk, not the object):
/// the change is refused and the session stopped.
fn fatal(e: Errno) -> bool {
    !matches!(e, Errno::ENOENT | Errno::ESTALE)
}

impl Journal {
    /// Starts the journal in `config.dir` (from [`make_dir`]) for the
    /// changes `scope` covers: its first line, its objects directory and
    /// its reserve.
    pub fn start(config: Config, scope: Scope) -> Result<Journal, JournalError> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        let dir = config.dir;
        let io = |source| JournalError::Write { path: dir.clone(), source };
        std::fs::DirBuilder::new().mode(0o700).create(dir.join(schema::OBJECTS)).map_err(io)?;
        let objects = std::fs::File::open(dir.join(schema::OBJECTS)).map_err(io)?;
        let pack = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(dir.join(schema::OBJECTS).join(schema::PACK))
            .map_err(io)?;
        let reserve = dir.join(RESERVE_FILE);
        let r = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&reserve).map_err(io)?;
        // Allocated, not merely sized: a full disk must still have it.
        nix::fcntl::fallocate(&r, nix::fcntl::FallocateFlags::empty(), 0, RESERVE as i64)
            .map_err(|e| io(std::io::Error::from(e)))?;
        let out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(dir.join(schema::FILE))
            .map_err(io)?;
        let roots = scope.roots.iter().map(|r| Bytes(r.as_os_str().as_bytes().to_vec())).collect();
        let start = Line::JournalStart(Box::new(Start {
            schema: schema::SCHEMA,
            version: env!("CARGO_PKG_VERSION").into(),
            command: config.command,
            roots,
            budget: config.budget,
            trail: config.trail,
            time_ns: crate::audit::now_ns(),
        }));
        let mut state = State {
            out,
            prev: CHAIN_START.into(),
            session: String::new(),
            seq: 0,
            objects: objects.into(),
            pack: keep::Pack { file: pack, len: 0 },
            reserve: Some(reserve),
            kept: HashMap::new(),
            born: HashSet::new(),
            budget: config.budget,
            summary: Summary::default(),
            ended: false,
        };
        write_line(&mut state, &start).map_err(|e| io(e.into()))?;
        state.session = state.prev.clone();
        Ok(Journal { dir, scope, state: Mutex::new(state), failed: AtomicBool::new(false), stop: AtomicI32::new(0) })
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Which changes it journals.
    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// Kill `pid` (SIGKILL) when the journal fails; at once if it has.
    pub fn stop_on_failure(&self, pid: libc::pid_t) {
        self.stop.store(pid, Ordering::SeqCst);
        if self.failed.load(Ordering::SeqCst) {
            let _ = crate::sys::process::kill(pid, libc::SIGKILL);
        }
    }

    /// The journal, for one change; `EIO` once it has failed (every change
    /// is refused from then on).
    pub fn lock(&self) -> Result<Guard<'_>, Errno> {
        let st = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if self.failed.load(Ordering::SeqCst) || st.ended {
            return Err(Errno::EIO);
        }
        Ok(Guard { journal: self, st, dying: Vec::new() })
    }

    /// Why it failed, if it did.
    pub fn failure(&self) -> Option<String> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner).summary.failure.clone()
    }

    fn fail(&self, st: &mut State, why: String) {
        if st.summary.failure.is_some() {
            return;
        }
        self.failed.store(true, Ordering::SeqCst);
        let pid = self.stop.load(Ordering::SeqCst);
        if pid > 0 {
            let _ = crate::sys::process::kill(pid, libc::SIGKILL);
        }
        let _ = writeln!(
            std::io::stderr().lock(),
            "interpose: journal {}: {why}; the change was refused and the command is stopped (what was journalled \
             before can still be undone)",
            self.dir.display()
        );
        st.summary.failure = Some(why.clone());
        // The reserve makes room for what is written from now on.
        if let Some(reserve) = st.reserve.take() {
            let _ = std::fs::remove_file(reserve);
        }
        let _ = write_line(st, &Line::Failure(Failure { why }));
    }

    /// Ends the journal once the command is gone: the names as the session
    /// left them, the seal, the anchor (with `key`).
    pub fn seal(&self, key: Option<&TrailKey>) -> Result<Summary, JournalError> {
        let mut st = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let io = |source| JournalError::Write { path: self.dir.clone(), source };
        if st.ended {
            return Ok(st.summary.clone());
        }
        st.ended = true;
        if let Some(reserve) = st.reserve.take() {
            let _ = std::fs::remove_file(reserve);
        }
        let read = read::read(&self.dir).map_err(|e| io(std::io::Error::other(e.to_string())))?;
        let after = seal::after_states(&read.lines);
        for a in after {
            write_line(&mut st, &Line::After(a)).map_err(|e| io(e.into()))?;
        }
        let seal = Seal {
            changes: st.seq,
            bytes: st.summary.bytes,
            not_restorable: st.summary.not_restorable,
            complete: st.summary.failure.is_none(),
            time_ns: crate::audit::now_ns(),
        };
        write_line(&mut st, &Line::Seal(seal)).map_err(|e| io(e.into()))?;
        st.summary.head = st.prev.clone();
        if let Some(key) = key {
            let anchor = key.anchor(&st.session, &st.prev);
            write_line(&mut st, &Line::Anchor(anchor)).map_err(|e| io(e.into()))?;
        }
        // Not flushed to the disk here: the lines reached the kernel before
        // their changes (a killed interpose loses none), and they and the
        // kept contents are written back as the files they protect are.
        // An fsync would also flush everything else dirty on an ext4 in
        // ordered mode (the workspace's own writes, and other programs'),
        // a cost of seconds that no unchanged file should pay.
        st.summary.changes = st.seq;
        st.summary.sealed = true;
        Ok(st.summary.clone())
    }
}

fn write_line(st: &mut State, line: &Line) -> Result<(), Errno> {
    let mut text = chained_line(line, &st.prev).map_err(|_| Errno::EINVAL)?;
    let hash = line_hash(text.as_bytes());
    text.push('\n');
    // One write: the line reaches the kernel whole before the change.
    st.out.write_all(text.as_bytes()).map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)))?;
    st.prev = hash;
    Ok(())
}

/// The journal held for one change; the lock is released when dropped.
pub struct Guard<'a> {
    journal: &'a Journal,
    st: std::sync::MutexGuard<'a, State>,
    /// The objects the removal or rename under way takes the last name
    /// of: once it is made, their identities are forgotten
    /// ([`Guard::outcome`]).
    dying: Vec<ObjectId>,
}

impl Guard<'_> {
    /// Writes `line`; a failure is the journal's (the session stops).
    fn write(&mut self, line: &Line) -> Result<(), Errno> {
        let written = write_line(&mut self.st, line);
        self.failed_if(written)
    }

    /// `written`, and the journal failed if it is an error.
    fn failed_if(&mut self, written: Result<(), Errno>) -> Result<(), Errno> {
        if let Err(e) = written {
            let why = format!("writing {} failed: {e}", schema::FILE);
            self.journal.fail(&mut self.st, why);
        }
        written
    }

    fn next_seq(&mut self) -> u64 {
        self.st.seq += 1;
        self.st.seq
    }

    /// Whether the session made the object `st` describes.
    pub fn made(&self, st: &libc::stat) -> bool {
        self.st.born.contains(&ObjectId::of(st))
    }

    /// Keeps the pre-image of the object behind `fd` (any handle on it,
    /// `O_PATH` included), at `path`, unless the session made it or it
    /// is kept already; with `content`, a regular file's content too.
    pub fn keep(&mut self, fd: BorrowedFd<'_>, path: &[u8], content: bool) -> Result<(), Errno> {
        let st = fs::fstat(fd)?;
        self.keep_stat(fd, &st, path, content)
    }

    /// [`Guard::keep`] of `name` in `dir`, if anything is there; what is
    /// there.
    pub fn keep_at(
        &mut self,
        dir: BorrowedFd<'_>,
        name: &CStr,
        path: &[u8],
        content: bool,
    ) -> Result<Option<libc::stat>, Errno> {
        let fd = match fs::openat(Dir::Fd(dir), name, libc::O_PATH | libc::O_NOFOLLOW, 0) {
            Ok(fd) => fd,
            Err(Errno::ENOENT) => return Ok(None),
            Err(e) => return Err(e),
        };
        let st = fs::fstat(fd.as_fd())?;
        self.keep_stat(fd.as_fd(), &st, path, content)?;
        Ok(Some(st))
    }

    fn keep_stat(&mut self, fd: BorrowedFd<'_>, st: &libc::stat, path: &[u8], content: bool) -> Result<(), Errno> {
        let id = ObjectId::of(st);
        let kind = Kind::of(st.st_mode);
        let content = content && kind == Kind::File;
        if self.st.born.contains(&id) {
            return Ok(());
        }
        match self.st.kept.get(&id) {
            Some(k) if k.content || !content => return Ok(()),
            _ => {}
        }
        let seq = self.next_seq();
        let room = self.st.budget.saturating_sub(self.st.summary.bytes);
        let state = &mut *self.st;
        let captured = keep::capture(fd, st, content, state.objects.as_fd(), &mut state.pack, seq, room, state.budget);
        let captured = match captured {
            Ok(c) => c,
            Err(e) if fatal(e) => {
                let why = format!("keeping the content of {} failed: {e}", String::from_utf8_lossy(path));
                self.journal.fail(&mut self.st, why);
                return Err(e);
            }
            Err(e) => return Err(e),
        };
        let summary = &mut self.st.summary;
        summary.bytes += captured.bytes;
        if captured.reflink {
            summary.reflinked += captured.bytes;
        }
        if let Some(why) = &captured.not_restorable {
            summary.not_restorable += 1;
            if summary.not_restorable_examples.len() < 5 {
                summary.not_restorable_examples.push((path.to_vec(), why.clone()));
            }
        }
        let line = Line::Keep(Box::new(Keep {
            seq,
            object: id,
            path: Bytes(path.to_vec()),
            kind,
            meta: schema::Meta::of(st),
            target: captured.target,
            xattrs: captured.xattrs,
            content: captured.blob,
            packed: captured.packed,
            reflink: captured.reflink,
            not_restorable: captured.not_restorable,
        }));
        self.write(&line)?;
        self.st.kept.insert(id, Kept { content: content || captured.tried_content });
        Ok(())
    }

    /// After a name `name` was made in `dir` (at `path`): journals it,
    /// unless `dir` is itself one the session made; the object counts as
    /// the session's from now on.
    pub fn made_at(&mut self, dir: BorrowedFd<'_>, name: &CStr, path: &[u8]) -> Result<(), Errno> {
        let st = fs::fstatat(Dir::Fd(dir), name, libc::AT_SYMLINK_NOFOLLOW)?;
        let parent = fs::fstat(dir)?;
        let id = ObjectId::of(&st);
        let inside_made = self.made(&parent);
        if !inside_made {
            let seq = self.next_seq();
            let line = Line::Create(Create { seq, path: Bytes(path.to_vec()), kind: Kind::of(st.st_mode), object: id });
            self.write(&line)?;
        }
        // A new link of an object the session did not make leaves it the
        // user's: it is kept when changed, whatever name it is reached by.
        if !self.st.kept.contains_key(&id) && (st.st_nlink <= 1 || st.st_mode & libc::S_IFMT == libc::S_IFDIR) {
            self.st.born.insert(id);
        }
        Ok(())
    }

    /// Journals a removal of `name` in `dir` (at `path`) before it is made;
    /// its change number, for [`Guard::outcome`]. `None`: nothing to
    /// journal (the object and its directory were both made by the
    /// session, or the name is gone).
    pub fn removing(
        &mut self,
        dir: BorrowedFd<'_>,
        name: &CStr,
        path: &[u8],
        dir_path: &[u8],
    ) -> Result<Option<u64>, Errno> {
        self.dying.clear();
        let parent = fs::fstat(dir)?;
        let Some(st) = fs::fstatat(Dir::Fd(dir), name, libc::AT_SYMLINK_NOFOLLOW).ok() else { return Ok(None) };
        if last_name(&st) {
            self.dying.push(ObjectId::of(&st));
        }
        if self.made(&parent) && self.made(&st) {
            return Ok(None);
        }
        self.keep(dir, dir_path, false)?;
        // Its content goes with its last name.
        let st = match self.keep_at(dir, name, path, st.st_nlink <= 1)? {
            Some(st) => st,
            None => return Ok(None),
        };
        let seq = self.next_seq();
        let line = Line::Remove(Remove {
            seq,
            path: Bytes(path.to_vec()),
            kind: Kind::of(st.st_mode),
            object: ObjectId::of(&st),
            nlink: st.st_nlink,
        });
        self.write(&line)?;
        Ok(Some(seq))
    }

    /// Journals a rename before it is made: `from` (`inside`: in the
    /// journalled trees; else moved in from outside them) to `to`; its
    /// change number, for [`Guard::outcome`], or `None` when there is
    /// nothing to journal (everything involved was made by the session,
    /// or the rename changes nothing).
    pub fn renaming(
        &mut self,
        from: Side<'_>,
        inside: bool,
        to: Side<'_>,
        exchange: bool,
    ) -> Result<Option<u64>, Errno> {
        self.dying.clear();
        let moved = fs::fstatat(Dir::Fd(from.dir), from.name, libc::AT_SYMLINK_NOFOLLOW)?;
        let victim = fs::fstatat(Dir::Fd(to.dir), to.name, libc::AT_SYMLINK_NOFOLLOW).ok();
        // Two names of one file: the kernel's rename does nothing at all
        // (undo would remove a name that was there before).
        if victim.as_ref().is_some_and(|v| ObjectId::of(v) == ObjectId::of(&moved)) {
            return Ok(None);
        }
        if !inside {
            return self.moving_in(to, victim);
        }
        if let Some(v) = victim.as_ref().filter(|v| !exchange && last_name(v)) {
            self.dying.push(ObjectId::of(v));
        }
        let (from_dir, to_dir) = (fs::fstat(from.dir)?, fs::fstat(to.dir)?);
        let all_made = self.made(&from_dir)
            && self.made(&to_dir)
            && self.made(&moved)
            && victim.as_ref().is_none_or(|v| self.made(v));
        if all_made {
            return Ok(None);
        }
        self.keep(from.dir, from.dir_path, false)?;
        self.keep(to.dir, to.dir_path, false)?;
        if exchange {
            // Both objects keep their content; their names swap.
        } else if let Some(v) = &victim {
            self.keep_at(to.dir, to.name, to.path, v.st_nlink <= 1)?;
        }
        let seq = self.next_seq();
        let line = Line::Rename(Rename {
            seq,
            from: Some(Bytes(from.path.to_vec())),
            to: Bytes(to.path.to_vec()),
            exchange,
            object: ObjectId::of(&moved),
            kind: Kind::of(moved.st_mode),
            victim: victim.filter(|_| !exchange).map(|v| schema::Victim {
                object: ObjectId::of(&v),
                kind: Kind::of(v.st_mode),
                nlink: v.st_nlink,
            }),
        });
        self.write(&line)?;
        Ok(Some(seq))
    }

    /// A rename into the journalled trees from outside them: the name it
    /// takes is removed by undo, what it replaces is put back.
    fn moving_in(&mut self, to: Side<'_>, victim: Option<libc::stat>) -> Result<Option<u64>, Errno> {
        if let Some(v) = victim.as_ref().filter(|v| last_name(v)) {
            self.dying.push(ObjectId::of(v));
        }
        self.keep(to.dir, to.dir_path, false)?;
        if let Some(v) = &victim {
            self.keep_at(to.dir, to.name, to.path, v.st_nlink <= 1)?;
        }
        let seq = self.next_seq();
        // The object's identity is read once the rename is made.
        let line = Line::Rename(Rename {
            seq,
            from: None,
            to: Bytes(to.path.to_vec()),
            exchange: false,
            object: ObjectId { dev: 0, ino: 0 },
            kind: Kind::File,
            victim: victim.map(|v| schema::Victim {
                object: ObjectId::of(&v),
                kind: Kind::of(v.st_mode),
                nlink: v.st_nlink,
            }),
        });
        self.write(&line)?;
        Ok(Some(seq))
    }

    /// After a removal or rename ([`Guard::removing`], [`Guard::renaming`]):
    /// if the call failed, says that nothing changed (a `void` line); if it
    /// was made, forgets the objects it took the last name of. Their inode
    /// numbers are free to be given to new objects from now on (file
    /// systems such as ext4 do so at once), and a new object must not pass
    /// for the old one: as one the session made it is never kept, and as
    /// one kept already it would be thought made by the session.
    pub fn outcome(&mut self, seq: Option<u64>, result: Result<(), Errno>) -> Result<(), Errno> {
        let dying = std::mem::take(&mut self.dying);
        if result.is_ok() {
            for id in dying {
                self.st.kept.remove(&id);
                self.st.born.remove(&id);
            }
        }
        match (seq, result) {
            (Some(entry), Err(errno)) => {
                // Written even after a failure: the reserve made room.
                let written =
                    write_line(&mut self.st, &Line::Void(Void { entry, errno: crate::audit::ErrnoName(errno) }));
                self.failed_if(written)
            }
            _ => Ok(()),
        }
    }

    /// After a rename in from outside: what now has the name is the
    /// session's (removed whole by undo).
    pub fn moved_in(&mut self, dir: BorrowedFd<'_>, name: &CStr) -> Result<(), Errno> {
        let st = fs::fstatat(Dir::Fd(dir), name, libc::AT_SYMLINK_NOFOLLOW)?;
        self.st.born.insert(ObjectId::of(&st));
        Ok(())
    }
}

/// Whether removing a name of the object `st` describes removes the object
/// ([`schema::last_name`]).
fn last_name(st: &libc::stat) -> bool {
    schema::last_name(Kind::of(st.st_mode), st.st_nlink)
}

/// One side of a rename: the pinned directory, its canonical path, the
/// name, and the entry's canonical path.
#[derive(Clone, Copy)]
pub struct Side<'a> {
    /// The directory.
    pub dir: BorrowedFd<'a>,
    /// Its canonical path.
    pub dir_path: &'a [u8],
    /// The name in it.
    pub name: &'a CStr,
    /// The entry's canonical path.
    pub path: &'a [u8],
}
