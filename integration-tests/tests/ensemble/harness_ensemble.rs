//! Self-tests of the harness against a real three-node ensemble.

use std::time::{Duration, Instant};

use integration_tests::probe::{
    ConnectOptions, CreateMode, ProbeError, Session, ERR_NOT_READ_ONLY,
};
use integration_tests::{chroot, ensemble, Ensemble, ServerMode, Settings};

#[tokio::test]
async fn ensemble_elects_fails_over_and_rejoins() {
    let started = Instant::now();
    let zk = ensemble().await;
    eprintln!("3-node ensemble in quorum after {:?}", started.elapsed());
    assert_eq!(zk.len(), 3);
    assert_eq!(zk.connect_string().split(',').count(), 3);
    let leader = zk.leader().await.expect("a leader");
    for i in 0..3 {
        let mode = zk.mode(i).await;
        let want = if i == leader {
            ServerMode::Leader
        } else {
            ServerMode::Follower
        };
        assert_eq!(mode, Some(want), "member {i}");
        assert_eq!(zk.myid(i), i as u32 + 1);
    }

    // Writes through one member are visible through another.
    let root = chroot(&zk, "ensemble").await;
    let mut a = Session::connect(zk.addr(0)).await.unwrap();
    a.create(&format!("{root}/x"), b"1", CreateMode::Persistent)
        .await
        .unwrap();
    let mut c = Session::connect(zk.addr(2)).await.unwrap();
    // A follower may lag behind the leader's commit: exists is not a sync, so poll briefly.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !c.exists(&format!("{root}/x")).await.unwrap() {
        assert!(Instant::now() < deadline, "write not replicated");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop((a, c));

    // Kill the leader: the two others elect a new one.
    let killed = Instant::now();
    zk.kill(leader).await;
    let new_leader = zk.wait_new_leader(leader, Duration::from_secs(30)).await;
    eprintln!("new leader {new_leader} after {:?}", killed.elapsed());
    assert_ne!(new_leader, leader);
    assert_eq!(zk.mode(leader).await, None);

    // The old leader rejoins as a follower.
    zk.start(leader).await;
    zk.wait_quorum().await;
    assert_eq!(zk.mode(leader).await, Some(ServerMode::Follower));
    assert_eq!(zk.leader().await, Some(new_leader));

    // A paused follower stops answering, and serves again after resume.
    let follower = (0..3).find(|&i| i != new_leader).unwrap();
    zk.pause(follower).await;
    assert_eq!(zk.mode(follower).await, None);
    let opts = ConnectOptions {
        io_timeout: Duration::from_secs(1),
        ..ConnectOptions::default()
    };
    assert!(Session::connect_with(zk.addr(follower), &opts)
        .await
        .unwrap_err()
        .is_timeout());
    zk.resume(follower).await;
    zk.wait_quorum().await;

    // Without quorum the survivor turns read-only, but with global sessions only
    // (localSessionsEnabled=false, the default) it serves nobody: new sessions get NOTREADONLY
    // and reconnecting global sessions are closed ("Refusing global session reconnection").
    let survivor = follower;
    let before = Session::connect(zk.addr(survivor)).await.unwrap();
    let (id, passwd) = (before.session_id(), before.passwd());
    drop(before);
    for i in (0..3).filter(|&i| i != survivor) {
        zk.kill(i).await;
    }
    wait_read_only(&zk, survivor).await;
    let fresh = ConnectOptions {
        read_only: true,
        ..ConnectOptions::default()
    };
    let refused = Session::connect_with(zk.addr(survivor), &fresh).await;
    assert!(
        matches!(refused, Err(ProbeError::Server(ERR_NOT_READ_ONLY))),
        "{refused:?}"
    );
    let resume = ConnectOptions {
        session_id: id,
        passwd,
        ..fresh
    };
    let closed = Session::connect_with(zk.addr(survivor), &resume).await;
    assert!(matches!(closed, Err(ProbeError::Io(_))), "{closed:?}");
}

async fn wait_read_only(zk: &Ensemble, i: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while zk.mode(i).await != Some(ServerMode::ReadOnly) {
        assert!(
            Instant::now() < deadline,
            "member {i} never became read-only"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn with_local_sessions_a_member_without_quorum_serves_read_only_sessions() {
    let zk = Ensemble::launch_with(3, &Settings::default().with_local_sessions()).await;
    let root = chroot(&zk, "read_only").await;
    let leader = zk.leader().await.unwrap();
    let survivor = (leader + 1) % 3;
    // Make sure the survivor has the chroot before the others go away.
    let mut s = Session::connect(zk.addr(survivor)).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !s.exists(&root).await.unwrap() {
        assert!(Instant::now() < deadline, "chroot not replicated");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(s);
    for i in (0..3).filter(|&i| i != survivor) {
        zk.kill(i).await;
    }
    wait_read_only(&zk, survivor).await;
    let ro = ConnectOptions {
        read_only: true,
        ..ConnectOptions::default()
    };
    let mut session = Session::connect_with(zk.addr(survivor), &ro).await.unwrap();
    assert!(session.is_read_only());
    assert!(session.exists(&root).await.unwrap());
    let write = session
        .create(&format!("{root}/y"), b"", CreateMode::Persistent)
        .await;
    assert!(
        matches!(write, Err(ProbeError::Server(ERR_NOT_READ_ONLY))),
        "{write:?}"
    );
    // A client that does not accept read-only mode is turned away.
    let rw = Session::connect_with(zk.addr(survivor), &ConnectOptions::default()).await;
    assert!(rw.is_err(), "{rw:?}");
}
