//! Our `LeaderLatch` and Apache Curator's (Debian's `libcurator-recipes-java`, Curator 5) on
//! one path: exactly one leader between them, leadership passes both ways, and Curator's
//! `getLeader().getId()` names our participant's id when we lead.

use std::process::Stdio;
use std::time::Duration;

use integration_tests::prelude::*;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use zk_recipes::leader::LeadershipPolicy;

const CURATOR_JAR: &str = "/usr/share/java/curator-recipes.jar";
const SLF4J_NOP: &str = "/usr/share/java/slf4j-nop.jar";
const PATH: &str = "/election/mixed";

/// A Curator `LeaderLatch` participant (`java/CuratorLatch.java`) driven over stdin/stdout.
struct JavaLatch {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl JavaLatch {
    async fn start(hosts: &str, path: &str, id: &str) -> JavaLatch {
        for jar in [CURATOR_JAR, SLF4J_NOP] {
            assert!(
                std::path::Path::new(jar).exists(),
                "{jar} is missing: install Debian's libcurator-recipes-java and libslf4j-java \
                 (bash scripts/test.sh does)"
            );
        }
        let source = format!("{}/java/CuratorLatch.java", env!("CARGO_MANIFEST_DIR"));
        let java = std::env::var("ZK_JAVA").unwrap_or_else(|_| "java".into());
        let mut child = Command::new(java)
            .args(["-Xmx128m", "-XX:TieredStopAtLevel=1", "-cp"])
            .arg(format!("{CURATOR_JAR}:{SLF4J_NOP}"))
            .arg(source)
            .args([hosts, path, id])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start java");
        let stdin = child.stdin.take().expect("piped stdin");
        let lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        let mut latch = JavaLatch {
            child,
            stdin,
            lines,
        };
        assert_eq!(latch.line().await, "READY");
        latch
    }

    async fn line(&mut self) -> String {
        within("java output", self.lines.next_line())
            .await
            .expect("read java output")
            .expect("java exited early")
    }

    async fn ask(&mut self, command: &str) -> String {
        self.stdin
            .write_all(format!("{command}\n").as_bytes())
            .await
            .expect("write to java");
        self.stdin.flush().await.expect("flush");
        self.line().await
    }

    async fn leader_id(&mut self) -> String {
        let answer = self.ask("leader").await;
        answer
            .strip_prefix("LEADER ")
            .unwrap_or_else(|| panic!("unexpected answer {answer}"))
            .to_owned()
    }

    async fn has_leadership(&mut self) -> bool {
        self.ask("has").await == "HAS true"
    }

    async fn close(mut self) {
        assert_eq!(self.ask("close").await, "CLOSED");
        let status = within("java exit", self.child.wait()).await.unwrap();
        assert!(status.success(), "java failed: {status}");
    }
}

#[tokio::test]
async fn rust_and_curator_latches_elect_one_leader_and_curator_names_ours() {
    let TestRoot { hosts, .. } = test_root("leader_curator").await;
    let admin = connect(&hosts).await;
    let log = TermLog::default();

    // Rust first: it leads, and Curator names it.
    let m1 = manager(&hosts).await;
    let rust1 = join(&log, &m1, PATH, "rust-1", LeadershipPolicy::Standard);
    leads(&rust1).await;
    let mut java = JavaLatch::start(&hosts, PATH, "java-1").await;
    let m2 = manager(&hosts).await;
    wait_nodes(&admin, PATH, 2).await;
    let rust2 = join(&log, &m2, PATH, "rust-2", LeadershipPolicy::Standard);
    wait_nodes(&admin, PATH, 3).await;
    assert_eq!(java.leader_id().await, "rust-1");
    assert!(!java.has_leadership().await);
    let ids = participant_ids(rust2.participants().await);
    assert_eq!(ids, ["rust-1", "java-1", "rust-2"]);

    // Rust leader leaves: Curator leads, and only Curator.
    rust1.close().await.unwrap();
    assert_eq!(java.ask("await 30000").await, "AWAIT true");
    assert!(!rust2.is_leader());
    assert_eq!(rust2.leader().await.unwrap().unwrap().id(), "java-1");
    assert_eq!(java.leader_id().await, "java-1");

    // Curator leaves: the Rust participant behind it leads, and Curator saw it as leader.
    java.close().await;
    leads(&rust2).await;
    let java2 = JavaLatch::start(&hosts, PATH, "java-2").await;
    let mut java2 = java2;
    assert_eq!(java2.leader_id().await, "rust-2");
    assert!(!java2.has_leadership().await);
    assert_eq!(java2.ask("await 300").await, "AWAIT false");
    rust2.close().await.unwrap();
    assert_eq!(java2.ask("await 30000").await, "AWAIT true");
    java2.close().await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    log.assert_no_overlap();
    wait_nodes(&admin, PATH, 0).await;
}

#[tokio::test]
async fn rust_and_curator_selectors_take_turns_and_curator_lists_ours() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use zk_client::CreateOptions;
    use zk_recipes::leader::LeaderSelector;

