//! A ZooKeeper-aware TCP proxy for fault injection, in front of one upstream server.
//!
//! It forwards whole packets (4-byte big-endian length + body, written in one write with
//! `TCP_NODELAY` on both legs). The first client packet of a connection is the `ConnectRequest`
//! and the first server packet the `ConnectResponse`; later requests start `xid: i32, type: i32`
//! and replies `xid: i32, zxid: i64, err: i32`, which is all the proxy looks at.
//!
//! Faults: [`Mode`] (pass, blackhole, refuse, delay) for traffic from now on, [`Proxy::cut`] for the
//! connections open now, and [`Proxy::drop_next_create_reply`] for "the create happened but the
//! client never heard of it", and [`Proxy::drop_on`] for a request the server answers by
//! closing the connection. The proxy's tasks run on the runtime that called [`Proxy::start`]
//! and end when the [`Proxy`] is dropped (or that runtime ends).
//!
//! ```no_run
//! # async fn demo() {
//! use integration_tests::{proxy::Mode, standalone, Proxy};
//! let server = standalone().await;
//! let proxy = Proxy::start(server.addr()).await;
//! // connect the client under test to proxy.connect_string() ...
//! proxy.set_mode(Mode::Blackhole); // a partition: nothing flows, connections stay open
//! proxy.set_mode(Mode::Pass); // healed: held packets are delivered
//! # }
//! ```

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::probe::MAX_PACKET;
use crate::ZkTarget;
use create_scan::is_create;
pub use drop_rule::DropRule;
use drop_rule::Dropper;
use event_zxid::{reply_xid, EventZxids, Side, NOTIFICATION, SET_WATCHES};
use flavour::{Action, Emulator};
pub use flavour::{Emulation, Refusal, UNKNOWN_OPCODE};

mod create_scan;
mod drop_rule;
mod event_zxid;
mod flavour;
mod keeper_ops;

/// What the proxy does with traffic from now on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Forward everything.
    Pass,
    /// A partition: connections are accepted and data is read, but nothing is forwarded in
    /// either direction (held in order until the mode changes; a connection accepted now reaches
    /// the upstream only then). Blackhole longer than the session timeout to expire a session.
    Blackhole,
    /// New connections are refused (the listener is closed: `ECONNREFUSED`, like a server that
    /// is down). Open connections are untouched; combine with [`Proxy::cut`] for a crash.
    Refuse,
    /// Forward every packet, in both directions, this long after it was read.
    Delay(Duration),
}

/// How [`Proxy::cut`] closes connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// An orderly close: both peers read EOF (FIN).
    Close,
    /// An abortive close: both peers get `ECONNRESET` (RST, `SO_LINGER` 0).
    Reset,
}

/// Counters of a [`Proxy`] since it started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stats {
    /// Client connections accepted.
    pub accepted: u64,
    /// Client connections open now.
    pub open: u64,
    /// Packets forwarded to the server (the `ConnectRequest` included).
    pub to_server: u64,
    /// Packets forwarded to the client (the `ConnectResponse` included).
    pub to_client: u64,
    /// Create replies dropped by [`Proxy::drop_next_create_reply`] (and replies dropped by
    /// [`Proxy::drop_next_reply_to`]).
    pub create_replies_dropped: u64,
    /// Connections closed on a request by the [`DropRule`] of [`Proxy::drop_on`].
    pub requests_dropped: u64,
    /// Connections whose `ConnectRequest` asked for a new session (session id 0).
    pub new_sessions: u64,
    /// Requests the emulated server flavour does not support that reached the proxy (see
    /// [`Proxy::emulate`]): a client that knows the server sends none.
    pub unsupported_requests: u64,
    /// Keeper's own requests (`RemoveRecursive`) the emulation carried out on the 3.8 server.
    pub keeper_requests: u64,
    /// `SetWatches`/`SetWatches2` requests (xid -8) forwarded to the server: the packets a
    /// client re-arms its watches with on a new connection.
    pub set_watches: u64,
    /// Their bytes as on the wire, each packet's 4-byte length prefix included.
    pub set_watches_bytes: u64,
    /// Replies to them forwarded to the client.
    pub set_watches_replies: u64,
}

