//! The sans-IO session state machine.
//!
//! [`Session`] holds everything about a ZooKeeper session except the socket and the clock:
//! the handshake, xids, the FIFO of requests in flight, the queue of requests waiting for a
//! connection or a window slot, the watch registry, the credentials to replay, and the
//! timers. It does no IO and reads no clock: the driver feeds it inputs and drains its
//! outputs, in the style of `quinn-proto`'s `Connection`.
//!
//! # Inputs (`handle_*`)
//!
//! * [`Session::handle_command`]: a request or command from a client handle.
//! * [`Session::handle_connected`]: a TCP connection to a server is up (writes the
//!   `ConnectRequest`).
//! * [`Session::handle_frame`]: one frame body from the server.
//! * [`Session::handle_timeout`]: the deadline from [`Session::poll_timeout`] passed.
//! * [`Session::handle_disconnect`]: the connection is gone (IO error, EOF, or because an
//!   input above returned a [`Disconnect`]).
//!
//! # Outputs (`poll_*`), to call after every input
//!
//! * [`Session::poll_transmit`]: bytes to write, all packets coalesced into one buffer.
//! * [`Session::poll_event`]: the next [`Event`] to deliver: a state change (with the
//!   [`SessionInfo`] to publish), a request's answer, a watch event; in the order they happened.
//! * [`Session::poll_timeout`]: when to call `handle_timeout` next.
//! * [`Session::is_terminal`]: the session is over; the driver stops.
//!
//! # Order on a (re)connect
//!
//! `ConnectRequest`; then, once the `ConnectResponse` accepted the session, every auth
//! packet ever sent on the session (in order), then the SetWatches batches, then the queued
//! requests: the server applies them in that order, so queued requests already run with
//! the credentials and watches of the session (as in Java's `ClientCnxn.primeConnection`).

mod inbound;
mod merge;
mod outbox;
mod pending;
pub(crate) mod poison;
mod reap;
#[cfg(feature = "sasl")]
mod sasl;
mod set_watches;
pub(crate) mod timers;
mod watches;
mod xid;

#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use tracing::{debug, trace, warn};
use zk_proto::frame::{encode_frame, LENGTH_PREFIX_LEN};
use zk_proto::records::{AddWatchMode, ConnectRequest, RemoveWatchesRequest};
use zk_proto::{xid as special, DecodeError, ErrorCode, OpCode, Record, RequestHeader};

use crate::command::{Command, ReplySender, Request, WatchAction};
use crate::error::{Error, Result};
use crate::state::{SessionInfo, SessionState};
pub(crate) use outbox::Event;
use outbox::Outbox;
use pending::{InFlight, PendingQueue};
use poison::{Fingerprint, PoisonLedger};
use watches::{Route, WatchRegistry};
use xid::XidAllocator;

#[cfg(feature = "sasl-gssapi")]
pub(crate) use sasl::gssapi;
#[cfg(feature = "sasl")]
pub(crate) use sasl::{Mechanism, SaslConfig, SaslCredentials};

/// Java's `ClientCnxn.SET_WATCHES_MAX_LENGTH`: the most bytes of paths per SetWatches packet.
pub(crate) const SET_WATCHES_BATCH_BYTES: usize = 128 * 1024;

/// Bytes of a SetWatches2 packet besides its paths: the request header, the relative zxid
/// and the five list lengths (each path also has its own 4-byte length, counted with it).
const SET_WATCHES_OVERHEAD: usize = REQUEST_HEADER_LEN + 8 + 5 * 4;

/// Length of the password of a new session (zeros), as the Java client sends it.
const EMPTY_PASSWORD: [u8; 16] = [0; 16];

/// Settings of a session (from the [`ClientBuilder`](crate::ClientBuilder)).
#[derive(Debug, Clone)]
pub(crate) struct SessionConfig {
    /// Requested session timeout.
    pub(crate) session_timeout: Duration,
    /// Bound on one TCP connect plus handshake.
    pub(crate) connect_timeout: Duration,
    /// Whether a read-only server is acceptable.
    pub(crate) read_only: bool,
    /// Most requests on the wire at once.
    pub(crate) max_outstanding: usize,
    /// How long a request made while disconnected waits for a connection.
    pub(crate) reconnect_wait: Duration,
    /// Most bytes of paths per SetWatches packet.
    pub(crate) set_watches_batch: usize,
    /// Largest request (header and body) the server accepts.
    pub(crate) max_request_len: usize,
    /// Largest frame read from the server (bounds how many reads share a `multiRead`).
    pub(crate) max_frame_len: usize,
    /// Bound on waiting for a reply once a request is on the wire.
    pub(crate) request_timeout: Option<Duration>,
    /// SASL mechanism and credentials to authenticate every connection with.
    #[cfg(feature = "sasl")]
    pub(crate) sasl: Option<SaslConfig>,
}

