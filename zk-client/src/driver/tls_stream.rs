//! A TLS connection of our own over a tokio `TcpStream`: the handshake with rustls's
//! unbuffered client connection, then the records with `tls_records` on the keys rustls
//! negotiated. The data phase costs one socket read per pass (64 KiB, not rustls's 4 KiB),
//! opens the records where they were read, seals a whole write buffer into one ciphertext
//! buffer written with one `write`, and can take the socket out of the reactor during a
//! deep-pipeline pause like plain TCP.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Buf, BytesMut};
use rustls::client::{ClientConnectionData, UnbufferedClientConnection};
use rustls::pki_types::ServerName;
use rustls::unbuffered::{ConnectionState, EncodeError, EncodeTlsData, InsufficientSizeError};
use rustls::ClientConfig;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::tls_records::{invalid, open_all, tls_error, Records, HEADER, MAX_CIPHERTEXT};
use super::transport::Transport;

/// Bytes one socket read may bring.
const READ_SIZE: usize = 64 * 1024;
/// Room for one whole record beyond a read, so a partial record left over always completes.
const RECORD_ROOM: usize = HEADER + MAX_CIPHERTEXT;
/// Plaintext encrypted per write call (the rest waits for the next).
const WRITE_CHUNK: usize = 256 * 1024;
/// Steps a handshake may take: each sends what is owed and reads the socket once (at
/// least a byte), so this bounds the handshake's bytes too; the driver bounds its time.
const HANDSHAKE_ROUNDS: usize = 64 * 1024;
/// Socket reads one `poll_read_into` may do when they bring only partial records.
const READS_PER_POLL: usize = 8;
/// Socket writes one `poll_flush` may do.
const WRITES_PER_FLUSH: usize = 64;

/// A TLS connection over TCP (see the module docs).
pub(crate) struct TlsStream<S = tokio::net::TcpStream> {
    io: S,
    tls: Tls,
}

/// A TLS connection taken out of the reactor: the socket and the TLS state beside it.
pub(crate) struct ParkedTls {
    io: std::net::TcpStream,
    tls: Tls,
}

/// The TLS state: the connection's keys and the two buffers of ciphertext.
struct Tls {
    records: Records,
    buffers: Buffers,
    /// Plaintext read and not yet handed out (by `AsyncRead::poll_read`, or right behind
    /// the handshake).
    stash: BytesMut,
    /// The peer sent close_notify: EOF once the plaintext before it is handed out.
    peer_closed: bool,
    /// Our close_notify is sealed.
    closing: bool,
}

/// Ciphertext both ways.
struct Buffers {
    /// Read and not yet opened: `incoming[..filled]`, at most one partial record between
    /// calls.
    incoming: Vec<u8>,
    filled: usize,
    /// To send: `outgoing[sent..]`.
    outgoing: Vec<u8>,
    sent: usize,
}

/// Where a handshake step stopped.
enum Stop {
    /// The handshake is complete.
    Done,
    /// The handshake needs bytes from the peer.
    NeedRead,
    /// The peer closed the connection (close_notify).
    Closed,
}

/// Appends the handshake record rustls encodes to `out` (grown to what it asks for).
fn encode_into(
    out: &mut Vec<u8>,
    encode: &mut EncodeTlsData<'_, ClientConnectionData>,
) -> io::Result<()> {
    let start = out.len();
    out.resize(start + RECORD_ROOM, 0);
    let mut written = encode.encode(&mut out[start..]);
    if let Err(EncodeError::InsufficientSize(InsufficientSizeError { required_size })) = written {
        out.resize(start + required_size, 0);
        written = encode.encode(&mut out[start..]);
    }
    match written {
        Ok(n) => {
            out.truncate(start + n);
            Ok(())
        }
        Err(e) => {
            out.truncate(start);
            Err(invalid(e.to_string()))
        }
    }
}

impl Buffers {
    fn new() -> Self {
        Self {
            incoming: vec![0; READ_SIZE + RECORD_ROOM],
            filled: 0,
            outgoing: Vec::new(),
            sent: 0,
        }
    }

    fn unsent(&self) -> &[u8] {
        self.outgoing.get(self.sent..).unwrap_or_default()
    }

    /// Drops `n` consumed bytes from the front of `incoming` (what is left is at most a
    /// partial record).
    fn consume(&mut self, n: usize) {
        let n = n.min(self.filled);
        self.incoming.copy_within(n..self.filled, 0);
        self.filled -= n;
    }

