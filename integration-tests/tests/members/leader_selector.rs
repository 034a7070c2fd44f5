//! Leader selector on a real server: the work of one participant at a time (a shared log of
//! work intervals checked for overlaps), turns pass on when the work returns, re-queue, and
//! the work is dropped when leadership is lost (a partitioned leader).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use integration_tests::prelude::*;
use integration_tests::proxy::{Mode, Proxy};
use tokio::time::Instant;
use zk_recipes::leader::{LeaderSelector, LeadershipPolicy};

/// Work intervals: (who, token, start, end).
type Log = Arc<Mutex<Vec<(String, i64, Instant, Option<Instant>)>>>;

/// Records the end of a work interval when dropped (returned or cancelled).
struct Interval(Log, usize);

impl Drop for Interval {
    fn drop(&mut self) {
        self.0.lock().unwrap()[self.1].3 = Some(Instant::now());
    }
}

fn begin(log: &Log, who: &str, token: i64) -> Interval {
    let mut l = log.lock().unwrap();
    l.push((who.to_owned(), token, Instant::now(), None));
    Interval(log.clone(), l.len() - 1)
}

fn assert_no_overlap(log: &Log) -> Vec<String> {
    let mut l = log.lock().unwrap().clone();
    l.sort_by_key(|e| e.2);
    for pair in l.windows(2) {
        let end = pair[0].3.expect("a work interval never ended");
        assert!(end <= pair[1].2, "two works at once: {pair:?}");
        assert!(pair[1].1 > pair[0].1, "fencing tokens grow: {pair:?}");
    }
    l.into_iter().map(|e| e.0).collect()
}

#[tokio::test]
async fn works_take_turns_and_requeue_without_overlap() {
    let TestRoot { hosts, .. } = test_root("selector_turns").await;
    let log: Log = Arc::default();
    let mut selectors = Vec::new();
    for who in ["a", "b", "c"] {
        let m = manager(&hosts).await;
        let log = log.clone();
        let s = LeaderSelector::builder("/election/selector", who)
            .policy(LeadershipPolicy::Standard)
            .auto_requeue(true)
            .build_managed(&m, move |_client, term| {
                let interval = begin(&log, who, term.fencing_token);
                async move {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    drop(interval);
                }
            })
            .unwrap();
        selectors.push(s);
    }
    let end = Instant::now() + LIMIT;
    while log.lock().unwrap().len() < 9 {
        assert!(Instant::now() < end, "too few terms");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let ids = participant_ids(selectors[0].participants().await);
    assert_eq!(ids.len(), 3, "{ids:?}");
    for s in &selectors {
        s.close().await.unwrap();
    }
    let who = assert_no_overlap(&log);
    for name in ["a", "b", "c"] {
        assert!(
            who.iter().filter(|w| *w == name).count() >= 2,
            "{name} led again after re-queueing: {who:?}"
        );
    }
}

#[tokio::test]
async fn work_is_dropped_when_leadership_is_lost_and_without_requeue_the_selector_stops() {
    let TestRoot {
        server,
        root,
        hosts,
    } = test_root("selector_loss").await;
    let proxy = Proxy::start(server.addr()).await;
    let log: Log = Arc::default();
    let path = "/election/loss";
    let ma = manager(&format!("{}{root}", proxy.connect_string())).await;
    let la = log.clone();
    let a = LeaderSelector::builder(path, "a")
        .policy(LeadershipPolicy::Standard)
        .auto_requeue(false)
        .build_managed(&ma, move |_, t| {
            let interval = begin(&la, "a", t.fencing_token);
            async move {
                std::future::pending::<()>().await;
                drop(interval);
            }
        })
        .unwrap();
    within("a leads", a.watch().wait_for(|s| s.is_leader())).await;
    let mb = manager(&hosts).await;
    let lb = log.clone();
    let b = LeaderSelector::builder(path, "b")
        .policy(LeadershipPolicy::Standard)
        .auto_requeue(false)
        .build_managed(&mb, move |_, t| {
            let interval = begin(&lb, "b", t.fencing_token);
            async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                drop(interval);
            }
        })
        .unwrap();
    proxy.set_mode(Mode::Blackhole);
    // a's work is dropped when its connection is lost; b leads once a's session expired,
    // runs its work, and (no re-queue) stops.
    within("b done", b.finished()).await;
    within("a done", a.finished()).await;
    proxy.set_mode(Mode::Pass);
    assert_eq!(assert_no_overlap(&log), ["a", "b"]);
    a.close().await.unwrap();
    b.close().await.unwrap();
}
