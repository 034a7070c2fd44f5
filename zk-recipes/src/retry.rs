//! The recipes' retry toolkit: every loop that waits out a connection loss goes through here.
//!
//! A recipe never re-sends an operation on a new session (expiry is terminal for the client)
//! and never retries a non-idempotent create blindly (ZOOKEEPER-22): a connection loss is
//! waited out with [`wait_connected`], and the caller then decides what to do again (a read is
//! simply repeated, a create looks for its node by guid first).

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;
use zk_client::{Client, SessionState};

use crate::error::{Error, LossReason, Result};

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

/// Waits until the client is connected to a read/write server again.
///
/// Fails with [`Error::LockLost`] when the session ended: a lock, a lease or a queue position
/// cannot survive that, and the client never opens a new session by itself.
pub(crate) async fn wait_connected(client: &Client) -> Result<()> {
    let mut states = client.state_watcher();
    // Bounded: each turn waits for a state change; the session ends after finitely many.
    loop {
        match states.current() {
            SessionState::Connected => return Ok(()),
            SessionState::Expired | SessionState::Closed | SessionState::AuthFailed => {
                return Err(Error::LockLost(LossReason::SessionEnded))
            }
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

/// Converts an optional timeout into a deadline.
pub(crate) fn deadline_after(timeout: Option<Duration>) -> Option<Instant> {
    timeout.map(|t| Instant::now() + t)
}
