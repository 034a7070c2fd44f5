//! Records of the node operations: create, delete, exists, getData, setData, check, sync.

use bytes::Bytes;

use crate::acl::Acl;
use crate::codec::record;
use crate::stat::Stat;

record! {
    /// `create`, `create2` and `createContainer` request.
    pub struct CreateRequest {
        /// Path of the node to create (the parent must exist).
        pub path: String,
        /// Initial data.
        pub data: Bytes,
        /// ACL of the new node (must not be empty).
        pub acl: Vec<Acl>,
        /// Mode bits, see [`CreateMode`].
        pub flags: i32,
    }
}

record! {
    /// `createTTL` request: a persistent node removed after `ttl` ms without children or
    /// changes (needs `zookeeper.extendedTypesEnabled=true` on the server).
    pub struct CreateTtlRequest {
        /// Path of the node to create.
        pub path: String,
        /// Initial data.
        pub data: Bytes,
        /// ACL of the new node.
        pub acl: Vec<Acl>,
        /// Mode bits, see [`CreateMode`] (a TTL mode).
        pub flags: i32,
        /// Time to live in milliseconds.
        pub ttl: i64,
    }
}

record! {
    /// Reply to `create`: the actual path (with the sequence suffix, if any).
    pub struct CreateResponse {
        /// The path created.
        pub path: String,
    }
}

record! {
    /// Reply to `create2`, `createContainer` and `createTTL`: path and stat.
    pub struct Create2Response {
        /// The path created.
        pub path: String,
        /// The new node's stat.
        pub stat: Stat,
    }
}

record! {
    /// `delete` request; the reply has no body.
    pub struct DeleteRequest {
        /// Node to delete.
        pub path: String,
        /// Expected version, or -1 for any.
        pub version: i32,
    }
}

record! {
    /// ClickHouse Keeper's `RemoveRecursive` request (opcode 503; `ZooKeeperRemoveRecursiveRequest`
    /// in ClickHouse's `src/Common/ZooKeeper/ZooKeeperCommon.cpp`: the path, then the limit);
    /// the reply has no body.
    pub struct RemoveRecursiveRequest {
        /// The subtree's root.
        pub path: String,
        /// The most nodes the server may delete (a `uint32` on the server): a larger subtree
        /// is answered `NotEmpty` and nothing is deleted.
        pub remove_nodes_limit: i32,
    }
}

record! {
    /// `exists` request.
    pub struct ExistsRequest {
        /// Node to look up.
        pub path: String,
        /// Leave a watch (a data watch if the node exists, an exist watch if not).
        pub watch: bool,
    }
}

record! {
    /// Reply to `exists` when the node exists (else the reply is `NoNode` with no body).
    pub struct ExistsResponse {
        /// The node's stat.
        pub stat: Stat,
    }
}

record! {
    /// `getData` request.
    pub struct GetDataRequest {
        /// Node to read.
        pub path: String,
        /// Leave a data watch.
        pub watch: bool,
    }
}

record! {
    /// Reply to `getData` (also to `reconfig`, with the new configuration).
    pub struct GetDataResponse {
        /// The node's data (null reads as empty).
        pub data: Bytes,
        /// The node's stat.
        pub stat: Stat,
    }
}

record! {
    /// `setData` request.
    pub struct SetDataRequest {
        /// Node to write.
        pub path: String,
        /// New data.
        pub data: Bytes,
        /// Expected version, or -1 for any.
        pub version: i32,
    }
}

record! {
    /// Reply to `setData`.
    pub struct SetDataResponse {
        /// The node's new stat.
        pub stat: Stat,
    }
}

record! {
    /// `check` request (multi only): fails unless the node has this version.
    pub struct CheckVersionRequest {
        /// Node to check.
        pub path: String,
        /// Expected version, or -1 for "exists".
        pub version: i32,
    }
}

record! {
    /// `sync` request: the server catches up with the leader before answering.
    pub struct SyncRequest {
        /// Path to sync.
        pub path: String,
    }
}

record! {
    /// Reply to `sync`.
    pub struct SyncResponse {
        /// The path synced.
        pub path: String,
    }
}

/// Node creation modes and their `flags` values (`CreateMode.java`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CreateMode {
    /// A node that lives until deleted.
    Persistent,
    /// A node deleted when the creating session ends.
    Ephemeral,
    /// Persistent, with a monotonically increasing 10-digit suffix.
    PersistentSequential,
    /// Ephemeral, with a sequence suffix: the building block of lock queues.
    EphemeralSequential,
    /// A node the server deletes once its last child is gone.
    Container,
    /// Persistent, deleted after a TTL without changes or children.
    PersistentWithTtl,
    /// Persistent sequential, with a TTL.
    PersistentSequentialWithTtl,
}

impl CreateMode {
    /// The wire `flags` value.
    pub const fn flags(self) -> i32 {
        match self {
            CreateMode::Persistent => 0,
            CreateMode::Ephemeral => 1,
            CreateMode::PersistentSequential => 2,
            CreateMode::EphemeralSequential => 3,
            CreateMode::Container => 4,
            CreateMode::PersistentWithTtl => 5,
            CreateMode::PersistentSequentialWithTtl => 6,
        }
    }

    /// The mode for a wire `flags` value.
    pub const fn from_flags(flags: i32) -> Option<Self> {
        Some(match flags {
            0 => CreateMode::Persistent,
            1 => CreateMode::Ephemeral,
            2 => CreateMode::PersistentSequential,
            3 => CreateMode::EphemeralSequential,
            4 => CreateMode::Container,
            5 => CreateMode::PersistentWithTtl,
            6 => CreateMode::PersistentSequentialWithTtl,
            _ => return None,
        })
    }

    /// Whether the node is ephemeral.
    pub const fn is_ephemeral(self) -> bool {
        matches!(
            self,
            CreateMode::Ephemeral | CreateMode::EphemeralSequential
        )
    }

    /// Whether the server appends a sequence number.
    pub const fn is_sequential(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentSequential
                | CreateMode::EphemeralSequential
                | CreateMode::PersistentSequentialWithTtl
        )
    }

    /// Whether the mode needs a TTL (and the `createTTL` opcode).
    pub const fn is_ttl(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentWithTtl | CreateMode::PersistentSequentialWithTtl
        )
    }

    /// Whether the node is a container (`createContainer` opcode).
    pub const fn is_container(self) -> bool {
        matches!(self, CreateMode::Container)
    }
}
