//! Waiting for the node ahead of ours: one watch on one node, so a release wakes one waiter
//! (no herd); [`HandOff`] says whether a waiter also watches the node two ahead.

use tracing::debug;
use zk_client::{Client, EventType, Watcher};

use crate::error::Result;
use crate::retry::retry_after;

/// How a waiter queued behind more than one node learns that the lock came to it: the trade
/// between the notifications a release sends and the round trips of a hand-off.
///
/// Set with [`FairLock::with_hand_off`](crate::lock::FairLock::with_hand_off) or
/// [`ReadWriteLock::with_hand_off`](crate::lock::ReadWriteLock::with_hand_off). Both ways keep the
/// queue's order and its safety (a waiter holds only once every node ahead of it is gone);
/// Curator, kazoo and go-zookeeper contenders in the same queue are unaffected.
///
/// | per acquisition, deep queue | [`Lean`](Self::Lean) (default) | [`Prepared`](Self::Prepared) |
/// |---|---|---|
/// | notifications per release | the waiters it unblocks (1 for a mutex) | at most those plus one |
/// | server requests | 5: create, list, watch, list again, delete | 6: create, list, two watches, list again, delete |
/// | hand-off (release to next holder) | a notification, then a listing's round trip | the notification alone |
/// | acquisitions per second (`bench/` W4, 8 sessions, one lock) | 1x | about 1.5x, at 9-16 % less client CPU each |
///
/// # Our own node on the hand-off
///
/// An acquisition fails with [`LockLost`](crate::Error::LockLost)`(`[`NodeDeleted`](crate::LossReason::NodeDeleted)`)`
/// when a listing it takes shows our node gone. A hand-off without a listing (every
/// `Prepared` hand-off in a deep queue, and a `Lean` waiter's whose only blocker, at its
/// last listing, was the holder) does not look at our node again: if someone else deleted
/// it after that listing, `acquire` still returns a guard: its state turns to
/// `Lost(NodeDeleted)` once observed (the first observation looks at the node) and its
/// fenced writes fail. That is
/// what a deletion right after the acquisition gives too; a check on the hand-off would put
/// back the round trip that `Prepared` takes off it.
///
/// ```no_run
/// # fn f(client: zk_client::Client) -> Result<(), zk_recipes::Error> {
/// use zk_recipes::lock::{FairLock, HandOff};
/// // A busy lock: hand it over in one round trip rather than two.
/// let lock = FairLock::new(client, "/locks/jobs")?.with_hand_off(HandOff::Prepared);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HandOff {
    /// ZooKeeper's recipe, the default: a waiter watches only the node that blocks it, so a
    /// release wakes exactly the waiters it unblocks (one, for a mutex). A waiter that was
    /// not next in line when it last listed the queue lists it again when woken, before it
    /// holds: in a busy queue, each hand-off takes a notification and a listing's round trip.
    #[default]
    Lean,
    /// A writer (a mutex waiter, or a read/write lock's writer) with more than one node
    /// ahead also watches the second-nearest, and when that one goes (the nearest then usually
    /// holds) lists the queue again while it waits. When the nearest is then its only
    /// blocker, that node's release hands it the lock with no listing: a hand-off is the
    /// notification alone. The price: a release also wakes the writer behind the next one
    /// (two notifications for a mutex, not one), which lists the queue once more, and each
    /// acquisition costs the server 6 requests instead of 5. Readers wait as with `Lean` (on
    /// the nearest write node only), so a writer's release wakes only the readers it unblocks.
    /// Measured on `bench/` W4 (8 sessions on one lock): about 1.5x `Lean`'s acquisitions
    /// per second, at 9-16 % less client CPU per acquisition.
    Prepared,
}

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

/// A watch set on a node ahead of ours, or why none was.
#[derive(Debug)]
pub(crate) enum Watch {
    /// Set: the node was there.
    Set(Watcher),
    /// The node was gone already ([`Wake::Missing`]).
    Missing,
    /// A connection loss was waited out ([`Wake::LookAgain`]).
    LookAgain,
}

/// Watches `path` (the waiting is [`woken`]). getData, not exists: exists would leave a
/// watch behind on a node that is already gone; getData fails with NoNode and leaves
/// nothing. A connection loss is waited out; the session's end and other errors are
/// returned.
pub(crate) async fn watch_node(client: &Client, path: &str) -> Result<Watch> {
    match client.get_data_watch(path).await {
        Ok((_, _, watcher)) => {
            debug!(%path, "waiting for the node ahead");
            Ok(Watch::Set(watcher))
        }
        Err(zk_client::Error::NoNode) => Ok(Watch::Missing),
        Err(e) => retry_after(client, e).await.map(|()| Watch::LookAgain),
    }
}

/// What the event of a watch set by [`watch_node`] means for the waiter. A connection loss
/// is waited out ([`Wake::LookAgain`]).
pub(crate) async fn woken(
    client: &Client,
    event: zk_client::Result<zk_client::WatchedEvent>,
) -> Result<Wake> {
    match event {
        Ok(e) if e.event_type == EventType::NodeDeleted => Ok(Wake::Deleted),
        Ok(_) => Ok(Wake::LookAgain),
        Err(e) => retry_after(client, e).await.map(|()| Wake::LookAgain),
    }
}

/// Watches `path` and waits until it changes ([`watch_node`], then [`woken`]).
pub(crate) async fn wait_for_node(client: &Client, path: &str) -> Result<Wake> {
    match watch_node(client, path).await? {
        Watch::Set(watcher) => woken(client, watcher.await).await,
        Watch::Missing => Ok(Wake::Missing),
        Watch::LookAgain => Ok(Wake::LookAgain),
    }
}
