//! A scripted fake ZooKeeper tree for the queue kernel's fault tests: one session, a small
//! in-memory tree (creates, sequential names, listings, reads, deletes, data/exist/child
//! watches, ephemerals removed when the session closes), and faults chosen by the test: the
//! n-th request of an op code is lost with the connection (applied by the server or not),
//! or its node is deleted by "someone else" just before the server answers; or, once it is
//! answered, another session releases or revokes one of its nodes (on this connection or while
//! the client is away) or deletes ours. Watches live with the connection, as on a real
//! server: a lost connection drops them, and the client's `SetWatches` on the next one sets
//! them again, or fires them for what changed meanwhile. Watches are per session (one per
//! path and kind, however many times it is set), as on a real server.
//!
//! Every wait is bounded (`zk_test_support::within`); a request the tree does not model
//! fails the test.
#![allow(dead_code, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
use zk_proto::records::{
    Create2Response, CreateRequest, CreateResponse, DeleteRequest, EventType, ExistsRequest,
    ExistsResponse, GetChildren2Response, GetChildrenRequest, GetChildrenResponse, GetDataRequest,
    GetDataResponse, SetWatches, SetWatches2,
};
use zk_proto::{decode_exact, xid, ErrorCode, OpCode, Stat};
use zk_test_support::{encode, within, Conn, FakeServer};

pub(crate) const SESSION: i64 = 0x5e55;
pub(crate) const TIMEOUT_MS: i32 = 6_000;
/// How long the tree waits for a new session after an expiry (a session manager renews
/// within a few seconds).
const NEW_SESSION_WAIT: std::time::Duration = std::time::Duration::from_secs(10);
/// The session of contenders that are not the client under test.
pub(crate) const OTHER_SESSION: i64 = 0x0dd;

/// What happens to a chosen request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// The server applies the request, and the reply is lost with the connection.
    LoseReply,
    /// The request is lost with the connection before the server sees it.
    LoseRequest,
    /// Someone else deletes the request's node just before the server answers it.
    DeleteFirst,
    /// The request is lost with the connection, and the session expires before the client
    /// reconnects (its ephemeral nodes go; the reconnect is told the session expired).
    Expire,
    /// Once the request is answered, the session that made the `n`-th node of
    /// [`Tree::foreign`] deletes it (a release), notifying its watchers.
    ReleaseAfter(usize),
    /// Once the request is answered, the connection is lost, and the `n`-th foreign node is
    /// deleted before the client reconnects: its watchers learn of it from their
    /// `SetWatches`.
    ReleaseWhileDisconnected(usize),
    /// Once the request is answered, someone writes `__REVOKE__` into the `n`-th foreign node
    /// (Curator's revocation request to its holder), notifying its data watchers.
    RevokeAfter(usize),
    /// Once the request is answered, someone else deletes our nodes under the `n`-th foreign
    /// node's parent, then that node is released.
    DeleteOursThenRelease(usize),
}

/// The `nth` (from 0) request with op code `op` meets `fault`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan {
    pub(crate) op: OpCode,
    pub(crate) nth: usize,
    pub(crate) fault: Fault,
}

#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub(crate) data: Bytes,
    pub(crate) stat: Stat,
}

/// Notifications to send after a reply.
type Events = Vec<(EventType, String)>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WatchKind {
    Data,
    Exist,
    Child,
}

/// The tree and what the client did to it.
#[derive(Debug, Default)]
pub(crate) struct Tree {
    pub(crate) nodes: BTreeMap<String, Node>,
    /// Paths of every create request received (whether it applied or not).
    pub(crate) creates: Vec<String>,
    /// Paths of every delete request received.
    pub(crate) deletes: Vec<String>,
    /// Reconnects so far.
    pub(crate) reconnects: usize,
    /// New sessions served after an expiry.
    pub(crate) sessions: usize,
    /// Planned faults that happened so far.
    pub(crate) faults: usize,
    /// Notifications sent to the client.
    pub(crate) notified: usize,
    /// The nodes [`foreign`](Self::foreign) added, in order.
    pub(crate) foreigners: Vec<String>,
    seq: i32,
    zxid: i64,
    watches: Vec<(String, WatchKind)>,
    seen: BTreeMap<i32, usize>,
}

impl Tree {
    /// A tree holding `parents` (persistent, empty).
    pub(crate) fn with(parents: &[&str]) -> Tree {
        let mut tree = Tree::default();
        for p in parents {
            tree.put(p, Bytes::new(), 0);
        }
        tree
    }

