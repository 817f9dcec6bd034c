//! `interpose undo DIR`: every journalled tree put back as it was when the
//! session started.
//!
//! The journal is checked first (its chain, its seal, its anchor with the
//! key), then the names as the session left them are compared with what
//! is there now: anything changed since is named and nothing is done
//! (`--force` goes on). Then the changes are undone in reverse order, each
//! on the names as they were right after it: a rename moved back, a name
//! made removed (a directory whole), a name removed put back (as a link to
//! the object it named when that object lives on under another name, else
//! a new object that its pre-image fills), and each pre-image put back
//! where its object then was (content, mode, owner, extended attributes,
//! times). An object is told apart by its device and inode and by which
//! life of that identity it is ([`Lives`]): the file system gives a freed
//! inode number to the next object it makes. Directories get their times once more at the end,
//! since putting back their entries changed them. Names are looked up
//! without following any symlink, so nothing planted in the trees leads
//! `undo` outside them.

use super::keep::{copy, open_nofollow, size};
use super::read::{self, ReadError, Tampered};
use super::schema::{self, last_name, timespec, Keep, Kind, Line, ObjectId, Rename};
use super::seal;
use crate::audit::{Bytes, TrailKey};
use crate::sys::fs::{self, Dir};
use crate::sys::Errno;
use std::collections::{HashMap, HashSet};
use std::ffi::CString;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

/// How `undo` goes about it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Go on over names changed after the session, a journal the session
    /// could not seal, or one undone already.
    pub force: bool,
    /// Say what would be done, do nothing.
    pub dry_run: bool,
}

