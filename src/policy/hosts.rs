//! The network allowlist: `HOST[:PORT]` entries (`*.example.org`
//! wildcards, IP literals), from `--net allow=` and `[net] allow` in policy
//! files, and the decision for one destination. Pure: no I/O.

use std::net::IpAddr;

/// The ports an entry without one allows: HTTPS and HTTP.
pub const DEFAULT_PORTS: [u16; 2] = [443, 80];

/// The form every allowlist entry takes, said after what is wrong with one.
const EXPECTED: &str = "expected HOST[:PORT], *.DOMAIN[:PORT] or an IP address";

/// Why [`HostRule::parse`] refused an entry; each names the entry as
/// written (trimmed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    /// A URL given where a host belongs; `host` is what to write instead.
    #[error("{text:?} is a URL; an allowlist entry is a host: write {host:?} (HOST[:PORT], *.DOMAIN[:PORT] or an IP address; the path and scheme are not part of it)")]
    Url {
        /// The entry.
        text: String,
        /// Its host (and port, if not the scheme's default).
        host: String,
    },
    /// `[IPV6` without the closing bracket.
    #[error("{text:?}: an IPv6 address needs its closing ] ({EXPECTED})")]
    UnclosedBracket {
        /// The entry.
        text: String,
    },
    /// Something other than `:PORT` after `[IPV6]`.
    #[error("{text:?}: text after the ] ({EXPECTED})")]
    AfterBracket {
        /// The entry.
        text: String,
    },
    /// An IPv6 address without brackets (its colons would be taken for a
    /// port).
    #[error("{text:?}: an IPv6 address must be written in brackets ({EXPECTED})")]
    UnbracketedIpv6 {
        /// The entry.
        text: String,
    },
    /// The port is not a number from 1 to 65535.
    #[error("{text:?}: {port:?} is not a port ({EXPECTED})")]
    BadPort {
        /// The entry.
        text: String,
        /// The port as written.
        port: String,
    },
    /// `*.` followed by less than a domain of two labels.
    #[error("{text:?}: a wildcard stands for the leftmost labels of a domain with at least two ({EXPECTED})")]
    BadWildcard {
        /// The entry.
        text: String,
    },
    /// Neither a host name, a wildcard nor an IP address.
    #[error("{text:?}: not a host name ({EXPECTED})")]
    NotAHostName {
        /// The entry.
        text: String,
    },
}

/// A loopback entry without a port ([`HostRule::forwards`]): a service on
/// the host's loopback has no default port.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{entry}: a service on the host's loopback is named with its port ({entry}:PORT), which is the only one reached ({origin})")]
pub struct LoopbackWithoutPort {
    /// The entry as written.
    pub entry: String,
    /// Where it came from.
    pub origin: String,
}

/// Why [`CredentialRule::parse`] refused a `[[net.credentials]]` entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CredentialError {
    /// `host` is not an allowlist entry.
    #[error("host {0}")]
    Host(#[source] HostError),
    /// `host` is a pattern, an address or localhost.
    #[error("host {0:?}: one host name (no pattern, address or localhost)")]
    NotOneHost(String),
    /// `header` is not a header name, or one HTTP framing uses.
    #[error("header {0:?}: a header name of letters, digits and '-', not one HTTP framing uses")]
    BadHeader(String),
    /// `value` is neither `env:NAME` nor `file:PATH`.
    #[error("value {0:?}: env:NAME or file:PATH (the value itself is never written in a policy)")]
    BadValue(String),
    /// `prefix` holds a control character.
    #[error("prefix: no control characters")]
    ControlInPrefix,
    /// `base_url` or a placeholder is not a variable name.
    #[error("{0:?} is not a variable name")]
    NotAVariable(String),
}

/// What an entry names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPattern {
    /// One name (lower case, no trailing dot).
    Name(String),
    /// `*.SUFFIX`: every name ending in `.SUFFIX`, at any depth, not
    /// `SUFFIX` itself.
    Wildcard(String),
    /// An IP address, allowed only when listed as such.
    Ip(IpAddr),
}

/// One allowlist entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRule {
    /// The host or pattern.
    pub host: HostPattern,
    /// The port; `None` for [`DEFAULT_PORTS`].
    pub port: Option<u16>,
    /// Where it came from (`--net allow`, `policy.toml:12`, `profile claude`).
    pub origin: String,
}

