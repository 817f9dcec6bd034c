//! Socket addresses: `connect`, `bind`, and the sends that name one
//! (`sendto` with an address, `sendmsg`, `sendmmsg`).
//!
//! None of these is ever continued: the kernel would read the address (and
//! a `msghdr`, and the descriptor's socket) again after the check, and no
//! backstop covers what it finds there (Landlock ABI 7 refuses neither a
//! connect nor a datagram to a pathname socket). So the supervisor reads
//! the address once, with a send's data and control messages, decides it,
//! and makes the call itself on the caller's own socket (`pidfd_getfd`: the
//! same open file description) with what it read.
//!
//! - A pathname address is a file: decided with `write` (a connect, a
//!   datagram) or `create` (a bind) on its real location, and reached
//!   through the supervisor's handle on the socket file it checked
//!   (`/proc/self/fd/N`); a bind is made in the checked directory, from a
//!   worker whose own cwd and umask are the directory and the caller's.
//! - An abstract address is looked up in the socket's own network
//!   namespace. Where that is the command's own, only the sandbox is there;
//!   where it is the host's, only names the sandbox itself bound are
//!   reached (the rest are refused with `EPERM`, as Landlock's scope would
//!   refuse the command's own call).
//! - IPv4 and IPv6 follow the network rule ([`NetRule`]).
//!
//! Neither ever blocks a worker: a full backlog, a handshake under way or a
//! full queue hands the call to [`super::super::later`], which retries it
//! without blocking. What the other side sees of its peer is the caller's
//! effective uid and gid; its pid is interpose's.

use super::{kept, Call, PathArg, Stop, Why, MISDECODED};
use crate::audit::{AccessKind, RuleKind, Verdict};
use crate::policy::Access;
use crate::supervisor::identity;
use crate::supervisor::later::Retry;
use crate::supervisor::resolve::{Resolver, Target};
use crate::supervisor::{Answer, NetRule};
use crate::sys::socket::ADDRESS_MAX;
use crate::sys::{fs, mem, socket, Errno};
use crate::syscalls::{Op, OpArgs};
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

/// `struct mmsghdr`: a `msghdr` (56 bytes) and `msg_len`, padded to 64.
const MMSGHDR: u64 = 64;
/// The most messages one `sendmmsg` sends (`UIO_MAXIOV`), and the most
/// pieces one message is gathered from.
const UIO_MAXIOV: u64 = 1024;
/// The most descriptors one message may carry (`SCM_MAX_FD`).
const SCM_MAX_FD: usize = 253;
/// The most bytes of one message read from the caller: a datagram that
/// large is refused by the kernel anyway, and a stream send of more is sent
/// in part (as a send may be).
const DATA_MAX: usize = 8 << 20;
/// The largest control buffer read from the caller.
const CONTROL_MAX: u64 = 64 << 10;

/// A socket address as the caller wrote it, by what it names.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Address {
    /// None: a NULL pointer, or a length of zero (the connected peer).
    Unnamed,
    /// A pathname unix socket: the path.
    Path(Vec<u8>),
    /// An abstract unix address, or a unix address with only its family
    /// (autobind): the address bytes.
    Abstract(Vec<u8>),
    /// An IPv4 or IPv6 address: the bytes.
    Inet(Vec<u8>),
    /// Any other family (`AF_UNSPEC`, netlink, vsock, ...): the family and
    /// the bytes.
    Other(i32, Vec<u8>),
}

/// Where a call goes once decided: the bytes of the address the supervisor
/// gives the kernel, and the socket file it checked, whose
/// `/proc/self/fd/N` those bytes name.
struct Destination {
    address: Option<Vec<u8>>,
    _held: Option<OwnedFd>,
}

/// One message, read from the caller and ready to send.
struct Message {
    to: Destination,
    data: Vec<u8>,
    /// The control messages, with the caller's descriptor numbers replaced
    /// by the supervisor's duplicates (kept in `rights`).
    control: Vec<u8>,
    rights: Vec<OwnedFd>,
    /// Where the kernel reports the bytes sent (`sendmmsg`'s `msg_len`).
    report: Option<u64>,
}

