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

    /// `world:anyone`: every client (`ZooDefs.Ids.ANYONE_ID_UNSAFE`).
    pub fn anyone() -> Self {
        Self::new("world", "anyone")
    }

    /// The `digest` id of `user` with `password`: `user:base64(sha1("user:password"))`, as
    /// the server computes it for a session that ran `addAuth("digest", "user:password")`
    /// (Java's `DigestAuthenticationProvider.generateDigest`).
    ///
    /// ```
    /// use zk_proto::Id;
    /// let id = Id::digest("bob", "secret");
    /// assert_eq!(id.scheme, "digest");
    /// assert_eq!(id.id, "bob:fyVmFCwVbTJYrznoSu1koqYEYF0=");
    /// ```
    pub fn digest(user: &str, password: &str) -> Self {
        Self::new("digest", digest_id(user, password))
    }

    /// The `sasl` id of an authenticated SASL user (with the `SASLAuthenticationProvider`
    /// on the server): `sasl:user`.
    pub fn sasl(user: impl Into<String>) -> Self {
        Self::new("sasl", user)
    }

    /// The `ip` id of an address or a CIDR block, e.g. `"127.0.0.1"` or `"10.0.0.0/8"`.
    pub fn ip(address: impl Into<String>) -> Self {
        Self::new("ip", address)
    }

    /// The `x509` id of a client certificate's subject, for sessions over mutual TLS (the
    /// server's `X509AuthenticationProvider`, which ZooKeeper uses on its `secureClientPort`
    /// by default): the subject distinguished name as Java prints it
    /// (`X500Principal.getName()`, RFC 2253: most specific attribute first, no spaces after
    /// commas), e.g. `"CN=app1,OU=services,O=Example"`. `openssl x509 -noout -subject
    /// -nameopt RFC2253 -in client.pem` prints it in that form.
    ///
    /// ```
    /// use zk_proto::Id;
    /// let id = Id::x509("CN=app1,O=Example");
    /// assert_eq!((id.scheme.as_str(), id.id.as_str()), ("x509", "CN=app1,O=Example"));
    /// ```
    pub fn x509(subject_dn: impl Into<String>) -> Self {
        Self::new("x509", subject_dn)
    }
}

/// `user:base64(sha1("user:password"))`: the id part of a `digest` ACL entry (see
/// [`Id::digest`]). The password never goes into the ACL, only this hash.
///
/// ```
/// assert_eq!(
///     zk_proto::acl::digest_id("super", "admin"),
///     "super:xQJmxLMiHGwaqBvst5y6rkB6HQs="
/// );
/// ```
pub fn digest_id(user: &str, password: &str) -> String {
    use base64::Engine as _;
    use sha1::{Digest as _, Sha1};
    let mut hash = Sha1::new();
    hash.update(user.as_bytes());
    hash.update(b":");
    hash.update(password.as_bytes());
    let b64 = base64::engine::general_purpose::STANDARD.encode(hash.finalize());
    format!("{user}:{b64}")
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
        static ACL: LazyLock<Vec<Acl>> = LazyLock::new(|| vec![Acl::new(Perms::ALL, Id::anyone())]);
        &ACL
    }

    /// `ZooDefs.Ids.READ_ACL_UNSAFE`: read for `world:anyone`.
    pub fn read_unsafe() -> &'static [Acl] {
        static ACL: LazyLock<Vec<Acl>> =
            LazyLock::new(|| vec![Acl::new(Perms::READ, Id::anyone())]);
        &ACL
    }

    /// `perms` for every client (`world:anyone`).
    pub fn world(perms: i32) -> Self {
        Self::new(perms, Id::anyone())
    }

    /// `perms` for the session authenticated as `user` with `password` through the digest
    /// scheme (`add_auth("digest", b"user:password")`); see [`Id::digest`].
    ///
    /// ```
    /// use zk_proto::acl::{Acl, Perms};
    /// let acl = vec![Acl::digest(Perms::ALL, "bob", "secret"), Acl::world(Perms::READ)];
    /// assert_eq!(acl[0].id.id, "bob:fyVmFCwVbTJYrznoSu1koqYEYF0=");
    /// ```
    pub fn digest(perms: i32, user: &str, password: &str) -> Self {
        Self::new(perms, Id::digest(user, password))
    }

    /// `perms` for the SASL-authenticated `user` (`sasl:user`).
    pub fn sasl(perms: i32, user: impl Into<String>) -> Self {
        Self::new(perms, Id::sasl(user))
    }

    /// `perms` for the clients whose TLS certificate has this subject (`x509:<DN>`, see
    /// [`Id::x509`]).
    pub fn x509(perms: i32, subject_dn: impl Into<String>) -> Self {
        Self::new(perms, Id::x509(subject_dn))
    }

    /// Everything for the session's own identities plus read for everyone (Curator's and
    /// many shops' "private write, public read" preset). Like [`creator_all`](Self::creator_all)
    /// it needs credentials on the session (`InvalidAcl` otherwise).
    pub fn creator_all_world_read() -> &'static [Acl] {
        static ACL: LazyLock<Vec<Acl>> = LazyLock::new(|| {
            vec![
                Acl::new(Perms::ALL, Id::new("auth", "")),
                Acl::new(Perms::READ, Id::anyone()),
            ]
        });
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
