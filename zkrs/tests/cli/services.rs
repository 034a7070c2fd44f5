//! `zkrs services` and `zkrs members` against a real server, on registrations made by our
//! discovery and group recipes (Curator's layouts).

use std::time::Duration;

use crate::common::{json, ok};
use integration_tests::prelude::*;
use zk_client::{Client, SessionManager};
use zk_recipes::discovery::{ServiceDiscovery, ServiceInstance};
use zk_recipes::group::GroupMember;

#[tokio::test]
async fn services_and_members_show_registrations_with_their_owners() {
    let TestRoot { hosts, .. } = test_root("zkrs_services").await;
    let manager = SessionManager::connect(Client::builder(&hosts))
        .await
        .unwrap();
    let session = format!("0x{:x}", manager.client().session_id());
    let discovery = ServiceDiscovery::new_managed(&manager, "/services").unwrap();
    let mut web = ServiceInstance::new("web", "10.0.0.5", 8080);
    web.id = "w1".into();
    discovery.register(&web).await.unwrap();
    let member = GroupMember::new_managed(&manager, "/groups/g", "m1", Some(b"eu-1"))
        .await
        .unwrap();
    member.ready_timeout(Duration::from_secs(30)).await.unwrap();

    let text = ok(&hosts, &["services"]).await;
    assert_eq!(
        text,
        format!("web/w1  10.0.0.5:8080  ssl -  DYNAMIC  owner {session}\n")
    );
    let listed = json(&hosts, &["services", "web"]).await;
    assert_eq!(listed["node"], "w1");
    assert_eq!(listed["owner"], session.as_str());
    assert_eq!(listed["instance"]["port"], 8080);

    assert_eq!(
        ok(&hosts, &["members", "/groups/g"]).await,
        format!("m1  eu-1  owner {session}\n")
    );
    let m = json(&hosts, &["members", "/groups/g"]).await;
    assert_eq!(m["payload"], "eu-1");

    member.close().await.unwrap();
    discovery.close().await.unwrap();
    assert_eq!(ok(&hosts, &["services", "web"]).await, "");
    manager.close().await.unwrap();
}
