//! Inbound frames: the handshake reply, replies, notifications, special xids.

use std::time::{Duration, Instant};

use bytes::Bytes;
use tracing::{debug, trace, warn};
use zk_proto::records::{ConnectResponse, EventType, WatcherEvent};
use zk_proto::{decode_prefix, xid as special, ErrorCode, OpCode, Record, ReplyHeader};

use super::pending::InFlight;
use super::{timers, write_packet, Disconnect, Phase, Session};
use crate::command::{WatchAction, WatchKind};
use crate::error::Error;
use crate::event::WatchedEvent;
use crate::state::SessionState;

impl Session {
    /// The call a reply with `header` answers, taken off the calls in flight, with the
    /// session's zxid moved on; `Err(expected)` when the reply is not for the oldest call
    /// (`None`: no call is in flight).
    fn answered(&mut self, header: &ReplyHeader) -> Result<InFlight, Option<i32>> {
        let inflight = self.pending.pop_matching(header.xid)?;
        if header.zxid > 0 {
            self.last_zxid = header.zxid;
        }
        Ok(inflight)
    }

    /// One frame body from the server.
    pub(crate) fn handle_frame(&mut self, frame: Bytes, now: Instant) -> Result<(), Disconnect> {
        self.last_recv = now;
        self.events.frame_received();
        match self.phase {
            Phase::Handshaking { .. } => self.handle_connect_response(frame, now),
            Phase::Connected { .. } => {
                self.last_heard = Some(now);
                self.handle_reply(frame, now)
            }
            Phase::Reaping { until, step } => self.reap_frame(until, step, frame, now),
            #[cfg(feature = "sasl")]
            Phase::Sasl { read_only, .. } => self.handle_sasl_frame(frame, read_only, now),
            Phase::Idle | Phase::Terminal => Ok(()),
        }
    }

    /// A frame longer than the client reads, of which the driver kept the `head` (a reply
    /// header) and passes over the rest. The reply to the oldest call in flight, when that
    /// call sets no watch, fails that call alone with `ReplyTooLarge`; anything else (a
    /// notification, a watch-setting call's reply, a frame before the session is up) cannot
    /// be dropped without losing what it says, and ends the connection as before.
    pub(crate) fn handle_oversized(
        &mut self,
        mut head: Bytes,
        len: usize,
        max: usize,
        now: Instant,
    ) -> Result<(), Disconnect> {
        let too_large = Disconnect::Protocol(zk_proto::DecodeError::FrameTooLarge {
            len: i64::try_from(len).unwrap_or(i64::MAX),
            max,
        });
        if !matches!(self.phase, Phase::Connected { .. }) {
            return Err(too_large);
        }
        let header = ReplyHeader::decode(&mut head).map_err(|_| too_large.clone())?;
        let droppable = self.pending.front().is_some_and(|f| {
            f.xid == header.xid && f.watch.is_none() && f.op != OpCode::CloseSession
        });
        if header.xid <= 0 || !droppable {
            return Err(too_large);
        }
        self.last_recv = now;
        self.last_heard = Some(now);
        self.events.frame_received();
        let inflight = self.answered(&header).map_err(|_| too_large)?;
        warn!(
            len,
            max,
            op = ?inflight.op,
            "reply longer than max_frame_len: passed over, the call fails alone"
        );
        inflight.fail(&Error::ReplyTooLarge { len, max }, &mut self.events);
        self.fill_window(now);
        Ok(())
    }

    /// The handshake's answer: the session is gone, replaced, or (re)established, in which
    /// case the connection is primed.
    fn handle_connect_response(
        &mut self,
        mut frame: Bytes,
        now: Instant,
    ) -> Result<(), Disconnect> {
        let resp = ConnectResponse::decode(&mut frame)?;
        if resp.timeout <= 0 {
            warn!(
                session_id = self.session_id,
                "server says the session expired"
            );
            self.terminate(SessionState::Expired);
            return Ok(());
        }
        self.check_same_session(&resp)?;
        self.take_session(&resp, now);
        #[cfg(feature = "sasl")]
        if let (Some(config), Phase::Handshaking { deadline }) = (self.cfg.sasl.clone(), self.phase)
        {
            self.start_sasl(&config, deadline, resp.read_only);
            return Ok(());
        }
        self.enter_connected(resp.read_only);
        self.prime_connection(now);
        Ok(())
    }

