//! zk-client over TLS (feature `tls`) against a real 3-node ZooKeeper 3.8 ensemble serving a
//! `secureClientPort` with the Netty factory and `ssl.clientAuth=need`, keystores made at
//! test time (`integration_tests::pki`). Always local java processes (the settings force the
//! process backend). A second ensemble of its own checks read-only mode over TLS.

use std::time::Duration;

use integration_tests::pki::{ClientAuth, Pki};
use integration_tests::prelude::*;
use integration_tests::probe::four_letter_word;
use integration_tests::{chroot, Ensemble, ScratchDir, ZkTarget};
use tokio::sync::OnceCell;
use zk_client::{Acl, Client, CreateOptions, Error, EventType, Perms, SessionState, TlsOptions};

struct Tls {
    pki: Pki,
    ens: Ensemble,
}

/// One TLS ensemble for the whole binary (three JVMs are the expensive part). Its member 0 is
/// never killed: tests reach it alone.
async fn tls() -> &'static Tls {
    static SHARED: OnceCell<Tls> = OnceCell::const_new();
    SHARED
        .get_or_init(|| async {
            let pki = Pki::new();
            let ens = Ensemble::launch_with(3, &pki.server_settings(ClientAuth::Need)).await;
            Tls { pki, ens }
        })
        .await
}

impl Tls {
    /// Every member's TLS address, with `root`.
    fn hosts(&self, root: &str) -> String {
        let all: Vec<usize> = (0..self.ens.len()).collect();
        self.hosts_of(&all, root)
    }

    /// The TLS addresses of `members`, with `root`.
    fn hosts_of(&self, members: &[usize], root: &str) -> String {
        let addrs: Vec<String> = members
            .iter()
            .map(|&i| self.ens.secure_addr(i).expect("secure port").to_string())
            .collect();
        format!("{}{root}", addrs.join(","))
    }

    /// Trusts the test CA and presents the client certificate.
    fn options(&self) -> TlsOptions {
        let (cert, key) = self.pki.client_cert();
        TlsOptions::new()
            .ca_file(self.pki.ca_pem())
            .client_cert_files(cert, key)
    }

    /// The member holding a watch of `session_id` (`wchc`: watches live on the server the
    /// session is connected to; `cons` on the plain port does not list TLS connections).
    async fn server_watching(&self, session_id: i64) -> Option<usize> {
        let needle = format!("0x{session_id:x}");
        for (i, addr) in self.ens.client_addrs().into_iter().enumerate() {
            if let Ok(out) = four_letter_word(addr, "wchc", Duration::from_secs(5)).await {
                if out.contains(&needle) {
                    return Some(i);
                }
            }
        }
        None
    }

    async fn connect(&self, hosts: &str, options: TlsOptions) -> zk_client::Result<Client> {
        let builder = Client::builder(hosts)
            .session_timeout(Duration::from_secs(6))
            .establish_timeout(Duration::from_secs(20))
            .tls(options);
        within("TLS connect", builder.connect()).await
    }
}

