//! `zkrs health`, `zkrs mntr`, `zkrs config` against a real three-member ensemble: the
//! verdicts and exit codes a monitoring probe relies on.

use std::time::{Duration, Instant};

use crate::common::run;
use integration_tests::{ensemble, Ensemble};

/// `zkrs health` (optionally `--json`): exit code and stdout.
async fn health(zk: &Ensemble, json: bool) -> (i32, String) {
    let mut args = vec!["health", "--timeout", "1s"];
    if json {
        args.insert(0, "--json");
    }
    let out = run(&zk.connect_string(), &args).await;
    let code = out.status.code().expect("exited");
    (code, String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Polls `zkrs health` until it exits with `want` (members take a moment to notice a loss).
async fn wait_health(zk: &Ensemble, want: i32) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (code, text) = health(zk, false).await;
        if code == want {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "health still exits {code}, not {want}: {text}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn health_is_healthy_then_degraded_then_no_quorum() {
    let zk = ensemble().await;
    let text = wait_health(&zk, 0).await;
    assert!(text.contains("ensemble: healthy (3 of 3 serving"), "{text}");
    let (code, json) = health(&zk, true).await;
    assert_eq!(code, 0);
    let report: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(report["status"], "healthy");
    assert_eq!(report["members"], 3);
    assert_eq!(report["detail"].as_array().unwrap().len(), 3);

    // mntr and config on every member, with --json.
    let hosts = zk.connect_string();
    let out = run(&hosts, &["--json", "mntr", "-k", "zk_server_state"]).await;
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    let leaders = lines
        .iter()
        .filter(|l| l["answer"]["zk_server_state"] == "leader")
        .count();
    assert_eq!(leaders, 1, "{lines:?}");
    let out = run(&hosts, &["config"]).await;
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("server.3=").count(), 3, "{text}");

    let leader = zk.leader().await.expect("a leader");
    let follower = (leader + 1) % 3;
    zk.stop(follower).await;
    let text = wait_health(&zk, 1).await;
    assert!(text.contains("DEGRADED (2 of 3 serving"), "{text}");
    assert!(text.contains(" down "), "{text}");
    // A member that does not answer makes mntr exit 3 after printing the others.
    let out = run(&hosts, &["mntr", "-k", "zk_server_state"]).await;
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 3);

    zk.stop(leader).await;
    let text = wait_health(&zk, 2).await;
    assert!(text.contains("NO QUORUM"), "{text}");
    let (code, json) = health(&zk, true).await;
    assert_eq!(code, 2);
    let report: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(report["status"], "no_quorum");

    // Back to healthy once both return.
    zk.start(follower).await;
    zk.start(leader).await;
    wait_health(&zk, 0).await;
}

#[tokio::test]
async fn health_usage_errors_exit_3_not_2() {
    for args in [&["health", "--bogus"][..], &["health", "--timeout", "soon"]] {
        let out = run("127.0.0.1:1", args).await;
        assert_eq!(out.status.code(), Some(3), "{args:?}");
    }
    let out = run("127.0.0.1:x", &["health"]).await;
    assert_eq!(out.status.code(), Some(3));
    // Nothing listening anywhere: no quorum.
    let out = run("127.0.0.1:1", &["health", "--timeout", "500ms"]).await;
    assert_eq!(out.status.code(), Some(2));
    // Other commands keep their codes (2: bad input).
    let out = run("127.0.0.1:1", &["ls", "--bogus"]).await;
    assert_eq!(out.status.code(), Some(2));
}
