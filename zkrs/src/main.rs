//! `zkrs`: a ZooKeeper command-line tool.
//!
//! Everyday node commands (`ls`, `get`, `set`, `stat`, `create`, `delete`, `watch`) and
//! operator commands (`health`, `mntr`, `config`: four-letter words to every member, no
//! session), and `locks`, which shows the queue of a lock, latch or semaphore written by any library we know
//! the naming of (Curator, zk-recipes, kazoo, go-zookeeper). Every command takes `--json`.
//! Errors go to standard error with a non-zero exit code (see [`error::CliError::exit_code`]).
#![forbid(unsafe_code)]

mod admin;
mod cli;
mod connect;
mod error;
mod locks;
mod nodes;
mod output;
mod services;
mod time;
mod watch;

use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command};
use error::CliError;

fn main() -> ExitCode {
    // A bug must not print a backtrace at an operator: say what happened in one line.
    std::panic::set_hook(Box::new(|info| {
        eprintln!("zkrs: internal error: {info}");
    }));
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e),
    };
    let json = cli.global.json;
    let is_health = matches!(cli.command, Command::Health { .. });
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return report(&CliError::Other(format!("cannot start runtime: {e}")), json),
    };
    if is_health {
        // A probe reads the exit code: any failure to judge is "unknown" (3), never "2".
        return match runtime.block_on(health(cli)) {
            Ok(code) => ExitCode::from(code),
            Err(e) => {
                let _ = report(&e, json);
                ExitCode::from(3)
            }
        };
    }
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => report(&e, json),
    }
}

/// A command line clap rejects: its message, exit 2 (3 for `health`, whose 2 means no quorum);
/// `--help` and `--version` exit 0.
fn usage_error(e: &clap::Error) -> ExitCode {
    let _ = e.print();
    if !e.use_stderr() {
        return ExitCode::SUCCESS;
    }
    let health = std::env::args().skip(1).any(|a| a == "health");
    ExitCode::from(if health { 3 } else { 2 })
}

/// `zkrs health`: the verdict's exit code.
async fn health(cli: Cli) -> Result<u8, CliError> {
    let out = output::Output::new(cli.global.json);
    let Command::Health { admin, max_lag } = &cli.command else {
        return Err(CliError::Other("not a health command".into()));
    };
    let verdict = admin::health(&cli.global.connect, &out, admin, *max_lag).await?;
    Ok(verdict.exit_code())
}

async fn run(cli: Cli) -> Result<(), CliError> {
    cli.command.check_paths()?;
    let out = output::Output::new(cli.global.json);
    // Operator commands talk to each member, outside any session.
    match &cli.command {
        Command::Mntr { admin, keys } => {
            return admin::mntr(&cli.global.connect, &out, admin, keys).await
        }
        Command::Config { admin } => return admin::config(&cli.global.connect, &out, admin).await,
        _ => {}
    }
    let session = connect::Session::open(&cli.global).await?;
    let result = match cli.command {
        Command::Locks(args) => locks::run(&session, &out, args).await,
        Command::Revoke { node } => locks::revoke(&session, &out, &node).await,
        Command::Watch(args) => watch::run(&session, &out, args).await,
        Command::Services(args) => services::run(&session, &out, args).await,
        Command::Members { path } => services::members(&session, &out, &path).await,
        Command::Reconfig(args) => admin::reconfig(&session, &out, args).await,
        other => nodes::run(&session, &out, other).await,
    };
    session.close().await;
    result
}

fn report(err: &CliError, json: bool) -> ExitCode {
    if json {
        let value = serde_json::json!({ "error": err.to_string(), "kind": err.kind() });
        eprintln!("{value}");
    } else {
        eprintln!("zkrs: {err}");
    }
    ExitCode::from(err.exit_code())
}
