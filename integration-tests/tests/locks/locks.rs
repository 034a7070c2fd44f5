//! Lock recipes against a real server: exclusion, FIFO order, read/write sharing, re-entrancy,
//! try/timeout, cancellation cleanup.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use integration_tests::prelude::*;
use zk_recipes::lock::{ExclusiveLock, FairLock, LockState, ReadWriteLock};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fair_lock_excludes_under_contention_without_lost_updates() {
    let TestRoot { hosts, .. } = test_root("fair_excl").await;
    let admin = connect(&hosts).await;
    make_counter(&admin, "/counter").await;
    const SESSIONS: usize = 5;
    const ROUNDS: usize = 20;
    let inside = Arc::new(AtomicBool::new(false));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..SESSIONS {
        let client = connect(&hosts).await;
        let (inside, overlaps) = (inside.clone(), overlaps.clone());
        tasks.push(tokio::spawn(async move {
            let lock = FairLock::new(client.clone(), "/locks/fair").unwrap();
            for _ in 0..ROUNDS {
                let guard = lock.acquire().await.expect("acquire");
                if inside.swap(true, Ordering::SeqCst) {
                    overlaps.fetch_add(1, Ordering::SeqCst);
                }
                bump_counter(&client, "/counter").await;
                inside.store(false, Ordering::SeqCst);
                guard.release().await.expect("release");
            }
        }));
    }
    for t in tasks {
        t.await.expect("locker task");
    }
    assert_eq!(overlaps.load(Ordering::SeqCst), 0, "two holders at once");
    assert_eq!(
        read_counter(&admin, "/counter").await,
        (SESSIONS * ROUNDS) as i64,
        "lost updates"
    );
    assert!(
        children(&admin, "/locks/fair").await.is_empty(),
        "orphan lock nodes"
    );
}

#[tokio::test]
async fn fair_lock_serves_waiters_in_queue_order() {
    let TestRoot { hosts, .. } = test_root("fair_fifo").await;
    let admin = connect(&hosts).await;
    let holder = FairLock::new(connect(&hosts).await, "/locks/fifo").unwrap();
    let first = holder.acquire().await.unwrap();
    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    const WAITERS: usize = 6;
    for i in 0..WAITERS {
        let lock = FairLock::new(connect(&hosts).await, "/locks/fifo").unwrap();
        let order = order.clone();
        tasks.push(tokio::spawn(async move {
            let guard = lock.acquire().await.expect("acquire");
            order.lock().unwrap().push(i);
            guard.release().await.expect("release");
        }));
        // Queue them one by one so the queue order is known.
        let queued = wait_children(&admin, "/locks/fifo", i + 2, SOON).await;
        assert_eq!(queued.len(), i + 2, "waiter {i} did not queue");
    }
    first.release().await.unwrap();
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(*order.lock().unwrap(), (0..WAITERS).collect::<Vec<_>>());
}

#[tokio::test]
async fn lock_nodes_use_curators_layout() {
    let TestRoot { hosts, .. } = test_root("layout").await;
    let client = connect(&hosts).await;
    let guard = FairLock::new(client.clone(), "/locks/layout")
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let name = guard.node_name().to_owned();
    // Curator's protected name: `_c_` + a dashed UUID + `-`, then the lock name and `%010d`.
    assert!(name.starts_with("_c_") && name.len() > 40, "{name}");
    assert!(uuid::Uuid::parse_str(&name[3..39]).is_ok(), "{name}");
    assert_eq!(&name[39..], "-lock-0000000000", "{name}");
    let (_, stat) = client.get_data(guard.path()).await.unwrap();
    assert_eq!(stat.ephemeral_owner, client.session_id(), "ephemeral");
    assert_eq!(guard.fencing_token(), stat.czxid);
    guard.release().await.unwrap();
}

