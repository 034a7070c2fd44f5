//! W1: sequential getData of the 100-byte node.

use super::common::{close_ours, connect_ours, connect_theirs, sequential, Which};
use crate::sys::Sample;
use crate::{Ctx, Res};

pub(crate) async fn run(ctx: &Ctx, which: Which) -> Res<Sample> {
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
