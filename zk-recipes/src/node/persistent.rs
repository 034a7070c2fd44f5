//! [`PersistentNode`]: the handle, its options and its events. The work is in `run.rs`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use zk_client::{Acl, CreateMode, SessionManager};

use super::events::NodeEvents;
use super::kernel::check_base;
use super::run;
use crate::error::{Error, Result};

/// How a [`PersistentNode`] creates its node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeOptions {
    /// The node's mode. A sequential mode applies to the first create only: re-creates use
    /// the name the server gave (Curator does the same).
    pub mode: CreateMode,
    /// Put Curator's `_c_<uuid>-` prefix before the name, so that a create whose reply was
    /// lost is found by its guid instead of being made twice. Needed to recover a
    /// sequential node after a lost reply.
    pub protected: bool,
    /// Time to live, for the TTL modes: the node is touched (its data written again) every
    /// half TTL so the server never reaps it while the handle lives.
    pub ttl: Option<Duration>,
    /// The node's ACL.
    pub acl: Vec<Acl>,
}

impl NodeOptions {
    /// Options for `mode`, not protected, open ACL.
    pub fn new(mode: CreateMode) -> NodeOptions {
        NodeOptions {
            mode,
            protected: false,
            ttl: None,
            acl: Acl::open_unsafe().to_vec(),
        }
    }

    /// An ephemeral node (Curator's `PersistentEphemeralNode`, GroupMember's mode).
    pub fn ephemeral() -> NodeOptions {
        NodeOptions::new(CreateMode::Ephemeral)
    }

    /// A persistent node that is re-created when deleted.
    pub fn persistent() -> NodeOptions {
        NodeOptions::new(CreateMode::Persistent)
    }

    /// A persistent node with a time to live (`PERSISTENT_WITH_TTL`), touched every `ttl / 2`
    /// while the handle lives. The server needs `zookeeper.extendedTypesEnabled=true`.
    pub fn ttl(ttl: Duration) -> NodeOptions {
        NodeOptions::new(CreateMode::PersistentWithTtl).with_ttl(ttl)
    }

    /// Sets [`protected`](Self::protected).
    pub fn protected(mut self, yes: bool) -> NodeOptions {
        self.protected = yes;
        self
    }

    /// Sets the TTL.
    pub fn with_ttl(mut self, ttl: Duration) -> NodeOptions {
        self.ttl = Some(ttl);
        self
    }

    /// Replaces the ACL.
    pub fn with_acl(mut self, acl: Vec<Acl>) -> NodeOptions {
        self.acl = acl;
        self
    }
}

/// What happened to a [`PersistentNode`]'s node, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NodeEvent {
    /// The node was first created (or an existing node of ours was taken over), at `path`.
    Created {
        /// The node's full path (with its protected prefix and sequence suffix, if any).
        path: String,
    },
    /// The node was created again after it went (deleted by someone, or its session ended).
    Recreated {
        /// The node's full path.
        path: String,
    },
    /// The node was seen gone: deleted by someone, or taken with an ended session.
    Deleted {
        /// The node's full path.
        path: String,
    },
    /// The node's data changed: written by [`PersistentNode::set_data`], or by someone else
    /// (which is kept: like Curator, the node does not overwrite others' edits until it
    /// re-creates the node).
    DataChanged {
        /// The node's full path.
        path: String,
        /// The data now in the node.
        data: Bytes,
    },
    /// This consumer fell behind and `n` events were dropped for it (as
    /// [`CacheEvent::Lagged`](crate::cache::CacheEvent::Lagged)); read
    /// [`PersistentNode::path`] and [`PersistentNode::data`] for the current state.
    Lagged(u64),
}

/// What the node's task publishes.
#[derive(Debug, Clone, Default)]
pub(crate) struct Status {
    /// The node's path while it is known to be present.
    pub(crate) path: Option<String>,
    /// Why the node stopped for good (closed, manager ended, an error such as `NoAuth`).
    pub(crate) ended: Option<Error>,
}

/// A request from the handle to the task.
#[derive(Debug)]
pub(crate) enum Command {
    SetData(Bytes, oneshot::Sender<Result<()>>),
}

