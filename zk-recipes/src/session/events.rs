//! [`Events`]: one consumer's stream of a recipe's broadcast events, with lag reported in the
//! stream (written once for the caches' and the persistent nodes' event streams).

use std::task::{ready, Context, Poll};

use tokio::sync::broadcast::{self, error::RecvError};
use tokio_util::sync::ReusableBoxFuture;

type Received<T> = (Result<T, RecvError>, broadcast::Receiver<T>);

async fn recv<T: Clone>(mut rx: broadcast::Receiver<T>) -> Received<T> {
    (rx.recv().await, rx)
}

/// The events of a broadcast from the moment the receiver was made, in order; a consumer
/// that fell behind gets `lagged(n)` with the number it missed, then the events after them;
/// the stream ends when the sender is gone.
pub(crate) struct Events<T> {
    next: ReusableBoxFuture<'static, Received<T>>,
    lagged: fn(u64) -> T,
    ended: bool,
}

impl<T> std::fmt::Debug for Events<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events")
            .field("ended", &self.ended)
            .finish()
    }
}

impl<T: Clone + Send + 'static> Events<T> {
    pub(crate) fn new(rx: broadcast::Receiver<T>, lagged: fn(u64) -> T) -> Events<T> {
        Events {
            next: ReusableBoxFuture::new(recv(rx)),
            lagged,
            ended: false,
        }
    }

    /// Whether the stream has ended.
    pub(crate) fn is_ended(&self) -> bool {
        self.ended
    }

    /// Polls for the next event; `None` once the sender is gone. Cancel safe: an event is
    /// consumed only when this returns it.
    pub(crate) fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        if self.ended {
            return Poll::Ready(None);
        }
        let (result, rx) = ready!(self.next.poll(cx));
        self.next.set(recv(rx));
        Poll::Ready(match result {
            Ok(event) => Some(event),
            Err(RecvError::Lagged(n)) => Some((self.lagged)(n)),
            Err(RecvError::Closed) => {
                self.ended = true;
                None
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    enum E {
        N(u32),
        Lagged(u64),
    }

    #[tokio::test]
    async fn lag_is_reported_in_the_stream_and_the_stream_ends_with_the_sender() {
        let (tx, rx) = broadcast::channel(2);
        let mut events = Events::new(rx, E::Lagged);
        for n in 0..5 {
            tx.send(E::N(n)).unwrap();
        }
        drop(tx);
        let mut seen = Vec::new();
        while let Some(e) = std::future::poll_fn(|cx| events.poll_event(cx)).await {
            seen.push(e);
        }
        assert_eq!(seen, vec![E::Lagged(3), E::N(3), E::N(4)]);
        assert!(events.is_ended());
    }
}
