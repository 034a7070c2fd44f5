//! `WatchRegistry`: the session's watches, keyed by server path, and the event mapping.

use std::collections::HashMap;

use tokio::sync::oneshot;
use zk_proto::records::{EventType, WatcherType};

use super::outbox::{Event, Outbox};
use super::set_watches::{Batcher, List, SetWatchesBatch};
use crate::command::{WatchKind, WatchSender};
use crate::error::{Error, Result};
use crate::event::WatchedEvent;
use crate::event_queue::EventSender;

type Once = oneshot::Sender<Result<WatchedEvent>>;
type Stream = EventSender;

/// Kinds of server-side watch on one path: what the server holds for this connection, or
/// what the live watchers need.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sides {
    /// One-shot data watch (`getData`/`exists` with a watch; fires once on a data event).
    pub(crate) data: bool,
    /// One-shot child watch.
    pub(crate) child: bool,
    /// Persistent watch.
    pub(crate) persistent: bool,
    /// Persistent recursive watch.
    pub(crate) recursive: bool,
}

impl Sides {
    fn any(self) -> bool {
        self.data || self.child || self.persistent || self.recursive
    }

    /// Whether these server watches deliver everything `need` asks for. A persistent watch
    /// sees every event of its node, so it serves one-shot data, exist and child watchers
    /// too; a recursive one serves data and exist watchers (it gets no child events).
    fn serve(self, need: Sides) -> bool {
        (!need.data || self.data || self.persistent || self.recursive)
            && (!need.child || self.child || self.persistent)
            && (!need.persistent || self.persistent)
            && (!need.recursive || self.recursive)
    }

    /// What is left after a `removeWatches` of `kind`.
    fn less(mut self, kind: WatcherType) -> Sides {
        match kind {
            WatcherType::Children => self.child = false,
            WatcherType::Data => self.data = false,
            WatcherType::Any => self = Sides::default(),
            WatcherType::Persistent => self.persistent = false,
            WatcherType::PersistentRecursive => self.recursive = false,
        }
        self
    }

    /// Adds a watch the server accepted. ZooKeeper 3.8 keeps one mode per path and watcher
    /// (ZOOKEEPER-4466, fixed in 3.9): a persistent watch replaces the one-shot data and
    /// child watches of the path, a recursive one the one-shot data watch.
    fn add(&mut self, kind: WatchKind) {
        match kind {
            WatchKind::Data | WatchKind::Exist => self.data = true,
            WatchKind::Child => self.child = true,
            WatchKind::Persistent => {
                self.persistent = true;
                self.data = false;
                self.child = false;
            }
            WatchKind::PersistentRecursive => {
                self.recursive = true;
                self.data = false;
            }
        }
    }
}

/// The watchers of one server path, and the watches the server holds for them.
#[derive(Debug, Default)]
struct PathWatches {
    data: Vec<Once>,
    exist: Vec<Once>,
    child: Vec<Once>,
    persistent: Vec<Stream>,
    recursive: Vec<Stream>,
    /// What the server holds on this path for this connection, as far as we know: set when
    /// a watch is accepted, cleared when a one-shot fires or a removal is sent.
    server: Sides,
}

impl PathWatches {
    /// What the live watchers need from the server.
    fn needs(&self) -> Sides {
        Sides {
            data: !self.data.is_empty() || !self.exist.is_empty(),
            child: !self.child.is_empty(),
            persistent: !self.persistent.is_empty(),
            recursive: !self.recursive.is_empty(),
        }
    }

    fn prune(&mut self) {
        self.data.retain(|s| !s.is_closed());
        self.exist.retain(|s| !s.is_closed());
        self.child.retain(|s| !s.is_closed());
        self.persistent.retain(|s| !s.is_closed());
        self.recursive.retain(|s| !s.is_closed());
    }

    /// No watcher and no server watch: nothing to keep.
    fn is_empty(&self) -> bool {
        !self.needs().any() && !self.server.any()
    }
}

