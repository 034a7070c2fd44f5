//! Our semaphore, revocation and owner data beside Apache Curator (Debian's
//! `libcurator-recipes-java`, Curator 5): `InterProcessSemaphoreV2` and `Semaphore` on one
//! path never hold more leases together than the count; a Java `Revoker` reaches our holder
//! and our `revoke` reaches a revocable Java holder; Java's `getParticipantNodes()` lists our
//! holders with our owner data (by default the address Curator itself would write).
//!
//! The Java side is `integration-tests/java/CuratorSemaphore.java` (single-file source launcher).

use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use integration_tests::prelude::*;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};
use tokio::time::timeout;
use zk_client::{Client, CreateOptions};
use zk_recipes::{lock::FairLock, semaphore::Semaphore};

const CURATOR_JAR: &str = "/usr/share/java/curator-recipes.jar";
const SLF4J_NOP: &str = "/usr/share/java/slf4j-nop.jar";

/// A running `CuratorSemaphore.java`.
struct Java {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Java {
    /// Starts `CuratorSemaphore <hosts> <args>` and waits for its READY line.
    async fn start(hosts: &str, args: &[&str]) -> Java {
        for jar in [CURATOR_JAR, SLF4J_NOP] {
            assert!(
                std::path::Path::new(jar).exists(),
                "{jar} is missing: install Debian's libcurator-recipes-java and libslf4j-java"
            );
        }
        let java = std::env::var("ZK_JAVA").unwrap_or_else(|_| "java".into());
        let source: std::path::PathBuf =
            [env!("CARGO_MANIFEST_DIR"), "java", "CuratorSemaphore.java"]
                .iter()
                .collect();
        let mut child = Command::new(java)
            .args(["-Xmx128m", "-XX:TieredStopAtLevel=1", "-cp"])
            .arg(format!("{CURATOR_JAR}:{SLF4J_NOP}"))
            .arg(source)
            .arg(hosts)
            .args(args)
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start java");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut java = Java {
            child,
            lines: BufReader::new(stdout).lines(),
        };
        assert_eq!(java.line().await, "READY", "CuratorSemaphore did not start");
        java
    }

    async fn line(&mut self) -> String {
        timeout(LONG, self.lines.next_line())
            .await
            .expect("java hung")
            .expect("read java output")
            .unwrap_or_default()
    }

    /// Reads lines until one starts with `prefix`; returns the rest of it.
    async fn expect(&mut self, prefix: &str) -> String {
        for _ in 0..1_000 {
            let line = self.line().await;
            if let Some(rest) = line.strip_prefix(prefix) {
                return rest.to_owned();
            }
            assert!(
                !line.is_empty() && !line.starts_with("ERROR"),
                "java: {line:?}"
            );
        }
        panic!("java never printed {prefix}");
    }

    /// Waits for a successful exit.
    async fn exit(mut self) {
        let status = timeout(LONG, self.child.wait())
            .await
            .expect("java exits")
            .expect("wait");
        assert!(status.success(), "java failed: {status}");
    }
}

