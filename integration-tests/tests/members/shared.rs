//! Shared values in Curator's formats against a real server and Curator 5.4 itself
//! (`java/CuratorShared.java`): `DistributedAtomicLong` and `SharedCount` updated by Java and
//! Rust at once lose no increment, and each side reads what the other wrote.

use std::time::Duration;

use integration_tests::prelude::*;
use zk_recipes::shared::{
    AtomicRetry, DistributedAtomicLong, PromotedToLock, SharedCount, SharedState, SharedValue,
};

const JAVA: &str = "CuratorShared.java";

/// Increments until `n` increments succeeded; returns how many went through the lock.
async fn rust_increments(counter: DistributedAtomicLong, n: usize) -> u32 {
    let mut promoted = 0;
    for _ in 0..n {
        let mut tries = 0;
        loop {
            tries += 1;
            assert!(tries < 1000, "an increment never succeeded");
            let v = counter.increment().await.expect("increment");
            promoted += v.stats.promoted_tries;
            if v.succeeded {
                assert_eq!(v.post_value, v.pre_value + 1);
                break;
            }
        }
    }
    promoted
}

#[tokio::test]
async fn atomic_long_java_and_rust_increment_one_counter_and_lose_nothing() {
    let TestRoot { hosts, .. } = test_root("shared_atomic").await;
    let admin = connect(&hosts).await;
    let mut java = JavaPeer::start(JAVA, &[&hosts], false).await;
    const JAVA_N: usize = 150;
    const RUST_N: usize = 150;
    java.send(&format!("atomic-inc /counters/c /counters/c-lock {JAVA_N}"))
        .await;
    let mut tasks = Vec::new();
    for _ in 0..2 {
        let client = connect(&hosts).await;
        // Few optimistic tries, so the promoted lock (Curator's mutex layout, shared with
        // Java's promotion) is used too.
        let counter = DistributedAtomicLong::new(client, "/counters/c")
            .unwrap()
            .with_retry(AtomicRetry::new(
                2,
                Duration::from_millis(1),
                Duration::from_millis(4),
            ))
            .promoted_to_lock(PromotedToLock::new("/counters/c-lock"));
        tasks.push(tokio::spawn(rust_increments(counter, RUST_N)));
    }
    let mut promoted = 0;
    for t in tasks {
        promoted += within("rust increments", t).await.unwrap();
    }
    let done = java.line().await;
    assert!(
        done.starts_with(&format!("DONE ok={JAVA_N} ")),
        "java: {done}"
    );
    let total = (JAVA_N + 2 * RUST_N) as i64;
    // Both libraries read the same value, in the 8-byte format.
    let (raw, _) = admin.get_data("/counters/c").await.unwrap();
    assert_eq!(raw.as_ref(), total.to_be_bytes());
    let ours = DistributedAtomicLong::new(admin.clone(), "/counters/c").unwrap();
    assert_eq!(ours.get().await.unwrap().post_value, total);
    assert_eq!(
        java.ask("atomic-get /counters/c").await,
        format!("VALUE {total}")
    );
    println!("rust tries under the promoted lock: {promoted}; java: {done}");
    java.close().await;
}

#[tokio::test]
async fn atomic_long_operations_follow_curator() {
    let TestRoot { hosts, .. } = test_root("shared_atomic_ops").await;
    let client = connect(&hosts).await;
    let counter = DistributedAtomicLong::new(client.clone(), "/a/n").unwrap();
    // Missing reads as 0 and is not created.
    let v = counter.get().await.unwrap();
    assert!(v.succeeded && v.post_value == 0);
    assert!(client.exists("/a/n").await.unwrap().is_none());
    assert!(counter.initialize(5).await.unwrap());
    assert!(!counter.initialize(9).await.unwrap());
    let v = counter.add(10).await.unwrap();
    assert_eq!((v.pre_value, v.post_value), (5, 15));
    let v = counter.subtract(20).await.unwrap();
    assert_eq!(v.post_value, -5);
    let v = counter.compare_and_set(0, 1).await.unwrap();
    assert!(!v.succeeded && v.pre_value == -5);
    let v = counter.compare_and_set(-5, 7).await.unwrap();
    assert!(v.succeeded && v.post_value == 7);
    counter.force_set(i64::MAX).await.unwrap();
    let v = counter.increment().await.unwrap();
    assert_eq!(v.post_value, i64::MIN, "wraps as Java's long");
    // Parents are containers, as Curator makes them.
    let (_, parent) = client.get_data("/a").await.unwrap();
    assert_eq!(parent.ephemeral_owner, 0);
    // Corrupt data (1..7 bytes) is an error, not a guess.
    client.set_data("/a/n", &[1, 2, 3], None).await.unwrap();
    assert!(counter.get().await.is_err());
    assert!(counter.increment().await.is_err());
    // Empty data reads as 0.
    client.set_data("/a/n", &[], None).await.unwrap();
    assert_eq!(counter.get().await.unwrap().post_value, 0);
}

