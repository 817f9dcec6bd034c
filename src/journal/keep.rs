//! Taking a pre-image: an object's attributes, a symlink's target, its
//! extended attributes, and a regular file's content, shared by reflink
//! (`FICLONE`) where the file system can, copied otherwise.

use super::schema::Kind;
use crate::audit::Bytes;
use crate::sys::fs::{self, Dir};
use crate::sys::Errno;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

/// What was taken of one object.
pub(super) struct Captured {
    pub target: Option<Bytes>,
    pub xattrs: Option<Vec<(Bytes, Bytes)>>,
    /// The kept content's name in the objects directory.
    pub blob: Option<String>,
    /// Or where in the pack it is (offset, length).
    pub packed: Option<[u64; 2]>,
    pub reflink: bool,
    /// Bytes of content kept.
    pub bytes: u64,
    pub not_restorable: Option<String>,
    /// Whether its content was asked for (kept, or found not restorable):
    /// not asked again.
    pub tried_content: bool,
}

/// `/proc/self/fd/N` for our handle `fd`: leads to the very object.
fn proc_path(fd: BorrowedFd<'_>) -> std::ffi::CString {
    use std::os::fd::AsRawFd;
    std::ffi::CString::new(format!("/proc/self/fd/{}", fd.as_raw_fd())).expect("no NUL in a number")
}

/// Bytes in words, for people.
pub fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} bytes"),
    }
}

/// Takes the pre-image of the object behind `fd` (`st` its stat); with
/// `content`, a regular file's content into `objects/<seq>` if it fits in
/// `room` bytes. An error is a failure to write the journal (the disk),
/// never the object's: what cannot be kept of the object is said in
/// `not_restorable`.
/// Contents up to this size go into the pack: a file of their own would
/// cost an inode (on ext4, an allocation that scans for a free one: most of
/// what keeping a small file costs).
pub(super) const PACK_MAX: u64 = 64 << 10;

/// The pack of small contents, and its length so far.
pub(super) struct Pack {
    pub file: std::fs::File,
    pub len: u64,
}

#[allow(clippy::too_many_arguments)]
pub(super) fn capture(
    fd: BorrowedFd<'_>,
    st: &libc::stat,
    content: bool,
    objects: BorrowedFd<'_>,
    pack: &mut Pack,
    seq: u64,
    room: u64,
    budget: u64,
) -> Result<Captured, Errno> {
    let kind = Kind::of(st.st_mode);
    let mut c = Captured {
        target: None,
        xattrs: None,
        blob: None,
        packed: None,
        reflink: false,
        bytes: 0,
        not_restorable: None,
        tried_content: content,
    };
    match kind {
        Kind::Symlink => {
            let mut buf = vec![0u8; crate::sys::mem::PATH_MAX + 1];
            let n = fs::readlinkat(Dir::Fd(fd), c"", &mut buf)?;
            buf.truncate(n);
            c.target = Some(Bytes(buf));
        }
        Kind::Socket | Kind::CharDevice | Kind::BlockDevice => {
            c.not_restorable = Some(format!("a {}: undo does not make one again", kind.name()));
        }
        Kind::File | Kind::Dir | Kind::Fifo => c.xattrs = Some(xattrs(fd)),
    }
    if !(content && kind == Kind::File) {
        return Ok(c);
    }
    let size = st.st_size as u64;
    if size > room {
        c.not_restorable = Some(format!(
            "its content ({}) is more than the journal's budget had left ({} of --journal-max {})",
            self::size(size),
            self::size(room),
            self::size(budget)
        ));
        return Ok(c);
    }
    let src = match fs::openat(Dir::Cwd, &proc_path(fd), libc::O_RDONLY | libc::O_NOCTTY | libc::O_NONBLOCK, 0) {
        Ok(src) => src,
        Err(e @ (Errno::EACCES | Errno::EPERM | Errno::EAGAIN | Errno::ETXTBSY)) => {
            c.not_restorable = Some(format!("its content could not be read: {e}"));
            return Ok(c);
        }
        Err(e) => return Err(e),
    };
    if size <= PACK_MAX {
        use std::os::unix::fs::FileExt;
        let mut buf = Vec::with_capacity(size as usize + 1);
        let mut chunk = [0u8; 16 << 10];
        loop {
            let n = nix::unistd::read(src.as_fd(), &mut chunk)?;
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        let at = pack.len;
        pack.file.write_all_at(&buf, at).map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)))?;
        pack.len += buf.len() as u64;
        c.packed = Some([at, buf.len() as u64]);
        c.bytes = buf.len() as u64;
        return Ok(c);
    }
    let name = std::ffi::CString::new(seq.to_string()).expect("no NUL in a number");
    let dst = fs::openat(Dir::Fd(objects), &name, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL, 0o600)?;
    let (bytes, reflink) = copy(src.as_fd(), dst.as_fd())?;
    c.blob = Some(format!("{}/{seq}", super::schema::OBJECTS));
    c.reflink = reflink;
    c.bytes = bytes;
    Ok(c)
}

