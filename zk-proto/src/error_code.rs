//! Server error codes (`KeeperException.Code` in the 3.8 Java sources).

use crate::codes::open_code_enum;

open_code_enum! {
    /// The `err` field of a `ReplyHeader` (and of multi error results).
    ///
    /// Values are `KeeperException.Code` from ZooKeeper 3.8; unknown codes are kept as
    /// [`ErrorCode::Other`].
    ///
    /// ```
    /// use zk_proto::ErrorCode;
    /// assert_eq!(ErrorCode::from_i32(-101), ErrorCode::NoNode);
    /// assert_eq!(ErrorCode::from_i32(-999), ErrorCode::Other(-999));
    /// assert_eq!(ErrorCode::NodeExists.as_i32(), -110);
    /// ```
    pub enum ErrorCode {
        /// Everything is OK.
        Ok = 0,
        /// A system or server-side error.
        SystemError = -1,
        /// A runtime inconsistency was found.
        RuntimeInconsistency = -2,
        /// A data inconsistency was found.
        DataInconsistency = -3,
        /// Connection to the server has been lost.
        ConnectionLoss = -4,
        /// Error while marshalling or unmarshalling data.
        MarshallingError = -5,
        /// Operation is unimplemented.
        Unimplemented = -6,
        /// Operation timeout.
        OperationTimeout = -7,
        /// Invalid arguments.
        BadArguments = -8,
        /// Unknown session (internal server use).
        UnknownSession = -12,
        /// No quorum of the new config is connected and up to date.
        NewConfigNoQuorum = -13,
        /// Another reconfiguration is in progress.
        ReconfigInProgress = -14,
        /// API errors: the base of the range below.
        ApiError = -100,
        /// Node does not exist.
        NoNode = -101,
        /// Not authenticated.
        NoAuth = -102,
        /// Version conflict.
        BadVersion = -103,
        /// Ephemeral nodes may not have children.
        NoChildrenForEphemerals = -108,
        /// The node already exists.
        NodeExists = -110,
        /// The node has children.
        NotEmpty = -111,
        /// The session has been expired by the server.
        SessionExpired = -112,
        /// Invalid callback specified.
        InvalidCallback = -113,
        /// Invalid ACL specified.
        InvalidAcl = -114,
        /// Client authentication failed.
        AuthFailed = -115,
        /// Session moved to another server, so operation is ignored.
        SessionMoved = -118,
        /// State-changing request is passed to a read-only server.
        NotReadOnly = -119,
        /// Attempt to create an ephemeral node on a local session.
        EphemeralOnLocalSession = -120,
        /// Attempts to remove a non-existing watcher.
        NoWatcher = -121,
        /// Request not completed within max allowed time.
        RequestTimeout = -122,
        /// Attempts to perform a reconfiguration operation when it is disabled.
        ReconfigDisabled = -123,
        /// The session was closed because it requires SASL authentication.
        SessionClosedRequireSaslAuth = -124,
        /// Exceeded the quota that was set on the path.
        QuotaExceeded = -125,
        /// Operation was throttled and not executed at all.
        Throttled = -127,
    }
}

impl ErrorCode {
    /// Whether this is [`ErrorCode::Ok`].
    pub const fn is_ok(self) -> bool {
        self.as_i32() == 0
    }
}
