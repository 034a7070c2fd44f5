//! The client's error type.
//!
//! ZooKeeper outcomes are a closed set fixed by the protocol, and callers (locks, leader
//! election) branch on `NodeExists`/`NoNode` all the time, so [`Error`] is a flat enum rather
//! than an opaque struct. It is `Clone` because one socket failure answers many pending
//! requests, which is also why `io::Error` sits behind an `Arc`.

use std::io;
use std::sync::Arc;

use zk_proto::{DecodeError, ErrorCode, OpCode};

/// `Result` with the client's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything a ZooKeeper call can fail with.
///
/// Node outcomes (`NoNode`, `NodeExists`, ...) are the server's answer to a request that
/// reached it. Session outcomes (`ConnectionLoss`, `SessionExpired`, ...) describe the
/// connection or the session. Every other server code is [`Error::Server`].
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The node does not exist.
    #[error("node does not exist")]
    NoNode,
    /// The node already exists.
    #[error("node already exists")]
    NodeExists,
    /// The expected version does not match the node's version.
    #[error("version conflict")]
    BadVersion,
    /// The node has children and cannot be deleted.
    #[error("node has children")]
    NotEmpty,
    /// Ephemeral nodes cannot have children.
    #[error("ephemeral nodes may not have children")]
    NoChildrenForEphemerals,
    /// The session lacks the permission the node's ACL requires.
    #[error("not authorized")]
    NoAuth,
    /// The ACL is invalid (empty, or an `auth` ACL without credentials).
    #[error("invalid acl")]
    InvalidAcl,
    /// The connection to the server was lost before the reply arrived.
    ///
    /// The operation may or may not have been applied. It is never retried by the client.
    #[error("connection lost: the operation may or may not have been applied")]
    ConnectionLoss,
    /// The session expired; it is terminal and every later call fails with this error.
    #[error("session expired")]
    SessionExpired,
    /// The server rejected the session's credentials; the session is terminal.
    #[error("authentication failed")]
    AuthFailed,
    /// The client was closed.
    #[error("client closed")]
    Closed,
    /// A local bound elapsed: the first connect, or a call the server did not answer within
    /// the [`request_timeout`](crate::ClientBuilder::request_timeout). The operation may or
    /// may not have been applied.
    #[error("timed out")]
    Timeout,
    /// A request is larger than the server accepts (its `jute.maxbuffer`; see
    /// [`ClientBuilder::max_request_len`](crate::ClientBuilder::max_request_len)). Nothing was
    /// sent: the server would have dropped the connection, failing other calls too.
    #[error("request of {len} bytes is larger than the server accepts ({max} bytes)")]
    RequestTooLarge {
        /// The request's length on the wire (header and body, without the length prefix).
        len: usize,
        /// The configured limit.
        max: usize,
    },
    /// The reply to this call was longer than the client reads
    /// ([`ClientBuilder::max_frame_len`](crate::ClientBuilder::max_frame_len)): a `getData` of
    /// a node larger than that, a child listing or a `multiRead` reply over it. The reply was
    /// passed over as it arrived, without being buffered, and the connection and every other
    /// call carry on. The call itself may have been applied (a read was read; watches are
    /// never left by such a call: one that set a watch drops the connection instead, see
    /// the builder). Not [retryable](Error::is_retryable): the same read gets the same
    /// reply; raise the limit or read less (fewer ops in a `multi_read`).
    #[error("reply of {len} bytes is longer than the client reads ({max} bytes)")]
    ReplyTooLarge {
        /// The reply's declared length (after its length prefix).
        len: usize,
        /// The configured limit.
        max: usize,
    },
    /// The server drops the connection whenever it receives this request, so it was refused
    /// locally and nothing was sent.
    ///
    /// The client concluded this after the same request (same opcode, same server path, a
    /// size within the same power of two) was in flight, written less than a second before,
    /// at two connection losses in a row, each an orderly close by the server (those two
    /// calls failed with `ConnectionLoss`). A
    /// server does this to a request it does not accept: one above its `jute.maxbuffer`
    /// (ZooKeeper), an opcode it does not know (ClickHouse Keeper). Sending it again would
    /// only cut the connection again, failing every other call in flight and, on servers that
    /// do not resume sessions, costing a session each time.
    ///
    /// Identical requests fail with this error for the quarantine
    /// ([`ClientBuilder::poison_quarantine`](crate::ClientBuilder::poison_quarantine), 60 s
    /// unless set; `retry_after` is what is left of it); the first one after it is sent
    /// again, and one more drop quarantines it again at once. Not
    /// [retryable](Error::is_retryable): fix the request (its size, the server's limit) or
    /// the server.
    #[error(
        "the server drops the connection on {op:?} requests{}: refused locally for {retry_after:?}",
        path.as_deref().map(|p| format!(" for {p}")).unwrap_or_default()
    )]
    ServerDropsRequest {
        /// The request's opcode.
        op: OpCode,
        /// Its path as sent to the server (with the chroot), when the request has one.
        path: Option<String>,
        /// How long identical requests are still refused.
        retry_after: std::time::Duration,
    },
    /// A [`PersistentWatcher`](crate::PersistentWatcher) was not read fast enough: `missed`
    /// events were dropped at this point of the stream (its buffer is bounded, see
    /// [`ClientBuilder::watch_buffer`](crate::ClientBuilder::watch_buffer)). Not terminal:
    /// later events follow. Re-read the state you follow, as after any gap.
    #[error("watcher lagged: {missed} events dropped")]
    Lagged {
        /// How many events were dropped.
        missed: u64,
    },
    /// The server's reply decodes but does not answer the request (for example a `multi`
    /// reply with another number of results than ops). The call failed; the session goes on.
    #[error("unexpected reply: {0}")]
    UnexpectedReply(&'static str),
    /// A multi (transaction) failed: the op at `index` failed with `code` and nothing was
    /// applied.
    #[error("multi op {index} failed: {code:?}")]
    Multi {
        /// Index of the first failing op in the request.
        index: usize,
        /// The error of that op.
        code: ErrorCode,
    },
    /// The server does not implement `0` (see [`ServerProfile`](crate::ServerProfile)).
    ///
    /// Either the client's profile of the server lacks the feature, and the call failed
    /// locally (nothing was sent: ClickHouse Keeper would have closed the connection and
    /// ended the session, ZooKeeper would have closed the connection), or the server answered
    /// `UNIMPLEMENTED` (for example a TTL node on a ZooKeeper without
    /// `zookeeper.extendedTypesEnabled`), after which the client's profile lacks it and later
    /// calls fail locally. Not retryable: the session is unaffected.
    #[error("the server does not implement {0}")]
    Unimplemented(crate::Feature),
    /// Any other error code the server answered with.
    #[error("server error {0:?}")]
    Server(ErrorCode),
    /// A path was rejected before anything was sent.
    #[error("invalid path {path:?}: {reason}")]
    InvalidPath {
        /// The path as given.
        path: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// An argument was rejected before anything was sent (e.g. a TTL with a non-TTL mode).
    #[error("invalid argument: {0}")]
    InvalidArgument(&'static str),
    /// TLS failed (feature `tls`): the options could not be loaded (an unreadable CA file, a
    /// bad key), or every host failed the TLS handshake while [`connect`](crate::ClientBuilder::connect)
    /// established the first session: a server certificate the client does not trust, a
    /// name that does not match, a client certificate the server rejected. Carries rustls's
    /// message (e.g. `invalid peer certificate: UnknownIssuer`).
    #[error("TLS: {0}")]
    Tls(String),
    /// A transport error. Reserved: connection problems currently reach callers as
    /// `ConnectionLoss` (calls) or `Timeout` (the first connect).
    #[error("io error: {0}")]
    Io(Arc<io::Error>),
    /// The server sent bytes that do not decode as the expected record.
    #[error("protocol error: {0}")]
    Protocol(#[from] DecodeError),
    /// Node data could not be compressed or decompressed (the
    /// [`compression`](crate::compression) helpers): corrupt data, or more than the bound.
    /// The call itself succeeded on the server (a read) or sent nothing (a write).
    #[error("compression: {0}")]
    Compression(#[from] crate::compression::CompressionError),
}

impl Error {
    /// Whether this is [`Error::ConnectionLoss`].
    pub fn is_connection_loss(&self) -> bool {
        matches!(self, Error::ConnectionLoss)
    }

    /// Whether the same call may succeed if tried again on the same session.
    ///
    /// True for `ConnectionLoss`, `Timeout` and the server's `Throttled`/`RequestTimeout`.
    /// A non-idempotent operation that failed with `ConnectionLoss` may have been applied:
    /// check its effect before retrying (ZOOKEEPER-22).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Error::ConnectionLoss
                | Error::Timeout
                | Error::Server(ErrorCode::Throttled)
                | Error::Server(ErrorCode::RequestTimeout)
        )
    }

    /// Whether the session is over (expired, closed, or authentication failed).
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            Error::SessionExpired | Error::Closed | Error::AuthFailed
        )
    }

    /// The ZooKeeper error code this error corresponds to, if any.
    ///
    /// ```
    /// use zk_client::{Error, ErrorCode};
    /// assert_eq!(Error::NoNode.code(), Some(ErrorCode::NoNode));
    /// assert_eq!(Error::Closed.code(), None);
    /// ```
    pub fn code(&self) -> Option<ErrorCode> {
        Some(match self {
            Error::NoNode => ErrorCode::NoNode,
            Error::NodeExists => ErrorCode::NodeExists,
            Error::BadVersion => ErrorCode::BadVersion,
            Error::NotEmpty => ErrorCode::NotEmpty,
            Error::NoChildrenForEphemerals => ErrorCode::NoChildrenForEphemerals,
            Error::NoAuth => ErrorCode::NoAuth,
            Error::InvalidAcl => ErrorCode::InvalidAcl,
            Error::ConnectionLoss => ErrorCode::ConnectionLoss,
            Error::SessionExpired => ErrorCode::SessionExpired,
            Error::AuthFailed => ErrorCode::AuthFailed,
            Error::Multi { code, .. } => *code,
            Error::Unimplemented(_) => ErrorCode::Unimplemented,
            Error::Server(code) => *code,
            _ => return None,
        })
    }
}

