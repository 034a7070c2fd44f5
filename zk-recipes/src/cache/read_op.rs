//! What one read of the cache is: its kind, why it was made, and its reply (sent one to a
//! request by `reads.rs`, or several to a `multiRead` by `batch.rs`).

use zk_client::{Bytes, Stat};

use super::one_shot::WatchKind;

/// What to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `getData` (no watch).
    Data,
    /// `getChildren` (no watch).
    Children,
    /// `exists` (one-shot mode only: the root while it is missing).
    Exists,
}

impl Kind {
    /// The one-shot watch a read of this kind leaves.
    pub(crate) fn watch_kind(self) -> WatchKind {
        match self {
            Kind::Data => WatchKind::Data,
            Kind::Children => WatchKind::Children,
            Kind::Exists => WatchKind::Exists,
        }
    }
}

/// One read, and why it was made.
#[derive(Debug, Clone)]
pub(crate) struct Op {
    pub(crate) kind: Kind,
    pub(crate) path: String,
    /// The resync pass current when the read was queued.
    pub(crate) pass: u32,
    /// Part of a pass's walk of the tree (its replies lead to more reads); otherwise a
    /// refresh asked by a watch event.
    pub(crate) walk: bool,
    /// For a refresh asked by an event that carried a zxid (ZooKeeper 3.9+): that zxid. The
    /// refresh is not sent when the cached node already shows it (`zxid.rs`).
    pub(crate) after: Option<i64>,
    /// Sent in a request of its own, never batched (its batch's reply was too large).
    pub(crate) alone: bool,
}

/// A reply.
#[derive(Debug)]
pub(crate) enum Reply {
    Data(zk_client::Result<(Bytes, Stat)>),
    Children(zk_client::Result<Vec<String>>),
    Exists(zk_client::Result<Option<Stat>>),
}
