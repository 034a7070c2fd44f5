//! Session state machine tests: scripted frames, fake instants, no sockets.

use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use tokio::sync::oneshot;
use zk_proto::records::{
    ConnectRequest, ConnectResponse, EventType, GetDataRequest, KeeperState, WatcherEvent,
};
use zk_proto::{xid as special, ErrorCode, OpCode, Record, ReplyHeader, RequestHeader};

use super::*;
use crate::command::{WatchKind, WatchSender};
use crate::event::WatchedEvent;

mod merge;
mod poison;
#[cfg(feature = "sasl")]
mod sasl;
mod watch_modes;
mod watches;

const TIMEOUT: Duration = Duration::from_secs(9);

fn config() -> SessionConfig {
    SessionConfig {
        session_timeout: TIMEOUT,
        connect_timeout: Duration::from_secs(3),
        read_only: false,
        max_outstanding: 100,
        reconnect_wait: Duration::from_secs(5),
        set_watches_batch: SET_WATCHES_BATCH_BYTES,
        max_request_len: zk_proto::SERVER_MAX_BUFFER,
        // Reads merge only in the tests of merging (`merge.rs`).
        max_frame_len: zk_proto::SERVER_MAX_BUFFER,
        request_timeout: None,
        #[cfg(feature = "sasl")]
        sasl: None,
    }
}

/// The receiving end of a request's answer: its result, and the arrival it was stamped with.
struct ReplyRx {
    rx: oneshot::Receiver<crate::command::Answer>,
    arrival: Option<crate::event::Arrival>,
}

impl ReplyRx {
    /// The result, once delivered (its arrival is kept for [`ReplyRx::arrival`]).
    fn try_recv(&mut self) -> std::result::Result<Result<Bytes>, oneshot::error::TryRecvError> {
        let (arrival, result) = self.rx.try_recv()?;
        self.arrival = Some(arrival);
        Ok(result)
    }

    /// The arrival of the answer taken by [`ReplyRx::try_recv`].
    fn arrival(&self) -> crate::event::Arrival {
        self.arrival.expect("the answer was taken")
    }
}

/// A test fixture: a session and a clock.
struct Fixture {
    s: Session,
    t0: Instant,
    now: Instant,
    /// Session infos published so far.
    infos: Vec<SessionInfo>,
}

/// A written packet: header and body, or the ConnectRequest.
#[derive(Debug)]
enum Sent {
    Connect(ConnectRequest),
    Packet { xid: i32, op: i32, body: Bytes },
}

impl Sent {
    fn packet(&self) -> (i32, i32, Bytes) {
        match self {
            Sent::Packet { xid, op, body } => (*xid, *op, body.clone()),
            other => panic!("expected a packet, got {other:?}"),
        }
    }
}

impl Fixture {
    fn new(cfg: SessionConfig) -> Self {
        let t0 = Instant::now();
        Self {
            s: Session::new(cfg, t0),
            t0,
            now: t0,
            infos: Vec::new(),
        }
    }

    /// Delivers what the session produced (as the driver does after every input).
    fn pump(&mut self) {
        while let Some(event) = self.s.poll_event() {
            if let Some(info) = event.deliver() {
                self.infos.push(info);
            }
        }
    }

    /// The session info last published, if any since the last call.
    fn last_info(&mut self) -> Option<SessionInfo> {
        self.pump();
        self.infos.drain(..).last()
    }

    fn timeout(&mut self, now: Instant) -> Result<(), Disconnect> {
        let r = self.s.handle_timeout(now);
        self.pump();
        r
    }

    fn disconnect(&mut self, reason: &Disconnect, now: Instant) {
        self.s.handle_disconnect(reason, now);
        self.pump();
    }

    fn frame(&mut self, frame: Bytes, now: Instant) -> Result<(), Disconnect> {
        let r = self.s.handle_frame(frame, now);
        self.pump();
        r
    }

    fn command(&mut self, cmd: Command, now: Instant) {
        self.s.handle_command(cmd, now);
        self.pump();
    }

    fn tcp_up(&mut self, now: Instant) {
        self.s.handle_connected(now, now + Duration::from_secs(3));
        self.pump();
    }

    fn shutdown(&mut self, now: Instant) {
        self.s.handle_shutdown(now);
        self.pump();
    }

