//! Lock recipes under faults: the protected create through a lost reply, session expiry,
//! node deletion, fenced writes, and failover in a 3-node ensemble.

use std::sync::Arc;
use std::time::Duration;

use integration_tests::prelude::*;
use integration_tests::proxy::{Mode, Proxy};
use integration_tests::{chroot, ensemble, expire_session, probe, ZkTarget};
use tokio::time::{timeout, Instant};
use zk_client::{Client, Op, SessionState};
use zk_recipes::{
    lock::{FairLock, LockState, ReadWriteLock},
    LossReason,
};

/// How many times the lost-create-reply scenario runs (`PROTECTED_CREATE_RUNS`, default 40; more
/// for a long run).
fn protected_runs() -> usize {
    std::env::var("PROTECTED_CREATE_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40)
}

#[tokio::test]
async fn protected_create_keeps_its_place_when_the_create_reply_is_lost() {
    let TestRoot { server, root, .. } = test_root("protected").await;
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
        let guard = timeout(SOON, lock.acquire())
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
    assert!(wait_children(&admin, "/locks/p", 0, SOON).await.is_empty());
}

/// A downgrade's read node is a plain (not sequential) create: when its reply is lost, the
/// lock still finds it by its guid instead of creating a second one or failing on
/// `NodeExists`.
#[tokio::test]
async fn downgrade_keeps_its_read_node_when_the_create_reply_is_lost() {
    let TestRoot { server, root, .. } = test_root("downgrade_lost").await;
    let admin = connect(&server.hosts(&root)).await;
    let proxy = Proxy::start(server.addr()).await;
    let client = connect(&format!("{}{root}", proxy.connect_string())).await;
    let session = client.session_id();
    let lock = ReadWriteLock::new(client.clone(), "/locks/dl").unwrap();
    let write = lock.write_lock().acquire().await.unwrap();

    proxy.drop_next_create_reply();
    let read = timeout(SOON, lock.read_lock().acquire())
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
    assert!(wait_children(&admin, "/locks/dl", 0, SOON).await.is_empty());
}

#[tokio::test]
async fn expired_holder_is_told_and_the_lock_passes_on() {
    let TestRoot { server, hosts, .. } = test_root("expiry").await;
    let admin = connect(&hosts).await;
    make_counter(&admin, "/counter").await;
    let holder = connect(&hosts).await;
    let guard = FairLock::new(holder.clone(), "/locks/e")
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let waiter = FairLock::new(connect(&hosts).await, "/locks/e").unwrap();
    let next = tokio::spawn(async move { waiter.acquire_timeout(SOON).await });
    assert_eq!(wait_children(&admin, "/locks/e", 2, SOON).await.len(), 2);

    expire_session(server.addr(), holder.session_id(), passwd(&holder))
        .await
        .expect("expire the holder's session");

    let reason = timeout(SOON, guard.lost()).await.expect("loss signalled");
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
    let TestRoot {
        server,
        root,
        hosts,
    } = test_root("partition").await;
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
        wait_lock_state(&guard, |s| s != LockState::Held).await,
        LockState::Suspended,
        "a partition first suspends the lock"
    );
    // The server expires the session and removes the node; someone else can take the lock.
    let end = Instant::now() + SOON;
    while admin.exists(&node).await.unwrap().is_some() {
        assert!(Instant::now() < end, "session never expired on the server");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let other = FairLock::new(connect(&hosts).await, "/locks/b").unwrap();
    let g = other
        .acquire_timeout(SOON)
        .await
        .expect("lock free after expiry");
    proxy.set_mode(Mode::Pass);
    assert_eq!(
        wait_lock_state(&guard, |s| matches!(s, LockState::Lost(_))).await,
        LockState::Lost(LossReason::SessionEnded)
    );
    g.release().await.unwrap();
}

#[tokio::test]
async fn deleted_lock_node_is_signalled_and_fences_writes() {
    let TestRoot { hosts, .. } = test_root("deleted").await;
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
    let reason = timeout(SOON, guard.lost()).await.expect("loss signalled");
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
        wait_children(&waiter_client, "/locks/h", 2, SOON)
            .await
            .len(),
        2
    );

    // Record the lock states the holder is told. The channel keeps only the latest value,
    // but it notifies only on a real change: any notification after `Held` means a
    // `Suspended` was published, even if `Held` was back before the recorder looked.
    let mut lock_states = guard.watch();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let recorder = tokio::spawn(async move {
        loop {
            let s = lock_states.changed().await;
            log.lock().unwrap().push(s);
            if matches!(s, LockState::Lost(_)) {
                break;
            }
        }
    });
    let mut client_states = holder.watch();
    let victim = member_of(&ens, session).await;
    ens.kill(victim).await;
    timeout(
        SOON,
        client_states.wait_for(|s| s == SessionState::Disconnected),
    )
    .await
    .expect("the client noticed the dead server");
    timeout(
        SOON,
        client_states.wait_for(|s| s == SessionState::Connected),
    )
    .await
    .expect("the client reconnected to another member");
    let end = Instant::now() + SOON;
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
