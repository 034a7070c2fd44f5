//! [`LeaderLatch`]: Curator's leader latch, re-joining on each new session.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};
use zk_client::{Client, Publisher, SessionManager, Transitions};

use super::election::{elect, Ctx, Ended, LATCH_NAME};
use super::{Leadership, LeadershipPolicy, Term};
use crate::error::{Error, Result};
use crate::path::check_base;
use crate::queue::{participants, Order, Participant};
use crate::retry::{deadline_after, gave_up, turns, until, Pacing};
use crate::session::{Background, NoNext, Sessions, Source};

/// A leader latch: every participant adds a node under one path; the first node's owner
/// leads until it closes, its session ends, or (by default) its connection is lost.
///
/// Nodes are `<path>/_c_<uuid>-latch-<seq>` (ephemeral sequential, parents created as
/// containers) with the participant id as data: the layout of Curator's `LeaderLatch`, so
/// Java and Rust participants on one path elect one leader between them, and Curator's
/// `getLeader().getId()` names a Rust leader's id. A participant leads when its node is
/// first AND the node's `ephemeralOwner` is its session (CURATOR-696); a node of its name
/// that another session owns is deleted and replaced by a new one, as Curator's `reset`.
/// Each participant watches only its predecessor, so a leader change wakes one participant.
///
/// The latch runs in a background task on a [`SessionManager`]: after an expiry it steps
/// down (nothing is carried over) and joins again on the manager's next session, with a
/// new node at the end of the queue.
///
/// # Example
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use zk_client::{Client, SessionManager};
/// use zk_recipes::leader::{LeaderLatch, LeadershipPolicy};
///
/// let manager = SessionManager::connect(Client::builder("127.0.0.1:2181")).await?;
/// let latch = LeaderLatch::new_managed(&manager, "/election/reports", "worker-1", LeadershipPolicy::Standard)?;
/// let term = latch.ready_timeout(Duration::from_secs(30)).await?;
/// println!("leading, fencing token {}", term.fencing_token);
/// let mut changes = latch.watch();
/// changes.wait_for(|s| !s.is_leader()).await;
/// println!("leadership lost");
/// latch.close().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct LeaderLatch {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    base: String,
    lock_name: &'static str,
    id: String,
    manager: SessionManager,
    state: Arc<Publisher<Leadership>>,
    /// Why the latch ended, set before [`Leadership::Ended`] is published: `None` for a
    /// close.
    ended_with: EndedWith,
    /// Dropping it stops the task, which removes our node and ends.
    task: Background,
}

/// Why the latch's task ended (`None`: closed), shared with the handle for `ready()`.
type EndedWith = Arc<Mutex<Option<Error>>>;

impl LeaderLatch {
    /// Joins the election on `path` as participant `id` and returns at once; the election
    /// runs in the background (watch it with [`watch`](Self::watch)).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] for a path that is not absolute, is the root, or ends with `/`.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime (the election runs in a spawned task), as `tokio::spawn`.
    pub fn new_managed(
        manager: &SessionManager,
        path: &str,
        id: &str,
        policy: LeadershipPolicy,
    ) -> Result<LeaderLatch> {
        Self::start_named(manager, path, id, policy, LATCH_NAME)
    }

    /// A latch whose nodes are named `_c_<uuid>-<lock_name><seq>`.
    pub(crate) fn start_named(
        manager: &SessionManager,
        path: &str,
        id: &str,
        policy: LeadershipPolicy,
        lock_name: &'static str,
    ) -> Result<LeaderLatch> {
        let base = check_base(path)?;
        let state = Arc::new(Publisher::new(Leadership::Follower));
        let ctx = Ctx {
            base: base.clone(),
            lock_name,
            id: id.to_owned(),
            policy,
            state: state.clone(),
            own: Arc::new(Mutex::new(None)),
            terms: AtomicU64::new(0),
        };
        let sessions = Source::Manager(manager.clone()).sessions();
        let ended_with = EndedWith::default();
        let why = ended_with.clone();
        let task = Background::spawn(|stop| run(ctx, sessions, why, stop));
        Ok(LeaderLatch {
            inner: Arc::new(Inner {
                base,
                lock_name,
                id: id.to_owned(),
                manager: manager.clone(),
                state,
                ended_with,
                task,
            }),
        })
    }

    /// The election path.
    pub fn path(&self) -> &str {
        &self.inner.base
    }

    /// Our participant id.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// Whether we lead now (as last observed: see [`LeadershipPolicy`]).
    pub fn is_leader(&self) -> bool {
        self.inner.state.current().is_leader()
    }

    /// Our leadership now.
    pub fn leadership(&self) -> Leadership {
        self.inner.state.current()
    }

    /// Follows our leadership: each change (term start, term end, close) is published; a
    /// receiver that looks later sees the latest (a new term has a new
    /// [`Term::number`], so a term that ended and another that began in between are noticed).
    pub fn watch(&self) -> Transitions<Leadership> {
        self.inner.state.subscribe()
    }

