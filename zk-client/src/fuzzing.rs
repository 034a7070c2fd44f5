//! Entry points for the fuzz targets (`--features fuzzing`): the sans-IO session core driven
//! by arbitrary server frames, commands and timer events. Not a stable API.

use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use tokio::sync::oneshot;
use zk_proto::records::{
    ConnectResponse, EventType, GetDataRequest, KeeperState, WatcherEvent, WatcherType,
};
use zk_proto::{xid as special, ErrorCode, OpCode, Record, ReplyHeader};

use crate::command::{Command, Request, WatchAction, WatchKind, WatchSender};
use crate::event_queue::event_queue;
use crate::session::{Session, SessionConfig};

/// Most requests on the wire in the fuzzed session.
const MAX_OUTSTANDING: usize = 8;
/// Most inputs taken from one fuzz case.
const MAX_STEPS: usize = 512;

/// Reads the fuzz input as a script of session inputs; after every input drains the
/// session's outputs and checks that nothing panics and nothing grows without bound.
pub fn drive_session(data: &[u8]) {
    let mut f = Fuzz {
        data,
        s: Session::new(config(), Instant::now()),
        now: Instant::now(),
        receivers: Vec::new(),
        submitted: 0,
        shutdowns: 0,
    };
    for _ in 0..MAX_STEPS {
        let Some(op) = f.byte() else { break };
        f.step(op);
        f.drain();
        f.check();
    }
}

fn config() -> SessionConfig {
    SessionConfig {
        session_timeout: Duration::from_secs(6),
        connect_timeout: Duration::from_secs(2),
        read_only: true,
        max_outstanding: MAX_OUTSTANDING,
        reconnect_wait: Duration::from_secs(6),
        set_watches_batch: 256,
        max_request_len: 4096,
        max_frame_len: zk_proto::DEFAULT_MAX_FRAME_LEN,
        request_timeout: Some(Duration::from_secs(3)),
        #[cfg(feature = "sasl")]
        sasl: None,
    }
}

struct Fuzz<'a> {
    data: &'a [u8],
    s: Session,
    now: Instant,
    /// Reply receivers kept alive (some are dropped at once, like abandoned futures).
    receivers: Vec<oneshot::Receiver<crate::command::Answer>>,
    submitted: usize,
    shutdowns: usize,
}

