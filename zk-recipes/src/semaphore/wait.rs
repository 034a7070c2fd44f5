//! The semaphore's wait for room: Curator's `InterProcessSemaphoreV2` rule, "our lease is in
//! `leases` and `leases` has at most `max` children", waited out with one child watch.

use zk_client::{Client, WatcherType};

use crate::error::{Error, LossReason, Result};
use crate::retry::{gave_up, retry_after, turns};

/// Waits until `leases` holds our lease node `ours` and at most `max` children. Returns the
/// client's connection epoch read before the listing that showed it so.
///
/// Only the holder of the semaphore's `locks` mutex waits here, so one lease release wakes
/// one waiter. The first listing of each turn sets no watch (a lease that fits at once leaves
/// nothing on the server); only a full listing is repeated with a child watch, and a watch
/// that turned out not to be needed is removed, so a holder is never notified later.
pub(crate) async fn wait_for_room(
    client: &Client,
    leases: &str,
    ours: &str,
    max: usize,
) -> Result<u64> {
    let mut watch = false;
    for _ in turns() {
        let epoch = client.connection_epoch();
        let listing = if watch {
            client
                .get_children_watch(leases)
                .await
                .map(|(children, _, watcher)| (children, Some(watcher)))
        } else {
            client.get_children(leases).await.map(|c| (c, None))
        };
        let (children, watcher) = match listing {
            Ok(listing) => listing,
            // The leases' path is gone (deleted, or reaped as an empty container): so is
            // our lease.
            Err(zk_client::Error::NoNode) => (Vec::new(), None),
            Err(e) => {
                retry_after(client, e).await?;
                watch = false;
                continue;
            }
        };
        if !children.iter().any(|c| c == ours) {
            // Deleted by someone else (or the session ended and took it).
            return Err(Error::LockLost(LossReason::NodeDeleted));
        }
        if children.len() <= max {
            if watcher.is_some() {
                // Room appeared between the two listings: take back the watch. NoWatcher
                // (it fired already) and a lost reply are both fine.
                let _ = client.remove_watches(leases, WatcherType::Children).await;
            }
            return Ok(epoch);
        }
        match watcher {
            None => watch = true,
            Some(watcher) => {
                if let Err(e) = watcher.await {
                    retry_after(client, e).await?;
                }
                watch = false;
            }
        }
    }
    Err(gave_up())
}