/// Every watch of the session: `(server path, kind) → senders`.
///
/// Watches are added only when the request that sets them succeeds (see
/// [`Session`](super::Session)); one-shot entries are removed when they fire. Dropped
/// watchers are pruned lazily: when a path gets a new watcher, when an event finds them, and
/// when SetWatches is built (a dropped watcher is not re-registered after a reconnect).
///
/// Beside the watchers, each path records which watches the server holds for us there, so
/// that [`reconcile`](Self::reconcile) can tell, whenever anything changed (a watcher
/// dropped, a registration completed, a one-shot fired), which server watches no live
/// watcher needs any more: the server never keeps notifying nobody.
#[derive(Debug, Default)]
pub(crate) struct WatchRegistry {
    paths: HashMap<String, PathWatches>,
    /// Number of live recursive registrations (0 means events need no ancestor walk).
    recursive: usize,
}

impl WatchRegistry {
    /// Adds a watcher; `on_server` when the server set a watch for it (not when the request
    /// went without one because a persistent watch of ours serves it, see
    /// [`serves_locally`](Self::serves_locally)).
    pub(crate) fn register(
        &mut self,
        path: String,
        kind: WatchKind,
        sender: WatchSender,
        on_server: bool,
    ) {
        let entry = self.paths.entry(path).or_default();
        entry.prune();
        if on_server {
            entry.server.add(kind);
        }
        match (kind, sender) {
            (WatchKind::Data, WatchSender::Once(s)) => entry.data.push(s),
            (WatchKind::Exist, WatchSender::Once(s)) => entry.exist.push(s),
            (WatchKind::Child, WatchSender::Once(s)) => entry.child.push(s),
            (WatchKind::Persistent, WatchSender::Stream(s)) => entry.persistent.push(s),
            (WatchKind::PersistentRecursive, WatchSender::Stream(s)) => {
                entry.recursive.push(s);
            }
            (kind, _) => debug_assert!(false, "sender type does not match {kind:?}"),
        }
        self.recount();
    }

    fn recount(&mut self) {
        self.recursive = self.paths.values().map(|p| p.recursive.len()).sum();
    }

    /// Whether any persistent or recursive watch is registered (SetWatches2 needed).
    pub(crate) fn has_persistent(&self) -> bool {
        self.paths
            .values()
            .any(|p| !p.persistent.is_empty() || !p.recursive.is_empty())
    }

    /// Delivers a server notification, using the Java client's mapping
    /// (`ZKWatchManager.materialize`): `NodeCreated`/`NodeDataChanged` fire data and exist
    /// watches, `NodeChildrenChanged` child watches, `NodeDeleted` all three. Persistent
    /// watches on the path see every node event; recursive watches on the path or any
    /// ancestor see all but `NodeChildrenChanged`. Returns how many watchers were told.
    ///
    /// Events carry the server path: each watcher strips its own client's chroot.
    pub(crate) fn fire(
        &mut self,
        event_type: EventType,
        server_path: &str,
        out: &mut Outbox,
    ) -> usize {
        let event = WatchedEvent {
            event_type,
            path: server_path.to_owned(),
        };
        let (data, exist, child) = match event_type {
            EventType::NodeCreated | EventType::NodeDataChanged => (true, true, false),
            EventType::NodeChildrenChanged => (false, false, true),
            EventType::NodeDeleted => (true, true, true),
            _ => return 0,
        };
        let mut told = self.fire_path(&event, (data, exist, child), out);
        if self.recursive > 0 && event_type != EventType::NodeChildrenChanged {
            told += self.fire_recursive(&event, out);
        }
        told
    }

    /// The watchers on the event's own path: the one-shots of the kinds the event fires
    /// (`data`, `exist`, `child`) and the persistent ones.
    fn fire_path(
        &mut self,
        event: &WatchedEvent,
        (data, exist, child): (bool, bool, bool),
        out: &mut Outbox,
    ) -> usize {
        let Some(entry) = self.paths.get_mut(&event.path) else {
            return 0;
        };
        // The server dropped the one-shot watches this event fired.
        entry.server.data &= !data;
        entry.server.child &= !child;
        let mut told = 0;
        for (fires, list) in [
            (data, &mut entry.data),
            (exist, &mut entry.exist),
            (child, &mut entry.child),
        ] {
            if !fires {
                continue;
            }
            for s in list.drain(..).filter(|s| !s.is_closed()) {
                told += 1;
                out.push(Event::Watch(s, Ok(event.clone())));
            }
        }
        told += tell_streams(&mut entry.persistent, event, out);
        if entry.is_empty() {
            self.paths.remove(&event.path);
        }
        told
    }

