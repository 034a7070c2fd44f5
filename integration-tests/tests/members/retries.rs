//! The typed retry helper (`zk_recipes::writes::retry`, `Retrier::new_managed`) against a real
//! server behind the fault proxy, which drops the request (the connection closed before
//! the server saw it) or the reply (applied, the client saw a connection loss) at each step
//! of each op: exactly the intended final state, never a second node, never an overwrite of
//! someone else's write; the policy's bounds end in `GaveUp`; a managed retry goes on on
//! the next session.

use std::time::{Duration, Instant};

use crate::support::{data, dropped, setup};
use integration_tests::prelude::*;
use integration_tests::probe::op;
use integration_tests::proxy::{DropRule, Mode, Proxy};
use integration_tests::{chroot, expire_session, standalone, ZkTarget};
use zk_client::{Client, CreateMode, CreateOptions, Op, OpResult};
use zk_recipes::writes::{
    self, Delete, DeleteOutcome, GetData, GuardedMulti, ProtectedCreate, Retrier, RetryPolicy,
    SetData,
};
use zk_recipes::Error;

/// getChildren's opcode (the protected create's recovery listing).
const GET_CHILDREN: i32 = 8;

fn policy() -> RetryPolicy {
    RetryPolicy::new()
        .within(LIMIT)
        .pause(Duration::from_millis(20), Duration::from_millis(200))
}

/// Arms the proxy to drop every request of `opcode` (closing the connection), runs `task`,
/// and lets requests through again once one was dropped: one dropped request.
async fn one_request_dropped<T: Send + 'static>(
    proxy: &Proxy,
    opcode: i32,
    task: impl std::future::Future<Output = T> + Send + 'static,
) -> T {
    let before = proxy.stats().requests_dropped;
    proxy.drop_on(Some(DropRule::opcode(opcode)));
    let task = tokio::spawn(task);
    eventually("request dropped", SOON, || async {
        (proxy.stats().requests_dropped > before).then_some(())
    })
    .await;
    proxy.drop_on(None);
    within("outcome", task).await.expect("task")
}

fn is_client(
    result: &Result<impl std::fmt::Debug, Error>,
    want: impl Fn(&zk_client::Error) -> bool,
) -> bool {
    matches!(result, Err(Error::Client(e)) if want(e))
}

#[tokio::test]
async fn reads_and_versioned_sets_through_a_fault_at_every_step() {
    let (proxy, client, admin, _) = setup("retry_set").await;
    admin
        .create("/v", b"0", &CreateOptions::persistent())
        .await
        .unwrap();
    // A read whose reply, then whose request, is dropped.
    proxy.drop_next_reply_to(op::GET_DATA);
    let (got, stat) = within(
        "read",
        writes::retry(&client, GetData::new("/v"), &policy()),
    )
    .await
    .unwrap();
    dropped(&proxy, "get").await;
    assert_eq!((&got[..], stat.version), (&b"0"[..], 0));
    let c = client.clone();
    let (got, _) = one_request_dropped(&proxy, op::GET_DATA, async move {
        writes::retry(&c, GetData::new("/v"), &policy()).await
    })
    .await
    .unwrap();
    assert_eq!(&got[..], b"0");

    // The set's reply dropped: applied once (version 1, not 2), reported as ours.
    proxy.drop_next_reply_to(op::SET_DATA);
    let stat = within(
        "set",
        writes::retry(&client, SetData::new("/v", b"1", 0), &policy()),
    )
    .await
    .unwrap();
    dropped(&proxy, "set").await;
    assert_eq!(
        (stat.version, data(&admin, "/v").await),
        (1, (b"1".to_vec(), 1))
    );
    // The set's request dropped: sent again, applied once.
    let c = client.clone();
    let stat = one_request_dropped(&proxy, op::SET_DATA, async move {
        writes::retry(&c, SetData::new("/v", b"2", 1), &policy()).await
    })
    .await
    .unwrap();
    assert_eq!(
        (stat.version, data(&admin, "/v").await),
        (2, (b"2".to_vec(), 2))
    );
    // The set's reply dropped, then the read-back's reply: found applied on the third try.
    proxy.drop_next_reply_to(op::SET_DATA);
    proxy.drop_next_reply_to(op::GET_DATA);
    let stat = within(
        "set",
        writes::retry(&client, SetData::new("/v", b"3", 2), &policy()),
    )
    .await
    .unwrap();
    dropped(&proxy, "set and read-back").await;
    assert_eq!(
        (stat.version, data(&admin, "/v").await),
        (3, (b"3".to_vec(), 3))
    );

    // Our request lost (never applied) while someone else takes the version: BadVersion,
    // theirs stays.
    proxy.set_mode(Mode::Refuse); // the reconnect waits until we let it through
    let c = client.clone();
    let ours =
        tokio::spawn(
            async move { writes::retry(&c, SetData::new("/v", b"4", 3), &policy()).await },
        );
    let before = proxy.stats().requests_dropped;
    proxy.drop_on(Some(DropRule::opcode(op::SET_DATA)));
    eventually("request dropped", SOON, || async {
        (proxy.stats().requests_dropped > before).then_some(())
    })
    .await;
    proxy.drop_on(None);
    admin.set_data("/v", b"theirs-4", Some(3)).await.unwrap();
    proxy.set_mode(Mode::Pass);
    let ours = within("outcome", ours).await.unwrap();
    assert!(
        is_client(&ours, |e| matches!(e, zk_client::Error::BadVersion)),
        "{ours:?}"
    );
    assert_eq!(data(&admin, "/v").await, (b"theirs-4".to_vec(), 4));

    // Our reply lost, and the node written again before we are back: the outcome cannot be
    // known (ConnectionLoss, not repeated), and the later write stays.
    proxy.set_mode(Mode::Refuse);
    proxy.drop_next_reply_to(op::SET_DATA);
    let c = client.clone();
    let ours =
        tokio::spawn(
            async move { writes::retry(&c, SetData::new("/v", b"5", 4), &policy()).await },
        );
    dropped(&proxy, "set").await;
    admin.set_data("/v", b"theirs-6", Some(5)).await.unwrap();
    proxy.set_mode(Mode::Pass);
    let ours = within("outcome", ours).await.unwrap();
    assert!(
        is_client(&ours, |e| matches!(e, zk_client::Error::ConnectionLoss)),
        "{ours:?}"
    );
    assert_eq!(data(&admin, "/v").await, (b"theirs-6".to_vec(), 6));
}

