//! [`KerberosOptions`]: SASL GSSAPI (Kerberos) credentials and server naming (Cargo feature
//! `sasl-gssapi`, pure Rust on the `krb5-gss` crate: no C GSSAPI library).
//!
//! The names follow the Java client's: a client principal and its keytab (the JAAS `Client`
//! section's `Krb5LoginModule` with `useKeyTab=true`), the server principal
//! `zookeeper/<host>@<realm>` (`zookeeper.sasl.client.username`, `zookeeper.server.realm`,
//! `zookeeper.server.principal`), the KDC from `krb5.conf` (`java.security.krb5.conf`) or
//! given directly (`java.security.krb5.kdc`). See the repository's `docs/security.md`.

pub(crate) mod canonical;
pub(crate) mod ccache;

use std::fmt;
use std::path::{Path, PathBuf};

/// Kerberos settings for [`ClientBuilder::sasl_gssapi`](crate::ClientBuilder::sasl_gssapi).
///
/// ```no_run
/// # async fn f() -> zk_client::Result<()> {
/// use zk_client::{Client, KerberosOptions};
/// let kerberos = KerberosOptions::new("app@EXAMPLE.COM", "/etc/security/app.keytab");
/// let client = Client::builder("zk1.example.com:2181,zk2.example.com:2181")
///     .sasl_gssapi(kerberos)
///     .connect()
///     .await?;
/// # Ok(()) }
/// ```
///
/// For each connection the client reads the keytab (or, with
/// [`from_ticket_cache`](Self::from_ticket_cache), takes the ticket-granting ticket `kinit`
/// left in a credentials cache), gets a ticket-granting ticket and a
/// ticket for the server principal from the KDC (so renewed keys and expired tickets are
/// never a problem: every connection starts with fresh tickets), and authenticates with
/// it. The server principal is `zookeeper/<host>@<realm>`: `<host>` is the canonical name
/// of the connect string's host, as the Java client's default
/// `zookeeper.sasl.client.canonicalize.hostname=true` finds it (the address the connection
/// went to looked up in reverse in `/etc/hosts`, then DNS; the name used when the client's
/// resolver resolves it back to that address, else the host as written; lowercased), so `127.0.0.1`
/// becomes `localhost` where `/etc/hosts` says so. Turn that off with
/// [`canonicalize_host_name(false)`](Self::canonicalize_host_name) (the host as written), or
/// name the host with [`server_host`](Self::server_host). `<realm>` is the client
/// principal's.
#[derive(Clone)]
pub struct KerberosOptions {
    pub(crate) principal: String,
    pub(crate) keytab: PathBuf,
    pub(crate) service: String,
    pub(crate) server_host: Option<String>,
    /// Java's `zookeeper.sasl.client.canonicalize.hostname` (default true).
    pub(crate) canonicalize: bool,
    pub(crate) server_principal: Option<String>,
    pub(crate) kdc: Option<String>,
    pub(crate) krb5_conf: Option<PathBuf>,
    /// `Some`: log in from a credentials cache (`None` inside: the default one) instead of
    /// the keytab.
    pub(crate) ticket_cache: Option<Option<String>>,
}

impl fmt::Debug for KerberosOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KerberosOptions")
            .field("principal", &self.principal)
            .field("keytab", &self.keytab)
            .field("service", &self.service)
            .field("server_host", &self.server_host)
            .field("canonicalize", &self.canonicalize)
            .field("server_principal", &self.server_principal)
            .field("kdc", &self.kdc)
            .field("krb5_conf", &self.krb5_conf)
            .field("ticket_cache", &self.ticket_cache)
            .finish()
    }
}

impl KerberosOptions {
    /// Authenticates as `principal` (`name@REALM` or `name/instance@REALM`; the realm is
    /// required) with its key from the keytab file `keytab` (MIT format, as `kadmin ktadd`
    /// or `ktutil` write it; AES keys).
    pub fn new(principal: impl Into<String>, keytab: impl AsRef<Path>) -> Self {
        Self {
            principal: principal.into(),
            keytab: keytab.as_ref().to_owned(),
            service: "zookeeper".to_owned(),
            server_host: None,
            canonicalize: true,
            server_principal: None,
            kdc: None,
            krb5_conf: None,
            ticket_cache: None,
        }
    }

