//! Side-by-side benchmark of zk-client / zk-recipes against the `zookeeper-client` crate on one
//! ZooKeeper server. See `bench/README.md`.
//!
//! ```text
//! cargo run --release -p bench -- [--rounds N] [--quick] [--workloads W1,W2,...]
//!                                 [--connect host:port] [--threads N]
//! ```
#![forbid(unsafe_code)]

mod args;
mod child;
mod codec;
mod config;
mod mem;
mod report;
mod run;
mod sys;
mod tree;
mod workloads;

use std::net::{SocketAddr, ToSocketAddrs};
use std::process::ExitCode;
use std::time::Duration;

use args::{parse_args, usage};
pub(crate) use config::{Ctx, Sizes};
use mem::mem_child;
use run::run;

pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;
pub(crate) type Res<T> = Result<T, BoxError>;

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("{e}");
            }
            eprintln!("{}", usage());
            return ExitCode::from(2);
        }
    };
    if args.connect.is_none() && std::env::var_os("ZK_HARNESS").is_none() {
        // Local java processes: no docker needed, and lighter on a small machine. Set before
        // any thread exists.
        std::env::set_var("ZK_HARNESS", "process");
    }
    let runtime = if args.threads == 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(args.threads)
            .enable_all()
            .build()
    };
    let runtime = match runtime {
        Ok(r) => r,
        Err(e) => {
            eprintln!("runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = match (args.mem_child, args.serve) {
        _ if args.cache_child.is_some() => runtime.block_on(cache_child(&args)),
        (Some(which), _) => runtime.block_on(mem_child(&args, which)),
        (None, Some(limit)) => runtime.block_on(serve(limit)),
        (None, None) => runtime.block_on(run(&args)),
    };
    // Clients' background tasks may still hold sockets: do not wait for them.
    runtime.shutdown_timeout(Duration::from_secs(2));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench failed: {e}");
            ExitCode::FAILURE
        }
    }
}

pub(crate) fn resolve(hostport: &str) -> Res<SocketAddr> {
    hostport
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| format!("{hostport}: no address").into())
}

async fn cache_child(args: &args::Args) -> Res<()> {
    let connect = args
        .connect
        .as_deref()
        .ok_or("--cache-child needs --connect")?;
    let spec = args.cache_child.as_deref().unwrap_or_default();
    workloads::cache::child(connect, spec).await
}

async fn serve(limit: Duration) -> Res<()> {
    let server = integration_tests::fresh_standalone().await;
    println!("{}", server.connect_string());
    eprintln!("serving for {limit:?}; end earlier by closing stdin (Ctrl-D)");
    integration_tests::serve_until_stdin_closes(limit).await;
    drop(server);
    Ok(())
}

/// The 1-minute load average (how busy the machine was with other work too).
pub(crate) fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".into())
}

pub(crate) fn runtime_name(threads: usize) -> String {
    if threads == 1 {
        "tokio current-thread".into()
    } else {
        format!("tokio multi-thread, {threads} workers")
    }
}
