//! The journal's lines, typed both ways: the session writes them, `undo`
//! (and the seal) read them back through the same types. Every line's
//! first field is `prev`, the SHA-256 of the line before it, as in the
//! audit trail (`docs/undo.md` describes each field).

use crate::audit::{Anchor, Bytes, ErrnoName};
use serde::{Deserialize, Serialize};

/// This document's version: a reader refuses a journal of another.
pub const SCHEMA: u32 = 1;

/// The journal's own file in its directory.
pub const FILE: &str = "journal.jsonl";

/// The directory of kept contents, one file per `keep` line that kept one
/// (named by the line's `seq`).
pub const OBJECTS: &str = "objects";

/// The file in [`OBJECTS`] that holds small files' contents end to end.
pub const PACK: &str = "pack";

/// Written by `undo` once it has put the trees back.
pub const UNDONE: &str = "undone";

/// An object's identity while the session ran: its device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ObjectId {
    /// `st_dev`.
    pub dev: u64,
    /// `st_ino`.
    pub ino: u64,
}

impl ObjectId {
    /// The identity `stat` describes.
    pub fn of(st: &libc::stat) -> ObjectId {
        ObjectId { dev: st.st_dev, ino: st.st_ino }
    }
}

/// What kind of file an object is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link.
    Symlink,
    /// A named pipe.
    Fifo,
    /// A unix socket's file.
    Socket,
    /// A character device.
    CharDevice,
    /// A block device.
    BlockDevice,
}

impl Kind {
    /// The kind `st_mode` says.
    pub fn of(mode: u32) -> Kind {
        match mode & libc::S_IFMT {
            libc::S_IFDIR => Kind::Dir,
            libc::S_IFLNK => Kind::Symlink,
            libc::S_IFIFO => Kind::Fifo,
            libc::S_IFSOCK => Kind::Socket,
            libc::S_IFCHR => Kind::CharDevice,
            libc::S_IFBLK => Kind::BlockDevice,
            _ => Kind::File,
        }
    }

    /// In words, for people.
    pub fn name(self) -> &'static str {
        match self {
            Kind::File => "file",
            Kind::Dir => "directory",
            Kind::Symlink => "symlink",
            Kind::Fifo => "FIFO",
            Kind::Socket => "socket",
            Kind::CharDevice => "character device",
            Kind::BlockDevice => "block device",
        }
    }
}

/// Whether removing a name of an object of `kind` with `nlink` links
/// removes the object itself: a file's last link, or a directory (whose
/// link count counts its subdirectories' `..`, not other names: it has one
/// name, and is removed only when empty). Its inode number is then free
/// for the next object the file system makes.
pub fn last_name(kind: Kind, nlink: u64) -> bool {
    kind == Kind::Dir || nlink <= 1
}

/// An object's attributes as they were.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meta {
    /// Permission bits (with set-id and sticky bits).
    pub mode: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Size in bytes.
    pub size: u64,
    /// Links to it.
    pub nlink: u64,
    /// Last access: seconds and nanoseconds.
    pub atime: [i64; 2],
    /// Last modification: seconds and nanoseconds.
    pub mtime: [i64; 2],
}

impl Meta {
    /// The attributes `stat` describes.
    pub fn of(st: &libc::stat) -> Meta {
        Meta {
            mode: st.st_mode & 0o7777,
            uid: st.st_uid,
            gid: st.st_gid,
            size: st.st_size as u64,
            nlink: st.st_nlink,
            atime: [st.st_atime, st.st_atime_nsec],
            mtime: [st.st_mtime, st.st_mtime_nsec],
        }
    }
}

/// The first line: what was journalled, and under which limits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Start {
    /// [`SCHEMA`].
    pub schema: u32,
    /// interpose's version.
    pub version: String,
    /// The sandboxed command line.
    pub command: Vec<Bytes>,
    /// The writable trees journalled (canonical): `undo` touches nothing
    /// outside them.
    pub roots: Vec<Bytes>,
    /// The most bytes of kept contents (`--journal-max`).
    pub budget: u64,
    /// The hash of the session's audit trail's first line, when it had a
    /// trail file: the trail's `session_end` names this journal's last
    /// hash in turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trail: Option<String>,
    /// Wall clock, nanoseconds since the Unix epoch.
    pub time_ns: u64,
}

/// An object as it was before its first change: kept once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Keep {
    /// The change's number (shared by every change line).
    pub seq: u64,
    /// Which object.
    pub object: ObjectId,
    /// Where it was then (canonical).
    pub path: Bytes,
    /// Its kind.
    pub kind: Kind,
    /// Its attributes.
    pub meta: Meta,
    /// A symlink's target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Bytes>,
    /// Its extended attributes (name, value), when they were read (files
    /// and directories).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xattrs: Option<Vec<(Bytes, Bytes)>>,
    /// Where its content is kept (`objects/<seq>`): a regular file about to
    /// be written, truncated or to lose its last name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Where in `objects/pack` a small file's content is kept: offset and
    /// length (many small contents in one file cost one write each, not an
    /// inode each).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packed: Option<[u64; 2]>,
    /// Whether the content was kept by a reflink (shared extents) rather
    /// than a copy.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reflink: bool,
    /// Why its content (or the object itself) cannot be put back, said at
    /// the time: too large for the budget, a device or socket, unreadable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_restorable: Option<String>,
}

