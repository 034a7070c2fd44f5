//! The session's state as the client sees it: [`SessionState`], and what the connection
//! task publishes about the session.

use bytes::Bytes;

use crate::error::Error;

/// The state of a client's session, as seen by the client.
///
/// `Expired`, `AuthFailed` and `Closed` are terminal: the client never leaves them and never
/// opens a new session by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SessionState {
    /// Looking for a server (before the first session, or after `Disconnected` while a
    /// reconnect is attempted).
    Connecting,
    /// Connected to a server that is part of a quorum.
    Connected,
    /// Connected to a server that lost its quorum; only reads work.
    ConnectedReadOnly,
    /// The connection was lost; the session may still be alive and the client is reconnecting.
    Disconnected,
    /// The session expired (the server said so, or no server answered for the whole session
    /// timeout). Terminal.
    Expired,
    /// The server rejected the credentials. Terminal.
    AuthFailed,
    /// The client was closed. Terminal.
    Closed,
}

impl SessionState {
    /// Whether the client is connected (read/write or read-only).
    pub fn is_connected(self) -> bool {
        matches!(
            self,
            SessionState::Connected | SessionState::ConnectedReadOnly
        )
    }

    /// Whether the state is final.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            SessionState::Expired | SessionState::AuthFailed | SessionState::Closed
        )
    }

    /// The error calls fail with in a terminal state.
    pub(crate) fn terminal_error(self) -> Option<Error> {
        match self {
            SessionState::Expired => Some(Error::SessionExpired),
            SessionState::AuthFailed => Some(Error::AuthFailed),
            SessionState::Closed => Some(Error::Closed),
            _ => None,
        }
    }
}

/// What the driver publishes about the session: its state and credentials.
#[derive(Debug, Clone)]
pub(crate) struct SessionInfo {
    pub(crate) state: SessionState,
    pub(crate) session_id: i64,
    pub(crate) password: Bytes,
    /// The negotiated session timeout (the requested one before the first session).
    pub(crate) timeout: std::time::Duration,
    /// How many times a server has accepted the session (see `Client::connection_epoch`).
    pub(crate) epoch: u64,
}

impl Default for SessionInfo {
    fn default() -> Self {
        Self {
            state: SessionState::Connecting,
            session_id: 0,
            password: Bytes::new(),
            timeout: std::time::Duration::ZERO,
            epoch: 0,
        }
    }
}

/// How many state transitions a [`StateWatcher`] may fall behind before it skips to the
/// current state.
pub(crate) const STATE_HISTORY: usize = 64;
