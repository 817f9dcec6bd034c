//! The proxy: HTTP `CONNECT`, plain HTTP in absolute form, and SOCKS5
//! `CONNECT`, on one listening socket only the command reaches. It allows
//! a destination only when the allowlist names it, resolves the name
//! itself (refusing names that resolve to this machine's own or
//! link-local addresses), and records every connection.
//!
//! It runs on a tokio runtime of its own, on a thread of its own, outside
//! the sandbox. Every wait a client can cause has a bound: the request must
//! arrive within [`HANDSHAKE`] and fit in [`HEAD_MAX`]; a destination must
//! answer within [`CONNECT_TIMEOUT`]; at most [`CONNECTIONS_MAX`] are open
//! at once (others wait in the listener's backlog).
//!
//! If the proxy fails, its listening socket closes with it: the command's
//! connections are refused, never sent elsewhere (the command cannot
//! connect anywhere but here).

use crate::audit::{self, AccessKind, ProxyProtocol, Record, RuleKind, Sink, Verdict};
use crate::policy::hosts::{allow_flag, normalize_host, Allowlist};
use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

use super::relay::{pump, via_upstream};
pub use super::relay::{Upstream, CONNECT_TIMEOUT, HANDSHAKE, HEAD_MAX};

/// How long a name has to resolve.
pub const RESOLVE_TIMEOUT: Duration = Duration::from_secs(10);
/// The most connections open at once.
pub const CONNECTIONS_MAX: usize = 1024;
/// How long [`Proxy::stop`] waits for open connections to be recorded.
const STOP_WAIT: Duration = Duration::from_secs(2);

/// What the proxy allows and where it records.
pub struct Settings {
    /// The hosts it connects to.
    pub allow: Allowlist,
    /// Names resolved to these addresses without asking DNS (for tests,
    /// `--net-resolve`); trusted as given, loopback included.
    pub resolve: HashMap<String, IpAddr>,
    /// Learning mode: connect to anything, record what would be refused.
    pub learn: bool,
    /// Where connections are recorded.
    pub audit: Option<Sink>,
    /// On the host's loopback: the only connections to serve
    /// ([`super::Admission`]); `None` in the command's own namespace,
    /// where nothing else can reach the proxy.
    pub admission: Option<std::sync::Arc<super::Admission>>,
    /// The proxy the host itself goes through, if it has one.
    pub upstream: Option<Upstream>,
    /// The host's loopback services the allowlist names, each with its
    /// listening socket in the command's network namespace.
    pub forwards: Vec<(std::net::TcpListener, crate::policy::hosts::Forward)>,
    /// The endpoints of `[[net.credentials]]`, each with its listening
    /// socket in the command's network namespace, and how they reach
    /// their hosts.
    pub credentials: Vec<(std::net::TcpListener, Arc<super::inject::Endpoint>)>,
    /// TLS for the credential endpoints (`None` without any).
    pub tls: Option<Arc<rustls::ClientConfig>>,
}

/// The running proxy.
pub struct Proxy {
    stop: watch::Sender<bool>,
    thread: std::thread::JoinHandle<()>,
    refused: Arc<Mutex<BTreeMap<(String, u16), u64>>>,
}

/// What a session says about the proxy when it ends.
#[derive(Debug, Default)]
pub struct Summary {
    /// Why the proxy stopped before the session did, if it did.
    pub failed: Option<String>,
    /// The destinations refused, with how many times.
    pub refused: Vec<((String, u16), u64)>,
}

struct Shared {
    settings: Settings,
    refused: Arc<Mutex<BTreeMap<(String, u16), u64>>>,
    #[cfg(debug_assertions)]
    fault: tokio::sync::mpsc::UnboundedSender<()>,
}