#[tokio::test]
async fn versioned_deletes_through_a_fault_at_every_step_never_remove_a_node_made_again() {
    let (proxy, client, admin, _) = setup("retry_delete").await;
    let make = |data: &'static [u8]| {
        let admin = admin.clone();
        async move {
            admin
                .create("/d", data, &CreateOptions::persistent())
                .await
                .unwrap()
        }
    };
    // The first read (the node's czxid) dropped, then the delete's request, then its reply.
    make(b"a").await;
    proxy.drop_next_reply_to(op::EXISTS);
    let done = within(
        "delete",
        writes::retry(&client, Delete::new("/d", 0), &policy()),
    )
    .await
    .unwrap();
    dropped(&proxy, "exists").await;
    assert_eq!(done, DeleteOutcome::Deleted);
    make(b"b").await;
    let c = client.clone();
    let done = one_request_dropped(&proxy, op::DELETE, async move {
        writes::retry(&c, Delete::new("/d", 0), &policy()).await
    })
    .await
    .unwrap();
    assert_eq!(done, DeleteOutcome::Deleted);
    assert!(admin.exists("/d").await.unwrap().is_none());
    make(b"c").await;
    proxy.drop_next_reply_to(op::DELETE);
    let done = within(
        "delete",
        writes::retry(&client, Delete::new("/d", 0), &policy()),
    )
    .await
    .unwrap();
    dropped(&proxy, "delete").await;
    assert_eq!(done, DeleteOutcome::Deleted);
    assert!(admin.exists("/d").await.unwrap().is_none());

    // The reply dropped, and someone else makes the node again (at version 0, the version
    // we delete at) before we are back: theirs stays.
    make(b"d").await;
    proxy.set_mode(Mode::Refuse);
    proxy.drop_next_reply_to(op::DELETE);
    let c = client.clone();
    let ours =
        tokio::spawn(async move { writes::retry(&c, Delete::new("/d", 0), &policy()).await });
    dropped(&proxy, "delete").await;
    make(b"theirs").await;
    proxy.set_mode(Mode::Pass);
    assert_eq!(
        within("outcome", ours).await.unwrap().unwrap(),
        DeleteOutcome::Deleted
    );
    assert_eq!(data(&admin, "/d").await, (b"theirs".to_vec(), 0));

    // A node at another version is BadVersion; no node at all, AlreadyGone.
    let stale = writes::retry(&client, Delete::new("/d", 3), &policy()).await;
    assert!(
        is_client(&stale, |e| matches!(e, zk_client::Error::BadVersion)),
        "{stale:?}"
    );
    assert!(admin.exists("/d").await.unwrap().is_some());
    let none = writes::retry(&client, Delete::new("/none", 0), &policy()).await;
    assert_eq!(none.unwrap(), DeleteOutcome::AlreadyGone);
}