    /// The recursive watchers on the event's path and its ancestors.
    fn fire_recursive(&mut self, event: &WatchedEvent, out: &mut Outbox) -> usize {
        let mut told = 0;
        let mut pruned = false;
        for ancestor in self_and_ancestors(&event.path) {
            if let Some(entry) = self.paths.get_mut(ancestor) {
                let before = entry.recursive.len();
                told += tell_streams(&mut entry.recursive, event, out);
                pruned |= entry.recursive.len() != before;
            }
        }
        if pruned {
            self.paths.retain(|_, e| !e.is_empty());
            self.recount();
        }
        told
    }

    /// After a successful `removeWatches`: removes the local watches of `kind` on the path and
    /// tells each of them (`DataWatchRemoved`, `ChildWatchRemoved`, `PersistentWatchRemoved`),
    /// as the Java client does. Persistent streams end after that event.
    pub(crate) fn remove(&mut self, server_path: &str, kind: WatcherType, out: &mut Outbox) {
        let Some(entry) = self.paths.get_mut(server_path) else {
            return;
        };
        let path = server_path.to_owned();
        let mut tell = |v: Vec<Once>, event_type| {
            for s in v {
                let event = WatchedEvent {
                    event_type,
                    path: path.clone(),
                };
                out.push(Event::Watch(s, Ok(event)));
            }
        };
        let (data, child, persistent) = match kind {
            WatcherType::Children => (false, true, false),
            WatcherType::Data => (true, false, false),
            WatcherType::Any => (true, true, true),
            WatcherType::Persistent | WatcherType::PersistentRecursive => (false, false, true),
        };
        if data {
            tell(std::mem::take(&mut entry.data), EventType::DataWatchRemoved);
            tell(
                std::mem::take(&mut entry.exist),
                EventType::DataWatchRemoved,
            );
        }
        if child {
            tell(
                std::mem::take(&mut entry.child),
                EventType::ChildWatchRemoved,
            );
        }
        if persistent {
            let streams = std::mem::take(&mut entry.persistent)
                .into_iter()
                .chain(std::mem::take(&mut entry.recursive));
            for s in streams {
                let event = WatchedEvent {
                    event_type: EventType::PersistentWatchRemoved,
                    path: path.clone(),
                };
                out.push(Event::Stream(s.clone(), event));
                out.push(Event::StreamEnd(s, Error::Closed));
            }
        }
        if entry.is_empty() {
            self.paths.remove(server_path);
        }
        self.recount();
    }

    /// Whether a one-shot watcher of `kind` on `server_path` is served by a persistent or
    /// recursive watch the server already holds there. Its request then goes without a watch
    /// and the watcher is served from that watch's events: under ZooKeeper 3.8 a one-shot
    /// watch set on the path would replace the persistent one (ZOOKEEPER-4466) and, once
    /// fired, leave the persistent watcher deaf.
    pub(crate) fn serves_locally(&self, server_path: &str, kind: WatchKind) -> bool {
        let Some(entry) = self.paths.get(server_path) else {
            return false;
        };
        let server = entry.server;
        match kind {
            WatchKind::Data | WatchKind::Exist => server.persistent || server.recursive,
            WatchKind::Child => server.persistent,
            WatchKind::Persistent | WatchKind::PersistentRecursive => false,
        }
    }

    /// The server watches on `server_path` that no live watcher needs any more, as the
    /// `removeWatches` types to send; they count as gone from now on. Prunes dropped
    /// watchers first. Keeps a persistent watch that serves a live one-shot watcher.
    pub(crate) fn reconcile(&mut self, server_path: &str) -> Vec<WatcherType> {
        let Some(entry) = self.paths.get_mut(server_path) else {
            return Vec::new();
        };
        entry.prune();
        let need = entry.needs();
        let mut server = entry.server;
        let mut remove = Vec::new();
        if server.any() && !need.any() {
            server = Sides::default();
            remove.push(WatcherType::Any);
        } else {
            for watcher_type in [
                WatcherType::Data,
                WatcherType::Children,
                WatcherType::Persistent,
                WatcherType::PersistentRecursive,
            ] {
                let without = server.less(watcher_type);
                if without != server && without.serve(need) {
                    server = without;
                    remove.push(watcher_type);
                }
            }
        }
        entry.server = server;
        if entry.is_empty() {
            self.paths.remove(server_path);
        }
        self.recount();
        remove
    }

