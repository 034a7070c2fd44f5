//! The sessions-per-process cost curve (issue 34 part 3): 1, 10, 100 (and 1,000 with
//! `ZK_SESSIONS_MAX=1000`) idle zk-client sessions in this process, on a fresh standalone
//! server of their own (the harness sets `maxClientCnxns=0`: no per-IP cap). At each size:
//!
//! * **connect time**: the sessions added to reach the size, connected concurrently: the time
//!   for all of them, per session, and the slowest one. Reported, not asserted (the machine is
//!   shared); the model is constant or sub-linear per session.
//! * **memory per idle session**: the process's RSS (`VmRSS`) once the sessions sat idle for
//!   a moment, minus the RSS before the first one (after a warm-up session), divided by the
//!   size; and the marginal cost: the RSS the added sessions brought, from just before their
//!   connects, per added session. The sessions of the smaller sizes stay open, so nothing
//!   freed is reused and no size counts another's memory. It is the client's user-space
//!   memory: the handle, the connection task and its buffers (as far as their pages were
//!   touched), channels, tokio's registration of the socket; not the kernel's socket
//!   buffers, not the server. RSS is the whole process's: tests running beside this one add
//!   to it, the marginal's short window (the connects and a settle) least. Model: constant.
//!   Asserted: the marginal at most [`MAX_KIB_PER_SESSION`] from 100 sessions on (below that
//!   the page granularity and one-off allocations dominate), and the value at 1,000 at most
//!   [`MAX_GROWTH`] times the value at 100.
//! * **the reconnect storm** (at the largest size; at every size with
//!   `ZK_SESSIONS_STORMS=all`, as `bench/sessions-curve.sh` runs it): the server is killed,
//!   kept down [`DOWN`], started again on the same data; every session must come back with
//!   its session id, reconnected exactly once (its connection epoch one higher), its
//!   ephemeral node still on the server. ZooKeeper accepts connections shortly before it has
//!   loaded its data and leaves those that arrive then unanswered (ZOOKEEPER-5051): the
//!   sessions that hit that window are back one connect timeout (a third of the session
//!   timeout) later. Before zk-client left such an attempt after a third of the session
//!   timeout, with one address it waited the whole session timeout and then gave the
//!   session up: this test lost 2 of 10 sessions that way. The
//!   connection attempts are counted every [`WINDOW`] (zk-client's `metrics` feature,
//!   `zk_client_connect_attempts_total`, read by a recorder local to the test's thread: the
//!   test runs on a current-thread runtime so every client task records there).
//!
//! What the client promises (`zk-client/src/hosts.rs`, `HostList::backoff`): the first
//! attempt after a connection that lasted a read timeout goes at once; every attempt after a
//! failed one waits uniformly in [b/2, b], b doubling from 50 ms to 1 s. Two checks follow:
//!
//! * **rate bounded** (deterministic): one client cannot have started more attempts `t`
//!   after the loss than [`max_attempts`]`(t)` (pauses of at least 25, 50, 100, 200, 400,
//!   500, 500... ms), so at every sample the storm's attempts so far are at most
//!   `N * max_attempts(t)`.
//! * **spread** (statistical): from the 5th attempt on, each pause is uniform over at least
//!   400 ms, whatever happened before, and such attempts are at least 400 ms apart. So from
//!   [`RAMP`] after the kill (when every earlier attempt is over), a client's expected
//!   attempts in a window of length `L` are at most `L / 400 ms`, and the count of all `N`
//!   clients in any window at most `mu + 4 sqrt(mu) + 3` with `mu = N L / 400 ms` (the actual
//!   expectation is about `N L / 750 ms`). A fleet retrying in lockstep puts all `N` in one
//!   window and fails it from about 20 sessions on. Checked on the windows where this
//!   thread kept time (see `ON_TIME`): after a stall, every attempt due during it starts at
//!   its end, in a burst that says nothing about the pacing.
//!
//! Sessions have a 15 s timeout: the server's restart (1 s down, then the JVM's start, 1 to 5
//! s here) plus one hung attempt (5 s) fit in it. They are younger than their read timeout
//! (10 s) when the server is killed, so their first attempt waits 25-50 ms;
//! `ZK_SESSIONS_AGED=1` waits until every connection is older than that (about 10 s per
//! storm), the case of long-lived sessions, whose first attempt goes at once.
//! `ZK_SESSIONS_SAMPLES=1` prints every window of every storm.
//! `ZK_SESSIONS_OUT=<file>` appends one CSV row per size (`bench/sessions-curve.sh` writes
//! the table and plot in `bench/` from it).

