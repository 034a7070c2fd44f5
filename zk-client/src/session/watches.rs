//! `WatchRegistry`: the session's watches, keyed by server path, and the event mapping.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};

use tokio::sync::oneshot;
use zk_proto::records::{EventType, WatcherType};

use super::outbox::{Event, Outbox};
use super::set_watches::{Batcher, List, Rearm, SetWatchesBatch};
use crate::command::{WatchKind, WatchSender};
use crate::error::{Error, Result};
use crate::event::{Arrival, WatchedEvent};
use crate::event_queue::EventSender;

mod held;

use held::{Held, Mode};
/// The registry's path keys: paths the application chose to watch (a notification only looks
/// one up), so SipHash's flooding resistance buys nothing, and Fx hashes a lock node's path in
/// a tenth of the instructions (5-6 hashes per lock acquisition).
type BuildPathHasher = rustc_hash::FxBuildHasher;

type Once = oneshot::Sender<Result<WatchedEvent>>;
type Stream = EventSender;

/// How a watcher's request goes to the server (see [`WatchRegistry::route`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// With its watch: the server sets it.
    Server,
    /// Without a watch: what the server holds on the path already serves it.
    Locally,
    /// A persistent `addWatch` sent as recursive (what the server holds there already, so
    /// nothing changes on the server); the recursive watch serves it.
    AsRecursive,
}

/// What the live watchers of one path need.
#[derive(Debug, Default, Clone, Copy)]
struct Need {
    data: bool,
    child: bool,
    persistent: bool,
    recursive: bool,
}

impl Need {
    fn any(self) -> bool {
        self.data || self.child || self.persistent || self.recursive
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
    /// What the server holds on this path for this connection: set when a watch is
    /// accepted, cleared when a one-shot fires or a removal is sent.
    held: Held,
    /// Watches asked of the server on this path and not yet answered, in order.
    asked: VecDeque<WatchKind>,
}

impl PathWatches {
    /// What the live watchers need.
    fn needs(&self) -> Need {
        Need {
            data: !self.data.is_empty() || !self.exist.is_empty(),
            child: !self.child.is_empty(),
            persistent: !self.persistent.is_empty(),
            recursive: !self.recursive.is_empty(),
        }
    }

    /// What the server will hold once the watches asked for are set.
    fn projected(&self) -> Held {
        let mut held = self.held;
        for kind in &self.asked {
            held.set(*kind);
        }
        held
    }

    fn prune(&mut self) {
        self.data.retain(|s| !s.is_closed());
        self.exist.retain(|s| !s.is_closed());
        self.child.retain(|s| !s.is_closed());
        self.persistent.retain(|s| !s.is_closed());
        self.recursive.retain(|s| !s.is_closed());
    }

    /// The one-shot lists whose watchers nothing held or asked on the server arms: served
    /// locally by a lasting registration the server then refused (see
    /// [`WatchRegistry::answered`]). Their mode is counted as held from here on.
    fn arm_unserved(&mut self) -> Vec<List> {
        let projected = self.projected();
        let mut lists = Vec::new();
        if projected.data == Mode::None {
            if !self.data.is_empty() {
                lists.push(List::Data);
            }
            if !self.exist.is_empty() {
                lists.push(List::Exist);
            }
        }
        let child_armed =
            projected.child != Mode::None || projected.data == Mode::PersistentRecursive;
        if !child_armed && !self.child.is_empty() {
            lists.push(List::Child);
        }
        for list in &lists {
            self.held.set(match list {
                List::Child => WatchKind::Child,
                _ => WatchKind::Data,
            });
        }
        lists
    }

