//! [`CreateOptions`]: mode, ACL and TTL of a node to create.

use std::time::Duration;

use zk_proto::records::CreateMode;
use zk_proto::Acl;

/// How to create a node: its [`CreateMode`], ACL and TTL.
///
/// Made by the constructors and `with_*` methods below (`#[non_exhaustive]`: options may be
/// added); the fields can be read and set.
///
/// ```
/// use std::time::Duration;
/// use zk_client::{Acl, CreateMode, CreateOptions};
///
/// let lock = CreateOptions::ephemeral_sequential();
/// assert_eq!(lock.mode, CreateMode::EphemeralSequential);
/// assert_eq!(lock.acl, Acl::open_unsafe());
///
/// let cache = CreateOptions::new(CreateMode::PersistentWithTtl).with_ttl(Duration::from_secs(60));
/// let private = CreateOptions::persistent().with_acl(Acl::creator_all().to_vec());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CreateOptions {
    /// Persistent, ephemeral, sequential, container or TTL.
    pub mode: CreateMode,
    /// The node's ACL; must not be empty.
    pub acl: Vec<Acl>,
    /// Time to live, only for the TTL modes (the server needs
    /// `zookeeper.extendedTypesEnabled=true`).
    pub ttl: Option<Duration>,
    /// For [`Client::create_all`](crate::Client::create_all): create missing parents as
    /// containers (deleted by the server once empty) rather than persistent nodes.
    pub container_parents: bool,
}

impl CreateOptions {
    /// Options for `mode` with the open ACL (`world:anyone`, all permissions), no TTL.
    pub fn new(mode: CreateMode) -> Self {
        Self {
            mode,
            acl: Acl::open_unsafe().to_vec(),
            ttl: None,
            container_parents: false,
        }
    }

    /// A persistent node with the open ACL.
    pub fn persistent() -> Self {
        Self::new(CreateMode::Persistent)
    }

    /// An ephemeral node (deleted when the session ends) with the open ACL.
    pub fn ephemeral() -> Self {
        Self::new(CreateMode::Ephemeral)
    }

    /// A persistent node with a sequence suffix, open ACL.
    pub fn persistent_sequential() -> Self {
        Self::new(CreateMode::PersistentSequential)
    }

    /// An ephemeral node with a sequence suffix, open ACL: the lock-queue building block.
    pub fn ephemeral_sequential() -> Self {
        Self::new(CreateMode::EphemeralSequential)
    }

    /// A container node (removed by the server once its last child is gone).
    pub fn container() -> Self {
        Self::new(CreateMode::Container)
    }

    /// Replaces the ACL.
    pub fn with_acl(mut self, acl: Vec<Acl>) -> Self {
        self.acl = acl;
        self
    }

    /// Sets the TTL (for the TTL modes).
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// Makes [`Client::create_all`](crate::Client::create_all) create missing parents as
    /// containers.
    pub fn with_container_parents(mut self, yes: bool) -> Self {
        self.container_parents = yes;
        self
    }
}

impl Default for CreateOptions {
    fn default() -> Self {
        Self::persistent()
    }
}