    fn put(&mut self, path: &str, data: Bytes, owner: i64) -> Stat {
        self.zxid += 1;
        let stat = Stat {
            czxid: self.zxid,
            mzxid: self.zxid,
            ephemeral_owner: owner,
            data_length: i32::try_from(data.len()).unwrap(),
            ..Stat::default()
        };
        self.nodes.insert(
            path.to_owned(),
            Node {
                data,
                stat: stat.clone(),
            },
        );
        stat
    }

    /// Adds an ephemeral sequential node `<parent>/<name><seq>` of another session (a
    /// contender ahead of ours); returns its path.
    pub(crate) fn foreign(&mut self, parent: &str, name: &str) -> String {
        self.seq += 1;
        let path = format!("{parent}/{name}{:010}", self.seq);
        self.put(&path, Bytes::from_static(b"other"), OTHER_SESSION);
        self.foreigners.push(path.clone());
        path
    }

    /// Requests with op code `op` received so far.
    pub(crate) fn requests(&self, op: OpCode) -> usize {
        self.seen.get(&op.as_i32()).copied().unwrap_or(0)
    }

    /// Sets a watch (once per path and kind, as a real server does for one session).
    fn watch(&mut self, path: &str, kind: WatchKind) {
        if !self.watches.iter().any(|(p, k)| p == path && *k == kind) {
            self.watches.push((path.to_owned(), kind));
        }
    }

    /// Writes `data` into `path` (someone else's setData); returns the notifications to send.
    pub(crate) fn set(&mut self, path: &str, data: &'static [u8]) -> Events {
        self.zxid += 1;
        let zxid = self.zxid;
        let Some(node) = self.nodes.get_mut(path) else {
            return Vec::new();
        };
        node.data = Bytes::from_static(data);
        node.stat.mzxid = zxid;
        node.stat.version += 1;
        node.stat.data_length = i32::try_from(data.len()).unwrap();
        self.fire(path, &[WatchKind::Data, WatchKind::Exist])
            .into_iter()
            .map(|p| (EventType::NodeDataChanged, p))
            .collect()
    }

    /// The `SetWatches` of a new connection: each watch is set again, or fired at once when
    /// its node changed since `relative_zxid` (a data watch on a node now gone or written
    /// since, an exist watch on a node that now exists). Child watches are set again (the
    /// tree keeps no pzxid).
    fn set_watches(
        &mut self,
        relative_zxid: i64,
        data: &[String],
        exist: &[String],
        child: &[String],
    ) -> Events {
        let mut events = Vec::new();
        for path in data {
            match self.nodes.get(path) {
                None => events.push((EventType::NodeDeleted, path.clone())),
                Some(n) if n.stat.mzxid > relative_zxid => {
                    events.push((EventType::NodeDataChanged, path.clone()));
                }
                Some(_) => self.watch(path, WatchKind::Data),
            }
        }
        for path in exist {
            if self.nodes.contains_key(path) {
                events.push((EventType::NodeCreated, path.clone()));
            } else {
                self.watch(path, WatchKind::Exist);
            }
        }
        for path in child {
            if self.nodes.contains_key(path) || path == "/" {
                self.watch(path, WatchKind::Child);
            } else {
                events.push((EventType::NodeDeleted, path.clone()));
            }
        }
        events
    }

    /// What a fault that acts once the request is answered does to the tree: the
    /// notifications to send.
    fn after_reply(&mut self, fault: Fault) -> Events {
        match fault {
            Fault::ReleaseAfter(n) | Fault::ReleaseWhileDisconnected(n) => {
                let path = self.foreigners[n].clone();
                self.remove(&path)
            }
            Fault::RevokeAfter(n) => {
                let path = self.foreigners[n].clone();
                self.set(&path, b"__REVOKE__")
            }
            Fault::DeleteOursThenRelease(n) => {
                let path = self.foreigners[n].clone();
                let parent = path.rsplit_once('/').map_or("/", |(p, _)| p).to_owned();
                let mut events = Vec::new();
                for name in self.ours(&parent) {
                    events.extend(self.remove(&format!("{parent}/{name}")));
                }
                events.extend(self.remove(&path));
                events
            }
            _ => Vec::new(),
        }
    }

