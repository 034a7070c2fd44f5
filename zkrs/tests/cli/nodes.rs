//! The node commands against a real server: text and `--json` output, and exit codes.

use crate::common::{fails, json, ok};
use integration_tests::prelude::*;
use zk_client::{Acl, CreateOptions, Id, Perms};

#[tokio::test]
async fn create_get_set_stat_ls_delete() {
    let TestRoot { hosts, .. } = test_root("zkrs_nodes").await;
    let created = json(&hosts, &["create", "-p", "/app/config/a", "hello"]).await;
    assert_eq!(created["path"], "/app/config/a");
    assert_eq!(ok(&hosts, &["get", "/app/config/a"]).await, "hello\n");

    let got = json(&hosts, &["get", "/app/config/a"]).await;
    assert_eq!(got["data"], "hello");
    assert_eq!(got["data_hex"], "68656c6c6f");
    assert_eq!(got["stat"]["version"], 0);

    let set = json(&hosts, &["set", "/app/config/a", "bye", "--version", "0"]).await;
    assert_eq!(set["version"], 1);
    let stat = json(&hosts, &["stat", "/app/config/a"]).await;
    assert_eq!(stat["version"], 1);
    assert_eq!(stat["data_length"], 3);
    assert_eq!(stat["ephemeral_owner"], "0x0");
    assert!(stat["ctime_utc"].as_str().unwrap().ends_with('Z'));
    let text = ok(&hosts, &["stat", "/app/config/a"]).await;
    assert!(text.contains("dataVersion    1"), "{text}");

    let seq = json(&hosts, &["create", "-s", "/app/job-"]).await;
    let seq_path = seq["path"].as_str().unwrap().to_owned();
    assert!(seq_path.starts_with("/app/job-") && seq_path.len() == "/app/job-".len() + 10);
    json(&hosts, &["create", "--container", "/app/box"]).await;
    // An ephemeral node lives as long as the command's session: gone once it exits.
    json(&hosts, &["create", "-e", "/app/eph"]).await;
    fails(&hosts, &["stat", "/app/eph"], 4).await;

    assert_eq!(
        ok(&hosts, &["ls", "/app"]).await,
        format!("box\nconfig\n{}\n", &seq_path[5..])
    );
    let tree = json(&hosts, &["ls", "-R", "/app"]).await;
    let want = [
        "/app",
        "/app/box",
        "/app/config",
        "/app/config/a",
        &seq_path,
    ];
    assert_eq!(tree, serde_json::json!(want));

    fails(&hosts, &["delete", "/app"], 6).await;
    let deleted = json(&hosts, &["delete", "-R", "/app"]).await;
    assert_eq!(deleted["deleted"], "/app");
    fails(&hosts, &["ls", "/app"], 4).await;
}

#[tokio::test]
async fn errors_are_one_line_with_exit_codes() {
    let TestRoot { hosts, .. } = test_root("zkrs_errors").await;
    // Bad input: checked before connecting.
    let e = fails(&hosts, &["get", "no-slash"], 2).await;
    assert!(e.contains("must start with '/'"), "{e}");
    fails(&hosts, &["ls", "/a//b"], 2).await;
    fails(&hosts, &["watch", "/a", "--timeout", "5x"], 2).await;
    // Missing node, with the JSON form of the error.
    let e = fails(&hosts, &["--json", "get", "/missing"], 4).await;
    let v: serde_json::Value = serde_json::from_str(e.trim()).expect("JSON error");
    assert_eq!(v["kind"], "no_node");
    assert!(v["error"].as_str().unwrap().contains("get /missing"), "{v}");
    // Conflicts.
    json(&hosts, &["create", "/x", "1"]).await;
    fails(&hosts, &["create", "/x"], 6).await;
    fails(&hosts, &["set", "/x", "2", "--version", "7"], 6).await;
    // Not authorized: a node anyone may create under but nobody may read.
    let client = connect(&hosts).await;
    let acl = vec![Acl {
        perms: Perms::CREATE,
        id: Id {
            scheme: "world".into(),
            id: "anyone".into(),
        },
    }];
    client
        .create("/secret", b"s", &CreateOptions::persistent().with_acl(acl))
        .await
        .unwrap();
    let e = fails(&hosts, &["get", "/secret"], 5).await;
    assert!(e.contains("not authorized"), "{e}");
    fails(&hosts, &["--auth", "nocolon", "get", "/x"], 2).await;
    client.close().await.unwrap();
}

#[tokio::test]
async fn unreachable_ensemble_fails_within_the_connect_timeout() {
    // Port 1 on loopback: nothing listens there.
    let start = std::time::Instant::now();
    let e = fails("127.0.0.1:1", &["--connect-timeout", "700ms", "ls", "/"], 3).await;
    assert!(
        e.contains("cannot reach ZooKeeper at 127.0.0.1:1 within 700ms"),
        "{e}"
    );
    assert!(start.elapsed().as_secs() < 10, "took {:?}", start.elapsed());
    let e = fails("127.0.0.1:abc", &["ls", "/"], 2).await;
    assert!(e.contains("bad connect string"), "{e}");
}

#[tokio::test]
async fn connect_string_comes_from_zk_connect() {
    let TestRoot { hosts, .. } = test_root("zkrs_env").await;
    json(&hosts, &["create", "/from-env"]).await;
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_zkrs"));
    cmd.args(["ls", "/"]).env("ZK_CONNECT", &hosts);
    let out = crate::common::run_command(cmd).await;
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "from-env\n");
}
