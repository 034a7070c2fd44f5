//! zk-client against a real server: session lifecycle, reconnects, expiry, auth replay.

use std::time::Duration;

use integration_tests::prelude::*;
use integration_tests::proxy::{Cut, Mode};
use integration_tests::{standalone, Proxy};
use zk_client::{Acl, Client, CreateOptions, Error, EventType, SessionState};

/// Polls `exists` through `observer` until the node is gone.
async fn wait_gone(observer: &Client, path: &str) {
    within(&format!("{path} to disappear"), async {
        while observer.exists(path).await.unwrap().is_some() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn close_removes_ephemerals_and_is_terminal() {
    let TestRoot { server, root, .. } = test_root("session_close").await;
    let hosts = format!("{}{root}", server.connect_string());
    let a = connect(&hosts).await;
    let b = connect(&hosts).await;
    assert_ne!(a.session_id(), 0);
    assert_eq!(a.session_password().len(), 16);
    assert_eq!(a.state(), SessionState::Connected);
    a.create("/eph", b"", &CreateOptions::ephemeral())
        .await
        .unwrap();
    assert!(b.exists("/eph").await.unwrap().is_some());
    a.close().await.unwrap();
    assert_eq!(a.state(), SessionState::Closed);
    b.sync("/").await.unwrap();
    assert!(
        b.exists("/eph").await.unwrap().is_none(),
        "closeSession removed the ephemeral"
    );
    assert!(matches!(a.get_data("/").await, Err(Error::Closed)));
    a.close().await.unwrap();
    b.close().await.unwrap();
}

#[tokio::test]
async fn dropping_every_handle_closes_the_session() {
    let TestRoot { server, root, .. } = test_root("session_drop").await;
    let hosts = format!("{}{root}", server.connect_string());
    let a = connect(&hosts).await;
    let b = connect(&hosts).await;
    a.create("/eph", b"", &CreateOptions::ephemeral())
        .await
        .unwrap();
    let clone = a.clone();
    drop(a);
    assert!(
        b.exists("/eph").await.unwrap().is_some(),
        "a clone keeps the session"
    );
    drop(clone);
    wait_gone(&b, "/eph").await;
    b.close().await.unwrap();
}

#[tokio::test]
async fn server_side_expiry_is_terminal_and_fails_watchers() {
    let TestRoot { server, root, .. } = test_root("session_expiry").await;
    let hosts = format!("{}{root}", server.connect_string());
    let a = connect(&hosts).await;
    a.create("/w", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let (_, _, watcher) = a.get_data_watch("/w").await.unwrap();
    let id = a.session_id();
    expire_client(server.addr(), &a).await;
    assert!(matches!(
        within("watcher", watcher).await,
        Err(Error::SessionExpired)
    ));
    assert!(matches!(a.get_data("/w").await, Err(Error::SessionExpired)));
    assert_eq!(a.session_id(), id, "no new session is opened silently");
    assert_eq!(a.state(), SessionState::Expired);
    a.close().await.unwrap();
}

#[tokio::test]
async fn blackhole_disconnects_then_expires_with_pending_calls_failed() {
    let TestRoot { server, root, .. } = test_root("session_blackhole").await;
    let proxy = Proxy::start(server.addr()).await;
    let a = connect_with_timeout(&format!("{}{root}", proxy.connect_string()), 2).await;
    let observer = connect(&format!("{}{root}", server.connect_string())).await;
    a.create("/eph", b"", &CreateOptions::ephemeral())
        .await
        .unwrap();
    let (_, _, watcher) = a.get_data_watch("/eph").await.unwrap();
    let mut states = a.watch();

    proxy.set_mode(Mode::Blackhole);
    let in_flight = a.get_data("/eph");
    assert_eq!(
        within("disconnect", states.changed()).await,
        SessionState::Disconnected
    );
    assert!(matches!(
        within("in flight", in_flight).await,
        Err(Error::ConnectionLoss)
    ));
    let queued = a.get_data("/eph");
    assert_eq!(
        within("expiry", states.changed()).await,
        SessionState::Expired
    );
    assert!(matches!(
        within("queued", queued).await,
        Err(Error::SessionExpired)
    ));
    assert!(matches!(
        within("watcher", watcher).await,
        Err(Error::SessionExpired)
    ));

    proxy.set_mode(Mode::Pass);
    wait_gone(&observer, "/eph").await;
    assert_eq!(
        a.state(),
        SessionState::Expired,
        "still terminal after the network heals"
    );
    assert!(matches!(a.exists("/").await, Err(Error::SessionExpired)));
    observer.close().await.unwrap();
}

#[tokio::test]
async fn reconnect_keeps_session_ephemerals_and_watches() {
    let TestRoot { server, root, .. } = test_root("session_reconnect").await;
    let proxy = Proxy::start(server.addr()).await;
    let a = connect(&format!("{}{root}", proxy.connect_string())).await;
    let b = connect(&format!("{}{root}", server.connect_string())).await;
    let id = a.session_id();
    a.create("/eph", b"", &CreateOptions::ephemeral())
        .await
        .unwrap();
    a.create("/w", b"0", &CreateOptions::persistent())
        .await
        .unwrap();
    let (_, _, data_watch) = a.get_data_watch("/w").await.unwrap();
    let (_, created) = a.exists_watch("/new").await.unwrap();
    let mut states = a.watch();

    proxy.set_mode(Mode::Refuse);
    proxy.cut(Cut::Reset);
    assert_eq!(
        within("disconnect", states.changed()).await,
        SessionState::Disconnected
    );
    // Made while disconnected: waits for the reconnect.
    let queued = a.get_data("/w");
    // Changes made during the outage fire the re-registered watches.
    b.set_data("/w", b"1", None).await.unwrap();
    b.create("/new", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    proxy.set_mode(Mode::Pass);
    assert_eq!(
        within("reconnect", states.changed()).await,
        SessionState::Connected
    );
    assert_eq!(a.session_id(), id, "same session");
    let event = within("data watch", data_watch).await.unwrap();
    assert_eq!(
        (event.event_type, event.path.as_str()),
        (EventType::NodeDataChanged, "/w")
    );
    assert_eq!(
        within("exist watch", created).await.unwrap().event_type,
        EventType::NodeCreated
    );
    assert_eq!(&within("queued", queued).await.unwrap().0[..], b"1");
    assert!(
        b.exists("/eph").await.unwrap().is_some(),
        "ephemeral survived"
    );
    a.close().await.unwrap();
    b.close().await.unwrap();
}

#[tokio::test]
async fn in_flight_calls_fail_with_connection_loss_and_are_not_retried() {
    let TestRoot { server, root, .. } = test_root("session_inflight").await;
    let proxy = Proxy::start(server.addr()).await;
    let a = connect(&format!("{}{root}", proxy.connect_string())).await;
    let b = connect(&format!("{}{root}", server.connect_string())).await;
    proxy.set_mode(Mode::Delay(Duration::from_secs(2)));
    let create = a.create("/seq-", b"", &CreateOptions::persistent_sequential());
    tokio::time::sleep(Duration::from_millis(100)).await;
    proxy.cut(Cut::Reset);
    proxy.set_mode(Mode::Pass);
    assert!(matches!(
        within("create", create).await,
        Err(Error::ConnectionLoss)
    ));
    wait_state(&a, "reconnect", SessionState::is_connected).await;
    // Either the create never reached the server or it was applied once; never twice.
    let children = b.get_children("/").await.unwrap();
    assert!(children.len() <= 1, "{children:?}");
    a.close().await.unwrap();
    b.close().await.unwrap();
}

#[tokio::test]
async fn calls_made_while_disconnected_fail_after_the_reconnect_wait() {
    let TestRoot { server, root, .. } = test_root("session_wait").await;
    let proxy = Proxy::start(server.addr()).await;
    let a = within(
        "connect",
        Client::builder(&format!("{}{root}", proxy.connect_string()))
            .reconnect_wait(Duration::from_millis(300))
            .connect(),
    )
    .await
    .unwrap();
    proxy.set_mode(Mode::Refuse);
    proxy.cut(Cut::Close);
    wait_state(&a, "disconnect", |s| s == SessionState::Disconnected).await;
    assert!(matches!(
        within("queued", a.exists("/")).await,
        Err(Error::ConnectionLoss)
    ));
    proxy.set_mode(Mode::Pass);
    wait_state(&a, "reconnect", SessionState::is_connected).await;
    assert!(a.exists("/").await.unwrap().is_some());
    a.close().await.unwrap();
}

#[tokio::test]
async fn auth_is_replayed_after_a_reconnect() {
    let TestRoot { server, root, .. } = test_root("session_auth").await;
    let proxy = Proxy::start(server.addr()).await;
    let a = within(
        "connect",
        Client::builder(&format!("{}{root}", proxy.connect_string()))
            .auth("digest", b"alice:secret")
            .connect(),
    )
    .await
    .unwrap();
    a.add_auth("digest", b"bob:pw").await.unwrap();
    let private = CreateOptions::persistent().with_acl(Acl::creator_all().to_vec());
    a.create("/private", b"p", &private).await.unwrap();
    let id = a.session_id();
    for round in 0..3 {
        let mut states = a.watch();
        proxy.cut(Cut::Reset);
        assert_eq!(
            within("disconnect", states.changed()).await,
            SessionState::Disconnected
        );
        wait_state(&a, "reconnect", SessionState::is_connected).await;
        assert_eq!(a.session_id(), id);
        assert_eq!(
            &a.get_data("/private").await.unwrap().0[..],
            b"p",
            "round {round}"
        );
        let who = a.whoami().await.unwrap();
        for user in ["alice", "bob"] {
            assert!(
                who.iter()
                    .any(|i| i.auth_scheme == "digest" && i.user == user),
                "{who:?}"
            );
        }
    }
    a.close().await.unwrap();
}

#[tokio::test]
async fn rejected_credentials_end_the_session() {
    let server = standalone().await;
    let a = connect(&server.connect_string()).await;
    let (_, watcher) = a.exists_watch("/never-created-by-anyone").await.unwrap();
    assert!(matches!(
        a.add_auth("no-such-scheme", b"x").await,
        Err(Error::AuthFailed)
    ));
    wait_state(&a, "auth failed", SessionState::is_terminal).await;
    assert_eq!(a.state(), SessionState::AuthFailed);
    assert!(matches!(a.exists("/").await, Err(Error::AuthFailed)));
    assert!(matches!(
        within("watcher", watcher).await,
        Err(Error::AuthFailed)
    ));
}

#[tokio::test]
async fn connect_gives_up_after_the_establish_timeout() {
    // Port 1 on loopback: nothing listens, connects are refused at once.
    let res = Client::builder("127.0.0.1:1")
        .establish_timeout(Duration::from_millis(500))
        .connect()
        .await;
    assert!(matches!(res, Err(Error::Timeout)), "{res:?}");
    let _ = LIMIT;
}
