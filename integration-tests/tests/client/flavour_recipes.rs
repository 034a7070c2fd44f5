//! Every recipe on every server flavour (issue 31): a semaphore, a `PersistentNode`, group
//! members, service discovery (register + a service cache), a shared counter, a barrier and a
//! double barrier, and a leader selector, on each emulation of `flavours.rs` (ZooKeeper 3.4,
//! 3.5, 3.6, 3.8, 3.9, Keeper before 2025 and of 2026). Each works, the sessions survive, and
//! no request the flavour lacks reaches the proxy.
//!
//! The default run is one short pass per flavour. `ZKRS_FLAVOUR_MATRIX=1` adds a connection
//! cut in the middle: on ZooKeeper the sessions resume, on Keeper every session is replaced
//! (`Expired`), and the managed recipes must carry over to the new sessions (their nodes back
//! with the new session as owner, members and instances listed again, the counter followed).

use std::collections::BTreeSet;
use std::future::Future;
use std::time::Duration;

use integration_tests::proxy::Cut;
use tokio::sync::mpsc;
use tokio::time::Instant;
use zk_client::{Client, SessionManager, SessionState};
use zk_recipes::barrier::{DistributedBarrier, DistributedDoubleBarrier};
use zk_recipes::discovery::{ServiceDiscovery, ServiceInstance};
use zk_recipes::group::GroupMember;
use zk_recipes::leader::LeaderSelector;
use zk_recipes::node::{NodeOptions, PersistentNode};
use zk_recipes::semaphore::Semaphore;
use zk_recipes::shared::SharedCount;

use crate::flavours::{Case, Env};

const LIMIT: Duration = Duration::from_secs(30);
/// How long a call that must block is given before it counts as blocked.
const BLOCKED: Duration = Duration::from_millis(300);

/// Whether the full matrix (a cut in the middle of every run) was asked for.
fn matrix() -> bool {
    std::env::var_os("ZKRS_FLAVOUR_MATRIX").is_some_and(|v| v != "0" && !v.is_empty())
}

/// Polls `check` until it holds, within [`LIMIT`].
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let end = Instant::now() + LIMIT;
    while !check().await {
        assert!(Instant::now() < end, "{what}: not within {LIMIT:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A semaphore of two leases between three sessions: the third waits until one is released.
async fn semaphore(env: &Env) {
    let (a, b, c) = (env.client().await, env.client().await, env.client().await);
    let sems: Vec<Semaphore> = [a, b, c.clone()]
        .into_iter()
        .map(|client| Semaphore::new(client, "/sema", 2).unwrap())
        .collect();
    let first = sems[0].acquire_timeout(LIMIT).await.unwrap();
    let second = sems[1].acquire_timeout(LIMIT).await.unwrap();
    assert!(matches!(
        sems[2].acquire_timeout(BLOCKED).await,
        Err(zk_recipes::Error::Timeout)
    ));
    first.release().await.unwrap();
    let third = sems[2].acquire_timeout(LIMIT).await.unwrap();
    second.release().await.unwrap();
    third.release().await.unwrap();
    assert_eq!(c.state(), SessionState::Connected);
}

/// A barrier holds a waiter until removed; a double barrier of two lets both in together,
/// then both out.
async fn barriers(env: &Env) {
    let (a, b) = (env.client().await, env.client().await);
    let owner = DistributedBarrier::new(a.clone(), "/barrier").unwrap();
    let waiter = DistributedBarrier::new(b.clone(), "/barrier").unwrap();
    owner.set_barrier().await.unwrap();
    assert!(matches!(
        waiter.wait_on_barrier_timeout(BLOCKED).await,
        Err(zk_recipes::Error::Timeout)
    ));
    owner.remove_barrier().await.unwrap();
    waiter.wait_on_barrier_timeout(LIMIT).await.unwrap();

    let one = DistributedDoubleBarrier::new(a, "/double", 2).unwrap();
    let two = DistributedDoubleBarrier::new(b, "/double", 2).unwrap();
    let (entered_one, entered_two) =
        tokio::join!(one.enter_timeout(LIMIT), two.enter_timeout(LIMIT));
    entered_one.unwrap();
    entered_two.unwrap();
    let (left_one, left_two) = tokio::join!(one.leave_timeout(LIMIT), two.leave_timeout(LIMIT));
    left_one.unwrap();
    left_two.unwrap();
}

/// Two selectors on two managers: each leads once, in turn.
async fn selector(m1: &SessionManager, m2: &SessionManager) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let work = |id: &'static str| {
        let tx = tx.clone();
        move |_client: Client, _term| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(id);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };
    let one = LeaderSelector::builder("/selector", "one")
        .build_managed(m1, work("one"))
        .unwrap();
    let two = LeaderSelector::builder("/selector", "two")
        .build_managed(m2, work("two"))
        .unwrap();
    let mut led = BTreeSet::new();
    for _ in 0..2 {
        let id = tokio::time::timeout(LIMIT, rx.recv())
            .await
            .expect("a selector leads")
            .expect("the senders live");
        assert!(led.insert(id), "{id} led twice");
    }
    tokio::time::timeout(LIMIT, one.finished()).await.unwrap();
    tokio::time::timeout(LIMIT, two.finished()).await.unwrap();
    one.close().await.unwrap();
    two.close().await.unwrap();
}

/// The managed recipes that live across sessions.
struct Long {
    node: PersistentNode,
    members: [GroupMember; 2],
    discovery: ServiceDiscovery,
    instance: ServiceInstance,
    services: zk_recipes::discovery::ServiceCache,
    counters: [SharedCount; 2],
}