#[derive(Debug)]
struct ConnCtl {
    cancel: CancellationToken,
    cut: Mutex<Cut>,
    /// The xid of this connection's create whose reply must be dropped.
    target_xid: Mutex<Option<i32>>,
    /// `SetWatches` requests forwarded and not answered yet: the notifications they fire
    /// carry no zxid on 3.9 either (`event_zxid.rs`).
    rewatching: AtomicU64,
    /// Xids of Keeper requests sent to the 3.8 server as other requests, whose replies are
    /// turned back into Keeper's (`keeper_ops.rs`).
    translated: Mutex<Vec<i32>>,
}

#[derive(Debug)]
struct Shared {
    upstream: SocketAddr,
    mode: watch::Sender<Mode>,
    conns: Mutex<HashMap<u64, Arc<ConnCtl>>>,
    next_conn: AtomicU64,
    accepted: watch::Sender<u64>,
    open: AtomicU64,
    to_server: AtomicU64,
    to_client: AtomicU64,
    set_watches: AtomicU64,
    set_watches_bytes: AtomicU64,
    set_watches_replies: AtomicU64,
    armed: AtomicU64,
    armed_total: AtomicU64,
    /// Opcodes armed by [`Proxy::drop_next_reply_to`], one entry per reply to drop.
    armed_ops: Mutex<Vec<i32>>,
    dropped: watch::Sender<u64>,
    dropper: Dropper,
    emulator: Emulator,
    event_zxids: EventZxids,
    /// The side session that lists subtrees for Keeper's `RemoveRecursive`.
    keeper_side: Side,
    cancel: CancellationToken,
}

