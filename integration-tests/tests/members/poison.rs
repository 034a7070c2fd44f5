//! Today's recipes on a `SessionManager` behind a server that drops the connection on the
//! request they need and never resumes a session (issue 35): a cache (`addWatch` dropped), a
//! lock in a user loop, a `PersistentNode` and a group member (`create2` dropped). Each run
//! prints its counts (`-- --nocapture`) for `docs/reliability.md`; the assertions are what the
//! client side guarantees today: the manager's pacing bounds the sessions, and everything
//! recovers once the server stops dropping.

use std::time::Duration;

use integration_tests::prelude::*;
use integration_tests::proxy::{DropRule, Stats};
use integration_tests::{Proxy, ZkTarget};
use tokio::time::Instant;
use zk_client::{Client, CreateOptions, SessionManager};
use zk_recipes::cache::Cache;
use zk_recipes::group::GroupMember;
use zk_recipes::lock::FairLock;
use zk_recipes::node::{NodeOptions, PersistentNode};
use zk_recipes::Error;

const ADD_WATCH: i32 = 106;
const CREATE2: i32 = 15;
const RUN: Duration = Duration::from_secs(20);
const QUARANTINE: Duration = Duration::from_secs(20);
/// Recovery: the rest of a quarantine plus the longest paced renewal (30 s + 50 % jitter).
const RECOVERY: Duration = Duration::from_secs(75);

