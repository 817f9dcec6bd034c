//! Directory listings kept between sessions: the `/etc` walk's, and the
//! walks that settle carve-out patterns in a workspace
//! ([`super::settle`]), which keep only what they need of each directory.
//!
//! The system surface denies whatever in `/etc` others may not read, and
//! finding it takes a `stat` of every entry and a listing of every
//! directory; on ext4's hashed directories the listings cost as much as
//! the `stat`s (docs/performance.md). A directory whose names change
//! changes its own ctime, so a listing is kept with the directory's
//! identity (device, inode, times, size, links) and used again only while
//! all of it is the same. The `stat`s are never skipped: a `chmod o-r`
//! changes no directory, only the file.
//!
//! A listing is a way to hide a name from the walk, so the file is trusted
//! only as much as its place, and the place is the guarantee: a directory
//! of its own at a fixed path in the home `/etc/passwd` gives interpose's
//! effective user (not `HOME`, which the caller sets), made before any
//! command runs and carved out of every session's surface whole (a command
//! whose surface reaches it can neither read the file nor plant one, nor
//! swap the temporary file a session renames into place), read through no
//! symlink. That the file is owned by the user and writable by no one else
//! keeps other users out; a sandboxed command runs as that same user, so
//! against it only the carve-out counts. A listing taken within
//! [`SETTLE_SECS`] of its directory's last change is not used again: a file
//! system that keeps times in whole seconds could change the directory
//! again within the same second, unseen. A listing that failed part of the
//! way is never kept.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// How long a directory must have been unchanged when it was listed for
/// the listing to be used again.
pub const SETTLE_SECS: i64 = 2;

/// The first line of the `/etc` walk's file; a file of another version
/// is not read.
const HEADER: &[u8] = b"interpose etc listings 1\n";

/// The most a kept file may hold (a desktop's `/etc` takes ~40 KiB).
const MAX_BYTES: u64 = 4 << 20;

/// What identifies a directory's contents: any change of its names
/// changes its ctime (and its mtime); another directory mounted or moved
/// in its place has another device or inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirId {
    dev: u64,
    ino: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    size: i64,
    nlink: u64,
}

impl DirId {
    /// The identity in `st`.
    pub fn of(st: &libc::stat) -> DirId {
        DirId {
            dev: st.st_dev,
            ino: st.st_ino,
            mtime: (st.st_mtime, st.st_mtime_nsec),
            ctime: (st.st_ctime, st.st_ctime_nsec),
            size: st.st_size,
            nlink: st.st_nlink,
        }
    }
}

/// One directory's names with their `d_type`s, as listed at `at` (seconds
/// since the epoch) when the directory was `id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    /// The directory's path below the walk's top (empty for the top).
    pub rel: Vec<u8>,
    /// The directory when it was listed.
    pub id: DirId,
    /// When it was listed.
    pub at: i64,
    /// Its names, each ended by a NUL (one buffer, not one allocation a
    /// name: a kept `/etc` holds 1,200).
    names: Vec<u8>,
    /// The `d_type` of each name, in order.
    kinds: Vec<u8>,
}

impl Listing {
    /// An empty listing of the directory at `rel`, now `id`.
    pub fn new(rel: &[u8], id: DirId, at: i64) -> Listing {
        Listing { rel: rel.to_vec(), id, at, names: Vec::new(), kinds: Vec::new() }
    }

    /// Adds `name` (no NUL in it), of type `kind`.
    pub fn push(&mut self, name: &[u8], kind: u8) {
        self.names.extend_from_slice(name);
        self.names.push(0);
        self.kinds.push(kind);
    }

    /// Each name and its type.
    pub fn entries(&self) -> impl Iterator<Item = (&[u8], u8)> {
        self.names.split(|&b| b == 0).zip(self.kinds.iter().copied())
    }

    /// Whether this listing still holds for the directory now `id`.
    pub fn holds_for(&self, id: &DirId) -> bool {
        self.id == *id && self.settled()
    }

    /// Whether its directory had not changed for [`SETTLE_SECS`] when it
    /// was listed: one that had may never be used again.
    pub fn settled(&self) -> bool {
        self.id.ctime.0.saturating_add(SETTLE_SECS) <= self.at
    }
}

