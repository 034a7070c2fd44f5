//! [`CacheBuilder`]: what a cache mirrors and how.

use std::sync::Arc;

use zk_client::compression::Compression;
use zk_client::{Client, SessionManager};

use super::compressed::Inflate;
use super::events::{CacheEvents, DEFAULT_EVENT_BUFFER};
use super::handle::Cache;
use super::options::Options;
use crate::error::Result;
use crate::session::Source;

/// Default number of reads a cache keeps on the wire while it loads.
pub const DEFAULT_READ_WINDOW: usize = 1024;

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
                inflate: None,
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
    ///
    /// The ring holds 32 bytes per slot (128 KiB by default), made whole when a stream
    /// subscribes and given back once no stream is left: a cache nobody reads events from
    /// does not keep it.
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

    /// Decompresses the nodes' data with `compression` (with
    /// [`Gzip`](zk_client::compression), Curator's `compressed()` format: Curator's
    /// `CuratorCache` on a client with `compressionEnabled`): [`Cache::get`],
    /// [`Cache::children`], [`Cache::entries`], snapshots and events carry the decompressed
    /// data. Each node is decompressed once per change (per `mzxid`), when first handed
    /// out; the snapshot keeps the stored bytes.
    ///
    /// A node whose data does not decompress (corrupt, too large, or not compressed when
    /// the compression does not pass plain data through) is handed out with `data: None`,
    /// and [`Cache::data_error`] says why; the cache and the other nodes go on (Curator
    /// logs the error and leaves the node out).
    ///
    /// ```no_run
    /// # use zk_client::compression::Compression;
    /// # async fn f(client: zk_client::Client, gzip: impl Compression + 'static) -> zk_recipes::Result<()> {
    /// use zk_recipes::cache::Cache;
    /// // gzip: zk_client::compression::Gzip::new() (zk-client's feature `gzip`)
    /// let cache = Cache::builder("/solr/collections").compressed(gzip).build(client)?;
    /// cache.ready().await?;
    /// for node in cache.entries() {
    ///     match node.data {
    ///         Some(json) => println!("{}: {} bytes", node.path, json.len()),
    ///         None => println!("{}: {:?}", node.path, cache.data_error(&node.path)),
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn compressed(mut self, compression: impl Compression + 'static) -> Self {
        self.opts.inflate = Some(Arc::new(Inflate::new(Arc::new(compression))));
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
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) for a path that is not absolute or
    /// ends with `/`.
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

/// How a [`Cache`] is made: [`Cache::builder`] for every setting, [`Cache::new`] and
/// [`Cache::new_managed`] for a whole subtree with data.
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

    /// As [`new`](Self::new), on `manager`'s sessions (shorthand for
    /// `Cache::builder(path).build_managed(manager)`): after an expiry the cache sets its
    /// watch on the new session and resyncs.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) for a malformed path.
    pub fn new_managed(manager: &SessionManager, path: &str) -> crate::Result<Cache> {
        Cache::builder(path).build_managed(manager)
    }
}