    /// Waits until we lead and returns the term.
    ///
    /// # Errors
    ///
    /// Why the latch ended, when it ends first: [`Error::Client`]`(Closed)` when it was
    /// closed; otherwise the error that ended it: its session manager's end (for example
    /// `AuthFailed`), or [`Error::GaveUp`] when its retries ran out.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only observes.
    pub async fn ready(&self) -> Result<Term> {
        let mut rx = self.inner.state.subscribe();
        // `Ended` is final, so this ends with it at the latest.
        match rx.wait_for(|s| s.is_leader()).await {
            Leadership::Leader(term) => Ok(term),
            _ => Err(self
                .inner
                .ended_with
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone()
                .unwrap_or(Error::Client(zk_client::Error::Closed))),
        }
    }

    /// Waits at most `timeout` until we lead and returns the term.
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`] when `timeout` passes first; otherwise as
    /// [`ready`](Self::ready).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only observes.
    pub async fn ready_timeout(&self, timeout: Duration) -> Result<Term> {
        until(deadline_after(Some(timeout)), self.ready()).await
    }

    /// Every participant in election order, ids read from the nodes (Curator's
    /// `getParticipants`); the first is the leader.
    ///
    /// # Errors
    ///
    /// [`Error::Client`] for ZooKeeper failures (connection losses are waited out), and
    /// the session's end as [`Error::Client`] (`SessionExpired`, `Closed`, `AuthFailed`).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads.
    pub async fn participants(&self) -> Result<Vec<Participant>> {
        participants(
            &self.client(),
            &self.inner.base,
            Order::Election(self.inner.lock_name),
        )
        .await
    }

    /// The leader (the first participant), if any (Curator's `getLeader`).
    ///
    /// # Errors
    ///
    /// As [`participants`](Self::participants).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads.
    pub async fn leader(&self) -> Result<Option<Participant>> {
        Ok(self.participants().await?.into_iter().next())
    }

    /// Leaves the election: steps down, removes our node, and waits for the background
    /// task to end. Later calls return at once.
    ///
    /// # Errors
    ///
    /// None so far (the node's removal retries through connection losses, and a session
    /// that ended took the node already); the signature leaves room.
    ///
    /// # Cancel safety
    ///
    /// The latch stops as soon as this is called; dropping the future leaves the node's
    /// removal to the background task.
    pub async fn close(&self) -> Result<()> {
        self.inner.task.close().await;
        Ok(())
    }

    fn client(&self) -> Client {
        self.inner.manager.client()
    }
}

/// The latch's task: the election on each session the manager publishes, until stopped;
/// then it steps down, removes our node, records why it ended and publishes the end.
async fn run(ctx: Ctx, sessions: Sessions, ended_with: EndedWith, stop: CancellationToken) {
    let why = follow(&ctx, sessions, &stop).await;
    ctx.step_down();
    remove_own(&ctx).await;
    *ended_with.lock().unwrap_or_else(PoisonError::into_inner) = why;
    ctx.state.publish(Leadership::Ended);
}

/// The election on each session in turn: `None` once stopped, else why no election
/// follows (the manager's end, or [`Error::GaveUp`] when the retries ran out).
async fn follow(ctx: &Ctx, mut sessions: Sessions, stop: &CancellationToken) -> Option<Error> {
    let mut client = sessions.client().clone();
    // Paces the retries after an election error.
    let mut pacing = Pacing::new();
    // Bounded as every retry loop (sessions and error retries).
    for _ in turns() {
        let ended = tokio::select! {
            _ = stop.cancelled() => return None,
            ended = elect(ctx, &client) => ended,
        };
        ctx.step_down();
        match ended {
            Ok(Ended::SessionEnded) => {
                debug!(base = %ctx.base, "session ended; waiting for the next one");
                // Paced: sessions that die at once are not re-joined at full speed.
                match sessions.next(stop).await {
                    Ok(next) => client = next,
                    Err(NoNext::Stopped) => return None,
                    Err(NoNext::Ended(e)) => {
                        debug!(base = %ctx.base, error = %e, "no next session; the latch ends");
                        return Some(e);
                    }
                }
            }
            Err(e) => {
                warn!(base = %ctx.base, error = %e, "election failed; retrying");
                match pacing.wait(Duration::ZERO, stop).await {
                    Ok(true) => {}
                    Ok(false) => return None,
                    Err(e) => {
                        warn!(base = %ctx.base, error = %e, "the latch ends");
                        return Some(e);
                    }
                }
            }
        }
    }
    Some(gave_up())
}

/// Removes every node of the current session's guid (requests are ordered at call time, so
/// the listing follows any create sent).
async fn remove_own(ctx: &Ctx) {
    let own = ctx.own.lock().ok().and_then(|mut o| o.take());
    let Some((client, nodes)) = own else { return };
    if client.state().is_terminal() {
        return;
    }
    if let Err(e) = nodes.delete_all(&client).await {
        warn!(base = %ctx.base, error = %e, "could not remove our latch node");
    }
}
