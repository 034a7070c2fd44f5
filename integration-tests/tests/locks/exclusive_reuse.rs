//! `ExclusiveLock` gives every holder the same node path, so whatever acts on "the node at the
//! path" after the hold may act on the next holder's node. The lock soak
//! (`soak/locks.rs`) saw holders lose their node to another contender's release while
//! their sessions lived on; these tests reproduce each way deterministically.
//!
//! The first three failed on zk-recipes as of 37d9207. The last one (an abandoned
//! acquisition's node, left at the path for the session's life) failed before its fix.

use std::time::Duration;

use integration_tests::prelude::*;
use integration_tests::proxy::{Cut, Mode, Proxy};
use integration_tests::{standalone, ZkTarget};
use tokio::time::timeout;
use zk_client::{Client, CreateOptions, Op, SessionState};
use zk_recipes::{
    lock::{ExclusiveLock, LockState},
    LossReason,
};

const PATH: &str = "/locks/ex";

#[tokio::test]
async fn release_after_the_node_was_deleted_spares_the_next_holder() {
    let TestRoot { hosts, .. } = test_root("ex_release_after_delete").await;
    let admin = connect(&hosts).await;
    let a = ExclusiveLock::new(connect(&hosts).await, PATH).unwrap();
    let b = ExclusiveLock::new(connect(&hosts).await, PATH).unwrap();
    let held_a = a.acquire().await.unwrap();
    assert_eq!(held_a.state(), LockState::Held);
    admin.delete(PATH, None).await.unwrap();
    let reason = timeout(SOON, held_a.lost()).await.expect("loss signalled");
    assert_eq!(reason, LossReason::NodeDeleted);
    let held_b = b.acquire_timeout(SOON).await.unwrap();
    let _ = held_a.release().await;
    let node = admin.exists(PATH).await.unwrap();
    assert_eq!(
        node.map(|s| s.czxid),
        Some(held_b.fencing_token()),
        "A's release deleted B's node (B now {:?})",
        held_b.state()
    );
    let _ = held_b.release().await;
}

#[tokio::test]
async fn fenced_write_of_a_replaced_holder_is_refused() {
    let TestRoot { hosts, .. } = test_root("ex_fence_replaced").await;
    let admin = connect(&hosts).await;
    make_counter(&admin, "/counter").await;
    let a = ExclusiveLock::new(connect(&hosts).await, PATH).unwrap();
    let b = ExclusiveLock::new(connect(&hosts).await, PATH).unwrap();
    // A holds and is not watching (nobody observed its state): it learns of the loss only
    // through the fence.
    let held_a = a.acquire().await.unwrap();
    admin.delete(PATH, None).await.unwrap();
    let held_b = b.acquire_timeout(SOON).await.unwrap();
    let late = held_a.fenced(&[Op::set_data("/counter", b"7", None)]).await;
    assert!(
        late.is_err(),
        "A's fenced write applied while B holds the lock: {late:?}"
    );
    assert_eq!(read_counter(&admin, "/counter").await, 0);
    let _ = held_b.release().await;
}

#[tokio::test]
async fn release_retried_after_a_lost_reply_spares_the_next_holder() {
    let server = standalone().await;
    let root = integration_tests::chroot(server, "ex_release_retry").await;
    let hosts = server.hosts(&root);
    let admin = connect(&hosts).await;
    let proxy = Proxy::start(server.addr()).await;
    let a_client = connect(&format!("{}{root}", proxy.connect_string())).await;
    let a = ExclusiveLock::new(a_client.clone(), PATH).unwrap();
    let b_client = connect(&hosts).await;
    let b = ExclusiveLock::new(b_client.clone(), PATH).unwrap();
    let held_a = a.acquire().await.unwrap();
    let waiter = tokio::spawn(async move { b.acquire_timeout(SOON).await });
    tokio::time::sleep(Duration::from_millis(300)).await;

    // A's delete reaches the server after 300 ms; its reply would reach A 300 ms later, but
    // the connection is reset in between: A sees a connection loss and deletes again.
    proxy.set_mode(Mode::Delay(Duration::from_millis(300)));
    let release = tokio::spawn(async move { held_a.release().await.is_ok() });
    tokio::time::sleep(Duration::from_millis(450)).await;
    proxy.cut(Cut::Reset);
    proxy.set_mode(Mode::Pass);
    let held_b = waiter
        .await
        .unwrap()
        .expect("B acquires once A's node is gone");
    assert!(timeout(SOON, release).await.expect("release ends").unwrap());
    assert_eq!(
        a_client.state(),
        SessionState::Connected,
        "A's session lives on"
    );
    let node = admin.exists(PATH).await.unwrap();
    assert_eq!(
        node.map(|s| s.czxid),
        Some(held_b.fencing_token()),
        "A's retried delete removed B's node (B now {:?})",
        held_b.state()
    );
    let _ = held_b.release().await;
}

#[tokio::test]
async fn an_abandoned_acquisition_removes_its_node_through_a_reconnect() {
    let TestRoot {
        server,
        root,
        hosts,
    } = test_root("ex_abandoned_cleanup").await;
    let admin = connect(&hosts).await;
    admin
        .create("/locks", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let proxy = Proxy::start(server.addr()).await;
    // A long session, and calls made while disconnected that give up after 200 ms.
    let client = Client::builder(&format!("{}{root}", proxy.connect_string()))
        .session_timeout(Duration::from_secs(30))
        .reconnect_wait(Duration::from_millis(200));
    let client = within("connect", client.connect()).await.unwrap();
    let lock = ExclusiveLock::new(client.clone(), PATH).unwrap();
    // The create applies, its reply is lost with the connection, and no server takes the
    // reconnect: the acquisition is abandoned (dropped) while it waits.
    proxy.set_mode(Mode::Refuse);
    proxy.drop_next_create_reply();
    let abandoned = timeout(Duration::from_millis(500), lock.acquire()).await;
    assert!(abandoned.is_err(), "{:?}", abandoned.map(|r| r.is_ok()));
    assert!(
        admin.exists(PATH).await.unwrap().is_some(),
        "the create applied"
    );
    // The cleanup's first read, made while disconnected, fails after 200 ms. The node must
    // still go once the session is back: it is ours, and it blocks every other acquirer.
    tokio::time::sleep(Duration::from_millis(800)).await;
    proxy.set_mode(Mode::Pass);
    eventually("the abandoned node removed", SOON, || async {
        admin.exists(PATH).await.unwrap().is_none().then_some(())
    })
    .await;
    assert_eq!(
        client.state(),
        SessionState::Connected,
        "the session lived on"
    );
}
