//! One benchmark run: the server, the warm-up, the rounds of every chosen workload.

use std::time::{Duration, Instant};

use crate::args::{wanted, Args};
use crate::codec;
use crate::config::{limits, Ctx, Sizes};
use crate::mem::mem_in_child;
use crate::report::Report;
use crate::workloads::{self, tls, w5, Which, Workload};
use crate::{loadavg, resolve, runtime_name, Res};

/// Starts (or connects to) the server, runs the chosen workloads, prints the report.
pub(crate) async fn run(args: &Args) -> Res<()> {
    let mut sizes = if args.quick {
        Sizes::quick()
    } else {
        Sizes::full()
    };
    if let Some(w) = args.window {
        sizes.w2_window = w;
    }
    let started = Instant::now();
    let load_before = loadavg();
    // Keep the server (if we started it) until the end: dropping it stops it.
    let (server, connect) = match &args.connect {
        Some(c) => (None, c.clone()),
        None => {
            eprintln!("starting a standalone ZooKeeper through the harness ...");
            let server = integration_tests::fresh_standalone().await;
            let c = server.connect_string();
            (Some(server), c)
        }
    };
    let addr = resolve(&connect)?;
    let ctx = Ctx {
        connect: connect.clone(),
        addr,
        root: format!("/zk-bench-{}", std::process::id()),
        sizes,
        limits: limits(args.quick),
        tls: None,
        theirs_tls: None,
    };
    eprintln!(
        "server {connect}; {} round(s){}; runtime: {}",
        args.rounds,
        if args.quick { ", quick sizes" } else { "" },
        runtime_name(args.threads)
    );
    let admin = workloads::connect_ours(&ctx).await?;
    workloads::ensure_node(&admin, &ctx.root, b"").await?;
    workloads::ensure_node(&admin, &ctx.data_node(), &[0x5a; 100]).await?;

    let outcome = measure_all(args, &ctx).await;

    let _ = tokio::time::timeout(Duration::from_secs(30), admin.delete_all(&ctx.root)).await;
    let _ = admin.close().await;
    drop(server);
    let mut report = outcome?;
    report.load = (load_before, loadavg());
    println!("{}", report.render(args, &ctx, started.elapsed()));
    Ok(())
}

async fn measure_all(args: &Args, ctx: &Ctx) -> Res<Report> {
    let mut report = Report::default();
    let paired: Vec<Workload> = Workload::PAIRED
        .into_iter()
        .filter(|w| wanted(args, *w))
        .collect();
    if paired
        .iter()
        .any(|w| matches!(w, Workload::W1 | Workload::W2 | Workload::W3))
        && workloads::c_client::binary().is_none()
    {
        eprintln!("the C client anchor is left out: ZK_C_BENCH is unset (bench/run.sh builds it)");
    }
    if !paired.is_empty() && !args.no_warmup {
        warm_up(args, ctx).await?;
    }
    for round in 0..args.rounds {
        for (i, &w) in paired.iter().enumerate() {
            for which in order(args, round + i) {
                pause().await;
                sample_into(&mut report, ctx, w, which, round).await;
            }
        }
        for diag in Workload::ALL
            .into_iter()
            .filter(|w| w.diagnostic().is_some())
        {
            if wanted(args, diag) && (!diag.is_anchor() || workloads::c_client::binary().is_some())
            {
                pause().await;
                sample_into(&mut report, ctx, diag, Which::Ours, round).await;
            }
        }
        if wanted(args, Workload::W5) {
            herd_round(&mut report, args, ctx, round).await;
        }
        if wanted(args, Workload::Mem) {
            mem_round(&mut report, args, ctx, round).await;
        }
    }
    if wanted(args, Workload::Codec) {
        codec_rounds(&mut report, args, ctx);
    }
    if wanted(args, Workload::Tls) {
        tls_rounds(&mut report, args, ctx).await;
    }
    if wanted(args, Workload::Cache) {
        match workloads::cache::rounds(args, ctx).await {
            Ok(table) => println!("{table}"),
            Err(e) => report.fail(format!("cache: {e}")),
        }
    }
    Ok(report)
}

/// Warms the server's JIT (and both clients' code paths), unmeasured.
async fn warm_up(args: &Args, ctx: &Ctx) -> Res<()> {
    eprintln!("warm-up ...");
    let warm = Ctx {
        sizes: Sizes::quick(),
        ..ctx.clone()
    };
    for which in order(args, 0) {
        Workload::W1.sample(&warm, which, 0).await?;
        Workload::W2.sample(&warm, which, 0).await?;
    }
    Ok(())
}