/// Why the current connection must be dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Disconnect {
    /// A frame did not decode.
    Protocol(DecodeError),
    /// A reply did not answer the oldest pending request.
    XidOutOfOrder { expected: Option<i32>, got: i32 },
    /// Nothing arrived for the read timeout.
    ReadTimeout,
    /// No `ConnectResponse` within the connect timeout.
    HandshakeTimeout,
    /// The socket failed: reset (RST), a write or read error.
    Transport,
    /// The server closed the connection in order: the client read end of stream (a FIN).
    /// What a server does when it refuses a request by closing (ZooKeeper on a packet
    /// above its `jute.maxbuffer`, ClickHouse Keeper on an opcode it does not know), and
    /// the only loss the poison rule counts.
    Closed,
    /// Leaving a read-only server for a read/write one.
    ToReadWrite,
    /// The oldest request in flight waited longer than the request timeout.
    RequestTimeout,
    /// The server answered a resume with another session id (the old session is gone).
    SessionReplaced,
    /// Leaving the server after a host-list update, to even out the load (ZOOKEEPER-1355).
    Rebalance,
    /// The server answered a SetWatches packet with an error: the watches it listed are not
    /// armed on this connection.
    SetWatchesFailed(ErrorCode),
}

impl From<DecodeError> for Disconnect {
    fn from(e: DecodeError) -> Self {
        Disconnect::Protocol(e)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// No connection.
    Idle,
    /// `ConnectRequest` sent, waiting for the `ConnectResponse`.
    Handshaking { deadline: Instant },
    /// SASL exchange after the `ConnectResponse` (the session is not yet reported connected).
    #[cfg(feature = "sasl")]
    Sasl { deadline: Instant, read_only: bool },
    /// Session established on this connection.
    Connected { read_only: bool },
    /// The session is over for the user, but it was given up locally (no server could be
    /// reached): the client keeps reconnecting with its id, only to close it on the server
    /// (see `reap.rs`).
    Reaping { until: Instant, step: reap::Step },
    /// Expired, closed or auth failed, and nothing left to do.
    Terminal,
}

/// A request not yet written: waiting for a connection or for a window slot.
#[derive(Debug)]
struct Waiting {
    req: Request,
    /// `req`'s fingerprint, taken once in `submit`.
    print: Fingerprint,
    /// Set while disconnected: fail with `ConnectionLoss` after it.
    deadline: Option<Instant>,
}

/// The session state machine. See the module docs for the input/output contract.
#[derive(Debug)]
pub(crate) struct Session {
    cfg: SessionConfig,
    phase: Phase,
    state: SessionState,
    /// Outputs not yet drained by the driver.
    events: Outbox,
    session_id: i64,
    password: Bytes,
    /// Whether a read/write server ever accepted this session (Java's `seenRwServerBefore`);
    /// until then the id is a read-only server's and is not resumed elsewhere.
    seen_rw: bool,
    negotiated: Duration,
    /// Handshakes accepted so far (published as `SessionInfo::epoch`).
    epoch: u64,
    read_timeout: Duration,
    ping_interval: Duration,
    /// Highest zxid seen in a reply (never from a notification: ZOOKEEPER-4655).
    last_zxid: i64,
    xids: XidAllocator,
    pending: PendingQueue,
    waiting: VecDeque<Waiting>,
    watches: WatchRegistry,
    /// Encoded `AuthPacket`s sent on this session, replayed on every reconnect.
    auths: Vec<Bytes>,
    /// Callers waiting for the replies (xid -4) of auth packets on this connection, in order.
    auth_waiters: VecDeque<Option<ReplySender>>,
    /// `closeSession` was written: nothing more goes out; the session ends when the reply
    /// comes, or locally at this deadline if it never does.
    closing: Option<Instant>,
    out: BytesMut,
    last_send: Instant,
    last_recv: Instant,
    /// Last time a server answered on this session (drives local expiry).
    last_heard: Option<Instant>,
    /// The SASL exchange of this connection, while it runs.
    #[cfg(feature = "sasl")]
    sasl: Option<sasl::SaslRun>,
    /// The mechanism the driver prepared for the next exchange (GSSAPI).
    #[cfg(feature = "sasl")]
    sasl_prepared: Option<Box<dyn Mechanism>>,
    /// Requests the server drops the connection on (shared across a lineage of sessions).
    poison: PoisonLedger,
    /// The suspect request on the wire alone (see `poison.rs`): its xid and fingerprint.
    isolated: Option<(i32, Fingerprint)>,
    /// What the server supports (shared with the client handles): `removeWatches` is sent
    /// only to a server that has it.
    profile: crate::profile::ProfileCell,
    /// The last request written while it can still take more reads (`merge.rs`).
    tail: Option<merge::Tail>,
    /// How many reads may share one `multiRead` (`merge.rs`; 1: none).
    merge_limit: usize,
    /// Orderly closes in a row with merged reads in flight (see `note_merge_loss`).
    merge_losses: u32,
}

#[cfg(test)]
thread_local! {
    /// How often [`Session::reconcile_watches`] looked through the queues on this thread:
    /// the work a test of its cost counts (deterministic, where a timing would not be).
    pub(crate) static QUEUE_SCANS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl Session {
    /// A session that has never connected.
    pub(crate) fn new(mut cfg: SessionConfig, now: Instant) -> Self {
        let (read_timeout, ping_interval) = timers::connection_timers(cfg.session_timeout);
        // SetWatches packets are sent by the session itself, never through `submit`: keep
        // each under the server's limit too, or a server with a low `jute.maxbuffer` would
        // drop every reconnect of a session with many watches.
        cfg.set_watches_batch = cfg
            .set_watches_batch
            .min(cfg.max_request_len.saturating_sub(SET_WATCHES_OVERHEAD))
            .max(1);
        let merge_limit = merge::merge_limit(cfg.max_frame_len, cfg.max_request_len);
        Self {
            merge_limit,
            merge_losses: 0,
            tail: None,
            negotiated: cfg.session_timeout,
            cfg,
            phase: Phase::Idle,
            state: SessionState::Connecting,
            events: Outbox::default(),
            session_id: 0,
            password: Bytes::from_static(&EMPTY_PASSWORD),
            seen_rw: false,
            epoch: 0,
            read_timeout,
            ping_interval,
            last_zxid: 0,
            xids: XidAllocator::default(),
            pending: PendingQueue::default(),
            waiting: VecDeque::new(),
            watches: WatchRegistry::default(),
            auths: Vec::new(),
            auth_waiters: VecDeque::new(),
            closing: None,
            out: BytesMut::with_capacity(64 * 1024),
            last_send: now,
            last_recv: now,
            last_heard: None,
            #[cfg(feature = "sasl")]
            sasl: None,
            #[cfg(feature = "sasl")]
            sasl_prepared: None,
            poison: PoisonLedger::default(),
            isolated: None,
            profile: crate::profile::ProfileCell::default(),
        }
    }

    /// Uses `profile` (the client handles' own) to know what the server supports.
    pub(crate) fn share_profile(&mut self, profile: crate::profile::ProfileCell) {
        self.profile = profile;
    }

    /// Starts from an existing session (id and password from its previous owner) instead of
    /// asking for a new one.
    pub(crate) fn resume(&mut self, session_id: i64, password: Bytes) {
        self.session_id = session_id;
        self.password = password;
        // Only a read/write server's session id is ever handed out to be resumed.
        self.seen_rw = true;
    }

    // ===== getters =====

    pub(crate) fn state(&self) -> SessionState {
        self.state
    }

    /// Whether the session is over for the user (every call fails).
    pub(crate) fn is_terminal(&self) -> bool {
        self.state.is_terminal()
    }

    /// Whether nothing is left to do: terminal, and no given-up session left to close on
    /// the server. The driver stops then.
    pub(crate) fn is_done(&self) -> bool {
        self.phase == Phase::Terminal
    }

    /// Whether a given-up session is being closed on the server.
    pub(crate) fn is_reaping(&self) -> bool {
        matches!(self.phase, Phase::Reaping { .. })
    }

    /// How long a connection must have lasted to count as good (its end then restarts the
    /// reconnect backoff): one read timeout.
    pub(crate) fn stable_after(&self) -> Duration {
        self.read_timeout
    }

    pub(crate) fn is_connected(&self) -> bool {
        matches!(self.phase, Phase::Connected { .. })
    }

    /// Whether the current connection is to a read-only server.
    pub(crate) fn is_read_only(&self) -> bool {
        self.phase == Phase::Connected { read_only: true }
    }

    pub(crate) fn connect_timeout(&self) -> Duration {
        self.cfg.connect_timeout
    }

    /// The Kerberos settings, when every connection needs a GSSAPI context prepared by the
    /// driver (see [`Session::handle_sasl_prepared`]); `None` while the session is over.
    #[cfg(feature = "sasl-gssapi")]
    pub(crate) fn gssapi(&self) -> Option<std::sync::Arc<gssapi::GssapiConfig>> {
        match &self.cfg.sasl {
            Some(SaslConfig::Gssapi(cfg)) if !self.is_terminal() && !self.is_reaping() => {
                Some(cfg.clone())
            }
            _ => None,
        }
    }

    /// Requests written and not yet answered.
    pub(crate) fn in_flight(&self) -> usize {
        self.pending.len()
    }

    /// Requests not yet written.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn queued(&self) -> usize {
        self.waiting.len()
    }

    // ===== outputs =====

    /// Everything to write, coalesced; `None` when there is nothing.
    pub(crate) fn poll_transmit(&mut self) -> Option<Bytes> {
        // What goes to the socket takes no more reads.
        self.tail = None;
        if self.out.is_empty() {
            None
        } else {
            Some(self.out.split().freeze())
        }
    }

    /// The next output to deliver, in the order they happened.
    pub(crate) fn poll_event(&mut self) -> Option<Event> {
        self.events.pop()
    }

    /// What the handles see of the session now.
    fn info(&self) -> SessionInfo {
        SessionInfo {
            state: self.state,
            session_id: self.session_id,
            password: if self.session_id == 0 {
                Bytes::new()
            } else {
                self.password.clone()
            },
            timeout: self.negotiated,
            epoch: self.epoch,
        }
    }

    /// The next deadline, if any.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        let expiry = self.last_heard.map(|t| t + self.negotiated);
        let waiting = self.waiting.front().and_then(|w| w.deadline);
        let min = |a: Option<Instant>, b: Option<Instant>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        match self.phase {
            Phase::Terminal => None,
            Phase::Reaping { until, step } => min(Some(until), step.deadline()),
            Phase::Connected { .. } => {
                let alive =
                    (self.last_recv + self.read_timeout).min(self.last_send + self.ping_interval);
                let request = self
                    .cfg
                    .request_timeout
                    .and_then(|t| self.pending.oldest_sent().map(|sent| sent + t));
                min(Some(alive), min(request, self.closing))
            }
            Phase::Handshaking { deadline } => min(Some(deadline), min(expiry, waiting)),
            #[cfg(feature = "sasl")]
            Phase::Sasl { deadline, .. } => min(Some(deadline), min(expiry, waiting)),
            Phase::Idle => min(expiry, waiting),
        }
    }

