//! [`Following`]: a value re-read after each event of a stream and published as
//! [`Transitions`] (what group members and service instances are followed with, over a
//! children cache's events).

use std::pin::Pin;
use std::sync::Arc;

use futures_core::Stream;
use tokio_util::sync::{CancellationToken, DropGuard};
use zk_client::{Observable, Publisher, Transitions};

/// Publishes `read()` after each item of `events`, then `ended` once the stream ends or
/// this is dropped.
#[derive(Debug)]
pub(crate) struct Following<T: Observable> {
    publisher: Arc<Publisher<T>>,
    _stop: DropGuard,
}

impl<T: Observable> Following<T> {
    /// Starts publishing; must be called within a tokio runtime. Make `events` before the
    /// value `read` reads changes, so no change falls between the two.
    pub(crate) fn start<S>(
        events: S,
        read: impl Fn() -> T + Send + 'static,
        ended: T,
    ) -> Following<T>
    where
        S: Stream + Unpin + Send + 'static,
    {
        let publisher = Arc::new(Publisher::new(read()));
        let stop = CancellationToken::new();
        tokio::spawn(publish(
            events,
            read,
            ended,
            publisher.clone(),
            stop.clone(),
        ));
        Following {
            publisher,
            _stop: stop.drop_guard(),
        }
    }

    /// A follower of every change from now on.
    pub(crate) fn subscribe(&self) -> Transitions<T> {
        self.publisher.subscribe()
    }
}

async fn publish<T: Observable, S: Stream + Unpin>(
    mut events: S,
    read: impl Fn() -> T,
    ended: T,
    publisher: Arc<Publisher<T>>,
    stop: CancellationToken,
) {
    // A change between `start` and the spawn of this task is published here.
    publisher.publish(read());
    loop {
        let next = std::future::poll_fn(|cx| Pin::new(&mut events).poll_next(cx));
        tokio::select! {
            _ = stop.cancelled() => break,
            event = next => match event {
                Some(_) => {
                    publisher.publish(read());
                }
                None => break,
            },
        }
    }
    publisher.publish(ended);
}
