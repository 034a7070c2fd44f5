//! The session's outputs to the client handles, in the order they happened.
//!
//! The session never completes a channel itself: every state change, every answered request
//! and every watch event becomes an [`Event`] in its outbox, which the driver drains after
//! each input ([`Session::poll_event`](super::Session::poll_event)) and delivers, in order
//! (quinn's `Connection::poll`). So a watch event reaches its watcher before the reply of any
//! later read, a state change is published exactly where it happened among the replies, and
//! tests see the outputs as plain values.
//!
//! The outbox also numbers the frames received ([`Outbox::frame_received`]) and stamps every
//! reply and watch event it takes with the number of the frame being handled (an
//! [`Arrival`]): what lets a consumer of two channels (a read's reply and a persistent
//! watcher's events) put them back in the order they came off the wire.

use std::collections::VecDeque;

use bytes::Bytes;
use tokio::sync::oneshot;

use crate::command::{Answer, ReplySender};
use crate::error::{Error, Result};
use crate::event::{Arrival, WatchedEvent};
use crate::event_queue::EventSender;
use crate::state::SessionInfo;

/// One output of the session.
#[derive(Debug)]
pub(crate) enum Event {
    /// The state changed, or the session's id, password or connection epoch did.
    Info(SessionInfo),
    /// The answer to a request.
    Reply(ReplySender, Answer),
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
    /// Frames received so far, over every connection of the session.
    frames: u64,
}

impl Outbox {
    /// A frame from the server is about to be handled: what it produces carries its number.
    pub(crate) fn frame_received(&mut self) {
        self.frames += 1;
    }

    /// Queues `event`, stamping a watch event with the current frame's [`Arrival`].
    pub(crate) fn push(&mut self, mut event: Event) {
        let arrival = Arrival::after(self.frames);
        match &mut event {
            Event::Watch(_, Ok(e)) | Event::Stream(_, e) => e.arrival = arrival,
            _ => {}
        }
        self.events.push_back(event);
    }

    /// Queues the answer to a request, stamped with the current frame's [`Arrival`].
    pub(crate) fn reply(&mut self, to: ReplySender, result: Result<Bytes>) {
        let arrival = Arrival::after(self.frames);
        self.events.push_back(Event::Reply(to, (arrival, result)));
    }

    pub(crate) fn pop(&mut self) -> Option<Event> {
        self.events.pop_front()
    }
}
