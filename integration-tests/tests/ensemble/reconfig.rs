//! Dynamic reconfiguration against a real three-member ensemble started with
//! `reconfigEnabled=true` and a super-user digest: `get_config` parsed, `config_watcher`
//! following each change, `reconfig` incremental and not, and its named errors.

use std::time::Duration;

use integration_tests::prelude::*;
use integration_tests::{Ensemble, Settings};
use zk_client::admin::Server;
use zk_client::{Client, EnsembleConfig, Error, ErrorCode, Reconfig, Role};

/// `super:reconfig-secret`; the server is given base64(sha1("super:reconfig-secret")).
const SUPER_AUTH: &[u8] = b"super:reconfig-secret";
const SUPER_DIGEST: &str = "super:pNx0DRB5Ge6WsRRNIRJ/8PVr9W8=";

async fn reconfigurable_ensemble() -> Ensemble {
    let settings = Settings::default()
        .with_config_line("reconfigEnabled=true")
        .with_jvm_flag(format!(
            "-Dzookeeper.DigestAuthenticationProvider.superDigest={SUPER_DIGEST}"
        ));
    Ensemble::launch_with(3, &settings).await
}

/// Waits (bounded) for the watcher's next config.
async fn next(configs: &mut zk_client::ConfigWatcher) -> EnsembleConfig {
    tokio::time::timeout(SOON, configs.next())
        .await
        .expect("a config change within 30 s")
        .expect("config read")
}

#[tokio::test]
async fn config_is_watched_and_reconfig_changes_it() {
    let zk = reconfigurable_ensemble().await;
    // A chroot must not hide /zookeeper/config.
    let client = Client::builder(&format!("{}/some/app", zk.connect_string()))
        .connect()
        .await
        .unwrap();
    let mut configs = client.config_watcher();
    let first = next(&mut configs).await;
    assert_eq!(first.members.len(), 3);
    assert!(first.version > 0, "{first:?}");
    for i in 0..3 {
        let m = first.member(u64::from(zk.myid(i))).unwrap();
        assert_eq!(m.role, Role::Participant);
        assert_eq!(m.client_address(), Some(zk.addr(i).to_string()));
    }
    let (raw, stat) = client.get_config().await.unwrap();
    assert_eq!(
        EnsembleConfig::parse(std::str::from_utf8(&raw).unwrap()).unwrap(),
        first
    );
    assert!(stat.mzxid >= 0);

    // Without super-user rights: NoAuth. Nothing changes.
    let remove3 = Reconfig::incremental().remove_server(3);
    assert!(matches!(
        client.reconfig(&remove3).await,
        Err(Error::NoAuth)
    ));
    // Arguments rejected before anything is sent.
    for bad in [
        Reconfig::incremental(),
        Reconfig::replace(Vec::<String>::new()),
        Reconfig::replace(["server.1=x:1:2"]).remove_server(2),
    ] {
        assert!(matches!(
            client.reconfig(&bad).await,
            Err(Error::InvalidArgument(_))
        ));
    }

    client.add_auth("digest", SUPER_AUTH).await.unwrap();
    // A stale expected version: BadVersion.
    let stale = remove3.clone().from_version(first.version - 1);
    assert!(matches!(
        client.reconfig(&stale).await,
        Err(Error::BadVersion)
    ));

    // Adding a member that is not running leaves the new config without a synced quorum
    // once another member is down: NewConfigNoQuorum, nothing applied.
    zk.kill(2).await;
    let survivors = [0, 1];
    zk.wait_members(&survivors, SOON).await;
    let ghost = "server.9=127.0.0.1:1:2:participant;127.0.0.1:3";
    let no_quorum = client
        .reconfig(&Reconfig::incremental().add_server(ghost))
        .await;
    assert!(
        matches!(no_quorum, Err(Error::Server(ErrorCode::NewConfigNoQuorum))),
        "{no_quorum:?}"
    );
    zk.start(2).await;
    zk.wait_quorum().await;

    // Non-incremental: the same three members, member 3's client address written as a
    // wildcard. The version moves on and the watcher sees it.
    let lines: Vec<String> = first
        .members
        .iter()
        .map(|m| {
            let mut m = m.clone();
            if m.id == 3 {
                if let Some(c) = &mut m.client {
                    c.host = Some("0.0.0.0".into());
                }
            }
            m.to_string()
        })
        .collect();
    let (second, _) = reconfig_retrying(
        &client,
        &Reconfig::replace(lines).from_version(first.version),
    )
    .await;
    assert!(second.version > first.version);
    let m3 = second.member(3).unwrap();
    assert!(m3.client.as_ref().unwrap().is_wildcard());
    // CURATOR-402: the wildcard never reaches a connect string.
    assert_eq!(m3.client_address(), Some(zk.addr(2).to_string()));
    assert_eq!(next(&mut configs).await, second);

    // Incremental: remove a member, from the version just read. Not the leader (its removal
    // makes the followers re-sync, dropping every client), nor the member our session is on
    // (a removed member drops its clients): either way the call would end in ConnectionLoss.
    let leader = zk.leader().await.expect("a leader");
    let ours = member_of(&zk, client.session_id()).await;
    let gone = (0..3).find(|&i| i != leader && i != ours).unwrap();
    let gone_id = u64::from(zk.myid(gone));
    let (third, _) = reconfig_retrying(
        &client,
        &Reconfig::incremental()
            .remove_server(gone_id)
            .from_version(second.version),
    )
    .await;
    assert_eq!(third.members.len(), 2);
    assert!(third.member(gone_id).is_none());
    assert_eq!(next(&mut configs).await, third);
    // The old version is now stale.
    assert!(matches!(
        client
            .reconfig(
                &Reconfig::incremental()
                    .remove_server(u64::from(zk.myid(ours)))
                    .from_version(second.version)
            )
            .await,
        Err(Error::BadVersion)
    ));
    client.close().await.unwrap();
    // The session is over: the watcher says so rather than hanging.
    let ended = tokio::time::timeout(SOON, configs.next()).await.unwrap();
    assert!(matches!(ended, Err(Error::Closed)), "{ended:?}");
}

/// The index of the member whose `cons` lists session `sid`.
async fn member_of(zk: &Ensemble, sid: i64) -> usize {
    for i in 0..zk.len() {
        let cons = Server::new(zk.addr(i).to_string()).cons().await.unwrap();
        if cons.iter().any(|c| c.session_id == Some(sid)) {
            return i;
        }
    }
    panic!("session {sid:#x} on no member");
}

/// `reconfig`, retried (bounded) while the previous one is still settling
/// (`ReconfigInProgress`) or the quorum is re-syncing after the restart
/// (`NewConfigNoQuorum`).
async fn reconfig_retrying(
    client: &Client,
    change: &Reconfig,
) -> (EnsembleConfig, zk_client::Stat) {
    let deadline = tokio::time::Instant::now() + SOON;
    loop {
        match client.reconfig(change).await {
            Ok(done) => return done,
            Err(Error::Server(ErrorCode::ReconfigInProgress | ErrorCode::NewConfigNoQuorum))
                if tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("reconfig {change:?}: {e}"),
        }
    }
}
