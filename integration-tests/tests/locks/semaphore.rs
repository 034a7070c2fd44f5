//! Semaphores on a real server: never more holders than leases (under contention and with
//! holders' sessions expiring), one waiter woken per freed lease (counted on the server),
//! cancelled or timed-out acquisitions leave no node, a waiter whose lease node (or whole
//! path) is deleted queues again, `acquire_many` is all or nothing;
//! `MultiLock` is all or nothing too; revocation reaches a lease holder; every lock carries
//! owner data and lists its participants.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use integration_tests::prelude::*;
use integration_tests::proxy::Proxy;
use integration_tests::{chroot, expire_session, fresh_standalone, ZkTarget};
use tokio::sync::mpsc;
use tokio::time::{timeout, Instant};
use zk_client::{Client, CreateOptions};
use zk_recipes::{
    lock::{ExclusiveLock, FairLock, LockState, MultiLock, ReadWriteLock, Released},
    semaphore::{Semaphore, SemaphoreMutex},
    Error, LossReason,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_never_exceed_the_count_under_contention_and_expiry() {
    let TestRoot { server, hosts, .. } = test_root("sema_contention").await;
    let admin = connect(&hosts).await;
    admin
        .create("/inside", &[], &CreateOptions::persistent())
        .await
        .unwrap();
    const MAX: usize = 2;
    const CONTENDERS: usize = 5;
    const ROUNDS: usize = 6;
    let most = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..CONTENDERS {
        let client = connect(&hosts).await;
        let sem = Semaphore::new(client.clone(), "/sema", MAX).unwrap();
        let most = most.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..ROUNDS {
                let lease = sem.acquire_timeout(SOON).await.expect("lease");
                let (marker, inside) = enter(&client).await;
                most.fetch_max(inside, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(15)).await;
                client.delete(&marker, None).await.expect("leave");
                lease.release().await.expect("release");
            }
        }));
    }
    // Faults: twice, a holder's session expires while it holds its lease (and the others
    // keep contending); its lease must pass on and its guard must say Lost.
    for _ in 0..2 {
        let victim = connect(&hosts).await;
        let sem = Semaphore::new(victim.clone(), "/sema", MAX).unwrap();
        let lease = sem.acquire_timeout(SOON).await.expect("victim lease");
        assert_eq!(lease.state(), LockState::Held);
        let (_, inside) = enter(&victim).await;
        most.fetch_max(inside, Ordering::SeqCst);
        expire_session(server.addr(), victim.session_id(), passwd(&victim))
            .await
            .expect("expire the holder");
        let reason = timeout(SOON, lease.lost()).await.expect("loss signalled");
        assert_eq!(reason, LossReason::SessionEnded);
    }
    for task in tasks {
        timeout(Duration::from_secs(120), task)
            .await
            .expect("contenders finish")
            .expect("contender");
    }
    let most = most.load(Ordering::SeqCst);
    println!("semaphore: at most {most} of {MAX} leases held at once by the server's count");
    assert!(most <= MAX, "{most} holders of {MAX} leases");
    assert_eq!(
        most, MAX,
        "contention never filled the semaphore: proved nothing"
    );
    assert!(
        children(&admin, "/sema/leases").await.is_empty(),
        "leases left"
    );
    assert!(
        children(&admin, "/sema/locks").await.is_empty(),
        "mutex nodes left"
    );
}

