//! `zkrs locks` on one queue made by real Curator (Java) and kazoo (Python) processes and a
//! zk-recipes lock: the library column is checked against the real thing.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use crate::common::{json, ok};
use integration_tests::prelude::*;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdout, Command};
use tokio::time::timeout;
use zk_recipes::lock::FairLock;

const LIMIT: Duration = Duration::from_secs(60);
const CURATOR_CP: &str = "/usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-nop.jar";

fn script(file: &str) -> PathBuf {
    [env!("CARGO_MANIFEST_DIR"), "tests", "interop", file]
        .iter()
        .collect()
}

/// A contender process holding until its stdin closes (dropping it kills it).
struct Contender {
    child: Child,
    lines: tokio::io::Lines<BufReader<ChildStdout>>,
}

impl Contender {
    async fn start(mut cmd: Command) -> Contender {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("start {cmd:?}: {e}"));
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut c = Contender { child, lines };
        let first = timeout(LIMIT, c.lines.next_line())
            .await
            .expect("contender hung");
        assert!(
            matches!(&first, Ok(Some(l)) if l == "READY"),
            "contender said {first:?}"
        );
        c
    }

    async fn stop(mut self) {
        drop(self.child.stdin.take());
        let _ = timeout(LIMIT, self.child.wait()).await;
    }
}

fn curator(hosts: &str, lock: &str) -> Command {
    assert!(
        std::path::Path::new("/usr/share/java/curator-recipes.jar").exists(),
        "Curator is missing: install Debian's libcurator-recipes-java (scripts/test.sh does)"
    );
    let mut cmd = Command::new(std::env::var("ZK_JAVA").unwrap_or_else(|_| "java".into()));
    cmd.args(["-Xmx128m", "-XX:TieredStopAtLevel=1", "-cp", CURATOR_CP])
        .arg(script("CuratorHold.java"))
        .args([hosts, lock, "mutex"]);
    cmd
}

fn kazoo(hosts: &str, lock: &str, id: &str) -> Command {
    let mut cmd = Command::new("/usr/bin/python3");
    cmd.arg(script("kazoo_hold.py")).args([hosts, lock, id]);
    cmd
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_curator_kazoo_and_rust_queue() {
    let TestRoot { hosts, .. } = test_root("zkrs_interop").await;
    let lock = "/locks/mixed";
    let client = connect(&hosts).await;
    let guard = FairLock::new(client.clone(), lock)
        .unwrap()
        .with_owner_data("rust-worker-1")
        .acquire()
        .await
        .unwrap();
    // One at a time so the queue order is known: Rust holds, Curator, then kazoo wait.
    let java = Contender::start(curator(&hosts, lock)).await;
    wait_nodes(&client, lock, 2).await;
    let python = Contender::start(kazoo(&hosts, lock, "kazoo-worker-7")).await;
    wait_nodes(&client, lock, 3).await;

    let report = json(&hosts, &["locks", lock]).await;
    let entries = report["entries"].as_array().unwrap();
    let column = |key: &str| -> Vec<String> {
        entries
            .iter()
            .map(|e| e[key].as_str().unwrap_or("-").to_owned())
            .collect()
    };
    assert_eq!(
        column("library"),
        ["curator", "curator", "kazoo"],
        "{report}"
    );
    assert_eq!(column("kind"), ["mutex", "mutex", "mutex"]);
    assert_eq!(column("state"), ["holds", "waits", "waits"]);
    assert_eq!(entries[1]["waits_for"], entries[0]["name"]);
    assert_eq!(entries[2]["waits_for"], entries[1]["name"]);
    assert_eq!(
        entries[0]["owner_session"],
        format!("0x{:x}", client.session_id())
    );
    assert_eq!(entries[0]["data"], "rust-worker-1");
    assert_ne!(entries[1]["data"], "", "Curator writes its host address");
    assert_eq!(entries[2]["data"], "kazoo-worker-7");
    let warnings = report["warnings"].to_string();
    assert!(warnings.contains("UNSAFE MIX"), "{warnings}");

    // The text form, for the README (run with --nocapture to see it).
    let text = ok(&hosts, &["locks", lock]).await;
    println!("$ zkrs locks {lock}\n{text}");
    assert!(text.contains("kazoo") && text.contains("HOLDS"), "{text}");

    java.stop().await;
    python.stop().await;
    guard.release().await.unwrap();
}
