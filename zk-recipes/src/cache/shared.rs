//! What a cache's task and its handles share: the snapshot and its event sender under one
//! lock, the published [`CacheState`], the pass counter. At the bottom of `cache/` with
//! `options`, `store`, `node` and `events`.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use tokio::sync::broadcast;
use zk_client::{Observable, Publisher};

use super::events::{CacheEvents, Filter};
use super::node::CacheEvent;
use super::options::Options;
use super::store::{self, Store};
use crate::retry::refused_for;

/// Where a cache stands with its server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CacheState {
    /// The first load is running (or waits for a connection).
    Loading,
    /// Loaded and following the watch: the snapshot is as current as the events.
    Synced,
    /// The connection is lost: the snapshot is as of the disconnection, no events come.
    Disconnected,
    /// Reconnected (or on a new session): re-reading the subtree to report the differences.
    Resyncing,
    /// Closed, or its session ended for good: the snapshot is kept, no events come.
    Ended,
}

/// Followed with [`Cache::watch`](super::Cache::watch): `Ended` is final.
impl Observable for CacheState {
    fn is_final(&self) -> bool {
        *self == CacheState::Ended
    }

    fn when_gone(_last: &Self) -> Self {
        CacheState::Ended
    }
}

/// The snapshot and its event sender.
pub(super) struct Guarded {
    pub(super) store: Store,
    pub(super) events: Ring,
}

/// A cache's event ring ([`event_buffer`](super::CacheBuilder::event_buffer) slots, made
/// whole when the channel is made). It exists only while a stream may read it: a cache
/// nobody subscribes to (every `NodeCache` but a subscribed one, most caches of few nodes)
/// does not keep 32 bytes per slot, 128 KiB by default.
pub(super) enum Ring {
    /// No stream: the ring is made by the next subscription (events meanwhile have no
    /// reader, as with an open ring nobody reads).
    Idle,
    /// Sends `Arc`s: see [`CacheEvents`].
    Open(broadcast::Sender<Arc<CacheEvent>>),
    /// The cache ended: a new stream ends at once.
    Ended,
}

/// What the task and the handles share.
pub(crate) struct Shared {
    pub(super) opts: Options,
    /// The snapshot, and the sender of its events (dropped when the cache ends, which ends
    /// every stream), under one lock.
    pub(super) store: RwLock<Guarded>,
    pub(super) states: Publisher<CacheState>,
    /// The first load completed (set before `Synced` is first published).
    pub(super) initialized: AtomicBool,
    pub(super) pass: AtomicU32,
    /// Why the cache is not synced ([`Cache::last_error`](super::Cache::last_error)).
    pub(super) failing: Mutex<Option<crate::Error>>,
    /// Why the cache ended, once it has: `None` for a close.
    ended_with: Mutex<Option<crate::Error>>,
}

impl Shared {
    /// A cache's shared part before its first load: empty, `Loading`, no event ring yet.
    pub(super) fn new(opts: Options) -> Shared {
        Shared {
            store: RwLock::new(Guarded {
                store: Store::new(&opts.path),
                events: Ring::Idle,
            }),
            opts,
            states: Publisher::new(CacheState::Loading),
            initialized: AtomicBool::new(false),
            pass: AtomicU32::new(0),
            failing: Mutex::new(None),
            ended_with: Mutex::new(None),
        }
    }

