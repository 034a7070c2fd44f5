//! `SessionManager` on a real server: after an expiry it publishes a new client, on a new
//! session, that works; the old client stays expired; nothing of the old session is
//! carried over; close and an auth failure end the manager (no renewal).

use integration_tests::prelude::*;
use integration_tests::ZkTarget;
use zk_client::{CreateOptions, Error, SessionState};

#[tokio::test]
async fn expiry_publishes_a_new_working_client_and_the_old_one_stays_expired() {
    let TestRoot { server, hosts, .. } = test_root("session_manager").await;
    let m = manager(&hosts).await;
    let mut clients = m.watch();
    let old = m.current();
    assert_eq!(old.number, 1);
    old.client
        .create("/eph", b"old", &CreateOptions::ephemeral())
        .await
        .unwrap();
    let (_, _, watcher) = old.client.get_data_watch("/eph").await.unwrap();

    let id = old.client.session_id();
    expire_client(server.addr(), &old.client).await;

    let new = within("renewal", clients.changed()).await.live().unwrap();
    assert_eq!(new.number, 2);
    assert_ne!(new.client.session_id(), id, "a new session, not a resume");
    assert_eq!(m.current().number, 2);
    assert_eq!(m.client().session_id(), new.client.session_id());
    // The old session is over for good, with its ephemeral node and its watch.
    assert_eq!(old.client.state(), SessionState::Expired);
    assert!(matches!(
        old.client.get_data("/eph").await,
        Err(Error::SessionExpired)
    ));
    assert!(matches!(
        within("watcher", watcher).await,
        Err(Error::SessionExpired)
    ));
    assert_eq!(new.client.exists("/eph").await.unwrap(), None);
    // The new one works.
    new.client
        .create("/eph", b"new", &CreateOptions::ephemeral())
        .await
        .unwrap();
    assert_eq!(&new.client.get_data("/eph").await.unwrap().0[..], b"new");

    m.close().await.unwrap();
    assert!(matches!(
        within("end", clients.changed()).await.live(),
        Err(Error::Closed)
    ));
    assert!(matches!(m.ended(), Some(Error::Closed)));
    assert_eq!(new.client.state(), SessionState::Closed);
}

#[tokio::test]
async fn a_client_closed_by_its_owner_ends_the_manager_without_renewal() {
    let TestRoot { server, root, .. } = test_root("session_manager_closed").await;
    let m = manager(&server.hosts(&root)).await;
    let mut clients = m.watch();
    m.client().close().await.unwrap();
    assert!(matches!(
        within("end", clients.changed()).await.live(),
        Err(Error::Closed)
    ));
    assert_eq!(m.current().number, 1);
}

#[tokio::test]
async fn renewal_retries_with_backoff_until_a_server_accepts_a_new_session() {
    use integration_tests::proxy::{Mode, Proxy};
    use std::time::Duration;
    use tokio::time::Instant;
    use zk_client::{Client, SessionManager};

    let TestRoot { server, root, .. } = test_root("session_manager_retry").await;
    let proxy = Proxy::start(server.addr()).await;
    let builder = Client::builder(&format!("{}{root}", proxy.connect_string()))
        .session_timeout(SESSION)
        .establish_timeout(Duration::from_millis(300));
    let m = SessionManager::builder(builder)
        .renew_backoff(Duration::from_millis(50), Duration::from_millis(400))
        .renew_attempts(100)
        .connect()
        .await
        .unwrap();
    let mut clients = m.watch();
    let old = m.client();
    let mut states = old.watch();
    // The session expires behind a partition, and then no server accepts connections for a
    // while: every renewal attempt in that time fails.
    proxy.set_mode(Mode::Blackhole);
    within("expired", states.wait_for(|s| s == SessionState::Expired)).await;
    proxy.set_mode(Mode::Refuse);
    let refused_at = Instant::now();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        m.current().number,
        1,
        "no session while every server refuses"
    );
    assert!(
        m.ended().is_none(),
        "failed attempts do not end the manager"
    );
    proxy.set_mode(Mode::Pass);
    let new = within("renewal", clients.changed()).await.live().unwrap();
    assert_eq!(new.number, 2);
    assert!(refused_at.elapsed() < Duration::from_secs(10));
    new.client.exists("/").await.unwrap();
    m.close().await.unwrap();
}

#[tokio::test]
async fn an_auth_failure_ends_the_manager_without_renewal() {
    let TestRoot { server, root, .. } = test_root("session_manager_auth_failed").await;
    let m = manager(&server.hosts(&root)).await;
    let mut clients = m.watch();
    let client = m.client();
    // The server rejects an unknown scheme with AUTHFAILED and closes the connection: the
    // same credentials would fail on any new session, so the manager must not renew.
    let added = client.add_auth("no-such-scheme", b"x").await;
    assert!(matches!(added, Err(Error::AuthFailed)), "{added:?}");
    assert_eq!(client.state(), SessionState::AuthFailed);
    assert!(matches!(
        within("end", clients.changed()).await.live(),
        Err(Error::AuthFailed)
    ));
    assert!(matches!(m.ended(), Some(Error::AuthFailed)));
    assert_eq!(
        m.current().number,
        1,
        "no new session after an auth failure"
    );
}
