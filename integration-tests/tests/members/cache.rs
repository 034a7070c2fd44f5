//! `zk_recipes::cache` against a real server: load, events, snapshot, views, one server
//! watch per cache, and resync after a reconnect and after a new session.

use std::time::Duration;

use integration_tests::kit::cache::{
    cache_tree, diff, replay, server_tree, snapshot_tree, wait_marker, wait_state, Recorder, Tree,
};
use integration_tests::prelude::*;
use integration_tests::proxy::{Cut, Mode, Proxy};
use integration_tests::{chroot, expire_session, fresh_standalone, probe, ZkTarget};
use zk_client::{Client, CreateOptions, SessionManager, SessionState};
use zk_recipes::cache::{Cache, CacheEvent, CacheState, ChildrenCache, NodeCache};

async fn connect(hosts: &str) -> Client {
    Client::builder(hosts)
        .session_timeout(Duration::from_secs(10))
        .connect()
        .await
        .expect("connect")
}

async fn create(client: &Client, path: &str, data: &str) {
    client
        .create_all(path, data.as_bytes(), &CreateOptions::persistent())
        .await
        .unwrap_or_else(|e| panic!("create {path}: {e}"));
}

/// `/app` with three levels: 5 × 4 × 3 nodes under it.
async fn make_tree(client: &Client) -> usize {
    create(client, "/app", "root").await;
    let mut n = 1;
    for a in 0..5 {
        create(client, &format!("/app/a{a}"), &format!("a{a}")).await;
        n += 1;
        for b in 0..4 {
            create(client, &format!("/app/a{a}/b{b}"), "").await;
            n += 1;
            for c in 0..3 {
                create(
                    client,
                    &format!("/app/a{a}/b{b}/c{c}"),
                    &format!("{a}{b}{c}"),
                )
                .await;
                n += 1;
            }
        }
    }
    n
}

#[tokio::test]
async fn the_load_reads_many_nodes_to_a_request_and_a_reply_too_large_alone() {
    // A server of its own: its packet count is this test's alone.
    let server = fresh_standalone().await;
    let root = chroot(&server, "cache_batched").await;
    let hosts = server.hosts(&root);
    let writer = connect(&hosts).await;
    let mut nodes = make_tree(&writer).await;
    // Five nodes of 900 kB: read together they make a reply over the 4 MiB frame limit.
    let big = vec![b'x'; 900_000];
    for i in 0..5 {
        writer
            .create_all(
                &format!("/app/big/n{i}"),
                &big,
                &CreateOptions::persistent(),
            )
            .await
            .unwrap();
    }
    nodes += 6;
    let reader = connect(&hosts).await;
    let session = reader.session_id();
    let mut states = reader.watch();
    let before = mntr_value(&server, "zk_packets_received").await;
    let cache = Cache::builder("/app").build(reader.clone()).unwrap();
    tokio::time::timeout(SOON, cache.ready())
        .await
        .unwrap()
        .unwrap();
    let requests = mntr_value(&server, "zk_packets_received").await - before;
    assert_eq!(cache.len(), nodes);
    assert_eq!(
        diff(
            &server_tree(&writer, "/app", None).await,
            &cache_tree(&cache)
        ),
        Vec::<String>::new()
    );
    assert_eq!(
        cache
            .get("/app/big/n4")
            .and_then(|n| n.data.map(|d| d.len())),
        Some(900_000)
    );
    // One read per node and one listing per parent would be 124 requests; batched, the load
    // takes a request or two per level, plus the too-large batch split in halves down to the
    // big nodes (14 measured).
    assert!(
        requests < 25,
        "{requests} requests to load {nodes} nodes (addWatch and the 4lw included)"
    );
    // The reply too large failed its request alone: the reader never lost its connection.
    assert_no_state_change(&mut states).await;
    assert_eq!(reader.session_id(), session);
    cache.close().await.unwrap();
}

