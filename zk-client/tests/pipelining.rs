//! Driver and public API against a scripted fake server: many requests in flight, replies
//! matched in order, the outstanding bound.

use std::time::Duration;

use bytes::Bytes;
use zk_client::{Client, ServerProfile};
use zk_proto::records::{GetDataRequest, GetDataResponse};
use zk_proto::{decode_exact, ErrorCode, OpCode, Stat};
use zk_test_support::{encode, within, FakeServer};

/// A client of a server without `multiRead` (3.5), so that every call is a request of its own
/// on the wire: these tests count requests against the window. Calls merged into
/// `multiRead`s are tested in the session's unit tests (`session/tests/merge.rs`) and
/// against a real server (`client::pipelining` in integration-tests).
async fn connect(server: &FakeServer, max_outstanding: usize) -> (Client, zk_test_support::Conn) {
    zk_test_support::connect_client(server, "", 0x1, 30_000, move |b| {
        b.max_outstanding(max_outstanding)
            .server(ServerProfile::zookeeper(3, 5))
    })
    .await
}

/// Answers a getData with its own path as data.
fn echo(req: &zk_test_support::Req) -> Vec<u8> {
    assert_eq!(req.op, OpCode::GetData.as_i32());
    let r: GetDataRequest = decode_exact(req.body.clone()).unwrap();
    encode(&GetDataResponse {
        data: Bytes::from(r.path.into_bytes()),
        stat: Stat::default(),
    })
    .to_vec()
}

#[tokio::test]
async fn thousands_in_flight_are_answered_in_order() {
    let server = FakeServer::start().await;
    let (client, mut conn) = connect(&server, 100_000).await;
    let calls: Vec<_> = (0..5_000)
        .map(|i| client.get_data(&format!("/n{i}")))
        .collect();
    let server_side = tokio::spawn(async move {
        let mut xids = Vec::new();
        for _ in 0..5_000 {
            let req = conn.read_non_ping().await.unwrap();
            xids.push(req.xid);
            conn.reply(req.xid, 1, ErrorCode::Ok, &echo(&req)).await;
        }
        (conn, xids)
    });
    for (i, call) in calls.into_iter().enumerate() {
        let (data, _) = within("reply", call).await.unwrap();
        assert_eq!(data, format!("/n{i}").as_bytes());
    }
    let (_conn, xids) = within("server", server_side).await.unwrap();
    assert!(
        xids.windows(2).all(|w| w[1] == w[0] + 1),
        "xids in call order"
    );
}

#[tokio::test]
async fn at_most_max_outstanding_requests_reach_the_wire() {
    let server = FakeServer::start().await;
    let (client, mut conn) = connect(&server, 8).await;
    let calls: Vec<_> = (0..200)
        .map(|i| client.get_data(&format!("/n{i}")))
        .collect();
    let server_side = tokio::spawn(async move {
        let mut unanswered = std::collections::VecDeque::new();
        let mut most = 0;
        let mut done = 0;
        while done < 200 {
            // Read everything the client wrote so far, then answer the oldest.
            while unanswered.len() < 8 && done + unanswered.len() < 200 {
                unanswered.push_back(conn.read_non_ping().await.unwrap());
            }
            most = most.max(unanswered.len());
            let req = unanswered.pop_front().unwrap();
            conn.reply(req.xid, 1, ErrorCode::Ok, &echo(&req)).await;
            done += 1;
        }
        most
    });
    for (i, call) in calls.into_iter().enumerate() {
        assert_eq!(
            within("reply", call).await.unwrap().0,
            format!("/n{i}").as_bytes()
        );
    }
    assert_eq!(within("server", server_side).await.unwrap(), 8);
}

#[tokio::test]
async fn a_full_window_holds_the_next_request_back() {
    // With the window full the ninth request is not on the wire: the server sees 8 and
    // nothing more until it answers one.
    let server = FakeServer::start().await;
    let (client, mut conn) = connect(&server, 8).await;
    let calls: Vec<_> = (0..9).map(|i| client.get_data(&format!("/n{i}"))).collect();
    let mut seen = Vec::new();
    for _ in 0..8 {
        seen.push(conn.read_non_ping().await.unwrap());
    }
    let ninth = tokio::time::timeout(Duration::from_millis(200), conn.read_non_ping()).await;
    assert!(ninth.is_err(), "a ninth request was written: {ninth:?}");
    let first = seen.remove(0);
    conn.reply(first.xid, 1, ErrorCode::Ok, &echo(&first)).await;
    let ninth = within("ninth", conn.read_non_ping()).await.unwrap();
    assert_eq!(ninth.xid, first.xid + 8);
    for req in seen.iter().chain(Some(&ninth)) {
        conn.reply(req.xid, 1, ErrorCode::Ok, &echo(req)).await;
    }
    for call in calls {
        within("reply", call).await.unwrap();
    }
}
