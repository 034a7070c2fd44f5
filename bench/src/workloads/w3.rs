//! W3: sequential create + delete of one node.

use super::common::{close_ours, connect_ours, connect_theirs, ensure_node, sequential, Which};
use crate::sys::Sample;
use crate::{Ctx, Res};

/// W3: sequential create + delete of one node (ops = requests, two per pair).
pub(crate) async fn run(ctx: &Ctx, which: Which, round: usize) -> Res<Sample> {
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
