//! The subtree the cache measurements load: one shape for the `cache` workload and
//! `examples/cache_memory.rs` (which includes this file with `#[path]`).

use std::collections::VecDeque;

use zk_client::{Client, CreateOptions, Op};

/// Children per parent node in the loaded subtree.
pub(crate) const FAN_OUT: usize = 100;
/// Bytes of data per node.
pub(crate) const DATA_LEN: usize = 32;
/// Creates per `multi`.
const BATCH: usize = 1000;
/// `multi`s in flight.
const IN_FLIGHT: usize = 4;

/// Makes `path` with `n - 1` nodes below it (`p<i>/c<j>`, [`FAN_OUT`] children per parent),
/// in `multi` batches of 1,000 creates, a few batches in flight; whatever was at `path`
/// before is deleted first.
///
/// # Errors
///
/// A `multi` that fails (the subtree is then partly made).
pub(crate) async fn populate(
    client: &Client,
    path: &str,
    n: usize,
) -> Result<(), zk_client::Error> {
    let _ = client.delete_all(path).await;
    let data = [0x5a; DATA_LEN];
    let opts = CreateOptions::persistent();
    let mut ops = vec![Op::create(path, &data, &opts)];
    let parents = n.saturating_sub(1).div_ceil(FAN_OUT + 1);
    let mut made = 1;
    'outer: for p in 0..parents {
        let parent = format!("{path}/p{p}");
        ops.push(Op::create(&parent, &data, &opts));
        made += 1;
        for c in 0..FAN_OUT {
            if made == n {
                break 'outer;
            }
            ops.push(Op::create(&format!("{parent}/c{c}"), &data, &opts));
            made += 1;
        }
    }
    let mut pending = VecDeque::new();
    for chunk in ops.chunks(BATCH) {
        pending.push_back(client.multi(chunk));
        if pending.len() >= IN_FLIGHT {
            if let Some(f) = pending.pop_front() {
                f.await?;
            }
        }
    }
    for f in pending {
        f.await?;
    }
    Ok(())
}
