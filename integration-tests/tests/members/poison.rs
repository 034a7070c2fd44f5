//! Recipes on a `SessionManager` behind a server that drops the connection on the request
//! they need and never resumes a session (issue 35): a cache (`addWatch` dropped), a lock
//! acquired in a user loop (`create2` dropped), a `PersistentNode` (`create2` dropped) and a
//! group member (every request above 64 KiB dropped: its payload is 100 kB, as behind a
//! server whose `jute.maxbuffer` is lower than the client's limit). Each test checks what a
//! user relies on: few sessions a minute once the first seconds are over (counted at the
//! proxy), an error that says what is wrong while it lasts, and full recovery, by itself,
//! once the server stops dropping. Each run prints its counts (`-- --nocapture`) for
//! `docs/reliability.md`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use integration_tests::prelude::*;
use integration_tests::proxy::{DropRule, Stats};
use integration_tests::{Proxy, ZkTarget};
use tokio::time::Instant;
use zk_client::{Client, CreateOptions, OpCode, SessionManager};
use zk_recipes::cache::Cache;
use zk_recipes::group::GroupMember;
use zk_recipes::lock::FairLock;
use zk_recipes::node::{NodeOptions, PersistentNode};
use zk_recipes::Error;

const ADD_WATCH: i32 = 106;
const CREATE2: i32 = 15;
/// How long the server drops.
const RUN: Duration = Duration::from_secs(30);
/// The first seconds of a storm, left out of the rate.
const FIRST: Duration = Duration::from_secs(5);
/// At most this many new sessions a minute after [`FIRST`]: the manager's renewal pacing
/// (1 s doubling to 30 s) allows about three renewals in 25 s, each costing two sessions
/// at this proxy (the manager's own, and the refused resume of the one before it).
const MAX_SESSIONS_PER_MINUTE: f64 = 20.0;
const QUARANTINE: Duration = Duration::from_secs(20);
/// Recovery: the rest of a quarantine plus the longest paced pause (30 s + 50 % jitter).
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

/// Starts dropping by `rule` with resumes refused (unless started already), lets the recipe
/// run for [`RUN`] and checks the sessions a minute after [`FIRST`]; the proxy goes on
/// dropping until [`heal`].
async fn storm(what: &str, proxy: &Proxy, m: &SessionManager, rule: DropRule) -> Stats {
    let before = proxy.stats();
    proxy.refuse_resume(true);
    proxy.drop_on(Some(rule));
    tokio::time::sleep(FIRST).await;
    let settled = proxy.stats();
    let generations_settled = m.current().number;
    tokio::time::sleep(RUN - FIRST).await;
    let end = proxy.stats();
    let generations = m.current().number;
    let late = (end.new_sessions - settled.new_sessions) as f64;
    let per_minute = late * 60.0 / (RUN - FIRST).as_secs_f64();
    println!(
        "{what}: in {RUN:?}: {} connections, {} new sessions, {} drops, {generations} generations \
         ({} after the first {FIRST:?}); after {FIRST:?}: {} new sessions, {per_minute:.1} a minute",
        end.accepted - before.accepted,
        end.new_sessions - before.new_sessions,
        end.requests_dropped - before.requests_dropped,
        generations - generations_settled,
        end.new_sessions - settled.new_sessions,
    );
    assert!(
        per_minute <= MAX_SESSIONS_PER_MINUTE,
        "{what}: {per_minute:.1} new sessions a minute after the first seconds: {end:?}"
    );
    end
}

