//! Watch records: notifications, SetWatches on reconnect, persistent watches, watch removal.

use crate::codec::record;
use crate::codes::open_code_enum;

open_code_enum! {
    /// The `type` of a [`WatcherEvent`] (`Watcher.Event.EventType`).
    #[derive(Default)]
    pub enum EventType {
        /// A session state change, not a node event.
        #[default]
        None = -1,
        /// The node was created.
        NodeCreated = 1,
        /// The node was deleted.
        NodeDeleted = 2,
        /// The node's data changed.
        NodeDataChanged = 3,
        /// The node's children changed.
        NodeChildrenChanged = 4,
        /// A data watch was removed (removeWatches).
        DataWatchRemoved = 5,
        /// A child watch was removed (removeWatches).
        ChildWatchRemoved = 6,
        /// A persistent watch was removed.
        PersistentWatchRemoved = 7,
    }
}

open_code_enum! {
    /// The `state` of a [`WatcherEvent`] (`Watcher.Event.KeeperState`).
    #[derive(Default)]
    pub enum KeeperState {
        /// Unused (deprecated in the Java client).
        Unknown = -1,
        /// The client is disconnected.
        Disconnected = 0,
        /// Unused (deprecated in the Java client).
        NoSyncConnected = 1,
        /// Connected to a read/write server.
        #[default]
        SyncConnected = 3,
        /// Authentication failed.
        AuthFailed = 4,
        /// Connected to a read-only server.
        ConnectedReadOnly = 5,
        /// SASL authentication succeeded.
        SaslAuthenticated = 6,
        /// The session expired.
        Expired = -112,
        /// The client closed the session.
        Closed = 7,
    }
}

record! {
    /// A watch notification: the body of a reply with xid [`crate::xid::NOTIFICATION`].
    pub struct WatcherEvent {
        /// What happened.
        pub event_type: EventType,
        /// The session state (always `SyncConnected` for node events).
        pub state: KeeperState,
        /// The node's path (server-side, chroot included).
        pub path: String,
    }
}

record! {
    /// Re-registers one-shot watches after a reconnect (xid -8, opcode 101). The server fires
    /// at once any watch whose node changed after `relative_zxid`.
    pub struct SetWatches {
        /// The last zxid the client saw in a reply.
        pub relative_zxid: i64,
        /// Paths with data watches.
        pub data_watches: Vec<String>,
        /// Paths with exist watches.
        pub exist_watches: Vec<String>,
        /// Paths with child watches.
        pub child_watches: Vec<String>,
    }
}

record! {
    /// [`SetWatches`] plus persistent watches (opcode 105), sent when any exist.
    pub struct SetWatches2 {
        /// The last zxid the client saw in a reply.
        pub relative_zxid: i64,
        /// Paths with data watches.
        pub data_watches: Vec<String>,
        /// Paths with exist watches.
        pub exist_watches: Vec<String>,
        /// Paths with child watches.
        pub child_watches: Vec<String>,
        /// Paths with persistent watches.
        pub persistent_watches: Vec<String>,
        /// Paths with persistent recursive watches.
        pub persistent_recursive_watches: Vec<String>,
    }
}

record! {
    /// `addWatch` request; the reply body is an `ErrorResponse`.
    pub struct AddWatchRequest {
        /// Node to watch (need not exist).
        pub path: String,
        /// [`AddWatchMode`] value.
        pub mode: i32,
    }
}

/// Modes of `addWatch` (`AddWatchMode.java`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AddWatchMode {
    /// Data and child events on the node, until removed.
    Persistent = 0,
    /// Data events on the node and every descendant, until removed.
    PersistentRecursive = 1,
}

record! {
    /// `checkWatches` request: does the server hold such a watch? Reply has no body.
    pub struct CheckWatchesRequest {
        /// Watched path.
        pub path: String,
        /// [`WatcherType`] value.
        pub watcher_type: i32,
    }
}

record! {
    /// `removeWatches` request; reply has no body (`NoWatcher` when none).
    pub struct RemoveWatchesRequest {
        /// Watched path.
        pub path: String,
        /// [`WatcherType`] value.
        pub watcher_type: i32,
    }
}

/// Watch kinds of `checkWatches`/`removeWatches` (`Watcher.WatcherType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WatcherType {
    /// Child watches.
    Children = 1,
    /// Data (and exist) watches.
    Data = 2,
    /// Any watch.
    Any = 3,
    /// Persistent watches (3.9 server constant; 3.8 removes them with `Any`).
    Persistent = 4,
    /// Persistent recursive watches (3.9 server constant).
    PersistentRecursive = 5,
}
