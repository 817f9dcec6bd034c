//! What the proxy, the forwarded loopback services and the credential
//! endpoints share: the bounds on what a client can make them wait for,
//! the byte pump that joins two connections, and the host's own proxy
//! (`HTTPS_PROXY` of interpose's environment) that connections are
//! tunnelled through.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long a client has to send its whole request.
pub const HANDSHAKE: Duration = Duration::from_secs(10);
/// The largest HTTP request head the proxy reads.
pub const HEAD_MAX: usize = 16 << 10;
/// How long a destination has to accept the connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// Why the host's proxy setting is not used ([`Upstream::from_env`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpstreamConfigError {
    /// A scheme other than `http://`.
    #[error("{url:?}: only http:// upstream proxies are chained, not {scheme}://")]
    Scheme {
        /// The setting.
        url: String,
        /// Its scheme.
        scheme: String,
    },
    /// A URL without a host.
    #[error("{0:?}: no host")]
    NoHost(String),
}

/// Why a tunnel through the host's proxy failed ([`via_upstream`]); each
/// names the proxy (`host:port`).
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    /// The proxy did not accept the connection in time.
    #[error("the upstream proxy {authority} did not answer within {} s", CONNECT_TIMEOUT.as_secs())]
    ConnectTimeout {
        /// The proxy.
        authority: String,
    },
    /// Connecting to the proxy failed.
    #[error("the upstream proxy {authority}: {source}")]
    Connect {
        /// The proxy.
        authority: String,
        /// The error.
        source: std::io::Error,
    },
    /// Sending the `CONNECT` request failed.
    #[error("the upstream proxy {authority}: {source}")]
    Send {
        /// The proxy.
        authority: String,
        /// The error.
        source: std::io::Error,
    },
    /// Reading the proxy's answer failed.
    #[error("the upstream proxy {authority}: {source}")]
    Receive {
        /// The proxy.
        authority: String,
        /// The error.
        source: std::io::Error,
    },
    /// The answer's head is larger than [`HEAD_MAX`].
    #[error("the upstream proxy {authority} answered with an oversized head")]
    OversizedHead {
        /// The proxy.
        authority: String,
    },
    /// The proxy closed the connection before its answer ended.
    #[error("the upstream proxy {authority} closed the connection")]
    Closed {
        /// The proxy.
        authority: String,
    },
    /// The proxy did not answer in time.
    #[error("the upstream proxy {authority} did not answer within {} s", HANDSHAKE.as_secs())]
    AnswerTimeout {
        /// The proxy.
        authority: String,
    },
    /// The proxy answered with something other than 200.
    #[error("the upstream proxy {authority} answered {status:?}")]
    Refused {
        /// The proxy.
        authority: String,
        /// Its status line.
        status: String,
    },
}

/// A proxy the host itself must go through (interpose's own
/// `HTTPS_PROXY`): connections to allowed hosts are tunnelled through it
/// with `CONNECT`, except to hosts its `NO_PROXY` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    /// Its `host:port`.
    pub authority: String,
    /// The `Proxy-Authorization` value, from the URL's user information.
    pub authorization: Option<String>,
    /// `NO_PROXY`: hosts and domains reached directly; `*` for all.
    pub no_proxy: Vec<String>,
}

