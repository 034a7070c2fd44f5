//! Certificates and keystores for TLS tests, made at test time with Debian's `openssl` and
//! the JDK's `keytool` in a temporary directory (removed on drop, or by the reaper).
//!
//! [`Pki::new`] makes a CA, a server certificate for `127.0.0.1` and `localhost` (PKCS#12
//! keystore and truststore for ZooKeeper), two client certificates with different subjects
//! (PEM, for the Rust client and `x509` ACLs), and a second, unrelated CA (to test rejection). [`Pki::server_settings`] gives harness
//! settings for a TLS server using them.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::runtime::{self, Reap};
use crate::Settings;

/// Password of every keystore made here.
pub const STORE_PASSWORD: &str = "zkrs-test-pass";

/// Extensions of the leaf certificates: usable by servers and clients, for the loopback
/// address and `localhost`.
const LEAF_EXT: &str = "basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=IP:127.0.0.1,DNS:localhost
";

/// A directory of test certificates; removed on drop.
#[derive(Debug)]
pub struct Pki {
    dir: PathBuf,
}

/// How a TLS server treats client certificates (`ssl.clientAuth`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// `need`: a client without a trusted certificate is refused.
    Need,
    /// `want`: asked for, not required.
    Want,
    /// `none`: not asked for.
    None,
}

impl Pki {
    /// Makes every file (about a second: EC P-256 keys, one `keytool` run). Panics naming
    /// the missing tool when `openssl` or `keytool` is not installed.
    pub fn new() -> Pki {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "zkrs-it-pki-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        fs::create_dir_all(&dir).expect("create pki dir");
        runtime::register(Reap::Dir(&dir.to_string_lossy()));
        let pki = Pki { dir };
        fs::write(pki.path("leaf.ext"), LEAF_EXT).expect("write leaf.ext");
        pki.make_ca("ca", "zkrs test CA");
        pki.make_ca("other-ca", "zkrs unrelated CA");
        pki.make_leaf("server", "localhost");
        pki.make_leaf("client", "zkrs-client");
        pki.make_leaf("client2", "zkrs-other-client");
        pki.make_stores();
        pki
    }

    /// A file in the directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The CA that signed the server and client certificates (PEM).
    pub fn ca_pem(&self) -> PathBuf {
        self.path("ca.pem")
    }

    /// A CA that signed nothing here (PEM): trusting it alone must reject the server.
    pub fn other_ca_pem(&self) -> PathBuf {
        self.path("other-ca.pem")
    }

    /// The client certificate (PEM) and its key (PKCS#8 PEM).
    pub fn client_cert(&self) -> (PathBuf, PathBuf) {
        (self.path("client.pem"), self.path("client.key"))
    }

    /// The subject of [`client_cert`](Self::client_cert) as ZooKeeper's
    /// `X509AuthenticationProvider` names it (`x509:` ACL id).
    pub const CLIENT_SUBJECT: &'static str = "CN=zkrs-client";

    /// A second client certificate from the same CA, subject
    /// [`OTHER_CLIENT_SUBJECT`](Self::OTHER_CLIENT_SUBJECT): trusted, but another identity.
    pub fn other_client_cert(&self) -> (PathBuf, PathBuf) {
        (self.path("client2.pem"), self.path("client2.key"))
    }

    /// The subject of [`other_client_cert`](Self::other_client_cert).
    pub const OTHER_CLIENT_SUBJECT: &'static str = "CN=zkrs-other-client";

    /// Settings for a server with a `secureClientPort` whose keystore holds the server
    /// certificate and whose truststore holds the CA, with `ssl.clientAuth` as given.
    pub fn server_settings(&self, client_auth: ClientAuth) -> Settings {
        let auth = match client_auth {
            ClientAuth::Need => "need",
            ClientAuth::Want => "want",
            ClientAuth::None => "none",
        };
        let keystore = self.path("server.p12");
        let truststore = self.path("truststore.p12");
        Settings::default()
            .with_secure_client_port()
            .with_config_line(format!("ssl.keyStore.location={}", keystore.display()))
            .with_config_line(format!("ssl.keyStore.password={STORE_PASSWORD}"))
            .with_config_line("ssl.keyStore.type=PKCS12")
            .with_config_line(format!("ssl.trustStore.location={}", truststore.display()))
            .with_config_line(format!("ssl.trustStore.password={STORE_PASSWORD}"))
            .with_config_line("ssl.trustStore.type=PKCS12")
            .with_config_line(format!("ssl.clientAuth={auth}"))
    }

    fn make_ca(&self, name: &str, cn: &str) {
        self.run(
            "openssl",
            &[
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-days",
                "3",
                "-subj",
                &format!("/CN={cn}"),
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign",
                "-keyout",
                &format!("{name}.key"),
                "-out",
                &format!("{name}.pem"),
            ],
        );
    }

    fn make_leaf(&self, name: &str, cn: &str) {
        self.run(
            "openssl",
            &[
                "req",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-subj",
                &format!("/CN={cn}"),
                "-keyout",
                &format!("{name}.key"),
                "-out",
                &format!("{name}.csr"),
            ],
        );
        self.run(
            "openssl",
            &[
                "x509",
                "-req",
                "-in",
                &format!("{name}.csr"),
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "3",
                "-extfile",
                "leaf.ext",
                "-out",
                &format!("{name}.pem"),
            ],
        );
    }

    /// The server's PKCS#12 keystore (key, certificate, CA) and truststore (the CA).
    fn make_stores(&self) {
        let pass = format!("pass:{STORE_PASSWORD}");
        self.run(
            "openssl",
            &[
                "pkcs12",
                "-export",
                "-inkey",
                "server.key",
                "-in",
                "server.pem",
                "-certfile",
                "ca.pem",
                "-name",
                "server",
                "-passout",
                &pass,
                "-out",
                "server.p12",
            ],
        );
        self.run(
            &keytool(),
            &[
                "-importcert",
                "-noprompt",
                "-alias",
                "ca",
                "-file",
                "ca.pem",
                "-keystore",
                "truststore.p12",
                "-storetype",
                "PKCS12",
                "-storepass",
                STORE_PASSWORD,
            ],
        );
    }

    fn run(&self, program: &str, args: &[&str]) {
        let out = Command::new(program)
            .args(args)
            .current_dir(&self.dir)
            .output()
            .unwrap_or_else(|e| {
                panic!("cannot run {program} (install openssl and openjdk-17-jdk-headless): {e}")
            });
        assert!(
            out.status.success(),
            "{program} {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Default for Pki {
    fn default() -> Self {
        Self::new()
    }
}

fn keytool() -> String {
    for home in [
        std::env::var("JAVA_HOME").ok(),
        Some("/usr/lib/jvm/java-17-openjdk-amd64".into()),
    ]
    .into_iter()
    .flatten()
    {
        let candidate = Path::new(&home).join("bin/keytool");
        if candidate.exists() {
            return candidate.to_string_lossy().into_owned();
        }
    }
    "keytool".to_owned()
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}