impl Fuzz<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (first, rest) = self.data.split_first()?;
        self.data = rest;
        Some(*first)
    }

    fn u16(&mut self) -> u16 {
        u16::from(self.byte().unwrap_or(0)) << 8 | u16::from(self.byte().unwrap_or(0))
    }

    fn bytes(&mut self, n: usize) -> Bytes {
        let n = n.min(self.data.len());
        let (taken, rest) = self.data.split_at(n);
        self.data = rest;
        Bytes::copy_from_slice(taken)
    }

    fn path(&mut self) -> String {
        const PATHS: [&str; 4] = ["/fz/a", "/fz/a/b", "/fz", "/other"];
        PATHS[usize::from(self.byte().unwrap_or(0)) % PATHS.len()].to_owned()
    }

    fn step(&mut self, op: u8) {
        let now = self.now;
        let result = match op % 10 {
            0 => {
                self.s.handle_connected(now, now + Duration::from_secs(2));
                Ok(())
            }
            1 => {
                let len = usize::from(self.u16() % 512);
                let frame = self.bytes(len);
                self.s.handle_frame(frame, now)
            }
            2 => {
                let ms = u64::from(self.u16());
                self.now += Duration::from_millis(ms);
                self.s.handle_timeout(self.now)
            }
            3 => {
                let reason = crate::session::Disconnect::Closed;
                self.s.handle_disconnect(&reason, now);
                Ok(())
            }
            4 => {
                self.submit();
                Ok(())
            }
            5 => {
                let path = self.path();
                self.s.handle_command(Command::DropWatch { path }, now);
                Ok(())
            }
            6 => {
                let frame = self.connect_response();
                self.s.handle_frame(frame, now)
            }
            7 => {
                let frame = self.reply();
                self.s.handle_frame(frame, now)
            }
            8 => {
                let frame = self.notification();
                self.s.handle_frame(frame, now)
            }
            _ => {
                self.shutdowns += 1;
                self.s.handle_shutdown(now);
                Ok(())
            }
        };
        if let Err(reason) = result {
            self.s.handle_disconnect(&reason, now);
        }
    }

    /// A handshake reply with a fuzzed timeout, session id, password and read-only flag.
    fn connect_response(&mut self) -> Bytes {
        let resp = ConnectResponse {
            protocol_version: 0,
            timeout: i32::from(self.u16()) - 1000,
            session_id: i64::from(self.byte().unwrap_or(0) % 3),
            passwd: self.bytes(16),
            read_only: self.byte().unwrap_or(0).is_multiple_of(2),
        };
        encode(&resp)
    }

    /// A reply header (a special or a small xid, any error code) and fuzzed body bytes.
    fn reply(&mut self) -> Bytes {
        let xid = match self.byte().unwrap_or(0) % 6 {
            0 => special::PING,
            1 => special::AUTH,
            2 => special::SET_WATCHES,
            _ => i32::from(self.byte().unwrap_or(1) % 16),
        };
        let err = ErrorCode::from_i32(-i32::from(self.byte().unwrap_or(0) % 130));
        let mut frame = BytesMut::new();
        ReplyHeader { xid, zxid: 7, err }.encode(&mut frame);
        let len = usize::from(self.byte().unwrap_or(0));
        frame.put_slice(&self.bytes(len));
        frame.freeze()
    }

    /// A watch notification of a fuzzed type on one of the fuzzed paths.
    fn notification(&mut self) -> Bytes {
        let event = WatcherEvent {
            event_type: EventType::from_i32(i32::from(self.byte().unwrap_or(0) % 9) - 1),
            state: KeeperState::SyncConnected,
            path: self.path(),
        };
        let mut frame = BytesMut::new();
        ReplyHeader {
            xid: special::NOTIFICATION,
            zxid: -1,
            err: ErrorCode::Ok,
        }
        .encode(&mut frame);
        event.encode(&mut frame);
        frame.freeze()
    }

    /// A request of a fuzzed kind, with a watch sometimes; its receiver is kept or dropped.
    fn submit(&mut self) {
        let pick = self.byte().unwrap_or(0);
        let path = self.path();
        let (op, watch) = match pick % 8 {
            0 => (OpCode::GetData, Some(WatchKind::Data)),
            1 => (OpCode::Exists, Some(WatchKind::Exist)),
            2 => (OpCode::GetChildren2, Some(WatchKind::Child)),
            3 => (OpCode::AddWatch, Some(WatchKind::Persistent)),
            4 => (OpCode::AddWatch, Some(WatchKind::PersistentRecursive)),
            5 => (OpCode::CloseSession, None),
            6 => (OpCode::Auth, None),
            _ => (OpCode::SetData, None),
        };
        let body = encode(&GetDataRequest {
            path: path.clone(),
            watch: watch.is_some(),
        });
        let body = if pick & 0x40 != 0 {
            // Sometimes over the size limit.
            let mut big = BytesMut::from(&body[..]);
            big.put_bytes(0, 5000);
            big.freeze()
        } else {
            body
        };
        let watch = watch.map(|kind| {
            let sender = match kind {
                WatchKind::Persistent | WatchKind::PersistentRecursive => {
                    WatchSender::Stream(event_queue(2).0)
                }
                _ => WatchSender::Once(oneshot::channel().0),
            };
            WatchAction::Register {
                path: path.clone(),
                kind,
                sender,
                on_server: true,
            }
        });
        let watch = if pick & 0x80 != 0 {
            Some(WatchAction::Remove {
                path,
                kind: WatcherType::Any,
            })
        } else {
            watch
        };
        let (request, rx) = Request::new(op, BytesMut::from(&body[..]), watch);
        if pick & 0x20 == 0 {
            self.receivers.push(rx);
        }
        self.submitted += 1;
        self.s.handle_command(Command::Request(request), self.now);
    }

    fn drain(&mut self) {
        while self.s.poll_transmit().is_some() {}
        while let Some(event) = self.s.poll_event() {
            let _ = event.deliver();
        }
        let _ = self.s.poll_timeout();
        self.receivers.retain_mut(|rx| rx.try_recv().is_err());
    }

    fn check(&self) {
        assert!(self.s.in_flight() <= MAX_OUTSTANDING, "window overrun");
        // Besides what callers submitted, the session queues a closeSession per shutdown and
        // at most one removeWatches per completed watch registration.
        let bound = 2 * self.submitted + self.shutdowns;
        assert!(
            self.s.queued() <= bound,
            "queue grew past what was submitted"
        );
        if self.s.is_done() {
            assert!(self.s.is_terminal(), "done but not terminal");
        }
    }
}

fn encode<R: Record>(r: &R) -> Bytes {
    let mut b = BytesMut::new();
    r.encode(&mut b);
    b.freeze()
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};

    /// Inputs the fuzzer found crashing, kept as regression tests.
    #[test]
    fn found_by_the_fuzzer() {
        let cases: [&[u8]; 1] = [&[
            0, 24, 24, 24, 24, 0, 24, 24, 24, 24, 24, 24, 24, 24, 24, 24, 16, 24, 24, 24, 24, 24,
            24, 24, 24, 24, 24, 24, 24, 33, 24, 24, 174, 15, 0, 0, 0, 24, 24, 24, 24, 24, 24, 24,
            24, 24, 24, 24, 24, 24, 24, 24, 24, 24, 24, 24, 24, 24, 24, 250, 9, 9, 9, 9, 9, 9, 9,
            9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 24, 24, 24, 24, 58, 24,
        ]];
        for case in cases {
            super::drive_session(case);
        }
    }

    /// The fuzz target's body on seeded random scripts, so `cargo test` runs it too.
    #[test]
    fn random_scripts_never_panic() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(0x005e_5510);
        for _ in 0..3000 {
            let len = rng.gen_range(0..1500);
            let data: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            super::drive_session(&data);
        }
    }
}
