//! `PersistentNode` against a real server: kept present through deletions, session expiries
//! (on a `SessionManager`), lost create replies (never two nodes), a leftover node of another
//! session (replaced, not adopted), TTL touches; data survives re-creation; close deletes.

use std::time::Duration;

use integration_tests::prelude::*;
use integration_tests::Proxy;
use zk_client::{Acl, Client, CreateMode, CreateOptions, Perms, SessionManager};
use zk_recipes::node::{NodeEvent, NodeEvents, NodeOptions, PersistentNode};

async fn manager(hosts: &str) -> SessionManager {
    let builder = Client::builder(hosts).session_timeout(Duration::from_secs(4));
    managed(builder).await
}

/// Expires the current session of `m` and waits for the next one.
async fn expire(server: &integration_tests::Server, m: &SessionManager) -> Client {
    let mut clients = m.watch();
    let old = m.client();
    expire_client(server.addr(), &old).await;
    within("renewal", clients.changed())
        .await
        .live()
        .unwrap()
        .client
}

/// The next event, within the bound.
async fn next_event(events: &mut NodeEvents) -> NodeEvent {
    within("node event", events.next()).await.expect("event")
}

#[tokio::test]
async fn ephemeral_node_comes_back_after_deletion_and_expiry_with_its_latest_data() {
    let TestRoot { server, hosts, .. } = test_root("pnode_basic").await;
    let admin = connect(&hosts).await;
    let m = manager(&hosts).await;
    let node = PersistentNode::new_managed(&m, "/reg/me", b"v1", NodeOptions::ephemeral()).unwrap();
    let mut events = node.events();
    let path = node.ready_timeout(SOON).await.unwrap();
    assert_eq!(path, "/reg/me");
    assert_eq!(
        next_event(&mut events).await,
        NodeEvent::Created { path: path.clone() }
    );
    let (data, stat) = admin.get_data("/reg/me").await.unwrap();
    assert_eq!(data.as_ref(), b"v1");
    assert_eq!(stat.ephemeral_owner, m.client().session_id());
    // The parent is a container, as Curator makes it.
    let (_, parent) = admin.get_data("/reg").await.unwrap();
    assert_eq!(parent.ephemeral_owner, 0);

    // Deleted by someone: re-created.
    admin.delete("/reg/me", None).await.unwrap();
    assert_eq!(
        next_event(&mut events).await,
        NodeEvent::Deleted { path: path.clone() }
    );
    assert_eq!(
        next_event(&mut events).await,
        NodeEvent::Recreated { path: path.clone() }
    );
    assert_eq!(admin.get_data("/reg/me").await.unwrap().0.as_ref(), b"v1");

    // New data, kept through the next re-creation.
    node.set_data(b"v2").await.unwrap();
    assert_eq!(admin.get_data("/reg/me").await.unwrap().0.as_ref(), b"v2");
    loop {
        match next_event(&mut events).await {
            NodeEvent::DataChanged { data, .. } if data.as_ref() == b"v2" => break,
            NodeEvent::DataChanged { .. } => {}
            other => panic!("unexpected {other:?}"),
        }
    }

    // The session expires: the node comes back on the next session, with v2.
    let old_session = m.client().session_id();
    let new = expire(server, &m).await;
    let stat = eventually("re-created on the new session", SOON, || async {
        match admin.get_data("/reg/me").await {
            Ok((d, s)) if s.ephemeral_owner == new.session_id() => Some((d, s)),
            _ => None,
        }
    })
    .await;
    assert_ne!(new.session_id(), old_session);
    assert_eq!(stat.0.as_ref(), b"v2");
    assert_eq!(node.path().as_deref(), Some("/reg/me"));
    assert_eq!(children(&admin, "/reg").await, ["me"]);

    // Close deletes it, and nothing comes back.
    node.close().await.unwrap();
    assert!(admin.exists("/reg/me").await.unwrap().is_none());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(admin.exists("/reg/me").await.unwrap().is_none());
    assert!(node.set_data(b"v3").await.is_err(), "closed");
    m.close().await.unwrap();
}

