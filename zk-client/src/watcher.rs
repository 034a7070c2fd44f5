//! Node watchers: [`Watcher`] (one event) and [`PersistentWatcher`] (a stream of events).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::sync::{mpsc, oneshot};

use crate::command::Command;
use crate::error::{Error, Result};
use crate::event::WatchedEvent;
use crate::event_queue::EventReceiver;
use crate::path::Chroot;

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
    /// The chroot of the client that set it: stripped from the event's server path.
    chroot: Chroot,
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
    pub(crate) fn new(rx: oneshot::Receiver<Result<WatchedEvent>>, chroot: Chroot) -> Self {
        Self {
            rx,
            on_drop: None,
            chroot,
        }
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
        let chroot = self.chroot.clone();
        let out = Pin::new(&mut self.rx)
            .poll(cx)
            .map(|r| r.unwrap_or(Err(Error::Closed)))
            .map_ok(|e| e.relative_to(&chroot));
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
/// every descendant. It survives reconnects (re-registered with `SetWatches2`), but changes
/// made while the client was disconnected are not replayed: the server re-adds a persistent
/// watch with no catch-up (a one-shot watch, by contrast, fires at once for a change since
/// the last zxid the client saw). Follow [`Client::watch`](crate::Client::watch) and read
/// again what you follow when the state comes back to `Connected` (zk-recipes' caches do).
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
    /// The chroot of the client that set it: stripped from each event's server path.
    chroot: Chroot,
}

impl PersistentWatcher {
    pub(crate) fn new(
        rx: EventReceiver,
        commands: mpsc::WeakUnboundedSender<Command>,
        server_path: String,
        chroot: Chroot,
    ) -> Self {
        Self {
            rx,
            terminal: None,
            on_drop: Some(DropHook {
                commands,
                path: server_path,
            }),
            chroot,
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
            Poll::Ready(Ok(event)) => Poll::Ready(Ok(event.relative_to(&self.chroot))),
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
