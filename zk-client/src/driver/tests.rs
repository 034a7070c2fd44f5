//! The connection task over in-memory streams with paused time: timing behaviour without
//! sockets or wall-clock sleeps.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{
    duplex, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, DuplexStream, ReadBuf,
};
use tokio::sync::{broadcast, mpsc, watch, Mutex};
use tokio::time::Instant;
use zk_proto::records::{ConnectRequest, ConnectResponse};
use zk_proto::{Record, RequestHeader};

use super::transport::{Connector, Transport};
use super::{Driver, DriverConfig};
use crate::client::Client;
use crate::hosts::HostList;
use crate::path::Chroot;
use crate::resolve::Resolver;
use crate::session::{Session, SessionConfig, SET_WATCHES_BATCH_BYTES};
use crate::state::{SessionInfo, SessionState, STATE_HISTORY};
use crate::state_watcher::StateWatcher;

const SESSION: Duration = Duration::from_secs(9);
const CONNECT: Duration = Duration::from_secs(3);

/// The client end of an in-memory connection. Once `refuse` is set, `poll_write` answers
/// `Ok(0)` (takes no bytes and says it is ready), as a broken transport might.
struct MemStream {
    inner: DuplexStream,
    refuse: Arc<AtomicBool>,
}

impl AsyncRead for MemStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for MemStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.refuse.load(Ordering::SeqCst) {
            return Poll::Ready(Ok(0));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl Transport for MemStream {
    type Parked = MemStream;

    fn park(self) -> io::Result<Self::Parked> {
        Ok(self)
    }

    fn unpark(parked: Self::Parked) -> io::Result<Self> {
        Ok(parked)
    }
}

/// Hands the test the server end of every connection, after an optional connect delay.
#[derive(Clone)]
struct MemConnector {
    accepted: mpsc::UnboundedSender<(Instant, DuplexStream)>,
    connect_delay: Arc<Mutex<Duration>>,
    refuse_writes: Arc<AtomicBool>,
}

impl Connector for MemConnector {
    type Stream = MemStream;

