//! The cache's cost curve: memory per cached node of `zk_recipes::cache::Cache` from 1,000 to
//! 100,000 nodes (1,000,000 on request), beside Curator 5.4's `CuratorCache` on the same
//! subtree, written as a table (and an SVG plot with `--out`).
//!
//! ```sh
//! bash bench/cache_curve.sh                       # 1k, 10k, 100k; ours and Curator; bench/cache-curve.{md,svg}
//! CACHE_SIZES=1000,10000,100000,1000000 bash bench/cache_curve.sh   # the 1M size (a few minutes)
//! bash bench/cache_curve.sh --timings             # also the load times: only on a quiet machine
//! # or directly, against a throwaway server of its own (ZK_HARNESS=process) or --connect HOST:PORT:
//! cargo run -p bench --example cache_memory -- --sizes 1000,10000 --curator --out /tmp/curve
//! ```
//!
//! Each load runs in a fresh process of its own (this example with `child`, or the JVM). What
//! is measured, per node:
//! * **live heap**: bytes allocated and not freed (a counting global allocator, `cap`), before
//!   the cache is built and after it is loaded and settled. It counts what the program asked
//!   the allocator for, as Java's heap after a full GC counts objects: it does not depend on
//!   the CPU's load, and it is the same from run to run. Given for the first cache (what a
//!   user pays, the connection's grown buffers included) and for a second cache loaded while
//!   the first is held (what one more cache costs).
//! * **RSS growth** of the same two loads (the allocator's own overhead and pools included).
//! * Curator: the heap in use after a full GC with the cache, minus the same after `close()`
//!   (`bench/java/CuratorCacheLoad.java`, Debian's Curator 5.4, SerialGC).
//!
//! The model: the live heap is **linear** in the nodes, a constant per cache plus a constant
//! cost per node; the run checks that one more node costs the same (within 25%) between each
//! pair of consecutive sizes.
//!
//! `--timings` adds each client's first load (ms from start until every node is cached) and
//! our resync times after a reconnect and after a session expiry (`cache_memory/resync.rs`,
//! in a third process per size), with a linear fit of each time in the nodes. The memory
//! figures are stable on a loaded machine; the timings are not: take them only on a quiet
//! one (`cargo run --release`, nothing else running), or read the ratios (ours and Curator
//! run one after the other at each size).

use std::alloc::System;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use cap::Cap;
use integration_tests::{Server, Settings};
use zk_client::Client;
use zk_recipes::cache::Cache;

#[path = "../src/child.rs"]
mod child;
#[path = "cache_memory/report.rs"]
mod report;
#[path = "cache_memory/resync.rs"]
mod resync;
#[path = "../src/tree.rs"]
mod tree;

use resync::Resync;

#[global_allocator]
static ALLOC: Cap<System> = Cap::new(System, usize::MAX);

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// Curator's live heap per node at 10,000 nodes when the store was made compact (the goal).
const GOAL: f64 = 264.0;

/// One size's figures (NaN: not measured).
#[derive(Debug, Clone, Copy)]
struct Row {
    nodes: usize,
    live: f64,
    live2: f64,
    rss: f64,
    rss2: f64,
    load_ms: f64,
    curator_heap: f64,
    curator_load_ms: f64,
    resync: Resync,
}

struct Opts {
    sizes: Vec<usize>,
    curator: bool,
    timings: bool,
    out: Option<PathBuf>,
    connect: Option<String>,
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    if args.first().map(String::as_str) == Some("child") {
        let [_, connect, path, n] = &args[..] else {
            return Err("usage: cache_memory child CONNECT PATH NODES".into());
        };
        return rt.block_on(child(connect, path, n.parse()?));
    }
    if args.first().map(String::as_str) == Some("resync") {
        let [_, connect, path, n] = &args[..] else {
            return Err("usage: cache_memory resync CONNECT PATH NODES".into());
        };
        return rt.block_on(resync::child(connect, path, n.parse()?));
    }
    let opts = parse(&args)?;
    rt.block_on(run(opts))
}

