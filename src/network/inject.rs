//! Credentials by reference (`[[net.credentials]]`): the command gets a
//! base URL pointing at a plain-HTTP endpoint of interpose's in its own
//! network namespace (and, if it insists on a key, a placeholder); each
//! request it sends there goes to `https://HOST` over TLS with the
//! policy's header set to the real value, which interpose read at start
//! from its own environment or a file. The value never enters the
//! command's environment, memory or files, nor the trail; the endpoint
//! talks to that one host only, so no other host ever sees it. No TLS is
//! intercepted: the command speaks plain HTTP to the endpoint, interpose
//! speaks TLS to the host and checks its certificate (the system's trust
//! store, `SSL_CERT_FILE`/`SSL_CERT_DIR` as OpenSSL reads them).
//!
//! The requests are rewritten at their heads only (target in origin form,
//! `Host` set to the host, any `Proxy-*` header and any header of the
//! policy's name the command sent dropped, the credential added); bodies
//! (`Content-Length`, `chunked`) and the responses (streamed events
//! included) pass as they are. Every wait a client can cause is bounded
//! like the proxy's.

use super::relay::{accept_each, pump, Upstream, CONNECT_TIMEOUT, HANDSHAKE, HEAD_MAX};
use crate::audit::{self, AccessKind, ProxyProtocol, Record, RuleKind, Sink, Verdict};
use crate::policy::hosts::CredentialRule;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

/// What a command's client finds in the variables the policy names
/// (`placeholder`): not a credential, and never sent anywhere (the
/// endpoint drops the header it would be in).
pub const PLACEHOLDER: &str = "interpose-placeholder-not-a-credential";

/// The most requests one connection is open for at once, per endpoint.
pub const CONNECTIONS_MAX: usize = 256;

/// Why an endpoint cannot be set up ([`Endpoint::new`], [`tls_config`]);
/// none shows the credential's value.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    /// `env:NAME` names a variable interpose does not have.
    #[error("{0} is not set")]
    Unset(String),
    /// `file:~/...` without a `HOME`.
    #[error("{0}: HOME is unset")]
    NoHome(String),
    /// The value's file cannot be read.
    #[error("{}: {source}", .path.display())]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The value is empty, or more than one line.
    #[error("{0}: empty, or not one line of text")]
    NotOneLine(crate::policy::hosts::CredentialSource),
    /// The system trusts no certificate.
    #[error("no trusted certificates found (the system's store, SSL_CERT_FILE, SSL_CERT_DIR)")]
    NoTrustedCertificates,
    /// The TLS library refused its default protocol versions.
    #[error("{0}")]
    TlsVersions(rustls::Error),
}

/// Why one connection to the host was not made ([`relay`]).
#[derive(Debug, thiserror::Error)]
enum ConnectError {
    /// Through the host's own proxy.
    #[error(transparent)]
    Upstream(#[from] super::relay::UpstreamError),
    /// Connecting to `host:port` (or the address it is mapped to) failed.
    #[error("{host}:{port}: {source}")]
    Connect { host: String, port: u16, source: std::io::Error },
    /// The host did not accept in time.
    #[error("no answer within {} s", CONNECT_TIMEOUT.as_secs())]
    ConnectTimeout,
    /// The host is not a name TLS can check a certificate for.
    #[error("{host}: {source}")]
    ServerName { host: String, source: rustls::pki_types::InvalidDnsNameError },
    /// The TLS handshake did not end in time.
    #[error("no TLS handshake within {} s", CONNECT_TIMEOUT.as_secs())]
    HandshakeTimeout,
    /// The TLS handshake failed (a certificate refused, say).
    #[error("TLS with {host}: {source}")]
    Tls { host: String, source: std::io::Error },
}

/// Why the endpoint stopped passing a client's requests on ([`requests`]).
#[derive(Debug, thiserror::Error)]
enum RequestError {
    /// Reading from the client failed.
    #[error("{0}")]
    ReadClient(std::io::Error),
    /// Writing to the host failed.
    #[error("{0}")]
    WriteHost(std::io::Error),
    /// No first request within [`HANDSHAKE`].
    #[error("no request")]
    NoRequest,
    /// A line longer than [`HEAD_MAX`].
    #[error("a line longer than the endpoint reads")]
    LineTooLong,
    /// A head larger than [`HEAD_MAX`].
    #[error("a request head larger than the endpoint reads")]
    HeadTooLarge,
    /// The client ended its stream inside a request's head or chunk.
    #[error("the client ended mid-request")]
    EndedMidRequest,
    /// The client ended its stream inside a body.
    #[error("the client ended mid-body")]
    EndedMidBody,
    /// A chunk size line that is not UTF-8.
    #[error("a chunk size that is not text")]
    ChunkSizeNotText,
    /// A chunk size that is not a hexadecimal number (or overflows).
    #[error("a chunk size {0:?}")]
    ChunkSize(String),
    /// A head that is not UTF-8.
    #[error("a request head that is not text")]
    HeadNotText,
    /// A bare CR or LF inside a line, which could hide a header.
    #[error("a bare CR or LF inside a request line")]
    BareCrLf,
    /// The first line is not an HTTP/1 request line (its first 80
    /// characters).
    #[error("not an HTTP/1 request line: {0:?}")]
    NotHttp1(String),
    /// A header line without a colon.
    #[error("a header line without a colon")]
    NoColon,
    /// A `Content-Length` that is not a number.
    #[error("a Content-Length of {0:?}")]
    ContentLength(String),
}

/// One endpoint: its rule and the header line it adds. The value is held
/// here only; `Debug` never shows it.
pub struct Endpoint {
    /// The policy's entry.
    pub rule: CredentialRule,
    /// `header: prefix value\r\n`.
    line: Vec<u8>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Endpoint({})", self.rule.describe())
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.line.iter_mut().for_each(|b| *b = 0);
    }
}

