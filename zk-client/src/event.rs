//! [`WatchedEvent`], what a watcher receives, and the protocol's event and watch kinds.

pub use zk_proto::records::{AddWatchMode, EventType, WatcherType};

/// A change to a watched node.
///
/// `#[non_exhaustive]`: newer servers send more with an event (3.9 adds the zxid of the
/// change), so fields may be added.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WatchedEvent {
    /// What happened.
    pub event_type: EventType,
    /// The node, relative to the client's chroot.
    pub path: String,
    /// Where the event came among the client's replies and events (see [`Arrival`]): the
    /// same for every watcher told of one notification.
    pub arrival: Arrival,
    /// The zxid of the transaction that caused the event, when the server sent one (see
    /// [`WatchedEvent::zxid`]).
    pub(crate) zxid: Option<i64>,
}

/// Where a reply or a watch event came in the order this client received them.
///
/// The client numbers the frames it receives from its servers, across every connection of
/// the session. A watch event carries the number of the notification that brought it, and a
/// reply read with a `*_stamped` method ([`Client::get_data_stamped`](crate::Client::get_data_stamped),
/// [`Client::get_children_stamped`](crate::Client::get_children_stamped)) the number of its
/// reply. A server sends one session's replies and notifications in the order it applied
/// them, so between two values from the server, the smaller arrival happened first: a read
/// answered after a `NodeDeleted` event shows the state after that deletion, a read answered
/// before it does not. That is what a cache built on a persistent watch needs to apply reads
/// and events in the server's order (the client delivers both in that order, but on two
/// different channels: a reply and an event that are both ready can only be ordered by this).
///
/// A reply the client made itself (a `ConnectionLoss`, a request refused locally) carries the
/// number of the last frame received before it; one made after the connection task ended
/// carries [`Arrival::END`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Arrival(u64);

impl Arrival {
    /// After every frame: the arrival of an answer made once the connection task is gone.
    pub const END: Arrival = Arrival(u64::MAX);

    /// The arrival after `frames` received frames.
    pub(crate) fn after(frames: u64) -> Arrival {
        Arrival(frames)
    }

    /// The number of frames received up to and including this one.
    pub fn get(self) -> u64 {
        self.0
    }
}

/// A reply with where it arrived among the client's other replies and watch events: what the
/// `*_stamped` reads return.
///
/// ```no_run
/// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
/// let mut watcher = client.add_watch("/app", zk_client::AddWatchMode::PersistentRecursive).await?;
/// let read = client.get_data_stamped("/app/config").await;
/// let event = watcher.next().await?;
/// if event.arrival < read.arrival {
///     // The event happened before the read: the read already shows its effect.
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Stamped<T> {
    /// Where the reply arrived.
    pub arrival: Arrival,
    /// The reply.
    pub result: crate::Result<T>,
}

impl<T> Stamped<T> {
    pub(crate) fn new(arrival: Arrival, result: crate::Result<T>) -> Stamped<T> {
        Stamped { arrival, result }
    }
}

impl WatchedEvent {
    /// The zxid of the transaction that caused this event: what ZooKeeper 3.9 and later send
    /// in the notification's reply header (ZOOKEEPER-4655). `None` from servers that send
    /// none (ZooKeeper 3.4 to 3.8 and ClickHouse Keeper send -1), for events a reconnect's
    /// `SetWatches` fires (3.9 sends -1 for those too: the change is older than the
    /// connection and its zxid is not known), and for the events the client makes itself
    /// (`DataWatchRemoved`, `ChildWatchRemoved`, `PersistentWatchRemoved`).
    ///
    /// Each node event of one transaction carries its zxid: `NodeCreated` the new node's
    /// `czxid`, `NodeDataChanged` its new `mzxid`, `NodeDeleted` and the parent's
    /// `NodeChildrenChanged` the zxid of the delete or create (the parent's new `pzxid` on
    /// ZooKeeper). Every operation of a `multi` has the `multi`'s zxid.
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// let (_, stat, watcher) = client.get_data_watch("/app/config").await?;
    /// let event = watcher.await?;
    /// if let Some(zxid) = event.zxid() {
    ///     assert!(zxid > stat.mzxid); // the change the event tells of is newer than the read
    /// }
    /// # Ok(()) }
    /// ```
    pub fn zxid(&self) -> Option<i64> {
        self.zxid
    }

    /// The zxid of a notification's reply header as [`zxid`](Self::zxid) reports it: no
    /// transaction has a zxid of 0 or below (servers send -1 for "none").
    pub(crate) fn zxid_from_header(zxid: i64) -> Option<i64> {
        (zxid > 0).then_some(zxid)
    }

    /// The event with its (server) path made relative to `chroot`.
    pub(crate) fn relative_to(mut self, chroot: &crate::path::Chroot) -> Self {
        self.path = chroot.strip_owned(self.path);
        self
    }
}
