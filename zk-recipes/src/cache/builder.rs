//! [`CacheBuilder`]: what a cache mirrors and how.

use std::sync::Arc;

use zk_client::{Client, SessionManager};

use super::events::{CacheEvents, DEFAULT_EVENT_BUFFER};
use super::Cache;
use crate::error::Result;
use crate::session::Source;

/// Default number of reads a cache keeps on the wire while it loads.
pub const DEFAULT_READ_WINDOW: usize = 1024;

/// Which nodes keep their data (see [`CacheBuilder::keep_data`]).
pub(crate) type DataFilter = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// The settings of a cache.
#[derive(Clone)]
pub(crate) struct Options {
    pub(crate) path: String,
    /// Levels below the root that are cached (`None`: all; `Some(0)`: the root alone).
    pub(crate) max_depth: Option<usize>,
    pub(crate) keep_data: Option<DataFilter>,
    pub(crate) event_buffer: usize,
    pub(crate) window: usize,
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("path", &self.path)
            .field("max_depth", &self.max_depth)
            .field("keep_data", &self.keep_data.as_ref().map(|_| "fn"))
            .field("event_buffer", &self.event_buffer)
            .field("window", &self.window)
            .finish()
    }
}

/// Configures a [`Cache`]. Made by [`Cache::builder`].
///
/// ```no_run
/// # async fn f(client: zk_client::Client) -> zk_recipes::Result<()> {
/// use zk_recipes::cache::Cache;
/// // Two levels below /services, data kept only for the instance nodes.
/// let cache = Cache::builder("/services")
///     .max_depth(2)
///     .keep_data(|path| path.matches('/').count() == 3)
///     .build(client)?;
/// cache.ready().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct CacheBuilder {
    opts: Options,
}

impl CacheBuilder {
    pub(crate) fn new(path: &str) -> CacheBuilder {
        CacheBuilder {
            opts: Options {
                path: path.to_owned(),
                max_depth: None,
                keep_data: None,
                event_buffer: DEFAULT_EVENT_BUFFER,
                window: DEFAULT_READ_WINDOW,
            },
        }
    }

    /// Caches only nodes at most `levels` below the root (Curator's `TreeCache.maxDepth`):
    /// 0 is the root alone (a one-node cache, on a non-recursive persistent watch), 1 the
    /// root and its children. Deeper nodes are never read; the server still sends their
    /// events on the one recursive watch, and the cache ignores them.
    pub fn max_depth(mut self, levels: usize) -> Self {
        self.opts.max_depth = Some(levels);
        self
    }

    /// Keeps the data of the nodes for which `filter(path)` is true; the others are cached
    /// with their `Stat` only (Curator's `dataNotCached`, for all nodes or some). Events
    /// still carry the data read; changes are still detected by `Stat.version`.
    pub fn keep_data(mut self, filter: impl Fn(&str) -> bool + Send + Sync + 'static) -> Self {
        self.opts.keep_data = Some(Arc::new(filter));
        self
    }

    /// How many events one consumer may fall behind before it gets
    /// [`CacheEvent::Lagged`](super::CacheEvent::Lagged) (default 4096).
    pub fn event_buffer(mut self, events: usize) -> Self {
        self.opts.event_buffer = events.max(1);
        self
    }

    /// How many reads are on the wire at once during a load or resync (default
    /// [`DEFAULT_READ_WINDOW`]).
    pub fn read_window(mut self, reads: usize) -> Self {
        self.opts.window = reads.max(1);
        self
    }

    fn check(&self) -> Result<()> {
        crate::path::check_root(&self.opts.path)
    }

    /// Starts the cache on `client`'s session. The cache ends (state
    /// [`CacheState::Ended`](super::CacheState::Ended), snapshot kept) when that session
    /// ends; use [`build_managed`](Self::build_managed) to follow new sessions.
    ///
    /// Must be called within a tokio runtime (the cache runs on a task of its own).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] for a path that is not absolute or ends with `/`.
    pub fn build(self, client: Client) -> Result<Cache> {
        self.check()?;
        Ok(Cache::start(self.opts, Source::Client(client)).0)
    }

    /// As [`build`](Self::build), also returning a stream subscribed before the cache
    /// starts, so it sees every event from the first load on.
    ///
    /// # Errors
    ///
    /// As [`build`](Self::build).
    pub fn build_with_events(self, client: Client) -> Result<(Cache, CacheEvents)> {
        self.check()?;
        Ok(Cache::start(self.opts, Source::Client(client)))
    }

    /// Starts the cache on `manager`'s sessions: after an expiry it sets its watch on the new
    /// session and resyncs, reporting what changed in between as events.
    ///
    /// # Errors
    ///
    /// As [`build`](Self::build).
    pub fn build_managed(self, manager: &SessionManager) -> Result<Cache> {
        self.check()?;
        Ok(Cache::start(self.opts, Source::Manager(manager.clone())).0)
    }

    /// As [`build_managed`](Self::build_managed) with a stream subscribed before the start.
    ///
    /// # Errors
    ///
    /// As [`build`](Self::build).
    pub fn build_managed_with_events(
        self,
        manager: &SessionManager,
    ) -> Result<(Cache, CacheEvents)> {
        self.check()?;
        Ok(Cache::start(self.opts, Source::Manager(manager.clone())))
    }
}
