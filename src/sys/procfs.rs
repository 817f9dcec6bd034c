//! Readers of the `/proc` files interpose parses: a process's `status`,
//! `stat` and `maps`, and the mount table. One parser each; the callers
//! pick fields.

use std::io::Read;
use std::path::{Path, PathBuf};

/// Reads a procfs file whole. `std::fs::read` asks the file's size first
/// (procfs says 0) and then reads 32 bytes, doubling: eleven system calls
/// for a thread's `status`, which the supervisor reads for every new
/// process. Here: the open, a read into a page-sized buffer, one more that
/// finds the end, and the close.
pub fn read(path: impl AsRef<Path>) -> std::io::Result<Vec<u8>> {
    let mut file = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 4096];
    let mut len = 0;
    loop {
        if len == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        match file.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(len);
    Ok(buf)
}

/// As [`read`], as text.
fn read_text(path: impl AsRef<Path>) -> std::io::Result<String> {
    String::from_utf8(read(path)?).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// `/proc/<tid>/status`, read once.
pub struct Status(String);

impl Status {
    /// Reads `/proc/<tid>/status` (`None` once the thread is gone).
    pub fn of(tid: u32) -> Option<Status> {
        read_text(format!("/proc/{tid}/status")).ok().map(Status)
    }

    /// Reads the calling thread's own status.
    pub fn own_thread() -> Option<Status> {
        read_text("/proc/thread-self/status").ok().map(Status)
    }

    /// Wraps status text already read.
    pub fn parse(text: String) -> Status {
        Status(text)
    }

    /// The value of `field` (`"Uid:"`), trimmed.
    pub fn field(&self, field: &str) -> Option<&str> {
        self.0.lines().find_map(|l| l.strip_prefix(field)).map(str::trim)
    }
}

/// A `stat` file's command name (field 2) and the fields after it, from
/// the state (field 3) on. The name may hold spaces and parentheses: the
/// fields resume after the last ')'.
fn stat_fields(stat: &[u8]) -> Option<(&[u8], impl Iterator<Item = &[u8]>)> {
    let open = stat.iter().position(|&c| c == b'(')?;
    let close = stat.iter().rposition(|&c| c == b')')?;
    let fields = stat.get(close + 1..)?.split(|&c| c == b' ').filter(|f| !f.is_empty());
    Some((stat.get(open + 1..close)?, fields))
}

/// The name and parent pid of `pid`, from one read of `/proc/<pid>/stat`
/// (for a thread id, the parent of its process).
pub fn name_and_parent(pid: u32) -> Option<(String, u32)> {
    let stat = read(format!("/proc/{pid}/stat")).ok()?;
    let (name, mut fields) = stat_fields(&stat)?;
    let parent = std::str::from_utf8(fields.nth(1)?).ok()?.parse().ok()?;
    Some((String::from_utf8_lossy(name).into_owned(), parent))
}

/// The command name of thread `tid`, from `/proc/<tid>/comm`, escaped as
/// the `Name:` line of its status file is (a newline as `\n`, a backslash
/// doubled), which the kernel renders whole for every read (a third of the
/// cost here).
pub fn comm(tid: u32) -> Option<String> {
    let raw = read(format!("/proc/{tid}/comm")).ok()?;
    let raw = raw.strip_suffix(b"\n").unwrap_or(&raw);
    let mut name = Vec::with_capacity(raw.len());
    for &c in raw {
        match c {
            b'\n' => name.extend_from_slice(b"\\n"),
            b'\\' => name.extend_from_slice(b"\\\\"),
            c => name.push(c),
        }
    }
    Some(String::from_utf8_lossy(&name).into_owned())
}

/// One file mapping of `/proc/<pid>/maps`: start, end, file offset, path.
pub type Mapping = (u64, u64, u64, String);

/// The file mappings of `tid`'s address space (empty once it is gone).
pub fn maps(tid: u32) -> Vec<Mapping> {
    read_text(format!("/proc/{tid}/maps"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (range, _perms, offset) = (f.next()?, f.next()?, f.next()?);
            let file = f.nth(2)?;
            let (lo, hi) = range.split_once('-')?;
            Some((
                u64::from_str_radix(lo, 16).ok()?,
                u64::from_str_radix(hi, 16).ok()?,
                u64::from_str_radix(offset, 16).ok()?,
                file.to_string(),
            ))
        })
        .collect()
}

/// The files `tid`'s address space maps executable (`x` in the
/// permissions), as `/proc/<tid>/maps` names them (a path may hold
/// spaces: it is the rest of the line; `(deleted)` is dropped).
pub fn executable_files(tid: u32) -> Vec<String> {
    let mut out: Vec<String> = read_text(format!("/proc/{tid}/maps"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            // address perms offset dev inode, then the path after spaces.
            let mut rest = l;
            let mut fields = Vec::with_capacity(5);
            for _ in 0..5 {
                let t = rest.trim_start();
                let end = t.find(' ').unwrap_or(t.len());
                fields.push(&t[..end]);
                rest = &t[end..];
            }
            let path = rest.trim_start();
            (fields[1].contains('x') && path.starts_with('/'))
                .then(|| path.strip_suffix(" (deleted)").unwrap_or(path).to_string())
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// One line of `/proc/self/mountinfo`, the fields interpose uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// The file system's device, `major:minor`.
    pub device: String,
    /// The directory of that file system the mount shows, unescaped (`/`
    /// for a whole file system, deeper for a bind mount).
    pub root: PathBuf,
    /// Where it is mounted, unescaped.
    pub point: PathBuf,
    /// The file system type (`proc`, `cgroup`, `cgroup2`).
    pub fstype: String,
    /// The super block options (`rw,pids` for a cgroup v1 pids mount).
    pub options: String,
}

/// The mounts of this process's mount namespace (empty if unreadable).
pub fn mounts() -> Vec<Mount> {
    read_text("/proc/self/mountinfo").map(|t| parse_mountinfo(&t)).unwrap_or_default()
}

/// The mounts of process `pid`'s mount namespace.
pub fn mounts_of(pid: u32) -> std::io::Result<Vec<Mount>> {
    read_text(format!("/proc/{pid}/mountinfo")).map(|t| parse_mountinfo(&t))
}

/// Where `path` (canonical, in this process's mount namespace) lives: the
/// device of its file system and its path from that file system's root.
pub fn place_of(path: &std::path::Path, mounts: &[Mount]) -> Option<(String, PathBuf)> {
    // The last mount over the deepest mount point wins, as in lookups.
    let m = mounts.iter().filter(|m| path.starts_with(&m.point)).max_by_key(|m| m.point.components().count())?;
    let rest = path.strip_prefix(&m.point).ok()?;
    Some((m.device.clone(), m.root.join(rest)))
}

/// Whether one of `mounts` shows the file system object at `place` (a
/// device and a path from its file system's root, as [`place_of`] says).
pub fn shows(mounts: &[Mount], place: &(String, PathBuf)) -> Option<PathBuf> {
    mounts.iter().find(|m| m.device == place.0 && place.1.starts_with(&m.root)).map(|m| m.point.clone())
}

/// Parses mountinfo text.
pub fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let mut r = right.split(' ');
            let (fstype, _source) = (r.next()?, r.next()?);
            let options = r.next().unwrap_or_default();
            let mut l = left.split(' ').skip(2);
            let (device, root, point) = (l.next()?, l.next()?, l.next()?);
            Some(Mount {
                device: device.to_string(),
                root: unescape(root),
                point: unescape(point),
                fstype: fstype.to_string(),
                options: options.to_string(),
            })
        })
        .collect()
}

