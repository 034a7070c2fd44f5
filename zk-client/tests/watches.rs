//! Driver and public API against a scripted fake server: watch registration, delivery,
//! chroot stripping, re-registration after a reconnect.

use std::time::Duration;

use bytes::BytesMut;
use zk_client::{Client, Error, EventType};
use zk_proto::records::SetWatches;
use zk_proto::{decode_exact, xid, ErrorCode, OpCode};
use zk_test_support::{data_reply, within, Conn, FakeServer};

async fn connect(server: &FakeServer, chroot: &str) -> (Client, Conn) {
    zk_test_support::connect_client(server, chroot, 0x1, 30_000, |b| b).await
}

#[tokio::test]
async fn watch_fires_with_the_chroot_stripped() {
    let server = FakeServer::start().await;
    let (client, mut conn) = connect(&server, "/app").await;
    let call = client.get_data_watch("/a");
    let req = conn.read_non_ping().await.unwrap();
    conn.reply(req.xid, 3, ErrorCode::Ok, &data_reply(b"d"))
        .await;
    let (_, _, watcher) = within("get", call).await.unwrap();
    conn.notify(EventType::NodeDataChanged, "/app/a").await;
    let event = within("event", watcher).await.unwrap();
    assert_eq!(
        (event.event_type, event.path.as_str()),
        (EventType::NodeDataChanged, "/a")
    );
}

#[tokio::test]
async fn event_is_delivered_before_the_reply_that_follows_it() {
    let server = FakeServer::start().await;
    let (client, mut conn) = connect(&server, "").await;
    let call = client.get_data_watch("/a");
    let req = conn.read_non_ping().await.unwrap();
    conn.reply(req.xid, 3, ErrorCode::Ok, &data_reply(b"d"))
        .await;
    let (_, _, mut watcher) = within("get", call).await.unwrap();
    let read = client.get_data("/a");
    let req = conn.read_non_ping().await.unwrap();
    // Notification and reply in one segment, in server order.
    let mut buf = BytesMut::new();
    Conn::notification(&mut buf, EventType::NodeDataChanged, "/a");
    zk_proto::frame::encode_frame(&mut buf, |b| {
        zk_proto::Record::encode(
            &zk_proto::ReplyHeader {
                xid: req.xid,
                zxid: 4,
                err: ErrorCode::Ok,
            },
            b,
        );
        b.extend_from_slice(&data_reply(b"d"));
    });
    conn.send_raw(&buf).await;
    within("read", read).await.unwrap();
    let ready = tokio::time::timeout(Duration::ZERO, &mut watcher).await;
    assert!(matches!(ready, Ok(Ok(_))), "{ready:?}");
}

#[tokio::test]
async fn failed_call_leaves_no_watch_and_exists_on_missing_node_does() {
    let server = FakeServer::start().await;
    let (client, mut conn) = connect(&server, "").await;
    let get = client.get_data_watch("/missing");
    let req = conn.read_non_ping().await.unwrap();
    conn.reply(req.xid, 3, ErrorCode::NoNode, &[]).await;
    assert!(matches!(within("get", get).await, Err(Error::NoNode)));
    let exists = client.exists_watch("/missing");
    let req = conn.read_non_ping().await.unwrap();
    conn.reply(req.xid, 4, ErrorCode::NoNode, &[]).await;
    let (stat, watcher) = within("exists", exists).await.unwrap();
    assert!(stat.is_none());

    // Reconnect: only the exist watch is re-registered, relative to the last reply zxid.
    drop(conn);
    let mut conn = server.accept().await;
    let connect = conn.read_connect().await;
    assert_eq!(connect.last_zxid_seen, 4);
    conn.send_connect(0x1, 30_000, false).await;
    let sw = conn.read_non_ping().await.unwrap();
    assert_eq!(
        (sw.xid, sw.op),
        (xid::SET_WATCHES, OpCode::SetWatches.as_i32())
    );
    let sw: SetWatches = decode_exact(sw.body).unwrap();
    assert_eq!(sw.relative_zxid, 4);
    assert!(sw.data_watches.is_empty() && sw.child_watches.is_empty());
    assert_eq!(sw.exist_watches, ["/missing"]);
    conn.reply(xid::SET_WATCHES, 5, ErrorCode::Ok, &[]).await;
    conn.notify(EventType::NodeCreated, "/missing").await;
    assert_eq!(
        within("event", watcher).await.unwrap().event_type,
        EventType::NodeCreated
    );
}