    // ===== inputs =====

    /// A request or command from a client handle.
    pub(crate) fn handle_command(&mut self, cmd: Command, now: Instant) {
        match cmd {
            Command::Request(req) => self.submit(req, now),
            Command::DropWatch { path } => self.reconcile_watches(&path, now),
            // The host list is the driver's: it takes these before they reach the session.
            Command::UpdateHosts { .. } => {}
        }
    }

    /// All client handles are gone: close the session on the server if connected, else
    /// locally.
    pub(crate) fn handle_shutdown(&mut self, now: Instant) {
        if self.is_terminal() || self.closing.is_some() {
            return;
        }
        let (request, _) = Request::new(OpCode::CloseSession, BytesMut::new(), None);
        self.submit(request, now);
    }

    fn submit(&mut self, req: Request, now: Instant) {
        if let Some(err) = self.state.terminal_error() {
            self.events.reply(req.reply, Err(err));
            return;
        }
        if self.closing.is_some() {
            self.events.reply(req.reply, Err(Error::Closed));
            return;
        }
        // The server drops the connection on a packet over its jute.maxbuffer, failing every
        // call in flight: refuse this one alone instead.
        let len = req.body.len() + REQUEST_HEADER_LEN;
        if len > self.cfg.max_request_len {
            let max = self.cfg.max_request_len;
            self.events
                .reply(req.reply, Err(Error::RequestTooLarge { len, max }));
            return;
        }
        // A request the server is known to drop the connection on: refuse it alone. Its
        // fingerprint is taken once here and travels with it.
        let print = Fingerprint::of(req.op, &req.body);
        if let Some(err) = self.poison_refusal(print, req.op, &req.body, now) {
            self.events.reply(req.reply, Err(err));
            return;
        }
        if req.op == OpCode::CloseSession && !self.is_connected() {
            debug!("closing a disconnected session locally; closing it on the server later");
            self.events.reply(req.reply, Ok(Bytes::new()));
            self.give_up(SessionState::Closed, now);
            return;
        }
        if self.is_connected()
            && self.waiting.is_empty()
            && self.pending.len() < self.cfg.max_outstanding
            && self.may_transmit(print, now)
        {
            self.transmit(req, print, now);
        } else {
            let deadline = (!self.is_connected()).then(|| now + self.cfg.reconnect_wait);
            self.waiting.push_back(Waiting {
                req,
                print,
                deadline,
            });
        }
    }