impl Upstream {
    /// From an environment (`var` looks a name up): `HTTPS_PROXY` or
    /// `https_proxy`, else `HTTP_PROXY` or `http_proxy`, and `NO_PROXY` or
    /// `no_proxy`. Only `http://` proxies are chained; another scheme is an
    /// error naming it.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Result<Option<Upstream>, UpstreamConfigError> {
        let pick = |names: &[&str]| names.iter().find_map(|n| var(n).filter(|v| !v.trim().is_empty()));
        let Some(url) = pick(&["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"]) else { return Ok(None) };
        let url = url.trim();
        let rest = match url.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => rest,
            Some((scheme, _)) => return Err(UpstreamConfigError::Scheme { url: url.into(), scheme: scheme.into() }),
            None => url,
        };
        let rest = rest.split('/').next().unwrap_or_default();
        let (userinfo, hostport) = match rest.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, rest),
        };
        if hostport.is_empty() {
            return Err(UpstreamConfigError::NoHost(url.into()));
        }
        let authority = if hostport.rsplit_once(':').is_some_and(|(h, p)| !h.ends_with(':') && p.parse::<u16>().is_ok())
        {
            hostport.to_string()
        } else {
            format!("{hostport}:80")
        };
        let no_proxy = pick(&["NO_PROXY", "no_proxy"])
            .map(|v| {
                v.split(',')
                    .map(|e| e.trim().trim_start_matches('.').to_ascii_lowercase())
                    .filter(|e| !e.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        Ok(Some(Upstream { authority, authorization: userinfo.map(|u| base64(u.as_bytes())), no_proxy }))
    }

    /// Whether `host` is reached directly (its `NO_PROXY`).
    pub fn bypasses(&self, host: &str) -> bool {
        self.no_proxy.iter().any(|e| e == "*" || host == e || crate::policy::hosts::beneath(host, e))
    }
}

/// Standard base64 with padding (RFC 4648), for `Proxy-Authorization`.
fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> shift & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A tunnel to `host:port` through the upstream proxy.
pub async fn via_upstream(up: &Upstream, host: &str, port: u16) -> Result<TcpStream, UpstreamError> {
    let authority = || up.authority.clone();
    let mut s = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(up.authority.as_str()))
        .await
        .map_err(|_| UpstreamError::ConnectTimeout { authority: authority() })?
        .map_err(|source| UpstreamError::Connect { authority: authority(), source })?;
    let target = if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") };
    let mut req = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n");
    if let Some(auth) = &up.authorization {
        req.push_str(&format!("Proxy-Authorization: Basic {auth}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).await.map_err(|source| UpstreamError::Send { authority: authority(), source })?;
    // The answer's head, a byte at a time: what follows it is the tunnel's.
    let mut head = Vec::new();
    let read = async {
        while !head.ends_with(b"\r\n\r\n") {
            if head.len() >= HEAD_MAX {
                return Err(UpstreamError::OversizedHead { authority: authority() });
            }
            let mut b = [0u8; 1];
            if s.read(&mut b).await.map_err(|source| UpstreamError::Receive { authority: authority(), source })? == 0 {
                return Err(UpstreamError::Closed { authority: authority() });
            }
            head.push(b[0]);
        }
        Ok(())
    };
    tokio::time::timeout(HANDSHAKE, read)
        .await
        .map_err(|_| UpstreamError::AnswerTimeout { authority: authority() })??;
    let status = String::from_utf8_lossy(&head);
    let line = status.lines().next().unwrap_or_default();
    match line.split(' ').nth(1) {
        Some("200") => Ok(s),
        _ => Err(UpstreamError::Refused { authority: authority(), status: line.into() }),
    }
}

/// Copies `from` to `to` until either ends, counting the bytes; then ends
/// `to`'s writing half, so the other direction can finish.
pub async fn pump(mut from: impl AsyncRead + Unpin, mut to: impl AsyncWrite + Unpin, count: &AtomicU64) {
    let mut buf = vec![0u8; 32 << 10];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
        count.fetch_add(n as u64, Ordering::Relaxed);
    }
    let _ = to.shutdown().await;
}

/// Accepts on `socket` until `stop` changes, at most `max` connections
/// open at once (others wait in the backlog), each served by `serve` on a
/// task of its own; waits for those still open to end. `what` names the
/// listener in a warning.
pub async fn accept_each<F, Fut>(
    socket: std::net::TcpListener,
    max: usize,
    what: &str,
    mut stop: tokio::sync::watch::Receiver<bool>,
    serve: F,
) where
    F: Fn(TcpStream, tokio::sync::watch::Receiver<bool>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    use std::sync::Arc;
    if socket.set_nonblocking(true).is_err() {
        return;
    }
    let Ok(listener) = tokio::net::TcpListener::from_std(socket) else { return };
    let slots = Arc::new(tokio::sync::Semaphore::new(max));
    let mut open = tokio::task::JoinSet::new();
    loop {
        let slot = tokio::select! {
            slot = Arc::clone(&slots).acquire_owned() => slot.expect("the semaphore is never closed"),
            _ = stop.changed() => break,
        };
        let client = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((client, _)) => client,
                Err(e) => {
                    // Out of descriptors, say: wait rather than spin.
                    tracing::warn!("{what}: accepting failed: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
            _ = stop.changed() => break,
        };
        let served = serve(client, stop.clone());
        open.spawn(async move {
            let _slot = slot;
            served.await;
        });
        while open.try_join_next().is_some() {}
    }
    drop(listener);
    while open.join_next().await.is_some() {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hosts_own_proxy_is_read_from_its_environment() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        };
        let up = Upstream::from_env(env(&[
            ("https_proxy", "http://u:p@proxy.corp:3128/"),
            ("NO_PROXY", ".internal,localhost"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(up.authority, "proxy.corp:3128");
        assert_eq!(up.authorization.as_deref(), Some("dTpw"));
        assert!(up.bypasses("a.internal") && up.bypasses("localhost") && !up.bypasses("pypi.org"));
        assert_eq!(
            Upstream::from_env(env(&[("HTTP_PROXY", "proxy.corp")])).unwrap().unwrap().authority,
            "proxy.corp:80"
        );
        assert_eq!(Upstream::from_env(env(&[])).unwrap(), None);
        let e = Upstream::from_env(env(&[("HTTPS_PROXY", "socks5://x:1")])).unwrap_err();
        assert_eq!(e, UpstreamConfigError::Scheme { url: "socks5://x:1".into(), scheme: "socks5".into() });
        assert_eq!(e.to_string(), "\"socks5://x:1\": only http:// upstream proxies are chained, not socks5://");
        let e = Upstream::from_env(env(&[("HTTP_PROXY", "http://user@")])).unwrap_err();
        assert_eq!(e.to_string(), "\"http://user@\": no host");
        assert_eq!(base64(b"Aladdin:open sesame"), "QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
        assert_eq!(base64(b"ab"), "YWI=");
    }
}
