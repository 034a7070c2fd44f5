//! A cache with the compression option (`CacheBuilder::compressed`) against a real server
//! and Curator 5.4 writing with `compressed()` (`java/CuratorCompression.java`): snapshots
//! and events carry the decompressed data; a node that does not decompress is reported
//! (no data, `Cache::data_error`), and the cache and the other nodes go on.

use integration_tests::prelude::*;
use integration_tests::{chroot, standalone, ZkTarget};
use zk_client::compression::{Compression, Gzip};
use zk_client::CreateOptions;
use zk_recipes::cache::{Cache, CacheEvent, CacheEvents, CacheState};

fn hex(data: &[u8]) -> String {
    data.iter().map(|b| format!("{b:02x}")).collect()
}

/// The next event about a node (skipping `Initialized`).
async fn next_node_event(events: &mut CacheEvents) -> CacheEvent {
    within("event", async {
        loop {
            match events.next().await {
                Some(CacheEvent::Initialized) => {}
                Some(event) => return event,
                None => panic!("the cache ended"),
            }
        }
    })
    .await
}

#[tokio::test]
async fn a_compressed_cache_reads_curators_gzip_and_reports_bad_nodes() {
    let server = standalone().await;
    let root = chroot(server, "cache_gzip").await;
    let hosts = server.hosts(&root);
    let client = connect(&hosts).await;
    let mut java = JavaPeer::start("CuratorCompression.java", &[&hosts], false).await;
    assert_eq!(
        java.ask(&format!("create /z/a {}", hex(b"alpha"))).await,
        "CREATED"
    );
    let (cache, mut events) = Cache::builder("/z")
        .compressed(Gzip::new())
        .build_with_events(client.clone())
        .unwrap();
    within("ready", cache.ready()).await.unwrap();
    let mut created = Vec::new();
    for _ in 0..2 {
        if let CacheEvent::Created(node) = next_node_event(&mut events).await {
            created.push((node.path, node.data));
        }
    }
    created.sort();
    assert_eq!(
        created,
        vec![
            ("/z".to_owned(), Some(zk_client::Bytes::new())),
            (
                "/z/a".to_owned(),
                Some(zk_client::Bytes::from_static(b"alpha"))
            )
        ],
        "the first load's events, decompressed (the empty parent passes through)"
    );
    assert_eq!(
        cache.get("/z/a").unwrap().data.as_deref(),
        Some(&b"alpha"[..])
    );

    // Curator sets it again: Changed, both sides decompressed.
    assert_eq!(java.ask(&format!("set /z/a {}", hex(b"beta"))).await, "SET");
    match next_node_event(&mut events).await {
        CacheEvent::Changed { old, new } => {
            assert_eq!(old.data.as_deref(), Some(&b"alpha"[..]));
            assert_eq!(new.data.as_deref(), Some(&b"beta"[..]));
        }
        other => panic!("{other:?}"),
    }

    // A node that starts like gzip but is cut short: no data, and the reason is reported;
    // the cache and the other nodes are unaffected.
    let mut truncated = Gzip::new().compress(b"will be cut").unwrap();
    truncated.truncate(12);
    client
        .create("/z/bad", &truncated, &CreateOptions::persistent())
        .await
        .unwrap();
    match next_node_event(&mut events).await {
        CacheEvent::Created(node) => assert_eq!((node.path.as_str(), node.data), ("/z/bad", None)),
        other => panic!("{other:?}"),
    }
    let error = cache.data_error("/z/bad");
    assert!(
        matches!(
            error,
            Some(zk_recipes::Error::Client(zk_client::Error::Compression(_)))
        ),
        "{error:?}"
    );
    assert!(cache.data_error("/z/a").is_none());
    // Plain data passes through (detection on, the default).
    client
        .create("/z/plain", b"{\"plain\":1}", &CreateOptions::persistent())
        .await
        .unwrap();
    match next_node_event(&mut events).await {
        CacheEvent::Created(node) => {
            assert_eq!(node.data.as_deref(), Some(&b"{\"plain\":1}"[..]))
        }
        other => panic!("{other:?}"),
    }
    let entries: Vec<_> = cache
        .entries()
        .into_iter()
        .map(|n| (n.path, n.data.map(|d| d.to_vec())))
        .collect();
    assert_eq!(
        entries,
        vec![
            ("/z".to_owned(), Some(Vec::new())),
            ("/z/a".to_owned(), Some(b"beta".to_vec())),
            ("/z/bad".to_owned(), None),
            ("/z/plain".to_owned(), Some(b"{\"plain\":1}".to_vec())),
        ]
    );
    assert_eq!(cache.state(), CacheState::Synced);
    // The snapshot itself keeps the stored bytes: a cache without the option sees gzip.
    let raw = Cache::new(client.clone(), "/z").unwrap();
    within("raw ready", raw.ready()).await.unwrap();
    let stored = raw.get("/z/a").unwrap().data.unwrap();
    assert!(zk_client::compression::looks_like_gzip(&stored));
    raw.close().await.unwrap();
    java.close().await;
    cache.close().await.unwrap();
}
