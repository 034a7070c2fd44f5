//! Public watch and session-state types: [`Watcher`], [`PersistentWatcher`],
//! [`WatchedEvent`], [`SessionState`], [`StateWatcher`].

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::sync::{broadcast, mpsc, oneshot, watch};

use crate::error::{Error, Result};
use crate::event_queue::EventReceiver;
use crate::session::Command;

pub use zk_proto::records::{AddWatchMode, EventType, WatcherType};

/// The state of a client's session, as seen by the client.
///
/// `Expired`, `AuthFailed` and `Closed` are terminal: the client never leaves them and never
/// opens a new session by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SessionState {
    /// Looking for a server (before the first session, or after `Disconnected` while a
    /// reconnect is attempted).
    Connecting,
    /// Connected to a server that is part of a quorum.
    Connected,
    /// Connected to a server that lost its quorum; only reads work.
    ConnectedReadOnly,
    /// The connection was lost; the session may still be alive and the client is reconnecting.
    Disconnected,
    /// The session expired (the server said so, or no server answered for the whole session
    /// timeout). Terminal.
    Expired,
    /// The server rejected the credentials. Terminal.
    AuthFailed,
    /// The client was closed. Terminal.
    Closed,
}

impl SessionState {
    /// Whether the client is connected (read/write or read-only).
    pub fn is_connected(self) -> bool {
        matches!(
            self,
            SessionState::Connected | SessionState::ConnectedReadOnly
        )
    }

    /// Whether the state is final.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            SessionState::Expired | SessionState::AuthFailed | SessionState::Closed
        )
    }

    /// The error calls fail with in a terminal state.
    pub(crate) fn terminal_error(self) -> Option<Error> {
        match self {
            SessionState::Expired => Some(Error::SessionExpired),
            SessionState::AuthFailed => Some(Error::AuthFailed),
            SessionState::Closed => Some(Error::Closed),
            _ => None,
        }
    }
}

/// What the driver publishes about the session: its state and credentials.
#[derive(Debug, Clone)]
pub(crate) struct SessionInfo {
    pub(crate) state: SessionState,
    pub(crate) session_id: i64,
    pub(crate) password: Bytes,
    /// The negotiated session timeout (the requested one before the first session).
    pub(crate) timeout: std::time::Duration,
    /// How many times a server has accepted the session (see `Client::connection_epoch`).
    pub(crate) epoch: u64,
}

impl Default for SessionInfo {
    fn default() -> Self {
        Self {
            state: SessionState::Connecting,
            session_id: 0,
            password: Bytes::new(),
            timeout: std::time::Duration::ZERO,
            epoch: 0,
        }
    }
}

/// How many state transitions a [`StateWatcher`] may fall behind before it skips to the
/// current state.
pub(crate) const STATE_HISTORY: usize = 64;

/// Follows the session state. Obtained from [`Client::state_watcher`](crate::Client::state_watcher).
///
/// Every watcher sees every transition made after it was created, in order, even short ones
/// (a `Disconnected` followed at once by `Connected` is reported as both), unless it falls
/// more than 64 transitions behind, when it skips to the current state.
///
/// ```no_run
/// # async fn f(client: zk_client::Client) {
/// use zk_client::SessionState;
/// let mut states = client.state_watcher();
/// loop {
///     match states.changed().await {
///         SessionState::Disconnected => eprintln!("suspended: we may have lost our locks"),
///         s if s.is_terminal() => break,
///         _ => {}
///     }
/// }
/// # }
/// ```
#[derive(Debug)]
pub struct StateWatcher {
    info: watch::Receiver<SessionInfo>,
    transitions: broadcast::Receiver<SessionState>,
    last: SessionState,
}

impl Clone for StateWatcher {
    fn clone(&self) -> Self {
        Self {
            info: self.info.clone(),
            transitions: self.transitions.resubscribe(),
            last: self.last,
        }
    }
}

