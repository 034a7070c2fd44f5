//! Self-tests of the harness against real standalone servers, with the raw probe.

use std::time::{Duration, Instant};

use integration_tests::prelude::*;
use integration_tests::probe::{four_letter_word, ConnectOptions, CreateMode, ProbeError, Session};
use integration_tests::{
    chroot, expire_session, fresh_standalone, standalone, ServerMode, ZkTarget,
};

#[tokio::test]
async fn shared_standalone_serves_sessions_under_a_chroot() {
    let started = Instant::now();
    let server = standalone().await;
    eprintln!("shared standalone ready after {:?}", started.elapsed());
    assert_eq!(server.mode().await, Some(ServerMode::Standalone));
    assert_eq!(server.connect_string(), server.addr().to_string());

    let root = chroot(server, "shared standalone").await;
    assert!(root.starts_with("/it-shared_standalone-"), "{root}");
    assert_eq!(
        server.hosts(&root),
        format!("{}{root}", server.connect_string())
    );

    let mut session = Session::connect(server.addr()).await.expect("handshake");
    assert_ne!(session.session_id(), 0);
    assert!(!session.is_read_only());
    assert!(session.exists(&root).await.unwrap());
    let child = format!("{root}/a");
    assert_eq!(
        session
            .create(&child, b"hello", CreateMode::Persistent)
            .await
            .unwrap(),
        child
    );
    assert!(session.exists(&child).await.unwrap());
    assert_eq!(&session.get_data(&child).await.unwrap()[..], b"hello");
    assert!(!session.exists(&format!("{root}/missing")).await.unwrap());
    let seq = session
        .create(&format!("{root}/s-"), b"", CreateMode::PersistentSequential)
        .await;
    assert_eq!(seq.unwrap(), format!("{root}/s-0000000001"));
    session.delete(&child).await.unwrap();
    assert!(!session.exists(&child).await.unwrap());
    session.close().await.unwrap();
}

#[tokio::test]
async fn standalone_is_shared_within_a_test_binary() {
    let a = standalone().await;
    let b = standalone().await;
    assert!(std::ptr::eq(a, b));
    let srvr = four_letter_word(a.addr(), "srvr", Duration::from_secs(5))
        .await
        .unwrap();
    assert!(srvr.contains("Mode: standalone"), "{srvr}");
}

#[tokio::test]
async fn expire_session_removes_the_ephemeral_nodes() {
    let TestRoot { server, root, .. } = test_root("expire").await;
    let mut victim = Session::connect(server.addr()).await.unwrap();
    let eph = format!("{root}/eph");
    victim
        .create(&eph, b"", CreateMode::Ephemeral)
        .await
        .unwrap();

    let mut observer = Session::connect(server.addr()).await.unwrap();
    assert!(observer.exists(&eph).await.unwrap());
    expire_session(server.addr(), victim.session_id(), victim.passwd())
        .await
        .unwrap();
    assert!(
        !observer.exists(&eph).await.unwrap(),
        "closeSession removed the ephemeral node"
    );

    // The victim's own connection is dead, and its session cannot be resumed.
    victim.set_io_timeout(Duration::from_secs(5));
    assert!(victim.exists(&eph).await.is_err());
    let resume = ConnectOptions {
        session_id: victim.session_id(),
        passwd: victim.passwd(),
        ..ConnectOptions::default()
    };
    let again = Session::connect_with(server.addr(), &resume).await;
    assert!(
        matches!(again, Err(ProbeError::SessionExpired)),
        "{again:?}"
    );
    observer.close().await.unwrap();
}

#[tokio::test]
async fn paused_server_hangs_and_resumes() {
    let server = fresh_standalone().await;
    let mut session = Session::connect(server.addr()).await.unwrap();
    session
        .create("/before", b"", CreateMode::Persistent)
        .await
        .unwrap();
    // The first session is idle from here on (the probe sends no pings).
    let idle_since = std::time::Instant::now();

    server.pause().await;
    let srvr = four_letter_word(server.addr(), "srvr", Duration::from_secs(1)).await;
    assert_eq!(
        srvr.unwrap_err().kind(),
        std::io::ErrorKind::TimedOut,
        "a hang, not a refusal"
    );
    let opts = ConnectOptions {
        io_timeout: Duration::from_secs(1),
        ..ConnectOptions::default()
    };
    let hung = Session::connect_with(server.addr(), &opts).await;
    assert!(hung.as_ref().is_err_and(ProbeError::is_timeout), "{hung:?}");
    assert_eq!(server.mode().await, None);

    server.resume().await;
    server.wait_ready().await;
    let mut again = Session::connect(server.addr()).await.unwrap();
    assert!(again.exists("/before").await.unwrap());
    // The first session survived a pause shorter than its timeout (10 s). On a loaded
    // machine the pause, `docker unpause` and the reconnect above can outlast it (one CI run
    // of four tests at a time beside Docker ensembles failed here): the claim is checked
    // when its premise holds, with a margin for the server's session tick.
    let idle = idle_since.elapsed();
    if idle < Duration::from_secs(8) {
        assert!(session.exists("/before").await.unwrap(), "idle {idle:?}");
    } else {
        eprintln!("paused_server_hangs_and_resumes: the session sat idle {idle:?}, beyond its timeout; its survival is not checked");
    }
}

#[tokio::test]
async fn killed_server_refuses_then_restarts_with_its_data() {
    let server = fresh_standalone().await;
    let mut session = Session::connect(server.addr()).await.unwrap();
    session
        .create("/durable", b"kept", CreateMode::Persistent)
        .await
        .unwrap();
    drop(session);

    server.kill().await;
    let refused = Session::connect(server.addr()).await;
    assert!(
        matches!(&refused, Err(ProbeError::Io(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused),
        "{refused:?}"
    );

    let started = Instant::now();
    server.start().await;
    eprintln!("restarted in {:?}", started.elapsed());
    let mut session = Session::connect(server.addr()).await.unwrap();
    assert_eq!(&session.get_data("/durable").await.unwrap()[..], b"kept");
    // The server logs through SLF4J, so failures are diagnosable.
    assert!(
        server.logs().await.contains("QuorumPeerConfig"),
        "server log is empty"
    );
}
