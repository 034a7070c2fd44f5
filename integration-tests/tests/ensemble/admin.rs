//! `zk_client::admin` (four-letter words) against a real three-member ensemble and a server
//! with a restricted whitelist.

use std::time::Duration;

use integration_tests::{chroot, ensemble, Server as ZkServer, Settings};
use zk_client::admin::{AdminError, Mode, Server};
use zk_client::{Client, CreateOptions, Role};

const WORD_TIMEOUT: Duration = Duration::from_secs(5);

#[tokio::test]
async fn every_word_parses_on_a_real_ensemble() {
    let zk = ensemble().await;
    let root = chroot(&zk, "admin_words").await;
    // One session on member 0, with a data watch, so cons/wchc have something to show.
    let client = Client::builder(&format!("{}{root}", zk.addr(0)))
        .connect()
        .await
        .unwrap();
    client
        .create("/w", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let (_, _, _watcher) = client.get_data_watch("/w").await.unwrap();
    let sid = client.session_id();

    let mut leaders = 0;
    for i in 0..zk.len() {
        let server = Server::new(zk.addr(i).to_string()).timeout(WORD_TIMEOUT);
        server.ruok().await.unwrap();
        let srvr = server.srvr().await.unwrap();
        assert!(
            matches!(srvr.mode, Mode::Leader | Mode::Follower),
            "{:?}",
            srvr.mode
        );
        assert!(srvr.version.starts_with("3."), "{}", srvr.version);
        leaders += usize::from(srvr.mode == Mode::Leader);
        let stat = server.stat().await.unwrap();
        assert!(!stat.clients.is_empty(), "stat lists our own connection");
        assert_eq!(stat.mode, srvr.mode);

        let mntr = server.mntr().await.unwrap();
        assert_eq!(mntr.mode, srvr.mode);
        assert_eq!(mntr.quorum_size, Some(3));
        if mntr.mode == Mode::Leader {
            assert_eq!(mntr.synced_followers, Some(2));
        } else {
            assert_eq!(mntr.synced_followers, None);
        }

        let conf = server.conf().await.unwrap();
        assert_eq!(conf.server_id(), Some(u64::from(zk.myid(i))));
        let ensemble = conf.ensemble.expect("a member's conf has its membership");
        assert_eq!(ensemble.members.len(), 3);
        assert!(ensemble.members.iter().all(|m| m.role == Role::Participant));
        let me = ensemble.member(u64::from(zk.myid(i))).unwrap();
        assert_eq!(me.client_address(), Some(zk.addr(i).to_string()));

        let cons = server.cons().await.unwrap();
        let ours = cons.iter().filter(|c| c.session_id == Some(sid)).count();
        assert_eq!(ours, usize::from(i == 0), "member {i}: {cons:?}");

        let wchs = server.wchs().await.unwrap();
        let wchc = server.wchc().await.unwrap();
        if i == 0 {
            assert!(wchs.total >= 1, "{wchs:?}");
            let mine = wchc
                .iter()
                .find(|s| s.session_id == sid)
                .expect("our watches");
            assert_eq!(mine.paths, [format!("{root}/w")]);
        } else {
            assert!(wchc.iter().all(|s| s.session_id != sid));
        }

        let envi = server.envi().await.unwrap();
        assert!(envi.get("zookeeper.version").is_some());
        assert!(!server.isro().await.unwrap());
    }
    assert_eq!(leaders, 1);
    client.close().await.unwrap();

    // A member without quorum answers "not serving"; a dead one is unreachable.
    zk.kill(1).await;
    zk.kill(2).await;
    let alone = Server::new(zk.addr(0).to_string()).timeout(WORD_TIMEOUT);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        match alone.srvr().await {
            Err(AdminError::NotServing { .. }) => break,
            other => assert!(
                tokio::time::Instant::now() < deadline,
                "still {other:?} without quorum"
            ),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    alone.ruok().await.unwrap();
    let gone = Server::new(zk.addr(1).to_string()).timeout(WORD_TIMEOUT);
    assert!(gone.srvr().await.unwrap_err().is_unreachable());
}

#[tokio::test]
async fn a_word_outside_the_whitelist_is_named() {
    let settings = Settings::default().with_config_line("4lw.commands.whitelist=srvr,ruok");
    let zk = ZkServer::launch_with(&settings).await;
    let server = Server::new(zk.addr().to_string()).timeout(WORD_TIMEOUT);
    assert_eq!(server.srvr().await.unwrap().mode, Mode::Standalone);
    for result in [
        server.mntr().await.map(drop),
        server.cons().await.map(drop),
        server.conf().await.map(drop),
        server.envi().await.map(drop),
    ] {
        match result {
            Err(AdminError::NotAllowed { .. }) => {}
            other => panic!("expected NotAllowed, got {other:?}"),
        }
    }
    let err = server.wchs().await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}: wchs is not in the server's 4lw.commands.whitelist",
            zk.addr()
        )
    );
}