    /// Writes one request (`print` is its fingerprint); its reply slot goes on the pending
    /// queue (or, for auth, on the auth waiters).
    fn transmit(&mut self, mut req: Request, print: Fingerprint, now: Instant) {
        match &mut req.watch {
            Some(WatchAction::Register {
                path,
                kind,
                on_server: on_server @ true,
                ..
            }) => {
                // One registration per path (ZOOKEEPER-4466): a watcher that what the server
                // holds there already serves asks for nothing that would replace it.
                match self.watches.route(path, *kind) {
                    Route::Server => {}
                    Route::Locally => {
                        // The watch flag is the last byte of every request that can carry
                        // one (getData, exists, getChildren).
                        *on_server = false;
                        set_tail(&mut req.body, &[0]);
                    }
                    Route::AsRecursive => {
                        // addWatch's mode is its last field.
                        *on_server = false;
                        let mode = AddWatchMode::PersistentRecursive as i32;
                        set_tail(&mut req.body, &mode.to_be_bytes());
                    }
                }
            }
            Some(WatchAction::Remove { path, kind }) => self.watches.forget(path, *kind),
            _ => {}
        }
        if req.op == OpCode::Auth {
            write_packet(&mut self.out, special::AUTH, OpCode::Auth, &req.body);
            // Kept once: a caller repeats an `add_auth` answered `ConnectionLoss`, which may
            // have been taken.
            let body = req.body.freeze();
            if !self.auths.contains(&body) {
                self.auths.push(body);
            }
            self.auth_waiters.push_back(Some(req.reply));
        } else {
            let Some(req) = self.merge(req, now) else {
                self.last_send = now;
                return;
            };
            let xid = self.xids.next_xid();
            let start = self.out.len();
            write_packet(&mut self.out, xid, req.op, &req.body);
            self.tail =
                merge::mergeable(req.op, &req.body, req.watch.is_some()).then(|| merge::Tail {
                    start,
                    end: self.out.len(),
                    xid,
                    parts: Vec::new(),
                });
            trace!(xid, op = ?req.op, "request");
            if req.op == OpCode::CloseSession {
                self.closing = Some(now + self.read_timeout);
            }
            // Setting the watch flag above changed no byte the fingerprint reads (its
            // path, op and size class).
            self.note_isolated(xid, print, now);
            self.pending.push(InFlight {
                xid,
                print,
                op: req.op,
                reply: req.reply,
                watch: req.watch,
                sent: now,
                span: crate::trace::sent(req.span, xid),
                merged: Vec::new(),
            });
        }
        self.last_send = now;
    }

