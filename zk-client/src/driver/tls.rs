//! TLS connections (Cargo feature `tls`): TCP, then a rustls handshake, within the connect
//! timeout the driver puts on `Connector::connect`.

use std::io;
use std::sync::Arc;

use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::rustls::ClientConfig;

use super::transport::{host_of, Connector, TlsFailure, Transport};

/// The server name to verify for a host: the host itself unless overridden.
pub(crate) type NameFor = Arc<dyn Fn(&str) -> io::Result<ServerName<'static>> + Send + Sync>;

/// Connects with TLS; the server's certificate is verified as the config says.
#[derive(Clone)]
pub(crate) struct TlsConnector {
    inner: tokio_rustls::TlsConnector,
    name_for: NameFor,
}

impl TlsConnector {
    pub(crate) fn new(config: Arc<ClientConfig>, name_for: NameFor) -> Self {
        Self {
            inner: tokio_rustls::TlsConnector::from(config),
            name_for,
        }
    }
}

impl Connector for TlsConnector {
    type Stream = TlsStream<TcpStream>;

    async fn connect(&self, addr: &str) -> io::Result<Self::Stream> {
        let name = (self.name_for)(host_of(addr))?;
        let tcp = TcpStream::connect(addr).await?;
        tcp.set_nodelay(true)?;
        self.inner
            .connect(name, tcp)
            .await
            .map_err(|e| match TlsFailure::message(&e) {
                Some(msg) => io::Error::new(e.kind(), TlsFailure(msg)),
                None => e,
            })
    }
}

/// A TLS stream is not taken out of the reactor during a deep-pipeline pause (rustls keeps
/// state beside the socket): a reply arriving meanwhile may wake the task once, nothing more,
/// since the paused loop does not poll the stream.
impl Transport for TlsStream<TcpStream> {
    type Parked = Self;
    const NEEDS_FLUSH: bool = true;

    fn park(self) -> io::Result<Self::Parked> {
        Ok(self)
    }

    fn unpark(parked: Self::Parked) -> io::Result<Self> {
        Ok(parked)
    }
}
