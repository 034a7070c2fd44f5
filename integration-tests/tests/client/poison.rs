//! A request the server answers by dropping the connection (issue 35), on a real server
//! behind the fault proxy: a client on a `SessionManager` sending it in a loop costs a
//! handful of connections and sessions per minute, not one per try; the caller gets
//! `Error::ServerDropsRequest`; everything works again once the server stops dropping.
//!
//! Each test prints its counts (`cargo test -- --nocapture`); `docs/reliability.md` quotes
//! them.

use std::time::Duration;

use integration_tests::prelude::*;
use integration_tests::proxy::{DropRule, Stats};
use integration_tests::{Proxy, ZkTarget};
use tokio::time::Instant;
use zk_client::{AddWatchMode, Client, CreateOptions, Error, SessionManager};

/// `addWatch`, which a cache sends; ClickHouse Keeper drops the connection on it.
const ADD_WATCH: i32 = 106;
/// How long the loop runs, and the first part of it left out of the rates (the two drops
/// that teach the client, and the first renewals).
const RUN: Duration = Duration::from_secs(30);
const WARM_UP: Duration = Duration::from_secs(5);
/// The quarantine the tests use (the default is 60 s; shorter here to see it end).
const QUARANTINE: Duration = Duration::from_secs(20);

/// What one run of the loop saw.
#[derive(Debug, Default)]
struct Tally {
    tries: u32,
    ok: u32,
    connection_loss: u32,
    refused: u32,
    expired: u32,
    other: u32,
    /// Proxy counters after the warm-up and at the end.
    warm: Stats,
    end: Stats,
    generations: u64,
}

impl Tally {
    fn per_minute(&self, count: impl Fn(&Stats) -> u64) -> f64 {
        let n = count(&self.end) - count(&self.warm);
        n as f64 * 60.0 / (RUN - WARM_UP).as_secs_f64()
    }
}

/// A manager on `proxy` whose renewals are paced (or not: `pacing: false`), with the poison
/// quarantine `quarantine` (zero: the rule off).
async fn manager(proxy: &Proxy, root: &str, quarantine: Duration, pacing: bool) -> SessionManager {
    let builder = Client::builder(&proxy.hosts(root))
        .session_timeout(Duration::from_secs(4))
        .poison_quarantine(quarantine);
    let mut m = SessionManager::builder(builder)
        .renew_backoff(Duration::from_millis(50), Duration::from_secs(1))
        .renew_attempts(100);
    if !pacing {
        m = m.renew_pacing(Duration::ZERO, Duration::ZERO, Duration::ZERO);
    }
    m.connect().await.expect("first session")
}

