//! Self-tests of the fault-injecting proxy in front of real servers.

use std::io::ErrorKind;
use std::time::{Duration, Instant};

use integration_tests::prelude::*;
use integration_tests::probe::{
    connect_packet, read_packet_from, ConnectOptions, CreateMode, ProbeError, Session,
};
use integration_tests::proxy::{Cut, Mode};
use integration_tests::{standalone, Proxy};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn quick() -> ConnectOptions {
    ConnectOptions {
        io_timeout: Duration::from_secs(1),
        ..ConnectOptions::default()
    }
}

#[tokio::test]
async fn pass_forwards_both_ways() {
    let TestRoot { server, root, .. } = test_root("proxy_pass").await;
    let proxy = Proxy::start(server.addr()).await;
    assert_eq!(proxy.upstream(), server.addr());
    let mut s = Session::connect(proxy.addr()).await.unwrap();
    let started = Instant::now();
    for i in 0..50 {
        s.create(&format!("{root}/n{i}"), b"", CreateMode::Persistent)
            .await
            .unwrap();
    }
    eprintln!("50 creates through the proxy in {:?}", started.elapsed());
    assert!(s.exists(&format!("{root}/n49")).await.unwrap());
    let stats = proxy.stats();
    assert_eq!((stats.accepted, stats.open), (1, 1));
    assert_eq!(stats.to_server, 52, "ConnectRequest + 51 requests");
    assert_eq!(stats.to_client, 52);
    s.close().await.unwrap();
}

#[tokio::test]
async fn blackhole_holds_traffic_until_healed() {
    let server = standalone().await;
    let proxy = Proxy::start(server.addr()).await;
    let mut s = Session::connect(proxy.addr()).await.unwrap();
    proxy.set_mode(Mode::Blackhole);
    s.set_io_timeout(Duration::from_millis(500));
    assert!(s.exists("/").await.unwrap_err().is_timeout());
    // New connections are accepted but their handshake is not answered either.
    let hung = Session::connect_with(proxy.addr(), &quick()).await;
    assert!(hung.as_ref().is_err_and(ProbeError::is_timeout), "{hung:?}");

    proxy.set_mode(Mode::Pass);
    let mut fresh = Session::connect(proxy.addr()).await.unwrap();
    assert!(fresh.exists("/").await.unwrap());
}

#[tokio::test]
async fn blackhole_longer_than_the_session_timeout_expires_the_session() {
    let TestRoot { server, root, .. } = test_root("proxy_expiry").await;
    let proxy = Proxy::start(server.addr()).await;
    let opts = ConnectOptions {
        session_timeout: Duration::from_secs(2),
        ..Default::default()
    };
    let mut s = Session::connect_with(proxy.addr(), &opts).await.unwrap();
    assert_eq!(s.negotiated_timeout(), Duration::from_secs(2));
    let eph = format!("{root}/eph");
    s.create(&eph, b"", CreateMode::Ephemeral).await.unwrap();

    proxy.set_mode(Mode::Blackhole);
    let mut direct = Session::connect(server.addr()).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    while direct.exists(&eph).await.unwrap() {
        assert!(
            Instant::now() < deadline,
            "session did not expire behind the blackhole"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    proxy.set_mode(Mode::Pass);
    let resume = ConnectOptions {
        session_id: s.session_id(),
        passwd: s.passwd(),
        ..opts
    };
    let again = Session::connect_with(proxy.addr(), &resume).await;
    assert!(
        matches!(again, Err(ProbeError::SessionExpired)),
        "{again:?}"
    );
}

#[tokio::test]
async fn refuse_closes_the_listener_until_pass() {
    let server = standalone().await;
    let proxy = Proxy::start(server.addr()).await;
    let mut open = Session::connect(proxy.addr()).await.unwrap();
    proxy.set_mode(Mode::Refuse);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match TcpStream::connect(proxy.addr()).await {
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => break,
            other => assert!(Instant::now() < deadline, "not refused: {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        open.exists("/").await.unwrap(),
        "open connections are untouched"
    );
    proxy.set_mode(Mode::Pass);
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut s = loop {
        match Session::connect_with(proxy.addr(), &quick()).await {
            Ok(s) => break s,
            Err(e) => assert!(Instant::now() < deadline, "proxy did not listen again: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert!(s.exists("/").await.unwrap());
}

/// A raw connection through the proxy that has completed its handshake.
async fn handshaken(proxy: &Proxy) -> TcpStream {
    let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
    stream
        .write_all(&connect_packet(&ConnectOptions::default()))
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), read_packet_from(&mut stream))
        .await
        .expect("ConnectResponse in time")
        .expect("ConnectResponse");
    stream
}

#[tokio::test]
async fn cut_closes_open_connections_with_fin_or_rst() {
    let server = standalone().await;
    let proxy = Proxy::start(server.addr()).await;

    let mut fin = handshaken(&proxy).await;
    proxy.cut(Cut::Close);
    let mut buf = [0u8; 16];
    let read = tokio::time::timeout(Duration::from_secs(5), fin.read(&mut buf))
        .await
        .unwrap();
    assert_eq!(read.unwrap(), 0, "orderly close: EOF");

    let mut rst = handshaken(&proxy).await;
    proxy.cut(Cut::Reset);
    let read = tokio::time::timeout(Duration::from_secs(5), rst.read(&mut buf))
        .await
        .unwrap();
    assert_eq!(read.unwrap_err().kind(), ErrorKind::ConnectionReset);

    // Later connections work.
    let mut s = Session::connect(proxy.addr()).await.unwrap();
    assert!(s.exists("/").await.unwrap());
    assert_eq!(proxy.stats().accepted, 3);
}

#[tokio::test]
async fn delay_delays_each_packet() {
    let server = standalone().await;
    let proxy = Proxy::start(server.addr()).await;
    let mut s = Session::connect(proxy.addr()).await.unwrap();
    proxy.set_mode(Mode::Delay(Duration::from_millis(300)));
    let started = Instant::now();
    assert!(s.exists("/").await.unwrap());
    let slow = started.elapsed();
    assert!(
        slow >= Duration::from_millis(600),
        "request and reply delayed: {slow:?}"
    );
    proxy.set_mode(Mode::Pass);
    let started = Instant::now();
    assert!(s.exists("/").await.unwrap());
    assert!(
        started.elapsed() < Duration::from_millis(300),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn dropped_create_reply_leaves_the_node_on_the_server() {
    let TestRoot { server, root, .. } = test_root("proxy_drop_create").await;
    let proxy = Proxy::start(server.addr()).await;
    let mut s = Session::connect(proxy.addr()).await.unwrap();
    // Requests before the create pass untouched.
    assert!(s.exists(&root).await.unwrap());
    proxy.drop_next_create_reply();
    let node = format!("{root}/lost-reply");
    let outcome = s.create(&node, b"x", CreateMode::Persistent).await;
    assert!(
        matches!(&outcome, Err(ProbeError::Io(_))),
        "client saw no reply: {outcome:?}"
    );
    assert!(
        proxy
            .wait_create_reply_dropped(Duration::from_secs(5))
            .await
    );
    assert_eq!(proxy.stats().create_replies_dropped, 1);

    let mut direct = Session::connect(server.addr()).await.unwrap();
    assert!(
        direct.exists(&node).await.unwrap(),
        "the create was applied"
    );
    // The fault was one-shot: the next connection creates normally.
    let mut s = Session::connect(proxy.addr()).await.unwrap();
    let other = format!("{root}/ok");
    assert_eq!(
        s.create(&other, b"", CreateMode::Persistent).await.unwrap(),
        other
    );
}
