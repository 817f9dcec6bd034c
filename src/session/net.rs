//! The session's network: what `--net` and the policy's `[net] allow` turn
//! into before the command starts (a namespace, Landlock ports, the
//! supervisor's rule, the proxy and its variables), and the proxy's start
//! and end around the command.

use super::{io, Config, Net, RunError};
use crate::audit::{self, Sink};
use crate::network::proxy::{self, Proxy};
use crate::policy::hosts::{Allowlist, Forward, HostRule};
use crate::supervisor::NetRule;
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener};
use std::os::fd::OwnedFd;
use std::sync::Arc;

/// The network, decided before the command starts.
pub(super) struct NetSetup {
    /// What the supervisor decides about IPv4 and IPv6 addresses.
    pub rule: NetRule,
    /// TCP ports Landlock lets the command connect to (`None`: Landlock
    /// does not handle TCP).
    pub landlock_ports: Option<Vec<u16>>,
    /// Whether the command gets a network namespace of its own.
    pub own_namespace: bool,
    /// The proxy, unless the network is `host`, `none` or `connect=`.
    pub proxy: Option<ProxyPlan>,
    /// The host's loopback services the allowlist names, reached from the
    /// command's namespace at the same address and port.
    pub forwards: Vec<Forward>,
    /// The endpoints of `[[net.credentials]]`, each at `127.0.0.1:PORT` in
    /// the command's namespace.
    pub credentials: Vec<(u16, Arc<crate::network::inject::Endpoint>)>,
    /// TLS for them.
    pub tls: Option<Arc<rustls::ClientConfig>>,
}

/// The proxy a session will run.
pub(super) struct ProxyPlan {
    /// Where the command reaches it.
    pub addr: SocketAddrV4,
    /// Its socket on the host's loopback; `None` when the command has a
    /// network namespace of its own, where the child makes it.
    pub host_listener: Option<TcpListener>,
    /// The hosts it connects to.
    pub allow: Allowlist,
    /// On the host's loopback: the connections the supervisor made for the
    /// command, the only ones the proxy serves.
    pub admission: Option<Arc<crate::network::Admission>>,
    /// The proxy the host itself goes through (interpose's own
    /// `HTTPS_PROXY`), which connections are chained through.
    pub upstream: Option<proxy::Upstream>,
}

/// Whether the command gets a network namespace of its own: always with
/// `--net none`; with the proxy as root, or in interpose's user namespace
/// (where interpose holds CAP_NET_ADMIN over the new one).
fn own_namespace(net: &Net, unprivileged: bool) -> bool {
    match net {
        Net::None => true,
        Net::Proxy(_) => nix::unistd::geteuid().is_root() || unprivileged,
        Net::Host | Net::Connect(_) => false,
    }
}

/// The command's network namespace made on a thread of its own while the
/// session is set up: creating one (its loopback device, its sysctl
/// tables) is ~0.5 ms of the child's set-up otherwise.
pub(super) struct NetAhead(std::thread::JoinHandle<Result<OwnedFd, crate::sys::Errno>>);

impl NetAhead {
    /// Starts making it where the run will want one, once the session's
    /// namespace is entered (a thread before it would keep a user
    /// namespace from being made).
    pub fn start(args: &Config, namespace: &crate::sandbox::namespace::Namespace) -> Option<NetAhead> {
        if !own_namespace(&args.net, namespace.unprivileged()) {
            return None;
        }
        let made = std::thread::Builder::new().name("interpose-netns".into()).spawn(|| {
            use crate::sys::{fs, process};
            // Only this thread moves into it; its handle keeps it alive.
            process::unshare(libc::CLONE_NEWNET)?;
            process::loopback_up()?;
            fs::openat(fs::Dir::Cwd, c"/proc/thread-self/ns/net", libc::O_RDONLY | libc::O_CLOEXEC, 0)
        });
        made.ok().map(NetAhead)
    }