/// Starts the proxy on `listener` (already bound and listening).
pub fn start(listener: std::net::TcpListener, settings: Settings) -> std::io::Result<Proxy> {
    listener.set_nonblocking(true)?;
    let (stop, stopped) = watch::channel(false);
    let refused = Arc::new(Mutex::new(BTreeMap::new()));
    let r = Arc::clone(&refused);
    let thread = std::thread::Builder::new().name("interpose-proxy".into()).spawn(move || {
        // Built here, beside the session's start (0.1-0.2 ms on the path
        // of the command's first call when the session built it). One
        // that cannot be built fails the proxy: the listener goes with
        // this thread, the command's connections are refused, and the
        // session's end says why (`Proxy::stop`).
        let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(runtime) => runtime,
            Err(e) => panic!("its runtime could not be made: {e}"),
        };
        runtime.block_on(serve_all(listener, settings, r, stopped));
        // A name lookup still running on a blocking thread must not keep
        // the session from ending.
        runtime.shutdown_background();
    })?;
    Ok(Proxy { stop, thread, refused })
}

impl Proxy {
    /// Asks the proxy to stop without waiting for it: [`Proxy::stop`]
    /// then finds it stopped, or waits for the rest.
    pub fn ask_to_stop(&self) {
        let _ = self.stop.send(true);
    }

    /// Stops accepting, records the connections still open (waiting at
    /// most two seconds for them), and says how it went.
    pub fn stop(self) -> Summary {
        let _ = self.stop.send(true);
        let failed = match self.thread.join() {
            Ok(()) => None,
            Err(e) => Some(
                e.downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| e.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "it panicked".into()),
            ),
        };
        let refused = self.refused.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        Summary { failed, refused: refused.iter().map(|(k, v)| (k.clone(), *v)).collect() }
    }
}

