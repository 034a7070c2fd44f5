//! A quorum loss longer than the session timeout: our clients give their sessions up, and
//! once the ensemble serves again their lock nodes must be gone within about a second (the
//! clients close the given-up sessions), not a session timeout later (when the servers would
//! expire them: a new leader restarts every session's timer).

use std::time::Duration;

use integration_tests::prelude::*;
use integration_tests::{chroot, ensemble, ZkTarget};
use tokio::time::{timeout, Instant};
use zk_client::{Client, SessionState};
use zk_recipes::lock::{FairLock, LockState};

/// The contenders' session timeout: the outage below outlasts it.
const SESSION: Duration = Duration::from_secs(4);

async fn contender(hosts: &str) -> Client {
    Client::builder(hosts)
        .session_timeout(SESSION)
        .establish_timeout(LIMIT)
        .connect()
        .await
        .unwrap()
}

#[tokio::test]
async fn nodes_of_sessions_given_up_in_a_quorum_loss_leave_the_queue_as_soon_as_it_serves_again() {
    let ens = ensemble().await;
    let root = chroot(&ens, "quorum_loss").await;
    let hosts = ens.hosts(&root);
    let path = "/locks/q";

    let holder = contender(&hosts).await;
    let guard = FairLock::new(holder.clone(), path)
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let mut waiters = Vec::new();
    for _ in 0..2 {
        let client = contender(&hosts).await;
        let lock = FairLock::new(client.clone(), path).unwrap();
        waiters.push((client, tokio::spawn(async move { lock.acquire().await })));
    }
    let admin = connect(&hosts).await;
    let queued = wait_children(&admin, path, 3, LIMIT).await;
    assert_eq!(queued.len(), 3, "holder and two waiters queued: {queued:?}");
    drop(admin);

    // Two of three members down for longer than the session timeout: no quorum.
    ens.stop(1).await;
    ens.stop(2).await;
    let outage = Instant::now();
    let mut states = holder.watch();
    let state = timeout(LIMIT, states.wait_for(SessionState::is_terminal))
        .await
        .expect("the holder gives its session up");
    assert_eq!(state, SessionState::Expired);
    assert!(matches!(guard.state(), LockState::Lost(_)));
    for (_, waiter) in waiters.drain(..) {
        let result = timeout(LIMIT, waiter).await.expect("waiter ends").unwrap();
        assert!(result.is_err(), "a waiter of a given-up session fails");
    }
    let given_up = outage.elapsed();
    tokio::time::sleep((SESSION + Duration::from_secs(2)).saturating_sub(given_up)).await;
    ens.start(1).await;
    ens.start(2).await;
    ens.wait_quorum().await;
    let back = Instant::now();
    println!(
        "outage {:?}, sessions given up after {given_up:?}",
        back - outage
    );

    // A new contender (the user carries on with a new client).
    let fresh = connect(&hosts).await;
    let next = FairLock::new(fresh.clone(), path).unwrap();
    let taken = timeout(LIMIT, next.acquire())
        .await
        .expect("the lock is taken again")
        .unwrap();
    let after = back.elapsed();
    println!("next acquisition {after:?} after the quorum was back");
    assert_eq!(
        children(&fresh, path).await.len(),
        1,
        "only the new holder's node is left"
    );
    // The servers alone would keep the given-up nodes for a full session timeout (4 s) after
    // the new leader; our clients close their sessions within about a second.
    assert!(
        after < Duration::from_millis(2500),
        "next acquisition took {after:?} after the quorum's return"
    );
    drop(taken);
    drop(guard);
}
