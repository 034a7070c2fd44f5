//! Membership under faults: service registrations (`ServiceDiscovery`, DYNAMIC and
//! DYNAMIC_SEQUENTIAL) and group members (`GroupMember`, watched by a Curator 5.4
//! `GroupMember` in a Java process) of several members through forced expiries, deletions by an operator
//! and partitions longer than the session (each member behind its own proxy). Checked all
//! along: never two nodes for one instance id. At the end: every member registered again on
//! its current session, and nothing left (nor coming back) after close.
//!
//! A `Cache` of the whole tree, on a `SessionManager` behind a proxy of its own that is cut and
//! partitioned too, follows all of it. Its events are replayed over its first snapshot while
//! the faults go on (`Replay`: no live node reported deleted, no node re-inserted, no child
//! without its parent), and both its snapshot and the replay equal a fresh read once the
//! faults are over (issue 29).
//!
//! `MEMBERSHIP_SOAK_SECS` (default 20) sets how long faults are injected.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use integration_tests::kit::cache::{cache_tree, diff, server_tree, Recorder, Replay, Tree};
use integration_tests::prelude::*;
use integration_tests::proxy::{Cut, Mode};
use integration_tests::{expire_session, Proxy, ZkTarget};
use rand::Rng;
use zk_client::{Client, SessionManager};
use zk_recipes::cache::Cache;
use zk_recipes::discovery::{ServiceDiscovery, ServiceInstance, ServiceType};
use zk_recipes::group::GroupMember;

const SESSION: Duration = Duration::from_secs(2);
const MEMBERS: usize = 4;
const SERVICE: &str = "/services/web";

