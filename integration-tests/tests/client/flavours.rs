//! Every server flavour (issue 31), emulated by the proxy in front of the real 3.8 server
//! (`integration_tests::proxy::Emulation`: ZooKeeper 3.4, 3.5, 3.6, 3.8 as it is, 3.9 with
//! its watch-event zxids, ClickHouse Keeper before late 2025 and of 2026): each public operation works, or fails
//! locally with `Error::Unimplemented` naming the feature, and the session (and its
//! connection) survives all of it; no unsupported request ever reaches the proxy; a lock, a
//! leader latch and a cache (one-shot watches where `addWatch` is missing) work on each; a
//! Keeper reconnect ends the session as `Expired`, and a `SessionManager` carries a cache over.

use std::time::Duration;

use integration_tests::kit::cache::{
    cache_tree, diff, server_tree, wait_marker, Recorder, Replay, Tree,
};
use integration_tests::proxy::{Cut, Emulation};
use integration_tests::{chroot, standalone, Proxy, ZkTarget};
use tokio::time::Instant;
use zk_client::{
    AddWatchMode, Client, ClientBuilder, CreateMode, CreateOptions, Error, Feature, Flavour, Op,
    OpResult, ReadOp, Reconfig, ServerProfile, SessionManager, SessionState, WatcherType,
};
use zk_recipes::cache::Cache;
use zk_recipes::leader::{LeaderLatch, LeadershipPolicy};
use zk_recipes::lock::FairLock;

const LIMIT: Duration = Duration::from_secs(30);

/// One flavour: what the proxy emulates and how the client is told.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Case {
    ZooKeeper34,
    ZooKeeper35,
    ZooKeeper36,
    ZooKeeper38,
    ZooKeeper39,
    KeeperOld,
    Keeper2026,
}

/// `/keeper/api_version` of the emulated Keeper (`KeeperApiVersion::WITH_CHECK_NOT_EXISTS`).
const KEEPER_API_VERSION: &[u8] = b"3";
/// `/keeper/feature_flags` of the emulated 2026 Keeper: FILTERED_LIST, MULTI_READ,
/// CHECK_NOT_EXISTS, CREATE_IF_NOT_EXISTS, REMOVE_RECURSIVE (bits 7..3 of byte 0).
const KEEPER_2026_FLAGS: &[u8] = &[0b1111_1000];