    const ROUNDS: usize = 6;
    let TestRoot { hosts, .. } = test_root("selector_curator").await;
    let path = "/election/selector";
    let violations = Arc::new(AtomicUsize::new(0));
    let rust_rounds = Arc::new(AtomicUsize::new(0));
    let mut selectors = Vec::new();
    for id in ["rust-1", "rust-2"] {
        let m = manager(&hosts).await;
        let (violations, rust_rounds) = (violations.clone(), rust_rounds.clone());
        let s = LeaderSelector::builder(path, id)
            .policy(LeadershipPolicy::Standard)
            .auto_requeue(true)
            .build_managed(&m, move |client, _term| {
                let (violations, rust_rounds) = (violations.clone(), rust_rounds.clone());
                async move {
                    // The same critical section as the Java side.
                    match client
                        .create("/marker", b"", &CreateOptions::ephemeral())
                        .await
                    {
                        Err(zk_client::Error::NodeExists) => {
                            violations.fetch_add(1, Ordering::SeqCst);
                        }
                        other => {
                            other.expect("create marker");
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    if client.delete("/marker", None).await.is_err() {
                        violations.fetch_add(1, Ordering::SeqCst);
                    }
                    rust_rounds.fetch_add(1, Ordering::SeqCst);
                }
            })
            .unwrap();
        selectors.push((s, m));
    }
    let source = format!("{}/java/CuratorSelector.java", env!("CARGO_MANIFEST_DIR"));
    let java = std::env::var("ZK_JAVA").unwrap_or_else(|_| "java".into());
    let mut child = Command::new(java)
        .args(["-Xmx128m", "-XX:TieredStopAtLevel=1", "-cp"])
        .arg(format!("{CURATOR_JAR}:{SLF4J_NOP}"))
        .arg(source)
        .args([&hosts, path, "java-1", &ROUNDS.to_string(), "/marker"])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start java");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let ready = within("java output", lines.next_line())
        .await
        .expect("read");
    assert_eq!(ready.as_deref(), Some("READY"));
    let done = within("java output", lines.next_line())
        .await
        .expect("read")
        .unwrap_or_default();
    assert!(
        within("java exit", child.wait()).await.unwrap().success(),
        "{done}"
    );
    for (s, m) in &selectors {
        s.close().await.unwrap();
        m.close().await.unwrap();
    }
    let field = |key: &str| {
        done.split_whitespace()
            .find_map(|kv| kv.strip_prefix(key))
            .unwrap_or_else(|| panic!("no {key} in {done:?}"))
            .to_owned()
    };
    assert_eq!(field("violations="), "0", "{done}");
    assert_eq!(violations.load(Ordering::SeqCst), 0);
    assert!(
        rust_rounds.load(Ordering::SeqCst) >= ROUNDS - 1,
        "turns were shared"
    );
    let mut ids: Vec<String> = field("participants=")
        .split(',')
        .map(str::to_owned)
        .collect();
    ids.sort();
    assert_eq!(
        ids,
        ["java-1", "rust-1", "rust-2"],
        "Curator lists our ids: {done}"
    );
}
