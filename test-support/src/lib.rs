//! Test support for the workspace's unit-level tests (h2's `h2-support` pattern): a scripted
//! fake ZooKeeper server on a `127.0.0.1:0` listener, speaking zk-proto, with frame helpers
//! and time limits. Real-server tests live in `integration-tests`; this crate is for tests
//! where a real server is not the point (exact bytes, lost replies, misbehaving servers).
//!
//! Tests drive the server step by step: accept a connection, read the `ConnectRequest`,
//! answer it, read requests, send replies and notifications, hang up. Every wait is bounded
//! by [`LIMIT`] so a broken client fails the test instead of hanging it. Failures panic:
//! this crate is only ever used from tests.
#![forbid(unsafe_code)]
#![allow(missing_docs, clippy::unwrap_used)]

use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use zk_proto::records::{ConnectRequest, ConnectResponse, EventType, KeeperState, WatcherEvent};
use zk_proto::{xid, ErrorCode, Record, ReplyHeader, RequestHeader};

/// Bound on every wait of the fake server.
pub const LIMIT: Duration = Duration::from_secs(30);

/// Awaits `fut` or panics after [`LIMIT`].
pub async fn within<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, fut)
        .await
        .unwrap_or_else(|_| panic!("{what}: not done after {LIMIT:?}"))
}

/// A listening fake server.
pub struct FakeServer {
    listener: TcpListener,
}

impl FakeServer {
    pub async fn start() -> FakeServer {
        FakeServer {
            listener: TcpListener::bind("127.0.0.1:0").await.unwrap(),
        }
    }

    /// Listens on a given address (to bring a "server" back on the same port).
    pub async fn bind(addr: &str) -> FakeServer {
        FakeServer {
            listener: TcpListener::bind(addr).await.unwrap(),
        }
    }

    pub fn addr(&self) -> String {
        self.listener.local_addr().unwrap().to_string()
    }

    /// Accepts the next connection.
    pub async fn accept(&self) -> Conn {
        let (stream, _) = within("accept", self.listener.accept()).await.unwrap();
        stream.set_nodelay(true).unwrap();
        Conn {
            stream,
            rbuf: BytesMut::with_capacity(64 * 1024),
        }
    }

    /// Accepts a connection and completes the handshake with a new session.
    pub async fn accept_session(&self, session_id: i64, timeout_ms: i32) -> (Conn, ConnectRequest) {
        let mut conn = self.accept().await;
        let req = conn.read_connect().await;
        conn.send_connect(session_id, timeout_ms, false).await;
        (conn, req)
    }
}

/// What a connection sent first.
#[derive(Debug)]
pub enum First {
    /// The `isro` four-letter word.
    Isro,
    /// A session handshake.
    Connect(ConnectRequest),
}

/// One accepted client connection.
pub struct Conn {
    stream: TcpStream,
    rbuf: BytesMut,
}

/// A request read from the client.
#[derive(Debug, Clone)]
pub struct Req {
    pub xid: i32,
    pub op: i32,
    pub body: Bytes,
}

impl Conn {
    async fn fill(&mut self, n: usize) -> bool {
        while self.rbuf.len() < n {
            let read = within("read", self.stream.read_buf(&mut self.rbuf)).await;
            match read {
                Ok(0) | Err(_) => return false,
                Ok(_) => {}
            }
        }
        true
    }

    /// The next frame, or `None` at EOF.
    pub async fn read_frame(&mut self) -> Option<Bytes> {
        if !self.fill(4).await {
            return None;
        }
        let len = i32::from_be_bytes(self.rbuf[..4].try_into().unwrap()) as usize;
        if !self.fill(4 + len).await {
            return None;
        }
        self.rbuf.advance(4);
        Some(self.rbuf.split_to(len).freeze())
    }

    /// Reads either `isro` or a `ConnectRequest`.
    pub async fn read_first(&mut self) -> First {
        assert!(self.fill(4).await, "EOF before the first packet");
        if &self.rbuf[..4] == b"isro" {
            self.rbuf.advance(4);
            return First::Isro;
        }
        let mut frame = self.read_frame().await.expect("ConnectRequest");
        First::Connect(ConnectRequest::decode(&mut frame).unwrap())
    }

    pub async fn read_connect(&mut self) -> ConnectRequest {
        match self.read_first().await {
            First::Connect(req) => req,
            First::Isro => panic!("expected a ConnectRequest, got isro"),
        }
    }