impl Long {
    async fn start(m1: &SessionManager, m2: &SessionManager) -> Long {
        let node =
            PersistentNode::new_managed(m1, "/reg/me", b"v1", NodeOptions::ephemeral()).unwrap();
        node.ready_timeout(LIMIT).await.unwrap();
        let members = [
            GroupMember::new_managed(m1, "/group", "a", Some(b"pa"))
                .await
                .unwrap(),
            GroupMember::new_managed(m2, "/group", "b", Some(b"pb"))
                .await
                .unwrap(),
        ];
        for m in &members {
            m.ready_timeout(LIMIT).await.unwrap();
        }
        let discovery = ServiceDiscovery::new_managed(m1, "/services").unwrap();
        let mut instance = ServiceInstance::new("web", "10.0.0.1", 8080);
        instance.id = "web-1".to_owned();
        discovery.register(&instance).await.unwrap();
        let services = ServiceDiscovery::new_managed(m2, "/services")
            .unwrap()
            .service_cache("web")
            .unwrap();
        services.ready_timeout(LIMIT).await.unwrap();
        let counters = [
            SharedCount::new_managed(m1, "/counter", 0).await.unwrap(),
            SharedCount::new_managed(m2, "/counter", 0).await.unwrap(),
        ];
        Long {
            node,
            members,
            discovery,
            instance,
            services,
            counters,
        }
    }

    /// Everything is in place on the server and seen by the followers; `count` is set
    /// through one counter and must reach the other.
    async fn check(&self, env: &Env, m1: &SessionManager, count: i32) {
        let admin = &env.admin;
        let owner = m1.client().session_id();
        // The recipe learns of its node from the create's reply, just after the server has it.
        eventually("the persistent node, owned by the current session", || async {
            let on_server =
                matches!(admin.exists("/reg/me").await, Ok(Some(s)) if s.ephemeral_owner == owner);
            on_server && self.node.path().as_deref() == Some("/reg/me")
        })
        .await;
        eventually("both group members, on both sides", || async {
            self.members.iter().all(|m| {
                let ids: Vec<String> = m.current_members().into_keys().collect();
                ids == ["a", "b"]
            })
        })
        .await;
        eventually("the registered instance in the service cache", || async {
            let ids: Vec<String> = self
                .services
                .instances()
                .into_iter()
                .map(|i| i.id)
                .collect();
            ids == ["web-1"]
        })
        .await;
        let found = self.discovery.query_for_instances("web").await.unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].id, self.instance.id);
        self.counters[0].set_count(count).await.unwrap();
        eventually("the counter followed", || async {
            self.counters[1].count().is_ok_and(|c| c == count)
        })
        .await;
    }

    async fn close(self) {
        self.services.close().await.unwrap();
        self.discovery.unregister(&self.instance).await.unwrap();
        self.discovery.close().await.unwrap();
        for c in &self.counters {
            c.close().await.unwrap();
        }
        for m in &self.members {
            m.close().await.unwrap();
        }
        self.node.close().await.unwrap();
    }
}

/// Cuts every connection through the proxy and waits until both managers work again: on
/// ZooKeeper on the same sessions, on Keeper on new ones.
async fn cut(env: &Env, managers: [&SessionManager; 2]) {
    let before: Vec<(u64, i64)> = managers
        .iter()
        .map(|m| (m.current().number, m.client().session_id()))
        .collect();
    env.proxy.cut(Cut::Close);
    for (m, (number, session)) in managers.iter().zip(before) {
        if env.case.keeper() {
            eventually("a new session after the Keeper reconnect", || async {
                m.current().number != number
            })
            .await;
        }
        let client = m.client();
        client.wait_connected(LIMIT).await.unwrap();
        assert_eq!(
            client.session_id() != session,
            env.case.keeper(),
            "{}: the session was resumed iff the server resumes sessions",
            env.case.name()
        );
    }
}

async fn every_recipe(case: Case) {
    let env = Env::start(case).await;
    let (m1, m2) = (env.manager().await, env.manager().await);
    let long = Long::start(&m1, &m2).await;
    long.check(&env, &m1, 5).await;
    semaphore(&env).await;
    barriers(&env).await;
    selector(&m1, &m2).await;
    if matrix() {
        cut(&env, [&m1, &m2]).await;
        long.check(&env, &m1, 7).await;
        semaphore(&env).await;
        barriers(&env).await;
        selector(&m1, &m2).await;
    }
    long.close().await;
    for m in [&m1, &m2] {
        assert_eq!(m.client().state(), SessionState::Connected);
    }
    env.assert_nothing_unsupported_sent();
    m1.close().await.unwrap();
    m2.close().await.unwrap();
}

macro_rules! every_recipe_tests {
    ($($case:ident: $name:ident;)*) => {$(
        #[tokio::test]
        async fn $name() {
            every_recipe(Case::$case).await;
        }
    )*};
}

every_recipe_tests! {
    ZooKeeper34: every_recipe_on_zookeeper_3_4;
    ZooKeeper35: every_recipe_on_zookeeper_3_5;
    ZooKeeper36: every_recipe_on_zookeeper_3_6;
    ZooKeeper38: every_recipe_on_zookeeper_3_8;
    ZooKeeper39: every_recipe_on_zookeeper_3_9;
    KeeperOld: every_recipe_on_keeper_before_2025;
    Keeper2026: every_recipe_on_keeper_2026;
}