    fn at(&mut self, after: Duration) -> Instant {
        self.now = self.t0 + after;
        self.now
    }

    /// Everything written since the last call, split into packets.
    fn sent(&mut self) -> Vec<Sent> {
        let mut out = Vec::new();
        let Some(mut wire) = self.s.poll_transmit() else {
            return out;
        };
        while wire.has_remaining() {
            let len = wire.get_i32() as usize;
            let mut frame = wire.split_to(len);
            // A ConnectRequest starts with protocol version 0 and is at least 44 bytes;
            // request headers never have xid 0.
            if frame.len() >= 44 && frame[..4] == [0, 0, 0, 0] {
                out.push(Sent::Connect(ConnectRequest::decode(&mut frame).unwrap()));
            } else {
                let h = RequestHeader::decode(&mut frame).unwrap();
                out.push(Sent::Packet {
                    xid: h.xid,
                    op: h.op,
                    body: frame,
                });
            }
        }
        out
    }

    /// TCP up + ConnectResponse; returns the ConnectRequest sent.
    fn connect(&mut self, session_id: i64, read_only: bool) -> ConnectRequest {
        self.tcp_up(self.now);
        let sent = self.sent();
        let Some(Sent::Connect(req)) = sent.into_iter().next() else {
            panic!("no ConnectRequest");
        };
        let resp = ConnectResponse {
            protocol_version: 0,
            timeout: TIMEOUT.as_millis() as i32,
            session_id,
            passwd: Bytes::from_static(b"0123456789abcdef"),
            read_only,
        };
        self.frame(encode(&resp), self.now).unwrap();
        req
    }

    fn reply(
        &mut self,
        xid: i32,
        zxid: i64,
        err: ErrorCode,
        body: &[u8],
    ) -> Result<(), Disconnect> {
        let mut buf = BytesMut::new();
        ReplyHeader { xid, zxid, err }.encode(&mut buf);
        buf.extend_from_slice(body);
        self.frame(buf.freeze(), self.now)
    }

    pub(super) fn notify(&mut self, event_type: EventType, path: &str) {
        let body = encode(&WatcherEvent {
            event_type,
            state: KeeperState::SyncConnected,
            path: path.into(),
        });
        self.reply(special::NOTIFICATION, -1, ErrorCode::Ok, &body)
            .unwrap();
    }

    fn submit(&mut self, op: OpCode, body: Bytes, watch: Option<WatchAction>) -> ReplyRx {
        let (request, rx) = Request::new(op, BytesMut::from(&body[..]), watch);
        self.command(Command::Request(request), self.now);
        ReplyRx { rx, arrival: None }
    }

    fn get_data(&mut self, path: &str) -> ReplyRx {
        let body = encode(&GetDataRequest {
            path: path.into(),
            watch: false,
        });
        self.submit(OpCode::GetData, body, None)
    }

    fn watch(
        &mut self,
        op: OpCode,
        path: &str,
        kind: WatchKind,
    ) -> (ReplyRx, oneshot::Receiver<Result<WatchedEvent>>) {
        let (tx, wrx) = oneshot::channel();
        let action = WatchAction::Register {
            path: path.into(),
            kind,
            sender: WatchSender::Once(tx),
            on_server: true,
        };
        let body = encode(&GetDataRequest {
            path: path.into(),
            watch: true,
        });
        (self.submit(op, body, Some(action)), wrx)
    }
}

fn encode<R: Record>(r: &R) -> Bytes {
    let mut b = BytesMut::new();
    r.encode(&mut b);
    b.freeze()
}

fn connected() -> Fixture {
    let mut f = Fixture::new(config());
    f.connect(0x42, false);
    f.sent();
    f
}

pub(super) fn event(rx: &mut oneshot::Receiver<Result<WatchedEvent>>) -> Option<EventType> {
    match rx.try_recv() {
        Ok(Ok(e)) => Some(e.event_type),
        _ => None,
    }
}

// ===== handshake =====

