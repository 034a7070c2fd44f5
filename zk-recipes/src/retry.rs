//! The recipes' retry toolkit: every loop that waits out a connection loss goes through here,
//! every pause between tries is paced here ([`Pacing`]), and every timeout is mapped here.
//!
//! A base room: imports only `error`.
//!
//! A recipe never re-sends an operation on a new session (expiry is terminal for the client)
//! and never retries a non-idempotent create blindly (ZOOKEEPER-22): a connection loss is
//! waited out with [`wait_connected`], and the caller then decides what to do again (a read is
//! simply repeated, a create looks for its node by guid first).

use std::future::Future;
use std::time::Duration;

use rand::Rng;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use zk_client::{Client, SessionState};

use crate::error::{Error, Result};

/// Bound on the turns of every retry loop of the recipes. Each turn waits for the server, a
/// watch or a reconnect, so in practice a deadline or the session's end stops a loop long
/// before.
const MAX_TURNS: usize = 100_000;

/// The turns of one retry loop: every loop of the crate that goes round again after a
/// connection loss, a watch or a changed queue is `for _ in turns() { .. }` followed by
/// `Err(gave_up())`, so the bound and the error at the end are the same everywhere.
pub(crate) fn turns() -> std::ops::Range<usize> {
    0..MAX_TURNS
}

/// The crate's one way to say "the session ended": the client's terminal error
/// ([`Error::Client`] with `SessionExpired`, `AuthFailed` or `Closed`; `Closed` while the
/// client has none yet, say when a recipe was closed). Lock edges turn it into
/// [`Error::LockLost`] with [`Error::session_end_as_loss`].
pub(crate) fn session_ended(client: &Client) -> Error {
    Error::Client(match client.state() {
        SessionState::AuthFailed => zk_client::Error::AuthFailed,
        SessionState::Expired => zk_client::Error::SessionExpired,
        _ => zk_client::Error::Closed,
    })
}

/// Waits until the client is connected to a read/write server again.
///
/// Fails with [`session_ended`] when the session ended: the client never opens a new
/// session by itself.
pub(crate) async fn wait_connected(client: &Client) -> Result<()> {
    let mut states = client.watch();
    // Bounded: each turn waits for a state change; the session ends after finitely many.
    loop {
        match states.current() {
            SessionState::Connected => return Ok(()),
            state if state.is_terminal() => return Err(session_ended(client)),
            _ => {
                states.changed().await;
            }
        }
    }
}

/// The retry arm of every loop: waits out a connection loss (`Ok`: go round again) and turns
/// any other client error into the recipe's error.
pub(crate) async fn retry_after(client: &Client, error: zk_client::Error) -> Result<()> {
    if error.is_connection_loss() {
        wait_connected(client).await
    } else {
        Err(error.into())
    }
}

