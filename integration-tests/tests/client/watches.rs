//! zk-client against a real server: one-shot and persistent watches, every event type,
//! chroot stripping, removal, ordering against replies.

use std::time::Duration;

use futures_util::FutureExt;
use integration_tests::prelude::*;
use integration_tests::standalone;
use zk_client::{AddWatchMode, Client, CreateOptions, Error, EventType, WatcherType};

/// Two clients on the same chroot: one watches, the other changes things.
async fn pair(test: &str) -> (Client, Client, String) {
    let TestRoot { server, root, .. } = test_root(test).await;
    let hosts = format!("{}{root}", server.connect_string());
    (connect(&hosts).await, connect(&hosts).await, root)
}

/// Waits (bounded) until the server holds no watch on `path` (a full server path), as `wchp`
/// lists them. A round trip on `client` first orders the check after its removals.
async fn wait_unwatched(client: &Client, server: &integration_tests::Server, path: &str) {
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        client.sync("/").await.unwrap();
        let wchp = integration_tests::probe::four_letter_word(
            server.addr(),
            "wchp",
            Duration::from_secs(5),
        )
        .await
        .unwrap();
        if !wchp.contains(path) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "watch on {path} still on the server"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn data_watch_fires_on_change_and_on_delete() {
    let (w, c, _) = pair("watch_data").await;
    c.create("/a", b"1", &CreateOptions::persistent())
        .await
        .unwrap();
    let (data, _, watcher) = w.get_data_watch("/a").await.unwrap();
    assert_eq!(&data[..], b"1");
    c.set_data("/a", b"2", None).await.unwrap();
    let event = within("data event", watcher).await.unwrap();
    assert_eq!(event.event_type, EventType::NodeDataChanged);
    assert_eq!(event.path, "/a", "chroot stripped");

    let (_, _, watcher) = w.get_data_watch("/a").await.unwrap();
    c.delete("/a", None).await.unwrap();
    let event = within("delete event", watcher).await.unwrap();
    assert_eq!(event.event_type, EventType::NodeDeleted);

    assert!(matches!(w.get_data_watch("/a").await, Err(Error::NoNode)));
    w.close().await.unwrap();
    c.close().await.unwrap();
}

#[tokio::test]
async fn exists_watch_fires_on_create_and_on_change() {
    let (w, c, _) = pair("watch_exists").await;
    let (stat, created) = w.exists_watch("/e").await.unwrap();
    assert!(stat.is_none(), "a watch is left on a missing node");
    c.create("/e", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let event = within("created", created).await.unwrap();
    assert_eq!(
        (event.event_type, event.path.as_str()),
        (EventType::NodeCreated, "/e")
    );

    let (stat, changed) = w.exists_watch("/e").await.unwrap();
    assert!(stat.is_some());
    c.set_data("/e", b"x", None).await.unwrap();
    assert_eq!(
        within("changed", changed).await.unwrap().event_type,
        EventType::NodeDataChanged
    );
    w.close().await.unwrap();
    c.close().await.unwrap();
}

#[tokio::test]
async fn child_watch_fires_on_children_and_on_delete() {
    let (w, c, _) = pair("watch_children").await;
    c.create("/p", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let (children, _, watcher) = w.get_children_watch("/p").await.unwrap();
    assert!(children.is_empty());
    c.create("/p/kid", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let event = within("children", watcher).await.unwrap();
    assert_eq!(
        (event.event_type, event.path.as_str()),
        (EventType::NodeChildrenChanged, "/p")
    );

    let (children, _, watcher) = w.get_children_watch("/p").await.unwrap();
    assert_eq!(children, ["kid"]);
    // Changing a child's data is not a children change; deleting the parent is.
    c.set_data("/p/kid", b"x", None).await.unwrap();
    c.delete("/p/kid", None).await.unwrap();
    assert_eq!(
        within("kid gone", watcher).await.unwrap().event_type,
        EventType::NodeChildrenChanged
    );
    let (_, _, watcher) = w.get_children_watch("/p").await.unwrap();
    c.delete("/p", None).await.unwrap();
    assert_eq!(
        within("parent gone", watcher).await.unwrap().event_type,
        EventType::NodeDeleted
    );
    w.close().await.unwrap();
    c.close().await.unwrap();
}

#[tokio::test]
async fn one_change_fires_every_watcher_once() {
    let (w, c, _) = pair("watch_fanout").await;
    c.create("/f", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let (_, _, w1) = w.get_data_watch("/f").await.unwrap();
    let (_, _, w2) = w.get_data_watch("/f").await.unwrap();
    let (_, w3) = w.exists_watch("/f").await.unwrap();
    c.set_data("/f", b"1", None).await.unwrap();
    for watcher in [w1, w2, w3] {
        assert_eq!(
            within("fan-out", watcher).await.unwrap().event_type,
            EventType::NodeDataChanged
        );
    }
    // One-shot: a second change reaches a new watcher only.
    let (_, _, w4) = w.get_data_watch("/f").await.unwrap();
    c.set_data("/f", b"2", None).await.unwrap();
    assert_eq!(
        within("again", w4).await.unwrap().event_type,
        EventType::NodeDataChanged
    );
    w.close().await.unwrap();
    c.close().await.unwrap();
}

#[tokio::test]
async fn watch_event_arrives_before_the_reply_of_a_read_that_sees_the_change() {
    let (w, c, _) = pair("watch_order").await;
    c.create("/o", b"0", &CreateOptions::persistent())
        .await
        .unwrap();
    for round in 1..=20u32 {
        let (_, _, mut watcher) = w.get_data_watch("/o").await.unwrap();
        c.set_data("/o", round.to_string().as_bytes(), None)
            .await
            .unwrap();
        // Poll with reads until one sees the new value; by then the event must be there.
        let mut seen = false;
        for _ in 0..10_000 {
            let (data, _) = w.get_data("/o").await.unwrap();
            if data == round.to_string().as_bytes() {
                seen = true;
                break;
            }
        }
        assert!(seen, "round {round}: the write never became visible");
        let event = (&mut watcher).now_or_never();
        assert!(
            matches!(event, Some(Ok(_))),
            "round {round}: reply before event: {event:?}"
        );
    }
    w.close().await.unwrap();
    c.close().await.unwrap();
}

#[tokio::test]
async fn persistent_watch_sees_every_event_on_its_node() {
    let (w, c, _) = pair("watch_persistent").await;
    let mut events = w.add_watch("/n", AddWatchMode::Persistent).await.unwrap();
    c.create("/n", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    c.set_data("/n", b"1", None).await.unwrap();
    c.create("/n/kid", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    c.set_data("/n/kid", b"not for us", None).await.unwrap();
    c.delete("/n/kid", None).await.unwrap();
    c.delete("/n", None).await.unwrap();
    c.create("/n", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let mut got = Vec::new();
    for _ in 0..6 {
        let e = within("persistent event", events.next()).await.unwrap();
        assert_eq!(e.path, "/n");
        got.push(e.event_type);
    }
    use EventType as E;
    assert_eq!(
        got,
        [
            E::NodeCreated,
            E::NodeDataChanged,
            E::NodeChildrenChanged,
            E::NodeChildrenChanged,
            E::NodeDeleted,
            E::NodeCreated
        ]
    );
    w.remove_watches("/n", WatcherType::Any).await.unwrap();
    assert_eq!(
        within("removed", events.next()).await.unwrap().event_type,
        E::PersistentWatchRemoved
    );
    assert!(matches!(events.next().await, Err(Error::Closed)));
    w.close().await.unwrap();
    c.close().await.unwrap();
}

#[tokio::test]
async fn recursive_watch_sees_the_subtree() {
    let (w, c, _) = pair("watch_recursive").await;
    c.create("/r", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let mut events = w
        .add_watch("/r", AddWatchMode::PersistentRecursive)
        .await
        .unwrap();
    c.create("/r/a", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    c.create("/r/a/b", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    c.set_data("/r/a/b", b"x", None).await.unwrap();
    c.delete("/r/a/b", None).await.unwrap();
    c.create("/outside", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    c.set_data("/r", b"top", None).await.unwrap();
    let mut got = Vec::new();
    for _ in 0..5 {
        let e = within("recursive event", events.next()).await.unwrap();
        got.push((e.event_type, e.path));
    }
    use EventType as E;
    assert_eq!(
        got,
        [
            (E::NodeCreated, "/r/a".to_string()),
            (E::NodeCreated, "/r/a/b".to_string()),
            (E::NodeDataChanged, "/r/a/b".to_string()),
            (E::NodeDeleted, "/r/a/b".to_string()),
            (E::NodeDataChanged, "/r".to_string()),
        ]
    );
    w.close().await.unwrap();
    assert!(matches!(events.next().await, Err(Error::Closed)));
    c.close().await.unwrap();
}

#[tokio::test]
async fn remove_watches_tells_the_watcher() {
    let (w, c, _) = pair("watch_remove").await;
    c.create("/x", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let (_, _, data) = w.get_data_watch("/x").await.unwrap();
    let (_, _, child) = w.get_children_watch("/x").await.unwrap();
    w.remove_watches("/x", WatcherType::Data).await.unwrap();
    assert_eq!(
        within("data removed", data).await.unwrap().event_type,
        EventType::DataWatchRemoved
    );
    assert!(matches!(
        w.remove_watches("/x", WatcherType::Data).await,
        Err(Error::Server(zk_client::ErrorCode::NoWatcher))
    ));
    w.remove_watches("/x", WatcherType::Children).await.unwrap();
    assert_eq!(
        within("child removed", child).await.unwrap().event_type,
        EventType::ChildWatchRemoved
    );
    w.close().await.unwrap();
    c.close().await.unwrap();
}

#[tokio::test]
async fn dropping_a_persistent_watcher_removes_the_server_watch() {
    let server = standalone().await;
    let (w, _c, root) = pair("watch_drop").await;
    let events = w
        .add_watch("/gone", AddWatchMode::Persistent)
        .await
        .unwrap();
    let watched = |out: &str| out.contains(&format!("{root}/gone"));
    let wchp = || {
        integration_tests::probe::four_letter_word(server.addr(), "wchp", Duration::from_secs(5))
    };
    assert!(
        watched(&wchp().await.unwrap()),
        "the server holds the watch"
    );
    drop(events);
    wait_unwatched(&w, server, &format!("{root}/gone")).await;
    w.close().await.unwrap();
}

#[tokio::test]
async fn dropping_a_one_shot_watcher_removes_the_server_watch() {
    let server = standalone().await;
    let (w, c, root) = pair("watch_drop_once").await;
    c.create("/once", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let (_, _, first) = w.get_data_watch("/once").await.unwrap();
    let (_, second) = w.exists_watch("/once").await.unwrap();
    let watched = |out: &str| out.contains(&format!("{root}/once"));
    let wchp = || {
        integration_tests::probe::four_letter_word(server.addr(), "wchp", Duration::from_secs(5))
    };
    assert!(watched(&wchp().await.unwrap()));
    drop(first);
    w.sync("/").await.unwrap();
    assert!(
        watched(&wchp().await.unwrap()),
        "the exists watcher still needs it"
    );
    drop(second);
    wait_unwatched(&w, server, &format!("{root}/once")).await;
    w.close().await.unwrap();
    c.close().await.unwrap();
}

#[tokio::test]
async fn close_ends_watchers_with_closed() {
    let (w, c, _) = pair("watch_close").await;
    c.create("/z", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let (_, _, watcher) = w.get_data_watch("/z").await.unwrap();
    let mut stream = w.add_watch("/z", AddWatchMode::Persistent).await.unwrap();
    w.close().await.unwrap();
    assert!(matches!(
        within("watcher", watcher).await,
        Err(Error::Closed)
    ));
    assert!(matches!(stream.next().await, Err(Error::Closed)));
    c.close().await.unwrap();
}