#[tokio::test]
async fn a_node_too_large_for_the_reader_is_skipped_and_the_cache_gets_ready() {
    // A node whose data is over the reader's frame limit cannot be read alone either: as a
    // node it may not read (`NoAuth`), it is skipped, and the rest of the tree loads. It
    // never blocks the cache (each pass failing on it, again and again).
    let TestRoot { hosts, .. } = test_root("cache_too_large").await;
    let writer = connect(&hosts).await;
    let nodes = make_tree(&writer).await;
    writer
        .create(
            "/app/huge",
            &vec![b'x'; 100_000],
            &CreateOptions::persistent(),
        )
        .await
        .unwrap();
    let reader = Client::builder(&hosts)
        .session_timeout(Duration::from_secs(10))
        .max_frame_len(64 * 1024);
    let reader = within("connect", reader.connect()).await.unwrap();
    let cache = Cache::builder("/app").build(reader.clone()).unwrap();
    within("ready", cache.ready()).await.unwrap();
    assert!(cache.get("/app/huge").is_none());
    assert_eq!(cache.len(), nodes, "every other node");
    cache.close().await.unwrap();
}

#[tokio::test]
async fn load_then_events_match_the_server_with_one_server_watch() {
    // A server of its own: its watch count is this test's alone.
    let server = fresh_standalone().await;
    let root = chroot(&server, "cache_basic").await;
    let hosts = server.hosts(&root);
    let writer = connect(&hosts).await;
    let nodes = make_tree(&writer).await;
    let reader = connect(&hosts).await;
    let (cache, events) = Cache::builder("/app")
        .build_with_events(reader.clone())
        .unwrap();
    let (rec, _task) = Recorder::start(events);
    tokio::time::timeout(SOON, cache.ready())
        .await
        .unwrap()
        .unwrap();

    // The first load: one Created per node, then Initialized once.
    let first = rec.all();
    let created = first
        .iter()
        .filter(|e| matches!(e, CacheEvent::Created(_)))
        .count();
    assert_eq!(created, nodes);
    assert!(
        matches!(first.last(), Some(CacheEvent::Initialized)),
        "{first:?}"
    );
    assert_eq!(cache.len(), nodes);
    assert_eq!(
        diff(
            &server_tree(&writer, "/app", None).await,
            &cache_tree(&cache)
        ),
        Vec::<String>::new()
    );
    let kids: Vec<String> = cache
        .children("/app/a1")
        .iter()
        .map(|c| c.name().to_owned())
        .collect();
    assert_eq!(kids, ["b0", "b1", "b2", "b3"]);
    assert_eq!(
        cache.get("/app/a2/b3/c1").unwrap().data.as_deref(),
        Some(&b"231"[..])
    );
    assert!(cache.get("/app/a9").is_none());

    // One server watch for the whole subtree (the recursive one).
    probe::wait_total_watches(server.addr(), 1, SOON)
        .await
        .unwrap();

    // Changes: each is one event, old and new as Curator gives them.
    let from = rec.len();
    writer.set_data("/app/a0", b"new", None).await.unwrap();
    rec.wait_for(
        from,
        SOON,
        |e| matches!(e, CacheEvent::Changed { new, .. } if new.path == "/app/a0"),
    )
    .await;
    match &rec.since(from)[..] {
        [CacheEvent::Changed { old, new }] => {
            assert_eq!(old.data.as_deref(), Some(&b"a0"[..]));
            assert_eq!(new.data.as_deref(), Some(&b"new"[..]));
            assert_eq!(new.stat.version, old.stat.version + 1);
        }
        other => panic!("{other:?}"),
    }
    let from = rec.len();
    create(&writer, "/app/a0/b0/c0/d", "deep").await;
    writer.delete("/app/a4/b3/c2", None).await.unwrap();
    writer
        .set_data("/app/marker", b"1", None)
        .await
        .unwrap_err();
    create(&writer, "/app/marker", "1").await;
    wait_marker(&cache, "/app/marker", b"1", SOON).await;
    // The snapshot is updated before its event is sent: wait for the recorder to have it.
    rec.wait_for(from, SOON, |e| e.path() == Some("/app/marker"))
        .await;
    let batch = rec.since(from);
    let names: Vec<String> = batch
        .iter()
        .map(|e| match e {
            CacheEvent::Created(n) => format!("+{}", n.path),
            CacheEvent::Deleted(n) => format!("-{}", n.path),
            CacheEvent::Changed { new, .. } => format!("~{}", new.path),
            other => format!("{other:?}"),
        })
        .collect();
    // One event per change. The created node's event waits for its data, read by the cache
    // after the server announced the node; the writer's delete of an unrelated node can reach
    // the server before that read, so those two may come in either order. The marker, written
    // after both, comes last.
    let mut first_two = names.get(..2).map(<[String]>::to_vec).unwrap_or_default();
    first_two.sort();
    assert_eq!(
        (first_two, names.get(2..).map(<[String]>::to_vec)),
        (
            vec!["+/app/a0/b0/c0/d".to_owned(), "-/app/a4/b3/c2".to_owned()],
            Some(vec!["+/app/marker".to_owned()])
        ),
        "{names:?}"
    );
    assert_eq!(
        diff(
            &server_tree(&writer, "/app", None).await,
            &cache_tree(&cache)
        ),
        Vec::<String>::new()
    );

    // Deleting the root's subtree empties the cache; re-creating the root is seen.
    let from = rec.len();
    writer.delete_all("/app").await.unwrap();
    create(&writer, "/app", "again").await;
    rec.wait_for(
        from,
        SOON,
        |e| matches!(e, CacheEvent::Created(n) if n.path == "/app"),
    )
    .await;
    assert_eq!(cache.len(), 1);
    let deleted = rec
        .since(from)
        .iter()
        .filter(|e| matches!(e, CacheEvent::Deleted(_)))
        .count();
    assert_eq!(
        deleted,
        nodes + 1,
        "every node (and the marker) reported deleted once"
    );

    // Every event replayed over the empty start gives the snapshot.
    let mut replayed = Tree::new();
    assert_eq!(replay(&mut replayed, &rec.all()), Vec::<String>::new());
    assert_eq!(diff(&cache_tree(&cache), &replayed), Vec::<String>::new());

    cache.close().await.unwrap();
    assert_eq!(cache.state(), CacheState::Ended);
    probe::wait_total_watches(server.addr(), 0, SOON)
        .await
        .unwrap();
    // The snapshot is kept after close.
    assert_eq!(cache.len(), 1);
}