impl Case {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Case::ZooKeeper34 => "zk34",
            Case::ZooKeeper35 => "zk35",
            Case::ZooKeeper36 => "zk36",
            Case::ZooKeeper38 => "zk38",
            Case::ZooKeeper39 => "zk39",
            Case::KeeperOld => "keeper_old",
            Case::Keeper2026 => "keeper_2026",
        }
    }

    fn emulation(self, keeper_root: &str) -> Option<Emulation> {
        match self {
            Case::ZooKeeper34 => Some(Emulation::zookeeper_3_4()),
            Case::ZooKeeper35 => Some(Emulation::zookeeper_3_5()),
            Case::ZooKeeper36 => Some(Emulation::zookeeper_3_6()),
            Case::ZooKeeper38 => Some(Emulation::zookeeper_3_8()),
            Case::ZooKeeper39 => Some(Emulation::zookeeper_3_9()),
            Case::KeeperOld => Some(Emulation::keeper_old(keeper_root)),
            Case::Keeper2026 => Some(Emulation::keeper_2026(keeper_root)),
        }
    }

    /// What the user sets: a version for ZooKeeper; detection for Keeper (plus, for the 2026
    /// one, what its flags this client cannot read say).
    fn configure(self, b: ClientBuilder) -> ClientBuilder {
        match self {
            Case::ZooKeeper34 => b.server(ServerProfile::zookeeper(3, 4)),
            Case::ZooKeeper35 => b.server(ServerProfile::zookeeper(3, 5)),
            Case::ZooKeeper36 => b.server(ServerProfile::zookeeper(3, 6)),
            Case::ZooKeeper38 => b,
            Case::ZooKeeper39 => b.server(ServerProfile::zookeeper(3, 9)),
            Case::KeeperOld => b.detect_server(true),
            Case::Keeper2026 => b
                .server(
                    ServerProfile::keeper()
                        .with(Feature::Create2)
                        .with(Feature::AddWatch)
                        .with(Feature::Ttl)
                        .with(Feature::Container),
                )
                .detect_server(true),
        }
    }

    /// The profile the client must end up with.
    fn expected(self) -> ServerProfile {
        match self {
            Case::ZooKeeper34 => ServerProfile::zookeeper(3, 4),
            Case::ZooKeeper35 => ServerProfile::zookeeper(3, 5),
            Case::ZooKeeper36 => ServerProfile::zookeeper(3, 6),
            Case::ZooKeeper38 => ServerProfile::zookeeper(3, 8),
            Case::ZooKeeper39 => ServerProfile::zookeeper(3, 9),
            Case::KeeperOld => ServerProfile::keeper().with(Feature::MultiRead),
            Case::Keeper2026 => ServerProfile::keeper()
                .with(Feature::MultiRead)
                .with(Feature::RemoveRecursive)
                .with(Feature::Create2)
                .with(Feature::AddWatch)
                .with(Feature::Ttl)
                .with(Feature::Container),
        }
    }

    pub(crate) fn keeper(self) -> bool {
        matches!(self, Case::KeeperOld | Case::Keeper2026)
    }

    /// The case a `ZKRS_SERVER_PROFILE` value stands for.
    fn from_profile_name(name: &str) -> Option<Case> {
        Some(match name.trim().to_ascii_lowercase().as_str() {
            "3.4" => Case::ZooKeeper34,
            "3.5" => Case::ZooKeeper35,
            "3.6" => Case::ZooKeeper36,
            "3.7" | "3.8" => Case::ZooKeeper38,
            "3.9" => Case::ZooKeeper39,
            "keeper" => Case::KeeperOld,
            "keeper-2026" => Case::Keeper2026,
            _ => return None,
        })
    }
}

/// The user's own server, when `ZKRS_SERVER_UNDER_TEST=host:port` is set, and the case
/// `ZKRS_SERVER_PROFILE` says it is (docs/servers.md, "Your own server"): that case's tests
/// run against it instead of the emulation; the other cases still run on their emulations.
fn server_under_test() -> Option<(String, Case)> {
    let addr = std::env::var("ZKRS_SERVER_UNDER_TEST")
        .ok()
        .filter(|a| !a.trim().is_empty())?;
    let name = std::env::var("ZKRS_SERVER_PROFILE").unwrap_or_default();
    let case = Case::from_profile_name(&name).unwrap_or_else(|| {
        panic!(
            "ZKRS_SERVER_UNDER_TEST is set: ZKRS_SERVER_PROFILE must say what it is \
             (3.4, 3.5, 3.6, 3.7, 3.8, 3.9, keeper, keeper-2026), not {name:?}"
        )
    });
    Some((addr.trim().to_owned(), case))
}

pub(crate) struct Env {
    pub(crate) proxy: Proxy,
    /// Connect string of the proxy with the test's chroot.
    pub(crate) hosts: String,
    /// A client on the real server, same chroot.
    pub(crate) admin: Client,
    pub(crate) case: Case,
    /// The user's own server ([`server_under_test`]), not an emulation.
    pub(crate) real: bool,
}