fn parse(args: &[String]) -> Res<Opts> {
    let mut opts = Opts {
        sizes: vec![1_000, 10_000, 100_000],
        curator: false,
        timings: false,
        out: None,
        connect: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--sizes" => {
                opts.sizes = value()?
                    .split(',')
                    .map(|s| s.trim().replace('_', "").parse::<usize>())
                    .collect::<Result<_, _>>()?;
            }
            "--curator" => opts.curator = true,
            "--timings" => opts.timings = true,
            "--out" => opts.out = Some(value()?.into()),
            "--connect" => opts.connect = Some(value()?.clone()),
            other => {
                return Err(format!(
                    "unknown argument {other:?}; usage: cache_memory [--sizes 1000,10000,100000] \
                     [--curator] [--timings] [--out PREFIX] [--connect HOST:PORT]"
                )
                .into())
            }
        }
    }
    if opts.sizes.iter().any(|&n| n < 2) {
        return Err("each size must be at least 2 nodes".into());
    }
    Ok(opts)
}

async fn run(opts: Opts) -> Res<()> {
    let largest = opts.sizes.iter().copied().max().unwrap_or(0);
    // The server holds the whole subtree: give it room for a million nodes.
    let server = match &opts.connect {
        Some(_) => None,
        None if largest > 200_000 => {
            Some(Server::launch_with(&Settings::default().with_jvm_flag("-Xmx3g")).await)
        }
        None => Some(Server::launch().await),
    };
    let connect = match (&opts.connect, &server) {
        (Some(c), _) => c.clone(),
        (None, Some(s)) => s.connect_string(),
        (None, None) => return Err("no server".into()),
    };
    let mut rows = Vec::new();
    for &n in &opts.sizes {
        let path = format!("/cache-memory-{n}-{}", std::process::id());
        eprintln!("cache_memory: creating {n} nodes under {path} ...");
        let started = Instant::now();
        populate(&connect, &path, n).await?;
        eprintln!("cache_memory: created in {:.1?}", started.elapsed());
        let limit = Duration::from_secs(120 + (n as u64) / 500);
        let ours = ours(&connect, &path, n, limit).await?;
        let (curator_heap, curator_load_ms) = if opts.curator {
            match curator(&connect, &path, n, limit).await {
                Ok(v) => v,
                Err(e) => {
                    eprintln!("cache_memory: Curator at {n}: {e}");
                    (f64::NAN, f64::NAN)
                }
            }
        } else {
            (f64::NAN, f64::NAN)
        };
        let resync = if opts.timings {
            match resync(&connect, &path, n, limit).await {
                Ok(v) => v,
                Err(e) => {
                    eprintln!("cache_memory: resync at {n}: {e}");
                    Resync::NONE
                }
            }
        } else {
            Resync::NONE
        };
        let row = Row {
            curator_heap,
            curator_load_ms,
            resync,
            ..ours
        };
        eprintln!("cache_memory: {row:?}");
        rows.push(row);
        // A throwaway server of our own is dropped whole; a server of the user's is cleaned.
        if opts.connect.is_none() {
            continue;
        }
        if let Ok(client) = Client::connect(&connect).await {
            let _ = tokio::time::timeout(limit, client.delete_all(&path)).await;
            let _ = client.close().await;
        }
    }
    let table = report::table(&rows, opts.timings);
    println!("{table}");
    if let Some(out) = &opts.out {
        let md = out.with_extension("md");
        let svg = out.with_extension("svg");
        std::fs::write(&md, &table)?;
        std::fs::write(&svg, report::plot(&rows))?;
        eprintln!("cache_memory: wrote {} and {}", md.display(), svg.display());
    }
    drop(server);
    Ok(())
}

/// Makes the subtree of `n` nodes at `path` ([`tree::populate`], the `cache` workload's).
async fn populate(connect: &str, path: &str, n: usize) -> Res<()> {
    let client = Client::connect(connect).await?;
    tree::populate(&client, path, n).await?;
    let _ = client.close().await;
    Ok(())
}

/// Runs `cmd` to its end within `limit` and returns the fields of its line starting with
/// `prefix`.
async fn run_child(
    cmd: std::process::Command,
    limit: Duration,
    prefix: &'static str,
) -> Res<Vec<f64>> {
    let out = child::run_bounded(cmd, limit, prefix).await?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .ok_or_else(|| format!("the child printed {text:?}"))?;
    Ok(line
        .split_whitespace()
        .map(str::parse::<f64>)
        .collect::<Result<_, _>>()?)
}

