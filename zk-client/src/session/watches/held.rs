//! What a ZooKeeper server holds for this connection on one path, by the rules of 3.6 to 3.8,
//! and what follows for the client: which events the server sends, which the client must
//! derive, which watchers it serves without asking the server.
//!
//! A 3.8 server (`WatchManager`, `WatcherModeManager`) has two watch tables, data and child,
//! and keeps one mode per (connection, path) in each: none, standard (one-shot), persistent or
//! persistent recursive. Setting a watch on a path replaces the mode there (ZOOKEEPER-4466,
//! fixed in 3.9, which keeps several): `getData`/`exists` with a watch set the data table to
//! standard, `getChildren` the child table, `addWatch` sets both tables to its mode. A trigger
//! sends a connection at most one event, however many of its watches match; a standard watch
//! goes once it fired, a recursive one never sends `NodeChildrenChanged`. `removeWatches`
//! `Data`/`Children` clear one table whatever its mode, `Any` both.
//!
//! The client never asks for a mode that would replace one a live watcher relies on (see
//! [`Held::serves`]), so what it registers means the same on 3.9, where modes add up instead.

use zk_proto::records::{EventType, WatcherType};

use crate::command::WatchKind;

/// The mode of one (connection, path) in one of the server's two watch tables.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    #[default]
    None,
    /// A one-shot watch: goes once it fired.
    Standard,
    Persistent,
    PersistentRecursive,
}

/// What the server holds on one path for this connection, as far as the replies and events
/// seen so far tell.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Held {
    /// The data table (`getData`, `exists`, `addWatch`).
    pub(crate) data: Mode,
    /// The child table (`getChildren`, `addWatch`).
    pub(crate) child: Mode,
}

impl Held {
    pub(crate) fn any(self) -> bool {
        self.data != Mode::None || self.child != Mode::None
    }

    /// The server accepted a watch of `kind` on the path: the mode it sets replaces the one
    /// there.
    pub(crate) fn set(&mut self, kind: WatchKind) {
        match kind {
            WatchKind::Data | WatchKind::Exist => self.data = Mode::Standard,
            WatchKind::Child => self.child = Mode::Standard,
            WatchKind::Persistent => *self = Held::both(Mode::Persistent),
            WatchKind::PersistentRecursive => *self = Held::both(Mode::PersistentRecursive),
        }
    }

    fn both(mode: Mode) -> Held {
        Held {
            data: mode,
            child: mode,
        }
    }

    /// What is left after a `removeWatches` of `kind` (`Persistent` and
    /// `PersistentRecursive` are 3.9's: they remove that mode only).
    pub(crate) fn less(mut self, kind: WatcherType) -> Held {
        let clear = |mode: &mut Mode, only: Option<Mode>| {
            if only.is_none_or(|m| m == *mode) {
                *mode = Mode::None;
            }
        };
        match kind {
            WatcherType::Data => clear(&mut self.data, None),
            WatcherType::Children => clear(&mut self.child, None),
            WatcherType::Any => self = Held::default(),
            WatcherType::Persistent | WatcherType::PersistentRecursive => {
                let mode = if kind == WatcherType::Persistent {
                    Mode::Persistent
                } else {
                    Mode::PersistentRecursive
                };
                clear(&mut self.data, Some(mode));
                clear(&mut self.child, Some(mode));
            }
        }
        self
    }

    /// An event of `event_type` on the path itself arrived: the standard watches it fired
    /// are gone (created, changed and deleted fire the data table; children changed and
    /// deleted the child table).
    pub(crate) fn fired(&mut self, event_type: EventType) {
        let (data, child) = match event_type {
            EventType::NodeCreated | EventType::NodeDataChanged => (true, false),
            EventType::NodeChildrenChanged => (false, true),
            EventType::NodeDeleted => (true, true),
            _ => (false, false),
        };
        if data && self.data == Mode::Standard {
            self.data = Mode::None;
        }
        if child && self.child == Mode::Standard {
            self.child = Mode::None;
        }
    }