impl Env {
    pub(crate) async fn start(case: Case) -> Env {
        if let Some((addr, _)) = server_under_test().filter(|(_, c)| *c == case) {
            return Env::on_server_under_test(case, &addr).await;
        }
        let server = standalone().await;
        let root = chroot(server, &format!("flavour_{}", case.name())).await;
        let admin = Client::connect(&server.hosts(&root)).await.unwrap();
        admin
            .create("/app", b"", &CreateOptions::persistent())
            .await
            .unwrap();
        if case.keeper() {
            // Keeper's feature nodes, read through the proxy as /keeper/... (outside the
            // client's chroot).
            let opts = CreateOptions::persistent();
            admin
                .create_all("/emu/keeper/api_version", KEEPER_API_VERSION, &opts)
                .await
                .unwrap();
            if matches!(case, Case::Keeper2026) {
                admin
                    .create("/emu/keeper/feature_flags", KEEPER_2026_FLAGS, &opts)
                    .await
                    .unwrap();
            }
        }
        let proxy = Proxy::start(server.addr()).await;
        proxy.emulate(case.emulation(&format!("{root}/emu")));
        let hosts = proxy.hosts(&root);
        Env {
            proxy,
            hosts,
            admin,
            case,
            real: false,
        }
    }

    /// The environment on the user's own server at `addr`: a fresh root
    /// `/zkrs_flavours/<case>_<nanos>` (left there), the admin configured like the clients
    /// under test (a Keeper closes the connection on what it lacks), and a proxy that only
    /// counts unsupported requests and cuts connections (no `/keeper` redirection, no
    /// zxid filling: the server's own are tested).
    async fn on_server_under_test(case: Case, addr: &str) -> Env {
        let upstream = tokio::net::lookup_host(addr)
            .await
            .unwrap_or_else(|e| panic!("ZKRS_SERVER_UNDER_TEST={addr}: {e}"))
            .next()
            .unwrap_or_else(|| panic!("ZKRS_SERVER_UNDER_TEST={addr}: no address"));
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        let root = format!("/zkrs_flavours/{}_{nanos}", case.name());
        let configured = |hosts: String| case.configure(Client::builder(&hosts)).connect();
        let boot = configured(upstream.to_string())
            .await
            .unwrap_or_else(|e| panic!("ZKRS_SERVER_UNDER_TEST={addr}: {e}"));
        boot.create_all(&format!("{root}/app"), b"", &CreateOptions::persistent())
            .await
            .unwrap();
        boot.close().await.unwrap();
        let admin = configured(format!("{upstream}{root}")).await.unwrap();
        let proxy = Proxy::start(upstream).await;
        proxy.emulate(case.emulation("").map(|e| Emulation {
            keeper_root: None,
            event_zxids: false,
            translate_keeper_ops: false,
            ..e
        }));
        let hosts = proxy.hosts(&root);
        Env {
            proxy,
            hosts,
            admin,
            case,
            real: true,
        }
    }

    pub(crate) fn builder(&self) -> ClientBuilder {
        self.case
            .configure(Client::builder(&self.hosts).session_timeout(Duration::from_secs(6)))
    }

    pub(crate) async fn client(&self) -> Client {
        self.builder()
            .connect()
            .await
            .expect("connect through the proxy")
    }

    pub(crate) async fn manager(&self) -> SessionManager {
        SessionManager::builder(self.builder())
            .renew_backoff(Duration::from_millis(50), Duration::from_secs(1))
            .renew_attempts(50)
            .connect()
            .await
            .expect("first session")
    }

    pub(crate) fn assert_nothing_unsupported_sent(&self) {
        assert_eq!(
            self.proxy.stats().unsupported_requests,
            0,
            "{}: an unsupported request reached the server",
            self.case.name()
        );
    }
}

/// `result` is `Ok` when `profile` has `feature`, `Err(Unimplemented(feature))` otherwise.
fn expect<T: std::fmt::Debug>(
    profile: ServerProfile,
    feature: Feature,
    result: zk_client::Result<T>,
) {
    if profile.supports(feature) {
        assert!(result.is_ok(), "{feature}: {result:?}");
    } else {
        match result {
            Err(Error::Unimplemented(f)) => assert_eq!(f, feature),
            other => panic!("{feature} on a server without it: {other:?}"),
        }
    }
}