    /// A resume must be answered with the same session id.
    fn check_same_session(&mut self, resp: &ConnectResponse) -> Result<(), Disconnect> {
        let resumed = self.seen_rw && self.session_id != 0;
        if resumed && resp.session_id != self.session_id {
            // A server never answers a resume with another session: the old one is gone
            // (with its ephemeral nodes and watches), and carrying on silently under a new id
            // would hide that from every lock and watcher. End it as expired.
            warn!(
                old = format_args!("{:#x}", self.session_id),
                new = format_args!("{:#x}", resp.session_id),
                "resume answered with another session id: the session is gone"
            );
            self.terminate(SessionState::Expired);
            return Err(Disconnect::SessionReplaced);
        }
        if self.session_id != 0 && resp.session_id != self.session_id {
            // The id of a session only ever seen on read-only servers is not resumed.
            debug!(
                old = self.session_id,
                new = resp.session_id,
                "new session id"
            );
        }
        Ok(())
    }

    /// Takes the session's id, password and timeout.
    fn take_session(&mut self, resp: &ConnectResponse, now: Instant) {
        self.session_id = resp.session_id;
        self.password = resp.passwd.clone();
        self.negotiated = Duration::from_millis(u64::try_from(resp.timeout).unwrap_or(0));
        (self.read_timeout, self.ping_interval) = timers::connection_timers(self.negotiated);
        self.seen_rw |= !resp.read_only;
        self.last_heard = Some(now);
    }

    /// The connection is ready for requests: publishes the connected state.
    pub(super) fn enter_connected(&mut self, read_only: bool) {
        self.epoch += 1;
        self.phase = Phase::Connected { read_only };
        let state = if read_only {
            SessionState::ConnectedReadOnly
        } else {
            SessionState::Connected
        };
        if self.state == state {
            // Same state, but the id, password and epoch may be new.
            self.publish();
        } else {
            self.set_state(state);
        }
        debug!(
            session_id = format_args!("{:#x}", self.session_id),
            timeout_ms = self.negotiated.as_millis() as u64,
            read_only,
            "session established"
        );
    }

    /// Credentials first, then watches, then whatever was queued: the server applies them in
    /// that order (Java's `ClientCnxn.primeConnection`).
    pub(super) fn prime_connection(&mut self, now: Instant) {
        self.auth_waiters.clear();
        for auth in &self.auths {
            write_packet(&mut self.out, special::AUTH, OpCode::Auth, auth);
            self.auth_waiters.push_back(None);
        }
        let batches = self
            .watches
            .set_watches(self.last_zxid, self.cfg.set_watches_batch);
        for batch in batches {
            write_packet(&mut self.out, special::SET_WATCHES, batch.op, &batch.body);
        }
        for w in &mut self.waiting {
            w.deadline = None;
        }
        self.last_send = now;
        self.fill_window(now);
    }

