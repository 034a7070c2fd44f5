//! The client workloads W1..W5, each written once per client with the same shape.
//!
//! Every function sets up outside the measured part (sessions, nodes), measures only the
//! operations with a [`Meter`], and tears down after. Every wait is bounded by [`Limits`].

use std::future::Future;
use std::time::{Duration, Instant};

use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;

use crate::sys::{notifications_fired, Meter, Sample};
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
async fn connect_ours_with(ctx: &Ctx, batch_reads: bool) -> Res<zk_client::Client> {
    let c = bounded(ctx.limits.step, "connect (ours)", async {
        Ok(zk_client::Client::builder(&ctx.connect)
            .batch_reads(batch_reads)
            .connect()
            .await?)
    })
    .await?;
    Ok(c)
}

pub(crate) async fn connect_theirs(ctx: &Ctx) -> Res<zookeeper_client::Client> {
    bounded(ctx.limits.step, "connect (theirs)", async {
        Ok(zookeeper_client::Client::connect(&ctx.connect).await?)
    })
    .await
}

/// Connects `n` sessions of one kind concurrently.
async fn sessions<C, F, Fut>(n: usize, connect: F) -> Res<Vec<C>>
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

async fn close_ours(clients: Vec<zk_client::Client>) {
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
async fn lock_theirs<'a>(
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
async fn sequential<F, Fut, T, E>(
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
async fn pipeline<F, Fut, T, E>(calls: usize, window: usize, mut call: F) -> Res<()>
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

/// W1: sequential getData of the 100-byte node.
pub(crate) async fn w1(ctx: &Ctx, which: Which) -> Res<Sample> {
    let n = ctx.sizes.w1_calls;
    let path = ctx.data_node();
    match which {
        Which::Ours => {
            let c = connect_ours(ctx).await?;
            c.get_data(&path).await?;
            let s = sequential(ctx, "W1", n, 1, || c.get_data(&path)).await?;
            close_ours(vec![c]).await;
            Ok(s)
        }
        Which::Theirs => {
            let c = connect_theirs(ctx).await?;
            c.get_data(&path).await?;
            sequential(ctx, "W1", n, 1, || c.get_data(&path)).await
        }
    }
}

/// W2 (`sessions == 1`) and W2x: pipelined getData, `window` outstanding in all, split evenly
/// over the sessions, each session driven by its own task.
pub(crate) async fn w2(ctx: &Ctx, which: Which, sessions_n: usize) -> Res<Sample> {
    w2_with(ctx, which, sessions_n, true).await
}

/// Diagnostic for W2: zk-client on one session with `batch_reads(false)` (every reply read
/// as it arrives).
pub(crate) async fn w2_eager(ctx: &Ctx) -> Res<Sample> {
    w2_with(ctx, Which::Ours, 1, false).await
}

async fn w2_with(ctx: &Ctx, which: Which, sessions_n: usize, batch_reads: bool) -> Res<Sample> {
    let total = ctx.sizes.w2_calls;
    let per = total / sessions_n;
    let window = (ctx.sizes.w2_window / sessions_n).max(1);
    let path = ctx.data_node();
    let mut tasks = JoinSet::new();
    let ours_clients;
    let m;
    match which {
        Which::Ours => {
            let clients = sessions(sessions_n, || connect_ours_with(ctx, batch_reads)).await?;
            for c in &clients {
                c.get_data(&path).await?;
            }
            ours_clients = clients.clone();
            m = Meter::start(ctx.addr).await;
            for c in clients {
                let path = path.clone();
                tasks.spawn(async move { pipeline(per, window, || c.get_data(&path)).await });
            }
        }
        Which::Theirs => {
            let clients = sessions(sessions_n, || connect_theirs(ctx)).await?;
            for c in &clients {
                c.get_data(&path).await?;
            }
            ours_clients = Vec::new();
            m = Meter::start(ctx.addr).await;
            for c in clients {
                let path = path.clone();
                tasks.spawn(async move { pipeline(per, window, || c.get_data(&path)).await });
            }
        }
    }
    join_all(ctx, "W2", tasks).await?;
    let s = m.stop((per * sessions_n) as u64).await;
    close_ours(ours_clients).await;
    Ok(s)
}

async fn join_all(ctx: &Ctx, what: &str, mut tasks: JoinSet<Res<()>>) -> Res<()> {
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

/// W3: sequential create + delete of one node (ops = requests, two per pair).
pub(crate) async fn w3(ctx: &Ctx, which: Which, round: usize) -> Res<Sample> {
    let pairs = ctx.sizes.w3_pairs;
    let parent = format!("{}/w3-{}-{round}", ctx.root, which.tag());
    let node = format!("{parent}/n");
    let data = [7u8; 100];
    let c = connect_ours(ctx).await?;
    ensure_node(&c, &parent, b"").await?;
    let s = match which {
        Which::Ours => {
            let opts = zk_client::CreateOptions::persistent();
            sequential(ctx, "W3", pairs, 2, || async {
                c.create(&node, &data, &opts).await?;
                c.delete(&node, None).await
            })
            .await?
        }
        Which::Theirs => {
            let t = connect_theirs(ctx).await?;
            let opts = zookeeper_client::CreateMode::Persistent
                .with_acls(zookeeper_client::Acls::anyone_all());
            sequential(ctx, "W3", pairs, 2, || async {
                t.create(&node, &data, &opts).await?;
                t.delete(&node, None).await
            })
            .await?
        }
    };
    c.delete(&parent, None).await?;
    close_ours(vec![c]).await;
    Ok(s)
}

/// W4: `w4_sessions` sessions each acquire and release the same fair lock `w4_rounds` times
/// (ops = acquisitions).
pub(crate) async fn w4(ctx: &Ctx, which: Which, round: usize) -> Res<Sample> {
    let n = ctx.sizes.w4_sessions;
    let per = ctx.sizes.w4_rounds;
    let base = format!("{}/w4-{}-{round}", ctx.root, which.tag());
    let setup = connect_ours(ctx).await?;
    ensure_node(&setup, &base, b"").await?;
    let step = ctx.limits.step;
    let mut tasks = JoinSet::new();
    let mut ours_clients = Vec::new();
    let m;
    match which {
        Which::Ours => {
            let clients = sessions(n, || connect_ours(ctx)).await?;
            ours_clients = clients.clone();
            m = Meter::start(ctx.addr).await;
            for c in clients {
                let lock = zk_recipes::FairLock::new(c, &base)?;
                tasks.spawn(async move {
                    for _ in 0..per {
                        let guard = lock.acquire_timeout(step).await?;
                        // Waits for the delete's reply (and for the removal of its own watch).
                        guard.release().await?;
                    }
                    Ok(())
                });
            }
        }
        Which::Theirs => {
            let clients = sessions(n, || connect_theirs(ctx)).await?;
            m = Meter::start(ctx.addr).await;
            for c in clients {
                let base = base.clone();
                tasks.spawn(async move {
                    for _ in 0..per {
                        let lock = lock_theirs(&c, &base, step, "W4 lock (theirs)").await?;
                        // Dropping the LockClient deletes the node in a background task: the
                        // release does not wait for the delete's reply.
                        drop(lock);
                    }
                    Ok(())
                });
            }
        }
    }
    join_all(ctx, "W4", tasks).await?;
    let s = m.stop((n * per) as u64).await;
    close_ours(ours_clients).await;
    // Their background deletes may still be running: wait for the queue to drain.
    wait_children(&setup, &base, 0, step).await?;
    let _ = setup.delete(&base, None).await;
    close_ours(vec![setup]).await;
    Ok(s)
}

/// Polls until `path` has `want` children.
async fn wait_children(
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

/// W5 results of one run.
#[derive(Debug, Clone, Default)]
pub(crate) struct Herd {
    /// Server-side watch notifications fired by each measured release.
    pub(crate) notifications: Vec<u64>,
    /// Release call to the next holder's acquisition returning, per measured release.
    pub(crate) handoff: Vec<Duration>,
}

/// One participant of the herd: acquires, reports, holds until told, releases, reports.
struct Participant {
    go: oneshot::Sender<()>,
}

/// W5: a holder and `w5_waiters` waiters (one session each) queued on one fair lock; the
/// holder releases, and the server counts the watch notifications that release fired.
/// Repeated for `w5_releases` hand-offs; then the queue drains.
pub(crate) async fn w5(ctx: &Ctx, which: Which, round: usize) -> Res<Herd> {
    let waiters = ctx.sizes.w5_waiters;
    let base = format!("{}/w5-{}-{round}", ctx.root, which.tag());
    let setup = connect_ours(ctx).await?;
    ensure_node(&setup, &base, b"").await?;
    let step = ctx.limits.step;
    let (acquired_tx, mut acquired_rx) = mpsc::unbounded_channel::<(usize, Instant)>();
    let (released_tx, mut released_rx) = mpsc::unbounded_channel::<usize>();
    let mut tasks: JoinSet<Res<()>> = JoinSet::new();
    let mut parts: Vec<Option<Participant>> = Vec::new();
    let mut ours_clients = Vec::new();

    // Participant 0 (the holder) first, then the waiters, each with its own session.
    let spawn_one = |tasks: &mut JoinSet<Res<()>>, idx: usize, client: Client2| {
        let (go_tx, go_rx) = oneshot::channel();
        let acquired_tx = acquired_tx.clone();
        let released_tx = released_tx.clone();
        let base = base.clone();
        let hold_limit = ctx.limits.workload;
        tasks.spawn(async move {
            match client {
                Client2::Ours(c) => {
                    let lock = zk_recipes::FairLock::new(c, &base)?;
                    let guard = lock.acquire_timeout(hold_limit).await?;
                    let _ = acquired_tx.send((idx, Instant::now()));
                    let _ = tokio::time::timeout(hold_limit, go_rx).await;
                    guard.release().await?;
                }
                Client2::Theirs(c) => {
                    let lock = lock_theirs(&c, &base, hold_limit, "W5 lock (theirs)").await?;
                    let _ = acquired_tx.send((idx, Instant::now()));
                    let _ = tokio::time::timeout(hold_limit, go_rx).await;
                    drop(lock);
                    // Keep the session until the background delete is through.
                    let _ = tokio::time::timeout(hold_limit, std::future::pending::<()>()).await;
                    return Ok(());
                }
            }
            let _ = released_tx.send(idx);
            Ok(())
        });
        Participant { go: go_tx }
    };

    let clients: Vec<Client2> = match which {
        Which::Ours => {
            let cs = sessions(waiters + 1, || connect_ours(ctx)).await?;
            ours_clients = cs.clone();
            cs.into_iter().map(Client2::Ours).collect()
        }
        Which::Theirs => sessions(waiters + 1, || connect_theirs(ctx))
            .await?
            .into_iter()
            .map(Client2::Theirs)
            .collect(),
    };
    let mut clients = clients.into_iter();
    let result = async {
        let holder = clients.next().ok_or("no session")?;
        parts.push(Some(spawn_one(&mut tasks, 0, holder)));
        let (first, _) = recv(&mut acquired_rx, step, "W5 holder").await?;
        if first != 0 {
            return Err("W5: the holder did not acquire first".into());
        }
        for (i, c) in clients.enumerate() {
            parts.push(Some(spawn_one(&mut tasks, i + 1, c)));
        }
        wait_children(&setup, &base, waiters + 1, step).await?;
        // Let every waiter set its watch on its predecessor (the watch follows getChildren).
        settle_watches(ctx, waiters, step).await?;

        let mut herd = Herd::default();
        let mut holder = 0usize;
        let mut acquired = 1usize;
        let measured = ctx.sizes.w5_releases.min(waiters);
        for _ in 0..measured {
            let before = notifications_fired(ctx.addr).await?;
            let t0 = Instant::now();
            release(&mut parts, holder)?;
            let (next, at) = recv(&mut acquired_rx, step, "W5 next holder").await?;
            acquired += 1;
            herd.handoff.push(at.saturating_duration_since(t0));
            if which == Which::Ours {
                recv(&mut released_rx, step, "W5 release").await?;
            }
            // Anything a herd would fire has fired by now; a short pause to be safe.
            tokio::time::sleep(Duration::from_millis(100)).await;
            let after = notifications_fired(ctx.addr).await?;
            herd.notifications.push(after.saturating_sub(before));
            holder = next;
        }
        // Drain the queue: hand the lock down the line.
        while acquired < waiters + 1 {
            release(&mut parts, holder)?;
            let (next, _) = recv(&mut acquired_rx, step, "W5 drain").await?;
            acquired += 1;
            holder = next;
        }
        release(&mut parts, holder)?;
        Ok::<_, crate::BoxError>(herd)
    }
    .await;
    // Give the last releases a moment, then end every participant.
    tokio::time::sleep(Duration::from_millis(100)).await;
    tasks.abort_all();
    while tasks.join_next().await.is_some() {}
    close_ours(ours_clients).await;
    drop(parts);
    let herd = result?;
    let _ = wait_children(&setup, &base, 0, step).await;
    let _ = setup.delete(&base, None).await;
    close_ours(vec![setup]).await;
    Ok(herd)
}

/// Waits until the server holds at least one watch per waiter (`zk_watch_count` in `mntr`),
/// then a little longer: each waiter sets its watch on its predecessor after listing the queue.
async fn settle_watches(ctx: &Ctx, waiters: usize, limit: Duration) -> Res<()> {
    let deadline = Instant::now() + limit;
    loop {
        let out =
            integration_tests::probe::four_letter_word(ctx.addr, "mntr", Duration::from_secs(5))
                .await?;
        let watches = out
            .lines()
            .find_map(|l| l.strip_prefix("zk_watch_count"))
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(0);
        if watches >= waiters {
            tokio::time::sleep(Duration::from_millis(200)).await;
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("W5: {watches} watches set, wanted {waiters}").into());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

enum Client2 {
    Ours(zk_client::Client),
    Theirs(zookeeper_client::Client),
}

fn release(parts: &mut [Option<Participant>], idx: usize) -> Res<()> {
    let p = parts
        .get_mut(idx)
        .and_then(Option::take)
        .ok_or_else(|| format!("W5: participant {idx} released twice"))?;
    let _ = p.go.send(());
    Ok(())
}

async fn recv<T>(rx: &mut mpsc::UnboundedReceiver<T>, limit: Duration, what: &str) -> Res<T> {
    match tokio::time::timeout(limit, rx.recv()).await {
        Ok(Some(v)) => Ok(v),
        Ok(None) => Err(format!("{what}: every participant ended").into()),
        Err(_) => Err(format!("{what}: nothing within {limit:?}").into()),
    }
}

/// Diagnostic for W4: the same hand-off with zk-client and a bare Curator-layout lock written
/// here (create ephemeral-sequential, list, watch the predecessor with getData, re-list on its
/// event; release = delete, waiting for the reply). No loss monitor, no re-entrancy, no
/// protected-create recovery: it separates the client's share of W4 from the recipe's.
pub(crate) async fn w4_bare(ctx: &Ctx, round: usize) -> Res<Sample> {
    let n = ctx.sizes.w4_sessions;
    let per = ctx.sizes.w4_rounds;
    let base = format!("{}/w4-bare-{round}", ctx.root);
    let setup = connect_ours(ctx).await?;
    ensure_node(&setup, &base, b"").await?;
    let step = ctx.limits.step;
    let clients = sessions(n, || connect_ours(ctx)).await?;
    let mut tasks = JoinSet::new();
    let m = Meter::start(ctx.addr).await;
    for (i, c) in clients.iter().cloned().enumerate() {
        let base = base.clone();
        tasks.spawn(async move {
            let opts = zk_client::CreateOptions::ephemeral_sequential();
            for k in 0..per {
                let prefix = format!("{base}/_c_{:08x}-{i:04}-{k:06}-lock-", std::process::id());
                bounded(step, "W4 bare lock", async {
                    let (ours, _) = c.create(&prefix, b"", &opts).await?;
                    let ours = ours.rsplit('/').next().unwrap_or_default().to_owned();
                    loop {
                        let mut children = c.get_children(&base).await?;
                        children.sort_by(|a, b| seq_of(a).cmp(seq_of(b)));
                        let at = children
                            .iter()
                            .position(|c| *c == ours)
                            .ok_or("W4 bare: our node is gone")?;
                        if at == 0 {
                            break;
                        }
                        let blocker = format!("{base}/{}", children[at - 1]);
                        match c.get_data_watch(&blocker).await {
                            Ok((_, _, watcher)) => {
                                watcher.await?;
                            }
                            Err(zk_client::Error::NoNode) => {}
                            Err(e) => return Err(e.into()),
                        }
                    }
                    c.delete(&format!("{base}/{ours}"), None).await?;
                    Ok(())
                })
                .await?;
            }
            Ok(())
        });
    }
    join_all(ctx, "W4 bare", tasks).await?;
    let s = m.stop((n * per) as u64).await;
    close_ours(clients).await;
    let _ = setup.delete(&base, None).await;
    close_ours(vec![setup]).await;
    Ok(s)
}

/// The trailing sequence number of a queue node's name.
fn seq_of(name: &str) -> &str {
    &name[name.len().saturating_sub(10)..]
}
