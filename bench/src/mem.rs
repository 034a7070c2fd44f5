//! Memory per idle session, measured in a child process of its own per client.

use std::time::Duration;

use crate::args::Args;
use crate::config::{limits, Ctx, Sizes};
use crate::workloads::{self, Which};
use crate::{resolve, sys, Res};

/// Runs this binary again with `--mem-child`: a fresh process, so neither client's freed
/// memory is reused by the other.
pub(crate) async fn mem_in_child(args: &Args, ctx: &Ctx, which: Which) -> Res<f64> {
    let exe = std::env::current_exe()?;
    if !exe.exists() {
        return Err(format!(
            "{} was replaced while running (a rebuild?): run a copy of the binary",
            exe.display()
        )
        .into());
    }
    let mut cmd = std::process::Command::new(exe);
    cmd.args(["--mem-child", which.tag(), "--connect", &ctx.connect])
        .args(["--threads", &args.threads.to_string()]);
    if args.quick {
        cmd.arg("--quick");
    }
    let out = crate::child::run_bounded(cmd, Duration::from_secs(120), "memory child").await?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("KIB_PER_SESSION "))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| format!("memory child ({}) printed {text:?}", which.name()).into())
}

/// The child side: RSS before and after opening N idle sessions (after one warm-up session).
pub(crate) async fn mem_child(args: &Args, which: Which) -> Res<()> {
    let connect = args.connect.clone().ok_or("--mem-child needs --connect")?;
    let sizes = if args.quick {
        Sizes::quick()
    } else {
        Sizes::full()
    };
    let ctx = Ctx {
        addr: resolve(&connect)?,
        connect,
        root: String::new(),
        sizes,
        limits: limits(args.quick),
        tls: None,
        theirs_tls: None,
    };
    let n = sizes.idle_sessions;
    let kib = match which {
        Which::Ours => {
            let (kib, all) = rss_per_session(n, || workloads::connect_ours(&ctx)).await?;
            for c in &all {
                let _ = tokio::time::timeout(Duration::from_secs(5), c.close()).await;
            }
            kib
        }
        Which::Theirs => {
            rss_per_session(n, || workloads::connect_theirs(&ctx))
                .await?
                .0
        }
    };
    println!("KIB_PER_SESSION {kib:.2}");
    Ok(())
}

/// RSS growth per session over `n` idle sessions (after one warm-up session, which is
/// returned last with the others).
async fn rss_per_session<C, F, Fut>(n: usize, connect: F) -> Res<(f64, Vec<C>)>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Res<C>>,
{
    let settle = Duration::from_millis(500);
    let warm = connect().await?;
    tokio::time::sleep(settle).await;
    let before = sys::rss_kib().ok_or("no VmRSS")?;
    let mut all = Vec::with_capacity(n + 1);
    for _ in 0..n {
        all.push(connect().await?);
    }
    tokio::time::sleep(settle).await;
    let after = sys::rss_kib().ok_or("no VmRSS")?;
    all.push(warm);
    Ok(((after as f64 - before as f64) / n as f64, all))
}