    /// The namespace for `network`'s plan: the one made ahead, or one the
    /// child makes (where making it ahead failed, the child's attempt says
    /// why); none where the command shares interpose's.
    pub fn take(ahead: Option<NetAhead>, network: &NetSetup) -> crate::sandbox::NetNamespace {
        use crate::sandbox::NetNamespace;
        let made = ahead.and_then(|a| a.0.join().ok()).and_then(Result::ok);
        match (network.own_namespace, made) {
            (false, _) => NetNamespace::Shared,
            (true, Some(ns)) => NetNamespace::Made(ns),
            (true, None) => NetNamespace::Own,
        }
    }
}

impl NetSetup {
    /// Decides the network for `args`, with the policy's allowlist.
    pub fn plan(
        args: &Config,
        (policy_allow, credentials): (&[HostRule], &[crate::policy::hosts::CredentialRule]),
        unprivileged: bool,
    ) -> Result<NetSetup, RunError> {
        let open = |own_namespace| NetSetup {
            rule: NetRule::Open,
            landlock_ports: None,
            own_namespace,
            proxy: None,
            forwards: Vec::new(),
            credentials: Vec::new(),
            tls: None,
        };
        if !credentials.is_empty() && !matches!(args.net, Net::Proxy(_)) {
            return Err(RunError::Net(
                "[[net.credentials]] needs the proxy network (the default), not --net host, none or connect=".into(),
            ));
        }
        let flags = match &args.net {
            Net::Host => return Ok(open(false)),
            Net::None => return Ok(open(true)),
            Net::Connect(ports) => {
                return Ok(NetSetup {
                    rule: NetRule::Ports(ports.clone()),
                    landlock_ports: Some(ports.clone()),
                    own_namespace: false,
                    proxy: None,
                    forwards: Vec::new(),
                    credentials: Vec::new(),
                    tls: None,
                })
            }
            Net::Proxy(flags) => flags,
        };
        let mut allow = Allowlist::default();
        for rule in policy_allow.iter().chain(flags) {
            allow.add(rule.clone());
        }
        let upstream = proxy::Upstream::from_env(|k| std::env::var(k).ok()).unwrap_or_else(|why| {
            eprintln!("interpose: warning: the host's proxy is not used ({why}); allowed hosts are reached directly");
            None
        });
        let own_namespace = own_namespace(&args.net, unprivileged);
        let forwards = allow.forwards().map_err(|e| RunError::Net(e.to_string()))?;
        if forwards.len() > crate::sandbox::MAX_FORWARDS {
            return Err(RunError::Net(format!(
                "{} loopback services named; at most {} are forwarded",
                forwards.len(),
                crate::sandbox::MAX_FORWARDS
            )));
        }
        if own_namespace {
            // Any port is free in a new namespace; one the host picks keeps
            // clear of the fixed ports programs like to serve on (and of
            // the forwarded ones).
            let mut taken: Vec<u16> = forwards.iter().map(|f| f.port).collect();
            let mut free_port = || -> Result<u16, RunError> {
                loop {
                    let port = TcpListener::bind("127.0.0.1:0")
                        .and_then(|l| l.local_addr())
                        .map_err(io("choosing a port for the network proxy"))?
                        .port();
                    if !taken.contains(&port) {
                        taken.push(port);
                        return Ok(port);
                    }
                }
            };
            let port = free_port()?;
            let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
            let mut endpoints = Vec::new();
            for rule in credentials {
                let endpoint = crate::network::inject::Endpoint::new(rule.clone(), home.as_deref()).map_err(|why| {
                    RunError::Net(format!("[[net.credentials]] for {} ({}): {why}", rule.host, rule.origin))
                })?;
                endpoints.push((free_port()?, Arc::new(endpoint)));
            }
            if forwards.len() + endpoints.len() > crate::sandbox::MAX_FORWARDS {
                return Err(RunError::Net(format!(
                    "{} loopback services and credential endpoints; at most {} in all",
                    forwards.len() + endpoints.len(),
                    crate::sandbox::MAX_FORWARDS
                )));
            }
            let tls = match endpoints.is_empty() {
                true => None,
                false => Some(
                    crate::network::inject::tls_config()
                        .map_err(|why| RunError::Net(format!("[[net.credentials]]: {why}")))?,
                ),
            };
            let addr = SocketAddrV4::new(Ipv4Addr::LOCALHOST, port);
            let proxy = ProxyPlan { addr, host_listener: None, allow, admission: None, upstream };
            let reached = forwards.iter().map(|f| std::net::SocketAddr::new(f.inside, f.port)).collect();
            return Ok(NetSetup {
                rule: NetRule::OwnNamespace(Arc::new(reached)),
                landlock_ports: None,
                own_namespace,
                proxy: Some(proxy),
                forwards,
                credentials: endpoints,
                tls,
            });
        }
        if let Some(c) = credentials.first() {
            return Err(RunError::Net(format!(
                "[[net.credentials]] for {} ({}): the endpoint lives in a network namespace of the command's own, which needs root or unprivileged user namespaces (neither is available here)",
                c.host, c.origin
            )));
        }
        if let Some(f) = forwards.first() {
            // On the host's own network the command would reach the
            // service directly, where nothing counts or ends the
            // connection: refused before anything runs.
            return Err(RunError::Net(format!(
                "{}: a loopback service is forwarded into a network namespace of the command's own, which needs root or unprivileged user namespaces (neither is available here)",
                f.rule
            )));
        }
        let listener = crate::network::listen_on_host().map_err(io("listening for the network proxy"))?;
        let addr = match listener.local_addr().map_err(io("the network proxy's address"))? {
            std::net::SocketAddr::V4(a) => a,
            std::net::SocketAddr::V6(_) => unreachable!("bound to an IPv4 address"),
        };
        // Landlock's TCP rules (ABI 4) back the supervisor's decision where
        // the kernel has them; the supervisor alone decides elsewhere (it
        // never continues a connect then).
        let landlock_ports = crate::sys::landlock::abi_version().is_ok_and(|v| v >= 4).then(|| vec![addr.port()]);
        let admission = std::sync::Arc::new(crate::network::Admission::default());
        let proxy =
            ProxyPlan { addr, host_listener: Some(listener), allow, admission: Some(Arc::clone(&admission)), upstream };
        let rule = NetRule::ProxyOnly(addr, admission);
        Ok(NetSetup {
            rule,
            landlock_ports,
            own_namespace: false,
            proxy: Some(proxy),
            forwards: Vec::new(),
            credentials: Vec::new(),
            tls: None,
        })
    }

