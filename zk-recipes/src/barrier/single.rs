//! [`DistributedBarrier`]: Curator's `DistributedBarrier`.

use std::time::Duration;

use zk_client::{Client, CreateMode};

use crate::error::Result;
use crate::path::check_base;
use crate::queue::{create_if_absent, delete_guaranteed, local_address};
use crate::retry::{deadline_after, gave_up, retry_after, turns, until};

/// A barrier in Curator's `DistributedBarrier` layout: closed while a PERSISTENT node exists
/// at its path (holding Curator's default data, the local address), open once it is gone.
///
/// ```no_run
/// # async fn f(client: zk_client::Client) -> zk_recipes::Result<()> {
/// use std::time::Duration;
/// use zk_recipes::barrier::DistributedBarrier;
/// let barrier = DistributedBarrier::new(client, "/barriers/deploy")?;
/// barrier.set_barrier().await?;
/// // ... elsewhere: workers wait until it is removed
/// barrier.wait_on_barrier_timeout(Duration::from_secs(30)).await?; // Err(Timeout) if still closed
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct DistributedBarrier {
    client: Client,
    path: String,
}

impl DistributedBarrier {
    /// A barrier at `path`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) for a relative path or the root.
    pub fn new(client: Client, path: &str) -> Result<DistributedBarrier> {
        Ok(DistributedBarrier {
            client,
            path: check_base(path)?,
        })
    }

    /// The barrier's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Closes the barrier (creates its node, parents as containers; already closed is fine).
    ///
    /// # Errors
    ///
    /// `NoAuth` and the session errors (connection losses are waited out).
    ///
    /// # Cancel safety
    ///
    /// The create is sent when the future is first polled (once the local address, Curator's
    /// default data, is known); dropping the future loses only the outcome (the node may have
    /// been created).
    pub async fn set_barrier(&self) -> Result<()> {
        create_if_absent(
            &self.client,
            &self.path,
            &local_address().await,
            CreateMode::Persistent,
        )
        .await
        .map(drop)
    }

    /// Opens the barrier (deletes its node; already open is fine).
    ///
    /// # Errors
    ///
    /// `NoAuth` and the session errors (connection losses are waited out).
    ///
    /// # Cancel safety
    ///
    /// The delete is sent when the future is first polled; dropping the future loses only the
    /// outcome (the node may have been deleted).
    pub async fn remove_barrier(&self) -> Result<()> {
        delete_guaranteed(&self.client, &self.path, None)
            .await
            .map(drop)
    }

    /// Waits until the barrier is open. Connection losses are waited out.
    ///
    /// # Errors
    ///
    /// `NoAuth` and the session's end; [`Error::GaveUp`](crate::Error::GaveUp) after the
    /// crate's bound on turns.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe (the watch it leaves is dropped with it).
    pub async fn wait_on_barrier(&self) -> Result<()> {
        self.wait(None).await
    }

    /// [`wait_on_barrier`](Self::wait_on_barrier) within `timeout`.
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`](crate::Error::Timeout) when the barrier is still closed after
    /// `timeout`; otherwise as [`wait_on_barrier`](Self::wait_on_barrier).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub async fn wait_on_barrier_timeout(&self, timeout: Duration) -> Result<()> {
        self.wait(Some(timeout)).await
    }

    async fn wait(&self, timeout: Option<Duration>) -> Result<()> {
        until(deadline_after(timeout), async {
            for _ in turns() {
                match self.client.exists_watch(&self.path).await {
                    Ok((None, _)) => return Ok(()),
                    // Any event (or the watch ending with the session, which the next
                    // request reports): look again.
                    Ok((Some(_), watcher)) => drop(watcher.await),
                    Err(e) => retry_after(&self.client, e).await?,
                }
            }
            Err(gave_up())
        })
        .await
    }
}