use std::time::Duration;

use futures_util::future::join_all;
use integration_tests::prelude::*;
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use tokio::sync::oneshot;
use tokio::time::Instant;
use zk_client::{Client, CreateOptions, SessionState};

/// Session timeout of every measured session (see the module doc).
const SESSION_TIMEOUT_SECS: u64 = 15;
/// Idle time before the RSS is read.
const SETTLE: Duration = Duration::from_millis(500);
/// The attempts are counted per window of this length (nominal: a late sample makes it
/// longer, and every bound scales with the actual length).
const WINDOW: Duration = Duration::from_millis(100);
/// How long the server stays down (kill to start); the JVM's start comes on top.
const DOWN: Duration = Duration::from_secs(1);
/// A session back this long after the server served again had an attempt that hung.
const LATE: Duration = Duration::from_millis(2500);
/// A sample this much later than [`WINDOW`] after the previous one shows a stall of the
/// runtime.
const ON_TIME: Duration = Duration::from_millis(20);
/// From this long after the kill every client is at its 5th attempt or later.
const RAMP: Duration = Duration::from_millis(1500);
/// The narrowest jitter range from the 5th attempt on (the 5th pause is uniform in
/// [400, 800] ms, every later one in [500, 1000] ms).
const SPREAD_MS: f64 = 400.0;
/// Bound on the RSS per idle session: the size of one connection's read buffer (64 KiB),
/// the one large allocation of a session. Measured: about 20 KiB (bench/sessions-curve.md).
const MAX_KIB_PER_SESSION: f64 = 64.0;
/// Constant model: the value at 1,000 sessions at most this times the value at 100.
const MAX_GROWTH: f64 = 1.5;

/// The sizes to measure: 1, 10, 100, and 1,000 when `ZK_SESSIONS_MAX` allows it.
fn sizes() -> Vec<usize> {
    let max = curve_max("ZK_SESSIONS_MAX", 100);
    [1, 10, 100, 1_000]
        .into_iter()
        .filter(|n| *n <= max)
        .collect()
}

/// `ZK_SESSIONS_AGED=1`: kill the server only once every connection is older than its read
/// timeout.
fn aged() -> bool {
    std::env::var("ZK_SESSIONS_AGED").is_ok_and(|v| v == "1")
}

/// Whether to restart the server at size `n` of `sizes`: at the largest, at every size with
/// `ZK_SESSIONS_STORMS=all`.
fn storm_at(n: usize, sizes: &[usize]) -> bool {
    std::env::var("ZK_SESSIONS_STORMS").is_ok_and(|v| v == "all") || sizes.last() == Some(&n)
}

/// This process's resident set in KiB (`VmRSS` of /proc/self/status).
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no VmRSS in /proc/self/status:\n{status}"))
}

