//! Rust lockers and kazoo (Debian's python3-kazoo) on one lock path must exclude each other.
//!
//! kazoo orders Curator-style names only when told their marker (`extra_lock_patterns =
//! ["-lock-"]`); our `FairLock` orders kazoo's `<hex>__lock__<seq>` nodes by their sequence
//! number without being told. Mixing kazoo with Curator is unsafe (Curator ignores kazoo's
//! nodes); mixing kazoo with ours is not, and this test shows it.

use integration_tests::kit::interop::{contend, kazoo};
use integration_tests::prelude::*;
use zk_recipes::lock::FairLock;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fair_lock_and_kazoo_lock_exclude_each_other() {
    let TestRoot { hosts, .. } = test_root("kazoo_mutex").await;
    const ROUNDS: usize = 20;
    let python = vec![
        kazoo(&hosts, "/locks/kz", ROUNDS),
        kazoo(&hosts, "/locks/kz", ROUNDS),
    ];
    let mutex = |client, _| (FairLock::new(client, "/locks/kz").unwrap(), true);
    contend(&hosts, python, 2, mutex, ROUNDS, 4 * ROUNDS).await;
}