#[test]
fn handshake_sends_connect_request_and_publishes_the_session() {
    let mut f = Fixture::new(SessionConfig {
        read_only: true,
        ..config()
    });
    assert_eq!(f.s.state(), SessionState::Connecting);
    let req = f.connect(0x42, false);
    assert_eq!(req.session_id, 0);
    assert_eq!(req.timeout, 9000);
    assert_eq!(req.passwd.as_ref(), &[0u8; 16]);
    assert_eq!(req.last_zxid_seen, 0);
    assert!(req.read_only);
    assert_eq!(f.s.state(), SessionState::Connected);
    let info = f.last_info().unwrap();
    assert_eq!(info.session_id, 0x42);
    assert_eq!(info.password.as_ref(), b"0123456789abcdef");
    assert_eq!(info.timeout, TIMEOUT);
    assert!(f.last_info().is_none());
}

#[test]
fn handshake_timeout_drops_the_connection() {
    let mut f = Fixture::new(config());
    f.tcp_up(f.now);
    assert_eq!(f.s.poll_timeout(), Some(f.t0 + Duration::from_secs(3)));
    let now = f.at(Duration::from_millis(2999));
    assert_eq!(f.timeout(now), Ok(()));
    let now = f.at(Duration::from_secs(3));
    assert_eq!(f.timeout(now), Err(Disconnect::HandshakeTimeout));
}

#[test]
fn reconnect_resumes_the_session_with_id_password_and_last_zxid() {
    let mut f = connected();
    let mut rx = f.get_data("/root/a");
    f.reply(1, 77, ErrorCode::Ok, b"x").unwrap();
    assert!(rx.try_recv().unwrap().is_ok());
    f.disconnect(&Disconnect::Transport, f.now);
    assert_eq!(f.s.state(), SessionState::Disconnected);
    let req = f.connect(0x42, false);
    assert_eq!(req.session_id, 0x42);
    assert_eq!(req.passwd.as_ref(), b"0123456789abcdef");
    assert_eq!(req.last_zxid_seen, 77);
    assert_eq!(f.s.state(), SessionState::Connected);
}

#[test]
fn negative_timeout_expires_the_session_and_fails_everything() {
    let mut f = connected();
    let (mut reply, mut watcher) = f.watch(OpCode::GetData, "/root/w", WatchKind::Data);
    f.reply(1, 5, ErrorCode::Ok, b"").unwrap();
    assert!(reply.try_recv().unwrap().is_ok());
    let mut in_flight = f.get_data("/root/a");
    f.disconnect(&Disconnect::Transport, f.now);
    assert!(matches!(
        in_flight.try_recv(),
        Ok(Err(Error::ConnectionLoss))
    ));
    let mut queued = f.get_data("/root/b");
    f.tcp_up(f.now);
    f.sent();
    let resp = ConnectResponse {
        timeout: 0,
        ..Default::default()
    };
    f.frame(encode(&resp), f.now).unwrap();
    assert_eq!(f.s.state(), SessionState::Expired);
    assert!(f.s.is_terminal());
    assert!(matches!(queued.try_recv(), Ok(Err(Error::SessionExpired))));
    assert!(matches!(watcher.try_recv(), Ok(Err(Error::SessionExpired))));
    let mut later = f.get_data("/root/c");
    assert!(matches!(later.try_recv(), Ok(Err(Error::SessionExpired))));
    assert!(f.s.poll_timeout().is_none());
}

#[test]
fn read_only_server_gives_connected_read_only_and_no_resume_until_rw() {
    let mut f = Fixture::new(SessionConfig {
        read_only: true,
        ..config()
    });
    f.connect(0x7, true);
    assert_eq!(f.s.state(), SessionState::ConnectedReadOnly);
    assert!(f.s.is_read_only());
    f.disconnect(&Disconnect::ToReadWrite, f.now);
    // Never seen a read/write server: the read-only session id is not resumed.
    let req = f.connect(0x8, false);
    assert_eq!(req.session_id, 0);
    assert_eq!(f.s.state(), SessionState::Connected);
    f.disconnect(&Disconnect::Transport, f.now);
    let req = f.connect(0x8, true);
    assert_eq!(req.session_id, 0x8);
    assert_eq!(f.s.state(), SessionState::ConnectedReadOnly);
}

// ===== timers =====