#[tokio::test]
async fn a_node_of_our_name_held_by_another_session_is_replaced_not_adopted() {
    let TestRoot { hosts, .. } = test_root("pnode_owner").await;
    let admin = connect(&hosts).await;
    // A leftover: say our previous process's session, not yet expired.
    let stranger = connect(&hosts).await;
    stranger
        .create_all("/reg/me", b"stale", &CreateOptions::ephemeral())
        .await
        .unwrap();
    let m = manager(&hosts).await;
    let node =
        PersistentNode::new_managed(&m, "/reg/me", b"fresh", NodeOptions::ephemeral()).unwrap();
    node.ready_timeout(SOON).await.unwrap();
    let (data, stat) = admin.get_data("/reg/me").await.unwrap();
    assert_eq!(
        stat.ephemeral_owner,
        m.client().session_id(),
        "ours, not the stranger's"
    );
    assert_eq!(data.as_ref(), b"fresh");
    // When the stranger's session ends, ours stays.
    stranger.close().await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (_, stat) = admin.get_data("/reg/me").await.unwrap();
    assert_eq!(stat.ephemeral_owner, m.client().session_id());
    node.close().await.unwrap();
    assert!(admin.exists("/reg/me").await.unwrap().is_none());
    m.close().await.unwrap();
}

#[tokio::test]
async fn a_lost_create_reply_never_makes_two_nodes() {
    let TestRoot {
        server,
        root,
        hosts,
    } = test_root("pnode_lost_reply").await;
    let admin = connect(&hosts).await;
    admin
        .create("/reg", &[], &CreateOptions::persistent())
        .await
        .unwrap();
    let proxy = Proxy::start(server.addr()).await;
    // The same create lost with its connection twice in a row is, to the client, a request
    // the server drops the connection on (the poison rule): off here, where it is the fault
    // under test.
    let builder = Client::builder(&format!("{}{root}", proxy.connect_string()))
        .session_timeout(Duration::from_secs(4))
        .poison_quarantine(Duration::ZERO);
    let m = managed(builder).await;
    let session = m.client().session_id();
    let cases = [
        (
            "protected sequential",
            NodeOptions::new(CreateMode::EphemeralSequential).protected(true),
        ),
        ("protected", NodeOptions::ephemeral().protected(true)),
        ("plain", NodeOptions::ephemeral()),
        // Curator's unprotected `EPHEMERAL_SEQUENTIAL` (service discovery's dynamic
        // sequential instances): found again by its prefix and our session.
        (
            "plain sequential",
            NodeOptions::new(CreateMode::EphemeralSequential),
        ),
        (
            "protected persistent",
            NodeOptions::persistent().protected(true),
        ),
    ];
    for (run, (what, options)) in cases.into_iter().enumerate() {
        for round in 0..3 {
            proxy.drop_next_create_reply();
            let node = PersistentNode::new_managed(&m, "/reg/n-", b"x", options.clone()).unwrap();
            let path = node.ready_timeout(SOON).await.unwrap();
            assert!(
                proxy
                    .wait_create_reply_dropped(Duration::from_secs(5))
                    .await,
                "{what} {round}: the proxy did not drop the create reply"
            );
            let nodes = children(&admin, "/reg").await;
            assert_eq!(
                nodes.len(),
                1,
                "{what} {round}: exactly one node, got {nodes:?}"
            );
            assert_eq!(format!("/reg/{}", nodes[0]), path, "{what} {round}");
            if options.protected {
                assert!(nodes[0].starts_with("_c_"), "{what}: protected name");
            }
            if options.mode == CreateMode::EphemeralSequential {
                let sequence = nodes[0].get(nodes[0].len().saturating_sub(10)..);
                assert!(
                    nodes[0].len() >= "n-".len() + 10
                        && sequence.is_some_and(|s| s.bytes().all(|b| b.is_ascii_digit())),
                    "{what}: sequence suffix in {}",
                    nodes[0]
                );
            }
            node.close().await.unwrap();
            assert!(
                children(&admin, "/reg").await.is_empty(),
                "{what} {round}: close removed it"
            );
            let _ = run;
        }
    }
    assert_eq!(m.client().session_id(), session, "all on one session");
    m.close().await.unwrap();
}

