//! Helpers of the cache tests: a fresh recursive read of the server, the cache's snapshot in
//! the same shape, event replay, and waiting for a marker write to reach the cache.
#![allow(dead_code, unreachable_pub)]

pub mod curator;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;
use zk_client::{Client, Error};
use zk_recipes::cache::{Cache, CacheEvent, CacheEvents, CacheState, ChildData};

/// What the comparisons look at: data and the fields that follow it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// The node's data.
    pub data: Vec<u8>,
    /// Its creation zxid (a node deleted and created again has a new one).
    pub czxid: i64,
    /// Its data version.
    pub version: i32,
}

/// A tree as the comparisons see it: every node's path and what was seen of it.
pub type Tree = BTreeMap<String, Seen>;

fn seen(c: &ChildData) -> Seen {
    Seen {
        data: c.data.as_deref().unwrap_or_default().to_vec(),
        czxid: c.stat.czxid,
        version: c.stat.version,
    }
}

fn join(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

/// A fresh recursive read of `root` (empty when it does not exist), down to `max_depth`
/// levels below it when given. A connection loss on the way starts the read again (within
/// [`LIMIT`](crate::kit::LIMIT)); any other error fails the test.
pub async fn server_tree(client: &Client, root: &str, max_depth: Option<usize>) -> Tree {
    let end = Instant::now() + crate::kit::LIMIT;
    loop {
        match try_server_tree(client, root, max_depth).await {
            Ok(tree) => return tree,
            Err((path, e)) if e.is_retryable() && Instant::now() < end => {
                eprintln!("server_tree: {path}: {e}; reading again");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err((path, e)) => panic!("reading {path}: {e}"),
        }
    }
}

async fn try_server_tree(
    client: &Client,
    root: &str,
    max_depth: Option<usize>,
) -> Result<Tree, (String, Error)> {
    let mut out = Tree::new();
    let mut todo = vec![(root.to_owned(), 0usize)];
    let mut reads = 0;
    while let Some((path, depth)) = todo.pop() {
        reads += 1;
        assert!(reads < 1_000_000, "tree read does not end");
        let (data, stat) = match client.get_data(&path).await {
            Ok(r) => r,
            Err(Error::NoNode) => continue,
            Err(e) => return Err((path, e)),
        };
        out.insert(
            path.clone(),
            Seen {
                data: data.to_vec(),
                czxid: stat.czxid,
                version: stat.version,
            },
        );
        if max_depth.is_some_and(|m| depth >= m) {
            continue;
        }
        match client.get_children(&path).await {
            Ok(names) => todo.extend(names.iter().map(|n| (join(&path, n), depth + 1))),
            Err(Error::NoNode) => {}
            Err(e) => return Err((path, e)),
        }
    }
    Ok(out)
}

/// The cache's snapshot in the comparison's shape.
/// The cache's view, in the shape of [`server_tree`].
pub fn cache_tree(cache: &Cache) -> Tree {
    snapshot_tree(&cache.entries())
}

/// A snapshot of entries, in the shape of [`server_tree`].
pub fn snapshot_tree(entries: &[ChildData]) -> Tree {
    entries.iter().map(|c| (c.path.clone(), seen(c))).collect()
}

/// Human-readable differences between two trees (empty when equal).
pub fn diff(expected: &Tree, got: &Tree) -> Vec<String> {
    let mut out = Vec::new();
    for (p, e) in expected {
        match got.get(p) {
            None => out.push(format!("missing {p}")),
            Some(g) if g != e => out.push(format!("differs {p}: want {e:?} got {g:?}")),
            _ => {}
        }
    }
    for p in got.keys() {
        if !expected.contains_key(p) {
            out.push(format!("extra {p}"));
        }
    }
    out
}

/// Applies `events` to `tree`, checking each one against what it replaces (see [`Replay`]).
/// Returns the problems found.
pub fn replay(tree: &mut Tree, events: &[CacheEvent]) -> Vec<String> {
    let mut r = Replay::new(std::mem::take(tree));
    let problems = r.apply(events);
    *tree = r.tree;
    problems
}

/// A consumer's view rebuilt from a cache's events, checked event by event:
/// * a `Created` for a path not there, a `Changed`/`Deleted` whose old node is the one there;
/// * no live node reported gone: a `Created` never has the czxid of the last `Deleted` of its
///   path (a node deleted and created again on the server has a new czxid; issue 29);
/// * no node without its parent: a `Created` node's parent is there (unless the tree was
///   empty: the cache's root), and a `Deleted` node has no children left.
pub struct Replay {
    /// The tree after the events applied so far.
    pub tree: Tree,
    /// The czxid of the last `Deleted` of each path.
    deleted: BTreeMap<String, i64>,
    /// Events applied so far (numbers the problems).
    applied: usize,
}

impl Replay {
    /// Starts from the cache's first snapshot.
    pub fn new(start: Tree) -> Replay {
        Replay {
            tree: start,
            deleted: BTreeMap::new(),
            applied: 0,
        }
    }

    /// How many events were applied so far.
    pub fn applied(&self) -> usize {
        self.applied
    }

    /// Applies `events`; returns the problems found.
    pub fn apply(&mut self, events: &[CacheEvent]) -> Vec<String> {
        let mut problems = Vec::new();
        for ev in events {
            let i = self.applied;
            self.applied += 1;
            match ev {
                CacheEvent::Created(n) => {
                    if self.deleted.get(&n.path) == Some(&n.stat.czxid) {
                        problems.push(format!(
                            "event {i}: Created {} with czxid {} after a Deleted of the same node (a live node was reported gone)",
                            n.path, n.stat.czxid
                        ));
                    }
                    let parent = n
                        .path
                        .rsplit_once('/')
                        .map(|(p, _)| if p.is_empty() { "/" } else { p });
                    if !self.tree.is_empty() && parent.is_some_and(|p| !self.tree.contains_key(p)) {
                        problems.push(format!("event {i}: Created {} without its parent", n.path));
                    }
                    if self.tree.insert(n.path.clone(), seen(n)).is_some() {
                        problems.push(format!("event {i}: Created {} already there", n.path));
                    }
                }
                CacheEvent::Changed { old, new } => {
                    let before = self.tree.insert(new.path.clone(), seen(new));
                    if before.as_ref() != Some(&seen(old)) {
                        problems.push(format!(
                            "event {i}: Changed {} old {:?} but had {before:?}",
                            new.path,
                            seen(old)
                        ));
                    }
                }
                CacheEvent::Deleted(n) => {
                    let before = self.tree.remove(&n.path);
                    if before.as_ref() != Some(&seen(n)) {
                        problems.push(format!(
                            "event {i}: Deleted {} ({:?}) but had {before:?}",
                            n.path,
                            seen(n)
                        ));
                    }
                    let below = format!("{}/", n.path.trim_end_matches('/'));
                    if let Some(child) = self.tree.range(below.clone()..).next().map(|(p, _)| p) {
                        if child.starts_with(&below) {
                            problems.push(format!(
                                "event {i}: Deleted {} while {child} is still there",
                                n.path
                            ));
                        }
                    }
                    self.deleted.insert(n.path.clone(), n.stat.czxid);
                }
                CacheEvent::Initialized => {}
                CacheEvent::Lagged(n) => problems.push(format!("event {i}: lagged {n}")),
                other => problems.push(format!("event {i}: unknown {other:?}")),
            }
        }
        problems
    }
}

/// Collects a stream's events in the background until it ends.
#[derive(Clone, Default)]
pub struct Recorder {
    events: Arc<Mutex<Vec<CacheEvent>>>,
}

impl Recorder {
    /// Records every event of `stream` until it ends.
    pub fn start(mut stream: CacheEvents) -> (Recorder, tokio::task::JoinHandle<()>) {
        let rec = Recorder::default();
        let events = rec.events.clone();
        let task = tokio::spawn(async move {
            while let Some(ev) = stream.next().await {
                events.lock().unwrap().push(ev);
            }
        });
        (rec, task)
    }

    /// How many events so far.
    pub fn len(&self) -> usize {
        self.events.lock().unwrap().len()
    }

    /// Whether no event came yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The events from number `from` on.
    pub fn since(&self, from: usize) -> Vec<CacheEvent> {
        self.events.lock().unwrap()[from..].to_vec()
    }

    /// Every event so far.
    pub fn all(&self) -> Vec<CacheEvent> {
        self.since(0)
    }

    /// Waits until an event satisfying `pred` was recorded at or after `from`.
    pub async fn wait_for(&self, from: usize, limit: Duration, pred: impl Fn(&CacheEvent) -> bool) {
        let end = Instant::now() + limit;
        loop {
            if self.since(from).iter().any(&pred) {
                return;
            }
            assert!(
                Instant::now() < end,
                "event not seen within {limit:?}; got {:#?}",
                self.since(from)
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// Waits until the cache is synced and its `marker` node holds `value` (the last write of a
/// batch: every earlier write of the batch is then in the snapshot).
pub async fn wait_marker(cache: &Cache, marker: &str, value: &[u8], limit: Duration) {
    let end = Instant::now() + limit;
    loop {
        let there = cache
            .get(marker)
            .and_then(|n| n.data)
            .is_some_and(|d| &d[..] == value);
        if there && cache.state() == CacheState::Synced {
            return;
        }
        assert!(
            Instant::now() < end,
            "cache did not reach marker {:?} within {limit:?} (state {:?}, marker {:?})",
            String::from_utf8_lossy(value),
            cache.state(),
            cache.get(marker).and_then(|n| n.data)
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits until the cache is in `state`.
pub async fn wait_state(cache: &Cache, state: CacheState, limit: Duration) {
    let end = Instant::now() + limit;
    while cache.state() != state {
        assert!(
            Instant::now() < end,
            "cache never reached {state:?} (is {:?})",
            cache.state()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
