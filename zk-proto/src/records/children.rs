//! Records that list children: getChildren, getChildren2, getAllChildrenNumber, getEphemerals.

use crate::codec::record;
use crate::stat::Stat;

record! {
    /// `getChildren` request.
    pub struct GetChildrenRequest {
        /// Parent node.
        pub path: String,
        /// Leave a child watch.
        pub watch: bool,
    }
}

record! {
    /// Reply to `getChildren`.
    pub struct GetChildrenResponse {
        /// Child names (not paths), in no particular order.
        pub children: Vec<String>,
    }
}

record! {
    /// `getChildren2` request (children and the parent's stat).
    pub struct GetChildren2Request {
        /// Parent node.
        pub path: String,
        /// Leave a child watch.
        pub watch: bool,
    }
}

record! {
    /// Reply to `getChildren2`.
    pub struct GetChildren2Response {
        /// Child names, in no particular order.
        pub children: Vec<String>,
        /// The parent's stat.
        pub stat: Stat,
    }
}

record! {
    /// `getAllChildrenNumber` request: the number of descendants of a node.
    pub struct GetAllChildrenNumberRequest {
        /// Root of the subtree.
        pub path: String,
    }
}

record! {
    /// Reply to `getAllChildrenNumber`.
    pub struct GetAllChildrenNumberResponse {
        /// Number of descendants (not counting the node itself).
        pub total_number: i32,
    }
}

record! {
    /// `getEphemerals` request: the session's ephemeral nodes under a prefix.
    pub struct GetEphemeralsRequest {
        /// Path prefix (`/` for all).
        pub prefix_path: String,
    }
}

record! {
    /// Reply to `getEphemerals`.
    pub struct GetEphemeralsResponse {
        /// Full paths of the session's ephemeral nodes.
        pub ephemerals: Vec<String>,
    }
}