impl std::fmt::Display for HostRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.host {
            HostPattern::Name(n) => write!(f, "{n}")?,
            HostPattern::Wildcard(s) => write!(f, "*.{s}")?,
            HostPattern::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]")?,
            HostPattern::Ip(ip) => write!(f, "{ip}")?,
        }
        if let Some(p) = self.port {
            write!(f, ":{p}")?;
        }
        Ok(())
    }
}

/// Whether `name` is a DNS name as the proxy accepts one: labels of
/// letters, digits, `-` and `_`, 1-63 bytes each, 253 in all.
pub fn is_host_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
                && !l.starts_with('-')
        })
}

/// A host as a client names it, normalized: lower case, no trailing dot,
/// IPv6 literals without brackets. `None` if it is neither a name nor an
/// address.
pub fn normalize_host(host: &str) -> Option<String> {
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Some(ip.to_string());
    }
    let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    is_host_name(&host).then_some(host)
}

impl HostRule {
    /// Parses `HOST[:PORT]`, `*.SUFFIX[:PORT]`, `IPV4[:PORT]` or
    /// `[IPV6][:PORT]`.
    pub fn parse(text: &str, origin: &str) -> Result<HostRule, HostError> {
        let text = text.trim();
        let entry = || text.to_string();
        // A URL: say what to write instead, its host (and its port, if the
        // URL names one other than the defaults).
        if let Some((scheme, rest)) = text.split_once("://") {
            let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
            let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
            let port = match scheme.to_ascii_lowercase().as_str() {
                "http" => authority.strip_suffix(":80"),
                "https" => authority.strip_suffix(":443"),
                _ => None,
            };
            let host = port.unwrap_or(authority);
            return Err(HostError::Url { text: entry(), host: host.to_string() });
        }
        let (host, port) = if let Some(rest) = text.strip_prefix('[') {
            let (ip, after) = rest.split_once(']').ok_or_else(|| HostError::UnclosedBracket { text: entry() })?;
            let port = match after {
                "" => None,
                p => Some(p.strip_prefix(':').ok_or_else(|| HostError::AfterBracket { text: entry() })?),
            };
            (ip, port)
        } else if text.matches(':').count() > 1 {
            return Err(HostError::UnbracketedIpv6 { text: entry() });
        } else {
            match text.split_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (text, None),
            }
        };
        let port = port
            .map(|p| {
                p.parse::<u16>()
                    .ok()
                    .filter(|&p| p != 0)
                    .ok_or_else(|| HostError::BadPort { text: entry(), port: p.into() })
            })
            .transpose()?;
        let pattern = if let Ok(ip) = host.parse::<IpAddr>() {
            HostPattern::Ip(ip)
        } else if let Some(suffix) = host.strip_prefix("*.") {
            let suffix = suffix.to_ascii_lowercase();
            if !is_host_name(&suffix) || !suffix.contains('.') {
                return Err(HostError::BadWildcard { text: entry() });
            }
            HostPattern::Wildcard(suffix)
        } else {
            let name = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
            if !is_host_name(&name) {
                return Err(HostError::NotAHostName { text: entry() });
            }
            HostPattern::Name(name)
        };
        Ok(HostRule { host: pattern, port, origin: origin.to_string() })
    }

    /// Whether this entry allows `host` (normalized) on `port`.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        let port_ok = match self.port {
            Some(p) => p == port,
            None => DEFAULT_PORTS.contains(&port),
        };
        // A name pattern never matches an address (`*.0.0.1` is not
        // `127.0.0.1`'s).
        let literal = host.parse::<IpAddr>().is_ok();
        port_ok
            && match &self.host {
                HostPattern::Name(_) | HostPattern::Wildcard(_) if literal => false,
                HostPattern::Name(n) => n == host,
                HostPattern::Wildcard(s) => beneath(host, s),
                HostPattern::Ip(ip) => host.parse::<IpAddr>().is_ok_and(|h| h == *ip),
            }
    }
}

