//! `zkrs reconfig` and `zkrs config` against a real ensemble with dynamic reconfiguration.

use crate::common::run;
use integration_tests::{Ensemble, Settings};

/// The server gets base64(sha1("super:reconfig-secret")).
const SUPER_DIGEST: &str = "super:pNx0DRB5Ge6WsRRNIRJ/8PVr9W8=";

#[tokio::test]
async fn reconfig_removes_a_member_with_super_rights_only() {
    let settings = Settings::default()
        .with_config_line("reconfigEnabled=true")
        .with_jvm_flag(format!(
            "-Dzookeeper.DigestAuthenticationProvider.superDigest={SUPER_DIGEST}"
        ));
    let zk = Ensemble::launch_with(3, &settings).await;
    // Remove a follower, and talk to the other two: a removed member drops its clients (their
    // call ends in ConnectionLoss, whether or not the change was applied).
    let leader = zk.leader().await.expect("a leader");
    let gone = (leader + 1) % 3;
    let stays = (gone + 1) % 3;
    let hosts = format!("{},{}", zk.addr(leader), zk.addr(stays));
    let gone_id = zk.myid(gone).to_string();
    let gone_prefix = format!("server.{gone_id}=");

    let out = run(&hosts, &["--json", "config"]).await;
    assert!(out.status.success());
    let first: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
    let version = first["answer"]["version"].as_str().unwrap().to_owned();

    // No super-user rights: not authorized (5).
    let out = run(&hosts, &["reconfig", "--remove", &gone_id]).await;
    assert_eq!(out.status.code(), Some(5), "{out:?}");
    // Nothing to do: bad input (2).
    let out = run(&hosts, &["reconfig"]).await;
    assert_eq!(out.status.code(), Some(2));

    let auth = ["--auth", "digest:super:reconfig-secret"];
    let stale = [
        &auth[..],
        &["reconfig", "--remove", &gone_id, "--from-version", "0x1"],
    ]
    .concat();
    let out = run(&hosts, &stale).await;
    assert_eq!(
        out.status.code(),
        Some(6),
        "stale version is a conflict: {out:?}"
    );

    let ok = [
        &auth[..],
        &[
            "--json",
            "reconfig",
            "--remove",
            &gone_id,
            "--from-version",
            &version,
        ],
    ]
    .concat();
    let out = run(&hosts, &ok).await;
    assert!(out.status.success(), "{out:?}");
    let new: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let members = new["members"].as_array().unwrap();
    assert_eq!(members.len(), 2, "{new}");
    assert!(members
        .iter()
        .all(|m| !m.as_str().unwrap().starts_with(&gone_prefix)));
    assert_ne!(new["version"].as_str().unwrap(), version);
}
