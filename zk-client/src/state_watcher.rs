//! [`StateWatcher`]: follows the session state, every transition in order.

use tokio::sync::{broadcast, watch};

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