    fn handle_reply(&mut self, mut frame: Bytes, now: Instant) -> Result<(), Disconnect> {
        let header = ReplyHeader::decode(&mut frame)?;
        match header.xid {
            special::NOTIFICATION => {
                let event: WatcherEvent = decode_prefix(frame)?;
                if event.event_type == EventType::None {
                    debug!(state = ?event.state, "session event from the server");
                    return Ok(());
                }
                // 3.9+ sends the zxid of the change (ZOOKEEPER-4655), older servers -1.
                let zxid = WatchedEvent::zxid_from_header(header.zxid);
                let fired =
                    self.watches
                        .fire(event.event_type, &event.path, zxid, &mut self.events);
                trace!(event = ?event.event_type, told = fired.told, "notification");
                crate::metrics::watch_events_delivered(fired.told);
                // A fired one-shot may leave a persistent watch nobody needs now.
                self.reconcile_watches(&event.path, now);
                if let Some(parent) = fired.derived {
                    self.reconcile_watches(&parent, now);
                }
            }
            special::PING => {}
            special::AUTH => {
                let waiter = self.auth_waiters.pop_front().flatten();
                if header.err == ErrorCode::AuthFailed {
                    if let Some(w) = waiter {
                        self.events.reply(w, Err(Error::AuthFailed));
                    }
                    warn!("authentication failed");
                    self.terminate(SessionState::AuthFailed);
                } else if let Some(w) = waiter {
                    let result = if header.err.is_ok() {
                        Ok(Bytes::new())
                    } else {
                        Err(header.err.into())
                    };
                    self.events.reply(w, result);
                }
            }
            special::SET_WATCHES => {
                self.watches.set_watches_answered();
                if !header.err.is_ok() {
                    // The server holds none of this batch's watches, which the client counts
                    // as held: keeping the connection would leave them silent. The next
                    // connection sends every live watch again.
                    warn!(err = ?header.err, "SetWatches refused: reconnecting to re-arm");
                    return Err(Disconnect::SetWatchesFailed(header.err));
                }
            }
            xid => {
                let inflight = self.answered(&header).map_err(|expected| {
                    warn!(?expected, got = xid, "reply out of order");
                    Disconnect::XidOutOfOrder { expected, got: xid }
                })?;
                // The latency only matters to the metrics and an enabled span.
                if cfg!(feature = "metrics") || !inflight.span.is_disabled() {
                    let elapsed = now.saturating_duration_since(inflight.sent);
                    crate::metrics::request_answered(inflight.op, header.err, elapsed);
                    crate::trace::answered(&inflight.span, header.err, elapsed);
                }
                let watched = inflight.watch.as_ref().map(|w| w.path().to_owned());
                self.complete(inflight, header.err, frame);
                self.fill_window(now);
                if let Some(path) = watched {
                    // Its watcher may have been dropped before the reply, or a drop may have
                    // waited for this request: look again.
                    self.reconcile_watches(&path, now);
                }
            }
        }
        Ok(())
    }

    /// Answers a request; registers or removes watches when it succeeded.
    fn complete(&mut self, inflight: InFlight, err: ErrorCode, body: Bytes) {
        if inflight.op == OpCode::CloseSession {
            self.events.reply(inflight.reply, Ok(Bytes::new()));
            debug!("session closed");
            self.terminate(SessionState::Closed);
            return;
        }
        if !inflight.merged.is_empty() {
            self.complete_merged(inflight, err, body);
            return;
        }
        let ok = err.is_ok();
        match inflight.watch {
            Some(WatchAction::Register {
                path,
                kind,
                sender,
                on_server,
            }) => {
                // An exists watch on a node that exists is a data watch (Java's
                // ExistsWatchRegistration); on a missing node it is an exist watch.
                let registered = match kind {
                    WatchKind::Exist if ok => Some(WatchKind::Data),
                    WatchKind::Exist if err == ErrorCode::NoNode => Some(WatchKind::Exist),
                    kind if ok => Some(kind),
                    _ => None,
                };
                let batches =
                    self.watches
                        .answered(path, registered, sender, on_server, self.last_zxid);
                for batch in batches {
                    write_packet(&mut self.out, special::SET_WATCHES, batch.op, &batch.body);
                }
            }
            Some(WatchAction::Remove { path, kind }) if ok => {
                self.watches.remove(&path, kind, &mut self.events);
            }
            _ => {}
        }
        let result = if ok { Ok(body) } else { Err(err.into()) };
        self.events.reply(inflight.reply, result);
    }

    /// Answers each `getData` merged into one `multiRead` (`merge.rs`) with its own part of
    /// the reply; an error for the whole request fails them all with it.
    fn complete_merged(&mut self, inflight: InFlight, err: ErrorCode, body: Bytes) {
        if !err.is_ok() {
            inflight.fail(&err.into(), &mut self.events);
            return;
        }
        self.merge_losses = 0;
        let mut results = super::merge::split_reply(body, 1 + inflight.merged.len()).into_iter();
        let replies =
            std::iter::once(inflight.reply).chain(inflight.merged.into_iter().map(|p| p.reply));
        for (reply, result) in replies.zip(results.by_ref()) {
            self.events.reply(reply, result);
        }
    }
}
