//! zk-client with SASL GSSAPI (feature `sasl-gssapi`) against a real MIT KDC started here on
//! loopback (`integration_tests::kdc`, realm ZKRS.TEST, principals and keytabs made at test
//! time) and a ZooKeeper 3.8 whose JAAS `Server` section logs in as `zookeeper/localhost`
//! with `Krb5LoginModule` and a keytab, with the `SASLAuthenticationProvider` for `sasl:`
//! ACLs. Always a local java process (the settings force the process backend).

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use integration_tests::kdc::{Kdc, REALM};
use integration_tests::prelude::*;
use integration_tests::proxy::{Cut, Mode};
use integration_tests::{chroot, Proxy, ScratchDir, Server, Settings};
use tokio::sync::OnceCell;
use zk_client::{Acl, Client, CreateOptions, Error, KerberosOptions, Perms, SessionState};

/// The server's principal: the host part is the name the tests connect to.
const SERVER_PRINCIPAL: &str = "zookeeper/localhost";
/// A user with a password, who logs in with `kinit` (no keytab).
const KINITED: &str = "kinited";
const KINITED_PASSWORD: &str = "kinit-pw-1";
/// Another, for the failure cases (so other tests' KDC requests do not count).
const EXPIRING: &str = "expiring";

struct Kerberized {
    kdc: Kdc,
    server: Server,
    /// Keytab of `app`.
    app_keytab: PathBuf,
    /// Keytab of `shortlived` (tickets of 8 s).
    short_keytab: PathBuf,
    /// Keytab of `rotated`, whose key changed after it was written.
    stale_keytab: PathBuf,
    /// Keytab of `gone`, deleted from the KDC after it was written.
    gone_keytab: PathBuf,
    dir: ScratchDir,
}

/// One KDC and one Kerberized server for the whole binary.
async fn kerberized() -> &'static Kerberized {
    static SHARED: OnceCell<Kerberized> = OnceCell::const_new();
    SHARED
        .get_or_init(|| async {
            let kdc = Kdc::start();
            for name in [SERVER_PRINCIPAL, "app", "shortlived", "rotated", "gone"] {
                kdc.add_principal(name);
            }
            kdc.add_principal_with_password(KINITED, KINITED_PASSWORD);
            kdc.add_principal_with_password(EXPIRING, KINITED_PASSWORD);
            kdc.set_max_life("shortlived", "8 seconds");
            let server_keytab = kdc.keytab("zookeeper.keytab", &[SERVER_PRINCIPAL]);
            let app_keytab = kdc.keytab("app.keytab", &["app"]);
            let short_keytab = kdc.keytab("short.keytab", &["shortlived"]);
            let stale_keytab = kdc.keytab("rotated.keytab", &["rotated"]);
            kdc.change_key("rotated");
            let gone_keytab = kdc.keytab("gone.keytab", &["gone"]);
            kdc.delete_principal("gone");

            let dir = ScratchDir::new("kerberos");
            let jaas = dir.write(
                "jaas.conf",
                &format!(
                    "Server {{\n  com.sun.security.auth.module.Krb5LoginModule required\n  \
                     useKeyTab=true\n  keyTab=\"{}\"\n  storeKey=true\n  useTicketCache=false\n  \
                     principal=\"{SERVER_PRINCIPAL}@{REALM}\";\n}};\n",
                    server_keytab.display()
                ),
            );
            let settings = Settings::default()
                .with_jvm_flag(format!(
                    "-Djava.security.auth.login.config={}",
                    jaas.display()
                ))
                .with_jvm_flag(format!(
                    "-Djava.security.krb5.conf={}",
                    kdc.krb5_conf().display()
                ))
                .with_config_line(
                    "authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
                );
            let server = Server::launch_with(&settings).await;
            Kerberized {
                kdc,
                server,
                app_keytab,
                short_keytab,
                stale_keytab,
                gone_keytab,
                dir,
            }
        })
        .await
}

