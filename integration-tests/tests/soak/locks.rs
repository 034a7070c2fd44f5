//! A randomized lock soak: eight contenders, each with its own session through its own fault
//! proxies (one per member of a 3-node ensemble), take `FairLock`, both sides of
//! `ReadWriteLock` (all on one Curator-style queue, odd contenders with `HandOff::Prepared`,
//! even ones with the default) and `ExclusiveLock` (its own node) round
//! after round while two fault lanes kill members (the leader too), take the quorum away for
//! longer than a session, reset, partition, delay and drop create replies. Writers increment a
//! counter (fenced, or plain with a version check); readers check the counter does not move.
//! Every hold is logged; at the end the log and the counters are checked for overlapping
//! holds, lost updates, fencing tokens out of order, conflicting writes, writes after a loss
//! signal, readers seeing a write, lock nodes deleted under a live session, and (once every
//! session is closed and the ensemble is healthy) lock nodes left behind. Any violation fails the test, with the seed and the holds
//! involved. See `soak/check.rs` for what exactly is checked, and integration-tests/README.md.
//!
//! ```sh
//! # the short run (20 s of faults, the `SOAK_SECS` default; about 30 s in all), part of `cargo test`/scripts/test.sh
//! ZK_HARNESS=process cargo test -p integration-tests --test soak locks:: -- --nocapture
//! # the long run: rounds, faults and violations are printed as it goes and at the end
//! SOAK_SECS=1800 ZK_HARNESS=process cargo test -p integration-tests --release \
//!     --test soak locks:: -- --nocapture
//! # replay a schedule (the interleaving still depends on the machine), printing every hold
//! SOAK_SEED=123456789 SOAK_TRACE=1 ZK_HARNESS=process cargo test -p integration-tests \
//!     --test soak locks:: -- --nocapture
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::lock_soak::check::{check, Findings};
use crate::lock_soak::contender::{self, Spec, ACQUIRE_LIMIT};
use crate::lock_soak::faults::{self, Target};
use crate::lock_soak::{lock, parse_counter, Config, Resource, Role, Shared};
use futures_util::future::join_all;
use integration_tests::proxy::{Mode, Proxy};
use integration_tests::{chroot, ensemble, ZkTarget};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use tokio::time::Instant;
use zk_client::{Client, CreateOptions};

/// Fewest rounds a run must make for its checks to mean anything (a liveness floor only: a
/// loaded machine makes far more).
const MIN_ROUNDS: usize = 10;
/// Violations printed in full (all are counted).
const PRINTED_VIOLATIONS: usize = 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_hold_under_random_faults() {
    let config = Config::from_env();
    println!(
        "soak: SOAK_SEED={} SOAK_SECS={} ({} contenders, session timeout {:?})",
        config.seed,
        config.duration.as_secs_f64(),
        Role::MIX.len(),
        config.session_timeout
    );
    let ens = ensemble().await;
    let root = chroot(&ens, "soak").await;
    let direct = ens.hosts(&root);
    let admin = connect_admin(&direct).await;
    for resource in [Resource::Queue, Resource::Exclusive] {
        admin
            .create(resource.counter(), b"0", &CreateOptions::persistent())
            .await
            .expect("create counter");
    }
    close(admin).await;

    let roles = Role::MIX;
    let mut proxies = Vec::new();
    for _ in roles {
        let mut mine = Vec::new();
        for member in 0..ens.len() {
            mine.push(Proxy::start(ens.addr(member)).await);
        }
        proxies.push(mine);
    }
    let shared = Arc::new(Shared::new());
    let stop_at = shared.t0 + config.duration;
    let mut rng = StdRng::seed_from_u64(config.seed);
    let mut tasks = Vec::new();
    for (id, role) in roles.iter().enumerate() {
        let mut addrs: Vec<String> = proxies[id].iter().map(|p| p.addr().to_string()).collect();
        addrs.shuffle(&mut rng);
        let spec = Spec {
            id,
            role: *role,
            hosts: format!("{}{root}", addrs.join(",")),
            seed: config.seed.wrapping_add(1 + id as u64),
            session_timeout: config.session_timeout,
        };
        tasks.push(tokio::spawn(contender::run(spec, shared.clone())));
    }

    let target = Target {
        ens: &ens,
        proxies: &proxies,
        roles: &roles,
        shared: &shared,
        session_timeout: config.session_timeout,
        stop_at,
    };
    tokio::join!(
        faults::run(&target, config.seed),
        progress(&shared, stop_at)
    );
    shared.stop.cancel();
    let drained = Instant::now();
    let mut clients = Vec::new();
    for (id, task) in tasks.into_iter().enumerate() {
        let limit = ACQUIRE_LIMIT + config.session_timeout * 4 + Duration::from_secs(30);
        let client = tokio::time::timeout(limit, task)
            .await
            .unwrap_or_else(|_| panic!("contender {id} did not stop within {limit:?}"))
            .unwrap_or_else(|e| panic!("contender {id} failed: {e}"));
        clients.extend(client);
    }
    println!(
        "[{:>7.1}s] contenders stopped ({:.1?} after the end of faults)",
        shared.secs(Instant::now()),
        drained.elapsed()
    );

    // Healthy again, then every session closed: no lock node may be left.
    for p in proxies.iter().flatten() {
        p.set_mode(Mode::Pass);
    }
    ens.wait_quorum().await;
    join_all(clients.into_iter().map(close)).await;
    let admin = connect_admin(&direct).await;
    let limit = config.session_timeout * 2 + Duration::from_secs(8);
    let (leftovers, cleanup) = wait_no_lock_nodes(&admin, limit).await;
    let mut finals = BTreeMap::new();
    for resource in [Resource::Queue, Resource::Exclusive] {
        let (data, _) = admin
            .get_data(resource.counter())
            .await
            .expect("read counter");
        finals.insert(resource, parse_counter(&data).expect("numeric counter"));
    }
    close(admin).await;

    let holds = lock(&shared.holds).clone();
    let mut findings = check(&shared, &holds, Some(&finals));
    for node in &leftovers {
        findings
            .violations
            .push(crate::lock_soak::check::Violation {
                kind: "orphan lock node",
                resource: None,
                detail: format!("{node} still there {limit:?} after every session was closed"),
            });
    }
    report(&config, &shared, &holds, &findings, cleanup);
    assert!(
        findings.violations.is_empty(),
        "soak: {} violations (SOAK_SEED={}): {:?}",
        findings.violations.len(),
        config.seed,
        findings.totals()
    );
    assert!(
        holds.len() >= MIN_ROUNDS,
        "soak: only {} rounds in {:?} (SOAK_SEED={})",
        holds.len(),
        config.duration,
        config.seed
    );
}

