//! Layer 0: the environment the command sees (README, "The environment").
//!
//! Variables that carry credentials, or point at them, are removed by
//! default: an agent that cannot read `~/.ssh` should not be handed an SSH
//! agent socket or a cloud token in its environment either. `keep` brings a
//! variable back (an agent needs its own API key), `drop` removes more, and
//! `set` gives variables fixed values.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

/// The variables removed unless kept: names, or patterns with `*`.
pub const CREDENTIALS: &[&str] = &[
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "GPG_AGENT_INFO",
    "AWS_*",
    "GCP_*",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_CLOUD_*",
    "CLOUDSDK_*",
    "AZURE_*",
    "ARM_CLIENT_SECRET",
    "GH_TOKEN",
    "GITHUB_TOKEN",
    "GH_ENTERPRISE_TOKEN",
    "GITLAB_TOKEN",
    "NPM_TOKEN",
    "NODE_AUTH_TOKEN",
    "CARGO_REGISTRY_TOKEN",
    "DOCKER_AUTH_CONFIG",
    "KUBECONFIG",
    "VAULT_*",
    "PGPASSWORD",
    "MYSQL_PWD",
    "*_TOKEN",
    "*_SECRET",
    "*_SECRET_KEY",
    "*_PASSWORD",
    "*_PASSWD",
    "*_API_KEY",
    "*_APIKEY",
    "*_ACCESS_KEY",
    "*_PRIVATE_KEY",
    "*_CREDENTIALS",
];

/// Variables that a credential pattern matches but that name public
/// certificates a TLS client must trust (a corporate proxy's CA): stripping
/// them breaks every download, and they grant nothing. A `drop` rule still
/// removes them.
pub const CERTIFICATES: &[&str] = &[
    "*_CA_BUNDLE",
    "*_CA_CERT",
    "*_CA_CERTS",
    "*_CA_CERTIFICATE",
    "*_CA_CERTS_FILE",
    "*_CA_CERT_FILE",
    "*_CA_FILE",
    "*_CAINFO",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
];

/// What to do with the environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvRules {
    /// Names (or `*` patterns) passed through even if a drop rule matches.
    pub keep: Vec<String>,
    /// Names (or `*` patterns) removed in addition to [`CREDENTIALS`].
    pub drop: Vec<String>,
    /// Variables set to fixed values (after keep and drop).
    pub set: BTreeMap<String, String>,
}

/// One variable removed, and the rule that removed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// The variable's name.
    pub name: OsString,
    /// The pattern that matched (`AWS_*`).
    pub rule: String,
}

/// Whether `name` matches `pattern`, where `*` stands for any run of
/// characters.
pub fn matches(pattern: &str, name: &[u8]) -> bool {
    let pattern = pattern.as_bytes();
    let parts: Vec<&[u8]> = pattern.split(|&c| c == b'*').collect();
    if parts.len() == 1 {
        return pattern == name;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !name.starts_with(first) || name.len() < first.len() + last.len() || !name.ends_with(last) {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.windows(part.len()).position(|w| w == *part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

impl EnvRules {
    /// The rule that drops `name`, unless it is kept.
    pub fn drop_rule(&self, name: &OsStr) -> Option<&str> {
        let name = name.as_bytes();
        if self.keep.iter().any(|k| matches(k, name)) {
            return None;
        }
        if let Some(rule) = self.drop.iter().find(|p| matches(p, name)) {
            return Some(rule);
        }
        if CERTIFICATES.iter().any(|p| matches(p, name)) {
            return None;
        }
        CREDENTIALS.iter().copied().find(|p| matches(p, name))
    }

    /// Applies the rules to `vars`: the environment to pass, and what was
    /// removed.
    pub fn apply(
        &self,
        vars: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> (Vec<(OsString, OsString)>, Vec<Dropped>) {
        let mut kept = Vec::new();
        let mut dropped = Vec::new();
        for (name, value) in vars {
            if self.set.contains_key(name.to_string_lossy().as_ref()) {
                continue;
            }
            match self.drop_rule(&name) {
                Some(rule) => dropped.push(Dropped { name, rule: rule.to_string() }),
                None => kept.push((name, value)),
            }
        }
        kept.extend(self.set.iter().map(|(k, v)| (OsString::from(k), OsString::from(v))));
        (kept, dropped)
    }

    /// Adds `other`'s rules to these (later `set` values win).
    pub fn merge(&mut self, other: &EnvRules) {
        self.keep.extend(other.keep.iter().cloned());
        self.drop.extend(other.drop.iter().cloned());
        self.set.extend(other.set.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(names: &[&str]) -> Vec<(OsString, OsString)> {
        names.iter().map(|n| (OsString::from(n), OsString::from("v"))).collect()
    }

    #[test]
    fn credentials_are_dropped_unless_kept() {
        let rules = EnvRules { keep: vec!["ANTHROPIC_API_KEY".into()], ..Default::default() };
        let (kept, dropped) = rules.apply(vars(&[
            "PATH",
            "SSH_AUTH_SOCK",
            "AWS_SECRET_ACCESS_KEY",
            "GITHUB_TOKEN",
            "DB_PASSWORD",
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "TOKENIZERS_PARALLELISM",
        ]));
        let kept: Vec<_> = kept.iter().map(|(k, _)| k.to_str().unwrap()).collect();
        assert_eq!(kept, ["PATH", "ANTHROPIC_API_KEY", "TOKENIZERS_PARALLELISM"]);
        let rules: Vec<_> = dropped.iter().map(|d| (d.name.to_str().unwrap(), d.rule.as_str())).collect();
        assert_eq!(
            rules,
            [
                ("SSH_AUTH_SOCK", "SSH_AUTH_SOCK"),
                ("AWS_SECRET_ACCESS_KEY", "AWS_*"),
                ("GITHUB_TOKEN", "GITHUB_TOKEN"),
                ("DB_PASSWORD", "*_PASSWORD"),
                ("OPENAI_API_KEY", "*_API_KEY"),
            ]
        );
    }

    #[test]
    fn certificate_paths_are_not_credentials() {
        let rules = EnvRules::default();
        let names = ["AWS_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE", "GIT_SSL_CAINFO"];
        let (kept, dropped) = rules.apply(vars(&names));
        assert_eq!(kept.len(), names.len(), "{dropped:?}");
        // The key next to them is still a credential; a drop rule still wins.
        assert_eq!(rules.drop_rule(OsStr::new("AWS_SECRET_ACCESS_KEY")), Some("AWS_*"));
        let strict = EnvRules { drop: vec!["AWS_CA_BUNDLE".into()], ..Default::default() };
        assert_eq!(strict.drop_rule(OsStr::new("AWS_CA_BUNDLE")), Some("AWS_CA_BUNDLE"));
    }

    #[test]
    fn drop_and_set_apply_after_the_defaults() {
        let mut rules = EnvRules { drop: vec!["MY_*".into()], ..Default::default() };
        rules.set.insert("HOME".into(), "/session/home".into());
        let (kept, dropped) = rules.apply(vars(&["HOME", "MY_THING", "LANG"]));
        assert_eq!(dropped.len(), 1);
        assert_eq!(kept, vec![("LANG".into(), "v".into()), ("HOME".into(), "/session/home".into())]);
    }

    #[test]
    fn patterns() {
        assert!(matches("AWS_*", b"AWS_PROFILE"));
        assert!(matches("*_TOKEN", b"X_TOKEN") && !matches("*_TOKEN", b"_TOKENS"));
        assert!(matches("A*B*C", b"AxxBxxC") && !matches("A*B*C", b"AC"));
        assert!(!matches("AWS_*", b"AWS"));
    }
}
