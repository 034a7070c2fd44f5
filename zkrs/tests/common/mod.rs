//! Running the `zkrs` binary against the harness's real server.
#![allow(dead_code, unreachable_pub)]

use std::process::{Output, Stdio};
use std::time::Duration;

use integration_tests::{chroot, standalone, ZkTarget};
use tokio::process::{Child, Command};
use zk_client::Client;

/// Bound on one `zkrs` run.
const RUN_LIMIT: Duration = Duration::from_secs(60);

/// A connect string to the shared server under a fresh chroot for `test`.
pub async fn root(test: &str) -> String {
    let server = standalone().await;
    let root = chroot(server, test).await;
    server.hosts(&root)
}

/// A client session on `hosts`.
pub async fn connect(hosts: &str) -> Client {
    Client::builder(hosts)
        .session_timeout(Duration::from_secs(10))
        .connect()
        .await
        .expect("connect to the test server")
}

/// `zkrs --connect hosts ARGS...` as a command, not started.
pub fn command(hosts: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zkrs"));
    cmd.arg("--connect")
        .arg(hosts)
        .args(args)
        .env_remove("ZK_CONNECT")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    cmd
}

/// Runs `zkrs` to the end.
pub async fn run(hosts: &str, args: &[&str]) -> Output {
    run_command(command(hosts, args)).await
}

/// Runs a prepared `zkrs` command to the end.
pub async fn run_command(mut cmd: Command) -> Output {
    let out = tokio::time::timeout(RUN_LIMIT, cmd.output())
        .await
        .expect("zkrs hung")
        .expect("start zkrs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("panicked") && !stderr.contains("RUST_BACKTRACE"),
        "zkrs panicked: {stderr}"
    );
    out
}

/// Runs `zkrs`, expects success, returns stdout.
pub async fn ok(hosts: &str, args: &[&str]) -> String {
    let out = run(hosts, args).await;
    assert!(
        out.status.success(),
        "zkrs {args:?} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

/// Runs `zkrs --json`, expects success, parses stdout as one JSON document.
pub async fn json(hosts: &str, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let text = ok(hosts, &all).await;
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Runs `zkrs`, expects the exit code `code`; returns stderr.
pub async fn fails(hosts: &str, args: &[&str], code: i32) -> String {
    let out = run(hosts, args).await;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "zkrs {args:?}: {stderr}");
    // Our one-line errors, their JSON form, or clap's usage errors.
    let starts = ["zkrs: ", "{", "error: "];
    assert!(starts.iter().any(|s| stderr.starts_with(s)), "{stderr}");
    stderr
}

/// Starts a streaming `zkrs` command with piped stdout/stderr.
pub fn spawn(hosts: &str, args: &[&str]) -> Child {
    let mut cmd = command(hosts, args);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.spawn().expect("start zkrs")
}

/// Polls until `path` has `n` children, for at most `limit`.
pub async fn wait_for_children(client: &Client, path: &str, n: usize, limit: Duration) {
    let end = tokio::time::Instant::now() + limit;
    loop {
        let count = client
            .get_children(path)
            .await
            .map(|c| c.len())
            .unwrap_or(0);
        if count == n {
            return;
        }
        assert!(
            tokio::time::Instant::now() < end,
            "{path} never had {n} children"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