async fn serve_all(
    listener: std::net::TcpListener,
    mut settings: Settings,
    refused: Arc<Mutex<BTreeMap<(String, u16), u64>>>,
    mut stop: watch::Receiver<bool>,
) {
    let listener = tokio::net::TcpListener::from_std(listener).expect("a listening socket registers with tokio");
    let mut forwarders = tokio::task::JoinSet::new();
    for (socket, forward) in std::mem::take(&mut settings.forwards) {
        let (sink, stop) = (settings.audit.clone(), stop.clone());
        forwarders.spawn(super::forward::serve(socket, forward, sink, stop));
    }
    if let Some(tls) = settings.tls.clone() {
        let reach = Arc::new(super::inject::Reach {
            tls,
            upstream: settings.upstream.clone(),
            resolve: settings.resolve.clone(),
        });
        for (socket, endpoint) in std::mem::take(&mut settings.credentials) {
            let (reach, sink, stop) = (Arc::clone(&reach), settings.audit.clone(), stop.clone());
            forwarders.spawn(super::inject::serve(socket, endpoint, reach, sink, stop));
        }
    }
    #[cfg(debug_assertions)]
    let (fault, mut faults) = tokio::sync::mpsc::unbounded_channel();
    let shared = Arc::new(Shared {
        settings,
        refused,
        #[cfg(debug_assertions)]
        fault,
    });
    let slots = Arc::new(tokio::sync::Semaphore::new(CONNECTIONS_MAX));
    let mut tasks = tokio::task::JoinSet::new();
    #[cfg(not(debug_assertions))]
    let faults = std::future::pending::<Option<()>>();
    #[cfg(not(debug_assertions))]
    tokio::pin!(faults);
    loop {
        #[cfg(debug_assertions)]
        let fault = faults.recv();
        #[cfg(not(debug_assertions))]
        let fault = faults.as_mut();
        let slot = tokio::select! {
            slot = Arc::clone(&slots).acquire_owned() => slot.expect("the semaphore is never closed"),
            _ = stop.changed() => break,
        };
        tokio::select! {
            accepted = listener.accept() => {
                let (client, peer) = match accepted {
                    Ok(c) => c,
                    Err(e) => {
                        // Out of descriptors, say: wait rather than spin.
                        tracing::warn!("the network proxy could not accept a connection: {e}");
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                };
                if shared.settings.admission.as_ref().is_some_and(|a| !a.take(peer.port())) {
                    tracing::warn!("the network proxy turned away {peer}: not a connection of the sandbox's");
                    continue;
                }
                let (shared, stop) = (Arc::clone(&shared), stop.clone());
                tasks.spawn(async move {
                    let _slot = slot;
                    serve(client, &shared, stop).await;
                });
            }
            _ = stop.changed() => break,
            Some(()) = fault => panic!("fault injected for the test of the proxy's failure"),
        }
        while tasks.try_join_next().is_some() {}
    }
    drop(listener);
    // Every open connection sees the stop, ends its tunnel and records it.
    let _ = tokio::time::timeout(STOP_WAIT, async {
        while tasks.join_next().await.is_some() {}
        while forwarders.join_next().await.is_some() {}
    })
    .await;
}

/// A destination a client asked for.
struct Request {
    protocol: ProxyProtocol,
    host: String,
    port: u16,
    /// Bytes to send to the destination first (a plain HTTP request's
    /// rewritten head, and whatever the client sent after its request).
    forward: Vec<u8>,
}

/// Why an allowed destination was not reached, for the client and the
/// connection's record.
#[derive(Debug, thiserror::Error)]
enum ReachError {
    /// Through the host's own proxy.
    #[error(transparent)]
    Upstream(#[from] super::relay::UpstreamError),
    /// This host's addresses cannot be listed, so no name is trusted.
    #[error("this host's own addresses cannot be listed ({0})")]
    OwnAddresses(crate::sys::Errno),
    /// The test resolver maps the name to one of this host's addresses.
    #[error("{host} resolves only to this host's own address ({ip}): refused")]
    OwnAddress { host: String, ip: IpAddr },
    /// The name does not resolve.
    #[error("{host} does not resolve: {source}")]
    Resolve { host: String, source: std::io::Error },
    /// The name resolves only to addresses that lead back to this host,
    /// or to link-local and multicast ones.
    #[error("{host} resolves only to local addresses ({}): refused", .addresses.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))]
    OnlyLocal { host: String, addresses: Vec<IpAddr> },
    /// Resolving the name took longer than [`RESOLVE_TIMEOUT`].
    #[error("resolving {0} took longer than {secs} s", secs = RESOLVE_TIMEOUT.as_secs())]
    ResolveTimeout(String),
    /// The session ended first.
    #[error("the session ended before the host answered")]
    SessionEnded,
    /// No address to connect to.
    #[error("no address")]
    NoAddress,
    /// Connecting to the last address tried failed.
    #[error("{address}: {source}")]
    Connect { address: SocketAddr, source: std::io::Error },
    /// The last address tried did not accept in time.
    #[error("{0}: no answer within {secs} s", secs = CONNECT_TIMEOUT.as_secs())]
    ConnectTimeout(SocketAddr),
}

/// Why a request was not understood, for the client.
struct Malformed(&'static str);

/// How a connection ended, for its record.
struct Outcome {
    decision: Verdict,
    rule: String,
    address: Option<String>,
}

async fn serve(mut client: TcpStream, shared: &Shared, mut stop: watch::Receiver<bool>) {
    let (started, time_ns) = (Instant::now(), audit::now_ns());
    let _ = client.set_nodelay(true);
    let read = tokio::select! {
        r = tokio::time::timeout(HANDSHAKE, read_request(&mut client)) => r,
        _ = stop.changed() => return,
    };
    let request = match read {
        Ok(Ok(r)) => r,
        Ok(Err(Malformed(why))) => {
            let _ = client.write_all(&http_error(400, why, why)).await;
            return;
        }
        Err(_) => return,
    };
    #[cfg(debug_assertions)]
    if request.host == "panic-the-proxy.interpose-test" {
        let _ = shared.fault.send(());
        return;
    }
    let up = AtomicU64::new(0);
    let down = AtomicU64::new(0);
    let outcome = connect_and_tunnel(&mut client, &request, shared, &up, &down, &mut stop).await;
    if outcome.decision == Verdict::Deny {
        let mut refused = shared.refused.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *refused.entry((request.host.clone(), request.port)).or_default() += 1;
    }
    if let Some(sink) = &shared.settings.audit {
        sink.send(Record::Connection(Box::new(audit::Connection {
            seq: sink.next_seq(),
            time_ns,
            access: AccessKind::Connect,
            protocol: request.protocol,
            host: request.host,
            port: request.port,
            address: outcome.address,
            decision: outcome.decision,
            rule: outcome.rule,
            rule_kind: RuleKind::Network,
            bytes_up: up.load(Ordering::Relaxed),
            bytes_down: down.load(Ordering::Relaxed),
            duration_ms: started.elapsed().as_millis() as u64,
        })));
    }
}

async fn connect_and_tunnel(
    client: &mut TcpStream,
    request: &Request,
    shared: &Shared,
    up: &AtomicU64,
    down: &AtomicU64,
    stop: &mut watch::Receiver<bool>,
) -> Outcome {
    let (host, port) = (request.host.as_str(), request.port);
    let (decision, rule) = match shared.settings.allow.find(host, port) {
        Some(rule) => (Verdict::Allow, format!("{rule} ({})", rule.origin)),
        None => {
            let why = format!("{host}:{port} is not on the network allowlist; to allow it: {}", allow_flag(host, port));
            if !shared.settings.learn {
                let _ = client.write_all(&refusal(request.protocol, host, port, &why)).await;
                return Outcome { decision: Verdict::Deny, rule: why, address: None };
            }
            (Verdict::WouldDeny, why)
        }
    };
    let reach = async {
        // The host's own proxy resolves the name, as it would for the host.
        // A name the test resolver maps is reached as mapped.
        let mapped = shared.settings.resolve.contains_key(host);
        if let Some(up) = shared.settings.upstream.as_ref().filter(|u| !mapped && !u.bypasses(host)) {
            return Ok(via_upstream(up, host, port).await?);
        }
        match tokio::time::timeout(RESOLVE_TIMEOUT, addresses(host, port, shared)).await {
            Ok(Ok(addrs)) => connect_any(&addrs).await,
            Ok(Err(why)) => Err(why),
            Err(_) => Err(ReachError::ResolveTimeout(host.into())),
        }
    };
    let upstream = tokio::select! {
        r = reach => r,
        _ = stop.changed() => Err(ReachError::SessionEnded),
    };
    let mut upstream = match upstream {
        Ok(s) => s,
        Err(why) => {
            let _ = client.write_all(&unreachable(request.protocol, host, port, &why.to_string())).await;
            let decision = if decision == Verdict::Allow { Verdict::Error } else { decision };
            return Outcome { decision, rule: format!("{rule}; {why}"), address: None };
        }
    };
    let address = upstream.peer_addr().ok().map(|a| a.to_string());
    let _ = upstream.set_nodelay(true);
    let ready: &[u8] = match request.protocol {
        ProxyProtocol::HttpConnect => b"HTTP/1.1 200 Connection established\r\n\r\n",
        ProxyProtocol::Socks5 => &[5, 0, 0, 1, 0, 0, 0, 0, 0, 0],
        // A forwarded connection never reaches the proxy's parser.
        ProxyProtocol::Http | ProxyProtocol::Forward | ProxyProtocol::Credential => b"",
    };
    if client.write_all(ready).await.is_err() || upstream.write_all(&request.forward).await.is_err() {
        return Outcome { decision, rule, address };
    }
    up.fetch_add(request.forward.len() as u64, Ordering::Relaxed);
    let (cr, cw) = client.split();
    let (ur, uw) = upstream.split();
    tokio::select! {
        _ = async { tokio::join!(pump(cr, uw, up), pump(ur, cw, down)) } => {}
        _ = stop.changed() => {}
    }
    Outcome { decision, rule, address }
}

/// The addresses `host` may be reached at: an address as given (the
/// allowlist named it), a name from the test resolver as mapped, or a name
/// through the system's resolver, without this machine's own, unspecified,
/// link-local (cloud metadata) and multicast addresses: a name must not
/// lead back to a service on the host.
async fn addresses(host: &str, port: u16, shared: &Shared) -> Result<Vec<SocketAddr>, ReachError> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    // Read at every resolution: an interface may have come up since.
    let own = own_addresses()?;
    if let Some(ip) = shared.settings.resolve.get(host) {
        // The test resolver stands in for DNS, loopback origins included;
        // the host's other addresses are refused as a DNS answer is.
        if !ip.is_loopback() && own.contains(&canonical(*ip)) {
            return Err(ReachError::OwnAddress { host: host.into(), ip: *ip });
        }
        return Ok(vec![SocketAddr::new(*ip, port)]);
    }
    let found: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
        .await
        .map_err(|source| ReachError::Resolve { host: host.into(), source })?
        .collect();
    let (ok, local): (Vec<_>, Vec<_>) =
        found.into_iter().partition(|a| public(a.ip()) && !own.contains(&canonical(a.ip())));
    if ok.is_empty() {
        return Err(ReachError::OnlyLocal { host: host.into(), addresses: local.iter().map(SocketAddr::ip).collect() });
    }
    Ok(ok)
}

/// An IPv4 address mapped into IPv6 as the IPv4 address it is.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

/// The addresses of this machine's own interfaces (the proxy runs in the
/// host's network namespace): a name that resolves to one leads to a
/// service on the host listening on every address, whatever the
/// interface (a LAN or a container bridge). If they cannot be listed, no
/// name is trusted to lead elsewhere (an error, and the request refused).
fn own_addresses() -> Result<Vec<IpAddr>, ReachError> {
    let list = nix::ifaddrs::getifaddrs().map_err(ReachError::OwnAddresses)?;
    Ok(list
        .filter_map(|i| {
            let a = i.address?;
            a.as_sockaddr_in()
                .map(|v4| IpAddr::V4(v4.ip()))
                .or_else(|| a.as_sockaddr_in6().map(|v6| canonical(IpAddr::V6(v6.ip()))))
        })
        .collect())
}

/// Whether a resolved address may be connected to.
fn public(ip: IpAddr) -> bool {
    match canonical(ip) {
        IpAddr::V4(v4) => {
            !(v4.is_loopback() || v4.is_unspecified() || v4.is_link_local() || v4.is_multicast() || v4.is_broadcast())
        }
        IpAddr::V6(v6) => {
            !(v6.is_loopback() || v6.is_unspecified() || v6.is_multicast() || (v6.segments()[0] & 0xffc0) == 0xfe80)
        }
    }
}

async fn connect_any(addrs: &[SocketAddr]) -> Result<TcpStream, ReachError> {
    let mut last = ReachError::NoAddress;
    for &address in addrs {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address)).await {
            Ok(Ok(s)) => return Ok(s),
            Ok(Err(source)) => last = ReachError::Connect { address, source },
            Err(_) => last = ReachError::ConnectTimeout(address),
        }
    }
    Err(last)
}

