//! The bounded queue between the session's watch registry and a
//! [`PersistentWatcher`](crate::PersistentWatcher).
//!
//! A persistent watch can produce events faster than its owner reads them. An unbounded queue
//! turns a slow reader into unbounded memory (+70 MiB for a million unread events was
//! measured); this one holds at most `capacity` events. When it is full the sender drops
//! events and counts them, and keeps dropping until the reader has been told: the reader gets
//! every event queued before the gap, then one [`Error::Lagged`] with the count, then the
//! events that came after it was told, like tokio's broadcast channel.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;

use crate::error::{Error, Result};
use crate::event::WatchedEvent;

/// What both ends share besides the channel.
#[derive(Debug, Default)]
struct Shared {
    /// Events dropped since the reader was last told; while non-zero, every new event is
    /// dropped too, so that the gap is reported at the place where it happened.
    missed: AtomicU64,
    /// Why the queue ended (set before the sender is dropped), for a reader that finds the
    /// channel closed while its last message could not be queued.
    end: OnceLock<Error>,
}

/// A queue of `capacity` events (at least one).
pub(crate) fn event_queue(capacity: usize) -> (EventSender, EventReceiver) {
    let (tx, rx) = mpsc::channel(capacity.max(1));
    let shared = Arc::new(Shared::default());
    (
        EventSender {
            tx,
            shared: shared.clone(),
        },
        EventReceiver { rx, shared },
    )
}

/// The registry's end.
#[derive(Debug, Clone)]
pub(crate) struct EventSender {
    tx: mpsc::Sender<Result<WatchedEvent>>,
    shared: Arc<Shared>,
}

impl EventSender {
    /// Queues an event, or drops and counts it when the queue is full (or a gap is still
    /// unreported). Returns false when the reader is gone.
    pub(crate) fn send(&self, event: WatchedEvent) -> bool {
        let lagging = self
            .shared
            .missed
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |m| {
                (m > 0).then(|| m.saturating_add(1))
            })
            .is_ok();
        if lagging {
            crate::metrics::watch_event_dropped();
            return !self.tx.is_closed();
        }
        match self.tx.try_send(Ok(event)) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) => {
                self.shared.missed.fetch_add(1, Ordering::AcqRel);
                crate::metrics::watch_event_dropped();
                true
            }
            Err(TrySendError::Closed(_)) => false,
        }
    }

    /// Ends the queue with a terminal error: the reader sees it after the queued events.
    pub(crate) fn end(self, err: Error) {
        let _ = self.shared.end.set(err.clone());
        let _ = self.tx.try_send(Err(err));
    }

    /// Whether the reader is gone.
    pub(crate) fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

/// The watcher's end.
#[derive(Debug)]
pub(crate) struct EventReceiver {
    rx: mpsc::Receiver<Result<WatchedEvent>>,
    shared: Arc<Shared>,
}

impl EventReceiver {
    /// The next event; `Err(Lagged)` where events were dropped; the terminal error once the
    /// queue ended (`Closed` when it ended without one).
    pub(crate) fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Result<WatchedEvent>> {
        match self.rx.poll_recv(cx) {
            Poll::Ready(Some(item)) => Poll::Ready(item),
            Poll::Ready(None) => Poll::Ready(Err(self
                .take_missed()
                .unwrap_or_else(|| self.shared.end.get().cloned().unwrap_or(Error::Closed)))),
            Poll::Pending => match self.take_missed() {
                Some(lagged) => Poll::Ready(Err(lagged)),
                None => Poll::Pending,
            },
        }
    }

    fn take_missed(&self) -> Option<Error> {
        match self.shared.missed.swap(0, Ordering::AcqRel) {
            0 => None,
            missed => Some(Error::Lagged { missed }),
        }
    }

    /// The next item if one is ready (for tests).
    #[cfg(test)]
    pub(crate) fn try_recv(&mut self) -> Option<Result<WatchedEvent>> {
        match self.poll_recv(&mut Context::from_waker(std::task::Waker::noop())) {
            Poll::Ready(item) => Some(item),
            Poll::Pending => None,
        }
    }

    /// Stops accepting events (before the watcher tells the session it is gone).
    pub(crate) fn close(&mut self) {
        self.rx.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventType;

    fn event(i: usize) -> WatchedEvent {
        WatchedEvent {
            event_type: EventType::NodeDataChanged,
            path: format!("/{i}"),
            arrival: crate::event::Arrival::default(),
            zxid: None,
        }
    }

    fn drain(rx: &mut EventReceiver) -> Vec<Result<WatchedEvent>> {
        let mut out = Vec::new();
        while let Some(item) = rx.try_recv() {
            let end = matches!(&item, Err(e) if e.is_terminal() || matches!(e, Error::Closed));
            out.push(item);
            if end {
                break;
            }
        }
        out
    }

    #[test]
    fn a_slow_reader_gets_what_fit_then_the_gap_then_what_came_after() {
        let (tx, mut rx) = event_queue(4);
        for i in 0..1_000_000 {
            assert!(tx.send(event(i)));
        }
        let got = drain(&mut rx);
        assert_eq!(got.len(), 5, "4 events and one lag report: {got:?}");
        for (i, item) in got.iter().take(4).enumerate() {
            assert_eq!(item.as_ref().unwrap(), &event(i));
        }
        assert!(matches!(got[4], Err(Error::Lagged { missed: 999_996 })));
        // Once told, the reader gets new events again.
        assert!(tx.send(event(7)));
        let got = drain(&mut rx);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].as_ref().unwrap(), &event(7));
    }

    #[test]
    fn the_end_reaches_the_reader_even_when_the_queue_is_full() {
        let (tx, mut rx) = event_queue(2);
        for i in 0..3 {
            tx.send(event(i));
        }
        tx.end(Error::SessionExpired);
        let got = drain(&mut rx);
        assert_eq!(got.len(), 4, "{got:?}");
        assert!(matches!(got[2], Err(Error::Lagged { missed: 1 })));
        assert!(matches!(got[3], Err(Error::SessionExpired)));
    }

    #[test]
    fn a_closed_reader_is_reported() {
        let (tx, mut rx) = event_queue(2);
        rx.close();
        assert!(!tx.send(event(0)));
        assert!(tx.is_closed());
    }
}
