//! Driver and public API against a scripted fake server: handshake, pings, dead
//! connections, reconnects, expiry, close, read-only moves.

use std::time::Duration;

use zk_client::{Client, Error, SessionState};
use zk_proto::records::GetDataRequest;
use zk_proto::{decode_exact, xid, ErrorCode, OpCode};
use zk_test_support::{data_reply, within, FakeServer, First};

async fn connect(
    server: &FakeServer,
    session_id: i64,
    timeout_ms: i32,
) -> (Client, zk_test_support::Conn) {
    zk_test_support::connect_client(server, "", session_id, timeout_ms, |b| b).await
}

#[tokio::test]
async fn handshake_then_pings_while_idle() {
    let server = FakeServer::start().await;
    let (client, mut conn) = connect(&server, 0x1234, 900).await;
    assert_eq!(client.state(), SessionState::Connected);
    assert_eq!(client.session_id(), 0x1234);
    assert_eq!(&client.session_password()[..], b"fake-password-16");
    assert_eq!(client.negotiated_timeout(), Duration::from_millis(900));
    for _ in 0..3 {
        let ping = within("ping", conn.read_request()).await.unwrap();
        assert_eq!((ping.xid, ping.op), (xid::PING, OpCode::Ping.as_i32()));
        conn.reply(xid::PING, 0, ErrorCode::Ok, &[]).await;
    }
    assert_eq!(
        client.state(),
        SessionState::Connected,
        "answered pings keep it alive"
    );
}

#[tokio::test]
async fn a_silent_server_is_dropped_and_the_session_resumed_elsewhere() {
    let server = FakeServer::start().await;
    let (client, mut conn) = connect(&server, 0x77, 900).await;
    let call = client.get_data("/a");
    let req = conn.read_non_ping().await.unwrap();
    assert_eq!(req.op, OpCode::GetData.as_i32());
    let mut states = client.watch();
    // Say nothing: the client gives up on this connection after the read timeout.
    conn.expect_eof().await;
    assert!(matches!(
        within("call", call).await,
        Err(Error::ConnectionLoss)
    ));
    assert_eq!(
        within("state", states.changed()).await,
        SessionState::Disconnected
    );
    let mut conn = server.accept().await;
    let req = conn.read_connect().await;
    assert_eq!(req.session_id, 0x77);
    assert_eq!(&req.passwd[..], b"fake-password-16");
    conn.send_connect(0x77, 900, false).await;
    assert_eq!(
        within("state", states.changed()).await,
        SessionState::Connected
    );
}

#[tokio::test]
async fn expired_answer_on_reconnect_is_terminal() {
    let server = FakeServer::start().await;
    let (client, conn) = connect(&server, 0x5, 3000).await;
    let (_, _, watcher) = {
        let mut conn = conn;
        let call = client.get_data_watch("/w");
        let req = conn.read_non_ping().await.unwrap();
        conn.reply(req.xid, 10, ErrorCode::Ok, &data_reply(b""))
            .await;
        let result = within("watch", call).await.unwrap();
        drop(conn); // the server goes away
        result
    };
    let mut conn = server.accept().await;
    let req = conn.read_connect().await;
    assert_eq!((req.session_id, req.last_zxid_seen), (0x5, 10));
    let queued = client.exists("/x");
    conn.send_connect(0, 0, false).await;
    assert!(matches!(
        within("watcher", watcher).await,
        Err(Error::SessionExpired)
    ));
    assert!(matches!(
        within("queued", queued).await,
        Err(Error::SessionExpired)
    ));
    assert_eq!(client.state(), SessionState::Expired);
    assert!(matches!(
        client.get_data("/").await,
        Err(Error::SessionExpired)
    ));
}

