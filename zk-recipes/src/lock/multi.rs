//! Several locks as one, Curator's `InterProcessMultiLock`: taken in order, released in
//! reverse, all or nothing.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::time::Instant;
use tracing::debug;

use super::{ExclusiveLock, FairLock};
use crate::error::{Error, Result};
use crate::guard::LockGuard;
use crate::queue::Released;
use crate::retry::deadline_after;

/// The future of [`Lock::acquire_until`].
pub type AcquireFuture<'a> = Pin<Box<dyn Future<Output = Result<LockGuard>> + Send + 'a>>;

/// A lock a [`MultiLock`] can take: [`FairLock`] (either side of a
/// [`ReadWriteLock`](crate::lock::ReadWriteLock) too), [`ExclusiveLock`], [`SemaphoreMutex`](crate::semaphore::SemaphoreMutex).
pub trait Lock: Send + Sync + std::fmt::Debug {
    /// Waits for the lock until `deadline` (none: no limit).
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`] once `deadline` passes (nothing of ours is left); otherwise the
    /// lock's own `acquire` errors.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, like the lock's `acquire`.
    fn acquire_until(&self, deadline: Option<Instant>) -> AcquireFuture<'_>;
}

impl Lock for FairLock {
    fn acquire_until(&self, deadline: Option<Instant>) -> AcquireFuture<'_> {
        Box::pin(self.acquire_by(deadline))
    }
}

impl Lock for ExclusiveLock {
    fn acquire_until(&self, deadline: Option<Instant>) -> AcquireFuture<'_> {
        Box::pin(async move {
            match remaining(deadline) {
                None => self.acquire().await,
                Some(left) => self.acquire_timeout(left).await,
            }
        })
    }
}

/// What is left of `deadline` (`None`: no deadline).
fn remaining(deadline: Option<Instant>) -> Option<std::time::Duration> {
    deadline.map(|at| at.saturating_duration_since(Instant::now()))
}

/// Several locks held as one: acquired in the order given, released in reverse; if one
/// cannot be had (error or timeout), the ones already taken are released before the
/// acquisition returns. Give every process the same order, or two of them can each hold a
/// part and wait for the other's forever (until their timeouts).
///
/// # Cancel safety
///
/// Dropping an acquisition releases the locks it had taken in the background (each on a task
/// of its own, started last taken first: the server may see them in another order), and the
/// lock it was waiting for leaves nothing behind, as each lock's own `acquire` promises.
///
/// # Example
///
/// ```no_run
/// # async fn demo(client: zk_client::Client) -> Result<(), zk_recipes::Error> {
/// use std::time::Duration;
/// use zk_recipes::lock::{FairLock, MultiLock};
///
/// let both = MultiLock::new(vec![
///     Box::new(FairLock::new(client.clone(), "/locks/account-1")?),
///     Box::new(FairLock::new(client, "/locks/account-2")?),
/// ]);
/// let guard = both.acquire_timeout(Duration::from_secs(5)).await?;
/// // ... move money between the two accounts ...
/// guard.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct MultiLock {
    locks: Vec<Box<dyn Lock>>,
}

impl MultiLock {
    /// The locks, in acquisition order.
    pub fn new(locks: Vec<Box<dyn Lock>>) -> MultiLock {
        MultiLock { locks }
    }

    /// Waits until every lock is held.
    ///
    /// # Errors
    ///
    /// The first lock's error that stopped the acquisition (see each lock's `acquire`); the
    /// locks taken before it are released first.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: see the type's docs.
    pub async fn acquire(&self) -> Result<MultiGuard> {
        self.acquire_until(None).await
    }

    /// Waits at most `timeout` for all the locks together.
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`] when `timeout` passes first (nothing is left held); otherwise as
    /// [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: see the type's docs.
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<MultiGuard> {
        self.acquire_until(deadline_after(Some(timeout))).await
    }

    async fn acquire_until(&self, deadline: Option<Instant>) -> Result<MultiGuard> {
        let mut taken = MultiGuard {
            guards: Vec::with_capacity(self.locks.len()),
        };
        for lock in &self.locks {
            match lock.acquire_until(deadline).await {
                Ok(guard) => taken.guards.push(guard),
                Err(e) => {
                    if let Err(undo) = taken.release().await {
                        debug!(error = %undo, "releasing a multi-lock's part after a failure");
                    }
                    return Err(e);
                }
            }
        }
        Ok(taken)
    }
}

/// The guards of a [`MultiLock`], in acquisition order. Releasing it releases them in
/// reverse order; dropping it starts their releases in the background, last taken first,
/// each on a task of its own (so the server may see them in another order).
#[derive(Debug)]
pub struct MultiGuard {
    guards: Vec<LockGuard>,
}

impl MultiGuard {
    /// The guards, in acquisition order: each has its own state, loss signal and fencing.
    pub fn guards(&self) -> &[LockGuard] {
        &self.guards
    }

    /// Releases every lock, last taken first, and says for each (in acquisition order) what
    /// its release did.
    ///
    /// # Errors
    ///
    /// The first error of a release ([`LockGuard::release`]); the other locks are released
    /// all the same.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: the locks not released yet are released in the background when the
    /// future is dropped.
    pub async fn release(mut self) -> Result<Vec<Released>> {
        let mut outcomes = Vec::with_capacity(self.guards.len());
        let mut first_error: Option<Error> = None;
        while let Some(guard) = self.guards.pop() {
            match guard.release().await {
                Ok(released) => outcomes.push(released),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => {
                outcomes.reverse();
                Ok(outcomes)
            }
        }
    }
}

impl Drop for MultiGuard {
    fn drop(&mut self) {
        // Last taken first (a Vec would drop front to back).
        while let Some(guard) = self.guards.pop() {
            drop(guard);
        }
    }
}
