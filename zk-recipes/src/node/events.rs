//! [`NodeEvents`]: one consumer's stream of a [`PersistentNode`](super::PersistentNode)'s
//! events, with lag reported in the stream (the base's event stream, as a cache's
//! [`CacheEvents`](crate::cache::CacheEvents)).

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::sync::broadcast;

use super::shared::NodeEvent;
use crate::session::Events;

/// The events of a node from the moment this stream was made, in order. A
/// [`Stream`](futures_core::Stream) of [`NodeEvent`]; it ends when the node is closed (or
/// stopped for good). A consumer that falls more than 256 events behind gets
/// [`NodeEvent::Lagged`] with the number it missed, then the events after them.
#[derive(Debug)]
pub struct NodeEvents {
    events: Events<NodeEvent>,
}

impl NodeEvents {
    pub(crate) fn new(rx: broadcast::Receiver<NodeEvent>) -> NodeEvents {
        NodeEvents {
            events: Events::new(rx, NodeEvent::Lagged),
        }
    }

    /// The next event, or `None` once the node has stopped.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: an event is consumed only when this returns it.
    pub async fn next(&mut self) -> Option<NodeEvent> {
        std::future::poll_fn(|cx| self.poll_event(cx)).await
    }

    /// Polls for the next event (see [`next`](Self::next)).
    pub fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<NodeEvent>> {
        self.events.poll_event(cx)
    }
}

impl futures_core::Stream for NodeEvents {
    type Item = NodeEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<NodeEvent>> {
        self.poll_event(cx)
    }
}
