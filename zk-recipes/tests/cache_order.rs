//! The cache's event order against a scripted server that sends watch events and read replies
//! in one write, in the server's order (issue 29): the cache must apply them in that order, so
//! a live node is never reported deleted, and a deleted node is never put back by a read that
//! was answered before the deletion. Each test runs on the current-thread runtime, so the
//! client's connection task hands over all the frames of one write before the cache runs.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use zk_proto::records::{
    EventType, GetChildrenRequest, GetChildrenResponse, GetDataRequest, GetDataResponse, MultiOp,
    MultiRequest, MultiResponse, MultiResult,
};
use zk_proto::{decode_exact, ErrorCode, OpCode, Record, ReplyHeader, Stat};
use zk_recipes::cache::{Cache, CacheEvent, CacheEvents, ChildData};
use zk_test_support::{connect_client, encode, within, Conn, FakeServer, Req};

const SESSION: i64 = 0x5e55;
/// Long enough that no ping is due during a test.
const TIMEOUT_MS: i32 = 60_000;

/// A one-session fake server holding a small tree.
struct Fake {
    conn: Conn,
    nodes: BTreeMap<String, (Bytes, Stat)>,
    zxid: i64,
}

impl Fake {
    fn new(conn: Conn) -> Fake {
        Fake {
            conn,
            nodes: BTreeMap::new(),
            zxid: 0,
        }
    }

    fn children(&self, path: &str) -> Vec<String> {
        let prefix = format!("{path}/");
        self.nodes
            .keys()
            .filter_map(|p| p.strip_prefix(&prefix))
            .filter(|rest| !rest.contains('/'))
            .map(str::to_owned)
            .collect()
    }

    fn stat(&self, path: &str) -> Option<Stat> {
        let (_, stat) = self.nodes.get(path)?;
        let mut stat = stat.clone();
        stat.num_children = i32::try_from(self.children(path).len()).unwrap();
        Some(stat)
    }

    /// Creates `path`; returns its czxid.
    fn create(&mut self, path: &str, data: &str) -> i64 {
        self.zxid += 1;
        let stat = Stat {
            czxid: self.zxid,
            mzxid: self.zxid,
            data_length: i32::try_from(data.len()).unwrap(),
            ..Stat::default()
        };
        assert!(self
            .nodes
            .insert(path.to_owned(), (Bytes::from(data.to_owned()), stat))
            .is_none());
        self.zxid
    }

    fn set(&mut self, path: &str, data: &str) {
        self.zxid += 1;
        let (d, stat) = self.nodes.get_mut(path).unwrap();
        *d = Bytes::from(data.to_owned());
        stat.version += 1;
        stat.mzxid = self.zxid;
        stat.data_length = i32::try_from(data.len()).unwrap();
    }

    fn delete(&mut self, path: &str) {
        self.zxid += 1;
        assert!(self.children(path).is_empty(), "{path} has children");
        assert!(self.nodes.remove(path).is_some());
    }

    fn get_data(&self, path: &str) -> Result<GetDataResponse, ErrorCode> {
        match (self.nodes.get(path), self.stat(path)) {
            (Some((data, _)), Some(stat)) => Ok(GetDataResponse {
                data: data.clone(),
                stat,
            }),
            _ => Err(ErrorCode::NoNode),
        }
    }

    fn get_children(&self, path: &str) -> Result<GetChildrenResponse, ErrorCode> {
        if self.nodes.contains_key(path) {
            Ok(GetChildrenResponse {
                children: self.children(path),
            })
        } else {
            Err(ErrorCode::NoNode)
        }
    }

    /// The frame answering `req` from the tree as it is now.
    fn answer(&self, req: &Req, buf: &mut BytesMut) {
        let op = OpCode::try_from(req.op).unwrap();
        let (err, body) = match op {
            OpCode::AddWatch | OpCode::SetWatches2 | OpCode::SetWatches => {
                (ErrorCode::Ok, Bytes::new())
            }
            OpCode::GetData => {
                let r: GetDataRequest = decode_exact(req.body.clone()).unwrap();
                match self.get_data(&r.path) {
                    Ok(resp) => (ErrorCode::Ok, encode(&resp)),
                    Err(code) => (code, Bytes::new()),
                }
            }
            OpCode::GetChildren => {
                let r: GetChildrenRequest = decode_exact(req.body.clone()).unwrap();
                match self.get_children(&r.path) {
                    Ok(resp) => (ErrorCode::Ok, encode(&resp)),
                    Err(code) => (code, Bytes::new()),
                }
            }
            // Each read of a multiRead answered in turn, from the tree as it is now.
            OpCode::MultiRead => {
                let r: MultiRequest = decode_exact(req.body.clone()).unwrap();
                let results = r
                    .ops
                    .iter()
                    .map(|op| match op {
                        MultiOp::GetData(r) => self
                            .get_data(&r.path)
                            .map_or_else(MultiResult::Error, MultiResult::GetData),
                        MultiOp::GetChildren(r) => self
                            .get_children(&r.path)
                            .map_or_else(MultiResult::Error, MultiResult::GetChildren),
                        other => panic!("a write in a multiRead: {other:?}"),
                    })
                    .collect();
                (ErrorCode::Ok, encode(&MultiResponse { results }))
            }
            OpCode::RemoveWatches | OpCode::CheckWatches => (ErrorCode::Ok, Bytes::new()),
            OpCode::CloseSession => (ErrorCode::Ok, Bytes::new()),
            other => panic!("the fake server got an unexpected {other:?}"),
        };
        zk_proto::frame::encode_frame(buf, |b| {
            ReplyHeader {
                xid: req.xid,
                zxid: self.zxid,
                err,
            }
            .encode(b);
            b.extend_from_slice(&body);
        });
    }

