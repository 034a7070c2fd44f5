//! Errors of the recipes.

use thiserror::Error;

/// Why a lock is, or may be, no longer held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LossReason {
    /// The session expired or was closed: every ephemeral node of it is gone.
    SessionEnded,
    /// The lock node was deleted (by an operator, or a revocation).
    NodeDeleted,
    /// We released the lock: the final [`LockState`](crate::lock::LockState) a state receiver
    /// that outlives its guard reports. Never an error's reason.
    Released,
}

impl std::fmt::Display for LossReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LossReason::SessionEnded => "the session ended",
            LossReason::NodeDeleted => "the lock node was deleted",
            LossReason::Released => "the lock was released",
        })
    }
}

/// An error of a recipe.
#[derive(Debug, Clone, Error)]
#[non_exhaustive]
pub enum Error {
    /// A ZooKeeper operation failed. Never the client's `InvalidPath`: a path the client
    /// refuses comes as [`Error::InvalidPath`], as one the recipe refuses does.
    #[error(transparent)]
    Client(zk_client::Error),
    /// A wait with a limit ran out: an acquisition (`acquire_timeout`), a wait until
    /// ready (`ready_timeout`), a barrier. Nothing of ours is left behind (an acquisition's
    /// queue node, a barrier member's node are removed).
    #[error("timed out")]
    Timeout,
    /// The lock is (or the queue position was) lost.
    #[error("lock lost: {0}")]
    LockLost(LossReason),
    /// A path is not usable (for example it ends with `/`, or has an empty segment), found
    /// before any request: by the recipe's own check of its base path, or by the client's
    /// check of every path it sends. One error for both.
    #[error("invalid path {path:?}: {reason}")]
    InvalidPath {
        /// The path given.
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A recipe's argument is out of range (say, more leases than the semaphore has).
    #[error("invalid argument: {0}")]
    InvalidArgument(&'static str),
    /// A retry loop ran out of turns: the same step went round (a connection loss waited
    /// out, a watch fired, the queue changed) more times than the crate's bound allows,
    /// without an answer. Every recipe ends its retries with this error, whether or not the
    /// call has a timeout; nothing of ours is left behind.
    #[error("gave up after too many retries")]
    GaveUp,
    /// A write broke the rules of its path ([`model::SchemaSet`](crate::model::SchemaSet),
    /// Curator's `SchemaViolation`): refused before anything was sent.
    #[error("node {path:?} breaks schema {schema:?}: {reason}")]
    Schema {
        /// The node's path.
        path: String,
        /// The schema's name (empty when a strict set has none for the path).
        schema: String,
        /// The rule broken.
        reason: String,
    },
    /// A typed node's value did not encode, or its data did not decode
    /// ([`model`](crate::model)'s codec).
    #[error("node {path:?}: {reason}")]
    Codec {
        /// The node's path.
        path: String,
        /// What the codec said.
        reason: String,
    },
}

impl From<zk_client::Error> for Error {
    /// The client's error as [`Error::Client`], but for its `InvalidPath`, which becomes
    /// [`Error::InvalidPath`] (one error for one meaning).
    fn from(e: zk_client::Error) -> Self {
        match e {
            zk_client::Error::InvalidPath { path, reason } => Error::InvalidPath { path, reason },
            e => Error::Client(e),
        }
    }
}

impl Error {
    /// Whether this is [`Error::Timeout`].
    pub fn is_timeout(&self) -> bool {
        matches!(self, Error::Timeout)
    }

    /// Whether this is [`Error::GaveUp`].
    pub fn is_gave_up(&self) -> bool {
        matches!(self, Error::GaveUp)
    }

    /// Whether this is [`Error::LockLost`].
    pub fn is_lock_lost(&self) -> bool {
        matches!(self, Error::LockLost(_))
    }

    /// The error an acquisition reports: a terminal client error (the session expired, was
    /// closed, or failed authentication) becomes `LockLost(SessionEnded)`, as the locks
    /// document, whichever request happened to notice it first.
    pub(crate) fn session_end_as_loss(self) -> Error {
        match self {
            Error::Client(e) if e.is_terminal() => Error::LockLost(LossReason::SessionEnded),
            e => e,
        }
    }

    /// Whether this says the session ended: the client's terminal error (the crate's one
    /// way, see `retry::session_ended`) or, at a lock's edge, `LockLost(SessionEnded)`.
    pub(crate) fn is_session_end(&self) -> bool {
        match self {
            Error::Client(e) => e.is_terminal(),
            Error::LockLost(reason) => *reason == LossReason::SessionEnded,
            _ => false,
        }
    }

    /// The error for node data that does not decode (Curator reports `DATAINCONSISTENCY`
    /// too).
    pub(crate) fn corrupted() -> Error {
        Error::Client(zk_client::Error::Server(
            zk_client::ErrorCode::DataInconsistency,
        ))
    }
}

/// Result of a recipe operation.
pub type Result<T> = std::result::Result<T, Error>;
