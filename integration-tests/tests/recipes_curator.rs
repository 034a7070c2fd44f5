//! Rust lockers and Apache Curator (Debian's `libcurator-recipes-java`, Curator 5) contend on
//! the same lock paths and must exclude each other: `InterProcessMutex` against `FairLock`,
//! `InterProcessReadWriteLock` against `ReadWriteLock`.
//!
//! The Java side is `integration-tests/java/CuratorLocker.java`, run by Java's single-file
//! source launcher. Both sides check the critical section through marker nodes (see that file)
//! and writers increment a shared counter read-modify-write: overlaps show as violations or
//! lost updates.

mod common;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use common::interop::{curator, prepare, rust_rounds, Contender, Tally};
use common::{connect, read_counter, shared_root};
use zk_recipes::{FairLock, ReadWriteLock};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fair_lock_and_curator_mutex_exclude_each_other() {
    let hosts = shared_root("curator_mutex").await;
    let admin = prepare(&hosts).await;
    const ROUNDS: usize = 25;
    let java = [
        Contender::start(curator(&hosts, "/locks/shared", "mutex", ROUNDS)).await,
        Contender::start(curator(&hosts, "/locks/shared", "mutex", ROUNDS)).await,
    ];
    let tally = Arc::new(Tally::default());
    let mut rust = Vec::new();
    for _ in 0..2 {
        let client = connect(&hosts).await;
        let lock = FairLock::new(client.clone(), "/locks/shared").unwrap();
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
    let mut java_violations = 0;
    for c in java {
        java_violations += c.finish().await;
    }
    assert_eq!(java_violations, 0, "Curator saw another holder inside");
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
        "Curator and Rust never queued together: the test proved nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_write_lock_and_curator_read_write_lock_exclude_each_other() {
    let hosts = shared_root("curator_rw").await;
    let admin = prepare(&hosts).await;
    const ROUNDS: usize = 20;
    let java = [
        Contender::start(curator(&hosts, "/locks/rw", "read", ROUNDS)).await,
        Contender::start(curator(&hosts, "/locks/rw", "write", ROUNDS)).await,
    ];
    let tally = Arc::new(Tally::default());
    let mut rust = Vec::new();
    for write in [true, false] {
        let client = connect(&hosts).await;
        let rw = ReadWriteLock::new(client.clone(), "/locks/rw").unwrap();
        let lock = if write {
            rw.write_lock().clone()
        } else {
            rw.read_lock().clone()
        };
        rust.push(tokio::spawn(rust_rounds(
            client,
            lock,
            ROUNDS,
            write,
            2,
            tally.clone(),
        )));
    }
    for task in rust {
        task.await.unwrap();
    }
    let mut java_violations = 0;
    for c in java {
        java_violations += c.finish().await;
    }
    assert_eq!(java_violations, 0, "Curator saw a conflicting holder");
    assert_eq!(
        tally.violations.load(Ordering::SeqCst),
        0,
        "Rust saw a conflicting holder"
    );
    assert_eq!(
        read_counter(&admin, "/counter").await,
        (2 * ROUNDS) as i64,
        "lost updates"
    );
    assert!(
        tally.contended.load(Ordering::SeqCst) > 0,
        "no mixed contention happened"
    );
}