/// Fails early, with the fix, when this process may not open a socket per session.
fn check_fd_limit(sessions: usize) {
    let limits = std::fs::read_to_string("/proc/self/limits").expect("/proc/self/limits");
    let soft = limits
        .lines()
        .find_map(|l| l.strip_prefix("Max open files"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse::<usize>().ok());
    if let Some(soft) = soft {
        let need = sessions + 256;
        assert!(
            soft >= need,
            "{sessions} sessions need about {need} file descriptors, the limit is {soft}: \
             raise it (ulimit -n {need})"
        );
    }
}

/// The most attempts one client can have started `elapsed` after it lost its connection:
/// the first at once, then after pauses of at least 25, 50, 100, 200, 400, 500, 500... ms
/// (the lower ends of the backoff's jitter ranges).
fn max_attempts(elapsed: Duration) -> u64 {
    let limit = elapsed.as_secs_f64() * 1e3;
    let (mut at, mut n) = (0.0, 0u64);
    while at <= limit {
        n += 1;
        at += (25.0 * 2f64.powi(n as i32 - 1)).min(500.0);
    }
    n
}

/// The bound on one settled window's attempts (see the module doc): `mu + 4 sqrt(mu) + 3`.
fn settled_bound(sessions: usize, window: Duration) -> f64 {
    let mu = sessions as f64 * window.as_secs_f64() * 1e3 / SPREAD_MS;
    mu + 4.0 * mu.sqrt() + 3.0
}

/// `(connection attempts, handshakes)` since the last call (each snapshot of the debugging
/// recorder takes its counters back to zero).
fn read_counts(snapshotter: &Snapshotter) -> (u64, u64) {
    let (mut attempts, mut handshakes) = (0, 0);
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        let DebugValue::Counter(n) = value else {
            continue;
        };
        match key.key().name() {
            "zk_client_connect_attempts_total" => attempts += n,
            "zk_client_connections_total" => handshakes += n,
            _ => {}
        }
    }
    (attempts, handshakes)
}

/// `mntr`'s `zk_ephemerals_count`.
async fn ephemerals(server: &Server) -> usize {
    mntr_value(server, "zk_ephemerals_count").await as usize
}

/// One window of the storm: where it ended (since the kill), its length, what it counted.
#[derive(Debug, Clone, Copy)]
struct Sample {
    end: Duration,
    len: Duration,
    attempts: u64,
    handshakes: u64,
}

/// Counts every [`WINDOW`] from `start` until `stop` fires (or [`LONG`] passed).
async fn sample(
    snapshotter: Snapshotter,
    start: Instant,
    mut stop: oneshot::Receiver<()>,
) -> Vec<Sample> {
    let mut samples = Vec::new();
    let mut last = start;
    while start.elapsed() < LONG {
        let stopped = tokio::select! {
            _ = &mut stop => true,
            () = tokio::time::sleep(WINDOW) => false,
        };
        let now = Instant::now();
        let (attempts, handshakes) = read_counts(&snapshotter);
        samples.push(Sample {
            end: now - start,
            len: now - last,
            attempts,
            handshakes,
        });
        last = now;
        if stopped {
            break;
        }
    }
    samples
}

/// What one storm did.
#[derive(Debug, Default)]
struct Storm {
    /// Kill to every session seeing the loss.
    lost_ms: f64,
    /// Kill to the server serving again.
    ready_ms: f64,
    /// Kill to the last session back.
    back_ms: f64,
    /// Connection attempts from the kill until every session was back.
    attempts: u64,
    /// The most any window held.
    peak: u64,
    /// The most a window from [`RAMP`] on held, and its bound.
    peak_settled: u64,
    settled_bound: f64,
    /// Windows from [`RAMP`] on that were checked (on time, after one on time).
    settled_windows: usize,
    /// The most handshakes a window held.
    handshake_peak: u64,
    /// Sessions back more than [`LATE`] after the server served: more than one paced retry
    /// (at most 1 s apart) and a handshake, so one attempt of theirs hung.
    late: usize,
}