    /// The addresses the child listens on for the forwarded services.
    pub fn child_forwards(&self) -> Vec<std::net::SocketAddr> {
        let forwards = self.forwards.iter().map(|f| std::net::SocketAddr::new(f.inside, f.port));
        let endpoints = self.credentials.iter().map(|(port, _)| std::net::SocketAddr::from(([127, 0, 0, 1], *port)));
        forwards.chain(endpoints).collect()
    }

    /// The variables the command must not get because a credential is
    /// taken from them by reference (`value = "env:NAME"`).
    pub fn withheld(&self) -> Vec<String> {
        use crate::policy::hosts::CredentialSource;
        self.credentials
            .iter()
            .filter_map(|(_, e)| match &e.rule.source {
                CredentialSource::Env(n) => Some(n.clone()),
                CredentialSource::File(_) => None,
            })
            .collect()
    }

    /// What the user is told at start about the credentials by reference.
    pub fn notes(&self) -> Vec<String> {
        self.credentials
            .iter()
            .map(|(port, e)| {
                format!(
                    "{} is http://127.0.0.1:{port}: requests there go to https://{}:{} with `{}` from {} added; the command holds no credential",
                    e.rule.base_url, e.rule.host, e.rule.port, e.rule.header, e.rule.source
                )
            })
            .collect()
    }

    /// The port the child listens on for the proxy, in its own namespace.
    pub fn child_proxy_port(&self) -> Option<u16> {
        self.proxy.as_ref().filter(|p| p.host_listener.is_none()).map(|p| p.addr.port())
    }

    /// The variables pointing the command at the proxy, and at the
    /// credential endpoints (with their placeholders).
    pub fn environment(&self) -> Vec<(String, String)> {
        let mut vars =
            self.proxy.as_ref().map(|p| crate::network::proxy_environment(p.addr.into())).unwrap_or_default();
        for (port, e) in &self.credentials {
            vars.push((e.rule.base_url.clone(), format!("http://127.0.0.1:{port}")));
            for name in &e.rule.placeholders {
                vars.push((name.clone(), crate::network::inject::PLACEHOLDER.to_string()));
            }
        }
        vars
    }