    /// A `removeWatches` of `kind` is being sent for `server_path`: the server will not hold
    /// those watches any more.
    pub(crate) fn forget(&mut self, server_path: &str, kind: WatcherType) {
        if let Some(entry) = self.paths.get_mut(server_path) {
            entry.server = entry.server.less(kind);
        }
    }

    /// Ends every watch with a terminal error (expiry, close, auth failure).
    pub(crate) fn fail_all(&mut self, err: &Error, out: &mut Outbox) {
        for (_, entry) in self.paths.drain() {
            for s in entry.data.into_iter().chain(entry.exist).chain(entry.child) {
                out.push(Event::Watch(s, Err(err.clone())));
            }
            for s in entry.persistent.into_iter().chain(entry.recursive) {
                out.push(Event::StreamEnd(s, err.clone()));
            }
        }
        self.recursive = 0;
    }

    /// The SetWatches (or SetWatches2, when persistent watches exist) packets that re-arm
    /// every live watch relative to `relative_zxid`, each listing at most `batch_bytes` of
    /// paths (Java's `SET_WATCHES_MAX_LENGTH` is 128 KiB), so each stays under the server's
    /// `jute.maxbuffer`.
    pub(crate) fn set_watches(
        &mut self,
        relative_zxid: i64,
        batch_bytes: usize,
    ) -> Vec<SetWatchesBatch> {
        self.rearm();
        if self.paths.is_empty() {
            return Vec::new();
        }
        let mut paths: Vec<(&String, &PathWatches)> = self.paths.iter().collect();
        paths.sort_by(|a, b| a.0.cmp(b.0));
        let mut batcher = Batcher::new(relative_zxid, self.has_persistent(), batch_bytes);
        for (path, entry) in paths {
            let lists = [
                (!entry.data.is_empty(), List::Data),
                (!entry.exist.is_empty(), List::Exist),
                (!entry.child.is_empty(), List::Child),
                (!entry.persistent.is_empty(), List::Persistent),
                (!entry.recursive.is_empty(), List::Recursive),
            ];
            for (_, list) in lists.into_iter().filter(|(present, _)| *present) {
                batcher.push(list, path);
            }
        }
        batcher.finish()
    }

    /// A new connection holds no watch until SetWatches registers the live ones, in the order
    /// the server adds them (one-shot, then persistent, then recursive): records that as
    /// what the server holds, and drops paths nobody watches any more.
    fn rearm(&mut self) {
        for entry in self.paths.values_mut() {
            entry.prune();
            let need = entry.needs();
            entry.server = Sides::default();
            for (needed, kind) in [
                (need.data, WatchKind::Data),
                (need.child, WatchKind::Child),
                (need.persistent, WatchKind::Persistent),
                (need.recursive, WatchKind::PersistentRecursive),
            ] {
                if needed {
                    entry.server.add(kind);
                }
            }
        }
        self.paths.retain(|_, e| !e.is_empty());
        self.recount();
    }
}

/// Sends `event` to every live stream in `streams`, dropping the closed ones; how many were
/// told.
fn tell_streams(streams: &mut Vec<Stream>, event: &WatchedEvent, out: &mut Outbox) -> usize {
    streams.retain(|s| !s.is_closed());
    for s in streams.iter() {
        out.push(Event::Stream(s.clone(), event.clone()));
    }
    streams.len()
}

/// `/a/b/c`, `/a/b`, `/a`, `/`.
fn self_and_ancestors(path: &str) -> impl Iterator<Item = &str> {
    let mut next = Some(path);
    std::iter::from_fn(move || {
        let current = next?;
        next = match current.rfind('/') {
            Some(0) if current.len() > 1 => Some("/"),
            Some(0) | None => None,
            Some(i) => Some(&current[..i]),
        };
        Some(current)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ancestors() {
        let v: Vec<_> = self_and_ancestors("/a/b/c").collect();
        assert_eq!(v, ["/a/b/c", "/a/b", "/a", "/"]);
        let v: Vec<_> = self_and_ancestors("/").collect();
        assert_eq!(v, ["/"]);
    }
}
