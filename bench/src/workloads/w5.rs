//! W5: the herd check: one release of a fair lock with many waiters queued.

use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;

use super::common::{
    close_ours, connect_ours, connect_theirs, ensure_node, lock_theirs, sessions, wait_children,
    Which,
};
use crate::sys::notifications_fired;
use crate::{Ctx, Res};

/// W5 results of one run.
#[derive(Debug, Clone, Default)]
pub(crate) struct Herd {
    /// Server-side watch notifications fired by each measured release.
    pub(crate) notifications: Vec<u64>,
    /// Release call to the next holder's acquisition returning, per measured release (each
    /// after the queue sat idle for `w5_idle`).
    pub(crate) handoff: Vec<Duration>,
    /// The same, for the hand-offs that drain the queue afterwards, back to back.
    pub(crate) busy: Vec<Duration>,
}

/// The participants of one run: each acquires, reports, holds until told, releases,
/// reports. Participant 0 is the first holder.
struct Queue {
    base: String,
    hold_limit: Duration,
    step: Duration,
    tasks: JoinSet<Res<()>>,
    /// Each participant's "release now" signal, taken when used.
    go: Vec<Option<oneshot::Sender<()>>>,
    acquired_tx: mpsc::UnboundedSender<(usize, Instant)>,
    acquired_rx: mpsc::UnboundedReceiver<(usize, Instant)>,
    released_tx: mpsc::UnboundedSender<usize>,
    released_rx: mpsc::UnboundedReceiver<usize>,
}

impl Queue {
    fn new(ctx: &Ctx, base: String) -> Queue {
        let (acquired_tx, acquired_rx) = mpsc::unbounded_channel();
        let (released_tx, released_rx) = mpsc::unbounded_channel();
        Queue {
            base,
            hold_limit: ctx.limits.workload,
            step: ctx.limits.step,
            tasks: JoinSet::new(),
            go: Vec::new(),
            acquired_tx,
            acquired_rx,
            released_tx,
            released_rx,
        }
    }

    /// Starts the next participant on `client`'s session.
    fn spawn(&mut self, client: Client2) {
        let idx = self.go.len();
        let (go_tx, go_rx) = oneshot::channel();
        self.go.push(Some(go_tx));
        let acquired_tx = self.acquired_tx.clone();
        let released_tx = self.released_tx.clone();
        let base = self.base.clone();
        let hold_limit = self.hold_limit;
        self.tasks.spawn(async move {
            match client {
                Client2::Ours(c) => {
                    let lock = zk_recipes::lock::FairLock::new(c, &base)?;
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
    }

    /// Tells `holder` to release; returns the next holder and when it acquired.
    async fn hand_off(&mut self, holder: usize, what: &str) -> Res<(usize, Instant)> {
        let go = self
            .go
            .get_mut(holder)
            .and_then(Option::take)
            .ok_or_else(|| format!("W5: participant {holder} released twice"))?;
        let _ = go.send(());
        recv(&mut self.acquired_rx, self.step, what).await
    }

    /// Ends every participant (after a moment for the last releases).
    async fn end(mut self) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        self.tasks.abort_all();
        while self.tasks.join_next().await.is_some() {}
    }
}

/// W5: a holder and `w5_waiters` waiters (one session each) queued on one fair lock; the
/// queue sits idle for `w5_idle`, the holder releases, and the server counts the watch
/// notifications that release fired. Repeated for `w5_releases` hand-offs, each after its
/// own idle period (so every measured hand-off starts from quiet connections); then the queue
/// drains, hand-off after hand-off.
pub(crate) async fn run(ctx: &Ctx, which: Which, round: usize) -> Res<Herd> {
    let waiters = ctx.sizes.w5_waiters;
    let base = format!("{}/w5-{}-{round}", ctx.root, which.tag());
    let setup = connect_ours(ctx).await?;
    ensure_node(&setup, &base, b"").await?;
    let mut ours_clients = Vec::new();
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
    let mut queue = Queue::new(ctx, base.clone());
    let result = async {
        line_up(ctx, &mut queue, &setup, clients).await?;
        measure(ctx, which, &mut queue).await
    }
    .await;
    queue.end().await;
    close_ours(ours_clients).await;
    let herd = result?;
    let _ = wait_children(&setup, &base, 0, ctx.limits.step).await;
    let _ = setup.delete(&base, None).await;
    close_ours(vec![setup]).await;
    Ok(herd)
}

/// The holder acquires first, then every waiter queues and sets its watch.
async fn line_up(
    ctx: &Ctx,
    queue: &mut Queue,
    setup: &zk_client::Client,
    clients: Vec<Client2>,
) -> Res<()> {
    let waiters = clients.len().saturating_sub(1);
    let step = ctx.limits.step;
    let mut clients = clients.into_iter();
    queue.spawn(clients.next().ok_or("no session")?);
    let (first, _) = recv(&mut queue.acquired_rx, step, "W5 holder").await?;
    if first != 0 {
        return Err("W5: the holder did not acquire first".into());
    }
    clients.for_each(|c| queue.spawn(c));
    wait_children(setup, &queue.base, waiters + 1, step).await?;
    // Let every waiter set its watch on its predecessor (the watch follows getChildren).
    settle_watches(ctx, waiters, step).await
}

/// The measured hand-offs, then the rest of the queue drains.
async fn measure(ctx: &Ctx, which: Which, queue: &mut Queue) -> Res<Herd> {
    let participants = queue.go.len();
    let measured = ctx.sizes.w5_releases.min(participants.saturating_sub(1));
    let mut herd = Herd::default();
    let mut holder = 0usize;
    for _ in 0..measured {
        // Idle, as a lock queue is between hand-offs in real use: the hand-off starts from
        // quiet connections (and CPUs).
        tokio::time::sleep(ctx.sizes.w5_idle).await;
        let before = notifications_fired(ctx.addr).await?;
        let t0 = Instant::now();
        let (next, at) = queue.hand_off(holder, "W5 next holder").await?;
        herd.handoff.push(at.saturating_duration_since(t0));
        if which == Which::Ours {
            recv(&mut queue.released_rx, ctx.limits.step, "W5 release").await?;
        }
        // Anything a herd would fire has fired by now; a short pause to be safe.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let after = notifications_fired(ctx.addr).await?;
        herd.notifications.push(after.saturating_sub(before));
        holder = next;
    }
    // Drain the queue: hand the lock down the line, then the last holder releases.
    for _ in measured + 1..participants {
        let t0 = Instant::now();
        let (next, at) = queue.hand_off(holder, "W5 drain").await?;
        herd.busy.push(at.saturating_duration_since(t0));
        holder = next;
    }
    if let Some(go) = queue.go.get_mut(holder).and_then(Option::take) {
        let _ = go.send(());
    }
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

async fn recv<T>(rx: &mut mpsc::UnboundedReceiver<T>, limit: Duration, what: &str) -> Res<T> {
    match tokio::time::timeout(limit, rx.recv()).await {
        Ok(Some(v)) => Ok(v),
        Ok(None) => Err(format!("{what}: every participant ended").into()),
        Err(_) => Err(format!("{what}: nothing within {limit:?}").into()),
    }
}
