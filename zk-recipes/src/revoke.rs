//! Revocation, Curator's way: whoever wants a lock asks its holder to let go by writing
//! `__REVOKE__` into the holder's node (`Revoker.attemptRevoke`); a revocable holder watches
//! its node's data and decides what to do. Cooperative: nothing is taken by force.

use zk_client::{Client, EventType};

use crate::error::{Error, LossReason, Result};
use crate::retry::{gave_up, retry_after, retrying, turns};

/// The data that asks a holder to release (Curator's `LockInternals.REVOKE_MESSAGE`).
pub const REVOKE_MESSAGE: &[u8] = b"__REVOKE__";

/// Asks the holder of the lock node `node` (a full path, as [`Participant::path`] or
/// Curator's `getParticipantNodes()` give it) to release: sets its data to `__REVOKE__`.
/// Reaches Rust holders ([`LockGuard::revocation_requested`]) and Java holders whose
/// Curator lock was made revocable (`InterProcessMutex.makeRevocable`).
///
/// Returns `false` when the node is gone (nothing to revoke), as Curator ignores `NoNode`.
///
/// ```no_run
/// # async fn f(client: zk_client::Client) -> Result<(), zk_recipes::Error> {
/// let lock = zk_recipes::lock::FairLock::new(client.clone(), "/locks/jobs")?;
/// if let Some(holder) = lock.participants().await?.first() {
///     zk_recipes::lock::revoke(&client, &holder.path).await?;
/// }
/// # Ok(()) }
/// ```
///
/// # Errors
///
/// [`Error::Client`] for ZooKeeper failures (connection losses are waited out: setting the
/// data is idempotent), and the session's end (`SessionExpired`, `Closed`, `AuthFailed`): the
/// caller holds nothing here, so nothing is lost.
///
/// # Cancel safety
///
/// Dropping the future may or may not leave the request sent (it is queued when the future
/// is first polled).
///
/// [`Participant::path`]: crate::Participant::path
/// [`LockGuard::revocation_requested`]: crate::lock::LockGuard::revocation_requested
pub async fn revoke(client: &Client, node: &str) -> Result<bool> {
    match retrying(client, || client.set_data(node, REVOKE_MESSAGE, None)).await {
        Ok(_) => Ok(true),
        Err(Error::Client(zk_client::Error::NoNode)) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Waits until the data of our node `path` is `__REVOKE__`. Fails with
/// [`Error::LockLost`] when the node goes or the session ends first.
pub(crate) async fn requested(client: &Client, path: &str) -> Result<()> {
    for _ in turns() {
        match client.get_data_watch(path).await {
            Ok((data, _, watcher)) => {
                if data.as_ref() == REVOKE_MESSAGE {
                    return Ok(());
                }
                match watcher.await {
                    Ok(e) if e.event_type == EventType::NodeDeleted => {
                        return Err(Error::LockLost(LossReason::NodeDeleted))
                    }
                    Ok(_) => {}
                    Err(e) => retry_after(client, e).await?,
                }
            }
            Err(zk_client::Error::NoNode) => return Err(Error::LockLost(LossReason::NodeDeleted)),
            Err(e) => retry_after(client, e).await?,
        }
    }
    Err(gave_up())
}