#[tokio::test]
async fn out_of_order_reply_resets_the_connection() {
    let server = FakeServer::start().await;
    // A server without multiRead: the two reads go as two requests (merged they would be
    // one, `session/merge.rs`), so the second can be answered first.
    let (client, mut conn) = zk_test_support::connect_client(&server, "", 0x9, 10_000, |b| {
        b.server(zk_client::ServerProfile::zookeeper(3, 5))
    })
    .await;
    let first = client.get_data("/1");
    let second = client.get_data("/2");
    let a = conn.read_non_ping().await.unwrap();
    let b = conn.read_non_ping().await.unwrap();
    assert_eq!(b.xid, a.xid + 1);
    conn.reply(b.xid, 1, ErrorCode::Ok, &data_reply(b"2")).await;
    conn.expect_eof().await;
    assert!(matches!(
        within("first", first).await,
        Err(Error::ConnectionLoss)
    ));
    assert!(matches!(
        within("second", second).await,
        Err(Error::ConnectionLoss)
    ));
    let (mut conn, req) = server.accept_session(0x9, 10_000).await;
    assert_eq!(req.session_id, 0x9);
    let again = client.get_data("/1");
    let r = conn.read_non_ping().await.unwrap();
    let body: GetDataRequest = decode_exact(r.body).unwrap();
    assert_eq!(body.path, "/1");
    conn.reply(r.xid, 2, ErrorCode::Ok, &data_reply(b"1")).await;
    assert_eq!(&within("again", again).await.unwrap().0[..], b"1");
}

#[tokio::test]
async fn an_oversized_reply_fails_its_call_alone_unless_it_sets_a_watch() {
    let server = FakeServer::start().await;
    let addr = server.addr();
    let client =
        tokio::spawn(async move { Client::builder(&addr).max_frame_len(1024).connect().await });
    let (mut conn, _) = server.accept_session(0x3, 10_000).await;
    let client = within("connect", client).await.unwrap().unwrap();
    // A plain read: its reply is passed over, the call fails alone, the connection stays.
    let call = client.get_data("/big");
    let r = conn.read_non_ping().await.unwrap();
    conn.reply(r.xid, 1, ErrorCode::Ok, &data_reply(&[0; 2048]))
        .await;
    assert!(matches!(
        within("call", call).await,
        Err(Error::ReplyTooLarge { max: 1024, .. })
    ));
    let next = client.get_data("/small");
    let r = conn.read_non_ping().await.unwrap();
    conn.reply(r.xid, 2, ErrorCode::Ok, &data_reply(b"ok"))
        .await;
    assert_eq!(&within("next", next).await.unwrap().0[..], b"ok");
    // A read that sets a watch: the server holds a watch the client would not know of, so
    // the connection is reset.
    let watched = client.get_data_watch("/big");
    let r = conn.read_non_ping().await.unwrap();
    conn.reply(r.xid, 3, ErrorCode::Ok, &data_reply(&[0; 2048]))
        .await;
    assert!(matches!(
        within("watched call", watched).await,
        Err(Error::ConnectionLoss)
    ));
    conn.expect_eof().await;
}

#[tokio::test]
async fn close_sends_close_session_and_waits_for_the_reply() {
    let server = FakeServer::start().await;
    let (client, mut conn) = connect(&server, 0x11, 10_000).await;
    let close = client.close();
    let req = conn.read_non_ping().await.unwrap();
    assert_eq!(req.op, OpCode::CloseSession.as_i32());
    assert_eq!(
        client.state(),
        SessionState::Connected,
        "not closed before the reply"
    );
    conn.reply(req.xid, 5, ErrorCode::Ok, &[]).await;
    within("close", close).await.unwrap();
    assert_eq!(client.state(), SessionState::Closed);
    conn.expect_eof().await;
}

#[tokio::test]
async fn dropping_the_last_handle_closes_the_session() {
    let server = FakeServer::start().await;
    let (client, mut conn) = connect(&server, 0x12, 10_000).await;
    drop(client);
    let req = conn.read_non_ping().await.unwrap();
    assert_eq!(req.op, OpCode::CloseSession.as_i32());
    conn.reply(req.xid, 5, ErrorCode::Ok, &[]).await;
    conn.expect_eof().await;
}

