//! What every workload shares: which client runs, time bounds, connecting, and the
//! sequential and pipelined call loops.

use std::future::Future;
use std::time::{Duration, Instant};

use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio::task::JoinSet;

use crate::sys::{Meter, Sample};
use crate::{Ctx, Res};

/// Which client runs a workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Which {
    /// zk-client / zk-recipes (this workspace).
    Ours,
    /// The `zookeeper-client` crate.
    Theirs,
}

impl Which {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Which::Ours => "zk-client",
            Which::Theirs => "zookeeper-client",
        }
    }

    pub(crate) fn tag(self) -> &'static str {
        match self {
            Which::Ours => "ours",
            Which::Theirs => "theirs",
        }
    }
}

/// Time bounds of one run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Whole measured part of one workload run.
    pub(crate) workload: Duration,
    /// One lock acquisition, one connect.
    pub(crate) step: Duration,
}

pub(crate) async fn bounded<T>(
    limit: Duration,
    what: &str,
    fut: impl Future<Output = Res<T>>,
) -> Res<T> {
    match tokio::time::timeout(limit, fut).await {
        Ok(r) => r,
        Err(_) => Err(format!("{what}: no result within {limit:?}").into()),
    }
}

pub(crate) async fn connect_ours(ctx: &Ctx) -> Res<zk_client::Client> {
    connect_ours_with(ctx, true).await
}

/// zk-client with [`zk_client::ClientBuilder::batch_reads`] set as given.
pub(super) async fn connect_ours_with(ctx: &Ctx, batch_reads: bool) -> Res<zk_client::Client> {
    let c = bounded(ctx.limits.step, "connect (ours)", async {
        let mut builder = zk_client::Client::builder(&ctx.connect).batch_reads(batch_reads);
        if let Some(tls) = &ctx.tls {
            builder = builder.tls(tls.clone());
        }
        Ok(builder.connect().await?)
    })
    .await?;
    Ok(c)
}

pub(crate) async fn connect_theirs(ctx: &Ctx) -> Res<zookeeper_client::Client> {
    bounded(ctx.limits.step, "connect (theirs)", async {
        Ok(match &ctx.theirs_tls {
            Some(tls) => {
                zookeeper_client::Client::connector()
                    .with_tls(tls.clone())
                    .secure_connect(&ctx.connect)
                    .await?
            }
            None => zookeeper_client::Client::connect(&ctx.connect).await?,
        })
    })
    .await
}

/// Connects `n` sessions of one kind concurrently.
pub(super) async fn sessions<C, F, Fut>(n: usize, connect: F) -> Res<Vec<C>>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Res<C>>,
{
    let mut pending: FuturesUnordered<Fut> = (0..n).map(|_| connect()).collect();
    let mut out = Vec::with_capacity(n);
    while let Some(c) = pending.next().await {
        out.push(c?);
    }
    Ok(out)
}

pub(super) async fn close_ours(clients: Vec<zk_client::Client>) {
    let closes: FuturesUnordered<_> = clients.iter().map(|c| c.close()).collect();
    let _ = tokio::time::timeout(Duration::from_secs(10), closes.collect::<Vec<_>>()).await;
}

/// Creates `path` (persistent) with our client if missing.
pub(crate) async fn ensure_node(client: &zk_client::Client, path: &str, data: &[u8]) -> Res<()> {
    match client
        .create(path, data, &zk_client::CreateOptions::persistent())
        .await
    {
        Ok(_) | Err(zk_client::Error::NodeExists) => Ok(()),
        Err(e) => Err(format!("create {path}: {e}").into()),
    }
}

/// Acquires `zookeeper-client`'s own lock on `base` (Curator layout, node name `lock-`)
/// within `limit`.
pub(super) async fn lock_theirs<'a>(
    c: &'a zookeeper_client::Client,
    base: &str,
    limit: Duration,
    what: &str,
) -> Res<zookeeper_client::LockClient<'a>> {
    bounded(limit, what, async {
        Ok(c.lock(
            zookeeper_client::LockPrefix::new_curator(base, "lock-")?,
            b"",
            zookeeper_client::Acls::anyone_all(),
        )
        .await?)
    })
    .await
}

/// Measures `rounds` calls of `call`, one at a time, within the workload bound; each round
/// counts as `ops_per_round` operations.
pub(super) async fn sequential<F, Fut, T, E>(
    ctx: &Ctx,
    what: &str,
    rounds: usize,
    ops_per_round: usize,
    mut call: F,
) -> Res<Sample>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: std::error::Error + Send + Sync + 'static,
{
    let m = Meter::start(ctx.addr).await;
    bounded(ctx.limits.workload, what, async {
        for _ in 0..rounds {
            call().await?;
        }
        Ok(())
    })
    .await?;
    Ok(m.stop((rounds * ops_per_round) as u64).await)
}

/// Runs `calls` calls of `call`, keeping up to `window` of them outstanding. Each call's
/// future is made when it is issued, so the request is queued at that moment.
pub(super) async fn pipeline<F, Fut, T, E>(calls: usize, window: usize, mut call: F) -> Res<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: std::error::Error + Send + Sync + 'static,
{
    let mut inflight = FuturesUnordered::new();
    let mut issued = 0;
    while issued < calls || !inflight.is_empty() {
        while issued < calls && inflight.len() < window {
            inflight.push(call());
            issued += 1;
        }
        if let Some(result) = inflight.next().await {
            result?;
        }
    }
    Ok(())
}

pub(super) async fn join_all(ctx: &Ctx, what: &str, mut tasks: JoinSet<Res<()>>) -> Res<()> {
    let deadline = tokio::time::Instant::now() + ctx.limits.workload;
    while !tasks.is_empty() {
        match tokio::time::timeout_at(deadline, tasks.join_next()).await {
            Ok(Some(Ok(r))) => r?,
            Ok(Some(Err(e))) => return Err(format!("{what}: task failed: {e}").into()),
            Ok(None) => break,
            Err(_) => {
                tasks.abort_all();
                return Err(format!("{what}: not done within {:?}", ctx.limits.workload).into());
            }
        }
    }
    Ok(())
}

/// Polls until `path` has `want` children.
pub(super) async fn wait_children(
    client: &zk_client::Client,
    path: &str,
    want: usize,
    limit: Duration,
) -> Res<()> {
    let deadline = Instant::now() + limit;
    loop {
        let children = client.get_children(path).await?;
        if children.len() == want {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "{path}: {} children, waited {limit:?} for {want}",
                children.len()
            )
            .into());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