    /// Reads the socket once into `incoming`: `Ok(0)` at EOF.
    fn poll_fill<S: AsyncRead + Unpin>(
        &mut self,
        io: &mut S,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<usize>> {
        let Some(room) = self
            .incoming
            .get_mut(self.filled..)
            .filter(|r| !r.is_empty())
        else {
            return Poll::Ready(Err(invalid("TLS record larger than the read buffer")));
        };
        let mut buf = ReadBuf::new(room);
        match Pin::new(io).poll_read(cx, &mut buf) {
            Poll::Ready(Ok(())) => {
                let n = buf.filled().len();
                self.filled += n;
                Poll::Ready(Ok(n))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }

    /// Writes `outgoing` until it is sent or the socket is full.
    fn poll_send<S: AsyncWrite + Unpin>(
        &mut self,
        io: &mut S,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        for _ in 0..WRITES_PER_FLUSH {
            if self.unsent().is_empty() {
                self.outgoing.clear();
                self.sent = 0;
                return Poll::Ready(Ok(()));
            }
            match Pin::new(&mut *io).poll_write(cx, self.unsent()) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => self.sent += n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        // A socket taking a few bytes at a time: come back.
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// One handshake step: processes the handshake records read so far; the records the
/// connection owes the peer go to `outgoing`, application data behind the handshake to
/// `early`.
fn handshake_step(
    conn: &mut UnbufferedClientConnection,
    bufs: &mut Buffers,
    early: &mut BytesMut,
) -> io::Result<Stop> {
    let mut start = 0;
    // Bounded: every round consumes a record (at least 5 bytes) or emits one, and a
    // handshake has a few of each.
    for _ in 0..bufs.incoming.len() {
        let region = bufs
            .incoming
            .get_mut(start..bufs.filled)
            .unwrap_or_default();
        let status = conn.process_tls_records(region);
        let discard = status.discard;
        let stop = match status.state.map_err(tls_error)? {
            ConnectionState::EncodeTlsData(mut encode) => {
                encode_into(&mut bufs.outgoing, &mut encode)?;
                None
            }
            // The bytes are in `outgoing`, sent before the next read.
            ConnectionState::TransmitTlsData(transmit) => {
                transmit.done();
                None
            }
            ConnectionState::BlockedHandshake => Some(Stop::NeedRead),
            ConnectionState::PeerClosed | ConnectionState::Closed => Some(Stop::Closed),
            ConnectionState::WriteTraffic(_) => Some(Stop::Done),
            // Data right behind the server's last handshake message: the first read's.
            ConnectionState::ReadTraffic(mut traffic) => {
                while let Some(record) = traffic.next_record() {
                    early.extend_from_slice(record.map_err(tls_error)?.payload);
                }
                None
            }
            _ => return Err(invalid("unexpected TLS state (early data)")),
        };
        start += discard;
        if let Some(stop) = stop {
            bufs.consume(start);
            return Ok(stop);
        }
    }
    Err(invalid("TLS handshake: too many records"))
}

impl<S: AsyncRead + AsyncWrite + Unpin> TlsStream<S> {
    /// Runs the handshake for `name` over `io` (bounded in time by the caller). `config`
    /// must allow secret extraction (the records are protected by `tls_records`).
    ///
    /// # Errors
    /// A TLS failure (certificate, protocol) as an `InvalidData` error carrying rustls's
    /// error; socket errors; `UnexpectedEof` when the peer closes during the handshake.
    pub(crate) async fn connect(
        mut io: S,
        config: Arc<ClientConfig>,
        name: ServerName<'static>,
    ) -> io::Result<Self> {
        let mut conn = UnbufferedClientConnection::new(config, name).map_err(tls_error)?;
        let mut bufs = Buffers::new();
        let mut early = BytesMut::new();
        for _ in 0..HANDSHAKE_ROUNDS {
            let stop = handshake_step(&mut conn, &mut bufs, &mut early)?;
            std::future::poll_fn(|cx| bufs.poll_send(&mut io, cx)).await?;
            match stop {
                Stop::Done => {
                    let (secrets, kernel) =
                        conn.dangerous_into_kernel_connection().map_err(tls_error)?;
                    return Ok(Self {
                        io,
                        tls: Tls {
                            records: Records::new(secrets, kernel)?,
                            buffers: bufs,
                            stash: early,
                            peer_closed: false,
                            closing: false,
                        },
                    });
                }
                Stop::NeedRead => {
                    if std::future::poll_fn(|cx| bufs.poll_fill(&mut io, cx)).await? == 0 {
                        return Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "the server closed the connection during the TLS handshake",
                        ));
                    }
                }
                Stop::Closed => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the server closed the TLS connection during the handshake",
                    ))
                }
            }
        }
        Err(invalid("TLS handshake: too many rounds"))
    }

    /// Opens what has arrived into `buf`: every complete record of one socket read.
    /// `Ok(0)` at EOF (close_notify or the socket closed), `Pending` when nothing is there.
    fn read_into(&mut self, cx: &mut Context<'_>, buf: &mut BytesMut) -> Poll<io::Result<usize>> {
        let tls = &mut self.tls;
        // Bounded: a read that brings only part of a record is followed by another.
        for _ in 0..READS_PER_POLL {
            if tls.peer_closed {
                return Poll::Ready(Ok(0));
            }
            // Records a read made us owe the peer (a TLS 1.3 key update) go out without
            // waiting for the next request; a full socket keeps them for the next write.
            if !tls.buffers.unsent().is_empty() {
                if let Poll::Ready(Err(e)) = tls.buffers.poll_send(&mut self.io, cx) {
                    return Poll::Ready(Err(e));
                }
            }
            match tls.buffers.poll_fill(&mut self.io, cx) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Ok(0)),
                Poll::Ready(Ok(_)) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
            let bufs = &mut tls.buffers;
            let opened = open_all(
                &mut tls.records,
                &mut bufs.incoming[..bufs.filled],
                buf,
                &mut bufs.outgoing,
            )?;
            bufs.consume(opened.consumed);
            tls.peer_closed = opened.closed;
            if opened.moved > 0 {
                return Poll::Ready(Ok(opened.moved));
            }
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for TlsStream<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.tls.stash.is_empty() {
            let mut stash = std::mem::take(&mut this.tls.stash);
            let read = this.read_into(cx, &mut stash);
            this.tls.stash = stash;
            match read {
                Poll::Ready(Ok(_)) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        let n = this.tls.stash.len().min(buf.remaining());
        buf.put_slice(&this.tls.stash[..n]);
        this.tls.stash.advance(n);
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for TlsStream<S> {
    /// Seals `data` (up to 256 KiB of it) into one buffer and writes it with one socket
    /// write; what the socket does not take waits for the next write or flush. `Pending`
    /// while ciphertext from before is still unsent.
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let Self { io, tls } = self.get_mut();
        if !tls.buffers.unsent().is_empty() {
            match tls.buffers.poll_send(io, cx) {
                Poll::Ready(Ok(())) => {}
                other => return other.map_ok(|()| 0),
            }
        }
        let data = data.get(..WRITE_CHUNK).unwrap_or(data);
        tls.records.seal_data(&mut tls.buffers.outgoing, data)?;
        // One write; the rest (a full socket) is sent by the next write or flush.
        if let Poll::Ready(Err(e)) = tls.buffers.poll_send(io, cx) {
            return Poll::Ready(Err(e));
        }
        Poll::Ready(Ok(data.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let Self { io, tls } = self.get_mut();
        match tls.buffers.poll_send(io, cx) {
            Poll::Ready(Ok(())) => Pin::new(io).poll_flush(cx),
            other => other,
        }
    }

    /// Sends close_notify (once), then shuts the socket's sending side.
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let Self { io, tls } = self.get_mut();
        if !tls.closing {
            tls.closing = true;
            tls.records.seal_close_notify(&mut tls.buffers.outgoing)?;
        }
        match tls.buffers.poll_send(io, cx) {
            Poll::Ready(Ok(())) => Pin::new(io).poll_shutdown(cx),
            other => other,
        }
    }
}

impl Transport for TlsStream {
    type Parked = ParkedTls;

    fn poll_read_into(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut BytesMut,
    ) -> Poll<io::Result<usize>> {
        if !self.tls.stash.is_empty() {
            let n = self.tls.stash.len();
            buf.extend_from_slice(&self.tls.stash);
            self.tls.stash.clear();
            return Poll::Ready(Ok(n));
        }
        self.read_into(cx, buf)
    }

    fn needs_flush(&self) -> bool {
        !self.tls.buffers.unsent().is_empty()
    }

    /// The socket leaves the reactor; the TLS state stays beside it.
    fn park(self) -> io::Result<ParkedTls> {
        Ok(ParkedTls {
            io: self.io.into_std()?,
            tls: self.tls,
        })
    }

    fn unpark(parked: ParkedTls) -> io::Result<Self> {
        Ok(Self {
            io: tokio::net::TcpStream::from_std(parked.io)?,
            tls: parked.tls,
        })
    }
}

#[cfg(test)]
#[path = "tls_tests.rs"]
mod tests;
