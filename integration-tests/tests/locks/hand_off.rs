//! `HandOff::Prepared` on a real server: a writer behind two nodes watches both, lists the
//! queue when the farther one goes, and then takes the lock on its predecessor's release
//! without sending anything; the queue order and mutual exclusion hold when a waiter ahead
//! gives up; the price is one more notification per release, counted on the server. A
//! reader takes no second watch (`locks::herd` counts a writer's release with 50 prepared
//! readers behind; `locks::give_ups` a storm of give-ups).
//!
//! The default (`HandOff::Lean`, one notification per release) is `locks::herd`'s.

use std::time::Duration;

use integration_tests::prelude::*;
use integration_tests::proxy::Proxy;
use integration_tests::{chroot, fresh_standalone, Server, ZkTarget};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::{sleep, timeout, Instant};
use zk_client::Client;
use zk_recipes::lock::{FairLock, HandOff, LockGuard, ReadWriteLock};

/// A client whose session will not ping during the test (the server's largest timeout), so
/// that a proxy's packet count is the recipe's requests alone.
async fn quiet_client(hosts: &str) -> Client {
    Client::builder(hosts)
        .session_timeout(Duration::from_secs(40))
        .connect()
        .await
        .expect("connect through the proxy")
}

/// Waits (bounded) until `proxy` forwarded nothing new to the server for 300 ms; returns the
/// count then.
async fn settled(proxy: &Proxy) -> u64 {
    let start = Instant::now();
    let mut last = proxy.stats().to_server;
    while start.elapsed() < SOON {
        sleep(Duration::from_millis(300)).await;
        let now = proxy.stats().to_server;
        if now == last {
            return now;
        }
        last = now;
    }
    panic!("the client kept sending for {SOON:?}");
}

/// Starts acquiring `lock` on a task: its guard arrives on the returned channel.
fn waiter(lock: FairLock) -> (oneshot::Receiver<LockGuard>, JoinHandle<()>) {
    let (tx, rx) = oneshot::channel();
    let task = tokio::spawn(async move {
        let guard = lock.acquire().await.expect("waiter acquires");
        let _ = tx.send(guard);
    });
    (rx, task)
}

/// A waiter's guard to come, and its task.
type Waiting = (oneshot::Receiver<LockGuard>, JoinHandle<()>);

/// A holder A of the fair lock at `path` and two `HandOff::Prepared` waiters queued behind it
/// in order, B (on `hosts`) and C (on `c`), once the server holds their three watches (B on
/// A; C on B and A).
async fn holder_and_two_waiters(
    server: &Server,
    admin: &Client,
    hosts: &str,
    c: Client,
    path: &str,
) -> (LockGuard, Waiting, Waiting) {
    let holder = FairLock::new(connect(hosts).await, path).unwrap();
    let a = holder.acquire().await.unwrap();
    let prepared = |c| {
        FairLock::new(c, path)
            .unwrap()
            .with_hand_off(HandOff::Prepared)
    };
    let b = waiter(prepared(connect(hosts).await));
    wait_children(admin, path, 2, SOON).await;
    let c = waiter(prepared(c));
    wait_children(admin, path, 3, SOON).await;
    wait_watches(server, 3).await;
    (a, b, c)
}

