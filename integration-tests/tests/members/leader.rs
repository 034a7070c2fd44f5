//! Leader latch on a real server: one leader at a time (a shared log of terms checked for
//! overlaps), leadership moves on close and on the leader's session expiry, the expired
//! leader re-joins on a new session, the two connection-state policies, no herd, and a first
//! node of another session is replaced, not led from (CURATOR-696), and `ready()` says why a
//! latch ended.

use std::time::Duration;

use integration_tests::prelude::*;
use integration_tests::proxy::{Cut, Mode, Proxy};
use integration_tests::{chroot, fresh_standalone, ZkTarget};
use zk_client::{Acl, Client, CreateOptions, Perms, SessionManager, SessionState};
use zk_recipes::leader::{LeaderLatch, Leadership, LeadershipPolicy};

const PATH: &str = "/election/latch";

#[tokio::test]
async fn leadership_moves_in_queue_order_on_close_and_never_overlaps() {
    let TestRoot { hosts, .. } = test_root("leader_close").await;
    let admin = connect(&hosts).await;
    let log = TermLog::default();
    let mut latches = Vec::new();
    for (i, who) in ["a", "b", "c", "d"].iter().enumerate() {
        let m = manager(&hosts).await;
        latches.push(join(&log, &m, PATH, who, LeadershipPolicy::Standard));
        // Join one at a time so the queue order is a, b, c.
        wait_nodes(&admin, PATH, i + 1).await;
    }
    let [a, b, c, d] = [&latches[0], &latches[1], &latches[2], &latches[3]];
    leads(a).await;
    let ids: Vec<_> = a.participants().await.unwrap();
    assert_eq!(
        ids.iter().map(|p| p.id()).collect::<Vec<_>>(),
        ["a", "b", "c", "d"]
    );
    assert!(ids[0].is_first && !ids[1].is_first);
    assert_eq!(c.leader().await.unwrap().unwrap().id(), "a");
    assert_eq!(leaders(&[a, b, c, d]), 1);

    // A follower in the middle leaves: its successor watches the next one ahead, and
    // nothing else changes.
    b.close().await.unwrap();
    wait_nodes(&admin, PATH, 3).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(a.is_leader() && !c.is_leader() && !d.is_leader());

    a.close().await.unwrap();
    assert_eq!(a.leadership(), Leadership::Ended);
    leads(c).await;
    assert_eq!(d.leader().await.unwrap().unwrap().id(), "c");
    c.close().await.unwrap();
    leads(d).await;
    assert_eq!(leaders(&[a, b, c, d]), 1);
    d.close().await.unwrap();
    wait_nodes(&admin, PATH, 0).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let terms = log.assert_no_overlap();
    let who: Vec<_> = terms.iter().map(|t| t.who.as_str()).collect();
    assert_eq!(who, ["a", "c", "d"], "{terms:?}");
}