/// Copies `src`'s content into the empty `dst`: a reflink where the file
/// system can make one, else `copy_file_range` (which the kernel may make
/// a server-side or block copy), else read and write. Bytes, and whether
/// by reflink.
pub(crate) fn copy(src: BorrowedFd<'_>, dst: BorrowedFd<'_>) -> Result<(u64, bool), Errno> {
    match fs::ficlone(dst, src) {
        Ok(()) => return Ok((fs::fstat(dst)?.st_size as u64, true)),
        Err(e @ (Errno::ENOSPC | Errno::EDQUOT | Errno::EIO)) => return Err(e),
        Err(_) => {}
    }
    let mut total = 0u64;
    loop {
        match fs::copy_file_range(src, dst, 1 << 30) {
            Ok(0) => return Ok((total, false)),
            Ok(n) => total += n as u64,
            Err(Errno::EXDEV | Errno::EINVAL | Errno::EOPNOTSUPP | Errno::ENOSYS) if total == 0 => break,
            Err(e) => return Err(e),
        }
    }
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = nix::unistd::read(src, &mut buf)?;
        if n == 0 {
            return Ok((total, false));
        }
        let mut done = 0;
        while done < n {
            done += nix::unistd::write(dst, &buf[done..n])?;
        }
        total += n as u64;
    }
}

/// The extended attributes of the object behind `fd` the supervisor can
/// read (`user.*`, ACLs, and more for a privileged one).
fn xattrs(fd: BorrowedFd<'_>) -> Vec<(Bytes, Bytes)> {
    let path = proc_path(fd);
    let mut list = vec![0u8; 65536];
    let Ok(n) = fs::listxattr(&path, &mut list) else { return Vec::new() };
    list[..n]
        .split(|&b| b == 0)
        .filter(|name| !name.is_empty())
        .filter_map(|name| {
            let cname = std::ffi::CString::new(name).ok()?;
            let mut value = vec![0u8; 65536];
            let m = fs::getxattr(&path, &cname, &mut value).ok()?;
            value.truncate(m);
            Some((Bytes(name.to_vec()), Bytes(value)))
        })
        .collect()
}

/// An `O_PATH` handle on `path`'s object without following a final
/// symlink, reached without following any symlink on the way: where
/// `undo` looks, a symlink planted in a directory's place cannot lead it
/// elsewhere.
pub(crate) fn open_nofollow(path: &[u8], flags: i32) -> Result<OwnedFd, Errno> {
    let cpath = std::ffi::CString::new(path).map_err(|_| Errno::EINVAL)?;
    let how = fs::OpenHow {
        flags: (flags | libc::O_NOFOLLOW) as u64,
        mode: 0,
        resolve: fs::RESOLVE_NO_SYMLINKS | fs::RESOLVE_NO_MAGICLINKS,
    };
    fs::openat2(Dir::Cwd, &cpath, how)
}
