//! W4: sessions taking turns on one fair lock; W4bare, its diagnostic with a minimal lock;
//! W4prepared, ours with `HandOff::Prepared`.

use tokio::task::JoinSet;
use zk_recipes::lock::HandOff;

use super::bare_lock::bare_turn;
use super::common::{
    bounded, close_ours, connect_ours, connect_theirs, ensure_node, join_all, lock_theirs,
    sessions, wait_children, Which,
};
use crate::sys::{Meter, Sample};
use crate::{Ctx, Res};

/// W4: `w4_sessions` sessions each acquire and release the same fair lock `w4_rounds` times
/// (ops = acquisitions).
pub(crate) async fn run(ctx: &Ctx, which: Which, round: usize) -> Res<Sample> {
    run_with(ctx, which, round, HandOff::Lean, which.tag()).await
}

/// Diagnostic for W4: ours with [`HandOff::Prepared`] (a waiter behind two nodes watches
/// both, so a release hands the lock over with no listing; two notifications per release).
pub(crate) async fn prepared(ctx: &Ctx, round: usize) -> Res<Sample> {
    run_with(ctx, Which::Ours, round, HandOff::Prepared, "prepared").await
}

async fn run_with(
    ctx: &Ctx,
    which: Which,
    round: usize,
    hand_off: HandOff,
    tag: &str,
) -> Res<Sample> {
    let n = ctx.sizes.w4_sessions;
    let per = ctx.sizes.w4_rounds;
    let base = format!("{}/w4-{tag}-{round}", ctx.root);
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
                let lock = zk_recipes::lock::FairLock::new(c, &base)?.with_hand_off(hand_off);
                tasks.spawn(async move {
                    for _ in 0..per {
                        let guard = lock.acquire_timeout(step).await?;
                        // Waits for the delete's reply, on this task (a guard whose state was
                        // never observed set no watch, so there is none to remove).
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

/// Diagnostic for W4: the same hand-off with zk-client and the bare Curator-layout lock of
/// [`bare_lock`](super::bare_lock): it separates the client's share of W4 from the recipe's.
pub(crate) async fn bare(ctx: &Ctx, round: usize) -> Res<Sample> {
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
            for k in 0..per {
                bounded(step, "W4 bare lock", bare_turn(&c, &base, i, k)).await?;
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
