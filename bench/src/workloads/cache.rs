//! cache: the initial load of a subtree of 10,000 and 100,000 nodes into
//! `zk_recipes::cache::Cache` against Java's `CuratorCache` (Debian's Curator 5.4,
//! `bench/java/CuratorCacheLoad.java`), in the same run on the same server, and the memory
//! per cached node.
//!
//! Each load runs in a fresh process of its own (this binary with `--cache-child`, or the
//! JVM), alternating which goes first. First load: a cold process, timed from start until
//! every node is cached. Second load: the same process again (warm JIT for Java), timed with
//! the process CPU it used. Memory per node: ours, the RSS growth of the second load while
//! the first cache is still held (so the allocator's pool of the first load's transient
//! buffers is reused and the growth is what the second cache keeps); Java, the heap in use
//! after a full GC with the cache minus the same after `close()` (which clears it). The RSS
//! growth of the first load is reported for both.
//!
//! Memory by cache size (1k to 1M nodes), counted by an allocator rather than read from RSS,
//! is the cost curve of `bench/examples/cache_memory.rs` (`bash bench/cache_curve.sh`).

use std::time::{Duration, Instant};

use super::common::connect_ours;
use crate::args::Args;
use crate::config::Ctx;
use crate::{sys, Res};

/// One load's figures.
#[derive(Debug, Clone, Copy)]
struct Load {
    first_ms: f64,
    second_ms: f64,
    cpu_ms: f64,
    /// Ours: RSS growth per node; Java: heap in use after GC per node.
    bytes_per_node: f64,
    /// RSS growth per node (both).
    rss_bytes_per_node: f64,
}

/// Makes the subtree of `n` nodes at `path` ([`crate::tree::populate`]).
async fn populate(ctx: &Ctx, path: &str, n: usize) -> Res<()> {
    let client = connect_ours(ctx).await?;
    crate::tree::populate(&client, path, n).await?;
    let _ = client.close().await;
    Ok(())
}

/// Runs the cache workload: both sizes (1,000 and 10,000 with `--quick`), `args.rounds`
/// rounds each, and prints its table.
pub(crate) async fn rounds(args: &Args, ctx: &Ctx) -> Res<String> {
    let sizes: [usize; 2] = if args.quick {
        [1_000, 10_000]
    } else {
        [10_000, 100_000]
    };
    let mut table = String::from(
        "cache: initial load, zk_recipes::cache::Cache vs Java CuratorCache (Curator 5.4), medians\n\
         nodes     | client         | 1st load ms | warm load ms | warm CPU ms | bytes/node kept (ours RSS of a 2nd cache, Java heap) | RSS bytes/node of the 1st load\n",
    );
    for n in sizes {
        let path = format!("{}/cache-{n}", ctx.root);
        eprintln!("cache: creating {n} nodes under {path} ...");
        let started = Instant::now();
        populate(ctx, &path, n).await?;
        eprintln!("cache: created in {:.1?}", started.elapsed());
        let mut ours = Vec::new();
        let mut java = Vec::new();
        for round in 0..args.rounds {
            for java_first in if round % 2 == 0 {
                [false, true]
            } else {
                [true, false]
            } {
                tokio::time::sleep(Duration::from_millis(500)).await;
                let load = if java_first {
                    java_load(ctx, &path, n).await
                } else {
                    ours_load(args, ctx, &path, n).await
                };
                let load = match load {
                    Ok(load) => load,
                    Err(e) => {
                        eprintln!("round {round} cache {n:>6} FAILED: {e}");
                        table.push_str(&format!("{n:<9} | round {round} failed: {e}\n"));
                        continue;
                    }
                };
                eprintln!(
                    "round {round} cache {n:>6} {:<9} first {:>7.0} ms, warm {:>7.0} ms, CPU {:>7.0} ms, {:>6.0} B/node, RSS {:>6.0} B/node",
                    if java_first { "Curator" } else { "ours" },
                    load.first_ms,
                    load.second_ms,
                    load.cpu_ms,
                    load.bytes_per_node,
                    load.rss_bytes_per_node
                );
                if java_first { &mut java } else { &mut ours }.push(load);
            }
        }
        if ours.is_empty() || java.is_empty() {
            continue;
        }
        let (o, j) = (median_load(&ours), median_load(&java));
        for (name, l) in [("zk-recipes", o), ("Curator 5.4", j)] {
            table.push_str(&format!(
                "{n:<9} | {name:<14} | {:>11.0} | {:>12.0} | {:>11.0} | {:>52.0} | {:>30.0}\n",
                l.first_ms, l.second_ms, l.cpu_ms, l.bytes_per_node, l.rss_bytes_per_node
            ));
        }
        table.push_str(&format!(
            "{n:<9} | ours / Java    | {:>11.2} | {:>12.2} | {:>11.2} | {:>52.2} | {:>30.2}\n",
            o.first_ms / j.first_ms,
            o.second_ms / j.second_ms,
            o.cpu_ms / j.cpu_ms,
            o.bytes_per_node / j.bytes_per_node,
            o.rss_bytes_per_node / j.rss_bytes_per_node
        ));
        if let Ok(client) = connect_ours(ctx).await {
            let _ = tokio::time::timeout(Duration::from_secs(120), client.delete_all(&path)).await;
            let _ = client.close().await;
        }
    }
    Ok(table)
}

