//! A minimal raw ZooKeeper client speaking the wire format directly, so the harness needs no
//! other crate of this workspace: handshakes, a few node operations, `closeSession`, and the
//! four-letter words.
//!
//! Wire layout (all integers big-endian): every packet is `len: i32` + `len` bytes. The first
//! client packet is a `ConnectRequest`, the first server packet a `ConnectResponse`; after that a
//! request is `xid: i32, type: i32, body` and a reply `xid: i32, zxid: i64, err: i32, body`.
//! Strings and buffers are `len: i32` + bytes (`-1` = null).
//!
//! Every call is bounded by the session's I/O timeout ([`Session::set_io_timeout`]).

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

/// Opcodes used by the probe and the proxy (values from `ZooDefs.OpCode`).
pub mod op {
    /// `create`
    pub const CREATE: i32 = 1;
    /// `delete`
    pub const DELETE: i32 = 2;
    /// `exists`
    pub const EXISTS: i32 = 3;
    /// `getData`
    pub const GET_DATA: i32 = 4;
    /// `setData`
    pub const SET_DATA: i32 = 5;
    /// `check` (inside a multi)
    pub const CHECK: i32 = 13;
    /// `multi`
    pub const MULTI: i32 = 14;
    /// `create2`
    pub const CREATE2: i32 = 15;
    /// `createContainer`
    pub const CREATE_CONTAINER: i32 = 19;
    /// `createTTL`
    pub const CREATE_TTL: i32 = 21;
    /// `closeSession`
    pub const CLOSE_SESSION: i32 = -11;
}

/// The server's `NoNode` error code.
pub const ERR_NO_NODE: i32 = -101;
/// The server's `NotReadOnly` error code (a read-only server refusing a write, or refusing to
/// create a new global session).
pub const ERR_NOT_READ_ONLY: i32 = -119;
/// The server's `NodeExists` error code.
pub const ERR_NODE_EXISTS: i32 = -110;
/// Largest packet the probe accepts (the server's default `jute.maxbuffer` is 1 MiB, plus slack).
pub const MAX_PACKET: usize = 16 << 20;
/// Default bound for one request/response exchange of a [`Session`].
pub const DEFAULT_IO_TIMEOUT: Duration = Duration::from_secs(10);

/// What went wrong in a probe call.
#[derive(Debug)]
pub enum ProbeError {
    /// The socket failed, or the call exceeded its timeout (`ErrorKind::TimedOut`).
    Io(io::Error),
    /// The server answered with this error code (e.g. [`ERR_NO_NODE`]).
    Server(i32),
    /// The server refused the session (expired or unknown session id): `timeOut <= 0`.
    SessionExpired,
    /// The server sent something the probe cannot parse.
    Protocol(&'static str),
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProbeError::Io(e) => write!(f, "i/o error: {e}"),
            ProbeError::Server(code) => write!(f, "server error code {code}"),
            ProbeError::SessionExpired => f.write_str("session expired"),
            ProbeError::Protocol(what) => write!(f, "protocol error: {what}"),
        }
    }
}

impl std::error::Error for ProbeError {}

impl From<io::Error> for ProbeError {
    fn from(e: io::Error) -> Self {
        ProbeError::Io(e)
    }
}

impl ProbeError {
    /// True when the call failed because it ran out of time (a hang, not a refusal).
    pub fn is_timeout(&self) -> bool {
        matches!(self, ProbeError::Io(e) if e.kind() == io::ErrorKind::TimedOut)
    }
}

/// Node creation flags (`CreateMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateMode {
    /// Persistent node (flags 0).
    Persistent,
    /// Ephemeral node, removed with its session (flags 1).
    Ephemeral,
    /// Persistent sequential node (flags 2).
    PersistentSequential,
    /// Ephemeral sequential node (flags 3).
    EphemeralSequential,
}

impl CreateMode {
    fn flags(self) -> i32 {
        match self {
            CreateMode::Persistent => 0,
            CreateMode::Ephemeral => 1,
            CreateMode::PersistentSequential => 2,
            CreateMode::EphemeralSequential => 3,
        }
    }
}

/// Parameters of a handshake.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// Requested session timeout (the server clamps it to `[2, 20] * tickTime`, raised to
    /// `maxSessionTimeout` = 60 s in the harness' configuration).
    pub session_timeout: Duration,
    /// `0` for a new session, or the id of a session to resume.
    pub session_id: i64,
    /// The password of the session to resume (16 bytes), zeros for a new session.
    pub passwd: [u8; 16],
    /// Ask for a read-only session (accepted by a server that lost its quorum).
    pub read_only: bool,
    /// Bound for connecting and for the handshake itself.
    pub io_timeout: Duration,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            session_timeout: Duration::from_secs(10),
            session_id: 0,
            passwd: [0; 16],
            read_only: false,
            io_timeout: DEFAULT_IO_TIMEOUT,
        }
    }
}

