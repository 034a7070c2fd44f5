//! Helpers of `tracking.rs`: Curator's `EnsembleTracker` as a peer process, and the
//! lock-and-counter workers that run while the ensemble changes.
#![allow(dead_code, unreachable_pub)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use zk_client::{Client, CreateOptions, Error};
use zk_recipes::lock::FairLock;

/// Bound of every wait.
const STEP: Duration = Duration::from_secs(30);

/// Curator's `EnsembleTracker` (`java/CuratorEnsembleTracker.java`) in the same run: what
/// connection string it uses as the ensemble changes, and whether its namespace holds.
pub struct CuratorTracker {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: Arc<std::sync::Mutex<Vec<String>>>,
}

impl CuratorTracker {
    pub async fn start(connect: &str, namespace: &str) -> CuratorTracker {
        use tokio::io::AsyncBufReadExt;
        const JARS: [&str; 2] = [
            "/usr/share/java/curator-framework.jar",
            "/usr/share/java/slf4j-nop.jar",
        ];
        for jar in JARS {
            assert!(
                std::path::Path::new(jar).exists(),
                "{jar} is missing: install Debian's libcurator-framework-java and libslf4j-java"
            );
        }
        let java = std::env::var("ZK_JAVA").unwrap_or_else(|_| "java".into());
        let source: std::path::PathBuf = [
            env!("CARGO_MANIFEST_DIR"),
            "java",
            "CuratorEnsembleTracker.java",
        ]
        .iter()
        .collect();
        let mut child = tokio::process::Command::new(java)
            .args([
                "-Xmx128m",
                "-XX:TieredStopAtLevel=1",
                "-cp",
                &JARS.join(":"),
            ])
            .arg(source)
            .args([connect, namespace])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start java");
        let stdin = child.stdin.take().expect("stdin");
        let mut out = tokio::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
        let lines = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = lines.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = out.next_line().await {
                sink.lock().unwrap().push(line);
            }
        });
        let tracker = CuratorTracker {
            child,
            stdin,
            lines,
        };
        let deadline = Instant::now() + STEP * 2;
        while tracker.last("SESSION").is_none() {
            assert!(
                Instant::now() < deadline,
                "curator did not connect: {:?}",
                tracker.lines.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tracker
    }

    /// The last line starting with `prefix`, without it.
    pub fn last(&self, prefix: &str) -> Option<String> {
        let lines = self.lines.lock().unwrap();
        lines
            .iter()
            .rev()
            .find_map(|l| l.strip_prefix(prefix).map(|r| r.trim().to_owned()))
    }

    /// The connection string once it has not changed for 1.5 s (at most 15 s).
    pub async fn settled_conn(&self) -> String {
        let deadline = Instant::now() + Duration::from_secs(15);
        let mut last = self.last("CONN").unwrap_or_default();
        let mut since = Instant::now();
        while Instant::now() < deadline && since.elapsed() < Duration::from_millis(1500) {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let now = self.last("CONN").unwrap_or_default();
            if now != last {
                last = now;
                since = Instant::now();
            }
        }
        last
    }

    async fn command(&mut self, cmd: &str) {
        use tokio::io::AsyncWriteExt;
        self.stdin
            .write_all(format!("{cmd}\n").as_bytes())
            .await
            .expect("write java");
        self.stdin.flush().await.expect("flush java");
    }

    /// Creates an ephemeral `/<name>` through Curator's namespaced client; its answer line.
    pub async fn write(&mut self, name: &str) -> String {
        let before = self.lines.lock().unwrap().len();
        self.command(&format!("WRITE {name}")).await;
        let deadline = Instant::now() + STEP;
        loop {
            let answer = self.lines.lock().unwrap()[before..]
                .iter()
                .find(|l| l.starts_with("WROTE") || l.starts_with("ERROR"))
                .cloned();
            if let Some(answer) = answer {
                return answer;
            }
            assert!(Instant::now() < deadline, "curator did not answer WRITE");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn close(mut self) {
        self.command("CLOSE").await;
        let _ = tokio::time::timeout(STEP, self.child.wait()).await;
    }
}

/// What the workers counted.
#[derive(Default)]
pub struct Tally {
    /// Counter increments applied.
    pub increments: AtomicU64,
    /// Second holders and lost updates seen.
    pub violations: AtomicU64,
}

/// Retries `op` (bounded) while it fails with a retryable error (members leave and move).
async fn retrying<T, F, Fut>(mut op: F) -> zk_client::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = zk_client::Result<T>>,
{
    let deadline = Instant::now() + STEP;
    loop {
        match op().await {
            Err(e) if e.is_retryable() && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            done => return done,
        }
    }
}

/// A lock holder's round: under the lock, an ephemeral marker nobody else may hold, then a
/// read-modify-write of the counter; the marker is removed before the lock is released,
/// whatever happened in between. Connection losses are retried; an update whose answer was
/// lost is checked by reading the counter again.
async fn round(client: &Client, lock: &FairLock, tally: &Tally) -> zk_client::Result<()> {
    let guard = match tokio::time::timeout(STEP, lock.acquire()).await {
        Ok(Ok(guard)) => guard,
        Ok(Err(_)) | Err(_) => return Err(Error::ConnectionLoss),
    };
    let me = client.session_id();
    let result = section(client, tally, me).await;
    // Our marker goes before the lock does (never someone else's: that one was counted).
    let cleaned = retrying(|| async {
        match client.exists("/holder").await? {
            Some(stat) if stat.ephemeral_owner == me => {
                match client.delete("/holder", Some(stat.version)).await {
                    Ok(()) | Err(Error::NoNode) => Ok(()),
                    Err(e) => Err(e),
                }
            }
            _ => Ok(()),
        }
    })
    .await;
    let _ = guard.release().await;
    result.and(cleaned)
}

/// The critical section of [`round`].
async fn section(client: &Client, tally: &Tally, me: i64) -> zk_client::Result<()> {
    match client
        .create("/holder", b"", &CreateOptions::ephemeral())
        .await
    {
        Ok(_) => {}
        Err(Error::NodeExists | Error::ConnectionLoss) => {
            // Ours (a create whose answer was lost) or a second holder.
            let owner = retrying(|| client.exists("/holder"))
                .await?
                .map(|s| s.ephemeral_owner);
            if owner.is_some() && owner != Some(me) {
                eprintln!("second holder: /holder owned by {owner:x?}, not {me:#x}");
                tally.violations.fetch_add(1, Ordering::SeqCst);
            }
        }
        Err(e) => return Err(e),
    }
    let (data, stat) = retrying(|| client.get_data("/counter")).await?;
    let v: u64 = std::str::from_utf8(&data)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(u64::MAX);
    let next = (v + 1).to_string();
    let deadline = Instant::now() + STEP;
    loop {
        match client
            .set_data("/counter", next.as_bytes(), Some(stat.version))
            .await
        {
            Ok(_) => break,
            Err(Error::ConnectionLoss) if Instant::now() < deadline => {
                let Ok((now, _)) = client.get_data("/counter").await else {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                if now == next.as_bytes() {
                    break;
                }
            }
            // Someone else wrote under our lock: a lost update.
            Err(Error::BadVersion) => {
                eprintln!("lost update: /counter changed under the lock");
                tally.violations.fetch_add(1, Ordering::SeqCst);
                return Ok(());
            }
            Err(e) => return Err(e),
        }
    }
    tally.increments.fetch_add(1, Ordering::SeqCst);
    Ok(())
}

/// Runs rounds on the client `get` gives until `stop`.
pub fn worker(
    get: impl Fn() -> Client + Send + 'static,
    tally: Arc<Tally>,
    stop: Arc<AtomicBool>,
) -> tokio::task::JoinHandle<u64> {
    tokio::spawn(async move {
        let mut failed = 0;
        while !stop.load(Ordering::SeqCst) {
            let client = get();
            let lock = FairLock::new(client.clone(), "/lock").expect("lock");
            if round(&client, &lock, &tally).await.is_err() {
                failed += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        failed
    })
}