/// Why `undo` did nothing.
#[derive(Debug, thiserror::Error)]
pub enum UndoError {
    /// The journal cannot be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The journal is not what the session wrote.
    #[error("refusing to undo {}: {why}", .dir.display())]
    Tampered {
        /// The journal.
        dir: PathBuf,
        /// What is wrong.
        why: Tampered,
    },
    /// Names changed after the session.
    #[error(
        "{} name(s) changed after the session, which undo would overwrite or remove; nothing was done \
         (--force puts the trees back anyway):\n{}",
        .0.len(),
        .0.iter().map(|(p, why)| format!("  {p}: {why}")).collect::<Vec<_>>().join("\n")
    )]
    Changed(Vec<(String, &'static str)>),
    /// Undone already.
    #[error("{} was undone already ({}); --force undoes it again", .0.display(), .1)]
    Undone(PathBuf, String),
}

/// What `undo` did.
#[derive(Debug, Default)]
pub struct Report {
    /// One line per change undone.
    pub actions: Vec<String>,
    /// What could not be undone, and why.
    pub problems: Vec<String>,
    /// Objects the session recorded as not restorable.
    pub not_restorable: Vec<String>,
    /// Names changed after the session that `--force` went over.
    pub overridden: Vec<String>,
    /// The journal was not sealed (undone with `--force`).
    pub unsealed: Option<String>,
    /// Why the session was stopped, when its journal could not be written
    /// (what it journalled before is undone).
    pub stopped: Option<String>,
}

impl Report {
    /// Whether the trees are back exactly.
    pub fn complete(&self) -> bool {
        self.problems.is_empty() && self.not_restorable.is_empty() && self.unsealed.is_none()
    }
}

fn text(p: &[u8]) -> String {
    crate::forensics::sanitize(&String::from_utf8_lossy(p))
}

/// Reads, checks and undoes the journal in `dir`; `say` is told each
/// change as it is undone (or would be, with `dry_run`).
pub fn undo(
    dir: &Path,
    key: Option<&TrailKey>,
    options: Options,
    say: &mut dyn FnMut(&str),
) -> Result<Report, UndoError> {
    let journal = read::read(dir)?;
    let mut report = Report::default();
    if let Ok(done) = std::fs::read_to_string(dir.join(schema::UNDONE)) {
        if !options.force {
            return Err(UndoError::Undone(dir.to_path_buf(), done.trim().to_string()));
        }
    }
    match journal.verify(key) {
        Ok(()) => {}
        Err(why @ Tampered::Unsealed(_)) if options.force && journal.chain_intact().is_ok() => {
            report.unsealed = Some(why.to_string());
        }
        Err(why) => return Err(UndoError::Tampered { dir: dir.to_path_buf(), why }),
    }
    report.stopped = journal.failure.clone();
    let changed = changed_since(&journal);
    if !changed.is_empty() {
        if !options.force {
            return Err(UndoError::Changed(changed));
        }
        report.overridden = changed.into_iter().map(|(p, why)| format!("{p}: {why}")).collect();
    }
    let void = seal::voided(&journal.lines);
    let lines: Vec<&Line> = journal.lines.iter().filter(|l| l.seq().is_some_and(|s| !void.contains(&s))).collect();
    let lives = Lives::of(&lines);
    let mut undoer = Undoer::new(&journal, &lines, &lives, options.dry_run, say);
    for (line, at) in lines.iter().zip(&lives.at).rev() {
        match line {
            Line::Keep(k) => undoer.restore(k, at.object),
            Line::Create(c) => undoer.unmake(&c.path.0),
            Line::Remove(r) => undoer.remake(&r.path.0, at.object, r.kind, r.nlink),
            Line::Rename(r) => undoer.unrename(r, at.victim),
            _ => {}
        }
    }
    undoer.finish();
    let Undoer { report: done, .. } = undoer;
    report.actions = done.actions;
    report.problems = done.problems;
    report.not_restorable = done.not_restorable;
    if !options.dry_run {
        let note = format!(
            "{{\"time_ns\":{},\"complete\":{}}}\n",
            crate::audit::now_ns(),
            report.problems.is_empty() && report.not_restorable.is_empty()
        );
        if let Err(e) = std::fs::write(dir.join(schema::UNDONE), note) {
            report.problems.push(format!("marking the journal undone: {e}"));
        }
    }
    Ok(report)
}

/// The names that differ from what the session left (path, how).
fn changed_since(journal: &read::Journal) -> Vec<(String, &'static str)> {
    let mut changed = Vec::new();
    let recorded: HashSet<&[u8]> = journal.after.iter().map(|a| a.path.0.as_slice()).collect();
    for after in &journal.after {
        let now = seal::stat_of(&after.path.0);
        if let Some(why) = seal::differs(after.stat.as_ref(), now.as_ref()) {
            changed.push((text(&after.path.0), why));
        }
        // Undo removes a tree the session made whole: nothing may have
        // been added to it since.
        if after.made && now.as_ref().is_some_and(|s| s.kind == Kind::Dir) {
            seal::walk(&after.path.0, &mut |p, _| {
                if !recorded.contains(p) {
                    changed.push((text(p), "made after the session"));
                }
            });
        }
    }
    changed
}

/// One object, as undo tells objects apart: its identity while the
/// session ran, and which life of that identity. A file system gives the
/// inode number of an object gone to the next object it makes (ext4 does
/// at once: `git` removes a file and the lock file it makes next has its
/// number), so within one session a device and inode can name several
/// objects one after the other. Each journalled removal of an object's
/// last name (a file's last link, or a directory) ends a life; the session
/// forgets the identity then too ([`super::Guard::outcome`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Life {
    object: ObjectId,
    n: u32,
}

/// The objects of one change line: the one it names (the object moved, for
/// a rename) and what a rename put its name over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct At {
    object: Life,
    victim: Option<Life>,
}

/// The lives of the objects the change lines name, played forward.
#[derive(Debug, Default)]
struct Lives {
    /// One per change line, in order.
    at: Vec<At>,
    /// Each identity's last life: the object that has it when the session
    /// ends, if any has.
    last: HashMap<ObjectId, u32>,
}

impl Lives {
    /// The lives of `lines`, the change lines of a journal that happened
    /// (no voided ones), in order.
    fn of(lines: &[&Line]) -> Lives {
        let mut lives = Lives::default();
        for line in lines {
            let (object, victim) = match line {
                Line::Keep(k) => (k.object, None),
                Line::Create(c) => (c.object, None),
                Line::Remove(r) => (r.object, None),
                Line::Rename(r) => (r.object, r.victim.as_ref()),
                _ => (ObjectId { dev: 0, ino: 0 }, None),
            };
            lives.at.push(At { object: lives.life(object), victim: victim.map(|v| lives.life(v.object)) });
            match line {
                Line::Remove(r) if last_name(r.kind, r.nlink) => lives.end(r.object),
                Line::Rename(Rename { victim: Some(v), exchange: false, .. }) if last_name(v.kind, v.nlink) => {
                    lives.end(v.object)
                }
                _ => {}
            }
        }
        lives
    }

