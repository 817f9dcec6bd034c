//! Command-line flags (clap structs) and one thin handler per verb.

pub mod bench;
pub mod check;
pub mod layers;
pub mod oci;
pub mod policy;
pub mod replay;
pub mod report;
pub mod run;
pub mod undo;
pub mod why;

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// The exit statuses every verb follows (README "Exit status").
pub const EXIT_STATUS: &str = "\
Exit status (every verb):
  0    done; allowed (why); intact (report --verify); nothing newly denied (replay); valid (policy check)
  1    the answer is no: denied (why), not intact (report --verify), newly denied (replay), invalid (policy check)
  2    usage: an unknown verb or flag, a flag value that does not parse, a missing argument
  125  interpose itself failed: a file it cannot read or that is not a trail, a path flag naming nothing,
       a missing kernel feature, an output it will not overwrite or cannot write, a trail not written
run: the command's own status; 128+N if it was killed by signal N; 126 if it cannot be executed
  (outside the surface included); 127 if it is not found";

/// Exit status: usage (an unknown verb or flag, a value that does not parse).
pub const USAGE: i32 = 2;
/// Exit status: interpose itself failed.
pub const FAILED: i32 = 125;

/// interpose: run a command inside a filesystem trust boundary enforced by
/// seccomp user notification with a Landlock backstop.
#[derive(Debug, Parser)]
#[command(name = "interpose", version, about, long_about = None, after_help = EXIT_STATUS)]
pub struct Cli {
    /// The verb.
    #[command(subcommand)]
    pub command: Command,
}

/// The verbs. Each verb's flags are built only for the verb used
/// (`defer`): building every verb's is most of what parsing costs, at
/// every start of `run`.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Run a command confined to a read/write surface (the default verb:
    /// `interpose --rw DIR -- CMD` means `interpose run --rw DIR -- CMD`).
    Run(Box<RunArgs>),
    /// Print the kernel features interpose needs and whether they are present.
    Check,
    /// Answer the questions of `interpose run --ask SOCKET`, one key each:
    /// run it in a second terminal.
    Approvals(ApprovalsArgs),
    /// Summarize an audit trail: denials grouped by directory and process,
    /// totals, and whether the hash chain is intact.
    Report(ReportArgs),
    /// Say which surface entry decides an access to PATH, and why, without
    /// running anything.
    Why(WhyArgs),
    /// Re-decide every access recorded in an audit trail under other flags,
    /// and print what would change.
    Replay(ReplayArgs),
    /// Put every writable tree a `run --journal DIR` session changed back
    /// as it was when the session started, and say what was done.
    Undo(UndoArgs),
    /// Measure per-syscall and whole-command overhead against native and
    /// against floors taken in the same run (seccomp BPF alone, Landlock
    /// alone, a supervisor that only answers CONTINUE).
    Bench(bench::BenchArgs),
    /// A pre-tool-use hook for an agent CLI (Claude Code `PreToolUse`,
    /// Gemini CLI `BeforeTool`): reads the hook JSON on stdin and refuses
    /// file tools whose paths lie outside the surface.
    Hook(HookArgs),
    /// Write per-session settings for an agent CLI (allowed directories,
    /// deny rules, the hook registered) and print the environment variables
    /// that point the CLI at them.
    AgentConfig(AgentConfigArgs),
    /// Print the surface as a short, exact text for an agent's system prompt.
    Preamble(SurfaceOnly),
    /// Print the surface as container bind mounts.
    Mounts(MountsArgs),
    /// Validate, show and list policies.
    #[command(subcommand)]
    Policy(PolicyCommand),
    /// Supervise containers as the seccomp agent of OCI runtimes (runc,
    /// crun): each container's trapped calls decided against its policy,
    /// each with a trail of its own.
    OciAgent(oci::OciAgentArgs),
    /// Print the `linux.seccomp` section of a bundle's config.json that
    /// sends a container's calls to `interpose oci-agent`.
    OciConfig(oci::OciConfigArgs),
    /// Print a shell completion script: `interpose completions bash >
    /// /etc/bash_completion.d/interpose` (zsh: into a directory of
    /// `$fpath` as `_interpose`; fish: `~/.config/fish/completions/`).
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), made from the same definitions as
    /// `--help`: `interpose man > interpose.1; man ./interpose.1`.
    Man {
        /// Write the page and one per verb (`interpose-run.1`, ...) into
        /// DIR instead.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Developer tools.
    #[command(hide = true, subcommand)]
    Debug(DebugCommand),
}

