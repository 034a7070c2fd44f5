//! zk-client against a real 3.8 server: whatever mix of watchers one session sets on a path,
//! each gets what ZooKeeper 3.9 would give it, although a 3.8 server keeps one watch mode per
//! session and path (ZOOKEEPER-4466), and the server holds no watch once they are all dropped.
//!
//! `the_issue_20_scenario` is the report as filed; `after_a_reconnect_...` checks what
//! SetWatches catches up; `every_watcher_combination` runs every subset of {one-shot data,
//! one-shot exists, one-shot children, persistent, persistent recursive} on one path, set in
//! three orders, with and without a reconnect before the change, against six changes, and
//! compares what each watcher got with [`TABLE`].

use std::time::Duration;

use futures_util::future::join_all;
use futures_util::FutureExt;
use integration_tests::proxy::{Cut, Mode};
use integration_tests::{fresh_standalone, probe, Proxy, Server};
use zk_client::{
    AddWatchMode, Client, CreateOptions, Error, EventType, PersistentWatcher, WatchedEvent, Watcher,
};

#[tokio::test]
async fn the_issue_20_scenario() {
    let TestRoot { server, root, .. } = test_root("watch_issue_20").await;
    let c = connect(&format!("{}{root}", server.connect_string())).await;

    let (stat, exists) = c.exists_watch("/a").await.unwrap();
    assert!(stat.is_none());
    let mut persistent = c.add_watch("/a", AddWatchMode::Persistent).await.unwrap();
    let mut recursive = c
        .add_watch("/a", AddWatchMode::PersistentRecursive)
        .await
        .unwrap();
    c.create("/a", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let created = (EventType::NodeCreated, "/a".to_owned());
    assert_eq!(kind(within("exists", exists).await), created);
    assert_eq!(kind(within("persistent", persistent.next()).await), created);
    assert_eq!(kind(within("recursive", recursive.next()).await), created);

    let (_, _, data) = c.get_data_watch("/a").await.unwrap();
    let (_, _, children) = c.get_children_watch("/a").await.unwrap();
    let (_, exists) = c.exists_watch("/a").await.unwrap();
    c.create("/a/b", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let changed = (EventType::NodeChildrenChanged, "/a".to_owned());
    assert_eq!(kind(within("children", children).await), changed);
    assert_eq!(kind(within("persistent", persistent.next()).await), changed);
    assert_eq!(
        kind(within("recursive", recursive.next()).await),
        (EventType::NodeCreated, "/a/b".to_owned())
    );
    // The events of a write come before its reply: nothing else is on its way.
    c.sync("/").await.unwrap();
    assert!(data.now_or_never().is_none(), "data watcher fired");
    assert!(exists.now_or_never().is_none(), "exists watcher fired");
    assert!(persistent.next().now_or_never().is_none());
    assert!(recursive.next().now_or_never().is_none());
    c.close().await.unwrap();
}

#[tokio::test]
async fn after_a_reconnect_every_watcher_still_gets_its_events() {
    let TestRoot { server, root, .. } = test_root("watch_reconnect").await;
    let proxy = Proxy::start(server.addr()).await;
    let c = within(
        "connect",
        Client::builder(&format!("{}{root}", proxy.connect_string()))
            .session_timeout(Duration::from_secs(20))
            .connect(),
    )
    .await
    .unwrap();
    let other = connect(&format!("{}{root}", server.connect_string())).await;
    c.create("/a", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let mut persistent = c.add_watch("/a", AddWatchMode::Persistent).await.unwrap();
    let mut recursive = c
        .add_watch("/a", AddWatchMode::PersistentRecursive)
        .await
        .unwrap();
    let (_, _, data) = c.get_data_watch("/a").await.unwrap();
    let (_, _, children) = c.get_children_watch("/a").await.unwrap();

    proxy.set_mode(Mode::Refuse);
    proxy.cut(Cut::Reset);
    let mut states = c.watch();
    within("disconnected", states.wait_for(|s| !s.is_connected())).await;
    other.set_data("/a", b"while away", None).await.unwrap();
    proxy.set_mode(Mode::Pass);
    within("reconnected", c.wait_connected(Duration::from_secs(20)))
        .await
        .unwrap();
    // SetWatches lists the one-shot data watch: the server sees /a changed since and fires
    // it (as 3.9 does; the Java client hands that event to the path's persistent watchers
    // too).
    let changed = (EventType::NodeDataChanged, "/a".to_owned());
    assert_eq!(kind(within("data", data).await), changed);
    assert_eq!(kind(within("persistent", persistent.next()).await), changed);
    assert_eq!(kind(within("recursive", recursive.next()).await), changed);

    other
        .create("/a/b", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let children_changed = (EventType::NodeChildrenChanged, "/a".to_owned());
    assert_eq!(kind(within("children", children).await), children_changed);
    assert_eq!(
        kind(within("persistent", persistent.next()).await),
        children_changed
    );
    assert_eq!(
        kind(within("recursive", recursive.next()).await),
        (EventType::NodeCreated, "/a/b".to_owned())
    );
    c.sync("/").await.unwrap();
    assert!(persistent.next().now_or_never().is_none(), "no duplicate");
    assert!(recursive.next().now_or_never().is_none());
    c.close().await.unwrap();
    other.close().await.unwrap();
}

fn kind(event: zk_client::Result<WatchedEvent>) -> (EventType, String) {
    let event = event.unwrap();
    (event.event_type, event.path)
}

// ===== the combination matrix =====

/// The five kinds of watcher, in [`TABLE`]'s column order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `get_data_watch`.
    Data,
    /// `exists_watch`.
    Exists,
    /// `get_children_watch`.
    Children,
    /// `add_watch(Persistent)`.
    Persistent,
    /// `add_watch(PersistentRecursive)`.
    Recursive,
}

const KINDS: [Kind; 5] = [
    Kind::Data,
    Kind::Exists,
    Kind::Children,
    Kind::Persistent,
    Kind::Recursive,
];

/// The orders the watchers of a combination are set in: one-shots first (a 3.8 server then
/// replaces them with the persistent modes), persistent ones first, and a one-shot set
/// between the two persistent modes.
const ORDERS: [[Kind; 5]; 3] = [
    [
        Kind::Data,
        Kind::Exists,
        Kind::Children,
        Kind::Persistent,
        Kind::Recursive,
    ],
    [
        Kind::Recursive,
        Kind::Persistent,
        Kind::Children,
        Kind::Exists,
        Kind::Data,
    ],
    [
        Kind::Persistent,
        Kind::Data,
        Kind::Exists,
        Kind::Children,
        Kind::Recursive,
    ],
];

/// A write of a change's script, on paths relative to the combination's chroot.
#[derive(Debug, Clone, Copy)]
enum Write {
    Create(&'static str),
    Set(&'static str),
    Delete(&'static str),
}

/// One change: the nodes that exist before the watchers are set, then the writes. The
/// second write shows that a persistent watcher still hears after the one-shots fired.
struct Change {
    name: &'static str,
    before: &'static [&'static str],
    writes: &'static [Write],
}

/// What a watcher of one kind must get from a change.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// The call that sets it fails with `NoNode` (no watcher, as with any server).
    NoNode,
    /// These events, in this order, and nothing else.
    Events(&'static [(EventType, &'static str)]),
}

use integration_tests::prelude::*;
use EventType::{NodeChildrenChanged as Children, NodeCreated as Created};
use EventType::{NodeDataChanged as Changed, NodeDeleted as Deleted};
use Expect::{Events, NoNode};

const NOTHING: Expect = Events(&[]);

/// What ZooKeeper 3.9 gives each watcher on `/a`, whatever else the session watches there
/// (columns: data, exists, children, persistent, persistent recursive). One-shots fire once;
/// a persistent watch sees every event of `/a`, children changes included; a recursive one
/// sees created, changed and deleted events of `/a` and every descendant, never a children
/// change.
const TABLE: [(Change, [Expect; 5]); 6] = [
    (
        Change {
            name: "create",
            before: &[],
            writes: &[Write::Create("/a"), Write::Set("/a")],
        },
        [
            NoNode,
            Events(&[(Created, "/a")]),
            NoNode,
            Events(&[(Created, "/a"), (Changed, "/a")]),
            Events(&[(Created, "/a"), (Changed, "/a")]),
        ],
    ),
    (
        Change {
            name: "set",
            before: &["/a"],
            writes: &[Write::Set("/a"), Write::Set("/a")],
        },
        [
            Events(&[(Changed, "/a")]),
            Events(&[(Changed, "/a")]),
            NOTHING,
            Events(&[(Changed, "/a"), (Changed, "/a")]),
            Events(&[(Changed, "/a"), (Changed, "/a")]),
        ],
    ),
    (
        Change {
            name: "create child",
            before: &["/a"],
            writes: &[Write::Create("/a/b"), Write::Create("/a/c")],
        },
        [
            NOTHING,
            NOTHING,
            Events(&[(Children, "/a")]),
            Events(&[(Children, "/a"), (Children, "/a")]),
            Events(&[(Created, "/a/b"), (Created, "/a/c")]),
        ],
    ),
    (
        Change {
            name: "delete child",
            before: &["/a", "/a/b", "/a/c"],
            writes: &[Write::Delete("/a/b"), Write::Delete("/a/c")],
        },
        [
            NOTHING,
            NOTHING,
            Events(&[(Children, "/a")]),
            Events(&[(Children, "/a"), (Children, "/a")]),
            Events(&[(Deleted, "/a/b"), (Deleted, "/a/c")]),
        ],
    ),
    (
        Change {
            name: "create grandchild",
            before: &["/a", "/a/b"],
            writes: &[Write::Create("/a/b/c"), Write::Set("/a/b/c")],
        },
        [
            NOTHING,
            NOTHING,
            NOTHING,
            NOTHING,
            Events(&[(Created, "/a/b/c"), (Changed, "/a/b/c")]),
        ],
    ),
    (
        Change {
            name: "delete",
            before: &["/a"],
            writes: &[Write::Delete("/a"), Write::Create("/a")],
        },
        [
            Events(&[(Deleted, "/a")]),
            Events(&[(Deleted, "/a")]),
            Events(&[(Deleted, "/a")]),
            Events(&[(Deleted, "/a"), (Created, "/a")]),
            Events(&[(Deleted, "/a"), (Created, "/a")]),
        ],
    ),
];

/// One run: a subset of kinds set in one order, a reconnect or not, then one change.
#[derive(Debug, Clone)]
struct Combination {
    id: usize,
    kinds: Vec<Kind>,
    /// The connection is cut (through a proxy) once the watchers are set: the session
    /// reconnects and SetWatches re-arms them before the change.
    reconnect: bool,
    change: usize,
}

impl Combination {
    fn describe(&self) -> String {
        let reconnect = if self.reconnect { ", reconnect," } else { "" };
        format!(
            "{:?}{reconnect} then {}",
            self.kinds, TABLE[self.change].0.name
        )
    }
}

/// Every subset in every order (one run per distinct sequence), with and without a
/// reconnect, crossed with every change.
fn combinations() -> Vec<Combination> {
    let mut sequences: Vec<Vec<Kind>> = Vec::new();
    for subset in 0u32..32 {
        for order in ORDERS {
            let seq: Vec<Kind> = order
                .into_iter()
                .filter(|k| subset & (1 << column(*k)) != 0)
                .collect();
            if !sequences.contains(&seq) {
                sequences.push(seq);
            }
        }
    }
    let mut out = Vec::new();
    for reconnect in [false, true] {
        for kinds in &sequences {
            for change in 0..TABLE.len() {
                out.push(Combination {
                    id: out.len(),
                    kinds: kinds.clone(),
                    reconnect,
                    change,
                });
            }
        }
    }
    out
}

fn column(kind: Kind) -> usize {
    KINDS.iter().position(|k| *k == kind).unwrap_or(0)
}

/// Sessions running at once (the server allows 60 connections per address).
const BATCH: usize = 24;

#[tokio::test]
async fn every_watcher_combination() {
    let server = fresh_standalone().await;
    let admin = connect(&server.connect_string()).await;
    let all = combinations();
    let mut failures = Vec::new();
    let mut failed_combinations = 0;
    for batch in all.chunks(BATCH) {
        let runs = join_all(batch.iter().map(|c| run(&server, &admin, c))).await;
        let mut clients = Vec::new();
        for (combination, (client, proxy, problems)) in batch.iter().zip(runs) {
            if !problems.is_empty() {
                failed_combinations += 1;
                failures.push(format!(
                    "{}: {}",
                    combination.describe(),
                    problems.join("; ")
                ));
            }
            clients.push((client, proxy));
        }
        // Every watcher of the batch is gone (fired or dropped) and each client made a round
        // trip after: the server must hold no watch for these sessions.
        if let Err(left) = settle_no_watches(&server).await {
            failed_combinations += batch.len();
            failures.push(format!(
                "batch {}..={}: watches left on the server: {left}",
                batch[0].id,
                batch[batch.len() - 1].id
            ));
        }
        join_all(clients.iter().map(|(c, _)| c.close())).await;
    }
    eprintln!(
        "watch matrix: {} combinations, {} failed",
        all.len(),
        failed_combinations
    );
    assert!(
        failures.is_empty(),
        "{} of {} combinations failed:\n{}",
        failed_combinations,
        all.len(),
        failures.join("\n")
    );
}

/// A watcher of one kind, as set.
enum Set {
    Once(Watcher),
    Stream(PersistentWatcher),
    Failed(Error),
}

/// Runs one combination on a session of its own in `/m<id>`: what each watcher got, against
/// the table. Returns the client (still open, every watcher dropped), its proxy if it
/// reconnects, and the problems found.
async fn run(
    server: &Server,
    admin: &Client,
    c: &Combination,
) -> (Client, Option<Proxy>, Vec<String>) {
    let root = format!("/m{}", c.id);
    admin
        .create(&root, b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let proxy = if c.reconnect {
        Some(Proxy::start(server.addr()).await)
    } else {
        None
    };
    let hosts = proxy
        .as_ref()
        .map_or_else(|| server.connect_string(), Proxy::connect_string);
    let client = connect(&format!("{hosts}{root}")).await;
    let (change, expected) = &TABLE[c.change];
    for path in change.before {
        client
            .create(path, b"", &CreateOptions::persistent())
            .await
            .unwrap();
    }
    let mut set = Vec::new();
    for kind in &c.kinds {
        set.push((*kind, watch(&client, *kind).await));
    }
    if let Some(proxy) = &proxy {
        reconnect(&client, proxy).await;
    }
    for write in change.writes {
        match *write {
            Write::Create(p) => client
                .create(p, b"", &CreateOptions::persistent())
                .await
                .map(drop),
            Write::Set(p) => client.set_data(p, b"x", None).await.map(drop),
            Write::Delete(p) => client.delete(p, None).await,
        }
        .unwrap_or_else(|e| panic!("{}: {write:?}: {e}", c.describe()));
    }
    // A write's events reach the session before its reply, and are handed to the watchers
    // before the reply: one more round trip, and everything due is there.
    client.sync("/").await.unwrap();
    let mut problems = Vec::new();
    for (kind, watcher) in set {
        let got = received(watcher);
        let want = expected[column(kind)];
        let ok = match (&got, want) {
            (Err(Error::NoNode), NoNode) => true,
            (Ok(events), Events(want)) => {
                events.len() == want.len()
                    && events
                        .iter()
                        .zip(want)
                        .all(|(e, (t, p))| e.event_type == *t && e.path == *p)
            }
            _ => false,
        };
        if !ok {
            problems.push(format!("{kind:?} got {got:?}, want {want:?}"));
        }
    }
    // Every watcher is dropped now; a round trip orders the removals before the count.
    client.sync("/").await.unwrap();
    (client, proxy, problems)
}

/// Cuts the client's connection and waits (bounded) until it is connected again.
async fn reconnect(client: &Client, proxy: &Proxy) {
    let epoch = client.connection_epoch();
    proxy.cut(Cut::Reset);
    within("reconnect", async {
        while client.connection_epoch() == epoch || !client.state().is_connected() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

async fn watch(client: &Client, kind: Kind) -> Set {
    let result = match kind {
        Kind::Data => client
            .get_data_watch("/a")
            .await
            .map(|(_, _, w)| Set::Once(w)),
        Kind::Exists => client.exists_watch("/a").await.map(|(_, w)| Set::Once(w)),
        Kind::Children => client
            .get_children_watch("/a")
            .await
            .map(|(_, _, w)| Set::Once(w)),
        Kind::Persistent => client
            .add_watch("/a", AddWatchMode::Persistent)
            .await
            .map(Set::Stream),
        Kind::Recursive => client
            .add_watch("/a", AddWatchMode::PersistentRecursive)
            .await
            .map(Set::Stream),
    };
    result.unwrap_or_else(Set::Failed)
}

/// The events a watcher holds now (it is dropped after).
fn received(watcher: Set) -> Result<Vec<WatchedEvent>, Error> {
    match watcher {
        Set::Failed(e) => Err(e),
        Set::Once(w) => match w.now_or_never() {
            None => Ok(Vec::new()),
            Some(event) => event.map(|e| vec![e]),
        },
        Set::Stream(mut w) => {
            let mut events = Vec::new();
            // Bounded: no change here causes more than a few events.
            for _ in 0..16 {
                match w.next().now_or_never() {
                    None => break,
                    Some(event) => events.push(event?),
                }
            }
            Ok(events)
        }
    }
}

/// Waits (bounded) until the server holds no watch; else the count and `wchc` (the data
/// watches per session).
async fn settle_no_watches(server: &Server) -> Result<(), String> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let count = watch_count(server).await;
        if count == 0 {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            let wchc = probe::four_letter_word(server.addr(), "wchc", Duration::from_secs(5))
                .await
                .unwrap_or_default();
            return Err(format!("{count} (wchc: {})", wchc.replace('\n', " ")));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
