//! The lock queue depth cost curve (issue 34 part 3), as counts: what one release costs the
//! server and the client at queue depths 1, 10, 100 (and 1,000 with
//! `ZK_LOCK_DEPTH_MAX=1000`), for both hand-offs. Model: constant. Each release must send the
//! same notifications, listings and requests at every depth of 10 and more (at depth 1 the
//! only waiter was next in line at its first listing, so it takes the lock without listing
//! again), within the hand-off's bound: `Lean` 1 notification, `Prepared` 2.
//!
//! Counted on a fresh server of its own (`mntr`'s watch notification sums) and on the
//! client (zk-client's `metrics` feature, `zk_client_requests_total` by op, read by a
//! recorder local to the test's thread; the test runs on a current-thread runtime so every
//! client task records there). The waiters are lock instances on 4 sessions, round-robin,
//! so the two watches a node may get (from the waiter behind it and, with `Prepared`, the one
//! behind that) come from different sessions, as in a fleet.
//!
//! `ZK_LOCK_DEPTH_OUT=<file>` appends one CSV row per (hand-off, depth) to the file
//! (`bench/lock-depth.sh` writes the table and plot in `bench/` from it).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use integration_tests::prelude::*;
use integration_tests::{chroot, fresh_standalone, Server, ZkTarget};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use tokio::sync::{mpsc, Semaphore};
use tokio::time::{timeout, Instant};
use zk_recipes::lock::{FairLock, HandOff};

/// Sessions the waiters are spread over.
const SESSIONS: usize = 4;
/// Releases measured per depth (fewer when the queue is shorter).
const RELEASES: usize = 2;

/// The depths to measure: 1, 10, 100, and 1,000 when `ZK_LOCK_DEPTH_MAX` allows it.
fn depths() -> Vec<usize> {
    let max = curve_max("ZK_LOCK_DEPTH_MAX", 100);
    [1, 10, 100, 1_000]
        .into_iter()
        .filter(|n| *n <= max)
        .collect()
}

/// What the cluster did during one window: server notifications, client listings, client
/// requests (every op but pings).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Counts {
    pub(super) notifications: i64,
    pub(super) listings: u64,
    pub(super) requests: u64,
}

impl std::ops::Sub for Counts {
    type Output = Counts;
    fn sub(self, before: Counts) -> Counts {
        Counts {
            notifications: self.notifications - before.notifications,
            listings: self.listings - before.listings,
            requests: self.requests - before.requests,
        }
    }
}

/// The client's completed requests: listings and all (pings left out), summed over the
/// snapshots (each snapshot of the debugging recorder takes its counters back to zero).
pub(super) struct Requests {
    snapshotter: Snapshotter,
    by_op: HashMap<String, u64>,
}

impl Requests {
    /// Counts from `snapshotter`'s recorder on.
    pub(super) fn new(snapshotter: Snapshotter) -> Requests {
        Requests {
            snapshotter,
            by_op: HashMap::new(),
        }
    }

    fn read(&mut self) -> (u64, u64) {
        for (op, n) in requests_by_op(&self.snapshotter) {
            *self.by_op.entry(op).or_insert(0) += n;
        }
        let listings = ["GetChildren", "GetChildren2"]
            .iter()
            .filter_map(|op| self.by_op.get(*op))
            .sum();
        (listings, self.by_op.values().sum())
    }
}

/// The client's requests completed since the last snapshot, by op (all outcomes), pings
/// left out.
fn requests_by_op(snapshotter: &Snapshotter) -> HashMap<String, u64> {
    let mut by_op = HashMap::new();
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        let key = key.key();
        if key.name() != "zk_client_requests_total" {
            continue;
        }
        let DebugValue::Counter(n) = value else {
            continue;
        };
        let op = key
            .labels()
            .find(|l| l.key() == "op")
            .map(|l| l.value().to_owned())
            .unwrap_or_default();
        *by_op.entry(op).or_insert(0) += n;
    }
    by_op.remove("Ping");
    by_op
}

async fn counts(server: &Server, requests: &mut Requests) -> Counts {
    let notifications = notifications(server).await;
    let (listings, requests) = requests.read();
    Counts {
        notifications,
        listings,
        requests,
    }
}

/// The counts once nothing has changed for 200 ms (bounded by [`SOON`]).
pub(super) async fn settled(server: &Server, requests: &mut Requests) -> Counts {
    let start = Instant::now();
    let mut last = counts(server, requests).await;
    let mut same = 0;
    while start.elapsed() < SOON {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = counts(server, requests).await;
        same = if now == last { same + 1 } else { 0 };
        last = now;
        if same >= 2 {
            return last;
        }
    }
    panic!("the counts kept moving for {SOON:?}: {last:?}");
}

/// One row of the curve: the hand-off, the depth, the per-release counts (the totals over
/// the measured releases divided by their number, rounded up: a reaction late for one
/// release's window is still counted, in the next) and the median release-to-next-holder
/// time.
#[derive(Debug)]
struct Row {
    hand_off: HandOff,
    depth: usize,
    per_release: Counts,
    releases: usize,
    hand_off_ms: f64,
}

