//! A cache of a subtree, compatible with Apache Curator's `CuratorCache`, with views for one
//! node, the children of a node, and a tree with a depth limit.
//!
//! # How it works
//!
//! A [`Cache`] sets **one** persistent recursive watch on its root (`addWatch`), whatever
//! the size of the subtree, and only then loads the subtree, so no change is missed between
//! the two. The load reads every node's data and the children of every node that has any,
//! with up to [`DEFAULT_READ_WINDOW`] reads on the wire at once. After that, a
//! `NodeCreated`/`NodeDataChanged` event makes it read the node again, and `NodeDeleted`
//! removes it (and anything cached below it). The snapshot ([`Cache::get`],
//! [`Cache::children`], [`Cache::entries`]) is in memory and never waits for the network.
//!
//! Events ([`CacheEvent`]) are CuratorCache's: `Created` for every node of the first load and
//! each node that appears later, `Changed` (old and new data and `Stat`) when a node is read
//! with another `Stat.version`, `Deleted`, and `Initialized` once, when the first load is
//! complete. Each consumer has its own [`CacheEvents`] stream, and learns with
//! [`CacheEvent::Lagged`] when it fell behind.
//!
//! # Faults and guarantees
//!
//! [`Cache::watch`] follows the cache's [`CacheState`] with [`zk_client::Transitions`] (as a
//! session's state, a lock's state and leadership are followed).
//!
//! * **While disconnected** ([`CacheState::Disconnected`]) the snapshot stays readable but is
//!   stale: it is the state as of the disconnection, and no events are sent. Nothing is
//!   cleared.
//! * **After a reconnect** (same session) the server re-arms the watch but does not replay
//!   what changed meanwhile, so the cache re-reads the subtree ([`CacheState::Resyncing`])
//!   and reports exactly the differences: `Created` for nodes that appeared, `Changed` for
//!   nodes whose version moved, `Deleted` for nodes gone (found by the re-read not seeing
//!   them). A node deleted and re-created meanwhile is reported as `Deleted` then `Created`
//!   (Curator misses it when the version is the same again). Changes that happened and were
//!   undone during the gap (a node created and deleted) leave no event: the events describe
//!   the differences between snapshots, not every write.
//! * **After a new session** ([`CacheBuilder::build_managed`]): the same, on the new
//!   session, once the watch is set on it. With a plain client the cache ends with its
//!   session ([`CacheState::Ended`]; the snapshot is kept).
//! * **No event is lost or duplicated**: every event is the difference between the snapshot
//!   before and after it, and is sent after the snapshot was updated. Replaying a consumer's
//!   events over the snapshot it started from gives the current snapshot (unless it got
//!   `Lagged`; [`Cache::snapshot_and_events`] gives a matching pair).
//! * Replies and watch events are applied in the order the server sent them, so a read
//!   answered before a deletion can never re-insert the deleted node.
//! * The children's fields of a cached `Stat` (`cversion`, `num_children`, `pzxid`) are as of
//!   that node's last read, as in Curator: a recursive watch reports the children, not the
//!   parent.
//!
//! # Views
//!
//! * [`NodeCache`]: one node (Curator's `NodeCache`, kazoo's `DataWatch`), on a
//!   non-recursive persistent watch.
//! * [`ChildrenCache`]: the direct children of a node (Curator's `PathChildrenCache`,
//!   kazoo's `ChildrenWatch`): a cache with depth 1 whose events skip the parent.
//! * A tree with a depth limit (Curator's `TreeCache`): [`CacheBuilder::max_depth`].
//! * Which nodes keep their data: [`CacheBuilder::keep_data`].
//!
//! ```no_run
//! # async fn f(client: zk_client::Client) -> zk_recipes::Result<()> {
//! use zk_recipes::cache::{Cache, CacheEvent};
//!
//! let (cache, mut events) = Cache::builder("/config").build_with_events(client)?;
//! cache.ready().await?;
//! if let Some(node) = cache.get("/config/db") {
//!     println!("db = {:?}", node.data);
//! }
//! while let Some(event) = events.next().await {
//!     match event {
//!         CacheEvent::Changed { old, new } => println!("{}: {:?} -> {:?}", new.path, old.data, new.data),
//!         CacheEvent::Lagged(_) => println!("fell behind; {} nodes cached", cache.len()),
//!         other => println!("{other:?}"),
//!     }
//! }
//! # Ok(()) }
//! ```

mod builder;
mod events;
mod follow;
mod node;
mod reads;
mod store;
mod task;
mod views;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use tokio::sync::broadcast;
use zk_client::{Observable, Publisher, Transitions};

pub use builder::{CacheBuilder, DEFAULT_READ_WINDOW};
pub use events::{CacheEvents, DEFAULT_EVENT_BUFFER};
pub use node::{CacheEvent, ChildData};
pub use views::{ChildrenCache, NodeCache};

