//! Views for the common cases: [`NodeCache`] (one node) and [`ChildrenCache`] (the direct
//! children of a node). Both are a [`Cache`] with a depth limit.

use zk_client::{Client, SessionManager, Transitions};

use super::events::{CacheEvents, Filter};
use super::handle::Cache;
use super::node::ChildData;
use super::shared::CacheState;
use crate::error::Result;

/// One node's data and `Stat`, kept current (Curator's `NodeCache`, kazoo's `DataWatch`).
///
/// A [`Cache`] of depth 0: one non-recursive persistent watch on the node, which need not
/// exist. Its events are `Created`, `Changed` and `Deleted` of that node, and `Initialized`.
///
/// ```no_run
/// # async fn f(client: zk_client::Client) -> zk_recipes::Result<()> {
/// use zk_recipes::cache::NodeCache;
/// let node = NodeCache::new(client, "/config/feature-x")?;
/// node.ready().await?;
/// let enabled = node.get().and_then(|n| n.data).is_some_and(|d| &d[..] == b"on");
/// # let _ = enabled; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct NodeCache {
    cache: Cache,
}

impl NodeCache {
    /// Follows the node at `path` on `client`'s session.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) for a malformed path.
    pub fn new(client: Client, path: &str) -> Result<NodeCache> {
        let cache = Cache::builder(path).max_depth(0).build(client)?;
        Ok(NodeCache { cache })
    }

    /// Follows the node at `path` on `manager`'s sessions.
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new).
    pub fn new_managed(manager: &SessionManager, path: &str) -> Result<NodeCache> {
        let cache = Cache::builder(path).max_depth(0).build_managed(manager)?;
        Ok(NodeCache { cache })
    }

    /// The node, if it exists (as far as the cache knows).
    pub fn get(&self) -> Option<ChildData> {
        self.cache.get(self.cache.path())
    }

    /// The node's events from now on.
    pub fn events(&self) -> CacheEvents {
        self.cache.events()
    }

    /// Waits until the node was read once. See [`Cache::ready`].
    ///
    /// # Errors
    ///
    /// As [`Cache::ready`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub async fn ready(&self) -> Result<()> {
        self.cache.ready().await
    }

    /// [`ready`](Self::ready) within `timeout`. See [`Cache::ready_timeout`].
    ///
    /// # Errors
    ///
    /// As [`Cache::ready_timeout`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub async fn ready_timeout(&self, timeout: std::time::Duration) -> Result<()> {
        self.cache.ready_timeout(timeout).await
    }

    /// Where the view stands with its server.
    pub fn state(&self) -> CacheState {
        self.cache.state()
    }

    /// Follows the view's state. See [`Cache::watch`].
    pub fn watch(&self) -> Transitions<CacheState> {
        self.cache.watch()
    }

    /// The underlying cache.
    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    /// Stops following the node. See [`Cache::close`].
    ///
    /// # Errors
    ///
    /// As [`Cache::close`].
    ///
    /// # Cancel safety
    ///
    /// As [`Cache::close`].
    pub async fn close(&self) -> Result<()> {
        self.cache.close().await
    }
}

/// The direct children of a node, with their data, kept current (Curator's
/// `PathChildrenCache`, kazoo's `ChildrenWatch`).
///
/// A [`Cache`] of depth 1 on one recursive watch (deeper events are ignored). Its events
/// are those of the children (`Created` for a child added, `Changed`, `Deleted`) and
/// `Initialized`; the parent's own events are not passed on.
///
/// ```no_run
/// # async fn f(client: zk_client::Client) -> zk_recipes::Result<()> {
/// use zk_recipes::cache::ChildrenCache;
/// let members = ChildrenCache::new(client, "/group")?;
/// members.ready().await?;
/// for name in members.names() {
///     println!("member {name}");
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ChildrenCache {
    cache: Cache,
}

impl ChildrenCache {
    /// Follows the children of `path` on `client`'s session.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) for a malformed path.
    pub fn new(client: Client, path: &str) -> Result<ChildrenCache> {
        let cache = Cache::builder(path).max_depth(1).build(client)?;
        Ok(ChildrenCache { cache })
    }

    /// Follows the children of `path` on `manager`'s sessions.
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new).
    pub fn new_managed(manager: &SessionManager, path: &str) -> Result<ChildrenCache> {
        let cache = Cache::builder(path).max_depth(1).build_managed(manager)?;
        Ok(ChildrenCache { cache })
    }

    /// The children, in name order.
    pub fn children(&self) -> Vec<ChildData> {
        self.cache.children(self.cache.path())
    }

    /// The children's names, in order.
    pub fn names(&self) -> Vec<String> {
        self.children()
            .into_iter()
            .map(|c| c.name().to_owned())
            .collect()
    }

    /// The child called `name`.
    pub fn get(&self, name: &str) -> Option<ChildData> {
        self.cache.get(&crate::path::join(self.cache.path(), name))
    }

    /// The parent node itself, if it exists.
    pub fn parent(&self) -> Option<ChildData> {
        self.cache.get(self.cache.path())
    }

    /// The children's events from now on (the parent's are left out).
    pub fn events(&self) -> CacheEvents {
        self.cache
            .subscribe(Filter::Except(self.cache.path().to_owned()))
    }

    /// Waits until the children were loaded once. See [`Cache::ready`].
    ///
    /// # Errors
    ///
    /// As [`Cache::ready`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub async fn ready(&self) -> Result<()> {
        self.cache.ready().await
    }

    /// [`ready`](Self::ready) within `timeout`. See [`Cache::ready_timeout`].
    ///
    /// # Errors
    ///
    /// As [`Cache::ready_timeout`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub async fn ready_timeout(&self, timeout: std::time::Duration) -> Result<()> {
        self.cache.ready_timeout(timeout).await
    }

    /// Where the view stands with its server.
    pub fn state(&self) -> CacheState {
        self.cache.state()
    }

    /// Follows the view's state. See [`Cache::watch`].
    pub fn watch(&self) -> Transitions<CacheState> {
        self.cache.watch()
    }

    /// The underlying cache.
    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    /// Stops following the children. See [`Cache::close`].
    ///
    /// # Errors
    ///
    /// As [`Cache::close`].
    ///
    /// # Cancel safety
    ///
    /// As [`Cache::close`].
    pub async fn close(&self) -> Result<()> {
        self.cache.close().await
    }
}