/// Restarts `server` under `clients` and checks the storm (see the module doc).
async fn storm(server: &Server, clients: &[Client], snapshotter: &Snapshotter) -> Storm {
    let n = clients.len();
    let before: Vec<(i64, u64)> = clients
        .iter()
        .map(|c| {
            assert_eq!(c.state(), SessionState::Connected);
            (c.session_id(), c.connection_epoch())
        })
        .collect();
    read_counts(snapshotter);
    let (stop, stopped) = oneshot::channel();
    let start = Instant::now();
    let sampler = tokio::spawn(sample(snapshotter.clone(), start, stopped));

    server.kill().await;
    within(
        "every session sees the loss",
        join_all(clients.iter().map(|c| async move {
            c.watch().wait_for(|s| !s.is_connected()).await;
        })),
    )
    .await;
    let lost = start.elapsed();
    tokio::time::sleep_until(start + DOWN).await;
    server.start().await;
    let ready = start.elapsed();
    let back = within(
        "every session back",
        join_all(clients.iter().map(|c| async move {
            let state = c.watch().wait_for(SessionState::is_connected).await;
            (state, start.elapsed())
        })),
    )
    .await;
    let back_at = back.iter().map(|b| b.1).max().unwrap_or_default();
    tokio::time::sleep(WINDOW).await;
    let _ = stop.send(());
    let samples = sampler.await.expect("sampler");
    if std::env::var("ZK_SESSIONS_SAMPLES").is_ok_and(|v| v == "1") {
        for s in &samples {
            println!("sample {n}: {s:?}");
        }
    }

    // Every session back: the same session, reconnected once, its ephemeral still there.
    let mut lost_sessions = Vec::new();
    for (i, (c, (state, _))) in clients.iter().zip(&back).enumerate() {
        let (id, epoch) = before[i];
        if *state != SessionState::Connected
            || c.session_id() != id
            || c.connection_epoch() != epoch + 1
        {
            lost_sessions.push(format!(
                "session {i} ({id:#x}): {state:?}, id {:#x}, epoch {} -> {}",
                c.session_id(),
                epoch,
                c.connection_epoch()
            ));
        }
    }
    if !lost_sessions.is_empty() {
        let logs = server.logs().await;
        let tail: Vec<&str> = logs.lines().rev().take(200).collect();
        panic!(
            "{} of {n} sessions not back as they were: {lost_sessions:?}\nserver log (last \
             200 lines, newest first):\n{}",
            lost_sessions.len(),
            tail.join("\n")
        );
    }
    assert_eq!(ephemerals(server).await, n, "ephemerals after the storm");

    // Rate bounded: at every sample, the attempts so far within what n clients may start.
    let mut so_far = 0;
    for s in &samples {
        so_far += s.attempts;
        let bound = n as u64 * max_attempts(s.end);
        assert!(
            so_far <= bound,
            "{so_far} attempts by {:?} after the kill: more than {n} clients may start \
             ({bound}); samples {samples:?}",
            s.end
        );
    }
    assert!(so_far >= n as u64, "{so_far} attempts for {n} reconnects");

    // Spread: every window from RAMP on within its bound, if the runtime kept time around it.
    // After a stall of this thread (a loaded machine) the attempts due during it all start
    // at its end, in one burst: the sampler, late too, counts that burst in the window after
    // its late sample. So a window is checked only if it and the one before it ended on
    // time ([`ON_TIME`]).
    let on_time: Vec<bool> = samples.iter().map(|s| s.len <= WINDOW + ON_TIME).collect();
    let mut out = Storm {
        lost_ms: lost.as_secs_f64() * 1e3,
        ready_ms: ready.as_secs_f64() * 1e3,
        back_ms: back_at.as_secs_f64() * 1e3,
        attempts: so_far,
        peak: samples.iter().map(|s| s.attempts).max().unwrap_or(0),
        handshake_peak: samples.iter().map(|s| s.handshakes).max().unwrap_or(0),
        late: back.iter().filter(|b| b.1 > ready + LATE).count(),
        ..Storm::default()
    };
    let checked = samples.iter().enumerate().filter(|(i, s)| {
        s.end.saturating_sub(s.len) >= RAMP
            && on_time[*i]
            && i.checked_sub(1).is_some_and(|p| on_time[p])
    });
    for (_, s) in checked {
        let bound = settled_bound(n, s.len);
        assert!(
            s.attempts as f64 <= bound,
            "{} attempts in the window of {:?} ending {:?} after the kill: more than the \
             jitter allows ({bound:.1}); samples {samples:?}",
            s.attempts,
            s.len,
            s.end
        );
        out.settled_windows += 1;
        if s.attempts >= out.peak_settled {
            out.peak_settled = s.attempts;
            out.settled_bound = bound;
        }
    }
    out
}