/// A fresh server, a chroot on it, and an admin session there.
async fn setup(name: &str) -> (Server, String, Client) {
    let server = fresh_standalone().await;
    let root = chroot(&server, name).await;
    let admin = connect(&server.hosts(&root)).await;
    (server, root, admin)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prepared_waiter_takes_the_lock_on_its_predecessors_release_without_a_request() {
    let (server, root, admin) = setup("prepared").await;
    let hosts = server.hosts(&root);
    let path = "/prepared";
    // C's requests are counted by a proxy.
    let proxy = Proxy::start(server.addr()).await;
    let c_client = quiet_client(&format!("{}{root}", proxy.connect_string())).await;
    let (a, (b, _b_task), (mut c, _c_task)) =
        holder_and_two_waiters(&server, &admin, &hosts, c_client, path).await;
    let queued = settled(&proxy).await;

    let before = notifications(&server).await;
    a.release().await.unwrap();
    let b = timeout(SOON, b).await.expect("B acquires").unwrap();
    // A's release woke B (which holds) and C (which listed the queue again, and keeps its
    // watch on B).
    wait_watches(&server, 1).await;
    assert_eq!(
        notifications(&server).await - before,
        2,
        "a prepared release wakes the next waiter and the one behind it"
    );
    assert!(
        timeout(Duration::from_millis(300), &mut c).await.is_err(),
        "C acquired while B holds"
    );
    // C lists the queue again on A's deletion: wait for that request to leave, then for quiet.
    let start = Instant::now();
    while proxy.stats().to_server == queued {
        assert!(
            start.elapsed() < SOON,
            "C never listed the queue after A's release"
        );
        sleep(Duration::from_millis(20)).await;
    }
    let sent = settled(&proxy).await;

    b.release().await.unwrap();
    let c = timeout(SOON, c).await.expect("C acquires").unwrap();
    assert_eq!(
        proxy.stats().to_server,
        sent,
        "C sent a request between B's release and holding the lock (a listing on the hand-off)"
    );
    assert_eq!(wait_children(&admin, path, 1, SOON).await.len(), 1);
    c.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prepared_waiter_whose_predecessor_gives_up_waits_for_the_holder() {
    let (server, root, admin) = setup("gives_up").await;
    let hosts = server.hosts(&root);
    let path = "/gives-up";
    let c_client = connect(&hosts).await;
    let (a, (_b, b_task), (mut c, _c_task)) =
        holder_and_two_waiters(&server, &admin, &hosts, c_client, path).await;

    // B gives up while A holds: its node goes, and C, woken by its nearest blocker's
    // deletion, must find A still ahead.
    b_task.abort();
    wait_children(&admin, path, 2, SOON).await;
    assert!(
        timeout(Duration::from_millis(500), &mut c).await.is_err(),
        "C acquired while A holds"
    );
    a.release().await.unwrap();
    let c = timeout(SOON, c).await.expect("C acquires").unwrap();
    c.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prepared_reader_behind_two_writers_waits_for_both_watching_only_the_nearest() {
    let (server, root, admin) = setup("reader").await;
    let hosts = server.hosts(&root);
    let path = "/rw";
    let rw = |c| ReadWriteLock::new(c, path).unwrap();
    let w1 = rw(connect(&hosts).await)
        .write_lock()
        .acquire()
        .await
        .unwrap();
    let (w2, _w2_task) = waiter(rw(connect(&hosts).await).write_lock().clone());
    wait_children(&admin, path, 2, SOON).await;
    let reader = rw(connect(&hosts).await).with_hand_off(HandOff::Prepared);
    assert_eq!(reader.read_lock().hand_off(), HandOff::Prepared);
    let (mut r, _r_task) = waiter(reader.read_lock().clone());
    wait_children(&admin, path, 3, SOON).await;
    // W2 watches W1; the reader only W2 (a reader takes no second watch: W1's release,
    // which cannot unblock it, does not wake it).
    wait_watches(&server, 2).await;
    let before = notifications(&server).await;

    w1.release().await.unwrap();
    let w2 = timeout(SOON, w2).await.expect("W2 acquires").unwrap();
    assert!(
        timeout(Duration::from_millis(300), &mut r).await.is_err(),
        "the reader acquired while W2 writes"
    );
    wait_watches(&server, 1).await;
    assert_eq!(
        notifications(&server).await - before,
        1,
        "W1's release woke W2 alone"
    );
    w2.release().await.unwrap();
    let r = timeout(SOON, r)
        .await
        .expect("the reader acquires")
        .unwrap();
    r.release().await.unwrap();
}
