//! The guaranteed delete: our node is gone when it returns, through reconnects, and it says
//! who removed it.

use std::time::Duration;

use zk_client::{Client, ErrorCode};

use crate::error::{LossReason, Result};
use crate::retry::{gave_up, turns, wait_connected};

/// The first pause after the server asked us to come back later, doubling up to
/// [`LATER_MAX`].
const LATER_FIRST: Duration = Duration::from_millis(50);
const LATER_MAX: Duration = Duration::from_secs(2);

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

/// Deletes `path`, retrying through connection losses and the server's requests to come back
/// later (`Throttled`, `RequestTimeout`, paced) until it is gone or the session ended (then
/// the ephemeral node is gone anyway). Curator calls this a guaranteed delete.
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
    let mut pause = LATER_FIRST;
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
            // The server's "later": `Throttled` (not applied, ZooKeeper 3.6+) or
            // `RequestTimeout` (maybe applied). The client's own `Timeout` dropped the
            // connection: the next attempt waits for the reconnect.
            Err(e) if e.is_retryable() => {
                maybe_applied |= !matches!(e, zk_client::Error::Server(ErrorCode::Throttled));
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(LATER_MAX);
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(gave_up())
}

#[cfg(test)]
mod tests {
    use zk_proto::{ErrorCode, OpCode};
    use zk_test_support::{connect_client, within, FakeServer};

    use super::*;

    #[tokio::test]
    async fn a_delete_the_server_throttles_is_tried_again() {
        // ZooKeeper 3.6+ refuses a throttled request without applying it (`Throttled`);
        // `RequestTimeout` asks to come back later too. Neither ends the guaranteed delete:
        // giving up would leave our node at the head of its queue for the session's life.
        let server = FakeServer::start().await;
        let (client, mut conn) = connect_client(&server, "", 7, 30_000, |b| b).await;
        let deleting = tokio::spawn(async move { delete_guaranteed(&client, "/q/n", None).await });
        for refusal in [ErrorCode::Throttled, ErrorCode::RequestTimeout] {
            let req = within("delete", conn.read_non_ping()).await.unwrap();
            assert_eq!(req.op, OpCode::Delete.as_i32());
            conn.reply(req.xid, 1, refusal, b"").await;
        }
        let req = within("delete again", conn.read_non_ping()).await.unwrap();
        assert_eq!(req.op, OpCode::Delete.as_i32());
        conn.reply(req.xid, 2, ErrorCode::Ok, b"").await;
        let released = within("released", deleting).await.unwrap();
        assert_eq!(released.unwrap(), Released::Deleted);
    }
}
