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
use tracing::debug;
use zk_client::{Client, CreateMode, Stat, Watcher};

use super::cleanup::{detached, Orphan};
use super::create::{Listing, Protected};
use super::delete::delete_guaranteed;
use super::locate::{locate, Place};
use super::naming::{self, Intent, Position};
use super::owner::local_address;
use super::wait::{watch_node, woken, HandOff, Wake, Watch};
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
    /// How a waiter behind more than one node waits.
    pub(crate) hand_off: HandOff,
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
///
/// With [`HandOff::Prepared`], a writer with more than one blocker watches two: the nearest,
/// and the one before it ([`Place::second`](super::locate::Place)); a reader watches only the
/// nearest write node, as by default. When that one goes, the
/// nearest is usually at the head; listing again then, while it holds and with its watch
/// kept, tells us whether it is our only blocker. Its release then hands the lock over with no
/// listing on the hand-off's path. Each node is watched by at most two waiters.
async fn wait_turn(
    client: &Client,
    spec: &QueueSpec,
    ours: &str,
    try_only: bool,
    ignore: Option<&str>,
    mut listed: Option<Listing>,
) -> Result<Option<u64>> {
    // The watch on the node we waited for, kept across a listing.
    let mut ahead: Option<(String, Watcher)> = None;
    for _ in turns() {
        let (epoch, children) = match listed.take() {
            Some(Listing { epoch, children }) => (epoch, children),
            None => {
                let epoch = client.connection_epoch();
                match client.get_children(&spec.base).await {
                    Ok(children) => (epoch, children),
                    // The lock's path is gone (deleted, or reaped as an empty container):
                    // so is our node.
                    Err(zk_client::Error::NoNode) => (epoch, Vec::new()),
                    Err(e) => {
                        retry_after(client, e).await?;
                        continue;
                    }
                }
            }
        };
        // A downgrade stands on our write node: gone (deleted by someone, or its session's
        // end), another writer may hold the lock, and our read node sits ahead of it.
        if let Some(write) = ignore.filter(|w| !children.iter().any(|c| c == w)) {
            debug!(base = %spec.base, %write, "our write node is gone: no downgrade");
            return Err(Error::LockLost(LossReason::NodeDeleted));
        }
        let Place { position, second } = locate(&children, ours, spec.intent, ignore);
        let (node, only) = match position {
            Position::Acquired => return Ok(Some(epoch)),
            Position::Missing => return Err(Error::LockLost(LossReason::NodeDeleted)),
            Position::WaitFor { .. } if try_only => return Ok(None),
            Position::WaitFor { node, only } => (node, only),
        };
        let kept = match ahead.take() {
            Some((name, watcher)) if name == node => Some(watcher),
            _ => None,
        };
        // `second` is set only behind two or more blockers, so never with `only`. Writers
        // only: a reader's blockers are the write nodes ahead, so its second watch would sit
        // on the holding writer, and that writer's release would wake every reader queued
        // behind the next writer (each to list the queue) while unblocking none of them.
        let second =
            second.filter(|_| spec.hand_off == HandOff::Prepared && spec.intent == Intent::Write);
        let (nearest, before) = watch_both(client, &spec.base, &node, kept, second).await?;
        let Some(mut nearest) = nearest else {
            continue;
        };
        match before {
            None => {
                // Our only blocker is gone: nobody can have queued ahead of us since (later
                // nodes get larger sequence numbers), so the lock is ours without listing
                // again. Anything else: look again.
                if woken(client, nearest.await).await? == Wake::Deleted && only {
                    return Ok(Some(epoch));
                }
            }
            Some(Watch::Missing) => ahead = Some((node, nearest)),
            Some(Watch::LookAgain) => {}
            Some(Watch::Set(before)) => {
                tokio::select! {
                    biased;
                    event = &mut nearest => {
                        woken(client, event).await?;
                    }
                    event = before => {
                        if woken(client, event).await? == Wake::Deleted {
                            ahead = Some((node, nearest));
                        }
                    }
                }
            }
        }
    }
    Err(gave_up())
}

/// Sets the watches of one wait: on `node` (unless `kept` is its watch already) and on
/// `second`, both requests sent before either reply is awaited. Returns the watch on `node`
/// (`None`: look again, it is gone or a connection loss was waited out) and, with `second`,
/// what became of its watch.
async fn watch_both(
    client: &Client,
    base: &str,
    node: &str,
    kept: Option<Watcher>,
    second: Option<String>,
) -> Result<(Option<Watcher>, Option<Watch>)> {
    let nearest = async {
        match kept {
            Some(watcher) => Ok(Watch::Set(watcher)),
            None => watch_node(client, &crate::path::join(base, node)).await,
        }
    };
    let before = async {
        match &second {
            Some(name) => watch_node(client, &crate::path::join(base, name))
                .await
                .map(Some),
            None => Ok(None),
        }
    };
    let (nearest, before) = tokio::join!(nearest, before);
    let (nearest, before) = (nearest?, before?);
    match nearest {
        Watch::Set(watcher) => Ok((Some(watcher), before)),
        Watch::Missing | Watch::LookAgain => Ok((None, None)),
    }
}