#[tokio::test]
async fn read_only_client_moves_to_a_read_write_server_when_one_appears() {
    let ro = FakeServer::start().await;
    // The read/write server is down at first: bind, note the port, close.
    let rw_addr = {
        let probe = FakeServer::start().await;
        probe.addr()
    };
    let hosts = format!("{},{}", ro.addr(), rw_addr);
    let client = tokio::spawn(async move {
        Client::builder(&hosts)
            .read_only(true)
            .session_timeout(Duration::from_secs(10))
            .connect()
            .await
    });
    let mut conn = ro.accept().await;
    let req = conn.read_connect().await;
    assert!(req.read_only);
    conn.send_connect(0x51, 10_000, true).await;
    let client = within("connect", client).await.unwrap().unwrap();
    assert_eq!(client.state(), SessionState::ConnectedReadOnly);
    let mut states = client.watch();

    let rw = FakeServer::bind(&rw_addr).await;
    // The client probes with `isro` and moves on the first "rw".
    loop {
        let mut c = rw.accept().await;
        match c.read_first().await {
            First::Isro => c.answer_isro("rw").await,
            First::Connect(req) => {
                assert_eq!(req.session_id, 0, "a read-only session is not resumed");
                c.send_connect(0x52, 10_000, false).await;
                assert_eq!(
                    within("state", states.wait_for(|s| s == SessionState::Connected)).await,
                    SessionState::Connected
                );
                assert_eq!(client.session_id(), 0x52);
                break;
            }
        }
    }
    drop(conn);
}

#[tokio::test]
async fn a_state_watcher_sees_every_transition_even_a_quick_blip() {
    let server = FakeServer::start().await;
    let (client, conn) = connect(&server, 0x21, 10_000).await;
    let mut states = client.watch();
    let mut other = client.watch();
    drop(conn);
    let (_conn, req) = server.accept_session(0x21, 10_000).await;
    assert_eq!(req.session_id, 0x21);
    // Wait (with another watcher) until the blip is over before looking at the first.
    within(
        "reconnected",
        other.wait_for(|s| s == SessionState::Disconnected),
    )
    .await;
    within(
        "reconnected",
        other.wait_for(|s| s == SessionState::Connected),
    )
    .await;
    assert_eq!(states.changed().await, SessionState::Disconnected);
    assert_eq!(states.changed().await, SessionState::Connected);
    assert_eq!(states.current(), SessionState::Connected);
}

#[tokio::test]
async fn builder_credentials_go_first_and_a_rejection_fails_connect() {
    let server = FakeServer::start().await;
    let addr = server.addr();
    let client = tokio::spawn(async move {
        Client::builder(&addr)
            .auth("digest", b"u:p")
            .connect()
            .await
    });
    let (mut conn, _) = server.accept_session(0x31, 10_000).await;
    let auth = conn.read_non_ping().await.unwrap();
    assert_eq!((auth.xid, auth.op), (xid::AUTH, OpCode::Auth.as_i32()));
    let packet: zk_proto::records::AuthPacket = decode_exact(auth.body).unwrap();
    assert_eq!(
        (packet.scheme.as_str(), &packet.auth[..]),
        ("digest", &b"u:p"[..])
    );
    conn.reply(xid::AUTH, 0, ErrorCode::AuthFailed, &[]).await;
    let res = within("connect", client).await.unwrap();
    assert!(matches!(res, Err(Error::AuthFailed)), "{res:?}");
}

#[tokio::test]
async fn the_longest_waits_a_builder_takes_do_not_stop_the_client() {
    // `Duration::MAX` for the waits a user may set: a call queued while disconnected, and
    // one on the wire, must still be served (the deadlines are far off, not an overflow).
    let server = FakeServer::start().await;
    let (client, mut conn) = zk_test_support::connect_client(&server, "", 0x9, 3000, |b| {
        b.reconnect_wait(Duration::MAX)
            .request_timeout(Duration::MAX)
    })
    .await;
    let on_the_wire = client.get_data("/a");
    let req = conn.read_non_ping().await.unwrap();
    conn.reply(req.xid, 5, ErrorCode::Ok, &data_reply(b"a"))
        .await;
    assert_eq!(&within("call", on_the_wire).await.unwrap().0[..], b"a");
    let mut states = client.watch();
    drop(conn);
    assert_eq!(
        within("state", states.changed()).await,
        SessionState::Disconnected
    );
    let queued = client.get_data("/b");
    let mut conn = server.accept().await;
    let req = conn.read_connect().await;
    assert_eq!(req.session_id, 0x9);
    conn.send_connect(0x9, 3000, false).await;
    let req = within("queued call", conn.read_non_ping()).await.unwrap();
    conn.reply(req.xid, 6, ErrorCode::Ok, &data_reply(b"b"))
        .await;
    assert_eq!(&within("queued", queued).await.unwrap().0[..], b"b");
    assert_eq!(client.state(), SessionState::Connected);
}