fn soak_secs() -> u64 {
    std::env::var("MEMBERSHIP_SOAK_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20)
}

struct Member {
    proxy: Proxy,
    manager: SessionManager,
    discovery: ServiceDiscovery,
    instance: ServiceInstance,
    member: GroupMember,
}

const GROUP: &str = "/groups/soak";

/// Instance id → node names holding it, read from the server.
async fn registrations(admin: &Client) -> BTreeMap<String, Vec<(String, i64)>> {
    let mut by_id: BTreeMap<String, Vec<(String, i64)>> = BTreeMap::new();
    for name in children(admin, SERVICE).await {
        if let Ok((data, stat)) = admin.get_data(&format!("{SERVICE}/{name}")).await {
            let id = ServiceInstance::from_json(&data)
                .map(|i| i.id)
                .unwrap_or_else(|_| format!("unparsable:{name}"));
            by_id
                .entry(id)
                .or_default()
                .push((name, stat.ephemeral_owner));
        }
    }
    by_id
}

#[tokio::test]
async fn registrations_survive_expiries_deletions_and_partitions_without_duplicates() {
    let TestRoot { server, root, .. } = test_root("membership_soak").await;
    let admin = connect(&server.hosts(&root)).await;
    let mut members = Vec::new();
    for i in 0..MEMBERS {
        let proxy = Proxy::start(server.addr()).await;
        let builder =
            Client::builder(&format!("{}{root}", proxy.connect_string())).session_timeout(SESSION);
        let manager = SessionManager::builder(builder)
            .renew_backoff(Duration::from_millis(50), Duration::from_millis(500))
            // Forced expiries come every few seconds here: renew fast anyway (the default
            // pacing would wait up to 30 s after sessions that die young).
            .renew_pacing(
                Duration::from_millis(50),
                Duration::from_millis(500),
                Duration::from_secs(60),
            )
            .renew_attempts(10_000)
            .connect()
            .await
            .unwrap();
        let discovery = ServiceDiscovery::new_managed(&manager, "/services").unwrap();
        let mut instance = ServiceInstance::new("web", "10.0.0.1", 8000 + i as i32);
        instance.id = format!("m-{i}");
        if i == MEMBERS - 1 {
            instance.service_type = ServiceType::DynamicSequential;
        }
        discovery.register(&instance).await.unwrap();
        let member = GroupMember::new_managed(&manager, GROUP, &format!("m-{i}"), Some(b"p"))
            .await
            .unwrap();
        members.push(Member {
            proxy,
            manager,
            discovery,
            instance,
            member,
        });
    }
    let members = Arc::new(members);
    let mut java = JavaPeer::start(
        "CuratorGroup.java",
        &[&server.hosts(&root), GROUP, "java", "j"],
        false,
    )
    .await;
    let everyone = "java=j,m-0=p,m-1=p,m-2=p,m-3=p";

    // The cache of the whole tree, behind a proxy of its own.
    let cache_proxy = Proxy::start(server.addr()).await;
    let cache_manager = SessionManager::builder(
        Client::builder(&format!("{}{root}", cache_proxy.connect_string()))
            .session_timeout(SESSION * 2),
    )
    .renew_backoff(Duration::from_millis(50), Duration::from_millis(500))
    .connect()
    .await
    .unwrap();
    let (cache, events) = Cache::builder("/")
        .event_buffer(1 << 20)
        .build_managed_with_events(&cache_manager)
        .unwrap();
    let (rec, recorder) = Recorder::start(events);
    within("the cache's first load", cache.ready())
        .await
        .unwrap();
    let mut view = Replay::new(Tree::new());
    let mut cache_faults = 0;

    // The sampler: never two nodes for one id.
    let stop = Arc::new(AtomicBool::new(false));
    let duplicates = Arc::new(AtomicUsize::new(0));
    let samples = Arc::new(AtomicUsize::new(0));
    let sampler = {
        let (admin, stop, duplicates, samples) = (
            admin.clone(),
            stop.clone(),
            duplicates.clone(),
            samples.clone(),
        );
        tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                for (id, nodes) in registrations(&admin).await {
                    if nodes.len() > 1 {
                        eprintln!("two nodes for {id}: {nodes:?}");
                        duplicates.fetch_add(1, Ordering::SeqCst);
                    }
                }
                samples.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };

    let (mut expiries, mut deletions, mut partitions) = (0, 0, 0);
    let end = Instant::now() + Duration::from_secs(soak_secs());
    while Instant::now() < end {
        let (i, kind, pause) = {
            let mut rng = rand::thread_rng();
            (
                rng.gen_range(0..MEMBERS),
                rng.gen_range(0..4),
                rng.gen_range(200..800),
            )
        };
        let member = &members[i];
        match kind {
            0 => {
                let client = member.manager.client();
                let passwd: [u8; 16] = client.session_password()[..].try_into().unwrap_or([0; 16]);
                let _ = expire_session(server.addr(), client.session_id(), passwd).await;
                expiries += 1;
            }
            1 => {
                for (id, nodes) in registrations(&admin).await {
                    if id == member.instance.id {
                        for (name, _) in nodes {
                            let _ = admin.delete(&format!("{SERVICE}/{name}"), None).await;
                        }
                    }
                }
                deletions += 1;
            }
            3 => {
                // The cache's connection: reset, or a partition shorter than its session.
                if pause % 2 == 0 {
                    cache_proxy.cut(Cut::Reset);
                } else {
                    cache_proxy.set_mode(Mode::Blackhole);
                    tokio::time::sleep(Duration::from_millis(1500)).await;
                    cache_proxy.set_mode(Mode::Pass);
                }
                cache_faults += 1;
            }
            _ => {
                // Longer than the session: the server expires it behind the partition.
                member.proxy.set_mode(Mode::Blackhole);
                tokio::time::sleep(SESSION + Duration::from_millis(800)).await;
                member.proxy.set_mode(Mode::Pass);
                partitions += 1;
            }
        }
        tokio::time::sleep(Duration::from_millis(pause)).await;
        // The consumer's view, event by event, while the faults go on.
        let problems = view.apply(&rec.since(view.applied()));
        assert_eq!(problems, Vec::<String>::new(), "the cache's events");
    }

    // Faults over: every member is registered again, on its current session.
    let healed = Instant::now();
    eventually(
        "every member registered on its current session",
        Duration::from_secs(30),
        || async {
            let now = registrations(&admin).await;
            members
                .iter()
                .all(|m| {
                    now.get(&m.instance.id).is_some_and(|nodes| {
                        nodes.len() == 1 && nodes[0].1 == m.manager.client().session_id()
                    })
                })
                .then_some(())
        },
    )
    .await;
    let recovered_in = healed.elapsed();
    // Java's GroupMember and each of ours list the whole group again.
    let end_java = Instant::now() + Duration::from_secs(30);
    loop {
        let answer = java.ask("members").await;
        if answer == format!("MEMBERS {everyone}") {
            break;
        }
        assert!(Instant::now() < end_java, "java lists {answer}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for m in members.iter() {
        eventually(
            "our cache lists everyone",
            Duration::from_secs(30),
            || async { (m.member.current_members().len() == MEMBERS + 1).then_some(()) },
        )
        .await;
    }
    // The cache and its replayed events equal a fresh read of the settled tree.
    let settled_by = Instant::now() + SOON;
    let settled = loop {
        let server_now = server_tree(&admin, "/", None).await;
        let problems = view.apply(&rec.since(view.applied()));
        assert_eq!(problems, Vec::<String>::new(), "the cache's events");
        let (of_cache, of_events) = (
            diff(&server_now, &cache_tree(&cache)),
            diff(&server_now, &view.tree),
        );
        if of_cache.is_empty() && of_events.is_empty() {
            break server_now;
        }
        assert!(
            Instant::now() < settled_by,
            "after {SOON:?}: the cache differs from the server by {of_cache:?}, its replayed events by {of_events:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    println!(
        "membership soak cache: {} events, {} nodes, {cache_faults} faults of its own, {} sessions",
        rec.len(),
        settled.len(),
        cache_manager.current().number
    );
    cache.close().await.unwrap();
    within("the cache's event stream ends", recorder)
        .await
        .unwrap();
    cache_manager.close().await.unwrap();
    stop.store(true, Ordering::SeqCst);
    sampler.await.unwrap();
    let dup = duplicates.load(Ordering::SeqCst);
    println!(
        "membership soak: {}s, {expiries} expiries, {deletions} deletions, {partitions} partitions, \
         {} samples, {dup} duplicate sightings, all re-registered {recovered_in:?} after the last fault",
        soak_secs(),
        samples.load(Ordering::SeqCst),
    );
    assert_eq!(dup, 0, "two nodes for one id were seen");

    // Close: nothing left, and nothing comes back.
    let members = Arc::try_unwrap(members).unwrap_or_else(|_| panic!("members still shared"));
    for m in &members {
        m.discovery.close().await.unwrap();
    }
    let mut managers = Vec::new();
    for m in members {
        m.member.close().await.unwrap();
        managers.push(m.manager);
    }
    let end_java = Instant::now() + Duration::from_secs(30);
    loop {
        let answer = java.ask("members").await;
        if answer == "MEMBERS java=j" {
            break;
        }
        assert!(Instant::now() < end_java, "java still lists {answer}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    java.close().await;
    assert_eq!(children(&admin, GROUP).await.len(), 0);
    assert!(children(&admin, SERVICE).await.is_empty());
    tokio::time::sleep(SESSION * 2).await;
    assert!(
        children(&admin, SERVICE).await.is_empty(),
        "a stale registration came back after close"
    );
    for m in managers {
        m.close().await.unwrap();
    }
}