    async fn send_answer(&mut self, req: &Req) {
        let mut buf = BytesMut::new();
        self.answer(req, &mut buf);
        self.conn.send_raw(&buf).await;
    }

    /// Answers every request from the tree until `done` completes.
    async fn serve_until<T>(&mut self, what: &str, done: impl Future<Output = T>) -> T {
        let mut done = std::pin::pin!(done);
        within(what, async {
            loop {
                tokio::select! {
                    biased;
                    out = &mut done => return out,
                    req = self.conn.read_non_ping() => {
                        let req = req.expect("the client hung up");
                        self.send_answer(&req).await;
                    }
                }
            }
        })
        .await
    }

    /// The next request, not answered yet.
    async fn hold(&mut self) -> Req {
        within("a request", self.conn.read_non_ping())
            .await
            .expect("the client hung up")
    }
}

/// Collects a cache's events in the background.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<CacheEvent>>>);

impl Recorder {
    fn start(mut events: CacheEvents) -> Recorder {
        let rec = Recorder::default();
        let all = rec.0.clone();
        tokio::spawn(async move {
            while let Some(ev) = events.next().await {
                all.lock().unwrap().push(ev);
            }
        });
        rec
    }

    fn all(&self) -> Vec<CacheEvent> {
        self.0.lock().unwrap().clone()
    }

