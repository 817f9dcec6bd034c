//! The names as the session left them: where each object the journal
//! follows ends up (its renames, and those of the directories above it,
//! played forward), what the session removed, and everything inside the
//! trees it made. Written at the session's end; `undo` compares them with
//! what is there before it changes anything.

use super::schema::{After, Kind, Line, Meta, Stat};
use crate::audit::Bytes;
use crate::sys::fs::{self, Dir};
use std::collections::{BTreeMap, HashSet};
use std::os::fd::AsFd;

/// What the journal says is at a name when the session ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// An object the journal follows: made by the session or not.
    Object {
        /// Made by the session (undo removes it, whole if a directory).
        made: bool,
    },
    /// Nothing: the session removed or moved away what was there.
    Absent,
}

/// The names under `path` in `names` (itself included).
fn subtree(names: &BTreeMap<Vec<u8>, Slot>, path: &[u8]) -> Vec<Vec<u8>> {
    names
        .range(path.to_vec()..)
        .take_while(|(k, _)| k.starts_with(path))
        .filter(|(k, _)| k.len() == path.len() || k[path.len()] == b'/')
        .map(|(k, _)| k.clone())
        .collect()
}

/// `path` with its prefix `from` replaced by `to`.
fn moved(path: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    [to, &path[from.len()..]].concat()
}

/// The change numbers whose calls failed.
pub fn voided(lines: &[Line]) -> HashSet<u64> {
    lines.iter().filter_map(|l| if let Line::Void(v) = l { Some(v.entry) } else { None }).collect()
}

/// Plays the journal's changes forward over names: which names hold an
/// object it follows when the session ends, and which it left empty.
pub fn simulate(lines: &[Line]) -> BTreeMap<Vec<u8>, Slot> {
    let void = voided(lines);
    let mut names: BTreeMap<Vec<u8>, Slot> = BTreeMap::new();
    for line in lines.iter().filter(|l| l.seq().is_none_or(|s| !void.contains(&s))) {
        match line {
            Line::Keep(k) => {
                names.entry(k.path.0.clone()).or_insert(Slot::Object { made: false });
            }
            Line::Create(c) => {
                names.insert(c.path.0.clone(), Slot::Object { made: true });
            }
            Line::Remove(r) => {
                for k in subtree(&names, &r.path.0) {
                    names.remove(&k);
                }
                names.insert(r.path.0.clone(), Slot::Absent);
            }
            Line::Rename(r) => {
                let to = &r.to.0;
                let Some(from) = &r.from else {
                    for k in subtree(&names, to) {
                        names.remove(&k);
                    }
                    names.insert(to.clone(), Slot::Object { made: true });
                    continue;
                };
                let from = &from.0;
                let leaving: Vec<(Vec<u8>, Slot)> =
                    subtree(&names, from).into_iter().map(|k| (k.clone(), names.remove(&k).expect("listed"))).collect();
                let replaced: Vec<(Vec<u8>, Slot)> =
                    subtree(&names, to).into_iter().map(|k| (k.clone(), names.remove(&k).expect("listed"))).collect();
                let moving = leaving.iter().any(|(k, _)| k == from);
                for (k, slot) in leaving {
                    names.insert(moved(&k, from, to), slot);
                }
                if !moving {
                    // Not followed until now: an object that was there.
                    names.insert(to.clone(), Slot::Object { made: false });
                }
                if r.exchange {
                    let back = replaced.iter().any(|(k, _)| k == to);
                    for (k, slot) in replaced {
                        names.insert(moved(&k, to, from), slot);
                    }
                    if !back {
                        names.insert(from.clone(), Slot::Object { made: false });
                    }
                } else {
                    names.insert(from.clone(), Slot::Absent);
                }
            }
            _ => {}
        }
    }
    names
}

/// What `lstat` says of `path` now, for telling a later change.
pub fn stat_of(path: &[u8]) -> Option<Stat> {
    let cpath = std::ffi::CString::new(path).ok()?;
    let st = fs::fstatat(Dir::Cwd, &cpath, libc::AT_SYMLINK_NOFOLLOW).ok()?;
    let kind = Kind::of(st.st_mode);
    let target = (kind == Kind::Symlink).then(|| {
        let mut buf = vec![0u8; crate::sys::mem::PATH_MAX + 1];
        let n = fs::readlinkat(Dir::Cwd, &cpath, &mut buf).unwrap_or(0);
        buf.truncate(n);
        Bytes(buf)
    });
    Some(Stat { kind, meta: Meta::of(&st), ino: st.st_ino, ctime: [st.st_ctime, st.st_ctime_nsec], target })
}

/// The names as the session left them, from its journal's change lines.
pub fn after_states(lines: &[Line]) -> Vec<After> {
    let mut out = Vec::new();
    for (path, slot) in simulate(lines) {
        let stat = stat_of(&path);
        let made = matches!(slot, Slot::Object { made: true });
        let dir = stat.as_ref().is_some_and(|s| s.kind == Kind::Dir);
        out.push(After { path: Bytes(path.clone()), stat, made });
        if made && dir {
            walk(&path, &mut |p, stat| out.push(After { path: Bytes(p.to_vec()), stat: Some(stat), made: true }));
        }
    }
    out
}

