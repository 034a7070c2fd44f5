//! Leader latch failover in a three-node ensemble: the latch leader's only server (the
//! ensemble's leader) is killed; it steps down, its session expires on the surviving quorum,
//! the next participant leads, never two at once; when the server comes back the old
//! leader's manager opens a new session and it re-joins at the end of the queue.
//!
//! The surviving servers are frozen for a while after the kill, as on a loaded machine where
//! electing the next ZooKeeper leader takes seconds: a participant whose session outlives
//! the failover keeps its place and leads next.

use std::time::Duration;

use integration_tests::prelude::*;
use integration_tests::{chroot, ensemble};
use zk_recipes::leader::LeadershipPolicy;

const PATH: &str = "/election/failover";
/// How long the surviving servers stay frozen after the kill: longer than [`SESSION`], the
/// old leader's session.
const SLOW_FAILOVER: Duration = Duration::from_secs(3);
/// The session of the participants on the surviving servers: it outlives the failover. A
/// client gives its session up after a whole session timeout with no server answering (as
/// Curator's simulated expiry does), so with [`SESSION`] they would lose theirs too and
/// re-join behind each other in no set order (seen once in ten CI runs, where the election
/// itself took over 2 s).
const SURVIVOR_SESSION: Duration = Duration::from_secs(12);

#[tokio::test]
async fn leadership_moves_when_the_leaders_server_fails_and_the_old_leader_rejoins() {
    let ens = ensemble().await;
    let root = chroot(&ens, "leader_failover").await;
    let x = ens.leader().await.expect("an ensemble leader");
    let others: Vec<usize> = (0..3).filter(|&i| i != x).collect();
    let only_x = format!("{}{root}", ens.addr(x));
    let survivors = format!("{},{}{root}", ens.addr(others[0]), ens.addr(others[1]));
    let admin = connect(&survivors).await;
    let log = TermLog::default();

    let ma = manager(&only_x).await;
    let a = join(&log, &ma, PATH, "a", LeadershipPolicy::Standard);
    leads(&a).await;
    let mb = manager_with_session(&survivors, SURVIVOR_SESSION).await;
    let b = join(&log, &mb, PATH, "b", LeadershipPolicy::Standard);
    wait_nodes(&admin, PATH, 2).await;
    let mc = manager_with_session(&survivors, SURVIVOR_SESSION).await;
    let c = join(&log, &mc, PATH, "c", LeadershipPolicy::Standard);
    wait_nodes(&admin, PATH, 3).await;
    let first_session = ma.client().session_id();
    let mut generations = ma.watch();

    ens.kill(x).await;
    for &i in &others {
        ens.pause(i).await;
    }
    tokio::time::sleep(SLOW_FAILOVER).await;
    for &i in &others {
        ens.resume(i).await;
    }
    leads(&b).await;
    assert!(!a.is_leader() && !c.is_leader());
    assert_eq!(leaders(&[&a, &b, &c]), 1);

    ens.start(x).await;
    let renewed = within("a's new session", generations.changed())
        .await
        .live()
        .unwrap();
    assert_ne!(renewed.client.session_id(), first_session);
    wait_nodes(&admin, PATH, 3).await;
    // c's session may be on the other survivor, a follower that applies a's create a moment
    // after admin's server does (ZooKeeper's reads are sequentially consistent per session,
    // not linearizable): c sees the same queue soon after.
    let ids = eventually("c lists the queue b, c, a", SOON, || async {
        let ids = participant_ids(c.participants().await);
        (ids == ["b", "c", "a"]).then_some(ids)
    })
    .await;
    assert_eq!(ids, ["b", "c", "a"]);
    assert_eq!(leaders(&[&a, &b, &c]), 1);

    b.close().await.unwrap();
    leads(&c).await;
    c.close().await.unwrap();
    leads(&a).await;
    a.close().await.unwrap();
    let terms = log.assert_no_overlap();
    let who: Vec<_> = terms.iter().map(|t| t.who.as_str()).collect();
    assert_eq!(who, ["a", "b", "c", "a"], "{terms:?}");
}
