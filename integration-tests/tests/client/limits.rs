//! zk-client against a real server: size limits that match the server's, and a slow reader of
//! a persistent watch.

use integration_tests::prelude::*;
use integration_tests::ZkTarget;
use zk_client::{AddWatchMode, Client, CreateOptions, Error, EventType, SessionState};

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
