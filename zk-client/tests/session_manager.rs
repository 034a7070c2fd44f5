//! `SessionManager` against the scripted fake server: after an expiry the new client opens a
//! new session (id 0, zero password, no zxid of the old one) and sends nothing of the old
//! session: no SetWatches, no call queued before the expiry.

use std::time::Duration;

use zk_client::{Client, Error, SessionManager, SessionState};
use zk_proto::records::ExistsResponse;
use zk_proto::{ErrorCode, OpCode, Stat};
use zk_test_support::{data_reply, encode, within, FakeServer};

#[tokio::test]
async fn after_an_expiry_a_new_session_starts_empty() {
    let server = FakeServer::start().await;
    let builder = Client::builder(&server.addr()).session_timeout(Duration::from_secs(3));
    let manager = tokio::spawn(
        SessionManager::builder(builder)
            .renew_backoff(Duration::from_millis(10), Duration::from_millis(100))
            .renew_attempts(10)
            .connect(),
    );
    let (mut conn, first) = server.accept_session(0x5, 3000).await;
    assert_eq!(first.session_id, 0);
    let manager = within("manager", manager).await.unwrap().unwrap();
    let mut clients = manager.watch();
    let old = manager.client();
    assert_eq!(old.session_id(), 0x5);

    // A watch on the old session, then the server goes away and says it expired.
    let call = old.get_data_watch("/w");
    let req = conn.read_non_ping().await.unwrap();
    conn.reply(req.xid, 10, ErrorCode::Ok, &data_reply(b""))
        .await;
    let (_, _, watcher) = within("watch", call).await.unwrap();
    drop(conn);
    let mut conn = server.accept().await;
    let resume = conn.read_connect().await;
    assert_eq!((resume.session_id, resume.last_zxid_seen), (0x5, 10));
    let queued = old.exists("/queued");
    conn.send_connect(0, 0, false).await;

    // The manager connects again: a new session, nothing carried over.
    let (mut conn, renewal) = server.accept_session(0x6, 3000).await;
    assert_eq!(renewal.session_id, 0, "a new session, not a resume");
    assert!(renewal.passwd.iter().all(|b| *b == 0), "no old password");
    assert_eq!(renewal.last_zxid_seen, 0, "a fresh client");
    let generation = within("renewal", clients.changed()).await.live().unwrap();
    assert_eq!(
        (generation.number, generation.client.session_id()),
        (2, 0x6)
    );
    assert_eq!(old.state(), SessionState::Expired);
    assert!(matches!(
        within("watcher", watcher).await,
        Err(Error::SessionExpired)
    ));
    assert!(matches!(
        within("queued", queued).await,
        Err(Error::SessionExpired)
    ));

    // The first request on the new connection is the one made now: no SetWatches, no
    // replay of the call queued on the old session.
    let call = generation.client.exists("/new");
    let req = conn.read_non_ping().await.unwrap();
    assert_eq!(req.op, OpCode::Exists.as_i32(), "{req:?}");
    assert!(req.xid > 0, "{req:?}");
    let reply = encode(&ExistsResponse {
        stat: Stat::default(),
    });
    conn.reply(req.xid, 11, ErrorCode::Ok, &reply).await;
    within("exists", call).await.unwrap();
}
