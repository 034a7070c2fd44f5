//! W4bare's minimal Curator-layout lock on zk-client: create ephemeral-sequential, list,
//! getData-watch the predecessor, list again on its event; release = delete, waiting for the
//! reply. No loss monitor, no re-entrancy, no protected-create recovery: it separates the
//! client's share of W4 from the recipe's. Shared by the benchmark (W4bare) and
//! `examples/w4_profile.rs` (included there by path).

use zk_client::{Client, CreateOptions};

/// One acquisition and release by participant `i` in its turn `k`. Unbounded in time: the
/// caller bounds it (each turn waits for the predecessor's event).
pub(crate) async fn bare_turn(
    c: &Client,
    base: &str,
    i: usize,
    k: usize,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let opts = CreateOptions::ephemeral_sequential();
    let prefix = format!("{base}/_c_{:08x}-{i:04}-{k:06}-lock-", std::process::id());
    let (ours, _) = c.create(&prefix, b"", &opts).await?;
    let ours = ours.rsplit('/').next().unwrap_or_default().to_owned();
    loop {
        let mut children = c.get_children(base).await?;
        children.sort_by(|a, b| seq_of(a).cmp(seq_of(b)));
        let at = children
            .iter()
            .position(|c| *c == ours)
            .ok_or("bare lock: our node is gone")?;
        let Some(before) = at.checked_sub(1) else {
            break;
        };
        let blocker = format!("{base}/{}", children[before]);
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
}

/// The trailing sequence number of a queue node's name.
fn seq_of(name: &str) -> &str {
    name.get(name.len().saturating_sub(10)..).unwrap_or(name)
}
