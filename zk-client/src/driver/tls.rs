//! TLS connections (Cargo feature `tls`): TCP, then a rustls handshake, within the connect
//! timeout the driver puts on `Connector::connect`.

use std::io::{self, BufRead};
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::BytesMut;
use tokio::io::AsyncRead;

use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::rustls::{ClientConfig, ClientConnection};

use super::transport::{host_of, Connector, TlsFailure, Transport};

/// The server name to verify for a host: the host itself unless overridden.
pub(crate) type NameFor = Arc<dyn Fn(&str) -> io::Result<ServerName<'static>> + Send + Sync>;

/// Connects with TLS; the server's certificate is verified as the config says.
#[derive(Clone)]
pub(crate) struct TlsConnector {
    inner: tokio_rustls::TlsConnector,
    name_for: NameFor,
    reload: Option<Arc<Reload>>,
}

/// The options the config was built from, to build it again when their files change
/// (rotated certificates are used from the next connection on, without a restart).
struct Reload {
    options: crate::tls::TlsOptions,
    /// The file stamps the current config was built with, and that config.
    current: std::sync::Mutex<(Vec<Option<std::time::SystemTime>>, Arc<ClientConfig>)>,
}

impl TlsConnector {
    pub(crate) fn new(config: Arc<ClientConfig>, name_for: NameFor) -> Self {
        Self {
            inner: tokio_rustls::TlsConnector::from(config),
            name_for,
            reload: None,
        }
    }

    /// Re-reads the certificate, key and CA files of `options` before a connection when
    /// any of them changed since the config in use was built (a `stat` per file per
    /// connection otherwise).
    pub(crate) fn reloading(mut self, options: crate::tls::TlsOptions) -> Self {
        let stamps = options.file_stamps();
        let config = self.inner.config().clone();
        self.reload = Some(Arc::new(Reload {
            options,
            current: std::sync::Mutex::new((stamps, config)),
        }));
        self
    }

    /// The connector for the next connection: the files' current contents.
    fn current(&self) -> io::Result<tokio_rustls::TlsConnector> {
        let Some(reload) = &self.reload else {
            return Ok(self.inner.clone());
        };
        let stamps = reload.options.file_stamps();
        let mut current = reload.current.lock().unwrap_or_else(|e| e.into_inner());
        if current.0 != stamps {
            let config = reload.options.client_config().map_err(|e| {
                io::Error::new(io::ErrorKind::InvalidData, TlsFailure(e.to_string()))
            })?;
            tracing::debug!("TLS files changed: new configuration");
            *current = (stamps, config);
        }
        Ok(tokio_rustls::TlsConnector::from(current.1.clone()))
    }
}

impl Connector for TlsConnector {
    type Stream = TlsStream<TcpStream>;

    async fn connect(&self, addr: &str) -> io::Result<Self::Stream> {
        let name = (self.name_for)(host_of(addr))?;
        let connector = self.current()?;
        let tcp = TcpStream::connect(addr).await?;
        tcp.set_nodelay(true)?;
        connector
            .connect(name, tcp)
            .await
            .map_err(|e| match TlsFailure::message(&e) {
                Some(msg) => io::Error::new(e.kind(), TlsFailure(msg)),
                None => e,
            })
    }
}

/// Socket reads one `poll_read_into` may do (each up to rustls's 4 KiB read size).
const MAX_READS_PER_POLL: usize = 32;

/// Moves the plaintext rustls has decrypted into `buf`, within its spare capacity.
fn drain_plaintext(conn: &mut ClientConnection, buf: &mut BytesMut) -> usize {
    let mut moved = 0;
    loop {
        let room = buf.capacity() - buf.len();
        let taken = match conn.reader().into_first_chunk() {
            Ok(chunk) if !chunk.is_empty() && room > 0 => {
                let n = chunk.len().min(room);
                buf.extend_from_slice(&chunk[..n]);
                n
            }
            _ => return moved,
        };
        conn.reader().consume(taken);
        moved += taken;
    }
}

/// The socket as rustls's `io::Read`, through tokio's `poll_read` (which clears the
/// readiness after a short read, so the next poll needs no `EAGAIN` read): `WouldBlock` for
/// `Pending` (the waker is then registered).
struct PollRead<'a, 'b> {
    tcp: &'a mut TcpStream,
    cx: &'a mut Context<'b>,
}

impl io::Read for PollRead<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut read_buf = tokio::io::ReadBuf::new(buf);
        match std::pin::Pin::new(&mut *self.tcp).poll_read(self.cx, &mut read_buf) {
            Poll::Ready(Ok(())) => Ok(read_buf.filled().len()),
            Poll::Ready(Err(e)) => Err(e),
            Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
        }
    }
}

/// A TLS stream is not taken out of the reactor during a deep-pipeline pause (rustls keeps
/// state beside the socket): a reply arriving meanwhile may wake the task once, nothing more,
/// since the paused loop does not poll the stream.
impl Transport for TlsStream<TcpStream> {
    type Parked = Self;

    /// One socket read holds many TLS records (ZooKeeper's server sends one per reply), but
    /// `poll_read` hands out one record's plaintext per call (one driver pass per reply).
    /// Here: one socket read (rustls reads up to 4 KiB), every record in it decrypted and
    /// all the plaintext moved into `buf` at once, so the driver handles every reply of a
    /// read in one pass, as over plain TCP.
    fn poll_read_into(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut BytesMut,
    ) -> Poll<io::Result<usize>> {
        let (tcp, conn) = self.get_mut();
        let mut total = 0;
        // Bounded: each round moves plaintext into `buf` or reads the socket once; a socket
        // with more than this many reads' worth waiting is read again on the next pass.
        for _ in 0..MAX_READS_PER_POLL {
            total += drain_plaintext(conn, buf);
            if total > 0 || buf.capacity() == buf.len() {
                break;
            }
            if !conn.wants_read() {
                // The server's close_notify: EOF if nothing came with it.
                return Poll::Ready(Ok(total));
            }
            let mut socket = PollRead {
                tcp: &mut *tcp,
                cx: &mut *cx,
            };
            match conn.read_tls(&mut socket) {
                // EOF: what was decrypted goes up first; the next poll reports it.
                Ok(0) => return Poll::Ready(Ok(total)),
                Ok(_) => {
                    conn.process_new_packets()
                        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                    // One socket read per pass, like the TCP path: reading on until the
                    // socket is empty would clear its readiness, and during a deep-pipeline
                    // pause (the TLS stream stays registered) every later segment would then
                    // wake the runtime (measured: 4x the epoll_wait calls).
                }
                // Nothing to read: the waker is registered.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Poll::Pending,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
        if total == 0 {
            // Out of rounds with nothing decrypted (only partial records): come back.
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        Poll::Ready(Ok(total))
    }

    fn needs_flush(&self) -> bool {
        self.get_ref().1.wants_write()
    }

    fn park(self) -> io::Result<Self::Parked> {
        Ok(self)
    }

    fn unpark(parked: Self::Parked) -> io::Result<Self> {
        Ok(parked)
    }
}
