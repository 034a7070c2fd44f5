//! zk-client against a real server: size limits that match the server's, and a slow reader of
//! a persistent watch.

use std::time::Duration;

use integration_tests::prelude::*;
use integration_tests::ZkTarget;
use zk_client::{AddWatchMode, Client, CreateOptions, Error, EventType, ReadOp, SessionState};

/// The server's default `jute.maxbuffer`.
const SERVER_MAX: usize = zk_proto::SERVER_MAX_BUFFER;

/// Data that makes a `setData` of `server_path` exactly `len` bytes long on the wire (header
/// 8, path 4 + n, data 4 + d, version 4).
fn set_data_filling(server_path: &str, len: usize) -> Vec<u8> {
    vec![b'x'; len - 20 - server_path.len()]
}

#[tokio::test]
async fn a_request_over_the_servers_buffer_fails_alone_and_nothing_else_does() {
    let TestRoot { server, root, .. } = test_root("limits_alone").await;
    let c = connect(&server.hosts(&root)).await;
    c.create("/n", b"small", &CreateOptions::persistent())
        .await
        .unwrap();
    let session = c.session_id();
    let before: Vec<_> = (0..4).map(|_| c.get_data("/n")).collect();
    let big = c.set_data("/n", &vec![0u8; 1024 * 1024], None);
    let long_path = format!("/{}", "p".repeat(1_100_000));
    let long = c.exists(&long_path);
    let after: Vec<_> = (0..4).map(|_| c.get_data("/n")).collect();
    match within("big set_data", big).await {
        Err(Error::RequestTooLarge { len, max }) => {
            assert_eq!(max, SERVER_MAX);
            assert!(len > max);
        }
        other => panic!("expected RequestTooLarge, got {other:?}"),
    }
    assert!(matches!(
        within("long path", long).await,
        Err(Error::RequestTooLarge { .. })
    ));
    for call in before.into_iter().chain(after) {
        let (data, _) = within("get_data", call).await.unwrap();
        assert_eq!(&data[..], b"small");
    }
    assert_eq!(c.state(), SessionState::Connected);
    assert_eq!(c.session_id(), session, "same session, never disconnected");
}

#[tokio::test]
async fn a_reply_over_max_frame_len_fails_alone_and_the_connection_carries_on() {
    let TestRoot { server, root, .. } = test_root("limits_reply").await;
    let c = Client::builder(&server.hosts(&root))
        .max_frame_len(64 * 1024)
        .connect()
        .await
        .unwrap();
    c.create("/small", b"small", &CreateOptions::persistent())
        .await
        .unwrap();
    for i in 0..3 {
        c.create(
            &format!("/big{i}"),
            &vec![b'b'; 30_000],
            &CreateOptions::persistent(),
        )
        .await
        .unwrap();
    }
    let session = c.session_id();
    let mut states = c.watch();
    let ops: Vec<_> = (0..3)
        .map(|i| ReadOp::get_data(&format!("/big{i}")))
        .collect();
    // Pipelined around the oversized reply: the calls before and after it are answered.
    let before: Vec<_> = (0..4).map(|_| c.get_data("/small")).collect();
    let all = c.multi_read(&ops);
    let two = c.multi_read(&ops[..2]);
    let after: Vec<_> = (0..4).map(|_| c.get_data("/small")).collect();
    match within("multi_read of 90 kB", all).await {
        Err(Error::ReplyTooLarge { len, max }) => {
            assert_eq!(max, 64 * 1024);
            assert!(len > 90_000, "{len}");
        }
        other => panic!("expected ReplyTooLarge, got {other:?}"),
    }
    assert_eq!(within("multi_read of 60 kB", two).await.unwrap().len(), 2);
    for call in before.into_iter().chain(after) {
        let (data, _) = within("get_data", call).await.unwrap();
        assert_eq!(&data[..], b"small");
    }
    // The connection never dropped.
    assert_no_state_change(&mut states).await;
    assert_eq!(c.session_id(), session);
    // A watch-setting call's oversized reply cannot be passed over (the server left a watch
    // the client would not know of): that one still drops the connection, and the session
    // resumes.
    c.set_data("/big0", &vec![b'b'; 70_000], None)
        .await
        .unwrap();
    assert!(matches!(
        within("get_data_watch of 70 kB", c.get_data_watch("/big0")).await,
        Err(Error::ConnectionLoss)
    ));
    c.wait_connected(Duration::from_secs(20)).await.unwrap();
    assert_eq!(c.session_id(), session, "same session");
}

#[tokio::test]
async fn the_default_limits_are_the_servers_and_the_largest_node_reads_back() {
    let TestRoot { server, root, .. } = test_root("limits_edge").await;
    let c = connect(&server.hosts(&root)).await;
    c.create("/big", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let server_path = format!("{root}/big");
    // Exactly the server's limit: accepted by our check and by the server.
    let data = set_data_filling(&server_path, SERVER_MAX);
    let stat = within("set_data at the limit", c.set_data("/big", &data, None))
        .await
        .unwrap();
    assert_eq!(stat.data_length as usize, data.len());
    // Its getData reply is larger than 0xfffff; the default frame limit reads it.
    let (read, _) = within("get_data of the largest node", c.get_data("/big"))
        .await
        .unwrap();
    assert_eq!(read.len(), data.len());
    // One byte more: refused here...
    let over = set_data_filling(&server_path, SERVER_MAX + 1);
    assert!(matches!(
        within("one byte over", c.set_data("/big", &over, None)).await,
        Err(Error::RequestTooLarge { .. })
    ));
    // ...because the server would drop the connection (a client told to send it anyway).
    let reckless = Client::builder(&server.hosts(&root))
        .max_request_len(SERVER_MAX + 1)
        .connect()
        .await
        .unwrap();
    assert!(matches!(
        within("sent anyway", reckless.set_data("/big", &over, None)).await,
        Err(Error::ConnectionLoss)
    ));
}

#[tokio::test]
async fn a_slow_persistent_watcher_is_told_it_lagged_and_then_keeps_up() {
    let TestRoot { server, root, .. } = test_root("limits_lag").await;
    let c = Client::builder(&server.hosts(&root))
        .watch_buffer(16)
        .connect()
        .await
        .unwrap();
    c.create("/w", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let mut watcher = c.add_watch("/w", AddWatchMode::Persistent).await.unwrap();
    // 100 changes nobody reads yet (each one's reply comes after its event was queued).
    let writes: Vec<_> = (0..100).map(|i| c.set_data("/w", &[i], None)).collect();
    for w in writes {
        within("set_data", w).await.unwrap();
    }
    let mut events = 0;
    let missed = loop {
        match within("next event", watcher.next()).await {
            Ok(e) => {
                assert_eq!(e.event_type, EventType::NodeDataChanged);
                events += 1;
            }
            Err(Error::Lagged { missed }) => break missed,
            Err(e) => panic!("unexpected {e}"),
        }
    };
    assert_eq!(events, 16, "the buffer's worth");
    assert_eq!(missed, 84);
    // Told once; later events flow again.
    c.set_data("/w", b"after", None).await.unwrap();
    let e = within("event after the gap", watcher.next()).await.unwrap();
    assert_eq!(e.event_type, EventType::NodeDataChanged);
}
