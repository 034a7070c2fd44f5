//! [`Following`]: a value derived from a [`ChildrenCache`]'s children, published as
//! [`Transitions`] after each of the cache's events (what group members and service
//! instances are followed with).

use std::sync::Arc;

use tokio_util::sync::{CancellationToken, DropGuard};
use zk_client::{Observable, Publisher, Transitions};

use super::{ChildData, ChildrenCache};

/// Publishes `read(children)` after each event of a children cache, then `ended` once the
/// cache ends or this is dropped.
#[derive(Debug)]
pub(crate) struct Following<T: Observable> {
    publisher: Arc<Publisher<T>>,
    _stop: DropGuard,
}

impl<T: Observable> Following<T> {
    /// Starts publishing; must be called within a tokio runtime.
    pub(crate) fn start(
        cache: ChildrenCache,
        read: impl Fn(Vec<ChildData>) -> T + Send + 'static,
        ended: T,
    ) -> Following<T> {
        let publisher = Arc::new(Publisher::new(read(cache.children())));
        let stop = CancellationToken::new();
        tokio::spawn(publish(cache, read, ended, publisher.clone(), stop.clone()));
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

async fn publish<T: Observable>(
    cache: ChildrenCache,
    read: impl Fn(Vec<ChildData>) -> T,
    ended: T,
    publisher: Arc<Publisher<T>>,
    stop: CancellationToken,
) {
    let mut events = cache.events();
    // A change between `start` and the subscription above is published here.
    publisher.publish(read(cache.children()));
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            event = events.next() => match event {
                Some(_) => {
                    publisher.publish(read(cache.children()));
                }
                None => break,
            },
        }
    }
    publisher.publish(ended);
}