/// Print the surface as a short, exact text for an agent's system prompt.
#[derive(Debug, Args)]
pub struct SurfaceOnly {
    /// The surface.
    #[command(flatten)]
    pub surface: SurfaceArgs,
}

/// A pre-tool-use hook for an agent CLI (Claude Code `PreToolUse`,
/// Gemini CLI `BeforeTool`): reads the hook JSON on stdin and refuses
/// file tools whose paths lie outside the surface.
#[derive(Debug, Args)]
pub struct HookArgs {
    /// Which agent's hook protocol.
    #[arg(value_enum)]
    pub agent: crate::layers::Agent,
    /// The surface.
    #[command(flatten)]
    pub surface: SurfaceArgs,
}

/// Write per-session settings for an agent CLI (allowed directories,
/// deny rules, the hook registered) and print the environment variables
/// that point the CLI at them.
#[derive(Debug, Args)]
pub struct AgentConfigArgs {
    /// Which agent CLI.
    #[arg(value_enum)]
    pub agent: crate::layers::ConfigAgent,
    /// The surface.
    #[command(flatten)]
    pub surface: SurfaceArgs,
    /// Where to write the settings (default: a new directory in $TMPDIR).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Print the surface as container bind mounts.
#[derive(Debug, Args)]
pub struct MountsArgs {
    /// The surface.
    #[command(flatten)]
    pub surface: SurfaceArgs,
    /// Output format.
    #[arg(long, value_enum)]
    pub format: crate::layers::MountFormat,
    /// Operator mounts to compose with the surface's (TOML: `[[mount]]`
    /// tables with `source`, `destination`, `writable`).
    #[arg(long, value_name = "FILE")]
    pub operator_mounts: Option<PathBuf>,
    /// How operator mounts compose with the surface's.
    #[arg(long, value_enum, default_value_t = crate::layers::SurfaceMode::Additive)]
    pub surface_mode: crate::layers::SurfaceMode,
}

/// `interpose policy ...`.
#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Validate a policy file; exit 1 with every error's file, line and column.
    Check {
        /// The policy file.
        file: PathBuf,
    },
    /// Print the surface a policy resolves to here: every entry with its
    /// mode and source, skipped entries and why, and the environment
    /// variables that would be dropped.
    Show {
        /// The policy file, or a built-in profile's name.
        file: PathBuf,
    },
    /// List the built-in profiles a policy can extend.
    List,
}