/// Polls until the notification count has not moved for 300 ms; returns it.
async fn settled_notifications(server: &integration_tests::Server) -> i64 {
    let end = Instant::now() + SOON;
    let mut last = notifications(server).await;
    while Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let now = notifications(server).await;
        if now == last {
            return now;
        }
        last = now;
    }
    panic!("notifications never settled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_freed_lease_wakes_exactly_one_waiter() {
    let server = fresh_standalone().await;
    let root = chroot(&server, "sema_herd").await;
    let hosts = server.hosts(&root);
    let admin = connect(&hosts).await;
    const MAX: usize = 2;
    const WAITERS: usize = 5;
    let holders = Semaphore::new(connect(&hosts).await, "/sema", MAX).unwrap();
    let mut held = holders.acquire_many_timeout(MAX, SOON).await.unwrap();
    let (tx, mut acquired) = mpsc::unbounded_channel();
    for i in 0..WAITERS {
        let sem = Semaphore::new(connect(&hosts).await, "/sema", MAX).unwrap();
        let tx = tx.clone();
        tokio::spawn(async move {
            let lease = sem.acquire().await.expect("waiter's lease");
            let _ = tx.send(i);
            // Held until the test ends.
            std::future::pending::<()>().await;
            drop(lease);
        });
        // One at a time, so the mutex queue is in index order.
        assert_eq!(
            wait_children(&admin, "/sema/locks", i + 1, SOON)
                .await
                .len(),
            i + 1
        );
    }
    // The mutex holder (waiter 0) has its lease node in and waits for room.
    assert_eq!(
        wait_children(&admin, "/sema/leases", MAX + 1, SOON)
            .await
            .len(),
        MAX + 1
    );
    for round in 0..MAX {
        let before = settled_notifications(&server).await;
        held.pop().unwrap().release().await.unwrap();
        let first = timeout(SOON, acquired.recv()).await.unwrap().unwrap();
        assert_eq!(first, round, "the head of the mutex queue goes next");
        // The next waiter takes the mutex and adds its lease; it waits in turn.
        wait_children(&admin, "/sema/locks", WAITERS - round - 1, SOON).await;
        wait_children(&admin, "/sema/leases", MAX + 1, SOON).await;
        let woken = settled_notifications(&server).await - before;
        println!("semaphore herd: one freed lease sent {woken} notification(s)");
        // One to the waiter watching the leases, one to the next in the mutex queue.
        assert_eq!(
            woken, 2,
            "a freed lease must wake one waiter (plus the mutex hand-off)"
        );
        assert!(
            timeout(Duration::from_millis(200), acquired.recv())
                .await
                .is_err(),
            "a second waiter got a lease"
        );
    }
}