/// A session straight to the ensemble (no proxy), for setup and the final checks.
async fn connect_admin(hosts: &str) -> Client {
    Client::builder(hosts)
        .session_timeout(Duration::from_secs(10))
        .connect()
        .await
        .expect("admin session")
}

/// Closes a session, within a bound (a close that cannot reach a server ends locally and the
/// servers expire the session after its timeout).
async fn close(client: Client) {
    let _ = tokio::time::timeout(Duration::from_secs(5), client.close()).await;
}

/// Every 30 s until `stop_at`, prints the rounds, faults and violations so far (the checks
/// that need the counters' final values wait for the end).
async fn progress(shared: &Shared, stop_at: Instant) {
    let every = Duration::from_secs(30);
    let mut next = shared.t0 + every;
    while next < stop_at {
        tokio::time::sleep_until(next).await;
        let holds = lock(&shared.holds).clone();
        let findings = check(shared, &holds, None);
        println!(
            "[{:>7.1}s] progress: {} rounds, {} faults, {} violations {:?}",
            shared.secs(Instant::now()),
            holds.len(),
            shared.fault_total(),
            findings.violations.len(),
            findings.totals()
        );
        next += every;
    }
    tokio::time::sleep_until(stop_at).await;
}

/// Every node under the lock paths (queue children, the exclusive node), with its owner.
async fn lock_nodes(admin: &Client) -> Vec<String> {
    let mut found = Vec::new();
    if let Ok(children) = admin.get_children(crate::lock_soak::QUEUE_LOCK).await {
        for c in children {
            let path = format!("{}/{c}", crate::lock_soak::QUEUE_LOCK);
            if let Ok(Some(stat)) = admin.exists(&path).await {
                found.push(format!("{path} (session 0x{:x})", stat.ephemeral_owner));
            }
        }
    }
    if let Ok(Some(stat)) = admin.exists(crate::lock_soak::EXCLUSIVE_LOCK).await {
        found.push(format!(
            "{} (session 0x{:x})",
            crate::lock_soak::EXCLUSIVE_LOCK,
            stat.ephemeral_owner
        ));
    }
    found
}

/// Polls until no lock node is left, within `limit`; returns what is left and how long it
/// took.
async fn wait_no_lock_nodes(admin: &Client, limit: Duration) -> (Vec<String>, Duration) {
    let start = Instant::now();
    loop {
        let left = lock_nodes(admin).await;
        if left.is_empty() || start.elapsed() >= limit {
            return (left, start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn report(
    config: &Config,
    shared: &Shared,
    holds: &[crate::lock_soak::Hold],
    findings: &Findings,
    cleanup: Duration,
) {
    let mut by_role: BTreeMap<&str, usize> = BTreeMap::new();
    for h in holds {
        *by_role.entry(h.role.label()).or_default() += 1;
    }
    let faults = lock(&shared.faults).clone();
    println!("soak: ---- SOAK_SEED={} ----", config.seed);
    println!("soak: rounds {} {by_role:?}", holds.len());
    for (resource, c) in &findings.counters {
        println!(
            "soak: counter {}: {} (applied fenced {}, plain {}; uncertain {}, refused {})",
            resource.counter(),
            c.value,
            c.applied_fenced,
            c.applied_plain,
            c.uncertain,
            c.refused
        );
    }
    println!(
        "soak: reader checks {}; overlaps after a loss signal {} (closest: next holder {:.1?} \
         after the signal); writes applied across a signal {}",
        findings.reads_compared,
        findings.overlaps_after_signal,
        findings.closest_after_signal,
        findings.applied_across_signal
    );
    println!("soak: faults {} {faults:?}", shared.fault_total());
    println!("soak: events {:?}", lock(&shared.events));
    println!("soak: lock nodes gone {cleanup:.1?} after the last session closed");
    for v in findings.violations.iter().take(PRINTED_VIOLATIONS) {
        let lock = v.resource.map(|r| format!(" ({r:?})")).unwrap_or_default();
        println!("soak: VIOLATION {}{lock}: {}", v.kind, v.detail);
    }
    println!(
        "soak: violations {} {:?}",
        findings.violations.len(),
        findings.totals()
    );
}