impl Kerberized {
    /// `localhost:<port><root>`: the host part names the server principal.
    fn hosts(&self, root: &str) -> String {
        format!("localhost:{}{root}", self.server.addr().port())
    }

    fn options(&self, name: &str, keytab: &PathBuf) -> KerberosOptions {
        KerberosOptions::new(Kdc::principal(name), keytab).krb5_conf(self.kdc.krb5_conf())
    }
}

async fn connect_as(hosts: &str, options: KerberosOptions) -> zk_client::Result<Client> {
    let builder = Client::builder(hosts)
        .session_timeout(Duration::from_secs(20))
        .establish_timeout(Duration::from_secs(20))
        .sasl_gssapi(options);
    within("Kerberos connect", builder.connect()).await
}

#[tokio::test]
async fn kerberos_keytab_login_whoami_sasl_acl_and_a_digest_client_gets_no_auth() {
    let k = kerberized().await;
    let root = chroot(&k.server, "krb_acl").await;
    let hosts = k.hosts(&root);
    let app = connect_as(&hosts, k.options("app", &k.app_keytab))
        .await
        .expect("Kerberos connect");
    let me = Kdc::principal("app");
    let ids = app.whoami().await.expect("whoami");
    assert!(
        ids.iter().any(|i| i.auth_scheme == "sasl" && i.user == me),
        "{ids:?}"
    );
    app.create(
        "/apps",
        b"kerberos only",
        &CreateOptions::persistent().with_acl(vec![Acl::sasl(Perms::ALL, me.clone())]),
    )
    .await
    .expect("create with a sasl ACL");
    assert_eq!(
        &app.get_data("/apps").await.expect("read").0[..],
        b"kerberos only"
    );

    let digest = Client::builder(&hosts)
        .auth("digest", b"app:secret")
        .connect()
        .await
        .expect("digest connect");
    assert!(matches!(digest.get_data("/apps").await, Err(Error::NoAuth)));
    let anonymous = connect(&hosts).await;
    assert!(matches!(
        anonymous.get_data("/apps").await,
        Err(Error::NoAuth)
    ));
    app.close().await.expect("close");
    digest.close().await.expect("close");
    anonymous.close().await.expect("close");
}

/// A key the KDC no longer has, or a principal it does not know: `connect()` fails with
/// `AuthFailed` at once, and the client does not keep asking the KDC (no reconnect storm).
#[tokio::test]
async fn kerberos_wrong_key_or_unknown_principal_fails_with_auth_failed_and_no_retries() {
    let k = kerberized().await;
    for (name, keytab) in [("rotated", &k.stale_keytab), ("gone", &k.gone_keytab)] {
        let before = k.kdc.log_lines_with(&Kdc::principal(name));
        let started = std::time::Instant::now();
        let err = connect_as(&k.hosts(""), k.options(name, keytab))
            .await
            .expect_err("refused credentials");
        assert!(
            matches!(err, Error::AuthFailed),
            "{name}: expected AuthFailed, got {err:?}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{name}: failed at once, not after the establish timeout"
        );
        let requests = k.kdc.log_lines_with(&Kdc::principal(name)) - before;
        tokio::time::sleep(Duration::from_secs(2)).await;
        let later = k.kdc.log_lines_with(&Kdc::principal(name)) - before;
        assert!(
            (1..=2).contains(&requests),
            "{name}: one attempt (AS-REQ, then with pre-authentication): {requests} KDC requests"
        );
        assert_eq!(requests, later, "{name}: no further attempts");
    }
}

