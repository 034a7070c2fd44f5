//! Closing a session that was given up locally.
//!
//! The client declares its session expired when no server answered for a whole session
//! timeout. During a leader election or a quorum loss the ensemble has not expired it (no
//! session expires without a quorum, and a new leader restarts every session's timer), so the
//! session's ephemeral nodes, lock nodes among them, would stay until the servers expire it,
//! a full session timeout after the quorum is back, blocking everyone queued behind them.
//!
//! So after a local give-up the session is over for the user at once (every call and watcher
//! fails with the terminal error, exactly as before), but the connection task keeps trying the
//! hosts, bounded in time, with the old session id and password, only to end it: a server
//! that answers "expired" ends it at once; one that resumes it is sent `closeSession`, and the
//! session's ephemeral nodes go with it. Nothing else is ever sent on that session. The same
//! happens to a session closed while disconnected ([`Client::close`](crate::Client::close)).
//!
//! ```text
//! give_up ─▶ Idle ──connected──▶ Handshaking ──expired answer──────────▶ done
//!             ▲                      │ resumed (or a new id)
//!             │ disconnect/timeout   ▼
//!             └──────────────── Closing ──closeSession reply or EOF──▶ done
//!                           (any step: `until` passes ─▶ done)
//! ```

use std::time::{Duration, Instant};

use bytes::Bytes;
use tracing::{debug, warn};
use zk_proto::records::ConnectResponse;
use zk_proto::{OpCode, Record, ReplyHeader};

use super::{write_packet, Disconnect, Phase, Session};
use crate::state::SessionState;

/// The least time a given-up session is worked on: long enough for a typical leader election
/// or quorum loss to end. At least four session timeouts in any case.
const REAP_FOR: Duration = Duration::from_secs(120);

/// Where the closing of a given-up session stands on the current connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// No connection.
    Idle,
    /// A resume `ConnectRequest` was sent.
    Handshaking { deadline: Instant },
    /// `closeSession` (with this xid) was sent on the resumed session.
    Closing { xid: i32, deadline: Instant },
}

impl Step {
    pub(crate) fn deadline(self) -> Option<Instant> {
        match self {
            Step::Idle => None,
            Step::Handshaking { deadline } | Step::Closing { deadline, .. } => Some(deadline),
        }
    }
}

impl Session {
    /// Ends the session for the user with `state` (`Expired` or `Closed`) without a server's
    /// word, and, when a server knows the session, keeps working to close it there.
    pub(super) fn give_up(&mut self, state: SessionState, now: Instant) {
        self.end_for_user(state);
        if !(self.seen_rw && self.session_id != 0) {
            self.phase = Phase::Terminal;
            return;
        }
        let step = match self.phase {
            // The resume request is already on its way: its answer counts.
            Phase::Handshaking { deadline } => Step::Handshaking { deadline },
            _ => Step::Idle,
        };
        let until = now + REAP_FOR.max(self.negotiated * 4);
        debug!(
            session_id = format_args!("{:#x}", self.session_id),
            "session given up locally: closing it on the server once one answers"
        );
        self.phase = Phase::Reaping { until, step };
    }

    /// A frame while reaping: the handshake's answer, then the `closeSession` reply.
    pub(super) fn reap_frame(
        &mut self,
        until: Instant,
        step: Step,
        mut frame: Bytes,
        now: Instant,
    ) -> Result<(), Disconnect> {
        match step {
            Step::Idle => Ok(()),
            Step::Handshaking { .. } => {
                let resp = ConnectResponse::decode(&mut frame)?;
                if resp.timeout <= 0 {
                    debug!("the given-up session had expired on the server");
                    self.phase = Phase::Terminal;
                    return Ok(());
                }
                if resp.session_id != self.session_id {
                    // A server that opened a new session instead: close that one too.
                    warn!(
                        new = format_args!("{:#x}", resp.session_id),
                        "resume of a given-up session answered with another session"
                    );
                }
                let xid = self.xids.next_xid();
                write_packet(&mut self.out, xid, OpCode::CloseSession, &[]);
                self.phase = Phase::Reaping {
                    until,
                    step: Step::Closing {
                        xid,
                        deadline: now + self.read_timeout,
                    },
                };
                Ok(())
            }
            Step::Closing { xid, .. } => {
                let header = ReplyHeader::decode(&mut frame)?;
                if header.xid == xid {
                    debug!(err = ?header.err, "given-up session closed on the server");
                    self.phase = Phase::Terminal;
                }
                Ok(())
            }
        }
    }

    /// The reaping deadline or the step's deadline passed.
    pub(super) fn reap_timeout(
        &mut self,
        until: Instant,
        step: Step,
        now: Instant,
    ) -> Result<(), Disconnect> {
        if now >= until {
            warn!("could not reach a server to close the given-up session; the ensemble will expire it");
            self.phase = Phase::Terminal;
            return Ok(());
        }
        match step.deadline() {
            Some(deadline) if now >= deadline => Err(Disconnect::HandshakeTimeout),
            _ => Ok(()),
        }
    }
}