#[tokio::test]
async fn leader_expiry_moves_leadership_and_the_old_leader_rejoins_on_a_new_session() {
    let TestRoot {
        server,
        root,
        hosts,
    } = test_root("leader_expiry").await;
    let admin = connect(&hosts).await;
    let proxy = Proxy::start(server.addr()).await;
    let log = TermLog::default();
    let ma = manager(&format!("{}{root}", proxy.connect_string())).await;
    let a = join(&log, &ma, PATH, "a", LeadershipPolicy::Standard);
    leads(&a).await;
    let mb = manager(&hosts).await;
    let b = join(&log, &mb, PATH, "b", LeadershipPolicy::Standard);
    wait_nodes(&admin, PATH, 2).await;
    let old = ma.current();
    let mut generations = ma.watch();

    // Partition the leader for longer than its session: it steps down when its connection
    // is lost, the server expires it, and b leads.
    proxy.set_mode(Mode::Blackhole);
    leads(&b).await;
    assert!(!a.is_leader(), "a partitioned leader steps down (Standard)");
    proxy.set_mode(Mode::Pass);

    // a's manager opens a new session; a joins again behind b.
    let new = within("a new session", generations.changed())
        .await
        .live()
        .unwrap();
    assert_eq!(new.number, old.number + 1);
    assert_ne!(new.client.session_id(), old.client.session_id());
    assert_eq!(old.client.state(), SessionState::Expired);
    let nodes = wait_nodes(&admin, PATH, 2).await;
    let participants = b.participants().await.unwrap();
    assert_eq!(
        participants.iter().map(|p| p.id()).collect::<Vec<_>>(),
        ["b", "a"],
        "{nodes:?}"
    );
    assert!(!a.is_leader());
    b.close().await.unwrap();
    leads(&a).await;
    assert_eq!(
        a.leadership().term().unwrap().session_id,
        new.client.session_id()
    );
    a.close().await.unwrap();
    let terms = log.assert_no_overlap();
    let who: Vec<_> = terms.iter().map(|t| t.who.as_str()).collect();
    assert_eq!(who, ["a", "b", "a"], "{terms:?}");
}

#[tokio::test]
async fn standard_policy_steps_down_on_a_short_disconnect_session_policy_does_not() {
    let TestRoot { server, root, .. } = test_root("leader_policy").await;
    for (policy, path) in [
        (LeadershipPolicy::Standard, "/election/standard"),
        (LeadershipPolicy::SessionLoss, "/election/session"),
    ] {
        let proxy = Proxy::start(server.addr()).await;
        let m = manager(&format!("{}{root}", proxy.connect_string())).await;
        let log = TermLog::default();
        let latch = join(&log, &m, path, "x", policy);
        let first = within("lead", latch.ready()).await.unwrap();
        let mut states = m.client().watch();
        proxy.cut(Cut::Reset);
        within(
            "disconnect",
            states.wait_for(|s| s == SessionState::Disconnected),
        )
        .await;
        within(
            "reconnect",
            states.wait_for(|s| s == SessionState::Connected),
        )
        .await;
        let again = within("lead again", latch.ready()).await.unwrap();
        // Same node, same token either way: nobody else could lead while it was first.
        assert_eq!(again.fencing_token, first.fencing_token);
        assert_eq!(again.node, first.node);
        let terms = log.terms();
        match policy {
            LeadershipPolicy::Standard => {
                assert_eq!(again.number, 2, "a new term after the suspension");
                assert_eq!(terms.len(), 2, "{terms:?}");
            }
            _ => {
                assert_eq!(again, first, "leadership kept through the disconnect");
                assert_eq!(terms.len(), 1, "{terms:?}");
            }
        }
        latch.close().await.unwrap();
        m.close().await.unwrap();
    }
}

#[tokio::test]
async fn one_leader_change_sends_one_notification() {
    let server = fresh_standalone().await;
    let root = chroot(&server, "leader_herd").await;
    let hosts = server.hosts(&root);
    let admin = connect(&hosts).await;
    let log = TermLog::default();
    let mut latches = Vec::new();
    let mut managers = Vec::new();
    for i in 0..5 {
        let m = manager(&hosts).await;
        latches.push(join(
            &log,
            &m,
            PATH,
            &format!("p{i}"),
            LeadershipPolicy::Standard,
        ));
        managers.push(m);
        wait_nodes(&admin, PATH, i + 1).await;
    }
    leads(&latches[0]).await;
    // Every follower watches its predecessor; the leader watches its own node.
    wait_watches(&server, 5).await;
    for turn in 0..3 {
        let before = notifications(&server).await;
        latches[turn].close().await.unwrap();
        leads(&latches[turn + 1]).await;
        wait_watches(&server, 4 - turn).await;
        let sent = notifications(&server).await - before;
        assert_eq!(sent, 1, "turn {turn}: one notification per leader change");
    }
    log.assert_no_overlap();
    for latch in &latches {
        latch.close().await.unwrap();
    }
}

