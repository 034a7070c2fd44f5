//! The `metrics` feature of zk-client and zk-recipes against a real server: the counters,
//! gauges and histograms named in the README move. Its own test binary (not a module of
//! `client`), so that the global recorder installed here sees this test's traffic only.

use std::collections::HashMap;
use std::time::Duration;

use integration_tests::{chroot, standalone, ZkTarget};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use zk_client::SessionManager;
use zk_client::{AddWatchMode, Client, CreateOptions};
use zk_recipes::{
    leader::{LeaderLatch, LeadershipPolicy},
    lock::FairLock,
    semaphore::Semaphore,
};

/// Metric values by `name{label=value,...}` (labels sorted).
fn read(snapshotter: &Snapshotter) -> HashMap<String, DebugValue> {
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| {
            let key = key.key();
            let mut labels: Vec<String> = key
                .labels()
                .map(|l| format!("{}={}", l.key(), l.value()))
                .collect();
            labels.sort();
            (format!("{}{{{}}}", key.name(), labels.join(",")), value)
        })
        .collect()
}

fn counter(m: &HashMap<String, DebugValue>, key: &str) -> u64 {
    match m.get(key) {
        Some(DebugValue::Counter(n)) => *n,
        other => panic!("{key}: {other:?}; have {:?}", m.keys().collect::<Vec<_>>()),
    }
}

fn samples(m: &HashMap<String, DebugValue>, key: &str) -> usize {
    match m.get(key) {
        Some(DebugValue::Histogram(v)) => v.len(),
        other => panic!("{key}: {other:?}; have {:?}", m.keys().collect::<Vec<_>>()),
    }
}

/// The in-flight gauge once it is back at zero, or its last value after 5 s.
async fn in_flight_settles(snapshotter: &Snapshotter) -> f64 {
    let mut last = f64::NAN;
    for _ in 0..100 {
        match read(snapshotter).get("zk_client_requests_in_flight{}") {
            Some(DebugValue::Gauge(g)) => last = g.0,
            other => panic!("in flight: {other:?}"),
        }
        if last == 0.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    last
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_and_lock_metrics_move() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder
        .install()
        .expect("the only recorder of this test binary");

    let server = standalone().await;
    let hosts = server.hosts(&chroot(server, "metrics").await);
    let client = Client::builder(&hosts)
        .session_timeout(Duration::from_secs(10))
        .watch_buffer(2)
        .connect()
        .await
        .unwrap();
    client
        .create("/n", b"x", &CreateOptions::persistent())
        .await
        .unwrap();
    assert!(client.get_data("/missing").await.is_err());

    // A persistent watcher that is not read: two events fit, the rest are dropped.
    let watcher = client
        .add_watch("/n", AddWatchMode::Persistent)
        .await
        .unwrap();
    for i in 0..5 {
        client.set_data("/n", &[i], None).await.unwrap();
    }
    client.sync("/n").await.unwrap();

    let lock = FairLock::new(client.clone(), "/lock").unwrap();
    let guard = lock.acquire().await.unwrap();
    let second = Client::connect(&hosts).await.unwrap();
    let other = FairLock::new(second.clone(), "/lock").unwrap();
    let timed_out = other.acquire_timeout(Duration::from_millis(200)).await;
    assert!(
        matches!(timed_out, Err(zk_recipes::Error::Timeout)),
        "{timed_out:?}"
    );
    tokio::time::sleep(Duration::from_millis(50)).await;
    guard.release().await.unwrap();

    // A semaphore of one lease: one taken, one timed out, one released. Its own `locks`
    // mutex is not counted as a mutex acquisition.
    let slots = Semaphore::new(client.clone(), "/slots", 1).unwrap();
    let lease = slots.acquire().await.unwrap();
    let waiting = Semaphore::new(second, "/slots", 1).unwrap();
    let timed_out = waiting.acquire_timeout(Duration::from_millis(200)).await;
    assert!(
        matches!(timed_out, Err(zk_recipes::Error::Timeout)),
        "{timed_out:?}"
    );
    lease.release().await.unwrap();
    drop(watcher);

    let m = read(&snapshotter);
    assert!(counter(&m, "zk_client_requests_total{op=Create2,outcome=ok}") >= 1);
    assert_eq!(
        counter(&m, "zk_client_requests_total{op=GetData,outcome=no_node}"),
        1
    );
    assert_eq!(
        counter(&m, "zk_client_requests_total{op=SetData,outcome=ok}"),
        5
    );
    assert_eq!(
        samples(&m, "zk_client_request_duration_seconds{op=SetData}"),
        5
    );
    assert!(counter(&m, "zk_client_bytes_sent_total{}") > 100);
    assert!(counter(&m, "zk_client_bytes_received_total{}") > 100);
    assert!(counter(&m, "zk_client_connections_total{}") >= 2);
    assert!(
        counter(&m, "zk_client_connect_attempts_total{}")
            >= counter(&m, "zk_client_connections_total{}")
    );
    assert!(counter(&m, "zk_client_session_state_changes_total{state=connected}") >= 2);
    assert!(counter(&m, "zk_client_watch_events_total{}") >= 5);
    assert_eq!(counter(&m, "zk_client_watch_events_dropped_total{}"), 3);
    assert_eq!(
        counter(
            &m,
            "zk_recipes_lock_acquisitions_total{kind=mutex,outcome=acquired}"
        ),
        1
    );
    assert_eq!(
        counter(
            &m,
            "zk_recipes_lock_acquisitions_total{kind=mutex,outcome=timeout}"
        ),
        1
    );
    assert_eq!(samples(&m, "zk_recipes_lock_wait_seconds{kind=mutex}"), 1);
    assert_eq!(samples(&m, "zk_recipes_lock_hold_seconds{kind=mutex}"), 1);
    for outcome in ["acquired", "timeout"] {
        let key = format!("zk_recipes_lock_acquisitions_total{{kind=semaphore,outcome={outcome}}}");
        assert_eq!(counter(&m, &key), 1, "{key}");
    }
    assert_eq!(
        samples(&m, "zk_recipes_lock_wait_seconds{kind=semaphore}"),
        1
    );
    assert_eq!(
        samples(&m, "zk_recipes_lock_hold_seconds{kind=semaphore}"),
        1
    );
    // Dropping the watcher sent a RemoveWatches in the background: the gauge comes back to
    // zero once its reply is in, and stays there (no request is counted twice or leaked).
    assert_eq!(
        in_flight_settles(&snapshotter).await,
        0.0,
        "nothing is in flight once the replies are in"
    );

    // Leader election: two latches on one path; the first leads, closes, the second leads.
    let (ma, mb) = (
        SessionManager::connect(Client::builder(&hosts))
            .await
            .unwrap(),
        SessionManager::connect(Client::builder(&hosts))
            .await
            .unwrap(),
    );
    let a = LeaderLatch::new_managed(&ma, "/election", "a", LeadershipPolicy::Standard).unwrap();
    a.ready_timeout(Duration::from_secs(20)).await.unwrap();
    let b = LeaderLatch::new_managed(&mb, "/election", "b", LeadershipPolicy::Standard).unwrap();
    a.close().await.unwrap();
    b.ready_timeout(Duration::from_secs(20)).await.unwrap();
    let m = read(&snapshotter);
    assert_eq!(
        counter(
            &m,
            "zk_recipes_leadership_changes_total{change=taken,kind=latch}"
        ),
        2,
        "a, then b"
    );
    b.close().await.unwrap();
}
