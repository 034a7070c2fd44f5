//! Kerberos tickets for SASL GSSAPI (feature `sasl-gssapi`): before each connection's
//! handshake, the driver gets a ticket-granting ticket with the keytab's key (AS exchange)
//! and a ticket for the server's principal (TGS exchange) from the KDC over TCP, and hands
//! the session a GSSAPI mechanism holding them. With a credentials cache (`kinit`), the
//! ticket-granting ticket comes from the cache and only the TGS exchange is done (`tgs.rs`).

mod tgs;

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use krb5_gss::gss::NativeGssContext;
use krb5_gss::{KdcBoxFuture, KdcTransport, KerberosCredentials, KerberosError, Krb5Client};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::kerberos::ccache::{self, Ccache};
use crate::session::gssapi::{Gssapi, GssapiConfig};
use crate::session::Mechanism;

/// Largest KDC reply accepted (RFC 4120 TCP framing allows more; tickets are a few KiB).
const MAX_KDC_REPLY: usize = 1 << 20;

/// Why no mechanism could be prepared.
#[derive(Debug)]
pub(crate) enum Unprepared {
    /// The credentials or settings were refused (unknown principal, wrong key, no keytab
    /// entry, a bad setting): retrying cannot help; the session ends in `AuthFailed`.
    Refused(String),
    /// The KDC could not be reached: a connection failure like any other (retried).
    Unreachable(String),
}

/// Gets the tickets for the server `host`, connected at `connected` (the address the
/// client's `resolver` gave), and makes the mechanism.
pub(crate) async fn prepare(
    cfg: &GssapiConfig,
    host: &str,
    connected: std::net::IpAddr,
    resolver: &crate::resolve::Resolver,
) -> Result<Box<dyn Mechanism>, Unprepared> {
    let host = &cfg.principal_host(host, connected, resolver).await;
    if let Some(cache) = &cfg.ticket_cache {
        return prepare_from_cache(cfg, cache.as_deref(), host).await;
    }
    let realm = cfg.realm().map_err(Unprepared::Refused)?;
    let service = cfg
        .server_principal_for(host)
        .map_err(Unprepared::Refused)?;
    let kdc = cfg.kdc_address().map_err(Unprepared::Refused)?;
    let creds = KerberosCredentials::new(cfg.principal.clone())
        .with_realm(realm)
        .with_keytab(cfg.keytab.to_string_lossy().into_owned());
    let unreachable = Arc::new(AtomicBool::new(false));
    let transport = Tcp {
        addr: kdc.clone(),
        unreachable: unreachable.clone(),
    };
    let refused = |e: KerberosError| Unprepared::Refused(e.to_string());
    // Reads the keytab now: a rotated key is picked up by the next connection.
    let client = Krb5Client::with_transport(&creds, Box::new(transport)).map_err(refused)?;
    match client.acquire_service_ticket(&service).await {
        Ok(ticket) => {
            tracing::debug!(%service, %kdc, "Kerberos service ticket");
            Ok(Box::new(Gssapi::new(NativeGssContext::from_acquired(
                ticket,
            ))))
        }
        Err(e) if unreachable.load(Ordering::Relaxed) => {
            Err(Unprepared::Unreachable(format!("KDC {kdc}: {e}")))
        }
        Err(e) => Err(Unprepared::Refused(format!(
            "{} for {service}@{realm} from KDC {kdc}: {e}",
            cfg.principal
        ))),
    }
}

/// Reads the credentials cache (`None`: the default one) and gets the server's ticket with
/// its ticket-granting ticket.
async fn prepare_from_cache(
    cfg: &GssapiConfig,
    cache: Option<&str>,
    host: &str,
) -> Result<Box<dyn Mechanism>, Unprepared> {
    let refused = Unprepared::Refused;
    let path = match cache {
        Some(name) => ccache::cache_path(name),
        None => ccache::default_path(),
    }
    .map_err(refused)?;
    let cache = Ccache::read(&path).map_err(refused)?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let tgt = cache
        .tgt(now)
        .map_err(|e| refused(format!("credentials cache {}: {e}", path.display())))?;
    let principal = cache.principal.display();
    if !cfg.principal.is_empty() && cfg.principal != principal {
        return Err(refused(format!(
            "credentials cache {} holds {principal}, not {}",
            path.display(),
            cfg.principal
        )));
    }
    let mut cfg = cfg.clone();
    cfg.principal = principal;
    let service = cfg.server_principal_for(host).map_err(refused)?;
    let kdc = cfg.kdc_address().map_err(refused)?;
    let transport = Tcp {
        addr: kdc.clone(),
        unreachable: Arc::new(AtomicBool::new(false)),
    };
    match tgs::service_ticket(&cache.principal, tgt, &service, &transport).await {
        Ok(ticket) => {
            tracing::debug!(%service, %kdc, cache = %path.display(), "Kerberos service ticket");
            Ok(Box::new(Gssapi::new(NativeGssContext::from_acquired(
                ticket,
            ))))
        }
        Err(tgs::TgsError::Transport(e)) => Err(Unprepared::Unreachable(format!("KDC {kdc}: {e}"))),
        Err(tgs::TgsError::Refused(e)) => Err(refused(format!(
            "{} for {service} from KDC {kdc}: {e}",
            cfg.principal
        ))),
    }
}

/// The KDC over TCP (RFC 4120 section 7.2.2: a 4-byte length, then the message), noting
/// whether it failed as a transport (versus answering with an error).
struct Tcp {
    addr: String,
    unreachable: Arc<AtomicBool>,
}

impl KdcTransport for Tcp {
    fn exchange<'a>(&'a self, _realm: &'a str, req: &'a [u8]) -> KdcBoxFuture<'a> {
        Box::pin(async move {
            exchange(&self.addr, req).await.map_err(|e| {
                self.unreachable.store(true, Ordering::Relaxed);
                KerberosError::Protocol(format!("KDC {}: {e}", self.addr))
            })
        })
    }
}

async fn exchange(addr: &str, req: &[u8]) -> io::Result<Vec<u8>> {
    let len = u32::try_from(req.len()).map_err(|_| io::Error::other("request too large"))?;
    let mut stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let mut out = Vec::with_capacity(4 + req.len());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(req);
    stream.write_all(&out).await?;
    let len = stream.read_u32().await? as usize;
    if len > MAX_KDC_REPLY {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("reply of {len} bytes"),
        ));
    }
    let mut reply = vec![0; len];
    stream.read_exact(&mut reply).await?;
    Ok(reply)
}
