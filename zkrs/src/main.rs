//! `zkrs`: a ZooKeeper command-line tool.
//!
//! Everyday node commands (`ls`, `get`, `set`, `stat`, `create`, `delete`, `watch`) and
//! `locks`, which shows the queue of a lock, latch or semaphore written by any library we know
//! the naming of (Curator, zk-recipes, kazoo, go-zookeeper). Every command takes `--json`.
//! Errors go to standard error with a non-zero exit code (see [`error::CliError::exit_code`]).
#![forbid(unsafe_code)]

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
    let cli = Cli::parse();
    let json = cli.global.json;
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return report(&CliError::Other(format!("cannot start runtime: {e}")), json),
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => report(&e, json),
    }
}

async fn run(cli: Cli) -> Result<(), CliError> {
    cli.command.check_paths()?;
    let session = connect::Session::open(&cli.global).await?;
    let out = output::Output::new(cli.global.json);
    let result = match cli.command {
        Command::Locks(args) => locks::run(&session, &out, args).await,
        Command::Revoke { node } => locks::revoke(&session, &out, &node).await,
        Command::Watch(args) => watch::run(&session, &out, args).await,
        Command::Services(args) => services::run(&session, &out, args).await,
        Command::Members { path } => services::members(&session, &out, &path).await,
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
