//! Helpers shared by the recipe test files (each test file includes this module).
#![allow(dead_code, unreachable_pub)]

pub mod interop;

use std::time::Duration;

use integration_tests::{chroot, standalone, ZkTarget};
use tokio::time::Instant;
use zk_client::{Client, ClientBuilder, CreateOptions, SessionManager};

/// Connects a client to the shared server under a fresh chroot, returning the connect string
/// too (for more sessions on the same subtree).
pub async fn shared_root(test: &str) -> String {
    let server = standalone().await;
    let root = chroot(server, test).await;
    server.hosts(&root)
}

/// A new session on `hosts`.
pub async fn connect(hosts: &str) -> Client {
    Client::builder(hosts)
        .session_timeout(Duration::from_secs(10))
        .connect()
        .await
        .expect("connect to the test server")
}

/// A session manager on `builder` that renews an expired session quickly (backoff 50 ms to
/// 1 s, 200 attempts; sessions that die young paced from 50 ms to 1 s only): what the
/// recipes' expiry tests use.
pub async fn managed(builder: ClientBuilder) -> SessionManager {
    SessionManager::builder(builder)
        .renew_backoff(Duration::from_millis(50), Duration::from_secs(1))
        .renew_pacing(
            Duration::from_millis(50),
            Duration::from_secs(1),
            Duration::from_secs(60),
        )
        .renew_attempts(200)
        .connect()
        .await
        .expect("connect the first session")
}

/// Children of `path` (empty when it does not exist).
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
pub async fn notifications(server: &integration_tests::Server) -> i64 {
    integration_tests::probe::watch_notifications(server.addr())
        .await
        .expect("mntr watch counters")
}

/// Waits (at most a minute) until `server` holds exactly `n` watches.
pub async fn wait_watches(server: &integration_tests::Server, n: usize) {
    integration_tests::probe::wait_total_watches(server.addr(), n, Duration::from_secs(60))
        .await
        .expect("watch count");
}

/// The 16-byte password of `client`'s session (for `expire_session`).
pub fn passwd(client: &Client) -> [u8; 16] {
    let mut p = [0u8; 16];
    let bytes = client.session_password();
    assert_eq!(bytes.len(), 16, "session password length");
    p.copy_from_slice(&bytes);
    p
}

/// Waits (30 s at most) until the lock state satisfies `pred`.
pub async fn wait_lock_state(
    guard: &zk_recipes::lock::LockGuard,
    pred: impl Fn(zk_recipes::lock::LockState) -> bool,
) -> zk_recipes::lock::LockState {
    let mut rx = guard.watch();
    tokio::time::timeout(Duration::from_secs(30), rx.wait_for(pred))
        .await
        .expect("lock state within 30 s")
}

/// A semaphore holder's critical section: an ephemeral marker under `/inside` for as long as
/// it holds a lease. Markers of an expired holder go with its session, as its lease does, so
/// the number of markers is the number of holders the server sees. Returns the marker and
/// that number.
pub async fn enter(client: &Client) -> (String, usize) {
    let (marker, _) = client
        .create("/inside/h-", &[], &CreateOptions::ephemeral_sequential())
        .await
        .expect("marker");
    (marker, children(client, "/inside").await.len())
}
