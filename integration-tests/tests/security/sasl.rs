//! zk-client with SASL DIGEST-MD5 (feature `sasl`) against a real ZooKeeper 3.8 whose JAAS
//! `Server` section (`DigestLoginModule`) knows `bob`, with the `SASLAuthenticationProvider`
//! for `sasl:` ACLs. Always a local java process (the settings force the process backend).

use std::time::Duration;

use integration_tests::prelude::*;
use integration_tests::proxy::{Cut, Mode};
use integration_tests::{chroot, Proxy, ScratchDir, Server, Settings};
use tokio::sync::OnceCell;
use zk_client::{Acl, Client, CreateOptions, Error, Perms, SessionState};

const JAAS: &str = r#"Server {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_bob="bob-secret";
};
"#;

struct Sasl {
    server: Server,
    _dir: ScratchDir,
}

/// One SASL-enabled server for the whole binary.
async fn sasl_server() -> &'static Sasl {
    static SHARED: OnceCell<Sasl> = OnceCell::const_new();
    SHARED
        .get_or_init(|| async {
            let dir = ScratchDir::new("jaas");
            let path = dir.write("jaas.conf", JAAS);
            let settings = Settings::default()
                .with_jvm_flag(format!(
                    "-Djava.security.auth.login.config={}",
                    path.display()
                ))
                .with_config_line(
                    "authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
                );
            let server = Server::launch_with(&settings).await;
            Sasl { server, _dir: dir }
        })
        .await
}

async fn connect_as(hosts: &str, user: &str, password: &str) -> zk_client::Result<Client> {
    let builder = Client::builder(hosts)
        .session_timeout(Duration::from_secs(10))
        .establish_timeout(Duration::from_secs(20))
        .sasl_digest_md5(user, password);
    within("SASL connect", builder.connect()).await
}

#[tokio::test]
async fn sasl_user_reads_its_sasl_acl_node_and_others_get_no_auth() {
    let s = sasl_server().await;
    let root = chroot(&s.server, "sasl_acl").await;
    let hosts = format!("{}{root}", s.server.connect_string());
    let bob = connect_as(&hosts, "bob", "bob-secret")
        .await
        .expect("SASL connect");
    let ids = bob.whoami().await.expect("whoami");
    assert!(
        ids.iter()
            .any(|i| i.auth_scheme == "sasl" && i.user == "bob"),
        "{ids:?}"
    );
    let acl = vec![Acl::sasl(Perms::ALL, "bob")];
    bob.create(
        "/bobs",
        b"only bob",
        &CreateOptions::persistent().with_acl(acl),
    )
    .await
    .expect("create with a sasl ACL");
    assert_eq!(
        &bob.get_data("/bobs").await.expect("read").0[..],
        b"only bob"
    );
    let anonymous = connect(&hosts).await;
    assert!(matches!(
        anonymous.get_data("/bobs").await,
        Err(Error::NoAuth)
    ));
    bob.close().await.expect("close");
    anonymous.close().await.expect("close");
}

#[tokio::test]
async fn sasl_wrong_password_fails_with_auth_failed() {
    let s = sasl_server().await;
    let err = connect_as(&s.server.connect_string(), "bob", "wrong")
        .await
        .expect_err("a wrong password");
    assert!(
        matches!(err, Error::AuthFailed),
        "expected AuthFailed, got {err:?}"
    );
}

#[tokio::test]
async fn sasl_reconnect_authenticates_again_before_queued_requests() {
    let s = sasl_server().await;
    let root = chroot(&s.server, "sasl_reconnect").await;
    let proxy = Proxy::start(s.server.addr()).await;
    let hosts = format!("{}{root}", proxy.connect_string());
    let bob = connect_as(&hosts, "bob", "bob-secret")
        .await
        .expect("SASL connect");
    let acl = vec![Acl::sasl(Perms::ALL, "bob")];
    bob.create("/n", b"v", &CreateOptions::persistent().with_acl(acl))
        .await
        .expect("create");
    let epoch = bob.connection_epoch();
    // Drop the connection and hold the client off while it queues a protected read.
    proxy.set_mode(Mode::Refuse);
    proxy.cut(Cut::Reset);
    wait_state(&bob, "disconnected", |s| s == SessionState::Disconnected).await;
    let queued = bob.get_data("/n");
    proxy.set_mode(Mode::Pass);
    // The new connection authenticates before the queued read reaches the server: without
    // that, the read would fail with NoAuth.
    let (data, _) = within("queued read", queued)
        .await
        .expect("read after reconnect");
    assert_eq!(&data[..], b"v");
    assert!(bob.connection_epoch() > epoch, "a new connection");
    bob.close().await.expect("close");
}