/// Runs an idempotent operation (a read, a delete at a known version) until it gets an answer
/// other than a connection loss, waiting for each reconnect in between.
pub(crate) async fn retrying<T, F, Fut>(client: &Client, mut op: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = zk_client::Result<T>>,
{
    for _ in turns() {
        match op().await {
            Ok(value) => return Ok(value),
            Err(e) => retry_after(client, e).await?,
        }
    }
    Err(gave_up())
}

/// The error of a retry loop that ran out of turns: [`Error::GaveUp`].
pub(crate) fn gave_up() -> Error {
    Error::GaveUp
}

/// Runs `fut` until `deadline`, mapping the elapsed deadline to [`Error::Timeout`].
pub(crate) async fn until<T>(
    deadline: Option<Instant>,
    fut: impl Future<Output = Result<T>>,
) -> Result<T> {
    match deadline {
        None => fut.await,
        Some(at) => tokio::time::timeout_at(at, fut)
            .await
            .unwrap_or(Err(Error::Timeout)),
    }
}

/// Runs `fut` within `timeout`, mapping the elapsed time to [`Error::Timeout`]: every
/// `x_timeout(d)` of the crate is `within(d, x())` (or [`until`] a deadline when several
/// steps share one).
pub(crate) async fn within<T>(
    timeout: Duration,
    fut: impl Future<Output = Result<T>>,
) -> Result<T> {
    until(deadline_after(Some(timeout)), fut).await
}

/// Converts an optional timeout into a deadline.
pub(crate) fn deadline_after(timeout: Option<Duration>) -> Option<Instant> {
    timeout.map(|t| Instant::now() + t)
}

/// The pacing of a loop that tries again after a failure or a lost session (a cache's
/// resync, a node's re-creation, a re-join on the next session): no pause after a try that
/// lasted [`HEALTHY_AFTER`], otherwise a pause growing from [`PAUSE_FIRST`] to
/// [`PAUSE_CEILING`] with jitter, reset once a try lasts long enough again; after the crate's
/// bound of short tries in a row ([`turns`]) it ends with [`Error::GaveUp`]. A loop paced
/// so never spins, whatever the server does to each try (ClickHouse Keeper dropping the
/// connection on a request it does not know, an ensemble expiring every new session).
#[derive(Debug, Clone)]
pub(crate) struct Pacing {
    /// The pause before the next short try.
    next: Duration,
    /// Short tries in a row.
    short: usize,
}

/// A try that lasted this long was healthy: the next pause starts from the beginning.
pub(crate) const HEALTHY_AFTER: Duration = Duration::from_secs(30);
/// The first pause after a short try.
pub(crate) const PAUSE_FIRST: Duration = Duration::from_millis(100);
/// The longest pause.
pub(crate) const PAUSE_CEILING: Duration = Duration::from_secs(30);

impl Pacing {
    pub(crate) fn new() -> Pacing {
        Pacing {
            next: PAUSE_FIRST,
            short: 0,
        }
    }

    /// The pause before the next try, after a try that lasted `lived`.
    ///
    /// # Errors
    ///
    /// [`Error::GaveUp`] after the crate's bound of short tries in a row.
    pub(crate) fn pause(&mut self, lived: Duration) -> Result<Duration> {
        if lived >= HEALTHY_AFTER {
            *self = Pacing::new();
            return Ok(Duration::ZERO);
        }
        self.short += 1;
        if self.short >= turns().end {
            return Err(gave_up());
        }
        let base = self.next;
        self.next = (self.next * 2).min(PAUSE_CEILING);
        // Full jitter over the upper half: between base/2 and base.
        let half = base / 2;
        let jitter = rand::thread_rng().gen_range(0..=half.as_micros() as u64);
        Ok(half + Duration::from_micros(jitter))
    }

    /// The pause before trying again after `error` ended a try that lasted `lived`: the
    /// paced pause, or longer when the client refuses the request for a while
    /// ([`zk_client::Error::ServerDropsRequest`]'s `retry_after`: sending it sooner would
    /// only fail again at once).
    ///
    /// # Errors
    ///
    /// As [`pause`](Self::pause).
    pub(crate) fn pause_after(
        &mut self,
        lived: Duration,
        error: &zk_client::Error,
    ) -> Result<Duration> {
        let paced = self.pause(lived)?;
        Ok(paced.max(refused_for(error).unwrap_or_default()))
    }

    /// Sleeps [`pause_after`](Self::pause_after)`(lived, error)`; `Ok(false)` when `stop`
    /// was cancelled first.
    ///
    /// # Errors
    ///
    /// As [`pause`](Self::pause).
    pub(crate) async fn wait_after(
        &mut self,
        lived: Duration,
        error: &zk_client::Error,
        stop: &CancellationToken,
    ) -> Result<bool> {
        let pause = self.pause_after(lived, error)?;
        sleep_unless(pause, stop).await
    }

    /// Sleeps [`pause`](Self::pause)`(lived)`; `Ok(false)` when `stop` was cancelled first.
    ///
    /// # Errors
    ///
    /// As [`pause`](Self::pause).
    pub(crate) async fn wait(&mut self, lived: Duration, stop: &CancellationToken) -> Result<bool> {
        let pause = self.pause(lived)?;
        sleep_unless(pause, stop).await
    }
}

/// Sleeps `pause`; `Ok(false)` when `stop` was cancelled first.
async fn sleep_unless(pause: Duration, stop: &CancellationToken) -> Result<bool> {
    if pause.is_zero() {
        return Ok(!stop.is_cancelled());
    }
    tokio::select! {
        _ = stop.cancelled() => Ok(false),
        _ = tokio::time::sleep(pause) => Ok(true),
    }
}

/// How long the client refuses to send the request that failed with `error`:
/// [`zk_client::Error::ServerDropsRequest`]'s `retry_after` (the rest of its quarantine).
pub(crate) fn refused_for(error: &zk_client::Error) -> Option<Duration> {
    match error {
        zk_client::Error::ServerDropsRequest { retry_after, .. } => Some(*retry_after),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_tries_back_off_with_jitter_up_to_the_ceiling_and_a_healthy_one_resets() {
        let mut pacing = Pacing::new();
        let mut last = Duration::ZERO;
        for turn in 0..20 {
            let pause = pacing.pause(Duration::from_millis(10)).unwrap();
            let base = (PAUSE_FIRST * 2u32.saturating_pow(turn)).min(PAUSE_CEILING);
            assert!(
                pause >= base / 2 && pause <= base,
                "turn {turn}: {pause:?} vs {base:?}"
            );
            if base < PAUSE_CEILING {
                assert!(pause >= last / 2, "grows: {pause:?} after {last:?}");
            }
            last = pause;
        }
        assert!(last >= PAUSE_CEILING / 2);
        assert_eq!(pacing.pause(HEALTHY_AFTER).unwrap(), Duration::ZERO);
        let again = pacing.pause(Duration::ZERO).unwrap();
        assert!(again <= PAUSE_FIRST, "reset: {again:?}");
    }

    #[test]
    fn a_refused_request_is_waited_out_for_its_quarantine() {
        let mut pacing = Pacing::new();
        let refused = zk_client::Error::ServerDropsRequest {
            op: zk_client::OpCode::AddWatch,
            path: Some("/app".into()),
            retry_after: Duration::from_secs(20),
        };
        let pause = pacing.pause_after(Duration::ZERO, &refused).unwrap();
        assert_eq!(pause, Duration::from_secs(20));
        // Other errors: the paced pause only (the second one: 100-200 ms).
        let pause = pacing
            .pause_after(Duration::ZERO, &zk_client::Error::ConnectionLoss)
            .unwrap();
        assert!(pause <= PAUSE_FIRST * 2, "{pause:?}");
    }

    #[test]
    fn pacing_ends_in_gave_up_after_the_crates_bound() {
        let mut pacing = Pacing::new();
        let mut outcome = Ok(Duration::ZERO);
        for _ in turns() {
            outcome = pacing.pause(Duration::ZERO);
            if outcome.is_err() {
                break;
            }
        }
        assert!(matches!(outcome, Err(Error::GaveUp)));
    }
}
