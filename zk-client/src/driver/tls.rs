//! TLS connections (Cargo feature `tls`): TCP, then a rustls handshake, within the connect
//! timeout the driver puts on `Connector::connect`.

use std::io;
use std::sync::Arc;

use rustls::pki_types::ServerName;
use rustls::ClientConfig;
use tokio::net::TcpStream;

use super::tls_stream::TlsStream;
use super::transport::{host_of, Connector, Endpoint, TlsFailure};

/// The server name to verify for a host: the host itself unless overridden.
pub(crate) type NameFor = Arc<dyn Fn(&str) -> io::Result<ServerName<'static>> + Send + Sync>;

/// Connects with TLS; the server's certificate is verified as the config says.
#[derive(Clone)]
pub(crate) struct TlsConnector {
    config: Arc<ClientConfig>,
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
            config,
            name_for,
            reload: None,
        }
    }

    /// Re-reads the certificate, key and CA files of `options` before a connection when
    /// any of them changed since the config in use was built (a `stat` per file per
    /// connection otherwise).
    pub(crate) fn reloading(mut self, options: crate::tls::TlsOptions) -> Self {
        let stamps = options.file_stamps();
        let config = self.config.clone();
        self.reload = Some(Arc::new(Reload {
            options,
            current: std::sync::Mutex::new((stamps, config)),
        }));
        self
    }

    /// The configuration for the next connection: the files' current contents.
    fn current(&self) -> io::Result<Arc<ClientConfig>> {
        let Some(reload) = &self.reload else {
            return Ok(self.config.clone());
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
        Ok(current.1.clone())
    }
}

impl Connector for TlsConnector {
    type Stream = TlsStream;

    async fn connect(&self, to: &Endpoint) -> io::Result<Self::Stream> {
        // The name written in the connect string, not the address it resolved to.
        let name = (self.name_for)(host_of(&to.host))?;
        let config = self.current()?;
        let tcp = TcpStream::connect(to.addr).await?;
        tcp.set_nodelay(true)?;
        TlsStream::connect(tcp, config, name)
            .await
            .map_err(|e| match TlsFailure::message(&e) {
                Some(msg) => io::Error::new(e.kind(), TlsFailure(msg)),
                None => e,
            })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::driver::transport::Endpoint;

    /// The certificate is checked against the host as written in the connect string: the
    /// name, not the address it resolved to.
    #[tokio::test]
    async fn the_server_name_is_the_host_not_the_address() {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let seen = asked.clone();
        let name_for: NameFor = Arc::new(move |host: &str| {
            seen.lock().unwrap().push(host.to_owned());
            ServerName::try_from(host.to_owned())
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))
        });
        // The provider named, as the product does: in a workspace build rustls may have
        // both providers and no process default.
        let config =
            ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .expect("ring supports the default versions")
                .with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth();
        let connector = TlsConnector::new(Arc::new(config), name_for);
        // A port nothing listens on: only the name matters here.
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = closed.local_addr().unwrap();
        drop(closed);
        let to = Endpoint {
            host: format!("zk.example:{}", addr.port()),
            addr,
        };
        assert!(connector.connect(&to).await.is_err());
        assert_eq!(*asked.lock().unwrap(), ["zk.example"]);
    }
}
