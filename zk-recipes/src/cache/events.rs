//! [`CacheEvents`]: one consumer's stream of a cache's events, with lag reporting.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use tokio::sync::broadcast;

use super::compressed::Inflate;
use super::node::CacheEvent;
use crate::session::Events;

/// Default number of events a consumer may fall behind before it gets
/// [`CacheEvent::Lagged`].
pub const DEFAULT_EVENT_BUFFER: usize = 4096;

/// Which events a view passes on.
#[derive(Debug, Clone)]
pub(crate) enum Filter {
    All,
    /// Every event except those about this path (a children view hides its parent).
    Except(String),
}

/// The events of a cache from the moment this stream was made, in order. A
/// [`Stream`](futures_core::Stream) of [`CacheEvent`]; it ends when the cache is closed or its
/// session ended for good.
///
/// Each consumer has a bounded backlog ([`CacheBuilder::event_buffer`](super::CacheBuilder::event_buffer)):
/// a consumer that falls further behind gets [`CacheEvent::Lagged`] with the number of
/// events it missed, then the events after them. The snapshot is never affected: after a
/// `Lagged`, read the snapshot again (Curator has no such signal: its listeners run on one
/// executor with an unbounded queue).
///
/// ```no_run
/// # async fn f(cache: zk_recipes::cache::Cache) {
/// use zk_recipes::cache::CacheEvent;
/// let mut events = cache.events();
/// while let Some(event) = events.next().await {
///     match event {
///         CacheEvent::Lagged(n) => println!("missed {n} events; rereading {} nodes", cache.len()),
///         other => println!("{other:?}"),
///     }
/// }
/// # }
/// ```
pub struct CacheEvents {
    /// Events travel as `Arc`s: the ring every cache allocates up front holds a pointer per
    /// slot, not an event (4096 slots of ~290 bytes were 1.2 MB per cache, even unread).
    events: Events<Arc<CacheEvent>>,
    filter: Filter,
    /// The cache's compression option: events carry decompressed data.
    inflate: Option<Arc<Inflate>>,
}

impl std::fmt::Debug for CacheEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacheEvents")
            .field("filter", &self.filter)
            .field("ended", &self.events.is_ended())
            .finish()
    }
}

impl CacheEvents {
    pub(crate) fn new(rx: broadcast::Receiver<Arc<CacheEvent>>, filter: Filter) -> CacheEvents {
        CacheEvents {
            events: Events::new(rx, |n| Arc::new(CacheEvent::Lagged(n))),
            filter,
            inflate: None,
        }
    }

    /// This stream, with its events' data decompressed by `inflate` (the cache's
    /// compression option, if any).
    pub(crate) fn inflated(mut self, inflate: Option<Arc<Inflate>>) -> CacheEvents {
        self.inflate = inflate;
        self
    }

    /// The next event, or `None` once the cache has ended.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: an event is consumed only when this returns it.
    pub async fn next(&mut self) -> Option<CacheEvent> {
        std::future::poll_fn(|cx| self.poll_event(cx)).await
    }

    /// Polls for the next event (see [`next`](Self::next)).
    pub fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<CacheEvent>> {
        loop {
            let Some(event) = ready!(self.events.poll_event(cx)) else {
                return Poll::Ready(None);
            };
            let pass = match &self.filter {
                Filter::All => true,
                Filter::Except(path) => event.path() != Some(path.as_str()),
            };
            if pass {
                let event = Arc::unwrap_or_clone(event);
                return Poll::Ready(Some(match &self.inflate {
                    Some(inflate) => inflate.event(event),
                    None => event,
                }));
            }
        }
    }
}

impl futures_core::Stream for CacheEvents {
    type Item = CacheEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<CacheEvent>> {
        self.poll_event(cx)
    }
}