/// Every name under the directory `path` (not following symlinks or
/// leaving its file system), with what `lstat` says of it.
pub fn walk(path: &[u8], each: &mut dyn FnMut(&[u8], Stat)) {
    let Ok(dir) = super::keep::open_nofollow(path, libc::O_RDONLY | libc::O_DIRECTORY) else { return };
    let Ok(root) = fs::fstat(dir.as_fd()) else { return };
    let mut names = Vec::new();
    if let Ok(mut d) = nix::dir::Dir::from_fd(dir) {
        for e in d.iter().flatten() {
            let name = e.file_name().to_bytes();
            if name != b"." && name != b".." {
                names.push(name.to_vec());
            }
        }
    }
    names.sort();
    for name in names {
        let child = [path, b"/", name.as_slice()].concat();
        let Some(stat) = stat_of(&child) else { continue };
        let descend = stat.kind == Kind::Dir
            && std::ffi::CString::new(child.clone())
                .ok()
                .and_then(|c| fs::fstatat(Dir::Cwd, &c, libc::AT_SYMLINK_NOFOLLOW).ok())
                .is_some_and(|st| st.st_dev == root.st_dev);
        each(&child, stat);
        if descend {
            walk(&child, each);
        }
    }
}

/// How what is at a name now differs from what the session left there;
/// `None` when it is the same. The same inode with the same status change
/// time is the same; otherwise the kind, mode, owner, size, modification
/// time and symlink target must all be (a later `undo` of another session
/// puts those back exactly, on a new inode or with a new status change
/// time). A directory is the same when its kind, mode and owner are.
pub fn differs(then: Option<&Stat>, now: Option<&Stat>) -> Option<&'static str> {
    let (then, now) = match (then, now) {
        (None, None) => return None,
        (None, Some(_)) => return Some("made after the session"),
        (Some(_), None) => return Some("removed after the session"),
        (Some(t), Some(n)) => (t, n),
    };
    if then.kind != now.kind {
        return Some("replaced by another kind of file after the session");
    }
    if (then.meta.mode, then.meta.uid, then.meta.gid) != (now.meta.mode, now.meta.uid, now.meta.gid) {
        return Some("its mode or owner changed after the session");
    }
    if then.kind == Kind::Dir || (then.ino == now.ino && then.ctime == now.ctime) {
        return None;
    }
    if then.meta.size != now.meta.size || then.meta.mtime != now.meta.mtime || then.target != now.target {
        return Some("changed after the session");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::schema::{Create, Remove, Rename, Void};
    use super::*;

    use super::super::schema::samples::{id, path as b};

    fn keep(seq: u64, p: &str) -> Line {
        super::super::schema::samples::keep(seq, seq, p)
    }
    fn meta() -> Meta {
        Meta { mode: 0o644, uid: 0, gid: 0, size: 0, nlink: 1, atime: [0, 0], mtime: [0, 0] }
    }
    fn rename(seq: u64, from: &str, to: &str) -> Line {
        Line::Rename(Rename {
            seq,
            from: Some(b(from)),
            to: b(to),
            exchange: false,
            object: id(seq),
            kind: Kind::Dir,
            victim: None,
        })
    }

    #[test]
    fn renames_of_directories_carry_what_is_inside_them() {
        let lines = vec![
            keep(1, "/w/d/f"),
            Line::Create(Create { seq: 2, path: b("/w/d/new"), kind: Kind::File, object: id(2) }),
            rename(3, "/w/d", "/w/e"),
            Line::Remove(Remove { seq: 4, path: b("/w/gone"), kind: Kind::File, object: id(4), nlink: 1 }),
            // A rename that failed changes nothing.
            rename(5, "/w/e", "/w/z"),
            Line::Void(Void { entry: 5, errno: crate::audit::ErrnoName(nix::errno::Errno::ENOENT) }),
        ];
        let names = simulate(&lines);
        let got: Vec<(String, Slot)> = names.iter().map(|(k, v)| (String::from_utf8_lossy(k).into(), *v)).collect();
        assert_eq!(
            got,
            vec![
                ("/w/d".into(), Slot::Absent),
                ("/w/e".into(), Slot::Object { made: false }),
                ("/w/e/f".into(), Slot::Object { made: false }),
                ("/w/e/new".into(), Slot::Object { made: true }),
                ("/w/gone".into(), Slot::Absent),
            ]
        );
        // A sibling whose name only starts like the renamed one stays.
        let names = simulate(&[keep(1, "/w/dx"), rename(2, "/w/d", "/w/e")]);
        assert!(names.contains_key(b"/w/dx".as_slice()));
    }

    #[test]
    fn a_later_change_is_told_from_another_sessions_undo() {
        let stat = |ino, ctime, size, mtime| Stat {
            kind: Kind::File,
            meta: Meta { size, mtime: [mtime, 0], ..meta() },
            ino,
            ctime: [ctime, 0],
            target: None,
        };
        let then = stat(1, 10, 5, 7);
        assert_eq!(differs(Some(&then), Some(&then)), None);
        // Put back by another undo: a new inode, the same size and time.
        assert_eq!(differs(Some(&then), Some(&stat(2, 11, 5, 7))), None);
        assert!(differs(Some(&then), Some(&stat(1, 11, 6, 8))).is_some());
        assert!(differs(Some(&then), None).is_some());
        assert!(differs(None, Some(&then)).is_some());
    }
}