/// Reads one request: SOCKS5 when the first byte is 5, HTTP otherwise.
async fn read_request(client: &mut TcpStream) -> Result<Request, Malformed> {
    let mut first = [0u8; 1];
    if client.peek(&mut first).await.map_err(|_| Malformed("no request"))? == 0 {
        return Err(Malformed("no request"));
    }
    if first[0] == 5 {
        socks5(client).await
    } else {
        http(client).await
    }
}

async fn socks5(client: &mut TcpStream) -> Result<Request, Malformed> {
    let bad = |_| Malformed("a SOCKS5 request cut short");
    let mut head = [0u8; 2];
    client.read_exact(&mut head).await.map_err(bad)?;
    let mut methods = vec![0u8; usize::from(head[1])];
    client.read_exact(&mut methods).await.map_err(bad)?;
    if !methods.contains(&0) {
        let _ = client.write_all(&[5, 0xff]).await;
        return Err(Malformed("SOCKS5 without the no-authentication method"));
    }
    client.write_all(&[5, 0]).await.map_err(bad)?;
    let mut req = [0u8; 4];
    client.read_exact(&mut req).await.map_err(bad)?;
    if req[0] != 5 || req[1] != 1 {
        // Only CONNECT: no BIND, no UDP ASSOCIATE.
        let _ = client.write_all(&[5, 7, 0, 1, 0, 0, 0, 0, 0, 0]).await;
        return Err(Malformed("only SOCKS5 CONNECT is served"));
    }
    let host = match req[3] {
        1 => {
            let mut a = [0u8; 4];
            client.read_exact(&mut a).await.map_err(bad)?;
            IpAddr::from(a).to_string()
        }
        4 => {
            let mut a = [0u8; 16];
            client.read_exact(&mut a).await.map_err(bad)?;
            IpAddr::from(a).to_string()
        }
        3 => {
            let mut len = [0u8; 1];
            client.read_exact(&mut len).await.map_err(bad)?;
            let mut name = vec![0u8; usize::from(len[0])];
            client.read_exact(&mut name).await.map_err(bad)?;
            String::from_utf8(name).map_err(|_| Malformed("a SOCKS5 host name that is not text"))?
        }
        _ => return Err(Malformed("an unknown SOCKS5 address type")),
    };
    let mut port = [0u8; 2];
    client.read_exact(&mut port).await.map_err(bad)?;
    let Some(host) = normalize_host(&host) else {
        let _ = client.write_all(&[5, 4, 0, 1, 0, 0, 0, 0, 0, 0]).await;
        return Err(Malformed("a SOCKS5 host that is not a host name"));
    };
    Ok(Request { protocol: ProxyProtocol::Socks5, host, port: u16::from_be_bytes(port), forward: Vec::new() })
}