/// Queues `depth` waiters behind a holder on `path` and measures the first releases.
async fn measure(
    server: &Server,
    hosts: &str,
    requests: &mut Requests,
    hand_off: HandOff,
    depth: usize,
) -> Row {
    let path = format!("/depth-{hand_off:?}-{depth}");
    let admin = connect(hosts).await;
    let mut sessions = Vec::new();
    for _ in 0..SESSIONS {
        sessions.push(connect(hosts).await);
    }
    let holder = FairLock::new(connect(hosts).await, &path).unwrap();
    let first = holder.acquire().await.unwrap();
    let go = Arc::new(Semaphore::new(0));
    let (tx, mut acquired) = mpsc::unbounded_channel();
    for i in 0..depth {
        let lock = FairLock::new(sessions[i % SESSIONS].clone(), &path)
            .unwrap()
            .with_hand_off(hand_off);
        let (tx, go) = (tx.clone(), go.clone());
        tokio::spawn(async move {
            let guard = lock.acquire().await.expect("waiter acquires");
            let _ = tx.send(Instant::now());
            go.acquire().await.expect("go").forget();
            guard.release().await.expect("release");
        });
        // One at a time, so consecutive waiters are on different sessions.
        let end = Instant::now() + LIMIT;
        while children(&admin, &path).await.len() < i + 2 {
            assert!(Instant::now() < end, "waiter {i} did not queue");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    let before = settled(server, requests).await;

    let releases = RELEASES.min(depth);
    let mut times = Vec::new();
    let mut first = Some(first);
    for _ in 0..releases {
        let released = Instant::now();
        match first.take() {
            Some(guard) => guard.release().await.map(drop).unwrap(),
            None => go.add_permits(1),
        }
        let at = timeout(LIMIT, acquired.recv())
            .await
            .expect("the next waiter acquires")
            .expect("a waiter");
        times.push(at.saturating_duration_since(released));
        // The next release once this one's reactions are over.
        settled(server, requests).await;
    }
    let total = settled(server, requests).await - before;
    let n = releases as u64;
    let per_release = Counts {
        notifications: i64::try_from(u64::try_from(total.notifications).unwrap().div_ceil(n))
            .unwrap(),
        listings: total.listings.div_ceil(n),
        requests: total.requests.div_ceil(n),
    };
    // Let everyone through and wait until the queue is empty.
    go.add_permits(depth);
    for _ in releases..depth {
        timeout(LIMIT, acquired.recv())
            .await
            .expect("every waiter acquires")
            .expect("a waiter");
    }
    assert!(wait_children(&admin, &path, 0, LIMIT).await.is_empty());
    times.sort_unstable();
    Row {
        hand_off,
        depth,
        per_release,
        releases,
        hand_off_ms: times[times.len() / 2].as_secs_f64() * 1e3,
    }
}

async fn curve(snapshotter: Snapshotter) -> Vec<Row> {
    let mut requests = Requests::new(snapshotter);
    let server = fresh_standalone().await;
    let root = chroot(&server, "depth").await;
    let hosts = server.hosts(&root);
    let mut rows = Vec::new();
    for hand_off in [HandOff::Lean, HandOff::Prepared] {
        for depth in depths() {
            let row = measure(&server, &hosts, &mut requests, hand_off, depth).await;
            println!("{row:?}");
            rows.push(row);
        }
    }
    rows
}

#[test]
fn a_release_costs_the_same_at_every_queue_depth() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let rows = metrics::with_local_recorder(&recorder, || runtime.block_on(curve(snapshotter)));

    if let Ok(out) = std::env::var("ZK_LOCK_DEPTH_OUT") {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&out)
            .unwrap_or_else(|e| panic!("{out}: {e}"));
        for r in &rows {
            writeln!(
                file,
                "{:?},{},{},{},{},{},{:.2}",
                r.hand_off,
                r.depth,
                r.releases,
                r.per_release.notifications,
                r.per_release.listings,
                r.per_release.requests,
                r.hand_off_ms
            )
            .unwrap();
        }
    }

    for hand_off in [HandOff::Lean, HandOff::Prepared] {
        let of: Vec<&Row> = rows.iter().filter(|r| r.hand_off == hand_off).collect();
        let bound = if hand_off == HandOff::Lean { 1 } else { 2 };
        for r in &of {
            assert!(
                r.per_release.notifications <= bound && r.per_release.listings <= 1,
                "{hand_off:?} at depth {}: {:?} per release (bound: {bound} notifications, \
                 1 listing)",
                r.depth,
                r.per_release
            );
        }
        // Constant from depth 10 on: every deep row costs what depth 10 costs.
        let deep: Vec<&&Row> = of.iter().filter(|r| r.depth >= 10).collect();
        if let Some(reference) = deep.first() {
            for r in &deep {
                assert_eq!(
                    r.per_release, reference.per_release,
                    "{hand_off:?}: a release at depth {} costs {:?}, at depth {} {:?}",
                    r.depth, r.per_release, reference.depth, reference.per_release
                );
            }
        }
    }
}