impl StateWatcher {
    pub(crate) fn new(
        info: watch::Receiver<SessionInfo>,
        transitions: broadcast::Receiver<SessionState>,
    ) -> Self {
        // Subscribed before reading the state: a transition in between is queued, and
        // skipped below if the state read already includes it.
        let last = info.borrow().state;
        Self {
            info,
            transitions,
            last,
        }
    }

    /// The current state.
    pub fn current(&self) -> SessionState {
        self.info.borrow().state
    }

    /// Waits for the next transition after the last state this watcher returned (or, the
    /// first time, after the state when the watcher was made) and returns the new state.
    ///
    /// Once the state is terminal this returns the terminal state at once, every time.
    pub async fn changed(&mut self) -> SessionState {
        loop {
            if self.last.is_terminal() {
                return self.last;
            }
            let state = match self.transitions.recv().await {
                Ok(state) => state,
                Err(broadcast::error::RecvError::Lagged(_)) => self.current(),
                Err(broadcast::error::RecvError::Closed) => {
                    // The driver is gone: its last published state is final.
                    let state = self.current();
                    if state.is_terminal() {
                        state
                    } else {
                        SessionState::Closed
                    }
                }
            };
            if state != self.last {
                self.last = state;
                return state;
            }
        }
    }

    /// Returns the current state if `pred` holds for it (or it is terminal); otherwise
    /// waits for the first transition to such a state and returns it.
    pub async fn wait_for(&mut self, mut pred: impl FnMut(SessionState) -> bool) -> SessionState {
        let state = self.current();
        if pred(state) || state.is_terminal() {
            self.last = state;
            return state;
        }
        loop {
            let state = self.changed().await;
            if pred(state) || state.is_terminal() {
                return state;
            }
        }
    }
}

/// A change to a watched node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchedEvent {
    /// What happened.
    pub event_type: EventType,
    /// The node, relative to the client's chroot.
    pub path: String,
}

/// A one-shot watch: resolves with the first event on the node it was set on.
///
/// Returned by the `*_watch` methods of [`Client`](crate::Client) only when the call
/// succeeded (and by [`Client::exists_watch`](crate::Client::exists_watch) on a missing
/// node too). It survives reconnects: the client re-registers it with the new server.
///
/// ```no_run
/// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
/// use zk_client::EventType;
/// let (_data, _stat, watcher) = client.get_data_watch("/config").await?;
/// let event = watcher.await?;
/// assert!(matches!(event.event_type, EventType::NodeDataChanged | EventType::NodeDeleted));
/// # Ok(()) }
/// ```
///
/// # Errors
///
/// Resolves with `Err(SessionExpired)`, `Err(AuthFailed)` or `Err(Closed)` when the session
/// ends before the event, so it never hangs.
///
/// # Dropping
///
/// Dropping it before its event drops interest: it is not re-registered after a reconnect,
/// and when no other watcher of this client relies on the same server-side watch, the
/// client removes that watch (`removeWatches`) so the server stops tracking it.
#[derive(Debug)]
#[must_use = "a Watcher does nothing unless awaited"]
pub struct Watcher {
    rx: oneshot::Receiver<Result<WatchedEvent>>,
    on_drop: Option<DropHook>,
}

/// Tells the driver that a watcher went away before its event.
#[derive(Debug)]
struct DropHook {
    commands: mpsc::WeakUnboundedSender<Command>,
    path: String,
}

impl DropHook {
    fn fire(self) {
        if let Some(tx) = self.commands.upgrade() {
            let _ = tx.send(Command::DropWatch { path: self.path });
        }
    }
}

impl Watcher {
    pub(crate) fn new(rx: oneshot::Receiver<Result<WatchedEvent>>) -> Self {
        Self { rx, on_drop: None }
    }