async fn http(client: &mut TcpStream) -> Result<Request, Malformed> {
    let mut buf = Vec::with_capacity(1024);
    let end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        if buf.len() >= HEAD_MAX {
            return Err(Malformed("request head too large"));
        }
        let mut chunk = [0u8; 2048];
        let n = client.read(&mut chunk).await.map_err(|_| Malformed("no request"))?;
        if n == 0 {
            return Err(Malformed("request cut short"));
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let rest = buf.split_off(end);
    let head = std::str::from_utf8(&buf).map_err(|_| Malformed("a request head that is not text"))?;
    parse_http(head, rest)
}

/// Splits `host[:port]` (IPv6 in brackets) with `default` as the port.
fn authority(text: &str, default: Option<u16>) -> Result<(String, u16), Malformed> {
    let bad = Malformed("a destination that is not HOST:PORT");
    let (host, port) = match text.rsplit_once(':') {
        Some((h, p)) if !h.is_empty() && (!h.contains(':') || h.ends_with(']')) => {
            (h, Some(p.parse::<u16>().map_err(|_| Malformed("a port that is not a number"))?))
        }
        _ => (text, None),
    };
    let port = port.or(default).ok_or(bad)?;
    let host = normalize_host(host).ok_or(Malformed("a host that is not a host name"))?;
    Ok((host, port))
}

/// A request head (request line and headers, ending in an empty line) and
/// what followed it.
fn parse_http(head: &str, rest: Vec<u8>) -> Result<Request, Malformed> {
    let mut lines = head.split("\r\n");
    let line = lines.next().unwrap_or_default();
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Malformed("a request line that is not METHOD TARGET VERSION"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(Malformed("only HTTP/1.x is proxied"));
    }
    let headers: Vec<&str> = lines.filter(|l| !l.is_empty()).collect();
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = authority(target, None)?;
        return Ok(Request { protocol: ProxyProtocol::HttpConnect, host, port, forward: rest });
    }
    let Some(after) = target.get(..7).filter(|s| s.eq_ignore_ascii_case("http://")).map(|_| &target[7..]) else {
        return Err(Malformed("a plain HTTP request must name its destination (http://HOST/PATH)"));
    };
    let (auth, path) = after.find('/').map_or((after, "/"), |i| (&after[..i], &after[i..]));
    if auth.contains('@') {
        return Err(Malformed("credentials in a proxied URL are not forwarded"));
    }
    let (host, port) = authority(auth, Some(80))?;
    let mut forward = format!("{method} {path} {version}\r\n");
    for h in headers {
        let Some((name, value)) = h.split_once(':') else {
            return Err(Malformed("a header line without a colon"));
        };
        let name = name.trim().to_ascii_lowercase();
        if name == "host" {
            let (named, named_port) = authority(value.trim(), Some(80))?;
            if named != host || named_port != port {
                return Err(Malformed("the Host header names another host than the request"));
            }
        }
        if name.starts_with("proxy-") || name == "connection" || name == "keep-alive" {
            continue;
        }
        forward.push_str(h);
        forward.push_str("\r\n");
    }
    // One request per connection: the next one may be for another host.
    forward.push_str("Connection: close\r\n\r\n");
    let mut forward = forward.into_bytes();
    forward.extend(rest);
    Ok(Request { protocol: ProxyProtocol::Http, host, port, forward })
}

