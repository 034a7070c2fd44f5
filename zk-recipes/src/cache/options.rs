//! The settings of a cache ([`CacheBuilder`](super::CacheBuilder) fills them in).

use std::sync::Arc;

use super::compressed::Inflate;

/// Which nodes keep their data (see [`CacheBuilder::keep_data`](super::CacheBuilder::keep_data)).
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
    /// The compression option: what the cache hands out is decompressed.
    pub(crate) inflate: Option<Arc<Inflate>>,
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("path", &self.path)
            .field("max_depth", &self.max_depth)
            .field("keep_data", &self.keep_data.as_ref().map(|_| "fn"))
            .field("event_buffer", &self.event_buffer)
            .field("window", &self.window)
            .field("inflate", &self.inflate)
            .finish()
    }
}
