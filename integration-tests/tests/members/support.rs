//! Helpers of the safe-writes tests (`writes.rs`, `deletes.rs`): a
//! client behind the fault proxy beside a direct one, and read-backs.
#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use integration_tests::proxy::Proxy;
use integration_tests::{chroot, standalone, ZkTarget};
use zk_client::Client;

use integration_tests::prelude::{connect, connect_for_faults};

/// A proxied client and a direct one on a fresh chroot.
pub async fn setup(test: &str) -> (Proxy, Client, Client, String) {
    let server = standalone().await;
    let root = chroot(server, test).await;
    let admin = connect(&server.hosts(&root)).await;
    let proxy = Proxy::start(server.addr()).await;
    let client = connect_for_faults(&format!("{}{root}", proxy.connect_string())).await;
    (proxy, client, admin, root)
}

pub async fn dropped(proxy: &Proxy, what: &str) {
    assert!(
        proxy
            .wait_create_reply_dropped(Duration::from_secs(5))
            .await,
        "the proxy did not drop the {what} reply"
    );
}

pub async fn data(client: &Client, path: &str) -> (Vec<u8>, i32) {
    let (data, stat) = client.get_data(path).await.expect("read back");
    (data.to_vec(), stat.version)
}