/// A service on the host's loopback that the command reaches at the same
/// address and port: an allowlist entry naming `127.0.0.1`, `::1` or
/// `localhost` with a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forward {
    /// The address the command connects to inside its namespace (and the
    /// one tried first on the host).
    pub inside: IpAddr,
    /// Whether the entry named `localhost`: the host's other loopback
    /// address is tried too.
    pub by_name: bool,
    /// The port.
    pub port: u16,
    /// The entry and where it came from, for the trail.
    pub rule: String,
}

impl HostRule {
    /// The loopback services this entry names, one per address: `Ok(None)`
    /// for an entry that names none, an error for a loopback entry without
    /// a port (a service on the host's loopback has no default port).
    pub fn forwards(&self) -> Result<Option<Vec<Forward>>, LoopbackWithoutPort> {
        use std::net::{Ipv4Addr, Ipv6Addr};
        let (addresses, by_name): (Vec<IpAddr>, bool) = match &self.host {
            HostPattern::Ip(ip) if *ip == IpAddr::V4(Ipv4Addr::LOCALHOST) || *ip == IpAddr::V6(Ipv6Addr::LOCALHOST) => {
                (vec![*ip], false)
            }
            HostPattern::Name(n) if n == "localhost" => {
                (vec![IpAddr::V4(Ipv4Addr::LOCALHOST), IpAddr::V6(Ipv6Addr::LOCALHOST)], true)
            }
            _ => return Ok(None),
        };
        let Some(port) = self.port else {
            return Err(LoopbackWithoutPort { entry: self.to_string(), origin: self.origin.clone() });
        };
        let rule = format!("{self} ({})", self.origin);
        Ok(Some(addresses.into_iter().map(|inside| Forward { inside, by_name, port, rule: rule.clone() }).collect()))
    }
}

/// Where a credential's value is read, when the session starts: a
/// variable of interpose's own environment, or a file (`~/` from `HOME`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialSource {
    /// `env:NAME`.
    Env(String),
    /// `file:PATH`.
    File(String),
}

impl std::fmt::Display for CredentialSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CredentialSource::Env(n) => write!(f, "env:{n}"),
            CredentialSource::File(p) => write!(f, "file:{p}"),
        }
    }
}

/// `[[net.credentials]]`: requests the command sends to a local endpoint
/// of interpose's (its URL in `base_url`) go to `https://host` with
/// `header: prefix + value` added; the command holds only a placeholder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialRule {
    /// The HTTPS host (normalized) and port the requests go to.
    pub host: String,
    /// Its port (443 unless written).
    pub port: u16,
    /// The header set on every request (lower case).
    pub header: String,
    /// Where the value is read.
    pub source: CredentialSource,
    /// Text before the value (`Bearer `).
    pub prefix: String,
    /// The variable set to the endpoint's URL.
    pub base_url: String,
    /// Variables set to a placeholder, for clients that insist on a key.
    pub placeholders: Vec<String>,
    /// Where it was written.
    pub origin: String,
}

/// Whether `name` can be an environment variable's name.
fn variable_name(name: &str) -> bool {
    !name.is_empty()
        && !name.as_bytes()[0].is_ascii_digit()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

impl CredentialRule {
    /// Checks one `[[net.credentials]]` entry: `(host, header, value,
    /// prefix)`, `(base_url, placeholder)`.
    pub fn parse(
        (host, header, value, prefix): (&str, &str, &str, &str),
        (base_url, placeholders): (&str, &[String]),
        origin: &str,
    ) -> Result<CredentialRule, CredentialError> {
        let rule = HostRule::parse(host, origin).map_err(CredentialError::Host)?;
        let name = match &rule.host {
            HostPattern::Name(n) if n != "localhost" => n.clone(),
            _ => return Err(CredentialError::NotOneHost(host.into())),
        };
        let token = |h: &str| !h.is_empty() && h.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b));
        if !token(header)
            || ["host", "connection", "content-length", "transfer-encoding"]
                .contains(&header.to_ascii_lowercase().as_str())
        {
            return Err(CredentialError::BadHeader(header.into()));
        }
        let source = match value.split_once(':') {
            Some(("env", n)) if variable_name(n) => CredentialSource::Env(n.to_string()),
            Some(("file", p)) if !p.is_empty() => CredentialSource::File(p.to_string()),
            _ => return Err(CredentialError::BadValue(value.into())),
        };
        if prefix.bytes().any(|b| b.is_ascii_control()) {
            return Err(CredentialError::ControlInPrefix);
        }
        for v in std::iter::once(&base_url.to_string()).chain(placeholders) {
            if !variable_name(v) {
                return Err(CredentialError::NotAVariable(v.clone()));
            }
        }
        Ok(CredentialRule {
            host: name,
            port: rule.port.unwrap_or(443),
            header: header.to_ascii_lowercase(),
            source,
            prefix: prefix.to_string(),
            base_url: base_url.to_string(),
            placeholders: placeholders.to_vec(),
            origin: origin.to_string(),
        })
    }

    /// The rule in words, for the trail and messages (never the value).
    pub fn describe(&self) -> String {
        format!("{}:{} gets `{}` from {} ({})", self.host, self.port, self.header, self.source, self.origin)
    }
}

