//! [`Transitions`]: the one way to follow anything that changes (the session state here; a
//! lock's state, a leadership, in zk-recipes), and [`Publisher`], its sending side.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use tokio::sync::{broadcast, watch};
use tokio_util::sync::ReusableBoxFuture;

use crate::state::{SessionInfo, SessionState};

/// How many transitions a [`Transitions`] may fall behind before it skips to the current
/// value (and counts what it skipped in [`Transitions::missed`]).
pub const HISTORY: usize = 64;

/// A value that [`Transitions`] can follow.
pub trait Observable: Clone + PartialEq + Send + Sync + 'static {
    /// Whether no change can follow this value (a closed session, a lost lock, a closed
    /// leader latch).
    fn is_final(&self) -> bool;

    /// The final value to report when the publisher is gone while the last value `last`
    /// is not final (the session's driver ended: `Closed`).
    fn when_gone(last: &Self) -> Self;

    /// After a receiver fell behind from `last` and the current value is `now`: a value to
    /// report before `now` that the skipped transitions certainly went through (a lock held
    /// again was suspended in between). `None` by default.
    fn after_lag(last: &Self, now: &Self) -> Option<Self> {
        let _ = (last, now);
        None
    }
}

impl Observable for SessionState {
    fn is_final(&self) -> bool {
        self.is_terminal()
    }

    fn when_gone(last: &Self) -> Self {
        if last.is_terminal() {
            *last
        } else {
            SessionState::Closed
        }
    }
}

/// The sending side of [`Transitions`]: publishes each change of a value. For crates that
/// build on the client (zk-recipes publishes lock states and leadership with it).
#[derive(Debug)]
pub struct Publisher<T: Observable> {
    latest: watch::Sender<T>,
    history: broadcast::Sender<T>,
}

impl<T: Observable> Publisher<T> {
    /// A publisher whose value is `initial`.
    pub fn new(initial: T) -> Publisher<T> {
        Publisher {
            latest: watch::Sender::new(initial),
            history: broadcast::Sender::new(HISTORY),
        }
    }

    /// Publishes `next` if it differs from the current value; returns whether it did.
    pub fn publish(&self, next: T) -> bool {
        self.publish_if(|value| {
            if *value == next {
                false
            } else {
                *value = next;
                true
            }
        })
    }

    /// Lets `change` modify the value; publishes it if `change` returns `true`.
    pub fn publish_if(&self, change: impl FnOnce(&mut T) -> bool) -> bool {
        let mut published = None;
        self.latest.send_if_modified(|value| {
            let changed = change(value);
            if changed {
                published = Some(value.clone());
            }
            changed
        });
        match published {
            Some(value) => {
                // No receiver is fine: nobody follows the transitions.
                let _ = self.history.send(value);
                true
            }
            None => false,
        }
    }

    /// The current value.
    pub fn current(&self) -> T {
        self.latest.borrow().clone()
    }

    /// A receiver of every change from now on.
    pub fn subscribe(&self) -> Transitions<T> {
        // Subscribed before reading the value: a change in between is both queued and
        // included in `last`, and the queued copy is skipped as no change.
        let history = self.history.subscribe();
        let latest = self.latest.subscribe();
        Transitions::from_parts(Arc::new(move || latest.borrow().clone()), history)
    }
}

type Received<T> = (
    Result<T, broadcast::error::RecvError>,
    broadcast::Receiver<T>,
);

async fn recv<T: Clone>(mut rx: broadcast::Receiver<T>) -> Received<T> {
    (rx.recv().await, rx)
}

/// Follows a value that changes: its current value, a wait for the next change, and a
/// `Stream` of every change, in order.
///
/// Every receiver sees every transition made after it was created, in order, even short
/// ones (a `Disconnected` followed at once by `Connected` is reported as both), unless it
/// falls more than [`HISTORY`] transitions behind: it then skips to the current value and
/// counts the skipped transitions in [`missed`](Self::missed).
///
/// The session's state is followed with one ([`StateWatcher`], from
/// [`Client::watch`](crate::Client::watch)); zk-recipes uses the same type
/// for a lock's state and for leadership.
///
/// ```no_run
/// # async fn f(client: zk_client::Client) {
/// use zk_client::SessionState;
/// let mut states = client.watch();
/// loop {
///     match states.changed().await {
///         SessionState::Disconnected => eprintln!("suspended: we may have lost our locks"),
///         s if s.is_terminal() => break,
///         _ => {}
///     }
/// }
/// # }
/// ```
pub struct Transitions<T: Observable> {
    current: Arc<dyn Fn() -> T + Send + Sync>,
    /// Never read: what clones subscribe from.
    template: broadcast::Receiver<T>,
    /// The pending receive (it owns the receiver), so that polling is cancel safe.
    next: ReusableBoxFuture<'static, Received<T>>,
    last: T,
    /// A value to report before anything else (see [`Observable::after_lag`]).
    owed: Option<T>,
    missed: u64,
    /// The stream has yielded the final value.
    ended: bool,
}