/// Developer tools.
#[derive(Debug, Subcommand)]
pub enum DebugCommand {
    /// Exec COMMAND under interpose's filter with every action ALLOW (the
    /// BPF cost alone, a floor of `interpose bench`).
    SeccompAllow {
        /// The command and its arguments.
        #[arg(required = true, trailing_var_arg = true, value_name = "COMMAND")]
        command: Vec<std::ffi::OsString>,
    },
    /// Run one micro-benchmark loop and print its per-operation times in
    /// nanoseconds as JSON (what `interpose bench` runs in each mode).
    Workload {
        /// What to do in the loop.
        #[arg(value_enum)]
        kind: crate::bench::Workload,
        /// How many operations.
        count: usize,
        /// The file to open or stat.
        path: PathBuf,
        /// Print only the count and the elapsed time, keeping no samples
        /// (the supervisor's memory run makes ten million calls).
        #[arg(long)]
        summary: bool,
    },
    /// Run COMMAND under one of interpose's own notification floors: its
    /// full-mode filter and a single-threaded supervisor that answers
    /// CONTINUE (`continue`; `continue-every-cpu` with a receiving thread
    /// per CPU), performs opens with ADDFD (`emulate`), or
    /// opens, `newfstatat` and `readlink` of names that are no link
    /// (`emulate-stat`); no namespace, no Landlock, no policy: it enforces
    /// nothing, a measurement only (as `run --bench-floor`).
    Floor {
        /// What the supervisor does.
        #[arg(value_enum)]
        floor: crate::bench::floor::Floor,
        /// The command and its arguments.
        #[arg(required = true, trailing_var_arg = true, value_name = "COMMAND")]
        command: Vec<std::ffi::OsString>,
    },
    /// Run COMMAND with runc in a container of the host's system
    /// directories (read-only), the current directory and each `--bind`
    /// (read-write, at the same paths), under the oci-agent at `--listener`
    /// when given (what `interpose bench` measures containers with).
    Container {
        /// The agent's socket; without it, no seccomp filter.
        #[arg(long, value_name = "PATH")]
        listener: Option<PathBuf>,
        /// A directory to bind at the same path.
        #[arg(long, value_name = "DIR")]
        bind: Vec<PathBuf>,
        /// The command and its arguments.
        #[arg(required = true, trailing_var_arg = true, value_name = "COMMAND")]
        command: Vec<std::ffi::OsString>,
    },
    /// Print libseccomp's PFC dump of the filter (golden file `bpf/filter.pfc`).
    FilterPfc,
    /// Print the filter's programs as libseccomp compiles them now, for
    /// every option (the generated `src/sandbox/programs.rs`).
    FilterPrograms,
    /// Exec COMMAND under the Landlock ruleset alone (no seccomp filter, no
    /// supervisor): to test the backstop by itself and to measure its cost.
    Landlock {
        /// The surface.
        #[command(flatten)]
        surface: SurfaceArgs,
        /// The command and its arguments.
        #[arg(required = true, trailing_var_arg = true, value_name = "COMMAND")]
        command: Vec<std::ffi::OsString>,
    },
}

/// The flags that make a surface, shared by `run`, `why` and `replay`.
#[derive(Debug, Args)]
pub struct SurfaceArgs {
    /// A policy file (TOML, see `examples/`), or the name of a built-in
    /// profile (`interpose policy list`: `--policy claude` is a policy of
    /// the one line `extends = ["claude"]`); the flags below add to it.
    #[arg(long, value_name = "FILE|PROFILE")]
    pub policy: Option<PathBuf>,
    /// Allow reading, writing, creating, deleting and executing beneath PATH.
    #[arg(long = "rw", value_name = "PATH")]
    pub rw: Vec<PathBuf>,
    /// Allow reading and executing beneath PATH.
    #[arg(long = "ro", value_name = "PATH")]
    pub ro: Vec<PathBuf>,
    /// Deny everything beneath PATH, even inside a granted tree (a carve-out
    /// such as `--deny repo/.env`).
    #[arg(long = "deny", value_name = "PATH")]
    pub deny: Vec<PathBuf>,
    /// Leave out the built-in system surface (/usr, /etc, /dev/null, ...).
    #[arg(long)]
    pub no_system: bool,
    /// Leave out the built-in tooling profile (git config, toolchains and
    /// package caches in the home directory; `interpose policy show tooling`).
    #[arg(long)]
    pub no_tooling: bool,
}

pub use crate::session::surface::{env_vars, BadPathFlag, LoadedPolicy, SurfaceError, SurfaceSpec};

