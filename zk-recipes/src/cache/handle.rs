//! [`Cache`]: the handle (reads of the snapshot, events, state, close). Built by
//! `builder.rs`; the work is in `task.rs`.

use std::sync::Arc;

use zk_client::Transitions;

use super::events::{CacheEvents, Filter};
use super::node::ChildData;
use super::options::Options;
use super::shared::{CacheState, Shared};
use super::task;
use crate::session::{Background, Source};

/// A cache of the subtree at a path, kept current by one persistent recursive watch
/// (Curator's `CuratorCache`). Cheap to clone; the cache stops when the last clone is
/// dropped or [`close`](Self::close) is called. See the [module docs](super) for the events
/// and what holds across faults.
#[derive(Clone)]
pub struct Cache {
    pub(super) shared: Arc<Shared>,
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
    pub(super) fn start(opts: Options, source: Source) -> (Cache, CacheEvents) {
        let shared = Arc::new(Shared::new(opts));
        // Subscribed before the task starts: the stream sees every event from the first load.
        let events = shared.subscribe(Filter::All);
        let sessions = source.sessions();
        let task = Background::spawn({
            let shared = shared.clone();
            |stop| task::run(shared, sessions, stop)
        });
        let cache = Cache {
            shared,
            task: Arc::new(task),
        };
        let events = events.inflated(cache.shared.opts.inflate.clone());
        (cache, events)
    }

    /// The root of the cached subtree.
    pub fn path(&self) -> &str {
        &self.shared.opts.path
    }

    /// The cached node at `path`, if any. Never waits for the network.
    ///
    /// With [`CacheBuilder::compressed`](super::CacheBuilder::compressed), its data is
    /// decompressed (`None` when it does not decompress: see [`data_error`](Self::data_error)).
    pub fn get(&self, path: &str) -> Option<ChildData> {
        let node = self.shared.read().get(path);
        node.map(|node| self.out(node))
    }

    /// The cached direct children of `path`, in name order.
    pub fn children(&self, path: &str) -> Vec<ChildData> {
        let nodes = self.shared.read().children(path);
        self.all_out(nodes)
    }

    /// Every cached node, parents before children (by depth, then path).
    pub fn entries(&self) -> Vec<ChildData> {
        let nodes = self.shared.read().entries();
        self.all_out(nodes)
    }

    /// Why the cached node at `path` is handed out without data although the cache keeps
    /// its data: its data did not decompress ([`CacheBuilder::compressed`](super::CacheBuilder::compressed)).
    /// `None` when it did, when the node is not cached, or without the compression option.
    ///
    /// ```no_run
    /// # fn f(cache: zk_recipes::cache::Cache) {
    /// if let Some(e) = cache.data_error("/app/state") {
    ///     eprintln!("/app/state: {e}");
    /// }
    /// # }
    /// ```
    pub fn data_error(&self, path: &str) -> Option<crate::Error> {
        let inflate = self.shared.opts.inflate.as_ref()?;
        let node = self.shared.read().get(path)?;
        node.data.as_ref()?;
        // Decompressed (and its outcome kept) if nobody asked yet.
        let mzxid = node.stat.mzxid;
        let _ = self.out(node);
        inflate
            .error(path, mzxid)
            .map(|e| crate::Error::Client(zk_client::Error::Compression(e)))
    }

    /// A node as handed out: decompressed with the compression option.
    fn out(&self, node: ChildData) -> ChildData {
        let Some(inflate) = &self.shared.opts.inflate else {
            return node;
        };
        let node = inflate.node(node);
        self.prune(inflate);
        node
    }

    fn prune(&self, inflate: &super::compressed::Inflate) {
        inflate.prune(self.len(), |path| self.shared.read().get(path).is_some());
    }

    /// Nodes as handed out: decompressed with the compression option, and the memo of
    /// outcomes kept to about the cache's size.
    fn all_out(&self, nodes: Vec<ChildData>) -> Vec<ChildData> {
        let Some(inflate) = &self.shared.opts.inflate else {
            return nodes;
        };
        let nodes = nodes.into_iter().map(|node| inflate.node(node)).collect();
        self.prune(inflate);
        nodes
    }

    /// How many nodes are cached.
    pub fn len(&self) -> usize {
        self.shared.read().len()
    }

    /// Whether no node is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The events from now on (their data decompressed with the compression option).
    pub fn events(&self) -> CacheEvents {
        self.subscribe(Filter::All)
    }

    pub(super) fn subscribe(&self, filter: Filter) -> CacheEvents {
        self.shared
            .subscribe(filter)
            .inflated(self.shared.opts.inflate.clone())
    }

    /// The snapshot and a stream of exactly the events after it: replaying the stream over
    /// the snapshot gives the cache's later snapshots.
    pub fn snapshot_and_events(&self) -> (Vec<ChildData>, CacheEvents) {
        let (entries, events) = {
            let mut guarded = self.shared.guarded_mut();
            let events = self.shared.subscribe_to(&mut guarded, Filter::All);
            (guarded.store.entries(), events)
        };
        let events = events.inflated(self.shared.opts.inflate.clone());
        (self.all_out(entries), events)
    }

    /// Where the cache stands (loaded, disconnected, resyncing...).
    pub fn state(&self) -> CacheState {
        self.shared.states.current()
    }

    /// Why the cache is not [`Synced`](CacheState::Synced), if something went wrong: the
    /// last error that kept it from setting its watch or ended its session
    /// ([`zk_client::Error::ServerDropsRequest`] when the server drops the connection on
    /// its `addWatch`: the cache waits out the `retry_after`, with a growing pause, and
    /// tries again, and a session that ends meanwhile does not replace it;
    /// `SessionExpired` while a manager's next session is awaited). Cleared
    /// once the cache is synced again. A cache stuck in
    /// [`Disconnected`](CacheState::Disconnected) or [`Loading`](CacheState::Loading)
    /// says why here; the warning is logged too.
    pub fn last_error(&self) -> Option<crate::Error> {
        self.shared.failing()
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

    /// Whether the first load completed ([`ready`](Self::ready) would return at once).
    pub fn is_ready(&self) -> bool {
        self.shared.is_initialized()
    }

    /// Waits until the first load completed (at once if it has).
    ///
    /// # Errors
    ///
    /// The error that ended the cache first: [`Error::Client`](crate::Error::Client)`(Closed)`
    /// when it was closed; the session's end (`SessionExpired` on a plain client,
    /// `AuthFailed`, `Closed` when the client was closed), the session manager's end, or
    /// [`Error::GaveUp`](crate::Error::GaveUp) when its retries ran out.
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
            Err(self.shared.ended_with())
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