    /// The children of `parent` (names).
    pub(crate) fn children(&self, parent: &str) -> Option<Vec<String>> {
        if parent != "/" && !self.nodes.contains_key(parent) {
            return None;
        }
        let prefix = if parent == "/" {
            "/".to_owned()
        } else {
            format!("{parent}/")
        };
        Some(
            self.nodes
                .keys()
                .filter_map(|k| k.strip_prefix(&prefix))
                .filter(|rest| !rest.is_empty() && !rest.contains('/'))
                .map(str::to_owned)
                .collect(),
        )
    }

    /// Ephemeral nodes under `parent` owned by our session.
    pub(crate) fn ours(&self, parent: &str) -> Vec<String> {
        self.children(parent)
            .unwrap_or_default()
            .into_iter()
            .filter(|n| {
                self.nodes
                    .get(&format!("{parent}/{n}"))
                    .is_some_and(|node| node.stat.ephemeral_owner == SESSION)
            })
            .collect()
    }

    fn fire(&mut self, path: &str, kinds: &[WatchKind]) -> Vec<String> {
        let mut fired = Vec::new();
        self.watches.retain(|(p, k)| {
            let hit = p == path && kinds.contains(k);
            if hit {
                fired.push(p.clone());
            }
            !hit
        });
        fired
    }

    /// Deletes `path`; returns the notifications to send.
    pub(crate) fn remove(&mut self, path: &str) -> Events {
        if self.nodes.remove(path).is_none() {
            return Vec::new();
        }
        self.zxid += 1;
        let mut events = Vec::new();
        for p in self.fire(path, &[WatchKind::Data, WatchKind::Exist]) {
            events.push((EventType::NodeDeleted, p));
        }
        if let Some((parent, _)) = path.rsplit_once('/') {
            let parent = if parent.is_empty() { "/" } else { parent };
            for p in self.fire(parent, &[WatchKind::Child]) {
                events.push((EventType::NodeChildrenChanged, p));
            }
        }
        events
    }

    fn create(&mut self, r: &CreateRequest) -> Result<(String, Stat, Events), ErrorCode> {
        let (parent, _) = r.path.rsplit_once('/').ok_or(ErrorCode::BadArguments)?;
        let parent = if parent.is_empty() { "/" } else { parent };
        if parent != "/" && !self.nodes.contains_key(parent) {
            return Err(ErrorCode::NoNode);
        }
        // Flags: 1 ephemeral, 2 sequential, 3 both, 4 container.
        let sequential = r.flags == 2 || r.flags == 3;
        let ephemeral = r.flags == 1 || r.flags == 3;
        let path = if sequential {
            self.seq += 1;
            format!("{}{:010}", r.path, self.seq)
        } else {
            r.path.clone()
        };
        if self.nodes.contains_key(&path) {
            return Err(ErrorCode::NodeExists);
        }
        let stat = self.put(&path, r.data.clone(), if ephemeral { SESSION } else { 0 });
        let mut events: Vec<(EventType, String)> = self
            .fire(&path, &[WatchKind::Exist])
            .into_iter()
            .map(|p| (EventType::NodeCreated, p))
            .collect();
        for p in self.fire(parent, &[WatchKind::Child]) {
            events.push((EventType::NodeChildrenChanged, p));
        }
        Ok((path, stat, events))
    }

    /// The fault planned for this request, counting it.
    fn fault_for(&mut self, op: i32, plans: &[Plan]) -> Option<Fault> {
        let n = self.seen.entry(op).or_insert(0);
        let this = *n;
        *n += 1;
        let fault = plans
            .iter()
            .find(|p| p.op.as_i32() == op && p.nth == this)
            .map(|p| p.fault);
        self.faults += usize::from(fault.is_some());
        fault
    }
}

/// The path a request names, for the ops that name one.
fn path_of(op: OpCode, body: &Bytes) -> Option<String> {
    match op {
        OpCode::Exists => decode_exact::<ExistsRequest>(body.clone())
            .ok()
            .map(|r| r.path),
        OpCode::GetData => decode_exact::<GetDataRequest>(body.clone())
            .ok()
            .map(|r| r.path),
        OpCode::Delete => decode_exact::<DeleteRequest>(body.clone())
            .ok()
            .map(|r| r.path),
        OpCode::GetChildren | OpCode::GetChildren2 => {
            decode_exact::<GetChildrenRequest>(body.clone())
                .ok()
                .map(|r| r.path)
        }
        _ => None,
    }
}

