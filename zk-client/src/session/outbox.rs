//! The session's outputs to the client handles, in the order they happened.
//!
//! The session never completes a channel itself: every state change, every answered request
//! and every watch event becomes an [`Event`] in its outbox, which the driver drains after
//! each input ([`Session::poll_event`](super::Session::poll_event)) and delivers, in order
//! (quinn's `Connection::poll`). So a watch event reaches its watcher before the reply of any
//! later read, a state change is published exactly where it happened among the replies, and
//! tests see the outputs as plain values.

use std::collections::VecDeque;

use bytes::Bytes;
use tokio::sync::oneshot;

use crate::error::{Error, Result};
use crate::event::WatchedEvent;
use crate::event_queue::EventSender;
use crate::state::SessionInfo;

/// One output of the session.
#[derive(Debug)]
pub(crate) enum Event {
    /// The state changed, or the session's id, password or connection epoch did.
    Info(SessionInfo),
    /// The answer to a request.
    Reply(oneshot::Sender<Result<Bytes>>, Result<Bytes>),
    /// A one-shot watcher's event, or the error that ends it.
    Watch(oneshot::Sender<Result<WatchedEvent>>, Result<WatchedEvent>),
    /// An event for a persistent watcher.
    Stream(EventSender, WatchedEvent),
    /// The end of a persistent watcher.
    StreamEnd(EventSender, Error),
}

impl Event {
    /// Hands the event to its receiver; returns the session info to publish, if it is one.
    /// A receiver that is gone is fine: nobody waits for it any more.
    pub(crate) fn deliver(self) -> Option<SessionInfo> {
        match self {
            Event::Info(info) => return Some(info),
            Event::Reply(to, result) => {
                let _ = to.send(result);
            }
            Event::Watch(to, event) => {
                let _ = to.send(event);
            }
            Event::Stream(to, event) => {
                to.send(event);
            }
            Event::StreamEnd(to, err) => to.end(err),
        }
        None
    }
}

/// The queue of [`Event`]s not yet drained.
#[derive(Debug, Default)]
pub(crate) struct Outbox {
    events: VecDeque<Event>,
}

impl Outbox {
    pub(crate) fn push(&mut self, event: Event) {
        self.events.push_back(event);
    }

    pub(crate) fn reply(&mut self, to: oneshot::Sender<Result<Bytes>>, result: Result<Bytes>) {
        self.push(Event::Reply(to, result));
    }

    pub(crate) fn pop(&mut self) -> Option<Event> {
        self.events.pop_front()
    }
}