    /// The life `object` has now.
    fn life(&self, object: ObjectId) -> Life {
        Life { object, n: self.last.get(&object).copied().unwrap_or(0) }
    }

    /// The object with this identity is gone: the next one to have it is
    /// another.
    fn end(&mut self, object: ObjectId) {
        *self.last.entry(object).or_default() += 1;
    }

    /// Whether `life` is its identity's last: the object (if one was
    /// there before the session) is there when the session ends.
    fn is_last(&self, life: Life) -> bool {
        self.life(life.object) == life
    }
}

/// The journal undone, change by change.
struct Undoer<'a> {
    dry_run: bool,
    say: &'a mut dyn FnMut(&str),
    lives: &'a Lives,
    /// Every pre-image of each object (a symlink's target is taken from
    /// one when it is made again). An object with one was there before the
    /// session; the session keeps none of those it makes.
    keeps: HashMap<Life, Vec<&'a Keep>>,
    /// Objects a removal left alive under another name: where they are is
    /// kept as a handle once known, to link their names back to.
    linked: HashSet<Life>,
    handles: HashMap<Life, OwnedFd>,
    /// Where the linked objects that were there before the session and are
    /// there when it ends live on (found by walking the trees once).
    found: Option<HashMap<Life, OwnedFd>>,
    roots: Vec<Vec<u8>>,
    objects: PathBuf,
    /// Directories whose times were put back, to put back again at the end.
    dirs: Vec<(OwnedFd, [i64; 2], [i64; 2])>,
    report: Report,
}

