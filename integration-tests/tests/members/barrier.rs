//! Barriers in Curator's layouts against a real server and Curator 5.4
//! (`java/CuratorBarrier.java`): a barrier set by one library holds the other's waiters
//! until removed; a double barrier of Java and Rust members lets nobody in before all are
//! there and lets everybody out together.

use std::time::Duration;

use integration_tests::prelude::*;
use zk_recipes::barrier::{DistributedBarrier, DistributedDoubleBarrier};

const JAVA: &str = "CuratorBarrier.java";

#[tokio::test]
async fn a_barrier_set_by_either_library_holds_the_others_waiters() {
    let TestRoot { hosts, .. } = test_root("barrier_single").await;
    let client = connect(&hosts).await;
    let mut java = JavaPeer::start(JAVA, &[&hosts], false).await;
    let barrier = DistributedBarrier::new(client.clone(), "/b/gate").unwrap();

    // Java closes, Rust waits.
    assert_eq!(java.ask("set /b/gate").await, "SET");
    assert!(barrier
        .wait_on_barrier_timeout(Duration::from_millis(300))
        .await
        .unwrap_err()
        .is_timeout());
    let waiter = {
        let b = barrier.clone();
        tokio::spawn(async move { b.wait_on_barrier().await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiter.is_finished());
    assert_eq!(java.ask("remove /b/gate").await, "REMOVED");
    within("rust waiter", waiter).await.unwrap().unwrap();

    // Rust closes, Java waits.
    barrier.set_barrier().await.unwrap();
    barrier.set_barrier().await.unwrap(); // already set: fine
    assert_eq!(java.ask("wait /b/gate 300").await, "WAITED false");
    java.send("wait /b/gate 30000").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    barrier.remove_barrier().await.unwrap();
    barrier.remove_barrier().await.unwrap(); // already open: fine
    assert_eq!(java.line().await, "WAITED true");
    java.close().await;
}

#[tokio::test]
async fn java_and_rust_members_enter_and_leave_a_double_barrier_together() {
    let TestRoot { hosts, .. } = test_root("barrier_double").await;
    let admin = connect(&hosts).await;
    let mut java = JavaPeer::start(JAVA, &[&hosts], false).await;
    const PATH: &str = "/b/double";
    for round in 0..3 {
        // Two Rust members enter first: they wait for the third (Java).
        let mut members = Vec::new();
        for _ in 0..2 {
            let client = connect(&hosts).await;
            let member =
                std::sync::Arc::new(DistributedDoubleBarrier::new(client, PATH, 3).unwrap());
            let m = member.clone();
            members.push((member, tokio::spawn(async move { m.enter().await })));
        }
        wait_children(&admin, PATH, 2, Duration::from_secs(30)).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        for (_, entering) in &members {
            assert!(
                !entering.is_finished(),
                "round {round}: entered before all were there"
            );
        }
        assert_eq!(
            java.ask(&format!("enter {PATH} 3 30000")).await,
            "ENTERED true",
            "round {round}"
        );
        let mut entered = Vec::new();
        for (member, entering) in members {
            within("rust enter", entering).await.unwrap().unwrap();
            entered.push(member);
        }
        // All three in (plus `ready`).
        assert_eq!(children(&admin, PATH).await.len(), 4);

        // Leave together: Java first, then ours.
        java.send(&format!("leave {PATH} 30000")).await;
        let mut leaving = Vec::new();
        for member in entered {
            leaving.push(tokio::spawn(async move { member.leave().await }));
        }
        assert_eq!(java.line().await, "LEFT true", "round {round}");
        for l in leaving {
            within("rust leave", l).await.unwrap().unwrap();
        }
        assert!(
            wait_children(&admin, PATH, 0, Duration::from_secs(30))
                .await
                .is_empty(),
            "round {round}: nothing left behind"
        );
    }
    java.close().await;
}

#[tokio::test]
async fn a_timed_out_enter_leaves_no_node_behind() {
    let TestRoot { hosts, .. } = test_root("barrier_timeout").await;
    let client = connect(&hosts).await;
    let member = DistributedDoubleBarrier::new(client.clone(), "/b/t", 2).unwrap();
    assert!(member
        .enter_timeout(Duration::from_millis(300))
        .await
        .unwrap_err()
        .is_timeout());
    // Curator leaves its node here, and a later entrant would pass alone (CURATOR-80).
    assert!(children(&client, "/b/t").await.is_empty());
    let a = DistributedDoubleBarrier::new(connect(&hosts).await, "/b/t", 2).unwrap();
    let b = DistributedDoubleBarrier::new(connect(&hosts).await, "/b/t", 2).unwrap();
    let (ra, rb) = tokio::join!(a.enter(), b.enter());
    ra.unwrap();
    rb.unwrap();
    let (la, lb) = tokio::join!(a.leave(), b.leave());
    la.unwrap();
    lb.unwrap();
}
