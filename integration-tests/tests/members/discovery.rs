//! Service discovery in curator-x-discovery's layout against a real server and Curator 5.4's
//! discovery (`java/CuratorDiscovery.java`, Debian's libcurator-discovery-java): Java's
//! `queryForInstances` returns our instance with every field (byte for byte), a
//! Java-registered instance parses here with its payload, our update reaches Java's
//! `ServiceCache`, and Java's cache drops our instance within a session timeout of our
//! process being killed. Plus re-registration after an expiry, providers and STATIC
//! instances surviving close.

use std::process::Stdio;
use std::time::{Duration, Instant};

use integration_tests::prelude::*;
use tokio::io::{AsyncBufReadExt, BufReader};
use zk_client::{Client, SessionManager};
use zk_recipes::discovery::{
    serde_json, Instances, ProviderStrategy, ServiceDiscovery, ServiceInstance, ServiceType,
    UriSpec,
};

const BASE: &str = "/services";
const JAVA: &str = "CuratorDiscovery.java";
/// Session timeout of the Rust registrants.
const SESSION: Duration = Duration::from_secs(4);

async fn manager(hosts: &str) -> SessionManager {
    let builder = Client::builder(hosts).session_timeout(SESSION);
    managed(builder).await
}

fn web_instance(id: &str) -> ServiceInstance {
    let mut i = ServiceInstance::new("web", "10.1.2.3", 8080);
    i.id = id.to_owned();
    i.ssl_port = Some(8443);
    i.uri_spec = Some(UriSpec::new("{scheme}://{address}:{port}"));
    i.set_payload(
        Some("java.util.LinkedHashMap"),
        &serde_json::json!({"zone": "eu", "weight": 7}),
    )
    .unwrap();
    i
}

