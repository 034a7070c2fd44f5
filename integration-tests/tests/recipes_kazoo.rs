//! Rust lockers and kazoo (Debian's python3-kazoo) on one lock path must exclude each other.
//!
//! kazoo orders Curator-style names only when told their marker (`extra_lock_patterns =
//! ["-lock-"]`); our `FairLock` orders kazoo's `<hex>__lock__<seq>` nodes by their sequence
//! number without being told. Mixing kazoo with Curator is unsafe (Curator ignores kazoo's
//! nodes); mixing kazoo with ours is not, and this test shows it.

mod common;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use common::interop::{kazoo, prepare, rust_rounds, Contender, Tally};
use common::{connect, read_counter, shared_root};
use zk_recipes::FairLock;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fair_lock_and_kazoo_lock_exclude_each_other() {
    let hosts = shared_root("kazoo_mutex").await;
    let admin = prepare(&hosts).await;
    const ROUNDS: usize = 20;
    let python = [
        Contender::start(kazoo(&hosts, "/locks/kz", ROUNDS)).await,
        Contender::start(kazoo(&hosts, "/locks/kz", ROUNDS)).await,
    ];
    let tally = Arc::new(Tally::default());
    let mut rust = Vec::new();
    for _ in 0..2 {
        let client = connect(&hosts).await;
        let lock = FairLock::new(client.clone(), "/locks/kz").unwrap();
        rust.push(tokio::spawn(rust_rounds(
            client,
            lock,
            ROUNDS,
            true,
            2,
            tally.clone(),
        )));
    }
    for task in rust {
        task.await.unwrap();
    }
    let mut kazoo_violations = 0;
    for c in python {
        kazoo_violations += c.finish().await;
    }
    assert_eq!(kazoo_violations, 0, "kazoo saw another holder inside");
    assert_eq!(
        tally.violations.load(Ordering::SeqCst),
        0,
        "Rust saw another holder inside"
    );
    assert_eq!(
        read_counter(&admin, "/counter").await,
        (4 * ROUNDS) as i64,
        "lost updates"
    );
    assert!(
        tally.contended.load(Ordering::SeqCst) > 0,
        "kazoo and Rust never queued together: the test proved nothing"
    );
}
