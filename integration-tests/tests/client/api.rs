//! zk-client against a real server: the calls users of Curator, kazoo and the Java client look
//! for first (recursive delete, waiting for a connection, resuming a session, the state as a
//! stream).

use std::time::Duration;

use futures_util::StreamExt;
use integration_tests::prelude::*;
use integration_tests::proxy::{Mode, Proxy};
use integration_tests::{standalone, ZkTarget};
use zk_client::{Client, CreateOptions, Error, SessionState};

#[tokio::test]
async fn delete_all_removes_a_subtree_deepest_first() {
    let TestRoot { server, root, .. } = test_root("api_delete_all").await;
    let c = connect(&server.hosts(&root)).await;
    for path in ["/t/a/x", "/t/a/y/z", "/t/b", "/keep"] {
        c.create_all(path, b"", &CreateOptions::persistent())
            .await
            .unwrap();
    }
    within("delete_all", c.delete_all("/t")).await.unwrap();
    assert!(c.exists("/t").await.unwrap().is_none());
    assert!(c.exists("/keep").await.unwrap().is_some(), "siblings stay");
    assert!(matches!(c.delete_all("/t").await, Err(Error::NoNode)));
    assert!(matches!(
        c.delete_all("nope").await,
        Err(Error::InvalidPath { .. })
    ));
    let unrooted = connect(&server.connect_string()).await;
    assert!(matches!(
        unrooted.delete_all("/").await,
        Err(Error::InvalidPath { .. })
    ));
}

#[tokio::test]
async fn wait_connected_returns_once_connected_and_times_out_while_cut_off() {
    let server = standalone().await;
    let proxy = Proxy::start(server.addr()).await;
    let c = Client::builder(&proxy.connect_string())
        .session_timeout(Duration::from_secs(20))
        .connect()
        .await
        .unwrap();
    within("connected", c.wait_connected(Duration::from_secs(5)))
        .await
        .unwrap();
    proxy.set_mode(Mode::Refuse);
    proxy.cut(integration_tests::proxy::Cut::Reset);
    let mut states = c.watch();
    within("disconnected", states.wait_for(|s| !s.is_connected())).await;
    assert!(matches!(
        c.wait_connected(Duration::from_millis(300)).await,
        Err(Error::Timeout)
    ));
    proxy.set_mode(Mode::Pass);
    within("reconnected", c.wait_connected(Duration::from_secs(20)))
        .await
        .unwrap();
    c.close().await.unwrap();
    assert!(matches!(
        c.wait_connected(Duration::from_secs(1)).await,
        Err(Error::Closed)
    ));
}

#[tokio::test]
async fn a_session_handed_over_by_id_and_password_keeps_its_ephemeral_nodes() {
    let TestRoot { server, root, .. } = test_root("api_resume").await;
    let proxy = Proxy::start(server.addr()).await;
    // The old owner reaches the server only through the proxy, then loses it for good (as a
    // process that stops without closing its session).
    let old = Client::builder(&format!("{}{root}", proxy.connect_string()))
        .session_timeout(Duration::from_secs(20))
        .connect()
        .await
        .unwrap();
    old.create("/mine", b"", &CreateOptions::ephemeral())
        .await
        .unwrap();
    let (id, password) = (old.session_id(), old.session_password());
    proxy.set_mode(Mode::Refuse);
    proxy.cut(integration_tests::proxy::Cut::Reset);

    let new = Client::builder(&server.hosts(&root))
        .session(id, &password)
        .connect()
        .await
        .unwrap();
    assert_eq!(new.session_id(), id, "the same session");
    let stat = new
        .exists("/mine")
        .await
        .unwrap()
        .expect("its node survives");
    assert_eq!(stat.ephemeral_owner, id);
    new.close().await.unwrap();
    let observer = connect(&server.hosts(&root)).await;
    assert!(observer.exists("/mine").await.unwrap().is_none());
    // A closed session cannot be taken over.
    let late = Client::builder(&server.hosts(&root))
        .session(id, &password)
        .connect()
        .await;
    assert!(matches!(late, Err(Error::SessionExpired)), "{late:?}");
    drop(old);
}

#[tokio::test]
async fn the_state_watcher_is_a_stream_of_every_transition() {
    let server = standalone().await;
    let proxy = Proxy::start(server.addr()).await;
    let c = Client::builder(&proxy.connect_string())
        .connect()
        .await
        .unwrap();
    let mut states = c.watch();
    proxy.cut(integration_tests::proxy::Cut::Reset);
    assert_eq!(
        within("next", states.next()).await,
        Some(SessionState::Disconnected)
    );
    assert_eq!(
        within("next", states.next()).await,
        Some(SessionState::Connected)
    );
    c.close().await.unwrap();
    assert_eq!(
        within("next", states.next()).await,
        Some(SessionState::Closed)
    );
    assert_eq!(
        within("end", states.next()).await,
        None,
        "ends after Closed"
    );
}

#[tokio::test]
async fn a_chroot_sub_client_shares_the_session_and_sees_its_own_paths() {
    let TestRoot { server, root, .. } = test_root("api_sub").await;
    let c = connect(&server.hosts(&root)).await;
    // As with a connect string's chroot, the root node must exist.
    c.create_all("/apps/billing", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let billing = c.chroot("/apps/billing").unwrap();
    assert_eq!(billing.session_id(), c.session_id(), "one session");
    billing
        .create_all("/jobs/j1", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    assert!(c.exists("/apps/billing/jobs/j1").await.unwrap().is_some());
    let children = billing.get_children("/jobs").await.unwrap();
    assert_eq!(children, ["j1"]);
    let (path, _) = billing
        .create("/jobs/s-", b"", &CreateOptions::persistent_sequential())
        .await
        .unwrap();
    assert!(path.starts_with("/jobs/s-"), "{path}");
    // Watch paths are relative to each handle's own root, on the one session.
    let (_, _, sub_watch) = billing.get_data_watch("/jobs/j1").await.unwrap();
    let (_, _, top_watch) = c.get_data_watch("/apps/billing/jobs/j1").await.unwrap();
    let mut stream = billing
        .add_watch("/jobs", zk_client::AddWatchMode::PersistentRecursive)
        .await
        .unwrap();
    c.set_data("/apps/billing/jobs/j1", b"x", None)
        .await
        .unwrap();
    assert_eq!(within("sub", sub_watch).await.unwrap().path, "/jobs/j1");
    assert_eq!(
        within("top", top_watch).await.unwrap().path,
        "/apps/billing/jobs/j1"
    );
    assert_eq!(
        within("stream", stream.next()).await.unwrap().path,
        "/jobs/j1"
    );
    let nested = billing.chroot("/jobs").unwrap();
    assert!(nested.exists("/j1").await.unwrap().is_some());
    assert!(matches!(c.chroot("bad"), Err(Error::InvalidPath { .. })));
}
