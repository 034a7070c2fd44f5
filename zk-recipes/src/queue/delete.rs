//! The guaranteed delete: our node is gone when it returns, through reconnects, and it says
//! who removed it.

use zk_client::Client;

use crate::error::{LossReason, Result};
use crate::retry::{gave_up, turns, wait_connected};

/// What a release (a guaranteed delete of our node) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Released {
    /// We deleted our lock node: the lock was ours until this release.
    Deleted,
    /// The node was already gone, so the lock had been lost before this release:
    /// [`LossReason::SessionEnded`] (the session expired or was closed, and its ephemeral
    /// node went with it) or [`LossReason::NodeDeleted`] (someone else deleted it).
    AlreadyGone(LossReason),
    /// Other guards of the same hold (re-entries) remain; the node stays until the last of
    /// them is released.
    StillHeld {
        /// How many guards still hold the node.
        remaining: usize,
    },
}

/// Deletes `path`, retrying through connection losses until it is gone or the session ended
/// (then the ephemeral node is gone anyway). Curator calls this a guaranteed delete.
///
/// Says who removed the node: [`Released::Deleted`] (we did; also when a delete whose
/// reply was lost with the connection is followed by `NoNode`, since that first delete
/// most likely applied), or [`Released::AlreadyGone`] (`NodeDeleted`: it was not there;
/// `SessionEnded`: the session ended first, and took the node).
///
/// `owner` is for a path that other holders reuse (the exclusive lock's): the czxid of the node
/// we created there. Each attempt then first checks that the node at `path` is still that one
/// and deletes it only at the version seen, so neither a delete retried after a lost reply
/// (the first one applied, and the next holder has created the node since) nor one after
/// someone else deleted ours removes the next holder's node.
pub(crate) async fn delete_guaranteed(
    client: &Client,
    path: &str,
    owner: Option<i64>,
) -> Result<Released> {
    let mut maybe_applied = false;
    for _ in turns() {
        let attempt = match owner {
            None => client.delete(path, None).await,
            Some(czxid) => match client.exists(path).await {
                Ok(Some(stat)) if stat.czxid == czxid => {
                    client.delete(path, Some(stat.version)).await
                }
                // Not our node (any more): ours is gone.
                Ok(_) => Err(zk_client::Error::NoNode),
                Err(e) => Err(e),
            },
        };
        match attempt {
            Ok(()) => return Ok(Released::Deleted),
            // Our node changed between the check and the delete: look again.
            Err(zk_client::Error::BadVersion) if owner.is_some() => continue,
            Err(zk_client::Error::NoNode) if maybe_applied => return Ok(Released::Deleted),
            Err(zk_client::Error::NoNode) => {
                return Ok(Released::AlreadyGone(LossReason::NodeDeleted))
            }
            Err(e) if e.is_connection_loss() => {
                maybe_applied = true;
                match wait_connected(client).await {
                    Ok(()) => continue,
                    Err(e) if e.is_session_end() => {
                        return Ok(Released::AlreadyGone(LossReason::SessionEnded))
                    }
                    Err(e) => return Err(e),
                }
            }
            Err(e) if e.is_terminal() => {
                return Ok(Released::AlreadyGone(LossReason::SessionEnded))
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(gave_up())
}