use crate::session::{Background, Source};
use builder::Options;
use events::Filter;
pub(crate) use follow::Following;
use store::Store;

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

/// Followed with [`Cache::watch`]: `Ended` is final.
impl Observable for CacheState {
    fn is_final(&self) -> bool {
        *self == CacheState::Ended
    }

    fn when_gone(_last: &Self) -> Self {
        CacheState::Ended
    }
}

/// The snapshot and its event sender.
struct Guarded {
    store: Store,
    events: Option<broadcast::Sender<CacheEvent>>,
}

/// What the task and the handles share.
pub(crate) struct Shared {
    opts: Options,
    /// The snapshot, and the sender of its events (dropped when the cache ends, which ends
    /// every stream), under one lock.
    store: RwLock<Guarded>,
    states: Publisher<CacheState>,
    /// The first load completed (set before `Synced` is first published).
    initialized: AtomicBool,
    pass: AtomicU32,
}

impl Shared {
    fn guarded(&self) -> std::sync::RwLockReadGuard<'_, Guarded> {
        self.store.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn read(&self) -> impl std::ops::Deref<Target = Store> + '_ {
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
    fn apply(&self, change: impl FnOnce(&mut Store, bool) -> Vec<CacheEvent>) {
        let mut guarded = self.store.write().unwrap_or_else(PoisonError::into_inner);
        let Guarded { store, events } = &mut *guarded;
        let listening = events.as_ref().is_some_and(|tx| tx.receiver_count() > 0);
        let out = change(store, listening);
        if let Some(tx) = events.as_ref().filter(|_| listening) {
            for event in out {
                let _ = tx.send(event);
            }
        }
    }

    /// The cache ended: no more events; every stream ends after what it has.
    fn end(&self) {
        let mut guarded = self.store.write().unwrap_or_else(PoisonError::into_inner);
        guarded.events = None;
        drop(guarded);
        self.set_state(CacheState::Ended);
    }

    fn level(&self, path: &str) -> Option<usize> {
        store::level_below(&self.opts.path, path)
    }

    fn keeps_data(&self, path: &str) -> bool {
        self.opts.keep_data.as_ref().is_none_or(|keep| keep(path))
    }

    fn last_pass(&self) -> u32 {
        self.pass.load(Ordering::Relaxed)
    }

    fn next_pass(&self) -> u32 {
        self.pass.fetch_add(1, Ordering::Relaxed).wrapping_add(1)
    }

    fn set_state(&self, state: CacheState) {
        self.states.publish_if(|s| {
            let changed = *s != state && *s != CacheState::Ended;
            if changed {
                *s = state;
            }
            changed
        });
    }

    /// A pass completed: the snapshot equals the server's subtree as of now.
    fn pass_completed(&self) {
        let first = !self.is_initialized();
        if first {
            self.apply(|_, _| vec![CacheEvent::Initialized]);
        }
        self.initialized.store(true, Ordering::Release);
        self.set_state(CacheState::Synced);
    }

    fn is_initialized(&self) -> bool {
        self.initialized.load(Ordering::Acquire)
    }

    fn subscribe(&self, filter: Filter) -> CacheEvents {
        Self::subscribe_to(&self.guarded(), filter)
    }

    fn subscribe_to(guarded: &Guarded, filter: Filter) -> CacheEvents {
        let rx = match &guarded.events {
            Some(tx) => tx.subscribe(),
            // Ended: a stream that ends at once.
            None => broadcast::channel(1).1,
        };
        CacheEvents::new(rx, filter)
    }
}

/// A cache of the subtree at a path, kept current by one persistent recursive watch
/// (Curator's `CuratorCache`). Cheap to clone; the cache stops when the last clone is
/// dropped or [`close`](Self::close) is called. See the [module docs](self) for the events
/// and what holds across faults.
#[derive(Clone)]
pub struct Cache {
    shared: Arc<Shared>,
    /// The task; stopped when the last clone is dropped.
    task: Arc<Background>,
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache")
            .field("path", &self.shared.opts.path)
            .field("state", &self.state())
            .field("len", &self.len())
            .finish()
    }
}

impl Cache {
    /// A builder for a cache of the subtree at `path`.
    pub fn builder(path: &str) -> CacheBuilder {
        CacheBuilder::new(path)
    }

    /// A cache of the whole subtree at `path`, with data, on `client`'s session (shorthand
    /// for `Cache::builder(path).build(client)`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) for a malformed path.
    pub fn new(client: zk_client::Client, path: &str) -> crate::Result<Cache> {
        Cache::builder(path).build(client)
    }

