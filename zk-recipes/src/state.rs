//! What the holder of a lock can know about it: [`LockState`], how it is decided, and the
//! monitor that publishes it (on zk-client's [`Publisher`], followed with [`Transitions`]).

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use zk_client::{Client, Observable, Publisher, SessionState, Transitions, Watcher};

use crate::error::LossReason;

/// What the holder of a lock can know about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockState {
    /// Held: our node was seen on the connection the client has now, and the client is
    /// connected (read/write).
    Held,
    /// The connection is lost, or was lost since our node was last seen: the lock may still
    /// be ours (the session may live on) or may already be someone else's (if the session
    /// expired in the meantime). A holder must stop work that needs the lock until the state
    /// is `Held` again.
    Suspended,
    /// Certainly not ours any more: the session ended, the node was deleted, or (seen only
    /// by a receiver that outlives the guard) the lock was released. Terminal.
    Lost(LossReason),
}

impl Observable for LockState {
    fn is_final(&self) -> bool {
        matches!(self, LockState::Lost(_))
    }

    /// The hold ended (every guard released or dropped) while the state was not `Lost`.
    fn when_gone(last: &Self) -> Self {
        match last {
            LockState::Lost(_) => *last,
            _ => LockState::Lost(LossReason::Released),
        }
    }

    /// Changes were missed and it is `Held` again: the missed ones included a suspension
    /// (`Lost` is final), so a `Suspended` is reported before the `Held`.
    fn after_lag(last: &Self, now: &Self) -> Option<Self> {
        (*now == LockState::Held && *last != LockState::Suspended).then_some(LockState::Suspended)
    }
}

/// Pause before the monitor asks again after an unexpected server error.
const RETRY_PAUSE: Duration = Duration::from_millis(200);

/// The state of one hold as published by its monitor, shared by the hold, its monitor and
/// the receivers handed out.
pub(crate) struct Published {
    /// The latest published state and every change, in order, with bounded history. Made
    /// when first needed (the first publish or receiver): until then the state is `Held`, and
    /// a hold nobody observes never pays for the channels.
    states: OnceLock<Publisher<LockState>>,
    /// The client's connection epoch when our node was last seen to exist: captured before
    /// the request that showed it (so a reply that came on a later connection only makes us
    /// more cautious, never less).
    confirmed_epoch: AtomicU64,
}

impl Published {
    /// A hold just acquired: `Held`, its node seen at connection epoch `epoch`.
    pub(crate) fn new(epoch: u64) -> Arc<Published> {
        Arc::new(Published {
            states: OnceLock::new(),
            confirmed_epoch: AtomicU64::new(epoch),
        })
    }

    /// Publishes `next` if it differs from the latest state. Only the monitor publishes, so
    /// every receiver sees the same order.
    fn publish(&self, next: LockState) {
        self.publisher().publish(next);
    }

    /// The publisher, made (`Held`) on first use.
    fn publisher(&self) -> &Publisher<LockState> {
        self.states.get_or_init(|| Publisher::new(LockState::Held))
    }

    /// The latest published state (`Held` while nothing was published).
    fn published(&self) -> LockState {
        self.states
            .get()
            .map_or(LockState::Held, Publisher::current)
    }

    /// Publishes what is known now, before the monitor starts (it is then the only one to
    /// publish).
    pub(crate) fn publish_initial(&self, client: &Client) {
        self.publish(self.current(client));
    }

    /// Records that our node was seen on the connection of `epoch`. Called before the
    /// `Held` it justifies is published.
    fn confirm(&self, epoch: u64) {
        self.confirmed_epoch.store(epoch, Ordering::Release);
    }

    /// What is known now about the hold, for `client` (see [`decide`]).
    pub(crate) fn current(&self, client: &Client) -> LockState {
        let published = self.published();
        // The session state first, then the epoch: `Connected` and an unchanged epoch read
        // after it mean the connection of that moment is the one the node was seen on.
        let session = client.state();
        let epoch = client.connection_epoch();
        let confirmed = self.confirmed_epoch.load(Ordering::Acquire);
        decide(published, session, epoch, confirmed)
    }

    /// A receiver of every change from now on.
    pub(crate) fn transitions(&self) -> Transitions<LockState> {
        self.publisher().subscribe()
    }
}

