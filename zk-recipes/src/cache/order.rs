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
//! Events of ZooKeeper 3.9+ carry the zxid of their change: the rule that saves reads with
//! it is in `zxid.rs`.

use std::task::{Context, Poll};

use zk_client::{Error, PersistentWatcher, WatchedEvent};

use super::reads::{Answered, Reads};

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
