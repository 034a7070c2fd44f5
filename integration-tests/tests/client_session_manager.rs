//! `SessionManager` on a real server: after an expiry it publishes a new client, on a new
//! session, that works; the old client stays expired; nothing of the old session is
//! carried over; close ends the manager.

mod leader_common;

use integration_tests::{chroot, expire_session, standalone, ZkTarget};
use leader_common::{manager, within};
use zk_client::{CreateOptions, Error, SessionState};

#[tokio::test]
async fn expiry_publishes_a_new_working_client_and_the_old_one_stays_expired() {
    let server = standalone().await;
    let root = chroot(server, "session_manager").await;
    let hosts = server.hosts(&root);
    let m = manager(&hosts).await;
    let mut clients = m.subscribe();
    let old = m.current();
    assert_eq!(old.number, 1);
    old.client
        .create("/eph", b"old", &CreateOptions::ephemeral())
        .await
        .unwrap();
    let (_, _, watcher) = old.client.get_data_watch("/eph").await.unwrap();

    let id = old.client.session_id();
    let passwd: [u8; 16] = old.client.session_password()[..].try_into().unwrap();
    within("expire", async {
        while old.client.state() != SessionState::Expired {
            let _ = expire_session(server.addr(), id, passwd).await;
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    })
    .await;

    let new = within("renewal", clients.changed()).await.unwrap();
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
        within("end", clients.changed()).await,
        Err(Error::Closed)
    ));
    assert!(matches!(m.ended(), Some(Error::Closed)));
    assert_eq!(new.client.state(), SessionState::Closed);
}

#[tokio::test]
async fn a_client_closed_by_its_owner_ends_the_manager_without_renewal() {
    let server = standalone().await;
    let root = chroot(server, "session_manager_closed").await;
    let m = manager(&server.hosts(&root)).await;
    let mut clients = m.subscribe();
    m.client().close().await.unwrap();
    assert!(matches!(
        within("end", clients.changed()).await,
        Err(Error::Closed)
    ));
    assert_eq!(m.current().number, 1);
}
