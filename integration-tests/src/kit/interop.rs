//! The Rust side of the cross-library lock tests: the same critical-section checks as
//! `java/CuratorLocker.java` and `python/kazoo_locker.py`.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::time::timeout;
use zk_client::{Client, CreateOptions};
use zk_recipes::lock::FairLock;

use super::session::connect;
use super::tree::{make_counter, read_counter};

use super::limits::LONG as LIMIT;
const CURATOR_JAR: &str = "/usr/share/java/curator-recipes.jar";
const SLF4J_NOP: &str = "/usr/share/java/slf4j-nop.jar";

fn script(dir: &str, file: &str) -> PathBuf {
    [env!("CARGO_MANIFEST_DIR"), dir, file].iter().collect()
}

/// A Curator contender (`java/CuratorLocker.java`): `mode` is mutex, read or write.
pub fn curator(hosts: &str, lock: &str, mode: &str, rounds: usize) -> Command {
    for jar in [CURATOR_JAR, SLF4J_NOP] {
        assert!(
            std::path::Path::new(jar).exists(),
            "{jar} is missing: install Debian's libcurator-recipes-java and libslf4j-java \
             (bash scripts/test.sh does)"
        );
    }
    let java = std::env::var("ZK_JAVA").unwrap_or_else(|_| "java".into());
    let mut cmd = Command::new(java);
    cmd.args(["-Xmx128m", "-XX:TieredStopAtLevel=1", "-cp"])
        .arg(format!("{CURATOR_JAR}:{SLF4J_NOP}"))
        .arg(script("java", "CuratorLocker.java"))
        .args([hosts, lock, mode, &rounds.to_string(), "/counter"]);
    cmd
}

/// A kazoo contender (`python/kazoo_locker.py`) on Debian's python3-kazoo.
pub fn kazoo(hosts: &str, lock: &str, rounds: usize) -> Command {
    let python = "/usr/bin/python3";
    let probe = std::process::Command::new(python)
        .args(["-c", "import kazoo"])
        .status();
    assert!(
        matches!(probe, Ok(s) if s.success()),
        "{python} cannot import kazoo: install Debian's python3-kazoo (bash scripts/test.sh does)"
    );
    let mut cmd = Command::new(python);
    cmd.arg(script("python", "kazoo_locker.py")).args([
        hosts,
        lock,
        &rounds.to_string(),
        "/counter",
    ]);
    cmd
}

/// A contender process of another library: prints READY when it is about to lock, then one
/// line "DONE rounds=N violations=V".
pub struct Contender {
    child: Child,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

impl Contender {
    /// Starts `cmd` and waits for its READY line.
    pub async fn start(mut cmd: Command) -> Contender {
        let mut child = cmd
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("start {cmd:?}: {e}"));
        let stdout = child.stdout.take().expect("piped stdout");
        let mut contender = Contender {
            child,
            lines: BufReader::new(stdout).lines(),
        };
        let first = contender.next_line().await;
        assert_eq!(first, "READY", "contender did not start");
        contender
    }

    async fn next_line(&mut self) -> String {
        timeout(LIMIT, self.lines.next_line())
            .await
            .expect("contender hung")
            .expect("read contender output")
            .unwrap_or_default()
    }

    /// Waits for the end; returns the violations it counted.
    pub async fn finish(mut self) -> usize {
        let last = self.next_line().await;
        let status = timeout(LIMIT, self.child.wait())
            .await
            .expect("exit")
            .expect("wait");
        assert!(status.success(), "contender failed: {last} ({status})");
        let violations = last
            .strip_prefix("DONE ")
            .and_then(|rest| {
                rest.split_whitespace()
                    .find_map(|kv| kv.strip_prefix("violations="))
            })
            .and_then(|v| v.parse().ok());
        violations.unwrap_or_else(|| panic!("unexpected contender output: {last}"))
    }
}

/// What the Rust side saw.
#[derive(Default)]
struct Tally {
    /// Critical-section checks that failed.
    violations: AtomicUsize,
    /// Rounds in which another library's contender was queued too.
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
    if !super::children(client, "/counter-readers").await.is_empty() {
        tally.violations.fetch_add(1, Ordering::SeqCst);
    }
    super::bump_counter(client, "/counter").await;
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
        if super::children(&client, lock.path()).await.len() > rust_lockers {
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

/// A mixed fleet on one lock: starts the other library's contender processes, runs
/// `rust_lockers` Rust lockers (`lock_for(session, i)` gives each its lock and whether it
/// writes) for `rounds` rounds each alongside them, then checks that nobody saw a conflicting
/// holder, that the counter counts `writes` increments (no lost update), and that the two
/// libraries really queued together.
pub async fn contend(
    hosts: &str,
    others: Vec<Command>,
    rust_lockers: usize,
    lock_for: impl Fn(Client, usize) -> (FairLock, bool),
    rounds: usize,
    writes: usize,
) {
    let admin = prepare(hosts).await;
    let mut processes = Vec::new();
    for cmd in others {
        processes.push(Contender::start(cmd).await);
    }
    let tally = Arc::new(Tally::default());
    let mut tasks = Vec::new();
    for i in 0..rust_lockers {
        let client = connect(hosts).await;
        let (lock, write) = lock_for(client.clone(), i);
        tasks.push(tokio::spawn(rust_rounds(
            client,
            lock,
            rounds,
            write,
            rust_lockers,
            tally.clone(),
        )));
    }
    for task in tasks {
        task.await.expect("Rust locker");
    }
    let mut their_violations = 0;
    for p in processes {
        their_violations += p.finish().await;
    }
    assert_eq!(
        their_violations, 0,
        "the other library saw a conflicting holder"
    );
    assert_eq!(
        tally.violations.load(Ordering::SeqCst),
        0,
        "Rust saw a conflicting holder"
    );
    assert_eq!(
        read_counter(&admin, "/counter").await,
        writes as i64,
        "lost updates"
    );
    assert!(
        tally.contended.load(Ordering::SeqCst) > 0,
        "the libraries never queued together: the test proved nothing"
    );
}