impl<'a> Undoer<'a> {
    fn new(
        journal: &'a read::Journal,
        lines: &[&'a Line],
        lives: &'a Lives,
        dry_run: bool,
        say: &'a mut dyn FnMut(&str),
    ) -> Self {
        let mut keeps: HashMap<Life, Vec<&Keep>> = HashMap::new();
        let mut linked = HashSet::new();
        for (line, at) in lines.iter().zip(&lives.at) {
            match line {
                Line::Keep(k) => keeps.entry(at.object).or_default().push(k),
                Line::Remove(r) if !last_name(r.kind, r.nlink) => {
                    linked.insert(at.object);
                }
                Line::Rename(Rename { victim: Some(v), exchange: false, .. }) if !last_name(v.kind, v.nlink) => {
                    linked.extend(at.victim);
                }
                _ => {}
            }
        }
        Undoer {
            dry_run,
            say,
            lives,
            keeps,
            linked,
            handles: HashMap::new(),
            found: None,
            roots: journal.start.roots.iter().map(|r| r.0.clone()).collect(),
            objects: journal.dir.clone(),
            dirs: Vec::new(),
            report: Report::default(),
        }
    }

    fn did(&mut self, what: String) {
        (self.say)(&what);
        self.report.actions.push(what);
    }

    fn problem(&mut self, what: String) {
        self.report.problems.push(what);
    }

    /// A pre-image put back on the object now at its path.
    fn restore(&mut self, k: &Keep, life: Life) {
        let path = text(&k.path.0);
        if let Some(why) = &k.not_restorable {
            self.report.not_restorable.push(format!("{path}: {why}"));
            return;
        }
        if self.dry_run {
            let what = if k.content.is_some() || k.packed.is_some() { "content and attributes" } else { "attributes" };
            return self.did(format!("would restore {path} ({what})"));
        }
        let fd = match open_nofollow(&k.path.0, libc::O_PATH) {
            Ok(fd) => fd,
            Err(e) => return self.problem(format!("{path}: not restored: {e} (it should be there now)")),
        };
        let Ok(st) = fs::fstat(fd.as_fd()) else { return };
        if Kind::of(st.st_mode) != k.kind {
            return self.problem(format!(
                "{path}: not restored: a {} is there, the journal kept a {}",
                Kind::of(st.st_mode).name(),
                k.kind.name()
            ));
        }
        let mut what = "attributes";
        if k.content.is_some() || k.packed.is_some() {
            if let Err(e) = self.put_content(fd.as_fd(), k) {
                return self.problem(format!("{path}: its content could not be put back: {e}"));
            }
            what = "content and attributes";
        }
        if let Err(e) = put_meta(fd.as_fd(), k) {
            self.problem(format!("{path}: its attributes could not all be put back: {e}"));
        }
        if k.kind == Kind::Dir {
            if let Ok(again) = fd.try_clone() {
                self.dirs.push((again, k.meta.atime, k.meta.mtime));
            }
        }
        if self.linked.contains(&life) && !self.handles.contains_key(&life) {
            self.handles.insert(life, fd);
        }
        self.did(format!("restored {path} ({what})"));
    }

    fn put_content(&self, fd: BorrowedFd<'_>, k: &Keep) -> Result<(), Errno> {
        let proc = proc_path(fd);
        let flags = libc::O_WRONLY | libc::O_TRUNC | libc::O_NOCTTY | libc::O_NONBLOCK;
        let dst = match fs::openat(Dir::Cwd, &proc, flags, 0) {
            // A file the session made read-only: its mode is put back after.
            Err(Errno::EACCES) => {
                fs::chmod(&proc, 0o600)?;
                fs::openat(Dir::Cwd, &proc, flags, 0)?
            }
            other => other?,
        };
        let blob = match (&k.content, k.packed) {
            (Some(blob), _) => blob.clone(),
            (None, Some(_)) => format!("{}/{}", schema::OBJECTS, schema::PACK),
            (None, None) => return Ok(()),
        };
        let kept =
            CString::new(self.objects.join(blob).into_os_string().into_encoded_bytes()).map_err(|_| Errno::EINVAL)?;
        let src = fs::openat(Dir::Cwd, &kept, libc::O_RDONLY | libc::O_NOFOLLOW, 0)?;
        let Some([at, len]) = k.packed.filter(|_| k.content.is_none()) else {
            return copy(src.as_fd(), dst.as_fd()).map(drop);
        };
        use std::os::unix::fs::FileExt;
        let mut buf = vec![0u8; len as usize];
        let pack = std::fs::File::from(src);
        pack.read_exact_at(&mut buf, at).map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)))?;
        let mut done = 0;
        while done < buf.len() {
            done += nix::unistd::write(dst.as_fd(), &buf[done..])?;
        }
        Ok(())
    }

    /// A name the session made, removed (a directory with everything in
    /// it).
    fn unmake(&mut self, path: &[u8]) {
        let shown = text(path);
        let Some(st) = lstat(path) else { return };
        if self.dry_run {
            return self.did(format!("would remove {shown}"));
        }
        let result = parent_of(path).and_then(|(dir, name)| {
            if st.st_mode & libc::S_IFMT == libc::S_IFDIR {
                remove_tree(dir.as_fd(), &name, st.st_dev)
            } else {
                fs::unlinkat(dir.as_fd(), &name, 0)
            }
        });
        match result {
            Ok(()) => self.did(format!("removed {shown} (made by the session)")),
            Err(e) => self.problem(format!("{shown}: made by the session, not removed: {e}")),
        }
    }

    /// A name the session removed, put back: a link to its object where
    /// it lives on under another name, else a new object of its kind (its
    /// content and attributes follow from its pre-image).
    fn remake(&mut self, path: &[u8], life: Life, kind: Kind, nlink: u64) {
        let shown = text(path);
        if self.dry_run {
            return self.did(format!("would put back {shown}"));
        }
        if lstat(path).is_some() {
            return self.problem(format!("{shown}: not put back: something is there"));
        }
        let (dir, name) = match parent_of(path) {
            Ok(p) => p,
            Err(e) => return self.problem(format!("{shown}: not put back: {e}")),
        };
        if !last_name(kind, nlink) {
            if let Some(h) = self.living(life) {
                return match fs::link_handle(h.as_fd(), dir.as_fd(), &name) {
                    Ok(()) => self.did(format!("put back {shown} (a link, as it was)")),
                    Err(e) => self.problem(format!("{shown}: its link could not be made again: {e}")),
                };
            }
            // Where the session made it, its names all go again: any file
            // stands in until then. One that was there before lived on
            // where undo does not look, and its content was not kept.
            if self.keeps.contains_key(&life) {
                self.problem(format!(
                    "{shown}: put back empty: it lived on under another name, which is not in the journalled \
                     trees, and its content was not kept"
                ));
            }
        }
        let made = match kind {
            Kind::File => fs::openat(
                Dir::Fd(dir.as_fd()),
                &name,
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW,
                0o600,
            )
            .map(drop),
            Kind::Dir => fs::mkdirat(dir.as_fd(), &name, 0o700),
            Kind::Fifo => fs::mknodat(dir.as_fd(), &name, libc::S_IFIFO | 0o600, 0),
            Kind::Symlink => {
                let target = self.keeps.get(&life).and_then(|ks| ks.iter().find_map(|k| k.target.clone()));
                match target.and_then(|t| CString::new(t.0).ok()) {
                    Some(t) => fs::symlinkat(&t, dir.as_fd(), &name),
                    // Made by the session: any target stands in until the
                    // name goes again.
                    None => fs::symlinkat(c".", dir.as_fd(), &name),
                }
            }
            Kind::Socket | Kind::CharDevice | Kind::BlockDevice => {
                return self.report.not_restorable.push(format!("{shown}: a {} is not made again", kind.name()));
            }
        };
        if let Err(e) = made {
            return self.problem(format!("{shown}: not put back: {e}"));
        }
        if self.linked.contains(&life) {
            if let Ok(h) = fs::openat(Dir::Fd(dir.as_fd()), &name, libc::O_PATH | libc::O_NOFOLLOW, 0) {
                self.handles.insert(life, h);
            }
        }
        self.did(format!("put back {shown}"));
    }

    /// A rename undone: the name moved back, what it replaced put back.
    fn unrename(&mut self, r: &Rename, victim: Option<Life>) {
        let to = text(&r.to.0);
        match &r.from {
            None => self.unmake(&r.to.0),
            Some(from) if self.dry_run => self.did(format!("would move {to} back to {}", text(&from.0))),
            Some(from) => {
                let shown = text(&from.0);
                let flags = if r.exchange { libc::RENAME_EXCHANGE } else { libc::RENAME_NOREPLACE };
                match lstat(&r.to.0) {
                    // Removed later by the session, inside a tree it made
                    // (such removals are not journalled).
                    None => {}
                    Some(_) => {
                        let moved = parent_of(&r.to.0).and_then(|(td, tn)| {
                            let (fd, fname) = parent_of(&from.0)?;
                            fs::renameat2(td.as_fd(), &tn, fd.as_fd(), &fname, flags)
                        });
                        match moved {
                            Ok(()) => self.did(format!("moved {to} back to {shown}")),
                            Err(e) => self.problem(format!("{to}: not moved back to {shown}: {e}")),
                        }
                    }
                }
            }
        }
        if let (Some(v), Some(life)) = (&r.victim, victim) {
            self.remake(&r.to.0, life, v.kind, v.nlink);
        }
    }

    /// Where the object `life` lives on under another name, at this point
    /// of the undo: the object undo made again for it, or the very object,
    /// found in the journalled trees by its inode. That is only trusted
    /// for an object that was there before the session (it has a
    /// pre-image) and has its identity still when the session ends: every
    /// removal of such an object's last name is journalled (and undone
    /// before, making it again), so while undo runs no other object can
    /// have its inode. An object the session made, and one whose identity
    /// another object took after it, may share its inode with anything.
    fn living(&mut self, life: Life) -> Option<&OwnedFd> {
        if self.handles.contains_key(&life) {
            return self.handles.get(&life);
        }
        if !self.keeps.contains_key(&life) || !self.lives.is_last(life) {
            return None;
        }
        if self.found.is_none() {
            let wanted: HashSet<ObjectId> = self
                .linked
                .iter()
                .filter(|l| self.keeps.contains_key(l) && self.lives.is_last(**l))
                .map(|l| l.object)
                .collect();
            let mut found = HashMap::new();
            for root in &self.roots {
                seal::walk(root, &mut |p, _| {
                    let Some(st) = lstat(p) else { return };
                    let id = ObjectId::of(&st);
                    let life = self.lives.life(id);
                    if st.st_mode & libc::S_IFMT == libc::S_IFDIR || !wanted.contains(&id) || found.contains_key(&life)
                    {
                        return;
                    }
                    if let Ok(h) = open_nofollow(p, libc::O_PATH) {
                        found.insert(life, h);
                    }
                });
            }
            self.found = Some(found);
        }
        let h = self.found.as_mut()?.remove(&life)?;
        self.handles.insert(life, h);
        self.handles.get(&life)
    }

    /// Directories' times, once more: putting their entries back changed
    /// them.
    fn finish(&mut self) {
        for (fd, atime, mtime) in self.dirs.drain(..).rev() {
            let _ = fs::utimens(&proc_path(fd.as_fd()), Some(&[timespec(atime), timespec(mtime)]));
        }
    }
}