    /// Adds the plain `getData` `req` to the request written just before it, as a
    /// `multiRead`, when `merge.rs` allows (`None`); gives `req` back otherwise.
    fn merge(&mut self, req: Request, now: Instant) -> Option<Request> {
        // The cheap checks first: most requests find no tail to join.
        if self.tail.is_none()
            || self.merge_limit < 2
            || self.isolated.is_some()
            || !merge::mergeable(req.op, &req.body, req.watch.is_some())
            || !self
                .profile
                .get()
                .supports(crate::profile::Feature::MultiRead)
        {
            return Some(req);
        }
        let tail = self.tail.take()?;
        let fits = tail.parts.len().max(1) < self.merge_limit
            && tail.end == self.out.len()
            && self.pending.back_mut().is_some_and(|f| f.xid == tail.xid);
        if !fits {
            self.tail = Some(tail);
            return Some(req);
        }
        // A tail with no parts yet is one plain getData: its body is in the outbox.
        let mut parts = tail.parts.clone();
        if parts.is_empty() {
            let first = self
                .out
                .get(tail.start + LENGTH_PREFIX_LEN + REQUEST_HEADER_LEN..tail.end);
            parts.push(Bytes::copy_from_slice(first.unwrap_or_default()));
        }
        parts.push(Bytes::copy_from_slice(&req.body));
        let mut frame = BytesMut::new();
        merge::write_multi_read(&mut frame, tail.xid, &parts);
        let body = frame
            .get(LENGTH_PREFIX_LEN + REQUEST_HEADER_LEN..)
            .unwrap_or_default();
        let print = Fingerprint::of(OpCode::MultiRead, body);
        let len = frame.len() - LENGTH_PREFIX_LEN;
        if len > self.cfg.max_request_len || self.poison.suspected(print, now) {
            self.tail = Some(tail);
            return Some(req);
        }
        let Some(last) = self.pending.back_mut() else {
            // Not reached (`fits` saw the tail's call last in flight); keep the tail anyway.
            self.tail = Some(tail);
            return Some(req);
        };
        last.op = OpCode::MultiRead;
        last.print = print;
        last.merged.push(merge::Part {
            reply: req.reply,
            _span: crate::trace::sent(req.span, tail.xid),
        });
        self.out.truncate(tail.start);
        self.out.extend_from_slice(&frame);
        trace!(
            xid = tail.xid,
            reads = parts.len(),
            "getData merged into a multiRead"
        );
        self.tail = Some(merge::Tail {
            end: self.out.len(),
            parts,
            ..tail
        });
        None
    }