    async fn connect(&self, _to: &super::transport::Endpoint) -> io::Result<MemStream> {
        let delay = *self.connect_delay.lock().await;
        tokio::time::sleep(delay).await;
        let (client, server) = duplex(1 << 20);
        // A refusal is for the connection it was set on: a new one writes.
        self.refuse_writes.store(false, Ordering::SeqCst);
        let _ = self.accepted.send((Instant::now(), server));
        Ok(MemStream {
            inner: client,
            refuse: self.refuse_writes.clone(),
        })
    }
}

struct Harness {
    client: Client,
    accepted: mpsc::UnboundedReceiver<(Instant, DuplexStream)>,
    connect_delay: Arc<Mutex<Duration>>,
    /// Makes the current connection's client end answer writes with `Ok(0)` (cleared by
    /// the next connection).
    refuse_writes: Arc<AtomicBool>,
    t0: Instant,
}

fn start() -> Harness {
    start_with(&["a:1", "b:1"], None)
}

/// A client of `hosts` (each resolving to one address); `auto_connect_timeout`: the
/// session timeout when the default connect timeout is to be derived per attempt (else the
/// fixed [`CONNECT`]).
fn start_with(hosts: &[&str], auto_connect_timeout: Option<Duration>) -> Harness {
    let (accepted_tx, accepted) = mpsc::unbounded_channel();
    let connect_delay = Arc::new(Mutex::new(Duration::ZERO));
    let refuse_writes = Arc::new(AtomicBool::new(false));
    let connector = MemConnector {
        accepted: accepted_tx,
        connect_delay: connect_delay.clone(),
        refuse_writes: refuse_writes.clone(),
    };
    let cfg = SessionConfig {
        session_timeout: SESSION,
        connect_timeout: CONNECT,
        read_only: false,
        max_outstanding: 100,
        reconnect_wait: SESSION,
        set_watches_batch: SET_WATCHES_BATCH_BYTES,
        max_request_len: zk_proto::SERVER_MAX_BUFFER,
        max_frame_len: zk_proto::DEFAULT_MAX_FRAME_LEN,
        request_timeout: None,
        #[cfg(feature = "sasl")]
        sasl: None,
    };
    let session = Session::new(cfg, super::now());
    let (tx, rx) = mpsc::unbounded_channel();
    let (info_tx, info_rx) = watch::channel(SessionInfo::default());
    let (transitions_tx, transitions) = broadcast::channel(STATE_HISTORY);
    let driver = Driver::new(
        connector,
        session,
        HostList::new(hosts.iter().map(|h| h.to_string()).collect()).with_resolver(Resolver::new(
            |_, port| async move { Ok(vec![std::net::SocketAddr::from(([127, 0, 0, 1], port))]) },
        )),
        rx,
        info_tx,
        transitions_tx,
        DriverConfig {
            max_frame_len: zk_proto::DEFAULT_MAX_FRAME_LEN,
            batch_reads: true,
            auto_connect_timeout,
        },
    );
    tokio::spawn(driver.run());
    Harness {
        client: Client::new(
            tx,
            info_rx,
            transitions,
            Chroot::default(),
            16,
            Default::default(),
        ),
        accepted,
        connect_delay,
        refuse_writes,
        t0: Instant::now(),
    }
}

async fn read_frame(s: &mut DuplexStream) -> Option<Bytes> {
    let len = s.read_i32().await.ok()?;
    let mut body = vec![0; usize::try_from(len).ok()?];
    s.read_exact(&mut body).await.ok()?;
    Some(Bytes::from(body))
}

async fn handshake(s: &mut DuplexStream, session_id: i64) -> ConnectRequest {
    let mut frame = read_frame(s).await.expect("ConnectRequest");
    let req = ConnectRequest::decode(&mut frame).unwrap();
    let mut out = BytesMut::new();
    zk_proto::frame::encode_frame(&mut out, |b| {
        ConnectResponse {
            protocol_version: 0,
            timeout: SESSION.as_millis() as i32,
            session_id,
            passwd: Bytes::from_static(b"0123456789abcdef"),
            read_only: false,
        }
        .encode(b)
    });
    s.write_all(&out).await.unwrap();
    req
}

impl Harness {
    async fn next_connection(&mut self) -> (Duration, DuplexStream) {
        let (at, s) = self.accepted.recv().await.expect("a connection");
        (at - self.t0, s)
    }

