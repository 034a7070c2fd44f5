//! Wire order: the cache applies its read replies and its watch's events in the order the
//! server sent them.
//!
//! # The rule
//!
//! The server sends one session's replies and notifications in the order it applied them, and
//! the client hands each to its receiver in that order, at once, from one task: a reply to its
//! request's future, an event to the persistent watcher's queue. Every reply and every event
//! carries its [`Arrival`](zk_client::Arrival) (the number of the frame that brought it). The cache takes the next
//! item by these steps:
//!
//! 1. Take the next queued event, if any, and hold it.
//! 2. Take the oldest read's reply, if it has come, and hold it. (Replies of one session come
//!    back in the order the reads were sent, so no other reply can be next.)
//! 3. Both held: apply the one with the smaller arrival first.
//! 4. Only the event held: apply it. The reply was looked at *after* the event was taken and
//!    had not come, so it arrives after the event.
//! 5. Only the reply held: look at the event queue once more. An event that came before the
//!    reply was queued before the reply was handed over, so it is there now; if the queue is
//!    still empty, nothing came before the reply: apply it.
//!
//! So both errors of the old "replies first" or "events first" choices are impossible: a read
//! answered after a `NodeDeleted` + `NodeCreated` is never undone by that older `NodeDeleted`
//! (a live node reported deleted), and a read answered before a `NodeDeleted` never puts the
//! node back after it (a stale read re-inserting a deleted node).
//!
//! # Across reconnects and resyncs
//!
//! Arrivals keep counting across the connections of a session. When a connection drops, its
//! reads in flight fail locally with `ConnectionLoss` (stamped after every frame received), and
//! events already queued keep their place: everything of the new connection (the events after
//! `SetWatches` and the replies of the resync pass it starts) has larger arrivals, so leftovers
//! of the old connection are applied first, in their order. A resync pass is made of reads like
//! any other, so its replies are ordered with the events the same way; what no event told
//! (changes while disconnected) the pass finds by reading and its sweep removes. A new session
//! (a `SessionManager`'s) starts a new follower with a new watcher and new reads.
//!
//! A watcher that lagged (`Error::Lagged`: events dropped) has lost its place in the order;
//! the task starts a pass, which re-reads everything after that point.
//!
//! # Event zxids (ZooKeeper 3.9+)
//!
//! From ZooKeeper 3.9 an event carries the zxid of the change that fired it
//! ([`WatchedEvent::zxid`]; ZOOKEEPER-4655). Where it does, the cache compares it with the
//! node's cached `Stat` ([`already_shown`]) so that no change is applied twice:
//!
//! * `NodeCreated` / `NodeDataChanged` with zxid `z`: when the cached node's `mzxid` is `z` or
//!   later, the snapshot already shows that change (or a later one): a read answered after
//!   the change was applied first, e.g. a pass's read of the node queued before the event.
//!   The refresh read the event asks for is not sent. The check is made when the event is
//!   applied and again when its refresh leaves the backlog (refreshes of one node merged
//!   there keep the newest zxid, or none when one of them had none). With one-shot watches
//!   the refresh also re-arms the node's data watch, so it is skipped only while that watch
//!   is armed (or being armed by a read in flight).
//! * `NodeDeleted` with zxid `z`: a cached node whose `czxid` is later than `z` was created
//!   after that deletion (a later incarnation read first): it is not removed.
//! * `NodeChildrenChanged` is always followed (in one-shot mode its listing re-arms the
//!   child watch); the rule never reads a parent's `cversion` or `pzxid`, which ClickHouse
//!   Keeper moves differently (#115457).
//!
//! An event without a zxid (ZooKeeper before 3.9, Keeper, the events a reconnect's
//! `SetWatches` fires) is applied as before. Wire order already keeps a stale event from
//! undoing a newer read within a session; the zxids save reads that wire order cannot tell
//! are redundant and are a second guard, and a zxid from a server can only be later than
//! the change it tells of, never earlier, so a mistaken skip would need a server that lies.

use std::task::{Context, Poll};

use zk_client::{Error, EventType, PersistentWatcher, Stat, WatchedEvent};

use super::reads::{Answered, Reads};

/// Whether the snapshot, holding `cached` for the event's node, already shows the change an
/// event of `event_type` with `zxid` tells of, or a later state (the rule in the module
/// docs). Always `false` without a zxid.
pub(crate) fn already_shown(
    event_type: EventType,
    zxid: Option<i64>,
    cached: Option<&Stat>,
) -> bool {
    let (Some(zxid), Some(stat)) = (zxid, cached) else {
        return false;
    };
    match event_type {
        EventType::NodeCreated | EventType::NodeDataChanged => stat.mzxid >= zxid,
        EventType::NodeDeleted => stat.czxid > zxid,
        _ => false,
    }
}