/// Answers one request against the tree: (error, body, notifications to send after).
fn answer(tree: &mut Tree, op: OpCode, body: Bytes) -> (ErrorCode, Bytes, Events) {
    let none = Vec::new;
    match op {
        OpCode::Create | OpCode::Create2 | OpCode::CreateContainer => {
            let r: CreateRequest = decode_exact(body).unwrap();
            tree.creates.push(r.path.clone());
            match tree.create(&r) {
                Ok((path, stat, events)) => {
                    let body = if op == OpCode::Create {
                        encode(&CreateResponse { path })
                    } else {
                        encode(&Create2Response { path, stat })
                    };
                    (ErrorCode::Ok, body, events)
                }
                Err(e) => (e, Bytes::new(), none()),
            }
        }
        OpCode::GetChildren | OpCode::GetChildren2 => {
            let r: GetChildrenRequest = decode_exact(body).unwrap();
            let Some(children) = tree.children(&r.path) else {
                return (ErrorCode::NoNode, Bytes::new(), none());
            };
            if r.watch {
                tree.watch(&r.path, WatchKind::Child);
            }
            let body = if op == OpCode::GetChildren {
                encode(&GetChildrenResponse { children })
            } else {
                let stat = tree
                    .nodes
                    .get(&r.path)
                    .map(|n| n.stat.clone())
                    .unwrap_or_default();
                encode(&GetChildren2Response { children, stat })
            };
            (ErrorCode::Ok, body, none())
        }
        OpCode::Exists => {
            let r: ExistsRequest = decode_exact(body).unwrap();
            let found = tree.nodes.get(&r.path).map(|n| n.stat.clone());
            if r.watch {
                let kind = if found.is_some() {
                    WatchKind::Data
                } else {
                    WatchKind::Exist
                };
                tree.watch(&r.path, kind);
            }
            match found {
                Some(stat) => (ErrorCode::Ok, encode(&ExistsResponse { stat }), none()),
                None => (ErrorCode::NoNode, Bytes::new(), none()),
            }
        }
        OpCode::GetData => {
            let r: GetDataRequest = decode_exact(body).unwrap();
            match tree.nodes.get(&r.path).cloned() {
                Some(node) => {
                    if r.watch {
                        tree.watch(&r.path, WatchKind::Data);
                    }
                    let reply = GetDataResponse {
                        data: node.data,
                        stat: node.stat,
                    };
                    (ErrorCode::Ok, encode(&reply), none())
                }
                None => (ErrorCode::NoNode, Bytes::new(), none()),
            }
        }
        OpCode::Delete => {
            let r: DeleteRequest = decode_exact(body).unwrap();
            tree.deletes.push(r.path.clone());
            match tree.nodes.get(&r.path) {
                None => (ErrorCode::NoNode, Bytes::new(), none()),
                Some(n) if r.version != -1 && n.stat.version != r.version => {
                    (ErrorCode::BadVersion, Bytes::new(), none())
                }
                Some(_) if tree.children(&r.path).is_some_and(|c| !c.is_empty()) => {
                    (ErrorCode::NotEmpty, Bytes::new(), none())
                }
                Some(_) => {
                    let events = tree.remove(&r.path);
                    (ErrorCode::Ok, Bytes::new(), events)
                }
            }
        }
        OpCode::RemoveWatches | OpCode::CheckWatches => (ErrorCode::Ok, Bytes::new(), none()),
        other => panic!("the fake tree got an unexpected {other:?}"),
    }
}

/// Removes every ephemeral node of our session (its end).
fn end_session(tree: &mut Tree) {
    let ephemerals: Vec<String> = tree
        .nodes
        .iter()
        .filter(|(_, n)| n.stat.ephemeral_owner == SESSION)
        .map(|(p, _)| p.clone())
        .collect();
    for p in ephemerals {
        tree.nodes.remove(&p);
    }
}

