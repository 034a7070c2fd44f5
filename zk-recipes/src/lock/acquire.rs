//! The queue acquisition procedure shared by the fair lock and both sides of the read/write
//! lock: protected create, then wait for the one node that blocks us.
//!
//! ```text
//! create _c_<guid>-<name> EPHEMERAL_SEQUENTIAL ──ok──────────────┐
//!   │ ConnectionLoss: reconnect, list, find _c_<guid>- ──found──┤
//!   │                                        └─not found: create again (same guid)
//!   ▼                                                           ▼
//! list children → sort by trailing sequence → our position ─ first/no blocker → held
//!                                                 └─ blocker: getData+watch it, wait, list again
//! ```

use bytes::Bytes;
use tokio::time::Instant;
use tracing::debug;
use uuid::Uuid;
use zk_client::{Client, CreateMode, CreateOptions, Stat};

use super::naming::{self, Intent, Position};
use super::support::ensure_containers;
use crate::cleanup::{delete_guaranteed, detached, find_own, Orphan};
use crate::error::{Error, LossReason, Result};
use crate::retry::{gave_up, retry_after, retrying, until, wait_connected, MAX_TURNS};

/// What to acquire.
#[derive(Debug, Clone)]
pub(crate) struct QueueSpec {
    /// The lock's base path (the queue nodes' parent).
    pub(crate) base: String,
    /// The lock name inside each node's name (`lock-`, `__READ__`, `__WRIT__`).
    pub(crate) lock_name: &'static str,
    /// Read or write.
    pub(crate) intent: Intent,
    /// The owner data each node carries (Curator's default: the local address).
    pub(crate) data: Bytes,
}

/// A queue node that is ours and at the head (for its intent).
#[derive(Debug)]
pub(crate) struct Acquired {
    /// Full path of our node (client view, chroot not included).
    pub(crate) path: String,
    /// Its stat at creation (the czxid is the fencing token).
    pub(crate) stat: Stat,
    /// The client's connection epoch before the listing that showed us at the head.
    pub(crate) epoch: u64,
}

/// Enqueues and waits until the lock is ours, `deadline` passes ([`Error::Timeout`]), or,
/// with `try_only`, returns `Ok(None)` at once if someone is ahead. Whatever way this ends
/// without the lock, including by being dropped, our node is removed.
///
/// `downgrade_of` names our own write node when its owner takes the read lock (a
/// downgrade): the read node is then created at the write node's position (see
/// [`create_protected`]) and the write node does not block it.
pub(crate) async fn acquire(
    client: &Client,
    spec: &QueueSpec,
    deadline: Option<Instant>,
    try_only: bool,
    downgrade_of: Option<&str>,
) -> Result<Option<Acquired>> {
    let guid = Uuid::new_v4();
    // Removes our node when the attempt ends without the lock (error, timeout, try-failure
    // or the future being dropped).
    let mut attempt = Orphan {
        client: client.clone(),
        base: spec.base.clone(),
        guid,
        node: None,
    }
    .guard();
    let fut = async {
        let (name, stat) = create_protected(client, spec, &guid, downgrade_of).await?;
        if let Some(orphan) = attempt.state_mut() {
            orphan.node = Some(name.clone());
        }
        let held = wait_turn(client, spec, &name, try_only, downgrade_of).await?;
        Ok::<_, Error>(held.map(|epoch| Acquired {
            path: format!("{}/{name}", spec.base),
            stat,
            epoch,
        }))
    };
    let result = until(deadline, fut).await;
    match &result {
        Ok(Some(_)) => {
            attempt.disarm();
        }
        Ok(None) => {
            // try_acquire lost: remove our node now, so that a following acquire by this
            // process does not queue behind its own leftover.
            // Detached, so that dropping this future midway does not leave the node.
            if let Some(name) = attempt.disarm().and_then(|o| o.node) {
                let (client, path) = (client.clone(), format!("{}/{name}", spec.base));
                detached(async move { delete_guaranteed(&client, &path, None).await })
                    .await
                    .unwrap_or(Err(Error::Client(zk_client::Error::Closed)))?;
            }
        }
        Err(_) => {}
    }
    result
}