/// Whether `host` is a name beneath `domain` (`a.example.org` and
/// `a.b.example.org` are beneath `example.org`; `example.org` and
/// `badexample.org` are not).
pub fn beneath(host: &str, domain: &str) -> bool {
    host.len() > domain.len() + 1 && host.ends_with(domain) && host.as_bytes()[host.len() - domain.len() - 1] == b'.'
}

/// The hosts a session may reach through the proxy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allowlist {
    /// The entries, in the order they were given.
    pub rules: Vec<HostRule>,
}

impl Allowlist {
    /// The first entry that allows `host` on `port`.
    pub fn find(&self, host: &str, port: u16) -> Option<&HostRule> {
        self.rules.iter().find(|r| r.allows(host, port))
    }

    /// Adds `rule` unless an equal entry is there already.
    pub fn add(&mut self, rule: HostRule) {
        if !self.rules.iter().any(|r| r.host == rule.host && r.port == rule.port) {
            self.rules.push(rule);
        }
    }

    /// The entries as written, for the session record.
    pub fn texts(&self) -> Vec<String> {
        self.rules.iter().map(ToString::to_string).collect()
    }

    /// The loopback services the entries name, without repeats (an error
    /// for one without a port).
    pub fn forwards(&self) -> Result<Vec<Forward>, LoopbackWithoutPort> {
        let mut out: Vec<Forward> = Vec::new();
        for rule in &self.rules {
            for f in rule.forwards()?.unwrap_or_default() {
                if !out.iter().any(|o| o.inside == f.inside && o.port == f.port) {
                    out.push(f);
                }
            }
        }
        Ok(out)
    }
}

