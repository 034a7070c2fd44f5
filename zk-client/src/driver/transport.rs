//! How the driver reaches a server: TCP or TLS (`tls.rs`) in production, in-memory streams
//! in tests.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_util::io::poll_read_buf;

/// Where a connection goes: one address of a host of the connect string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Endpoint {
    /// The host as written in the connect string (`host:port`): the name TLS verifies and
    /// Kerberos asks a ticket for.
    pub(crate) host: String,
    /// The address connected to, one of what `host` resolved to.
    pub(crate) addr: SocketAddr,
}

/// Opens connections to servers.
pub(crate) trait Connector: Clone + Send + Sync + 'static {
    /// The connection.
    type Stream: Transport;

    /// Connects to `to.addr`. The driver bounds it in time.
    fn connect(&self, to: &Endpoint) -> impl Future<Output = io::Result<Self::Stream>> + Send;
}

/// A connection the driver can read, write, and take out of the reactor during a
/// deep-pipeline pause (so that arriving replies do not wake the runtime; see
/// `ClientBuilder::batch_reads`).
pub(crate) trait Transport: AsyncRead + AsyncWrite + Unpin + Send + Sized + 'static {
    /// The connection while paused.
    type Parked: Send + 'static;

    /// Whether bytes accepted by `poll_write` still sit in a buffer of the transport (TLS
    /// records a full socket did not take): the driver then flushes.
    fn needs_flush(&self) -> bool {
        false
    }

    /// Reads what has arrived into `buf` (within its spare capacity): `Ok(0)` at EOF,
    /// `Pending` when nothing is there.
    fn poll_read_into(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut BytesMut,
    ) -> Poll<io::Result<usize>> {
        poll_read_buf(Pin::new(self), cx, buf)
    }

    /// Takes the connection out of the reactor.
    fn park(self) -> io::Result<Self::Parked>;

    /// Puts a parked connection back.
    fn unpark(parked: Self::Parked) -> io::Result<Self>;
}

/// Writes as much of `buf` as the connection takes without waiting (before a pause).
pub(crate) fn write_now<S: Transport>(stream: &mut S, buf: &mut Bytes) -> io::Result<()> {
    let mut cx = Context::from_waker(Waker::noop());
    while !buf.is_empty() {
        match Pin::new(&mut *stream).poll_write(&mut cx, buf) {
            Poll::Ready(Ok(0)) => return Err(io::ErrorKind::WriteZero.into()),
            Poll::Ready(Ok(n)) => buf.advance(n),
            Poll::Ready(Err(e)) => return Err(e),
            Poll::Pending => break,
        }
    }
    Ok(())
}

/// The host part of `host:port` (`[v6]:port` gives `[v6]`).
#[cfg_attr(not(any(feature = "tls", feature = "sasl-gssapi")), allow(dead_code))]
pub(crate) fn host_of(addr: &str) -> &str {
    addr.rsplit_once(':').map_or(addr, |(host, _)| host)
}

/// Plain TCP, `TCP_NODELAY` set.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TcpConnector;

impl Connector for TcpConnector {
    type Stream = TcpStream;

    async fn connect(&self, to: &Endpoint) -> io::Result<TcpStream> {
        let stream = TcpStream::connect(to.addr).await?;
        stream.set_nodelay(true)?;
        Ok(stream)
    }
}

impl Transport for TcpStream {
    type Parked = std::net::TcpStream;

    fn park(self) -> io::Result<Self::Parked> {
        self.into_std()
    }

    fn unpark(parked: Self::Parked) -> io::Result<Self> {
        TcpStream::from_std(parked)
    }
}

/// A TLS failure, carrying rustls's message: a certificate the client does not trust, a
/// client certificate the server rejected. The driver reports these to
/// [`connect`](crate::ClientBuilder::connect) instead of letting it time out.
#[derive(Debug)]
pub(crate) struct TlsFailure(pub(crate) String);

impl std::fmt::Display for TlsFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TlsFailure {}

impl TlsFailure {
    /// The TLS message inside `err`, if it is a TLS failure.
    pub(crate) fn message(err: &io::Error) -> Option<String> {
        let inner = err.get_ref()?;
        if let Some(failure) = inner.downcast_ref::<TlsFailure>() {
            return Some(failure.0.clone());
        }
        #[cfg(feature = "tls")]
        if let Some(e) = inner.downcast_ref::<rustls::Error>() {
            return Some(e.to_string());
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_of_strips_the_port() {
        assert_eq!(host_of("127.0.0.1:2281"), "127.0.0.1");
        assert_eq!(host_of("[::1]:2281"), "[::1]");
        assert_eq!(host_of("zk1"), "zk1");
    }

    #[test]
    fn tls_failures_are_recognised_in_io_errors() {
        let err = io::Error::other(TlsFailure("invalid peer certificate: UnknownIssuer".into()));
        assert_eq!(
            TlsFailure::message(&err).as_deref(),
            Some("invalid peer certificate: UnknownIssuer")
        );
        assert_eq!(
            TlsFailure::message(&io::ErrorKind::ConnectionRefused.into()),
            None
        );
    }
}