impl From<ErrorCode> for Error {
    fn from(code: ErrorCode) -> Self {
        match code {
            ErrorCode::NoNode => Error::NoNode,
            ErrorCode::NodeExists => Error::NodeExists,
            ErrorCode::BadVersion => Error::BadVersion,
            ErrorCode::NotEmpty => Error::NotEmpty,
            ErrorCode::NoChildrenForEphemerals => Error::NoChildrenForEphemerals,
            ErrorCode::NoAuth => Error::NoAuth,
            ErrorCode::InvalidAcl => Error::InvalidAcl,
            ErrorCode::ConnectionLoss => Error::ConnectionLoss,
            ErrorCode::SessionExpired => Error::SessionExpired,
            ErrorCode::AuthFailed => Error::AuthFailed,
            other => Error::Server(other),
        }
    }
}

const _: fn() = || {
    fn assert_traits<T: Send + Sync + Clone + 'static>() {}
    assert_traits::<Error>();
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_map_both_ways() {
        for code in ErrorCode::KNOWN.iter().copied().filter(|c| !c.is_ok()) {
            assert_eq!(Error::from(code).code(), Some(code), "{code:?}");
        }
        assert!(matches!(
            Error::from(ErrorCode::Other(-999)),
            Error::Server(ErrorCode::Other(-999))
        ));
    }

    #[test]
    fn predicates() {
        assert!(Error::ConnectionLoss.is_connection_loss());
        assert!(Error::ConnectionLoss.is_retryable());
        assert!(!Error::NodeExists.is_retryable());
        assert!(Error::SessionExpired.is_terminal());
        assert_eq!(
            Error::ConnectionLoss.to_string(),
            "connection lost: the operation may or may not have been applied"
        );
    }
}