fn proc_path(fd: BorrowedFd<'_>) -> CString {
    use std::os::fd::AsRawFd;
    CString::new(format!("/proc/self/fd/{}", fd.as_raw_fd())).expect("no NUL in a number")
}

fn lstat(path: &[u8]) -> Option<libc::stat> {
    let c = CString::new(path).ok()?;
    fs::fstatat(Dir::Cwd, &c, libc::AT_SYMLINK_NOFOLLOW).ok()
}

/// The directory holding `path`'s last component (reached without
/// following symlinks), and the component.
fn parent_of(path: &[u8]) -> Result<(OwnedFd, CString), Errno> {
    let cut = path.iter().rposition(|&b| b == b'/').ok_or(Errno::EINVAL)?;
    let (dir, name) = (&path[..cut.max(1)], &path[cut + 1..]);
    let fd = open_nofollow(dir, libc::O_PATH | libc::O_DIRECTORY)?;
    Ok((fd, CString::new(name).map_err(|_| Errno::EINVAL)?))
}

/// Puts back the owner, mode, extended attributes and times of `k` on the
/// object behind `fd`.
fn put_meta(fd: BorrowedFd<'_>, k: &Keep) -> Result<(), Errno> {
    let proc = proc_path(fd);
    let now = fs::fstat(fd)?;
    let mut first: Result<(), Errno> = Ok(());
    let mut note = |r: Result<(), Errno>| {
        if first.is_ok() {
            first = r;
        }
    };
    if (now.st_uid, now.st_gid) != (k.meta.uid, k.meta.gid) {
        note(fs::chown_fd(fd, k.meta.uid, k.meta.gid));
    }
    if k.kind != Kind::Symlink {
        // After the owner: a change of owner clears the set-id bits.
        note(fs::chmod(&proc, k.meta.mode));
        if let Some(kept) = &k.xattrs {
            note(put_xattrs(&proc, kept));
        }
        note(fs::utimens(&proc, Some(&[timespec(k.meta.atime), timespec(k.meta.mtime)])));
    } else if let Ok((dir, name)) = parent_of(&k.path.0) {
        let times = [timespec(k.meta.atime), timespec(k.meta.mtime)];
        note(fs::utimensat(Dir::Fd(dir.as_fd()), &name, &times, libc::AT_SYMLINK_NOFOLLOW));
    }
    first
}

