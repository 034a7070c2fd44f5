//! [`retry`] and [`Retrier`]: repeat an operation that is safe to repeat
//! ([`Idempotent`]) through connection losses, bounded by a [`RetryPolicy`].

use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::debug;
use zk_client::{Client, SessionManager};

use super::idempotent::{sealed::Token, Idempotent};
use crate::error::{Error, Result};
use crate::retry::{gave_up, refused_for, turns, wait_connected};
use crate::session::{NoNext, Sessions, Source};

/// How long and how often [`retry`] tries: at most [`attempts`](Self::attempts) attempts,
/// and no new attempt once [`within`](Self::within) has passed since the call, with a
/// pause between attempts that doubles from [`pause`](Self::pause)'s first value to its
/// ceiling (Curator's `ExponentialBackoffRetry`, with a time bound as its
/// `RetryUntilElapsed`).
///
/// The defaults: 10 attempts, 30 seconds, pauses from 100 ms to 5 s.
///
/// ```
/// use std::time::Duration;
/// use zk_recipes::writes::RetryPolicy;
/// let policy = RetryPolicy::new()
///     .attempts(5)
///     .within(Duration::from_secs(10))
///     .pause(Duration::from_millis(50), Duration::from_secs(1));
/// # let _ = policy;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    attempts: u32,
    within: Duration,
    first_pause: Duration,
    max_pause: Duration,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy::new()
    }
}

impl RetryPolicy {
    /// The default policy: 10 attempts within 30 seconds, pauses from 100 ms to 5 s.
    pub fn new() -> RetryPolicy {
        RetryPolicy {
            attempts: 10,
            within: Duration::from_secs(30),
            first_pause: Duration::from_millis(100),
            max_pause: Duration::from_secs(5),
        }
    }

    /// At most `attempts` attempts (at least one is always made).
    #[must_use]
    pub fn attempts(mut self, attempts: u32) -> RetryPolicy {
        self.attempts = attempts.max(1);
        self
    }

    /// No new attempt once `limit` has passed since the call: waiting for a reconnect (or
    /// a manager's next session) and the pauses end there. An attempt already sent is
    /// waited for (the client's own timeouts bound it), so that its outcome is known.
    #[must_use]
    pub fn within(mut self, limit: Duration) -> RetryPolicy {
        self.within = limit;
        self
    }

    /// The pause before the second attempt (`first`), doubling up to `max` for the next
    /// ones. A request the client holds back ([`zk_client::Error::ServerDropsRequest`]) is
    /// waited out for as long as it says.
    #[must_use]
    pub fn pause(mut self, first: Duration, max: Duration) -> RetryPolicy {
        self.first_pause = first;
        self.max_pause = max.max(first);
        self
    }

    /// The pause before attempt `next` (2 for the second).
    fn pause_before(&self, next: u32) -> Duration {
        let doublings = next.saturating_sub(2).min(31);
        self.first_pause
            .saturating_mul(1u32 << doublings)
            .min(self.max_pause)
    }
}

/// Runs `op` on `client`, again after each connection loss (waiting for the reconnect),
/// within `policy`'s bounds, and returns its output: the one retry helper of the crate
/// for a user's own operations, Curator's `RetryLoop`, restricted to operations that are
/// safe to repeat by their type ([`Idempotent`]: reads, versioned sets and deletes, the
/// protected create, a guarded `multi`; see the op types for what each does after a lost
/// reply). A plain create or an unversioned set does not compile.
///
/// An attempt that fails with a connection loss, a timeout or a throttled request is
/// followed by another (after a pause, once the client is connected again); any other
/// error is returned at once. The session's end is the client's terminal error: nothing
/// is sent on another session (use [`Retrier::new_managed`] to go on on a `SessionManager`'s
/// next session).
///
/// Why here and not in zk-client: a retry waits for reconnects, paces and reads back what a
/// lost write did; zk-client sends every request once and says `ConnectionLoss`, and
/// zk-recipes' base (`retry`, `session/`) already holds the waiting, the pacing and the
/// manager's next session.
///
/// ```no_run
/// # async fn f(client: zk_client::Client) -> zk_recipes::Result<()> {
/// use zk_client::CreateOptions;
/// use zk_recipes::writes::{self, GetData, ProtectedCreate, RetryPolicy, SetData};
///
/// let policy = RetryPolicy::new();
/// let (_, stat) = writes::retry(&client, GetData::new("/app/limit"), &policy).await?;
/// let stat = writes::retry(&client, SetData::new("/app/limit", b"11", stat.version), &policy).await?;
/// let op = ProtectedCreate::new("/jobs/job-", b"x", &CreateOptions::persistent_sequential())?;
/// let job = writes::retry(&client, op, &policy).await?;
/// # let _ = (stat, job);
/// # Ok(()) }
/// ```
///
/// # Errors
///
/// The op's own errors (`NoNode`, `BadVersion`, `Multi { .. }`, `NodeExists` ...);
/// `ConnectionLoss` when a write's outcome cannot be found out (a versioned set whose
/// reply was lost, and the node was deleted or written twice more before it could be read
/// back: the set may or may not have applied); the session's end (`SessionExpired`,
/// `Closed`, `AuthFailed`); [`Error::GaveUp`], the one give-up error, when the policy's
/// attempts or time ran out (a write may then have applied with its reply lost, except a
/// protected create, whose nodes are then removed).
///
/// # Cancel safety
///
/// Requests are sent when the future is first polled; dropping it loses only the outcome
/// (a write may have applied), except for a [`ProtectedCreate`](super::ProtectedCreate),
/// whose nodes are then removed in the background.
pub async fn retry<O: Idempotent>(
    client: &Client,
    op: O,
    policy: &RetryPolicy,
) -> Result<O::Output> {
    run(Source::Client(client.clone()), op, policy).await
}

