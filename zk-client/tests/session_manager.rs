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

/// The next item of a stream (no `StreamExt` needed).
async fn next<S: futures_core::Stream + Unpin>(stream: &mut S) -> Option<S::Item> {
    std::future::poll_fn(|cx| std::pin::Pin::new(&mut *stream).poll_next(cx)).await
}

/// The end of a manager is observable on the one transition type: a final `Generation`
/// (same number and client) whose `ended` says why, after which the stream ends;
/// `changed()` returns it again at once, and `live()` turns it into the error.
#[tokio::test]
async fn the_manager_ending_is_the_final_generation() {
    let server = FakeServer::start().await;
    let manager = tokio::spawn(SessionManager::connect(Client::builder(&server.addr())));
    let (_conn, _) = server.accept_session(0x7, 3000).await;
    let manager = within("manager", manager).await.unwrap().unwrap();
    let mut stream = manager.watch();
    let mut generations = manager.watch();
    let first = generations.current();
    assert_eq!((first.number, first.ended.is_none()), (1, true));
    assert!(manager.ended().is_none());

    // The last handle goes: the manager stops, as after `close()`.
    drop(manager);
    let end = within("end", next(&mut stream))
        .await
        .expect("the final value");
    assert_eq!(end.number, 1);
    assert_eq!(end.client.session_id(), 0x7);
    assert!(matches!(end.ended, Some(Error::Closed)), "{end:?}");
    assert!(within("stream end", next(&mut stream)).await.is_none());
    for _ in 0..2 {
        assert!(matches!(
            within("end", generations.changed()).await.live(),
            Err(Error::Closed)
        ));
    }
    assert_eq!(generations.missed(), 0);
}

/// A server that kills every session at once: each new session's connection is hung up
/// right after the handshake, and its resume answered "expired" (as a server that never
/// resumes sessions). Counts the new sessions it opened until `stop`.
async fn kill_every_session(server: FakeServer, stop: std::time::Instant) -> u64 {
    let mut sessions = 0;
    while std::time::Instant::now() < stop {
        let Ok(mut conn) = tokio::time::timeout(Duration::from_millis(200), server.accept()).await
        else {
            continue;
        };
        let req = conn.read_connect().await;
        if req.session_id == 0 {
            sessions += 1;
            conn.send_connect(0x100 + sessions as i64, 3000, false)
                .await;
        } else {
            conn.send_connect(0, 0, false).await;
        }
        drop(conn);
    }
    sessions
}

/// Sessions a manager opens in `window` against a server that kills each one at once.
async fn sessions_in(window: Duration, pacing: bool) -> u64 {
    let server = FakeServer::start().await;
    let addr = server.addr();
    let stop = std::time::Instant::now() + window;
    let counter = tokio::spawn(kill_every_session(server, stop));
    let mut builder =
        SessionManager::builder(Client::builder(&addr).session_timeout(Duration::from_secs(3)))
            .renew_backoff(Duration::from_millis(10), Duration::from_millis(100))
            .renew_attempts(1000);
    builder = if pacing {
        builder.renew_pacing(
            Duration::from_millis(100),
            Duration::from_millis(800),
            Duration::from_secs(10),
        )
    } else {
        builder.renew_pacing(Duration::ZERO, Duration::ZERO, Duration::ZERO)
    };
    let manager = within("manager", builder.connect()).await.unwrap();
    let sessions = within("server", counter).await.unwrap();
    drop(manager);
    sessions
}

/// Sessions that die young are renewed with a growing pause (100 ms, 200 ms, 400 ms, then
/// 800 ms at most here; 1 s doubling to 30 s by default), not at full speed.
#[tokio::test]
async fn sessions_that_die_young_are_renewed_at_a_pace() {
    let window = Duration::from_secs(4);
    let (paced, unpaced) = tokio::join!(sessions_in(window, true), sessions_in(window, false));
    println!("sessions in {window:?}: {paced} paced, {unpaced} without pacing");
    // Pauses of 0.1 + 0.2 + 0.4 + 0.8 + 0.8 + 0.8 + 0.8 s (jitter only lengthens them) fit
    // at most seven renewals after the first session.
    assert!(paced <= 8, "{paced} sessions in {window:?}");
    assert!(paced >= 3, "renewals go on: {paced}");
    assert!(
        unpaced >= 3 * paced,
        "{unpaced} without pacing, {paced} with"
    );
}