impl SurfaceArgs {
    /// The surface these flags describe, as a session takes it.
    pub fn spec(&self) -> SurfaceSpec {
        SurfaceSpec {
            policy: self.policy.clone(),
            rw: self.rw.clone(),
            ro: self.ro.clone(),
            deny: self.deny.clone(),
            no_system: self.no_system,
            no_tooling: self.no_tooling,
        }
    }

    /// The surface these flags describe, changing nothing on the host.
    pub fn build(&self) -> Result<crate::policy::Surface, SurfaceError> {
        self.spec().build()
    }

    /// [`SurfaceSpec::build_with_policy`] for these flags.
    pub fn build_with_policy(
        &self,
        effects: crate::policy::file::Effects,
    ) -> Result<(crate::policy::Surface, LoadedPolicy), SurfaceError> {
        self.spec().build_with_policy(effects)
    }
}

/// Answer the questions of `interpose run --ask SOCKET`, one key each:
/// run it in a second terminal.
#[derive(Debug, Args)]
pub struct ApprovalsArgs {
    /// The socket `interpose run --ask` listens on.
    #[arg(value_name = "SOCKET")]
    pub socket: PathBuf,
}

/// Run a command confined to a read/write surface (the default verb:
/// `interpose --rw DIR -- CMD` means `interpose run --rw DIR -- CMD`).
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The surface.
    #[command(flatten)]
    pub surface: SurfaceArgs,
    /// Write one JSON line per decision to FILE (`-` for stderr,
    /// `unix:PATH` to stream to a listening unix socket).
    #[arg(long, value_name = "FILE")]
    pub audit: Option<PathBuf>,
    /// Which decisions `--audit` records: `all`, or `deny` for denials only.
    #[arg(long, value_enum, default_value_t = crate::supervisor::AuditLevel::All, requires = "audit")]
    pub audit_level: crate::supervisor::AuditLevel,
    /// The key that signs the trail's and the journal's anchors (made if
    /// missing; default `$XDG_STATE_HOME/interpose/audit.key` or
    /// `~/.local/state/interpose/audit.key`). It is carved out of the surface.
    #[arg(long, value_name = "FILE")]
    pub audit_key: Option<PathBuf>,
    /// Keep an undo journal in DIR (a new or empty directory, carved out of
    /// the surface): before the first change of each file, directory or
    /// symlink in a writable tree its pre-image is kept (by reflink where
    /// the file system can, else a copy), and every name made, removed or
    /// renamed is journalled; `interpose undo DIR` puts the trees back. Not
    /// with --fast or --learn.
    #[arg(long, value_name = "DIR")]
    pub journal: Option<PathBuf>,
    /// The most content the journal keeps (`512M`, `20G`; default 4G): a
    /// file whose pre-image would go beyond it is recorded as not
    /// restorable, said at the end, and left as it is by undo.
    #[arg(long, value_name = "SIZE", requires = "journal", value_parser = parse_size)]
    pub journal_max: Option<u64>,
    /// When the trail cannot be written: `stop` kills the command (the
    /// default), `continue` lets it run on unrecorded; either way interpose
    /// says so and exits 125.
    #[arg(long, value_enum, default_value_t = crate::audit::OnFailure::Stop, requires = "audit")]
    pub audit_failure: crate::audit::OnFailure,
    /// Run the command as this user (needs root): a numeric `UID[:GID]` or a
    /// user name. The supervisor then performs the command's file operations
    /// with that user's file-system credentials, never its own.
    #[arg(long, value_name = "UID[:GID]")]
    pub user: Option<String>,
    /// Limit the sandbox to N tasks (processes and threads) with a pids
    /// cgroup; a fork bomb then fails with EAGAIN inside. Without the flag a
    /// generous default (4096) applies where a pids cgroup can be created.
    #[arg(long, value_name = "N")]
    pub max_procs: Option<u32>,
    /// Learning mode: enforce nothing (no Landlock, every answer allows) and
    /// record what enforcement would have denied as `would_deny`; then
    /// `interpose report TRAIL --suggest` prints the flags that allow it.
    #[arg(long, requires = "audit")]
    pub learn: bool,
    /// Pass the environment variable NAME through even though it looks like
    /// a credential (an agent's own API key, say). Repeatable.
    #[arg(long = "env-keep", value_name = "NAME")]
    pub env_keep: Vec<String>,
    /// Keep the session directory (private TMPDIR and, with `home =
    /// "session"`, HOME) after the command ends, and print where it is.
    #[arg(long)]
    pub keep_session: bool,
    /// Leave out interpose's notices on stderr (credential variables
    /// removed, what was refused at the end, hints); errors, warnings and
    /// the explanation of a command that could not start are still said.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Run the command in a mount namespace whose root holds only the
    /// surface (bind mounts, carve-outs left out, a fresh /proc): what the
    /// surface does not grant does not exist there. Without root it uses an
    /// unprivileged user namespace where the kernel allows one.
    #[arg(long)]
    pub isolate: bool,
    /// Fast mode: trap only what Landlock cannot decide for this surface
    /// (opens, attribute changes, unix socket addresses, and everything but
    /// metadata reads when the surface has carve-outs in writable trees or
    /// globs); stat, readlink and access of paths outside the surface are
    /// then not checked. Same as `mode = "fast"` in a policy.
    #[arg(long)]
    pub fast: bool,
    /// The network. Default: only through interpose's proxy, to the hosts
    /// the policy and its profiles allow (`[net] allow`); `allow=HOST,...`
    /// adds hosts (`HOST[:PORT]`, `*.DOMAIN`, IP literals; ports default to
    /// 443 and 80); `host` gives the host's network back; `none` is
    /// loopback only (needs root or a user namespace); `connect=PORT,...`
    /// allows TCP connects to those ports on any host.
    #[arg(long, value_name = "allow=HOSTS|host|none|connect=PORTS", default_value = "proxy", value_parser = parse_net)]
    pub net: Net,
    /// For tests: the proxy resolves NAME to ADDRESS without asking DNS
    /// (trusted as given, loopback included).
    #[arg(long, hide = true, value_name = "NAME=ADDRESS", value_parser = parse_resolve)]
    pub net_resolve: Vec<(String, std::net::IpAddr)>,
    /// For `interpose bench`: answer every notification with CONTINUE at
    /// once, reading and deciding nothing (the notification round-trip
    /// floor). Enforces nothing.
    #[arg(long, hide = true)]
    pub bench_floor: bool,
    /// Run in the host's mount namespace: no overlays for the package
    /// caches (they move to empty private directories) and no private
    /// /dev/shm (POSIX shared memory is then refused).
    #[arg(long)]
    pub no_namespace: bool,
    /// Run without the Landlock backstop (for measurements only: calls
    /// answered with CONTINUE are then open to path-swap races).
    #[arg(long)]
    pub no_landlock: bool,
    /// Ask a person before refusing: a call the surface does not grant
    /// (read, write, create, delete, a unix socket) is held and offered on
    /// SOCKET, a unix socket interpose makes (mode 0600; its directory must
    /// be outside the surface). Answer with `interpose approvals SOCKET` in
    /// another terminal, or any client of the protocol (docs/approvals.md).
    /// Carve-outs and credential locations are refused without asking; no
    /// client or no answer in time is a refusal.
    #[arg(long, value_name = "SOCKET")]
    pub ask: Option<PathBuf>,
    /// How long a question waits for an answer before the call is refused.
    #[arg(long, value_name = "SECONDS", default_value_t = 60, requires = "ask")]
    pub ask_timeout: u64,
    /// Where an answer with the scope `policy` writes its rule (a policy
    /// file made if missing, outside the surface).
    #[arg(long, value_name = "FILE", requires = "ask")]
    pub ask_policy: Option<PathBuf>,
    /// The command and its arguments.
    #[arg(required = true, trailing_var_arg = true, value_name = "COMMAND")]
    pub command: Vec<std::ffi::OsString>,
}