/// Undoes mountinfo's octal escapes (`\040` for a space).
fn unescape(s: &str) -> PathBuf {
    use std::os::unix::ffi::OsStringExt;
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    PathBuf::from(std::ffi::OsString::from_vec(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_resume_after_the_last_parenthesis() {
        let (name, mut fields) = stat_fields(b"42 (a b) c) S 7 42 42 0 -1").unwrap();
        assert_eq!(name, b"a b) c");
        assert_eq!(fields.nth(1), Some(&b"7"[..]));
        assert!(name_and_parent(std::process::id()).is_some_and(|(_, parent)| parent > 0));
    }

    #[test]
    fn a_file_reads_whole_across_the_first_buffer() {
        // Longer than the first page-sized buffer, and not a multiple of it.
        let dir = tempfile::tempdir().unwrap();
        let long: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(dir.path().join("long"), &long).unwrap();
        assert_eq!(read(dir.path().join("long")).unwrap(), long);
        std::fs::write(dir.path().join("page"), &long[..4096]).unwrap();
        assert_eq!(read(dir.path().join("page")).unwrap(), &long[..4096]);
        // procfs says its size is 0; the whole text is read all the same.
        let status = read("/proc/self/status").unwrap();
        assert!(status.starts_with(b"Name:\t") && status.ends_with(b"\n"));
        assert!(read("/proc/self/smaps").unwrap().len() > 4096);
        assert!(read("/proc/nonexistent-entry").is_err());
    }

    #[test]
    fn mountinfo_lines_and_escapes() {
        let text = "22 1 0:21 / /proc rw,nosuid - proc proc rw\n\
                    30 25 0:26 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n\
                    40 1 0:30 / /a\\040b rw shared:1 - tmpfs tmpfs rw\n";
        let m = parse_mountinfo(text);
        assert_eq!(m.len(), 3);
        assert_eq!((m[0].point.as_os_str(), m[0].fstype.as_str()), ("/proc".as_ref(), "proc"));
        assert_eq!(m[1].options, "rw,pids");
        assert_eq!(m[2].point, PathBuf::from("/a b"));
        assert_eq!((m[1].device.as_str(), m[1].root.as_os_str()), ("0:26", "/".as_ref()));
    }

    #[test]
    fn own_status_and_stat_are_read() {
        let me = std::process::id();
        let status = Status::of(me).expect("own status");
        assert_eq!(status.field("Tgid:"), Some(me.to_string().as_str()));
        let (_, parent) = name_and_parent(me).expect("own stat");
        assert_eq!(parent, nix::unistd::getppid().as_raw() as u32);
        assert!(maps(me).iter().any(|(lo, hi, _, _)| lo < hi));
    }

    #[test]
    fn a_threads_comm_reads_as_its_status_name_does() {
        // A name with the two characters the status file escapes.
        let named = std::thread::spawn(|| {
            let name = c"a\\b\nc d";
            // SAFETY: PR_SET_NAME reads a NUL-terminated name.
            assert_eq!(unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr()) }, 0);
            // SAFETY: gettid has no arguments.
            let tid = unsafe { libc::gettid() } as u32;
            let status = Status::of(tid).expect("own status");
            (comm(tid), status.field("Name:").map(str::to_string))
        });
        let (comm, name) = named.join().unwrap();
        assert_eq!(comm.as_deref(), Some("a\\\\b\\nc d"));
        assert_eq!(comm, name);
    }
}