async fn java_ask_until(java: &mut JavaPeer, command: &str, want: &str) {
    let end = tokio::time::Instant::now() + SOON;
    let mut last = String::new();
    while tokio::time::Instant::now() < end {
        last = java.ask(command).await;
        if last == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("java answered {last:?} to {command:?}, not {want:?}");
}

#[tokio::test]
async fn java_reads_our_instance_field_for_field_and_follows_our_update() {
    let TestRoot { hosts, .. } = test_root("discovery_ours").await;
    let admin = connect(&hosts).await;
    let m = manager(&hosts).await;
    let discovery = ServiceDiscovery::new_managed(&m, BASE).unwrap();
    let mut ours = web_instance("rust-1");
    discovery.register(&ours).await.unwrap();
    let (raw, stat) = admin.get_data("/services/web/rust-1").await.unwrap();
    assert_eq!(raw.as_ref(), ours.to_json().as_bytes());
    assert_eq!(
        stat.ephemeral_owner,
        m.client().session_id(),
        "DYNAMIC is ephemeral"
    );

    let mut java = JavaPeer::start(JAVA, &[&hosts, BASE], true).await;
    assert_eq!(java.ask("names").await, "NAMES web");
    assert_eq!(java.ask("instances web").await, "INSTANCES 1");
    // Java read every field and wrote it back exactly as we wrote it.
    assert_eq!(java.line().await, ours.to_json());

    assert_eq!(java.ask("cache-start web").await, "STARTED");
    java_ask_until(&mut java, "cache web", "CACHE rust-1").await;
    ours.port = Some(9090);
    ours.set_payload(
        Some("java.util.LinkedHashMap"),
        &serde_json::json!({"zone": "us"}),
    )
    .unwrap();
    discovery.update(&ours).await.unwrap();
    java_ask_until(
        &mut java,
        "cache-json web rust-1",
        &format!("JSON {}", ours.to_json()),
    )
    .await;

    discovery.unregister(&ours).await.unwrap();
    java_ask_until(&mut java, "cache web", "CACHE ").await;
    assert!(admin
        .exists("/services/web/rust-1")
        .await
        .unwrap()
        .is_none());
    java.close().await;
    discovery.close().await.unwrap();
    m.close().await.unwrap();
}

#[tokio::test]
async fn a_java_instance_parses_here_and_providers_pick_among_all() {
    let TestRoot { hosts, .. } = test_root("discovery_theirs").await;
    let m = manager(&hosts).await;
    let discovery = ServiceDiscovery::new_managed(&m, BASE).unwrap();
    let mut java = JavaPeer::start(JAVA, &[&hosts, BASE], true).await;
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    assert_eq!(
        java.ask("register web java-1 10.9.9.9 7000 7443").await,
        "REGISTERED"
    );
    assert_eq!(discovery.query_for_names().await.unwrap(), ["web"]);
    let found = discovery.query_for_instances("web").await.unwrap();
    assert_eq!(found.len(), 1);
    let theirs = &found[0];
    assert_eq!(theirs.name, "web");
    assert_eq!(theirs.id, "java-1");
    assert_eq!(theirs.address.as_deref(), Some("10.9.9.9"));
    assert_eq!(theirs.port, Some(7000));
    assert_eq!(theirs.ssl_port, Some(7443));
    assert_eq!(theirs.service_type, ServiceType::Dynamic);
    assert_eq!(theirs.payload_class(), Some("java.util.LinkedHashMap"));
    assert_eq!(
        theirs.payload_value().unwrap(),
        serde_json::json!({"zone": "java", "weight": 3})
    );
    assert_eq!(
        theirs.uri_spec.as_ref().unwrap(),
        &UriSpec::new("{scheme}://{address}:{port}")
    );
    assert_eq!(
        theirs.uri_spec.as_ref().unwrap().build(theirs),
        "https://10.9.9.9:7000"
    );
    assert!((theirs.registration_time_utc - before).abs() < 60_000);
    assert_eq!(
        theirs.enabled, None,
        "Curator's default serializer omits enabled"
    );
    assert_eq!(
        discovery
            .query_for_instance("web", "java-1")
            .await
            .unwrap()
            .as_ref(),
        Some(theirs)
    );
    assert!(discovery
        .query_for_instance("web", "nobody")
        .await
        .unwrap()
        .is_none());

    // Providers over the cache: ours and theirs.
    discovery.register(&web_instance("rust-1")).await.unwrap();
    let round = discovery
        .provider("web", ProviderStrategy::RoundRobin)
        .unwrap();
    let random = discovery.provider("web", ProviderStrategy::Random).unwrap();
    eventually("both cached", SOON, || async {
        (round.all_instances().len() == 2 && random.all_instances().len() == 2).then_some(())
    })
    .await;
    let picks: Vec<String> = (0..4).map(|_| round.instance().unwrap().id).collect();
    assert_eq!(picks, ["java-1", "rust-1", "java-1", "rust-1"]);
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..200 {
        seen.insert(random.instance().unwrap().id);
    }
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), ["java-1", "rust-1"]);

    // A disabled instance is never picked; the cache follows Java's departure.
    let mut off = web_instance("rust-1");
    off.enabled = Some(false);
    discovery.update(&off).await.unwrap();
    eventually("disabled skipped", SOON, || async {
        (round.all_instances().len() == 1).then_some(())
    })
    .await;
    let mut changes = round.cache().watch();
    java.close().await;
    within("java gone from the cache", async {
        loop {
            match changes.changed().await {
                Instances::Current(now) if now.iter().all(|i| i.id != "java-1") => break,
                Instances::Current(_) => {}
                other => panic!("{other:?}"),
            }
        }
    })
    .await;
    assert!(round.instance().is_none());
    discovery.close().await.unwrap();
    m.close().await.unwrap();
}

