//! Group membership through a quorum loss longer than the session (a 3-node ensemble, two
//! members stopped): every member's session is given up, and once the quorum is back each
//! member is in the group again on a new session, within the renewal backoff, with no node
//! of an old session left.

use std::time::{Duration, Instant};

use integration_tests::prelude::*;
use integration_tests::{chroot, ensemble, ZkTarget};
use zk_client::{Client, SessionManager, SessionState};
use zk_recipes::group::GroupMember;

const SESSION: Duration = Duration::from_secs(4);
const MEMBERS: usize = 3;
const GROUP: &str = "/groups/q";

#[tokio::test]
async fn members_rejoin_on_new_sessions_once_the_quorum_is_back() {
    let ens = ensemble().await;
    let root = chroot(&ens, "membership_quorum").await;
    let hosts = ens.hosts(&root);
    let mut members = Vec::new();
    for i in 0..MEMBERS {
        let builder = Client::builder(&hosts)
            .session_timeout(SESSION)
            .establish_timeout(Duration::from_secs(60));
        let manager = SessionManager::builder(builder)
            .renew_backoff(Duration::from_millis(50), Duration::from_millis(500))
            .renew_attempts(10_000)
            .connect()
            .await
            .unwrap();
        let member = GroupMember::new_managed(&manager, GROUP, &format!("m-{i}"), Some(b"p"))
            .await
            .unwrap();
        member.ready_timeout(Duration::from_secs(30)).await.unwrap();
        members.push((manager, member));
    }
    let admin = connect(&hosts).await;
    assert_eq!(children(&admin, GROUP).await.len(), MEMBERS);
    drop(admin);
    let old: Vec<i64> = members
        .iter()
        .map(|(m, _)| m.client().session_id())
        .collect();

    // No quorum for longer than the session: the clients give their sessions up.
    ens.stop(1).await;
    ens.stop(2).await;
    let outage = Instant::now();
    for (m, _) in &members {
        let mut states = m.client().watch();
        tokio::time::timeout(
            Duration::from_secs(60),
            states.wait_for(SessionState::is_terminal),
        )
        .await
        .expect("session given up");
    }
    tokio::time::sleep((SESSION + Duration::from_secs(1)).saturating_sub(outage.elapsed())).await;
    ens.start(1).await;
    ens.start(2).await;
    ens.wait_quorum().await;
    let back = Instant::now();

    let admin = connect(&hosts).await;
    eventually(
        "every member back on a new session",
        Duration::from_secs(30),
        || async {
            let mut ok = 0;
            for (i, (m, _)) in members.iter().enumerate() {
                let current = m.client().session_id();
                if current == old[i] {
                    continue;
                }
                if let Ok((_, s)) = admin.get_data(&format!("{GROUP}/m-{i}")).await {
                    if s.ephemeral_owner == current {
                        ok += 1;
                    }
                }
            }
            (ok == MEMBERS).then_some(())
        },
    )
    .await;
    let rejoined = back.elapsed();
    println!(
        "quorum lost for {:?}; all {MEMBERS} members back {rejoined:?} after the quorum returned",
        back - outage
    );
    assert_eq!(children(&admin, GROUP).await.len(), MEMBERS);
    // Every member's cache lists the whole group again.
    for (_, member) in &members {
        eventually("cache complete", Duration::from_secs(30), || async {
            (member.current_members().len() == MEMBERS).then_some(())
        })
        .await;
    }
    for (m, member) in members {
        member.close().await.unwrap();
        m.close().await.unwrap();
    }
    assert!(children(&admin, GROUP).await.is_empty());
}
