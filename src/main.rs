//! The `interpose` binary.

use interpose::cli::{self, Cli, Command, DebugCommand};
use std::process::ExitCode;

/// Exit status when interpose itself fails (`cli::EXIT_STATUS`).
const INTERPOSE_FAILED: u8 = cli::FAILED as u8;

fn main() -> ExitCode {
    use tracing_subscriber::{filter::Targets, layer::SubscriberExt, util::SubscriberInitExt};
    // `Targets` (`debug`, `interpose::session=debug,warn`), not `EnvFilter`:
    // that one's regular expressions turn on the full DFA in regex-automata,
    // which every glob of a policy then built at start (2 ms under the
    // shipped example policy; docs/performance.md).
    let only_errors = || Targets::new().with_default(tracing::Level::ERROR);
    let levels = match std::env::var("INTERPOSE_LOG") {
        Ok(v) => v.parse::<Targets>().unwrap_or_else(|e| {
            eprintln!("interpose: INTERPOSE_LOG={v:?}: {e}; only errors are logged");
            only_errors()
        }),
        Err(_) => only_errors(),
    };
    tracing_subscriber::registry()
        .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr))
        .with(levels)
        .init();
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // Built once: building the command is most of what parsing costs.
    let command = <Cli as clap::CommandFactory>::command();
    let verbs = cli::verbs(&command);
    if let Some((word, verb)) = cli::misspelled_verb(&verbs, &argv) {
        eprintln!("interpose: `{word}` is not a verb; did you mean `{verb}`? (to run a program of that name: interpose run -- {word} ...)");
        return ExitCode::from(cli::USAGE as u8);
    }
    let args = cli::parse(command, &verbs, argv);
    let args = match args {
        Ok(a) => a,
        Err(e) if e.use_stderr() => {
            let _ = e.print();
            return ExitCode::from(cli::USAGE as u8);
        }
        Err(e) => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
    };
    // Reports and listings end quietly when their reader goes away (`| head`)
    // instead of panicking on a broken pipe.
    if !matches!(args.command, Command::Run(_)) {
        let _ = interpose::sys::process::default_signal(libc::SIGPIPE);
    }
    let result: anyhow::Result<i32> = match args.command {
        Command::Run(run) => cli::run::run(&run).map_err(Into::into),
        Command::Check => Ok(cli::check::run()),
        Command::Approvals(a) => interpose::approvals::client::run(&a.socket).map(|()| 0).map_err(Into::into),
        Command::Report(r) => Ok(cli::report::run(&r)),
        Command::Why(w) => Ok(cli::why::run(&w)),
        Command::Replay(r) => Ok(cli::replay::run(&r)),
        Command::Undo(u) => Ok(cli::undo::run(&u)),
        Command::Policy(p) => Ok(cli::policy::run(&p)),
        Command::Hook(h) => Ok(cli::layers::hook(&h)),
        Command::AgentConfig(a) => cli::layers::agent_config(&a).map_err(Into::into),
        Command::Preamble(p) => cli::layers::preamble(&p).map_err(Into::into),
        Command::Mounts(m) => cli::layers::mounts(&m).map_err(Into::into),
        Command::OciAgent(a) => cli::oci::agent(&a).map_err(Into::into),
        Command::OciConfig(c) => cli::oci::config(&c).map_err(Into::into),
        Command::Debug(DebugCommand::FilterPfc) => {
            interpose::sandbox::filter::pfc().map(|p| print!("{p}")).map(|()| 0).map_err(Into::into)
        }
        Command::Debug(DebugCommand::FilterPrograms) => {
            interpose::sandbox::filter::programs_source().map(|p| print!("{p}")).map(|()| 0).map_err(Into::into)
        }
        Command::Debug(DebugCommand::Landlock { surface, command }) => {
            cli::run::landlock_only(&surface, &command).map_err(Into::into)
        }
        Command::Debug(DebugCommand::SeccompAllow { command }) => {
            cli::run::seccomp_allow_only(&command).map_err(Into::into)
        }
        Command::Debug(DebugCommand::Workload { kind, count, path, summary }) => {
            interpose::bench::workload(kind, count, &path, summary).map_err(Into::into)
        }
        Command::Debug(DebugCommand::Floor { floor, command }) => {
            interpose::bench::floor::run(floor, &command).map_err(Into::into)
        }
        Command::Debug(DebugCommand::Container { listener, bind, command }) => {
            interpose::bench::container::run(listener.as_deref(), &bind, &command).map_err(Into::into)
        }
        Command::Bench(b) => interpose::bench::run(&b.options()).map_err(Into::into),
        Command::Completions { shell } => {
            use clap::CommandFactory;
            clap_complete::generate(shell, &mut Cli::command(), "interpose", &mut std::io::stdout());
            Ok(0)
        }
        Command::Man { dir } => {
            use clap::CommandFactory;
            match dir {
                Some(dir) => clap_mangen::generate_to(Cli::command(), &dir),
                None => clap_mangen::Man::new(Cli::command()).render(&mut std::io::stdout()),
            }
            .map(|()| 0)
            .map_err(Into::into)
        }
    };
    match result {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(INTERPOSE_FAILED)),
        Err(e) => {
            // Every error message already includes its cause. stderr may
            // be gone (`--audit -` read by a process that left): no panic.
            use std::io::Write;
            let _ = writeln!(std::io::stderr().lock(), "interpose: error: {e}");
            ExitCode::from(INTERPOSE_FAILED)
        }
    }
}
