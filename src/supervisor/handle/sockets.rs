//! Socket addresses: `connect`, `bind` and the datagram sends.
//!
//! A pathname unix address is a file like any other: decided with `write`
//! (`create` for bind) on its real location. Then the supervisor connects
//! the caller's own socket (`pidfd_getfd` gives the same open file
//! description) to the socket file it checked, and sends a datagram from
//! it to that file, named through its own handle (`/proc/self/fd/N`), so
//! no path can be swapped after the check. Neither ever blocks a worker: a
//! full backlog or a full receive queue hands the call to
//! [`super::super::later`], which retries it without blocking.

use super::{Call, PathArg, Stop, Why};
use crate::audit::{AccessKind, RuleKind, Verdict};
use crate::policy::Access;
use crate::supervisor::identity;
use crate::supervisor::later::Retry;
use crate::supervisor::resolve::{Resolver, Target};
use crate::supervisor::{Answer, NetRule};
use crate::sys::{fs, mem, Errno};
use crate::syscalls::Op;
use std::net::{SocketAddr, SocketAddrV4};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

/// `struct mmsghdr`: a `msghdr` (56 bytes) and `msg_len`, padded to 64.
const MMSGHDR: u64 = 64;
/// The most messages one `sendmmsg` sends (`UIO_MAXIOV`), and the most
/// pieces one message is gathered from.
const UIO_MAXIOV: u64 = 1024;
/// The most descriptors one message may carry (`SCM_MAX_FD`).
const SCM_MAX_FD: usize = 253;
/// The largest datagram read from the caller (Linux caps a unix datagram
/// by the socket's send buffer, far below this).
const DATAGRAM_MAX: usize = 8 << 20;
/// The largest control buffer read from the caller.
const CONTROL_MAX: u64 = 64 << 10;

/// What a socket address names.
enum Address {
    /// None (a NULL pointer, or only a family): the connected peer.
    Unnamed,
    /// An IPv4 or IPv6 address, as the caller wrote it.
    Inet(Vec<u8>),
    /// A pathname unix socket.
    Path(Vec<u8>),
    /// An abstract unix address (no file; Landlock scopes abstract unix
    /// sockets to the sandbox), or another family, named.
    Elsewhere(i32),
}

/// One datagram, read from the caller and ready to send.
struct Datagram {
    /// The checked socket file it goes to; `None` for the connected peer.
    to: Option<OwnedFd>,
    data: Vec<u8>,
    /// Duplicates of the descriptors it passes (`SCM_RIGHTS`).
    rights: Vec<OwnedFd>,
    /// Where the kernel reports the bytes sent (`sendmmsg`'s `msg_len`).
    report: Option<u64>,
}

