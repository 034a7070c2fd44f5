//! Parsers on answers captured from ZooKeeper 3.8.0 (`testdata/`), junk, and the exchange
//! against a scripted TCP server.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::*;

#[test]
fn srvr_and_stat() {
    let leader = ServerStats::parse(include_str!("testdata/srvr-leader.txt")).unwrap();
    assert_eq!(leader.mode, Mode::Leader);
    assert_eq!(leader.zxid, 0x2_0000_0001);
    assert_eq!(leader.node_count, 5);
    assert!(leader.version.starts_with("3.8.0"));
    assert!(leader.clients.is_empty());
    let stat = ServerStats::parse(include_str!("testdata/stat-follower.txt")).unwrap();
    assert_eq!(stat.mode, Mode::Follower);
    assert_eq!(stat.received, 2);
    assert_eq!(
        stat.clients,
        ["/127.0.0.1:44968[0](queued=0,recved=1,sent=0)"]
    );
    assert_eq!(Mode::parse("read-only"), Mode::ReadOnly);
    assert_eq!(Mode::parse("weird"), Mode::Other("weird".into()));
}

#[test]
fn mntr() {
    let m = Monitor::parse(include_str!("testdata/mntr-leader.txt")).unwrap();
    assert_eq!(m.mode, Mode::Leader);
    assert_eq!(m.synced_followers, Some(2));
    assert_eq!(m.quorum_size, Some(3));
    assert_eq!(m.znode_count, 5);
    assert!(m.get("zk_uptime").is_some());
    let f = Monitor::parse(include_str!("testdata/mntr-follower.txt")).unwrap();
    assert_eq!(f.mode, Mode::Follower);
    assert_eq!(f.synced_followers, None);
    assert_eq!(f.get_f64("zk_avg_latency"), Some(9.0));
}

#[test]
fn conf_cons_watches_envi() {
    let conf = ServerConf::parse(include_str!("testdata/conf-member.txt")).unwrap();
    assert_eq!(conf.server_id(), Some(1));
    assert_eq!(conf.get("clientPort"), Some("29101"));
    let ensemble = conf.ensemble.unwrap();
    assert_eq!(ensemble.members.len(), 3);
    assert_eq!(ensemble.version, 0x1_0000_0000);
    let standalone = ServerConf::parse("clientPort=2181\ndataDir=/d\n").unwrap();
    assert!(standalone.ensemble.is_none());

    let cons = Connection::parse_all(include_str!("testdata/cons.txt")).unwrap();
    assert_eq!(cons.len(), 2);
    assert_eq!(cons[0].session_id, None);
    assert_eq!(cons[1].remote, "/127.0.0.1:44986");
    assert_eq!(cons[1].session_id, Some(0x0100_0006_40ad_0000));
    assert_eq!(cons[1].last_operation.as_deref(), Some("PING"));
    assert_eq!(cons[1].timeout_ms, Some(10_000));
    assert_eq!(cons[1].received, 4);

    let wchc = SessionWatches::parse_all(include_str!("testdata/wchc.txt")).unwrap();
    assert_eq!(wchc.len(), 1);
    assert_eq!(wchc[0].paths, ["/zookeeper/config"]);
    assert!(SessionWatches::parse_all("\n").unwrap().is_empty());
    let wchs = WatchSummary::parse(include_str!("testdata/wchs.txt")).unwrap();
    assert_eq!((wchs.connections, wchs.paths, wchs.total), (1, 1, 1));

    let envi = Environment::parse(include_str!("testdata/envi.txt")).unwrap();
    assert_eq!(envi.get("host.name"), Some("localhost"));
    assert!(envi.get("zookeeper.version").is_some());
}