async fn rust_count_increments(count: SharedCount, n: usize) {
    for _ in 0..n {
        let mut tries = 0;
        loop {
            tries += 1;
            assert!(tries < 10_000, "a compare-and-set never succeeded");
            let current = count.versioned().expect("decodable count");
            if count
                .try_set_count(&current, current.value + 1)
                .await
                .expect("trySetCount")
            {
                break;
            }
            // Lost to someone: the cache is refreshed (by the conflict's re-read or the
            // watch), go again.
            tokio::task::yield_now().await;
        }
    }
}

#[tokio::test]
async fn shared_count_java_and_rust_compare_and_set_one_count_and_see_each_other() {
    let TestRoot { hosts, .. } = test_root("shared_count").await;
    let admin = connect(&hosts).await;
    let mut java = JavaPeer::start(JAVA, &[&hosts], false).await;

    // Java writes, Rust reads and is told.
    let reader = SharedCount::new(admin.clone(), "/shared/count", 0)
        .await
        .unwrap();
    let mut changes = reader.watch();
    assert_eq!(java.ask("count-set /shared/count 41").await, "SET");
    let seen = within("java's write seen", async {
        loop {
            match changes.changed().await {
                SharedState::Current(v) if v.value == 41 => return v,
                SharedState::Current(_) => {}
                other => panic!("{other:?}"),
            }
        }
    })
    .await;
    assert!(seen.version >= 1);
    assert_eq!(reader.count().unwrap(), 41);
    let (raw, _) = admin.get_data("/shared/count").await.unwrap();
    assert_eq!(raw.as_ref(), [0, 0, 0, 41], "4-byte big-endian");

    // Rust writes, Java reads.
    reader.set_count(-7).await.unwrap();
    assert_eq!(java.ask("count-get /shared/count").await, "VALUE -7");
    reader.set_count(0).await.unwrap();

    // Both compare-and-set at once: no increment lost.
    const JAVA_N: usize = 100;
    const RUST_N: usize = 100;
    java.send(&format!("count-inc /shared/count {JAVA_N}"))
        .await;
    let mut tasks = Vec::new();
    for _ in 0..2 {
        let client = connect(&hosts).await;
        let count = SharedCount::new(client.clone(), "/shared/count", 0)
            .await
            .unwrap();
        tasks.push(tokio::spawn(rust_count_increments(count, RUST_N)));
    }
    for t in tasks {
        within("rust increments", t).await.unwrap();
    }
    assert_eq!(java.line().await, format!("DONE ok={JAVA_N}"));
    let total = (JAVA_N + 2 * RUST_N) as i32;
    eventually("the reader follows", Duration::from_secs(10), || async {
        (reader.count().ok() == Some(total)).then_some(())
    })
    .await;
    assert_eq!(
        java.ask("count-get /shared/count").await,
        format!("VALUE {total}")
    );
    java.close().await;
}