    /// A server that closes the connection on `multiRead` (one that does not know it, with a
    /// profile that says it does) would close it again at every merge, and the poison rule
    /// cannot tell (each merge is another request): after two orderly closes in a row with
    /// merged reads in flight, this session stops merging. A merged reply answered resets
    /// the count.
    fn note_merge_loss(&mut self, reason: &Disconnect) {
        if *reason != Disconnect::Closed || !self.pending.iter().any(|f| !f.merged.is_empty()) {
            return;
        }
        self.merge_losses += 1;
        if self.merge_losses >= 2 && self.merge_limit > 1 {
            warn!("the server closed the connection twice on merged reads: no more merging");
            self.merge_limit = 1;
        }
    }

    /// Moves waiting requests onto the wire while the window has room.
    fn fill_window(&mut self, now: Instant) {
        self.note_isolated_answered();
        while self.is_connected() && self.pending.len() < self.cfg.max_outstanding {
            if self.closing.is_some() {
                for w in self.waiting.drain(..) {
                    self.events.reply(w.req.reply, Err(Error::Closed));
                }
                return;
            }
            let Some(w) = self.waiting.front() else {
                return;
            };
            if !self.may_transmit(w.print, now) {
                // A request suspected of dropping the connection goes out alone.
                return;
            }
            let Some(w) = self.waiting.pop_front() else {
                return;
            };
            self.transmit(w.req, w.print, now);
        }
    }

    /// Something changed on `path` (a watcher dropped, a registration completed, a one-shot
    /// fired): removes the server watches no live watcher needs any more (`removeWatches`),
    /// so the server never keeps notifying nobody.
    ///
    /// Waits while a request that sets or removes a watch on the path is in flight or queued:
    /// its completion calls this again. While disconnected there is nothing to do: the next
    /// connection's SetWatches registers only what live watchers need.
    pub(super) fn reconcile_watches(&mut self, path: &str, now: Instant) {
        if !self.is_connected() || self.closing.is_some() {
            return;
        }
        // Nothing to remove (the common case: a registration completed for a live watcher):
        // done, without looking through the queues, which hold every request of a caller
        // setting many watches at once (that made setting N watches cost O(N²)).
        if self.watches.unneeded(path).is_empty() {
            return;
        }
        #[cfg(test)]
        QUEUE_SCANS.with(|n| n.set(n.get() + 1));
        let registering = self.pending.registers_watch_on(path)
            || self
                .waiting
                .iter()
                .any(|w| w.req.watch.as_ref().is_some_and(|a| a.path() == path));
        if registering {
            return;
        }
        let removable = self
            .profile
            .get()
            .supports(crate::profile::Feature::RemoveWatches);
        for watcher_type in self.watches.reconcile(path) {
            if !removable {
                // A server without removeWatches (Keeper would close the connection and end
                // the session): its watch stays; events nobody waits for are dropped.
                debug!(
                    path,
                    ?watcher_type,
                    "server cannot remove watches: left in place"
                );
                continue;
            }
            debug!(
                path,
                ?watcher_type,
                "no live watcher needs it: removing the server-side watch"
            );
            let mut body = BytesMut::new();
            RemoveWatchesRequest {
                path: path.to_owned(),
                watcher_type: watcher_type as i32,
            }
            .encode(&mut body);
            let (request, _) = Request::new(OpCode::RemoveWatches, body, None);
            self.submit(request, now);
        }
    }

