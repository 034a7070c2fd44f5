//! Rust lockers and Apache Curator (Debian's `libcurator-recipes-java`, Curator 5) contend on
//! the same lock paths and must exclude each other: `InterProcessMutex` against `FairLock`,
//! `InterProcessReadWriteLock` against `ReadWriteLock`.
//!
//! The Java side is `integration-tests/java/CuratorLocker.java`, run by Java's single-file
//! source launcher. Both sides check the critical section through marker nodes (see that file)
//! and writers increment a shared counter read-modify-write: overlaps show as violations or
//! lost updates.

mod common;

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{connect, make_counter, read_counter, shared_root};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::time::timeout;
use zk_client::{Client, CreateOptions};
use zk_recipes::{FairLock, ReadWriteLock};

const LIMIT: Duration = Duration::from_secs(180);
const CURATOR_JAR: &str = "/usr/share/java/curator-recipes.jar";
const SLF4J_NOP: &str = "/usr/share/java/slf4j-nop.jar";

/// A running Curator contender.
struct Curator {
    child: Child,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

impl Curator {
    /// Starts one and waits until it is connected and about to lock.
    async fn start(hosts: &str, lock: &str, mode: &str, rounds: usize) -> Curator {
        for jar in [CURATOR_JAR, SLF4J_NOP] {
            assert!(
                std::path::Path::new(jar).exists(),
                "{jar} is missing: install Debian's libcurator-recipes-java and libslf4j-java \
                 (bash scripts/test.sh does)"
            );
        }
        let source: PathBuf = [env!("CARGO_MANIFEST_DIR"), "java", "CuratorLocker.java"]
            .iter()
            .collect();
        let java = std::env::var("ZK_JAVA").unwrap_or_else(|_| "java".into());
        let mut child = Command::new(java)
            .args(["-Xmx128m", "-XX:TieredStopAtLevel=1", "-cp"])
            .arg(format!("{CURATOR_JAR}:{SLF4J_NOP}"))
            .arg(source)
            .args([hosts, lock, mode, &rounds.to_string(), "/counter"])
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start java (install openjdk-17-jdk-headless)");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut curator = Curator {
            child,
            lines: BufReader::new(stdout).lines(),
        };
        let first = curator.next_line().await;
        assert_eq!(first, "READY", "Curator contender did not start");
        curator
    }

    async fn next_line(&mut self) -> String {
        timeout(LIMIT, self.lines.next_line())
            .await
            .expect("Curator contender hung")
            .expect("read Curator output")
            .unwrap_or_default()
    }

    /// Waits for the end; returns the violations it counted.
    async fn finish(mut self) -> usize {
        let last = self.next_line().await;
        let status = timeout(LIMIT, self.child.wait())
            .await
            .expect("exit")
            .expect("wait");
        assert!(
            status.success(),
            "Curator contender failed: {last} ({status})"
        );
        let violations = last
            .strip_prefix("DONE ")
            .and_then(|rest| {
                rest.split_whitespace()
                    .find_map(|kv| kv.strip_prefix("violations="))
            })
            .and_then(|v| v.parse().ok());
        violations.unwrap_or_else(|| panic!("unexpected Curator output: {last}"))
    }
}

/// What the Rust side saw.
#[derive(Default)]
struct Tally {
    violations: AtomicUsize,
    contended: AtomicUsize,
}

/// A writer's critical section, the same checks as the Java side.
async fn write_section(client: &Client, tally: &Tally) {
    let marker = CreateOptions::ephemeral();
    match client.create("/counter-writer", &[], &marker).await {
        Ok(_) => {}
        Err(zk_client::Error::NodeExists) => {
            tally.violations.fetch_add(1, Ordering::SeqCst);
        }
        Err(e) => panic!("marker: {e}"),
    }
    if !common::children(client, "/counter-readers")
        .await
        .is_empty()
    {
        tally.violations.fetch_add(1, Ordering::SeqCst);
    }
    common::bump_counter(client, "/counter").await;
    if client.delete("/counter-writer", None).await.is_err() {
        tally.violations.fetch_add(1, Ordering::SeqCst);
    }
}

/// A reader's critical section.
async fn read_section(client: &Client, tally: &Tally) {
    let (mine, _) = client
        .create(
            "/counter-readers/r-",
            &[],
            &CreateOptions::ephemeral_sequential(),
        )
        .await
        .expect("reader marker");
    if client.exists("/counter-writer").await.unwrap().is_some() {
        tally.violations.fetch_add(1, Ordering::SeqCst);
    }
    client
        .delete(&mine, None)
        .await
        .expect("remove reader marker");
}

async fn prepare(hosts: &str) -> Client {
    let admin = connect(hosts).await;
    make_counter(&admin, "/counter").await;
    admin
        .create("/counter-readers", &[], &CreateOptions::persistent())
        .await
        .unwrap();
    admin
}

/// Runs `rounds` rounds of a Rust locker; notes rounds in which more contenders than
/// `rust_lockers` were queued (so at least one was Curator's).
async fn rust_rounds(
    client: Client,
    lock: FairLock,
    rounds: usize,
    write: bool,
    rust_lockers: usize,
    tally: Arc<Tally>,
) {
    for _ in 0..rounds {
        let guard = timeout(LIMIT, lock.acquire())
            .await
            .expect("acquire hung")
            .expect("acquire");
        if common::children(&client, lock.path()).await.len() > rust_lockers {
            tally.contended.fetch_add(1, Ordering::SeqCst);
        }
        if write {
            write_section(&client, &tally).await;
        } else {
            read_section(&client, &tally).await;
        }
        guard.release().await.expect("release");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fair_lock_and_curator_mutex_exclude_each_other() {
    let hosts = shared_root("curator_mutex").await;
    let admin = prepare(&hosts).await;
    const ROUNDS: usize = 25;
    let java = [
        Curator::start(&hosts, "/locks/shared", "mutex", ROUNDS).await,
        Curator::start(&hosts, "/locks/shared", "mutex", ROUNDS).await,
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
        Curator::start(&hosts, "/locks/rw", "read", ROUNDS).await,
        Curator::start(&hosts, "/locks/rw", "write", ROUNDS).await,
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