    /// Authenticates with the ticket-granting ticket that `kinit` left in the default
    /// credentials cache, as the cache's principal, without a keytab (the JAAS
    /// `Krb5LoginModule` with `useTicketCache=true`).
    ///
    /// The default cache is `$KRB5CCNAME` (`FILE:<path>` or a path), else
    /// `/tmp/krb5cc_<uid>`; [`ticket_cache`](Self::ticket_cache) names another. Only the
    /// `FILE:` type is read (MIT format version 4 or 3, what `kinit` writes); `KEYRING:`,
    /// `KCM:`, `DIR:` caches are refused with a clear error. The cache is read again for
    /// each connection, so a `kinit` (or `kinit -R`) done while the client runs is picked
    /// up by the next one; the ticket-granting ticket is used to get the server's ticket
    /// from the KDC (the KDC is found as for a keytab). A missing cache, a cache without a
    /// ticket-granting ticket, or an expired one ends the session in
    /// [`SessionState::AuthFailed`](crate::SessionState::AuthFailed) before anything is
    /// sent to ZooKeeper, with the reason logged (`tracing`); the client never renews
    /// tickets itself.
    ///
    /// ```no_run
    /// # async fn f() -> zk_client::Result<()> {
    /// use zk_client::{Client, KerberosOptions};
    /// // after `kinit app@EXAMPLE.COM`
    /// let client = Client::builder("zk1.example.com:2181")
    ///     .sasl_gssapi(KerberosOptions::from_ticket_cache())
    ///     .connect()
    ///     .await?;
    /// println!("{:?}", client.whoami().await?);
    /// # Ok(()) }
    /// ```
    pub fn from_ticket_cache() -> Self {
        let mut options = Self::new("", "");
        options.ticket_cache = Some(None);
        options
    }

    /// Logs in from the credentials cache `name` (`FILE:<path>` or a path) instead of the
    /// keytab; see [`from_ticket_cache`](Self::from_ticket_cache). When the options name a
    /// principal ([`new`](Self::new)), the cache must be that principal's.
    pub fn ticket_cache(mut self, name: impl Into<String>) -> Self {
        self.ticket_cache = Some(Some(name.into()));
        self
    }

    /// The service part of the server principal (default `zookeeper`; Java's
    /// `zookeeper.sasl.client.username`).
    pub fn service(mut self, service: impl Into<String>) -> Self {
        self.service = service.into();
        self
    }

    /// The host part of the server principal for every server, instead of each host of
    /// the connect string (for ensembles whose members share one principal, or connect
    /// strings with IP addresses).
    pub fn server_host(mut self, host: impl Into<String>) -> Self {
        self.server_host = Some(host.into());
        self
    }

    /// Whether the host of the server principal is the connect string host's canonical
    /// name (`true`, the default, as Java's `zookeeper.sasl.client.canonicalize.hostname`)
    /// or the host as written (`false`). Not used with [`server_host`](Self::server_host) or
    /// [`server_principal`](Self::server_principal).
    pub fn canonicalize_host_name(mut self, canonicalize: bool) -> Self {
        self.canonicalize = canonicalize;
        self
    }

    /// The host the server principal is made for, for a connection to `host` at address
    /// `connected`: the canonical name with
    /// [`canonicalize_host_name`](Self::canonicalize_host_name) (and no host or principal
    /// given), checked through the client's `resolver`, else `host`.
    pub(crate) async fn principal_host(
        &self,
        host: &str,
        connected: std::net::IpAddr,
        resolver: &crate::resolve::Resolver,
    ) -> String {
        if self.canonicalize && self.server_host.is_none() && self.server_principal.is_none() {
            canonical::canonical_host(host, connected, resolver).await
        } else {
            host.to_owned()
        }
    }

    /// The whole server principal, `service/host` or `service/host@REALM` (Java's
    /// `zookeeper.server.principal`): overrides [`service`](Self::service) and
    /// [`server_host`](Self::server_host). The realm, when given, must be the client's:
    /// cross-realm tickets are not supported.
    pub fn server_principal(mut self, principal: impl Into<String>) -> Self {
        self.server_principal = Some(principal.into());
        self
    }

    /// The KDC, `host` or `host:port` (TCP; default port 88), instead of the one
    /// `krb5.conf` names for the realm (Java's `java.security.krb5.kdc`).
    pub fn kdc(mut self, address: impl Into<String>) -> Self {
        self.kdc = Some(address.into());
        self
    }

    /// The `krb5.conf` to find the realm's KDC in (default: `$KRB5_CONFIG`, else
    /// `/etc/krb5.conf`; Java's `java.security.krb5.conf`). Only `[realms] REALM = { kdc =
    /// ... }` is read.
    pub fn krb5_conf(mut self, path: impl AsRef<Path>) -> Self {
        self.krb5_conf = Some(path.as_ref().to_owned());
        self
    }

    /// The client principal's realm.
    pub(crate) fn realm(&self) -> Result<&str, String> {
        match self.principal.rsplit_once('@') {
            Some((name, realm)) if !name.is_empty() && !realm.is_empty() => Ok(realm),
            _ => Err(format!(
                "Kerberos principal {:?} has no realm (name@REALM)",
                self.principal
            )),
        }
    }