#[test]
fn pings_after_a_third_of_the_timeout_of_send_silence() {
    let mut f = connected();
    assert_eq!(f.s.poll_timeout(), Some(f.t0 + Duration::from_secs(3)));
    let now = f.at(Duration::from_millis(2999));
    f.timeout(now).unwrap();
    assert!(f.sent().is_empty());
    let now = f.at(Duration::from_secs(3));
    f.timeout(now).unwrap();
    let sent = f.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].packet().0, special::PING);
    assert_eq!(sent[0].packet().1, OpCode::Ping.as_i32());
    // The read deadline (6 s after the last receive) and the next ping (6 s) coincide.
    assert_eq!(f.s.poll_timeout(), Some(f.t0 + Duration::from_secs(6)));
    // A request resets the send clock.
    f.at(Duration::from_secs(4));
    let _rx = f.get_data("/root/a");
    f.sent();
    f.reply(special::PING, 0, ErrorCode::Ok, b"").unwrap();
    assert_eq!(f.s.poll_timeout(), Some(f.t0 + Duration::from_secs(7)));
}

#[test]
fn read_timeout_disconnects_and_fails_in_flight_with_connection_loss() {
    let mut f = connected();
    let mut rx = f.get_data("/root/a");
    let now = f.at(Duration::from_millis(5999));
    f.timeout(now).unwrap();
    let now = f.at(Duration::from_secs(6));
    assert_eq!(f.timeout(now), Err(Disconnect::ReadTimeout));
    f.disconnect(&Disconnect::ReadTimeout, now);
    assert!(matches!(rx.try_recv(), Ok(Err(Error::ConnectionLoss))));
    assert_eq!(f.s.state(), SessionState::Disconnected);
    assert_eq!(f.s.in_flight(), 0);
}

#[test]
fn no_answer_for_the_session_timeout_expires_locally() {
    let mut f = connected();
    let (_, mut watcher) = f.watch(OpCode::GetData, "/root/w", WatchKind::Data);
    f.reply(1, 1, ErrorCode::Ok, b"").unwrap();
    let now = f.at(Duration::from_secs(6));
    f.disconnect(&Disconnect::ReadTimeout, now);
    assert_eq!(f.s.poll_timeout(), Some(f.t0 + Duration::from_secs(9)));
    let now = f.at(Duration::from_millis(8999));
    f.timeout(now).unwrap();
    assert_eq!(f.s.state(), SessionState::Disconnected);
    let now = f.at(Duration::from_secs(9));
    f.timeout(now).unwrap();
    assert_eq!(f.s.state(), SessionState::Expired);
    assert!(matches!(watcher.try_recv(), Ok(Err(Error::SessionExpired))));
}

#[test]
fn calls_made_while_disconnected_wait_then_fail_with_connection_loss() {
    let mut f = connected();
    f.disconnect(&Disconnect::Transport, f.now);
    f.at(Duration::from_secs(1));
    let mut early = f.get_data("/root/a");
    f.at(Duration::from_secs(2));
    let mut late = f.get_data("/root/b");
    assert_eq!(f.s.queued(), 2);
    assert_eq!(f.s.poll_timeout(), Some(f.t0 + Duration::from_secs(6)));
    let now = f.at(Duration::from_secs(6));
    f.timeout(now).unwrap();
    assert!(matches!(early.try_recv(), Ok(Err(Error::ConnectionLoss))));
    assert!(late.try_recv().is_err(), "still waiting");
    // Reconnected in time: the second one goes out.
    f.at(Duration::from_millis(6500));
    f.connect(0x42, false);
    let sent = f.sent();
    assert_eq!(sent.len(), 1);
    let (xid, op, _) = sent[0].packet();
    assert_eq!(op, OpCode::GetData.as_i32());
    f.reply(xid, 3, ErrorCode::Ok, b"ok").unwrap();
    assert_eq!(late.try_recv().unwrap().unwrap().as_ref(), b"ok");
}

// ===== pipelining =====

#[test]
fn replies_are_matched_fifo_and_a_mismatch_is_a_protocol_violation() {
    let mut f = connected();
    let mut a = f.get_data("/root/a");
    let mut b = f.get_data("/root/b");
    let xids: Vec<i32> = f.sent().iter().map(|s| s.packet().0).collect();
    assert_eq!(xids, [1, 2]);
    f.reply(1, 10, ErrorCode::Ok, b"A").unwrap();
    assert_eq!(a.try_recv().unwrap().unwrap().as_ref(), b"A");
    let c = f.reply(3, 11, ErrorCode::Ok, b"C");
    assert_eq!(
        c,
        Err(Disconnect::XidOutOfOrder {
            expected: Some(2),
            got: 3
        })
    );
    f.disconnect(&c.unwrap_err(), f.now);
    assert!(matches!(b.try_recv(), Ok(Err(Error::ConnectionLoss))));
}