/// The `--net allow=` text that would allow `host` on `port`.
pub fn allow_flag(host: &str, port: u16) -> String {
    let host = if host.contains(':') { format!("[{host}]") } else { host.to_string() };
    if DEFAULT_PORTS.contains(&port) {
        format!("--net allow={host}")
    } else {
        format!("--net allow={host}:{port}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(t: &str) -> HostRule {
        HostRule::parse(t, "test").unwrap()
    }

    #[test]
    fn loopback_entries_name_services_to_forward() {
        let f = rule("127.0.0.1:5432").forwards().unwrap().unwrap();
        assert_eq!(f.len(), 1);
        assert_eq!((f[0].inside.to_string(), f[0].port, f[0].by_name), ("127.0.0.1".into(), 5432, false));
        assert_eq!(f[0].rule, "127.0.0.1:5432 (test)");
        let f = rule("[::1]:11434").forwards().unwrap().unwrap();
        assert_eq!((f[0].inside.to_string(), f[0].port), ("::1".into(), 11434));
        let f = rule("LocalHost:8080").forwards().unwrap().unwrap();
        let inside: Vec<String> = f.iter().map(|f| f.inside.to_string()).collect();
        assert_eq!(inside, ["127.0.0.1", "::1"]);
        assert!(f.iter().all(|f| f.by_name && f.port == 8080));
        let e = rule("localhost").forwards().unwrap_err();
        assert_eq!(e, LoopbackWithoutPort { entry: "localhost".into(), origin: "test".into() });
        assert_eq!(
            e.to_string(),
            "localhost: a service on the host's loopback is named with its port (localhost:PORT), which is the only one reached (test)"
        );
        assert!(rule("127.0.0.2:80").forwards().unwrap().is_none(), "only 127.0.0.1, ::1 and localhost");
        assert!(rule("example.org:5432").forwards().unwrap().is_none());
        let mut list = Allowlist::default();
        for t in ["localhost:8080", "127.0.0.1:8080", "example.org"] {
            list.add(rule(t));
        }
        assert_eq!(list.forwards().unwrap().len(), 2, "the same address and port once");
    }

    #[test]
    fn names_wildcards_and_ports() {
        let r = rule("API.Example.org");
        assert!(r.allows("api.example.org", 443) && r.allows("api.example.org", 80));
        assert!(!r.allows("api.example.org", 22) && !r.allows("x.api.example.org", 443));
        let w = rule("*.example.org:8443");
        assert!(w.allows("a.example.org", 8443) && w.allows("a.b.example.org", 8443));
        assert!(!w.allows("example.org", 8443) && !w.allows("badexample.org", 8443) && !w.allows("a.example.org", 443));
        let ip = rule("10.0.0.1");
        assert!(ip.allows("10.0.0.1", 443) && !ip.allows("10.0.0.2", 443));
        let v6 = rule("[::1]:8080");
        assert!(v6.allows("::1", 8080));
        assert_eq!(v6.to_string(), "[::1]:8080");
        assert_eq!(w.to_string(), "*.example.org:8443");
    }

    #[test]
    fn bad_entries_are_named() {
        for bad in ["", "a b", "*.org", "*", "host:0", "host:x", "::1", "[::1", "-a.org", "a..org", "*.*.org"] {
            let e = HostRule::parse(bad, "test").unwrap_err();
            assert!(e.to_string().contains("expected HOST[:PORT]"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_url_is_answered_with_the_host_to_write() {
        let e = HostRule::parse(" https://user@api.example.com:443/v1?x#y ", "test").unwrap_err();
        assert_eq!(
            e,
            HostError::Url { text: "https://user@api.example.com:443/v1?x#y".into(), host: "api.example.com".into() }
        );
        assert_eq!(
            e.to_string(),
            "\"https://user@api.example.com:443/v1?x#y\" is a URL; an allowlist entry is a host: write \"api.example.com\" \
             (HOST[:PORT], *.DOMAIN[:PORT] or an IP address; the path and scheme are not part of it)"
        );
        // A port other than the scheme's stays in what to write.
        let e = HostRule::parse("http://localhost:8080", "test").unwrap_err();
        assert!(matches!(&e, HostError::Url { host, .. } if host == "localhost:8080"), "{e}");
    }

    #[test]
    fn a_bad_port_is_named() {
        for (text, port) in [("host:x", "x"), ("host:0", "0"), ("[::1]:70000", "70000"), ("host:", "")] {
            let e = HostRule::parse(text, "test").unwrap_err();
            assert_eq!(e, HostError::BadPort { text: text.into(), port: port.into() });
        }
        assert_eq!(
            HostRule::parse("host:x", "test").unwrap_err().to_string(),
            "\"host:x\": \"x\" is not a port (expected HOST[:PORT], *.DOMAIN[:PORT] or an IP address)"
        );
        let e = CredentialRule::parse(("api.example.org:x", "x-api-key", "env:K", ""), ("B", &[]), "test").unwrap_err();
        assert!(matches!(&e, CredentialError::Host(HostError::BadPort { port, .. }) if port == "x"), "{e}");
        assert_eq!(
            e.to_string(),
            "host \"api.example.org:x\": \"x\" is not a port (expected HOST[:PORT], *.DOMAIN[:PORT] or an IP address)"
        );
    }

    #[test]
    fn hosts_are_normalized_before_matching() {
        assert_eq!(normalize_host("Example.ORG.").as_deref(), Some("example.org"));
        assert_eq!(normalize_host("[::1]").as_deref(), Some("::1"));
        assert_eq!(normalize_host("a/b"), None);
        assert_eq!(normalize_host(""), None);
        let list = Allowlist { rules: vec![rule("*.example.org"), rule("pypi.org")] };
        assert_eq!(list.find("files.example.org", 443).map(|r| r.to_string()).as_deref(), Some("*.example.org"));
        assert!(list.find("evil.org", 443).is_none());
        assert_eq!(allow_flag("evil.org", 443), "--net allow=evil.org");
        assert_eq!(allow_flag("evil.org", 22), "--net allow=evil.org:22");
    }
}