#[tokio::test]
async fn a_lost_create_reply_is_found_again_by_its_guid_and_leaves_no_ghost() {
    let TestRoot {
        server,
        root,
        hosts,
    } = test_root("leader_lost_reply").await;
    let admin = connect(&hosts).await;
    admin
        .create_all(PATH, &[], &zk_client::CreateOptions::persistent())
        .await
        .unwrap();
    let proxy = Proxy::start(server.addr()).await;
    let m = manager(&format!("{}{root}", proxy.connect_string())).await;
    let session = m.client().session_id();
    proxy.drop_next_create_reply();
    let log = TermLog::default();
    let latch = join(&log, &m, PATH, "survivor", LeadershipPolicy::Standard);
    assert!(
        proxy.wait_create_reply_dropped(LIMIT).await,
        "the proxy never dropped the create reply"
    );
    let term = within("lead", latch.ready()).await.unwrap();
    assert_eq!(m.client().session_id(), session, "the same session");
    let nodes = wait_nodes(&admin, PATH, 1).await;
    assert_eq!(
        term.node,
        format!("{PATH}/{}", nodes[0]),
        "our one node, no ghost"
    );
    assert_eq!(latch.leader().await.unwrap().unwrap().id(), "survivor");
    latch.close().await.unwrap();
    wait_nodes(&admin, PATH, 0).await;
}

/// `a` leads and `b` queues behind it, each on its own session manager, in a fresh chroot.
struct LeaderAndFollower {
    admin: Client,
    log: TermLog,
    a: LeaderLatch,
    b: LeaderLatch,
    _managers: [SessionManager; 2],
}

async fn leader_and_follower(test: &str) -> LeaderAndFollower {
    let TestRoot { hosts, .. } = test_root(test).await;
    let admin = connect(&hosts).await;
    let log = TermLog::default();
    let (ma, mb) = (manager(&hosts).await, manager(&hosts).await);
    let a = join(&log, &ma, PATH, "a", LeadershipPolicy::Standard);
    leads(&a).await;
    let b = join(&log, &mb, PATH, "b", LeadershipPolicy::Standard);
    wait_nodes(&admin, PATH, 2).await;
    LeaderAndFollower {
        admin,
        log,
        a,
        b,
        _managers: [ma, mb],
    }
}

#[tokio::test]
async fn a_deleted_leader_node_ends_the_term_and_the_participant_joins_again_at_the_end() {
    let LeaderAndFollower {
        admin, log, a, b, ..
    } = leader_and_follower("leader_node_deleted").await;
    let node = a.leadership().term().unwrap().node.clone();
    // An operator (or a revocation) deletes the leader's node.
    admin.delete(&node, None).await.unwrap();
    leads(&b).await;
    assert!(!a.is_leader());
    wait_nodes(&admin, PATH, 2).await;
    let ids = participant_ids(b.participants().await);
    assert_eq!(ids, ["b", "a"], "a joined again behind b with a new node");
    b.close().await.unwrap();
    leads(&a).await;
    assert_ne!(a.leadership().term().unwrap().node, node);
    a.close().await.unwrap();
    // No overlap check here: a deleted node is leadership gone on the server before its
    // owner can hear of it (both hear of it from the same notification).
    let mut terms = log.terms();
    terms.sort_by_key(|t| t.start);
    let who: Vec<_> = terms.into_iter().map(|t| t.who).collect();
    assert_eq!(who, ["a", "b", "a"]);
}