/// The state a holder is told, from the monitor's latest verdict (`published`), the
/// session's state, the client's connection epoch now and the epoch at which our node was
/// last seen (`confirmed`).
///
/// `Held` only while the client is connected read/write on the very connection the node was
/// last seen on: after any disconnection, however short, the node may have been deleted or
/// the session may have moved on without a watcher having told us, so it is `Suspended`
/// until the node has been seen again. `Lost` is final; a terminal session is `Lost` at once,
/// whatever the monitor has published yet.
pub(crate) fn decide(
    published: LockState,
    session: SessionState,
    epoch: u64,
    confirmed: u64,
) -> LockState {
    match published {
        LockState::Lost(_) => published,
        _ if session.is_terminal() => LockState::Lost(LossReason::SessionEnded),
        _ if session != SessionState::Connected => LockState::Suspended,
        _ if epoch != confirmed => LockState::Suspended,
        _ => published,
    }
}

/// Watches the session and our node; publishes what the holder can know.
///
/// Driven by the client's ordered session transitions, so even a disconnection that lasts
/// a millisecond (a fast failover) is published as `Suspended`; `Held` comes back only after
/// the node has been seen again on the reconnected session. A disconnection that happened
/// before the monitor started (or that its session watcher skipped) shows as a changed
/// connection epoch, and is published the same way.
pub(crate) async fn monitor(client: Client, path: String, out: Arc<Published>) {
    let mut states = client.watch();
    let mut state = states.current();
    let mut watcher = None;
    // Each turn waits for a session transition or a node event; the task is aborted on release.
    loop {
        if state.is_terminal() {
            out.publish(LockState::Lost(LossReason::SessionEnded));
            return;
        }
        if state != SessionState::Connected {
            out.publish(LockState::Suspended);
        } else {
            match look(&client, &path, &mut watcher, &out).await {
                Look::Wait => {}
                Look::Over => return,
                // A server error, say: retry at a modest pace.
                Look::Retry => {
                    tokio::time::sleep(RETRY_PAUSE).await;
                    continue;
                }
            }
        }
        let node_event = async {
            match watcher.as_mut() {
                Some(w) => w.await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            event = node_event => {
                watcher = None;
                if let Ok(e) = event {
                    if e.event_type == zk_client::EventType::NodeDeleted {
                        out.publish(LockState::Lost(LossReason::NodeDeleted));
                        return;
                    }
                }
            }
            next = states.changed() => state = next,
        }
    }
}

/// What one look at our node concluded.
enum Look {
    /// Published; wait for the next session transition or node event.
    Wait,
    /// Try again after a pause.
    Retry,
    /// `Lost` is published: the monitor is done.
    Over,
}

/// On a connected session: publishes `Suspended` if the connection changed since our node
/// was last seen, then looks at the node when needed (to arm the watch on the first turn or
/// after it fired, or to confirm the node after a suspension; the watch itself survives
/// reconnects) and publishes what it shows.
async fn look(
    client: &Client,
    path: &str,
    watcher: &mut Option<Pin<Box<Watcher>>>,
    out: &Published,
) -> Look {
    // Captured before the request that will show the node (see `Published`).
    let epoch = client.connection_epoch();
    let stale = epoch != out.confirmed_epoch.load(Ordering::Acquire);
    if stale {
        out.publish(LockState::Suspended);
    }
    if watcher.is_some() && !stale && out.published() == LockState::Held {
        return Look::Wait;
    }
    let seen = if watcher.is_none() {
        client.exists_watch(path).await.map(|(stat, w)| {
            *watcher = Some(Box::pin(w));
            stat
        })
    } else {
        client.exists(path).await
    };
    match seen {
        Ok(Some(_)) => {
            out.confirm(epoch);
            out.publish(LockState::Held);
            Look::Wait
        }
        Ok(None) => {
            out.publish(LockState::Lost(LossReason::NodeDeleted));
            Look::Over
        }
        // The transition that explains it is queued for the monitor's `changed`.
        Err(e) if e.is_connection_loss() => Look::Wait,
        Err(e) if e.is_terminal() => {
            out.publish(LockState::Lost(LossReason::SessionEnded));
            Look::Over
        }
        Err(_) => Look::Retry,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zk_client::HISTORY;

    const HELD: LockState = LockState::Held;
    const SUSPENDED: LockState = LockState::Suspended;
    const DELETED: LockState = LockState::Lost(LossReason::NodeDeleted);
    const ENDED: LockState = LockState::Lost(LossReason::SessionEnded);
    const RELEASED: LockState = LockState::Lost(LossReason::Released);

    async fn futures_next(t: &mut Transitions<LockState>) -> Option<LockState> {
        use futures_core::Stream;
        std::future::poll_fn(|cx| std::pin::Pin::new(&mut *t).poll_next(cx)).await
    }

    #[test]
    fn held_only_on_the_connection_the_node_was_seen_on() {
        use SessionState::*;
        // Connected on the same connection: the monitor's verdict stands.
        assert_eq!(decide(HELD, Connected, 3, 3), HELD);
        assert_eq!(decide(SUSPENDED, Connected, 3, 3), SUSPENDED);
        // Reconnected since the node was seen, monitor not caught up yet: never Held.
        assert_eq!(decide(HELD, Connected, 4, 3), SUSPENDED);
        assert_eq!(decide(HELD, Connected, 7, 3), SUSPENDED);
        // Not connected read/write: suspended, whatever was published.
        for session in [Disconnected, Connecting, ConnectedReadOnly] {
            assert_eq!(decide(HELD, session, 3, 3), SUSPENDED, "{session:?}");
        }
        // A session that ended is Lost at once; Lost stays Lost.
        for session in [Expired, Closed, AuthFailed] {
            assert_eq!(decide(HELD, session, 3, 3), ENDED, "{session:?}");
            assert_eq!(decide(DELETED, session, 3, 3), DELETED, "{session:?}");
        }
        assert_eq!(decide(DELETED, Connected, 3, 3), DELETED);
        assert_eq!(decide(ENDED, Connected, 4, 3), ENDED);
    }

    #[tokio::test]
    async fn transitions_keep_every_change_in_order() {
        let published = Published::new(1);
        let mut transitions = published.transitions();
        assert_eq!(transitions.last(), HELD);
        // A blip a latest-value channel would coalesce: it ends where it started.
        published.publish(SUSPENDED);
        published.publish(HELD);
        published.publish(HELD); // no change, not reported
        assert_eq!(transitions.current(), HELD);
        assert_eq!(transitions.changed().await, SUSPENDED);
        assert_eq!(transitions.changed().await, HELD);
        published.publish(DELETED);
        assert_eq!(transitions.changed().await, DELETED);
        // Lost is final: reported again at once, and the stream ends.
        assert_eq!(transitions.changed().await, DELETED);
        assert_eq!(futures_next(&mut transitions).await, Some(DELETED));
        assert_eq!(futures_next(&mut transitions).await, None);
        // Made after the loss: nothing can follow.
        assert_eq!(published.transitions().changed().await, DELETED);
    }

    #[tokio::test]
    async fn transitions_end_with_the_hold_and_skip_ahead_when_far_behind() {
        let published = Published::new(1);
        let mut transitions = published.transitions();
        for _ in 0..HISTORY {
            published.publish(SUSPENDED);
            published.publish(HELD);
        }
        // Lagged while Held again: the skipped suspension is still reported, then Held,
        // and nothing stale after that; the skipped changes are counted.
        assert_eq!(transitions.changed().await, SUSPENDED);
        assert_eq!(transitions.changed().await, HELD);
        assert!(transitions.missed() > 0);
        published.publish(SUSPENDED);
        assert_eq!(transitions.changed().await, SUSPENDED);
        // Lagged while Suspended: skip to it (already reported as the last state).
        for _ in 0..HISTORY {
            published.publish(HELD);
            published.publish(SUSPENDED);
        }
        published.publish(HELD);
        assert_eq!(transitions.changed().await, HELD);
        published.publish(SUSPENDED);
        drop(published);
        // The last change before the hold ended is still reported, then the end.
        assert_eq!(transitions.changed().await, SUSPENDED);
        assert_eq!(transitions.changed().await, RELEASED);
        assert_eq!(transitions.changed().await, RELEASED);
    }
}
