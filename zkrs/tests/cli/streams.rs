//! `zkrs watch`, `zkrs locks` (with `--watch`) and `zkrs revoke` on queues made by zk-recipes.

use std::time::Duration;

use crate::common::{json, ok, spawn};
use integration_tests::prelude::*;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::Child;
use tokio::time::timeout;
use zk_client::CreateOptions;
use zk_recipes::lock::FairLock;

const LIMIT: Duration = Duration::from_secs(30);

/// Waits for the "watching …" line a streaming command prints on stderr once its watch is set.
async fn wait_watching(child: &mut Child) {
    let stderr = child.stderr.take().expect("piped stderr");
    let mut lines = BufReader::new(stderr).lines();
    let line = timeout(LIMIT, lines.next_line())
        .await
        .expect("no watching line");
    assert!(
        matches!(&line, Ok(Some(l)) if l.starts_with("watching")),
        "{line:?}"
    );
}

/// Waits for the command to exit 0; returns its stdout lines.
async fn finish(mut child: Child) -> Vec<String> {
    let status = timeout(LIMIT, child.wait())
        .await
        .expect("zkrs hung")
        .unwrap();
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .await
        .unwrap();
    assert!(status.success(), "{status}: {out}");
    out.lines().map(str::to_owned).collect()
}

#[tokio::test]
async fn watch_prints_events_until_count() {
    let TestRoot { hosts, .. } = test_root("zkrs_watch").await;
    let client = connect(&hosts).await;
    client
        .create("/w", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let mut child = spawn(
        &hosts,
        &[
            "--json",
            "watch",
            "-R",
            "/w",
            "--count",
            "2",
            "--timeout",
            "20s",
        ],
    );
    wait_watching(&mut child).await;
    client
        .create("/w/a", b"1", &CreateOptions::persistent())
        .await
        .unwrap();
    client.set_data("/w/a", b"2", None).await.unwrap();
    let lines = finish(child).await;
    let events: Vec<serde_json::Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        events,
        [
            serde_json::json!({"event": "NodeCreated", "path": "/w/a"}),
            serde_json::json!({"event": "NodeDataChanged", "path": "/w/a"}),
        ]
    );
    // --timeout ends a quiet watch with success and no output.
    let quiet = spawn(&hosts, &["watch", "/w", "--timeout", "300ms"]);
    assert!(finish(quiet).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_shows_holder_and_waiter_and_revoke_marks_the_holder() {
    let TestRoot { hosts, .. } = test_root("zkrs_locks").await;
    let (a, b) = (connect(&hosts).await, connect(&hosts).await);
    let holder = FairLock::new(a.clone(), "/locks/job").unwrap();
    let guard = holder.acquire().await.unwrap();
    let waiter = FairLock::new(b.clone(), "/locks/job").unwrap();
    let waiting = tokio::spawn(async move { waiter.acquire().await.map(|g| (g, ())) });
    wait_nodes(&a, "/locks/job", 2).await;

    let report = json(&hosts, &["locks", "/locks/job"]).await;
    let entries = report["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 2, "{report}");
    let (first, second) = (&entries[0], &entries[1]);
    assert_eq!(first["state"], "holds");
    assert_eq!(first["owner_session"], format!("0x{:x}", a.session_id()));
    assert_eq!(second["state"], "waits");
    assert_eq!(second["waits_for"], first["name"]);
    assert_eq!(second["owner_session"], format!("0x{:x}", b.session_id()));
    for e in entries {
        assert_eq!(e["library"], "curator", "ours follow Curator's naming");
        assert_eq!(e["kind"], "mutex");
        assert_eq!(e["protected"], true);
        assert!(e["age_ms"].as_i64().unwrap() >= 0);
    }
    assert_eq!(report["warnings"], serde_json::json!([]));
    let text = ok(&hosts, &["locks", "/locks/job"]).await;
    assert!(
        text.contains("HOLDS") && text.contains("waits for 1"),
        "{text}"
    );

    // Revoke writes Curator's request into the holder's node.
    let node = format!("/locks/job/{}", first["name"].as_str().unwrap());
    json(&hosts, &["revoke", &node]).await;
    let (data, _) = a.get_data(&node).await.unwrap();
    assert_eq!(&data[..], b"__REVOKE__");
    let report = json(&hosts, &["locks", "/locks/job"]).await;
    assert_eq!(report["entries"][0]["revoke_requested"], true);

    // --watch: one drawing now, one after the hand-off.
    let mut child = spawn(
        &hosts,
        &[
            "--json",
            "locks",
            "/locks/job",
            "--watch",
            "--count",
            "1",
            "--timeout",
            "20s",
        ],
    );
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let first_draw = timeout(LIMIT, lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let first_draw: serde_json::Value = serde_json::from_str(&first_draw).unwrap();
    assert_eq!(first_draw["entries"].as_array().unwrap().len(), 2);
    guard.release().await.unwrap();
    let second_draw = timeout(LIMIT, lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let second_draw: serde_json::Value = serde_json::from_str(&second_draw).unwrap();
    let left = second_draw["entries"].as_array().unwrap();
    assert_eq!(left.len(), 1, "{second_draw}");
    assert_eq!(left[0]["state"], "holds");
    assert_eq!(left[0]["owner_session"], format!("0x{:x}", b.session_id()));
    assert!(timeout(LIMIT, child.wait())
        .await
        .unwrap()
        .unwrap()
        .success());
    let (guard_b, ()) = waiting.await.unwrap().unwrap();
    guard_b.release().await.unwrap();
}

#[tokio::test]
async fn locks_on_a_missing_path_is_no_node_and_unprotected_names_warn() {
    let TestRoot { hosts, .. } = test_root("zkrs_locks_warn").await;
    crate::common::fails(&hosts, &["locks", "/nothing"], 4).await;
    let client = connect(&hosts).await;
    let opts = CreateOptions::ephemeral_sequential().with_container_parents(true);
    client
        .create_all("/plain/lock-", b"me", &opts)
        .await
        .unwrap();
    let report = json(&hosts, &["locks", "/plain"]).await;
    assert_eq!(report["entries"][0]["library"], "unknown");
    assert_eq!(report["entries"][0]["data"], "me");
    let warnings = report["warnings"].to_string();
    assert!(warnings.contains("unprotected names"), "{warnings}");
}
