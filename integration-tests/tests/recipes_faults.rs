//! Lock recipes under faults: the protected create through a lost reply, session expiry,
//! node deletion, fenced writes, and failover in a 3-node ensemble.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{children, connect, make_counter, read_counter, wait_children};
use integration_tests::proxy::{Mode, Proxy};
use integration_tests::{chroot, ensemble, expire_session, probe, standalone, ZkTarget};
use tokio::time::{timeout, Instant};
use zk_client::{Client, Op, SessionState};
use zk_recipes::{FairLock, LockState, LossReason, ReadWriteLock, Released};

const LIMIT: Duration = Duration::from_secs(30);

/// How many times the lost-create-reply scenario runs (`PROTECTED_CREATE_RUNS`, default 100).
fn protected_runs() -> usize {
    std::env::var("PROTECTED_CREATE_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100)
}

fn passwd(client: &Client) -> [u8; 16] {
    let mut p = [0u8; 16];
    let bytes = client.session_password();
    assert_eq!(bytes.len(), 16, "session password length");
    p.copy_from_slice(&bytes);
    p
}

/// Waits until the lock state satisfies `pred`, within `limit`.
async fn wait_state(guard: &zk_recipes::LockGuard, pred: impl Fn(LockState) -> bool) -> LockState {
    let mut rx = guard.state_watcher();
    let seen = timeout(LIMIT, rx.wait_for(|s| pred(*s)))
        .await
        .expect("lock state within the limit")
        .map(|s| *s);
    seen.expect("lock state channel open")
}

#[tokio::test]
async fn protected_create_keeps_its_place_when_the_create_reply_is_lost() {
    let server = standalone().await;
    let root = chroot(server, "protected").await;
    let admin = connect(&server.hosts(&root)).await;
    admin
        .create_all("/locks/p", &[], &zk_client::CreateOptions::persistent())
        .await
        .unwrap();
    let proxy = Proxy::start(server.addr()).await;
    let client = connect(&format!("{}{root}", proxy.connect_string())).await;
    let session = client.session_id();
    let lock = FairLock::new(client.clone(), "/locks/p").unwrap();
    let runs = protected_runs();
    let started = Instant::now();
    for run in 0..runs {
        proxy.drop_next_create_reply();
        let guard = timeout(LIMIT, lock.acquire())
            .await
            .unwrap_or_else(|_| panic!("run {run}: acquire hung"))
            .unwrap_or_else(|e| panic!("run {run}: acquire failed: {e}"));
        assert!(
            proxy
                .wait_create_reply_dropped(Duration::from_secs(1))
                .await,
            "run {run}: the proxy did not drop the create reply"
        );
        let nodes = children(&admin, "/locks/p").await;
        assert_eq!(
            nodes,
            vec![guard.node_name().to_owned()],
            "run {run}: exactly our node"
        );
        assert_eq!(client.session_id(), session, "run {run}: same session");
        guard.release().await.unwrap();
    }
    println!(
        "protected create: {runs} lost create replies recovered in {:.1?} ({} connections)",
        started.elapsed(),
        proxy.stats().accepted
    );
    assert!(wait_children(&admin, "/locks/p", 0, LIMIT).await.is_empty());
}

/// A downgrade's read node is a plain (not sequential) create: when its reply is lost, the
/// lock still finds it by its guid instead of creating a second one or failing on
/// `NodeExists`.
#[tokio::test]
async fn downgrade_keeps_its_read_node_when_the_create_reply_is_lost() {
    let server = standalone().await;
    let root = chroot(server, "downgrade_lost").await;
    let admin = connect(&server.hosts(&root)).await;
    let proxy = Proxy::start(server.addr()).await;
    let client = connect(&format!("{}{root}", proxy.connect_string())).await;
    let session = client.session_id();
    let lock = ReadWriteLock::new(client.clone(), "/locks/dl").unwrap();
    let write = lock.write_lock().acquire().await.unwrap();

    proxy.drop_next_create_reply();
    let read = timeout(LIMIT, lock.read_lock().acquire())
        .await
        .expect("downgrade hung after a lost create reply")
        .expect("downgrade after a lost create reply");
    assert!(
        proxy
            .wait_create_reply_dropped(Duration::from_secs(1))
            .await,
        "the proxy did not drop the create reply"
    );
    assert_eq!(client.session_id(), session, "same session");
    let mut expected = vec![write.node_name().to_owned(), read.node_name().to_owned()];
    expected.sort();
    assert_eq!(
        children(&admin, "/locks/dl").await,
        expected,
        "exactly our two nodes"
    );
    assert!(read
        .node_name()
        .ends_with(&write.node_name()[write.node_name().len() - 10..]));
    write.release().await.unwrap();
    read.release().await.unwrap();
    assert!(wait_children(&admin, "/locks/dl", 0, LIMIT)
        .await
        .is_empty());
}

#[tokio::test]
async fn expired_holder_is_told_and_the_lock_passes_on() {
    let server = standalone().await;
    let root = chroot(server, "expiry").await;
    let hosts = server.hosts(&root);
    let admin = connect(&hosts).await;
    make_counter(&admin, "/counter").await;
    let holder = connect(&hosts).await;
    let guard = FairLock::new(holder.clone(), "/locks/e")
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let waiter = FairLock::new(connect(&hosts).await, "/locks/e").unwrap();
    let next = tokio::spawn(async move { waiter.acquire_timeout(LIMIT).await });
    assert_eq!(wait_children(&admin, "/locks/e", 2, LIMIT).await.len(), 2);

    expire_session(server.addr(), holder.session_id(), passwd(&holder))
        .await
        .expect("expire the holder's session");

    let reason = timeout(LIMIT, guard.lost()).await.expect("loss signalled");
    assert_eq!(reason, LossReason::SessionEnded);
    let g = next.await.unwrap().expect("the waiter gets the lock");
    // A fenced write by the old holder is refused, and nothing lands.
    let late = guard.fenced(&[Op::set_data("/counter", b"99", None)]).await;
    assert!(late.is_err(), "fenced write after expiry: {late:?}");
    assert_eq!(read_counter(&admin, "/counter").await, 0);
    assert_eq!(holder.state(), SessionState::Expired);
    g.release().await.unwrap();
}

#[tokio::test]
async fn partitioned_holder_is_suspended_then_lost_after_expiry() {
    let server = standalone().await;
    let root = chroot(server, "partition").await;
    let hosts = server.hosts(&root);
    let admin = connect(&hosts).await;
    let proxy = Proxy::start(server.addr()).await;
    let holder = Client::builder(&format!("{}{root}", proxy.connect_string()))
        .session_timeout(Duration::from_secs(2))
        .connect()
        .await
        .unwrap();
    let guard = FairLock::new(holder.clone(), "/locks/b")
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let node = guard.path().to_owned();

    proxy.set_mode(Mode::Blackhole);
    assert_eq!(
        wait_state(&guard, |s| s != LockState::Held).await,
        LockState::Suspended,
        "a partition first suspends the lock"
    );
    // The server expires the session and removes the node; someone else can take the lock.
    let end = Instant::now() + LIMIT;
    while admin.exists(&node).await.unwrap().is_some() {
        assert!(Instant::now() < end, "session never expired on the server");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let other = FairLock::new(connect(&hosts).await, "/locks/b").unwrap();
    let g = other
        .acquire_timeout(LIMIT)
        .await
        .expect("lock free after expiry");
    proxy.set_mode(Mode::Pass);
    assert_eq!(
        wait_state(&guard, |s| matches!(s, LockState::Lost(_))).await,
        LockState::Lost(LossReason::SessionEnded)
    );
    g.release().await.unwrap();
}

#[tokio::test]
async fn deleted_lock_node_is_signalled_and_fences_writes() {
    let hosts = common::shared_root("deleted").await;
    let admin = connect(&hosts).await;
    make_counter(&admin, "/counter").await;
    let client = connect(&hosts).await;
    let guard = FairLock::new(client.clone(), "/locks/f")
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let ok = guard
        .fenced(&[Op::set_data("/counter", b"1", None)])
        .await
        .expect("fenced write while held");
    assert_eq!(ok.len(), 1);
    admin.delete(guard.path(), None).await.unwrap();
    let late = guard.fenced(&[Op::set_data("/counter", b"2", None)]).await;
    assert!(
        late.is_err(),
        "fenced write after the node was deleted: {late:?}"
    );
    assert_eq!(read_counter(&admin, "/counter").await, 1);
    let reason = timeout(LIMIT, guard.lost()).await.expect("loss signalled");
    assert_eq!(reason, LossReason::NodeDeleted);
}

/// The member whose `cons` lists `session`.
async fn member_of(ens: &integration_tests::Ensemble, session: i64) -> usize {
    let needle = format!("sid=0x{session:x}");
    for i in 0..ens.len() {
        if let Ok(cons) = probe::four_letter_word(ens.addr(i), "cons", Duration::from_secs(5)).await
        {
            if cons.contains(&needle) {
                return i;
            }
        }
    }
    panic!("no member lists session {needle}");
}

#[tokio::test]
async fn lock_survives_failover_of_the_holders_server() {
    let ens = ensemble().await;
    let root = chroot(&ens, "failover").await;
    let hosts = ens.hosts(&root);
    let holder = connect(&hosts).await;
    let guard = FairLock::new(holder.clone(), "/locks/h")
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let session = holder.session_id();
    let waiter_client = connect(&hosts).await;
    let waiter = FairLock::new(waiter_client.clone(), "/locks/h").unwrap();
    let mut next =
        tokio::spawn(async move { waiter.acquire_timeout(Duration::from_secs(60)).await });
    assert_eq!(
        wait_children(&waiter_client, "/locks/h", 2, LIMIT)
            .await
            .len(),
        2
    );

    // Record the lock states the holder is told. The channel keeps only the latest value,
    // but it notifies only on a real change: any notification after `Held` means a
    // `Suspended` was published, even if `Held` was back before the recorder looked.
    let mut lock_states = guard.state_watcher();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let recorder = tokio::spawn(async move {
        while lock_states.changed().await.is_ok() {
            let s = *lock_states.borrow_and_update();
            log.lock().unwrap().push(s);
        }
    });
    let mut client_states = holder.state_watcher();
    let victim = member_of(&ens, session).await;
    ens.kill(victim).await;
    timeout(
        LIMIT,
        client_states.wait_for(|s| s == SessionState::Disconnected),
    )
    .await
    .expect("the client noticed the dead server");
    timeout(
        LIMIT,
        client_states.wait_for(|s| s == SessionState::Connected),
    )
    .await
    .expect("the client reconnected to another member");
    let end = Instant::now() + LIMIT;
    while guard.state() != LockState::Held || seen.lock().unwrap().is_empty() {
        assert!(
            Instant::now() < end,
            "lock never held again: {:?}",
            seen.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    recorder.abort();
    assert_eq!(holder.session_id(), session, "same session after failover");
    assert!(
        holder.exists(guard.path()).await.unwrap().is_some(),
        "node survived"
    );
    assert!(
        timeout(Duration::from_millis(500), &mut next)
            .await
            .is_err(),
        "the waiter must still be waiting"
    );
    guard.release().await.unwrap();
    let g = next.await.unwrap().expect("waiter acquires after release");
    g.release().await.unwrap();
}

/// The lock kinds and acquisition paths that must report a session end the same way.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Fair,
    Read,
    Write,
    Exclusive,
}

#[derive(Debug, Clone, Copy)]
enum How {
    Acquire,
    Timeout,
    Try,
}

const KINDS: [Kind; 4] = [Kind::Fair, Kind::Read, Kind::Write, Kind::Exclusive];

/// Acquires `kind` on `path` the `how` way (`Ok(None)`: a try that found the lock busy).
async fn acquire_as(
    kind: Kind,
    how: How,
    client: Client,
    path: &str,
) -> Result<Option<zk_recipes::LockGuard>, zk_recipes::Error> {
    macro_rules! run {
        ($lock:expr) => {
            match how {
                How::Acquire => $lock.acquire().await.map(Some),
                How::Timeout => $lock.acquire_timeout(LIMIT).await.map(Some),
                How::Try => $lock.try_acquire().await,
            }
        };
    }
    match kind {
        Kind::Fair => run!(FairLock::new(client, path)?),
        Kind::Read => run!(ReadWriteLock::new(client, path)?.read_lock()),
        Kind::Write => run!(ReadWriteLock::new(client, path)?.write_lock()),
        Kind::Exclusive => run!(zk_recipes::ExclusiveLock::new(client, path)?),
    }
}

/// Takes the lock `kind` contends for, so that a `kind` acquirer has to wait.
async fn block(kind: Kind, client: Client, path: &str) -> zk_recipes::LockGuard {
    let holder = match kind {
        Kind::Read => Kind::Write,
        k => k,
    };
    acquire_as(holder, How::Acquire, client, path)
        .await
        .expect("blocker acquires")
        .expect("blocker holds")
}

/// A waiter whose session ends is told `LockLost(SessionEnded)`, as documented, never the
/// client's `SessionExpired`.
#[tokio::test]
async fn waiter_whose_session_expires_gets_lock_lost() {
    let server = standalone().await;
    let root = chroot(server, "waiter_expired").await;
    let hosts = server.hosts(&root);
    let admin = connect(&hosts).await;
    let holder = connect(&hosts).await;
    for (i, kind) in KINDS.into_iter().enumerate() {
        for how in [How::Acquire, How::Timeout] {
            let path = format!("/locks/w{i}-{how:?}");
            let blocker = block(kind, holder.clone(), &path).await;
            let waiter = connect(&hosts).await;
            let (id, pw) = (waiter.session_id(), passwd(&waiter));
            let task = {
                let path = path.clone();
                tokio::spawn(async move { acquire_as(kind, how, waiter, &path).await })
            };
            // Queue locks: wait for the waiter's node. The exclusive lock has none: give the
            // waiter time to set its watch (the outcome must be the same either way).
            if matches!(kind, Kind::Exclusive) {
                tokio::time::sleep(Duration::from_millis(300)).await;
            } else {
                assert_eq!(wait_children(&admin, &path, 2, LIMIT).await.len(), 2);
            }
            expire_session(server.addr(), id, pw)
                .await
                .expect("expire the waiter's session");
            let result = timeout(LIMIT, task)
                .await
                .unwrap_or_else(|_| panic!("{kind:?}/{how:?}: waiter hung"))
                .unwrap();
            assert!(
                matches!(
                    result,
                    Err(zk_recipes::Error::LockLost(LossReason::SessionEnded))
                ),
                "{kind:?}/{how:?}: {result:?}"
            );
            blocker.release().await.unwrap();
        }
    }
}

/// An acquisition on a client that is already closed or expired is told
/// `LockLost(SessionEnded)`, never the client's `Closed` or `SessionExpired`.
#[tokio::test]
async fn acquire_on_an_ended_session_gets_lock_lost() {
    let server = standalone().await;
    let root = chroot(server, "ended_acquire").await;
    let hosts = server.hosts(&root);
    let closed = connect(&hosts).await;
    closed.close().await.expect("close");
    let expired = connect(&hosts).await;
    expire_session(server.addr(), expired.session_id(), passwd(&expired))
        .await
        .expect("expire");
    timeout(
        LIMIT,
        expired
            .state_watcher()
            .wait_for(|s| s == SessionState::Expired),
    )
    .await
    .expect("the client learns of the expiry");
    for client in [closed, expired] {
        for kind in KINDS {
            for how in [How::Acquire, How::Timeout, How::Try] {
                let result = timeout(LIMIT, acquire_as(kind, how, client.clone(), "/locks/x"))
                    .await
                    .unwrap_or_else(|_| panic!("{kind:?}/{how:?}: hung"));
                assert!(
                    matches!(
                        result,
                        Err(zk_recipes::Error::LockLost(LossReason::SessionEnded))
                    ),
                    "{:?} {kind:?}/{how:?}: {result:?}",
                    client.state()
                );
            }
        }
    }
}

/// `release` says what happened to the node: we deleted it, someone else had (observed or
/// not), or the session had ended and the node went with it; inner re-entries say how many
/// guards still hold it.
#[tokio::test]
async fn release_says_whether_it_deleted_the_node() {
    let server = standalone().await;
    let root = chroot(server, "release_outcome").await;
    let hosts = server.hosts(&root);
    let admin = connect(&hosts).await;
    let client = connect(&hosts).await;
    let lock = FairLock::new(client.clone(), "/locks/r").unwrap();

    // Deleted by us, after the re-entries are released.
    let g = lock.acquire().await.unwrap();
    let inner = g.reenter();
    let inner2 = g.reenter();
    assert_eq!(
        inner.release().await.unwrap(),
        Released::StillHeld { remaining: 2 }
    );
    assert_eq!(
        inner2.release().await.unwrap(),
        Released::StillHeld { remaining: 1 }
    );
    assert_eq!(g.release().await.unwrap(), Released::Deleted);
    assert!(children(&admin, "/locks/r").await.is_empty());

    // A release dropped after its first poll still deletes the node and frees the local slot.
    let g = lock.acquire().await.unwrap();
    let _ = timeout(Duration::ZERO, g.release()).await;
    assert!(wait_children(&admin, "/locks/r", 0, LIMIT).await.is_empty());
    let g = lock.acquire_timeout(LIMIT).await.expect("local slot freed");
    assert_eq!(g.release().await.unwrap(), Released::Deleted);

    // Deleted by someone else: unobserved, then observed by the guard's monitor.
    for observed in [false, true] {
        let g = lock.acquire().await.unwrap();
        if observed {
            assert_eq!(g.state(), LockState::Held);
        }
        admin.delete(g.path(), None).await.unwrap();
        if observed {
            assert_eq!(
                timeout(LIMIT, g.lost()).await.expect("loss signalled"),
                LossReason::NodeDeleted
            );
        }
        assert_eq!(
            g.release().await.unwrap(),
            Released::AlreadyGone(LossReason::NodeDeleted),
            "observed: {observed}"
        );
    }

    // The session ended: expired, or closed by us.
    for expire in [true, false] {
        let client = connect(&hosts).await;
        let g = FairLock::new(client.clone(), "/locks/r")
            .unwrap()
            .acquire()
            .await
            .unwrap();
        if expire {
            expire_session(server.addr(), client.session_id(), passwd(&client))
                .await
                .expect("expire");
            timeout(
                LIMIT,
                client
                    .state_watcher()
                    .wait_for(|s| s == SessionState::Expired),
            )
            .await
            .expect("the client learns of the expiry");
        } else {
            client.close().await.expect("close");
        }
        assert_eq!(
            timeout(LIMIT, g.release())
                .await
                .expect("release hung")
                .unwrap(),
            Released::AlreadyGone(LossReason::SessionEnded),
            "expired: {expire}"
        );
    }
    assert!(wait_children(&admin, "/locks/r", 0, LIMIT).await.is_empty());
}

/// Cuts the client's connection through `proxy` and waits (bounded) until the client has
/// connected again, on the same session.
async fn blip(proxy: &Proxy, client: &Client) {
    let epoch = client.connection_epoch();
    let session = client.session_id();
    proxy.cut(integration_tests::proxy::Cut::Reset);
    let end = Instant::now() + LIMIT;
    while client.connection_epoch() == epoch || client.state() != SessionState::Connected {
        assert!(Instant::now() < end, "the client never reconnected");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(client.session_id(), session, "same session");
}

/// A guard nobody observed during a short disconnection must not report `Held` right after
/// the reconnect: nothing has looked at the node since the connection dropped. It reports
/// `Suspended` until its monitor has seen the node again, then `Held`.
///
/// The default (current-thread) runtime makes the first `state()` deterministic: the monitor
/// it starts cannot run before the call returns.
#[tokio::test]
async fn state_after_a_reconnect_is_not_held_before_the_node_is_confirmed() {
    let server = standalone().await;
    let root = chroot(server, "reconfirm").await;
    let proxy = Proxy::start(server.addr()).await;
    let client = connect(&format!("{}{root}", proxy.connect_string())).await;
    let guard = FairLock::new(client.clone(), "/locks/rc")
        .unwrap()
        .acquire()
        .await
        .unwrap();

    blip(&proxy, &client).await;
    assert_eq!(
        guard.state(),
        LockState::Suspended,
        "Held although the connection dropped since the node was last seen"
    );
    assert_eq!(
        wait_state(&guard, |s| s == LockState::Held).await,
        LockState::Held,
        "the monitor confirms the node again"
    );
    assert_eq!(guard.state(), LockState::Held);
    guard.release().await.unwrap();
}

/// A short disconnection (the client reconnects at once) is reported by the transitions
/// stream as `Suspended` then `Held`, every time, even when it is over before anyone looks;
/// a deletion of the node then ends the stream with `Lost`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transitions_report_every_short_disconnection() {
    use futures_util::StreamExt;

    let server = standalone().await;
    let root = chroot(server, "transitions").await;
    let admin = connect(&server.hosts(&root)).await;
    let proxy = Proxy::start(server.addr()).await;
    let client = connect(&format!("{}{root}", proxy.connect_string())).await;
    let guard = FairLock::new(client.clone(), "/locks/tr")
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let mut transitions = guard.transitions();
    assert_eq!(transitions.last(), LockState::Held);

    for round in 0..3 {
        // The client is back before the stream is read: the suspension is still there.
        blip(&proxy, &client).await;
        for expected in [LockState::Suspended, LockState::Held] {
            let seen = timeout(LIMIT, transitions.changed())
                .await
                .unwrap_or_else(|_| panic!("round {round}: no transition"));
            assert_eq!(seen, Some(expected), "round {round}");
        }
        assert_eq!(guard.state(), LockState::Held, "round {round}");
    }

    // The same items as a Stream, ending after Lost.
    admin.delete(guard.path(), None).await.unwrap();
    let rest: Vec<LockState> = timeout(LIMIT, transitions.collect())
        .await
        .expect("the stream ends after the loss");
    assert_eq!(rest, vec![LockState::Lost(LossReason::NodeDeleted)]);
    assert_eq!(
        guard.release().await.unwrap(),
        Released::AlreadyGone(LossReason::NodeDeleted)
    );
}