    pub(super) fn guarded(&self) -> std::sync::RwLockReadGuard<'_, Guarded> {
        self.store.read().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn read(&self) -> impl std::ops::Deref<Target = Store> + '_ {
        struct R<'a>(std::sync::RwLockReadGuard<'a, Guarded>);
        impl std::ops::Deref for R<'_> {
            type Target = Store;
            fn deref(&self) -> &Store {
                &self.0.store
            }
        }
        R(self.guarded())
    }

    /// Runs `change` on the snapshot and sends the events it returns, under the lock, so
    /// that a subscription made under the read lock sees exactly the later events.
    pub(super) fn apply(&self, change: impl FnOnce(&mut Store, bool) -> Vec<CacheEvent>) {
        let mut guarded = self.guarded_mut();
        let Guarded { store, events } = &mut *guarded;
        let listening = match events {
            Ring::Open(tx) if tx.receiver_count() > 0 => true,
            // Every stream is gone: give the ring back until the next subscription.
            Ring::Open(_) => {
                *events = Ring::Idle;
                false
            }
            Ring::Idle | Ring::Ended => false,
        };
        let out = change(store, listening);
        if let Ring::Open(tx) = events {
            for event in out {
                let _ = tx.send(Arc::new(event));
            }
        }
    }

    /// The cache ended (`why`: `None` for a close): no more events; every stream ends after
    /// what it has.
    pub(super) fn end(&self, why: Option<crate::Error>) {
        *self
            .ended_with
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = why;
        let mut guarded = self.guarded_mut();
        guarded.events = Ring::Ended;
        drop(guarded);
        self.set_state(CacheState::Ended);
    }

    pub(super) fn level(&self, path: &str) -> Option<usize> {
        store::level_below(&self.opts.path, path)
    }

    pub(super) fn keeps_data(&self, path: &str) -> bool {
        self.opts.keep_data.as_ref().is_none_or(|keep| keep(path))
    }

    pub(super) fn last_pass(&self) -> u32 {
        self.pass.load(Ordering::Relaxed)
    }

    pub(super) fn next_pass(&self) -> u32 {
        self.pass.fetch_add(1, Ordering::Relaxed).wrapping_add(1)
    }

    pub(super) fn set_state(&self, state: CacheState) {
        self.states.publish_if(|s| {
            let changed = *s != state && *s != CacheState::Ended;
            if changed {
                *s = state;
            }
            changed
        });
    }

    /// Records why the cache is not synced. The server dropping our request says more
    /// than the connection losses and session ends it causes: it is not replaced by them.
    pub(super) fn failed(&self, error: crate::Error) {
        let mut failing = self.failing.lock().unwrap_or_else(PoisonError::into_inner);
        let refused =
            matches!(&*failing, Some(crate::Error::Client(e)) if refused_for(e).is_some());
        let consequence =
            matches!(&error, crate::Error::Client(e) if e.is_connection_loss() || e.is_terminal());
        if !(refused && consequence) {
            *failing = Some(error);
        }
    }

    /// Nothing keeps the cache from syncing any more.
    fn clear_failing(&self) {
        *self.failing.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// Why the cache ended: `Closed` for a close, else the error that ended it.
    pub(super) fn ended_with(&self) -> crate::Error {
        self.ended_with
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .unwrap_or(crate::Error::Client(zk_client::Error::Closed))
    }

    pub(super) fn failing(&self) -> Option<crate::Error> {
        self.failing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// A pass completed: the snapshot equals the server's subtree as of now.
    pub(super) fn pass_completed(&self) {
        self.clear_failing();
        let first = !self.is_initialized();
        if first {
            self.apply(|_, _| vec![CacheEvent::Initialized]);
        }
        self.initialized.store(true, Ordering::Release);
        self.set_state(CacheState::Synced);
    }

    pub(super) fn is_initialized(&self) -> bool {
        self.initialized.load(Ordering::Acquire)
    }

    /// The snapshot under the write lock (a subscription may make the event ring).
    pub(super) fn guarded_mut(&self) -> std::sync::RwLockWriteGuard<'_, Guarded> {
        self.store.write().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn subscribe(&self, filter: Filter) -> CacheEvents {
        self.subscribe_to(&mut self.guarded_mut(), filter)
    }

    /// A stream of the events after `guarded`'s snapshot; makes the ring if there is none.
    pub(super) fn subscribe_to(&self, guarded: &mut Guarded, filter: Filter) -> CacheEvents {
        let rx = match &guarded.events {
            Ring::Open(tx) => tx.subscribe(),
            Ring::Idle => {
                let (tx, rx) = broadcast::channel(self.opts.event_buffer);
                guarded.events = Ring::Open(tx);
                rx
            }
            // A stream that ends at once.
            Ring::Ended => broadcast::channel(1).1,
        };
        CacheEvents::new(rx, filter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared() -> Shared {
        Shared::new(Options {
            path: "/c".into(),
            max_depth: None,
            keep_data: None,
            event_buffer: 16,
            window: 8,
            inflate: None,
        })
    }

    fn ring(s: &Shared) -> &'static str {
        match s.guarded().events {
            Ring::Idle => "idle",
            Ring::Open(_) => "open",
            Ring::Ended => "ended",
        }
    }

    #[tokio::test]
    async fn the_event_ring_lives_only_while_a_stream_may_read_it() {
        let s = shared();
        assert_eq!(ring(&s), "idle", "no stream, no ring");
        let mut events = s.subscribe(Filter::All);
        assert_eq!(ring(&s), "open");
        s.apply(|_, listening| {
            assert!(listening);
            vec![CacheEvent::Initialized]
        });
        assert!(matches!(events.next().await, Some(CacheEvent::Initialized)));
        drop(events);
        s.apply(|_, listening| {
            assert!(!listening, "the last stream is gone");
            Vec::new()
        });
        assert_eq!(ring(&s), "idle", "the ring is given back");
        let mut again = s.subscribe(Filter::All);
        s.apply(|_, _| vec![CacheEvent::Initialized]);
        s.end(None);
        assert_eq!(ring(&s), "ended");
        assert!(matches!(again.next().await, Some(CacheEvent::Initialized)));
        assert!(
            again.next().await.is_none(),
            "the stream ends with the cache"
        );
        let mut late = s.subscribe(Filter::All);
        assert!(
            late.next().await.is_none(),
            "a stream after the end ends at once"
        );
    }
}