#[test]
fn junk_is_a_clear_error_never_a_panic() {
    let junk = [
        "",
        "\n",
        "imok",
        "HTTP/1.1 400 Bad Request\r\n\r\n",
        "Mode: leader",
        "Zxid: 12\nMode: leader",
        "Latency min/avg/max: 1/2\n",
        "\u{0}\u{1}\u{fffd}",
        " /1.2.3.4:5[1](queued=x,recved=1,sent=1)",
        " /1.2.3.4:5[1](queued=0",
        "\t/path-without-session",
        "1 connections watching paths",
        "membership: \nserver.1=nonsense",
    ];
    for text in junk {
        assert!(ServerStats::parse(text).is_err(), "srvr {text:?}");
        assert!(Monitor::parse(text).is_err(), "mntr {text:?}");
        assert!(WatchSummary::parse(text).is_err(), "wchs {text:?}");
        assert!(Environment::parse(text).is_err(), "envi {text:?}");
        let _ = Connection::parse_all(text);
        let _ = SessionWatches::parse_all(text);
        let _ = ServerConf::parse(text);
    }
    assert!(Connection::parse_all(" /1.2.3.4:5[1](queued=x,recved=1,sent=1)").is_err());
    assert!(SessionWatches::parse_all("\t/p").is_err());
    assert!(ServerConf::parse("membership: \nserver.1=nonsense").is_err());
}

/// A one-shot server answering `answer` to whatever it reads (after `delay`); returns its
/// address.
async fn scripted(answer: &'static [u8], delay: Duration) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        if let Ok((mut sock, _)) = listener.accept().await {
            let mut word = [0u8; 4];
            let _ = sock.read_exact(&mut word).await;
            tokio::time::sleep(delay).await;
            let _ = sock.write_all(answer).await;
        }
    });
    addr
}

#[tokio::test]
async fn exchange_errors_are_named() {
    let quick = Duration::ZERO;
    let addr = scripted(b"imok", quick).await;
    Server::new(addr).ruok().await.unwrap();

    let addr = scripted(
        b"mntr is not executed because it is not in the whitelist.\n",
        quick,
    )
    .await;
    let err = Server::new(addr).mntr().await.unwrap_err();
    assert!(
        matches!(&err, AdminError::NotAllowed { command, .. } if command == "mntr"),
        "{err}"
    );
    assert!(err.to_string().contains("whitelist"), "{err}");

    let addr = scripted(
        b"This ZooKeeper instance is not currently serving requests\n",
        quick,
    )
    .await;
    let err = Server::new(addr).srvr().await.unwrap_err();
    assert!(matches!(err, AdminError::NotServing { .. }), "{err}");

    let addr = scripted(b"null", quick).await;
    let err = Server::new(addr).isro().await.unwrap_err();
    assert!(matches!(err, AdminError::NotServing { .. }), "{err}");

    let addr = scripted(b"rw", quick).await;
    assert!(!Server::new(addr).isro().await.unwrap());

    let addr = scripted(b"SSH-2.0-OpenSSH\r\n", quick).await;
    let err = Server::new(addr).srvr().await.unwrap_err();
    assert!(matches!(err, AdminError::Malformed { .. }), "{err}");

    let addr = scripted(b"imok", Duration::from_secs(5)).await;
    let err = Server::new(addr)
        .timeout(Duration::from_millis(100))
        .ruok()
        .await
        .unwrap_err();
    assert!(matches!(err, AdminError::Timeout { .. }), "{err}");
    assert!(err.is_unreachable());

    let addr = scripted(&[b'x'; 100], quick).await;
    let err = Server::new(addr).max_answer(10).envi().await.unwrap_err();
    assert!(matches!(err, AdminError::TooLarge { max: 10, .. }), "{err}");

    let err = Server::new("127.0.0.1:1").ruok().await.unwrap_err();
    assert!(err.is_unreachable(), "{err}");

    for bad in ["", "srv", "srvrr", "sr r", "kïll"] {
        let err = Server::new("127.0.0.1:1").send(bad).await.unwrap_err();
        assert!(matches!(err, AdminError::InvalidCommand(_)), "{bad}");
    }
}