fn median_load(loads: &[Load]) -> Load {
    let m = |f: fn(&Load) -> f64| {
        let mut v: Vec<f64> = loads.iter().map(f).collect();
        sys::median(&mut v)
    };
    Load {
        first_ms: m(|l| l.first_ms),
        second_ms: m(|l| l.second_ms),
        cpu_ms: m(|l| l.cpu_ms),
        bytes_per_node: m(|l| l.bytes_per_node),
        rss_bytes_per_node: m(|l| l.rss_bytes_per_node),
    }
}

/// Runs `cmd`, bounded, and parses its `CACHE ...` line.
async fn run_child(cmd: std::process::Command, what: &'static str, java: bool) -> Res<Load> {
    let out = crate::child::run_bounded(cmd, Duration::from_secs(900), "cache child").await?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("CACHE "))
        .ok_or_else(|| format!("{what} printed {text:?}"))?;
    let f: Vec<f64> = line
        .split_whitespace()
        .map(|v| v.parse::<f64>())
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{what}: {line:?}: {e}"))?;
    let [first_ms, second_ms, cpu_ms, bytes, rss, nodes, ref rest @ ..] = f[..] else {
        return Err(format!("{what}: {line:?}").into());
    };
    if let Some(at_init) = rest.first().filter(|&&a| a < nodes) {
        eprintln!("cache: {what}: initialized() came with {at_init} of {nodes} nodes cached");
    }
    if second_ms < 0.0 {
        return Err(format!(
            "{what}: incomplete load, {nodes} nodes cached {first_ms} ms after start (initialized() at {:?})",
            rest.first()
        )
        .into());
    }
    Ok(Load {
        first_ms,
        second_ms,
        cpu_ms,
        bytes_per_node: bytes,
        // Java reports KiB per node.
        rss_bytes_per_node: if java { rss * 1024.0 } else { rss },
    })
}

async fn java_load(ctx: &Ctx, path: &str, n: usize) -> Res<Load> {
    let cmd = crate::child::curator_cache_load(&ctx.connect, path, n, "1g")?;
    run_child(cmd, "CuratorCacheLoad", true).await
}

async fn ours_load(args: &Args, ctx: &Ctx, path: &str, n: usize) -> Res<Load> {
    let exe = std::env::current_exe()?;
    let mut cmd = std::process::Command::new(exe);
    cmd.args([
        "--cache-child",
        &format!("{n}:{path}"),
        "--connect",
        &ctx.connect,
    ])
    .args(["--threads", &args.threads.to_string()]);
    run_child(cmd, "cache child", false).await
}

/// Process CPU time (user + system).
fn cpu_time() -> Duration {
    use nix::sys::resource::{getrusage, UsageWho};
    match getrusage(UsageWho::RUSAGE_SELF) {
        Ok(u) => {
            let t = |tv: nix::sys::time::TimeVal| {
                Duration::new(
                    tv.tv_sec().max(0) as u64,
                    (tv.tv_usec().max(0) as u32) * 1000,
                )
            };
            t(u.user_time()) + t(u.system_time())
        }
        Err(_) => Duration::ZERO,
    }
}

/// The child side (`--cache-child N:PATH`): loads the subtree twice (the first cache held
/// during the second) and prints `CACHE <first ms> <second ms> <second cpu ms> <RSS bytes per
/// node of the second load> <RSS bytes per node of the first load> <nodes>`.
pub(crate) async fn child(connect: &str, spec: &str) -> Res<()> {
    let (n, path) = spec.split_once(':').ok_or("--cache-child N:PATH")?;
    let n: usize = n.parse()?;
    let client = zk_client::Client::builder(connect)
        .session_timeout(Duration::from_secs(30))
        .connect()
        .await?;
    let load = |client: zk_client::Client| async move {
        let cache = zk_recipes::cache::Cache::new(client, path)?;
        tokio::time::timeout(Duration::from_secs(600), cache.ready())
            .await
            .map_err(|_| "cache not initialized within 600 s")??;
        Res::Ok(cache)
    };
    let settle = Duration::from_millis(300);
    tokio::time::sleep(settle).await;
    let rss_before = sys::rss_kib().ok_or("no VmRSS")?;
    let t0 = Instant::now();
    let first = load(client.clone()).await?;
    let first_ms = t0.elapsed().as_secs_f64() * 1e3;
    tokio::time::sleep(settle).await;
    let rss_after = sys::rss_kib().ok_or("no VmRSS")?;
    let nodes = first.len();
    if nodes != n {
        return Err(format!("cached {nodes} nodes, expected {n}").into());
    }
    let rss_before2 = sys::rss_kib().ok_or("no VmRSS")?;
    let c0 = cpu_time();
    let t1 = Instant::now();
    let second = load(client.clone()).await?;
    let second_ms = t1.elapsed().as_secs_f64() * 1e3;
    let cpu_ms = (cpu_time() - c0).as_secs_f64() * 1e3;
    tokio::time::sleep(settle).await;
    let rss_after2 = sys::rss_kib().ok_or("no VmRSS")?;
    if second.len() != n {
        return Err(format!("second load cached {} nodes, expected {n}", second.len()).into());
    }
    second.close().await?;
    first.close().await?;
    let first_rss = (rss_after as f64 - rss_before as f64) * 1024.0 / n as f64;
    let kept = (rss_after2 as f64 - rss_before2 as f64) * 1024.0 / n as f64;
    println!("CACHE {first_ms:.0} {second_ms:.0} {cpu_ms:.0} {kept:.1} {first_rss:.1} {nodes}");
    let _ = client.close().await;
    Ok(())
}