/// A name made: a file, directory, symlink, node or link.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Create {
    /// The change's number.
    pub seq: u64,
    /// The new name (canonical).
    pub path: Bytes,
    /// What it names.
    pub kind: Kind,
    /// The object it names.
    pub object: ObjectId,
}

/// A name removed (`unlink`, `rmdir`): written before the call, voided if
/// the call fails.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Remove {
    /// The change's number.
    pub seq: u64,
    /// The name (canonical).
    pub path: Bytes,
    /// What it named.
    pub kind: Kind,
    /// The object it named.
    pub object: ObjectId,
    /// The object's links before the removal: more than one, and it lives
    /// on under another name.
    pub nlink: u64,
}

/// An object a rename put its name over.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Victim {
    /// Which object.
    pub object: ObjectId,
    /// Its kind.
    pub kind: Kind,
    /// Its links before the rename.
    pub nlink: u64,
}

/// A rename: written before the call, voided if the call fails.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rename {
    /// The change's number.
    pub seq: u64,
    /// The old name, or none for a name moved in from outside the
    /// journalled trees (`undo` removes it).
    pub from: Option<Bytes>,
    /// The new name.
    pub to: Bytes,
    /// `RENAME_EXCHANGE`: the two names swapped.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exchange: bool,
    /// The object moved.
    pub object: ObjectId,
    /// Its kind.
    pub kind: Kind,
    /// What was at `to` and lost its name there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub victim: Option<Victim>,
}

/// The call of change `entry` failed: nothing changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Void {
    /// The change that did not happen.
    pub entry: u64,
    /// What the call failed with.
    pub errno: ErrnoName,
}

/// The journal could not be written on: the session was stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// What failed.
    pub why: String,
}

/// What `lstat` says of a name, as far as telling a later change goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stat {
    /// Its kind.
    pub kind: Kind,
    /// Its attributes.
    pub meta: Meta,
    /// Its inode.
    pub ino: u64,
    /// Its last status change: seconds and nanoseconds.
    pub ctime: [i64; 2],
    /// A symlink's target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Bytes>,
}

/// A name as the session left it, written when it ended: `undo` stops
/// when it finds it otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct After {
    /// The name (canonical).
    pub path: Bytes,
    /// What was there; none when nothing was.
    pub stat: Option<Stat>,
    /// Inside (or the top of) a tree the session made, which `undo`
    /// removes whole: nothing may have been added there either.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub made: bool,
}

/// The end of the journal (before its anchor).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seal {
    /// Change lines written.
    pub changes: u64,
    /// Bytes of content kept.
    pub bytes: u64,
    /// Objects recorded as not restorable.
    pub not_restorable: u64,
    /// Whether the journal holds every change of the session (false after
    /// a [`Failure`]).
    pub complete: bool,
    /// Wall clock, nanoseconds since the Unix epoch.
    pub time_ns: u64,
}

/// One line of the journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Line {
    /// The first line.
    JournalStart(Box<Start>),
    /// A pre-image.
    Keep(Box<Keep>),
    /// A name made.
    Create(Create),
    /// A name removed.
    Remove(Remove),
    /// A rename.
    Rename(Rename),
    /// A change that did not happen.
    Void(Void),
    /// The journal failed.
    Failure(Failure),
    /// A name as the session left it.
    After(After),
    /// The end.
    Seal(Seal),
    /// The anchor: a MAC of the seal's hash with the session's key.
    Anchor(Anchor),
}

impl Line {
    /// The change number of a change line.
    pub fn seq(&self) -> Option<u64> {
        match self {
            Line::Keep(k) => Some(k.seq),
            Line::Create(c) => Some(c.seq),
            Line::Remove(r) => Some(r.seq),
            Line::Rename(r) => Some(r.seq),
            _ => None,
        }
    }
}

/// `[sec, nsec]` as a `timespec`.
pub fn timespec(t: [i64; 2]) -> libc::timespec {
    libc::timespec { tv_sec: t[0], tv_nsec: t[1] }
}

/// Journal lines for the unit tests of reading and undoing journals.
#[cfg(test)]
pub(crate) mod samples {
    use super::*;

    /// An object on device 1.
    pub fn id(ino: u64) -> ObjectId {
        ObjectId { dev: 1, ino }
    }

    /// A path.
    pub fn path(p: &str) -> Bytes {
        Bytes(p.as_bytes().to_vec())
    }

    /// The pre-image of a plain file `ino` at `p`.
    pub fn keep(seq: u64, ino: u64, p: &str) -> Line {
        let meta = Meta { mode: 0o644, uid: 0, gid: 0, size: 0, nlink: 1, atime: [0, 0], mtime: [0, 0] };
        Line::Keep(Box::new(Keep {
            seq,
            object: id(ino),
            path: path(p),
            kind: Kind::File,
            meta,
            target: None,
            xattrs: None,
            content: None,
            packed: None,
            reflink: false,
            not_restorable: None,
        }))
    }
}