/// Listings by their paths: the file is this user's own, so no key is
/// chosen against the table, and a walk of thousands of directories looks
/// each up (SipHash and the table's growth were a tenth of a kept walk).
pub type ByRel = HashMap<Vec<u8>, Listing, BuildHasherDefault<PathHasher>>;

/// A multiply-rotate hash of a path's bytes, eight at a time.
#[derive(Default)]
pub struct PathHasher(u64);

impl Hasher for PathHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let word = u64::from_le_bytes(c.try_into().expect("eight bytes"));
            self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(K);
        }
        for &b in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// The kept listings, by [`Listing::rel`].
#[derive(Debug, Default)]
pub struct Kept {
    /// Where they were read from and are written back to (none: nothing
    /// is kept, as without a home).
    pub path: Option<PathBuf>,
    /// The listings.
    pub by_rel: ByRel,
    /// The file's first line: what wrote it, for what (a file whose first
    /// line differs is not read).
    header: Vec<u8>,
}

/// Where interpose's effective user keeps the listings of the walk of
/// `/etc`: `~/.local/state/interpose/walk/etc-listings`, in the home
/// `/etc/passwd` gives that user (never `HOME`, which the caller sets, so
/// every session of the user finds and carves out the same place). None for
/// a user not in `/etc/passwd`: such a user's walk lists every directory.
/// Every session carves out its directory.
pub fn default_path() -> Option<PathBuf> {
    kept_dir().map(|dir| dir.join("etc-listings"))
}

/// The directory every kept listing of interpose's effective user is in,
/// `~/.local/state/interpose/walk` in the home `/etc/passwd` gives that
/// user; carved out of every session ([`super::system::base`]).
pub fn kept_dir() -> Option<PathBuf> {
    // Read once: the system surface and the settled patterns both ask.
    static DIR: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    DIR.get_or_init(find_kept_dir).clone()
}

fn find_kept_dir() -> Option<PathBuf> {
    let uid = nix::unistd::geteuid().as_raw().to_string();
    let passwd = std::fs::read("/etc/passwd").ok()?;
    let home = passwd.split(|&b| b == b'\n').find_map(|line| {
        let fields: Vec<&[u8]> = line.split(|&b| b == b':').collect();
        (fields.len() == 7 && fields[2] == uid.as_bytes()).then(|| fields[5])
    })?;
    let home = Path::new(std::ffi::OsStr::from_bytes(home));
    // Canonical: the file is read through no symlink, and a home reached
    // through one (`/home` -> `/usr/home`) is the user's own.
    let home = std::fs::canonicalize(home).ok().filter(|h| h.is_absolute())?;
    Some(home.join(".local/state/interpose/walk"))
}

impl Kept {
    /// The listings kept at `path`; none if it is missing, not a regular
    /// file owned by this user alone, or not one this version wrote.
    pub fn load(path: Option<PathBuf>) -> Kept {
        Kept::load_as(path, HEADER.to_vec())
    }

    /// The listings kept at `path` by a writer whose first line is
    /// `header` (one line, ended by a newline); none as [`Kept::load`].
    pub fn load_as(path: Option<PathBuf>, header: Vec<u8>) -> Kept {
        let by_rel = path.as_deref().map(|p| read(p, &header)).unwrap_or_default();
        Kept { path, by_rel, header }
    }

    /// Writes `listings` in place of the kept ones, whole or not at all (a
    /// new file renamed over the old); none that would be larger than a
    /// kept file is read back.
    pub fn save(&self, listings: &[&Listing]) -> std::io::Result<()> {
        let Some(path) = self.path.as_ref().filter(|_| !listings.is_empty()) else { return Ok(()) };
        let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(std::io::Error::other("no directory"));
        };
        let mut text = self.header.clone();
        for l in listings {
            encode(l, &mut text);
        }
        if text.len() as u64 > MAX_BYTES {
            return Err(std::io::Error::other(format!("{} bytes, more than a kept file may hold", text.len())));
        }
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
        let tmp = dir.join(format!(".{}.{}", name.to_string_lossy(), std::process::id()));
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)
            .and_then(|mut f| f.write_all(&text))
            .and_then(|()| std::fs::rename(&tmp, path));
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }
}

