//! Access control lists.

use std::sync::LazyLock;

use crate::codec::record;

record! {
    /// An authenticated identity (`org.apache.zookeeper.data.Id`): a scheme and an id in it.
    pub struct Id {
        /// The scheme: `world`, `auth`, `digest`, `ip`, `sasl`, `x509`...
        pub scheme: String,
        /// The id within the scheme (`anyone` for `world`).
        pub id: String,
    }
}

record! {
    /// One ACL entry (`org.apache.zookeeper.data.ACL`): permissions granted to an identity.
    pub struct Acl {
        /// A bit set of [`Perms`] values.
        pub perms: i32,
        /// Who the permissions are for.
        pub id: Id,
    }
}

/// Permission bits (`ZooDefs.Perms`).
#[derive(Debug)]
pub struct Perms;

impl Perms {
    /// Read data and list children.
    pub const READ: i32 = 1;
    /// Set data.
    pub const WRITE: i32 = 1 << 1;
    /// Create children.
    pub const CREATE: i32 = 1 << 2;
    /// Delete children.
    pub const DELETE: i32 = 1 << 3;
    /// Set the ACL.
    pub const ADMIN: i32 = 1 << 4;
    /// All of the above.
    pub const ALL: i32 = Self::READ | Self::WRITE | Self::CREATE | Self::DELETE | Self::ADMIN;
}

impl Id {
    /// An id from a scheme and a name.
    pub fn new(scheme: impl Into<String>, id: impl Into<String>) -> Self {
        Self {
            scheme: scheme.into(),
            id: id.into(),
        }
    }
}

impl Acl {
    /// An ACL entry.
    pub fn new(perms: i32, id: Id) -> Self {
        Self { perms, id }
    }

    /// `ZooDefs.Ids.OPEN_ACL_UNSAFE`: everything for `world:anyone`.
    ///
    /// ```
    /// use zk_proto::acl::{Acl, Perms};
    /// assert_eq!(Acl::open_unsafe()[0].perms, Perms::ALL);
    /// ```
    pub fn open_unsafe() -> &'static [Acl] {
        static ACL: LazyLock<Vec<Acl>> =
            LazyLock::new(|| vec![Acl::new(Perms::ALL, Id::new("world", "anyone"))]);
        &ACL
    }

    /// `ZooDefs.Ids.READ_ACL_UNSAFE`: read for `world:anyone`.
    pub fn read_unsafe() -> &'static [Acl] {
        static ACL: LazyLock<Vec<Acl>> =
            LazyLock::new(|| vec![Acl::new(Perms::READ, Id::new("world", "anyone"))]);
        &ACL
    }

    /// `ZooDefs.Ids.CREATOR_ALL_ACL`: everything for the identities the session authenticated
    /// with (`auth` scheme, empty id).
    pub fn creator_all() -> &'static [Acl] {
        static ACL: LazyLock<Vec<Acl>> =
            LazyLock::new(|| vec![Acl::new(Perms::ALL, Id::new("auth", ""))]);
        &ACL
    }
}
