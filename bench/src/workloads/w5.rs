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
pub(crate) async fn run(ctx: &Ctx, which: Which, round: usize) -> Res<Herd> {
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
        // Idle, as a lock queue is between hand-offs in real use: the first measured
        // hand-off starts from quiet connections (and CPUs).
        tokio::time::sleep(ctx.sizes.w5_idle).await;

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