/// What the handle and the task share.
#[derive(Debug)]
pub(crate) struct Shared {
    /// The path as given (before protection and sequence).
    pub(crate) base: String,
    pub(crate) options: NodeOptions,
    /// The data the node should hold (what every create writes).
    pub(crate) data: Mutex<Bytes>,
    pub(crate) status: watch::Sender<Status>,
    pub(crate) events: broadcast::Sender<NodeEvent>,
    /// Leave the node in place on close (a `PersistentTtlNode`'s container parent).
    pub(crate) keep_on_close: std::sync::atomic::AtomicBool,
}

impl Shared {
    pub(crate) fn data(&self) -> Bytes {
        self.data.lock().map(|d| d.clone()).unwrap_or_default()
    }

    pub(crate) fn emit(&self, event: NodeEvent) {
        // No receiver is fine: nobody is listening.
        let _ = self.events.send(event);
    }
}

/// How many events a slow [`PersistentNode::events`] receiver may fall behind.
const EVENT_BUFFER: usize = 256;

/// A node kept present for as long as the handle lives (Curator's `PersistentNode`), across
/// deletions, connection losses and new sessions of a [`SessionManager`].
///
/// - **Re-created** when someone deletes it, and on the manager's next session after an
///   expiry (an ephemeral node goes with its session), always with the latest data.
/// - **Never two.** A create whose reply was lost with the connection is not sent blindly
///   again: a protected node is found by its guid, a plain one by its name and owner.
/// - **Owner check.** A node of our name held by another session (say, our own expired
///   session that the server has not reaped yet) is deleted and replaced by ours, never taken
///   over as ours (Curator 5.4 adopts it, and the registration disappears when that session
///   ends). A persistent node cannot tell its owner and is taken over, as in Curator.
/// - **TTL.** With a TTL mode the node is touched every half TTL.
/// - [`set_data`](Self::set_data) changes the node and every later re-create; before the
///   first create it is kept for that create (Curator throws, CURATOR-485).
/// - [`close`](Self::close) deletes the node (guaranteed delete); dropping the handle does the
///   same in the background.
///
/// Parents are created as containers. [`events`](Self::events) reports creates, re-creates,
/// deletions and data changes; [`initial_create`](Self::initial_create) waits for the node.
///
/// ```no_run
/// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use zk_client::{Client, SessionManager};
/// use zk_recipes::node::{NodeOptions, PersistentNode};
///
/// let manager = SessionManager::connect(Client::builder("127.0.0.1:2181")).await?;
/// let node = PersistentNode::start(&manager, "/workers/w1", b"10.0.0.7:8080", NodeOptions::ephemeral())?;
/// let path = node.initial_create_timeout(Duration::from_secs(10)).await?;
/// node.set_data(b"10.0.0.7:8081").await?;
/// node.close().await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct PersistentNode {
    shared: Arc<Shared>,
    commands: mpsc::UnboundedSender<Command>,
    stop: CancellationToken,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for PersistentNode {
    fn drop(&mut self) {
        // The task deletes the node and ends.
        self.stop.cancel();
    }
}

impl PersistentNode {
    /// Starts keeping a node at `path` (the name before any protection prefix or sequence
    /// suffix) with `data`, on `manager`'s sessions. Must be called within a tokio runtime.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] for a relative path or the root; [`Error::InvalidArgument`]
    /// for a TTL mode without a TTL (or a TTL with another mode). Everything else happens in
    /// the background: see [`initial_create`](Self::initial_create).
    pub fn start(
        manager: &SessionManager,
        path: &str,
        data: &[u8],
        options: NodeOptions,
    ) -> Result<PersistentNode> {
        let base = check_base(path)?;
        if options.mode.is_ttl() != options.ttl.is_some() {
            return Err(Error::InvalidArgument(
                "a TTL mode needs a ttl, and only TTL modes take one",
            ));
        }
        let (status, _) = watch::channel(Status::default());
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        let shared = Arc::new(Shared {
            base,
            options,
            data: Mutex::new(Bytes::copy_from_slice(data)),
            status,
            events,
            keep_on_close: std::sync::atomic::AtomicBool::new(false),
        });
        let (commands, rx) = mpsc::unbounded_channel();
        let stop = CancellationToken::new();
        let task = tokio::spawn(run::run(shared.clone(), manager.watch(), rx, stop.clone()));
        Ok(PersistentNode {
            shared,
            commands,
            stop,
            task: Mutex::new(Some(task)),
        })
    }