    /// A TCP connection is up: starts the handshake.
    /// `deadline` bounds the handshake: the attempt's connect timeout, which the TCP connect
    /// already used part of.
    pub(crate) fn handle_connected(&mut self, now: Instant, deadline: Instant) {
        if let Phase::Reaping { until, .. } = self.phase {
            self.out.clear();
            self.write_connect_request(true);
            self.phase = Phase::Reaping {
                until,
                step: reap::Step::Handshaking { deadline },
            };
            return;
        }
        if self.is_terminal() {
            return;
        }
        self.out.clear();
        let resume = self.seen_rw && self.session_id != 0;
        debug!(resume, session_id = self.session_id, "handshake");
        self.write_connect_request(resume);
        self.phase = Phase::Handshaking { deadline };
        self.last_send = now;
        self.last_recv = now;
    }

    /// Writes the `ConnectRequest`: resuming this session's id and password, or asking for a
    /// new session.
    fn write_connect_request(&mut self, resume: bool) {
        let request = ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: self.last_zxid,
            timeout: i32::try_from(self.cfg.session_timeout.as_millis()).unwrap_or(i32::MAX),
            session_id: if resume { self.session_id } else { 0 },
            passwd: if resume {
                self.password.clone()
            } else {
                Bytes::from_static(&EMPTY_PASSWORD)
            },
            read_only: self.cfg.read_only,
        };
        encode_frame(&mut self.out, |b| request.encode(b));
    }

    /// The connection is gone. In-flight requests fail with `ConnectionLoss` (they may or
    /// may not have been applied and are never retried); queued ones wait for the next
    /// connection, up to the reconnect wait.
    pub(crate) fn handle_disconnect(&mut self, reason: &Disconnect, now: Instant) {
        if let Phase::Reaping { until, .. } = self.phase {
            debug!(?reason, "disconnected while closing a given-up session");
            self.out.clear();
            self.phase = Phase::Reaping {
                until,
                step: reap::Step::Idle,
            };
            return;
        }
        if self.is_terminal() {
            return;
        }
        if self.closing.is_some() {
            // The closeSession may not have been applied: make sure once a server answers.
            self.give_up(SessionState::Closed, now);
            return;
        }
        debug!(?reason, in_flight = self.pending.len(), "disconnected");
        self.note_merge_loss(reason);
        self.note_loss(reason, now);
        self.phase = Phase::Idle;
        self.out.clear();
        self.pending
            .fail_all(&Error::ConnectionLoss, &mut self.events);
        for w in self.auth_waiters.drain(..).flatten() {
            self.events.reply(w, Err(Error::ConnectionLoss));
        }
        let deadline = now + self.cfg.reconnect_wait;
        for w in &mut self.waiting {
            w.deadline.get_or_insert(deadline);
        }
        self.set_state(if self.session_id != 0 {
            SessionState::Disconnected
        } else {
            SessionState::Connecting
        });
    }

    /// The deadline from `poll_timeout` passed (or any time: early calls do nothing).
    pub(crate) fn handle_timeout(&mut self, now: Instant) -> Result<(), Disconnect> {
        match self.phase {
            Phase::Terminal => Ok(()),
            Phase::Reaping { until, step } => self.reap_timeout(until, step, now),
            Phase::Connected { .. } => self.connected_timeout(now),
            Phase::Handshaking { .. } | Phase::Idle => self.disconnected_timeout(now),
            #[cfg(feature = "sasl")]
            Phase::Sasl { .. } => self.disconnected_timeout(now),
        }
    }

    /// Deadlines of a connection with a session: the closeSession reply, the request
    /// timeout, the read timeout, the ping.
    fn connected_timeout(&mut self, now: Instant) -> Result<(), Disconnect> {
        if self.closing.is_some_and(|deadline| now >= deadline) {
            warn!("no reply to closeSession: closing locally");
            self.terminate(SessionState::Closed);
            return Ok(());
        }
        if let Some(limit) = self.cfg.request_timeout {
            let overdue =
                self.pending
                    .fail_sent_before(now, limit, &Error::Timeout, &mut self.events);
            if overdue {
                warn!(
                    timeout_ms = limit.as_millis() as u64,
                    "no reply within the request timeout: dropping the connection"
                );
                return Err(Disconnect::RequestTimeout);
            }
        }
        if now >= self.last_recv + self.read_timeout {
            warn!(
                silent_ms = now.duration_since(self.last_recv).as_millis() as u64,
                "server silent for the read timeout"
            );
            return Err(Disconnect::ReadTimeout);
        }
        if now >= self.last_send + self.ping_interval {
            trace!("ping");
            write_packet(&mut self.out, special::PING, OpCode::Ping, &[]);
            self.last_send = now;
        }
        Ok(())
    }

    /// Deadlines without a session on the connection: the local give-up, the calls waiting
    /// for a connection, the handshake.
    fn disconnected_timeout(&mut self, now: Instant) -> Result<(), Disconnect> {
        // No server has answered for a whole session timeout: the ensemble has expired the
        // session (or will within a tick), or cannot serve it (a quorum loss); report it
        // rather than wait for a server to say so, which may be never during a partition.
        if let Some(heard) = self.last_heard {
            if now >= heard + self.negotiated {
                warn!("no server answered for the session timeout: session expired");
                self.give_up(SessionState::Expired, now);
                return Ok(());
            }
        }
        while let Some(w) = self.waiting.front() {
            match w.deadline {
                Some(d) if now >= d => {
                    if let Some(w) = self.waiting.pop_front() {
                        self.events.reply(w.req.reply, Err(Error::ConnectionLoss));
                    }
                }
                _ => break,
            }
        }
        match self.phase {
            Phase::Handshaking { deadline } if now >= deadline => Err(Disconnect::HandshakeTimeout),
            #[cfg(feature = "sasl")]
            Phase::Sasl { deadline, .. } if now >= deadline => Err(Disconnect::HandshakeTimeout),
            _ => Ok(()),
        }
    }

    // ===== internals =====

    fn set_state(&mut self, state: SessionState) {
        if self.state != state {
            debug!(from = ?self.state, to = ?state, "session state");
            crate::metrics::session_state(state);
            self.state = state;
            self.publish();
        }
    }

    /// Queues the session info for the handles (state, id, password, epoch).
    fn publish(&mut self) {
        let info = self.info();
        self.events.push(Event::Info(info));
    }

    /// Ends the session: every pending, queued and watching caller gets the terminal error.
    fn terminate(&mut self, state: SessionState) {
        self.end_for_user(state);
        self.phase = Phase::Terminal;
    }

    /// Fails every pending, queued and watching caller with the terminal error of `state`,
    /// and publishes it.
    fn end_for_user(&mut self, state: SessionState) {
        let Some(err) = state.terminal_error() else {
            debug_assert!(false, "{state:?} is not terminal");
            return;
        };
        self.set_state(state);
        self.out.clear();
        self.pending.fail_all(&err, &mut self.events);
        for w in self.waiting.drain(..) {
            self.events.reply(w.req.reply, Err(err.clone()));
        }
        for w in self.auth_waiters.drain(..).flatten() {
            self.events.reply(w, Err(err.clone()));
        }
        self.watches.fail_all(&err, &mut self.events);
    }
}

/// Replaces the last `tail.len()` bytes of `body` by `tail` (unchanged when shorter).
fn set_tail(body: &mut BytesMut, tail: &[u8]) {
    let Some(head) = body.len().checked_sub(tail.len()) else {
        return;
    };
    if let Some(end) = body.get_mut(head..) {
        end.copy_from_slice(tail);
    }
}

/// Bytes of a `RequestHeader` (xid and opcode) in front of every request body.
const REQUEST_HEADER_LEN: usize = 8;

/// Appends `[len][xid][op][body]`.
fn write_packet(out: &mut BytesMut, xid: i32, op: OpCode, body: &[u8]) {
    encode_frame(out, |b| {
        RequestHeader {
            xid,
            op: op.as_i32(),
        }
        .encode(b);
        b.put_slice(body);
    });
}
