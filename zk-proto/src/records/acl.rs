//! Records of `getACL` and `setACL`.

use crate::acl::Acl;
use crate::codec::record;
use crate::stat::Stat;

record! {
    /// `getACL` request.
    pub struct GetAclRequest {
        /// Node whose ACL to read.
        pub path: String,
    }
}

record! {
    /// Reply to `getACL`.
    pub struct GetAclResponse {
        /// The ACL.
        pub acl: Vec<Acl>,
        /// The node's stat.
        pub stat: Stat,
    }
}

record! {
    /// `setACL` request.
    pub struct SetAclRequest {
        /// Node whose ACL to replace.
        pub path: String,
        /// The new ACL.
        pub acl: Vec<Acl>,
        /// Expected ACL version (`aversion`), or -1 for any.
        pub version: i32,
    }
}

record! {
    /// Reply to `setACL`.
    pub struct SetAclResponse {
        /// The node's new stat.
        pub stat: Stat,
    }
}