#[tokio::test]
async fn readers_share_and_writers_exclude() {
    let TestRoot { hosts, .. } = test_root("rw").await;
    let r1 = ReadWriteLock::new(connect(&hosts).await, "/locks/rw").unwrap();
    let r2 = ReadWriteLock::new(connect(&hosts).await, "/locks/rw").unwrap();
    let w = ReadWriteLock::new(connect(&hosts).await, "/locks/rw").unwrap();

    let a = r1.read_lock().acquire().await.unwrap();
    let b = r2
        .read_lock()
        .acquire_timeout(SOON)
        .await
        .expect("readers share");
    assert!(
        w.write_lock().try_acquire().await.unwrap().is_none(),
        "writer got in with readers"
    );
    a.release().await.unwrap();
    assert!(
        w.write_lock().try_acquire().await.unwrap().is_none(),
        "writer got in with a reader"
    );
    b.release().await.unwrap();

    let wg = w
        .write_lock()
        .acquire_timeout(SOON)
        .await
        .expect("writer after readers");
    assert!(
        r1.read_lock().try_acquire().await.unwrap().is_none(),
        "reader got in with a writer"
    );
    assert!(
        r2.write_lock().try_acquire().await.unwrap().is_none(),
        "two writers"
    );
    // The writer may downgrade: its own write node does not block its read.
    let down = w
        .read_lock()
        .acquire_timeout(SOON)
        .await
        .expect("downgrade");
    wg.release().await.unwrap();
    assert!(
        r2.write_lock().try_acquire().await.unwrap().is_none(),
        "writer got in with a reader"
    );
    down.release().await.unwrap();
    let admin = connect(&hosts).await;
    assert!(wait_children(&admin, "/locks/rw", 0, SOON).await.is_empty());
}

#[tokio::test]
async fn reentry_needs_as_many_releases_and_other_tasks_wait_locally() {
    let TestRoot { hosts, .. } = test_root("reentry").await;
    let client = connect(&hosts).await;
    let lock = FairLock::new(client.clone(), "/locks/re").unwrap();
    let g1 = lock.acquire().await.unwrap();
    let g2 = lock
        .acquire()
        .await
        .expect("re-entry from the holding task");
    assert_eq!(g1.path(), g2.path(), "re-entry made a new node");
    assert_eq!(g2.hold_count(), 2);
    assert_eq!(children(&client, "/locks/re").await.len(), 1);

    // Another task sharing the instance waits without touching ZooKeeper.
    let other = lock.clone();
    let waiter =
        tokio::spawn(async move { other.acquire_timeout(Duration::from_millis(300)).await });
    assert!(waiter.await.unwrap().unwrap_err().is_timeout());
    assert_eq!(
        children(&client, "/locks/re").await.len(),
        1,
        "waiter created a node"
    );

    g2.release().await.unwrap();
    assert_eq!(
        children(&client, "/locks/re").await.len(),
        1,
        "released too early"
    );
    let g3 = g1.reenter();
    g1.release().await.unwrap();
    assert_eq!(g3.state(), LockState::Held);
    g3.release().await.unwrap();
    assert!(
        children(&client, "/locks/re").await.is_empty(),
        "node left after last release"
    );

    let other = lock.clone();
    let g = tokio::spawn(async move { other.acquire_timeout(SOON).await })
        .await
        .unwrap()
        .expect("free again for another task");
    g.release().await.unwrap();
}

#[tokio::test]
async fn try_and_timeout_leave_no_node_behind() {
    let TestRoot { hosts, .. } = test_root("try_timeout").await;
    let admin = connect(&hosts).await;
    let holder = FairLock::new(connect(&hosts).await, "/locks/t").unwrap();
    let held = holder.acquire().await.unwrap();
    let other = FairLock::new(connect(&hosts).await, "/locks/t").unwrap();

    assert!(other.try_acquire().await.unwrap().is_none());
    assert_eq!(
        children(&admin, "/locks/t").await.len(),
        1,
        "try_acquire left its node"
    );

    let err = other
        .acquire_timeout(Duration::from_millis(200))
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err}");
    assert_eq!(
        wait_children(&admin, "/locks/t", 1, SOON).await.len(),
        1,
        "timed-out waiter left its node"
    );
    held.release().await.unwrap();
    let g = other.try_acquire().await.unwrap().expect("free lock");
    g.release().await.unwrap();
}

#[tokio::test]
async fn cancelled_acquire_removes_its_node() {
    let TestRoot { hosts, .. } = test_root("cancel").await;
    let admin = connect(&hosts).await;
    let held = FairLock::new(connect(&hosts).await, "/locks/c")
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let waiter = FairLock::new(connect(&hosts).await, "/locks/c").unwrap();
    let task = tokio::spawn(async move { waiter.acquire().await.map(drop) });
    assert_eq!(wait_children(&admin, "/locks/c", 2, SOON).await.len(), 2);
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    assert_eq!(
        wait_children(&admin, "/locks/c", 1, SOON).await.len(),
        1,
        "cancelled waiter left an orphan node"
    );
    held.release().await.unwrap();
}