    /// No watcher, no server watch, nothing asked: nothing to keep.
    fn is_empty(&self) -> bool {
        !self.needs().any() && !self.held.any() && self.asked.is_empty()
    }
}

/// What a notification did: how many watchers were told, and the path whose children
/// change was derived from it, if any (its watchers may need no server watch any more).
#[derive(Debug, Default)]
pub(crate) struct Fired {
    pub(crate) told: usize,
    pub(crate) derived: Option<String>,
}

/// Every watch of the session: `(server path, kind) → senders`, and what the server holds
/// for each path.
///
/// Watches are added only when the request that sets them succeeds (see
/// [`Session`](super::Session)); one-shot entries are removed when they fire. Dropped
/// watchers are pruned lazily: when a path gets a new watcher, when an event finds them, and
/// when SetWatches is built (a dropped watcher is not re-registered after a reconnect).
///
/// # One registration per path
///
/// ZooKeeper up to 3.8 keeps one watch mode per session and path (ZOOKEEPER-4466; see
/// `held.rs`): a watch set on a path replaces the one there. So the registry keeps, per path,
/// what the server holds, and sets on the server only what covers every local watcher of
/// the path without replacing what another relies on:
///
/// * a recursive watcher: the recursive mode, which serves every other kind on the path;
///   the children changes of the path (which a recursive watch never sends) are derived from
///   the `NodeCreated`/`NodeDeleted` of a direct child, and a real one (3.9 sends it when it
///   also holds an older watch) is dropped as the same change;
/// * else a persistent watcher: the persistent mode, which serves the one-shots;
/// * else the one-shot data and child watches.
///
/// A watcher whose needs the path's registration already covers asks the server for
/// nothing ([`route`](Self::route)). The strongest registration stays while any watcher of
/// the path is left; [`reconcile`](Self::reconcile) removes what none needs, whenever
/// anything changed (a watcher dropped, a registration completed, a one-shot fired): the
/// server never keeps notifying nobody.
#[derive(Debug, Default)]
pub(crate) struct WatchRegistry {
    paths: HashMap<String, PathWatches, BuildPathHasher>,
    /// Number of live recursive registrations (0 means events need no ancestor walk).
    recursive: usize,
    /// The SetWatches packets that re-armed this connection, until all are answered. The
    /// events before a packet's reply include the server catching up on what changed while
    /// disconnected: for that packet's paths nothing is derived and nothing dropped.
    rearming: Rearm,
}

impl WatchRegistry {
    /// A request setting a watcher of `kind` on `server_path` is being written: whether it
    /// asks the server for the watch, or what the path's registration (with the watches
    /// asked for before it) already serves it.
    pub(crate) fn route(&mut self, server_path: &str, kind: WatchKind) -> Route {
        let entry = match self.paths.get_mut(server_path) {
            Some(entry) => entry,
            None => self.paths.entry(server_path.to_owned()).or_default(),
        };
        let held = entry.projected();
        if held.serves(kind) {
            if kind == WatchKind::Persistent {
                Route::AsRecursive
            } else {
                Route::Locally
            }
        } else {
            entry.asked.push_back(kind);
            Route::Server
        }
    }