impl Call<'_> {
    /// connect, bind, sendto, sendmsg, sendmmsg.
    pub(super) fn socket(&mut self) -> Result<Answer, Stop> {
        match (self.row.op, self.args.op) {
            (Op::Connect, OpArgs::Address { socket, addr, len }) => self.connect(socket, addr, len),
            (Op::Bind, OpArgs::Address { socket, addr, len }) => self.bind(socket, addr, len),
            _ => self.send(),
        }
    }

    /// Reads the socket address at `addr` (`len` bytes), as the kernel's
    /// `move_addr_to_kernel` would: more than a `sockaddr_storage` is
    /// `EINVAL`, an unreadable one `EFAULT`.
    fn address(&self, addr: u64, len: u64) -> Result<Address, Stop> {
        if addr == 0 || len == 0 {
            return Ok(Address::Unnamed);
        }
        if len > ADDRESS_MAX as u64 {
            return Err(Errno::EINVAL.into());
        }
        let mut buf = vec![0u8; len as usize];
        if mem::read(self.notif.pid, addr, &mut buf)? != buf.len() {
            return Err(Errno::EFAULT.into());
        }
        if buf.len() < 2 {
            return Ok(Address::Other(0, buf));
        }
        let family = i32::from(u16::from_ne_bytes([buf[0], buf[1]]));
        Ok(match family {
            libc::AF_UNIX if buf.len() > 2 && buf[2] != 0 => {
                let sun_path = &buf[2..];
                let end = sun_path.iter().position(|&c| c == 0).unwrap_or(sun_path.len());
                Address::Path(sun_path[..end].to_vec())
            }
            libc::AF_UNIX => Address::Abstract(buf),
            libc::AF_INET | libc::AF_INET6 => Address::Inet(buf),
            family => Address::Other(family, buf),
        })
    }

    /// A unix socket path, relative to the caller's cwd unless absolute.
    fn socket_path(&self, bytes: Vec<u8>) -> Result<PathArg, Stop> {
        let base =
            if bytes.first() == Some(&b'/') { None } else { Some((libc::AT_FDCWD, self.open_dir(libc::AT_FDCWD)?)) };
        self.still_valid()?;
        Ok(PathArg { bytes, base })
    }

    /// Decides where a connect or send to `address` on `sock` goes, and
    /// refuses (recording it) what the surface or the network rule does
    /// not allow.
    fn destination(&mut self, address: Address, sock: BorrowedFd<'_>, stream: bool) -> Result<Destination, Stop> {
        match address {
            Address::Unnamed => Ok(Destination { address: None, _held: None }),
            Address::Path(bytes) => {
                let arg = self.socket_path(bytes)?;
                let r = self.resolve(&arg, true, false, 0, false);
                let r = self.check(&arg, r, Access::Write)?;
                match r.target {
                    Target::Exists { fd, stat } if stat.st_mode & libc::S_IFMT == libc::S_IFSOCK => {
                        let path = Resolver::proc_path(fd.as_fd());
                        Ok(Destination { address: Some(unix_address(path.as_bytes())), _held: Some(fd) })
                    }
                    Target::Missing { .. } | Target::Absent => Err(Errno::ENOENT.into()),
                    _ => Err(Errno::ECONNREFUSED.into()),
                }
            }
            Address::Abstract(bytes) => {
                if bytes.len() > 2 && !self.abstract_reachable(sock, &bytes)? {
                    let name = String::from_utf8_lossy(&bytes[3..]).into_owned();
                    let arg = PathArg { bytes: format!("unix:@{name}").into_bytes(), base: None };
                    let why = Why::Note("an abstract socket of the host's, not the sandbox's", RuleKind::Network);
                    if self.cx.ground.learn {
                        self.push(&arg, None, AccessKind::Connect, Verdict::WouldDeny, None, why);
                    } else {
                        self.push(&arg, None, AccessKind::Connect, Verdict::Deny, Some(Errno::EPERM), why);
                        return Err(Errno::EPERM.into());
                    }
                }
                Ok(Destination { address: Some(bytes), _held: None })
            }
            Address::Inet(bytes) => {
                self.inet_allowed(&bytes, stream)?;
                Ok(Destination { address: Some(bytes), _held: None })
            }
            Address::Other(family, bytes) => {
                self.other_family(family)?;
                Ok(Destination { address: Some(bytes), _held: None })
            }
        }
    }

    /// Whether the abstract address `bytes` may be reached from `sock`:
    /// always in a network namespace other than the host's (the command's
    /// own: nothing else is there), else only a name the sandbox bound.
    fn abstract_reachable(&self, sock: BorrowedFd<'_>, bytes: &[u8]) -> Result<bool, Stop> {
        let ns = socket::namespace_of(sock)?;
        if fs::fstat(ns.as_fd())?.st_ino != self.cx.ground.host_netns {
            return Ok(true);
        }
        Ok(self.cx.memory.bound_by_sandbox(bytes))
    }

    fn connect(&mut self, sockfd: i32, addr: u64, len: u64) -> Result<Answer, Stop> {
        let address = self.address(addr, len)?;
        let sock = self.caller_fd(sockfd)?;
        let stream = is_stream(&sock);
        if let (Address::Inet(bytes), NetRule::ProxyOnly(proxy, admission)) = (&address, &self.cx.ground.net) {
            if let Some(to) = inet_address(bytes).filter(|to| stream && canonical(*to) == SocketAddr::V4(*proxy)) {
                let admission = std::sync::Arc::clone(admission);
                return self.proxy_connect(to, sock, admission);
            }
        }
        let unix = matches!(address, Address::Path(_) | Address::Abstract(_));
        let to = self.destination(address, sock.as_fd(), stream)?;
        let status = fs::status_flags(sock.as_fd())?;
        let (blocking, mut first) = (status & libc::O_NONBLOCK == 0, Some(status));
        let attempt = move || -> Result<Answer, Errno> {
            let _held = &to._held;
            let address = to.address.as_deref().unwrap_or_default();
            let r = without_blocking(sock.as_fd(), blocking, first.take(), || {
                // A unix server sees the connecting thread's effective ids
                // as its peer's: the caller's, never interpose's.
                if unix {
                    identity::with_callers_effective_ids(|| socket::connect(sock.as_fd(), address))
                } else {
                    socket::connect(sock.as_fd(), address)
                }
            });
            match r {
                Ok(()) => Ok(Answer::Value(0)),
                // A handshake made on an earlier try: done.
                Err(Errno::EISCONN) if !unix && blocking => Ok(Answer::Value(0)),
                // A unix connect completes at once or not at all: a full
                // backlog is EAGAIN; a TCP one under way is tried again
                // until it ends (EALREADY meanwhile).
                Err(Errno::EINPROGRESS | Errno::EALREADY | Errno::EAGAIN) if blocking => Err(Errno::EAGAIN),
                Err(e) => Err(e),
            }
        };
        self.now_or_later(attempt, blocking, 3)
    }

    /// Makes `attempt` now; if it would block for a blocking caller, hands
    /// it to the retry queue (holding `fds` descriptors).
    pub(super) fn now_or_later(
        &self,
        mut attempt: impl FnMut() -> Result<Answer, Errno> + Send + 'static,
        blocking: bool,
        fds: usize,
    ) -> Result<Answer, Stop> {
        match attempt() {
            Err(Errno::EAGAIN) if blocking => {
                Ok(Answer::Later(Retry { tid: self.notif.pid, fds, attempt: Box::new(attempt) }))
            }
            r => r.map_err(Stop::Fail),
        }
    }

    /// bind: a pathname is decided as a create of the socket file and made
    /// in the checked directory; any other address is bound as read (an
    /// abstract name bound on the host's network namespace is remembered:
    /// the sandbox may reach it later).
    fn bind(&mut self, sockfd: i32, addr: u64, len: u64) -> Result<Answer, Stop> {
        let sock = self.caller_fd(sockfd)?;
        match self.address(addr, len)? {
            Address::Path(bytes) => {
                let arg = self.socket_path(bytes)?;
                let Some((dir, name, dir_path)) = self.bind_place(&arg)? else {
                    return Err(Errno::EADDRINUSE.into());
                };
                let umask = self.umask()?;
                // With a journal, the socket file is a name made there.
                let path = [&dir_path[..], b"/", name.as_bytes()].concat();
                let journal = self.journal_for(&path);
                let mut held = match &journal {
                    Some(j) => Some(kept(j, dir.as_fd(), &dir_path, false)?),
                    None => None,
                };
                // The socket file is made by the kernel's mknod, with the
                // binding thread's umask and in its cwd: this worker's own
                // (`identity::own_fs`), set to the caller's and the checked
                // directory.
                let done = identity::in_directory(dir.as_fd(), umask, || {
                    socket::bind(sock.as_fd(), &unix_address(name.as_bytes()))
                });
                if let (Some(held), Ok(())) = (held.as_mut(), done) {
                    identity::as_supervisor(|| held.made_at(dir.as_fd(), &name, &path))?;
                }
                done.map(|()| Answer::Value(0))
                    .map_err(|e| if e == Errno::EEXIST { Errno::EADDRINUSE } else { e }.into())
            }
            Address::Abstract(bytes) => {
                socket::bind(sock.as_fd(), &bytes)?;
                let ns = socket::namespace_of(sock.as_fd())?;
                if fs::fstat(ns.as_fd())?.st_ino == self.cx.ground.host_netns {
                    // An autobind's name is the kernel's choice: read back.
                    let name: nix::sys::socket::UnixAddr =
                        nix::sys::socket::getsockname(sock.as_raw_fd()).map_err(Stop::Fail)?;
                    if let Some(name) = name.as_abstract() {
                        let mut bytes = (libc::AF_UNIX as u16).to_ne_bytes().to_vec();
                        bytes.push(0);
                        bytes.extend_from_slice(name);
                        self.cx.memory.remember_bound(bytes);
                    }
                }
                Ok(Answer::Value(0))
            }
            Address::Unnamed => Err(Errno::EINVAL.into()),
            Address::Inet(bytes) | Address::Other(_, bytes) => {
                socket::bind(sock.as_fd(), &bytes).map(|()| Answer::Value(0)).map_err(Stop::Fail)
            }
        }
    }

    /// The checked directory and name a pathname bind makes its socket
    /// file in, decided as a create; `None` when the name exists (the
    /// kernel's `EADDRINUSE`) or names no entry.
    fn bind_place(&mut self, arg: &PathArg) -> Result<Option<(OwnedFd, std::ffi::CString, Vec<u8>)>, Stop> {
        match self.parent(arg, Access::Create)? {
            super::Named::Entry(p) => {
                if p.entry()?.is_some() {
                    return Ok(None);
                }
                self.check_entry(arg, &p, Access::Create)?;
                Ok(Some((p.fd, p.name, p.path)))
            }
            super::Named::Nameless(..) => Ok(None),
        }
    }

    /// sendto (with an address: one without is not trapped), sendmsg,
    /// sendmmsg.
    fn send(&mut self) -> Result<Answer, Stop> {
        // Each message's msghdr in the caller (none for sendto).
        let (socket, headers, flags): (i32, Vec<Option<u64>>, u64) = match self.args.op {
            OpArgs::Sendto { socket, flags, .. } => (socket, vec![None], flags),
            OpArgs::Sendmsg { socket, msg, flags } => (socket, vec![Some(msg)], flags),
            OpArgs::Sendmmsg { socket, vec, vlen, flags } => {
                let count = vlen.min(UIO_MAXIOV);
                (socket, (0..count).map(|i| Some(vec.wrapping_add(i * MMSGHDR))).collect(), flags)
            }
            _ => return Err(MISDECODED.into()),
        };
        let sock = self.caller_fd(socket)?;
        let stream = is_stream(&sock);
        let mut messages = Vec::with_capacity(headers.len());
        for h in headers {
            let (name, namelen, data, control) = match (h, self.args.op) {
                (None, OpArgs::Sendto { buf, len, addr, addrlen, .. }) => {
                    (addr, addrlen, self.read_buffer(buf, len)?, Vec::new())
                }
                (None, _) => return Err(MISDECODED.into()),
                (Some(h), _) => {
                    let [name, namelen, iov, iovlen, control, controllen, _] = self.msghdr(h)?;
                    let data = self.gather(iov, iovlen)?;
                    let control = if controllen == 0 { Vec::new() } else { self.read_control(control, controllen)? };
                    (name, namelen & 0xffff_ffff, data, control)
                }
            };
            let address = self.address(name, namelen)?;
            let to = self.destination(address, sock.as_fd(), stream)?;
            let (control, rights) = self.translate_control(&control)?;
            let report = h.filter(|_| self.row.op == Op::Sendmmsg).map(|h| h + 56);
            messages.push(Message { to, data, control, rights, report });
        }
        let blocking =
            flags & libc::MSG_DONTWAIT as u64 == 0 && fs::status_flags(sock.as_fd())? & libc::O_NONBLOCK == 0;
        let signal = flags & libc::MSG_NOSIGNAL as u64 == 0;
        // Never a signal to the supervisor, never a wait in a worker.
        let flags = (flags as i32 & !libc::MSG_DONTWAIT) | libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT;
        let (pid, tid, vector) = (self.notif.pid, self.notif.pid, self.row.op == Op::Sendmmsg);
        let tgid = *self.tgid.get().unwrap_or(&tid);
        let fds = 1 + messages.iter().map(|m| usize::from(m.to._held.is_some()) + m.rights.len()).sum::<usize>();
        let mut sent = 0usize;
        let attempt = move || -> Result<Answer, Errno> {
            while let Some(m) = messages.get(sent) {
                let result = identity::with_callers_effective_ids(|| {
                    socket::sendmsg(sock.as_fd(), m.to.address.as_deref(), &m.data, &m.control, flags)
                });
                match result {
                    Ok(n) => {
                        if let Some(at) = m.report {
                            // Best effort, as the kernel's own put_user.
                            let _ = mem::write(pid, at, &(n as u32).to_ne_bytes());
                        }
                        sent += 1;
                        if !vector {
                            return Ok(Answer::Value(n as i64));
                        }
                    }
                    // sendmmsg reports what it sent before an error.
                    Err(_) if sent > 0 => return Ok(Answer::Value(sent as i64)),
                    Err(e) => {
                        if e == Errno::EPIPE && signal {
                            // The signal the kernel would have sent the
                            // sending thread.
                            let _ = crate::sys::process::tgkill(tgid, tid, libc::SIGPIPE);
                        }
                        return Err(e);
                    }
                }
            }
            Ok(Answer::Value(sent as i64))
        };
        self.now_or_later(attempt, blocking, fds)
    }

    /// `len` bytes at `addr` in the caller (at most [`DATA_MAX`]).
    fn read_buffer(&self, addr: u64, len: u64) -> Result<Vec<u8>, Stop> {
        let len = (len as usize).min(DATA_MAX);
        let mut data = vec![0u8; len];
        if len > 0 && mem::read(self.notif.pid, addr, &mut data)? != data.len() {
            return Err(Errno::EFAULT.into());
        }
        Ok(data)
    }

    /// The seven words of the `struct msghdr` at `at`: name, namelen, iov,
    /// iovlen, control, controllen, flags.
    fn msghdr(&self, at: u64) -> Result<[u64; 7], Stop> {
        let mut raw = [0u8; 56];
        if mem::read(self.notif.pid, at, &mut raw)? != raw.len() {
            return Err(Errno::EFAULT.into());
        }
        let mut words = [0u64; 7];
        for (w, chunk) in words.iter_mut().zip(raw.chunks_exact(8)) {
            *w = u64::from_ne_bytes(chunk.try_into().expect("8 bytes"));
        }
        Ok(words)
    }

    /// The data a message's `iovlen` iovecs at `iov` point to, gathered (at
    /// most [`DATA_MAX`] bytes: a stream send of more is sent in part).
    fn gather(&self, iov: u64, iovlen: u64) -> Result<Vec<u8>, Stop> {
        if iovlen > UIO_MAXIOV {
            return Err(Errno::EMSGSIZE.into());
        }
        let mut data = Vec::new();
        for i in 0..iovlen {
            let mut raw = [0u8; 16];
            if mem::read(self.notif.pid, iov.wrapping_add(16 * i), &mut raw)? != raw.len() {
                return Err(Errno::EFAULT.into());
            }
            let base = u64::from_ne_bytes(raw[..8].try_into().expect("8 bytes"));
            let len = u64::from_ne_bytes(raw[8..].try_into().expect("8 bytes"));
            let room = (DATA_MAX - data.len()) as u64;
            data.extend(self.read_buffer(base, len.min(room))?);
            if data.len() == DATA_MAX {
                break;
            }
        }
        Ok(data)
    }

    /// The control buffer at `at`, `len` bytes.
    fn read_control(&self, at: u64, len: u64) -> Result<Vec<u8>, Stop> {
        if len > CONTROL_MAX {
            return Err(Errno::ENOBUFS.into());
        }
        self.read_buffer(at, len)
    }

    /// The caller's control messages made the supervisor's: the
    /// descriptors `SCM_RIGHTS` passes are duplicated from the caller and
    /// their numbers replaced by the duplicates', and the pid `SCM_CREDENTIALS`
    /// names, which must be the sender's, by interpose's when it is the
    /// caller's own (the kernel checks it against the thread that sends,
    /// which is the supervisor's). Everything else is passed on as written.
    fn translate_control(&self, control: &[u8]) -> Result<(Vec<u8>, Vec<OwnedFd>), Stop> {
        let mut out = control.to_vec();
        let mut rights = Vec::new();
        let mut off = 0usize;
        // struct cmsghdr: cmsg_len (8 bytes), cmsg_level, cmsg_type (4 each),
        // then the data, each header aligned to 8.
        while off + 16 <= out.len() {
            let cmsg_len = u64::from_ne_bytes(out[off..off + 8].try_into().expect("8 bytes")) as usize;
            let level = i32::from_ne_bytes(out[off + 8..off + 12].try_into().expect("4 bytes"));
            let kind = i32::from_ne_bytes(out[off + 12..off + 16].try_into().expect("4 bytes"));
            if cmsg_len < 16 || off + cmsg_len > out.len() {
                return Err(Errno::EINVAL.into());
            }
            if level == libc::SOL_SOCKET && kind == libc::SCM_RIGHTS {
                for at in (off + 16..off + cmsg_len).step_by(4).filter(|at| at + 4 <= off + cmsg_len) {
                    let fd = i32::from_ne_bytes(out[at..at + 4].try_into().expect("4 bytes"));
                    let ours = self.caller_fd(fd)?;
                    out[at..at + 4].copy_from_slice(&ours.as_raw_fd().to_ne_bytes());
                    rights.push(ours);
                }
                if rights.len() > SCM_MAX_FD {
                    return Err(Errno::EINVAL.into());
                }
            } else if level == libc::SOL_SOCKET && kind == libc::SCM_CREDENTIALS && cmsg_len >= 16 + 12 {
                let pid = i32::from_ne_bytes(out[off + 16..off + 20].try_into().expect("4 bytes"));
                let (own, _) = self.own_ids();
                if pid == own as i32 {
                    out[off + 16..off + 20].copy_from_slice(&(std::process::id() as i32).to_ne_bytes());
                }
            }
            off += (cmsg_len + 7) & !7;
        }
        Ok((out, rights))
    }

    /// The caller's process and thread ids in its own PID namespace.
    fn own_ids(&self) -> (u32, u32) {
        let no_base = PathArg { bytes: Vec::new(), base: None };
        self.caller(&no_base, None).ids_in_own_namespace()
    }

    /// Whether the network rule lets `sock` reach the IPv4 or IPv6
    /// address `bytes`; a refusal is recorded. Under `--net connect=PORTS`
    /// only TCP connects to those ports (Landlock enforces the same list;
    /// deciding here records the refusals).
    fn inet_allowed(&mut self, bytes: &[u8], stream: bool) -> Result<(), Stop> {
        let (host, port) = inet_text(bytes);
        match &self.cx.ground.net {
            NetRule::Open => Ok(()),
            NetRule::OwnNamespace(forwarded) => match inet_address(bytes) {
                // A host loopback service the allowlist names, forwarded by
                // interpose: who connected is recorded here, the bytes and
                // the end by the forwarder.
                Some(a) if stream && self.row.op == Op::Connect && forwarded.contains(&canonical(a)) => {
                    let arg = PathArg { bytes: format!("tcp:{}", inet_text_of(a)).into_bytes(), base: None };
                    let why = Why::Note("a host loopback service the allowlist names (forwarded)", RuleKind::Network);
                    self.push(&arg, None, AccessKind::Connect, Verdict::Allow, None, why);
                    Ok(())
                }
                // The namespace's own loopback, where the proxy listens.
                Some(a) if loopback(a.ip()) => Ok(()),
                _ => self.refuse_inet(&format!("{}:{host}:{port}", kind(stream))),
            },
            // Only the proxy is reached (connected above), and it takes no
            // datagrams.
            NetRule::ProxyOnly(..) => self.refuse_inet(&format!("{}:{host}:{port}", kind(stream))),
            NetRule::Ports(ports) => {
                if !stream || self.row.op != Op::Connect {
                    return Ok(());
                }
                let arg = PathArg { bytes: format!("tcp:{host}:{port}").into_bytes(), base: None };
                let why = |allowed| {
                    Why::Note(
                        if allowed { "port allowed by --net connect=" } else { "port not in --net connect=" },
                        RuleKind::Network,
                    )
                };
                if ports.contains(&port) {
                    self.push(&arg, None, AccessKind::Connect, Verdict::Allow, None, why(true));
                    Ok(())
                } else if self.cx.ground.learn {
                    self.push(&arg, None, AccessKind::Connect, Verdict::WouldDeny, None, why(false));
                    Ok(())
                } else {
                    self.push(&arg, None, AccessKind::Connect, Verdict::Deny, Some(Errno::EACCES), why(false));
                    Err(Errno::EACCES.into())
                }
            }
        }
    }

    /// A connect to the proxy on the host's loopback: the supervisor connects
    /// the caller's own socket (the open file description, so neither the
    /// address nor the socket can change after the check), admitting its
    /// local port to the proxy first.
    fn proxy_connect(
        &mut self,
        to: SocketAddr,
        sock: OwnedFd,
        admission: std::sync::Arc<crate::network::Admission>,
    ) -> Result<Answer, Stop> {
        let subject = format!("tcp:{}", inet_text_of(to));
        let arg = PathArg { bytes: subject.into_bytes(), base: None };
        let note = Why::Note("interpose's network proxy", RuleKind::Network);
        self.push(&arg, None, AccessKind::Connect, Verdict::Allow, None, note);
        // The local port is known before the connect starts (bound here if
        // the caller did not bind it: the kernel would pick one from the
        // same range), so the proxy finds its admission when it accepts.
        let port = local_port(sock.as_fd(), to.is_ipv6())?;
        admission.admit(port);
        let status = fs::status_flags(sock.as_fd())?;
        let (blocking, mut first) = (status & libc::O_NONBLOCK == 0, Some(status));
        let attempt = move || -> Result<Answer, Errno> {
            let r = without_blocking(sock.as_fd(), blocking, first.take(), || match to {
                SocketAddr::V4(a) => {
                    nix::sys::socket::connect(sock.as_raw_fd(), &nix::sys::socket::SockaddrIn::from(a))
                }
                SocketAddr::V6(a) => {
                    nix::sys::socket::connect(sock.as_raw_fd(), &nix::sys::socket::SockaddrIn6::from(a))
                }
            });
            match r {
                Ok(()) | Err(Errno::EISCONN) => Ok(Answer::Value(0)),
                // Under way: a blocking caller waits in the retry queue
                // until the handshake ends; a non-blocking one is told so.
                Err(Errno::EINPROGRESS | Errno::EALREADY) if blocking => Err(Errno::EAGAIN),
                Err(e @ (Errno::EINPROGRESS | Errno::EALREADY)) => Err(e),
                Err(e) => {
                    admission.withdraw(port);
                    Err(e)
                }
            }
        };
        self.now_or_later(attempt, blocking, 1)
    }

    /// Refuses a direct IPv4/IPv6 connection or datagram with the proxy in
    /// place, recording the address it named (learning: records it and
    /// goes on).
    fn refuse_inet(&mut self, subject: &str) -> Result<(), Stop> {
        let arg = PathArg { bytes: subject.as_bytes().to_vec(), base: None };
        let note = Why::Note(crate::audit::DIRECT_REFUSED, RuleKind::Network);
        if self.cx.ground.learn {
            self.push(&arg, None, AccessKind::Connect, Verdict::WouldDeny, None, note);
            return Ok(());
        }
        self.push(&arg, None, AccessKind::Connect, Verdict::Deny, Some(Errno::EACCES), note);
        Err(Errno::EACCES.into())
    }

    /// An address of a family that is neither unix, IPv4 nor IPv6: with
    /// the proxy only netlink (the kernel's own routing and address
    /// information) and `AF_UNSPEC` (which dissolves a datagram socket's
    /// association) pass; anything else (vsock to the hypervisor, TIPC, ...)
    /// is refused.
    fn other_family(&mut self, family: i32) -> Result<(), Stop> {
        let local = matches!(family, libc::AF_NETLINK | libc::AF_UNSPEC);
        if self.cx.ground.net.proxied() && !local {
            let arg = PathArg { bytes: format!("family {family}").into_bytes(), base: None };
            let note = Why::Note(crate::audit::DIRECT_REFUSED, RuleKind::Network);
            if !self.cx.ground.learn {
                self.push(&arg, None, AccessKind::Connect, Verdict::Deny, Some(Errno::EACCES), note);
                return Err(Errno::EACCES.into());
            }
            self.push(&arg, None, AccessKind::Connect, Verdict::WouldDeny, None, note);
        }
        Ok(())
    }
}