/// Makes the extended attributes of `path` exactly `kept`.
fn put_xattrs(path: &CString, kept: &[(Bytes, Bytes)]) -> Result<(), Errno> {
    let mut list = vec![0u8; 65536];
    let n = fs::listxattr(path, &mut list).unwrap_or(0);
    for name in list[..n].split(|&b| b == 0).filter(|n| !n.is_empty()) {
        if !kept.iter().any(|(k, _)| k.0 == name) {
            let c = CString::new(name).map_err(|_| Errno::EINVAL)?;
            fs::removexattr(path, &c)?;
        }
    }
    for (name, value) in kept {
        let c = CString::new(name.0.clone()).map_err(|_| Errno::EINVAL)?;
        let mut buf = vec![0u8; 65536];
        let same = fs::getxattr(path, &c, &mut buf).is_ok_and(|m| buf[..m] == value.0[..]);
        if !same {
            fs::setxattr(path, &c, &value.0, 0)?;
        }
    }
    Ok(())
}

/// Removes `name` in `dir`, a directory, with everything in it, never
/// following a symlink or leaving the file system `dev`.
fn remove_tree(dir: BorrowedFd<'_>, name: &CString, dev: u64) -> Result<(), Errno> {
    let fd = fs::openat(Dir::Fd(dir), name, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW, 0)?;
    if fs::fstat(fd.as_fd())?.st_dev != dev {
        return Err(Errno::EXDEV);
    }
    let inner = fd.try_clone().map_err(|_| Errno::EMFILE)?;
    let mut names = Vec::new();
    let mut d = nix::dir::Dir::from_fd(fd)?;
    for e in d.iter() {
        let e = e?;
        let n = e.file_name().to_bytes();
        if n != b"." && n != b".." {
            names.push(CString::new(n).map_err(|_| Errno::EINVAL)?);
        }
    }
    for child in names {
        let st = fs::fstatat(Dir::Fd(inner.as_fd()), &child, libc::AT_SYMLINK_NOFOLLOW)?;
        if st.st_mode & libc::S_IFMT == libc::S_IFDIR {
            remove_tree(inner.as_fd(), &child, dev)?;
        } else {
            fs::unlinkat(inner.as_fd(), &child, 0)?;
        }
    }
    fs::unlinkat(dir, name, libc::AT_REMOVEDIR)
}