#[tokio::test]
async fn dropped_guard_releases_in_the_background() {
    let TestRoot { hosts, .. } = test_root("drop_guard").await;
    let admin = connect(&hosts).await;
    let lock = FairLock::new(connect(&hosts).await, "/locks/d").unwrap();
    drop(lock.acquire().await.unwrap());
    assert!(wait_children(&admin, "/locks/d", 0, SOON).await.is_empty());
    // The node is gone, but the background release frees the instance's local slot only
    // after it has handled the delete's reply, which may be after this task resumes: wait
    // for it (bounded) rather than expect it at once.
    let g = lock.acquire_timeout(SOON).await.expect("free after drop");
    g.release().await.unwrap();
}

#[tokio::test]
async fn exclusive_lock_excludes_and_recovers() {
    let TestRoot { hosts, .. } = test_root("exclusive").await;
    let admin = connect(&hosts).await;
    let a = ExclusiveLock::new(connect(&hosts).await, "/locks/x/node").unwrap();
    let b = ExclusiveLock::new(connect(&hosts).await, "/locks/x/node").unwrap();
    let ga = a.acquire().await.unwrap();
    assert!(b.try_acquire().await.unwrap().is_none());
    let bt = tokio::spawn(async move { b.acquire_timeout(SOON).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    ga.release().await.unwrap();
    let gb = bt.await.unwrap().expect("second holder after release");
    assert!(admin.exists("/locks/x/node").await.unwrap().is_some());
    gb.release().await.unwrap();
    assert!(admin.exists("/locks/x/node").await.unwrap().is_none());
}

/// CURATOR-621: the write holder downgrades (takes the read lock) while another writer is
/// queued. The read node must sort at the write node's position, not after the queued
/// writer, or each waits for the other forever.
#[tokio::test]
async fn downgrade_with_a_queued_writer_does_not_deadlock() {
    let TestRoot { hosts, .. } = test_root("downgrade_queued").await;
    let admin = connect(&hosts).await;
    let a = ReadWriteLock::new(connect(&hosts).await, "/locks/dg").unwrap();
    let b = ReadWriteLock::new(connect(&hosts).await, "/locks/dg").unwrap();

    let a_write = a.write_lock().acquire().await.unwrap();
    let b_writer = tokio::spawn(async move {
        let g = b.write_lock().acquire_timeout(SOON).await?;
        let state = g.state();
        g.release().await?;
        Ok::<_, zk_recipes::Error>(state)
    });
    assert_eq!(wait_children(&admin, "/locks/dg", 2, SOON).await.len(), 2);

    let a_read = tokio::time::timeout(Duration::from_secs(10), a.read_lock().acquire())
        .await
        .expect("downgrade deadlocked behind the queued writer")
        .expect("downgrade");
    assert_eq!(a_read.state(), LockState::Held);
    // The downgrade's node sits at the write node's sequence number.
    let nodes = children(&admin, "/locks/dg").await;
    assert_eq!(nodes.len(), 3, "{nodes:?}");
    let seq = |name: &str| name[name.len() - 10..].to_owned();
    assert_eq!(seq(a_read.node_name()), seq(a_write.node_name()));

    a_write.release().await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !b_writer.is_finished(),
        "the queued writer got in while the downgraded reader held on"
    );
    a_read.release().await.unwrap();
    let state = tokio::time::timeout(SOON, b_writer)
        .await
        .expect("queued writer acquires after the read release")
        .unwrap()
        .expect("queued writer");
    assert_eq!(state, LockState::Held);
    assert!(wait_children(&admin, "/locks/dg", 0, SOON).await.is_empty());
}

/// A downgrade is only for a write lock still held. (A) The write guard was dropped: its
/// release runs in the background, and its delete's reply is lost, so the lock instance
/// still remembers the hold while another writer takes the lock. (B) An operator deleted the
/// write node under a live guard, and another writer took the lock. Either way, a read
/// acquisition that took the old write node's position would hold beside that writer.
#[tokio::test]
async fn a_read_lock_never_joins_another_writer_through_a_stale_downgrade() {
    use integration_tests::proxy::{Mode, Proxy};
    let TestRoot {
        server,
        root,
        hosts,
    } = test_root("downgrade_stale").await;
    let admin = connect(&hosts).await;
    let proxy = Proxy::start(server.addr()).await;
    let t = ReadWriteLock::new(
        connect_for_faults(&format!("{}{root}", proxy.connect_string())).await,
        "/locks/st",
    )
    .unwrap();
    let w2 = ReadWriteLock::new(connect(&hosts).await, "/locks/st").unwrap();

    // (A)
    let write = t.write_lock().acquire().await.unwrap();
    let writer = {
        let w2 = w2.clone();
        tokio::spawn(async move { w2.write_lock().acquire_timeout(SOON).await })
    };
    assert_eq!(wait_children(&admin, "/locks/st", 2, SOON).await.len(), 2);
    // The delete applies, its reply is lost with the connection, and T stays disconnected
    // (its release waits to delete again) until its read acquisition has started.
    proxy.set_mode(Mode::Refuse);
    proxy.drop_next_reply_to(2);
    drop(write);
    let w2_write = writer
        .await
        .unwrap()
        .expect("the queued writer takes the lock");
    // On this task: a downgrade is for the task that holds the write lock.
    let (read, ()) = tokio::join!(
        t.read_lock().acquire_timeout(Duration::from_secs(3)),
        async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            proxy.set_mode(Mode::Pass);
        }
    );
    assert!(
        read.as_ref().is_err_and(|e| e.is_timeout()),
        "(A) a read lock beside a writer: {:?}",
        read.map(|g| g.node_name().to_owned())
    );
    assert_eq!(w2_write.state(), LockState::Held);
    w2_write.release().await.unwrap();
    assert!(wait_children(&admin, "/locks/st", 0, SOON).await.is_empty());

    // (B)
    let write = t.write_lock().acquire().await.unwrap();
    admin.delete(write.path(), None).await.unwrap();
    let w2_write = w2.write_lock().acquire_timeout(SOON).await.unwrap();
    let read = t.read_lock().acquire_timeout(Duration::from_secs(1)).await;
    assert!(
        read.is_err(),
        "(B) a read lock beside a writer: {:?}",
        read.map(|g| g.node_name().to_owned())
    );
    assert_eq!(w2_write.state(), LockState::Held);
    w2_write.release().await.unwrap();
    drop(write);
    assert!(wait_children(&admin, "/locks/st", 0, SOON).await.is_empty());
}

