//! [`ModelCache`]: a typed view over a [`Cache`], each node decoded once per change.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use zk_client::compression::Compression;

use super::codec::{Codec, Format};
use super::node::Versioned;
use crate::cache::{Cache, ChildData};
use crate::error::Result;

/// A decoded node: the `mzxid` it was decoded at, and the value or the decode error.
type Decoded<T> = (i64, Result<Arc<T>>);

/// A [`Cache`] whose nodes read as `T` through a codec (Curator's
/// `CachedModeledFramework`), and, with [`compressed`](Self::compressed), decompressed
/// first (Curator's `CuratorCache` with `COMPRESSED_DATA`: with [`Raw`](super::Raw) as the
/// codec, a decompressing view of the bytes).
///
/// Each node is decoded at most once per change (per `mzxid`) and shared as an `Arc<T>`; a
/// node whose data does not decode is reported as that node's error (also decoded once per
/// change), every time it is read, and never stops the cache or the other nodes.
///
/// ```no_run
/// # async fn f(client: zk_client::Client) -> zk_recipes::Result<()> {
/// use zk_recipes::cache::Cache;
/// use zk_recipes::model::{ModelCache, Raw};
/// let view = ModelCache::new(Cache::new(client, "/app/blobs")?, Raw);
/// view.cache().ready().await?;
/// for (path, value) in view.entries() {
///     match value {
///         Ok(v) => println!("{path}: {} bytes", v.value.len()),
///         Err(e) => println!("{path}: {e}"),
///     }
/// }
/// # Ok(()) }
/// ```
pub struct ModelCache<T, C> {
    cache: Cache,
    format: Format<C>,
    /// Decoded values (or decode errors) by path, with the `mzxid` they were decoded at.
    decoded: Mutex<HashMap<String, Decoded<T>>>,
}

impl<T, C> std::fmt::Debug for ModelCache<T, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelCache")
            .field("path", &self.cache.path())
            .field("compressed", &self.format.compression.is_some())
            .finish_non_exhaustive()
    }
}

impl<T, C: Codec<T>> ModelCache<T, C> {
    /// A typed view of `cache`'s nodes through `codec`.
    pub fn new(cache: Cache, codec: C) -> ModelCache<T, C> {
        ModelCache {
            cache,
            format: Format {
                codec,
                compression: None,
            },
            decoded: Mutex::new(HashMap::new()),
        }
    }

    /// Decompresses each node's data with `compression` before decoding it (with
    /// [`Gzip`](zk_client::compression), Curator's `compressed()` format).
    pub fn compressed(self, compression: impl Compression + 'static) -> ModelCache<T, C> {
        self.compressed_with(Arc::new(compression))
    }

    pub(super) fn compressed_with(mut self, compression: Arc<dyn Compression>) -> Self {
        self.format.compression = Some(compression);
        self.decoded = Mutex::new(HashMap::new());
        self
    }

    /// The cache underneath (its state, readiness, events, `close`).
    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    /// The node at `path` as a `T`, if cached (and its data kept). Never waits for the
    /// network.
    ///
    /// # Errors
    ///
    /// [`Error::Codec`](crate::Error::Codec) when the node's data does not decode; a
    /// compression error (`Client(Compression(..))`).
    pub fn get(&self, path: &str) -> Result<Option<Versioned<Arc<T>>>> {
        match self.cache.get(path) {
            Some(node) => self.decode(&node),
            None => Ok(None),
        }
    }

    /// Every cached node as a `T` (parents before children), each with its own outcome;
    /// nodes whose data is not kept are left out.
    pub fn entries(&self) -> Vec<(String, Result<Versioned<Arc<T>>>)> {
        self.collect(self.cache.entries())
    }

    /// The cached direct children of `path` as `T`s, in name order, each with its own
    /// outcome.
    pub fn children(&self, path: &str) -> Vec<(String, Result<Versioned<Arc<T>>>)> {
        self.collect(self.cache.children(path))
    }

    /// Decodes a node as the cache gave it (from [`Cache::get`] or an event), once per
    /// change: `None` when its data is not kept.
    ///
    /// # Errors
    ///
    /// As [`get`](Self::get).
    pub fn decode(&self, node: &ChildData) -> Result<Option<Versioned<Arc<T>>>> {
        let Some(data) = node.data.clone() else {
            return Ok(None);
        };
        let mzxid = node.stat.mzxid;
        let known = self
            .lock()
            .get(&node.path)
            .and_then(|(at, value)| (*at == mzxid).then(|| value.clone()));
        let value = match known {
            Some(value) => value?,
            None => {
                let value = self.format.decode(&node.path, data).map(Arc::new);
                let mut decoded = self.lock();
                // Forget what the cache no longer holds, now and then (bounded memory).
                if decoded.len() > 2 * self.cache.len() + 16 {
                    decoded.retain(|path, _| self.cache.get(path).is_some());
                }
                decoded.insert(node.path.clone(), (mzxid, value.clone()));
                value?
            }
        };
        Ok(Some(Versioned {
            value,
            stat: node.stat.clone(),
        }))
    }

    fn collect(&self, nodes: Vec<ChildData>) -> Vec<(String, Result<Versioned<Arc<T>>>)> {
        nodes
            .into_iter()
            .filter_map(|node| match self.decode(&node) {
                Ok(Some(v)) => Some((node.path, Ok(v))),
                Ok(None) => None,
                Err(e) => Some((node.path, Err(e))),
            })
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Decoded<T>>> {
        self.decoded.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