/// One row of the curve.
#[derive(Debug)]
struct Row {
    sessions: usize,
    added: usize,
    /// Attempts the added sessions' connects took.
    connect_attempts: u64,
    connect_all_ms: f64,
    connect_max_ms: f64,
    kib_per_session: f64,
    kib_marginal: f64,
    /// At the sizes that restarted the server.
    storm: Option<Storm>,
}

/// Connects `added` more sessions concurrently; returns them, the time for all and the
/// slowest one's.
async fn connect_more(hosts: &str, added: usize) -> (Vec<Client>, Duration, Duration) {
    let start = Instant::now();
    let timed = join_all((0..added).map(|_| async {
        let t = Instant::now();
        let client = connect_with_timeout(hosts, SESSION_TIMEOUT_SECS).await;
        (client, t.elapsed())
    }))
    .await;
    let all = start.elapsed();
    let slowest = timed.iter().map(|t| t.1).max().unwrap_or_default();
    (timed.into_iter().map(|t| t.0).collect(), all, slowest)
}

async fn curve(snapshotter: Snapshotter) -> Vec<Row> {
    let sizes = sizes();
    check_fd_limit(sizes.last().copied().unwrap_or(0));
    let server = fresh_standalone().await;
    let hosts = server.connect_string();
    // One session first, so that one-off costs (the runtime's first socket, the metrics'
    // keys, lazy statics) are not counted; closed before the first storm.
    let mut warm = Some(connect_with_timeout(&hosts, SESSION_TIMEOUT_SECS).await);
    tokio::time::sleep(SETTLE).await;
    let baseline = rss_kib();
    let mut clients: Vec<Client> = Vec::new();
    let mut connected_at = Instant::now();
    let mut rows = Vec::new();
    for &n in &sizes {
        let first = clients.len();
        let added = n - first;
        read_counts(&snapshotter);
        let before = rss_kib();
        let (more, all, slowest) = connect_more(&hosts, added).await;
        let (connect_attempts, _) = read_counts(&snapshotter);
        clients.extend(more);
        connected_at = connected_at.max(Instant::now());
        tokio::time::sleep(SETTLE).await;
        let rss = rss_kib();
        let kib_per_session = (rss as f64 - baseline as f64) / n as f64;
        let kib_marginal = (rss as f64 - before as f64) / added as f64;
        if let Some(warm) = warm.take() {
            within("close the warm-up session", warm.close())
                .await
                .expect("close");
        }

        within(
            "an ephemeral per session",
            join_all(clients[first..].iter().enumerate().map(|(i, c)| {
                c.create_path(
                    &format!("/curve-{}", first + i),
                    b"",
                    &CreateOptions::ephemeral(),
                )
            })),
        )
        .await
        .into_iter()
        .for_each(|r| {
            r.expect("create the ephemeral");
        });
        assert_eq!(ephemerals(&server).await, n, "ephemerals before the storm");

        let storm = if storm_at(n, &sizes) {
            if aged() {
                // The read timeout is 2/3 of the session timeout; a connection that lasted
                // that long resets the backoff.
                let read_timeout = Duration::from_secs(SESSION_TIMEOUT_SECS * 2 / 3);
                tokio::time::sleep_until(connected_at + read_timeout + Duration::from_secs(1))
                    .await;
            }
            let storm = storm(&server, &clients, &snapshotter).await;
            connected_at = Instant::now();
            Some(storm)
        } else {
            None
        };
        let row = Row {
            sessions: n,
            added,
            connect_attempts,
            connect_all_ms: all.as_secs_f64() * 1e3,
            connect_max_ms: slowest.as_secs_f64() * 1e3,
            kib_per_session,
            kib_marginal,
            storm,
        };
        println!("{row:?}");
        rows.push(row);
    }
    for closed in within(
        "close every session",
        join_all(clients.iter().map(Client::close)),
    )
    .await
    {
        closed.expect("close");
    }
    rows
}