    /// The session record's `network` feature.
    pub fn feature(&self, args: &Config) -> audit::Feature {
        let detail = match (&args.net, &self.proxy) {
            (Net::Host, _) => {
                "the host's network (--net host): every host and every service on the host's loopback".into()
            }
            (Net::None, _) => "none: a network namespace of the command's own with only loopback".into(),
            (Net::Connect(ports), _) => format!("TCP connects to ports {ports:?} only (Landlock and the supervisor)"),
            (_, Some(p)) => {
                let allowed = if p.allow.rules.is_empty() { "none".into() } else { p.allow.texts().join(", ") };
                let how = if self.own_namespace {
                    "in a network namespace of the command's own, where nothing else is routable".to_string()
                } else {
                    let landlock = if self.landlock_ports.is_some() { "Landlock and " } else { "" };
                    format!("on the host's loopback; every other connect and datagram address refused by {landlock}the supervisor")
                };
                let chained = match &p.upstream {
                    Some(up) => format!("; chained through the host's proxy {}", up.authority),
                    None => String::new(),
                };
                let forwarded = match self.forwards.is_empty() {
                    true => String::new(),
                    false => format!(
                        "; the host's loopback services {} forwarded (a plain TCP connect to the same address and port)",
                        self.child_forwards().iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
                    ),
                };
                format!(
                    "through interpose's proxy at {} {how}; DNS inside the sandbox refused; allowed hosts: {allowed}{chained}{forwarded}",
                    p.addr
                )
            }
            (Net::Proxy(_), None) => unreachable!("a proxy network has a proxy"),
        };
        audit::Feature { present: !matches!(args.net, Net::Host), detail }
    }

    /// Starts the proxy on its socket: the host's, or the one the child
    /// made in its namespace.
    pub fn start_proxy(
        &mut self,
        from_child: Option<OwnedFd>,
        mut forwarded: Vec<OwnedFd>,
        resolve: &[(String, std::net::IpAddr)],
        learn: bool,
        sink: Option<Sink>,
    ) -> Result<Option<Proxy>, RunError> {
        let Some(plan) = &mut self.proxy else { return Ok(None) };
        let listener = match (plan.host_listener.take(), from_child) {
            (Some(l), _) => l,
            (None, Some(fd)) => TcpListener::from(fd),
            (None, None) => unreachable!("the child makes the proxy's socket when the host does not"),
        };
        let endpoints = forwarded.split_off(self.forwards.len().min(forwarded.len()));
        let settings = proxy::Settings {
            allow: plan.allow.clone(),
            resolve: resolve.iter().cloned().collect(),
            learn,
            audit: sink,
            admission: plan.admission.clone(),
            upstream: plan.upstream.clone(),
            forwards: forwarded.into_iter().map(TcpListener::from).zip(self.forwards.iter().cloned()).collect(),
            credentials: endpoints
                .into_iter()
                .map(TcpListener::from)
                .zip(self.credentials.iter().map(|(_, e)| Arc::clone(e)))
                .collect(),
            tls: self.tls.clone(),
        };
        proxy::start(listener, settings).map(Some).map_err(io("starting the network proxy"))
    }
}

/// Stops the proxy and says, on stderr, what it refused and whether it
/// failed: a refused host is the first thing a user needs to know when a
/// tool cannot download.
pub(super) fn stop_proxy(proxy: Option<Proxy>) {
    use std::io::Write;
    let Some(proxy) = proxy else { return };
    let summary = proxy.stop();
    // The terminal may be gone by now (a closed tmux pane): a failed write
    // must not stop the trail from being ended.
    let mut err = std::io::stderr().lock();
    if let Some(why) = summary.failed {
        let _ = writeln!(
            err,
            "interpose: the network proxy failed ({why}); the command's connections were refused from then on"
        );
    }
    for ((host, port), times) in summary.refused {
        let s = if times == 1 { "" } else { "s" };
        let flag = crate::policy::hosts::allow_flag(&host, port);
        let _ = writeln!(err, "interpose: network: refused {host}:{port} ({times} time{s}); to allow it: {flag}");
    }
}
