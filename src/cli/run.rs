//! `interpose run`: its flags as a session [`Config`], and the debug verbs
//! that apply one layer alone.

use super::RunArgs;
use crate::sandbox::{self, filter};
use crate::session::{self, errno, io_at, Config, Enforcement, RunError};
use crate::sys::{process, seccomp};
use std::ffi::OsString;

impl RunArgs {
    /// The session these flags describe; flags that cannot be had together
    /// are refused here, before anything is set up.
    pub fn config(&self) -> Result<Config, RunError> {
        Ok(Config {
            surface: self.surface.spec(),
            audit: self.audit.clone(),
            audit_level: self.audit_level,
            audit_key: self.audit_key.clone(),
            audit_failure: self.audit_failure,
            user: self.user.clone(),
            max_procs: self.max_procs,
            enforcement: Enforcement::from_flags(self.fast, self.learn, self.no_landlock, self.bench_floor)?,
            env_keep: self.env_keep.clone(),
            keep_session: self.keep_session,
            quiet: self.quiet,
            isolate: self.isolate,
            net: self.net.clone(),
            net_resolve: self.net_resolve.clone(),
            no_namespace: self.no_namespace,
            ask: self.ask.clone().map(|socket| session::ask::Ask {
                socket,
                timeout_s: self.ask_timeout,
                policy: self.ask_policy.clone(),
            }),
            journal: self.journal.clone().map(|dir| session::JournalOptions {
                dir,
                budget: self.journal_max.unwrap_or(crate::journal::DEFAULT_BUDGET),
            }),
            command: self.command.clone(),
        })
    }
}

/// Runs `interpose run`; returns the command's exit status.
pub fn run(args: &RunArgs) -> Result<i32, RunError> {
    session::run(&args.config()?)
}

/// `interpose debug landlock`: applies the surface's Landlock ruleset to this
/// process and execs the command (searching `PATH`). Returns only on failure.
pub fn landlock_only(args: &super::SurfaceArgs, command: &[OsString]) -> Result<i32, RunError> {
    use std::os::unix::process::CommandExt;
    let surface = args.build()?;
    let backstop = sandbox::landlock::build(&surface)?;
    process::set_no_new_privs().map_err(errno("PR_SET_NO_NEW_PRIVS"))?;
    process::default_signal(libc::SIGPIPE).map_err(errno("restoring SIGPIPE"))?;
    crate::sys::landlock::restrict_self(std::os::fd::AsFd::as_fd(&backstop.ruleset))
        .map_err(errno("landlock_restrict_self"))?;
    let err = std::process::Command::new(&command[0]).args(&command[1..]).exec();
    Err(io_at("exec", &command[0])(err))
}

/// `interpose debug seccomp-allow`: installs the allow-all variant of the
/// filter on this process and execs the command. Returns only on failure.
pub fn seccomp_allow_only(command: &[OsString]) -> Result<i32, RunError> {
    use std::os::unix::process::CommandExt;
    let prog = filter::program_allowing_all()?;
    process::set_no_new_privs().map_err(errno("PR_SET_NO_NEW_PRIVS"))?;
    process::default_signal(libc::SIGPIPE).map_err(errno("restoring SIGPIPE"))?;
    seccomp::install_filter_without_listener(&prog).map_err(errno("installing the filter"))?;
    let err = std::process::Command::new(&command[0]).args(&command[1..]).exec();
    Err(io_at("exec", &command[0])(err))
}
