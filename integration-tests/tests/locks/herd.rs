//! No herd effect: one release wakes exactly the waiters it unblocks, counted on the server.
//!
//! Each test runs on its own server so the server-wide `mntr` counters see only its traffic.
//! ZooKeeper 3.8's `wchs` counts data watches (which is what our waiters set: a getData watch
//! on the blocking node), and the `zk_sum_node_*_watch_count` summaries of `mntr` grow by the
//! number of watches each event triggered.

use std::sync::Arc;
use std::time::Duration;

use integration_tests::prelude::*;
use integration_tests::{chroot, fresh_standalone, ZkTarget};
use tokio::sync::{mpsc, Semaphore};
use tokio::time::{timeout, Instant};
use zk_client::Client;
use zk_recipes::lock::{FairLock, HandOff, ReadWriteLock};

/// Queues `n` waiters (one session each) behind the holder; each reports its index when it
/// acquires and then waits for a permit of `go` before releasing.
async fn queue_waiters(
    hosts: &str,
    path: &str,
    n: usize,
    lock_for: impl Fn(Client, usize) -> FairLock,
    go: Arc<Semaphore>,
) -> mpsc::UnboundedReceiver<(usize, Instant)> {
    let (tx, rx) = mpsc::unbounded_channel();
    let admin = connect(hosts).await;
    let before = children(&admin, path).await.len();
    for i in 0..n {
        let lock = lock_for(connect(hosts).await, i);
        let (tx, go) = (tx.clone(), go.clone());
        tokio::spawn(async move {
            let guard = lock.acquire().await.expect("waiter acquires");
            let _ = tx.send((i, Instant::now()));
            go.acquire().await.expect("go").forget();
            guard.release().await.expect("release");
        });
        // One at a time, so the queue order is the index order.
        let queued = wait_children(&admin, path, before + i + 1, LIMIT).await;
        assert_eq!(queued.len(), before + i + 1, "waiter {i} did not queue");
    }
    rx
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_release_wakes_exactly_one_of_fifty_waiters() {
    let server = fresh_standalone().await;
    let root = chroot(&server, "herd").await;
    let hosts = server.hosts(&root);
    let holder = FairLock::new(connect(&hosts).await, "/herd-mutex").unwrap();
    let guard = holder.acquire().await.unwrap();
    const WAITERS: usize = 50;
    let go = Arc::new(Semaphore::new(0));
    let mut acquired = queue_waiters(
        &hosts,
        "/herd-mutex",
        WAITERS,
        |c, _| FairLock::new(c, "/herd-mutex").unwrap(),
        go.clone(),
    )
    .await;
    // 50 waiters each watch their predecessor; nobody observes the holder's guard, so it
    // sets no watch of its own.
    wait_watches(&server, WAITERS).await;

    let before = notifications(&server).await;
    let released = Instant::now();
    guard.release().await.unwrap();
    let (first, at) = timeout(LIMIT, acquired.recv()).await.unwrap().unwrap();
    assert_eq!(first, 0, "the head of the queue goes next");
    // The first waiter's watch fired and is gone: 49 left.
    wait_watches(&server, WAITERS - 1).await;
    let woken = notifications(&server).await - before;
    println!(
        "herd: one release of {WAITERS} waiters sent {woken} notification(s); \
         release-to-next-acquire {:.2?}",
        at - released
    );
    assert_eq!(woken, 1, "a release must wake exactly one waiter");
    assert!(
        timeout(Duration::from_millis(200), acquired.recv())
            .await
            .is_err(),
        "a second waiter acquired"
    );

    go.add_permits(WAITERS);
    for _ in 1..WAITERS {
        timeout(LIMIT, acquired.recv()).await.unwrap().unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writers_release_wakes_only_the_readers_it_unblocks() {
    let server = fresh_standalone().await;
    let root = chroot(&server, "rwherd").await;
    let hosts = server.hosts(&root);
    let writer = ReadWriteLock::new(connect(&hosts).await, "/herd-rw").unwrap();
    let guard = writer.write_lock().acquire().await.unwrap();
    // Queue: R0 R1 R2 W3 R4 R5 behind the holding writer.
    let go = Arc::new(Semaphore::new(0));
    let mut acquired = queue_waiters(
        &hosts,
        "/herd-rw",
        6,
        |c, i| {
            let rw = ReadWriteLock::new(c, "/herd-rw").unwrap();
            if i == 3 {
                rw.write_lock().clone()
            } else {
                rw.read_lock().clone()
            }
        },
        go.clone(),
    )
    .await;
    // R0..R2 watch the holder, W3 watches R2, R4 and R5 watch W3.
    wait_watches(&server, 6).await;

    let before = notifications(&server).await;
    guard.release().await.unwrap();
    let mut first = Vec::new();
    for _ in 0..3 {
        first.push(timeout(LIMIT, acquired.recv()).await.unwrap().unwrap().0);
    }
    first.sort_unstable();
    assert_eq!(
        first,
        vec![0, 1, 2],
        "exactly the three leading readers hold together"
    );
    // The three woken readers' watches are gone: W3's and R4/R5's remain.
    wait_watches(&server, 3).await;
    let woken = notifications(&server).await - before;
    println!("rw herd: a writer's release sent {woken} notification(s) to 3 unblocked readers");
    assert_eq!(woken, 3, "only the readers the release unblocks are woken");
    assert!(
        timeout(Duration::from_millis(200), acquired.recv())
            .await
            .is_err(),
        "the writer behind the readers must still wait"
    );
    go.add_permits(6);
    for _ in 3..6 {
        timeout(LIMIT, acquired.recv()).await.unwrap().unwrap();
    }
}

/// Waits (bounded by [`SOON`]) until the server holds at least `at_least` watches and the
/// count stays the same for 300 ms; returns it.
async fn settled_watches(server: &Server, at_least: u64) -> u64 {
    let start = Instant::now();
    let mut last = watch_count(server).await;
    let mut same = 0;
    while start.elapsed() < SOON {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = watch_count(server).await;
        same = if now == last { same + 1 } else { 0 };
        last = now;
        if last >= at_least && same >= 3 {
            return last;
        }
    }
    panic!("the watch count never settled at {at_least} or more (last {last})");
}

/// `HandOff::Prepared` on both sides of a read/write lock: a holding writer, a writer waiting
/// behind it and 50 readers behind that writer. The holder's release unblocks only the
/// waiting writer; it may wake one more waiter (the price of `Prepared`), never the readers,
/// whose second watch would otherwise sit on the holder (51 notifications, 50 listings).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prepared_writers_release_wakes_the_next_writer_not_the_readers_behind_it() {
    let server = fresh_standalone().await;
    let root = chroot(&server, "rwprepared").await;
    let hosts = server.hosts(&root);
    let path = "/herd-rw-prepared";
    let prepared = |c| {
        ReadWriteLock::new(c, path)
            .unwrap()
            .with_hand_off(HandOff::Prepared)
    };
    let holder = prepared(connect(&hosts).await);
    let guard = holder.write_lock().acquire().await.unwrap();
    const READERS: usize = 50;
    let go = Arc::new(Semaphore::new(0));
    // Waiter 0 writes, waiters 1..=50 read.
    let mut acquired = queue_waiters(
        &hosts,
        path,
        READERS + 1,
        |c, i| {
            let rw = prepared(c);
            if i == 0 {
                rw.write_lock().clone()
            } else {
                rw.read_lock().clone()
            }
        },
        go.clone(),
    )
    .await;
    // The writer watches the holder; each reader the waiting writer (and, before the fix,
    // the holder too).
    let watches = settled_watches(&server, 1 + READERS as u64).await;

    let before = notifications(&server).await;
    guard.release().await.unwrap();
    let (first, _) = timeout(LIMIT, acquired.recv()).await.unwrap().unwrap();
    assert_eq!(first, 0, "the waiting writer goes next");
    // The writer's fired watch is gone, and any other that fired with it.
    let left = settled_watches(&server, READERS as u64).await;
    let woken = notifications(&server).await - before;
    println!(
        "prepared rw herd: {watches} watches; one writer's release sent {woken} \
         notification(s) (1 waiter unblocked), {left} watches left"
    );
    assert!(
        woken <= 2,
        "a prepared release woke {woken} waiters: at most the one it unblocks plus one"
    );
    assert!(
        timeout(Duration::from_millis(200), acquired.recv())
            .await
            .is_err(),
        "a reader acquired while the writer holds"
    );

    // The writer's release unblocks the 50 readers: at most those plus one.
    let before = notifications(&server).await;
    go.add_permits(1);
    let mut readers = Vec::new();
    for _ in 0..READERS {
        readers.push(timeout(LIMIT, acquired.recv()).await.unwrap().unwrap().0);
    }
    readers.sort_unstable();
    assert_eq!(readers, (1..=READERS).collect::<Vec<_>>());
    let woken = notifications(&server).await - before;
    assert!(
        woken <= READERS as i64 + 1,
        "the writer's release woke {woken} for {READERS} unblocked readers"
    );
    go.add_permits(READERS);
}

#[tokio::test]
async fn an_observed_holder_still_wakes_only_the_next_waiter() {
    let server = fresh_standalone().await;
    let root = chroot(&server, "observed").await;
    let hosts = server.hosts(&root);
    let holder = FairLock::new(connect(&hosts).await, "/herd-observed").unwrap();
    let guard = holder.acquire().await.unwrap();
    // Observing the guard makes it watch its own node (to notice a deletion) ...
    assert_eq!(guard.state(), zk_recipes::lock::LockState::Held);
    let go = Arc::new(Semaphore::new(0));
    let mut acquired = queue_waiters(
        &hosts,
        "/herd-observed",
        3,
        |c, _| FairLock::new(c, "/herd-observed").unwrap(),
        go.clone(),
    )
    .await;
    wait_watches(&server, 4).await;
    // ... and its release removes that watch before deleting, so still one notification.
    let before = notifications(&server).await;
    guard.release().await.unwrap();
    let (first, _) = timeout(LIMIT, acquired.recv()).await.unwrap().unwrap();
    assert_eq!(first, 0);
    wait_watches(&server, 2).await;
    assert_eq!(notifications(&server).await - before, 1);
    go.add_permits(3);
    for _ in 1..3 {
        timeout(LIMIT, acquired.recv()).await.unwrap().unwrap();
    }
}