/// One established ZooKeeper session over one TCP connection. Requests are sent one at a time.
#[derive(Debug)]
pub struct Session {
    stream: TcpStream,
    session_id: i64,
    passwd: [u8; 16],
    negotiated_timeout: Duration,
    read_only: bool,
    next_xid: i32,
    io_timeout: Duration,
}

impl Session {
    /// Opens a new session with the default [`ConnectOptions`] (10 s session timeout).
    pub async fn connect(addr: SocketAddr) -> Result<Session, ProbeError> {
        Session::connect_with(addr, &ConnectOptions::default()).await
    }

    /// Connects and performs the handshake described by `opts`.
    ///
    /// Fails with [`ProbeError::SessionExpired`] when the server refuses to resume the session.
    pub async fn connect_with(
        addr: SocketAddr,
        opts: &ConnectOptions,
    ) -> Result<Session, ProbeError> {
        let io_timeout = opts.io_timeout;
        let stream = bounded(io_timeout, TcpStream::connect(addr)).await??;
        stream.set_nodelay(true)?;
        let mut session = Session {
            stream,
            session_id: 0,
            passwd: [0; 16],
            negotiated_timeout: Duration::ZERO,
            read_only: false,
            next_xid: 1,
            io_timeout,
        };
        let packet = connect_packet(opts);
        bounded(io_timeout, session.stream.write_all(&packet)).await??;
        let mut resp = session.recv().await?;
        if resp.remaining() == 16 {
            // Not a ConnectResponse but a reply header {xid 0, zxid, err}: e.g. a read-only
            // server refusing to create a global session (NOTREADONLY, -119).
            resp.advance(12);
            return Err(ProbeError::Server(resp.get_i32()));
        }
        if resp.remaining() < 16 {
            return Err(ProbeError::Protocol("short ConnectResponse"));
        }
        let _protocol_version = resp.get_i32();
        let timeout_ms = resp.get_i32();
        let session_id = resp.get_i64();
        let passwd = get_buffer(&mut resp)?;
        if timeout_ms <= 0 {
            return Err(ProbeError::SessionExpired);
        }
        session.session_id = session_id;
        session.passwd = passwd
            .as_ref()
            .try_into()
            .map_err(|_| ProbeError::Protocol("session password is not 16 bytes"))?;
        session.negotiated_timeout = Duration::from_millis(u64::from(timeout_ms.unsigned_abs()));
        session.read_only = resp.remaining() >= 1 && resp.get_u8() != 0;
        Ok(session)
    }

    /// The session id the server assigned.
    pub fn session_id(&self) -> i64 {
        self.session_id
    }

    /// The session password the server assigned.
    pub fn passwd(&self) -> [u8; 16] {
        self.passwd
    }

    /// The session timeout the server granted.
    pub fn negotiated_timeout(&self) -> Duration {
        self.negotiated_timeout
    }

    /// Whether the server granted a read-only session.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Changes the bound of each later request/response exchange.
    pub fn set_io_timeout(&mut self, io_timeout: Duration) {
        self.io_timeout = io_timeout;
    }

    /// Creates `path` with `data` (open ACL) and returns the created path (with its sequence
    /// suffix for sequential modes).
    pub async fn create(
        &mut self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
    ) -> Result<String, ProbeError> {
        let mut body = BytesMut::new();
        put_string(&mut body, path);
        put_buffer(&mut body, data);
        body.put_i32(1); // one ACL: world:anyone, all permissions
        body.put_i32(31);
        put_string(&mut body, "world");
        put_string(&mut body, "anyone");
        body.put_i32(mode.flags());
        let mut reply = self.call(op::CREATE, &body).await?;
        let created = get_buffer(&mut reply)?;
        String::from_utf8(created.to_vec()).map_err(|_| ProbeError::Protocol("path is not UTF-8"))
    }