#[tokio::test]
async fn a_first_node_of_another_session_is_replaced_instead_of_led_from() {
    let LeaderAndFollower {
        admin, log, a, b, ..
    } = leader_and_follower("leader_foreign_owner").await;
    let nodes = wait_nodes(&admin, PATH, 2).await;
    let a_node = a.leadership().term().unwrap().node.clone();
    let b_name = nodes
        .iter()
        .find(|n| !a_node.ends_with(n.as_str()))
        .unwrap()
        .clone();
    // B's node is swapped for one of the same name owned by another session (the admin's),
    // while B watches A's node and cannot notice.
    let b_node = format!("{PATH}/{b_name}");
    admin.delete(&b_node, None).await.unwrap();
    admin
        .create(&b_node, b"b", &CreateOptions::ephemeral())
        .await
        .unwrap();

    // A leaves: B finds its name first, but the node is not its session's (CURATOR-696). It
    // must not lead from it, nor wait forever: it replaces it with a node of its own.
    a.close().await.unwrap();
    leads(&b).await;
    let term = b.leadership().term().unwrap().clone();
    assert_ne!(term.node, b_node, "led from another session's node");
    let stat = admin.exists(&term.node).await.unwrap().expect("b's node");
    assert_eq!(stat.ephemeral_owner, term.session_id);
    assert_eq!(wait_nodes(&admin, PATH, 1).await, [last(&term.node)]);
    b.close().await.unwrap();
    let who: Vec<_> = log.assert_no_overlap().into_iter().map(|t| t.who).collect();
    assert_eq!(who, ["a", "b"]);
}

#[tokio::test]
async fn ready_says_why_the_latch_ended() {
    let LeaderAndFollower {
        a,
        b,
        _managers: [_, mb],
        ..
    } = leader_and_follower("leader_ready_why").await;
    // B's session fails authentication: its manager ends without a new session, and so does
    // B's latch. `ready()` must say so, not that B was closed.
    let added = mb.client().add_auth("no-such-scheme", b"x").await;
    assert!(
        matches!(added, Err(zk_client::Error::AuthFailed)),
        "{added:?}"
    );
    let mut states = b.watch();
    within("b ends", states.wait_for(|s| s == Leadership::Ended)).await;
    let ready = within("b ready", b.ready()).await;
    assert!(
        matches!(
            ready,
            Err(zk_recipes::Error::Client(zk_client::Error::AuthFailed))
        ),
        "{ready:?}"
    );
    // A close is still `Closed`.
    a.close().await.unwrap();
    let ready = within("a ready", a.ready()).await;
    assert!(
        matches!(
            ready,
            Err(zk_recipes::Error::Client(zk_client::Error::Closed))
        ),
        "{ready:?}"
    );
}

#[tokio::test]
async fn an_election_error_after_our_create_leaves_no_node_of_ours_ahead_of_us() {
    // For a while the election path takes creates but refuses listings (no READ): each try
    // makes our node, then fails with NoAuth. A later try must not queue behind the node of
    // an earlier one (ours, on the same session, so never deleted by its session's end):
    // once the path can be read again, we lead from our one node.
    let TestRoot { hosts, .. } = test_root("leader_error_own_node").await;
    let admin = connect(&hosts).await;
    admin
        .create("/election", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let no_read = vec![Acl::world(Perms::ALL & !Perms::READ)];
    admin
        .create(PATH, b"", &CreateOptions::persistent().with_acl(no_read))
        .await
        .unwrap();
    let log = TermLog::default();
    let m = manager(&hosts).await;
    let a = join(&log, &m, PATH, "a", LeadershipPolicy::Standard);
    // Tries about 0, 0.1, 0.25, 0.55 and 1.1 s in (paced), each refused after its create.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!a.is_leader());
    admin
        .set_acl(PATH, &[Acl::world(Perms::ALL)], None)
        .await
        .unwrap();
    leads(&a).await;
    let nodes = wait_nodes(&admin, PATH, 1).await;
    assert!(a.leadership().term().unwrap().node.ends_with(&nodes[0]));
    a.close().await.unwrap();
    wait_nodes(&admin, PATH, 0).await;
    m.close().await.unwrap();
}

fn last(path: &str) -> String {
    path.rsplit('/').next().unwrap_or(path).to_owned()
}
