//! [`StateWatcher`]: follows the session state, every transition in order.

use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::sync::{broadcast, watch};
use tokio_util::sync::ReusableBoxFuture;

use crate::state::{SessionInfo, SessionState};

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
pub struct StateWatcher {
    info: watch::Receiver<SessionInfo>,
    /// Never read: what clones subscribe from.
    template: broadcast::Receiver<SessionState>,
    /// The pending receive (it owns the receiver), so that polling is cancel safe.
    next: ReusableBoxFuture<'static, Received>,
    last: SessionState,
    /// The stream has yielded the terminal state.
    ended: bool,
}

type Received = (
    Result<SessionState, broadcast::error::RecvError>,
    broadcast::Receiver<SessionState>,
);

async fn recv(mut rx: broadcast::Receiver<SessionState>) -> Received {
    (rx.recv().await, rx)
}

impl std::fmt::Debug for StateWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateWatcher")
            .field("last", &self.last)
            .field("current", &self.current())
            .finish()
    }
}

impl Clone for StateWatcher {
    fn clone(&self) -> Self {
        Self {
            info: self.info.clone(),
            template: self.template.resubscribe(),
            next: ReusableBoxFuture::new(recv(self.template.resubscribe())),
            last: self.last,
            ended: self.ended,
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
            template: transitions.resubscribe(),
            next: ReusableBoxFuture::new(recv(transitions)),
            last,
            ended: false,
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
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a transition is consumed only when this returns it.
    pub async fn changed(&mut self) -> SessionState {
        std::future::poll_fn(|cx| self.poll_changed(cx)).await
    }

    /// Polls for the next transition (see [`changed`](Self::changed)).
    pub fn poll_changed(&mut self, cx: &mut Context<'_>) -> Poll<SessionState> {
        loop {
            if self.last.is_terminal() {
                return Poll::Ready(self.last);
            }
            let (result, rx) = ready!(self.next.poll(cx));
            self.next.set(recv(rx));
            let state = match result {
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
                return Poll::Ready(state);
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

impl futures_core::Stream for StateWatcher {
    type Item = SessionState;

    /// Yields every transition; ends after yielding a terminal state.
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<SessionState>> {
        if self.ended {
            return Poll::Ready(None);
        }
        let state = ready!(self.poll_changed(cx));
        self.ended = state.is_terminal();
        Poll::Ready(Some(state))
    }
}