/// A caller that keeps sending `call` on the manager's current client, 100 ms after each
/// failure, for [`RUN`].
async fn hammer<F, Fut>(proxy: &Proxy, m: &SessionManager, call: F) -> Tally
where
    F: Fn(Client) -> Fut,
    Fut: std::future::Future<Output = zk_client::Result<()>>,
{
    let start = Instant::now();
    let mut t = Tally::default();
    let mut warm = false;
    while start.elapsed() < RUN {
        if !warm && start.elapsed() >= WARM_UP {
            t.warm = proxy.stats();
            warm = true;
        }
        t.tries += 1;
        let result = tokio::time::timeout(Duration::from_secs(10), call(m.client())).await;
        match result {
            Ok(Ok(())) => t.ok += 1,
            Ok(Err(Error::ConnectionLoss)) => t.connection_loss += 1,
            Ok(Err(Error::ServerDropsRequest { .. })) => t.refused += 1,
            Ok(Err(Error::SessionExpired)) => t.expired += 1,
            _ => t.other += 1,
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    t.end = proxy.stats();
    t.generations = m.current().number;
    t
}

fn report(what: &str, t: &Tally) {
    println!(
        "{what}: {} tries: {} ok, {} ConnectionLoss, {} ServerDropsRequest, {} SessionExpired, \
         {} other; whole run: {} connections, {} new sessions, {} drops, {} generations; \
         after {WARM_UP:?}: {:.1} connections/min, {:.1} sessions/min",
        t.tries,
        t.ok,
        t.connection_loss,
        t.refused,
        t.expired,
        t.other,
        t.end.accepted,
        t.end.new_sessions,
        t.end.requests_dropped,
        t.generations,
        t.per_minute(|s| s.accepted),
        t.per_minute(|s| s.new_sessions),
    );
}

async fn add_watch(c: Client) -> zk_client::Result<()> {
    // Dropping the watcher right away: only the request matters here.
    c.add_watch("/w", AddWatchMode::Persistent).await.map(drop)
}

/// Waits until `call` succeeds on the manager's client; returns how long it took.
async fn recovers<F, Fut>(m: &SessionManager, call: F) -> Duration
where
    F: Fn(Client) -> Fut,
    Fut: std::future::Future<Output = zk_client::Result<()>>,
{
    let start = Instant::now();
    let limit = QUARANTINE + Duration::from_secs(30);
    loop {
        if call(m.client()).await.is_ok() {
            return start.elapsed();
        }
        assert!(start.elapsed() < limit, "no recovery within {limit:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn setup(name: &str) -> (Proxy, String) {
    let TestRoot { server, root, .. } = test_root(name).await;
    let c = Client::connect(&server.hosts(&root)).await.unwrap();
    c.create("/w", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    c.close().await.unwrap();
    (Proxy::start(server.addr()).await, root)
}

/// The case: a server that drops the connection on `addWatch` and never resumes a
/// session. Each drop costs the session; with the rule, after two drops the call fails
/// locally and sessions stop dying.
#[tokio::test]
async fn add_watch_dropped_by_a_server_that_never_resumes_costs_a_handful_of_sessions() {
    let (proxy, root) = setup("poison_add_watch").await;
    let m = manager(&proxy, &root, QUARANTINE, true).await;
    proxy.refuse_resume(true);
    proxy.drop_on(Some(DropRule::opcode(ADD_WATCH)));
    let t = hammer(&proxy, &m, add_watch).await;
    report("addWatch dropped, no resume, rule on", &t);
    assert!(t.refused > 0, "the caller is told: {t:?}");
    assert_eq!(t.ok, 0, "{t:?}");
    // One drop per quarantine at most once taught (20 s here, 60 s by default), each
    // costing two connections and two sessions (the refused resume, the renewal).
    assert!(t.per_minute(|s| s.accepted) <= 12.0, "{t:?}");
    assert!(t.per_minute(|s| s.new_sessions) <= 12.0, "{t:?}");
    assert!(t.end.requests_dropped <= 5, "{t:?}");

    proxy.drop_on(None);
    let took = recovers(&m, add_watch).await;
    println!("recovered {took:?} after the server stopped dropping");
    let c = m.client();
    c.set_data("/w", b"again", None).await.unwrap();
    assert_eq!(&c.get_data("/w").await.unwrap().0[..], b"again");
    m.close().await.unwrap();
}

/// The control: the same loop with the rule off and the manager's pacing off is the storm
/// of the issue (a session per try), which is what the rule and the pacing remove.
#[tokio::test]
async fn without_the_rule_and_the_pacing_the_same_loop_is_a_session_storm() {
    let (proxy, root) = setup("poison_storm").await;
    let m = manager(&proxy, &root, Duration::ZERO, false).await;
    proxy.refuse_resume(true);
    proxy.drop_on(Some(DropRule::opcode(ADD_WATCH)));
    let t = hammer(&proxy, &m, add_watch).await;
    report("addWatch dropped, no resume, rule off, pacing off", &t);
    assert_eq!(t.refused, 0, "{t:?}");
    assert!(t.per_minute(|s| s.new_sessions) >= 30.0, "{t:?}");
    m.close().await.unwrap();
}

/// The manager's pacing alone (rule off): sessions that die young are renewed after 1 s,
/// 2 s, 4 s... up to 30 s.
#[tokio::test]
async fn pacing_alone_slows_a_session_storm() {
    let (proxy, root) = setup("poison_paced").await;
    let m = manager(&proxy, &root, Duration::ZERO, true).await;
    proxy.refuse_resume(true);
    proxy.drop_on(Some(DropRule::opcode(ADD_WATCH)));
    let t = hammer(&proxy, &m, add_watch).await;
    report("addWatch dropped, no resume, rule off, pacing on", &t);
    // 1 + 2 + 4 + 8 + 16 s of pauses (with up to 50 % jitter) fit about five renewals in
    // the run.
    // Each generation costs two sessions on the server (its own, and the one its refused
    // resume opened).
    assert!(t.generations <= 7, "{t:?}");
    assert!(t.end.new_sessions <= 2 * t.generations, "{t:?}");
    m.close().await.unwrap();
}

/// A server whose `jute.maxbuffer` is lower than the client's limit: a large write is
/// dropped twice, then refused locally; small writes to the same node keep working; with
/// `max_request_len` set to the server's value nothing large is ever sent.
#[tokio::test]
async fn a_write_above_the_servers_lower_limit_is_caught_and_small_ones_go_on() {
    let (proxy, root) = setup("poison_size").await;
    let m = manager(&proxy, &root, QUARANTINE, true).await;
    proxy.drop_on(Some(DropRule::larger_than(64 * 1024)));
    let big = |c: Client| async move { c.set_data("/w", &[7u8; 100_000], None).await.map(drop) };
    let t = hammer(&proxy, &m, big).await;
    report("setData of 100 kB above a 64 KiB server limit, rule on", &t);
    assert!(t.refused > 0, "{t:?}");
    assert!(t.per_minute(|s| s.accepted) <= 12.0, "{t:?}");
    assert_eq!(
        t.end.new_sessions, 1,
        "the server resumes: one session: {t:?}"
    );
    // Small writes to the same node are not refused.
    m.client().set_data("/w", b"small", None).await.unwrap();

    // The same with the client told the server's limit: refused before sending, no drop.
    let drops = proxy.stats().requests_dropped;
    let c = Client::builder(&proxy.hosts(&root))
        .max_request_len(64 * 1024)
        .connect()
        .await
        .unwrap();
    assert!(matches!(
        c.set_data("/w", &[7u8; 100_000], None).await,
        Err(Error::RequestTooLarge { .. })
    ));
    assert_eq!(proxy.stats().requests_dropped, drops);
    c.close().await.unwrap();

    proxy.drop_on(None);
    let took = recovers(&m, big).await;
    println!("recovered {took:?} after the server stopped dropping");
    m.close().await.unwrap();
}
