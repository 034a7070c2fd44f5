//! Rust lockers and Apache Curator (Debian's `libcurator-recipes-java`, Curator 5) contend on
//! the same lock paths and must exclude each other: `InterProcessMutex` against `FairLock`,
//! `InterProcessReadWriteLock` against `ReadWriteLock`; one Rust locker of each test waits with
//! `HandOff::Prepared`, the other the default way.
//!
//! The Java side is `integration-tests/java/CuratorLocker.java`, run by Java's single-file
//! source launcher. Both sides check the critical section through marker nodes (see that file)
//! and writers increment a shared counter read-modify-write: overlaps show as violations or
//! lost updates.

use integration_tests::kit::interop::{contend, curator};
use integration_tests::prelude::*;
use zk_recipes::lock::{FairLock, HandOff, ReadWriteLock};

/// Rust locker `i`'s hand-off: both kinds of waiter share the queue with Curator's.
fn hand_off(i: usize) -> HandOff {
    if i == 1 {
        HandOff::Prepared
    } else {
        HandOff::Lean
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fair_lock_and_curator_mutex_exclude_each_other() {
    let TestRoot { hosts, .. } = test_root("curator_mutex").await;
    const ROUNDS: usize = 25;
    let java = vec![
        curator(&hosts, "/locks/shared", "mutex", ROUNDS),
        curator(&hosts, "/locks/shared", "mutex", ROUNDS),
    ];
    // Rust locker 1 waits with `HandOff::Prepared` (two watches), locker 0 the default way.
    let mutex = |client, i| {
        let lock = FairLock::new(client, "/locks/shared").unwrap();
        (lock.with_hand_off(hand_off(i)), true)
    };
    contend(&hosts, java, 2, mutex, ROUNDS, 4 * ROUNDS).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_write_lock_and_curator_read_write_lock_exclude_each_other() {
    let TestRoot { hosts, .. } = test_root("curator_rw").await;
    const ROUNDS: usize = 20;
    let java = vec![
        curator(&hosts, "/locks/rw", "read", ROUNDS),
        curator(&hosts, "/locks/rw", "write", ROUNDS),
    ];
    // Rust locker 0 writes, locker 1 reads (with `HandOff::Prepared`).
    let rw = |client, i| {
        let lock = ReadWriteLock::new(client, "/locks/rw")
            .unwrap()
            .with_hand_off(hand_off(i));
        if i == 0 {
            (lock.write_lock().clone(), true)
        } else {
            (lock.read_lock().clone(), false)
        }
    };
    contend(&hosts, java, 2, rw, ROUNDS, 2 * ROUNDS).await;
}
