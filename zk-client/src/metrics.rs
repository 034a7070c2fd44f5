//! Metrics hooks (Cargo feature `metrics`, on the [`metrics`](https://docs.rs/metrics) facade).
//!
//! Every hook is an `#[inline]` function; without the feature each body is empty and the
//! calls compile away. With it, values go to whatever recorder the application installed
//! (none: the facade drops them). Names and labels are documented in the table of the
//! repository's `docs/metrics-tracing.md`; keep the two in step.

use std::time::Duration;

use zk_proto::{ErrorCode, OpCode};

use crate::error::Error;
use crate::state::SessionState;

#[cfg(feature = "metrics")]
mod on {
    use std::collections::HashMap;
    use std::sync::OnceLock;

    use zk_proto::{ErrorCode, OpCode};

    use crate::error::Error;
    use crate::state::SessionState;

    /// The opcode's name as a `'static` label (Java's names: `getData` is `GetData`).
    pub(super) fn op_label(op: OpCode) -> &'static str {
        static NAMES: OnceLock<HashMap<OpCode, &'static str>> = OnceLock::new();
        let names = NAMES.get_or_init(|| {
            // One small leak per opcode, once per process.
            let name = |o: &OpCode| &*Box::leak(format!("{o:?}").into_boxed_str());
            OpCode::ALL.iter().map(|o| (*o, name(o))).collect()
        });
        names.get(&op).copied().unwrap_or("Unknown")
    }

    pub(super) fn outcome(err: ErrorCode) -> &'static str {
        match err {
            ErrorCode::Ok => "ok",
            ErrorCode::NoNode => "no_node",
            ErrorCode::NodeExists => "node_exists",
            ErrorCode::BadVersion => "bad_version",
            ErrorCode::NotEmpty => "not_empty",
            ErrorCode::NoAuth => "no_auth",
            _ => "error",
        }
    }

    pub(super) fn reason(err: &Error) -> &'static str {
        match err {
            Error::Timeout => "timeout",
            Error::ConnectionLoss => "connection_loss",
            Error::SessionExpired => "session_expired",
            Error::Closed => "closed",
            _ => "other",
        }
    }

    pub(super) fn state(state: SessionState) -> &'static str {
        match state {
            SessionState::Connecting => "connecting",
            SessionState::Connected => "connected",
            SessionState::ConnectedReadOnly => "connected_read_only",
            SessionState::Disconnected => "disconnected",
            SessionState::Expired => "expired",
            SessionState::AuthFailed => "auth_failed",
            SessionState::Closed => "closed",
        }
    }
}

/// A request was written and waits for its reply.
#[inline]
pub(crate) fn request_sent() {
    #[cfg(feature = "metrics")]
    ::metrics::gauge!("zk_client_requests_in_flight").increment(1.0);
}

/// A reply matched a request written `elapsed` ago.
#[inline]
pub(crate) fn request_answered(op: OpCode, err: ErrorCode, elapsed: Duration) {
    #[cfg(feature = "metrics")]
    {
        let op = on::op_label(op);
        ::metrics::gauge!("zk_client_requests_in_flight").decrement(1.0);
        ::metrics::counter!("zk_client_requests_total", "op" => op, "outcome" => on::outcome(err))
            .increment(1);
        ::metrics::histogram!("zk_client_request_duration_seconds", "op" => op)
            .record(elapsed.as_secs_f64());
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (op, err, elapsed);
}

/// `n` requests on the wire failed without a reply.
#[inline]
pub(crate) fn requests_failed(n: usize, err: &Error) {
    #[cfg(feature = "metrics")]
    if n > 0 {
        ::metrics::gauge!("zk_client_requests_in_flight").decrement(n as f64);
        ::metrics::counter!("zk_client_requests_failed_total", "reason" => on::reason(err))
            .increment(n as u64);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (n, err);
}

/// Bytes read from a server.
#[inline]
pub(crate) fn bytes_received(n: usize) {
    #[cfg(feature = "metrics")]
    ::metrics::counter!("zk_client_bytes_received_total").increment(n as u64);
    #[cfg(not(feature = "metrics"))]
    let _ = n;
}

/// Bytes written to a server.
#[inline]
pub(crate) fn bytes_sent(n: usize) {
    #[cfg(feature = "metrics")]
    ::metrics::counter!("zk_client_bytes_sent_total").increment(n as u64);
    #[cfg(not(feature = "metrics"))]
    let _ = n;
}

/// A connection attempt starts: a TCP connect to one address (the first connect of a
/// session, and every attempt after a lost connection or a failed attempt; the read-only
/// probe's connects are not counted). Its rate shows a reconnect storm.
#[inline]
pub(crate) fn connect_attempt() {
    #[cfg(feature = "metrics")]
    ::metrics::counter!("zk_client_connect_attempts_total").increment(1);
}

/// A connection completed its handshake (the first one or a reconnect).
#[inline]
pub(crate) fn connected() {
    #[cfg(feature = "metrics")]
    ::metrics::counter!("zk_client_connections_total").increment(1);
}

/// The session moved into `to`.
#[inline]
pub(crate) fn session_state(to: SessionState) {
    #[cfg(feature = "metrics")]
    ::metrics::counter!("zk_client_session_state_changes_total", "state" => on::state(to))
        .increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = to;
}

/// A watch notification was handed to `told` watchers.
#[inline]
pub(crate) fn watch_events_delivered(told: usize) {
    #[cfg(feature = "metrics")]
    ::metrics::counter!("zk_client_watch_events_total").increment(told as u64);
    #[cfg(not(feature = "metrics"))]
    let _ = told;
}

/// A persistent watcher's queue was full: one event dropped (the reader lags).
#[inline]
pub(crate) fn watch_event_dropped() {
    #[cfg(feature = "metrics")]
    ::metrics::counter!("zk_client_watch_events_dropped_total").increment(1);
}