/// A retry helper bound to its sessions and policy: [`retry`] as a value, and the way to
/// retry on a [`SessionManager`]'s sessions ([`new_managed`](Self::new_managed)), where an
/// attempt that met the end of the session is followed by one on the manager's next
/// session (within the policy's bounds). Every [`Idempotent`] op may go on on a new
/// session: reads and versioned writes do not depend on the session, and a
/// [`ProtectedCreate`](super::ProtectedCreate) finds its node by the guid (an ephemeral one
/// of the ended session is gone with it and is made again).
///
/// ```no_run
/// # async fn f(manager: zk_client::SessionManager) -> zk_recipes::Result<()> {
/// use zk_recipes::writes::{Delete, Retrier, RetryPolicy};
/// let retrier = Retrier::new_managed(&manager, RetryPolicy::new());
/// retrier.run(Delete::new("/app/lease", 3)).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Retrier {
    source: Source,
    policy: RetryPolicy,
}

impl Retrier {
    /// Retries on `client`'s session (the session's end ends a retry), within `policy`.
    pub fn new(client: Client, policy: RetryPolicy) -> Retrier {
        Retrier {
            source: Source::Client(client),
            policy,
        }
    }

    /// Retries on `manager`'s sessions, within `policy`.
    pub fn new_managed(manager: &SessionManager, policy: RetryPolicy) -> Retrier {
        Retrier {
            source: Source::Manager(manager.clone()),
            policy,
        }
    }

    /// Runs `op` (see [`retry`]).
    ///
    /// # Errors
    ///
    /// As [`retry`]; with [`new_managed`](Self::new_managed), the session's end only when
    /// the manager has ended.
    ///
    /// # Cancel safety
    ///
    /// As [`retry`].
    pub async fn run<O: Idempotent>(&self, op: O) -> Result<O::Output> {
        run(self.source.clone(), op, &self.policy).await
    }
}

async fn run<O: Idempotent>(source: Source, mut op: O, policy: &RetryPolicy) -> Result<O::Output> {
    let deadline = Instant::now() + policy.within;
    let managed = matches!(source, Source::Manager(_));
    let mut sessions = source.sessions();
    let mut client = sessions.client().clone();
    let mut attempt = 1;
    loop {
        let error = match op.attempt(&client, Token(())).await {
            Ok(output) => return Ok(output),
            // A plain client's session has no next one.
            Err(e) if e.is_session_end() && !managed => return Err(e),
            Err(e) if op.may_repeat(&e, Token(())) => e,
            Err(e) => return Err(e),
        };
        if attempt >= policy.attempts {
            debug!(attempts = attempt, error = %error, "retry: out of attempts");
            return Err(Error::GaveUp);
        }
        attempt += 1;
        debug!(attempt, error = %error, "retry: trying again");
        let ready = tokio::time::timeout_at(
            deadline,
            between(
                &mut sessions,
                &mut client,
                &error,
                policy.pause_before(attempt),
            ),
        )
        .await;
        match ready {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                debug!(attempts = attempt - 1, error = %error, "retry: out of time");
                return Err(Error::GaveUp);
            }
        }
    }
}

/// What happens between two attempts: the pause, then a connected client (the manager's
/// next one after the session's end).
async fn between(
    sessions: &mut Sessions,
    client: &mut Client,
    error: &Error,
    pause: Duration,
) -> Result<()> {
    let held_back = match error {
        Error::Client(e) => refused_for(e),
        _ => None,
    };
    tokio::time::sleep(pause.max(held_back.unwrap_or_default())).await;
    let never = CancellationToken::new();
    // Bounded: each turn takes a new session (and the caller's deadline).
    for _ in turns() {
        match wait_connected(client).await {
            Ok(()) => return Ok(()),
            Err(e) if e.is_session_end() => match sessions.next(&never).await {
                Ok(next) => *client = next,
                Err(NoNext::Ended(why)) => return Err(why),
                Err(NoNext::Stopped) => return Err(zk_client::Error::Closed.into()),
            },
            Err(e) => return Err(e),
        }
    }
    Err(gave_up())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_double_from_the_first_up_to_the_ceiling() {
        let policy = RetryPolicy::new().pause(Duration::from_millis(100), Duration::from_secs(1));
        let pauses: Vec<_> = (2..=7).map(|n| policy.pause_before(n)).collect();
        let ms = |n| Duration::from_millis(n);
        assert_eq!(
            pauses,
            [ms(100), ms(200), ms(400), ms(800), ms(1000), ms(1000)]
        );
        assert_eq!(policy.pause_before(u32::MAX), Duration::from_secs(1));
        assert_eq!(
            RetryPolicy::new().attempts(0).attempts,
            1,
            "one attempt at least"
        );
    }
}