/// Every public operation: supported ones work, the others fail locally, and the session and
/// its connection survive.
async fn operations(case: Case) {
    let env = Env::start(case).await;
    let client = env.client().await;
    let profile = client.server_profile();
    if !(env.real && case.keeper()) {
        // A real Keeper's profile is what its own /keeper nodes say.
        assert_eq!(profile, case.expected(), "{}", case.name());
    }
    assert_eq!(
        profile.flavour(),
        if case.keeper() {
            Flavour::Keeper
        } else {
            Flavour::ZooKeeper
        }
    );
    let session = client.session_id();
    let epoch = client.connection_epoch();
    let persistent = CreateOptions::persistent();

    // Creates: with a stat (create2, or create + exists), path only, parents, in a multi.
    let (path, stat) = client.create("/app/a", b"1", &persistent).await.unwrap();
    assert_eq!(path, "/app/a");
    assert!(stat.czxid > 0 && stat.data_length == 1, "{stat:?}");
    let (_, read) = client.get_data("/app/a").await.unwrap();
    assert_eq!(read.czxid, stat.czxid);
    let seq = client
        .create_path("/app/s-", b"", &CreateOptions::persistent_sequential())
        .await
        .unwrap();
    assert!(seq.starts_with("/app/s-"), "{seq}");
    let deep = CreateOptions::ephemeral().with_container_parents(true);
    let (leaf, _) = client.create_all("/app/x/y/z", b"", &deep).await.unwrap();
    assert_eq!(leaf, "/app/x/y/z");
    let results = client
        .multi(&[
            Op::create("/app/m", b"m", &persistent),
            Op::set_data("/app/a", b"2", None),
            Op::check("/app/a", Some(1)),
        ])
        .await
        .unwrap();
    assert!(matches!(&results[0], OpResult::Create { path, .. } if path == "/app/m"));

    // The everyday reads and writes.
    assert_eq!(
        client
            .set_data("/app/a", b"3", Some(1))
            .await
            .unwrap()
            .version,
        2
    );
    assert!(client.exists("/app/a").await.unwrap().is_some());
    let mut names = client.get_children("/app").await.unwrap();
    names.sort();
    assert_eq!(names.len(), 4, "{names:?}");
    client.delete("/app/m", None).await.unwrap();
    client.sync("/app").await.unwrap();
    let (_, _, watcher) = client.get_data_watch("/app/a").await.unwrap();
    client.set_data("/app/a", b"4", None).await.unwrap();
    tokio::time::timeout(LIMIT, watcher).await.unwrap().unwrap();

    // What some servers lack.
    let ttl = CreateOptions::new(CreateMode::PersistentWithTtl).with_ttl(Duration::from_secs(60));
    let made = client.create("/app/ttl", b"", &ttl).await;
    if env.real && matches!(made, Err(Error::Unimplemented(Feature::Ttl))) {
        // A real ZooKeeper without zookeeper.extendedTypesEnabled: its own answer, which
        // keeps the connection (checked below).
    } else {
        expect(profile, Feature::Ttl, made);
    }
    let container = CreateOptions::container();
    expect(
        profile,
        Feature::Container,
        client.create("/app/c", b"", &container).await,
    );
    expect(
        profile,
        Feature::Container,
        client
            .multi(&[Op::create("/app/c2", b"", &container)])
            .await,
    );
    expect(
        profile,
        Feature::AddWatch,
        client
            .add_watch("/app", AddWatchMode::PersistentRecursive)
            .await,
    );
    expect(
        profile,
        Feature::MultiRead,
        client.multi_read(&[ReadOp::get_data("/app/a")]).await,
    );
    expect(
        profile,
        Feature::GetEphemerals,
        client.get_ephemerals("/").await,
    );
    expect(
        profile,
        Feature::GetAllChildrenNumber,
        client.get_all_children_number("/app").await,
    );
    expect(profile, Feature::WhoAmI, client.whoami().await);
    let (_, _, kept) = client.get_data_watch("/app/a").await.unwrap();
    expect(
        profile,
        Feature::RemoveWatches,
        client.remove_watches("/app/a", WatcherType::Data).await,
    );
    drop(kept);
    if !profile.supports(Feature::Reconfig) {
        let change = Reconfig::incremental().remove_server(9);
        assert!(matches!(
            client.reconfig(&change).await,
            Err(Error::Unimplemented(Feature::Reconfig))
        ));
    }

    // A subtree in one call: Keeper's RemoveRecursive where the server has it (one request,
    // carried out by the proxy's emulation), listing and deletes elsewhere.
    let before = env.proxy.stats().keeper_requests;
    client.delete_all("/app/x").await.unwrap();
    assert!(client.exists("/app/x").await.unwrap().is_none());
    let again = client.delete_all("/app/x").await;
    assert!(matches!(again, Err(Error::NoNode)), "{again:?}");
    let one_request = profile.supports(Feature::RemoveRecursive);
    if !env.real {
        assert_eq!(
            env.proxy.stats().keeper_requests - before,
            2 * u64::from(one_request),
            "{}: RemoveRecursive",
            case.name()
        );
    }

    // Still the same session on the same connection, and still working.
    client.set_data("/app/a", b"5", None).await.unwrap();
    assert_eq!(client.session_id(), session);
    assert_eq!(client.connection_epoch(), epoch, "a connection was lost");
    assert_eq!(client.state(), SessionState::Connected);
    env.assert_nothing_unsupported_sent();
    client.close().await.unwrap();
}

