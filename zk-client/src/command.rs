//! What client handles send to the driver: commands, requests and their watch actions.

use bytes::{Bytes, BytesMut};
use tokio::sync::oneshot;
use zk_proto::records::WatcherType;
use zk_proto::OpCode;

use crate::error::Result;
use crate::event::{Arrival, WatchedEvent};
use crate::event_queue::EventSender;

/// A request's answer, with where it arrived among the client's replies and watch events.
pub(crate) type Answer = (Arrival, Result<Bytes>);

/// Where a request's [`Answer`] goes.
pub(crate) type ReplySender = oneshot::Sender<Answer>;

/// A message from a client handle to the driver task.
#[derive(Debug)]
pub(crate) enum Command {
    /// A request (including `closeSession`, and `auth`, which the session also keeps and
    /// replays on every reconnect).
    Request(Request),
    /// A [`Watcher`](crate::Watcher) or [`PersistentWatcher`](crate::PersistentWatcher) on
    /// this server path was dropped before its event.
    DropWatch { path: String },
    /// Replace the host list (`Client::update_hosts`), handled by the driver: the reply says
    /// whether the client leaves its server to even out the load.
    UpdateHosts {
        hosts: Vec<String>,
        reply: oneshot::Sender<bool>,
    },
}

/// An encoded request body with its metadata.
///
/// The body is encoded by the caller; the session only adds the length and the
/// `RequestHeader` in front of it. It stays a `BytesMut` (never frozen): freezing a
/// partly filled buffer allocates the shared header `Bytes` needs, for bytes that are only
/// ever copied once into the outgoing buffer. The metadata (opcode, watch action) travels beside the
/// bytes so they are never re-parsed.
#[derive(Debug)]
pub(crate) struct Request {
    pub(crate) op: OpCode,
    pub(crate) body: BytesMut,
    pub(crate) reply: ReplySender,
    pub(crate) watch: Option<WatchAction>,
    /// The request's `zk_request` debug span (disabled unless a subscriber wants it).
    pub(crate) span: tracing::Span,
}

impl Request {
    /// A request and the receiver of its reply.
    pub(crate) fn new(
        op: OpCode,
        body: BytesMut,
        watch: Option<WatchAction>,
    ) -> (Request, oneshot::Receiver<Answer>) {
        let (reply, rx) = oneshot::channel();
        let span = crate::trace::request_span(op, &body);
        let request = Request {
            op,
            body,
            reply,
            watch,
            span,
        };
        (request, rx)
    }
}

/// The kind of a watch registration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum WatchKind {
    /// `getData(watch)`: fires on data change and delete.
    Data,
    /// `exists(watch)`: a data watch when the node exists, an exist watch when not.
    Exist,
    /// `getChildren(watch)`: fires on child change and delete.
    Child,
    /// `addWatch(PERSISTENT)`.
    Persistent,
    /// `addWatch(PERSISTENT_RECURSIVE)`.
    PersistentRecursive,
}

/// The sending half a watch event goes to.
#[derive(Debug)]
pub(crate) enum WatchSender {
    /// A one-shot [`Watcher`](crate::Watcher).
    Once(oneshot::Sender<Result<WatchedEvent>>),
    /// A [`PersistentWatcher`](crate::PersistentWatcher).
    Stream(EventSender),
}

/// What the session does to its watch registry when a request succeeds.
#[derive(Debug)]
pub(crate) enum WatchAction {
    /// Register a watch (on success; for `Exist` also on `NoNode`).
    Register {
        path: String,
        kind: WatchKind,
        sender: WatchSender,
        /// Whether the request asks the server for a watch. Callers set it; the session
        /// clears it (and the request's watch flag) for a one-shot watcher that a persistent
        /// registration already serves (see `WatchRegistry::route`).
        on_server: bool,
    },
    /// `removeWatches` succeeded: drop the local watches of this type and tell them.
    Remove { path: String, kind: WatcherType },
}

impl WatchAction {
    pub(crate) fn path(&self) -> &str {
        match self {
            WatchAction::Register { path, .. } | WatchAction::Remove { path, .. } => path,
        }
    }
}
