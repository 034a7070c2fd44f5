//! [`TlsOptions`]: TLS to ZooKeeper's `secureClientPort` (Cargo feature `tls`, on rustls
//! with the ring provider; no OpenSSL).
//!
//! The server side is ZooKeeper 3.5+ with `secureClientPort` and the Netty connection factory;
//! see the repository's `docs/security.md` for the exact configuration this was tested against
//! and for how the Java client's `zookeeper.ssl.*` properties map onto these options.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::ring;
use rustls::{
    self, CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};

use crate::error::{Error, Result};

/// Where a PEM document comes from: a file read at connect time, or bytes.
#[derive(Clone)]
enum Pem {
    File(PathBuf),
    Bytes(Vec<u8>),
}

impl Pem {
    fn load(&self, what: &str) -> Result<Vec<u8>> {
        match self {
            Pem::File(path) => std::fs::read(path)
                .map_err(|e| Error::Tls(format!("cannot read {what} {}: {e}", path.display()))),
            Pem::Bytes(bytes) => Ok(bytes.clone()),
        }
    }
}

impl fmt::Debug for Pem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pem::File(path) => write!(f, "{}", path.display()),
            Pem::Bytes(b) => write!(f, "<{} bytes of PEM>", b.len()),
        }
    }
}

/// How the client secures its connections with TLS (1.2 or 1.3, whichever the server
/// prefers), for [`ClientBuilder::tls`](crate::ClientBuilder::tls).
///
/// By default the server's certificate is verified against the system's trusted roots
/// (`rustls-native-certs`), and its name or IP address must match the host of the connect
/// string. [`ca_file`](Self::ca_file) trusts your own CA instead (the Java client's
/// `zookeeper.ssl.trustStore.location`); [`client_cert_files`](Self::client_cert_files)
/// presents a client certificate (`zookeeper.ssl.keyStore.location`), which servers with
/// `ssl.clientAuth=need` require.
///
/// Files are read when the client connects, and read again before a later connection when
/// one of them was modified since (a `stat` per file per connection): rotated certificates
/// and CA bundles are used from the next reconnect on, without a restart. Write the new
/// files in place of the old ones (certificate and key together: a connection attempt in
/// between may fail and is retried).
///
/// ```no_run
/// # async fn f() -> zk_client::Result<()> {
/// use zk_client::{Client, TlsOptions};
/// let tls = TlsOptions::new()
///     .ca_file("/etc/zookeeper/ca.pem")
///     .client_cert_files("/etc/zookeeper/client.pem", "/etc/zookeeper/client-key.pem");
/// let client = Client::builder("zk1.example.com:2281,zk2.example.com:2281")
///     .tls(tls)
///     .connect()
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct TlsOptions {
    ca: Option<Pem>,
    client: Option<(Pem, Pem)>,
    verify_hostname: bool,
    server_name: Option<String>,
}

impl Default for TlsOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl TlsOptions {
    /// System roots, no client certificate, hostname verification on.
    pub fn new() -> Self {
        Self {
            ca: None,
            client: None,
            verify_hostname: true,
            server_name: None,
        }
    }

    /// Trusts the CA certificates of this PEM file (read at connect time) instead of the
    /// system roots.
    pub fn ca_file(mut self, path: impl AsRef<Path>) -> Self {
        self.ca = Some(Pem::File(path.as_ref().to_owned()));
        self
    }

