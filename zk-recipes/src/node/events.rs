//! [`NodeEvents`]: one consumer's stream of a [`PersistentNode`](super::PersistentNode)'s
//! events, with lag reported in the stream, as a cache's
//! [`CacheEvents`](crate::cache::CacheEvents) does.

use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::sync::broadcast::{self, error::RecvError};
use tokio_util::sync::ReusableBoxFuture;

use super::persistent::NodeEvent;

type Received = (Result<NodeEvent, RecvError>, broadcast::Receiver<NodeEvent>);

async fn recv(mut rx: broadcast::Receiver<NodeEvent>) -> Received {
    (rx.recv().await, rx)
}

/// The events of a node from the moment this stream was made, in order. A
/// [`Stream`](futures_core::Stream) of [`NodeEvent`]; it ends when the node is closed (or
/// stopped for good). A consumer that falls more than 256 events behind gets
/// [`NodeEvent::Lagged`] with the number it missed, then the events after them.
pub struct NodeEvents {
    next: ReusableBoxFuture<'static, Received>,
    ended: bool,
}

impl std::fmt::Debug for NodeEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeEvents")
            .field("ended", &self.ended)
            .finish()
    }
}

impl NodeEvents {
    pub(crate) fn new(rx: broadcast::Receiver<NodeEvent>) -> NodeEvents {
        NodeEvents {
            next: ReusableBoxFuture::new(recv(rx)),
            ended: false,
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
        if self.ended {
            return Poll::Ready(None);
        }
        let (result, rx) = ready!(self.next.poll(cx));
        self.next.set(recv(rx));
        Poll::Ready(match result {
            Ok(event) => Some(event),
            Err(RecvError::Lagged(n)) => Some(NodeEvent::Lagged(n)),
            Err(RecvError::Closed) => {
                self.ended = true;
                None
            }
        })
    }
}

impl futures_core::Stream for NodeEvents {
    type Item = NodeEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<NodeEvent>> {
        self.poll_event(cx)
    }
}
