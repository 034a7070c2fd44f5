//! [`LeaderSelector`]: runs the caller's work while leader, in Curator's mutex layout.

use std::future::Future;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};
use zk_client::{Client, Publisher, SessionManager, Transitions};

use super::election::MUTEX_NAME;
use super::latch::LeaderLatch;
use super::{Leadership, LeadershipPolicy, Term};
use crate::error::{Error, Result};
use crate::path::check_base;
use crate::queue::{participants, Order, Participant};
use crate::retry::turns;
use crate::session::Background;

/// Runs a future while this participant leads; drops it (cancelling it) the moment
/// leadership is lost; optionally queues again afterwards (Curator's `autoRequeue`).
///
/// The election is Curator's `LeaderSelector`: an `InterProcessMutex` on the path, nodes
/// `<path>/_c_<uuid>-lock-<seq>` with the participant id as data, so Java selectors and Rust
/// selectors on one path take turns, and `getParticipants()` on either side lists both.
/// Leadership is held while the work runs: when the work returns, our node is deleted and
/// the next participant leads (each waiter watches only its predecessor). With
/// `auto_requeue`, we then queue again at the end.
///
/// Leadership ends, and the work is dropped, when our node is deleted, the session ends, or
/// (with [`LeadershipPolicy::Standard`], Curator's default) the connection is lost. Work
/// that touches other systems should check [`Term::fencing_token`] there. After an expiry
/// the selector (with `auto_requeue`) queues again on the manager's next session.
///
/// # Example
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use zk_client::{Client, Publisher, SessionManager, Transitions};
/// use zk_recipes::leader::{LeaderSelector, LeadershipPolicy};
///
/// let manager = SessionManager::connect(Client::builder("127.0.0.1:2181")).await?;
/// let selector = LeaderSelector::builder("/election/compactor", "node-7")
///     .policy(LeadershipPolicy::Standard)
///     .auto_requeue(true)
///     .build_managed(&manager, |client, term| async move {
///         println!("leading with token {}", term.fencing_token);
///         // ... work; dropped if leadership is lost ...
///         let _ = client.sync("/").await;
///     })?;
/// # selector.close().await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct LeaderSelector {
    base: String,
    manager: SessionManager,
    state: Arc<Publisher<Leadership>>,
    /// Dropping it stops the task, which drops the work and removes our node.
    task: Background,
}

/// Options of a [`LeaderSelector`], from [`LeaderSelector::builder`]: the policy
/// (default [`LeadershipPolicy::Standard`]) and whether to queue again after each term
/// (default off, as Curator's `autoRequeue`).
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until built"]
pub struct LeaderSelectorBuilder {
    path: String,
    id: String,
    policy: LeadershipPolicy,
    auto_requeue: bool,
}

impl LeaderSelectorBuilder {
    /// When leadership counts as lost (default [`LeadershipPolicy::Standard`]).
    pub fn policy(mut self, policy: LeadershipPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Queue again at the end after each term, and after a session expiry (Curator's
    /// `autoRequeue`; default off: the selector closes after its first term).
    pub fn auto_requeue(mut self, auto_requeue: bool) -> Self {
        self.auto_requeue = auto_requeue;
        self
    }

    /// Joins the election on `manager`'s sessions and returns at once. Each time we lead,
    /// `work(client, term)` runs (with the client of the session that leads); when it returns, we give
    /// leadership up, and queue again with [`auto_requeue`](Self::auto_requeue).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] for a path that is not absolute, is the root, or ends with `/`.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime (the election runs in a spawned task), as `tokio::spawn`.
    pub fn build_managed<F, Fut>(self, manager: &SessionManager, work: F) -> Result<LeaderSelector>
    where
        F: FnMut(Client, Term) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let base = check_base(&self.path)?;
        let state = Arc::new(Publisher::new(Leadership::Follower));
        let turn = Turn {
            manager: manager.clone(),
            base: base.clone(),
            id: self.id,
            policy: self.policy,
        };
        let auto_requeue = self.auto_requeue;
        let task = Background::spawn({
            let state = state.clone();
            |stop| run(turn, auto_requeue, work, state, stop)
        });
        Ok(LeaderSelector {
            base,
            manager: manager.clone(),
            state,
            task,
        })
    }
}

impl LeaderSelector {
    /// A selector on `path` as participant `id`: set its options, then
    /// [`build_managed`](LeaderSelectorBuilder::build_managed) it on a session manager with
    /// the work to run while leading.
    pub fn builder(path: &str, id: &str) -> LeaderSelectorBuilder {
        LeaderSelectorBuilder {
            path: path.to_owned(),
            id: id.to_owned(),
            policy: LeadershipPolicy::default(),
            auto_requeue: false,
        }
    }

