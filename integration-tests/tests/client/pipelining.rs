//! zk-client against a real server: thousands of requests in flight, replies in order.

use std::future::Future;
use std::pin::Pin;

use integration_tests::prelude::*;
use integration_tests::ZkTarget;
use zk_client::{Client, CreateOptions, Error};

type Check = Pin<Box<dyn Future<Output = ()> + Send>>;

const KEYS: usize = 10;

/// Issues `n` mixed requests without awaiting any, predicting each outcome from a model of
/// the server state in call order, then checks every reply.
fn pipeline(c: &Client, n: usize) -> Vec<Check> {
    let mut values: Vec<String> = vec!["init".into(); KEYS];
    let mut versions = [0i32; KEYS];
    let mut next_seq = 0u32;
    let mut checks: Vec<Check> = Vec::with_capacity(n);
    for i in 0..n {
        let key = (i / 5) % KEYS;
        let path = format!("/k{key}");
        match i % 5 {
            0 => {
                let value = i.to_string();
                values[key] = value.clone();
                versions[key] += 1;
                let expected = versions[key];
                let f = c.set_data(&path, value.as_bytes(), Some(expected - 1));
                checks.push(Box::pin(async move {
                    let stat = f.await.unwrap_or_else(|e| panic!("set #{i}: {e}"));
                    assert_eq!(stat.version, expected, "set #{i}");
                }));
            }
            1 => {
                let expected = values[key].clone();
                let f = c.get_data(&path);
                checks.push(Box::pin(async move {
                    let (data, _) = f.await.unwrap();
                    assert_eq!(
                        data,
                        expected.as_bytes(),
                        "get #{i} must see the writes before it"
                    );
                }));
            }
            2 => {
                let expected = format!("/seq/item-{next_seq:010}");
                next_seq += 1;
                let f = c.create("/seq/item-", b"", &CreateOptions::persistent_sequential());
                checks.push(Box::pin(async move {
                    assert_eq!(f.await.unwrap().0, expected, "create #{i}");
                }));
            }
            3 => {
                let expected = versions[key];
                let f = c.exists(&path);
                checks.push(Box::pin(async move {
                    assert_eq!(
                        f.await.unwrap().map(|s| s.version),
                        Some(expected),
                        "exists #{i}"
                    );
                }));
            }
            _ => {
                let f = c.get_data("/missing");
                checks.push(Box::pin(async move {
                    assert!(matches!(f.await, Err(Error::NoNode)), "error reply #{i}");
                }));
            }
        }
    }
    checks
}

async fn setup(test: &str, max_outstanding: usize) -> Client {
    setup_with(test, max_outstanding, true).await
}