/// How much a journal keeps, in words.
pub fn describe(bytes: u64) -> String {
    size(bytes)
}

#[cfg(test)]
mod tests {
    use super::super::schema::{Create, Remove, Victim};
    use super::*;

    use super::super::schema::samples::{id, keep, path};

    fn create(seq: u64, ino: u64, p: &str, kind: Kind) -> Line {
        Line::Create(Create { seq, path: path(p), kind, object: id(ino) })
    }
    fn remove(seq: u64, ino: u64, p: &str, kind: Kind, nlink: u64) -> Line {
        Line::Remove(Remove { seq, path: path(p), kind, object: id(ino), nlink })
    }
    fn life(ino: u64, n: u32) -> Life {
        Life { object: id(ino), n }
    }

    /// What `git` does on ext4: the inode of a file it removes is the next
    /// lock file's, and a victim's the next object's.
    #[test]
    fn an_inode_number_given_again_names_another_object() {
        let lines = [
            keep(1, 7, "/w/sub/y"),
            remove(2, 7, "/w/sub/y", Kind::File, 1),
            create(3, 7, "/w/.git/objects/19", Kind::Dir),
            // A directory's link count is not its names: removing it ends it.
            remove(4, 7, "/w/.git/objects/19", Kind::Dir, 2),
            create(5, 7, "/w/.git/index.lock", Kind::File),
            keep(6, 9, "/w/.git/index"),
            Line::Rename(Rename {
                seq: 7,
                from: Some(path("/w/.git/index.lock")),
                to: path("/w/.git/index"),
                exchange: false,
                object: id(7),
                kind: Kind::File,
                victim: Some(Victim { object: id(9), kind: Kind::File, nlink: 1 }),
            }),
            create(8, 9, "/w/.git/objects/ab/tmp", Kind::File),
            create(9, 9, "/w/.git/objects/ab/cd", Kind::File),
            // One of two links: the object lives on, in the same life.
            remove(10, 9, "/w/.git/objects/ab/tmp", Kind::File, 2),
        ];
        let refs: Vec<&Line> = lines.iter().collect();
        let lives = Lives::of(&refs);
        let objects: Vec<Life> = lives.at.iter().map(|a| a.object).collect();
        assert_eq!(
            objects,
            vec![
                life(7, 0),
                life(7, 0),
                life(7, 1),
                life(7, 1),
                life(7, 2),
                life(9, 0),
                life(7, 2),
                life(9, 1),
                life(9, 1),
                life(9, 1),
            ]
        );
        assert_eq!(lives.at[6].victim, Some(life(9, 0)));
        assert!(lives.is_last(life(7, 2)) && lives.is_last(life(9, 1)));
        assert!(!lives.is_last(life(7, 0)) && !lives.is_last(life(9, 0)));
    }
}
