//! Typed nodes (`zk_recipes::model`) against a real server: typed reads and versioned
//! writes, compare-and-set updates by concurrent updaters losing no update, an update
//! through a lost reply applied once, and the typed cache view (decoded once per change,
//! a node that does not decode reported as that node's error), compressed both ways and
//! reading what Curator 5.4 wrote with `compressed()`; JSON as Jackson writes and reads it
//! (`java/JacksonModel.java`, the bytes of x-async's `JacksonModelSerializer`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use integration_tests::prelude::*;
use integration_tests::probe::op;
use integration_tests::proxy::Proxy;
use integration_tests::{chroot, standalone, ZkTarget};
use serde::{Deserialize, Serialize};
use zk_client::compression::{looks_like_gzip, Gzip};
use zk_client::{Bytes, CreateOptions};
use zk_recipes::cache::Cache;
use zk_recipes::model::{Codec, CodecError, Json, Model, ModelCache, Raw};
use zk_recipes::writes::DeleteOutcome;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
struct Config {
    name: String,
    replicas: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
struct Counter {
    n: u64,
}

/// Updates per updater in the concurrency test (`MODEL_UPDATES`, default 100).
fn updates() -> u64 {
    std::env::var("MODEL_UPDATES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100)
}

#[tokio::test]
async fn typed_reads_and_versioned_writes() {
    let server = standalone().await;
    let root = chroot(server, "model_basic").await;
    let client = connect(&server.hosts(&root)).await;
    let configs: Model<Config, Json> = Model::new(client.clone(), "/configs", Json).unwrap();
    let web = configs.child("web").unwrap();
    assert_eq!(web.path(), "/configs/web");
    assert!(web.get_opt().await.unwrap().is_none());
    let first = Config {
        name: "web".into(),
        replicas: 2,
    };
    let stat = web.create(&first).await.unwrap();
    assert_eq!(stat.version, 0);
    // The bytes are plain JSON, as Jackson writes a data class.
    let (raw, _) = client.get_data("/configs/web").await.unwrap();
    assert_eq!(&raw[..], br#"{"name":"web","replicas":2}"#);
    let got = web.get().await.unwrap();
    assert_eq!(got.value, first);
    let second = Config {
        replicas: 3,
        ..first.clone()
    };
    let stat = web.set(&second, Some(got.stat.version)).await.unwrap();
    assert_eq!(stat.version, 1);
    // Writing over a version that is gone is BadVersion, the node untouched.
    let stale = web.set(&first, Some(got.stat.version)).await;
    assert!(
        matches!(
            stale,
            Err(zk_recipes::Error::Client(zk_client::Error::BadVersion))
        ),
        "{stale:?}"
    );
    assert_eq!(web.get().await.unwrap().value, second);
    // Typed children.
    configs.child("db").unwrap().create(&first).await.unwrap();
    assert_eq!(configs.children().await.unwrap(), vec!["db", "web"]);
    let values = configs.child_values().await.unwrap();
    let values: Vec<_> = values
        .into_iter()
        .map(|(name, v)| (name, v.unwrap().value))
        .collect();
    assert_eq!(
        values,
        vec![
            ("db".to_owned(), first.clone()),
            ("web".to_owned(), second.clone())
        ]
    );
    assert!(configs.child("a/b").is_err());
    // Data that does not decode is an error naming the node, never a panic.
    client
        .create("/configs/bad", b"{not json", &CreateOptions::persistent())
        .await
        .unwrap();
    let bad = configs.child("bad").unwrap().get().await;
    match bad {
        Err(zk_recipes::Error::Codec { path, reason }) => {
            assert_eq!(path, "/configs/bad");
            assert!(reason.starts_with("decode"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    let values = configs.child_values().await.unwrap();
    assert_eq!(values.len(), 3);
    assert!(matches!(
        &values[0],
        (name, Err(zk_recipes::Error::Codec { .. })) if name == "bad"
    ));
    assert!(values[1].1.is_ok() && values[2].1.is_ok());
    assert_eq!(web.delete(None).await.unwrap(), DeleteOutcome::Deleted);
    assert_eq!(web.delete(None).await.unwrap(), DeleteOutcome::AlreadyGone);
}

#[tokio::test]
async fn two_concurrent_updaters_lose_no_update() {
    let server = standalone().await;
    let root = chroot(server, "model_concurrent").await;
    let hosts = server.hosts(&root);
    let a = connect(&hosts).await;
    let b = connect(&hosts).await;
    let counter: Model<Counter, Json> = Model::new(a.clone(), "/counter", Json).unwrap();
    counter.create(&Counter::default()).await.unwrap();
    let n = updates();
    let mut tasks = Vec::new();
    for client in [a, b] {
        let model: Model<Counter, Json> = Model::new(client, "/counter", Json).unwrap();
        tasks.push(tokio::spawn(async move {
            let mut conflicts = 0u64;
            for _ in 0..n {
                let mut calls = 0u64;
                model
                    .update(|c| {
                        calls += 1;
                        Counter { n: c.n + 1 }
                    })
                    .await
                    .expect("update");
                conflicts += calls - 1;
            }
            conflicts
        }));
    }
    let mut conflicts = 0;
    for t in tasks {
        conflicts += within("updater", t).await.unwrap();
    }
    let end = counter.get().await.unwrap();
    assert_eq!(end.value.n, 2 * n, "no update lost");
    assert_eq!(end.stat.version as u64, 2 * n, "one write per update");
    println!("two updaters, {n} updates each: {conflicts} compare-and-set conflicts retried");
}

#[tokio::test]
async fn an_update_through_a_lost_reply_is_applied_once() {
    let server = standalone().await;
    let root = chroot(server, "model_lost").await;
    let admin = connect(&server.hosts(&root)).await;
    let proxy = Proxy::start(server.addr()).await;
    let client = connect_for_faults(&format!("{}{root}", proxy.connect_string())).await;
    let counter: Model<Counter, Json> = Model::new(client, "/c", Json).unwrap();
    // A lost create reply too.
    proxy.drop_next_create_reply();
    within("create", counter.create(&Counter { n: 10 }))
        .await
        .unwrap();
    for round in 0..5u64 {
        proxy.drop_next_reply_to(op::SET_DATA);
        let mut calls = 0;
        let now = within(
            "update",
            counter.update(|c| {
                calls += 1;
                Counter { n: c.n + 1 }
            }),
        )
        .await
        .unwrap();
        assert!(
            proxy
                .wait_create_reply_dropped(Duration::from_secs(5))
                .await,
            "round {round}: reply dropped"
        );
        assert_eq!(calls, 1, "round {round}: change computed once");
        assert_eq!(now.value.n, 11 + round);
        let (raw, stat) = admin.get_data("/c").await.unwrap();
        let stored: Counter = serde_json::from_slice(&raw).unwrap();
        assert_eq!((stored.n, stat.version as u64), (11 + round, 1 + round));
    }
}

/// A codec counting its decodes.
#[derive(Clone)]
struct Counting(Arc<AtomicUsize>);

impl Codec<Config> for Counting {
    fn encode(&self, value: &Config) -> Result<Vec<u8>, CodecError> {
        Json.encode(value)
    }
    fn decode(&self, data: &[u8]) -> Result<Config, CodecError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Json.decode(data)
    }
}

#[tokio::test]
async fn the_typed_cache_decodes_once_per_change_and_reports_bad_nodes() {
    let server = standalone().await;
    let root = chroot(server, "model_cache").await;
    let client = connect(&server.hosts(&root)).await;
    let decodes = Arc::new(AtomicUsize::new(0));
    let model = Model::new(client.clone(), "/svc", Counting(decodes.clone())).unwrap();
    let web = Config {
        name: "web".into(),
        replicas: 1,
    };
    model.child("web").unwrap().create(&web).await.unwrap();
    client
        .create("/svc/bad", b"\xff\x00", &CreateOptions::persistent())
        .await
        .unwrap();
    let view = model.cache().unwrap();
    within("ready", view.cache().ready()).await.unwrap();
    let read = |view: &ModelCache<Config, Counting>| {
        let children = view.children("/svc");
        let names: Vec<_> = children.iter().map(|(p, _)| p.clone()).collect();
        assert_eq!(names, vec!["/svc/bad", "/svc/web"]);
        assert!(
            matches!(&children[0].1, Err(zk_recipes::Error::Codec { path, .. }) if path == "/svc/bad"),
            "{:?}",
            children[0].1
        );
        children[1].1.as_ref().map(|v| (*v.value).clone()).unwrap()
    };
    assert_eq!(read(&view), web);
    let after_first = decodes.load(Ordering::SeqCst);
    for _ in 0..10 {
        assert_eq!(read(&view), web);
        assert_eq!(
            view.get("/svc/web").unwrap().unwrap().value.replicas,
            1,
            "get"
        );
    }
    // Each node is decoded once, the bad one too (its error is kept until it changes).
    assert_eq!(after_first, 2, "one decode per node");
    assert_eq!(
        decodes.load(Ordering::SeqCst),
        after_first,
        "no decode again"
    );
    // A change is decoded once more.
    let changed = Config {
        replicas: 5,
        ..web.clone()
    };
    model
        .child("web")
        .unwrap()
        .set(&changed, None)
        .await
        .unwrap();
    eventually("change seen", Duration::from_secs(30), || async {
        view.get("/svc/web")
            .ok()
            .flatten()
            .filter(|v| v.value.replicas == 5)
            .map(|_| ())
    })
    .await;
    let before = decodes.load(Ordering::SeqCst);
    for _ in 0..5 {
        assert_eq!(view.get("/svc/web").unwrap().unwrap().value.replicas, 5);
    }
    assert_eq!(
        decodes.load(Ordering::SeqCst),
        before,
        "decoded once per change"
    );
    view.cache().close().await.unwrap();
}

#[tokio::test]
async fn compressed_models_and_caches_read_curators_gzip() {
    let server = standalone().await;
    let root = chroot(server, "model_gzip").await;
    let hosts = server.hosts(&root);
    let client = connect(&hosts).await;
    let model: Model<Config, Json> = Model::new(client.clone(), "/z/ours", Json)
        .unwrap()
        .compressed(Gzip::new());
    let value = Config {
        name: "zipped".into(),
        replicas: 9,
    };
    model.create(&value).await.unwrap();
    let (raw, _) = client.get_data("/z/ours").await.unwrap();
    assert!(looks_like_gzip(&raw), "stored compressed");
    assert_eq!(model.get().await.unwrap().value, value);
    let updated = model
        .update(|c| Config {
            replicas: c.replicas + 1,
            ..c
        })
        .await
        .unwrap();
    assert_eq!(updated.value.replicas, 10);

    // Curator writes with compressed(); a decompressing cache of bytes reads it.
    let mut java = JavaPeer::start("CuratorCompression.java", &[&hosts], false).await;
    assert_eq!(
        java.ask(&format!("create /z/curator {}", hex(b"from curator")))
            .await,
        "CREATED"
    );
    let view =
        ModelCache::new(Cache::new(client.clone(), "/z").unwrap(), Raw).compressed(Gzip::new());
    within("ready", view.cache().ready()).await.unwrap();
    let got = view.get("/z/curator").unwrap().unwrap();
    assert_eq!(got.value.as_ref(), &Bytes::from_static(b"from curator"));
    let ours = view.get("/z/ours").unwrap().unwrap();
    let decoded: Config = serde_json::from_slice(&ours.value).unwrap();
    assert_eq!(decoded.replicas, 10);
    // And Curator reads our compressed model with decompressed().
    let answer = java.ask("get /z/ours").await;
    let expected = serde_json::to_vec(&decoded).unwrap();
    assert_eq!(answer, format!("DATA {}", hex(&expected)));
    java.close().await;
    view.cache().close().await.unwrap();
}

#[tokio::test]
async fn jackson_written_models_read_here_and_back() {
    let server = standalone().await;
    let root = chroot(server, "model_jackson").await;
    let hosts = server.hosts(&root);
    let client = connect(&hosts).await;
    let mut java = JavaPeer::start("JacksonModel.java", &[&hosts], true).await;
    assert_eq!(java.ask("write /m/java api 4").await, "WRITTEN");
    let model: Model<Config, Json> = Model::new(client, "/m/java", Json).unwrap();
    assert_eq!(
        model.get().await.unwrap().value,
        Config {
            name: "api".into(),
            replicas: 4
        }
    );
    model
        .update(|c| Config {
            replicas: c.replicas * 2,
            ..c
        })
        .await
        .unwrap();
    assert_eq!(java.ask("read /m/java").await, "CONFIG api 8");
    let ours = model.child("ours").unwrap();
    ours.create(&Config {
        name: "rust".into(),
        replicas: 1,
    })
    .await
    .unwrap();
    assert_eq!(java.ask("read /m/java/ours").await, "CONFIG rust 1");
    java.close().await;
}

fn hex(data: &[u8]) -> String {
    data.iter().map(|b| format!("{b:02x}")).collect()
}

/// A model with a `SchemaSet` (Curator's `SchemaSet`): writes that break a rule are refused
/// before anything is sent (the server's node unchanged), the others go through.
#[tokio::test]
async fn schemas_refuse_writes_that_break_them_before_anything_is_sent() {
    use zk_recipes::model::{Allowance, Schema, SchemaSet};
    let server = standalone().await;
    let root = chroot(server, "model_schema").await;
    let client = connect(&server.hosts(&root)).await;
    let utf8 = |d: &[u8]| std::str::from_utf8(d).map(drop).map_err(|e| e.to_string());
    let schemas = Arc::new(
        SchemaSet::new([
            Schema::new("member", "/app/members/{id}")
                .unwrap()
                .ephemeral(Allowance::Must)
                .data(utf8),
            Schema::new("pinned", "/app/pinned")
                .unwrap()
                .deletable(false),
        ])
        .strict(true),
    );
    let members: Model<Bytes, Raw> = Model::new(client.clone(), "/app/members/{id}", Raw)
        .unwrap()
        .schemas(schemas.clone());
    let text = Bytes::from_static(b"host-1");
    // Persistent (the model's default): refused, nothing created.
    let alice = members.resolved(&["alice"]).unwrap();
    let refused = alice.create(&text).await;
    assert!(
        matches!(&refused, Err(zk_recipes::Error::Schema { schema, reason, .. })
            if schema == "member" && reason == "must be ephemeral"),
        "{refused:?}"
    );
    assert!(client.exists("/app/members/alice").await.unwrap().is_none());
    // Ephemeral: created; a set of bytes that are not text is refused, the node unchanged.
    let alice = alice.create_options(CreateOptions::ephemeral().with_container_parents(true));
    alice.create(&text).await.unwrap();
    let stat = client.exists("/app/members/alice").await.unwrap().unwrap();
    assert_eq!(stat.ephemeral_owner, client.session_id());
    let bad = alice.set(&Bytes::from_static(b"\xff\xfe"), None).await;
    assert!(
        matches!(bad, Err(zk_recipes::Error::Schema { .. })),
        "{bad:?}"
    );
    let (data, stat) = client.get_data("/app/members/alice").await.unwrap();
    assert_eq!((&data[..], stat.version), (&b"host-1"[..], 0));
    alice
        .set(&Bytes::from_static(b"host-2"), Some(0))
        .await
        .unwrap();
    // A node that may not be deleted stays; a path no schema names is refused (strict).
    client
        .create("/app/pinned", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let pinned: Model<Bytes, Raw> = Model::new(client.clone(), "/app/pinned", Raw)
        .unwrap()
        .schemas(schemas.clone());
    let kept = pinned.delete(None).await;
    assert!(
        matches!(&kept, Err(zk_recipes::Error::Schema { schema, .. }) if schema == "pinned"),
        "{kept:?}"
    );
    assert!(client.exists("/app/pinned").await.unwrap().is_some());
    let stray: Model<Bytes, Raw> = Model::new(client.clone(), "/app/stray", Raw)
        .unwrap()
        .schemas(schemas);
    let stray = stray.create(&text).await;
    assert!(
        matches!(stray, Err(zk_recipes::Error::Schema { .. })),
        "{stray:?}"
    );
    assert!(client.exists("/app/stray").await.unwrap().is_none());
}