#[tokio::test]
async fn views_node_children_depth_and_data_filter() {
    let TestRoot { hosts, .. } = test_root("cache_views").await;
    let writer = connect(&hosts).await;
    let reader = connect(&hosts).await;

    // One node that does not exist yet.
    let node = NodeCache::new(reader.clone(), "/cfg").unwrap();
    let mut node_events = node.events();
    tokio::time::timeout(SOON, node.ready())
        .await
        .unwrap()
        .unwrap();
    assert!(node.get().is_none());
    create(&writer, "/cfg", "v1").await;
    create(&writer, "/cfg/child", "x").await;
    writer.set_data("/cfg", b"v2", None).await.unwrap();
    let mut seen = Vec::new();
    while seen.len() < 3 {
        let ev = tokio::time::timeout(SOON, node_events.next())
            .await
            .unwrap()
            .unwrap();
        seen.push(ev);
    }
    assert!(matches!(&seen[0], CacheEvent::Initialized), "{seen:?}");
    assert!(
        matches!(&seen[1], CacheEvent::Created(n) if n.path == "/cfg"),
        "{seen:?}"
    );
    assert!(
        matches!(&seen[2], CacheEvent::Changed { new, .. } if new.data.as_deref() == Some(&b"v2"[..])),
        "{seen:?}"
    );
    assert_eq!(
        node.cache().len(),
        1,
        "the child is not cached by a node view"
    );

    // Children of /group; grandchildren are ignored, the parent's events are not passed on.
    create(&writer, "/group/m1", "one").await;
    create(&writer, "/group/m2/deep", "").await;
    let group = ChildrenCache::new(reader.clone(), "/group").unwrap();
    tokio::time::timeout(SOON, group.ready())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(group.names(), ["m1", "m2"]);
    let mut group_events = group.events();
    writer.set_data("/group", b"parent", None).await.unwrap();
    create(&writer, "/group/m2/deeper", "").await;
    create(&writer, "/group/m3", "three").await;
    let ev = tokio::time::timeout(SOON, group_events.next())
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(&ev, CacheEvent::Created(n) if n.path == "/group/m3"),
        "{ev:?}"
    );
    assert_eq!(
        group.get("m3").unwrap().data.as_deref(),
        Some(&b"three"[..])
    );
    assert_eq!(
        group.parent().unwrap().data.as_deref(),
        Some(&b"parent"[..])
    );
    assert!(group.cache().get("/group/m2/deeper").is_none());
    writer.delete("/group/m1", None).await.unwrap();
    let ev = tokio::time::timeout(SOON, group_events.next())
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(&ev, CacheEvent::Deleted(n) if n.path == "/group/m1"),
        "{ev:?}"
    );
    assert_eq!(group.names(), ["m2", "m3"]);

    // A tree of depth 2 that keeps data only for the second level.
    create(&writer, "/t/x/y/z", "zz").await;
    writer.set_data("/t/x/y", b"yy", None).await.unwrap();
    writer.set_data("/t/x", b"xx", None).await.unwrap();
    let tree = Cache::builder("/t")
        .max_depth(2)
        .keep_data(|p| p.matches('/').count() == 3)
        .build(reader.clone())
        .unwrap();
    tokio::time::timeout(SOON, tree.ready())
        .await
        .unwrap()
        .unwrap();
    let paths: Vec<String> = tree.entries().into_iter().map(|c| c.path).collect();
    assert_eq!(paths, ["/t", "/t/x", "/t/x/y"]);
    assert_eq!(
        tree.get("/t/x").unwrap().data,
        None,
        "data not kept at depth 1"
    );
    assert_eq!(
        tree.get("/t/x").unwrap().stat.version,
        1,
        "the stat is kept"
    );
    assert_eq!(
        tree.get("/t/x/y").unwrap().data.as_deref(),
        Some(&b"yy"[..])
    );
    assert_eq!(
        diff(
            &server_tree(&writer, "/t", Some(2))
                .await
                .into_iter()
                .map(|(p, mut s)| {
                    if p.matches('/').count() != 3 {
                        s.data.clear();
                    }
                    (p, s)
                })
                .collect(),
            &cache_tree(&tree)
        ),
        Vec::<String>::new()
    );

    assert!(Cache::new(reader.clone(), "no-slash").is_err());
    assert!(Cache::new(reader.clone(), "/trailing/").is_err());
}