#[tokio::test]
async fn shared_value_is_followed_through_delete_and_recreate() {
    let TestRoot { hosts, .. } = test_root("shared_value").await;
    let client = connect(&hosts).await;
    let admin = connect(&hosts).await;
    let value = SharedValue::new(client.clone(), "/v/config", b"one")
        .await
        .unwrap();
    // The seed does not overwrite an existing value.
    let again = SharedValue::new(admin.clone(), "/v/config", b"other")
        .await
        .unwrap();
    assert_eq!(again.value().value.as_ref(), b"one");
    let mut changes = value.watch();

    // A stale compare-and-set is refused without a write; a fresh one applies.
    let stale = value.value();
    admin.set_data("/v/config", b"two", None).await.unwrap();
    let SharedState::Current(seen) = within("change", changes.changed()).await else {
        panic!("ended");
    };
    assert_eq!(seen.value.as_ref(), b"two");
    assert!(!value.try_set_value(&stale, b"lost").await.unwrap());
    let fresh = value.value();
    assert!(value.try_set_value(&fresh, b"three").await.unwrap());
    assert_eq!(value.value().value.as_ref(), b"three");
    assert_eq!(
        admin.get_data("/v/config").await.unwrap().0.as_ref(),
        b"three"
    );

    // Deleted and created again by someone: still followed (Curator goes deaf here).
    admin.delete("/v/config", None).await.unwrap();
    admin
        .create(
            "/v/config",
            b"reborn",
            &zk_client::CreateOptions::persistent(),
        )
        .await
        .unwrap();
    eventually("the re-created value", Duration::from_secs(10), || async {
        (value.value().value.as_ref() == b"reborn").then_some(())
    })
    .await;
    assert_eq!(value.value().version, 0);

    // The version conflict path re-reads: the cache is fresh after a `false`.
    let before = value.value();
    admin.set_data("/v/config", b"x", None).await.unwrap();
    // Race the watch: whichever comes first, the answer is false and the cache catches up.
    assert!(
        !value.try_set_value(&before, b"y").await.unwrap() || value.value().value.as_ref() == b"y"
    );
    eventually("cache after conflict", Duration::from_secs(10), || async {
        (value.value().value.as_ref() != before.value.as_ref()).then_some(())
    })
    .await;
}

#[tokio::test]
async fn shared_value_changes_end_with_the_session() {
    let TestRoot { hosts, .. } = test_root("shared_value_end").await;
    let client = connect(&hosts).await;
    let value = SharedValue::new(client.clone(), "/v", b"a").await.unwrap();
    let mut changes = value.watch();
    client.close().await.unwrap();
    let end = within("end", changes.changed()).await;
    assert_eq!(end, SharedState::Ended, "changes end when the session does");
    assert!(value.set_value(b"b").await.is_err());
}

#[tokio::test]
async fn a_closed_shared_value_refuses_writes_and_leaves_the_node_as_it_was() {
    let TestRoot { hosts, .. } = test_root("shared_value_closed").await;
    let client = connect(&hosts).await;
    let value = SharedValue::new(client.clone(), "/v", b"a").await.unwrap();
    let mut changes = value.watch();
    let current = value.value();
    value.close().await.unwrap();
    assert_eq!(within("end", changes.changed()).await, SharedState::Ended);
    for write in [
        value.set_value(b"b").await.map(|()| true),
        value.try_set_value(&current, b"c").await,
    ] {
        assert!(
            matches!(
                write,
                Err(zk_recipes::Error::Client(zk_client::Error::Closed))
            ),
            "a write after close: {write:?}"
        );
    }
    assert_eq!(client.get_data("/v").await.unwrap().0.as_ref(), b"a");
}

#[tokio::test]
async fn a_path_the_client_refuses_is_the_recipes_invalid_path() {
    // One error for one meaning: a path with an empty segment passes the recipe's own check
    // and is refused by the client; the caller gets the same `InvalidPath` either way.
    let TestRoot { hosts, .. } = test_root("shared_invalid_path").await;
    let client = connect(&hosts).await;
    for bad in ["/counts//a", "counts/a"] {
        let count = SharedCount::new(client.clone(), bad, 0).await;
        match count {
            Err(zk_recipes::Error::InvalidPath { path, .. }) => assert_eq!(path, bad),
            other => panic!("{bad}: {:?}", other.map(|c| c.path().to_owned())),
        }
    }
}

