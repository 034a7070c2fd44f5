//! A cache of one node's children and their data, followed with a persistent recursive watch
//! across reconnects and the sessions of a [`SessionManager`](zk_client::SessionManager):
//! what `GroupMember` and the service cache read (CuratorCache's layout of requests, one
//! level deep).

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::watch;
use tokio_util::sync::{CancellationToken, DropGuard};
use tracing::debug;
use zk_client::{AddWatchMode, Client, EventType, Generations, PersistentWatcher, WatcherType};

use super::kernel::{name_of, parent_of, turns};

/// The children of the followed node: name → data.
pub(crate) type Children = Arc<BTreeMap<String, Bytes>>;

/// What the cache publishes.
#[derive(Debug, Clone, Default)]
pub(crate) struct Snapshot {
    pub(crate) children: Children,
    /// Whether a full read completed (on any session).
    pub(crate) loaded: bool,
    /// The cache stopped (closed, or its manager ended).
    pub(crate) ended: bool,
}

/// The cache's handle; dropping it stops the cache.
#[derive(Debug)]
pub(crate) struct ChildrenCache {
    rx: watch::Receiver<Snapshot>,
    _stop: DropGuard,
}

impl ChildrenCache {
    /// Starts following the children of `path` on the clients `clients` publishes.
    pub(crate) fn start(clients: Generations, path: String) -> ChildrenCache {
        let (tx, rx) = watch::channel(Snapshot::default());
        let stop = CancellationToken::new();
        tokio::spawn(follow(clients, path, tx, stop.clone()));
        ChildrenCache {
            rx,
            _stop: stop.drop_guard(),
        }
    }

    /// The children now.
    pub(crate) fn current(&self) -> Snapshot {
        self.rx.borrow().clone()
    }

    /// A receiver of every new snapshot.
    pub(crate) fn subscribe(&self) -> watch::Receiver<Snapshot> {
        self.rx.clone()
    }
}

/// Why following on one client stopped.
enum End {
    Stopped,
    SessionEnded,
}

async fn follow(
    mut clients: Generations,
    path: String,
    tx: watch::Sender<Snapshot>,
    stop: CancellationToken,
) {
    let mut client = clients.current().client.clone();
    for _ in turns() {
        match follow_on(&client, &path, &tx, &stop).await {
            End::Stopped => break,
            End::SessionEnded => {
                let next = tokio::select! {
                    _ = stop.cancelled() => break,
                    next = clients.changed() => next.live(),
                };
                match next {
                    Ok(generation) => client = generation.client,
                    Err(_) => break,
                }
            }
        }
    }
    tx.send_modify(|s| s.ended = true);
}

/// Follows on one client: add the watch, load everything, then apply events; load again
/// after each reconnect (events may have been missed while away) or a lagged stream.
async fn follow_on(
    client: &Client,
    path: &str,
    tx: &watch::Sender<Snapshot>,
    stop: &CancellationToken,
) -> End {
    let mut states = client.state_watcher();
    let mut watch: Option<PersistentWatcher> = None;
    let mut stale = true;
    let mut epoch = client.connection_epoch();
    for _ in turns() {
        if stop.is_cancelled() {
            if watch.is_some() {
                let _ = client.remove_watches(path, WatcherType::Any).await;
            }
            return End::Stopped;
        }
        let state = states.current();
        if state.is_terminal() {
            return End::SessionEnded;
        }
        if !state.is_connected() {
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = states.changed() => {}
            }
            continue;
        }
        if client.connection_epoch() != epoch {
            epoch = client.connection_epoch();
            stale = true;
        }
        if watch.is_none() {
            match client
                .add_watch(path, AddWatchMode::PersistentRecursive)
                .await
            {
                Ok(w) => watch = Some(w),
                Err(e) if e.is_terminal() => return End::SessionEnded,
                Err(e) => {
                    pause(stop, &e).await;
                    continue;
                }
            }
        }
        if stale {
            match load(client, path).await {
                Ok(children) => {
                    stale = false;
                    tx.send_modify(|s| {
                        s.children = Arc::new(children);
                        s.loaded = true;
                    });
                }
                Err(e) if e.is_terminal() => return End::SessionEnded,
                Err(e) => {
                    pause(stop, &e).await;
                    continue;
                }
            }
        }
        let Some(w) = watch.as_mut() else { continue };
        tokio::select! {
            _ = stop.cancelled() => {}
            _ = states.changed() => {}
            event = w.next() => match event {
                Ok(event) => {
                    if let Err(e) = apply(client, path, &event.path, event.event_type, tx).await {
                        if e.is_terminal() {
                            return End::SessionEnded;
                        }
                        stale = true;
                    }
                }
                Err(zk_client::Error::Lagged { .. }) => stale = true,
                Err(e) if e.is_terminal() => return End::SessionEnded,
                Err(e) => {
                    debug!(%path, error = %e, "children watch ended; adding it again");
                    watch = None;
                    stale = true;
                }
            },
        }
    }
    End::SessionEnded
}