#[tokio::test]
async fn a_protected_create_makes_one_node_through_a_fault_at_every_step() {
    let (proxy, client, admin, _) = setup("retry_protected").await;
    let session = client.session_id();
    for mode in [CreateMode::PersistentSequential, CreateMode::Ephemeral] {
        let options = CreateOptions::new(mode);
        // The request dropped: made by the second attempt, not recovered. Missing parents
        // are made as containers.
        let c = client.clone();
        let o = options.clone();
        let made = one_request_dropped(&proxy, op::CREATE2, async move {
            let op = ProtectedCreate::new("/jobs/job-", b"x", &o).unwrap();
            writes::retry(&c, op, &policy()).await
        })
        .await
        .unwrap_or_else(|e| panic!("{mode:?}: {e}"));
        assert!(!made.recovered, "{mode:?}");
        assert_eq!(
            children(&admin, "/jobs").await,
            vec![made.name().to_owned()]
        );
        admin.delete(&made.path, None).await.unwrap();
        // The create's reply dropped; then also the listing's; then also the owner check's.
        for faults in 1..=3 {
            proxy.drop_next_create_reply();
            if faults >= 2 {
                proxy.drop_next_reply_to(GET_CHILDREN);
            }
            if faults >= 3 {
                proxy.drop_next_reply_to(op::EXISTS);
            }
            let op = ProtectedCreate::new("/jobs/job-", b"x", &options).unwrap();
            let made = within("create", writes::retry(&client, op, &policy()))
                .await
                .unwrap_or_else(|e| panic!("{mode:?}, {faults} faults: {e}"));
            dropped(&proxy, "create/list/exists").await;
            assert!(made.recovered, "{mode:?}, {faults} faults");
            assert_eq!(
                children(&admin, "/jobs").await,
                vec![made.name().to_owned()],
                "{mode:?}, {faults} faults: exactly one node, the one returned"
            );
            assert_eq!(data(&admin, &made.path).await, (b"x".to_vec(), 0));
            let owner = admin
                .exists(&made.path)
                .await
                .unwrap()
                .unwrap()
                .ephemeral_owner;
            assert_eq!(mode.is_ephemeral(), owner == session, "{mode:?}: owner");
            admin.delete(&made.path, None).await.unwrap();
        }
    }
    assert_eq!(client.session_id(), session, "one session throughout");
}

#[tokio::test]
async fn a_guarded_multi_applies_once_through_lost_requests_and_replies() {
    let (proxy, client, admin, _) = setup("retry_multi").await;
    admin
        .create("/g", b"0", &CreateOptions::persistent())
        .await
        .unwrap();
    admin
        .create("/log", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let seq = CreateOptions::persistent_sequential();
    let entry = |guard: &'static [u8], version| {
        GuardedMulti::new("/g", guard, version).op(Op::create("/log/e-", guard, &seq))
    };
    // The reply dropped: the multi applied once (one entry), found by the guard.
    proxy.drop_next_reply_to(op::MULTI);
    let done = within("multi", writes::retry(&client, entry(b"1", 0), &policy()))
        .await
        .unwrap();
    dropped(&proxy, "multi").await;
    assert_eq!((done.guard.version, done.results), (1, None));
    assert_eq!(children(&admin, "/log").await.len(), 1);
    // The request dropped: sent again, applied once, with its results.
    let c = client.clone();
    let e = entry(b"2", 1);
    let done = one_request_dropped(&proxy, op::MULTI, async move {
        writes::retry(&c, e, &policy()).await
    })
    .await
    .unwrap();
    assert_eq!(done.guard.version, 2);
    assert!(
        matches!(done.results.as_deref(), Some([OpResult::Create { .. }])),
        "{done:?}"
    );
    assert_eq!(children(&admin, "/log").await.len(), 2);
    // Our request lost while someone else moves the guard: refused at the guard, nothing of
    // ours applied, theirs kept.
    proxy.set_mode(Mode::Refuse);
    let c = client.clone();
    let e = entry(b"3", 2);
    let ours = tokio::spawn(async move { writes::retry(&c, e, &policy()).await });
    let before = proxy.stats().requests_dropped;
    proxy.drop_on(Some(DropRule::opcode(op::MULTI)));
    eventually("request dropped", SOON, || async {
        (proxy.stats().requests_dropped > before).then_some(())
    })
    .await;
    proxy.drop_on(None);
    admin.set_data("/g", b"theirs", Some(2)).await.unwrap();
    proxy.set_mode(Mode::Pass);
    let ours = within("outcome", ours).await.unwrap();
    assert!(
        is_client(&ours, |e| matches!(
            e,
            zk_client::Error::Multi {
                index: 0,
                code: zk_client::ErrorCode::BadVersion
            }
        )),
        "{ours:?}"
    );
    assert_eq!(children(&admin, "/log").await.len(), 2);
    assert_eq!(data(&admin, "/g").await, (b"theirs".to_vec(), 3));
}