/// The proxy stops dropping.
fn heal(proxy: &Proxy) {
    proxy.drop_on(None);
    proxy.refuse_resume(false);
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

fn is_refused(e: &Error, op: OpCode) -> bool {
    matches!(e, Error::Client(zk_client::Error::ServerDropsRequest { op: o, .. }) if *o == op)
}

#[tokio::test]
async fn a_cache_whose_add_watch_is_dropped_says_why_and_resyncs_by_itself() {
    let (proxy, root, admin) = setup("poison_cache").await;
    let m = manager(&proxy, &root).await;
    let cache = Cache::builder("/app").build_managed(&m).unwrap();
    tokio::time::timeout(RUN, cache.ready())
        .await
        .unwrap()
        .unwrap();
    assert!(cache.last_error().is_none());
    // The first drop comes with the next addWatch: a resync after a connection loss.
    proxy.refuse_resume(true);
    proxy.drop_on(Some(DropRule::opcode(ADD_WATCH)));
    proxy.cut(integration_tests::proxy::Cut::Close);
    storm(
        "cache, addWatch dropped",
        &proxy,
        &m,
        DropRule::opcode(ADD_WATCH),
    )
    .await;
    let error = cache.last_error();
    println!(
        "cache at the end of the storm: {:?}, last_error {error:?}",
        cache.state()
    );
    assert!(
        error
            .as_ref()
            .is_some_and(|e| is_refused(e, OpCode::AddWatch)),
        "the cache says the server drops its addWatch: {error:?}"
    );
    heal(&proxy);
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
    assert!(cache.last_error().is_none(), "{:?}", cache.last_error());
    cache.close().await.unwrap();
    m.close().await.unwrap();
}

#[tokio::test]
async fn a_lock_acquired_in_a_user_loop_whose_create_is_dropped_is_paced() {
    let (proxy, root, _admin) = setup("poison_lock").await;
    let m = manager(&proxy, &root).await;
    let lock = FairLock::new_managed(&m, "/app/lock").unwrap();
    // Warm up: one acquisition on a healthy server.
    lock.acquire_timeout(Duration::from_secs(10))
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    let attempts = Arc::new(AtomicU32::new(0));
    let outcomes = Arc::new(Mutex::new(std::collections::BTreeMap::new()));
    let (a, l, o) = (attempts.clone(), lock.clone(), outcomes.clone());
    // A user loop with no pause of its own: only the lock's pacing keeps it from spinning.
    let user = tokio::spawn(async move {
        for _ in 0..100_000 {
            a.fetch_add(1, Ordering::SeqCst);
            let kind = match l.acquire_timeout(Duration::from_secs(5)).await {
                Ok(guard) => {
                    let _ = guard.release().await;
                    "acquired".to_owned()
                }
                Err(e) => {
                    let e = format!("{e:?}");
                    e.split(['{']).next().unwrap_or_default().trim().to_owned()
                }
            };
            *o.lock().unwrap().entry(kind).or_insert(0u32) += 1;
        }
    });
    let before = attempts.load(Ordering::SeqCst);
    storm(
        "lock, create2 dropped",
        &proxy,
        &m,
        DropRule::opcode(CREATE2),
    )
    .await;
    let tries = attempts.load(Ordering::SeqCst) - before;
    let seen = outcomes.lock().unwrap().clone();
    println!("lock: {tries} acquisitions in {RUN:?}: {seen:?}");
    assert!(!seen.contains_key("acquired"), "{seen:?}");
    // Before the pacing of acquisitions, a user loop with a 100 ms pause made 193 tries.
    assert!(
        tries <= 30,
        "paced, never spinning: {tries} tries, {seen:?}"
    );
    assert!(
        seen.keys().any(|k| k.starts_with("LockLost(SessionEnded")),
        "the user sees the lost session: {seen:?}"
    );
    heal(&proxy);
    let took = recovered("lock", || async {
        matches!(outcomes.lock().unwrap().get("acquired"), Some(n) if *n > 0)
    })
    .await;
    println!("lock: acquired by the user loop {took:?} after the server stopped dropping");
    user.abort();
    m.close().await.unwrap();
}

#[tokio::test]
async fn a_persistent_node_whose_create_is_dropped_waits_and_comes_back_by_itself() {
    let (proxy, root, admin) = setup("poison_pnode").await;
    let m = manager(&proxy, &root).await;
    proxy.refuse_resume(true);
    proxy.drop_on(Some(DropRule::opcode(CREATE2)));
    let node = PersistentNode::new_managed(&m, "/app/me", b"v", NodeOptions::ephemeral()).unwrap();
    storm(
        "persistent node, create2 dropped",
        &proxy,
        &m,
        DropRule::opcode(CREATE2),
    )
    .await;
    let error = node.last_error();
    println!("persistent node at the end of the storm: last_error {error:?}");
    assert!(
        error
            .as_ref()
            .is_some_and(|e| is_refused(e, OpCode::Create2)),
        "the node says the server drops its create: {error:?}"
    );
    assert_eq!(node.path(), None);
    heal(&proxy);
    let healed = Instant::now();
    // The same node, never started again: it waits out the quarantine and creates.
    let path = node.ready_timeout(RECOVERY).await.unwrap();
    assert_eq!(path, "/app/me");
    println!(
        "persistent node: ready {:?} after the server stopped dropping",
        healed.elapsed()
    );
    let admin_ref = &admin;
    recovered("persistent node", || async move {
        admin_ref.exists("/app/me").await.ok().flatten().is_some()
    })
    .await;
    assert!(node.last_error().is_none(), "{:?}", node.last_error());
    node.close().await.unwrap();
    m.close().await.unwrap();
}

#[tokio::test]
async fn a_group_member_whose_requests_above_64_kib_are_dropped_rejoins_by_itself() {
    let (proxy, root, admin) = setup("poison_member").await;
    let m = manager(&proxy, &root).await;
    let rule = DropRule::larger_than(64 * 1024);
    proxy.refuse_resume(true);
    proxy.drop_on(Some(rule));
    let payload = vec![b'p'; 100_000];
    let member = GroupMember::new_managed(&m, "/app/group", "me", Some(&payload))
        .await
        .unwrap();
    storm("group member, > 64 KiB dropped", &proxy, &m, rule).await;
    let error = member.last_error();
    println!("group member at the end of the storm: last_error {error:?}");
    assert!(
        error
            .as_ref()
            .is_some_and(|e| is_refused(e, OpCode::Create2)),
        "the member says the server drops its create: {error:?}"
    );
    heal(&proxy);
    let healed = Instant::now();
    member.ready_timeout(RECOVERY).await.unwrap();
    println!(
        "group member: joined {:?} after the server stopped dropping",
        healed.elapsed()
    );
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
    let seen = &member;
    recovered("group member's view", || async move {
        seen.current_members().contains_key("me") && seen.is_loaded()
    })
    .await;
    assert!(member.last_error().is_none(), "{:?}", member.last_error());
    member.close().await.unwrap();
    m.close().await.unwrap();
}

#[tokio::test]
async fn a_write_the_server_drops_fails_for_its_caller_and_the_node_stays() {
    let (proxy, root, admin) = setup("poison_pnode_write").await;
    let m = manager(&proxy, &root).await;
    let node =
        PersistentNode::new_managed(&m, "/app/w", b"small", NodeOptions::ephemeral()).unwrap();
    node.ready_timeout(RUN).await.unwrap();
    // The server resumes sessions; every request above 64 KiB is dropped.
    proxy.drop_on(Some(DropRule::larger_than(64 * 1024)));
    let started = Instant::now();
    let big = vec![b'b'; 100_000];
    let outcome = tokio::time::timeout(RUN, node.set_data(&big))
        .await
        .unwrap();
    println!(
        "persistent node, 100 kB write dropped: {outcome:?} after {:?}, {:?}",
        started.elapsed(),
        proxy.stats()
    );
    assert!(
        outcome
            .as_ref()
            .is_err_and(|e| is_refused(e, OpCode::SetData)),
        "{outcome:?}"
    );
    // The node goes on, with the data it had.
    assert_eq!(node.path().as_deref(), Some("/app/w"));
    let (data, _) = admin.get_data("/app/w").await.unwrap();
    assert_eq!(&data[..], b"small");
    node.set_data(b"again").await.unwrap();
    let (data, _) = admin.get_data("/app/w").await.unwrap();
    assert_eq!(&data[..], b"again");
    node.close().await.unwrap();
    m.close().await.unwrap();
}
