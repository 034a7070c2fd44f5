//! [`WatchedEvent`], what a watcher receives, and the protocol's event and watch kinds.

pub use zk_proto::records::{AddWatchMode, EventType, WatcherType};

/// A change to a watched node.
///
/// `#[non_exhaustive]`: newer servers send more with an event (3.9 adds the zxid of the
/// change), so fields may be added.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WatchedEvent {
    /// What happened.
    pub event_type: EventType,
    /// The node, relative to the client's chroot.
    pub path: String,
}

impl WatchedEvent {
    /// The event with its (server) path made relative to `chroot`.
    pub(crate) fn relative_to(mut self, chroot: &crate::path::Chroot) -> Self {
        self.path = chroot.strip_owned(self.path);
        self
    }
}