#[test]
fn error_replies_map_to_errors() {
    let mut f = connected();
    let mut a = f.get_data("/root/a");
    f.reply(1, 10, ErrorCode::NoNode, b"").unwrap();
    assert!(matches!(a.try_recv(), Ok(Err(Error::NoNode))));
    let mut b = f.get_data("/root/b");
    f.reply(2, 10, ErrorCode::Other(-999), b"").unwrap();
    assert!(matches!(
        b.try_recv(),
        Ok(Err(Error::Server(ErrorCode::Other(-999))))
    ));
}

#[test]
fn max_outstanding_bounds_the_wire_and_keeps_order() {
    let mut f = Fixture::new(SessionConfig {
        max_outstanding: 2,
        ..config()
    });
    f.connect(1, false);
    f.sent();
    let mut rxs: Vec<_> = (0..5).map(|i| f.get_data(&format!("/root/{i}"))).collect();
    assert_eq!(f.s.in_flight(), 2);
    assert_eq!(f.s.queued(), 3);
    let mut written: Vec<i32> = f.sent().iter().map(|s| s.packet().0).collect();
    assert_eq!(written, [1, 2]);
    for (i, rx) in rxs.iter_mut().enumerate() {
        let xid = i as i32 + 1;
        f.reply(xid, xid.into(), ErrorCode::Ok, &[i as u8]).unwrap();
        assert_eq!(rx.try_recv().unwrap().unwrap().as_ref(), &[i as u8]);
        assert!(f.s.in_flight() <= 2);
        written.extend(f.sent().iter().map(|s| s.packet().0));
    }
    // Each reply let exactly one queued request out, in call order.
    assert_eq!(written, [1, 2, 3, 4, 5]);
    assert_eq!(f.s.queued(), 0);
}

#[test]
fn close_session_ends_in_closed_and_rejects_later_calls() {
    let mut f = connected();
    let mut a = f.get_data("/root/a");
    let mut close = f.submit(OpCode::CloseSession, Bytes::new(), None);
    let mut after = f.get_data("/root/b");
    assert!(matches!(after.try_recv(), Ok(Err(Error::Closed))));
    let ops: Vec<i32> = f.sent().iter().map(|s| s.packet().1).collect();
    assert_eq!(
        ops,
        [OpCode::GetData.as_i32(), OpCode::CloseSession.as_i32()]
    );
    f.reply(1, 1, ErrorCode::Ok, b"").unwrap();
    assert!(a.try_recv().unwrap().is_ok());
    f.reply(2, 2, ErrorCode::Ok, b"").unwrap();
    assert!(close.try_recv().unwrap().is_ok());
    assert_eq!(f.s.state(), SessionState::Closed);
}

#[test]
fn close_while_disconnected_is_local() {
    let mut f = connected();
    f.disconnect(&Disconnect::Transport, f.now);
    let mut queued = f.get_data("/root/a");
    let mut close = f.submit(OpCode::CloseSession, Bytes::new(), None);
    assert!(close.try_recv().unwrap().is_ok());
    assert!(matches!(queued.try_recv(), Ok(Err(Error::Closed))));
    assert_eq!(f.s.state(), SessionState::Closed);
}

#[test]
fn shutdown_sends_close_session() {
    let mut f = connected();
    f.shutdown(f.now);
    let sent = f.sent();
    assert_eq!(sent[0].packet().1, OpCode::CloseSession.as_i32());
    // The server hangs up before replying: closed for the client, and closed on the server
    // once one answers (the first closeSession may not have been applied).
    f.disconnect(&Disconnect::Transport, f.now);
    assert_eq!(f.s.state(), SessionState::Closed);
    assert!(f.s.is_reaping());
    f.reap_on_next_connection();
}