/// One run of a sampled workload (or diagnostic), logged and kept in the report.
async fn sample_into(report: &mut Report, ctx: &Ctx, w: Workload, which: Which, round: usize) {
    // In a task of its own, as application code runs: not in `block_on`'s future, which the
    // current-thread scheduler polls only after a look at the reactor.
    let task_ctx = ctx.clone();
    let task = tokio::spawn(async move { w.sample(&task_ctx, which, round).await });
    let sample = match task.await {
        Ok(r) => r,
        Err(e) => Err(format!("task: {e}").into()),
    };
    let label = if w.is_anchor() {
        "C client (anchor)"
    } else if w.diagnostic().is_some() {
        "zk-client (diagnostic)"
    } else {
        which.name()
    };
    let sample = match sample {
        Ok(sample) => sample,
        Err(e) => return report.fail(format!("{} ({label}) round {round}: {e}", w.name())),
    };
    eprintln!(
        "round {round} {:<7} {label:<16} {:>9.0} ops/s  {:>7.1} us CPU/op ({:>3.0}% sys)  {:>5.2} vol.cs/op  server: {:.2} req/op {:.2} fsync/op",
        w.name(),
        sample.ops_per_sec(),
        sample.cpu_ms_per_1k(),
        sample.sys_share() * 100.0,
        sample.vcsw_per_op(),
        sample.requests_per_op(),
        sample.fsyncs_per_op(),
    );
    if w.diagnostic().is_some() {
        report.diag.entry(w).or_default().push(sample);
    } else {
        report
            .runs
            .entry(w)
            .or_default()
            .push((round, which, sample));
    }
}

async fn herd_round(report: &mut Report, args: &Args, ctx: &Ctx, round: usize) {
    for which in order(args, round) {
        pause().await;
        match w5::run(ctx, which, round).await {
            Ok(herd) => {
                eprintln!(
                    "round {round} W5      {:<16} notifications per release {:?}, hand-off {:?}",
                    which.name(),
                    herd.notifications,
                    herd.handoff
                );
                report.herd.push((which, herd));
            }
            Err(e) => report.fail(format!("W5 ({}) round {round}: {e}", which.name())),
        }
    }
}

async fn mem_round(report: &mut Report, args: &Args, ctx: &Ctx, round: usize) {
    for which in order(args, round) {
        match mem_in_child(args, ctx, which).await {
            Ok(kib) => {
                eprintln!(
                    "round {round} mem     {:<16} {kib:.1} KiB per idle session",
                    which.name()
                );
                report.mem.push((which, kib));
            }
            Err(e) => report.fail(format!("mem ({}) round {round}: {e}", which.name())),
        }
    }
}

/// W1 and W2 of both clients over plain TCP and over TLS on one TLS-enabled server,
/// alternating which goes first.
async fn tls_rounds(report: &mut Report, args: &Args, ctx: &Ctx) {
    eprintln!("starting a ZooKeeper with a secure client port (keystores made now) ...");
    let bed = match tls::TlsBed::start(ctx).await {
        Ok(bed) => bed,
        Err(e) => return report.fail(format!("tls: {e}")),
    };
    for round in 0..args.rounds {
        let order = if round % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        for which in [Which::Ours, Which::Theirs] {
            for over_tls in order {
                pause().await;
                let c = if over_tls { &bed.tls } else { &bed.plain };
                match tls::run(c, which).await {
                    Ok((w1, w2)) => {
                        eprintln!(
                            "round {round} tls     {:<16} {:<5} W1 {:>7.1} us CPU/op, W2 {:>5.1} us CPU/op",
                            which.name(),
                            if over_tls { "TLS" } else { "TCP" },
                            w1.cpu_ms_per_1k(),
                            w2.cpu_ms_per_1k()
                        );
                        report.tls.push((which, over_tls, w1, w2));
                    }
                    Err(e) => report.fail(format!(
                        "tls {} (over TLS: {over_tls}) round {round}: {e}",
                        which.name()
                    )),
                }
            }
        }
    }
}

fn codec_rounds(report: &mut Report, args: &Args, ctx: &Ctx) {
    let data = codec::get_data_response();
    let children = codec::get_children2_response();
    let mut d = Vec::new();
    let mut c = Vec::new();
    for _ in 0..args.rounds {
        d.push(codec::measure(&data, ctx.sizes.codec_budget));
        c.push(codec::measure(&children, ctx.sizes.codec_budget));
    }
    report.codec.push(("GetDataResponse (100-byte data)", d));
    report
        .codec
        .push(("GetChildren2Response (1,000 children)", c));
}

/// The clients to run, alternating which goes first.
fn order(args: &Args, n: usize) -> Vec<Which> {
    let mut v = args.clients.clone();
    if !n.is_multiple_of(2) {
        v.reverse();
    }
    v
}

/// Lets the server settle (session closes, background deletes) between runs.
async fn pause() {
    tokio::time::sleep(Duration::from_millis(300)).await;
}
