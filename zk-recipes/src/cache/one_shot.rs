//! The cache's follower on a server without persistent watches (`addWatch`: ZooKeeper before
//! 3.6, ClickHouse Keeper without it): a tree of one-shot watches, as Curator's `TreeCache`.
//!
//! Every cached node has a data watch (its `getData` leaves one) and, above the depth limit,
//! a child watch (its `getChildren` leaves one); a missing root has an exists watch. A fired
//! watch is re-armed by the read its event asks for, so the server tells every change once:
//! `NodeDataChanged` → read the node; `NodeChildrenChanged` → list the children and read the
//! new ones (each new node then gets its own watches); `NodeDeleted` → remove the node;
//! `NodeCreated` (the root) → read it. The events reach the task with their
//! [`Arrival`](zk_client::Arrival), so they are applied in wire order with the replies, as the
//! persistent watch's are (`order.rs`).
//!
//! Each (path, kind) is armed at most once at a time: a read leaves a watch only when none of
//! its kind is armed or being armed on the path, so passes and repeated events never pile up
//! watchers.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_util::stream::{FuturesUnordered, StreamExt};
use zk_client::{Error, WatchedEvent, Watcher};

/// Which watch of a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum WatchKind {
    /// Left by `getData`.
    Data,
    /// Left by `getChildren`.
    Children,
    /// Left by `exists` on a missing node.
    Exists,
}

type Fired =
    Pin<Box<dyn Future<Output = (WatchKind, String, zk_client::Result<WatchedEvent>)> + Send>>;

/// A fired watch's event, ordered by arrival.
struct Ready {
    kind: WatchKind,
    path: String,
    event: WatchedEvent,
}

impl PartialEq for Ready {
    fn eq(&self, other: &Self) -> bool {
        self.event.arrival == other.event.arrival
    }
}
impl Eq for Ready {}
impl PartialOrd for Ready {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ready {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.event.arrival.cmp(&other.event.arrival)
    }
}

/// The one-shot watches set or being set, and their events.
#[derive(Default)]
pub(crate) struct OneShots {
    /// (kind, path) armed on the server, or asked for by a read in flight.
    armed: HashSet<(WatchKind, String)>,
    watchers: FuturesUnordered<Fired>,
    /// Events taken from their watchers, smallest arrival first.
    ready: BinaryHeap<Reverse<Ready>>,
    /// A watcher failed (the session ended): reported once the ready events are out.
    failed: Option<Error>,
}

impl OneShots {
    /// Whether a read of `path` should leave a `kind` watch (none is armed or being armed);
    /// if so, it now counts as being armed.
    pub(crate) fn arm(&mut self, kind: WatchKind, path: &str) -> bool {
        self.armed.insert((kind, path.to_owned()))
    }

    /// Whether a `kind` watch on `path` is armed or being armed.
    pub(crate) fn is_armed(&self, kind: WatchKind, path: &str) -> bool {
        self.armed.contains(&(kind, path.to_owned()))
    }

    /// The read that was to arm it failed: no watch was left.
    pub(crate) fn disarm(&mut self, kind: WatchKind, path: &str) {
        self.armed.remove(&(kind, path.to_owned()));
    }

    /// A read left its watch: follow it.
    pub(crate) fn follow(&mut self, kind: WatchKind, path: String, watcher: Watcher) {
        self.watchers
            .push(Box::pin(async move { (kind, path, watcher.await) }));
    }

    /// The next event in arrival order among the fired watches. Takes every fired watch
    /// first, so an event that came before a reply handed over since is never left behind.
    pub(crate) fn poll_event(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<zk_client::Result<WatchedEvent>> {
        while let Poll::Ready(Some((kind, path, fired))) = self.watchers.poll_next_unpin(cx) {
            match fired {
                Ok(event) => self.ready.push(Reverse(Ready { kind, path, event })),
                Err(e) => {
                    self.armed.remove(&(kind, path));
                    self.failed.get_or_insert(e);
                }
            }
        }
        if let Some(Reverse(ready)) = self.ready.pop() {
            self.armed.remove(&(ready.kind, ready.path));
            return Poll::Ready(Ok(ready.event));
        }
        match self.failed.take() {
            Some(e) => Poll::Ready(Err(e)),
            None => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watch_is_armed_once_until_it_fires_or_fails() {
        let mut w = OneShots::default();
        assert!(w.arm(WatchKind::Data, "/a"));
        assert!(!w.arm(WatchKind::Data, "/a"));
        assert!(w.arm(WatchKind::Children, "/a"));
        w.disarm(WatchKind::Data, "/a");
        assert!(w.arm(WatchKind::Data, "/a"));
    }
}
