//! The host's loopback services the allowlist names (`127.0.0.1:PORT`,
//! `[::1]:PORT`, `localhost:PORT`): a listening socket at the same address
//! and port in the command's network namespace, each connection to it
//! joined to the host's service by a connect interpose makes from outside.
//! A database client, a local model server, a dev web server is reached
//! by a plain TCP connect, as without a sandbox; no other port of the
//! host's loopback is (the namespace holds only its own loopback).
//!
//! Each connection is recorded when it ends: the address and port, the
//! host address reached, bytes each way and how long it lasted (the
//! supervisor records which process connected). The waits a client can
//! cause are bounded: at most [`CONNECTIONS_MAX`] are open at once, and
//! the host's service must accept within [`super::relay::CONNECT_TIMEOUT`].

use super::relay::{accept_each, pump, CONNECT_TIMEOUT};
use crate::audit::{self, AccessKind, ProxyProtocol, Record, RuleKind, Sink, Verdict};
use crate::policy::hosts::Forward;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tokio::net::TcpStream;
use tokio::sync::watch;

/// The most forwarded connections open at once, per service.
pub const CONNECTIONS_MAX: usize = 256;

/// Accepts on `socket` until the session stops, forwarding each
/// connection.
pub async fn serve(socket: std::net::TcpListener, forward: Forward, sink: Option<Sink>, stop: watch::Receiver<bool>) {
    let forward = Arc::new(forward);
    let what = format!("forwarding {}", forward.rule);
    accept_each(socket, CONNECTIONS_MAX, &what, stop, |client, stop| {
        let (forward, sink) = (Arc::clone(&forward), sink.clone());
        async move { connection(client, &forward, sink.as_ref(), stop).await }
    })
    .await;
}

/// The host addresses tried for `forward`, in order: the one the command
/// named, then (for `localhost`) the other loopback address.
fn targets(forward: &Forward) -> Vec<SocketAddr> {
    let other = match forward.inside {
        IpAddr::V4(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
        IpAddr::V6(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
    };
    let mut out = vec![SocketAddr::new(forward.inside, forward.port)];
    if forward.by_name {
        out.push(SocketAddr::new(other, forward.port));
    }
    out
}

async fn connection(mut client: TcpStream, forward: &Forward, sink: Option<&Sink>, mut stop: watch::Receiver<bool>) {
    let (started, time_ns) = (Instant::now(), audit::now_ns());
    let _ = client.set_nodelay(true);
    let (up, down) = (AtomicU64::new(0), AtomicU64::new(0));
    let mut reached = None;
    let mut why = None;
    for to in targets(forward) {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(to)).await {
            Ok(Ok(s)) => {
                reached = Some((s, to));
                break;
            }
            Ok(Err(e)) => why = Some(format!("{to}: {e}")),
            Err(_) => why = Some(format!("{to}: no answer within {} s", CONNECT_TIMEOUT.as_secs())),
        }
    }
    let (decision, rule, address) = match reached {
        Some((mut service, to)) => {
            let _ = service.set_nodelay(true);
            let (cr, cw) = client.split();
            let (sr, sw) = service.split();
            tokio::select! {
                _ = async { tokio::join!(pump(cr, sw, &up), pump(sr, cw, &down)) } => {}
                _ = stop.changed() => {}
            }
            (Verdict::Allow, forward.rule.clone(), Some(to.to_string()))
        }
        // The client sees the connection close at once, as it would see a
        // refused connect.
        None => (Verdict::Error, format!("{}; {}", forward.rule, why.unwrap_or_default()), None),
    };
    if let Some(sink) = sink {
        sink.send(Record::Connection(Box::new(audit::Connection {
            seq: sink.next_seq(),
            time_ns,
            access: AccessKind::Connect,
            protocol: ProxyProtocol::Forward,
            host: forward.inside.to_string(),
            port: forward.port,
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