/// Appends `rows` that restarted the server to the CSV file `out`.
fn write_csv(out: &str, rows: &[Row]) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(out)
        .unwrap_or_else(|e| panic!("{out}: {e}"));
    for r in rows {
        let Some(s) = &r.storm else {
            continue;
        };
        writeln!(
            file,
            "{},{},{},{},{:.1},{:.3},{:.1},{:.2},{:.2},{:.0},{:.0},{:.0},{},{},{},{},{:.1},{},{},{}",
            r.sessions,
            r.added,
            u8::from(aged()),
            r.connect_attempts,
            r.connect_all_ms,
            r.connect_all_ms / r.added.max(1) as f64,
            r.connect_max_ms,
            r.kib_per_session,
            r.kib_marginal,
            s.lost_ms,
            s.ready_ms,
            s.back_ms,
            s.attempts,
            s.peak,
            s.handshake_peak,
            s.peak_settled,
            s.settled_bound,
            s.settled_windows,
            r.sessions as u64 * max_attempts(Duration::from_secs_f64(s.back_ms / 1e3)),
            s.late,
        )
        .unwrap_or_else(|e| panic!("{out}: {e}"));
    }
}

#[test]
fn idle_sessions_cost_constant_memory_and_all_come_back_paced() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let rows = metrics::with_local_recorder(&recorder, || runtime.block_on(curve(snapshotter)));
    if let Ok(out) = std::env::var("ZK_SESSIONS_OUT") {
        write_csv(&out, &rows);
    }

    // Memory per idle session: below the bound from 100 sessions on, constant from 100 to
    // 1,000.
    for r in rows.iter().filter(|r| r.sessions >= 100) {
        assert!(
            r.kib_marginal <= MAX_KIB_PER_SESSION,
            "{} sessions: the {} added took {:.1} KiB of RSS each (bound \
             {MAX_KIB_PER_SESSION} KiB)",
            r.sessions,
            r.added,
            r.kib_marginal
        );
    }
    let at = |n: usize| rows.iter().find(|r| r.sessions == n);
    if let (Some(hundred), Some(thousand)) = (at(100), at(1_000)) {
        assert!(
            thousand.kib_per_session <= MAX_GROWTH * hundred.kib_per_session.max(1.0),
            "not constant: {:.1} KiB per session at 1,000, {:.1} at 100",
            thousand.kib_per_session,
            hundred.kib_per_session
        );
    }
}

#[test]
fn the_attempt_bound_follows_the_backoff() {
    // At once; then 25 ms, 75, 175, 375, 775, 1275, 1775 ms...
    assert_eq!(max_attempts(Duration::ZERO), 1);
    assert_eq!(max_attempts(Duration::from_millis(24)), 1);
    assert_eq!(max_attempts(Duration::from_millis(25)), 2);
    assert_eq!(max_attempts(Duration::from_millis(774)), 5);
    assert_eq!(max_attempts(Duration::from_millis(775)), 6);
    assert_eq!(max_attempts(Duration::from_millis(1775)), 8);
    assert_eq!(max_attempts(Duration::from_millis(10_775)), 26);
    // Lockstep (every client in one window) fails the spread bound from about 20 sessions.
    assert!(settled_bound(20, WINDOW) < 20.0);
    assert!(settled_bound(10, WINDOW) > 10.0);
}
