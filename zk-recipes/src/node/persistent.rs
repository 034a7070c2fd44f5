//! [`PersistentNode`]: the handle. The work is in `run.rs`, what both share in `shared.rs`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use zk_client::SessionManager;

use super::events::NodeEvents;
use super::run;
use super::shared::{Command, NodeOptions, Shared, Status, EVENT_BUFFER};
use crate::error::{Error, Result};
use crate::path::check_base;
use crate::session::{Background, Source};

/// A node kept present for as long as the handle lives (Curator's `PersistentNode`), across
/// deletions, connection losses and new sessions of a [`SessionManager`].
///
/// - **Re-created** when someone deletes it, and on the manager's next session after an
///   expiry (an ephemeral node goes with its session), always with the latest data.
/// - **Never two.** A create whose reply was lost with the connection is not sent blindly
///   again: a protected node is found by its guid, a plain one by its name and owner, a plain
///   ephemeral sequential one by its name's prefix and owner.
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
/// deletions and data changes; [`ready`](Self::ready) waits for the node.
///
/// ```no_run
/// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use zk_client::{Client, SessionManager};
/// use zk_recipes::node::{NodeOptions, PersistentNode};
///
/// let manager = SessionManager::connect(Client::builder("127.0.0.1:2181")).await?;
/// let node = PersistentNode::new_managed(&manager, "/workers/w1", b"10.0.0.7:8080", NodeOptions::ephemeral())?;
/// let path = node.ready_timeout(Duration::from_secs(10)).await?;
/// node.set_data(b"10.0.0.7:8081").await?;
/// node.close().await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct PersistentNode {
    shared: Arc<Shared>,
    commands: mpsc::UnboundedSender<Command>,
    /// Dropping it stops the task, which deletes the node and ends.
    task: Background,
}

impl PersistentNode {
    /// Starts keeping a node at `path` (the name before any protection prefix or sequence
    /// suffix) with `data`, on `manager`'s sessions. Must be called within a tokio runtime.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] for a relative path or the root; [`Error::InvalidArgument`]
    /// for a TTL mode without a TTL (or a TTL with another mode). Everything else happens in
    /// the background: see [`ready`](Self::ready).
    pub fn new_managed(
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
        let sessions = Source::Manager(manager.clone()).sessions();
        let task = Background::spawn({
            let shared = shared.clone();
            |stop| run::run(shared, sessions, rx, stop)
        });
        Ok(PersistentNode {
            shared,
            commands,
            task,
        })
    }

    /// The path as given to [`new_managed`](Self::new_managed).
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
    /// events behind gets [`NodeEvent::Lagged`](super::NodeEvent::Lagged) and skips ahead.
    pub fn events(&self) -> NodeEvents {
        NodeEvents::new(self.shared.events.subscribe())
    }

    /// Why the node is not present while it keeps trying, if something went wrong: the
    /// last session ended (`SessionExpired`), or the server drops the connection on its
    /// create ([`zk_client::Error::ServerDropsRequest`]: the node waits out its
    /// `retry_after`, with a growing pause, and tries again). `None` once the node is
    /// present again. Why it stopped for good is [`ready`](Self::ready)'s error.
    pub fn last_error(&self) -> Option<Error> {
        let status = self.shared.status.borrow();
        status.failing.clone().filter(|_| status.path.is_none())
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
    pub async fn ready(&self) -> Result<String> {
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

    /// [`ready`](Self::ready) within `timeout`.
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`] when the node is not present within `timeout`; otherwise as
    /// [`ready`](Self::ready).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub async fn ready_timeout(&self, timeout: Duration) -> Result<String> {
        crate::retry::within(timeout, self.ready()).await
    }

    /// Replaces the node's data: written now if the node is present, and used by every later
    /// re-create. Before the first create, only kept for it.
    ///
    /// # Errors
    ///
    /// The write's error other than a connection loss or the node's absence (both are
    /// repaired by the next re-create, which writes these bytes): `NoAuth`, or the reason the
    /// node stopped for good. [`zk_client::Error::ServerDropsRequest`] when the server drops
    /// the connection on the write (data above its `jute.maxbuffer`, say): the node stays,
    /// with the data it had, but a later re-create writes these bytes and is refused the
    /// same way (set smaller data again to repair it).
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
    /// The delete's error when the node could not be deleted (`NoAuth`, say: the node stays).
    /// A session that ended during the delete counts as `Ok` (an ephemeral node went with
    /// it). When the node had already stopped before this call (the manager ended, or the
    /// node gave up), the error that stopped it, as [`ready`](Self::ready) reports it.
    ///
    /// # Cancel safety
    ///
    /// The delete goes on in the background if the future is dropped.
    pub async fn close(&self) -> Result<()> {
        self.task.close().await;
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