#[tokio::test]
async fn tls_read_write_watch_and_failover_across_tls_hosts() {
    let t = tls().await;
    let root = chroot(&t.ens, "tls_failover").await;
    // The member killed below is a's, and a stays off member 0: the shared ensemble's other
    // tests reach member 0 alone (the rotation through its byte pipe, the name check), and a
    // kill there made the rotation's reconnect outlast its session (once in ten CI runs).
    let a = t
        .connect(&t.hosts_of(&[1, 2], &root), t.options())
        .await
        .expect("TLS connect");
    let b = t
        .connect(&t.hosts(&root), t.options())
        .await
        .expect("TLS connect");
    a.create("/n", b"v1", &CreateOptions::persistent())
        .await
        .expect("create over TLS");
    // b's server may be another member, which need not have applied the create yet: a read
    // across sessions sees it after a sync (ZooKeeper's consistency guarantee).
    b.sync("/n").await.expect("sync over TLS");
    let (data, _) = b.get_data("/n").await.expect("read over TLS");
    assert_eq!(&data[..], b"v1");
    // A large value crosses many TLS records both ways.
    let big = vec![7u8; 600_000];
    a.set_data("/n", &big, None).await.expect("large write");
    b.sync("/n").await.expect("sync over TLS");
    assert_eq!(
        b.get_data("/n").await.expect("large read").0.len(),
        big.len()
    );

    // A deep pipeline (past the 64 in flight that make the connection pause its reads)
    // through the TLS stream: every reply arrives, in order.
    let reads: Vec<_> = (0..500).map(|_| b.exists("/n")).collect();
    let stats = within("pipelined reads", futures_util::future::join_all(reads)).await;
    assert!(
        stats.iter().all(|r| matches!(r, Ok(Some(_)))),
        "pipelined reads over TLS"
    );

    let (_, _, watcher) = a.get_data_watch("/n").await.expect("watch");
    let epoch = a.connection_epoch();
    let on = within("find a's server", async {
        loop {
            if let Some(i) = t.server_watching(a.session_id()).await {
                return i;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    t.ens.kill(on).await;
    within("reconnect to another TLS member", async {
        while a.connection_epoch() == epoch || !a.state().is_connected() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    // The watch was re-registered on the new TLS connection and fires there.
    within("write through b", async {
        loop {
            match b.set_data("/n", b"v2", None).await {
                Ok(_) => return,
                Err(e) if e.is_retryable() => tokio::time::sleep(Duration::from_millis(100)).await,
                Err(e) => panic!("write after failover: {e}"),
            }
        }
    })
    .await;
    let event = within("watch after failover", watcher)
        .await
        .expect("event");
    assert_eq!(event.event_type, EventType::NodeDataChanged);
    assert_eq!(&a.get_data("/n").await.expect("read").0[..], b"v2");
    t.ens.start(on).await;
    a.close().await.expect("close");
    b.close().await.expect("close");
}

/// The server's `X509AuthenticationProvider` (ZooKeeper's default on the secure port) gives
/// each TLS session the identity `x509:<subject DN>` of its client certificate.
#[tokio::test]
async fn x509_acl_admits_the_certificate_subject_and_refuses_another_certificate() {
    let t = tls().await;
    let root = chroot(&t.ens, "x509_acl").await;
    let hosts = t.hosts(&root);
    // The failover test kills members of this ensemble meanwhile: every call here waits out
    // a connection loss (`answered`), and asserts the answer that follows.
    let owner = t.connect(&hosts, t.options()).await.expect("TLS connect");
    let ids = answered("whoami", || owner.whoami()).await.expect("whoami");
    assert!(
        ids.iter()
            .any(|i| i.auth_scheme == "x509" && i.user == Pki::CLIENT_SUBJECT),
        "{ids:?}"
    );
    let acl = vec![Acl::x509(Perms::ALL, Pki::CLIENT_SUBJECT)];
    let options = CreateOptions::persistent().with_acl(acl);
    match answered("create", || owner.create("/mine", b"cert only", &options)).await {
        // Applied before a lost reply, when tried again.
        Ok(_) | Err(Error::NodeExists) => {}
        Err(e) => panic!("create with an x509 ACL: {e}"),
    }
    let (stored, _) = answered("get_acl", || owner.get_acl("/mine"))
        .await
        .expect("get_acl");
    assert_eq!(stored[0].id.scheme, "x509");
    assert_eq!(stored[0].id.id, Pki::CLIENT_SUBJECT);
    assert_eq!(
        &answered("read", || owner.get_data("/mine"))
            .await
            .expect("read")
            .0[..],
        b"cert only"
    );

    // Same CA, another subject: connected, but not that identity.
    let (cert, key) = t.pki.other_client_cert();
    let other = t
        .connect(
            &hosts,
            TlsOptions::new()
                .ca_file(t.pki.ca_pem())
                .client_cert_files(cert, key),
        )
        .await
        .expect("TLS connect with the other certificate");
    let ids = answered("whoami", || other.whoami()).await.expect("whoami");
    assert!(
        ids.iter()
            .any(|i| i.auth_scheme == "x509" && i.user == Pki::OTHER_CLIENT_SUBJECT),
        "{ids:?}"
    );
    let read = answered("other's read", || other.get_data("/mine")).await;
    assert!(
        matches!(read, Err(Error::NoAuth)),
        "another certificate must get NoAuth: {read:?}"
    );
    let write = answered("other's write", || other.set_data("/mine", b"x", None)).await;
    assert!(matches!(write, Err(Error::NoAuth)), "{write:?}");
    owner.close().await.expect("close");
    other.close().await.expect("close");
}

/// A byte-level TCP forwarder (the harness's proxy forwards ZooKeeper packets, not TLS
/// records) whose open connections can be cut.
struct BytePipe {
    addr: std::net::SocketAddr,
    conns: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>>,
    _accept: tokio::task::JoinHandle<()>,
}

impl BytePipe {
    async fn start(upstream: std::net::SocketAddr) -> BytePipe {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let conns = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let tracked = conns.clone();
        let accept = tokio::spawn(async move {
            while let Ok((mut down, _)) = listener.accept().await {
                let task = tokio::spawn(async move {
                    if let Ok(mut up) = tokio::net::TcpStream::connect(upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut down, &mut up).await;
                    }
                });
                tracked.lock().unwrap().push(task.abort_handle());
            }
        });
        BytePipe {
            addr,
            conns,
            _accept: accept,
        }
    }

    /// Closes every open connection (the client sees EOF and reconnects).
    fn cut(&self) {
        for c in self.conns.lock().unwrap().drain(..) {
            c.abort();
        }
    }
}

impl Drop for BytePipe {
    fn drop(&mut self) {
        self.cut();
        self._accept.abort();
    }
}

/// Certificates rotate: when the client's certificate files change on disk, the next
/// connection presents the new certificate (here a new x509 identity), without a restart.
#[tokio::test]
async fn tls_rotated_client_certificate_files_are_used_on_the_next_connection() {
    let t = tls().await;
    let dir = ScratchDir::new("tls-rotate");
    let copy = |from: &std::path::Path, to: &str| {
        dir.write(to, &std::fs::read_to_string(from).expect("read pem"))
    };
    let (cert, key) = t.pki.client_cert();
    let (cert_path, key_path) = (copy(&cert, "client.pem"), copy(&key, "client.key"));
    let proxy = BytePipe::start(t.ens.secure_addr(0).expect("secure port")).await;
    let options = TlsOptions::new()
        .ca_file(t.pki.ca_pem())
        .client_cert_files(&cert_path, &key_path);
    let client = t
        .connect(&proxy.addr.to_string(), options)
        .await
        .expect("TLS connect");
    let x509 = |ids: Vec<zk_client::ClientInfo>| {
        ids.into_iter()
            .find(|i| i.auth_scheme == "x509")
            .map(|i| i.user)
    };
    let before = x509(client.whoami().await.expect("whoami"));
    assert_eq!(before.as_deref(), Some(Pki::CLIENT_SUBJECT));

    // The new certificate replaces the old one in the same files.
    let (cert2, key2) = t.pki.other_client_cert();
    copy(&cert2, "client.pem");
    copy(&key2, "client.key");
    let epoch = client.connection_epoch();
    proxy.cut();
    within("reconnect", async {
        while client.connection_epoch() == epoch || !client.state().is_connected() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    let after = x509(client.whoami().await.expect("whoami"));
    assert_eq!(after.as_deref(), Some(Pki::OTHER_CLIENT_SUBJECT));
    client.close().await.expect("close");
}

#[tokio::test]
async fn tls_server_signed_by_another_ca_is_rejected_with_a_tls_error() {
    let t = tls().await;
    let (cert, key) = t.pki.client_cert();
    let options = TlsOptions::new()
        .ca_file(t.pki.other_ca_pem())
        .client_cert_files(cert, key);
    let err = t
        .connect(&t.hosts(""), options)
        .await
        .expect_err("a server the client does not trust");
    match &err {
        Error::Tls(msg) => assert!(msg.contains("UnknownIssuer"), "{msg}"),
        other => panic!("expected Error::Tls, got {other:?}"),
    }
}

#[tokio::test]
async fn tls_missing_client_certificate_is_rejected_when_the_server_needs_one() {
    let t = tls().await;
    let options = TlsOptions::new().ca_file(t.pki.ca_pem());
    let err = t
        .connect(&t.hosts(""), options)
        .await
        .expect_err("no client certificate, ssl.clientAuth=need");
    assert!(
        matches!(err, Error::Tls(_)),
        "expected Error::Tls, got {err:?}"
    );
}

#[tokio::test]
async fn tls_hostname_is_verified_unless_turned_off() {
    let t = tls().await;
    let err = t
        .connect(&t.hosts(""), t.options().server_name("zk.example.invalid"))
        .await
        .expect_err("a name the certificate does not carry");
    match &err {
        Error::Tls(msg) => assert!(msg.contains("not valid for name"), "{msg}"),
        other => panic!("expected Error::Tls, got {other:?}"),
    }
    let client = t
        .connect(
            &t.hosts(""),
            t.options()
                .server_name("zk.example.invalid")
                .verify_hostname(false),
        )
        .await
        .expect("hostname verification off");
    client.exists("/").await.expect("read");
    // The DNS name in the certificate works as well as the IP address.
    let port = t.ens.secure_addr(0).expect("secure port").port();
    let by_name = t
        .connect(&format!("localhost:{port}"), t.options())
        .await
        .expect("connect by DNS name");
    wait_state(&by_name, "connected", SessionState::is_connected).await;
}

#[tokio::test]
async fn tls_read_only_mode_with_two_of_three_members_down_then_back_to_read_write() {
    // Its own ensemble: members are stopped here, which the shared one must not see.
    let pki = Pki::new();
    let settings = pki.server_settings(ClientAuth::Need).with_local_sessions();
    let ens = Ensemble::launch_with(3, &settings).await;
    let tls = Tls { pki, ens };
    let root = chroot(&tls.ens, "tls_read_only").await;
    let setup = tls.connect(&tls.hosts(&root), tls.options()).await.unwrap();
    setup
        .create("/data", b"before", &CreateOptions::persistent())
        .await
        .unwrap();
    setup.close().await.unwrap();

    leave_member_0_read_only(&tls.ens).await;

    // Over TLS, the read-only member takes a read-only session and serves reads only.
    let builder = Client::builder(&tls.hosts(&root))
        .read_only(true)
        .session_timeout(Duration::from_secs(6))
        .establish_timeout(Duration::from_secs(60))
        .tls(tls.options());
    let c = within("read-only TLS connect", builder.connect())
        .await
        .unwrap();
    assert_read_only_session(&c).await;

    // The quorum comes back: the client finds a read/write member (over TLS) and writes.
    back_to_read_write(&tls.ens, c).await;
}