    /// Answers `isro` and closes.
    pub async fn answer_isro(mut self, answer: &str) {
        let _ = self.stream.write_all(answer.as_bytes()).await;
        let _ = self.stream.shutdown().await;
    }

    pub async fn send_connect(&mut self, session_id: i64, timeout_ms: i32, read_only: bool) {
        let resp = ConnectResponse {
            protocol_version: 0,
            timeout: timeout_ms,
            session_id,
            passwd: Bytes::from_static(b"fake-password-16"),
            read_only,
        };
        self.send_frame(|b| resp.encode(b)).await;
    }

    pub async fn send_frame(&mut self, body: impl FnOnce(&mut BytesMut)) {
        let mut buf = BytesMut::new();
        zk_proto::frame::encode_frame(&mut buf, body);
        // The client may already be gone; tests check what they care about.
        let _ = self.stream.write_all(&buf).await;
    }

    /// Sends raw bytes (for malformed frames).
    pub async fn send_raw(&mut self, bytes: &[u8]) {
        let _ = self.stream.write_all(bytes).await;
    }

    /// The next request, or `None` at EOF.
    pub async fn read_request(&mut self) -> Option<Req> {
        let mut frame = self.read_frame().await?;
        let h = RequestHeader::decode(&mut frame).unwrap();
        Some(Req {
            xid: h.xid,
            op: h.op,
            body: frame,
        })
    }

    /// The next request that is not a ping (pings are answered).
    pub async fn read_non_ping(&mut self) -> Option<Req> {
        loop {
            let req = self.read_request().await?;
            if req.xid == xid::PING {
                self.reply(xid::PING, 0, ErrorCode::Ok, &[]).await;
                continue;
            }
            return Some(req);
        }
    }

    pub async fn reply(&mut self, xid: i32, zxid: i64, err: ErrorCode, body: &[u8]) {
        self.send_frame(|b| {
            ReplyHeader { xid, zxid, err }.encode(b);
            b.put_slice(body);
        })
        .await;
    }

    /// Encodes a notification frame into `buf` (to batch it with a reply).
    pub fn notification(buf: &mut BytesMut, event_type: EventType, path: &str) {
        zk_proto::frame::encode_frame(buf, |b| {
            ReplyHeader {
                xid: xid::NOTIFICATION,
                zxid: -1,
                err: ErrorCode::Ok,
            }
            .encode(b);
            WatcherEvent {
                event_type,
                state: KeeperState::SyncConnected,
                path: path.into(),
            }
            .encode(b);
        });
    }

    pub async fn notify(&mut self, event_type: EventType, path: &str) {
        let mut buf = BytesMut::new();
        Self::notification(&mut buf, event_type, path);
        self.send_raw(&buf).await;
    }

    /// Waits for the client to close the connection (reading and answering pings).
    pub async fn expect_eof(&mut self) {
        while let Some(req) = self.read_request().await {
            assert_eq!(req.xid, xid::PING, "unexpected request before EOF: {req:?}");
        }
    }
}

/// Connects a client to `server` (connect string: its address + `chroot`) with a
/// `timeout_ms` session timeout and whatever else `builder` sets; the server accepts a new
/// session `session_id`. Returns the client and the server's end of the connection.
pub async fn connect_client(
    server: &FakeServer,
    chroot: &str,
    session_id: i64,
    timeout_ms: i32,
    builder: impl FnOnce(zk_client::ClientBuilder) -> zk_client::ClientBuilder + Send + 'static,
) -> (zk_client::Client, Conn) {
    let hosts = format!("{}{chroot}", server.addr());
    let timeout = Duration::from_millis(u64::try_from(timeout_ms).unwrap_or(0));
    let client = tokio::spawn(async move {
        builder(zk_client::Client::builder(&hosts).session_timeout(timeout))
            .connect()
            .await
    });
    let (conn, req) = server.accept_session(session_id, timeout_ms).await;
    assert_eq!(req.session_id, 0, "a new session");
    (within("connect", client).await.unwrap().unwrap(), conn)
}

/// The body of a `getData` reply with `data` and a default `Stat`.
pub fn data_reply(data: &[u8]) -> Bytes {
    encode(&zk_proto::records::GetDataResponse {
        data: Bytes::copy_from_slice(data),
        stat: zk_proto::Stat::default(),
    })
}

/// Encodes a record.
pub fn encode<R: Record>(r: &R) -> Bytes {
    let mut b = BytesMut::new();
    r.encode(&mut b);
    b.freeze()
}