    /// The reply to a request that set a watcher: `registered` is the kind of watch it
    /// left (none when it failed; an exist watch when `exists` found no node), `on_server`
    /// whether it asked the server for it (see [`route`](Self::route)).
    ///
    /// A one-shot that went without its watch because a lasting registration asked before it
    /// would serve it is left unarmed when the server refuses that registration (an
    /// `addWatch` answered with an error; the server answers in order, so that reply comes
    /// first). The SetWatches returned arms such one-shots on this connection, relative to
    /// `relative_zxid` (the zxid of this reply: the server fires at once if the node changed
    /// since the read); it is empty otherwise.
    pub(crate) fn answered(
        &mut self,
        path: String,
        registered: Option<WatchKind>,
        sender: WatchSender,
        on_server: bool,
        relative_zxid: i64,
    ) -> Vec<SetWatchesBatch> {
        let mut slot = match self.paths.entry(path) {
            Entry::Occupied(slot) => slot,
            Entry::Vacant(slot) => slot.insert_entry(PathWatches::default()),
        };
        let entry = slot.get_mut();
        let before = entry.recursive.len();
        entry.prune();
        if on_server {
            entry.asked.pop_front();
        }
        if let Some(kind) = registered {
            if on_server {
                entry.held.set(kind);
            } else if kind == WatchKind::Persistent {
                // Sent as recursive (`Route::AsRecursive`): the server holds that mode now,
                // whatever became of the registration that routed it so.
                entry.held.set(WatchKind::PersistentRecursive);
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
        }
        let after = entry.recursive.len();
        let unserved = entry.arm_unserved();
        let batches = if unserved.is_empty() {
            Vec::new()
        } else {
            let mut batcher = Batcher::new(relative_zxid, false, usize::MAX);
            for list in unserved {
                batcher.push(list, slot.key());
            }
            batcher.finish()
        };
        if slot.get().is_empty() {
            slot.remove();
        }
        self.recounted(before, after);
        batches
    }

    /// Counts the recursive watchers of every path again: once per reconnect, never per
    /// watch (that made setting N watches cost O(N²)).
    fn recount(&mut self) {
        #[cfg(test)]
        tests::PATHS_RECOUNTED.with(|n| n.set(n.get() + self.paths.len()));
        self.recursive = self.paths.values().map(|p| p.recursive.len()).sum();
    }

    /// One path's recursive watchers went from `before` to `after`.
    fn recounted(&mut self, before: usize, after: usize) {
        self.recursive = (self.recursive + after).saturating_sub(before);
    }

    /// Delivers a server notification, using the Java client's mapping
    /// (`ZKWatchManager.materialize`): `NodeCreated`/`NodeDataChanged` fire data and exist
    /// watches, `NodeChildrenChanged` child watches, `NodeDeleted` all three. Persistent
    /// watches on the path see every node event; recursive watches on the path or any
    /// ancestor see all but `NodeChildrenChanged`.
    ///
    /// Where the parent's registration is recursive, a `NodeCreated`/`NodeDeleted` is also
    /// the parent's `NodeChildrenChanged`, delivered after it (the server's order); a real
    /// `NodeChildrenChanged` on such a path is that same change again and is dropped.
    ///
    /// Events carry the server path: each watcher strips its own client's chroot.
    pub(crate) fn fire(
        &mut self,
        event_type: EventType,
        server_path: &str,
        zxid: Option<i64>,
        out: &mut Outbox,
    ) -> Fired {
        let (data, exist, child) = match event_type {
            EventType::NodeCreated | EventType::NodeDataChanged => (true, true, false),
            EventType::NodeChildrenChanged => (false, false, true),
            EventType::NodeDeleted => (true, true, true),
            _ => return Fired::default(),
        };
        if event_type == EventType::NodeChildrenChanged && self.derives_children(server_path) {
            return Fired::default();
        }
        let event = WatchedEvent {
            arrival: Arrival::default(),
            event_type,
            path: server_path.to_owned(),
            zxid,
        };
        let mut told = self.fire_path(&event, (data, exist, child), out);
        if self.recursive > 0 && event_type != EventType::NodeChildrenChanged {
            told += self.fire_recursive(&event, out);
        }
        let mut derived = None;
        if matches!(event_type, EventType::NodeCreated | EventType::NodeDeleted) {
            if let Some(parent) = parent(server_path).filter(|p| self.derives_children(p)) {
                // The same transaction as the event it is derived from.
                let changed = WatchedEvent {
                    arrival: Arrival::default(),
                    event_type: EventType::NodeChildrenChanged,
                    path: parent.to_owned(),
                    zxid,
                };
                told += self.fire_path(&changed, (false, false, true), out);
                derived = Some(changed.path);
            }
        }
        Fired { told, derived }
    }

    /// Whether `server_path`'s children changes are derived (see [`fire`](Self::fire)):
    /// never while the server may still be catching up on it (its SetWatches packet unanswered).
    fn derives_children(&self, server_path: &str) -> bool {
        !self.rearming.catching_up(server_path)
            && self
                .paths
                .get(server_path)
                .is_some_and(|e| e.held.derives_children())
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
        entry.held.fired(event.event_type);
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
        for ancestor in self_and_ancestors(&event.path) {
            if let Some(entry) = self.paths.get_mut(ancestor) {
                let before = entry.recursive.len();
                told += tell_streams(&mut entry.recursive, event, out);
                let after = entry.recursive.len();
                if after != before {
                    if entry.is_empty() {
                        self.paths.remove(ancestor);
                    }
                    self.recounted(before, after);
                }
            }
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
        let before = entry.recursive.len();
        let path = server_path.to_owned();
        let mut tell = |v: Vec<Once>, event_type| {
            for s in v {
                let event = WatchedEvent {
                    arrival: Arrival::default(),
                    event_type,
                    path: path.clone(),
                    zxid: None,
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
                    arrival: Arrival::default(),
                    event_type: EventType::PersistentWatchRemoved,
                    path: path.clone(),
                    zxid: None,
                };
                out.push(Event::Stream(s.clone(), event));
                out.push(Event::StreamEnd(s, Error::Closed));
            }
        }
        let after = entry.recursive.len();
        if entry.is_empty() {
            self.paths.remove(server_path);
        }
        self.recounted(before, after);
    }

    /// The server watches on `server_path` that no live watcher needs any more, as the
    /// `removeWatches` types to send; they count as gone from now on. Prunes dropped
    /// watchers first.
    ///
    /// Only `Data`, `Children` and `Any` are sent (3.8 knows no other type): `Any` when no
    /// watcher of the path is left, else `Data`/`Children` for a one-shot watch nobody waits
    /// for. A persistent or recursive registration stays while any watcher of the path is
    /// left, since it serves them all (going down to a weaker one could lose events on
    /// the way).
    pub(crate) fn reconcile(&mut self, server_path: &str) -> Vec<WatcherType> {
        let remove = self.unneeded(server_path);
        let Some(entry) = self.paths.get_mut(server_path) else {
            return remove;
        };
        for kind in &remove {
            entry.held = entry.held.less(*kind);
        }
        if entry.is_empty() {
            self.paths.remove(server_path);
        }
        remove
    }

    /// What [`reconcile`](Self::reconcile) would remove on `server_path`, without counting
    /// it as gone: the session asks this first, in constant time, and looks through its
    /// queues for a request that sets a watch on the path only when something would be
    /// removed. Prunes dropped watchers, and drops the path when nothing is left of it.
    pub(crate) fn unneeded(&mut self, server_path: &str) -> Vec<WatcherType> {
        let Some(entry) = self.paths.get_mut(server_path) else {
            return Vec::new();
        };
        let before = entry.recursive.len();
        entry.prune();
        let after = entry.recursive.len();
        let need = entry.needs();
        let held = entry.held;
        let mut remove = Vec::new();
        if !need.any() {
            if held.any() {
                remove.push(WatcherType::Any);
            }
        } else {
            if held.data == Mode::Standard && !need.data {
                remove.push(WatcherType::Data);
            }
            if held.child == Mode::Standard && !need.child {
                remove.push(WatcherType::Children);
            }
        }
        if entry.is_empty() {
            self.paths.remove(server_path);
        }
        self.recounted(before, after);
        remove
    }

    /// A `removeWatches` of `kind` is being sent for `server_path`: the server will not hold
    /// those watches any more.
    pub(crate) fn forget(&mut self, server_path: &str, kind: WatcherType) {
        if let Some(entry) = self.paths.get_mut(server_path) {
            entry.held = entry.held.less(kind);
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
        self.rearming = Rearm::default();
    }

    /// The SetWatches (or SetWatches2, when persistent watches exist) packets that re-arm
    /// every live watch relative to `relative_zxid` on a new connection, each listing at most
    /// `batch_bytes` of paths (Java's `SET_WATCHES_MAX_LENGTH` is 128 KiB), so each stays
    /// under the server's `jute.maxbuffer`.
    ///
    /// Per path: every one-shot watcher (so the server fires those whose node changed while
    /// disconnected, as 3.9 does), then the recursive registration if a recursive watcher is
    /// left, else the persistent one if a persistent watcher is: the server applies the lists
    /// in that order, the last mode replacing the others on 3.8.
    pub(crate) fn set_watches(
        &mut self,
        relative_zxid: i64,
        batch_bytes: usize,
    ) -> Vec<SetWatchesBatch> {
        self.rearm();
        self.rearming = Rearm::default();
        if self.paths.is_empty() {
            return Vec::new();
        }
        let mut paths: Vec<(&String, &PathWatches)> = self.paths.iter().collect();
        paths.sort_by(|a, b| a.0.cmp(b.0));
        let v2 = paths.iter().any(|(_, e)| {
            let need = e.needs();
            need.persistent || need.recursive
        });
        let mut batcher = Batcher::new(relative_zxid, v2, batch_bytes);
        for (path, entry) in paths {
            let need = entry.needs();
            let lists = [
                (!entry.data.is_empty(), List::Data),
                (!entry.exist.is_empty(), List::Exist),
                (need.child, List::Child),
                (need.persistent && !need.recursive, List::Persistent),
                (need.recursive, List::Recursive),
            ];
            for (_, list) in lists.into_iter().filter(|(present, _)| *present) {
                batcher.push(list, path);
            }
            batcher.end_path(path);
        }
        let (batches, rearming) = batcher.finish_rearm();
        self.rearming = rearming;
        batches
    }

    /// The server answered one SetWatches packet.
    pub(crate) fn set_watches_answered(&mut self) {
        self.rearming.answered();
    }

    /// A new connection holds no watch until SetWatches registers the live ones, in the order
    /// the server adds them (see [`set_watches`](Self::set_watches)): records that as what
    /// the server holds, and drops paths nobody watches any more. Nothing asked on the old
    /// connection is answered now.
    fn rearm(&mut self) {
        for entry in self.paths.values_mut() {
            entry.prune();
            entry.asked.clear();
            let need = entry.needs();
            entry.held = Held::default();
            for (needed, kind) in [
                (need.data, WatchKind::Data),
                (need.child, WatchKind::Child),
                (need.persistent && !need.recursive, WatchKind::Persistent),
                (need.recursive, WatchKind::PersistentRecursive),
            ] {
                if needed {
                    entry.held.set(kind);
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

/// The parent of a server path: `/a` for `/a/b`, `/` for `/a`, none for `/`.
fn parent(path: &str) -> Option<&str> {
    match path.rfind('/') {
        Some(0) if path.len() > 1 => Some("/"),
        Some(0) | None => None,
        Some(i) => Some(&path[..i]),
    }
}

/// `/a/b/c`, `/a/b`, `/a`, `/`.
fn self_and_ancestors(path: &str) -> impl Iterator<Item = &str> {
    std::iter::successors(Some(path), |p| parent(p))
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

    thread_local! {
        /// Paths visited by [`WatchRegistry::recount`] on this thread.
        pub(super) static PATHS_RECOUNTED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// Sets `n` one-shot data watches on distinct paths, as the session does for `n`
    /// `getData` calls with a watch that succeed; the paths the registry recounted meanwhile.
    fn arm(n: usize) -> usize {
        let mut reg = WatchRegistry::default();
        let mut watchers = Vec::with_capacity(n);
        PATHS_RECOUNTED.with(|c| c.set(0));
        for i in 0..n {
            let path = format!("/w/{i:06}");
            assert_eq!(reg.route(&path, WatchKind::Data), Route::Server);
            let (tx, rx) = oneshot::channel();
            watchers.push(rx);
            reg.answered(path, Some(WatchKind::Data), WatchSender::Once(tx), true, 0);
        }
        assert_eq!(reg.paths.len(), n);
        PATHS_RECOUNTED.with(std::cell::Cell::get)
    }

    #[test]
    fn setting_a_watch_costs_the_same_however_many_the_session_holds() {
        // Counting every path's recursive watchers again for each watch set made setting N
        // watches visit N²/2 paths (10,000 watches took seconds, 100,000 minutes); the count
        // now follows each change, and no watch set walks the others.
        for n in [1, 100, 5_000] {
            assert_eq!(arm(n), 0, "paths recounted while setting {n} watches");
        }
    }

    #[test]
    fn the_recursive_count_follows_every_change() {
        let mut reg = WatchRegistry::default();
        let count = |reg: &WatchRegistry| reg.paths.values().map(|p| p.recursive.len()).sum();
        let mut readers = Vec::new();
        for path in ["/a", "/a", "/b"] {
            let route = reg.route(path, WatchKind::PersistentRecursive);
            let (tx, rx) = crate::event_queue::event_queue(8);
            readers.push(rx);
            reg.answered(
                path.to_owned(),
                Some(WatchKind::PersistentRecursive),
                WatchSender::Stream(tx),
                route == Route::Server,
                0,
            );
        }
        assert_eq!(reg.recursive, 3);
        // A reader of /a goes away: pruned when /a is reconciled.
        readers.remove(0);
        assert!(reg.reconcile("/a").is_empty(), "/a is still watched");
        assert_eq!((reg.recursive, count(&reg)), (2, 2));
        // Removed on the server: /b's watcher is told and gone.
        let mut out = Outbox::default();
        reg.remove("/b", WatcherType::Any, &mut out);
        assert_eq!((reg.recursive, count(&reg)), (1, 1));
        // The last reader goes away: an event finds it closed.
        readers.clear();
        let fired = reg.fire(EventType::NodeDataChanged, "/a/x", None, &mut out);
        assert_eq!(fired.told, 0);
        assert_eq!((reg.recursive, count(&reg)), (0, 0));
    }
}