    /// Whether the client derives this path's `NodeChildrenChanged` from the recursive
    /// watch's `NodeCreated`/`NodeDeleted` of a direct child: the data table is recursive
    /// (so every child's creation and deletion arrives) and the child table sends no
    /// children event. A `NodeChildrenChanged` the server sends for the path anyway (3.9
    /// keeps an earlier persistent or one-shot watch beside the recursive one) is then the
    /// same change again and is dropped.
    pub(crate) fn derives_children(self) -> bool {
        self.data == Mode::PersistentRecursive
            && !matches!(self.child, Mode::Standard | Mode::Persistent)
    }

    /// Whether a watcher of `kind` is served by what the server holds (the request then
    /// asks for no watch, which would replace the mode there):
    ///
    /// * one-shot data and exist watchers by a persistent or recursive data table;
    /// * one-shot child watchers by a persistent child table, or a recursive data table
    ///   (children changes derived, deletion of the node sent);
    /// * persistent watchers by a recursive data table (children changes derived): their
    ///   `addWatch` is sent as recursive, which changes nothing on the server.
    pub(crate) fn serves(self, kind: WatchKind) -> bool {
        let lasting = |m: Mode| matches!(m, Mode::Persistent | Mode::PersistentRecursive);
        match kind {
            WatchKind::Data | WatchKind::Exist => lasting(self.data),
            WatchKind::Child => {
                self.child == Mode::Persistent || self.data == Mode::PersistentRecursive
            }
            WatchKind::Persistent => self.data == Mode::PersistentRecursive,
            WatchKind::PersistentRecursive => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn after(kinds: &[WatchKind]) -> Held {
        let mut held = Held::default();
        for kind in kinds {
            held.set(*kind);
        }
        held
    }

    #[test]
    fn a_mode_set_on_a_path_replaces_the_one_there() {
        use WatchKind::*;
        let r = Held::both(Mode::PersistentRecursive);
        assert_eq!(after(&[Persistent, PersistentRecursive]), r);
        assert_eq!(after(&[Child, Data, PersistentRecursive]), r);
        assert_eq!(
            after(&[PersistentRecursive, Child]),
            Held {
                data: Mode::PersistentRecursive,
                child: Mode::Standard
            }
        );
        assert_eq!(
            after(&[Persistent, Data]),
            Held {
                data: Mode::Standard,
                child: Mode::Persistent
            }
        );
    }

    #[test]
    fn children_changes_are_derived_under_a_recursive_data_table_only() {
        use WatchKind::*;
        assert!(after(&[Persistent, PersistentRecursive]).derives_children());
        assert!(!after(&[Persistent]).derives_children());
        assert!(!after(&[PersistentRecursive, Child]).derives_children());
        assert!(!after(&[Child]).derives_children());
    }

    #[test]
    fn which_watchers_the_held_modes_serve() {
        use WatchKind::*;
        let r = after(&[PersistentRecursive]);
        assert!([Data, Exist, Child, Persistent]
            .iter()
            .all(|k| r.serves(*k)));
        assert!(!r.serves(PersistentRecursive));
        let p = after(&[Persistent]);
        assert!([Data, Exist, Child].iter().all(|k| p.serves(*k)));
        assert!(!p.serves(Persistent) && !p.serves(PersistentRecursive));
        let one_shots = after(&[Data, Child]);
        assert!([Data, Exist, Child, Persistent, PersistentRecursive]
            .iter()
            .all(|k| !one_shots.serves(*k)));
    }

    #[test]
    fn one_shots_go_when_fired_and_removals_clear_tables() {
        use WatchKind::*;
        let mut h = after(&[Data, Child]);
        h.fired(EventType::NodeDataChanged);
        assert_eq!(h.data, Mode::None);
        assert_eq!(h.child, Mode::Standard);
        h.fired(EventType::NodeDeleted);
        assert!(!h.any());
        let mut p = after(&[Persistent]);
        p.fired(EventType::NodeDeleted);
        assert_eq!(p, after(&[Persistent]), "persistent modes stay");
        assert_eq!(p.less(WatcherType::Data).data, Mode::None);
        assert_eq!(p.less(WatcherType::Data).child, Mode::Persistent);
        assert!(!p.less(WatcherType::Any).any());
        assert!(!p.less(WatcherType::Persistent).any());
        assert_eq!(p.less(WatcherType::PersistentRecursive), p);
    }
}