/// The zxid of two merged refreshes of one node: the newer, or none when either has none.
pub(crate) fn merged_zxid(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    Some(a?.max(b?))
}

/// What to apply next.
pub(crate) enum Next {
    /// A read's reply.
    Reply(Answered),
    /// A watch event.
    Event(WatchedEvent),
    /// The watch stream failed: `Lagged` (events dropped), or it ended.
    WatchFailed(Error),
}

/// An event and a reply taken from their channels but not applied yet.
#[derive(Default)]
pub(crate) struct InOrder {
    event: Option<WatchedEvent>,
    reply: Option<Answered>,
}

impl InOrder {
    /// The next reply or event in wire order (the steps in the module docs). Items taken and
    /// not returned are held here, so dropping the future that polls this loses nothing.
    ///
    /// The events come from `watcher`, or without one from the one-shot watches the reads
    /// leave (`one_shot.rs`, which hands them out in arrival order).
    pub(crate) fn poll_next(
        &mut self,
        mut watcher: Option<&mut PersistentWatcher>,
        reads: &mut Reads,
        cx: &mut Context<'_>,
    ) -> Poll<Next> {
        if self.event.is_none() {
            if let Some(failed) = self.take_event(watcher.as_deref_mut(), reads, cx) {
                return Poll::Ready(failed);
            }
        }
        if self.reply.is_none() {
            if let Poll::Ready(answered) = reads.poll_reply(cx) {
                self.reply = Some(answered);
            }
        }
        if self.event.is_none() && self.reply.is_some() {
            // Step 5: an event handed over before the reply is queued by now.
            if let Some(failed) = self.take_event(watcher, reads, cx) {
                return Poll::Ready(failed);
            }
        }
        let event_first = match (&self.event, &self.reply) {
            (None, None) => return Poll::Pending,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(event), Some(reply)) => event.arrival < reply.arrival,
        };
        let next = if event_first {
            self.event.take().map(Next::Event)
        } else {
            self.reply.take().map(Next::Reply)
        };
        next.map_or(Poll::Pending, Poll::Ready)
    }

    /// Takes the next queued event into `self.event`; returns the stream's failure instead.
    fn take_event(
        &mut self,
        watcher: Option<&mut PersistentWatcher>,
        reads: &mut Reads,
        cx: &mut Context<'_>,
    ) -> Option<Next> {
        let polled = match (watcher, reads.one_shots()) {
            (Some(watcher), _) => watcher.poll_event(cx),
            (None, Some(one_shots)) => one_shots.poll_event(cx),
            (None, None) => Poll::Pending,
        };
        match polled {
            Poll::Ready(Ok(event)) => {
                self.event = Some(event);
                None
            }
            Poll::Ready(Err(err)) => Some(Next::WatchFailed(err)),
            Poll::Pending => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(czxid: i64, mzxid: i64) -> Stat {
        Stat {
            czxid,
            mzxid,
            ..Stat::default()
        }
    }

    #[test]
    fn a_change_the_snapshot_shows_is_not_applied_twice() {
        let cached = stat(5, 9);
        for kind in [EventType::NodeDataChanged, EventType::NodeCreated] {
            // The cached read came after the change (or is it): nothing to read.
            assert!(already_shown(kind, Some(9), Some(&cached)));
            assert!(already_shown(kind, Some(7), Some(&cached)));
            // A newer change, no zxid, or nothing cached: read.
            assert!(!already_shown(kind, Some(10), Some(&cached)));
            assert!(!already_shown(kind, None, Some(&cached)));
            assert!(!already_shown(kind, Some(9), None));
        }
    }

    #[test]
    fn a_deletion_never_removes_a_later_incarnation() {
        let later = stat(12, 12);
        assert!(already_shown(
            EventType::NodeDeleted,
            Some(11),
            Some(&later)
        ));
        let same = stat(5, 9);
        assert!(!already_shown(
            EventType::NodeDeleted,
            Some(11),
            Some(&same)
        ));
        assert!(!already_shown(EventType::NodeDeleted, None, Some(&later)));
        // Children events are always followed.
        assert!(!already_shown(
            EventType::NodeChildrenChanged,
            Some(1),
            Some(&later)
        ));
    }

    #[test]
    fn merged_refreshes_keep_the_newest_zxid_or_none() {
        assert_eq!(merged_zxid(Some(3), Some(8)), Some(8));
        assert_eq!(merged_zxid(Some(8), Some(3)), Some(8));
        assert_eq!(merged_zxid(None, Some(8)), None);
        assert_eq!(merged_zxid(Some(8), None), None);
    }
}
