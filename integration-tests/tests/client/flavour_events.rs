//! ZooKeeper 3.9's watch-event zxid (ZOOKEEPER-4655) on `WatchedEvent::zxid`: on the 3.9
//! emulation every node event carries the zxid its change left in the tree (`czxid` of a
//! created node, `mzxid` of a changed one, the parent's `pzxid` for a child created or
//! deleted, one zxid for every event of a `multi`); on 3.8 there is none.

use std::time::Duration;

use zk_client::{AddWatchMode, CreateOptions, EventType, Op, WatchedEvent};

use crate::flavours::{Case, Env};

const LIMIT: Duration = Duration::from_secs(30);

async fn fired(watcher: zk_client::Watcher) -> WatchedEvent {
    tokio::time::timeout(LIMIT, watcher)
        .await
        .expect("the watch fires")
        .expect("an event")
}

/// The zxid `event` must carry on `case`: `expected` on 3.9, none before.
fn check(case: Case, event: &WatchedEvent, expected: i64) {
    let want = (case == Case::ZooKeeper39).then_some(expected);
    assert_eq!(
        event.zxid(),
        want,
        "{}: {:?} on {}",
        case.name(),
        event.event_type,
        event.path
    );
}

async fn event_zxids(case: Case) {
    let env = Env::start(case).await;
    let client = env.client().await;
    let admin = &env.admin;
    let opts = CreateOptions::persistent();

    // NodeCreated: the new node's czxid.
    let (_, w) = client.exists_watch("/app/a").await.unwrap();
    let (_, created) = admin.create("/app/a", b"1", &opts).await.unwrap();
    let e = fired(w).await;
    assert_eq!(e.event_type, EventType::NodeCreated);
    check(case, &e, created.czxid);

    // NodeDataChanged: the new mzxid, newer than what the watching read saw.
    let (_, before, w) = client.get_data_watch("/app/a").await.unwrap();
    let changed = admin.set_data("/app/a", b"2", None).await.unwrap();
    let e = fired(w).await;
    assert_eq!(e.event_type, EventType::NodeDataChanged);
    check(case, &e, changed.mzxid);
    assert!(changed.mzxid > before.mzxid);

    // NodeChildrenChanged on a create: the child's czxid, the parent's new pzxid.
    let (_, _, w) = client.get_children_watch("/app").await.unwrap();
    let (_, child) = admin.create("/app/b", b"", &opts).await.unwrap();
    let e = fired(w).await;
    assert_eq!(e.event_type, EventType::NodeChildrenChanged);
    check(case, &e, child.czxid);
    let parent = admin.exists("/app").await.unwrap().unwrap();
    assert_eq!(parent.pzxid, child.czxid);

    // NodeDeleted and the parent's NodeChildrenChanged: the delete's zxid (the parent's pzxid).
    let (_, _, deleted_w) = client.get_data_watch("/app/b").await.unwrap();
    let (_, _, children_w) = client.get_children_watch("/app").await.unwrap();
    admin.delete("/app/b", None).await.unwrap();
    let parent = admin.exists("/app").await.unwrap().unwrap();
    assert!(parent.pzxid > child.czxid);
    let e = fired(deleted_w).await;
    assert_eq!(e.event_type, EventType::NodeDeleted);
    check(case, &e, parent.pzxid);
    let e = fired(children_w).await;
    assert_eq!(e.event_type, EventType::NodeChildrenChanged);
    check(case, &e, parent.pzxid);

    // A multi: one zxid for all of its events (a persistent recursive watch sees both).
    let mut events = client
        .add_watch("/app", AddWatchMode::PersistentRecursive)
        .await
        .unwrap();
    let results = admin
        .multi(&[
            Op::create("/app/m1", b"", &opts),
            Op::create("/app/m2", b"", &opts),
        ])
        .await
        .unwrap();
    assert_eq!(results.len(), 2);
    let m1 = admin.exists("/app/m1").await.unwrap().unwrap();
    let m2 = admin.exists("/app/m2").await.unwrap().unwrap();
    assert_eq!(m1.czxid, m2.czxid);
    for path in ["/app/m1", "/app/m2"] {
        let e = tokio::time::timeout(LIMIT, events.next())
            .await
            .expect("an event")
            .unwrap();
        assert_eq!(
            (e.event_type, e.path.as_str()),
            (EventType::NodeCreated, path)
        );
        check(case, &e, m1.czxid);
    }
    client.close().await.unwrap();
    env.assert_nothing_unsupported_sent();
}

#[tokio::test]
async fn watch_events_carry_the_changes_zxid_on_zookeeper_3_9() {
    event_zxids(Case::ZooKeeper39).await;
}

#[tokio::test]
async fn watch_events_carry_no_zxid_on_zookeeper_3_8() {
    event_zxids(Case::ZooKeeper38).await;
}
