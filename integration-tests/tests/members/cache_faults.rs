//! The cache under faults on a 3-member ensemble while writers change the subtree: member
//! kills, quorum loss, proxy cuts, partitions shorter than the session timeout, a slow
//! network during the writes, and one session expiry. After every change batch the cache must
//! equal a fresh recursive read (0 differences in every round), and so must the cache's events
//! replayed over its first snapshot, checked event by event (no live node reported deleted,
//! no node without its parent: `Replay`); and a
//! Java `CuratorCache` (Debian's Curator 5.4) on the same subtree must agree with ours and the
//! server on every node it has (it can miss a subtree for good after a connection loss, a
//! Curator bug described at the check; such misses are reported, not failed on).

use std::time::Duration;

use integration_tests::kit::cache::curator::JavaCache;
use integration_tests::kit::cache::{
    cache_tree, diff, replay, server_tree, wait_marker, Recorder, Replay, Tree,
};
use integration_tests::prelude::*;
use integration_tests::proxy::{Cut, Mode, Proxy};
use integration_tests::{chroot, expire_session, Ensemble, ZkTarget};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::time::{timeout, Instant};
use zk_client::{Client, CreateOptions, Error, SessionManager, SessionState};
use zk_recipes::cache::{Cache, CacheEvent};

/// Rounds of the fault test (`CACHE_FAULT_ROUNDS`, default 12: every fault kind twice, the
/// expiry once; at least 6). The long run is opt-in, e.g. `CACHE_FAULT_ROUNDS=150` (23 min).
fn rounds() -> usize {
    std::env::var("CACHE_FAULT_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12)
        .max(6)
}

fn random_path(rng: &mut StdRng) -> String {
    let depth = rng.gen_range(1..=3);
    let mut p = "/app".to_owned();
    for level in 0..depth {
        p.push_str(&format!(
            "/{}{}",
            ["n", "m", "k"][level],
            rng.gen_range(0..4)
        ));
    }
    p
}

/// Runs `op` until it is not a connection loss (bounded): a write lost with its reply may or
/// may not have been applied, which is fine, the comparison reads the server. A writer whose
/// session expired (a loaded machine during a quorum loss) gets `SessionExpired` back: the
/// batch skips the rest of its writes and the next batch takes the manager's next session.
async fn persist<T, F: std::future::Future<Output = zk_client::Result<T>>>(
    mut op: impl FnMut() -> F,
) -> zk_client::Result<T> {
    let end = Instant::now() + LIMIT;
    loop {
        match op().await {
            Err(e) if e.is_retryable() && Instant::now() < end => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => return other,
        }
    }
}

/// One batch of random writes: creates, data changes, deletes (leaves and subtrees).
async fn write_batch(writer: &Client, rng: &mut StdRng, ops: usize) -> usize {
    let mut applied = 0;
    for _ in 0..ops {
        let path = random_path(rng);
        let data = format!("v{}", rng.gen_range(0..1000));
        let result = match rng.gen_range(0..10) {
            0..=3 => {
                persist(|| writer.create_all(&path, data.as_bytes(), &CreateOptions::persistent()))
                    .await
                    .map(drop)
            }
            4..=6 => persist(|| writer.set_data(&path, data.as_bytes(), None))
                .await
                .map(drop),
            7..=8 => persist(|| writer.delete(&path, None)).await,
            _ => persist(|| writer.delete_all(&path)).await,
        };
        match result {
            Ok(()) => applied += 1,
            Err(Error::NoNode | Error::NodeExists | Error::NotEmpty | Error::SessionExpired) => {}
            Err(e) => panic!("write {path}: {e}"),
        }
    }
    applied
}

/// A load: `LOAD` nodes created under `/app/load/<round>` on the wire at once, and the
/// previous load's subtree deleted (the cache sees a burst of events while it reads).
const LOAD: usize = 300;
/// Rounds of set + delete + create of one node in a load.
const CHURN: usize = 40;

async fn load(writer: &Client, round: usize) -> usize {
    let parent = format!("/app/load/{round}");
    persist(|| writer.create_all(&parent, b"", &CreateOptions::persistent()))
        .await
        .unwrap();
    let creates: Vec<_> = (0..LOAD)
        .map(|i| {
            writer.create(
                &format!("{parent}/l{i}"),
                b"x",
                &CreateOptions::persistent(),
            )
        })
        .collect();
    let mut applied = 0;
    for c in creates {
        match c.await {
            Ok(_) => applied += 1,
            Err(e) if e.is_retryable() || matches!(e, Error::SessionExpired) => {}
            Err(e) => panic!("load create: {e}"),
        }
    }
    // Churn: a data change, a delete and a re-create of one node on the wire at once, so the
    // cache's read for the change is answered after the delete and the create were sent to it
    // (the order issue 29's cache got wrong).
    let churn = "/app/load/churn";
    for i in 0..CHURN {
        let v = format!("c{round}.{i}");
        let set = writer.set_data(churn, v.as_bytes(), None);
        let delete = writer.delete(churn, None);
        let create = writer.create(churn, v.as_bytes(), &CreateOptions::persistent());
        for r in [set.await.map(drop), delete.await, create.await.map(drop)] {
            match r {
                Ok(()) => applied += 1,
                Err(Error::NoNode | Error::NodeExists | Error::SessionExpired) => {}
                Err(e) if e.is_retryable() => {}
                Err(e) => panic!("churn: {e}"),
            }
        }
    }
    if let Some(previous) = round.checked_sub(6) {
        match persist(|| writer.delete_all(&format!("/app/load/{previous}"))).await {
            Ok(()) | Err(Error::NoNode | Error::SessionExpired) => {}
            Err(e) => panic!("load delete: {e}"),
        }
    }
    applied
}

#[tokio::test]
async fn cache_equals_the_server_after_every_batch_under_faults_and_matches_curator() {
    let ens = Ensemble::launch(3).await;
    let root = chroot(&ens, "cache_faults").await;
    // The writers' sessions: the next one after an expiry (see `persist`).
    let writers = SessionManager::connect(
        Client::builder(&ens.hosts(&root)).session_timeout(Duration::from_secs(10)),
    )
    .await
    .unwrap();
    let writer = writers.client();
    let mut rng = StdRng::seed_from_u64(
        std::env::var("CACHE_FAULT_SEED")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(20),
    );
    writer
        .create("/app", b"root", &CreateOptions::persistent())
        .await
        .unwrap();
    write_batch(&writer, &mut rng, 60).await;
    writer
        .create("/app/marker", b"0", &CreateOptions::persistent())
        .await
        .unwrap();

    // The cache's sessions go through one proxy per member.
    let mut proxies = Vec::new();
    for i in 0..ens.len() {
        proxies.push(Proxy::start(ens.addr(i)).await);
    }
    let hosts: Vec<String> = proxies.iter().map(|p| p.connect_string()).collect();
    let manager = SessionManager::connect(
        Client::builder(&format!("{}{root}", hosts.join(",")))
            .session_timeout(Duration::from_secs(4)),
    )
    .await
    .unwrap();
    let (cache, events) = Cache::builder("/app")
        .event_buffer(1 << 20)
        .build_managed_with_events(&manager)
        .unwrap();
    let (rec, task) = Recorder::start(events);
    timeout(LIMIT, cache.ready()).await.unwrap().unwrap();
    // The consumer's view: the events replayed over the empty start, checked at every round.
    let mut view = Replay::new(Tree::new());
    // The round at which Curator's cache stopped following, if it did.
    let mut curator_stalled = None;
    let java = timeout(LIMIT, JavaCache::start(&ens.hosts(&root), "/app"))
        .await
        .unwrap();
    let mut java = java;

    let rounds = rounds();
    let mut differences = 0;
    let mut known_missed = std::collections::BTreeSet::new();
    let mut writes = 0;
    let mut expired = false;
    let started = Instant::now();
    for round in 1..=rounds {
        // 0 kill, 1 cut, 2 partition, 3 slow network, 4 load, 5 quorum loss, 6 expiry (once).
        let fault = if round == rounds / 2 { 6 } else { round % 6 };
        let mut killed = Vec::new();
        match fault {
            0 => {
                let i = round % ens.len();
                ens.kill(i).await;
                killed.push(i);
            }
            5 => {
                // Quorum loss: two of three members down; the writes below wait for it back.
                for i in [round % ens.len(), (round + 1) % ens.len()] {
                    ens.kill(i).await;
                    killed.push(i);
                }
            }
            3 => {
                // A slow network while the batch is written.
                for p in &proxies {
                    p.set_mode(Mode::Delay(Duration::from_millis(40)));
                }
            }
            1 => {
                for p in &proxies {
                    p.cut(Cut::Reset);
                }
            }
            2 => {
                for p in &proxies {
                    p.set_mode(Mode::Blackhole);
                }
            }
            6 => {
                // Expire the cache's session while it is partitioned away.
                for p in &proxies {
                    p.set_mode(Mode::Blackhole);
                }
                let current = manager.client();
                let passwd: [u8; 16] = current.session_password()[..].try_into().unwrap();
                let mut done = false;
                for i in 0..ens.len() {
                    if expire_session(ens.addr(i), current.session_id(), passwd)
                        .await
                        .is_ok()
                    {
                        done = true;
                        break;
                    }
                }
                assert!(done, "could not expire the cache's session");
                expired = true;
            }
            _ => {}
        }
        if fault == 5 {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            for &i in &killed {
                ens.start(i).await;
            }
            ens.wait_quorum().await;
            killed.clear();
        }
        let writer = writers.client();
        writes += write_batch(&writer, &mut rng, 25).await;
        if fault == 4 {
            writes += load(&writer, round).await;
        }
        if fault == 2 {
            // Longer than the client's read timeout (2/3 of 4 s), shorter than the session.
            tokio::time::sleep(Duration::from_millis(3000)).await;
        }
        for p in &proxies {
            p.set_mode(Mode::Pass);
        }
        for &i in &killed {
            ens.start(i).await;
            ens.wait_quorum().await;
        }
        let mark = round.to_string();
        let marked_by = Instant::now() + LIMIT;
        let writer = loop {
            let writer = writers.client();
            match persist(|| writer.set_data("/app/marker", mark.as_bytes(), None)).await {
                Ok(_) => break writer,
                Err(Error::SessionExpired) if Instant::now() < marked_by => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => panic!("marker {mark}: {e}"),
            }
        };
        wait_marker(&cache, "/app/marker", mark.as_bytes(), LIMIT).await;
        let server = server_tree(&writer, "/app", None).await;
        let d = diff(&server, &cache_tree(&cache));
        if !d.is_empty() {
            eprintln!(
                "round {round} (fault {fault}): {} differences: {d:#?}",
                d.len()
            );
        }
        differences += d.len();
        // The events up to the marker, replayed, give the same tree (they may reach the
        // recorder a moment after the snapshot changed).
        let replayed_by = Instant::now() + Duration::from_secs(10);
        loop {
            let problems = view.apply(&rec.since(view.applied()));
            assert_eq!(
                problems,
                Vec::<String>::new(),
                "round {round} (fault {fault})"
            );
            if diff(&server, &view.tree).is_empty() || Instant::now() > replayed_by {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(
            diff(&server, &view.tree),
            Vec::<String>::new(),
            "round {round} (fault {fault}): the events replayed differ from the server"
        );
        if round % 10 == 0 {
            println!(
                "cache faults: round {round} of {rounds}, {} events, {:.0?}",
                rec.len(),
                started.elapsed()
            );
        }
        if (round % 6 == 0 || round == rounds) && curator_stalled.is_none() {
            // Curator refreshes the nodes it finds through cversion in the background, so
            // its marker can arrive before the rest of a resync: take its snapshot again
            // until it has caught up, within SOON (ours is checked at the marker, above).
            // Nodes it already missed for good (below) are not waited for again.
            let caught_up = tokio::time::Instant::now() + SOON;
            // Curator 5.4's cache can also stall for good (a long run saw its marker never
            // arrive within 120 s, round after round, while ours and the server moved on):
            // reported, and Curator is not compared again.
            let Some(mut theirs) = java.dump_at("/app/marker", &mark).await else {
                eprintln!(
                    "round {round}: Curator's cache never reached the marker; not compared again"
                );
                curator_stalled = Some(round);
                continue;
            };
            let behind = |theirs: &Tree| {
                diff(&server, theirs)
                    .iter()
                    .any(|d| !known_missed.contains(d))
            };
            while behind(&theirs) && tokio::time::Instant::now() < caught_up {
                tokio::time::sleep(Duration::from_millis(200)).await;
                match java.dump_at("/app/marker", &mark).await {
                    Some(t) => theirs = t,
                    None => break,
                }
            }
            // Curator 5.4's cache can lose a subtree for good: a getChildren it issues after
            // a node's getData, lost to a connection loss, is never retried, and its rebuild
            // after the reconnect skips the node because the stored cversion is already the
            // new one (`CuratorCacheImpl.checkChildrenChanged`). A CI run saw it (round 24,
            // a member killed: `/app/n2/m3` and its child missing for the whole minute).
            // That is Curator's bug: nodes missing from its cache are reported, not failed
            // on. Anything else (a node the server does not have, other data or stat) fails.
            let (missed, wrong): (Vec<String>, Vec<String>) = diff(&server, &theirs)
                .into_iter()
                .partition(|d| d.starts_with("missing "));
            assert_eq!(
                wrong,
                Vec::<String>::new(),
                "round {round}: Curator's cache contradicts the server"
            );
            if !missed.is_empty() {
                eprintln!("round {round}: Curator's cache misses {missed:?}");
                known_missed.extend(missed.iter().cloned());
            }
            // Ours equals the server (checked at the marker above), so against Curator's it
            // may only have the nodes Curator missed.
            let ours_vs_theirs: Vec<String> = diff(&theirs, &cache_tree(&cache))
                .into_iter()
                .filter(|d| {
                    !d.strip_prefix("extra ")
                        .is_some_and(|p| missed.contains(&format!("missing {p}")))
                })
                .collect();
            assert_eq!(
                ours_vs_theirs,
                Vec::<String>::new(),
                "round {round}: ours vs Curator's"
            );
        }
    }
    assert!(expired, "the run had no expiry");
    assert_ne!(manager.current().number, 1, "the expiry gave a new session");
    let final_tree = cache_tree(&cache);
    println!(
        "cache faults: {rounds} rounds, {writes} writes, {} events, {} nodes at the end, {differences} differences, 0 replay problems, {} nodes Curator's cache missed, Curator stalled at round {curator_stalled:?}, {:.1?}",
        rec.len(),
        final_tree.len(),
        known_missed.len(),
        started.elapsed()
    );
    assert_eq!(
        differences, 0,
        "the cache differed from the server after some batch"
    );
    assert!(matches!(manager.client().state(), SessionState::Connected));

    // Every event, replayed over the empty start, gives the final snapshot.
    cache.close().await.unwrap();
    timeout(LIMIT, task).await.unwrap().unwrap();
    let all = rec.all();
    assert!(!all.iter().any(|e| matches!(e, CacheEvent::Lagged(_))));
    assert_eq!(
        all.iter()
            .filter(|e| matches!(e, CacheEvent::Initialized))
            .count(),
        1
    );
    let mut replayed = Tree::new();
    assert_eq!(replay(&mut replayed, &all), Vec::<String>::new());
    assert_eq!(diff(&final_tree, &replayed), Vec::<String>::new());
    java.close().await;
    manager.close().await.unwrap();
    writers.close().await.unwrap();
}
