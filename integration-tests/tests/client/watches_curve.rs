//! The "watches per session" cost curve (issue 34 part 3): what re-arming one session's
//! watches after a reconnect costs, at 1, 100 and 1,000 watches (about 5 s in a debug build,
//! most of it the server's start; 10,000 and 100,000 with `ZK_WATCHES_MAX=100000`, which
//! `bench/watches-curve.sh` sets), for one-shot data watches (`SetWatches`) and persistent
//! watches (`SetWatches2`).
//!
//! On a fresh server of its own, the session under test goes through the fault proxy, which
//! counts the `SetWatches` packets and their bytes exactly as on the wire. At each size the
//! proxy cuts the connection and holds the reconnect while a node is changed, then lets it
//! through. Measured: the packets and bytes, the time from letting the reconnect through to
//! `Connected`, and from `Connected` to the reply of a request sent after the re-arm (the
//! server answers a session in order, so every `SetWatches` has been applied by then); and
//! beside it the time setting the N watches took in the first place.
//!
//! Models, asserted: bytes **linear** in N and exact, `per_watch × N + header × packets`
//! (each watch costs its path and a 4-byte length; each packet a length prefix, the request
//! header, the relative zxid and the list lengths), and packets = N over the watches that fit
//! in 128 KiB of paths (Java's `SET_WATCHES_MAX_LENGTH`), rounded up, so each packet stays far
//! under the server's 1 MiB `jute.maxbuffer`. Time: reported, with
//! only a generous bound per watch asserted (the machine is shared).
//!
//! Correctness, asserted at every size: every watch is back on the server after the re-arm
//! (`mntr`'s watch count), a data watch on the node changed while disconnected fires at the
//! re-arm (`SetWatches`' relative zxid), and changes to sampled nodes (the first, the last
//! and 15 spread between) fire their watches. Persistent watches are not caught up on a
//! change made while disconnected (ZooKeeper applies only the one-shot lists against the
//! zxid), so that check is for data watches only.
//!
//! `ZK_WATCHES_OUT=<file>` appends one CSV row per (kind, size) to the file
//! (`bench/watches-curve.sh` writes the table and plot in `bench/` from it).

use std::time::Duration;

use futures_util::future::join_all;
use integration_tests::prelude::*;
use integration_tests::proxy::{Cut, Mode};
use integration_tests::{fresh_standalone, Server, ZkTarget};
use tokio::time::Instant;
use zk_client::{
    AddWatchMode, Client, CreateOptions, EventType, Op, PersistentWatcher, WatchedEvent, Watcher,
};

/// Java's `ClientCnxn.SET_WATCHES_MAX_LENGTH`, zk-client's default batch: bytes of paths per
/// packet.
const BATCH_BYTES: u64 = 128 * 1024;
/// Nodes changed after the re-arm, spread over the watched ones (plus the first and last).
const SAMPLES: usize = 16;
/// Creates per `multi`.
const MULTI: usize = 1_000;
/// The sizes, each with its parent node: one letter, so every watched path has the same
/// length (`/c/00042`) and the same cost at every size.
const SIZES: [(usize, &str); 5] = [
    (1, "/a"),
    (100, "/b"),
    (1_000, "/c"),
    (10_000, "/d"),
    (100_000, "/e"),
];

/// The sizes to measure: up to 1,000 (CI), or up to `ZK_WATCHES_MAX`.
fn sizes() -> Vec<(usize, &'static str)> {
    let max = curve_max("ZK_WATCHES_MAX", 1_000);
    SIZES.into_iter().filter(|(n, _)| *n <= max).collect()
}

/// The bound on creating `n` nodes or setting `n` watches, all pipelined: [`LONG`] and 5 ms
/// per node (a debug build on a loaded 2-vCPU machine set 10,000 watches at 3 ms each).
fn bulk_limit(n: usize) -> Duration {
    LONG + Duration::from_millis(5 * n as u64)
}

/// The watched node `i` under `parent`: five digits, the same length for every `i` below
/// 100,000.
fn node(parent: &str, i: usize) -> String {
    format!("{parent}/{i:05}")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// One-shot data watches (`getData` with a watch), re-armed with `SetWatches`.
    Data,
    /// Persistent watches (`addWatch`), re-armed with `SetWatches2`.
    Persistent,
}

impl Kind {
    /// Bytes of one packet besides its paths: the length prefix, the request header (xid,
    /// type), the relative zxid and the length of each path list (3 lists, or 5).
    fn header_bytes(self) -> u64 {
        let lists = match self {
            Kind::Data => 3,
            Kind::Persistent => 5,
        };
        4 + 8 + 8 + 4 * lists
    }
}