fn http_error(code: u16, reason: &str, body: &str) -> Vec<u8> {
    let reason = reason.replace(['\r', '\n'], " ");
    format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}\n",
        body.len() + 1
    )
    .into_bytes()
}

/// The answer to a refused destination, naming it and the flag that
/// allows it.
fn refusal(protocol: ProxyProtocol, host: &str, port: u16, why: &str) -> Vec<u8> {
    match protocol {
        // SOCKS5: "connection not allowed by ruleset".
        ProxyProtocol::Socks5 => vec![5, 2, 0, 1, 0, 0, 0, 0, 0, 0],
        _ => http_error(403, &format!("interpose refused {host}:{port}"), &format!("interpose: {why}")),
    }
}

fn unreachable(protocol: ProxyProtocol, host: &str, port: u16, why: &str) -> Vec<u8> {
    match protocol {
        ProxyProtocol::Socks5 => vec![5, 4, 0, 1, 0, 0, 0, 0, 0, 0],
        _ => http_error(502, &format!("interpose could not reach {host}:{port}"), &format!("interpose: {why}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(head: &str) -> Result<Request, &'static str> {
        parse_http(head, b"rest".to_vec()).map_err(|Malformed(w)| w)
    }

    #[test]
    fn connect_and_absolute_requests_name_their_destination() {
        let r = parse("CONNECT Example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n").ok().unwrap();
        assert_eq!((r.host.as_str(), r.port, r.protocol), ("example.org", 443, ProxyProtocol::HttpConnect));
        assert_eq!(r.forward, b"rest");
        let r = parse("CONNECT [::1]:8443 HTTP/1.1\r\n\r\n").ok().unwrap();
        assert_eq!((r.host.as_str(), r.port), ("::1", 8443));
        let r = parse("GET http://a.example/x?y HTTP/1.1\r\nHost: a.example\r\nProxy-Authorization: z\r\nConnection: keep-alive\r\nAccept: */*\r\n\r\n")
            .ok()
            .unwrap();
        assert_eq!((r.host.as_str(), r.port, r.protocol), ("a.example", 80, ProxyProtocol::Http));
        assert_eq!(
            String::from_utf8(r.forward).unwrap(),
            "GET /x?y HTTP/1.1\r\nHost: a.example\r\nAccept: */*\r\nConnection: close\r\n\r\nrest"
        );
    }

    #[test]
    fn requests_that_could_mislead_are_refused() {
        for (head, why) in [
            ("GET /x HTTP/1.1\r\n\r\n", "must name its destination"),
            ("GET http://a.example/ HTTP/1.1\r\nHost: b.example\r\n\r\n", "Host header names another"),
            ("GET http://u:p@a.example/ HTTP/1.1\r\n\r\n", "credentials"),
            ("CONNECT a.example HTTP/1.1\r\n\r\n", "HOST:PORT"),
            ("CONNECT a/b:443 HTTP/1.1\r\n\r\n", "not a host name"),
            ("GET http://a.example/ HTTP/2\r\n\r\n", "HTTP/1.x"),
            ("GET  http://a.example/ HTTP/1.1\r\n\r\n", "METHOD TARGET VERSION"),
            ("GET http://a.example/ HTTP/1.1\r\nHost\r\n\r\n", "without a colon"),
        ] {
            let got = parse(head).err().unwrap_or("accepted");
            assert!(got.contains(why), "{head:?}: {got}");
        }
    }

    #[test]
    fn names_never_lead_back_to_the_host() {
        for local in ["127.0.0.1", "0.0.0.0", "169.254.169.254", "::1", "::ffff:127.0.0.1", "fe80::1", "224.0.0.1"] {
            assert!(!public(local.parse().unwrap()), "{local}");
        }
        for ok in ["93.184.216.34", "10.1.2.3", "2606:2800:220:1::1"] {
            assert!(public(ok.parse().unwrap()), "{ok}");
        }
    }
}