/// Serves the session on `conn` (and on every reconnect to `server`) until the client closes
/// the session or hangs up for good.
pub(crate) async fn serve(
    server: FakeServer,
    mut conn: Conn,
    tree: Arc<Mutex<Tree>>,
    plans: Vec<Plan>,
) {
    let mut expired = false;
    loop {
        let mut lost = false;
        // A foreign node to delete while the client is away.
        let mut release_while_away = None;
        while let Some(req) = conn.read_non_ping().await {
            if req.xid == xid::SET_WATCHES {
                let events = {
                    let mut tree = tree.lock().unwrap();
                    let (zxid, data, exist, child) = match OpCode::try_from(req.op) {
                        Ok(OpCode::SetWatches2) => {
                            let r: SetWatches2 = decode_exact(req.body).unwrap();
                            (
                                r.relative_zxid,
                                r.data_watches,
                                r.exist_watches,
                                r.child_watches,
                            )
                        }
                        _ => {
                            let r: SetWatches = decode_exact(req.body).unwrap();
                            (
                                r.relative_zxid,
                                r.data_watches,
                                r.exist_watches,
                                r.child_watches,
                            )
                        }
                    };
                    tree.set_watches(zxid, &data, &exist, &child)
                };
                conn.reply(req.xid, 0, ErrorCode::Ok, &[]).await;
                tree.lock().unwrap().notified += events.len();
                for (event, path) in events {
                    conn.notify(event, &path).await;
                }
                continue;
            }
            let op = OpCode::try_from(req.op).expect("a known op code");
            if op == OpCode::CloseSession {
                end_session(&mut tree.lock().unwrap());
                conn.reply(req.xid, 0, ErrorCode::Ok, &[]).await;
                return;
            }
            let fault = tree.lock().unwrap().fault_for(req.op, &plans);
            let (err, body, events) = {
                let mut tree = tree.lock().unwrap();
                match fault {
                    Some(Fault::LoseRequest) => {
                        lost = true;
                        break;
                    }
                    Some(Fault::Expire) => {
                        end_session(&mut tree);
                        expired = true;
                        lost = true;
                        break;
                    }
                    Some(Fault::DeleteFirst) => {
                        if let Some(path) = path_of(op, &req.body) {
                            tree.remove(&path);
                        }
                        answer(&mut tree, op, req.body)
                    }
                    _ => answer(&mut tree, op, req.body),
                }
            };
            if fault == Some(Fault::LoseReply) {
                lost = true;
                break;
            }
            let zxid = tree.lock().unwrap().zxid;
            conn.reply(req.xid, zxid, err, &body).await;
            let after = match fault {
                Some(Fault::ReleaseWhileDisconnected(n)) => {
                    release_while_away = Some(n);
                    lost = true;
                    Vec::new()
                }
                Some(fault) => tree.lock().unwrap().after_reply(fault),
                None => Vec::new(),
            };
            tree.lock().unwrap().notified += events.len() + after.len();
            for (event, path) in events.into_iter().chain(after) {
                conn.notify(event, &path).await;
            }
            if lost {
                break;
            }
        }
        if !lost {
            return;
        }
        drop(conn);
        {
            // The watches were the connection's; what changes now reaches the client only
            // through its `SetWatches`.
            let mut tree = tree.lock().unwrap();
            tree.watches.clear();
            if let Some(n) = release_while_away {
                tree.after_reply(Fault::ReleaseWhileDisconnected(n));
            }
        }
        // The client resumes the same session on a new connection.
        conn = server.accept().await;
        let resume = within("reconnect", conn.read_connect()).await;
        assert_eq!(resume.session_id, SESSION, "the session is resumed");
        if expired {
            // A zero timeout: the session is gone (as a real server answers).
            conn.send_connect(0, 0, false).await;
            tree.lock().unwrap().reconnects += 1;
            // A session manager comes back with a new session (served under the same id, so
            // `ours` counts its nodes; the old session's ephemerals are gone); a plain
            // client does not, and then serving is over.
            let Ok(next) = tokio::time::timeout(NEW_SESSION_WAIT, server.accept()).await else {
                return;
            };
            conn = next;
            let req = within("new session", conn.read_connect()).await;
            assert_eq!(req.session_id, 0, "a new session after the expiry");
            conn.send_connect(SESSION, TIMEOUT_MS, false).await;
            tree.lock().unwrap().sessions += 1;
            expired = false;
            continue;
        }
        conn.send_connect(SESSION, TIMEOUT_MS, false).await;
        tree.lock().unwrap().reconnects += 1;
    }
}

/// Starts serving `tree` on the first connection (accepted as a new session) and returns the
/// serving task.
pub(crate) async fn start(
    server: FakeServer,
    tree: Arc<Mutex<Tree>>,
    plans: Vec<Plan>,
) -> tokio::task::JoinHandle<()> {
    let (conn, req) = server.accept_session(SESSION, TIMEOUT_MS).await;
    assert_eq!(req.session_id, 0, "a new session");
    tokio::spawn(serve(server, conn, tree, plans))
}

/// Encodes nothing: a helper for replies without a body.
pub(crate) fn empty() -> Bytes {
    BytesMut::new().freeze()
}