    /// The path as given to [`start`](Self::start).
    pub fn base_path(&self) -> &str {
        &self.shared.base
    }

    /// The node's full path while it is known to be present (`None` before the first create,
    /// and while it is being re-created).
    pub fn path(&self) -> Option<String> {
        self.shared.status.borrow().path.clone()
    }

    /// The data the node holds (or will hold once created).
    pub fn data(&self) -> Bytes {
        self.shared.data()
    }

    /// Follows what happens to the node, from now on. A consumer that falls more than 256
    /// events behind gets [`NodeEvent::Lagged`] and skips ahead.
    pub fn events(&self) -> NodeEvents {
        NodeEvents::new(self.shared.events.subscribe())
    }

    /// Waits until the node is present and returns its path (at once if it is).
    ///
    /// # Errors
    ///
    /// The reason the node stopped for good (`NoAuth`, the manager's end, `Closed`).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub async fn initial_create(&self) -> Result<String> {
        let mut status = self.shared.status.subscribe();
        let seen = match status
            .wait_for(|s| s.path.is_some() || s.ended.is_some())
            .await
        {
            Err(_) => return Err(Error::Client(zk_client::Error::Closed)),
            Ok(seen) => seen.clone(),
        };
        match (seen.path, seen.ended) {
            (Some(path), _) => Ok(path),
            (None, Some(e)) => Err(e),
            (None, None) => Err(Error::Client(zk_client::Error::Closed)),
        }
    }

    /// [`initial_create`](Self::initial_create) within `timeout`.
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`] when the node is not present within `timeout`; otherwise as
    /// [`initial_create`](Self::initial_create).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub async fn initial_create_timeout(&self, timeout: Duration) -> Result<String> {
        tokio::time::timeout(timeout, self.initial_create())
            .await
            .map_err(|_| Error::Timeout)?
    }

    /// Replaces the node's data: written now if the node is present, and used by every later
    /// re-create. Before the first create, only kept for it.
    ///
    /// # Errors
    ///
    /// The write's error other than a connection loss or the node's absence (both are
    /// repaired by the next re-create, which writes these bytes): `NoAuth`, or the reason the
    /// node stopped for good.
    ///
    /// # Cancel safety
    ///
    /// The data is replaced as soon as this is called; dropping the future loses only the
    /// outcome of the write.
    pub async fn set_data(&self, data: &[u8]) -> Result<()> {
        let data = Bytes::copy_from_slice(data);
        if let Ok(mut d) = self.shared.data.lock() {
            *d = data.clone();
        }
        let (tx, rx) = oneshot::channel();
        if self.commands.send(Command::SetData(data, tx)).is_err() {
            return Err(self.ended());
        }
        rx.await.unwrap_or_else(|_| Err(self.ended()))
    }

    /// Stops keeping the node and deletes it (through connection losses, until it is gone or
    /// its session ended).
    ///
    /// A close that comes while the manager is between sessions deletes nothing: an
    /// ephemeral node went with its session; a persistent one stays.
    ///
    /// # Errors
    ///
    /// `NoAuth` from the delete. A node whose session ended is gone anyway (`Ok`).
    ///
    /// # Cancel safety
    ///
    /// The delete goes on in the background if the future is dropped.
    pub async fn close(&self) -> Result<()> {
        self.stop.cancel();
        let task = self.task.lock().ok().and_then(|mut t| t.take());
        if let Some(task) = task {
            let _ = task.await;
        }
        match self.shared.status.borrow().ended.clone() {
            None | Some(Error::Client(zk_client::Error::Closed)) => Ok(()),
            Some(e) => Err(e),
        }
    }

    /// Makes [`close`](Self::close) (and drop) stop keeping the node without deleting it.
    pub(crate) fn keep_on_close(&self) {
        self.shared
            .keep_on_close
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    fn ended(&self) -> Error {
        self.shared
            .status
            .borrow()
            .ended
            .clone()
            .unwrap_or(Error::Client(zk_client::Error::Closed))
    }
}
