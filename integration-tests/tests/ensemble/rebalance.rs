//! Rebalancing after a host-list update, ours against the Java client's, in the same run on
//! the same five-member ensemble: 50 sessions each connected to three members, then the list
//! grown to five (`Client::update_hosts` / `ZooKeeper.updateServerList`, both ZOOKEEPER-1355).
//! Sessions per member are counted with `cons`.
//!
//! `ZKRS_REBALANCE_TRIALS=<n>` repeats the grow (and the shrink back) `n` times (default 1)
//! and prints the spread of each trial.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use futures_util::future::join_all;
use integration_tests::{chroot, Ensemble};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;
use zk_client::admin::Server;
use zk_client::Client;

const CLIENTS: usize = 50;
const STEP: Duration = Duration::from_secs(60);
const ZOOKEEPER_JAR: &str = "/usr/share/java/zookeeper.jar";
const SLF4J_NOP: &str = "/usr/share/java/slf4j-nop.jar";

fn trials() -> usize {
    std::env::var("ZKRS_REBALANCE_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}

/// Sessions of `ids` per member (index), once every one of them is on exactly one member.
async fn settled(zk: &Ensemble, ids: &[i64]) -> Vec<Vec<i64>> {
    let deadline = tokio::time::Instant::now() + STEP;
    loop {
        let per: Vec<Vec<i64>> = join_all((0..zk.len()).map(|i| async move {
            match Server::new(zk.addr(i).to_string()).cons().await {
                Ok(cons) => cons
                    .iter()
                    .filter_map(|c| c.session_id)
                    .filter(|s| ids.contains(s))
                    .collect(),
                Err(_) => Vec::new(),
            }
        }))
        .await;
        let mut seen: BTreeMap<i64, usize> = BTreeMap::new();
        for s in per.iter().flatten() {
            *seen.entry(*s).or_default() += 1;
        }
        if ids.iter().all(|id| seen.get(id) == Some(&1)) {
            return per;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "sessions not settled: {per:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn counts(per: &[Vec<i64>]) -> Vec<usize> {
    per.iter().map(Vec::len).collect()
}

/// Sessions whose member changed between `before` and `after`.
fn moved(before: &[Vec<i64>], after: &[Vec<i64>]) -> usize {
    let member = |per: &[Vec<i64>], s: i64| per.iter().position(|m| m.contains(&s));
    before
        .iter()
        .flatten()
        .filter(|s| member(before, **s) != member(after, **s))
        .count()
}

/// Largest distance of a member's count from the fair share.
fn spread(c: &[usize]) -> usize {
    let fair = c.iter().sum::<usize>() / c.len().max(1);
    c.iter().map(|n| n.abs_diff(fair)).max().unwrap_or(0)
}

/// The Java client's sessions, in a JVM of their own.
struct JavaSessions {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

impl JavaSessions {
    async fn start(hosts: &str, n: usize) -> (JavaSessions, Vec<i64>) {
        for jar in [ZOOKEEPER_JAR, SLF4J_NOP] {
            assert!(
                std::path::Path::new(jar).exists(),
                "{jar} is missing: install Debian's zookeeper and libslf4j-java"
            );
        }
        let java = std::env::var("ZK_JAVA").unwrap_or_else(|_| "java".into());
        let source: std::path::PathBuf = [
            env!("CARGO_MANIFEST_DIR"),
            "java",
            "JavaUpdateServerList.java",
        ]
        .iter()
        .collect();
        let mut child = Command::new(java)
            .args(["-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp"])
            .arg(format!("{ZOOKEEPER_JAR}:{SLF4J_NOP}"))
            .arg(source)
            .args([hosts, &n.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start java");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let mut java = JavaSessions {
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
        };
        let first = java.line().await;
        let ids = first
            .strip_prefix("SESSIONS ")
            .unwrap_or_else(|| panic!("java: {first}"))
            .split_whitespace()
            .map(|s| s.parse().expect("a session id"))
            .collect();
        (java, ids)
    }

    async fn line(&mut self) -> String {
        tokio::time::timeout(STEP, self.lines.next_line())
            .await
            .expect("java answers")
            .expect("read java")
            .unwrap_or_default()
    }

    /// Sends `cmd`; its answer, which must start with `expect`.
    async fn command(&mut self, cmd: &str, expect: &str) -> String {
        self.stdin
            .write_all(format!("{cmd}\n").as_bytes())
            .await
            .expect("write java");
        self.stdin.flush().await.expect("flush java");
        let answer = self.line().await;
        assert!(answer.starts_with(expect), "java after {cmd}: {answer}");
        answer
    }

    async fn close(mut self) {
        self.command("CLOSE", "DONE").await;
        let _ = tokio::time::timeout(STEP, self.child.wait()).await;
    }
}

#[tokio::test]
async fn ours_and_javas_update_server_list_spread_3_to_5_alike() {
    let zk = Ensemble::launch(5).await;
    let root = chroot(&zk, "rebalance").await;
    let three = format!("{},{},{}", zk.addr(0), zk.addr(1), zk.addr(2));
    let five = zk.connect_string();
    let ours: Vec<Client> = join_all((0..CLIENTS).map(|_| {
        Client::builder(&format!("{three}{root}"))
            .session_timeout(Duration::from_secs(20))
            .connect()
    }))
    .await
    .into_iter()
    .collect::<Result<_, _>>()
    .unwrap();
    let our_ids: Vec<i64> = ours.iter().map(Client::session_id).collect();
    let (mut java, java_ids) = JavaSessions::start(&three, CLIENTS).await;
    eprintln!("members' client ports: {five}");
    assert_eq!(java_ids.len(), CLIENTS);

    let mut ours_spread = Vec::new();
    let mut java_spread = Vec::new();
    for trial in 0..trials() {
        let our_before = settled(&zk, &our_ids).await;
        let java_before = settled(&zk, &java_ids).await;
        assert_eq!(counts(&our_before)[3..], [0, 0]);
        assert_eq!(counts(&java_before)[3..], [0, 0]);

        join_all(ours.iter().map(|c| c.update_hosts(&five)))
            .await
            .into_iter()
            .collect::<Result<Vec<bool>, _>>()
            .unwrap();
        let java_says = java.command(&format!("UPDATE {five}"), "UPDATED").await;
        eprintln!("java's own count: {java_says}");
        let our_after = settled(&zk, &our_ids).await;
        let java_after = settled(&zk, &java_ids).await;
        let (oc, jc) = (counts(&our_after), counts(&java_after));
        let (om, jm) = (
            moved(&our_before, &our_after),
            moved(&java_before, &java_after),
        );
        eprintln!(
            "trial {trial}: 3 -> 5, fair share {}: ours {:?} -> {oc:?} ({om} moved), \
             java {:?} -> {jc:?} ({jm} moved)",
            CLIENTS / 5,
            counts(&our_before),
            counts(&java_before)
        );
        ours_spread.push((spread(&oc), om));
        java_spread.push((spread(&jc), jm));
        // Ours: within 8 of the fair share 10 (sd about 3), about 2/5 moved (sd 3.5).
        assert!(spread(&oc) <= 8, "ours: {oc:?}");
        assert!((8..=32).contains(&om), "ours moved {om}");

        // Back to three: only the sessions on members 4 and 5 move, for both clients.
        join_all(ours.iter().map(|c| c.update_hosts(&three)))
            .await
            .into_iter()
            .collect::<Result<Vec<bool>, _>>()
            .unwrap();
        java.command(&format!("UPDATE {three}"), "UPDATED").await;
        let our_back = settled(&zk, &our_ids).await;
        let java_back = settled(&zk, &java_ids).await;
        eprintln!(
            "trial {trial}: 5 -> 3: ours {:?} ({} moved), java {:?} ({} moved)",
            counts(&our_back),
            moved(&our_after, &our_back),
            counts(&java_back),
            moved(&java_after, &java_back)
        );
        assert_eq!(moved(&our_after, &our_back), oc[3] + oc[4]);
    }
    eprintln!("(largest distance from the fair share, moved) per trial: ours {ours_spread:?}, java {java_spread:?}");
    // Same sessions throughout, on both sides.
    assert_eq!(
        ours.iter().map(Client::session_id).collect::<Vec<_>>(),
        our_ids
    );
    java.close().await;
    join_all(ours.iter().map(Client::close)).await;
}