/// After a failed request: a short pause before trying again, so an error that persists
/// (`NoAuth`, say) is not retried in a busy loop (CURATOR-729). A connection loss is noticed
/// by the state check on the next turn.
async fn pause(stop: &CancellationToken, error: &zk_client::Error) {
    debug!(error = %error, "children cache request failed; trying again shortly");
    tokio::select! {
        _ = stop.cancelled() => {}
        _ = tokio::time::sleep(RETRY_PAUSE) => {}
    }
}

/// Pause between two tries of a failed request.
const RETRY_PAUSE: std::time::Duration = std::time::Duration::from_millis(200);

/// Reads every child and its data (a child gone meanwhile is left out; a missing parent is
/// an empty list).
async fn load(client: &Client, path: &str) -> zk_client::Result<BTreeMap<String, Bytes>> {
    let names = match client.get_children(path).await {
        Ok(names) => names,
        Err(zk_client::Error::NoNode) => return Ok(BTreeMap::new()),
        Err(e) => return Err(e),
    };
    // Pipelined: every read is queued before the first answer is awaited.
    let reads: Vec<_> = names
        .iter()
        .map(|name| client.get_data(&child_path(path, name)))
        .collect();
    let mut children = BTreeMap::new();
    for (name, read) in names.into_iter().zip(reads) {
        match read.await {
            Ok((data, _)) => {
                children.insert(name, data);
            }
            Err(zk_client::Error::NoNode) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(children)
}

/// Applies one event of the recursive watch: only direct children matter; the followed node
/// itself created or deleted means a full reload.
async fn apply(
    client: &Client,
    path: &str,
    changed: &str,
    kind: EventType,
    tx: &watch::Sender<Snapshot>,
) -> zk_client::Result<()> {
    if changed == path {
        if matches!(kind, EventType::NodeDeleted) {
            tx.send_modify(|s| s.children = Arc::default());
        }
        return Ok(());
    }
    if parent_of(changed) != path {
        return Ok(()); // a grandchild
    }
    let name = name_of(changed).to_owned();
    match kind {
        EventType::NodeDeleted => {
            remove(tx, &name);
            Ok(())
        }
        EventType::NodeCreated | EventType::NodeDataChanged => {
            match client.get_data(changed).await {
                Ok((data, _)) => {
                    tx.send_if_modified(|s| {
                        if s.children.get(&name) == Some(&data) {
                            return false;
                        }
                        Arc::make_mut(&mut s.children).insert(name.clone(), data.clone());
                        true
                    });
                    Ok(())
                }
                Err(zk_client::Error::NoNode) => {
                    remove(tx, &name);
                    Ok(())
                }
                Err(e) => Err(e),
            }
        }
        _ => Ok(()),
    }
}

fn remove(tx: &watch::Sender<Snapshot>, name: &str) {
    tx.send_if_modified(|s| {
        if !s.children.contains_key(name) {
            return false;
        }
        Arc::make_mut(&mut s.children).remove(name);
        true
    });
}

/// `parent/name`, for the root too.
pub(crate) fn child_path(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}
