//! `GroupMember` in Curator's layout against a real server and Curator 5.4's `GroupMember`
//! (`java/CuratorGroup.java`): each side lists the other's members with their payloads,
//! payload changes and departures are seen, and a member comes back after an expiry.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use integration_tests::prelude::*;
use zk_client::{Client, SessionManager};
use zk_recipes::group::{GroupMember, Members};

const GROUP: &str = "/groups/g";

async fn manager(hosts: &str) -> SessionManager {
    let builder = Client::builder(hosts).session_timeout(Duration::from_secs(4));
    managed(builder).await
}

fn text(members: &BTreeMap<String, Bytes>) -> String {
    members
        .iter()
        .map(|(id, p)| format!("{id}={}", String::from_utf8_lossy(p)))
        .collect::<Vec<_>>()
        .join(",")
}

async fn java_members(java: &mut JavaPeer, want: &str) {
    let end = tokio::time::Instant::now() + SOON;
    let mut last = String::new();
    while tokio::time::Instant::now() < end {
        last = java.ask("members").await;
        if last == format!("MEMBERS {want}") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("java lists {last}, not {want}");
}

async fn rust_members(member: &GroupMember, want: &str) {
    eventually(&format!("rust lists {want}"), SOON, || async {
        (text(&member.current_members()) == want).then_some(())
    })
    .await;
}

#[tokio::test]
async fn rust_and_curator_members_list_each_other_with_payloads() {
    let TestRoot { server, hosts, .. } = test_root("group_interop").await;
    let admin = connect(&hosts).await;

    let m1 = manager(&hosts).await;
    let rust1 = GroupMember::new_managed(&m1, GROUP, "rust-1", Some(b"r1"))
        .await
        .unwrap();
    assert_eq!(
        rust1.ready_timeout(SOON).await.unwrap(),
        format!("{GROUP}/rust-1")
    );
    let mut java =
        JavaPeer::start("CuratorGroup.java", &[&hosts, GROUP, "java-1", "j1"], false).await;
    let m2 = manager(&hosts).await;
    let rust2 = GroupMember::new_managed(&m2, GROUP, "rust-2", Some(b"r2"))
        .await
        .unwrap();
    rust2.ready_timeout(SOON).await.unwrap();

    let all = "java-1=j1,rust-1=r1,rust-2=r2";
    java_members(&mut java, all).await;
    rust_members(&rust1, all).await;
    rust_members(&rust2, all).await;
    // Curator's layout: ephemeral member nodes named by id, in a container.
    let (data, stat) = admin.get_data(&format!("{GROUP}/rust-1")).await.unwrap();
    assert_eq!(data.as_ref(), b"r1");
    assert_eq!(stat.ephemeral_owner, m1.client().session_id());

    // Payload changes go both ways.
    rust1.set_payload(b"r1b").await.unwrap();
    assert_eq!(java.ask("payload j1b").await, "SET");
    let all = "java-1=j1b,rust-1=r1b,rust-2=r2";
    java_members(&mut java, all).await;
    rust_members(&rust2, all).await;

    // A member that expires comes back on its next session; the others see it again.
    let mut clients = m2.watch();
    let old = m2.client();
    expire_client(server.addr(), &old).await;
    let new = within("renewal", clients.changed()).await.live().unwrap();
    eventually("rust-2 back on its new session", SOON, || async {
        match admin.get_data(&format!("{GROUP}/rust-2")).await {
            Ok((_, s)) if s.ephemeral_owner == new.client.session_id() => Some(()),
            _ => None,
        }
    })
    .await;
    java_members(&mut java, all).await;
    rust_members(&rust2, all).await;

    // Departures.
    rust1.close().await.unwrap();
    let left = "java-1=j1b,rust-2=r2";
    java_members(&mut java, left).await;
    rust_members(&rust2, left).await;
    java.close().await;
    rust_members(&rust2, "rust-2=r2").await;
    let mut changes = rust2.watch();
    rust2.close().await.unwrap();
    assert!(
        within("watcher ends", async {
            loop {
                if changes.changed().await == Members::Ended {
                    return true;
                }
            }
        })
        .await
    );
    assert!(children(&admin, GROUP).await.is_empty());
    m1.close().await.unwrap();
    m2.close().await.unwrap();
}

#[tokio::test]
async fn the_default_payload_is_curators_local_address_text() {
    let TestRoot { hosts, .. } = test_root("group_default").await;
    let m = manager(&hosts).await;
    let member = GroupMember::new_managed(&m, GROUP, "me", None)
        .await
        .unwrap();
    member.ready_timeout(SOON).await.unwrap();
    let payload = member.current_members().remove("me").unwrap();
    let text = std::str::from_utf8(&payload).expect("text");
    assert!(
        text.is_empty() || text.parse::<std::net::IpAddr>().is_ok(),
        "{text}"
    );
    assert!(GroupMember::new_managed(&m, GROUP, "a/b", None)
        .await
        .is_err());
    member.close().await.unwrap();
    m.close().await.unwrap();
}