async fn setup_with(test: &str, max_outstanding: usize, batch_reads: bool) -> Client {
    let TestRoot { server, root, .. } = test_root(test).await;
    let c = within(
        "connect",
        Client::builder(&format!("{}{root}", server.connect_string()))
            .max_outstanding(max_outstanding)
            .batch_reads(batch_reads)
            .connect(),
    )
    .await
    .unwrap();
    c.create("/seq", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    for k in 0..KEYS {
        c.create(&format!("/k{k}"), b"init", &CreateOptions::persistent())
            .await
            .unwrap();
    }
    c
}

#[tokio::test]
async fn ten_thousand_mixed_requests_in_flight_keep_their_order() {
    ten_thousand_in_order("pipeline_10k", true).await;
}

/// The same without read batching: every reply is read as it arrives.
#[tokio::test]
async fn without_read_batching_ten_thousand_requests_keep_their_order() {
    ten_thousand_in_order("pipeline_10k_eager", false).await;
}

async fn ten_thousand_in_order(test: &str, batch_reads: bool) {
    let c = setup_with(test, zk_client::DEFAULT_MAX_OUTSTANDING, batch_reads).await;
    let checks = pipeline(&c, 10_000);
    within("10k replies", async {
        for check in checks {
            check.await;
        }
    })
    .await;
    let children = c.get_children("/seq").await.unwrap();
    assert_eq!(children.len(), 2_000);
    c.close().await.unwrap();
}

#[tokio::test]
async fn a_small_window_queues_in_call_order() {
    let c = setup("pipeline_window", 4).await;
    let checks = pipeline(&c, 2_000);
    // Await from the end: the order is fixed at call time, not by who polls first.
    within("replies", async {
        let mut checks = checks;
        while let Some(check) = checks.pop() {
            check.await;
        }
    })
    .await;
    c.close().await.unwrap();
}

#[tokio::test]
async fn clones_on_many_tasks_share_one_session() {
    let c = setup("pipeline_tasks", zk_client::DEFAULT_MAX_OUTSTANDING).await;
    let mut tasks = Vec::new();
    for t in 0..8 {
        let c = c.clone();
        tasks.push(tokio::spawn(async move {
            let path = format!("/t{t}");
            c.create(&path, b"", &CreateOptions::persistent())
                .await
                .unwrap();
            let sets: Vec<_> = (0..500)
                .map(|i| c.set_data(&path, i.to_string().as_bytes(), None))
                .collect();
            for (i, set) in sets.into_iter().enumerate() {
                assert_eq!(set.await.unwrap().version, i as i32 + 1);
            }
            assert_eq!(&c.get_data(&path).await.unwrap().0[..], b"499");
        }));
    }
    for task in tasks {
        within("task", task).await.unwrap();
    }
    assert_eq!(
        c.get_all_children_number("/").await.unwrap(),
        8 + 1 + KEYS as i32
    );
    c.close().await.unwrap();
}

/// Pipelined plain reads travel several to a `multiRead` (`session/merge.rs`): each caller
/// still gets its own node, its own error, and sees exactly the writes called before it.
#[tokio::test]
async fn pipelined_reads_travel_merged_and_each_sees_the_writes_called_before_it() {
    // A server of its own: its packet count is this test's alone (the binary's shared server
    // counts every test's requests).
    let server = integration_tests::fresh_standalone().await;
    let root = integration_tests::chroot(&server, "pipeline_merged").await;
    let server = &server;
    let c = Client::builder(&server.hosts(&root))
        .connect()
        .await
        .unwrap();
    let mut values: Vec<Vec<u8>> = (0..KEYS).map(|k| vec![b'a' + k as u8; k * 700]).collect();
    for (k, v) in values.iter().enumerate() {
        c.create(&format!("/k{k}"), v, &CreateOptions::persistent())
            .await
            .unwrap();
    }
    let calls = 6_000;
    let before = mntr_value(server, "zk_packets_received").await;
    let mut checks: Vec<Check> = Vec::with_capacity(calls);
    for i in 0..calls {
        let key = (i * 7) % KEYS;
        let path = format!("/k{key}");
        if i % 50 == 49 {
            values[key] = format!("write #{i}").into_bytes();
            let f = c.set_data(&path, &values[key], None);
            checks.push(Box::pin(async move {
                f.await.unwrap_or_else(|e| panic!("set #{i}: {e}"));
            }));
        } else if i % 13 == 0 {
            let f = c.get_data("/missing");
            checks.push(Box::pin(async move {
                assert!(
                    matches!(f.await, Err(Error::NoNode)),
                    "get #{i} of /missing"
                );
            }));
        } else {
            let expected = values[key].clone();
            let f = c.get_data(&path);
            checks.push(Box::pin(async move {
                let (data, stat) = f.await.unwrap_or_else(|e| panic!("get #{i}: {e}"));
                assert_eq!(
                    data, expected,
                    "get #{i} of {path} sees the writes before it"
                );
                assert_eq!(stat.data_length as usize, expected.len());
            }));
        }
    }
    within("6k replies", async {
        for check in checks {
            check.await;
        }
    })
    .await;
    let requests = mntr_value(server, "zk_packets_received").await - before;
    // 6,000 calls, 120 of them writes: the reads between writes went up to three to a
    // request (a call alone is never held back, so not every read finds company).
    assert!(
        requests < 4_500,
        "{requests} requests for {calls} calls: the reads did not merge"
    );
    c.close().await.unwrap();
}
