//! Network by name: the command reaches the network only through a proxy
//! of interpose's, which connects only to the hosts the allowlist names
//! and records every connection ([`proxy`]); the allowlist itself is pure
//! ([`allow`]).
//!
//! Where the command can have a network namespace of its own (as root, or
//! in interpose's user namespace) it holds only loopback, and the proxy
//! listens on a socket made inside it: nothing else is routable. Elsewhere
//! the proxy listens on the host's loopback, and Landlock (TCP connects to
//! the proxy's port only) and the supervisor (every connect and datagram
//! address decided; only the proxy's address is reached, by a connect the
//! supervisor makes itself) keep the command from anything else.

pub mod forward;
pub mod inject;
pub mod proxy;
pub mod relay;

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::Mutex;

/// The connections to a proxy on the host's loopback that the supervisor
/// made for the command, by their local port: the proxy serves those and
/// no other (another process of the host reaching the port is turned
/// away, so it can neither use the allowlist nor add records to the
/// session's trail). A port is admitted before its connect starts, so the
/// proxy never sees a connection before its admission.
#[derive(Debug, Default)]
pub struct Admission {
    ports: Mutex<HashSet<u16>>,
}

impl Admission {
    /// Admits the next connection from local port `port`.
    pub fn admit(&self, port: u16) {
        self.ports.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(port);
    }

    /// Withdraws an admission whose connect failed.
    pub fn withdraw(&self, port: u16) {
        self.ports.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&port);
    }

    /// Whether a connection from `port` was admitted (once: the admission
    /// is used up).
    pub fn take(&self, port: u16) -> bool {
        self.ports.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&port)
    }
}

/// The variables that point a program at the proxy, in both cases.
/// `NO_PROXY` keeps the command's own loopback servers direct.
pub fn proxy_environment(proxy: SocketAddr) -> Vec<(String, String)> {
    let http = format!("http://{proxy}");
    let socks = format!("socks5h://{proxy}");
    let mut vars = Vec::new();
    for (name, value) in [
        ("HTTPS_PROXY", http.as_str()),
        ("HTTP_PROXY", http.as_str()),
        ("ALL_PROXY", socks.as_str()),
        ("NO_PROXY", "localhost,127.0.0.1,::1"),
    ] {
        vars.push((name.to_string(), value.to_string()));
        vars.push((name.to_ascii_lowercase(), value.to_string()));
    }
    vars
}

/// Binds the proxy's listening socket on the host's loopback, at a port
/// the kernel picks.
pub fn listen_on_host() -> std::io::Result<std::net::TcpListener> {
    std::net::TcpListener::bind("127.0.0.1:0")
}
