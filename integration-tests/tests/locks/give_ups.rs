//! A storm of `HandOff::Prepared` give-ups on a real server: waiters on sessions of their own
//! (as in a fleet) queue behind a holder and give up (`acquire_timeout`) one by one, out of
//! queue order. A give-up deletes a node watched by at most two waiters (the one behind it,
//! and with `Prepared` the one behind that), so each may cost at most 2 notifications (server
//! `mntr`) and 2 listings (client `zk_client_requests_total`), checked on the running totals
//! (two give-ups may fall in one measuring window on a loaded machine); the holder keeps the
//! lock.
//! Counted as in `locks::depth` (a metrics recorder local to a current-thread runtime).

use std::time::Duration;

use integration_tests::prelude::*;
use integration_tests::{chroot, fresh_standalone, ZkTarget};
use metrics_util::debugging::DebuggingRecorder;
use tokio::time::Instant;
use zk_recipes::lock::{FairLock, HandOff};

use super::depth::{settled, Requests};

const WAITERS: usize = 6;
/// The order of the give-ups, by queue position.
const ORDER: [usize; WAITERS] = [2, 0, 4, 1, 5, 3];
const GAP: Duration = Duration::from_millis(500);

async fn storm(requests: &mut Requests) {
    let server = fresh_standalone().await;
    let root = chroot(&server, "give_ups").await;
    let hosts = server.hosts(&root);
    let path = "/give-ups";
    let admin = connect(&hosts).await;
    let holder = FairLock::new(connect(&hosts).await, path).unwrap();
    let guard = holder.acquire().await.unwrap();
    let start = Instant::now() + Duration::from_secs(3);
    let mut tasks = Vec::new();
    let mut names = Vec::new();
    for i in 0..WAITERS {
        let before = children(&admin, path).await;
        let rank = ORDER.iter().position(|r| *r == i).unwrap();
        let gives_up_at = start + GAP * u32::try_from(rank + 1).unwrap();
        let lock = FairLock::new(connect(&hosts).await, path)
            .unwrap()
            .with_hand_off(HandOff::Prepared);
        tasks.push(Some(tokio::spawn(async move {
            lock.acquire_timeout(gives_up_at - Instant::now())
                .await
                .map(drop)
        })));
        // One at a time, so the queue order is the index order.
        let queued = wait_children(&admin, path, i + 2, SOON).await;
        let new: Vec<String> = queued.into_iter().filter(|n| !before.contains(n)).collect();
        assert_eq!(new.len(), 1, "waiter {i} did not queue: {new:?}");
        names.extend(new);
    }
    assert!(Instant::now() < start, "the waiters took too long to queue");
    let first = settled(&server, requests).await;
    // Each window ends once more nodes are gone and the counts settled. Under load two
    // give-ups may share a window, so the bound is checked on the running totals: by the end
    // of a window, at most 2 notifications and 2 listings per give-up so far (a give-up's
    // delete comes before what it causes, and every node gone by then is counted).
    let nodes: Vec<String> = names.iter().map(|n| format!("{path}/{n}")).collect();
    let mut gone = 0;
    let mut windows = Vec::new();
    let end = Instant::now() + LIMIT;
    while gone < WAITERS {
        assert!(Instant::now() < end, "the waiters never all gave up");
        // Polled with `exists`, which is no listing (the recorder counts this session too).
        let count_gone = || async {
            let mut n = 0;
            for node in &nodes {
                n += usize::from(admin.exists(node).await.unwrap().is_none());
            }
            n
        };
        if count_gone().await == gone {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        }
        let now = settled(&server, requests).await;
        gone = count_gone().await;
        let cost = now - first;
        windows.push((gone, cost.notifications, cost.listings));
        assert!(
            cost.notifications <= 2 * gone as i64 && cost.listings <= 2 * gone as u64,
            "{gone} give-ups cost {} notifications and {} listings: {windows:?}",
            cost.notifications,
            cost.listings
        );
    }
    println!("give-ups so far, notifications and listings so far: {windows:?}");
    for (i, task) in tasks.into_iter().enumerate() {
        let result = within("give-up", task.unwrap()).await.unwrap();
        assert!(
            matches!(result, Err(zk_recipes::Error::Timeout)),
            "waiter {i}: {result:?}"
        );
    }
    let total = windows.last().copied().unwrap_or_default();
    assert!(total.2 >= 1, "no give-up woke anyone: {windows:?}");
    assert_eq!(children(&admin, path).await.len(), 1, "the holder holds");
    guard.release().await.unwrap();
}

#[test]
fn a_storm_of_prepared_give_ups_costs_at_most_two_notifications_and_listings_each() {
    let recorder = DebuggingRecorder::new();
    let mut requests = Requests::new(recorder.snapshotter());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    metrics::with_local_recorder(&recorder, || runtime.block_on(storm(&mut requests)));
}
