//! Running the `zkrs` binary against the harness's real server (the rest comes from
//! `integration_tests::prelude`).

use std::process::{Output, Stdio};

use integration_tests::prelude::LIMIT;
use tokio::process::{Child, Command};

/// `zkrs --connect hosts ARGS...` as a command, not started.
pub(crate) fn command(hosts: &str, args: &[&str]) -> Command {
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
pub(crate) async fn run(hosts: &str, args: &[&str]) -> Output {
    run_command(command(hosts, args)).await
}

/// Runs a prepared `zkrs` command to the end.
pub(crate) async fn run_command(mut cmd: Command) -> Output {
    let out = tokio::time::timeout(LIMIT, cmd.output())
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
pub(crate) async fn ok(hosts: &str, args: &[&str]) -> String {
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
pub(crate) async fn json(hosts: &str, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let text = ok(hosts, &all).await;
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Runs `zkrs`, expects the exit code `code`; returns stderr.
pub(crate) async fn fails(hosts: &str, args: &[&str], code: i32) -> String {
    let out = run(hosts, args).await;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "zkrs {args:?}: {stderr}");
    // Our one-line errors, their JSON form, or clap's usage errors.
    let starts = ["zkrs: ", "{", "error: "];
    assert!(starts.iter().any(|s| stderr.starts_with(s)), "{stderr}");
    stderr
}

/// Starts a streaming `zkrs` command with piped stdout/stderr.
pub(crate) fn spawn(hosts: &str, args: &[&str]) -> Child {
    let mut cmd = command(hosts, args);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.spawn().expect("start zkrs")
}
