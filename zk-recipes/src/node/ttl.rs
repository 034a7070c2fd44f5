//! [`PersistentTtlNode`]: Curator's `PersistentTtlNode` layout.

use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::debug;
use zk_client::{CreateMode, CreateOptions, SessionManager};

use super::{NodeOptions, PersistentNode};
use crate::error::{Error, Result};
use crate::path::join as child_path;
use crate::queue::local_address;

/// Default name of the TTL child (Curator's `DEFAULT_CHILD_NODE_NAME`).
pub const DEFAULT_TOUCH_NAME: &str = "touch";

/// A node that lives while its owner does, without a session: Curator's
/// `PersistentTtlNode` layout. The node at `path` is a CONTAINER holding the data (kept
/// present by a [`PersistentNode`]); under it a `touch` child in mode
/// `PERSISTENT_WITH_TTL` is written every `ttl / 2` (default data, Curator's local address),
/// which moves its mtime. Once the owner stops, the server reaps the touch node after the
/// TTL and then the empty container (both at its container check interval).
///
/// Unlike Curator 5.4, the first touch happens at once rather than after a period, so the
/// container is always reapable even when the owner stops early (GH-1258), and the touch
/// task stops with the handle (GH-1263). The server needs
/// `zookeeper.extendedTypesEnabled=true`.
///
/// ```no_run
/// # async fn f(manager: zk_client::SessionManager) -> zk_recipes::Result<()> {
/// use std::time::Duration;
/// use zk_recipes::node::PersistentTtlNode;
/// let node = PersistentTtlNode::new_managed(&manager, "/leases/job-7", b"worker-3", Duration::from_secs(30))?;
/// node.close().await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct PersistentTtlNode {
    node: PersistentNode,
    touch: CancellationToken,
}

impl Drop for PersistentTtlNode {
    fn drop(&mut self) {
        self.touch.cancel();
    }
}

impl PersistentTtlNode {
    /// Starts the container at `path` with `data` and its touch child with `ttl`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] for a bad path; [`Error::InvalidArgument`] for a TTL under 2 ms.
    pub fn new_managed(
        manager: &SessionManager,
        path: &str,
        data: &[u8],
        ttl: Duration,
    ) -> Result<PersistentTtlNode> {
        if ttl < Duration::from_millis(2) {
            return Err(Error::InvalidArgument("the TTL must be at least 2 ms"));
        }
        let node = PersistentNode::new_managed(
            manager,
            path,
            data,
            NodeOptions::new(CreateMode::Container),
        )?;
        node.keep_on_close();
        let stop = CancellationToken::new();
        tokio::spawn(touch(
            manager.clone(),
            child_path(node.base_path(), DEFAULT_TOUCH_NAME),
            ttl,
            stop.clone(),
        ));
        Ok(PersistentTtlNode { node, touch: stop })
    }

    /// The container node (its data, events, [`set_data`](PersistentNode::set_data)).
    pub fn node(&self) -> &PersistentNode {
        &self.node
    }

    /// Stops touching. The nodes stay until the server reaps them (as Curator).
    ///
    /// # Errors
    ///
    /// As [`PersistentNode::close`].
    ///
    /// # Cancel safety
    ///
    /// As [`PersistentNode::close`].
    pub async fn close(&self) -> Result<()> {
        self.touch.cancel();
        self.node.close().await
    }
}

/// Writes the touch node now and every `ttl / 2` (creating it with the TTL when missing),
/// on the manager's current client. Errors wait for the next period (as Curator).
async fn touch(manager: SessionManager, path: String, ttl: Duration, stop: CancellationToken) {
    let data = local_address().await;
    let options = CreateOptions::new(CreateMode::PersistentWithTtl)
        .with_ttl(ttl)
        .with_container_parents(true);
    let mut ticks = tokio::time::interval(ttl / 2);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = ticks.tick() => {}
        }
        let client = manager.client();
        let result = match client.set_data(&path, &data, None).await {
            Err(zk_client::Error::NoNode) => {
                client.create_all(&path, &data, &options).await.map(drop)
            }
            other => other.map(drop),
        };
        if let Err(e) = result {
            debug!(%path, error = %e, "touch failed; next period");
        }
        if manager.ended().is_some() {
            return;
        }
    }
}
