//! `interpose oci-agent` and `interpose oci-config`: their flags; the agent
//! and the profile are [`crate::oci`].

use clap::Args;
use std::path::PathBuf;

/// The socket runtimes are pointed at unless told otherwise.
pub const DEFAULT_SOCKET: &str = "/run/interpose/oci.sock";

/// Supervise containers as the seccomp agent of OCI runtimes (runc,
/// crun): each container's trapped calls decided against its policy,
/// each with a trail of its own.
#[derive(Debug, Args)]
pub struct OciAgentArgs {
    /// The socket the runtimes connect to (the bundles' `listenerPath`).
    #[arg(long, value_name = "PATH", default_value = DEFAULT_SOCKET)]
    pub socket: PathBuf,
    /// Where the policies named by the `org.interpose.policy` annotation
    /// (or the profile's `listenerMetadata`) live.
    #[arg(long, value_name = "DIR")]
    pub policy_dir: Option<PathBuf>,
    /// Write each container's trail to DIR/<container id>.jsonl.
    #[arg(long, value_name = "DIR")]
    pub audit_dir: Option<PathBuf>,
    /// The key that anchors the trails (default: the state directory's).
    #[arg(long, value_name = "FILE")]
    pub audit_key: Option<PathBuf>,
}

/// Print the `linux.seccomp` section of a bundle's config.json that
/// sends a container's calls to `interpose oci-agent`.
#[derive(Debug, Args)]
pub struct OciConfigArgs {
    /// The policy containers get when no annotation names one: a file name
    /// in the agent's `--policy-dir`, passed as `listenerMetadata`.
    #[arg(long, value_name = "NAME")]
    pub policy: Option<String>,
    /// The agent's socket.
    #[arg(long, value_name = "PATH", default_value = DEFAULT_SOCKET)]
    pub listener: PathBuf,
}

/// Runs the agent.
pub fn agent(args: &OciAgentArgs) -> Result<i32, crate::oci::agent::AgentError> {
    let opts = crate::oci::agent::Options {
        socket: args.socket.clone(),
        policy_dir: args.policy_dir.clone(),
        audit_dir: args.audit_dir.clone(),
        audit_key: args.audit_key.clone(),
    };
    crate::oci::agent::run(&opts)?;
    Ok(0)
}

/// Prints the `linux.seccomp` section.
pub fn config(args: &OciConfigArgs) -> Result<i32, serde_json::Error> {
    let section = crate::oci::config::seccomp_section(&args.listener, args.policy.as_deref());
    println!("{}", serde_json::to_string_pretty(&section)?);
    Ok(0)
}