impl Fixture {
    /// A reaping session reaches a server: it resumes the old session, sends nothing but
    /// closeSession, and is done once that is answered.
    fn reap_on_next_connection(&mut self) {
        self.tcp_up(self.now);
        let sent = self.sent();
        let Some(Sent::Connect(req)) = sent.first() else {
            panic!("no ConnectRequest: {sent:?}");
        };
        assert_eq!(req.session_id, 0x42, "the old session");
        assert_eq!(&req.passwd[..], b"0123456789abcdef");
        let state = self.s.state();
        self.frame(connect_response(0x42, 9000), self.now).unwrap();
        let sent = self.sent();
        assert_eq!(sent.len(), 1, "only closeSession: {sent:?}");
        let (xid, op, _) = sent[0].packet();
        assert_eq!(op, OpCode::CloseSession.as_i32());
        assert_eq!(self.s.state(), state, "never reported as alive again");
        self.reply(xid, 9, ErrorCode::Ok, b"").unwrap();
        assert!(self.s.is_done());
        assert_eq!(self.s.poll_timeout(), None);
    }
}

fn connect_response(session_id: i64, timeout_ms: i32) -> Bytes {
    encode(&ConnectResponse {
        protocol_version: 0,
        timeout: timeout_ms,
        session_id,
        passwd: Bytes::from_static(b"0123456789abcdef"),
        read_only: false,
    })
}

/// A session given up after the session timeout without an answer.
fn given_up() -> Fixture {
    let mut f = connected();
    let now = f.at(Duration::from_secs(6));
    f.disconnect(&Disconnect::ReadTimeout, now);
    let now = f.at(TIMEOUT);
    f.timeout(now).unwrap();
    assert_eq!(f.s.state(), SessionState::Expired);
    f
}

#[test]
fn a_given_up_session_is_resumed_only_to_be_closed() {
    let mut f = given_up();
    assert!(!f.s.is_done(), "still to be closed on the server");
    assert!(f.s.is_reaping());
    // Calls fail at once, as with any expired session.
    let mut call = f.get_data("/root/a");
    assert!(matches!(call.try_recv(), Ok(Err(Error::SessionExpired))));
    f.at(TIMEOUT + Duration::from_secs(1));
    f.reap_on_next_connection();
    assert_eq!(f.s.state(), SessionState::Expired);
}

#[test]
fn a_given_up_session_the_server_expired_is_done_at_once() {
    let mut f = given_up();
    f.tcp_up(f.now);
    f.sent();
    f.frame(connect_response(0, 0), f.now).unwrap();
    assert!(f.s.is_done());
    assert!(f.sent().is_empty(), "nothing sent on an expired session");
}

#[test]
fn closing_a_given_up_session_is_retried_through_disconnects_and_bounded_in_time() {
    let mut f = given_up();
    // Handshake, then the connection drops before the answer: retried on the next one.
    f.tcp_up(f.now);
    f.disconnect(&Disconnect::Transport, f.now);
    assert!(f.s.is_reaping());
    f.tcp_up(f.now);
    let deadline = f.s.poll_timeout().expect("handshake deadline");
    assert!(f.timeout(deadline).is_err(), "handshake timeout");
    f.disconnect(&Disconnect::HandshakeTimeout, deadline);
    // No server ever answers: given up for good after the bound (2 min at least).
    let later = f.at(TIMEOUT + Duration::from_secs(119));
    f.timeout(later).unwrap();
    assert!(f.s.is_reaping());
    let end = f.s.poll_timeout().expect("reaping bound");
    assert!(
        end >= f.t0 + TIMEOUT + Duration::from_secs(120),
        "{:?}",
        end - f.t0
    );
    f.timeout(end).unwrap();
    assert!(f.s.is_done());
}

#[test]
fn a_session_never_accepted_by_a_read_write_server_is_not_reaped() {
    let mut f = Fixture::new(config());
    f.connect(0x42, true);
    let now = f.at(Duration::from_secs(1));
    f.disconnect(&Disconnect::Transport, now);
    let now = f.at(Duration::from_secs(1) + TIMEOUT);
    f.timeout(now).unwrap();
    assert_eq!(f.s.state(), SessionState::Expired);
    assert!(
        f.s.is_done(),
        "a read-only server's session id is never resumed"
    );
}

#[test]
fn close_while_disconnected_closes_the_session_on_the_server_later() {
    let mut f = connected();
    f.disconnect(&Disconnect::Transport, f.now);
    let mut close = f.submit(OpCode::CloseSession, Bytes::new(), None);
    assert!(close.try_recv().unwrap().is_ok());
    assert_eq!(f.s.state(), SessionState::Closed);
    assert!(f.s.is_reaping());
    f.reap_on_next_connection();
    assert_eq!(f.s.state(), SessionState::Closed);
}

