//! What a [`PersistentNode`](super::PersistentNode)'s handle and its task share: the
//! options, the events, the published status and the commands. Imports nothing of `node`.

use std::sync::Mutex;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{broadcast, oneshot, watch};
use zk_client::{Acl, CreateMode};

use crate::error::{Error, Result};

/// How a [`PersistentNode`](super::PersistentNode) creates its node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeOptions {
    /// The node's mode. A sequential mode applies to the first create only: re-creates use
    /// the name the server gave (Curator does the same).
    pub mode: CreateMode,
    /// Put Curator's `_c_<uuid>-` prefix before the name, so that a create whose reply was
    /// lost is found by its guid instead of being made twice. Needed to recover a persistent
    /// sequential node after a lost reply (an ephemeral sequential one is found by its name's
    /// prefix and our session).
    pub protected: bool,
    /// Time to live, for the TTL modes: the node is touched (its data written again) every
    /// half TTL so the server never reaps it while the handle lives.
    pub ttl: Option<Duration>,
    /// The node's ACL.
    pub acl: Vec<Acl>,
}

impl NodeOptions {
    /// Options for `mode`, not protected, open ACL.
    pub fn new(mode: CreateMode) -> NodeOptions {
        NodeOptions {
            mode,
            protected: false,
            ttl: None,
            acl: Acl::open_unsafe().to_vec(),
        }
    }

    /// An ephemeral node (Curator's `PersistentEphemeralNode`, GroupMember's mode).
    pub fn ephemeral() -> NodeOptions {
        NodeOptions::new(CreateMode::Ephemeral)
    }

    /// A persistent node that is re-created when deleted.
    pub fn persistent() -> NodeOptions {
        NodeOptions::new(CreateMode::Persistent)
    }

    /// A persistent node with a time to live (`PERSISTENT_WITH_TTL`), touched every `ttl / 2`
    /// while the handle lives. The server needs `zookeeper.extendedTypesEnabled=true`.
    pub fn ttl(ttl: Duration) -> NodeOptions {
        NodeOptions::new(CreateMode::PersistentWithTtl).with_ttl(ttl)
    }

    /// Sets [`protected`](Self::protected).
    pub fn protected(mut self, yes: bool) -> NodeOptions {
        self.protected = yes;
        self
    }

    /// Sets the TTL.
    pub fn with_ttl(mut self, ttl: Duration) -> NodeOptions {
        self.ttl = Some(ttl);
        self
    }

    /// Replaces the ACL.
    pub fn with_acl(mut self, acl: Vec<Acl>) -> NodeOptions {
        self.acl = acl;
        self
    }
}

/// What happened to a [`PersistentNode`](super::PersistentNode)'s node, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NodeEvent {
    /// The node was first created (or an existing node of ours was taken over), at `path`.
    Created {
        /// The node's full path (with its protected prefix and sequence suffix, if any).
        path: String,
    },
    /// The node was created again after it went (deleted by someone, or its session ended).
    Recreated {
        /// The node's full path.
        path: String,
    },
    /// The node was seen gone: deleted by someone, or taken with an ended session.
    Deleted {
        /// The node's full path.
        path: String,
    },
    /// The node's data changed: written by [`PersistentNode::set_data`](super::PersistentNode::set_data), or by someone else
    /// (which is kept: like Curator, the node does not overwrite others' edits until it
    /// re-creates the node).
    DataChanged {
        /// The node's full path.
        path: String,
        /// The data now in the node.
        data: Bytes,
    },
    /// This consumer fell behind and `n` events were dropped for it (as
    /// [`CacheEvent::Lagged`](crate::cache::CacheEvent::Lagged)); read
    /// [`PersistentNode::path`](super::PersistentNode::path) and [`PersistentNode::data`](super::PersistentNode::data) for the current state.
    Lagged(u64),
}

/// What the node's task publishes.
#[derive(Debug, Clone, Default)]
pub(crate) struct Status {
    /// The node's path while it is known to be present.
    pub(crate) path: Option<String>,
    /// Why the node stopped for good (closed, manager ended, an error such as `NoAuth`).
    pub(crate) ended: Option<Error>,
    /// Why the node is not there while it keeps trying (its session ended, the server
    /// drops the connection on its create); cleared once it is there.
    pub(crate) failing: Option<Error>,
}

/// A request from the handle to the task.
#[derive(Debug)]
pub(crate) enum Command {
    SetData(Bytes, oneshot::Sender<Result<()>>),
}

/// What the handle and the task share.
#[derive(Debug)]
pub(crate) struct Shared {
    /// The path as given (before protection and sequence).
    pub(crate) base: String,
    pub(crate) options: NodeOptions,
    /// The data the node should hold (what every create writes).
    pub(crate) data: Mutex<Bytes>,
    pub(crate) status: watch::Sender<Status>,
    pub(crate) events: broadcast::Sender<NodeEvent>,
    /// Leave the node in place on close (a `PersistentTtlNode`'s container parent).
    pub(crate) keep_on_close: std::sync::atomic::AtomicBool,
}

impl Shared {
    pub(crate) fn data(&self) -> Bytes {
        self.data.lock().map(|d| d.clone()).unwrap_or_default()
    }

    pub(crate) fn emit(&self, event: NodeEvent) {
        // No receiver is fine: nobody is listening.
        let _ = self.events.send(event);
    }
}

/// How many events a slow [`PersistentNode::events`](super::PersistentNode::events) receiver may fall behind.
pub(crate) const EVENT_BUFFER: usize = 256;