#[tokio::test]
async fn a_dynamic_instance_is_registered_again_after_an_expiry_and_static_ones_outlive_close() {
    let TestRoot { server, hosts, .. } = test_root("discovery_expiry").await;
    let admin = connect(&hosts).await;
    let m = manager(&hosts).await;
    let discovery = ServiceDiscovery::new_managed(&m, BASE).unwrap();
    let ours = web_instance("rust-1");
    discovery.register(&ours).await.unwrap();
    let mut stat_ours = ServiceInstance::new("db", "10.0.0.1", 5432);
    stat_ours.id = "db-1".into();
    stat_ours.service_type = ServiceType::Static;
    discovery.register(&stat_ours).await.unwrap();

    let mut clients = m.watch();
    let old = m.client();
    expire_client(server.addr(), &old).await;
    let new = within("renewal", clients.changed())
        .await
        .live()
        .unwrap()
        .client;
    eventually("registered on the new session", SOON, || async {
        match admin.get_data("/services/web/rust-1").await {
            Ok((d, s)) if s.ephemeral_owner == new.session_id() => {
                assert_eq!(d.as_ref(), ours.to_json().as_bytes());
                Some(())
            }
            _ => None,
        }
    })
    .await;
    assert_eq!(children(&admin, "/services/web").await, ["rust-1"]);

    discovery.close().await.unwrap();
    assert!(admin
        .exists("/services/web/rust-1")
        .await
        .unwrap()
        .is_none());
    let (_, s) = admin.get_data("/services/db/db-1").await.unwrap();
    assert_eq!(s.ephemeral_owner, 0, "STATIC is persistent and stays");
    m.close().await.unwrap();
}

/// The registrant process of the kill test: registers `ZK_REGISTRANT_ID` under
/// `ZK_REGISTRANT_HOSTS`, prints REGISTERED and waits to be killed. Run only as the child of
/// `java_cache_drops_our_instance_within_a_session_timeout_of_our_process_being_killed`.
#[tokio::test]
#[ignore = "child process of the kill test, started by it"]
async fn registrant_child() {
    let hosts = std::env::var("ZK_REGISTRANT_HOSTS").expect("ZK_REGISTRANT_HOSTS");
    let id = std::env::var("ZK_REGISTRANT_ID").expect("ZK_REGISTRANT_ID");
    let m = manager(&hosts).await;
    let discovery = ServiceDiscovery::new_managed(&m, BASE).unwrap();
    discovery.register(&web_instance(&id)).await.unwrap();
    println!("REGISTERED");
    tokio::time::sleep(Duration::from_secs(120)).await;
    panic!("the registrant was not killed");
}

#[tokio::test]
async fn java_cache_drops_our_instance_within_a_session_timeout_of_our_process_being_killed() {
    let TestRoot {
        server: _, hosts, ..
    } = test_root("discovery_kill").await;
    let mut java = JavaPeer::start(JAVA, &[&hosts, BASE], true).await;
    assert_eq!(java.ask("cache-start web").await, "STARTED");

    let exe = std::env::current_exe().expect("test binary");
    let mut child = tokio::process::Command::new(exe)
        .args([
            "--exact",
            "discovery::registrant_child",
            "--ignored",
            "--nocapture",
        ])
        .env("ZK_REGISTRANT_HOSTS", &hosts)
        .env("ZK_REGISTRANT_ID", "rust-killed")
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the registrant");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    within("registrant registered", async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.trim() == "REGISTERED" {
                return;
            }
        }
        panic!("the registrant exited");
    })
    .await;
    java_ask_until(&mut java, "cache web", "CACHE rust-killed").await;

    child.start_kill().expect("kill the registrant");
    let killed = Instant::now();
    child.wait().await.expect("reap");
    java_ask_until(&mut java, "cache web", "CACHE ").await;
    let gone_after = killed.elapsed();
    println!("java's cache dropped the killed instance after {gone_after:?}");
    // The server expires the session within its timeout (plus a tick of its expiry
    // check), and the cache hears of the deletion at once.
    assert!(
        gone_after <= SESSION + Duration::from_secs(2),
        "dropped after {gone_after:?}"
    );
    java.close().await;
}
