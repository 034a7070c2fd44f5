//! What the cache hands out: [`ChildData`] (one node) and [`CacheEvent`] (one change).

use zk_client::{Bytes, Stat};

/// One cached node: its path (relative to the client's chroot), its `Stat` as last read, and
/// its data (Curator's `ChildData`).
///
/// `data` is `None` for a node whose data the cache does not keep
/// ([`CacheBuilder::keep_data`](super::CacheBuilder::keep_data)); events still carry the
/// bytes read for such nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildData {
    /// The node's path, relative to the client's chroot.
    pub path: String,
    /// The node's `Stat` as of its last read. `version`, `czxid`, `mzxid` and `data_length`
    /// follow the data; `cversion`, `num_children` and `pzxid` are as of the last read of
    /// this node and are not refreshed when only its children change (as in Curator).
    pub stat: Stat,
    /// The node's data, when kept.
    pub data: Option<Bytes>,
}

impl ChildData {
    /// The last segment of the path (`"b"` for `/a/b`; `""` for `/`).
    pub fn name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or("")
    }
}

/// A change to the cached subtree, as Curator's `CuratorCacheListener` receives it.
///
/// Events are sent after the snapshot was updated: when a consumer receives an event, the
/// cache's snapshot already includes it (and possibly later changes).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CacheEvent {
    /// A node not in the cache was read (Curator's `NODE_CREATED`): every node of the first
    /// load, nodes created later, and nodes found by a resync.
    Created(ChildData),
    /// A cached node was read again with another `Stat.version` (Curator's `NODE_CHANGED`).
    Changed {
        /// The node as it was cached (its data `None` when not kept).
        old: ChildData,
        /// The node as just read.
        new: ChildData,
    },
    /// A cached node is gone (Curator's `NODE_DELETED`): deleted, or not found by a read.
    /// A node found replaced by another with the same path (another `czxid`, deleted and
    /// re-created while we were disconnected) is reported as `Deleted` then `Created`.
    Deleted(ChildData),
    /// The first load completed (Curator's `initialized()`); sent once per cache.
    Initialized,
    /// This consumer fell behind and `n` events were dropped for it. The snapshot is still
    /// exact: read it again instead of relying on the events missed.
    Lagged(u64),
}

impl CacheEvent {
    /// The path of the node the event is about (`None` for `Initialized` and `Lagged`).
    pub fn path(&self) -> Option<&str> {
        match self {
            CacheEvent::Created(n) | CacheEvent::Deleted(n) => Some(&n.path),
            CacheEvent::Changed { new, .. } => Some(&new.path),
            CacheEvent::Initialized | CacheEvent::Lagged(_) => None,
        }
    }
}