/// An operator removes a lock's whole path while a waiter waits (or the server reaps the
/// emptied container): the waiter's node is gone with it, which the lock reports as such.
#[tokio::test]
async fn a_waiter_whose_lock_path_is_deleted_gets_lock_lost() {
    let TestRoot { hosts, .. } = test_root("lock_path_deleted").await;
    let admin = connect(&hosts).await;
    let lock = |client| FairLock::new(client, "/locks/gone").unwrap();
    let held = lock(connect(&hosts).await).acquire().await.unwrap();
    // Two waiters: the last one has two nodes ahead, so its predecessor's delete makes it
    // list the path again (a waiter with one node ahead takes the lock without a listing).
    let mut waiting = Vec::new();
    for n in 2..=3 {
        let waiter = lock(connect(&hosts).await);
        waiting.push(tokio::spawn(async move {
            waiter
                .acquire_timeout(SOON)
                .await
                .map(|g| g.node_name().to_owned())
        }));
        assert_eq!(wait_children(&admin, "/locks/gone", n, SOON).await.len(), n);
    }
    // In one transaction, the nodes last to first, then the path.
    let mut nodes = children(&admin, "/locks/gone").await;
    nodes.sort_by_key(|n| n[n.len() - 10..].to_owned());
    let mut ops: Vec<_> = nodes
        .iter()
        .rev()
        .map(|n| zk_client::Op::delete(&format!("/locks/gone/{n}"), None))
        .collect();
    ops.push(zk_client::Op::delete("/locks/gone", None));
    admin.multi(&ops).await.unwrap();
    let last = waiting.pop().unwrap();
    let got = within("the last waiter", last).await.unwrap();
    assert!(
        matches!(
            got,
            Err(zk_recipes::Error::LockLost(
                zk_recipes::LossReason::NodeDeleted
            ))
        ),
        "{got:?}"
    );
    drop(held);
}