    /// Arms the drop hook, once the watch is registered.
    pub(crate) fn armed(
        mut self,
        commands: mpsc::WeakUnboundedSender<Command>,
        path: String,
    ) -> Self {
        self.on_drop = Some(DropHook { commands, path });
        self
    }
}

impl Future for Watcher {
    type Output = Result<WatchedEvent>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let out = Pin::new(&mut self.rx)
            .poll(cx)
            .map(|r| r.unwrap_or(Err(Error::Closed)));
        if out.is_ready() {
            self.on_drop = None;
        }
        out
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let Some(hook) = self.on_drop.take() else {
            return;
        };
        // Fired but not polled, or ended by the session: nothing to remove.
        if !matches!(self.rx.try_recv(), Err(oneshot::error::TryRecvError::Empty)) {
            return;
        }
        // Close first so the driver sees this watcher as dead when it handles the command.
        self.rx.close();
        hook.fire();
    }
}

/// A persistent (or persistent recursive) watch: a stream of events until removed.
///
/// Created by [`Client::add_watch`](crate::Client::add_watch). Events arrive in server order.
/// A persistent watch sees `NodeCreated`, `NodeDeleted`, `NodeDataChanged` and
/// `NodeChildrenChanged` on its node; a recursive one sees the first three on its node and
/// every descendant. It survives reconnects (re-registered with `SetWatches2`).
///
/// Dropping it drops interest; when no other watcher of this client is left on the path, the
/// client also removes the server-side watch (`removeWatches` of kind `Any`).
///
/// # Lagging
///
/// Events wait in a bounded queue ([`ClientBuilder::watch_buffer`](crate::ClientBuilder::watch_buffer),
/// 4096 by default). A reader that falls that far behind gets every queued event, then one
/// [`Error::Lagged`] with the number of events dropped, then the events that came after; it
/// should re-read the state it follows at that point.
#[derive(Debug)]
pub struct PersistentWatcher {
    rx: EventReceiver,
    terminal: Option<Error>,
    on_drop: Option<DropHook>,
}

impl PersistentWatcher {
    pub(crate) fn new(
        rx: EventReceiver,
        commands: mpsc::WeakUnboundedSender<Command>,
        server_path: String,
    ) -> Self {
        Self {
            rx,
            terminal: None,
            on_drop: Some(DropHook {
                commands,
                path: server_path,
            }),
        }
    }

    /// Waits for the next event.
    ///
    /// # Errors
    ///
    /// `SessionExpired`, `AuthFailed` or `Closed` once the session ended (then always the
    /// same error); `Closed` after the watch was removed with
    /// [`Client::remove_watches`](crate::Client::remove_watches). [`Error::Lagged`] where
    /// events were dropped because they were not read (not terminal: later events follow).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: an event is taken from the queue only when the future completes.
    pub async fn next(&mut self) -> Result<WatchedEvent> {
        std::future::poll_fn(|cx| self.poll_event(cx)).await
    }

    /// Polls for the next event (the `Stream` implementation uses this).
    pub fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Result<WatchedEvent>> {
        if let Some(err) = &self.terminal {
            return Poll::Ready(Err(err.clone()));
        }
        match self.rx.poll_recv(cx) {
            Poll::Ready(Err(err)) if !matches!(err, Error::Lagged { .. }) => {
                self.terminal = Some(err.clone());
                Poll::Ready(Err(err))
            }
            other => other,
        }
    }
}

impl futures_core::Stream for PersistentWatcher {
    type Item = Result<WatchedEvent>;

    /// Yields events; after a terminal error has been yielded once, the stream ends.
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.terminal.is_some() {
            return Poll::Ready(None);
        }
        self.poll_event(cx).map(Some)
    }
}

impl Drop for PersistentWatcher {
    fn drop(&mut self) {
        if let Some(hook) = self.on_drop.take() {
            if self.terminal.is_none() {
                // Close first so the driver sees this watcher as dead when it handles the
                // command.
                self.rx.close();
                hook.fire();
            }
        }
    }
}