#[test]
fn a_request_over_the_server_limit_fails_alone_and_sends_nothing() {
    let mut f = Fixture::new(SessionConfig {
        max_request_len: 100,
        ..config()
    });
    f.connect(0x42, false);
    f.sent();
    let mut big = f.submit(OpCode::SetData, Bytes::from(vec![0u8; 93]), None);
    assert!(matches!(
        big.try_recv(),
        Ok(Err(Error::RequestTooLarge { len: 101, max: 100 }))
    ));
    assert!(f.sent().is_empty());
    let mut fits = f.submit(OpCode::SetData, Bytes::from(vec![0u8; 92]), None);
    assert_eq!(f.sent().len(), 1);
    f.reply(1, 1, ErrorCode::Ok, b"").unwrap();
    assert!(fits.try_recv().unwrap().is_ok());
}

#[test]
fn an_oversized_reply_fails_its_call_alone_and_anything_else_oversized_disconnects() {
    use zk_proto::ReplyHeader;
    let head = |xid: i32| {
        encode(&ReplyHeader {
            xid,
            zxid: 7,
            err: ErrorCode::Ok,
        })
    };
    let mut f = connected();
    f.sent();
    let mut big = f.submit(OpCode::MultiRead, Bytes::new(), None);
    let mut next = f.submit(OpCode::GetData, Bytes::new(), None);
    assert_eq!(f.sent().len(), 2);
    let now = f.now;
    f.s.handle_oversized(head(1), 5_000_000, 4_194_304, now)
        .unwrap();
    f.pump();
    assert!(matches!(
        big.try_recv(),
        Ok(Err(Error::ReplyTooLarge {
            len: 5_000_000,
            max: 4_194_304
        }))
    ));
    f.reply(2, 8, ErrorCode::Ok, b"").unwrap();
    assert!(next.try_recv().unwrap().is_ok());
    // A notification, a reply out of order or to nothing: the connection ends.
    for xid in [zk_proto::xid::NOTIFICATION, 9, 3] {
        assert!(f
            .s
            .handle_oversized(head(xid), 5_000_000, 100, now)
            .is_err());
    }
}

#[test]
fn the_request_timeout_fails_the_overdue_call_and_drops_the_connection() {
    let mut f = Fixture::new(SessionConfig {
        request_timeout: Some(Duration::from_secs(2)),
        ..config()
    });
    f.connect(0x42, false);
    f.sent();
    let mut first = f.get_data("/root/a");
    f.at(Duration::from_secs(1));
    let mut second = f.get_data("/root/b");
    assert_eq!(f.s.poll_timeout(), Some(f.t0 + Duration::from_secs(2)));
    let now = f.at(Duration::from_secs(2));
    assert_eq!(f.timeout(now), Err(Disconnect::RequestTimeout));
    assert!(matches!(first.try_recv(), Ok(Err(Error::Timeout))));
    f.disconnect(&Disconnect::RequestTimeout, now);
    assert!(matches!(second.try_recv(), Ok(Err(Error::ConnectionLoss))));
    assert_eq!(f.s.state(), SessionState::Disconnected);
}

#[test]
fn close_is_bounded_when_the_server_never_answers_it() {
    let mut f = connected();
    let mut close = f.submit(OpCode::CloseSession, Bytes::new(), None);
    // Pings are answered meanwhile; the closeSession reply never comes.
    for secs in 1..6 {
        let now = f.at(Duration::from_secs(secs));
        f.reply(special::PING, 0, ErrorCode::Ok, b"").unwrap();
        f.timeout(now).unwrap();
        assert_eq!(f.s.state(), SessionState::Connected);
    }
    let now = f.at(Duration::from_secs(6)); // the read timeout
    f.timeout(now).unwrap();
    assert_eq!(f.s.state(), SessionState::Closed);
    assert!(matches!(close.try_recv(), Ok(Err(Error::Closed))));
    assert!(f.s.is_done());
}

#[test]
fn the_connection_epoch_counts_accepted_handshakes() {
    let mut f = connected();
    assert_eq!(f.last_info().map(|i| i.epoch), Some(1));
    f.disconnect(&Disconnect::Transport, f.now);
    f.connect(0x42, false);
    assert_eq!(f.last_info().map(|i| i.epoch), Some(2));
}