    /// [`ca_file`](Self::ca_file) from PEM bytes.
    pub fn ca_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.ca = Some(Pem::Bytes(pem.into()));
        self
    }

    /// Presents the certificate chain of `cert` (PEM, leaf first) with the private key of
    /// `key` (PEM: PKCS#8, PKCS#1 or SEC1, unencrypted), both read at connect time.
    pub fn client_cert_files(mut self, cert: impl AsRef<Path>, key: impl AsRef<Path>) -> Self {
        self.client = Some((
            Pem::File(cert.as_ref().to_owned()),
            Pem::File(key.as_ref().to_owned()),
        ));
        self
    }

    /// [`client_cert_files`](Self::client_cert_files) from PEM bytes.
    pub fn client_cert_pem(mut self, cert: impl Into<Vec<u8>>, key: impl Into<Vec<u8>>) -> Self {
        self.client = Some((Pem::Bytes(cert.into()), Pem::Bytes(key.into())));
        self
    }

    /// Whether the server certificate must name the host connected to (default: true). With
    /// `false` the certificate chain is still verified against the trusted roots, but any
    /// trusted certificate is accepted for any host (the Java client's
    /// `zookeeper.ssl.hostnameVerification=false`). Use it only when the names in the
    /// connect string cannot match the certificates.
    pub fn verify_hostname(mut self, verify: bool) -> Self {
        self.verify_hostname = verify;
        self
    }

    /// The name to send (SNI) and verify for every host, instead of each host of the
    /// connect string: for ensembles whose members share one certificate.
    pub fn server_name(mut self, name: impl Into<String>) -> Self {
        self.server_name = Some(name.into());
        self
    }

    /// The rustls configuration, with files read now.
    pub(crate) fn client_config(&self) -> Result<Arc<ClientConfig>> {
        let provider = Arc::new(ring::default_provider());
        let roots = Arc::new(self.roots()?);
        let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
            .build()
            .map_err(|e| Error::Tls(format!("certificate verifier: {e}")))?;
        let verifier: Arc<dyn ServerCertVerifier> = if self.verify_hostname {
            webpki
        } else {
            Arc::new(AnyName(webpki))
        };
        let builder = ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(|e| Error::Tls(format!("protocol versions: {e}")))?
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        let config = match &self.client {
            None => builder.with_no_client_auth(),
            Some((cert, key)) => {
                let chain = certificates(&cert.load("client certificate")?, "client certificate")?;
                let key = PrivateKeyDer::from_pem_slice(&key.load("client key")?)
                    .map_err(|e| Error::Tls(format!("client key: {e}")))?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| Error::Tls(format!("client certificate: {e}")))?
            }
        };
        let mut config = config;
        // The records are sealed and opened by the driver with the negotiated keys.
        config.enable_secret_extraction = true;
        Ok(Arc::new(config))
    }

    /// When each file of these options was last modified (`None`: bytes, or unreadable):
    /// a change means the configuration must be built again.
    pub(crate) fn file_stamps(&self) -> Vec<Option<std::time::SystemTime>> {
        let stamp = |pem: &Pem| match pem {
            Pem::File(path) => std::fs::metadata(path).and_then(|m| m.modified()).ok(),
            Pem::Bytes(_) => None,
        };
        let mut out: Vec<_> = self.ca.iter().map(stamp).collect();
        if let Some((cert, key)) = &self.client {
            out.push(stamp(cert));
            out.push(stamp(key));
        }
        out
    }

    /// The name to verify for `host`, unless overridden.
    pub(crate) fn server_name_for(&self, host: &str) -> Result<ServerName<'static>> {
        let name = self.server_name.as_deref().unwrap_or(host);
        let name = name.trim_start_matches('[').trim_end_matches(']');
        ServerName::try_from(name.to_owned())
            .map_err(|e| Error::Tls(format!("invalid server name {name:?}: {e}")))
    }

    fn roots(&self) -> Result<RootCertStore> {
        let mut roots = RootCertStore::empty();
        match &self.ca {
            Some(ca) => {
                for cert in certificates(&ca.load("CA file")?, "CA file")? {
                    roots
                        .add(cert)
                        .map_err(|e| Error::Tls(format!("CA certificate: {e}")))?;
                }
            }
            None => {
                let found = rustls_native_certs::load_native_certs();
                let (added, _) = roots.add_parsable_certificates(found.certs);
                if added == 0 {
                    return Err(Error::Tls(format!(
                        "no system root certificates found ({} errors); set a CA file",
                        found.errors.len()
                    )));
                }
            }
        }
        Ok(roots)
    }
}

/// Every certificate of a PEM document (at least one).
fn certificates(pem: &[u8], what: &str) -> Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| Error::Tls(format!("{what}: {e}")))?;
    if certs.is_empty() {
        return Err(Error::Tls(format!("{what}: no certificate in the PEM")));
    }
    Ok(certs)
}

/// Hostname verification off: the chain is verified as usual, a name mismatch is not an
/// error.
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        let verified =
            self.0
                .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now);
        match verified {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}
