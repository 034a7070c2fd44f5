//! Child measurement processes, run to their end within a bound.
//!
//! Kept free of the rest of the crate so that `examples/cache_memory.rs` includes it too
//! (`#[path]`): one copy of the loop that waits for, and if need be kills, a child.

use std::time::{Duration, Instant};

/// Runs `cmd` (a child measurement process) to its end, on the blocking pool, killing it
/// when it runs over `limit`; returns its output (stdout captured, stderr passed through).
///
/// # Errors
///
/// The child could not start or be waited for, or ran over `limit` (then it is killed).
pub(crate) async fn run_bounded(
    mut cmd: std::process::Command,
    limit: Duration,
    what: &'static str,
) -> std::io::Result<std::process::Output> {
    let run = tokio::task::spawn_blocking(move || {
        let mut child = cmd
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .spawn()?;
        let deadline = Instant::now() + limit;
        loop {
            if child.try_wait()?.is_some() {
                return child.wait_with_output();
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err(std::io::Error::other(format!(
                    "{what} ran over {} s",
                    limit.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    run.await.map_err(std::io::Error::other)?
}

/// Curator's recipes jar (Debian's `libcurator-recipes-java`).
const CURATOR_JAR: &str = "/usr/share/java/curator-recipes.jar";
/// A no-op SLF4J binding, so that the child prints only its result.
const SLF4J_NOP: &str = "/usr/share/java/slf4j-nop.jar";

/// The command that loads a `CuratorCache` of the `n` nodes at `path` in a JVM of its own
/// (`java/CuratorCacheLoad.java`, run from source), with a heap of at most `heap` (`-Xmx`).
///
/// # Errors
///
/// A jar it needs is missing.
pub(crate) fn curator_cache_load(
    connect: &str,
    path: &str,
    n: usize,
    heap: &str,
) -> Result<std::process::Command, String> {
    for jar in [CURATOR_JAR, SLF4J_NOP] {
        if !std::path::Path::new(jar).exists() {
            return Err(format!(
                "{jar} is missing (Debian's libcurator-recipes-java)"
            ));
        }
    }
    let script: std::path::PathBuf = [env!("CARGO_MANIFEST_DIR"), "java", "CuratorCacheLoad.java"]
        .iter()
        .collect();
    let java = std::env::var("ZK_JAVA").unwrap_or_else(|_| "java".into());
    let mut cmd = std::process::Command::new(java);
    cmd.args(["-XX:+UseSerialGC", &format!("-Xmx{heap}"), "-cp"])
        .arg(format!("{CURATOR_JAR}:{SLF4J_NOP}"))
        .arg(script)
        .args([connect, path, &n.to_string()]);
    Ok(cmd)
}