/// The value of `key=` in a "DONE k=v ..." line.
fn field(done: &str, key: &str) -> usize {
    done.split_whitespace()
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in {done:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphore_and_curator_semaphore_share_the_lease_count() {
    let TestRoot { hosts, .. } = test_root("curator_semaphore").await;
    let admin = connect(&hosts).await;
    admin
        .create("/inside", &[], &CreateOptions::persistent())
        .await
        .unwrap();
    const MAX: usize = 2;
    const ROUNDS: usize = 12;
    let max = MAX.to_string();
    let rounds = ROUNDS.to_string();
    let mut java = Vec::new();
    for _ in 0..2 {
        java.push(Java::start(&hosts, &["semaphore", "/sema", &max, &rounds]).await);
    }
    let most = Arc::new(AtomicUsize::new(0));
    let beside_java = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..2 {
        let client = connect(&hosts).await;
        let sem = Semaphore::new(client.clone(), "/sema", MAX).unwrap();
        let (most, beside_java) = (most.clone(), beside_java.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..ROUNDS {
                let lease = timeout(LONG, sem.acquire()).await.unwrap().unwrap();
                let (marker, inside) = enter(&client).await;
                most.fetch_max(inside, Ordering::SeqCst);
                let who = sem.participants().await.unwrap();
                if who.iter().any(|p| p.data_str() == Some("java")) {
                    beside_java.fetch_add(1, Ordering::SeqCst);
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
                client.delete(&marker, None).await.unwrap();
                lease.release().await.unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.expect("Rust contender");
    }
    let mut java_most = 0;
    for mut j in java {
        let done = j.expect("DONE ").await;
        assert_eq!(
            field(&done, "violations"),
            0,
            "Java saw too many holders: {done}"
        );
        java_most = java_most.max(field(&done, "most"));
        j.exit().await;
    }
    let most = most.load(Ordering::SeqCst);
    let beside = beside_java.load(Ordering::SeqCst);
    println!("curator semaphore: most holders Rust saw {most}, Java saw {java_most}; {beside} Rust rounds beside a Java lease");
    assert!(most <= MAX, "Rust saw {most} holders of {MAX} leases");
    assert!(
        beside > 0,
        "Rust never held a lease beside Java: proved nothing"
    );
    assert!(children(&admin, "/sema/leases").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revocation_reaches_holders_both_ways() {
    let TestRoot { hosts, .. } = test_root("curator_revoke").await;
    // Java holds a revocable InterProcessMutex; our revoke asks it to let go.
    let mut holder = Java::start(&hosts, &["revocable", "/locks/a"]).await;
    let node = holder.expect("HELD ").await;
    let client = connect(&hosts).await;
    let lock = FairLock::new(client.clone(), "/locks/a").unwrap();
    let who = lock.participants().await.unwrap();
    assert_eq!(who.first().map(|p| p.path.as_str()), Some(node.as_str()));
    assert!(zk_recipes::lock::revoke(&client, &node).await.unwrap());
    assert_eq!(holder.line().await, "REVOKED");
    holder.exit().await;
    let ours = timeout(LONG, lock.acquire()).await.unwrap().unwrap();

    // Our holder; Java's Revoker.attemptRevoke on every participant reaches it.
    {
        let asked = ours.revocation_requested();
        tokio::pin!(asked);
        assert!(
            timeout(Duration::from_millis(200), &mut asked)
                .await
                .is_err(),
            "revocation reported before anyone asked"
        );
        let mut revoker = Java::start(&hosts, &["revoke", "/locks/a"]).await;
        timeout(LONG, &mut asked)
            .await
            .expect("our holder heard the Java revoker")
            .expect("revocation");
        assert_eq!(field(&revoker.expect("DONE ").await, "revoked"), 1);
        revoker.exit().await;
    }
    ours.release().await.unwrap();
    // A node that is gone: nothing to revoke.
    assert!(!zk_recipes::lock::revoke(&client, &node).await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_lists_our_participants_with_our_owner_data() {
    let TestRoot { hosts, .. } = test_root("curator_participants").await;
    let named = FairLock::new(connect(&hosts).await, "/locks/p")
        .unwrap()
        .with_owner_data("rust-worker-7");
    let holder = named.acquire().await.unwrap();
    let waiter_client: Client = connect(&hosts).await;
    let plain = FairLock::new(waiter_client, "/locks/p").unwrap();
    let waiting = tokio::spawn(async move { plain.acquire().await });
    let admin = connect(&hosts).await;
    wait_children(&admin, "/locks/p", 2, LONG).await;

    let mut java = Java::start(&hosts, &["participants", "/locks/p"]).await;
    let address = java.expect("ADDR ").await;
    let mut listed = Vec::new();
    loop {
        let line = java.line().await;
        if line == "END" {
            break;
        }
        let rest = line
            .strip_prefix("P ")
            .unwrap_or_else(|| panic!("java: {line:?}"));
        let (node, data) = rest.split_once(' ').unwrap_or((rest, ""));
        listed.push((node.to_owned(), data.to_owned()));
    }
    java.exit().await;
    let ours = named.participants().await.unwrap();
    println!("curator participants: {listed:?}; Curator's default data {address:?}");
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert_eq!(
        listed[0],
        (holder.path().to_owned(), "rust-worker-7".to_owned())
    );
    // The waiter's default data is what Curator writes by default: the local address.
    assert_eq!(
        listed[1].1, address,
        "default owner data differs from Curator's"
    );
    let ours: Vec<(String, String)> = ours
        .iter()
        .map(|p| (p.path.clone(), p.data_str().unwrap_or_default().to_owned()))
        .collect();
    assert_eq!(ours, listed, "our participants() and Curator's disagree");
    holder.release().await.unwrap();
    let g = timeout(LONG, waiting).await.unwrap().unwrap().unwrap();
    g.release().await.unwrap();
}
