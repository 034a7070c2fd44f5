//! Deletes that are safe to retry (`zk_recipes::writes::delete_quietly`,
//! `GuaranteedDelete`) against a real server behind the fault proxy: a dropped delete reply,
//! a node created again meanwhile (left alone), a partition, an expired session (the delete
//! goes on on a `SessionManager`'s next session), an ephemeral node gone with its session.

use std::time::Duration;

use crate::support::{data, dropped, setup};
use integration_tests::prelude::*;
use integration_tests::probe::op;
use integration_tests::proxy::{DropRule, Mode, Proxy};
use integration_tests::{chroot, expire_session, standalone, ZkTarget};
use zk_client::{Client, CreateOptions};
use zk_recipes::writes::{self, DeleteOutcome, GuaranteedDelete};

#[tokio::test]
async fn delete_quietly_through_a_lost_reply_never_removes_a_node_made_again() {
    let (proxy, client, admin, _) = setup("safe_delete").await;
    admin
        .create("/d", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    proxy.drop_next_reply_to(op::DELETE);
    let outcome = within("delete", writes::delete_quietly(&client, "/d", None))
        .await
        .unwrap();
    dropped(&proxy, "delete").await;
    assert_eq!(outcome, DeleteOutcome::Deleted);
    assert!(admin.exists("/d").await.unwrap().is_none());
    assert_eq!(
        writes::delete_quietly(&client, "/d", None).await.unwrap(),
        DeleteOutcome::AlreadyGone
    );

    // Lost reply, and someone creates the node again before we are back: theirs stays.
    admin
        .create("/d", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    proxy.set_mode(Mode::Refuse);
    proxy.drop_next_reply_to(op::DELETE);
    let ours = tokio::spawn({
        let client = client.clone();
        async move { writes::delete_quietly(&client, "/d", None).await }
    });
    dropped(&proxy, "delete").await;
    admin
        .create("/d", b"theirs", &CreateOptions::persistent())
        .await
        .unwrap();
    proxy.set_mode(Mode::Pass);
    assert_eq!(
        within("delete outcome", ours).await.unwrap().unwrap(),
        DeleteOutcome::Deleted
    );
    assert_eq!(data(&admin, "/d").await.0, b"theirs", "their node stays");

    // Versioned: another version is BadVersion.
    let bad = writes::delete_quietly(&client, "/d", Some(7)).await;
    assert!(
        matches!(
            bad,
            Err(zk_recipes::Error::Client(zk_client::Error::BadVersion))
        ),
        "{bad:?}"
    );
}

#[tokio::test]
async fn guaranteed_delete_goes_on_through_a_lost_reply_and_a_partition() {
    let (proxy, client, admin, _) = setup("safe_guaranteed").await;
    for path in ["/g1", "/g2"] {
        admin
            .create(path, b"", &CreateOptions::persistent())
            .await
            .unwrap();
    }
    proxy.drop_next_reply_to(op::DELETE);
    let delete = GuaranteedDelete::new(client.clone(), "/g1").unwrap();
    assert_eq!(
        within("outcome", delete.outcome()).await.unwrap(),
        DeleteOutcome::Deleted
    );
    dropped(&proxy, "delete").await;
    assert!(admin.exists("/g1").await.unwrap().is_none());

    // A partition shorter than the session: the delete waits and finishes after it, even
    // with its handle dropped.
    proxy.set_mode(Mode::Blackhole);
    proxy.cut(integration_tests::proxy::Cut::Close);
    drop(GuaranteedDelete::new(client.clone(), "/g2").unwrap());
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(admin.exists("/g2").await.unwrap().is_some(), "partitioned");
    proxy.set_mode(Mode::Pass);
    eventually("g2 deleted", Duration::from_secs(30), || async {
        admin.exists("/g2").await.unwrap().is_none().then_some(())
    })
    .await;
    // An absent node.
    let delete = GuaranteedDelete::new(client.clone(), "/none").unwrap();
    assert_eq!(
        delete
            .outcome_timeout(Duration::from_secs(30))
            .await
            .unwrap(),
        DeleteOutcome::AlreadyGone
    );
    assert_eq!(
        delete.try_outcome().map(|o| o.ok()),
        Some(Some(DeleteOutcome::AlreadyGone))
    );
    delete.close().await.unwrap();
    // A node with children cannot be deleted by trying again: NotEmpty at once, kept.
    admin
        .create_all("/ne/child", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let delete = GuaranteedDelete::new(client.clone(), "/ne").unwrap();
    let outcome = delete.outcome_timeout(Duration::from_secs(30)).await;
    assert!(
        matches!(
            outcome,
            Err(zk_recipes::Error::Client(zk_client::Error::NotEmpty))
        ),
        "{outcome:?}"
    );
    assert!(admin.exists("/ne").await.unwrap().is_some());
}

#[tokio::test]
async fn guaranteed_delete_goes_on_on_the_next_session_after_an_expiry() {
    let server = standalone().await;
    let root = chroot(server, "safe_guaranteed_expiry").await;
    let admin = connect(&server.hosts(&root)).await;
    admin
        .create("/p", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let proxy = Proxy::start(server.addr()).await;
    let manager = managed(
        Client::builder(&format!("{}{root}", proxy.connect_string()))
            .session_timeout(Duration::from_secs(4)),
    )
    .await;
    let first = manager.client();
    proxy.set_mode(Mode::Blackhole);
    proxy.cut(integration_tests::proxy::Cut::Close);
    let delete = GuaranteedDelete::new_managed(&manager, "/p").unwrap();
    expire_session(server.addr(), first.session_id(), passwd(&first))
        .await
        .expect("expire the first session");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        admin.exists("/p").await.unwrap().is_some(),
        "still partitioned"
    );
    proxy.set_mode(Mode::Pass);
    assert_eq!(
        within("outcome", delete.outcome()).await.unwrap(),
        DeleteOutcome::Deleted
    );
    assert!(admin.exists("/p").await.unwrap().is_none());
    assert_ne!(
        manager.client().session_id(),
        first.session_id(),
        "deleted from the next session"
    );
    manager.close().await.unwrap();
}

/// A guaranteed delete of our own ephemeral node, on a plain client whose session expires
/// while the delete keeps failing: the node went with the session, and the outcome says so.
#[tokio::test]
async fn guaranteed_delete_of_an_ephemeral_node_ends_with_its_session() {
    let (proxy, client, admin, _) = setup("safe_guaranteed_ephemeral").await;
    client
        .create("/e", b"", &CreateOptions::ephemeral())
        .await
        .unwrap();
    // Every delete request closes the connection before the server sees it.
    proxy.drop_on(Some(DropRule::opcode(op::DELETE)));
    let delete = GuaranteedDelete::new(client.clone(), "/e").unwrap();
    eventually(
        "delete request dropped",
        Duration::from_secs(10),
        || async { (proxy.stats().requests_dropped > 0).then_some(()) },
    )
    .await;
    assert!(admin.exists("/e").await.unwrap().is_some());
    let server = standalone().await;
    expire_session(server.addr(), client.session_id(), passwd(&client))
        .await
        .expect("expire the session");
    assert_eq!(
        within("outcome", delete.outcome()).await.unwrap(),
        DeleteOutcome::GoneWithSession
    );
    assert!(admin.exists("/e").await.unwrap().is_none());
    proxy.drop_on(None);
}