    /// Waits until an event about `path` with `data` was recorded.
    async fn seen(&self, path: &str, data: &str) {
        loop {
            let there = self.all().iter().any(|e| match e {
                CacheEvent::Created(n) | CacheEvent::Changed { new: n, .. } => {
                    n.path == path && n.data.as_deref() == Some(data.as_bytes())
                }
                _ => false,
            });
            if there {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// `+path@czxid`, `~path@czxid:data`, `-path@czxid`: the events in a comparable shape.
fn describe(events: &[CacheEvent]) -> Vec<String> {
    let at = |n: &ChildData| format!("{}@{}", n.path, n.stat.czxid);
    events
        .iter()
        .filter_map(|e| match e {
            CacheEvent::Created(n) => Some(format!("+{}", at(n))),
            CacheEvent::Changed { new, .. } => Some(format!(
                "~{}:{}",
                at(new),
                String::from_utf8_lossy(new.data.as_deref().unwrap_or_default())
            )),
            CacheEvent::Deleted(n) => Some(format!("-{}", at(n))),
            CacheEvent::Initialized => Some("init".to_owned()),
            _ => None,
        })
        .collect()
}

/// Replays `events` one by one, checking after each one that no cached node's parent (below
/// `root`) is missing, and that no node is reported deleted and then created with the same
/// czxid (a live node reported gone). Returns the final paths with their czxid.
fn replay_checked(root: &str, events: &[CacheEvent]) -> BTreeMap<String, i64> {
    let mut tree = BTreeMap::new();
    let mut last_deleted: BTreeMap<String, i64> = BTreeMap::new();
    for (i, e) in events.iter().enumerate() {
        match e {
            CacheEvent::Created(n) => {
                assert_ne!(
                    last_deleted.get(&n.path),
                    Some(&n.stat.czxid),
                    "event {i}: {} was reported deleted, yet it is the same node: {:?}",
                    n.path,
                    describe(events)
                );
                assert!(tree.insert(n.path.clone(), n.stat.czxid).is_none());
            }
            CacheEvent::Changed { new, .. } => {
                assert!(tree.insert(new.path.clone(), new.stat.czxid).is_some());
            }
            CacheEvent::Deleted(n) => {
                assert_eq!(tree.remove(&n.path), Some(n.stat.czxid), "event {i}");
                last_deleted.insert(n.path.clone(), n.stat.czxid);
            }
            _ => {}
        }
        for path in tree.keys().filter(|p| p.as_str() != root) {
            let parent = &path[..path.rfind('/').unwrap()];
            assert!(
                tree.contains_key(parent),
                "event {i}: {path} is cached without its parent: {:?}",
                describe(events)
            );
        }
    }
    tree
}

/// The events replayed (checked as they go) give the cache's snapshot, which is the server's
/// tree.
fn assert_replays_to_the_server(events: &[CacheEvent], cache: &Cache, fake: &Fake) {
    assert_eq!(replay_checked("/app", events), snapshot(cache));
    assert_eq!(snapshot(cache), tree_of(fake));
}

fn snapshot(cache: &Cache) -> BTreeMap<String, i64> {
    cache
        .entries()
        .into_iter()
        .map(|c| (c.path, c.stat.czxid))
        .collect()
}

fn tree_of(fake: &Fake) -> BTreeMap<String, i64> {
    fake.nodes
        .iter()
        .filter(|(p, _)| p.starts_with("/app"))
        .map(|(p, (_, s))| (p.clone(), s.czxid))
        .collect()
}

/// A cache of `/app` on a fake server holding `/app` and `/app/n` (and `/app/n/c` when
/// `child`), loaded.
async fn loaded(child: bool) -> (FakeServer, Fake, Cache, Recorder) {
    let server = FakeServer::start().await;
    let (client, conn) = connect_client(&server, "", SESSION, TIMEOUT_MS, |b| b).await;
    let mut fake = Fake::new(conn);
    fake.create("/app", "root");
    fake.create("/app/n", "v0");
    if child {
        fake.create("/app/n/c", "c0");
    }
    let (cache, events) = Cache::builder("/app").build_with_events(client).unwrap();
    let rec = Recorder::start(events);
    fake.serve_until("load", cache.ready()).await.unwrap();
    (server, fake, cache, rec)
}

/// Adds `/app/marker` and waits until the cache has it: every frame sent before is applied.
async fn marker(fake: &mut Fake, rec: &Recorder) {
    fake.create("/app/marker", "m");
    fake.conn
        .notify(EventType::NodeCreated, "/app/marker")
        .await;
    let rec = rec.clone();
    fake.serve_until("marker", async move { rec.seen("/app/marker", "m").await })
        .await;
}

/// Sends `events` (notifications, in order) and then the answer to `held`, in one write.
async fn events_then_answer(fake: &mut Fake, events: &[(EventType, &str)], held: &Req) {
    let mut buf = BytesMut::new();
    for (event_type, path) in events {
        Conn::notification(&mut buf, *event_type, path);
    }
    fake.answer(held, &mut buf);
    fake.conn.send_raw(&buf).await;
}

/// Changes `/app/n`'s data and tells the cache, which reads it again: that read is returned,
/// held (not answered yet).
async fn changed_and_read_held(fake: &mut Fake) -> Req {
    fake.set("/app/n", "v1");
    fake.conn.notify(EventType::NodeDataChanged, "/app/n").await;
    let held = fake.hold().await;
    assert!(is_get_data(&held, "/app/n"), "{held:?}");
    held
}

fn is_get_data(req: &Req, path: &str) -> bool {
    req.op == OpCode::GetData.as_i32()
        && decode_exact::<GetDataRequest>(req.body.clone())
            .unwrap()
            .path
            == path
}

#[tokio::test]
async fn a_node_replaced_while_its_read_was_answered_is_never_reported_deleted_alive() {
    let (_server, mut fake, cache, rec) = loaded(false).await;
    // A data change makes the cache read /app/n again; the server holds that read while
    // someone deletes and re-creates the node, then sends the two events and the read's
    // answer (which already shows the new node), in that order.
    let held = changed_and_read_held(&mut fake).await;
    fake.delete("/app/n");
    let new = fake.create("/app/n", "fresh");
    events_then_answer(
        &mut fake,
        &[
            (EventType::NodeDeleted, "/app/n"),
            (EventType::NodeCreated, "/app/n"),
        ],
        &held,
    )
    .await;
    marker(&mut fake, &rec).await;

    let events = rec.all();
    assert_eq!(
        describe(&events),
        [
            "+/app@1",
            "+/app/n@2",
            "init",
            "-/app/n@2",
            &format!("+/app/n@{new}"),
            &format!("+/app/marker@{}", new + 1),
        ],
        "the server deleted /app/n once and created it once"
    );
    assert_replays_to_the_server(&events, &cache, &fake);
}

#[tokio::test]
async fn a_read_answered_before_a_delete_does_not_put_the_node_back() {
    let (_server, mut fake, cache, rec) = loaded(false).await;
    // The read is answered (showing the changed node), then the node is deleted: the answer
    // comes first on the wire, then the event.
    let held = changed_and_read_held(&mut fake).await;
    let mut buf = BytesMut::new();
    fake.answer(&held, &mut buf);
    fake.delete("/app/n");
    Conn::notification(&mut buf, EventType::NodeDeleted, "/app/n");
    fake.conn.send_raw(&buf).await;
    marker(&mut fake, &rec).await;

    let events = rec.all();
    assert_eq!(
        describe(&events),
        [
            "+/app@1",
            "+/app/n@2",
            "init",
            "~/app/n@2:v1",
            "-/app/n@2",
            "+/app/marker@5",
        ]
    );
    assert_eq!(replay_checked("/app", &events), snapshot(&cache));
    assert!(cache.get("/app/n").is_none(), "deleted on the server");
    assert_eq!(snapshot(&cache), tree_of(&fake));
}

#[tokio::test]
async fn a_node_replaced_and_changed_during_its_read_is_reported_once() {
    let (_server, mut fake, cache, rec) = loaded(false).await;
    let held = changed_and_read_held(&mut fake).await;
    // Deleted, re-created, then its data changed, all before the read is answered.
    fake.delete("/app/n");
    let new = fake.create("/app/n", "w0");
    fake.set("/app/n", "w1");
    events_then_answer(
        &mut fake,
        &[
            (EventType::NodeDeleted, "/app/n"),
            (EventType::NodeCreated, "/app/n"),
            (EventType::NodeDataChanged, "/app/n"),
        ],
        &held,
    )
    .await;
    marker(&mut fake, &rec).await;

    let events = rec.all();
    let d = describe(&events);
    assert_eq!(
        d[3..],
        [
            "-/app/n@2".to_owned(),
            format!("+/app/n@{new}"),
            format!("+/app/marker@{}", new + 2),
        ],
        "{d:?}"
    );
    assert_eq!(
        cache.get("/app/n").unwrap().data.as_deref(),
        Some(&b"w1"[..])
    );
    assert_replays_to_the_server(&events, &cache, &fake);
}

#[tokio::test]
async fn a_subtree_replaced_during_a_read_of_its_top_is_reported_in_order() {
    let (_server, mut fake, cache, rec) = loaded(true).await;
    let held = changed_and_read_held(&mut fake).await;
    // The child and the node go, the node and a child come back, before the answer.
    fake.delete("/app/n/c");
    fake.delete("/app/n");
    let new = fake.create("/app/n", "fresh");
    let child = fake.create("/app/n/c", "c1");
    events_then_answer(
        &mut fake,
        &[
            (EventType::NodeDeleted, "/app/n/c"),
            (EventType::NodeDeleted, "/app/n"),
            (EventType::NodeCreated, "/app/n"),
            (EventType::NodeCreated, "/app/n/c"),
        ],
        &held,
    )
    .await;
    marker(&mut fake, &rec).await;

    let events = rec.all();
    let d = describe(&events);
    assert_eq!(
        d[4..],
        [
            "-/app/n/c@3".to_owned(),
            "-/app/n@2".to_owned(),
            format!("+/app/n@{new}"),
            format!("+/app/n/c@{child}"),
            format!("+/app/marker@{}", child + 1),
        ],
        "{d:?}"
    );
    assert_replays_to_the_server(&events, &cache, &fake);
}

#[tokio::test]
async fn a_resync_that_finds_a_node_replaced_drops_its_old_children_first() {
    let (server, fake, cache, rec) = loaded(true).await;
    // The connection drops; meanwhile the subtree is replaced. The session resumes on a new
    // connection and the cache re-reads the subtree.
    let Fake { conn, nodes, zxid } = fake;
    drop(conn);
    let mut conn = server.accept().await;
    let resume = conn.read_connect().await;
    assert_eq!(resume.session_id, SESSION);
    conn.send_connect(SESSION, TIMEOUT_MS, false).await;
    let mut fake = Fake { conn, nodes, zxid };
    fake.delete("/app/n/c");
    fake.delete("/app/n");
    let new = fake.create("/app/n", "fresh");
    let child = fake.create("/app/n/c", "c1");
    marker(&mut fake, &rec).await;
    {
        let rec = rec.clone();
        fake.serve_until("resync", async move { rec.seen("/app/n/c", "c1").await })
            .await;
    }
    let events = rec.all();
    let d = describe(&events);
    let from = d
        .iter()
        .position(|e| e == "-/app/n/c@3")
        .expect("old child gone");
    assert_eq!(
        d.get(from..from + 4).unwrap_or_default(),
        [
            "-/app/n/c@3".to_owned(),
            "-/app/n@2".to_owned(),
            format!("+/app/n@{new}"),
            format!("+/app/n/c@{child}"),
        ],
        "{d:?}"
    );
    assert_replays_to_the_server(&events, &cache, &fake);
}