impl Endpoint {
    /// The endpoint for `rule`, with the value read from its source: an
    /// error names the source, never the value.
    pub fn new(rule: CredentialRule, home: Option<&std::path::Path>) -> Result<Endpoint, EndpointError> {
        use crate::policy::hosts::CredentialSource;
        let value = match &rule.source {
            CredentialSource::Env(name) => std::env::var(name).map_err(|_| EndpointError::Unset(name.clone()))?,
            CredentialSource::File(path) => {
                let path = match (path.strip_prefix("~/"), home) {
                    (Some(rest), Some(h)) => h.join(rest),
                    (Some(_), None) => return Err(EndpointError::NoHome(path.clone())),
                    (None, _) => std::path::PathBuf::from(path),
                };
                std::fs::read_to_string(&path).map_err(|source| EndpointError::Read { path, source })?
            }
        };
        let value = value.trim_end_matches(['\r', '\n']);
        if value.is_empty() || value.bytes().any(|b| b.is_ascii_control()) {
            return Err(EndpointError::NotOneLine(rule.source.clone()));
        }
        let line = format!("{}: {}{}\r\n", rule.header, rule.prefix, value).into_bytes();
        Ok(Endpoint { rule, line })
    }
}

/// How the endpoints reach their hosts.
pub struct Reach {
    /// The TLS client configuration (the system's trust store).
    pub tls: Arc<rustls::ClientConfig>,
    /// The host's own proxy, if it has one.
    pub upstream: Option<Upstream>,
    /// Names resolved without DNS (tests, `--net-resolve`).
    pub resolve: HashMap<String, IpAddr>,
}