    /// Whether our work runs now (we lead).
    pub fn is_leader(&self) -> bool {
        self.state.current().is_leader()
    }

    /// Follows our leadership: `Leader(term)` while the work runs, `Follower` between
    /// terms, `Ended` once the selector stopped (closed, or done without re-queue).
    pub fn watch(&self) -> Transitions<Leadership> {
        self.state.subscribe()
    }

    /// Every participant in queue order (Curator's `getParticipants`); the first leads.
    ///
    /// # Errors
    ///
    /// [`Error::Client`] for ZooKeeper failures (connection losses are waited out).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads.
    pub async fn participants(&self) -> Result<Vec<Participant>> {
        participants(
            &self.manager.client(),
            &self.base,
            Order::Election(MUTEX_NAME),
        )
        .await
    }

    /// Waits until the selector stops by itself (the work returned and `auto_requeue` is
    /// off, or the session manager ended).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only observes.
    pub async fn finished(&self) {
        // `Ended` is final: this ends with it.
        let _ = self.state.subscribe().wait_for(|_| false).await;
    }

    /// Stops: drops the work if it runs, leaves the election (our node is deleted), and
    /// waits for that.
    ///
    /// # Errors
    ///
    /// None so far; the signature leaves room.
    ///
    /// # Cancel safety
    ///
    /// The selector stops as soon as this is called; dropping the future leaves the node's
    /// removal to the background task.
    pub async fn close(&self) -> Result<()> {
        self.task.close().await;
        Ok(())
    }
}

/// What each turn in the queue needs.
struct Turn {
    manager: SessionManager,
    base: String,
    id: String,
    policy: LeadershipPolicy,
}

/// The selector's task: queue, lead while the work runs, leave, and maybe queue again.
async fn run<F, Fut>(
    turn: Turn,
    auto_requeue: bool,
    mut work: F,
    state: Arc<Publisher<Leadership>>,
    stop: CancellationToken,
) where
    F: FnMut(Client, Term) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    for number in turns().map(|n| 1 + n as u64) {
        let result = one_term(&turn, number, &mut work, &state, &stop).await;
        state.publish(Leadership::Follower);
        match result {
            Ok(true) if auto_requeue && !stop.is_cancelled() => continue,
            Ok(_) => break,
            Err(e) => {
                warn!(base = %turn.base, error = %e, "leader selector stops");
                break;
            }
        }
    }
    state.publish(Leadership::Ended);
}

/// Queues once, runs the work while leading, leaves. `Ok(true)` when the turn ended
/// normally (the work returned or leadership was lost), `Ok(false)` when stopped.
async fn one_term<F, Fut>(
    turn: &Turn,
    number: u64,
    work: &mut F,
    state: &Publisher<Leadership>,
    stop: &CancellationToken,
) -> Result<bool>
where
    F: FnMut(Client, Term) -> Fut,
    Fut: Future<Output = ()>,
{
    let latch =
        LeaderLatch::start_named(&turn.manager, &turn.base, &turn.id, turn.policy, MUTEX_NAME)?;
    let outcome = async {
        let latch_term = tokio::select! {
            _ = stop.cancelled() => return Ok::<bool, Error>(false),
            term = latch.ready() => term?,
        };
        let latch_number = latch_term.number;
        let term = Term {
            number,
            ..latch_term
        };
        let client = turn.manager.client();
        if client.session_id() != term.session_id {
            // The manager has moved on to a new session since: this term is already over.
            return Ok(true);
        }
        state.publish(Leadership::Leader(term.clone()));
        debug!(base = %turn.base, number, "leading: work starts");
        let mut leadership = latch.watch();
        tokio::select! {
            _ = stop.cancelled() => Ok(false),
            () = work(client, term) => Ok(true),
            // Any change of the latch's term ends ours (a new term after a suspension too).
            _ = leadership.wait_for(|s| s.term().map(|t| t.number) != Some(latch_number)) => {
                debug!(base = %turn.base, number, "leadership lost: work dropped");
                Ok(true)
            }
        }
    }
    .await;
    // The work is dropped (or done) before our node goes: no overlap with the next leader.
    state.publish(Leadership::Follower);
    latch.close().await?;
    outcome
}