fn read(path: &Path, header: &[u8]) -> ByRel {
    use std::io::Read;
    // Through no symlink at all: a command that could make one on the way
    // (a policy granting `~/.local/state` before the directory existed)
    // could point the next session at listings of its own.
    let how = crate::sys::fs::OpenHow {
        flags: (libc::O_RDONLY | libc::O_NOFOLLOW) as u64,
        mode: 0,
        resolve: crate::sys::fs::RESOLVE_NO_SYMLINKS,
    };
    let opened = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| crate::sys::Errno::EINVAL)
        .and_then(|c| crate::sys::fs::openat2(crate::sys::fs::Dir::Cwd, &c, how));
    let Ok(f) = opened.map(std::fs::File::from) else {
        return ByRel::default();
    };
    let Ok(m) = f.metadata() else { return ByRel::default() };
    let trusted = m.file_type().is_file() && m.uid() == nix::unistd::geteuid().as_raw() && m.mode() & 0o077 == 0;
    if !trusted {
        tracing::debug!("{}: not this user's alone; the walk lists every directory", path.display());
        return ByRel::default();
    }
    // Read whole in one call where the size holds (procfs-like files
    // that say 0 are not this one).
    let mut text = Vec::with_capacity(m.len().min(MAX_BYTES) as usize + 1);
    if f.take(MAX_BYTES + 1).read_to_end(&mut text).is_err() || text.len() as u64 > MAX_BYTES {
        return ByRel::default();
    }
    decode(&text, header).unwrap_or_else(|| {
        tracing::debug!("{}: unreadable or another's; the walk lists every directory", path.display());
        ByRel::default()
    })
}

/// One listing: its path, the numbers of its identity and time, its count
/// of names, then each name after a letter for its type, every field
/// ended by a NUL (no path or name holds one).
fn encode(l: &Listing, out: &mut Vec<u8>) {
    let field = |out: &mut Vec<u8>, bytes: &[u8]| {
        out.extend_from_slice(bytes);
        out.push(0);
    };
    field(out, &l.rel);
    let id = &l.id;
    let numbers = format!(
        "{} {} {} {} {} {} {} {} {} {}",
        id.dev,
        id.ino,
        id.mtime.0,
        id.mtime.1,
        id.ctime.0,
        id.ctime.1,
        id.size,
        id.nlink,
        l.at,
        l.kinds.len()
    );
    field(out, numbers.as_bytes());
    for (name, kind) in l.entries() {
        out.push(b'a' + kind.min(25));
        field(out, name);
    }
}

fn decode(text: &[u8], header: &[u8]) -> Option<ByRel> {
    // Every field ends with a NUL: a file cut short within its last name
    // is refused, not read as a shorter name.
    let mut fields = text.strip_prefix(header)?.strip_suffix(&[0])?.split(|&b| b == 0);
    // Sized once: a listing takes at least a hundred bytes of the file.
    let mut out = ByRel::with_capacity_and_hasher(text.len() / 128, Default::default());
    while let Some(rel) = fields.next() {
        let mut numbers = fields.next()?.split(|&b| b == b' ');
        let mut n = [0i128; 10];
        for slot in &mut n {
            *slot = decimal(numbers.next()?)?;
        }
        if numbers.next().is_some() {
            return None;
        }
        let [dev, ino, ms, mns, cs, cns, size, nlink, at, count] = n;
        let (u, i) = (|v: i128| u64::try_from(v).ok(), |v: i128| i64::try_from(v).ok());
        let id = DirId {
            dev: u(dev)?,
            ino: u(ino)?,
            mtime: (i(ms)?, i(mns)?),
            ctime: (i(cs)?, i(cns)?),
            size: i(size)?,
            nlink: u(nlink)?,
        };
        let (at, count) = (i(at)?, u(count)?);
        let mut l = Listing::new(rel, id, at);
        // Sized once, not grown name by name (a count the file cannot
        // hold reserves no more than the file's length, and fails below).
        l.kinds.reserve(count.min(text.len() as u64) as usize);
        for _ in 0..count {
            let (&kind, name) = fields.next()?.split_first()?;
            l.push(name, kind.checked_sub(b'a')?);
        }
        out.insert(rel.to_vec(), l);
    }
    Some(out)
}