#[tokio::test]
async fn kerberos_reconnect_authenticates_again_before_queued_requests() {
    let k = kerberized().await;
    let root = chroot(&k.server, "krb_reconnect").await;
    let proxy = Proxy::start(k.server.addr()).await;
    // Through the proxy the host is 127.0.0.1: name the server principal's host.
    let hosts = format!("{}{root}", proxy.connect_string());
    let app = connect_as(
        &hosts,
        k.options("app", &k.app_keytab).server_host("localhost"),
    )
    .await
    .expect("Kerberos connect");
    let acl = vec![Acl::sasl(Perms::ALL, Kdc::principal("app"))];
    app.create("/n", b"v", &CreateOptions::persistent().with_acl(acl))
        .await
        .expect("create");
    let epoch = app.connection_epoch();
    proxy.set_mode(Mode::Refuse);
    proxy.cut(Cut::Reset);
    wait_state(&app, "disconnected", |s| s == SessionState::Disconnected).await;
    let queued = app.get_data("/n");
    proxy.set_mode(Mode::Pass);
    // Without authenticating first, the queued read would fail with NoAuth.
    let (data, _) = within("queued read", queued)
        .await
        .expect("read after reconnect");
    assert_eq!(&data[..], b"v");
    assert!(app.connection_epoch() > epoch, "a new connection");
    app.close().await.expect("close");
}

