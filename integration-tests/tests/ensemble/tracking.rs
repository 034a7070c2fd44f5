//! Following an ensemble as it changes, against real servers: `SessionManager::update_hosts`,
//! and opt-in tracking of `/zookeeper/config` (`ClientBuilder::track_ensemble`) through a
//! grow 3 -> 5, the removal of two of the original three and a member moved to a new client
//! port (written as a wildcard address), with sessions held, a lock, a counter and a cache
//! running. Curator's `EnsembleTracker` bugs each have an assertion: no wildcard address in
//! the list (CURATOR-402), the new list used by a later session (CURATOR-551), the chroot
//! kept (CURATOR-593).
//!
//! The short version runs in CI; `ZKRS_ENSEMBLE_SOAK_SECS=<n>` keeps the lock and counter
//! running `n` seconds at each step instead of one.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::tracking_common::{worker, CuratorTracker, Tally};
use futures_util::future::join_all;
use integration_tests::prelude::*;
use integration_tests::probe::expire_session;
use integration_tests::proxy::{Cut, Proxy};
use integration_tests::{Ensemble, Settings};
use tokio::time::Instant;
use zk_client::admin::Server;
use zk_client::{
    Client, CreateOptions, EnsembleConfig, EnsembleTracking, Error, ErrorCode, Reconfig,
    TrackOutcome, TrackedHosts,
};
use zk_recipes::cache::NodeCache;

/// `super:reconfig-secret`; the server is given base64(sha1("super:reconfig-secret")).
const SUPER_AUTH: &[u8] = b"super:reconfig-secret";
const SUPER_DIGEST: &str = "super:pNx0DRB5Ge6WsRRNIRJ/8PVr9W8=";
const STEP: Duration = Duration::from_secs(30);
const SESSION: Duration = Duration::from_secs(10);

fn settings() -> Settings {
    Settings::default()
        .with_config_line("reconfigEnabled=true")
        .with_jvm_flag(format!(
            "-Dzookeeper.DigestAuthenticationProvider.superDigest={SUPER_DIGEST}"
        ))
}