#[tokio::test]
async fn the_policy_bounds_end_in_gave_up() {
    let (proxy, client, admin, _) = setup("retry_bounds").await;
    admin
        .create("/n", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    // Every read's request is dropped: three attempts, then GaveUp.
    let before = proxy.stats().requests_dropped;
    proxy.drop_on(Some(DropRule::opcode(op::GET_DATA)));
    let three = policy().attempts(3);
    let out = within(
        "attempts",
        writes::retry(&client, GetData::new("/n"), &three),
    )
    .await;
    assert!(matches!(out, Err(Error::GaveUp)), "{out:?}");
    assert_eq!(
        proxy.stats().requests_dropped - before,
        3,
        "one request per attempt"
    );
    // Many attempts, one second: GaveUp once the second has passed.
    let second = policy().attempts(u32::MAX).within(Duration::from_secs(1));
    let started = Instant::now();
    let out = within("time", writes::retry(&client, GetData::new("/n"), &second)).await;
    assert!(matches!(out, Err(Error::GaveUp)), "{out:?}");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(8),
        "{took:?}"
    );
    proxy.drop_on(None);
    // Errors other than a connection loss are not repeated.
    let before = proxy.stats().to_server;
    let missing = writes::retry(&client, GetData::new("/none"), &policy()).await;
    assert!(
        is_client(&missing, |e| matches!(e, zk_client::Error::NoNode)),
        "{missing:?}"
    );
    assert!(proxy.stats().to_server - before <= 2, "sent once");
}

/// On a `SessionManager`: the write's reply is lost, and the session expires before the
/// client is back; the retry goes on on the manager's next session and finds its write
/// applied, its protected node made, once.
#[tokio::test]
async fn a_managed_retry_goes_on_on_the_next_session() {
    let server = standalone().await;
    let root = chroot(server, "retry_managed").await;
    let admin = connect(&server.hosts(&root)).await;
    admin
        .create("/v", b"0", &CreateOptions::persistent())
        .await
        .unwrap();
    let proxy = Proxy::start(server.addr()).await;
    let manager = managed(
        Client::builder(&format!("{}{root}", proxy.connect_string()))
            .session_timeout(Duration::from_secs(10))
            .poison_quarantine(Duration::ZERO),
    )
    .await;
    // After the armed reply was dropped (reconnects refused meanwhile): the session expired,
    // then the proxy opened again. Returns the ended session's id.
    let lose_session = |client: Client| {
        let proxy = &proxy;
        async move {
            dropped(proxy, "write").await;
            expire_session(server.addr(), client.session_id(), passwd(&client))
                .await
                .expect("expire the session");
            proxy.set_mode(Mode::Pass);
            client.session_id()
        }
    };

    proxy.set_mode(Mode::Refuse);
    proxy.drop_next_reply_to(op::SET_DATA);
    let m = manager.clone();
    let set = tokio::spawn(async move {
        Retrier::new_managed(&m, policy())
            .run(SetData::new("/v", b"1", 0))
            .await
    });
    let ended = lose_session(manager.client()).await;
    let stat = within("set", set).await.unwrap().unwrap();
    assert_eq!(
        (stat.version, data(&admin, "/v").await),
        (1, (b"1".to_vec(), 1))
    );
    assert_ne!(
        manager.client().session_id(),
        ended,
        "finished on the next session"
    );

    // The parent exists: the dropped reply is the node's create, not a NoNode.
    admin
        .create("/p", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    for mode in [CreateMode::PersistentSequential, CreateMode::Ephemeral] {
        proxy.set_mode(Mode::Refuse);
        proxy.drop_next_create_reply();
        let m = manager.clone();
        let made = tokio::spawn(async move {
            let op = ProtectedCreate::new("/p/n-", b"x", &CreateOptions::new(mode)).unwrap();
            Retrier::new_managed(&m, policy()).run(op).await
        });
        let ended = lose_session(manager.client()).await;
        let made = within("create", made)
            .await
            .unwrap()
            .unwrap_or_else(|e| panic!("{mode:?}: {e}"));
        let now = manager.client().session_id();
        assert_ne!(now, ended, "{mode:?}: finished on the next session");
        // A persistent node made on the ended session is found by its guid; an ephemeral
        // one went with its session and is made again on the next.
        assert_eq!(made.recovered, !mode.is_ephemeral(), "{mode:?}");
        assert_eq!(
            children(&admin, "/p").await,
            vec![made.name().to_owned()],
            "{mode:?}: exactly one node"
        );
        let owner = admin
            .exists(&made.path)
            .await
            .unwrap()
            .unwrap()
            .ephemeral_owner;
        assert_eq!(owner, if mode.is_ephemeral() { now } else { 0 }, "{mode:?}");
        admin.delete(&made.path, None).await.unwrap();
    }
    manager.close().await.unwrap();
}