async fn setup(name: &str) -> (Proxy, String, Client) {
    let TestRoot { server, root, .. } = test_root(name).await;
    let admin = Client::connect(&server.hosts(&root)).await.unwrap();
    admin
        .create("/app", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    (Proxy::start(server.addr()).await, root, admin)
}

async fn manager(proxy: &Proxy, root: &str) -> SessionManager {
    let builder = Client::builder(&proxy.hosts(root))
        .session_timeout(Duration::from_secs(4))
        .poison_quarantine(QUARANTINE);
    SessionManager::builder(builder)
        .renew_backoff(Duration::from_millis(50), Duration::from_secs(1))
        .renew_attempts(100)
        .connect()
        .await
        .expect("first session")
}

/// Starts dropping `opcode` with resumes refused, lets the recipe run for [`RUN`], prints
/// and checks the counts, and stops dropping.
async fn storm(what: &str, proxy: &Proxy, m: &SessionManager, opcode: i32, extra: &str) -> Stats {
    let before = proxy.stats();
    proxy.refuse_resume(true);
    proxy.drop_on(Some(DropRule::opcode(opcode)));
    tokio::time::sleep(RUN).await;
    let end = proxy.stats();
    proxy.drop_on(None);
    proxy.refuse_resume(false);
    let generations = m.current().number;
    println!(
        "{what}: in {RUN:?}: {} connections, {} new sessions, {} drops, {generations} generations{extra}",
        end.accepted - before.accepted,
        end.new_sessions - before.new_sessions,
        end.requests_dropped - before.requests_dropped,
    );
    // The manager's pacing: renewals after 1, 2, 4, 8 s... (with jitter) fit at most five
    // in the run, each costing two sessions on the server (its own, its refused resume).
    assert!(generations <= 7, "{what}: {generations} generations");
    assert!(
        end.new_sessions - before.new_sessions <= 14,
        "{what}: {end:?}"
    );
    end
}

/// Waits until `ready` holds, within [`RECOVERY`]; returns how long it took.
async fn recovered<F, Fut>(what: &str, ready: F) -> Duration
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    while !ready().await {
        assert!(
            start.elapsed() < RECOVERY,
            "{what}: no recovery in {RECOVERY:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let took = start.elapsed();
    println!("{what}: recovered {took:?} after the server stopped dropping");
    took
}

#[tokio::test]
async fn a_cache_whose_add_watch_is_dropped() {
    let (proxy, root, admin) = setup("poison_cache").await;
    let m = manager(&proxy, &root).await;
    let cache = Cache::builder("/app").build_managed(&m).unwrap();
    tokio::time::timeout(RUN, cache.ready())
        .await
        .unwrap()
        .unwrap();
    let mut states = cache.watch();
    // The first drop comes with the next addWatch: a resync after a connection loss.
    proxy.refuse_resume(true);
    proxy.drop_on(Some(DropRule::opcode(ADD_WATCH)));
    proxy.cut(integration_tests::proxy::Cut::Close);
    let counter = tokio::spawn(async move {
        let mut n = 0u32;
        while tokio::time::timeout(RUN, states.changed()).await.is_ok() {
            n += 1;
        }
        n
    });
    storm("cache, addWatch dropped", &proxy, &m, ADD_WATCH, "").await;
    println!("cache state: {:?}", cache.state());
    admin
        .create("/app/marker", b"1", &CreateOptions::persistent())
        .await
        .unwrap();
    let cache_ref = &cache;
    recovered(
        "cache",
        || async move { cache_ref.get("/app/marker").is_some() },
    )
    .await;
    counter.abort();
    cache.close().await.unwrap();
    m.close().await.unwrap();
}

#[tokio::test]
async fn a_lock_whose_create_is_dropped_in_a_user_loop() {
    let (proxy, root, _admin) = setup("poison_lock").await;
    let m = manager(&proxy, &root).await;
    let attempts = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let errors = std::sync::Arc::new(std::sync::Mutex::new(std::collections::BTreeMap::new()));
    let (a, m2, errs) = (attempts.clone(), m.clone(), errors.clone());
    let user = tokio::spawn(async move {
        loop {
            a.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if let Ok(lock) = FairLock::new(m2.client(), "/app/lock") {
                let kind = match tokio::time::timeout(Duration::from_secs(5), lock.acquire()).await
                {
                    Ok(Ok(guard)) => {
                        let _ = guard.release().await;
                        "acquired".to_owned()
                    }
                    Ok(Err(e)) => {
                        let e = format!("{e:?}");
                        e.split([' ', '{']).next().unwrap_or_default().to_owned()
                    }
                    Err(_) => "timeout".to_owned(),
                };
                *errs.lock().unwrap().entry(kind).or_insert(0u32) += 1;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    let before = attempts.load(std::sync::atomic::Ordering::SeqCst);
    let extra = String::new();
    storm("lock, create2 dropped", &proxy, &m, CREATE2, &extra).await;
    println!(
        "lock: {} acquisitions attempted in the run",
        attempts.load(std::sync::atomic::Ordering::SeqCst) - before
    );
    user.abort();
    let outcomes = errors.lock().unwrap().clone();
    println!("lock outcomes: {outcomes:?}");
    // Each queue node has a fresh guid in its name: never the same request twice, so only
    // the manager's pacing bounds this (see `storm`), and the user sees the lost lock.
    assert!(!outcomes.contains_key("acquired"), "{outcomes:?}");
    let m3 = m.clone();
    recovered("lock", || {
        let m3 = m3.clone();
        async move {
            let Ok(lock) = FairLock::new(m3.client(), "/app/lock") else {
                return false;
            };
            match tokio::time::timeout(Duration::from_secs(5), lock.acquire()).await {
                Ok(Ok(guard)) => guard.release().await.is_ok(),
                _ => false,
            }
        }
    })
    .await;
    m.close().await.unwrap();
}

#[tokio::test]
async fn a_persistent_node_whose_create_is_dropped() {
    let (proxy, root, admin) = setup("poison_pnode").await;
    let m = manager(&proxy, &root).await;
    proxy.refuse_resume(true);
    proxy.drop_on(Some(DropRule::opcode(CREATE2)));
    let node = PersistentNode::new_managed(&m, "/app/me", b"v", NodeOptions::ephemeral()).unwrap();
    storm("persistent node, create2 dropped", &proxy, &m, CREATE2, "").await;
    // Today the node stops for good on the error (as on NoAuth), which reaches the user; a
    // node that retried instead would come back by itself.
    let outcome = node.ready_timeout(RECOVERY).await;
    println!("persistent node after the storm: {outcome:?}");
    let node = match outcome {
        Ok(_) => node,
        Err(Error::Client(zk_client::Error::ServerDropsRequest {
            op, retry_after, ..
        })) => {
            assert_eq!(op, zk_client::OpCode::Create2);
            // Started again once the quarantine is over, as a user would.
            tokio::time::sleep(retry_after).await;
            PersistentNode::new_managed(&m, "/app/me", b"v", NodeOptions::ephemeral()).unwrap()
        }
        Err(e) => panic!("persistent node: {e:?}"),
    };
    let admin_ref = &admin;
    recovered("persistent node", || async move {
        admin_ref.exists("/app/me").await.ok().flatten().is_some()
    })
    .await;
    node.close().await.unwrap();
    m.close().await.unwrap();
}

#[tokio::test]
async fn a_group_member_whose_create_is_dropped() {
    let (proxy, root, admin) = setup("poison_member").await;
    let m = manager(&proxy, &root).await;
    proxy.refuse_resume(true);
    proxy.drop_on(Some(DropRule::opcode(CREATE2)));
    let member = GroupMember::new_managed(&m, "/app/group", "me", Some(b"p"))
        .await
        .unwrap();
    storm("group member, create2 dropped", &proxy, &m, CREATE2, "").await;
    // As the persistent node it is made of: stops for good on the error today.
    let outcome = member.ready_timeout(RECOVERY).await;
    println!("group member after the storm: {outcome:?}");
    let member = match outcome {
        Ok(_) => member,
        Err(Error::Client(zk_client::Error::ServerDropsRequest { retry_after, .. })) => {
            member.close().await.ok();
            tokio::time::sleep(retry_after).await;
            GroupMember::new_managed(&m, "/app/group", "me", Some(b"p"))
                .await
                .unwrap()
        }
        Err(e) => panic!("group member: {e:?}"),
    };
    let admin_ref = &admin;
    recovered("group member", || async move {
        admin_ref
            .exists("/app/group/me")
            .await
            .ok()
            .flatten()
            .is_some()
    })
    .await;
    member.close().await.unwrap();
    m.close().await.unwrap();
}