/// Follows the session state: [`Transitions`] of [`SessionState`]. Obtained from
/// [`Client::watch`](crate::Client::watch).
pub type StateWatcher = Transitions<SessionState>;

impl<T: Observable + std::fmt::Debug> std::fmt::Debug for Transitions<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transitions")
            .field("last", &self.last)
            .field("current", &self.current())
            .field("missed", &self.missed)
            .finish()
    }
}

impl<T: Observable> Clone for Transitions<T> {
    fn clone(&self) -> Self {
        Self {
            current: self.current.clone(),
            template: self.template.resubscribe(),
            next: ReusableBoxFuture::new(recv(self.template.resubscribe())),
            last: self.last.clone(),
            owed: self.owed.clone(),
            missed: self.missed,
            ended: self.ended,
        }
    }
}

impl StateWatcher {
    pub(crate) fn new(
        info: watch::Receiver<SessionInfo>,
        transitions: broadcast::Receiver<SessionState>,
    ) -> Self {
        Transitions::from_parts(Arc::new(move || info.borrow().state), transitions)
    }
}

impl<T: Observable> Transitions<T> {
    /// `current` reads the current value; `history` must be subscribed before it is first
    /// called.
    fn from_parts(
        current: Arc<dyn Fn() -> T + Send + Sync>,
        history: broadcast::Receiver<T>,
    ) -> Self {
        let last = current();
        Self {
            current,
            template: history.resubscribe(),
            next: ReusableBoxFuture::new(recv(history)),
            last,
            owed: None,
            missed: 0,
            ended: false,
        }
    }

    /// The current value.
    pub fn current(&self) -> T {
        (self.current)()
    }

    /// The value last returned by [`changed`](Self::changed) (at first, the value when this
    /// receiver was made).
    pub fn last(&self) -> T {
        self.last.clone()
    }

    /// How many transitions this receiver skipped because it fell more than [`HISTORY`]
    /// behind (lag reporting; 0 for a receiver that kept up).
    pub fn missed(&self) -> u64 {
        self.missed
    }

    /// Waits for the next transition after the last value this receiver returned (or, the
    /// first time, after the value when it was made) and returns the new value.
    ///
    /// Once the value is final (see [`Observable::is_final`]) this returns it at once,
    /// every time.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a transition is consumed only when this returns it.
    pub async fn changed(&mut self) -> T {
        std::future::poll_fn(|cx| self.poll_changed(cx)).await
    }

    /// Polls for the next transition (see [`changed`](Self::changed)).
    pub fn poll_changed(&mut self, cx: &mut Context<'_>) -> Poll<T> {
        loop {
            if let Some(value) = self.owed.take() {
                self.last = value.clone();
                return Poll::Ready(value);
            }
            if self.last.is_final() {
                return Poll::Ready(self.last.clone());
            }
            let (result, mut rx) = ready!(self.next.poll(cx));
            let value = match result {
                Ok(value) => value,
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    self.missed += n;
                    // Start again from the tail (the retained changes are older than the
                    // current value), then read the current value: a change in between is
                    // both, and its queued copy is skipped as no change.
                    rx = rx.resubscribe();
                    let now = self.current();
                    match T::after_lag(&self.last, &now) {
                        Some(between) => {
                            self.owed = Some(now);
                            between
                        }
                        None => now,
                    }
                }
                Err(broadcast::error::RecvError::Closed) => {
                    // The publisher is gone: its last value is final, or made final.
                    let now = self.current();
                    if now.is_final() {
                        now
                    } else {
                        let gone = T::when_gone(&now);
                        if now == self.last {
                            gone
                        } else {
                            // Report the last change first (published after we looked).
                            self.owed = Some(gone);
                            now
                        }
                    }
                }
            };
            self.next.set(recv(rx));
            if value != self.last {
                self.last = value.clone();
                return Poll::Ready(value);
            }
        }
    }

    /// Returns the current value if `pred` holds for it (or it is final); otherwise waits
    /// for the first transition to such a value and returns it.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`changed`](Self::changed).
    pub async fn wait_for(&mut self, mut pred: impl FnMut(T) -> bool) -> T {
        let value = self.current();
        if pred(value.clone()) || value.is_final() {
            self.last = value.clone();
            return value;
        }
        loop {
            let value = self.changed().await;
            if pred(value.clone()) || value.is_final() {
                return value;
            }
        }
    }
}

impl<T: Observable> futures_core::Stream for Transitions<T> {
    type Item = T;

    /// Yields every transition; ends after yielding a final value.
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        if self.ended {
            return Poll::Ready(None);
        }
        let value = ready!(self.poll_changed(cx));
        self.ended = value.is_final();
        Poll::Ready(Some(value))
    }
}

// Never pinned structurally: the values are plain data, the pending receive is boxed.
impl<T: Observable> Unpin for Transitions<T> {}
