//! W2 and W2x: pipelined getData on one or several sessions; W2eager, its diagnostic.

use tokio::task::JoinSet;

use super::common::{
    close_ours, connect_ours_with, connect_theirs, join_all, pipeline, sessions, Which,
};
use crate::sys::Meter;
use crate::sys::Sample;
use crate::{Ctx, Res};

/// W2 (`sessions == 1`) and W2x: pipelined getData, `window` outstanding in all, split evenly
/// over the sessions, each session driven by its own task.
pub(crate) async fn run(ctx: &Ctx, which: Which, sessions_n: usize) -> Res<Sample> {
    w2_with(ctx, which, sessions_n, true).await
}

/// Diagnostic for W2: zk-client on one session with `batch_reads(false)` (every reply read
/// as it arrives).
pub(crate) async fn eager(ctx: &Ctx) -> Res<Sample> {
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
