//! Waiting for the node ahead of ours: one watch on one node, so a release wakes one waiter
//! (no herd).

use tracing::debug;
use zk_client::{Client, EventType};

use crate::error::Result;
use crate::retry::retry_after;

/// How a wait for the node ahead ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wake {
    /// Its watch reported it deleted.
    Deleted,
    /// It was gone already when the watch was to be set.
    Missing,
    /// Anything else (its data changed, a connection loss was waited out): look again.
    LookAgain,
}

/// Watches `path` and waits until it changes. getData, not exists: exists would leave a
/// watch behind on a node that is already gone; getData fails with NoNode and leaves
/// nothing. A connection loss is waited out ([`Wake::LookAgain`]); the session's end and
/// other errors are returned.
pub(crate) async fn wait_for_node(client: &Client, path: &str) -> Result<Wake> {
    match client.get_data_watch(path).await {
        Ok((_, _, watcher)) => {
            debug!(%path, "waiting for the node ahead");
            match watcher.await {
                Ok(e) if e.event_type == EventType::NodeDeleted => Ok(Wake::Deleted),
                Ok(_) => Ok(Wake::LookAgain),
                Err(e) => retry_after(client, e).await.map(|()| Wake::LookAgain),
            }
        }
        Err(zk_client::Error::NoNode) => Ok(Wake::Missing),
        Err(e) => retry_after(client, e).await.map(|()| Wake::LookAgain),
    }
}