/// A `sockaddr_un` naming the pathname socket `path`, as bytes.
fn unix_address(path: &[u8]) -> Vec<u8> {
    let mut out = (libc::AF_UNIX as u16).to_ne_bytes().to_vec();
    out.extend_from_slice(path);
    out.push(0);
    out
}

/// Whether `sock` is a stream (TCP) socket.
fn is_stream(sock: &OwnedFd) -> bool {
    nix::sys::socket::getsockopt(sock, nix::sys::socket::sockopt::SockType)
        .is_ok_and(|t| t == nix::sys::socket::SockType::Stream)
}

/// How a refused address is named in the trail: `tcp:` for a stream
/// socket, `udp:` for any other.
fn kind(stream: bool) -> &'static str {
    if stream {
        "tcp"
    } else {
        "udp"
    }
}

/// The host and port of an IPv4 or IPv6 address as the caller wrote it.
fn inet_text(addr: &[u8]) -> (String, u16) {
    match inet_address(addr) {
        Some(SocketAddr::V6(a)) => (format!("[{}]", a.ip()), a.port()),
        Some(a) => (a.ip().to_string(), a.port()),
        None => ("?".into(), 0),
    }
}

/// `HOST:PORT` of an address, IPv6 hosts in brackets.
fn inet_text_of(to: SocketAddr) -> String {
    match to {
        SocketAddr::V6(a) => format!("[{}]:{}", a.ip(), a.port()),
        a => a.to_string(),
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is.
fn canonical(to: SocketAddr) -> SocketAddr {
    match to {
        SocketAddr::V6(v6) => v6.ip().to_ipv4_mapped().map_or(to, |v4| SocketAddr::new(v4.into(), v6.port())),
        v4 => v4,
    }
}

/// The local port of the caller's socket `sock`, bound first to the
/// loopback at a port the kernel picks when it has none.
fn local_port(sock: BorrowedFd<'_>, ipv6: bool) -> Result<u16, Errno> {
    use nix::sys::socket::{bind, getsockname, SockaddrIn, SockaddrIn6, SockaddrStorage};
    let port = |sock: BorrowedFd<'_>| -> Result<u16, Errno> {
        let name: SockaddrStorage = getsockname(sock.as_raw_fd())?;
        Ok(name.as_sockaddr_in().map(|a| a.port()).or_else(|| name.as_sockaddr_in6().map(|a| a.port())).unwrap_or(0))
    };
    match port(sock)? {
        0 if ipv6 => {
            let any = std::net::SocketAddrV6::new(std::net::Ipv4Addr::LOCALHOST.to_ipv6_mapped(), 0, 0, 0);
            bind(sock.as_raw_fd(), &SockaddrIn6::from(any))?;
        }
        0 => bind(sock.as_raw_fd(), &SockaddrIn::new(127, 0, 0, 1, 0))?,
        p => return Ok(p),
    }
    port(sock)
}

/// Whether `ip` is a loopback address (IPv4-mapped too).
fn loopback(ip: std::net::IpAddr) -> bool {
    match ip {
        std::net::IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(v6.is_loopback(), |v4| v4.is_loopback()),
        v4 => v4.is_loopback(),
    }
}

/// An IPv4 or IPv6 socket address as the caller wrote it.
fn inet_address(addr: &[u8]) -> Option<SocketAddr> {
    let port = u16::from_be_bytes([*addr.get(2)?, *addr.get(3)?]);
    match i32::from(u16::from_ne_bytes([addr[0], addr[1]])) {
        libc::AF_INET if addr.len() >= 8 => {
            Some(SocketAddr::new(std::net::Ipv4Addr::new(addr[4], addr[5], addr[6], addr[7]).into(), port))
        }
        libc::AF_INET6 if addr.len() >= 24 => {
            let ip = std::net::Ipv6Addr::from(<[u8; 16]>::try_from(&addr[8..24]).ok()?);
            Some(SocketAddr::new(ip.into(), port))
        }
        _ => None,
    }
}

/// Runs `f` with `O_NONBLOCK` set on `sock`'s open file description when
/// the caller's socket is `blocking`, and cleared again after (only that
/// flag: others the caller sets meanwhile stay). `status` is the
/// description's flags as the call was decided just before (the first
/// attempt's: one `F_GETFL` fewer), `None` for a later attempt, which reads
/// them again.
fn without_blocking<T>(
    sock: BorrowedFd<'_>,
    blocking: bool,
    status: Option<i32>,
    f: impl FnOnce() -> Result<T, Errno>,
) -> Result<T, Errno> {
    if !blocking {
        return f();
    }
    let status = match status {
        Some(read) => read,
        None => fs::status_flags(sock)?,
    };
    fs::set_status_flags(sock, status | libc::O_NONBLOCK)?;
    let result = f();
    let restored = fs::status_flags(sock).and_then(|now| fs::set_status_flags(sock, now & !libc::O_NONBLOCK));
    if let Err(e) = restored {
        tracing::warn!("restoring a blocking socket after connect failed: {e}");
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_addresses_name_the_path_with_its_nul() {
        let a = unix_address(b"/proc/self/fd/7");
        assert_eq!(&a[..2], &(libc::AF_UNIX as u16).to_ne_bytes());
        assert_eq!(&a[2..], b"/proc/self/fd/7\0");
    }

    #[test]
    fn loopback_is_told_apart_in_both_families() {
        assert!(loopback("127.0.0.2".parse().unwrap()));
        assert!(loopback("::1".parse().unwrap()));
        assert!(loopback("::ffff:127.0.0.1".parse().unwrap()));
        assert!(!loopback("10.0.0.1".parse().unwrap()));
    }
}