/// Tickets of 8 s: after they expired, a reconnect gets new ones and the session goes on.
#[tokio::test]
async fn kerberos_expired_ticket_is_renewed_on_the_next_connection() {
    let k = kerberized().await;
    let root = chroot(&k.server, "krb_renew").await;
    let proxy = Proxy::start(k.server.addr()).await;
    let hosts = format!("{}{root}", proxy.connect_string());
    let short = connect_as(
        &hosts,
        k.options("shortlived", &k.short_keytab)
            .server_host("localhost"),
    )
    .await
    .expect("Kerberos connect");
    let acl = vec![Acl::sasl(Perms::ALL, Kdc::principal("shortlived"))];
    short
        .create("/n", b"v", &CreateOptions::persistent().with_acl(acl))
        .await
        .expect("create");
    let session = short.session_id();
    tokio::time::sleep(Duration::from_secs(10)).await;
    let epoch = short.connection_epoch();
    proxy.cut(Cut::Reset);
    within("reconnect with a new ticket", async {
        while short.connection_epoch() == epoch || !short.state().is_connected() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert_eq!(short.session_id(), session, "the same session");
    assert_eq!(&short.get_data("/n").await.expect("read").0[..], b"v");
    short.close().await.expect("close");
}

/// The Java client with the same keytab: the same `sasl` identity, and it reads the node
/// the Rust client protected with it.
#[tokio::test]
async fn kerberos_java_client_with_the_same_keytab_has_the_same_identity() {
    let k = kerberized().await;
    let root = chroot(&k.server, "krb_java").await;
    let hosts = k.hosts(&root);
    let app = connect_as(&hosts, k.options("app", &k.app_keytab))
        .await
        .expect("Kerberos connect");
    let me = Kdc::principal("app");
    let ours = app.whoami().await.expect("whoami");
    app.create(
        "/shared",
        b"for app",
        &CreateOptions::persistent().with_acl(vec![Acl::sasl(Perms::READ, me.clone())]),
    )
    .await
    .expect("create");

    let jaas = k.dir.write(
        "client-jaas.conf",
        &format!(
            "Client {{\n  com.sun.security.auth.module.Krb5LoginModule required\n  \
             useKeyTab=true\n  keyTab=\"{}\"\n  storeKey=true\n  useTicketCache=false\n  \
             principal=\"{me}\";\n}};\n",
            k.app_keytab.display()
        ),
    );
    let java = std::env::var("ZK_JAVA").unwrap_or_else(|_| "java".into());
    let program: PathBuf = [env!("CARGO_MANIFEST_DIR"), "java", "KerberosWhoAmI.java"]
        .iter()
        .collect();
    let out = within(
        "Java client",
        tokio::process::Command::new(java)
            .args(["-Xmx128m", "-XX:TieredStopAtLevel=1"])
            .arg(format!(
                "-Djava.security.auth.login.config={}",
                jaas.display()
            ))
            .arg(format!(
                "-Djava.security.krb5.conf={}",
                k.kdc.krb5_conf().display()
            ))
            .args([
                "-cp",
                "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-nop.jar",
            ])
            .arg(program)
            .args([hosts.as_str(), "/shared"])
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("run the Java client (openjdk-17, Debian's zookeeper)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("DONE"),
        "Java client failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let java_ids: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("ID sasl "))
        .collect();
    let rust_ids: Vec<&str> = ours
        .iter()
        .filter(|i| i.auth_scheme == "sasl")
        .map(|i| i.user.as_str())
        .collect();
    assert_eq!(java_ids, rust_ids, "the same sasl identity");
    assert_eq!(java_ids, vec![me.as_str()]);
    assert!(stdout.contains("DATA for app"), "{stdout}");
    app.close().await.expect("close");
}

/// `kinit` with a password into a credentials cache, then a client with no keytab: it logs in
/// from the cache as its principal; whoami and a `sasl` ACL show that identity; the Java
/// client with the same cache (JAAS `useTicketCache`) has the same identity.
#[tokio::test]
async fn kerberos_ticket_cache_from_kinit_connects_without_a_keytab() {
    let k = kerberized().await;
    let root = chroot(&k.server, "krb_ccache").await;
    let hosts = k.hosts(&root);
    let cache = k.kdc.path("kinited.cc");
    k.kdc.kinit(KINITED, KINITED_PASSWORD, None, &cache);
    let options = KerberosOptions::from_ticket_cache()
        .ticket_cache(format!("FILE:{}", cache.display()))
        .krb5_conf(k.kdc.krb5_conf());
    let client = connect_as(&hosts, options.clone())
        .await
        .expect("connect from the ticket cache");
    let me = Kdc::principal(KINITED);
    let ids = client.whoami().await.expect("whoami");
    assert!(
        ids.iter().any(|i| i.auth_scheme == "sasl" && i.user == me),
        "{ids:?}"
    );
    client
        .create(
            "/mine",
            b"from kinit",
            &CreateOptions::persistent().with_acl(vec![Acl::sasl(Perms::ALL, me.clone())]),
        )
        .await
        .expect("create with a sasl ACL");
    // A second session from the same cache (read again per connection), naming its
    // principal (a plain path this time).
    let again = connect_as(
        &hosts,
        KerberosOptions::new(me.clone(), "")
            .ticket_cache(cache.display().to_string())
            .krb5_conf(k.kdc.krb5_conf()),
    )
    .await
    .expect("second connect");
    assert_eq!(
        &again.get_data("/mine").await.expect("read").0[..],
        b"from kinit"
    );

    // Java, logging in from the same cache.
    let jaas = k.dir.write(
        "ccache-jaas.conf",
        &format!(
            "Client {{\n  com.sun.security.auth.module.Krb5LoginModule required\n  \
             useTicketCache=true\n  ticketCache=\"{}\"\n  doNotPrompt=true\n  \
             principal=\"{me}\";\n}};\n",
            cache.display()
        ),
    );
    let java = std::env::var("ZK_JAVA").unwrap_or_else(|_| "java".into());
    let program: PathBuf = [env!("CARGO_MANIFEST_DIR"), "java", "KerberosWhoAmI.java"]
        .iter()
        .collect();
    let out = within(
        "Java client",
        tokio::process::Command::new(java)
            .args(["-Xmx128m", "-XX:TieredStopAtLevel=1"])
            .arg(format!(
                "-Djava.security.auth.login.config={}",
                jaas.display()
            ))
            .arg(format!(
                "-Djava.security.krb5.conf={}",
                k.kdc.krb5_conf().display()
            ))
            .args([
                "-cp",
                "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-nop.jar",
            ])
            .arg(program)
            .args([hosts.as_str(), "/mine"])
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("run the Java client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(&format!("ID sasl {me}")),
        "Java client: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("DATA from kinit"), "{stdout}");
    client.close().await.expect("close");
    again.close().await.expect("close");
}

/// An expired ticket, a missing or corrupt cache, a cache of another principal: `connect()`
/// fails with `AuthFailed` at once, without asking the KDC for a service ticket.
#[tokio::test]
async fn kerberos_expired_or_absent_ticket_cache_fails_with_auth_failed() {
    let k = kerberized().await;
    let expired = k.kdc.path("expired.cc");
    k.kdc
        .kinit(EXPIRING, KINITED_PASSWORD, Some("2s"), &expired);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let valid = k.kdc.path("valid.cc");
    k.kdc.kinit(EXPIRING, KINITED_PASSWORD, None, &valid);
    let garbage = k.dir.write("garbage.cc", "\u{5}\u{4}not a cache at all");
    let cases = [
        (
            "expired",
            KerberosOptions::from_ticket_cache().ticket_cache(expired.display().to_string()),
        ),
        (
            "absent",
            KerberosOptions::from_ticket_cache().ticket_cache("FILE:/nonexistent/zkrs.cc"),
        ),
        (
            "garbage",
            KerberosOptions::from_ticket_cache().ticket_cache(garbage.display().to_string()),
        ),
        (
            "keyring",
            KerberosOptions::from_ticket_cache().ticket_cache("KEYRING:persistent:0"),
        ),
        (
            "other principal",
            KerberosOptions::new(Kdc::principal("app"), "")
                .ticket_cache(valid.display().to_string()),
        ),
    ];
    // The KDC logs a service ticket request as "<client> for <service>" (TGS_REQ lines).
    let tgs_requests = format!("{} for zookeeper", Kdc::principal(EXPIRING));
    for (what, options) in cases {
        let before = k.kdc.log_lines_with(&tgs_requests);
        let started = std::time::Instant::now();
        let err = connect_as(&k.hosts(""), options.krb5_conf(k.kdc.krb5_conf()))
            .await
            .expect_err(what);
        assert!(matches!(err, Error::AuthFailed), "{what}: {err:?}");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{what}: failed at once"
        );
        assert_eq!(
            k.kdc.log_lines_with(&tgs_requests),
            before,
            "{what}: no TGS request"
        );
    }
    // The control: the valid cache connects, and its TGS request is counted.
    let before = k.kdc.log_lines_with(&tgs_requests);
    let ok = connect_as(
        &k.hosts(""),
        KerberosOptions::from_ticket_cache()
            .ticket_cache(valid.display().to_string())
            .krb5_conf(k.kdc.krb5_conf()),
    )
    .await
    .expect("the valid cache connects");
    assert!(k.kdc.log_lines_with(&tgs_requests) > before);
    ok.close().await.expect("close");
}

/// Java's `zookeeper.sasl.client.canonicalize.hostname`: connecting to `127.0.0.1`, the
/// server principal's host is its canonical name (`/etc/hosts`: `localhost`), so the ticket
/// is for `zookeeper/localhost` and the login works without `server_host`; with the switch
/// off the host is taken as written (`zookeeper/127.0.0.1`, which the KDC does not know:
/// `AuthFailed`).
#[tokio::test]
async fn kerberos_canonicalizes_the_server_host_as_java_does_unless_switched_off() {
    let k = kerberized().await;
    let hosts = format!("127.0.0.1:{}", k.server.addr().port());
    let canonical = std::fs::read_to_string("/etc/hosts")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            let mut f = l.split('#').next()?.split_whitespace();
            (f.next()? == "127.0.0.1").then(|| f.next().map(str::to_owned))?
        });
    assert_eq!(
        canonical.as_deref(),
        Some("localhost"),
        "this test needs /etc/hosts to name 127.0.0.1 localhost first"
    );
    let app = connect_as(&hosts, k.options("app", &k.app_keytab))
        .await
        .expect("Kerberos connect to 127.0.0.1, principal canonicalized to localhost");
    let ids = app.whoami().await.expect("whoami");
    assert!(
        ids.iter()
            .any(|i| i.auth_scheme == "sasl" && i.user == Kdc::principal("app")),
        "{ids:?}"
    );
    app.close().await.expect("close");
    let err = connect_as(
        &hosts,
        k.options("app", &k.app_keytab)
            .canonicalize_host_name(false),
    )
    .await
    .expect_err("no principal zookeeper/127.0.0.1");
    assert!(matches!(err, Error::AuthFailed), "{err:?}");
}