/// Changes made while the cache is cut off: a create, a delete, a data change, a node
/// deleted and re-created with the same version, and a node created and deleted again.
async fn change_while_away(writer: &Client) {
    writer.set_data("/app/a1", b"changed", None).await.unwrap();
    writer.delete("/app/a2/b0/c0", None).await.unwrap();
    create(writer, "/app/a3/new", "n").await;
    writer.delete_all("/app/a4/b1").await.unwrap();
    create(writer, "/app/a4/b1", "").await;
    create(writer, "/app/gone", "").await;
    writer.delete("/app/gone", None).await.unwrap();
}

fn describe(events: &[CacheEvent]) -> Vec<String> {
    let mut out: Vec<String> = events
        .iter()
        .map(|e| match e {
            CacheEvent::Created(n) => format!("+{}", n.path),
            CacheEvent::Deleted(n) => format!("-{}", n.path),
            CacheEvent::Changed { new, .. } => format!("~{}", new.path),
            other => format!("{other:?}"),
        })
        .collect();
    out.sort();
    out
}

/// What `change_while_away` changes, as events (sorted).
fn expected_differences() -> Vec<String> {
    let mut v: Vec<String> = [
        "~/app/a1",
        "-/app/a2/b0/c0",
        "+/app/a3/new",
        "-/app/a4/b1/c0",
        "-/app/a4/b1/c1",
        "-/app/a4/b1/c2",
        "-/app/a4/b1",
        "+/app/a4/b1",
        "+/app/marker",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.sort();
    v
}

#[tokio::test]
async fn reconnect_resyncs_and_reports_exactly_the_differences() {
    let TestRoot { server, root, .. } = test_root("cache_reconnect").await;
    let writer = connect(&server.hosts(&root)).await;
    make_tree(&writer).await;
    let proxy = Proxy::start(server.addr()).await;
    let reader = connect(&format!("{}{root}", proxy.connect_string())).await;
    let session = reader.session_id();
    let (cache, events) = Cache::builder("/app")
        .build_with_events(reader.clone())
        .unwrap();
    let (rec, _task) = Recorder::start(events);
    tokio::time::timeout(SOON, cache.ready())
        .await
        .unwrap()
        .unwrap();

    // Every transition of the cache's state, followed as a session's state is.
    let mut states = cache.watch();
    assert_eq!(states.current(), CacheState::Synced);

    // Cut the connection and keep it down while the writer changes the subtree.
    proxy.set_mode(Mode::Refuse);
    proxy.cut(Cut::Reset);
    wait_state(&cache, CacheState::Disconnected, SOON).await;
    let from = rec.len();
    let stale = cache_tree(&cache);
    change_while_away(&writer).await;
    create(&writer, "/app/marker", "1").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(rec.len(), from, "no events while disconnected");
    assert_eq!(
        cache_tree(&cache),
        stale,
        "the snapshot is kept (stale) while disconnected"
    );
    proxy.set_mode(Mode::Pass);
    wait_marker(&cache, "/app/marker", b"1", SOON).await;
    assert_eq!(reader.session_id(), session, "same session");
    tokio::time::timeout(SOON, cache.synced())
        .await
        .unwrap()
        .unwrap();
    let mut seen = Vec::new();
    while states.last() != CacheState::Synced || seen.is_empty() {
        seen.push(tokio::time::timeout(SOON, states.changed()).await.unwrap());
    }
    assert_eq!(
        seen,
        [
            CacheState::Disconnected,
            CacheState::Resyncing,
            CacheState::Synced
        ]
    );

    let replayed = assert_resynced(&rec, from, &writer, &cache).await;
    assert_eq!(diff(&cache_tree(&cache), &replayed), Vec::<String>::new());
    // Still one server watch on the reconnected session, and events flow again.
    let from = change_a0(&rec, &writer).await;
    assert_eq!(rec.since(from).len(), 1);
}

#[tokio::test]
async fn a_new_session_resyncs_through_the_session_manager() {
    let TestRoot { server, root, .. } = test_root("cache_expiry").await;
    let writer = connect(&server.hosts(&root)).await;
    make_tree(&writer).await;
    let proxy = Proxy::start(server.addr()).await;
    let manager = SessionManager::connect(
        Client::builder(&format!("{}{root}", proxy.connect_string()))
            .session_timeout(Duration::from_secs(4)),
    )
    .await
    .unwrap();
    let first = manager.client();
    let (cache, events) = Cache::builder("/app")
        .build_managed_with_events(&manager)
        .unwrap();
    let (rec, _task) = Recorder::start(events);
    tokio::time::timeout(SOON, cache.ready())
        .await
        .unwrap()
        .unwrap();

    // Partition the cache, change the subtree, expire its session, heal.
    proxy.set_mode(Mode::Blackhole);
    let from = rec.len();
    change_while_away(&writer).await;
    create(&writer, "/app/marker", "1").await;
    expire_session(server.addr(), first.session_id(), passwd(&first))
        .await
        .unwrap();
    let mut states = first.watch();
    proxy.set_mode(Mode::Pass);
    let end = tokio::time::timeout(SOON, states.wait_for(SessionState::is_terminal))
        .await
        .unwrap();
    assert_eq!(end, SessionState::Expired);
    wait_marker(&cache, "/app/marker", b"1", SOON).await;
    assert_ne!(
        manager.client().session_id(),
        first.session_id(),
        "a new session"
    );

    assert_resynced(&rec, from, &writer, &cache).await;
    change_a0(&rec, &writer).await;
    // A snapshot and a stream taken together replay to the later snapshot.
    let (snap, stream) = cache.snapshot_and_events();
    let (later, _t) = Recorder::start(stream);
    writer.set_data("/app/marker", b"2", None).await.unwrap();
    wait_marker(&cache, "/app/marker", b"2", SOON).await;
    later
        .wait_for(0, SOON, |e| e.path() == Some("/app/marker"))
        .await;
    let mut from_snap = snapshot_tree(&snap);
    assert_eq!(replay(&mut from_snap, &later.all()), Vec::<String>::new());
    assert_eq!(diff(&cache_tree(&cache), &from_snap), Vec::<String>::new());
    manager.close().await.unwrap();
}

/// After a resync: the events since `from` are exactly the expected differences, the cache
/// equals a fresh read of the server, and replaying every event recorded applies cleanly;
/// returns the replayed tree.
async fn assert_resynced(rec: &Recorder, from: usize, writer: &Client, cache: &Cache) -> Tree {
    assert_eq!(describe(&rec.since(from)), expected_differences());
    assert_eq!(
        diff(&server_tree(writer, "/app", None).await, &cache_tree(cache)),
        Vec::<String>::new()
    );
    let mut replayed = Tree::new();
    assert_eq!(replay(&mut replayed, &rec.all()), Vec::<String>::new());
    replayed
}

/// Changes `/app/a0` and waits for the cache's `Changed` event; returns the event count
/// before the change.
async fn change_a0(rec: &Recorder, writer: &Client) -> usize {
    let from = rec.len();
    writer.set_data("/app/a0", b"after", None).await.unwrap();
    rec.wait_for(
        from,
        SOON,
        |e| matches!(e, CacheEvent::Changed { new, .. } if new.path == "/app/a0"),
    )
    .await;
    from
}

fn passwd(client: &Client) -> [u8; 16] {
    client.session_password()[..]
        .try_into()
        .expect("16-byte password")
}

#[tokio::test]
async fn ready_says_why_a_cache_ended_before_its_first_load() {
    // A partition from before the cache's first read until its session expired: `ready()`
    // must say the session expired, not that the cache was closed.
    let TestRoot { server, root, .. } = test_root("cache_ready_expired").await;
    let writer = connect(&server.hosts(&root)).await;
    make_tree(&writer).await;
    let proxy = Proxy::start(server.addr()).await;
    let reader = connect(&format!("{}{root}", proxy.connect_string())).await;
    proxy.set_mode(Mode::Blackhole);
    let cache = Cache::builder("/app").build(reader.clone()).unwrap();
    expire_client(server.addr(), &reader).await;
    assert!(!cache.is_ready(), "nothing was read through the partition");
    proxy.set_mode(Mode::Pass);
    let ready = within("ready", cache.ready()).await;
    assert!(
        matches!(
            ready,
            Err(zk_recipes::Error::Client(zk_client::Error::SessionExpired))
        ),
        "{ready:?}"
    );
}