/// A TLS client configuration trusting the system's certificates
/// (`SSL_CERT_FILE` and `SSL_CERT_DIR` where set).
pub fn tls_config() -> Result<Arc<rustls::ClientConfig>, EndpointError> {
    let mut roots = rustls::RootCertStore::empty();
    let found = rustls_native_certs::load_native_certs();
    for cert in found.certs {
        let _ = roots.add(cert);
    }
    if roots.is_empty() {
        return Err(EndpointError::NoTrustedCertificates);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(EndpointError::TlsVersions)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// Accepts on `socket` until the session stops.
pub async fn serve(
    socket: std::net::TcpListener,
    endpoint: Arc<Endpoint>,
    reach: Arc<Reach>,
    sink: Option<Sink>,
    stop: watch::Receiver<bool>,
) {
    let what = format!("the endpoint for {}", endpoint.rule.host);
    accept_each(socket, CONNECTIONS_MAX, &what, stop, |client, stop| {
        let (endpoint, reach, sink) = (Arc::clone(&endpoint), Arc::clone(&reach), sink.clone());
        async move { connection(client, &endpoint, &reach, sink.as_ref(), stop).await }
    })
    .await;
}

async fn connection(
    mut client: TcpStream,
    ep: &Endpoint,
    reach: &Reach,
    sink: Option<&Sink>,
    stop: watch::Receiver<bool>,
) {
    let (started, time_ns) = (Instant::now(), audit::now_ns());
    let _ = client.set_nodelay(true);
    let (up, down) = (AtomicU64::new(0), AtomicU64::new(0));
    let (decision, rule, address) = match relay(&mut client, ep, reach, (&up, &down), stop).await {
        Ok(address) => (Verdict::Allow, ep.rule.describe(), address),
        Err(why) => {
            let body = format!("interpose could not reach {}: {why}\n", ep.rule.host);
            let head = format!(
                "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = client.write_all(format!("{head}{body}").as_bytes()).await;
            (Verdict::Error, format!("{}; {why}", ep.rule.describe()), None)
        }
    };
    if let Some(sink) = sink {
        sink.send(Record::Connection(Box::new(audit::Connection {
            seq: sink.next_seq(),
            time_ns,
            access: AccessKind::Connect,
            protocol: ProxyProtocol::Credential,
            host: ep.rule.host.clone(),
            port: ep.rule.port,
            address,
            decision,
            rule,
            rule_kind: RuleKind::Network,
            bytes_up: up.load(Ordering::Relaxed),
            bytes_down: down.load(Ordering::Relaxed),
            duration_ms: started.elapsed().as_millis() as u64,
        })));
    }
}

/// Connects to the host (through the host's proxy where it has one),
/// completes TLS, and relays until either side ends; the address reached.
async fn relay(
    client: &mut TcpStream,
    ep: &Endpoint,
    reach: &Reach,
    (up, down): (&AtomicU64, &AtomicU64),
    mut stop: watch::Receiver<bool>,
) -> Result<Option<String>, ConnectError> {
    let (host, port) = (ep.rule.host.as_str(), ep.rule.port);
    let connect = async {
        let mapped = reach.resolve.get(host).copied();
        let failed = |host: String| move |source| ConnectError::Connect { host, port, source };
        match (&reach.upstream, mapped) {
            (Some(upstream), None) if !upstream.bypasses(host) => {
                Ok(super::relay::via_upstream(upstream, host, port).await?)
            }
            (_, Some(ip)) => TcpStream::connect((ip, port)).await.map_err(failed(ip.to_string())),
            _ => TcpStream::connect((host, port)).await.map_err(failed(host.into())),
        }
    };
    let tcp = tokio::time::timeout(CONNECT_TIMEOUT, connect).await.map_err(|_| ConnectError::ConnectTimeout)??;
    let address = tcp.peer_addr().ok().map(|a| a.to_string());
    let _ = tcp.set_nodelay(true);
    let name = rustls::pki_types::ServerName::try_from(host.to_string())
        .map_err(|source| ConnectError::ServerName { host: host.into(), source })?;
    let handshake = tokio_rustls::TlsConnector::from(Arc::clone(&reach.tls)).connect(name, tcp);
    let tls = tokio::time::timeout(CONNECT_TIMEOUT, handshake)
        .await
        .map_err(|_| ConnectError::HandshakeTimeout)?
        .map_err(|source| ConnectError::Tls { host: host.into(), source })?;
    let (mut tls_read, mut tls_write) = tokio::io::split(tls);
    let (mut client_read, mut client_write) = client.split();
    let requests = async {
        let r = requests(&mut client_read, &mut tls_write, ep, up).await;
        let _ = tls_write.shutdown().await;
        r
    };
    let responses = pump(&mut tls_read, &mut client_write, down);
    tokio::select! {
        (r, ()) = async { tokio::join!(requests, responses) } => {
            if let Err(why) = r {
                tracing::debug!("the endpoint for {host} ended a connection: {why}");
            }
        }
        _ = stop.changed() => {}
    }
    Ok(address)
}

/// The bytes read from the client and not yet passed on.
struct Buffered<'a, R> {
    from: &'a mut R,
    buf: Vec<u8>,
}

impl<R: AsyncRead + Unpin> Buffered<'_, R> {
    /// Reads more; `false` at the end of the client's stream.
    async fn fill(&mut self) -> Result<bool, RequestError> {
        let mut chunk = [0u8; 16 << 10];
        let n = self.from.read(&mut chunk).await.map_err(RequestError::ReadClient)?;
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(n > 0)
    }

    /// One line, CRLF included (at most [`HEAD_MAX`] bytes).
    async fn line(&mut self) -> Result<Vec<u8>, RequestError> {
        loop {
            if let Some(i) = self.buf.windows(2).position(|w| w == b"\r\n") {
                return Ok(self.buf.drain(..i + 2).collect());
            }
            if self.buf.len() > HEAD_MAX {
                return Err(RequestError::LineTooLong);
            }
            if !self.fill().await? {
                return Err(RequestError::EndedMidRequest);
            }
        }
    }

    /// Passes `n` bytes on to `to`.
    async fn copy(
        &mut self,
        mut n: u64,
        to: &mut (impl AsyncWrite + Unpin),
        count: &AtomicU64,
    ) -> Result<(), RequestError> {
        while n > 0 {
            if self.buf.is_empty() && !self.fill().await? {
                return Err(RequestError::EndedMidBody);
            }
            let take = (n as usize).min(self.buf.len());
            to.write_all(&self.buf[..take]).await.map_err(RequestError::WriteHost)?;
            self.buf.drain(..take);
            count.fetch_add(take as u64, Ordering::Relaxed);
            n -= take as u64;
        }
        Ok(())
    }
}

/// How a request's body is framed.
#[derive(Debug, PartialEq, Eq)]
enum Body {
    None,
    Length(u64),
    Chunked,
}

/// Passes the client's requests on, each head rewritten, until the client
/// ends its stream.
async fn requests(
    from: &mut (impl AsyncRead + Unpin),
    to: &mut (impl AsyncWrite + Unpin),
    ep: &Endpoint,
    up: &AtomicU64,
) -> Result<(), RequestError> {
    let mut input = Buffered { from, buf: Vec::new() };
    let mut first = true;
    loop {
        let end = loop {
            if let Some(i) = input.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            if input.buf.len() > HEAD_MAX {
                return Err(RequestError::HeadTooLarge);
            }
            // The first request must come within the handshake's bound;
            // later ones whenever the client sends them (a kept-alive
            // connection waits for the next request).
            let more = if first {
                tokio::time::timeout(HANDSHAKE, input.fill()).await.map_err(|_| RequestError::NoRequest)??
            } else {
                input.fill().await?
            };
            if !more {
                return Ok(());
            }
        };
        first = false;
        let head: Vec<u8> = input.buf.drain(..end).collect();
        up.fetch_add(head.len() as u64, Ordering::Relaxed);
        let (rewritten, body) = rewrite(&head, ep)?;
        to.write_all(&rewritten).await.map_err(RequestError::WriteHost)?;
        match body {
            Body::None => {}
            Body::Length(n) => input.copy(n, to, up).await?,
            Body::Chunked => loop {
                let size_line = input.line().await?;
                to.write_all(&size_line).await.map_err(RequestError::WriteHost)?;
                up.fetch_add(size_line.len() as u64, Ordering::Relaxed);
                let text = std::str::from_utf8(&size_line).map_err(|_| RequestError::ChunkSizeNotText)?;
                let hex = text.trim_end().split(';').next().unwrap_or_default().trim();
                let size = u64::from_str_radix(hex, 16).map_err(|_| RequestError::ChunkSize(hex.into()))?;
                if size == 0 {
                    // Trailers, up to the empty line.
                    loop {
                        let line = input.line().await?;
                        to.write_all(&line).await.map_err(RequestError::WriteHost)?;
                        up.fetch_add(line.len() as u64, Ordering::Relaxed);
                        if line == b"\r\n" {
                            break;
                        }
                    }
                    break;
                }
                let with_crlf = size.checked_add(2).ok_or_else(|| RequestError::ChunkSize(hex.into()))?;
                input.copy(with_crlf, to, up).await?;
            },
        }
    }
}

/// The head as the host gets it, and how its body is framed: the target
/// in origin form, `Host` the host's, `Proxy-*` and the policy's header as
/// the client sent them dropped, the credential added.
fn rewrite(head: &[u8], ep: &Endpoint) -> Result<(Vec<u8>, Body), RequestError> {
    let text = std::str::from_utf8(head).map_err(|_| RequestError::HeadNotText)?;
    // A bare CR or LF inside a line would be a line end to a lenient
    // server: a header it hides (a second credential header, a second
    // request) is refused, not passed on.
    let body_start = text.len().saturating_sub(4);
    if text[..body_start].split("\r\n").any(|l| l.contains(['\r', '\n'])) {
        return Err(RequestError::BareCrLf);
    }
    let mut lines = text.split("\r\n");
    let request = lines.next().unwrap_or_default();
    let mut parts = request.splitn(3, ' ');
    let (method, target, version) = match (parts.next(), parts.next(), parts.next()) {
        (Some(m), Some(t), Some(v)) if !m.is_empty() && v.starts_with("HTTP/1.") => (m, t, v),
        _ => return Err(RequestError::NotHttp1(request.chars().take(80).collect())),
    };
    // An absolute target (`http://127.0.0.1:PORT/v1/x`) names the endpoint:
    // only its path goes on.
    let target = match target.split_once("://") {
        Some((_, rest)) => match rest.find('/') {
            Some(i) => &rest[i..],
            None => "/",
        },
        None => target,
    };
    let host = if ep.rule.port == 443 { ep.rule.host.clone() } else { format!("{}:{}", ep.rule.host, ep.rule.port) };
    let mut out = format!("{method} {target} {version}\r\nHost: {host}\r\n").into_bytes();
    let mut body = Body::None;
    for line in lines.filter(|l| !l.is_empty()) {
        let Some((name, value)) = line.split_once(':') else {
            return Err(RequestError::NoColon);
        };
        let name_lower = name.trim().to_ascii_lowercase();
        if name_lower == "host" || name_lower == ep.rule.header || name_lower.starts_with("proxy-") {
            continue;
        }
        match name_lower.as_str() {
            "transfer-encoding" if value.to_ascii_lowercase().contains("chunked") => body = Body::Chunked,
            "content-length" if body != Body::Chunked => {
                let n = value.trim().parse().map_err(|_| RequestError::ContentLength(value.trim().into()))?;
                body = Body::Length(n);
            }
            _ => {}
        }
        out.extend_from_slice(line.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(&ep.line);
    out.extend_from_slice(b"\r\n");
    Ok((out, body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::hosts::{CredentialRule, CredentialSource};

    fn endpoint(port: u16) -> Endpoint {
        let rule = CredentialRule {
            host: "api.example.org".into(),
            port,
            header: "x-api-key".into(),
            source: CredentialSource::Env("K".into()),
            prefix: "Bearer ".into(),
            base_url: "B".into(),
            placeholders: vec![],
            origin: "t".into(),
        };
        Endpoint { rule, line: b"x-api-key: Bearer real-value\r\n".to_vec() }
    }

    #[test]
    fn heads_are_rewritten_for_the_host_with_the_credential_only() {
        let head = b"POST http://127.0.0.1:4000/v1/messages?beta=true HTTP/1.1\r\nHost: 127.0.0.1:4000\r\n\
                     X-Api-Key: interpose-placeholder-not-a-credential\r\nProxy-Authorization: x\r\n\
                     Content-Length: 5\r\nAccept: */*\r\n\r\n";
        let (out, body) = rewrite(head, &endpoint(443)).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert_eq!(
            out,
            "POST /v1/messages?beta=true HTTP/1.1\r\nHost: api.example.org\r\nContent-Length: 5\r\nAccept: */*\r\n\
             x-api-key: Bearer real-value\r\n\r\n"
        );
        assert_eq!(body, Body::Length(5));
        let (out, body) = rewrite(b"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", &endpoint(8443)).unwrap();
        assert!(String::from_utf8(out).unwrap().contains("Host: api.example.org:8443\r\n"));
        assert_eq!(body, Body::Chunked);
        let e = rewrite(b"GARBAGE\r\n\r\n", &endpoint(443)).unwrap_err();
        assert!(matches!(&e, RequestError::NotHttp1(line) if line == "GARBAGE"), "{e}");
        assert_eq!(e.to_string(), "not an HTTP/1 request line: \"GARBAGE\"");
        let smuggled = b"GET / HTTP/1.1\r\nX-Foo: a\nx-api-key: mine\r\n\r\n";
        let e = rewrite(smuggled, &endpoint(443)).unwrap_err();
        assert!(matches!(e, RequestError::BareCrLf), "a header hidden behind a bare LF: {e}");
        assert!(matches!(
            rewrite(b"GET / HTTP/1.1\r\nX-Foo: a\rb\r\n\r\n", &endpoint(443)),
            Err(RequestError::BareCrLf)
        ));
        let e = rewrite(b"GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n", &endpoint(443)).unwrap_err();
        assert_eq!(e.to_string(), "a Content-Length of \"x\"");
        assert!(!format!("{:?}", endpoint(443)).contains("real-value"), "Debug never shows the value");
    }
}