async fn ours(connect: &str, path: &str, n: usize, limit: Duration) -> Res<Row> {
    let mut cmd = std::process::Command::new(std::env::current_exe()?);
    cmd.args(["child", connect, path, &n.to_string()]);
    let f = run_child(cmd, limit, "MEM ").await?;
    let [live, live2, rss, rss2, load_ms] = f[..] else {
        return Err(format!("child: {f:?}").into());
    };
    Ok(Row {
        nodes: n,
        live,
        live2,
        rss,
        rss2,
        load_ms,
        curator_heap: f64::NAN,
        curator_load_ms: f64::NAN,
        resync: Resync::NONE,
    })
}

/// Our resync times at `n` nodes, from a process of their own (`resync.rs`).
async fn resync(connect: &str, path: &str, n: usize, limit: Duration) -> Res<Resync> {
    let mut cmd = std::process::Command::new(std::env::current_exe()?);
    cmd.args(["resync", connect, path, &n.to_string()]);
    Resync::from_fields(&run_child(cmd, limit, "RESYNC ").await?)
}

/// Curator's heap per node after GC and its first load (ms).
async fn curator(connect: &str, path: &str, n: usize, limit: Duration) -> Res<(f64, f64)> {
    let heap = if n > 200_000 { "4g" } else { "1g" };
    let cmd = child::curator_cache_load(connect, path, n, heap)?;
    let f = run_child(cmd, limit, "CACHE ").await?;
    let [first_ms, second_ms, _cpu, heap_per_node, _rss, nodes, ..] = f[..] else {
        return Err(format!("CuratorCacheLoad: {f:?}").into());
    };
    if second_ms < 0.0 {
        return Err(format!(
            "incomplete load: {nodes} of {n} nodes cached (CURATOR-690 past 65,535 reads in flight)"
        )
        .into());
    }
    Ok((heap_per_node, first_ms))
}

/// Resident set size of this process, in KiB.
fn rss_kib() -> Res<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| "no VmRSS in /proc/self/status".into())
}

/// The child side: loads the subtree at `path` twice (the first cache held during the second)
/// and prints `MEM <live B/node> <live B/node of a 2nd cache> <RSS B/node> <RSS B/node of the
/// 2nd> <first load ms>`.
async fn child(connect: &str, path: &str, n: usize) -> Res<()> {
    let client = Client::builder(connect)
        .session_timeout(Duration::from_secs(30))
        .connect()
        .await?;
    let settle = Duration::from_millis(300);
    let limit = Duration::from_secs(60 + (n as u64) / 1_000);
    let load = |client: Client| async move {
        let cache = Cache::new(client, path)?;
        tokio::time::timeout(limit, cache.ready())
            .await
            .map_err(|_| format!("cache not initialized within {limit:?}"))??;
        if cache.len() != n {
            return Err(format!("cached {} nodes, expected {n}", cache.len()).into());
        }
        Res::Ok(cache)
    };
    tokio::time::sleep(settle).await;
    let (live0, rss0) = (ALLOC.allocated(), rss_kib()?);
    let t0 = Instant::now();
    let first = load(client.clone()).await?;
    let load_ms = t0.elapsed().as_secs_f64() * 1e3;
    tokio::time::sleep(settle).await;
    let (live1, rss1) = (ALLOC.allocated(), rss_kib()?);
    let second = load(client.clone()).await?;
    tokio::time::sleep(settle).await;
    let (live2, rss2) = (ALLOC.allocated(), rss_kib()?);
    let per = |after: usize, before: usize| (after as f64 - before as f64) / n as f64;
    let per_kib = |after: u64, before: u64| (after as f64 - before as f64) * 1024.0 / n as f64;
    println!(
        "MEM {:.1} {:.1} {:.1} {:.1} {load_ms:.0}",
        per(live1, live0),
        per(live2, live1),
        per_kib(rss1, rss0),
        per_kib(rss2, rss1),
    );
    second.close().await?;
    first.close().await?;
    let _ = client.close().await;
    Ok(())
}