#[tokio::test]
async fn a_sequential_node_keeps_its_name_when_re_created() {
    let TestRoot { server, hosts, .. } = test_root("pnode_seq").await;
    let admin = connect(&hosts).await;
    let m = manager(&hosts).await;
    let options = NodeOptions::new(CreateMode::EphemeralSequential).protected(true);
    let node = PersistentNode::new_managed(&m, "/q/item-", b"d", options).unwrap();
    let path = node.ready_timeout(SOON).await.unwrap();
    admin.delete(&path, None).await.unwrap();
    eventually("re-created at the same name", SOON, || async {
        admin.exists(&path).await.unwrap().map(|_| ())
    })
    .await;
    assert_eq!(children(&admin, "/q").await.len(), 1);
    // And after an expiry.
    let new = expire(server, &m).await;
    eventually("same name on the new session", SOON, || async {
        match admin.exists(&path).await.unwrap() {
            Some(s) if s.ephemeral_owner == new.session_id() => Some(()),
            _ => None,
        }
    })
    .await;
    assert_eq!(children(&admin, "/q").await.len(), 1);
    drop(node);
    // Dropping the handle deletes in the background.
    eventually("deleted after drop", SOON, || async {
        admin.exists(&path).await.unwrap().is_none().then_some(())
    })
    .await;
    m.close().await.unwrap();
}

#[tokio::test]
async fn a_ttl_node_is_touched_before_its_ttl_passes() {
    let TestRoot { hosts, .. } = test_root("pnode_ttl").await;
    let admin = connect(&hosts).await;
    let m = manager(&hosts).await;
    let ttl = Duration::from_millis(600);
    let node = PersistentNode::new_managed(&m, "/ttl/n", b"t", NodeOptions::ttl(ttl)).unwrap();
    node.ready_timeout(SOON).await.unwrap();
    let (_, first) = admin.get_data("/ttl/n").await.unwrap();
    // Touched every ttl/2: mtime keeps moving, never older than the TTL.
    let mut touches = 0;
    let mut last = first.mtime;
    for _ in 0..8 {
        tokio::time::sleep(ttl / 2).await;
        let (data, stat) = admin.get_data("/ttl/n").await.unwrap();
        assert_eq!(data.as_ref(), b"t");
        if stat.mtime > last {
            touches += 1;
            last = stat.mtime;
        }
    }
    assert!(touches >= 4, "touched {touches} times in 8 half-TTLs");
    node.close().await.unwrap();
    assert!(admin.exists("/ttl/n").await.unwrap().is_none());
    m.close().await.unwrap();
}

#[tokio::test]
async fn close_reports_a_delete_the_server_refuses_and_the_node_stays() {
    let TestRoot { hosts, .. } = test_root("pnode_close_refused").await;
    let admin = connect(&hosts).await;
    // Nodes may be made under /locked, not deleted from it.
    let no_delete = vec![Acl::world(Perms::ALL & !Perms::DELETE)];
    let options = CreateOptions::persistent().with_acl(no_delete);
    admin.create("/locked", b"", &options).await.unwrap();
    let m = manager(&hosts).await;
    let node =
        PersistentNode::new_managed(&m, "/locked/n", b"x", NodeOptions::persistent()).unwrap();
    node.ready_timeout(SOON).await.unwrap();
    let closed = node.close().await;
    assert!(
        matches!(
            closed,
            Err(zk_recipes::Error::Client(zk_client::Error::NoAuth))
        ),
        "a close that deleted nothing must say so: {closed:?}"
    );
    assert!(admin.exists("/locked/n").await.unwrap().is_some());
    m.close().await.unwrap();
    // Let the test root's clean-up delete it.
    admin
        .set_acl("/locked", &[Acl::world(Perms::ALL)], None)
        .await
        .unwrap();
}