pub use crate::session::Net;

/// Parses `--net-resolve NAME=ADDRESS`.
fn parse_resolve(s: &str) -> Result<(String, std::net::IpAddr), String> {
    let (name, addr) = s.split_once('=').ok_or_else(|| format!("{s:?}: expected NAME=ADDRESS"))?;
    let addr = addr.parse().map_err(|_| format!("{addr:?} is not an IP address"))?;
    let name = crate::policy::hosts::normalize_host(name).ok_or_else(|| format!("{name:?} is not a host name"))?;
    Ok((name, addr))
}

/// Parses `--net`.
pub fn parse_net(s: &str) -> Result<Net, String> {
    match s {
        "host" => Ok(Net::Host),
        "none" => Ok(Net::None),
        "proxy" => Ok(Net::Proxy(Vec::new())),
        _ if s.starts_with("allow=") => s["allow=".len()..]
            .split(',')
            .filter(|h| !h.trim().is_empty())
            // clap shows the error: the typed one ends here, as its text.
            .map(|h| crate::policy::hosts::HostRule::parse(h, "--net allow").map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, _>>()
            .map(Net::Proxy),
        _ => {
            let ports = s.strip_prefix("connect=").ok_or_else(|| {
                format!("{s:?}: expected allow=HOST[,HOST...], host, none, or connect=PORT[,PORT...]")
            })?;
            let ports = ports
                .split(',')
                .map(|p| {
                    p.trim()
                        .parse::<u16>()
                        .ok()
                        .filter(|&p| p != 0)
                        .ok_or_else(|| format!("{p:?} is not a TCP port (1-65535)"))
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Net::Connect(ports))
        }
    }
}

/// Summarize an audit trail: denials grouped by directory and process,
/// totals, and whether the hash chain is intact.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The audit trail (JSON Lines) to read.
    pub file: PathBuf,
    /// Only check the hash chain and its anchor; exit 1 if it is broken,
    /// truncated or not anchored with the key.
    #[arg(long)]
    pub verify: bool,
    /// With --verify: the key the trail was anchored with (default: the
    /// one `run` uses).
    #[arg(long, value_name = "FILE", requires = "verify")]
    pub audit_key: Option<PathBuf>,
    /// Print the narrowest policy (or, with `--as flags`, `--ro`/`--rw`
    /// flags) under which the recorded run would have had no denials
    /// (credential locations only as commented warnings, unless
    /// --confirm-credentials).
    #[arg(long, conflicts_with = "verify")]
    pub suggest: bool,
    /// With --suggest: include credential locations the run touched.
    #[arg(long, requires = "suggest")]
    pub confirm_credentials: bool,
    /// With --suggest: print a policy file (default) or command-line flags.
    #[arg(long = "as", value_enum, default_value_t = SuggestFormat::Policy, requires = "suggest")]
    pub suggest_as: SuggestFormat,
    /// `text` for people, `json` for machines.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub format: ReportFormat,
    /// Also write one self-contained HTML page (process tree, timeline of
    /// denials, searchable table; no network assets) to OUT.
    #[arg(long, value_name = "OUT", conflicts_with_all = ["verify", "suggest"])]
    pub html: Option<std::path::PathBuf>,
    /// With --html: replace OUT if it exists (otherwise an existing file is
    /// left as it is and the report fails).
    #[arg(long, requires = "html")]
    pub force: bool,
}

/// What `report --suggest` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SuggestFormat {
    /// A policy file for `run --policy`.
    Policy,
    /// `--ro`/`--rw` flags.
    Flags,
}