/// One watch of the session under test.
enum Watch {
    OneShot(Watcher),
    Stream(PersistentWatcher),
}

impl Watch {
    /// Its next event, within [`SOON`].
    async fn next(&mut self, what: &str) -> WatchedEvent {
        let event = match self {
            Watch::OneShot(w) => within_for(SOON, what, w).await,
            Watch::Stream(s) => within_for(SOON, what, s.next()).await,
        };
        event.unwrap_or_else(|e| panic!("{what}: {e}"))
    }
}

/// One row of the curve.
#[derive(Debug)]
struct Row {
    kind: Kind,
    watches: usize,
    /// `SetWatches` packets sent on the reconnect.
    packets: u64,
    /// Their bytes on the wire.
    bytes: u64,
    /// From letting the held reconnect through to `Connected`.
    connect_ms: f64,
    /// From `Connected` to the reply of the first request after the re-arm.
    rearm_ms: f64,
    /// Setting the watches in the first place (all pipelined).
    arm_ms: f64,
}

/// Creates `parent` and its `n` children (empty), `MULTI` per transaction, all pipelined.
async fn create_nodes(admin: &Client, parent: &str, n: usize) {
    admin
        .create(parent, b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let options = CreateOptions::persistent();
    let batches: Vec<Vec<Op>> = (0..n)
        .collect::<Vec<_>>()
        .chunks(MULTI)
        .map(|is| {
            is.iter()
                .map(|i| Op::create(&node(parent, *i), b"", &options))
                .collect()
        })
        .collect();
    let done = within_for(
        bulk_limit(n),
        "create the nodes",
        join_all(batches.iter().map(|ops| admin.multi(ops))),
    )
    .await;
    for r in done {
        r.unwrap();
    }
}

/// Sets one watch of `kind` on every path, all pipelined.
async fn arm(client: &Client, kind: Kind, paths: &[String]) -> Vec<Watch> {
    match kind {
        Kind::Data => {
            let set = join_all(paths.iter().map(|p| client.get_data_watch(p)));
            let done = within_for(bulk_limit(paths.len()), "set the data watches", set).await;
            done.into_iter()
                .map(|r| Watch::OneShot(r.unwrap().2))
                .collect()
        }
        Kind::Persistent => {
            let set = join_all(
                paths
                    .iter()
                    .map(|p| client.add_watch(p, AddWatchMode::Persistent)),
            );
            let done = within_for(bulk_limit(paths.len()), "set the persistent watches", set).await;
            done.into_iter()
                .map(|r| Watch::Stream(r.unwrap()))
                .collect()
        }
    }
}

/// Waits (within [`SOON`]) until the server's watch count is `n`.
async fn wait_watch_count(server: &Server, n: u64, what: &str) {
    let mut last = 0;
    let reached = tokio::time::timeout(SOON, async {
        loop {
            last = watch_count(server).await;
            if last == n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(
        reached.is_ok(),
        "{what}: the server holds {last} watches, not {n}"
    );
}

/// The first, the last and `SAMPLES` indices spread between, without `skip`.
fn samples(n: usize, skip: usize) -> Vec<usize> {
    let mut s: Vec<usize> = (0..SAMPLES).map(|k| k * n / SAMPLES).collect();
    s.push(n - 1);
    s.sort_unstable();
    s.dedup();
    s.retain(|i| *i != skip);
    s
}

/// Sets `n` watches of `kind` on one session behind a proxy, re-arms them through a
/// reconnect and measures it; checks that no watch was lost.
async fn measure(server: &Server, admin: &Client, kind: Kind, n: usize, parent: &str) -> Row {
    let proxy = Proxy::start(server.addr()).await;
    let client = connect(&proxy.hosts("")).await;
    let paths: Vec<String> = (0..n).map(|i| node(parent, i)).collect();
    let start = Instant::now();
    let mut watches = arm(&client, kind, &paths).await;
    let arm_ms = start.elapsed().as_secs_f64() * 1e3;
    let held = watch_count(server).await;
    if kind == Kind::Data {
        assert_eq!(held, n as u64, "one server watch per data watch");
    }

    // Cut the connection and hold the reconnect while a watched node changes.
    proxy.set_mode(Mode::Blackhole);
    let before = proxy.stats();
    proxy.cut(Cut::Close);
    let mut states = client.watch();
    within("disconnected", states.wait_for(|s| !s.is_connected())).await;
    let missed = n / 2;
    admin.set_data(&paths[missed], b"away", None).await.unwrap();
    let opened = Instant::now();
    proxy.set_mode(Mode::Pass);
    within("reconnected", states.wait_for(|s| s.is_connected())).await;
    let connected = Instant::now();
    within("a request after the re-arm", client.exists("/"))
        .await
        .unwrap();
    let armed = Instant::now();
    let after = proxy.stats();
    let packets = after.set_watches - before.set_watches;
    let bytes = after.set_watches_bytes - before.set_watches_bytes;
    assert_eq!(
        after.set_watches_replies - before.set_watches_replies,
        packets,
        "{kind:?} {n}: every SetWatches answered before the next reply"
    );

    // Every watch is back on the server; a data watch on the node changed while
    // disconnected fired at the re-arm instead.
    let fired_at_rearm = if kind == Kind::Data {
        let event = watches[missed]
            .next("the change made while disconnected")
            .await;
        assert_eq!(event.event_type, EventType::NodeDataChanged);
        assert_eq!(event.path, paths[missed]);
        1
    } else {
        0
    };
    wait_watch_count(server, held - fired_at_rearm, "after the re-arm").await;

    // Changes to sampled nodes fire their watches (the data watch on the node changed while
    // disconnected has fired already).
    let skip = if kind == Kind::Data { missed } else { n };
    let sampled = samples(n, skip);
    let changes = join_all(
        sampled
            .iter()
            .map(|i| admin.set_data(&paths[*i], b"x", None)),
    );
    for r in within("sampled changes", changes).await {
        r.unwrap();
    }
    for i in &sampled {
        let event = watches[*i].next(&format!("sampled watch {i} of {n}")).await;
        assert_eq!(event.event_type, EventType::NodeDataChanged, "watch {i}");
        assert_eq!(event.path, paths[*i], "watch {i}");
    }
    let fired = if kind == Kind::Data {
        fired_at_rearm + sampled.len() as u64
    } else {
        0
    };
    wait_watch_count(server, held - fired, "after the sampled changes").await;

    // Closed first: a one-shot watcher dropped before its event would have the client
    // remove its server watch, one request each.
    within("close", client.close()).await.unwrap();
    drop(watches);
    wait_watch_count(server, 0, "after close").await;
    Row {
        kind,
        watches: n,
        packets,
        bytes,
        connect_ms: connected.duration_since(opened).as_secs_f64() * 1e3,
        rearm_ms: armed.duration_since(connected).as_secs_f64() * 1e3,
        arm_ms,
    }
}

/// Appends `rows` to the CSV file named by `ZK_WATCHES_OUT`, if set.
fn write_out(rows: &[Row]) {
    let Ok(out) = std::env::var("ZK_WATCHES_OUT") else {
        return;
    };
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&out)
        .unwrap_or_else(|e| panic!("{out}: {e}"));
    for r in rows {
        writeln!(
            file,
            "{:?},{},{},{},{:.2},{:.2},{:.2}",
            r.kind, r.watches, r.packets, r.bytes, r.connect_ms, r.rearm_ms, r.arm_ms
        )
        .unwrap();
    }
}

#[tokio::test]
async fn rearming_watches_after_a_reconnect_costs_bytes_linear_in_their_number() {
    let server = fresh_standalone().await;
    let admin = connect(&server.hosts("")).await;
    let mut rows = Vec::new();
    for (n, parent) in sizes() {
        create_nodes(&admin, parent, n).await;
        for kind in [Kind::Data, Kind::Persistent] {
            let row = measure(&server, &admin, kind, n, parent).await;
            println!("{row:?}");
            rows.push(row);
        }
    }
    write_out(&rows);

    // Bytes: linear and exact. Every path is as long as `/a/00000`.
    let per_watch = 4 + node("/a", 0).len() as u64;
    let per_packet = BATCH_BYTES / per_watch;
    for r in &rows {
        let n = r.watches as u64;
        let packets = n.div_ceil(per_packet);
        assert_eq!(
            r.packets, packets,
            "{:?} {n}: {} packets, the model says {packets}",
            r.kind, r.packets
        );
        let bytes = per_watch * n + r.kind.header_bytes() * packets;
        assert_eq!(
            r.bytes,
            bytes,
            "{:?} {n}: {} bytes, the model says {per_watch} x {n} + {} x {packets}",
            r.kind,
            r.bytes,
            r.kind.header_bytes()
        );
        // Time: linear or better; only a generous bound (a shared machine, a debug build).
        let bound_ms = 5_000.0 + 0.2 * r.watches as f64;
        assert!(
            r.rearm_ms <= bound_ms,
            "{:?} {n}: re-arm took {:.1} ms, bound {bound_ms} ms",
            r.kind,
            r.rearm_ms
        );
    }
}