    /// The first connection, its handshake answered as `session_id`, once the client says it
    /// is connected; with the state watcher that saw it.
    async fn connected(&mut self, session_id: i64) -> (DuplexStream, StateWatcher) {
        let (_, mut s) = self.next_connection().await;
        handshake(&mut s, session_id).await;
        let mut states = self.client.watch();
        assert_eq!(
            states.wait_for(|s| s.is_connected()).await,
            SessionState::Connected
        );
        (s, states)
    }
}

#[tokio::test(start_paused = true)]
async fn the_connect_and_the_handshake_share_one_connect_timeout() {
    let mut h = start();
    *h.connect_delay.lock().await = Duration::from_secs(2);
    // The first attempt's TCP connect takes 2 s of the 3 s; the handshake is never answered.
    let (first, _silent) = h.next_connection().await;
    assert_eq!(first, Duration::from_secs(2));
    let (second, _) = h.next_connection().await;
    // Abandoned at 3 s (one deadline), not 2 + 3 s; then the backoff (25-50 ms) and the
    // second attempt's own 2 s connect.
    let abandoned = second - Duration::from_secs(2);
    assert!(
        abandoned >= CONNECT && abandoned <= CONNECT + Duration::from_millis(50),
        "first attempt abandoned at {abandoned:?}"
    );
    drop(h.client);
}

/// One host and the default connect timeout. The server restarts: the connection drops,
/// the first attempt after it is accepted and never answered (ZooKeeper does that to a
/// connection that arrives while it loads its data, ZOOKEEPER-5051), the next one is
/// answered. The session must be resumed. Before the fix the hung attempt had the whole
/// session timeout (9 s over one address), so the client gave the session up as expired
/// (no server had answered for a session timeout) before it could try again.
#[tokio::test(start_paused = true)]
async fn a_handshake_that_hangs_does_not_use_up_the_session() {
    let mut h = start_with(&["a:1"], Some(SESSION));
    let (s, mut states) = h.connected(0x7).await;
    drop(s);
    assert_eq!(states.changed().await, SessionState::Disconnected);
    let lost = Instant::now();
    let (_, _hung) = h.next_connection().await;
    let (_, mut s2) = h.next_connection().await;
    let req = handshake(&mut s2, 0x7).await;
    assert_eq!(req.session_id, 0x7);
    assert_eq!(
        states.wait_for(|s| s.is_connected()).await,
        SessionState::Connected
    );
    // The hung attempt was left after a third of the session timeout.
    let resumed = lost.elapsed();
    assert!(
        resumed >= SESSION / 3 && resumed <= SESSION / 3 + Duration::from_secs(1),
        "resumed {resumed:?} after the loss"
    );
    drop(s2);
}

#[tokio::test(start_paused = true)]
async fn a_server_that_hangs_up_after_each_handshake_gets_fewer_and_fewer_attempts() {
    let mut h = start();
    let mut times = Vec::new();
    while times.len() < 12 {
        let (at, mut s) = h.next_connection().await;
        handshake(&mut s, 0x5).await;
        times.push(at);
        // Hang up at once.
    }
    let gaps: Vec<Duration> = times.windows(2).map(|w| w[1] - w[0]).collect();
    // Doubling from 25-50 ms to 0.5-1 s, never reset by the handshakes.
    assert!(gaps[0] <= Duration::from_millis(60), "{gaps:?}");
    assert!(gaps[9] >= Duration::from_millis(500), "{gaps:?}");
    assert!(
        gaps.iter().all(|g| *g <= Duration::from_millis(1010)),
        "{gaps:?}"
    );
    let in_first_ten_seconds = times
        .iter()
        .filter(|t| **t < Duration::from_secs(10))
        .count();
    assert!(in_first_ten_seconds <= 15, "{times:?}");
}

#[tokio::test(start_paused = true)]
async fn a_silent_server_is_left_after_two_thirds_of_the_session_timeout() {
    let mut h = start();
    let (mut s, mut states) = h.connected(0x6).await;
    let connected = Instant::now();
    // Pings arrive (unanswered) after 1/3 of the timeout of send silence.
    let mut ping = read_frame(&mut s).await.expect("a ping");
    let header = RequestHeader::decode(&mut ping).unwrap();
    assert_eq!(header.xid, zk_proto::xid::PING);
    assert_eq!(connected.elapsed(), SESSION / 3);
    assert_eq!(states.changed().await, SessionState::Disconnected);
    assert_eq!(connected.elapsed(), SESSION * 2 / 3);
    // It resumes the session on the next connection.
    let (_, mut s2) = h.next_connection().await;
    let req = handshake(&mut s2, 0x6).await;
    assert_eq!(req.session_id, 0x6);
    drop((s, s2));
}

/// A transport whose writes take no bytes (`Ok(0)`) is broken: the driver drops the
/// connection at once and resumes the session on another. Before the fix it retried the
/// write in a busy loop that never yielded, until the read timeout (2/3 of the session
/// timeout) ended the connection. So the client and its driver run on a runtime of their
/// own, on a thread of their own, and this thread waits for them in real time: a spinning
/// driver cannot starve the check. The bound is half the read timeout.
#[test]
fn a_write_that_takes_no_bytes_ends_the_connection() {
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let got = runtime.block_on(async {
            let mut h = start();
            let (s, _states) = h.connected(0x9).await;
            h.refuse_writes.store(true, Ordering::SeqCst);
            let get = h.client.get_data("/a");
            let (_, mut s2) = h.next_connection().await;
            let req = handshake(&mut s2, 0x9).await;
            // The request that could not be written fails; it is not left hanging.
            let got = get.await;
            drop((s, s2));
            (req.session_id, got)
        });
        let _ = done_tx.send(got);
    });
    let (session_id, got) = done_rx
        .recv_timeout(SESSION / 3)
        .expect("a new connection, and the unwritten request ended, before the read timeout");
    assert_eq!(session_id, 0x9);
    assert!(matches!(got, Err(crate::Error::ConnectionLoss)), "{got:?}");
}
