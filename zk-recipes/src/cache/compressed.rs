//! [`Inflate`]: the cache's compression option ([`CacheBuilder::compressed`](super::CacheBuilder::compressed)).
//!
//! The snapshot keeps the bytes as stored; what the cache hands out (nodes, children,
//! entries, events) is decompressed on the way out, each node once per change (by `mzxid`).
//! A node whose data does not decompress is handed out without data (`data: None`) and its
//! error is kept for [`Cache::data_error`](super::Cache::data_error) (and logged once per
//! change): never a panic, never a stopped cache, never the stored bytes passed off as the
//! data.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tracing::warn;
use zk_client::compression::{Compression, CompressionError};
use zk_client::Bytes;

use super::node::{CacheEvent, ChildData};

/// What one node's stored data decompressed to, at one `mzxid`.
type Outcome = (i64, Result<Bytes, CompressionError>);

/// The decompression of a cache's nodes, shared by its handles and event streams.
pub(crate) struct Inflate {
    compression: Arc<dyn Compression>,
    /// The last outcome per path.
    done: Mutex<HashMap<String, Outcome>>,
}

impl std::fmt::Debug for Inflate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inflate")
            .field("compression", &self.compression)
            .finish_non_exhaustive()
    }
}

impl Inflate {
    pub(crate) fn new(compression: Arc<dyn Compression>) -> Inflate {
        Inflate {
            compression,
            done: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Outcome>> {
        self.done.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `node` with its data decompressed (`None` when it does not decompress).
    pub(crate) fn node(&self, mut node: ChildData) -> ChildData {
        let Some(stored) = node.data.take() else {
            return node;
        };
        let mzxid = node.stat.mzxid;
        let known = self
            .lock()
            .get(&node.path)
            .and_then(|(at, outcome)| (*at == mzxid).then(|| outcome.clone()));
        let outcome = match known {
            Some(outcome) => outcome,
            None => {
                let outcome = self.compression.decompress(stored);
                if let Err(e) = &outcome {
                    warn!(path = %node.path, mzxid, error = %e, "cached node does not decompress");
                }
                self.lock()
                    .insert(node.path.clone(), (mzxid, outcome.clone()));
                outcome
            }
        };
        node.data = outcome.ok();
        node
    }

    /// `event` with its nodes' data decompressed.
    pub(crate) fn event(&self, event: CacheEvent) -> CacheEvent {
        match event {
            CacheEvent::Created(node) => CacheEvent::Created(self.node(node)),
            CacheEvent::Changed { old, new } => CacheEvent::Changed {
                // The old data is not what the memo holds (it holds the newest): decompressed
                // as it comes.
                old: self.uncached(old),
                new: self.node(new),
            },
            CacheEvent::Deleted(node) => {
                // Gone from the cache: so from the memo, for an app that only reads events
                // (nothing else prunes it then).
                self.lock().remove(&node.path);
                let node = self.uncached(node);
                CacheEvent::Deleted(node)
            }
            other => other,
        }
    }

    /// `node` decompressed without the memo (data of a version no longer cached).
    fn uncached(&self, mut node: ChildData) -> ChildData {
        node.data = node
            .data
            .take()
            .and_then(|stored| self.compression.decompress(stored).ok());
        node
    }

    /// Why the node at `path`, at `mzxid`, has no data, if it did not decompress.
    pub(crate) fn error(&self, path: &str, mzxid: i64) -> Option<CompressionError> {
        match self.lock().get(path) {
            Some((at, Err(e))) if *at == mzxid => Some(e.clone()),
            _ => None,
        }
    }

    /// Forgets the nodes for which `cached` is false, when the memo holds many more nodes
    /// than the cache (`len`): bounded memory.
    pub(crate) fn prune(&self, len: usize, cached: impl Fn(&str) -> bool) {
        let mut done = self.lock();
        if done.len() > 2 * len + 16 {
            done.retain(|path, _| cached(path));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zk_client::Stat;

    /// A "compression" that reverses the bytes, fails on `bad`, and counts its calls.
    #[derive(Debug, Default)]
    struct Reverse(std::sync::atomic::AtomicUsize);

    impl Compression for Reverse {
        fn compress(&self, data: &[u8]) -> Result<Vec<u8>, CompressionError> {
            Ok(data.iter().rev().copied().collect())
        }

        fn decompress(&self, stored: Bytes) -> Result<Bytes, CompressionError> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if &stored[..] == b"bad" {
                return Err(CompressionError::Corrupt("not reversed".into()));
            }
            Ok(stored.iter().rev().copied().collect::<Vec<_>>().into())
        }
    }

    fn node(path: &str, data: &'static [u8], mzxid: i64) -> ChildData {
        ChildData {
            path: path.to_owned(),
            stat: Stat {
                mzxid,
                ..Stat::default()
            },
            data: Some(Bytes::from_static(data)),
        }
    }

    #[test]
    fn each_change_is_decompressed_once_and_a_bad_node_reported_without_data() {
        let reverse = Arc::new(Reverse::default());
        let inflate = Inflate::new(reverse.clone());
        let calls = || reverse.0.load(std::sync::atomic::Ordering::SeqCst);
        for _ in 0..3 {
            assert_eq!(
                inflate.node(node("/a", b"cba", 1)).data.as_deref(),
                Some(&b"abc"[..])
            );
        }
        assert_eq!(calls(), 1, "once per change");
        assert_eq!(
            inflate.node(node("/a", b"fed", 2)).data.as_deref(),
            Some(&b"def"[..])
        );
        assert_eq!(calls(), 2, "again after a change");
        let bad = inflate.node(node("/b", b"bad", 5));
        assert_eq!(bad.data, None);
        assert!(matches!(
            inflate.error("/b", 5),
            Some(CompressionError::Corrupt(_))
        ));
        assert!(inflate.error("/b", 6).is_none(), "only for that change");
        assert!(inflate.error("/a", 2).is_none());
        // A node without data (not kept) is passed as it is.
        let mut bare = node("/c", b"", 1);
        bare.data = None;
        assert_eq!(inflate.node(bare.clone()), bare);
        // Events: both sides decompressed.
        let changed = inflate.event(CacheEvent::Changed {
            old: node("/a", b"fed", 2),
            new: node("/a", b"ihg", 3),
        });
        let CacheEvent::Changed { old, new } = changed else {
            panic!("{changed:?}")
        };
        assert_eq!(
            (old.data.as_deref(), new.data.as_deref()),
            (Some(&b"def"[..]), Some(&b"ghi"[..]))
        );
        inflate.prune(0, |p| p == "/a");
        assert!(inflate.error("/b", 5).is_some(), "small memos are kept");
    }

    #[test]
    fn a_deleted_node_leaves_the_memo_of_an_app_that_only_reads_events() {
        // Churn of short-lived nodes, followed through events alone (nothing calls `get` or
        // `entries`, which prune): the memo must not keep every path ever seen.
        let inflate = Inflate::new(Arc::new(Reverse::default()));
        for i in 0..1_000 {
            let path = format!("/jobs/j{i:04}");
            let created = inflate.event(CacheEvent::Created(node(&path, b"cba", 1)));
            assert!(
                matches!(created, CacheEvent::Created(n) if n.data.as_deref() == Some(&b"abc"[..]))
            );
            inflate.event(CacheEvent::Deleted(node(&path, b"cba", 1)));
        }
        assert_eq!(inflate.lock().len(), 0);
    }
}