/// How long the workers run at each step: 1 s, or `ZKRS_ENSEMBLE_SOAK_SECS`.
fn dwell() -> Duration {
    let secs = std::env::var("ZKRS_ENSEMBLE_SOAK_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    Duration::from_secs(secs)
}

/// An admin session on `addr` with super-user rights, for `reconfig`.
async fn admin(addr: std::net::SocketAddr) -> Client {
    Client::builder(&addr.to_string())
        .session_timeout(SESSION)
        .auth("digest", SUPER_AUTH)
        .connect()
        .await
        .expect("admin session")
}

/// `reconfig`, retried (bounded) while the previous one settles.
async fn reconfig(client: &Client, change: &Reconfig) -> EnsembleConfig {
    let deadline = Instant::now() + STEP;
    loop {
        match client.reconfig(change).await {
            Ok((config, _)) => return config,
            Err(Error::Server(ErrorCode::ReconfigInProgress | ErrorCode::NewConfigNoQuorum))
            | Err(Error::ConnectionLoss)
                if Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("reconfig {change:?}: {e}"),
        }
    }
}

/// Waits until the tracking reports `ok`.
async fn tracked(
    tracking: &EnsembleTracking,
    what: &str,
    ok: impl Fn(&TrackedHosts) -> bool,
) -> TrackedHosts {
    let mut rx = tracking.watch();
    let deadline = Instant::now() + STEP;
    loop {
        let now = rx.current();
        if ok(&now) {
            return now;
        }
        assert!(Instant::now() < deadline, "{what}: tracking at {now:?}");
        let _ = tokio::time::timeout(Duration::from_millis(200), rx.changed()).await;
    }
}

/// Every session id on the members at `addrs`, by `cons`.
async fn sessions_on(addrs: &[String]) -> Vec<i64> {
    let all = join_all(addrs.iter().map(|a| async move {
        match Server::new(a.clone()).cons().await {
            Ok(cons) => cons.iter().filter_map(|c| c.session_id).collect(),
            Err(_) => Vec::new(),
        }
    }))
    .await;
    all.into_iter().flatten().collect()
}

/// Waits until every session of `ids` is on one of the members at `addrs`.
async fn all_on(addrs: &[String], ids: &[i64]) {
    let deadline = Instant::now() + STEP;
    loop {
        let seen = sessions_on(addrs).await;
        if ids.iter().all(|id| seen.contains(id)) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "sessions {ids:x?} not all on {addrs:?}: {seen:x?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `SessionManager::update_hosts` on a real ensemble: the session stays and moves off the
/// member that left the list; the next session (after an expiry) opens on the new list,
/// with the chroot of the builder (never on the member no longer listed).
#[tokio::test]
async fn session_manager_update_hosts_keeps_the_session_and_applies_to_later_ones() {
    let zk = Ensemble::launch(3).await;
    let root = integration_tests::chroot(&zk, "manager_update_hosts").await;
    let manager =
        managed(Client::builder(&format!("{}{root}", zk.addr(0))).session_timeout(SESSION)).await;
    let first = manager.current();
    first
        .client
        .create("/mine", b"", &CreateOptions::ephemeral())
        .await
        .unwrap();
    let others = format!("{},{}", zk.addr(1), zk.addr(2));
    // The only listed member left the list: the session must move.
    assert!(manager.update_hosts(&others).await.unwrap());
    let two = [zk.addr(1).to_string(), zk.addr(2).to_string()];
    all_on(&two, &[first.client.session_id()]).await;
    assert!(first.client.exists("/mine").await.unwrap().is_some());
    assert_eq!(manager.current().number, 1, "no new session");
    // A chroot is refused and changes nothing.
    assert!(matches!(
        manager.update_hosts(&format!("{others}/other")).await,
        Err(Error::InvalidArgument(_))
    ));

    // Member 0 goes away; the session expires; the next one opens on members 1 and 2, under
    // the same chroot.
    zk.kill(0).await;
    let mut generations = manager.watch();
    expire_session(zk.addr(1), first.client.session_id(), passwd(&first.client))
        .await
        .unwrap();
    let second = tokio::time::timeout(STEP, generations.changed())
        .await
        .expect("a new session")
        .live()
        .unwrap();
    assert_eq!(second.number, 2);
    all_on(&two, &[second.client.session_id()]).await;
    second
        .client
        .create("/renewed", b"", &CreateOptions::ephemeral())
        .await
        .unwrap();
    let plain = connect(&zk.addr(1).to_string()).await;
    assert!(plain
        .exists(&format!("{root}/renewed"))
        .await
        .unwrap()
        .is_some());
    manager.close().await.unwrap();
}

/// The reconfiguration scenario: grow 3 -> 5, remove two of the original three, move the
/// third to a new client port written as `0.0.0.0`. Tracked clients follow by themselves,
/// untracked ones with `update_hosts`; a client behind address translation keeps its list
/// unless given a map. Sessions, lock, counter and cache run throughout.
#[tokio::test]
async fn tracked_and_updated_clients_follow_grow_remove_and_move() {
    let zk = Ensemble::launch_growable(5, 3, &settings()).await;
    let three = format!("{},{},{}", zk.addr(0), zk.addr(1), zk.addr(2));
    {
        let setup = connect(&three).await;
        setup
            .create_all("/app/counter", b"0", &CreateOptions::persistent())
            .await
            .unwrap();
    }
    let app = format!("{three}/app");
    // The member that stays of the original three: the leader (removing followers never
    // forces an election); it moves to a new port at the end.
    let stays = zk.leader().await.expect("a leader");
    let removed: Vec<usize> = (0..3).filter(|&i| i != stays).collect();
    let new_port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap();

    // Tracked: a session manager following the config.
    let tracking = EnsembleTracking::new();
    let tracked_manager = managed(
        Client::builder(&app)
            .session_timeout(SESSION)
            .track_ensemble(tracking.clone()),
    )
    .await;
    // Untracked: a plain client and a manager, updated by the test.
    let plain = Client::builder(&app)
        .session_timeout(SESSION)
        .connect()
        .await
        .unwrap();
    let plain_manager = managed(Client::builder(&app).session_timeout(SESSION)).await;
    // Behind address translation: proxies stand for the servers' addresses.
    let mut proxies = HashMap::new();
    for i in 0..5 {
        proxies.insert(zk.addr(i).port(), Proxy::start(zk.addr(i)).await);
    }
    let moved_addr: std::net::SocketAddr = format!("127.0.0.1:{new_port}").parse().unwrap();
    proxies.insert(new_port, Proxy::start(moved_addr).await);
    let via: HashMap<u16, String> = proxies
        .iter()
        .map(|(port, p)| (*port, p.addr().to_string()))
        .collect();
    let proxied: String = (0..3)
        .map(|i| via[&zk.addr(i).port()].clone())
        .collect::<Vec<_>>()
        .join(",");
    // ... tracked without a map: the config's addresses are not the ones it uses.
    let guarded_tracking = EnsembleTracking::new();
    let guarded = Client::builder(&format!("{proxied}/app"))
        .session_timeout(SESSION)
        .track_ensemble(guarded_tracking.clone())
        .connect()
        .await
        .unwrap();
    // ... tracked with a map: each member by its proxy.
    let map = via.clone();
    let mapped_tracking = EnsembleTracking::new()
        .map_addresses(move |m| m.client.as_ref().and_then(|c| map.get(&c.port).cloned()));
    let mapped = Client::builder(&format!("{proxied}/app"))
        .session_timeout(SESSION)
        .track_ensemble(mapped_tracking.clone())
        .connect()
        .await
        .unwrap();

    // Curator's EnsembleTracker, on the servers' addresses and behind the proxies.
    let (mut curator, curator_nat) = tokio::join!(
        CuratorTracker::start(&three, "app"),
        CuratorTracker::start(&proxied, "app")
    );
    let mut curator_seen = vec![(
        "start",
        curator.settled_conn().await,
        curator_nat.settled_conn().await,
    )];

    let ids = [
        tracked_manager.client().session_id(),
        plain.session_id(),
        plain_manager.client().session_id(),
        guarded.session_id(),
        mapped.session_id(),
    ];
    let cache = NodeCache::new(plain.clone(), "/counter").unwrap();
    tokio::time::timeout(STEP, cache.ready())
        .await
        .unwrap()
        .unwrap();
    let tally = Arc::new(Tally::default());
    let stop = Arc::new(AtomicBool::new(false));
    let workers = vec![
        {
            let m = tracked_manager.clone();
            worker(move || m.client(), tally.clone(), stop.clone())
        },
        {
            let c = plain.clone();
            worker(move || c.clone(), tally.clone(), stop.clone())
        },
        {
            let m = plain_manager.clone();
            worker(move || m.client(), tally.clone(), stop.clone())
        },
        {
            let c = mapped.clone();
            worker(move || c.clone(), tally.clone(), stop.clone())
        },
    ];
    let initial = tracked(&tracking, "first config", |t| {
        t.outcome == TrackOutcome::Unchanged
    })
    .await;
    assert_eq!(initial.hosts.len(), 3);
    // Behind the proxies, the first config already names addresses the client never used.
    let first_guarded = tracked(&guarded_tracking, "guarded first config", |t| {
        t.outcome != TrackOutcome::Started
    })
    .await;
    assert_eq!(first_guarded.outcome, TrackOutcome::Kept);
    assert_eq!(first_guarded.version, initial.version);
    tokio::time::sleep(dwell()).await;

    // 1. Grow 3 -> 5.
    let boss = admin(zk.addr(stays)).await;
    let grown = reconfig(
        &boss,
        &Reconfig::incremental()
            .add_server(zk.member_line(3, None))
            .add_server(zk.member_line(4, None)),
    )
    .await;
    assert_eq!(grown.members.len(), 5);
    let five: Vec<String> = (0..5).map(|i| zk.addr(i).to_string()).collect();
    let t = tracked(&tracking, "grown", |t| t.hosts.len() == 5).await;
    assert_eq!(t.outcome, TrackOutcome::Applied);
    assert_eq!(sorted(&t.hosts), sorted(&five));
    plain.update_hosts(&grown.connect_string()).await.unwrap();
    plain_manager
        .update_hosts(&grown.connect_string())
        .await
        .unwrap();
    let m = tracked(&mapped_tracking, "mapped grown", |t| t.hosts.len() == 5).await;
    let five_via: Vec<String> = (0..5).map(|i| via[&zk.addr(i).port()].clone()).collect();
    assert_eq!(sorted(&m.hosts), sorted(&five_via));
    // The config names addresses the guarded client never used: its list stays.
    let g = tracked(&guarded_tracking, "guarded kept", |t| {
        t.version == grown.version
    })
    .await;
    assert_eq!(g.outcome, TrackOutcome::Kept);
    assert_eq!(
        sorted(&g.hosts),
        sorted(&proxied.split(',').map(String::from).collect::<Vec<_>>())
    );
    // ... and it still reconnects through its proxies.
    let before: u64 = (0..3)
        .map(|i| proxies[&zk.addr(i).port()].stats().accepted)
        .sum();
    for i in 0..3 {
        proxies[&zk.addr(i).port()].cut(Cut::Reset);
    }
    let deadline = Instant::now() + STEP;
    while guarded.sync("/").await.is_err() {
        assert!(
            Instant::now() < deadline,
            "the guarded client did not reconnect"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let after: u64 = (0..3)
        .map(|i| proxies[&zk.addr(i).port()].stats().accepted)
        .sum();
    assert!(after > before, "the guarded client reconnected elsewhere");
    assert_eq!(guarded.session_id(), ids[3]);
    guarded.close().await.unwrap();
    curator_seen.push((
        "grown",
        curator.settled_conn().await,
        curator_nat.settled_conn().await,
    ));
    tokio::time::sleep(dwell()).await;

    // 2. Remove two of the original three; the operator then stops them.
    let boss = admin(zk.addr(stays)).await;
    let shrunk = reconfig(
        &boss,
        &Reconfig::incremental()
            .remove_server(u64::from(zk.myid(removed[0])))
            .remove_server(u64::from(zk.myid(removed[1]))),
    )
    .await;
    assert_eq!(shrunk.members.len(), 3);
    let t = tracked(&tracking, "shrunk", |t| {
        t.hosts.len() == 3 && t.version == shrunk.version
    })
    .await;
    assert!(!t.hosts.contains(&zk.addr(removed[0]).to_string()));
    plain.update_hosts(&shrunk.connect_string()).await.unwrap();
    plain_manager
        .update_hosts(&shrunk.connect_string())
        .await
        .unwrap();
    tracked(&mapped_tracking, "mapped shrunk", |t| t.hosts.len() == 3).await;
    for &i in &removed {
        zk.stop(i).await;
    }
    curator_seen.push((
        "shrunk",
        curator.settled_conn().await,
        curator_nat.settled_conn().await,
    ));
    tokio::time::sleep(dwell()).await;

    // 3. Move the remaining original member to a new client port, written as a wildcard.
    let boss = admin(zk.addr(3)).await;
    let line = zk.member_line(stays, Some(new_port)).replace(
        &format!("127.0.0.1:{new_port}"),
        &format!("0.0.0.0:{new_port}"),
    );
    let moved = reconfig(&boss, &Reconfig::incremental().add_server(line)).await;
    let member = moved.member(u64::from(zk.myid(stays))).unwrap();
    assert!(member.client.as_ref().unwrap().is_wildcard());
    let final_hosts = vec![
        format!("127.0.0.1:{new_port}"),
        zk.addr(3).to_string(),
        zk.addr(4).to_string(),
    ];
    let t = tracked(&tracking, "moved", |t| t.version == moved.version).await;
    // CURATOR-402: the wildcard never reaches the list.
    assert_eq!(sorted(&t.hosts), sorted(&final_hosts), "{t:?}");
    plain.update_hosts(&moved.connect_string()).await.unwrap();
    plain_manager
        .update_hosts(&moved.connect_string())
        .await
        .unwrap();
    tracked(&mapped_tracking, "mapped moved", |t| {
        t.hosts.contains(&via[&new_port])
    })
    .await;
    curator_seen.push((
        "moved",
        curator.settled_conn().await,
        curator_nat.settled_conn().await,
    ));
    // The old port is closed: a client still on the original list has nowhere to go.
    assert!(
        tokio::net::TcpStream::connect(zk.addr(stays))
            .await
            .is_err(),
        "the moved member still listens on its old port"
    );
    tokio::time::sleep(dwell()).await;

    stop.store(true, Ordering::SeqCst);
    let failed: Vec<u64> = join_all(workers)
        .await
        .into_iter()
        .map(|r| r.expect("worker"))
        .collect();
    let increments = tally.increments.load(Ordering::SeqCst);
    eprintln!("increments {increments}, failed rounds per worker {failed:?}");
    assert_eq!(
        tally.violations.load(Ordering::SeqCst),
        0,
        "double holder or lost update"
    );
    assert!(increments >= 4, "the workers hardly ran: {increments}");
    let (data, _) = plain.get_data("/counter").await.unwrap();
    assert_eq!(data, increments.to_string().as_bytes(), "lost update");
    // The cache saw the last value.
    let deadline = Instant::now() + STEP;
    while cache.get().map(|d| d.data) != Some(Some(data.clone())) {
        assert!(Instant::now() < deadline, "cache at {:?}", cache.get());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // No session lost: the same ids, all on the final members.
    assert_eq!(tracked_manager.current().number, 1);
    assert_eq!(plain_manager.current().number, 1);
    let now = [
        tracked_manager.client().session_id(),
        plain.session_id(),
        plain_manager.client().session_id(),
    ];
    assert_eq!(now, [ids[0], ids[1], ids[2]]);
    assert_eq!(mapped.session_id(), ids[4]);
    all_on(&final_hosts, &[ids[0], ids[1], ids[2], ids[4]]).await;

    // CURATOR-551 and CURATOR-593: after an expiry, the next session opens on the list
    // tracked (the original one has nothing left listening) and keeps the chroot.
    for manager in [&tracked_manager, &plain_manager] {
        let current = manager.current();
        let mut generations = manager.watch();
        expire_session(
            zk.addr(3),
            current.client.session_id(),
            passwd(&current.client),
        )
        .await
        .unwrap();
        let next = tokio::time::timeout(STEP * 2, generations.changed())
            .await
            .expect("a new session on the tracked list")
            .live()
            .unwrap();
        assert_eq!(next.number, 2);
        let name = format!("/renewed-{}", next.client.session_id());
        next.client
            .create(&name, b"", &CreateOptions::ephemeral())
            .await
            .unwrap();
        assert!(
            plain.exists(&name).await.unwrap().is_some(),
            "the chroot was lost"
        );
    }
    // Curator, same run: the connection strings its tracker used (the servers' addresses;
    // behind the proxies: the proxies' at first, then the servers' own), and its namespace
    // after the changes.
    let wrote = curator.write("curator-after").await;
    let kept = plain.exists("/curator-after").await.unwrap().is_some();
    for (step, direct, nat) in &curator_seen {
        eprintln!("curator after {step}: direct {direct:?}; behind proxies {nat:?}");
    }
    eprintln!("curator namespace after the changes: {wrote}, /app/curator-after exists: {kept}");
    curator.close().await;
    curator_nat.close().await;
    tracked_manager.close().await.unwrap();
    plain_manager.close().await.unwrap();
    mapped.close().await.unwrap();
    plain.close().await.unwrap();
}

fn sorted(v: &[String]) -> Vec<String> {
    let mut v = v.to_vec();
    v.sort();
    v
}