    /// The server principal (`service/host`, no realm) to ask a ticket for, to reach `host`.
    pub(crate) fn server_principal_for(&self, host: &str) -> Result<String, String> {
        if let Some(full) = &self.server_principal {
            let (name, realm) = match full.rsplit_once('@') {
                Some((name, realm)) => (name, Some(realm)),
                None => (full.as_str(), None),
            };
            if let Some(realm) = realm {
                if realm != self.realm()? {
                    return Err(format!(
                        "server principal {full:?}: cross-realm tickets are not supported"
                    ));
                }
            }
            return Ok(name.to_owned());
        }
        let host = self.server_host.as_deref().unwrap_or(host);
        let host = host.trim_start_matches('[').trim_end_matches(']');
        Ok(format!("{}/{}", self.service, host.to_ascii_lowercase()))
    }

    /// The KDC's `host:port`: the one given, else the first `kdc` of the realm in krb5.conf.
    pub(crate) fn kdc_address(&self) -> Result<String, String> {
        if let Some(kdc) = &self.kdc {
            return Ok(with_default_port(kdc));
        }
        let path = match &self.krb5_conf {
            Some(p) => p.clone(),
            None => std::env::var_os("KRB5_CONFIG")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("/etc/krb5.conf")),
        };
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("no KDC given and cannot read {}: {e}", path.display()))?;
        let realm = self.realm()?;
        kdc_of_realm(&text, realm)
            .map(|kdc| with_default_port(&kdc))
            .ok_or_else(|| format!("{} names no kdc for realm {realm}", path.display()))
    }
}

/// `host` → `host:88`; `host:port` and `[v6]:port` stay.
fn with_default_port(kdc: &str) -> String {
    let has_port = match kdc.rsplit_once(':') {
        Some((host, port)) => {
            !port.is_empty()
                && port.bytes().all(|b| b.is_ascii_digit())
                && (!host.contains(':') || host.ends_with(']'))
        }
        None => false,
    };
    if has_port {
        kdc.to_owned()
    } else if kdc.contains(':') && !kdc.starts_with('[') {
        format!("[{kdc}]:88")
    } else {
        format!("{kdc}:88")
    }
}

/// The first `kdc = ...` of `realm` in the `[realms]` section of a krb5.conf text.
fn kdc_of_realm(text: &str, realm: &str) -> Option<String> {
    let mut in_realms = false;
    let mut in_realm = false;
    for line in text.lines() {
        let line = line.split(['#', ';']).next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if line.starts_with('[') {
            in_realms = line == "[realms]";
            in_realm = false;
            continue;
        }
        if !in_realms {
            continue;
        }
        if let Some((key, value)) = line.split_once('=') {
            let (key, value) = (key.trim(), value.trim());
            if value == "{" {
                in_realm = key == realm;
            } else if in_realm && key == "kdc" && !value.is_empty() {
                return Some(value.to_owned());
            }
        } else if line == "}" {
            in_realm = false;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_principal_follows_the_java_rules() {
        let o = KerberosOptions::new("app@EXAMPLE.COM", "/k");
        assert_eq!(o.realm().unwrap(), "EXAMPLE.COM");
        assert_eq!(
            o.server_principal_for("ZK1.example.com").unwrap(),
            "zookeeper/zk1.example.com"
        );
        let o = o.service("zk");
        assert_eq!(o.server_principal_for("h").unwrap(), "zk/h");
        let o = o.server_host("shared");
        assert_eq!(o.server_principal_for("h").unwrap(), "zk/shared");
        let o = o.server_principal("zookeeper/z@EXAMPLE.COM");
        assert_eq!(o.server_principal_for("h").unwrap(), "zookeeper/z");
        let o = o.server_principal("zookeeper/z@OTHER.COM");
        assert!(o.server_principal_for("h").is_err(), "cross-realm");
        assert!(KerberosOptions::new("app", "/k").realm().is_err());
    }

    #[test]
    fn kdc_comes_from_the_realm_section_of_krb5_conf() {
        let conf = "[libdefaults]\n default_realm = A.TEST\n kdc = wrong\n\
            [realms]\n B.TEST = {\n  kdc = b-kdc:750\n }\n A.TEST = {\n  # kdc = commented\n  \
            admin_server = adm\n  kdc = 127.0.0.1:8888\n  kdc = second\n }\n";
        assert_eq!(
            kdc_of_realm(conf, "A.TEST").as_deref(),
            Some("127.0.0.1:8888")
        );
        assert_eq!(kdc_of_realm(conf, "B.TEST").as_deref(), Some("b-kdc:750"));
        assert_eq!(kdc_of_realm(conf, "C.TEST"), None);
        assert_eq!(with_default_port("kdc"), "kdc:88");
        assert_eq!(with_default_port("kdc:750"), "kdc:750");
        assert_eq!(with_default_port("[::1]:750"), "[::1]:750");
        assert_eq!(with_default_port("::1"), "[::1]:88");
        let o = KerberosOptions::new("a@A.TEST", "/k").kdc("k");
        assert_eq!(o.kdc_address().unwrap(), "k:88");
    }
}