    fn start(opts: Options, source: Source) -> (Cache, CacheEvents) {
        let (events, rx) = broadcast::channel(opts.event_buffer);
        let shared = Arc::new(Shared {
            store: RwLock::new(Guarded {
                store: Store::new(&opts.path),
                events: Some(events),
            }),
            opts,
            states: Publisher::new(CacheState::Loading),
            initialized: AtomicBool::new(false),
            pass: AtomicU32::new(0),
        });
        let sessions = source.sessions();
        let task = Background::spawn({
            let shared = shared.clone();
            |stop| task::run(shared, sessions, stop)
        });
        let cache = Cache {
            shared,
            task: Arc::new(task),
        };
        (cache, CacheEvents::new(rx, Filter::All))
    }

    /// The root of the cached subtree.
    pub fn path(&self) -> &str {
        &self.shared.opts.path
    }

    /// The cached node at `path`, if any. Never waits for the network.
    pub fn get(&self, path: &str) -> Option<ChildData> {
        self.shared.read().get(path)
    }

    /// The cached direct children of `path`, in name order.
    pub fn children(&self, path: &str) -> Vec<ChildData> {
        self.shared.read().children(path)
    }

    /// Every cached node, parents before children (by depth, then path).
    pub fn entries(&self) -> Vec<ChildData> {
        self.shared.read().entries()
    }

    /// How many nodes are cached.
    pub fn len(&self) -> usize {
        self.shared.read().len()
    }

    /// Whether no node is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The events from now on.
    pub fn events(&self) -> CacheEvents {
        self.shared.subscribe(Filter::All)
    }

    /// The snapshot and a stream of exactly the events after it: replaying the stream over
    /// the snapshot gives the cache's later snapshots.
    pub fn snapshot_and_events(&self) -> (Vec<ChildData>, CacheEvents) {
        let guarded = self.shared.guarded();
        let events = Shared::subscribe_to(&guarded, Filter::All);
        (guarded.store.entries(), events)
    }

    /// Where the cache stands (loaded, disconnected, resyncing...).
    pub fn state(&self) -> CacheState {
        self.shared.states.current()
    }

    /// Follows the cache's state: every transition from now on ([`Transitions`], the type
    /// that follows a session's state, a lock's state and leadership too). It ends with
    /// [`CacheState::Ended`].
    ///
    /// ```no_run
    /// # async fn f(cache: zk_recipes::cache::Cache) {
    /// use zk_recipes::cache::CacheState;
    /// let mut states = cache.watch();
    /// loop {
    ///     match states.changed().await {
    ///         CacheState::Disconnected => println!("stale until reconnected"),
    ///         CacheState::Ended => break,
    ///         _ => {}
    ///     }
    /// }
    /// # }
    /// ```
    pub fn watch(&self) -> Transitions<CacheState> {
        self.shared.states.subscribe()
    }

    /// Whether the first load completed.
    pub fn is_initialized(&self) -> bool {
        self.shared.is_initialized()
    }

    /// Waits until the first load completed (at once if it has).
    ///
    /// # Errors
    ///
    /// [`Error::Client`](crate::Error::Client)`(Closed)` when the cache ended first (closed,
    /// or its session ended).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only watches the cache's state.
    pub async fn ready(&self) -> crate::Result<()> {
        let shared = &self.shared;
        self.wait(|_| shared.is_initialized()).await
    }

    /// Waits until the cache is [`CacheState::Synced`]: loaded, and (after a fault) resynced.
    ///
    /// # Errors
    ///
    /// As [`ready`](Self::ready).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub async fn synced(&self) -> crate::Result<()> {
        self.wait(|s| s == CacheState::Synced).await
    }

    /// [`ready`](Self::ready) within `timeout`.
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`](crate::Error::Timeout) when the first load did not complete in
    /// time; otherwise as [`ready`](Self::ready).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub async fn ready_timeout(&self, timeout: std::time::Duration) -> crate::Result<()> {
        crate::retry::within(timeout, self.ready()).await
    }

    async fn wait(&self, done: impl Fn(CacheState) -> bool) -> crate::Result<()> {
        let mut states = self.watch();
        let state = states.wait_for(&done).await;
        if done(state) {
            Ok(())
        } else {
            Err(zk_client::Error::Closed.into())
        }
    }

    /// Stops the cache: its task ends and its watch is removed from the server (when no
    /// other watcher of the client needs it). The snapshot stays readable, as of the close
    /// (Curator clears it unless `DO_NOT_CLEAR_ON_CLOSE`). Other clones see
    /// [`CacheState::Ended`]; their event streams end.
    ///
    /// # Errors
    ///
    /// None today: a cache has nothing to undo on the server. The `Result` is the crate's
    /// one `close` shape (see the [crate docs](crate#conventions)).
    ///
    /// # Cancel safety
    ///
    /// The cache stops as soon as this is called; the future only waits for its task.
    pub async fn close(&self) -> crate::Result<()> {
        self.task.close().await;
        Ok(())
    }
}