/// Waits until the semaphore has exactly `leases` lease nodes and `queued` mutex nodes.
async fn wait_nodes(admin: &Client, leases: usize, queued: usize) {
    let end = Instant::now() + SOON;
    loop {
        let l = children(admin, "/sema/leases").await;
        let q = children(admin, "/sema/locks").await;
        if l.len() == leases && q.len() == queued {
            return;
        }
        assert!(
            Instant::now() < end,
            "left behind: leases {l:?}, mutex {q:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_or_timed_out_acquisitions_leave_no_node() {
    let TestRoot { hosts, .. } = test_root("sema_cancel").await;
    let admin = connect(&hosts).await;
    let holder = Semaphore::new(connect(&hosts).await, "/sema", 1).unwrap();
    let lease = holder.acquire().await.unwrap();
    let waiter = Semaphore::new(connect(&hosts).await, "/sema", 1).unwrap();
    // Dropped at various points: before anything is sent, with the mutex requested, with
    // the lease created (or its create in flight).
    for delay_ms in [0, 1, 3, 8, 20] {
        let dropped = timeout(Duration::from_millis(delay_ms), waiter.acquire()).await;
        assert!(dropped.is_err(), "acquired while held");
        wait_nodes(&admin, 1, 0).await;
    }
    // Cancelled while surely waiting for room (its lease node is in).
    let w = waiter.clone();
    let task = tokio::spawn(async move { w.acquire().await });
    wait_nodes(&admin, 2, 1).await;
    task.abort();
    wait_nodes(&admin, 1, 0).await;
    // A timeout removes its lease before it returns.
    let late = waiter.acquire_timeout(Duration::from_millis(300)).await;
    assert!(matches!(late, Err(Error::Timeout)), "{late:?}");
    assert_eq!(children(&admin, "/sema/leases").await.len(), 1);
    // No ghost blocks the next acquisition.
    lease.release().await.unwrap();
    let next = timeout(SOON, waiter.acquire()).await.unwrap().unwrap();
    next.release().await.unwrap();
    wait_nodes(&admin, 0, 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_whose_lease_node_is_deleted_queues_again_and_gets_a_lease() {
    let TestRoot { hosts, .. } = test_root("sema_waiter_deleted").await;
    let admin = connect(&hosts).await;
    let holder = Semaphore::new(connect(&hosts).await, "/sema", 1).unwrap();
    let lease = holder.acquire().await.unwrap();
    let waiter = Semaphore::new(connect(&hosts).await, "/sema", 1).unwrap();
    let task = tokio::spawn(async move { waiter.acquire().await });
    wait_nodes(&admin, 2, 1).await;
    // An operator deletes the waiting lease node. As Curator's semaphore does, the waiter
    // makes a new one and keeps waiting; it is not an error (it held nothing yet).
    let deleted = children(&admin, "/sema/leases")
        .await
        .into_iter()
        .map(|name| format!("/sema/leases/{name}"))
        .find(|path| path != lease.path())
        .expect("the waiter's lease node");
    admin.delete(&deleted, None).await.unwrap();
    wait_nodes(&admin, 2, 1).await;
    assert!(!task.is_finished(), "it waits while the lease is held");
    lease.release().await.unwrap();
    let next = timeout(SOON, task).await.unwrap().unwrap().unwrap();
    assert_ne!(next.path(), deleted);
    assert_eq!(next.state(), LockState::Held);
    next.release().await.unwrap();
    wait_nodes(&admin, 0, 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquire_many_is_all_or_nothing() {
    let TestRoot { hosts, .. } = test_root("sema_many").await;
    let admin = connect(&hosts).await;
    let a = Semaphore::new(connect(&hosts).await, "/sema", 3).unwrap();
    let b = Semaphore::new(connect(&hosts).await, "/sema", 3).unwrap();
    let mut held = a.acquire_many_timeout(2, SOON).await.unwrap();
    assert!(matches!(
        b.acquire_many(4).await,
        Err(Error::InvalidArgument(_))
    ));
    // One lease is free, two are asked: the one taken is given back.
    let r = b.acquire_many_timeout(2, Duration::from_millis(500)).await;
    assert!(matches!(r, Err(Error::Timeout)), "{r:?}");
    wait_nodes(&admin, 2, 0).await;
    held.pop().unwrap().release().await.unwrap();
    let two = b.acquire_many_timeout(2, SOON).await.unwrap();
    assert_eq!(children(&admin, "/sema/leases").await.len(), 3);
    for l in two.into_iter().chain(held) {
        l.release().await.unwrap();
    }
    wait_nodes(&admin, 0, 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphore_mutex_excludes_and_lists_its_participants() {
    let TestRoot { hosts, .. } = test_root("sema_mutex").await;
    let a = SemaphoreMutex::new(connect(&hosts).await, "/m")
        .unwrap()
        .with_owner_data("alpha");
    let b = SemaphoreMutex::new(connect(&hosts).await, "/m").unwrap();
    let guard = a.acquire().await.unwrap();
    let blocked = b.acquire_timeout(Duration::from_millis(300)).await;
    assert!(matches!(blocked, Err(Error::Timeout)), "{blocked:?}");
    let who = b.participants().await.unwrap();
    assert_eq!(who.len(), 1, "{who:?}");
    assert_eq!(who[0].path, guard.path());
    assert_eq!(who[0].data_str(), Some("alpha"));
    guard.release().await.unwrap();
    let g = timeout(SOON, b.acquire()).await.unwrap().unwrap();
    g.release().await.unwrap();
}

/// Nodes of the multi-lock test's three locks: the fair lock's queue, the semaphore
/// mutex's leases and mutex queue, the exclusive lock's node.
async fn multi_nodes(admin: &Client) -> usize {
    children(admin, "/a").await.len()
        + children(admin, "/b/leases").await.len()
        + children(admin, "/b/locks").await.len()
        + usize::from(admin.exists("/c").await.unwrap().is_some())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_lock_is_all_or_nothing() {
    let TestRoot { hosts, .. } = test_root("multi_lock").await;
    let admin = connect(&hosts).await;
    let client = connect(&hosts).await;
    let multi = MultiLock::new(vec![
        Box::new(FairLock::new(client.clone(), "/a").unwrap()),
        Box::new(SemaphoreMutex::new(client.clone(), "/b").unwrap()),
        Box::new(ExclusiveLock::new(client, "/c").unwrap()),
    ]);
    let other = ExclusiveLock::new(connect(&hosts).await, "/c").unwrap();
    let blocker = other.acquire().await.unwrap();
    // The last lock is taken: the first two are given back before the timeout returns.
    let r = multi.acquire_timeout(Duration::from_millis(500)).await;
    assert!(matches!(r, Err(Error::Timeout)), "{r:?}");
    assert_eq!(
        multi_nodes(&admin).await,
        1,
        "only the blocker's node is left"
    );
    // Cancelled while waiting for the last one: the two taken are released in the background.
    let m = Arc::new(multi);
    let task = tokio::spawn({
        let m = m.clone();
        async move { m.acquire().await.map(drop) }
    });
    let end = Instant::now() + SOON;
    while children(&admin, "/b/leases").await.is_empty() {
        assert!(
            Instant::now() < end,
            "the multi-lock never took its second lock"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    task.abort();
    let end = Instant::now() + SOON;
    while multi_nodes(&admin).await != 1 {
        assert!(Instant::now() < end, "a cancelled multi-lock left nodes");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    blocker.release().await.unwrap();
    let all = timeout(SOON, m.acquire()).await.unwrap().unwrap();
    assert_eq!(all.guards().len(), 3);
    assert_eq!(multi_nodes(&admin).await, 3);
    assert_eq!(all.release().await.unwrap(), vec![Released::Deleted; 3]);
    assert_eq!(multi_nodes(&admin).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revocation_reaches_a_lease_holder_and_ends_with_the_node() {
    let TestRoot { hosts, .. } = test_root("sema_revoke").await;
    let client = connect(&hosts).await;
    let sem = Semaphore::new(client.clone(), "/sema", 2).unwrap();
    let lease = sem.acquire().await.unwrap();
    let other = sem.acquire().await.unwrap();
    let asker = connect(&hosts).await;
    let target = lease.path().to_owned();
    let asked = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        zk_recipes::lock::revoke(&asker, &target).await
    });
    timeout(SOON, lease.revocation_requested())
        .await
        .expect("revocation heard")
        .expect("revocation");
    assert!(asked.await.unwrap().unwrap());
    // Asked again later: seen at once (the request stays in the node's data).
    lease.revocation_requested().await.unwrap();
    lease.release().await.unwrap();
    // A holder whose node is deleted is told it lost the lease instead.
    let (admin, path) = (connect(&hosts).await, other.path().to_owned());
    let deleting = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        admin.delete(&path, None).await
    });
    let r = timeout(SOON, other.revocation_requested()).await.unwrap();
    assert!(
        matches!(r, Err(Error::LockLost(LossReason::NodeDeleted))),
        "{r:?}"
    );
    deleting.await.unwrap().unwrap();
    assert_eq!(
        other.release().await.unwrap(),
        Released::AlreadyGone(LossReason::NodeDeleted)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_lock_carries_owner_data_and_lists_its_participants() {
    let TestRoot { hosts, .. } = test_root("owner_data").await;
    let admin = connect(&hosts).await;
    // Fair lock: holder first, then the waiter, each with its data.
    let a = FairLock::new(connect(&hosts).await, "/fair")
        .unwrap()
        .with_owner_data("a");
    let b = FairLock::new(connect(&hosts).await, "/fair")
        .unwrap()
        .with_owner_data("b");
    let held = a.acquire().await.unwrap();
    let waiting = tokio::spawn(async move { b.acquire().await });
    wait_children(&admin, "/fair", 2, SOON).await;
    let who: Vec<_> = a.participants().await.unwrap();
    let data: Vec<_> = who.iter().map(|p| p.data_str().unwrap()).collect();
    assert_eq!(data, ["a", "b"]);
    assert_eq!(who[0].path, held.path());
    let (raw, _) = admin.get_data(held.path()).await.unwrap();
    assert_eq!(&raw[..], b"a", "the node itself carries the data");
    held.release().await.unwrap();
    timeout(SOON, waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap()
        .release()
        .await
        .unwrap();
    // Read/write lock: both sides in one queue, in order.
    let rw = ReadWriteLock::new(connect(&hosts).await, "/rw")
        .unwrap()
        .with_owner_data("rw");
    let w = rw.write_lock().acquire().await.unwrap();
    let r = rw.read_lock().acquire().await.unwrap(); // a downgrade, same task
    let who = rw.participants().await.unwrap();
    assert_eq!(who.len(), 2, "{who:?}");
    assert!(who.iter().all(|p| p.data_str() == Some("rw")), "{who:?}");
    r.release().await.unwrap();
    w.release().await.unwrap();
    // Exclusive lock: the holder's node, with the chosen data (its guid by default).
    let x = ExclusiveLock::new(connect(&hosts).await, "/x")
        .unwrap()
        .with_owner_data("x-1");
    assert!(x.participants().await.unwrap().is_empty());
    let g = x.acquire().await.unwrap();
    let who = x.participants().await.unwrap();
    assert_eq!(who.len(), 1);
    assert_eq!(
        (who[0].path.as_str(), who[0].data_str()),
        ("/x", Some("x-1"))
    );
    g.release().await.unwrap();
    let plain = ExclusiveLock::new(connect(&hosts).await, "/x").unwrap();
    let g = plain.acquire().await.unwrap();
    let guid = plain.participants().await.unwrap()[0].data.clone();
    assert!(uuid::Uuid::parse_str(std::str::from_utf8(&guid).unwrap()).is_ok());
    g.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_whose_create_reply_is_lost_is_found_not_doubled() {
    let TestRoot { server, root, .. } = test_root("sema_lost_reply").await;
    let admin = connect(&server.hosts(&root)).await;
    let proxy = Proxy::start(server.addr()).await;
    let client = connect(&format!("{}{root}", proxy.connect_string())).await;
    let session = client.session_id();
    let sem = Semaphore::new(client.clone(), "/sema", 2).unwrap();
    // Holding the semaphore's own mutex from outside lets the lease create be the next
    // create the proxy sees once our acquisition has queued on the mutex.
    let gate = FairLock::new(admin.clone(), "/sema/locks").unwrap();
    for run in 0..5 {
        let held = gate.acquire().await.unwrap();
        let s = sem.clone();
        let task = tokio::spawn(async move { s.acquire().await });
        assert_eq!(
            wait_children(&admin, "/sema/locks", 2, SOON).await.len(),
            2,
            "run {run}: our acquisition did not queue on the mutex"
        );
        // Let the mutex create's reply pass the proxy first.
        tokio::time::sleep(Duration::from_millis(50)).await;
        proxy.drop_next_create_reply();
        held.release().await.unwrap();
        let lease = timeout(SOON, task)
            .await
            .unwrap_or_else(|_| panic!("run {run}: acquire hung"))
            .unwrap()
            .unwrap_or_else(|e| panic!("run {run}: acquire failed: {e}"));
        assert!(
            proxy
                .wait_create_reply_dropped(Duration::from_secs(1))
                .await,
            "run {run}: the proxy did not drop the lease's create reply"
        );
        assert_eq!(
            children(&admin, "/sema/leases").await,
            vec![lease.node_name().to_owned()],
            "run {run}: exactly our lease"
        );
        assert_eq!(client.session_id(), session, "run {run}: same session");
        lease.release().await.unwrap();
    }
    wait_nodes(&admin, 0, 0).await;
}

/// The semaphore's whole path is deleted (by an operator, or its containers reaped) while a
/// waiter waits for a lease: its lease node is gone with it, so, as when only its lease node
/// is deleted, it queues again (and the holder's lease is gone too: it gets one).
#[tokio::test]
async fn a_waiter_whose_semaphore_path_is_deleted_queues_again() {
    let TestRoot { hosts, .. } = test_root("sema_path_deleted").await;
    let admin = connect(&hosts).await;
    let held = Semaphore::new(connect(&hosts).await, "/sema", 1)
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let waiter = Semaphore::new(connect(&hosts).await, "/sema", 1).unwrap();
    let waiting = tokio::spawn(async move { waiter.acquire_timeout(SOON).await.map(drop) });
    // The waiter holds the mutex and has its lease node: it waits on the leases' listing.
    wait_nodes(&admin, 2, 1).await;
    // In one transaction: every node, then the parents.
    let mut ops = Vec::new();
    for parent in ["/sema/leases", "/sema/locks"] {
        for name in children(&admin, parent).await {
            ops.push(zk_client::Op::delete(&format!("{parent}/{name}"), None));
        }
    }
    for path in ["/sema/leases", "/sema/locks", "/sema"] {
        ops.push(zk_client::Op::delete(path, None));
    }
    admin.multi(&ops).await.unwrap();
    let got = within("the waiter", waiting).await.unwrap();
    assert!(got.is_ok(), "{got:?}");
    assert_eq!(within("lost", held.lost()).await, LossReason::NodeDeleted);
    drop(held);
}
