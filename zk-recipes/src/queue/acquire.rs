//! The queue acquisition shared by the fair lock, both sides of the read/write lock and the
//! semaphore's leases: protected create, then wait for the one node that blocks us.
//!
//! ```text
//! create _c_<guid>-<name> EPHEMERAL_SEQUENTIAL ──ok──────────────┐
//!   │ ConnectionLoss: reconnect, list, find _c_<guid>- ──found──┤
//!   │                                        └─not found: create again (same guid)
//!   ▼                                                           ▼
//! list children → sort by trailing sequence → our position ─ first/no blocker → held
//!                                                 └─ blocker: getData+watch it, wait, list again
//! ```
//!
//! The first listing goes out right behind the first create (one flush, both replies
//! together) and is used when that create succeeded: it was taken after our node was made.

use bytes::Bytes;
use tokio::time::Instant;
use zk_client::{Client, CreateMode, Stat};

use super::cleanup::{detached, Orphan};
use super::create::{Listing, Protected};
use super::delete::delete_guaranteed;
use super::locate::locate;
use super::naming::{self, Intent, Position};
use super::owner::local_address;
use super::wait::{wait_for_node, Wake};
use crate::error::{Error, LossReason, Result};
use crate::retry::{gave_up, retry_after, turns, until};

/// What to acquire.
#[derive(Debug, Clone)]
pub(crate) struct QueueSpec {
    /// The lock's base path (the queue nodes' parent).
    pub(crate) base: String,
    /// The lock name inside each node's name (`lock-`, `__READ__`, `__WRIT__`).
    pub(crate) lock_name: &'static str,
    /// Read or write.
    pub(crate) intent: Intent,
    /// The owner data each node carries; `None`: Curator's default, the local address
    /// (resolved off the runtime at the first acquisition, see [`local_address`]).
    pub(crate) data: Option<Bytes>,
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
    let nodes = Protected::new(&spec.base);
    // Removes our node when the attempt ends without the lock (error, timeout, try-failure
    // or the future being dropped).
    let mut attempt = Orphan {
        client: client.clone(),
        nodes: nodes.clone(),
        node: None,
    }
    .guard();
    let fut = async {
        let (name, stat, listed) =
            create_listed_node(client, spec, &nodes, downgrade_of, true).await?;
        if let Some(orphan) = attempt.state_mut() {
            orphan.node = Some(name.clone());
        }
        let held = wait_turn(client, spec, &name, try_only, downgrade_of, listed).await?;
        Ok::<_, Error>(held.map(|epoch| Acquired {
            path: nodes.path_of(&name),
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
                let (client, path) = (client.clone(), nodes.path_of(&name));
                detached(async move { delete_guaranteed(&client, &path, None).await })
                    .await
                    .unwrap_or(Err(Error::Client(zk_client::Error::Closed)))?;
            }
        }
        Err(_) => {}
    }
    result
}

/// Our queue node, created with the protected create ([`Protected::create`]).
///
/// Normally an EPHEMERAL_SEQUENTIAL `_c_<guid>-<lock name>`. For a downgrade (`downgrade_of`
/// is our write node) it is a plain EPHEMERAL `_c_<guid>-__READ__<seq>` carrying the write
/// node's own sequence suffix, as Curator does since 5.5.0 (CURATOR-621): a sequential read node
/// would sort after any writer queued behind our write node and wait for it, while that
/// writer waits for our write node, forever. At the write node's position it blocks such a
/// writer instead, and nothing blocks it but our own write node.
pub(crate) async fn create_node(
    client: &Client,
    spec: &QueueSpec,
    nodes: &Protected,
    downgrade_of: Option<&str>,
) -> Result<(String, Stat)> {
    let (name, stat, _) = create_listed_node(client, spec, nodes, downgrade_of, false).await?;
    Ok((name, stat))
}

/// [`create_node`], and with `list` the parent's listing sent with the first create (see
/// [`Protected::create_listing`]).
async fn create_listed_node(
    client: &Client,
    spec: &QueueSpec,
    nodes: &Protected,
    downgrade_of: Option<&str>,
    list: bool,
) -> Result<(String, Stat, Option<Listing>)> {
    let downgrade = downgrade_of.and_then(|write| naming::downgrade_node_name(&nodes.guid, write));
    let (name, mode) = match downgrade {
        Some(name) => (name, CreateMode::Ephemeral),
        // Not a downgrade (or, impossibly, a write node without a sequence: then queue
        // normally, which is what the lock did before CURATOR-621).
        None => (nodes.name(spec.lock_name), CreateMode::EphemeralSequential),
    };
    let data = match &spec.data {
        Some(data) => data.clone(),
        None => local_address().await,
    };
    nodes.create_listing(client, &name, &data, mode, list).await
}

/// Waits until no node that blocks `ours` is left and returns the client's connection epoch
/// read before the listing that showed our node there (the guard reports `Held` only on that
/// connection until it looks again). Returns `None` when `try_only` and blocked.
///
/// `ignore` names a node of ours that must not block us (our write node, in a downgrade).
/// `listed`: a listing taken after our node was created, used for the first look.
async fn wait_turn(
    client: &Client,
    spec: &QueueSpec,
    ours: &str,
    try_only: bool,
    ignore: Option<&str>,
    mut listed: Option<Listing>,
) -> Result<Option<u64>> {
    for _ in turns() {
        let (epoch, children) = match listed.take() {
            Some(Listing { epoch, children }) => (epoch, children),
            None => {
                let epoch = client.connection_epoch();
                match client.get_children(&spec.base).await {
                    Ok(children) => (epoch, children),
                    Err(e) => {
                        retry_after(client, e).await?;
                        continue;
                    }
                }
            }
        };
        match locate(&children, ours, spec.intent, ignore) {
            Position::Acquired => return Ok(Some(epoch)),
            Position::Missing => return Err(Error::LockLost(LossReason::NodeDeleted)),
            Position::WaitFor { .. } if try_only => return Ok(None),
            Position::WaitFor { node, only } => {
                // Our only blocker is gone: nobody can have queued ahead of us since (later
                // nodes get larger sequence numbers), so the lock is ours without listing
                // again. Anything else: look again.
                let path = naming::child_path(&spec.base, &node);
                if wait_for_node(client, &path).await? == Wake::Deleted && only {
                    return Ok(Some(epoch));
                }
            }
        }
    }
    Err(gave_up())
}