/// Under connection cuts: every increment reported as succeeded was applied exactly once.
/// Rust increments run through a proxy that is reset again and again (a write whose reply is
/// lost fails with `ConnectionLoss`: not acknowledged, maybe applied); Java increments at the
/// same time without faults (Curator's retry could count a lost-reply write twice).
#[tokio::test]
async fn atomic_long_under_connection_cuts_counts_every_acknowledged_increment_once() {
    use integration_tests::proxy::Cut;
    use integration_tests::Proxy;
    let TestRoot {
        server,
        root,
        hosts,
    } = test_root("shared_atomic_faults").await;
    let admin = connect(&hosts).await;
    let mut java = JavaPeer::start(JAVA, &[&hosts], false).await;
    let proxy = std::sync::Arc::new(Proxy::start(server.addr()).await);
    const JAVA_N: usize = 100;
    const RUST_N: usize = 100;
    java.send(&format!("atomic-inc /c /c-lock {JAVA_N}")).await;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let cutter = {
        let (proxy, stop) = (proxy.clone(), stop.clone());
        tokio::spawn(async move {
            let mut cuts = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(40)).await;
                proxy.cut(Cut::Reset);
                cuts += 1;
            }
            cuts
        })
    };
    let mut tasks = Vec::new();
    for _ in 0..2 {
        let client = connect(&format!("{}{root}", proxy.connect_string())).await;
        let counter = DistributedAtomicLong::new(client, "/c")
            .unwrap()
            .promoted_to_lock(PromotedToLock::new("/c-lock"));
        tasks.push(tokio::spawn(async move {
            let (mut acked, mut ambiguous, mut other) = (0i64, 0i64, 0i64);
            while acked < RUST_N as i64 {
                match counter.increment().await {
                    Ok(v) if v.succeeded => acked += 1,
                    Ok(_) => {}
                    Err(zk_recipes::Error::Client(e)) if e.is_connection_loss() => ambiguous += 1,
                    // A lock acquisition cut short, say.
                    Err(_) => other += 1,
                }
                assert!(ambiguous + other < 10_000, "no progress");
            }
            (acked, ambiguous)
        }));
    }
    let (mut acked, mut ambiguous) = (0, 0);
    for t in tasks {
        let (a, m) = within("rust increments", t).await.unwrap();
        acked += a;
        ambiguous += m;
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let cuts = cutter.await.unwrap();
    assert!(java.line().await.starts_with(&format!("DONE ok={JAVA_N} ")));
    let total = DistributedAtomicLong::new(admin, "/c")
        .unwrap()
        .get()
        .await
        .unwrap()
        .post_value;
    let acknowledged = acked + JAVA_N as i64;
    println!(
        "{cuts} cuts: {acknowledged} acknowledged, {ambiguous} ambiguous, final value {total}"
    );
    assert!(
        total >= acknowledged && total <= acknowledged + ambiguous,
        "final {total} outside [{acknowledged}, {acknowledged} + {ambiguous}]"
    );
    java.close().await;
}

#[tokio::test]
async fn a_managed_shared_count_goes_on_after_an_expiry() {
    use zk_client::Client;
    let TestRoot { server, hosts, .. } = test_root("shared_managed").await;
    let admin = connect(&hosts).await;
    let builder = Client::builder(&hosts).session_timeout(Duration::from_secs(4));
    let m = managed(builder).await;
    let count = SharedCount::new_managed(&m, "/m/count", 1).await.unwrap();
    let mut changes = count.watch();

    let mut clients = m.watch();
    let old = m.client();
    expire_client(server.addr(), &old).await;
    within("renewal", clients.changed()).await.live().unwrap();

    // Still followed on the new session.
    admin
        .set_data("/m/count", &5i32.to_be_bytes(), None)
        .await
        .unwrap();
    let seen = within("change after the expiry", async {
        loop {
            match changes.changed().await {
                SharedState::Current(v) if v.value == 5 => return v,
                SharedState::Current(_) => {}
                other => panic!("still following: {other:?}"),
            }
        }
    })
    .await;
    assert_eq!(seen.value, 5);
    // And written through the new session.
    let current = count.versioned().unwrap();
    assert!(count.try_set_count(&current, 6).await.unwrap());
    assert_eq!(
        admin.get_data("/m/count").await.unwrap().0.as_ref(),
        6i32.to_be_bytes()
    );
    m.close().await.unwrap();
}
