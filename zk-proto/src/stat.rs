//! Node metadata.

use crate::codec::record;

record! {
    /// A node's metadata (`org.apache.zookeeper.data.Stat`), field names as in `zookeeper.jute`.
    pub struct Stat {
        /// The zxid of the change that created this node.
        pub czxid: i64,
        /// The zxid of the change that last modified this node's data.
        pub mzxid: i64,
        /// Creation time, milliseconds since the epoch.
        pub ctime: i64,
        /// Last modification time, milliseconds since the epoch.
        pub mtime: i64,
        /// Number of changes to the data.
        pub version: i32,
        /// Number of changes to the children.
        pub cversion: i32,
        /// Number of changes to the ACL.
        pub aversion: i32,
        /// Session id of the owner if ephemeral, else 0.
        pub ephemeral_owner: i64,
        /// Length of the data.
        pub data_length: i32,
        /// Number of children.
        pub num_children: i32,
        /// The zxid of the change that last modified the children.
        pub pzxid: i64,
    }
}

/// Encoded size of a [`Stat`].
pub const STAT_LEN: usize = 68;