/// Output formats of `interpose report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    /// A terminal summary.
    Text,
    /// One JSON object.
    Json,
}

/// Re-decide every access recorded in an audit trail under other flags,
/// and print what would change.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The audit trail to replay.
    pub file: PathBuf,
    /// The surface, as for `run`.
    #[command(flatten)]
    pub surface: SurfaceArgs,
}

/// Parses a size: bytes, or a number with `K`, `M`, `G` or `T` (powers of
/// 1024).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (number, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => t.split_at(i),
        None => (t, ""),
    };
    let shift = match unit.trim_end_matches(['B', 'b', 'i']).to_ascii_uppercase().as_str() {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return Err(format!("{s:?}: expected a size such as 500M or 4G")),
    };
    let n: u64 = number.parse().map_err(|_| format!("{s:?}: expected a size such as 500M or 4G"))?;
    n.checked_mul(1 << shift).ok_or_else(|| format!("{s:?} is too large"))
}

/// Put every writable tree a `run --journal DIR` session changed back
/// as it was when the session started, and say what was done.
#[derive(Debug, Args)]
pub struct UndoArgs {
    /// The journal's directory (`run --journal DIR`).
    pub dir: PathBuf,
    /// Go on even where files were changed after the session (they are
    /// overwritten or removed), over a journal its session could not seal
    /// (its interpose was killed, or its disk filled), or one undone
    /// already. A journal whose chain or anchor is broken is never undone.
    #[arg(long)]
    pub force: bool,
    /// Check the journal and the trees, and print what would be done,
    /// changing nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// The key the journal was anchored with (default: the one `run` uses).
    #[arg(long, value_name = "FILE")]
    pub audit_key: Option<PathBuf>,
}

