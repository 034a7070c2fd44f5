//! zk-client against a real server: a dropped watcher never leaves its watch on the server,
//! whatever else is in flight or watching the same path. Each test has a server of its own
//! and counts every watch it holds (`mntr`'s `zk_watch_count`: data and child watches,
//! one-shot and persistent; 3.8's `wchp` lists data watches only).

use std::time::Duration;

use integration_tests::prelude::*;
use integration_tests::{fresh_standalone, Server};
use zk_client::{AddWatchMode, Client, CreateOptions, Error, EventType};

/// Waits (bounded) until the server holds `n` watches; a round trip on `client` first orders
/// the check after its requests. Returns the count seen last.
async fn settle(client: &Client, server: &Server, n: u64) -> u64 {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        client.sync("/").await.unwrap();
        let count = watch_count(server).await;
        if count == n || tokio::time::Instant::now() >= deadline {
            return count;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn setup() -> (Server, Client) {
    let server = fresh_standalone().await;
    let client = connect(&server.connect_string()).await;
    client
        .create("/n", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    assert_eq!(watch_count(&server).await, 0);
    (server, client)
}

#[tokio::test]
async fn a_watcher_dropped_before_its_reply_leaves_no_watch() {
    let (server, c) = setup().await;
    // The requests are sent when called; the futures (and their watchers) go at once.
    drop(c.get_data_watch("/n"));
    drop(c.get_children_watch("/n"));
    drop(c.add_watch("/n", AddWatchMode::PersistentRecursive));
    assert_eq!(
        settle(&c, &server, 0).await,
        0,
        "watches left on the server"
    );
}

#[tokio::test]
async fn an_exists_watcher_dropped_while_a_child_watch_is_being_set_leaves_no_data_watch() {
    let (server, c) = setup().await;
    let (_, exists) = c.exists_watch("/n").await.unwrap();
    let children = c.get_children_watch("/n");
    drop(exists);
    let (_, _, child_watcher) = within("get_children_watch", children).await.unwrap();
    assert_eq!(
        settle(&c, &server, 1).await,
        1,
        "only the child watch stays"
    );
    drop(child_watcher);
    assert_eq!(settle(&c, &server, 0).await, 0);
}

#[tokio::test]
async fn a_persistent_watch_dropped_beside_a_one_shot_goes_once_that_fires() {
    let (server, c) = setup().await;
    let (_, _, once) = c.get_data_watch("/n").await.unwrap();
    let persistent = c.add_watch("/n", AddWatchMode::Persistent).await.unwrap();
    drop(persistent);
    // The one-shot watcher still needs a watch: one stays.
    assert!(
        settle(&c, &server, 1).await >= 1,
        "the one-shot's watch was removed"
    );
    c.set_data("/n", b"x", None).await.unwrap();
    let event = within("one-shot event", once).await.unwrap();
    assert_eq!(event.event_type, EventType::NodeDataChanged);
    assert_eq!(
        settle(&c, &server, 0).await,
        0,
        "watches left on the server"
    );
}

#[tokio::test]
async fn a_one_shot_watch_beside_a_persistent_one_leaves_the_persistent_one_working() {
    let (server, c) = setup().await;
    let other = connect(&server.connect_string()).await;
    let mut persistent = c.add_watch("/n", AddWatchMode::Persistent).await.unwrap();
    // On 3.8 a one-shot watch set on the same path would replace the persistent one
    // (ZOOKEEPER-4466): after it fired, the persistent watcher would hear nothing.
    let (_, _, once) = c.get_data_watch("/n").await.unwrap();
    other.set_data("/n", b"1", None).await.unwrap();
    assert_eq!(
        within("one-shot", once).await.unwrap().event_type,
        EventType::NodeDataChanged
    );
    for value in [b"2", b"3"] {
        other.set_data("/n", value, None).await.unwrap();
    }
    let mut seen = Vec::new();
    while seen.len() < 3 {
        let event = tokio::time::timeout(LIMIT, persistent.next())
            .await
            .expect("persistent event")
            .unwrap();
        seen.push(event.event_type);
    }
    assert_eq!(seen, [EventType::NodeDataChanged; 3]);
    drop(persistent);
    assert_eq!(settle(&c, &server, 0).await, 0);
}

#[tokio::test]
async fn a_sequential_create_of_the_chroot_itself_is_refused() {
    let (server, c) = setup().await;
    let rooted = connect(&format!("{}/n", server.connect_string())).await;
    let result = rooted
        .create("/", b"", &CreateOptions::persistent_sequential())
        .await;
    assert!(
        matches!(result, Err(Error::InvalidPath { .. })),
        "{result:?}"
    );
    let siblings = c.get_children("/").await.unwrap();
    assert!(
        siblings.iter().all(|name| !name.starts_with("n0")),
        "a node was created beside the chroot: {siblings:?}"
    );
}