/// Waits until the cache holds what the server holds under `/app` and replays its events
/// from `start` to the same tree.
async fn cache_matches(env: &Env, cache: &Cache, recorder: &Recorder, start: &Tree) {
    let marker = format!(
        "{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos()
    );
    env.admin
        .set_data("/app/marker", marker.as_bytes(), None)
        .await
        .unwrap();
    wait_marker(cache, "/app/marker", marker.as_bytes(), LIMIT).await;
    let expected = server_tree(&env.admin, "/app", None).await;
    let problems = diff(&expected, &cache_tree(cache));
    assert!(
        problems.is_empty(),
        "{}: snapshot {problems:#?}",
        env.case.name()
    );
    // The events up to the marker's.
    let end = Instant::now() + LIMIT;
    loop {
        let mut replay = Replay::new(start.clone());
        let problems = replay.apply(&recorder.all());
        assert!(
            problems.is_empty(),
            "{}: events {problems:#?}",
            env.case.name()
        );
        if replay.tree == expected {
            break;
        }
        assert!(
            Instant::now() < end,
            "{}: events do not replay to the server's tree",
            env.case.name()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A lock, a leader latch and a cache on the flavour.
async fn recipes(case: Case) {
    let env = Env::start(case).await;
    env.admin
        .create("/app/marker", b"", &CreateOptions::persistent())
        .await
        .unwrap();

    // Cache: created, changed, deleted, nested, through one-shot watches where needed.
    let client = env.client().await;
    let (cache, events) = Cache::builder("/app")
        .build_with_events(client.clone())
        .unwrap();
    let (recorder, _task) = Recorder::start(events);
    tokio::time::timeout(LIMIT, cache.ready())
        .await
        .unwrap()
        .unwrap();
    let start = Tree::new();
    let admin = &env.admin;
    let opts = CreateOptions::persistent();
    admin.create("/app/n1", b"1", &opts).await.unwrap();
    admin
        .create_all("/app/n2/deep/er", b"d", &opts)
        .await
        .unwrap();
    cache_matches(&env, &cache, &recorder, &start).await;
    admin.set_data("/app/n1", b"1b", None).await.unwrap();
    admin.delete("/app/n2/deep/er", None).await.unwrap();
    admin
        .create("/app/n2/deep/other", b"o", &opts)
        .await
        .unwrap();
    admin.delete("/app/n1", None).await.unwrap();
    admin.create("/app/n1", b"again", &opts).await.unwrap();
    cache_matches(&env, &cache, &recorder, &start).await;

    // Lock: two sessions take turns.
    let other = env.client().await;
    let a = FairLock::new(client.clone(), "/locks/l").unwrap();
    let b = FairLock::new(other.clone(), "/locks/l").unwrap();
    let held = a.acquire_timeout(LIMIT).await.unwrap();
    assert!(matches!(
        b.acquire_timeout(Duration::from_millis(300)).await,
        Err(zk_recipes::Error::Timeout)
    ));
    held.release().await.unwrap();
    let held = b.acquire_timeout(LIMIT).await.unwrap();
    held.release().await.unwrap();

    // Leader latch: one of two leads, the other takes over on close.
    let (m1, m2) = (env.manager().await, env.manager().await);
    let l1 = LeaderLatch::new_managed(&m1, "/election", "one", LeadershipPolicy::Standard).unwrap();
    l1.ready_timeout(LIMIT).await.unwrap();
    let l2 = LeaderLatch::new_managed(&m2, "/election", "two", LeadershipPolicy::Standard).unwrap();
    assert!(l1.is_leader());
    l1.close().await.unwrap();
    l2.ready_timeout(LIMIT).await.unwrap();
    l2.close().await.unwrap();

    cache.close().await.unwrap();
    assert_eq!(client.state(), SessionState::Connected);
    assert_eq!(other.state(), SessionState::Connected);
    env.assert_nothing_unsupported_sent();
}

macro_rules! flavour_tests {
    ($($case:ident: $ops:ident, $recipes:ident;)*) => {$(
        #[tokio::test]
        async fn $ops() {
            operations(Case::$case).await;
        }

        #[tokio::test]
        async fn $recipes() {
            recipes(Case::$case).await;
        }
    )*};
}

flavour_tests! {
    ZooKeeper34: operations_on_zookeeper_3_4, recipes_on_zookeeper_3_4;
    ZooKeeper35: operations_on_zookeeper_3_5, recipes_on_zookeeper_3_5;
    ZooKeeper36: operations_on_zookeeper_3_6, recipes_on_zookeeper_3_6;
    ZooKeeper38: operations_on_zookeeper_3_8, recipes_on_zookeeper_3_8;
    ZooKeeper39: operations_on_zookeeper_3_9, recipes_on_zookeeper_3_9;
    KeeperOld: operations_on_keeper_before_2025, recipes_on_keeper_before_2025;
    Keeper2026: operations_on_keeper_2026, recipes_on_keeper_2026;
}

/// A client that assumes 3.8 in front of a 3.5: the server's `UNIMPLEMENTED` (and the
/// connection it closes) teaches it, the session survives, and the next call stays local.
#[tokio::test]
async fn an_unimplemented_answer_narrows_the_profile_and_the_session_survives() {
    let env = Env::start(Case::ZooKeeper35).await;
    let client = Client::builder(&env.hosts)
        .session_timeout(Duration::from_secs(6))
        .connect()
        .await
        .unwrap();
    let session = client.session_id();
    let epoch = client.connection_epoch();
    assert!(client.server_profile().supports(Feature::AddWatch));
    let first = client
        .add_watch("/app", AddWatchMode::PersistentRecursive)
        .await;
    assert!(
        matches!(first, Err(Error::Unimplemented(Feature::AddWatch))),
        "{first:?}"
    );
    assert!(!client.server_profile().supports(Feature::AddWatch));
    assert_eq!(env.proxy.stats().unsupported_requests, 1);
    // ZooKeeper closed the connection after its answer: the client reconnects and the
    // session resumes.
    let end = Instant::now() + LIMIT;
    while client.connection_epoch() == epoch {
        assert!(
            Instant::now() < end,
            "the server did not close the connection"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    client.wait_connected(LIMIT).await.unwrap();
    client.exists("/app").await.unwrap();
    assert_eq!(client.session_id(), session);
    let again = client
        .add_watch("/app", AddWatchMode::PersistentRecursive)
        .await;
    assert!(matches!(
        again,
        Err(Error::Unimplemented(Feature::AddWatch))
    ));
    assert_eq!(env.proxy.stats().unsupported_requests, 1, "sent again");
}

/// Keeper never resumes: a reconnect gets a new session, which the client reports as the end
/// of its own (`Expired`), never carrying on unaware.
#[tokio::test]
async fn a_keeper_reconnect_ends_the_session_as_expired() {
    let env = Env::start(Case::KeeperOld).await;
    let client = env.client().await;
    client
        .create("/app/mine", b"", &CreateOptions::ephemeral())
        .await
        .unwrap();
    let sessions = env.proxy.stats().new_sessions;
    env.proxy.cut(Cut::Close);
    let mut states = client.watch();
    let end = tokio::time::timeout(LIMIT, states.wait_for(SessionState::is_terminal))
        .await
        .expect("the session ends");
    assert_eq!(end, SessionState::Expired);
    assert!(
        env.proxy.stats().new_sessions > sessions,
        "resume not turned into a new session"
    );
    assert!(matches!(
        client.exists("/app").await,
        Err(Error::SessionExpired)
    ));
    env.assert_nothing_unsupported_sent();
}

/// On Keeper a `SessionManager` carries a cache (one-shot watches) over to a new session.
#[tokio::test]
async fn a_session_manager_carries_a_one_shot_cache_over_a_keeper_reconnect() {
    let env = Env::start(Case::KeeperOld).await;
    env.admin
        .create("/app/marker", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let manager = env.manager().await;
    let (cache, events) = Cache::builder("/app")
        .build_managed_with_events(&manager)
        .unwrap();
    let (recorder, _task) = Recorder::start(events);
    tokio::time::timeout(LIMIT, cache.ready())
        .await
        .unwrap()
        .unwrap();
    let opts = CreateOptions::persistent();
    env.admin.create("/app/before", b"b", &opts).await.unwrap();
    cache_matches(&env, &cache, &recorder, &Tree::new()).await;
    let first = manager.current().number;
    env.proxy.cut(Cut::Close);
    env.admin.create("/app/during", b"d", &opts).await.unwrap();
    env.admin.delete("/app/before", None).await.unwrap();
    let end = Instant::now() + LIMIT;
    while manager.current().number == first {
        assert!(Instant::now() < end, "no new session");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    env.admin.create("/app/after", b"a", &opts).await.unwrap();
    cache_matches(&env, &cache, &recorder, &Tree::new()).await;
    env.assert_nothing_unsupported_sent();
    cache.close().await.unwrap();
}

/// Random writes under the cache's root: creates (with parents), data changes, deletes.
async fn write_batch(admin: &Client, seed: u64, ops: usize) {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    for _ in 0..ops {
        let depth = rng.gen_range(1..=3);
        let mut path = "/app".to_owned();
        for level in 0..depth {
            path.push_str(&format!(
                "/{}{}",
                ["n", "m", "k"][level],
                rng.gen_range(0..3)
            ));
        }
        let data = format!("v{}", rng.gen_range(0..1000));
        let result = match rng.gen_range(0..10) {
            0..=3 => admin
                .create_all(&path, data.as_bytes(), &CreateOptions::persistent())
                .await
                .map(drop),
            4..=6 => admin.set_data(&path, data.as_bytes(), None).await.map(drop),
            _ => admin.delete(&path, None).await,
        };
        match result {
            Ok(()) | Err(Error::NoNode | Error::NodeExists | Error::NotEmpty) => {}
            Err(e) => panic!("write {path}: {e}"),
        }
    }
}

/// The cache under connection faults: each round writes while the proxy cuts, delays or
/// partitions the cache's connection, then the cache must equal a fresh read and its events
/// must replay to it. On ZooKeeper the session resumes (watches are re-registered and a pass
/// re-reads); on Keeper each cut is a new session of the manager. Without `addWatch` the
/// cache follows one-shot watches; on 3.9 its events carry zxids (`order.rs`).
async fn cache_under_faults(case: Case, rounds: u64) {
    use integration_tests::proxy::Mode;
    let env = Env::start(case).await;
    env.admin
        .create("/app/marker", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let manager = env.manager().await;
    assert_eq!(
        manager
            .client()
            .server_profile()
            .supports(Feature::AddWatch),
        case.expected().supports(Feature::AddWatch)
    );
    let (cache, events) = Cache::builder("/app")
        .build_managed_with_events(&manager)
        .unwrap();
    let (recorder, _task) = Recorder::start(events);
    tokio::time::timeout(LIMIT, cache.ready())
        .await
        .unwrap()
        .unwrap();
    for round in 0..rounds {
        match round % 3 {
            0 => env.proxy.cut(Cut::Reset),
            1 => env.proxy.set_mode(Mode::Delay(Duration::from_millis(30))),
            _ => env.proxy.set_mode(Mode::Blackhole),
        }
        write_batch(&env.admin, round, 25).await;
        env.proxy.set_mode(Mode::Pass);
        cache_matches(&env, &cache, &recorder, &Tree::new()).await;
    }
    env.assert_nothing_unsupported_sent();
    cache.close().await.unwrap();
}

#[tokio::test]
async fn one_shot_cache_matches_the_server_under_faults_on_zookeeper_3_5() {
    cache_under_faults(Case::ZooKeeper35, 9).await;
}

#[tokio::test]
async fn one_shot_cache_matches_the_server_under_faults_on_keeper_before_2025() {
    cache_under_faults(Case::KeeperOld, 6).await;
}

#[tokio::test]
async fn cache_with_event_zxids_matches_the_server_under_faults_on_zookeeper_3_9() {
    cache_under_faults(Case::ZooKeeper39, 6).await;
}

/// A Keeper user who forgot `detect_server`: the first `create2` costs the session, and the
/// poison rule stops it at the second loss in a row (shared by the manager's sessions), so the
/// failure is loud and bounded (docs/servers.md, "Why detection is not on by default").
#[tokio::test]
async fn an_unconfigured_client_on_keeper_is_stopped_by_the_poison_rule() {
    let env = Env::start(Case::KeeperOld).await;
    if env.real {
        return; // Not on a user's server: it costs their Keeper two sessions on purpose.
    }
    let manager = SessionManager::builder(
        Client::builder(&env.hosts).session_timeout(Duration::from_secs(6)),
    )
    .renew_backoff(Duration::from_millis(50), Duration::from_secs(1))
    .renew_attempts(50)
    .connect()
    .await
    .unwrap();
    let persistent = CreateOptions::persistent();
    let mut results = Vec::new();
    for round in 0..3 {
        let generation = manager.current().number;
        let client = manager.client();
        client.wait_connected(LIMIT).await.unwrap();
        let result = client.create("/app/x", b"", &persistent).await;
        let lost = matches!(result, Err(Error::ConnectionLoss | Error::SessionExpired));
        results.push(result);
        if lost {
            let end = Instant::now() + LIMIT;
            while manager.current().number == generation {
                assert!(Instant::now() < end, "round {round}: no new session");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
    assert!(
        matches!(
            &results[..],
            [Err(_), Err(_), Err(Error::ServerDropsRequest { .. })]
        ),
        "{results:?}"
    );
    assert_eq!(env.proxy.stats().unsupported_requests, 2);
    manager.close().await.unwrap();
}