/// Say which surface entry decides an access to PATH, and why, without
/// running anything.
#[derive(Debug, Args)]
pub struct WhyArgs {
    /// The surface, as for `run`.
    #[command(flatten)]
    pub surface: SurfaceArgs,
    /// Ask about writing (creating, deleting) instead of reading.
    #[arg(long, conflicts_with = "exec")]
    pub write: bool,
    /// Ask about executing.
    #[arg(long)]
    pub exec: bool,
    /// `text` for people, `json` for machines.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub format: ReportFormat,
    /// The path to ask about.
    pub path: PathBuf,
}

/// The verbs' names and aliases, from one build of the command (which is
/// most of what parsing the command line costs: built once per run).
pub fn verbs(command: &clap::Command) -> Vec<String> {
    command
        .get_subcommands()
        .flat_map(|c| std::iter::once(c.get_name().to_string()).chain(c.get_all_aliases().map(String::from)))
        .collect()
}

/// `args` with `run` inserted where the first word is not a verb (`interpose
/// --rw . -- make` is `interpose run --rw . -- make`); `verbs` from
/// [`verbs`].
pub fn with_default_verb(verbs: &[String], mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let is_verb = |a: &std::ffi::OsStr| {
        let a = a.to_string_lossy();
        ["help", "--help", "-h", "--version", "-V"].contains(&a.as_ref()) || verbs.iter().any(|v| *v == a)
    };
    if args.len() > 1 && !is_verb(&args[1]) {
        args.insert(1, "run".into());
    }
    args
}

/// Parses the command line (`run` inserted where the first word is not a
/// verb), building the command once.
pub fn parse(command: clap::Command, verbs: &[String], args: Vec<std::ffi::OsString>) -> Result<Cli, clap::Error> {
    use clap::FromArgMatches;
    let mut matches = command.try_get_matches_from(with_default_verb(verbs, args))?;
    Cli::from_arg_matches_mut(&mut matches).map_err(|e| {
        use clap::CommandFactory;
        e.format(&mut Cli::command())
    })
}