impl Call<'_> {
    /// connect, bind, sendto, sendmsg, sendmmsg.
    pub(super) fn socket(&mut self) -> Result<Answer, Stop> {
        let a = self.notif.data.args;
        let x = self.row.extra.expect("socket rows name their address argument") as usize;
        match self.row.op {
            Op::Connect => self.connect(a[x], a[x + 1]),
            Op::Bind => {
                if let Address::Path(bytes) = self.address(a[x], a[x + 1])? {
                    let arg = self.socket_path(bytes)?;
                    let r = self.resolve(&arg, false, false, 0);
                    self.check(&arg, r, Access::Create)?;
                }
                // Landlock's MAKE_SOCK on the write surface backs the kernel's
                // own lookup of the name.
                Ok(Answer::Continue)
            }
            _ => self.send(),
        }
    }

    /// Reads the socket address at `addr` (`len` bytes).
    fn address(&self, addr: u64, len: u64) -> Result<Address, Stop> {
        const SUN_PATH_MAX: usize = 108;
        if addr == 0 || len <= 2 {
            return Ok(Address::Unnamed);
        }
        let mut buf = [0u8; 2 + SUN_PATH_MAX];
        let len = (len as usize).min(buf.len());
        if mem::read(self.notif.pid, addr, &mut buf[..len])? != len {
            return Err(Errno::EFAULT.into());
        }
        let family = i32::from(u16::from_ne_bytes([buf[0], buf[1]]));
        let sun_path = &buf[2..len];
        Ok(match family {
            libc::AF_INET | libc::AF_INET6 if len >= 4 => Address::Inet(buf[..len].to_vec()),
            libc::AF_UNIX if sun_path[0] != 0 => {
                let end = sun_path.iter().position(|&c| c == 0).unwrap_or(sun_path.len());
                Address::Path(sun_path[..end].to_vec())
            }
            family => Address::Elsewhere(family),
        })
    }

    /// A unix socket path, relative to the caller's cwd unless absolute.
    fn socket_path(&self, bytes: Vec<u8>) -> Result<PathArg, Stop> {
        let base =
            if bytes.first() == Some(&b'/') { None } else { Some((libc::AT_FDCWD, self.open_dir(libc::AT_FDCWD)?)) };
        self.still_valid()?;
        Ok(PathArg { bytes, base })
    }

    /// Decides a pathname destination with `write` and returns the handle
    /// on the socket file checked.
    fn destination(&mut self, bytes: Vec<u8>) -> Result<OwnedFd, Stop> {
        let arg = self.socket_path(bytes)?;
        let r = self.resolve(&arg, true, false, 0);
        let r = self.check(&arg, r, Access::Write)?;
        match r.target {
            Target::Exists { fd, stat } if stat.st_mode & libc::S_IFMT == libc::S_IFSOCK => Ok(fd),
            Target::Missing { .. } => Err(Errno::ENOENT.into()),
            _ => Err(Errno::ECONNREFUSED.into()),
        }
    }

    fn connect(&mut self, addr: u64, len: u64) -> Result<Answer, Stop> {
        let sockfd = self.notif.data.args[0] as i32;
        let bytes = match self.address(addr, len)? {
            Address::Inet(addr) => return self.inet_connect(&addr, sockfd),
            Address::Path(bytes) => bytes,
            Address::Elsewhere(family) => return self.other_family(family),
            Address::Unnamed => return Ok(Answer::Continue),
        };
        let socket_file = self.destination(bytes)?;
        // The caller's own socket: a duplicate of its descriptor shares the
        // open file description.
        let sock = self.caller_fd(sockfd)?;
        let path = Resolver::proc_path(socket_file.as_fd());
        let blocking = fs::status_flags(sock.as_fd())? & libc::O_NONBLOCK == 0;
        let attempt = move || {
            // The server sees the connecting thread's effective ids as the
            // peer's: the caller's, never interpose's.
            without_blocking(sock.as_fd(), blocking, || {
                identity::with_callers_effective_ids(|| fs::connect_unix(sock.as_fd(), path.as_bytes()))
            })
            .map(|()| 0)
        };
        match attempt() {
            // A unix connect completes at once or not at all: a full backlog
            // is EAGAIN, tried again until the server makes room.
            Err(Errno::EAGAIN) if blocking => Ok(Answer::Later(Retry {
                tid: self.notif.pid,
                fds: 2,
                attempt: Box::new(move || {
                    let _held = &socket_file;
                    attempt()
                }),
            })),
            r => r.map(Answer::Value).map_err(Stop::Fail),
        }
    }

    /// sendto, sendmsg, sendmmsg. Datagrams to a pathname unix socket are
    /// sent by the supervisor to the socket file it checked; anything else
    /// is decided (where it is a path) and continued: a stream or seqpacket
    /// socket never looks a send's address up.
    fn send(&mut self) -> Result<Answer, Stop> {
        let a = self.notif.data.args;
        let x = self.row.extra.expect("send rows name their address argument") as usize;
        // Each message's msghdr in the caller (none for sendto) and address.
        let (headers, flags): (Vec<Option<u64>>, u64) = match self.row.op {
            Op::Sendto => (vec![None], a[3]),
            Op::Sendmsg => (vec![Some(a[x])], a[2]),
            _ => {
                let count = (a[x + 1] & 0xffff_ffff).min(UIO_MAXIOV);
                ((0..count).map(|i| Some(a[x].wrapping_add(i * MMSGHDR))).collect(), a[3])
            }
        };
        let mut addresses = Vec::with_capacity(headers.len());
        for h in &headers {
            let (addr, len) = match h {
                None => (a[x], a[x + 1]),
                Some(h) => self.msg_name(*h)?,
            };
            addresses.push(self.address(addr, len)?);
        }
        if self.sup.net().proxied() {
            // Only the proxy is reached, and it takes no datagrams: an IPv4
            // or IPv6 address in a send is refused whatever the socket
            // (its type could change under the same number before the
            // kernel looked at it); in a namespace of the command's own,
            // its loopback is its own.
            let own = matches!(self.sup.net(), NetRule::OwnNamespace);
            for d in &addresses {
                match d {
                    Address::Inet(addr) if own && inet_address(addr).is_some_and(|a| loopback(a.ip())) => {}
                    Address::Inet(addr) => {
                        let (host, port) = inet_text(addr);
                        return self.refuse_inet(&format!("udp:{host}:{port}"));
                    }
                    Address::Elsewhere(family) => {
                        self.other_family(*family)?;
                    }
                    _ => {}
                }
            }
        }
        if !addresses.iter().any(|d| matches!(d, Address::Path(_))) {
            return Ok(Answer::Continue);
        }
        let sock = self.caller_fd(a[0] as i32)?;
        let stream = nix::sys::socket::getsockopt(&sock, nix::sys::socket::sockopt::SockType).map_err(Stop::Fail)?
            != nix::sys::socket::SockType::Datagram;
        if stream || addresses.iter().any(|d| matches!(d, Address::Elsewhere(_) | Address::Inet(_))) {
            // Stream and seqpacket sockets ignore the address (or refuse
            // it); a vector mixing pathname and abstract destinations is
            // not sent by the supervisor (an abstract one would escape the
            // sandbox's Landlock scope): the names are decided, and the
            // kernel sends, or refuses, the rest.
            for d in addresses {
                if let Address::Path(bytes) = d {
                    self.destination(bytes)?;
                }
            }
            return if stream { Ok(Answer::Continue) } else { Err(Errno::EPERM.into()) };
        }
        let mut datagrams = Vec::with_capacity(headers.len());
        for (h, d) in headers.into_iter().zip(addresses) {
            let to = match d {
                Address::Path(bytes) => Some(self.destination(bytes)?),
                _ => None,
            };
            let (data, rights) = match h {
                None => (self.read_buffer(a[1], a[2])?, Vec::new()),
                Some(h) => self.read_message(h)?,
            };
            let report = h.filter(|_| self.row.op == Op::Sendmmsg).map(|h| h + 56);
            datagrams.push(Datagram { to, data, rights, report });
        }
        let blocking =
            flags & libc::MSG_DONTWAIT as u64 == 0 && fs::status_flags(sock.as_fd())? & libc::O_NONBLOCK == 0;
        // Never a signal to the supervisor, never a wait in a worker.
        let flags = (flags as i32 & !libc::MSG_DONTWAIT) | libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT;
        let (pid, vector) = (self.notif.pid, self.row.op == Op::Sendmmsg);
        let fds = 1 + datagrams.iter().map(|d| usize::from(d.to.is_some()) + d.rights.len()).sum::<usize>();
        let mut sent = 0usize;
        let mut attempt = move || -> Result<i64, Errno> {
            while let Some(d) = datagrams.get(sent) {
                let to = d.to.as_ref().map(|f| Resolver::proc_path(f.as_fd()));
                let rights: Vec<_> = d.rights.iter().map(AsRawFd::as_raw_fd).collect();
                let result = identity::with_callers_effective_ids(|| {
                    fs::send_unix(sock.as_fd(), to.as_ref().map(|p| p.as_bytes()), &d.data, &rights, flags)
                });
                match result {
                    Ok(n) => {
                        if let Some(at) = d.report {
                            // Best effort, as the kernel's own put_user.
                            let _ = mem::write(pid, at, &(n as u32).to_ne_bytes());
                        }
                        sent += 1;
                        if !vector {
                            return Ok(n as i64);
                        }
                    }
                    // sendmmsg reports what it sent before an error.
                    Err(_) if sent > 0 => return Ok(sent as i64),
                    Err(e) => return Err(e),
                }
            }
            Ok(sent as i64)
        };
        match attempt() {
            Err(Errno::EAGAIN) if blocking => {
                Ok(Answer::Later(Retry { tid: self.notif.pid, fds, attempt: Box::new(attempt) }))
            }
            r => r.map(Answer::Value).map_err(Stop::Fail),
        }
    }

    /// `len` bytes at `addr` in the caller.
    fn read_buffer(&self, addr: u64, len: u64) -> Result<Vec<u8>, Stop> {
        if len as usize > DATAGRAM_MAX {
            return Err(Errno::EMSGSIZE.into());
        }
        let mut data = vec![0u8; len as usize];
        if len > 0 && mem::read(self.notif.pid, addr, &mut data)? != data.len() {
            return Err(Errno::EFAULT.into());
        }
        Ok(data)
    }

    /// The `msg_name` pointer and `msg_namelen` of the `struct msghdr` at
    /// `at` in the caller.
    fn msg_name(&self, at: u64) -> Result<(u64, u64), Stop> {
        let h = self.msghdr(at)?;
        Ok((h[0], h[1] & 0xffff_ffff))
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

    /// The data (gathered from its iovecs) and passed descriptors of the
    /// message whose `msghdr` is at `at`.
    fn read_message(&self, at: u64) -> Result<(Vec<u8>, Vec<OwnedFd>), Stop> {
        let [_, _, iov, iovlen, control, controllen, _] = self.msghdr(at)?;
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
            if data.len() as u64 + len > DATAGRAM_MAX as u64 {
                return Err(Errno::EMSGSIZE.into());
            }
            data.extend(self.read_buffer(base, len)?);
        }
        let rights = if controllen == 0 { Vec::new() } else { self.read_rights(control, controllen)? };
        Ok((data, rights))
    }

    /// The descriptors an `SCM_RIGHTS` control message passes, taken from
    /// the caller. Explicit `SCM_CREDENTIALS` are refused: the kernel
    /// checks them against the sender, which would be the supervisor.
    fn read_rights(&self, at: u64, len: u64) -> Result<Vec<OwnedFd>, Stop> {
        if len > CONTROL_MAX {
            return Err(Errno::ENOBUFS.into());
        }
        let buf = self.read_buffer(at, len)?;
        let mut rights = Vec::new();
        let mut off = 0usize;
        // struct cmsghdr: cmsg_len (8 bytes), cmsg_level, cmsg_type (4 each),
        // then the data, each header aligned to 8.
        while off + 16 <= buf.len() {
            let cmsg_len = u64::from_ne_bytes(buf[off..off + 8].try_into().expect("8 bytes")) as usize;
            let level = i32::from_ne_bytes(buf[off + 8..off + 12].try_into().expect("4 bytes"));
            let kind = i32::from_ne_bytes(buf[off + 12..off + 16].try_into().expect("4 bytes"));
            if cmsg_len < 16 || off + cmsg_len > buf.len() {
                return Err(Errno::EINVAL.into());
            }
            if level == libc::SOL_SOCKET {
                match kind {
                    libc::SCM_RIGHTS => {
                        for fd in buf[off + 16..off + cmsg_len].chunks_exact(4) {
                            let fd = i32::from_ne_bytes(fd.try_into().expect("4 bytes"));
                            rights.push(self.caller_fd(fd)?);
                        }
                        if rights.len() > SCM_MAX_FD {
                            return Err(Errno::EINVAL.into());
                        }
                    }
                    libc::SCM_CREDENTIALS => return Err(Errno::EPERM.into()),
                    _ => return Err(Errno::EINVAL.into()),
                }
            }
            off += (cmsg_len + 7) & !7;
        }
        Ok(rights)
    }

    /// An IPv4 or IPv6 connect: continued on the host's network or a
    /// namespace of the command's own; under `--net connect=PORTS` a TCP
    /// socket may connect only to those ports (Landlock enforces the same
    /// list; deciding here records the refusals); with the proxy on the
    /// host's loopback, only the proxy, connected by the supervisor.
    fn inet_connect(&mut self, addr: &[u8], sockfd: i32) -> Result<Answer, Stop> {
        let ports = match self.sup.net() {
            NetRule::Open => return Ok(Answer::Continue),
            NetRule::OwnNamespace => {
                return match inet_address(addr) {
                    Some(a) if loopback(a.ip()) => Ok(Answer::Continue),
                    _ => {
                        let (host, port) = inet_text(addr);
                        let stream = self.caller_fd(sockfd).is_ok_and(|sock| is_stream(&sock));
                        self.refuse_inet(&format!("{}:{host}:{port}", kind(stream)))
                    }
                };
            }
            NetRule::ProxyOnly(proxy, admission) => {
                let (proxy, admission) = (*proxy, std::sync::Arc::clone(admission));
                return self.proxy_connect(addr, sockfd, proxy, admission);
            }
            NetRule::Ports(ports) => ports.clone(),
        };
        let (host, port) = inet_text(addr);
        let sock = self.caller_fd(sockfd)?;
        if !is_stream(&sock) {
            return Ok(Answer::Continue);
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
            Ok(Answer::Continue)
        } else if self.sup.learns() {
            self.push(&arg, None, AccessKind::Connect, Verdict::WouldDeny, None, why(false));
            Ok(Answer::Continue)
        } else {
            self.push(&arg, None, AccessKind::Connect, Verdict::Deny, Some(Errno::EACCES), why(false));
            Err(Errno::EACCES.into())
        }
    }

    /// A connect with the proxy on the host's loopback: to the proxy, the
    /// supervisor connects the caller's own socket (the open file
    /// description, so neither the address nor the socket can change after
    /// the check); anything else is refused and recorded.
    fn proxy_connect(
        &mut self,
        addr: &[u8],
        sockfd: i32,
        proxy: SocketAddrV4,
        admission: std::sync::Arc<crate::network::Admission>,
    ) -> Result<Answer, Stop> {
        let Some(to) = inet_address(addr) else {
            return self.refuse_inet(&format!("tcp:{}", inet_text(addr).0));
        };
        let sock = self.caller_fd(sockfd)?;
        let stream = is_stream(&sock);
        let canonical = match to {
            SocketAddr::V6(v6) => v6.ip().to_ipv4_mapped().map_or(to, |v4| SocketAddr::new(v4.into(), v6.port())),
            v4 => v4,
        };
        let (host, port) = inet_text(addr);
        let subject = format!("{}:{host}:{port}", kind(stream));
        if !stream || canonical != SocketAddr::V4(proxy) {
            return self.refuse_inet(&subject);
        }
        let arg = PathArg { bytes: subject.into_bytes(), base: None };
        let note = Why::Note("interpose's network proxy", RuleKind::Network);
        self.push(&arg, None, AccessKind::Connect, Verdict::Allow, None, note);
        let blocking = fs::status_flags(sock.as_fd())? & libc::O_NONBLOCK == 0;
        // The local port is known before the connect starts (bound here if
        // the caller did not bind it: the kernel would pick one from the
        // same range), so the proxy finds its admission when it accepts.
        let port = local_port(sock.as_fd(), to.is_ipv6())?;
        admission.admit(port);
        let attempt = move || -> Result<i64, Errno> {
            let r = without_blocking(sock.as_fd(), blocking, || match to {
                SocketAddr::V4(a) => {
                    nix::sys::socket::connect(sock.as_raw_fd(), &nix::sys::socket::SockaddrIn::from(a))
                }
                SocketAddr::V6(a) => {
                    nix::sys::socket::connect(sock.as_raw_fd(), &nix::sys::socket::SockaddrIn6::from(a))
                }
            });
            match r {
                Ok(()) | Err(Errno::EISCONN) => Ok(0),
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
        match attempt() {
            Err(Errno::EAGAIN) if blocking => {
                Ok(Answer::Later(Retry { tid: self.notif.pid, fds: 1, attempt: Box::new(attempt) }))
            }
            r => r.map(Answer::Value).map_err(Stop::Fail),
        }
    }

    /// Refuses a direct IPv4/IPv6 connection with the proxy in place,
    /// recording the address it named.
    fn refuse_inet(&mut self, subject: &str) -> Result<Answer, Stop> {
        let arg = PathArg { bytes: subject.as_bytes().to_vec(), base: None };
        let note = Why::Note(crate::audit::DIRECT_REFUSED, RuleKind::Network);
        if self.sup.learns() {
            self.push(&arg, None, AccessKind::Connect, Verdict::WouldDeny, None, note);
            return Ok(Answer::Continue);
        }
        self.push(&arg, None, AccessKind::Connect, Verdict::Deny, Some(Errno::EACCES), note);
        Err(Errno::EACCES.into())
    }

    /// An address of a family that is neither a path, IPv4 nor IPv6: with
    /// the proxy only abstract unix (scoped by Landlock), netlink (the
    /// kernel's own routing and address information) and `AF_UNSPEC`
    /// (which dissolves a datagram socket's association) pass; anything
    /// else (vsock to the hypervisor, TIPC, ...) is refused. `Ok` means go
    /// on.
    fn other_family(&mut self, family: i32) -> Result<Answer, Stop> {
        let local = matches!(family, libc::AF_UNIX | libc::AF_NETLINK | libc::AF_UNSPEC);
        if self.sup.net().proxied() && !local {
            return self.refuse_inet(&format!("family {family}"));
        }
        Ok(Answer::Continue)
    }
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
/// flag: others the caller sets meanwhile stay).
fn without_blocking<T>(sock: BorrowedFd<'_>, blocking: bool, f: impl FnOnce() -> Result<T, Errno>) -> Result<T, Errno> {
    if !blocking {
        return f();
    }
    fs::set_status_flags(sock, fs::status_flags(sock)? | libc::O_NONBLOCK)?;
    let result = f();
    let restored = fs::status_flags(sock).and_then(|now| fs::set_status_flags(sock, now & !libc::O_NONBLOCK));
    if let Err(e) = restored {
        tracing::warn!("restoring a blocking socket after connect failed: {e}");
    }
    result
}