/// The protected create: makes our node, surviving a lost reply without leaving a ghost.
///
/// Normally an EPHEMERAL_SEQUENTIAL `_c_<guid>-<lock name>`. For a downgrade (`downgrade_of`
/// is our write node) it is a plain EPHEMERAL `_c_<guid>-__READ__<seq>` carrying the write
/// node's own sequence suffix, as Curator does since 5.5.0 (CURATOR-621): a sequential read node
/// would sort after any writer queued behind our write node and wait for it, while that
/// writer waits for our write node, forever. At the write node's position it blocks such a
/// writer instead, and nothing blocks it but our own write node.
pub(crate) async fn create_protected(
    client: &Client,
    spec: &QueueSpec,
    guid: &Uuid,
    downgrade_of: Option<&str>,
) -> Result<(String, Stat)> {
    let downgrade = downgrade_of.and_then(|write| naming::downgrade_node_name(guid, write));
    let (name, mode) = match downgrade {
        Some(name) => (name, CreateMode::Ephemeral),
        // Not a downgrade (or, impossibly, a write node without a sequence: then queue
        // normally, which is what the lock did before CURATOR-621).
        None => (
            naming::protected_node_name(guid, spec.lock_name),
            CreateMode::EphemeralSequential,
        ),
    };
    let path = format!("{}/{name}", spec.base);
    let options = CreateOptions::new(mode);
    let session = client.session_id();
    for _ in 0..MAX_TURNS {
        match client.create(&path, &spec.data, &options).await {
            Ok((created, stat)) => return Ok((base_name(&created).to_owned(), stat)),
            Err(zk_client::Error::NoNode) => ensure_containers(client, &spec.base).await?,
            // Only a plain (downgrade) name can exist already, and only if it is ours: the
            // guid is fresh. Recover it like a lost reply.
            Err(e) if e.is_connection_loss() || matches!(e, zk_client::Error::NodeExists) => {
                // The create may or may not have happened: look for our guid.
                wait_connected(client).await?;
                if let Some(found) = find_own(client, &spec.base, guid).await? {
                    let full = format!("{}/{found}", spec.base);
                    match retrying(client, || client.exists(&full)).await? {
                        Some(stat) if stat.ephemeral_owner == session => {
                            debug!(node = %full, "recovered our node after a lost create reply");
                            return Ok((found, stat));
                        }
                        // Found under another session. Curator deletes it and starts over with
                        // a new guid (CURATOR-498). Our client never moves to a new session
                        // (expiry is terminal), so a different owner means our session is
                        // gone: the node is an expired session's and disappears with it, and
                        // the acquisition cannot continue on this client.
                        Some(_) => return Err(Error::LockLost(LossReason::SessionEnded)),
                        // Deleted since the listing (by someone else): create again.
                        None => {}
                    }
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(gave_up())
}

/// Waits until no node that blocks `ours` is left and returns the client's connection epoch
/// read before the listing that showed our node there (the guard reports `Held` only on that
/// connection until it looks again). Returns `None` when `try_only` and blocked.
///
/// `ignore` names a node of ours that must not block us (our write node, in a downgrade).
async fn wait_turn(
    client: &Client,
    spec: &QueueSpec,
    ours: &str,
    try_only: bool,
    ignore: Option<&str>,
) -> Result<Option<u64>> {
    for _ in 0..MAX_TURNS {
        let epoch = client.connection_epoch();
        let children = match client.get_children(&spec.base).await {
            Ok(children) => children,
            Err(e) => {
                retry_after(client, e).await?;
                continue;
            }
        };
        let mut queue = naming::queue(&children);
        if let Some(skip) = ignore {
            queue.retain(|c| c.name != skip);
        }
        match naming::position(&queue, ours, spec.intent) {
            Position::Acquired => return Ok(Some(epoch)),
            Position::Missing => return Err(Error::LockLost(LossReason::NodeDeleted)),
            Position::WaitFor { .. } if try_only => return Ok(None),
            Position::WaitFor { node, only } => {
                // getData, not exists: exists would leave a watch behind on a node that is
                // already gone; getData fails with NoNode and leaves nothing.
                let path = format!("{}/{node}", spec.base);
                match client.get_data_watch(&path).await {
                    Ok((_, _, watcher)) => {
                        debug!(%path, "waiting for predecessor");
                        match watcher.await {
                            // Our only blocker is gone: nobody can have queued ahead of us
                            // since (later nodes get larger sequence numbers), so the lock
                            // is ours without listing again. Any other event: look again.
                            Ok(e) if only && e.event_type == zk_client::EventType::NodeDeleted => {
                                return Ok(Some(epoch))
                            }
                            Ok(_) => {}
                            Err(e) => retry_after(client, e).await?,
                        }
                    }
                    Err(zk_client::Error::NoNode) => {}
                    Err(e) => retry_after(client, e).await?,
                }
            }
        }
    }
    Err(Error::Timeout)
}

/// The last segment of a path.
pub(crate) fn base_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}
