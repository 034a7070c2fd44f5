//! Command-line arguments.

use std::time::Duration;

use crate::workloads::{Which, Workload};

#[derive(Debug, Clone)]
pub(crate) struct Args {
    pub(crate) rounds: usize,
    pub(crate) quick: bool,
    pub(crate) workloads: Vec<Workload>,
    pub(crate) connect: Option<String>,
    pub(crate) threads: usize,
    /// Which clients to run (both by default; one alone is for profiling).
    pub(crate) clients: Vec<Which>,
    /// Only start a server, print its address, keep it this long (for profiling runs).
    pub(crate) serve: Option<Duration>,
    /// Outstanding calls in all for W2/W2x (default 1,000).
    pub(crate) window: Option<usize>,
    /// Skip the unmeasured warm-up (for syscall counts of one workload alone).
    pub(crate) no_warmup: bool,
    /// Internal: measure idle-session memory in this (child) process.
    pub(crate) mem_child: Option<Which>,
    /// Internal: load a cache of `N:PATH` in this (child) process (the `cache` workload).
    pub(crate) cache_child: Option<String>,
}

pub(crate) fn usage() -> &'static str {
    "usage: bench [--rounds N (>=1, default 3)] [--quick] [--workloads W1,W2,W2eager,W2x,W3,W3floor,W3tokio,W4,W4bare,W4prepared,W5,codec,mem,tls,cache,W1c,W2c,W3c]\n\
     \x20            [--connect host:port] [--threads N (1 = current-thread runtime, default 1)]\n\
     \x20            [--clients both|ours|theirs (one alone: for profiling)]\n\
     \x20            [--serve SECS (only start a server, print its address, stop it after SECS)]\n\
     \x20            [--no-warmup (skip the unmeasured warm-up)] [--window N (W2/W2x outstanding in all, default 1000)]"
}

pub(crate) fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        rounds: 3,
        quick: false,
        workloads: Workload::ALL.to_vec(),
        connect: None,
        threads: 1,
        clients: vec![Which::Ours, Which::Theirs],
        serve: None,
        no_warmup: false,
        window: None,
        mem_child: None,
        cache_child: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--rounds" => {
                args.rounds = number("--rounds", value("--rounds")?, 1)?;
            }
            "--quick" => args.quick = true,
            "--no-warmup" => args.no_warmup = true,
            "--window" => {
                let w: usize = number("--window", value("--window")?, 1)?;
                args.window = Some(w.min(100_000));
            }
            "--workloads" => {
                let list = value("--workloads")?;
                let mut chosen = Vec::new();
                for w in list.split(',').filter(|w| !w.is_empty()) {
                    chosen.push(Workload::parse(w).ok_or(format!("unknown workload {w}"))?);
                }
                args.workloads = chosen;
            }
            "--connect" => args.connect = Some(value("--connect")?),
            "--threads" => {
                args.threads = number("--threads", value("--threads")?, 1)?;
            }
            "--clients" => {
                args.clients = match value("--clients")?.as_str() {
                    "both" => vec![Which::Ours, Which::Theirs],
                    "ours" => vec![Which::Ours],
                    "theirs" => vec![Which::Theirs],
                    other => return Err(format!("--clients {other}: both, ours or theirs")),
                }
            }
            "--serve" => {
                let secs: u64 = number("--serve", value("--serve")?, 1)?;
                args.serve = Some(Duration::from_secs(secs.min(3600)));
            }
            "--mem-child" => {
                args.mem_child = Some(match value("--mem-child")?.as_str() {
                    "ours" => Which::Ours,
                    "theirs" => Which::Theirs,
                    other => return Err(format!("--mem-child {other}")),
                })
            }
            "--cache-child" => args.cache_child = Some(value("--cache-child")?),
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(args)
}

/// `text` as a number of at least `min`.
fn number<T>(name: &str, text: String, min: T) -> Result<T, String>
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display,
    T::Err: std::fmt::Display,
{
    let n: T = text.parse().map_err(|e| format!("{name} {text}: {e}"))?;
    if n < min {
        return Err(format!("{name} must be at least {min}"));
    }
    Ok(n)
}

/// Whether the run includes `w`.
pub(crate) fn wanted(args: &Args, w: Workload) -> bool {
    args.workloads.contains(&w)
}
