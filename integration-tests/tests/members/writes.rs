//! Writes that are safe to retry (`zk_recipes::writes`) against a real server, with the
//! fault proxy dropping the reply of the create or set (the write applied, the
//! client only saw a connection loss), or the request itself: exactly the intended final
//! state, never a second node, never an overwrite of someone else's later write. And
//! Curator 5.4 (`java/CuratorProtected.java`) reading our protected names, and we its.

use std::time::Duration;

use crate::support::{data, dropped, setup};
use integration_tests::prelude::*;
use integration_tests::probe::op;
use integration_tests::proxy::{DropRule, Mode};
use integration_tests::{chroot, standalone, ZkTarget};
use zk_client::{CreateMode, CreateOptions};
use zk_recipes::writes;

/// How many lost replies each mode of the protected create goes through
/// (`SAFE_WRITE_RUNS`, default 10).
fn runs() -> usize {
    std::env::var("SAFE_WRITE_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10)
}

#[tokio::test]
async fn protected_create_returns_the_one_node_when_the_reply_is_lost_in_every_mode() {
    let (proxy, client, admin, _) = setup("safe_protected").await;
    let session = client.session_id();
    // Missing parents (made as containers): the dropped reply is the first create's NoNode;
    // still exactly one node.
    proxy.drop_next_create_reply();
    let made = within(
        "protected create, no parent",
        writes::create_protected(&client, "/fresh/a/n-", b"", &CreateOptions::ephemeral()),
    )
    .await
    .unwrap();
    dropped(&proxy, "create").await;
    assert_eq!(
        children(&admin, "/fresh/a").await,
        vec![made.name().to_owned()]
    );
    admin
        .create_all("/jobs/deep", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let modes = [
        CreateMode::Persistent,
        CreateMode::Ephemeral,
        CreateMode::PersistentSequential,
        CreateMode::EphemeralSequential,
    ];
    let mut lost = 0;
    for mode in modes {
        for run in 0..runs() {
            proxy.drop_next_create_reply();
            let payload = format!("{mode:?}-{run}");
            let made = within(
                "protected create",
                writes::create_protected(
                    &client,
                    "/jobs/deep/job-",
                    payload.as_bytes(),
                    &CreateOptions::new(mode),
                ),
            )
            .await
            .unwrap_or_else(|e| panic!("{mode:?} run {run}: {e}"));
            dropped(&proxy, "create").await;
            lost += 1;
            assert!(
                made.recovered,
                "{mode:?} run {run}: found after the lost reply"
            );
            assert_eq!(
                children(&admin, "/jobs/deep").await,
                vec![made.name().to_owned()],
                "{mode:?} run {run}: exactly one node, the one returned"
            );
            let parsed = zk_recipes::layout::parse(made.name());
            assert!(parsed.protected(), "{}", made.name());
            assert_eq!(
                mode.is_sequential(),
                parsed.sequence.is_some(),
                "{}",
                made.name()
            );
            assert_eq!(data(&admin, &made.path).await.0, payload.as_bytes());
            let owner = admin
                .exists(&made.path)
                .await
                .unwrap()
                .unwrap()
                .ephemeral_owner;
            assert_eq!(mode.is_ephemeral(), owner == session, "{mode:?}: owner");
            admin.delete(&made.path, None).await.unwrap();
        }
    }
    assert_eq!(client.session_id(), session, "one session throughout");
    println!(
        "protected create: {lost} lost replies, each recovered to exactly one node ({} connections)",
        proxy.stats().accepted
    );
}

/// getChildren's opcode (the recovery's listing).
const GET_CHILDREN: i32 = 8;

/// Faults at every step of the protected create: the create request itself dropped (the
/// connection closed before the server saw it), then the create's reply, the recovery
/// listing's reply and the owner check's reply dropped one after the other.
#[tokio::test]
async fn protected_create_survives_a_fault_at_every_step() {
    let (proxy, client, admin, _) = setup("safe_protected_steps").await;
    admin
        .create_all("/s", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let session = client.session_id();
    for mode in [CreateMode::Persistent, CreateMode::EphemeralSequential] {
        // The request never reaches the server: created by the second try, not recovered.
        proxy.drop_on(Some(DropRule::opcode(op::CREATE2)));
        let made = tokio::spawn({
            let client = client.clone();
            async move {
                writes::create_protected(&client, "/s/n-", b"x", &CreateOptions::new(mode)).await
            }
        });
        let before = proxy.stats().requests_dropped;
        eventually(
            "create request dropped",
            Duration::from_secs(10),
            || async { (proxy.stats().requests_dropped > before).then_some(()) },
        )
        .await;
        proxy.drop_on(None);
        let made = within("create", made).await.unwrap().unwrap();
        assert!(!made.recovered, "{mode:?}: the first create never applied");
        assert_eq!(children(&admin, "/s").await, vec![made.name().to_owned()]);
        admin.delete(&made.path, None).await.unwrap();

        // Reply of the create, then of the listing, then of the exists, each dropped.
        for faults in [1, 2, 3] {
            proxy.drop_next_create_reply();
            if faults >= 2 {
                proxy.drop_next_reply_to(GET_CHILDREN);
            }
            if faults >= 3 {
                proxy.drop_next_reply_to(op::EXISTS);
            }
            let made = within(
                "create",
                writes::create_protected(&client, "/s/n-", b"x", &CreateOptions::new(mode)),
            )
            .await
            .unwrap_or_else(|e| panic!("{mode:?}, {faults} faults: {e}"));
            dropped(&proxy, "create/list/exists").await;
            assert!(made.recovered, "{mode:?}, {faults} faults");
            assert_eq!(
                children(&admin, "/s").await,
                vec![made.name().to_owned()],
                "{mode:?}, {faults} faults: exactly one node"
            );
            admin.delete(&made.path, None).await.unwrap();
        }
    }
    assert_eq!(client.session_id(), session);
    let stats = proxy.stats();
    assert_eq!(stats.create_replies_dropped, 12, "{stats:?}");
}

#[tokio::test]
async fn a_failed_protected_create_leaves_nothing_behind() {
    let (_proxy, client, admin, _) = setup("safe_protected_fail").await;
    // An ephemeral parent cannot have children: the create fails after its parent exists.
    admin
        .create("/eph", b"", &CreateOptions::ephemeral())
        .await
        .unwrap();
    let failed =
        writes::create_protected(&client, "/eph/x-", b"", &CreateOptions::persistent()).await;
    assert!(
        matches!(
            failed,
            Err(zk_recipes::Error::Client(
                zk_client::Error::NoChildrenForEphemerals
            ))
        ),
        "{failed:?}"
    );
    assert!(children(&admin, "/eph").await.is_empty());
    let bad =
        writes::create_protected(&client, "/trailing/", b"", &CreateOptions::persistent()).await;
    assert!(
        matches!(bad, Err(zk_recipes::Error::InvalidPath { .. })),
        "{bad:?}"
    );
}

#[tokio::test]
async fn create_all_makes_the_parents_its_options_ask_for() {
    let (proxy, client, admin, _) = setup("safe_create_all_parents").await;
    // A container's stat looks like a persistent node's: watch the wire instead. The proxy
    // drops the connection on any createContainer.
    proxy.drop_on(Some(DropRule::opcode(op::CREATE_CONTAINER)));
    within_for(
        SOON,
        "create_all with persistent parents",
        writes::create_all(&client, "/p/q/n", b"", &CreateOptions::persistent()),
    )
    .await
    .unwrap();
    assert_eq!(
        proxy.stats().requests_dropped,
        0,
        "persistent parents, as Client::create_all: no createContainer sent"
    );
    assert!(admin.exists("/p/q").await.unwrap().is_some());
    // Asked for containers: the first createContainer is dropped (the create goes on
    // through the loss); once the proxy lets them through, the node is made.
    let containers = CreateOptions::persistent().with_container_parents(true);
    let made = tokio::spawn({
        let client = client.clone();
        async move { writes::create_quietly(&client, "/c/d/n", b"", &containers).await }
    });
    eventually("a createContainer sent", SOON, || async {
        (proxy.stats().requests_dropped > 0).then_some(())
    })
    .await;
    proxy.drop_on(None);
    within("create_quietly", made)
        .await
        .unwrap()
        .expect("made once containers go through");
    assert!(admin.exists("/c/d/n").await.unwrap().is_some());
}

#[tokio::test]
async fn create_all_and_create_quietly_take_their_own_node_after_a_lost_reply() {
    let (proxy, client, admin, _) = setup("safe_create_all").await;
    proxy.drop_next_create_reply();
    let (path, stat) = within(
        "create_all",
        writes::create_all(&client, "/a/b/c", b"mine", &CreateOptions::persistent()),
    )
    .await
    .expect("our own node after a lost reply, not NodeExists");
    dropped(&proxy, "create").await;
    assert_eq!(path, "/a/b/c");
    assert_eq!(stat.version, 0);
    assert_eq!(data(&admin, "/a/b/c").await, (b"mine".to_vec(), 0));
    // The parents are empty, as in Curator's layout.
    assert_eq!(data(&admin, "/a/b").await, (Vec::new(), 0));
    // Someone else's node (not created by this call) is NodeExists, or None quietly.
    let again = writes::create_all(&client, "/a/b/c", b"mine", &CreateOptions::persistent()).await;
    assert!(
        matches!(
            again,
            Err(zk_recipes::Error::Client(zk_client::Error::NodeExists))
        ),
        "{again:?}"
    );
    let quiet = writes::create_quietly(&client, "/a/b/c", b"x", &CreateOptions::persistent())
        .await
        .unwrap();
    assert_eq!(quiet, None);
    // An ephemeral one through a lost reply: owned by our session.
    proxy.drop_next_create_reply();
    let made = within(
        "create_quietly",
        writes::create_quietly(&client, "/a/e", b"", &CreateOptions::ephemeral()),
    )
    .await
    .unwrap();
    dropped(&proxy, "create").await;
    assert_eq!(made.map(|(p, _)| p).as_deref(), Some("/a/e"));
    // After a lost reply, a node that is not what we sent is someone else's.
    admin
        .create("/other", b"theirs", &CreateOptions::persistent())
        .await
        .unwrap();
    proxy.drop_next_create_reply();
    // The proxy claims the next create: ours to /other fails at the server with NodeExists,
    // and its reply is dropped; the retry sees NodeExists and reads "theirs".
    let theirs = writes::create_all(&client, "/other", b"mine", &CreateOptions::persistent()).await;
    dropped(&proxy, "create").await;
    assert!(
        matches!(
            theirs,
            Err(zk_recipes::Error::Client(zk_client::Error::NodeExists))
        ),
        "{theirs:?}"
    );
    assert_eq!(data(&admin, "/other").await, (b"theirs".to_vec(), 0));
}

#[tokio::test]
async fn upserts_write_once_through_lost_create_and_set_replies() {
    let (proxy, client, admin, _) = setup("safe_upsert").await;
    let opts = CreateOptions::persistent().with_container_parents(true);
    // Absent: the create's reply is lost; the node is ours at version 0.
    proxy.drop_next_create_reply();
    let stat = within(
        "create_or_set (create)",
        writes::create_or_set(&client, "/cfg/limit", b"1", &opts),
    )
    .await
    .unwrap();
    dropped(&proxy, "create").await;
    assert_eq!(stat.version, 0);
    assert_eq!(data(&admin, "/cfg/limit").await, (b"1".to_vec(), 0));
    // Present: the set's reply is lost; written exactly once (version 1, not 2).
    proxy.drop_next_reply_to(op::SET_DATA);
    let stat = within(
        "create_or_set (set)",
        writes::create_or_set(&client, "/cfg/limit", b"2", &opts),
    )
    .await
    .unwrap();
    dropped(&proxy, "set").await;
    assert_eq!(stat.version, 1);
    assert_eq!(data(&admin, "/cfg/limit").await, (b"2".to_vec(), 1));
    // set_or_create: present, lost set reply.
    proxy.drop_next_reply_to(op::SET_DATA);
    let stat = within(
        "set_or_create (set)",
        writes::set_or_create(&client, "/cfg/limit", b"3", &opts),
    )
    .await
    .unwrap();
    dropped(&proxy, "set").await;
    assert_eq!(
        (stat.version, data(&admin, "/cfg/limit").await),
        (2, (b"3".to_vec(), 2))
    );
    // set_or_create: absent (NoNode), then a lost create reply.
    proxy.drop_next_create_reply();
    let stat = within(
        "set_or_create (create)",
        writes::set_or_create(&client, "/cfg/new", b"n", &opts),
    )
    .await
    .unwrap();
    dropped(&proxy, "create").await;
    assert_eq!(stat.version, 0);
    assert_eq!(data(&admin, "/cfg/new").await, (b"n".to_vec(), 0));
    // Sequential modes are refused.
    let seq = writes::create_or_set(
        &client,
        "/cfg/s-",
        b"",
        &CreateOptions::persistent_sequential(),
    )
    .await;
    assert!(
        matches!(seq, Err(zk_recipes::Error::InvalidArgument(_))),
        "{seq:?}"
    );
}

#[tokio::test]
async fn a_versioned_set_applies_once_and_never_overwrites_a_later_write() {
    let (proxy, client, admin, _) = setup("safe_set").await;
    admin
        .create("/v", b"0", &CreateOptions::persistent())
        .await
        .unwrap();
    // Lost reply: applied once, reported as ours.
    proxy.drop_next_reply_to(op::SET_DATA);
    let stat = within("set", writes::set_data(&client, "/v", b"1", Some(0)))
        .await
        .unwrap();
    dropped(&proxy, "set").await;
    assert_eq!(stat.version, 1);
    assert_eq!(data(&admin, "/v").await, (b"1".to_vec(), 1));

    // Lost reply, and someone else writes before we are back: theirs stays, and the outcome
    // is reported unknown (ConnectionLoss), not re-applied over theirs.
    proxy.set_mode(Mode::Refuse); // the reconnect waits until we let it through
    proxy.drop_next_reply_to(op::SET_DATA);
    let ours = tokio::spawn({
        let client = client.clone();
        async move { writes::set_data(&client, "/v", b"2", Some(1)).await }
    });
    dropped(&proxy, "set").await;
    admin.set_data("/v", b"theirs", Some(2)).await.unwrap();
    proxy.set_mode(Mode::Pass);
    let ours = within("set outcome", ours).await.unwrap();
    assert!(
        matches!(
            ours,
            Err(zk_recipes::Error::Client(zk_client::Error::ConnectionLoss))
        ),
        "{ours:?}"
    );
    assert_eq!(data(&admin, "/v").await, (b"theirs".to_vec(), 3));

    // The request itself lost (never applied), someone else's set takes the version: ours
    // is BadVersion, theirs stays.
    proxy.set_mode(Mode::Refuse);
    proxy.drop_on(Some(DropRule::opcode(op::SET_DATA)));
    let ours = tokio::spawn({
        let client = client.clone();
        async move { writes::set_data(&client, "/v", b"4", Some(3)).await }
    });
    eventually("request dropped", Duration::from_secs(10), || async {
        (proxy.stats().requests_dropped > 0).then_some(())
    })
    .await;
    proxy.drop_on(None);
    admin.set_data("/v", b"theirs-4", Some(3)).await.unwrap();
    proxy.set_mode(Mode::Pass);
    let ours = within("set outcome", ours).await.unwrap();
    assert!(
        matches!(
            ours,
            Err(zk_recipes::Error::Client(zk_client::Error::BadVersion))
        ),
        "{ours:?}"
    );
    assert_eq!(data(&admin, "/v").await, (b"theirs-4".to_vec(), 4));

    // Dropped request, nobody else: sent again and applied once.
    proxy.drop_on(Some(DropRule::opcode(op::SET_DATA)));
    let ours = tokio::spawn({
        let client = client.clone();
        async move { writes::set_data(&client, "/v", b"5", Some(4)).await }
    });
    eventually("request dropped", Duration::from_secs(10), || async {
        (proxy.stats().requests_dropped > 1).then_some(())
    })
    .await;
    proxy.drop_on(None);
    let stat = within("set outcome", ours).await.unwrap().unwrap();
    assert_eq!(stat.version, 5);
    assert_eq!(data(&admin, "/v").await, (b"5".to_vec(), 5));
}

#[tokio::test]
async fn curator_reads_our_protected_names_and_we_read_its() {
    let server = standalone().await;
    let root = chroot(server, "safe_curator").await;
    let hosts = server.hosts(&root);
    let client = connect(&hosts).await;
    let mut java = JavaPeer::start("CuratorProtected.java", &[&hosts], false).await;
    for (mode, base) in [
        (CreateOptions::ephemeral_sequential(), "job-"),
        (CreateOptions::persistent(), "config"),
    ] {
        let made = writes::create_protected(&client, &format!("/p/{base}"), b"", &mode)
            .await
            .unwrap();
        let guid = made.name()[3..39].to_owned();
        let normalized = made.name()[40..].to_owned();
        assert!(normalized.starts_with(base), "{}", made.name());
        assert_eq!(
            java.ask(&format!("check {}", made.name())).await,
            format!("NAME true {guid} {normalized}"),
            "Curator's ProtectedUtils on {}",
            made.name()
        );
    }
    // Curator's protected node, as our layout reads it.
    let answer = java.ask("create /q/item- PERSISTENT_SEQUENTIAL").await;
    let path = answer
        .strip_prefix("CREATED ")
        .unwrap_or_else(|| panic!("{answer}"));
    let name = path.rsplit('/').next().unwrap();
    let parsed = zk_recipes::layout::parse(name);
    assert!(parsed.protected(), "{name}");
    assert_eq!(parsed.guid.as_deref(), Some(&name[3..39]));
    assert!(parsed.sequence.is_some(), "{name}");
    assert_eq!(children(&client, "/q").await, vec![name.to_owned()]);
    java.close().await;
}