/// The verb a bare first word is a slip of (`reprot`, `mount`), if any:
/// then it is an error naming the verb, not a program run under the
/// sandbox. One edit for words of up to four letters, two beyond (a swap of
/// neighbours counts as one); a program of that name still runs after
/// `run` or `--`.
pub fn misspelled_verb(verbs: &[String], args: &[std::ffi::OsString]) -> Option<(String, String)> {
    let word = args.get(1)?.to_str()?;
    // Three letters are too few to tell a slip from a program (`who`).
    if word.starts_with('-') || word.len() < 4 {
        return None;
    }
    if verbs.iter().any(|v| v == word) {
        return None;
    }
    let limit = if word.chars().count() <= 4 { 1 } else { 2 };
    let best = verbs.iter().map(|v| (edits(word, v), v)).filter(|(d, _)| *d <= limit).min()?;
    Some((word.to_string(), best.1.clone()))
}

/// Edits between `a` and `b`: insertions, deletions, substitutions and
/// swaps of neighbours (optimal string alignment).
fn edits(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slip_of_a_verb_is_named_and_programs_are_not() {
        use clap::CommandFactory;
        let verbs = verbs(&Cli::command());
        let args = |w: &str| vec!["interpose".into(), std::ffi::OsString::from(w), "x".into()];
        assert_eq!(misspelled_verb(&verbs, &args("reprot")).map(|(_, v)| v), Some("report".into()));
        assert_eq!(misspelled_verb(&verbs, &args("mount")).map(|(_, v)| v), Some("mounts".into()));
        assert_eq!(misspelled_verb(&verbs, &args("polciy")).map(|(_, v)| v), Some("policy".into()));
        for program in
            ["true", "make", "git", "cat", "npm", "who", "python3", "cargo", "claude", "ls", "report", "--rw"]
        {
            assert_eq!(misspelled_verb(&verbs, &args(program)), None, "{program}");
        }
    }

    /// A verb's flags are built only when it is used (`defer`), and that
    /// building sets the description its flags' struct carries: it must be
    /// the verb's own, or `interpose VERB --help`, the manual and the
    /// completions would say another thing than `interpose --help`.
    #[test]
    fn every_verb_is_described_alike_before_and_after_its_flags_are_built() {
        use clap::CommandFactory;
        let unbuilt = Cli::command();
        let mut built = Cli::command();
        built.build();
        let about = |c: &clap::Command| c.get_about().map(ToString::to_string);
        for verb in unbuilt.get_subcommands() {
            let after = built.find_subcommand(verb.get_name()).expect("the same verbs");
            assert!(about(verb).is_some(), "{} has no description", verb.get_name());
            assert_eq!(about(verb), about(after), "{}", verb.get_name());
        }
        // Deferred indeed: nothing of run's flags before it is built.
        let run = |c: &clap::Command| c.find_subcommand("run").map(|r| r.get_arguments().count());
        assert_eq!(run(&unbuilt), Some(0));
        assert!(run(&built) > Some(20), "{:?}", run(&built));
    }

    fn parse(args: &[&str]) -> Cli {
        use clap::CommandFactory;
        let command = Cli::command();
        let verbs = verbs(&command);
        super::parse(command, &verbs, args.iter().map(Into::into).collect()).unwrap()
    }

    #[test]
    fn run_is_the_default_verb() {
        let Command::Run(a) = parse(&["interpose", "--rw", "/w", "--", "ls", "-la"]).command else { panic!() };
        assert_eq!(a.surface.rw, vec![PathBuf::from("/w")]);
        assert_eq!(a.command, vec!["ls", "-la"]);
        let Command::Run(a) = parse(&["interpose", "run", "--ro", "/d", "--", "cat", "--", "x"]).command else {
            panic!()
        };
        assert_eq!(a.command, vec!["cat", "--", "x"]);
        assert!(matches!(parse(&["interpose", "check"]).command, Command::Check));
    }

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_size("1024"), Ok(1024));
        assert_eq!(parse_size("4G"), Ok(4 << 30));
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("1k"), Ok(1024));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("3X").is_err());
    }

    #[test]
    fn a_command_is_required() {
        assert!(Cli::try_parse_from(["interpose", "run", "--rw", "/w"]).is_err());
    }
}
