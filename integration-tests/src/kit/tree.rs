//! What the server holds, read back: listings, counters, watch counts.

use std::time::Duration;

use tokio::time::Instant;
use zk_client::{Client, CreateOptions};

use super::limits::LIMIT;
use crate::Server;

/// Children of `path`, sorted (empty when it does not exist).
pub async fn children(client: &Client, path: &str) -> Vec<String> {
    match client.get_children(path).await {
        Ok(mut c) => {
            c.sort();
            c
        }
        Err(zk_client::Error::NoNode) => Vec::new(),
        Err(e) => panic!("get_children {path}: {e}"),
    }
}

/// Polls until `path` has exactly `n` children, within `limit`; returns the last listing.
pub async fn wait_children(client: &Client, path: &str, n: usize, limit: Duration) -> Vec<String> {
    let end = Instant::now() + limit;
    loop {
        let c = children(client, path).await;
        if c.len() == n || Instant::now() >= end {
            return c;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits (within [`LIMIT`]) until `client` sees `n` nodes under `path`; panics otherwise.
pub async fn wait_nodes(client: &Client, path: &str, n: usize) -> Vec<String> {
    let nodes = wait_children(client, path, n, LIMIT).await;
    assert_eq!(nodes.len(), n, "{path} never had {n} nodes: {nodes:?}");
    nodes
}

/// Creates a counter node holding "0".
pub async fn make_counter(client: &Client, path: &str) {
    client
        .create(path, b"0", &CreateOptions::persistent())
        .await
        .expect("create counter");
}

/// Reads a counter node.
pub async fn read_counter(client: &Client, path: &str) -> i64 {
    let (data, _) = client.get_data(path).await.expect("read counter");
    std::str::from_utf8(&data)
        .expect("utf8 counter")
        .trim()
        .parse()
        .expect("numeric counter")
}

/// Read-modify-write of a counter: lost updates show when two holders overlap.
pub async fn bump_counter(client: &Client, path: &str) {
    let v = read_counter(client, path).await;
    tokio::task::yield_now().await;
    client
        .set_data(path, (v + 1).to_string().as_bytes(), None)
        .await
        .expect("write counter");
}

/// Watch notifications `server` has sent so far (`mntr`'s watch counters).
pub async fn notifications(server: &Server) -> i64 {
    crate::probe::watch_notifications(server.addr())
        .await
        .expect("mntr watch counters")
}

/// Waits (within [`LIMIT`]) until `server` holds exactly `n` watches.
pub async fn wait_watches(server: &Server, n: usize) {
    crate::probe::wait_total_watches(server.addr(), n, LIMIT)
        .await
        .expect("watch count");
}

/// `mntr`'s `zk_watch_count` on `server` (data and child watches, one-shot and persistent).
pub async fn watch_count(server: &Server) -> u64 {
    mntr_value(server, "zk_watch_count").await
}

/// The value of `key` in `server`'s `mntr` (e.g. `zk_packets_received`: requests from every
/// client, pings included; `zk_ephemerals_count`).
pub async fn mntr_value(server: &Server, key: &str) -> u64 {
    let mntr = crate::probe::four_letter_word(server.addr(), "mntr", Duration::from_secs(5))
        .await
        .expect("mntr");
    mntr.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {key} in mntr:\n{mntr}"))
}