/// A fault-injecting proxy listening on `127.0.0.1:<random port>`. Dropping it closes the
/// listener and every connection.
#[derive(Debug)]
pub struct Proxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl Proxy {
    /// Starts a proxy in [`Mode::Pass`] in front of `upstream`, on the current tokio runtime.
    pub async fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind proxy listener");
        let addr = listener.local_addr().expect("proxy address");
        let shared = Arc::new(Shared {
            upstream,
            mode: watch::channel(Mode::Pass).0,
            conns: Mutex::new(HashMap::new()),
            next_conn: AtomicU64::new(0),
            accepted: watch::channel(0).0,
            open: AtomicU64::new(0),
            to_server: AtomicU64::new(0),
            to_client: AtomicU64::new(0),
            set_watches: AtomicU64::new(0),
            set_watches_bytes: AtomicU64::new(0),
            set_watches_replies: AtomicU64::new(0),
            armed: AtomicU64::new(0),
            armed_total: AtomicU64::new(0),
            armed_ops: Mutex::new(Vec::new()),
            dropped: watch::channel(0).0,
            dropper: Dropper::default(),
            emulator: Emulator::default(),
            event_zxids: EventZxids::new(upstream),
            keeper_side: Side::new(upstream),
            cancel: CancellationToken::new(),
        });
        tokio::spawn(accept_loop(Arc::clone(&shared), listener, addr));
        Proxy { addr, shared }
    }

    /// The address clients connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `127.0.0.1:PORT` of the proxy.
    pub fn connect_string(&self) -> String {
        self.addr.to_string()
    }

    /// The server behind the proxy.
    pub fn upstream(&self) -> SocketAddr {
        self.shared.upstream
    }

    /// Switches the mode; takes effect for packets not yet forwarded.
    pub fn set_mode(&self, mode: Mode) {
        self.shared.mode.send_replace(mode);
    }

    /// The current mode.
    pub fn mode(&self) -> Mode {
        *self.shared.mode.borrow()
    }

    /// Closes every connection open now, on both legs; later connections are unaffected.
    pub fn cut(&self, how: Cut) {
        let conns: Vec<Arc<ConnCtl>> = lock(&self.shared.conns).values().cloned().collect();
        for c in conns {
            *lock(&c.cut) = how;
            c.cancel.cancel();
        }
    }

    /// Arms a one-shot fault: the next request (on any connection) that is a create (opcodes 1,
    /// 15, 19, 21) or a multi (14) containing one is forwarded; the server's reply to it is
    /// dropped and that connection is then closed on both legs. The node exists on the server,
    /// the client only sees a connection loss. Arming twice drops two replies.
    pub fn drop_next_create_reply(&self) {
        self.shared.armed_total.fetch_add(1, Ordering::SeqCst);
        self.shared.armed.fetch_add(1, Ordering::SeqCst);
    }

    /// Arms a one-shot fault like [`drop_next_create_reply`](Self::drop_next_create_reply)
    /// for the next request of `opcode` (e.g. `5`, setData; `2`, delete): it is forwarded,
    /// its reply dropped and the connection closed on both legs. Counted with the create
    /// replies ([`Stats::create_replies_dropped`], [`wait_create_reply_dropped`](Self::wait_create_reply_dropped)).
    pub fn drop_next_reply_to(&self, opcode: i32) {
        self.shared.armed_total.fetch_add(1, Ordering::SeqCst);
        lock(&self.shared.armed_ops).push(opcode);
    }

    /// From now on, closes the connection (both legs, FIN) instead of forwarding a request
    /// that matches `rule`, as a server does with a request it does not accept; `None`
    /// forwards everything again. Counted in [`Stats::requests_dropped`].
    pub fn drop_on(&self, rule: Option<DropRule>) {
        self.shared.dropper.set(rule);
    }

    /// With `true`, turns every resume `ConnectRequest` into one for a new session: the server
    /// answers with another session id and the client's session is gone (it reports
    /// `Expired`), as with a server that never resumes sessions (ClickHouse Keeper).
    pub fn refuse_resume(&self, refuse: bool) {
        self.shared
            .dropper
            .no_resume
            .store(refuse, Ordering::SeqCst);
    }

    /// From now on, emulates another server flavour in front of the real one (`None`: the
    /// real server as it is): requests it does not support are refused its way (ZooKeeper:
    /// `UNIMPLEMENTED` then the connection closed; Keeper: the connection closed) and
    /// counted in [`Stats::unsupported_requests`]; Keeper never resumes a session and shows
    /// its `/keeper` nodes (read from under [`Emulation::keeper_root`] on the real server,
    /// which the test creates). Each flavour's sources are in [`Emulation`]'s docs.
    pub fn emulate(&self, emulation: Option<Emulation>) {
        let no_resume = emulation.as_ref().is_some_and(|e| e.no_resume);
        self.shared.emulator.set(emulation);
        self.refuse_resume(no_resume);
    }

    /// Waits up to `limit` until every armed [`drop_next_create_reply`](Self::drop_next_create_reply)
    /// has fired; returns whether they did.
    pub async fn wait_create_reply_dropped(&self, limit: Duration) -> bool {
        let want = self.shared.armed_total.load(Ordering::SeqCst);
        let mut rx = self.shared.dropped.subscribe();
        tokio::time::timeout(limit, rx.wait_for(|n| *n >= want))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Waits up to `limit` until at least `n` connections have been accepted in total.
    pub async fn wait_accepted(&self, n: u64, limit: Duration) -> bool {
        let mut rx = self.shared.accepted.subscribe();
        tokio::time::timeout(limit, rx.wait_for(|a| *a >= n))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// The counters now.
    pub fn stats(&self) -> Stats {
        let s = &self.shared;
        Stats {
            accepted: *s.accepted.borrow(),
            open: s.open.load(Ordering::SeqCst),
            to_server: s.to_server.load(Ordering::SeqCst),
            to_client: s.to_client.load(Ordering::SeqCst),
            create_replies_dropped: *s.dropped.borrow(),
            requests_dropped: s.dropper.dropped.load(Ordering::SeqCst),
            new_sessions: s.dropper.new_sessions.load(Ordering::SeqCst),
            unsupported_requests: s.emulator.refused.load(Ordering::SeqCst),
            keeper_requests: s.emulator.translated.load(Ordering::SeqCst),
            set_watches: s.set_watches.load(Ordering::SeqCst),
            set_watches_bytes: s.set_watches_bytes.load(Ordering::SeqCst),
            set_watches_replies: s.set_watches_replies.load(Ordering::SeqCst),
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shared.cancel.cancel();
        for c in lock(&self.shared.conns).values() {
            c.cancel.cancel();
        }
    }
}

impl ZkTarget for Proxy {
    fn client_addrs(&self) -> Vec<SocketAddr> {
        vec![self.addr]
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

async fn accept_loop(shared: Arc<Shared>, listener: TcpListener, addr: SocketAddr) {
    let mut mode_rx = shared.mode.subscribe();
    let mut listener = Some(listener);
    loop {
        let refusing = *mode_rx.borrow_and_update() == Mode::Refuse;
        if refusing {
            listener = None; // closed: connects are refused
        } else if listener.is_none() {
            listener = rebind(addr, &shared.cancel).await;
            if listener.is_none() {
                return; // cancelled, or the port was taken (reported)
            }
        }
        tokio::select! {
            () = shared.cancel.cancelled() => return,
            changed = mode_rx.changed() => if changed.is_err() { return },
            accepted = accept(listener.as_ref()) => match accepted {
                Ok(client) => {
                    shared.accepted.send_modify(|n| *n += 1);
                    tokio::spawn(connection(Arc::clone(&shared), client));
                }
                Err(e) => {
                    eprintln!("proxy {addr}: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
        }
    }
}

async fn accept(listener: Option<&TcpListener>) -> std::io::Result<TcpStream> {
    match listener {
        Some(l) => l.accept().await.map(|(s, _)| s),
        None => std::future::pending().await,
    }
}

async fn rebind(addr: SocketAddr, cancel: &CancellationToken) -> Option<TcpListener> {
    for _ in 0..250 {
        if cancel.is_cancelled() {
            return None;
        }
        match TcpListener::bind(addr).await {
            Ok(l) => return Some(l),
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
    eprintln!("proxy {addr}: could not listen again after Refuse (port taken?)");
    None
}

async fn connection(shared: Arc<Shared>, client: TcpStream) {
    let id = shared.next_conn.fetch_add(1, Ordering::SeqCst);
    let ctl = Arc::new(ConnCtl {
        cancel: shared.cancel.child_token(),
        cut: Mutex::new(Cut::Close),
        target_xid: Mutex::new(None),
        rewatching: AtomicU64::new(0),
        translated: Mutex::new(Vec::new()),
    });
    lock(&shared.conns).insert(id, Arc::clone(&ctl));
    shared.open.fetch_add(1, Ordering::SeqCst);
    run_connection(&shared, &ctl, client).await;
    lock(&shared.conns).remove(&id);
    shared.open.fetch_sub(1, Ordering::SeqCst);
}

async fn run_connection(shared: &Arc<Shared>, ctl: &Arc<ConnCtl>, client: TcpStream) {
    let _ = client.set_nodelay(true);
    // A connection accepted during a partition reaches the server only once it heals.
    let mut mode_rx = shared.mode.subscribe();
    let healed = mode_rx.wait_for(|m| *m != Mode::Blackhole);
    tokio::select! {
        () = ctl.cancel.cancelled() => return finish(client, *lock(&ctl.cut)),
        r = healed => if r.is_err() { return },
    }
    let connect = tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(shared.upstream));
    let upstream = tokio::select! {
        () = ctl.cancel.cancelled() => return finish(client, *lock(&ctl.cut)),
        r = connect => match r {
            Ok(Ok(s)) => s,
            _ => return finish(client, Cut::Close), // upstream down: the client sees EOF
        },
    };
    let _ = upstream.set_nodelay(true);
    let (cr, cw) = client.into_split();
    let (ur, uw) = upstream.into_split();
    let (c2s_tx, c2s_rx) = mpsc::unbounded_channel();
    let (s2c_tx, s2c_rx) = mpsc::unbounded_channel();
    let tasks = [
        tokio::spawn(reader(cr, c2s_tx, ctl.cancel.clone())),
        tokio::spawn(reader(ur, s2c_tx, ctl.cancel.clone())),
        tokio::spawn(writer(
            Arc::clone(shared),
            Arc::clone(ctl),
            c2s_rx,
            uw,
            Dir::ToServer,
        )),
        tokio::spawn(writer(
            Arc::clone(shared),
            Arc::clone(ctl),
            s2c_rx,
            cw,
            Dir::ToClient,
        )),
    ];
    for t in tasks {
        let _ = t.await;
    }
}

fn finish(stream: TcpStream, how: Cut) {
    if how == Cut::Reset {
        let _ = stream.set_zero_linger();
    }
    drop(stream);
}

/// One packet, length prefix included, and when it was read.
type Packet = (Instant, Bytes);

/// Reads packets until EOF, error or cancellation; an error or a bad length cuts the connection.
async fn reader(half: OwnedReadHalf, tx: mpsc::UnboundedSender<Packet>, cancel: CancellationToken) {
    let mut r = BufReader::new(half);
    loop {
        let packet = tokio::select! {
            () = cancel.cancelled() => return,
            p = read_packet(&mut r) => p,
        };
        match packet {
            Ok(Some(p)) => {
                if tx.send((Instant::now(), p)).is_err() {
                    return;
                }
            }
            Ok(None) => return, // EOF: the writer drains what is queued, then closes its leg
            Err(_) => {
                cancel.cancel();
                return;
            }
        }
    }
}

async fn read_packet(r: &mut BufReader<OwnedReadHalf>) -> std::io::Result<Option<Bytes>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let n = u32::from_be_bytes(len) as usize;
    if n > MAX_PACKET {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "packet too large",
        ));
    }
    let mut buf = BytesMut::with_capacity(4 + n);
    buf.put_slice(&len);
    buf.resize(4 + n, 0);
    r.read_exact(&mut buf[4..]).await?;
    Ok(Some(buf.freeze()))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dir {
    ToServer,
    ToClient,
}

/// Forwards packets in order, applying the mode and the create-reply fault.
async fn writer(
    shared: Arc<Shared>,
    ctl: Arc<ConnCtl>,
    mut rx: mpsc::UnboundedReceiver<Packet>,
    mut half: OwnedWriteHalf,
    dir: Dir,
) {
    let mut mode_rx = shared.mode.subscribe();
    let mut first = true;
    let cancelled = loop {
        let next = tokio::select! {
            () = ctl.cancel.cancelled() => break true,
            p = rx.recv() => p,
        };
        let Some((read_at, packet)) = next else {
            break false;
        };
        tokio::select! {
            () = ctl.cancel.cancelled() => break true,
            () = gate(&mut mode_rx, read_at) => {}
        }
        let is_handshake = std::mem::replace(&mut first, false);
        let packet = if dir == Dir::ToServer && is_handshake {
            shared.dropper.note_connect(packet)
        } else {
            packet
        };
        let packet = if dir == Dir::ToServer && !is_handshake {
            tokio::select! {
                () = ctl.cancel.cancelled() => break true,
                p = keeper_op(&shared, &ctl, packet) => p,
            }
        } else {
            packet
        };
        let packet = if dir == Dir::ToServer && !is_handshake {
            match shared.emulator.handle(packet) {
                Action::Forward(p) => p,
                Action::Close => {
                    ctl.cancel.cancel();
                    break true;
                }
            }
        } else {
            packet
        };
        if dir == Dir::ToServer && !is_handshake && shared.dropper.drops(&packet) {
            ctl.cancel.cancel();
            break true;
        }
        let packet = if is_handshake {
            packet
        } else {
            tokio::select! {
                () = ctl.cancel.cancelled() => break true,
                p = event_zxid(&shared, &ctl, dir, packet) => p,
            }
        };
        if !is_handshake && inspect(&shared, &ctl, dir, &packet) == Verdict::DropAndCut {
            shared.dropped.send_modify(|n| *n += 1);
            ctl.cancel.cancel();
            break true;
        }
        let write = tokio::select! {
            () = ctl.cancel.cancelled() => break true,
            w = half.write_all(&packet) => w,
        };
        if write.is_err() {
            ctl.cancel.cancel();
            break true;
        }
        let counter = if dir == Dir::ToServer {
            &shared.to_server
        } else {
            &shared.to_client
        };
        counter.fetch_add(1, Ordering::SeqCst);
        if !is_handshake && reply_xid(&packet) == Some(SET_WATCHES) {
            count_set_watches(&shared, dir, packet.len());
        }
    };
    // The reader may have ended first (dropping our channel) because of the same cancellation.
    if (cancelled || ctl.cancel.is_cancelled()) && *lock(&ctl.cut) == Cut::Reset {
        let _ = half.as_ref().set_zero_linger();
        half.forget(); // no FIN first: the socket closes with RST when both halves are gone
    }
    // Otherwise dropping the half sends FIN after everything queued was written.
}

/// Counts a `SetWatches` packet (`len`: its bytes, length prefix included) or its reply.
fn count_set_watches(shared: &Shared, dir: Dir, len: usize) {
    if dir == Dir::ToServer {
        shared.set_watches.fetch_add(1, Ordering::SeqCst);
        shared
            .set_watches_bytes
            .fetch_add(len as u64, Ordering::SeqCst);
    } else {
        shared.set_watches_replies.fetch_add(1, Ordering::SeqCst);
    }
}

/// ZooKeeper 3.9's watch-event zxid, when the emulation has it (`event_zxid.rs`): fills it
/// into a notification, except while a `SetWatches` is being answered.
async fn event_zxid(shared: &Shared, ctl: &ConnCtl, dir: Dir, packet: Bytes) -> Bytes {
    let xid = reply_xid(&packet);
    if dir == Dir::ToClient {
        let mut translated = lock(&ctl.translated);
        if let Some(i) = translated.iter().position(|x| Some(*x) == xid) {
            translated.remove(i);
            return keeper_ops::reply(&packet);
        }
    }
    match (dir, xid) {
        (Dir::ToServer, Some(SET_WATCHES)) => {
            ctl.rewatching.fetch_add(1, Ordering::SeqCst);
            packet
        }
        (Dir::ToClient, Some(SET_WATCHES)) => {
            let _ = ctl
                .rewatching
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
            packet
        }
        (Dir::ToClient, Some(NOTIFICATION))
            if ctl.rewatching.load(Ordering::SeqCst) == 0
                && shared.emulator.get().is_some_and(|e| e.event_zxids) =>
        {
            shared.event_zxids.fill(packet).await
        }
        _ => packet,
    }
}

/// Keeper's own requests the emulation has (`keeper_ops.rs`), as 3.8 requests.
async fn keeper_op(shared: &Shared, ctl: &ConnCtl, packet: Bytes) -> Bytes {
    let op = packet.get(8..12).and_then(|b| <[u8; 4]>::try_from(b).ok());
    let wanted = op.map(i32::from_be_bytes) == Some(keeper_ops::REMOVE_RECURSIVE)
        && shared
            .emulator
            .get()
            .is_some_and(|e| e.remove_recursive && e.translate_keeper_ops);
    if !wanted {
        return packet;
    }
    match keeper_ops::translate(&shared.keeper_side, &packet).await {
        Some(translated) => {
            if let Some(xid) = reply_xid(&packet) {
                lock(&ctl.translated).push(xid);
            }
            shared.emulator.count_translated();
            translated
        }
        None => packet,
    }
}

/// Waits until `mode` lets a packet read at `read_at` through.
async fn gate(mode_rx: &mut watch::Receiver<Mode>, read_at: Instant) {
    for _ in 0..1_000_000 {
        let mode = *mode_rx.borrow_and_update();
        match mode {
            Mode::Pass | Mode::Refuse => return,
            Mode::Delay(d) => {
                tokio::select! {
                    () = tokio::time::sleep_until(read_at + d) => return,
                    r = mode_rx.changed() => if r.is_err() { return },
                }
            }
            Mode::Blackhole => {
                if mode_rx.changed().await.is_err() {
                    return;
                }
            }
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    Forward,
    DropAndCut,
}

/// The create-reply fault: claims an armed drop for a create request, and drops its reply.
fn inspect(shared: &Shared, ctl: &ConnCtl, dir: Dir, packet: &Bytes) -> Verdict {
    let mut body = packet.slice(4..);
    if body.remaining() < 8 {
        return Verdict::Forward;
    }
    let xid = body.get_i32();
    match dir {
        Dir::ToServer => {
            let op_code = body.get_i32();
            let claimable = lock(&ctl.target_xid).is_none()
                && shared.armed.load(Ordering::SeqCst) > 0
                && is_create(op_code, &body);
            if claimable
                && shared
                    .armed
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |a| a.checked_sub(1))
                    .is_ok()
            {
                *lock(&ctl.target_xid) = Some(xid);
            } else if lock(&ctl.target_xid).is_none() {
                let mut ops = lock(&shared.armed_ops);
                if let Some(i) = ops.iter().position(|o| *o == op_code) {
                    ops.remove(i);
                    *lock(&ctl.target_xid) = Some(xid);
                }
            }
            Verdict::Forward
        }
        Dir::ToClient => {
            if *lock(&ctl.target_xid) == Some(xid) {
                Verdict::DropAndCut
            } else {
                Verdict::Forward
            }
        }
    }
}