#[tokio::test]
async fn set_data_before_the_first_create_is_kept_for_it() {
    let TestRoot { hosts, .. } = test_root("pnode_early_data").await;
    let admin = connect(&hosts).await;
    let m = manager(&hosts).await;
    let node =
        PersistentNode::new_managed(&m, "/e/n", b"first", NodeOptions::persistent()).unwrap();
    // Curator throws here (CURATOR-485); we keep it.
    node.set_data(b"second").await.unwrap();
    node.ready_timeout(SOON).await.unwrap();
    eventually("latest data", SOON, || async {
        (admin.get_data("/e/n").await.unwrap().0.as_ref() == b"second").then_some(())
    })
    .await;
    node.close().await.unwrap();
    assert!(admin.exists("/e/n").await.unwrap().is_none());
    m.close().await.unwrap();
}

#[tokio::test]
async fn someone_elses_edit_is_kept_and_reported_until_the_next_re_create() {
    let TestRoot { hosts, .. } = test_root("pnode_foreign_edit").await;
    let admin = connect(&hosts).await;
    let m = manager(&hosts).await;
    let node = PersistentNode::new_managed(&m, "/x/n", b"ours", NodeOptions::ephemeral()).unwrap();
    let mut events = node.events();
    node.ready_timeout(SOON).await.unwrap();
    assert!(matches!(
        next_event(&mut events).await,
        NodeEvent::Created { .. }
    ));
    admin.set_data("/x/n", b"theirs", None).await.unwrap();
    match next_event(&mut events).await {
        NodeEvent::DataChanged { data, .. } => assert_eq!(data.as_ref(), b"theirs"),
        other => panic!("unexpected {other:?}"),
    }
    // Kept, as Curator keeps it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(admin.get_data("/x/n").await.unwrap().0.as_ref(), b"theirs");
    // A re-create writes ours again.
    admin.delete("/x/n", None).await.unwrap();
    eventually("ours again", SOON, || async {
        match admin.get_data("/x/n").await {
            Ok((d, _)) if d.as_ref() == b"ours" => Some(()),
            _ => None,
        }
    })
    .await;
    node.close().await.unwrap();
    m.close().await.unwrap();
}

#[tokio::test]
async fn a_ttl_node_in_curators_layout_is_touched_at_once_and_left_to_the_server_on_close() {
    use zk_recipes::node::PersistentTtlNode;
    let TestRoot { hosts, .. } = test_root("pnode_ttl_curator").await;
    let admin = connect(&hosts).await;
    let m = manager(&hosts).await;
    // A long TTL: the touch node appears long before the first period (Curator 5.4 waits
    // ttl/2 first, GH-1258).
    let slow =
        PersistentTtlNode::new_managed(&m, "/ttl/slow", b"d", Duration::from_secs(20)).unwrap();
    eventually("touch node at once", Duration::from_secs(5), || async {
        admin.exists("/ttl/slow/touch").await.unwrap().map(|_| ())
    })
    .await;
    let (data, _) = eventually("container data", SOON, || async {
        admin
            .get_data("/ttl/slow")
            .await
            .ok()
            .filter(|(d, _)| d.as_ref() == b"d")
    })
    .await;
    assert_eq!(data.as_ref(), b"d");
    slow.close().await.unwrap();

    let ttl = Duration::from_millis(600);
    let node = PersistentTtlNode::new_managed(&m, "/ttl/fast", b"x", ttl).unwrap();
    node.node().ready_timeout(SOON).await.unwrap();
    let first = eventually("touched", SOON, || async {
        admin.exists("/ttl/fast/touch").await.unwrap()
    })
    .await;
    let moved = eventually("touched again", SOON, || async {
        admin
            .exists("/ttl/fast/touch")
            .await
            .unwrap()
            .filter(|s| s.mtime > first.mtime)
    })
    .await;
    assert!(moved.mtime > first.mtime);
    node.close().await.unwrap();
    // Close stops the touching and leaves both nodes to the server's reaper (Curator's
    // close deletes nothing either).
    let after = admin
        .exists("/ttl/fast/touch")
        .await
        .unwrap()
        .map(|s| s.mtime);
    tokio::time::sleep(ttl * 2).await;
    let later = admin
        .exists("/ttl/fast/touch")
        .await
        .unwrap()
        .map(|s| s.mtime);
    if let (Some(after), Some(later)) = (after, later) {
        assert_eq!(later, after, "still touched after close");
    }
    m.close().await.unwrap();
}
