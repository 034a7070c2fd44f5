//! Authentication records.

use bytes::Bytes;

use crate::codec::record;

record! {
    /// Adds credentials to the session (xid -4, opcode 100). The reply has no body; failure
    /// comes back as `AuthFailed` and the server closes the session.
    pub struct AuthPacket {
        /// Always 0.
        pub auth_type: i32,
        /// The scheme, e.g. `digest`.
        pub scheme: String,
        /// Scheme-specific bytes, e.g. `user:password` for digest.
        pub auth: Bytes,
    }
}

record! {
    /// One identity the session is authenticated as.
    pub struct ClientInfo {
        /// The scheme, e.g. `ip` or `digest`.
        pub auth_scheme: String,
        /// The user within the scheme.
        pub user: String,
    }
}

record! {
    /// Reply to `whoAmI` (opcode 107, no request body).
    pub struct WhoAmIResponse {
        /// The session's identities.
        pub client_info: Vec<ClientInfo>,
    }
}

record! {
    /// A client SASL token (`GetSASLRequest`, opcode 102). The Java client writes these
    /// outside its request queue with xid 0 ([`xid::SASL`](crate::xid::SASL)), before any
    /// other request of the connection, and the server echoes that xid.
    pub struct GetSaslRequest {
        /// The mechanism's token (empty for DIGEST-MD5's first message).
        pub token: Bytes,
    }
}

record! {
    /// The server's SASL token (`SetSASLResponse`) in reply to a [`GetSaslRequest`]. On a
    /// failed authentication the header carries `AuthFailed` and the token is null (empty).
    pub struct SetSaslResponse {
        /// The server's challenge, or its final `rspauth` message.
        pub token: Bytes,
    }
}