    /// Whether `path` exists (`exists` without a watch).
    pub async fn exists(&mut self, path: &str) -> Result<bool, ProbeError> {
        let mut body = BytesMut::new();
        put_string(&mut body, path);
        body.put_u8(0);
        match self.call(op::EXISTS, &body).await {
            Ok(_) => Ok(true),
            Err(ProbeError::Server(ERR_NO_NODE)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The data of `path` (`getData` without a watch).
    pub async fn get_data(&mut self, path: &str) -> Result<Bytes, ProbeError> {
        let mut body = BytesMut::new();
        put_string(&mut body, path);
        body.put_u8(0);
        let mut reply = self.call(op::GET_DATA, &body).await?;
        get_buffer(&mut reply)
    }

    /// Deletes `path` whatever its version.
    pub async fn delete(&mut self, path: &str) -> Result<(), ProbeError> {
        let mut body = BytesMut::new();
        put_string(&mut body, path);
        body.put_i32(-1);
        self.call(op::DELETE, &body).await.map(drop)
    }

    /// Sends `closeSession` and waits for its reply: the session ends now (its ephemeral nodes
    /// go away) instead of at its timeout.
    pub async fn close(mut self) -> Result<(), ProbeError> {
        self.call(op::CLOSE_SESSION, &[]).await.map(drop)
    }

    /// Sends one request and returns the body of its reply, skipping notifications and pings.
    pub async fn call(&mut self, op_code: i32, body: &[u8]) -> Result<Bytes, ProbeError> {
        let xid = self.next_xid;
        self.next_xid = self.next_xid.wrapping_add(1).max(1);
        let mut packet = BytesMut::with_capacity(8 + body.len());
        packet.put_i32(xid);
        packet.put_i32(op_code);
        packet.put_slice(body);
        self.send(&packet).await?;
        for _ in 0..10_000 {
            let mut reply = self.recv().await?;
            if reply.remaining() < 16 {
                return Err(ProbeError::Protocol("short reply header"));
            }
            let reply_xid = reply.get_i32();
            let _zxid = reply.get_i64();
            let err = reply.get_i32();
            if reply_xid != xid {
                if reply_xid < 0 {
                    continue; // notification (-1), ping (-2), ...
                }
                return Err(ProbeError::Protocol("reply for another xid"));
            }
            return if err == 0 {
                Ok(reply)
            } else {
                Err(ProbeError::Server(err))
            };
        }
        Err(ProbeError::Protocol("too many unsolicited packets"))
    }

    async fn send(&mut self, body: &[u8]) -> Result<(), ProbeError> {
        let mut packet = BytesMut::with_capacity(4 + body.len());
        packet.put_u32(u32::try_from(body.len()).map_err(|_| ProbeError::Protocol("too big"))?);
        packet.put_slice(body);
        bounded(self.io_timeout, self.stream.write_all(&packet)).await??;
        Ok(())
    }

    async fn recv(&mut self) -> Result<Bytes, ProbeError> {
        let io_timeout = self.io_timeout;
        bounded(io_timeout, read_packet(&mut self.stream)).await?
    }
}

/// The whole `ConnectRequest` packet (length prefix included) for `opts`, for tests that drive a
/// raw socket themselves.
pub fn connect_packet(opts: &ConnectOptions) -> Bytes {
    let mut body = BytesMut::with_capacity(49);
    body.put_i32(0); // length, patched below
    body.put_i32(0); // protocolVersion
    body.put_i64(0); // lastZxidSeen
    body.put_i32(i32::try_from(opts.session_timeout.as_millis()).unwrap_or(i32::MAX));
    body.put_i64(opts.session_id);
    put_buffer(&mut body, &opts.passwd);
    body.put_u8(u8::from(opts.read_only));
    let len = (body.len() - 4) as u32;
    body[..4].copy_from_slice(&len.to_be_bytes());
    body.freeze()
}

/// Reads one length-prefixed packet and returns its body (without the length).
pub async fn read_packet_from(stream: &mut TcpStream) -> Result<Bytes, ProbeError> {
    read_packet(stream).await
}

/// Reads one length-prefixed packet.
async fn read_packet(stream: &mut TcpStream) -> Result<Bytes, ProbeError> {
    let len = stream.read_u32().await? as usize;
    if len > MAX_PACKET {
        return Err(ProbeError::Protocol("packet too large"));
    }
    let mut buf = vec![0; len];
    stream.read_exact(&mut buf).await?;
    Ok(Bytes::from(buf))
}

async fn bounded<T>(
    limit: Duration,
    fut: impl std::future::Future<Output = T>,
) -> Result<T, ProbeError> {
    timeout(limit, fut).await.map_err(|_| {
        ProbeError::Io(io::Error::new(
            io::ErrorKind::TimedOut,
            "zookeeper probe timed out",
        ))
    })
}

fn put_string(buf: &mut BytesMut, s: &str) {
    put_buffer(buf, s.as_bytes());
}

fn put_buffer(buf: &mut BytesMut, data: &[u8]) {
    buf.put_i32(i32::try_from(data.len()).unwrap_or(i32::MAX));
    buf.put_slice(data);
}

fn get_buffer(buf: &mut Bytes) -> Result<Bytes, ProbeError> {
    if buf.remaining() < 4 {
        return Err(ProbeError::Protocol("truncated buffer length"));
    }
    let len = buf.get_i32();
    if len < 0 {
        return Ok(Bytes::new());
    }
    let len = len as usize;
    if buf.remaining() < len {
        return Err(ProbeError::Protocol("truncated buffer"));
    }
    Ok(buf.split_to(len))
}

/// Sends a four-letter word (`srvr`, `stat`, `ruok`, `mntr`, ...) and returns the whole answer.
///
/// Fails with `ErrorKind::TimedOut` when the server does not answer within `limit` (a paused
/// server still accepts the TCP connection but never answers).
pub async fn four_letter_word(addr: SocketAddr, word: &str, limit: Duration) -> io::Result<String> {
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        stream.write_all(word.as_bytes()).await?;
        let mut out = Vec::new();
        (&mut stream).take(1 << 20).read_to_end(&mut out).await?;
        Ok::<_, io::Error>(String::from_utf8_lossy(&out).into_owned())
    };
    timeout(limit, exchange).await.map_err(|_| {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!("{word} to {addr} timed out"),
        )
    })?
}

/// Attempts of [`expire_session`] whose connection the session's own client takes back.
const EXPIRE_ATTEMPTS: usize = 20;

/// Ends the session `session_id` now: connects a second time with the same id and password and
/// sends `closeSession`, which the server treats as the session ending (its ephemeral nodes are
/// deleted and its other connection gets `SESSION_EXPIRED`/closed).
///
/// The other way to expire a session through the harness: put a [`Proxy`](crate::Proxy) in
/// front of the server, set [`Mode::Blackhole`](crate::proxy::Mode::Blackhole) for longer than
/// the negotiated session timeout, then heal it; the client's reconnect then sees an expired
/// session.
pub async fn expire_session(
    addr: SocketAddr,
    session_id: i64,
    passwd: [u8; 16],
) -> Result<(), ProbeError> {
    let opts = ConnectOptions {
        session_id,
        passwd,
        ..ConnectOptions::default()
    };
    // The session's own client may win it back: when it reconnects with the same id, the
    // server moves the session to that connection and closes ours, sometimes before our
    // closeSession is answered. Try again (bounded); the session is ours again at once.
    let mut last = None;
    for _ in 0..EXPIRE_ATTEMPTS {
        let attempt = match Session::connect_with(addr, &opts).await {
            Ok(session) => session.close().await,
            // Already gone: that is the state the caller wants.
            Err(ProbeError::SessionExpired) => return Ok(()),
            Err(e) => Err(e),
        };
        match attempt {
            Ok(()) => return Ok(()),
            Err(ProbeError::Io(e)) if e.kind() == io::ErrorKind::UnexpectedEof => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(ProbeError::Io(
        last.unwrap_or_else(|| io::ErrorKind::UnexpectedEof.into()),
    ))
}

/// The watch notifications the server has sent so far: the sum of `mntr`'s
/// `zk_sum_node_{created,deleted,changed,children}_watch_count` (3.8's `wchs`/`wchc` list
/// no child watches, so a herd would hide there).
///
/// # Errors
///
/// The four-letter word failed, or `mntr` lacks one of the counters or has a value that is
/// not a number.
pub async fn watch_notifications(addr: SocketAddr) -> io::Result<i64> {
    const KEYS: [&str; 4] = [
        "zk_sum_node_created_watch_count",
        "zk_sum_node_deleted_watch_count",
        "zk_sum_node_changed_watch_count",
        "zk_sum_node_children_watch_count",
    ];
    let mntr = four_letter_word(addr, "mntr", Duration::from_secs(5)).await?;
    let mut total = 0;
    let mut found = 0;
    for line in mntr.lines() {
        let mut parts = line.split_whitespace();
        if let (Some(key), Some(value)) = (parts.next(), parts.next()) {
            if KEYS.contains(&key) {
                total += value
                    .parse::<i64>()
                    .map_err(|e| io::Error::other(format!("mntr {key} {value:?}: {e}")))?;
                found += 1;
            }
        }
    }
    if found != KEYS.len() {
        return Err(io::Error::other(format!(
            "mntr lacks the watch counters:\n{mntr}"
        )));
    }
    Ok(total)
}

/// Polls `wchs` until the server holds exactly `n` watches, for at most `limit`.
///
/// # Errors
///
/// `wchs` failed, or the count was not reached within `limit` (the message has the last
/// answer).
pub async fn wait_total_watches(addr: SocketAddr, n: usize, limit: Duration) -> io::Result<()> {
    let end = tokio::time::Instant::now() + limit;
    loop {
        let last = four_letter_word(addr, "wchs", Duration::from_secs(5)).await?;
        let total = last
            .lines()
            .find_map(|l| l.strip_prefix("Total watches:"))
            .and_then(|v| v.trim().parse::<usize>().ok());
        if total == Some(n) {
            return Ok(());
        }
        if tokio::time::Instant::now() >= end {
            return Err(io::Error::other(format!(
                "the server never held {n} watches; last wchs:\n{last}"
            )));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