/// A decimal number as [`encode`] writes one (an optional `-`, then up to
/// 20 digits: every `u64` and `i64`), wide enough for every field, signed
/// or not; `None` for anything else. By hand: `str::parse::<i128>` took
/// most of the ~0.2 ms a desktop's kept listings took to read.
fn decimal(field: &[u8]) -> Option<i128> {
    let (negative, digits) = match field.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, field),
    };
    if digits.is_empty() || digits.len() > 20 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let value = digits.iter().fold(0i128, |n, d| n * 10 + i128::from(d - b'0'));
    Some(if negative { -value } else { value })
}

/// Seconds since the epoch, as listings are timed.
pub fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

/// The path of `rel` below `top`.
pub fn joined(top: &Path, rel: &[u8]) -> PathBuf {
    match rel.is_empty() {
        true => top.to_path_buf(),
        false => top.join(std::ffi::OsStr::from_bytes(rel)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(rel: &str, ctime: i64, at: i64) -> Listing {
        // A device number past i64 reads back too.
        let id = DirId { dev: u64::MAX, ino: 2, mtime: (ctime, 5), ctime: (ctime, 7), size: 4096, nlink: 3 };
        let mut l = Listing::new(rel.as_bytes(), id, at);
        l.push(b"passwd", libc::DT_REG);
        l.push(b"a b\nc", 0);
        l
    }

    #[test]
    fn numbers_read_as_written_and_nothing_else() {
        for n in [0i128, 7, -1, i128::from(i64::MIN), i128::from(u64::MAX)] {
            assert_eq!(decimal(n.to_string().as_bytes()), Some(n));
        }
        for bad in ["", "-", "+1", "1a", " 1", "1 ", "--1", "123456789012345678901"] {
            assert_eq!(decimal(bad.as_bytes()), None, "{bad:?}");
        }
        // A time before 1970 reads back too.
        let mut l = listing("old", -5, 10);
        l.id.mtime = (-86_400, 999_999_999);
        let mut text = HEADER.to_vec();
        encode(&l, &mut text);
        assert_eq!(decode(&text, HEADER).unwrap()[&b"old"[..]], l);
    }

    #[test]
    fn kept_listings_read_back_as_written_and_only_from_this_users_own_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/interpose/etc-listings");
        let (top, sub) = (listing("", 100, 200), listing("ssl/certs", 100, 101));
        Kept::load(Some(path.clone())).save(&[&top, &sub]).unwrap();
        let kept = Kept::load(Some(path.clone()));
        assert_eq!(kept.by_rel.len(), 2);
        assert_eq!(kept.by_rel[&b""[..]], top);
        assert_eq!(kept.by_rel[&b"ssl/certs"[..]], sub);
        // A listing holds only for the same directory, listed after it
        // settled.
        assert!(top.holds_for(&top.id));
        assert!(!sub.holds_for(&sub.id), "listed a second after the change");
        let mut moved = top.id;
        moved.ctime.1 += 1;
        assert!(!top.holds_for(&moved));
        // Writable by others, a truncated file, another version: nothing.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o620)).unwrap();
        assert!(Kept::load(Some(path.clone())).by_rel.is_empty());
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let text = std::fs::read(&path).unwrap();
        // Cut within the last name, or by the whole of it.
        for cut in [3, 7] {
            std::fs::write(&path, &text[..text.len() - cut]).unwrap();
            assert!(Kept::load(Some(path.clone())).by_rel.is_empty(), "cut by {cut}");
        }
        std::fs::write(&path, [b"interpose etc listings 0\n", &text[HEADER.len()..]].concat()).unwrap();
        assert!(Kept::load(Some(path.clone())).by_rel.is_empty());
        // A symlink in its place is not followed.
        std::fs::write(dir.path().join("real"), &text).unwrap();
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(dir.path().join("real"), &path).unwrap();
        assert!(Kept::load(Some(path.clone())).by_rel.is_empty());
        // Nor one on the way to it: a directory of the path made a symlink
        // to a place holding a valid file.
        let planted = dir.path().join("planted");
        Kept::load(Some(planted.join("interpose/etc-listings"))).save(&[&top]).unwrap();
        assert_eq!(Kept::load(Some(planted.join("interpose/etc-listings"))).by_rel.len(), 1);
        std::fs::remove_dir_all(dir.path().join("state")).unwrap();
        std::os::unix::fs::symlink(&planted, dir.path().join("state")).unwrap();
        assert!(Kept::load(Some(path)).by_rel.is_empty(), "read through a symlinked directory");
    }
}
