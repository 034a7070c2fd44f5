//! Curator's `InterProcessSemaphoreMutex`: a semaphore with one lease.

use std::time::Duration;

use bytes::Bytes;
use zk_client::Client;

use tokio::time::Instant;

use super::{Lease, Semaphore};
use crate::error::Result;
use crate::lock::{AcquireFuture, Lock};
use crate::queue::Participant;

/// A non-re-entrant distributed mutex on the semaphore layout (`<path>/locks` and
/// `<path>/leases`) with one lease: Curator's `InterProcessSemaphoreMutex`, which Java peers
/// may use on the same path. Unlike [`FairLock`](crate::lock::FairLock) a second `acquire` from the
/// holder waits for its own release: hold one guard per critical section.
///
/// # Example
///
/// ```no_run
/// # async fn demo(client: zk_client::Client) -> Result<(), zk_recipes::Error> {
/// let mutex = zk_recipes::semaphore::SemaphoreMutex::new(client, "/locks/migration")?;
/// let guard = mutex.acquire().await?;
/// guard.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SemaphoreMutex {
    semaphore: Semaphore,
}

impl SemaphoreMutex {
    /// A mutex on `path`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) for an unusable path.
    pub fn new(client: Client, path: &str) -> Result<SemaphoreMutex> {
        Ok(SemaphoreMutex {
            semaphore: Semaphore::new(client, path, 1)?,
        })
    }

    /// This mutex with `data` as its nodes' owner data. Returns a new instance.
    pub fn with_owner_data(&self, data: impl Into<Bytes>) -> SemaphoreMutex {
        SemaphoreMutex {
            semaphore: self.semaphore.with_owner_data(data),
        }
    }

    /// The mutex's path.
    pub fn path(&self) -> &str {
        self.semaphore.path()
    }

    /// Waits until the mutex is held.
    ///
    /// # Errors
    ///
    /// As [`Semaphore::acquire`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`Semaphore`].
    pub async fn acquire(&self) -> Result<Lease> {
        self.semaphore.acquire().await
    }

    /// Waits at most `timeout`.
    ///
    /// # Errors
    ///
    /// As [`Semaphore::acquire_timeout`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`Semaphore`].
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Lease> {
        self.semaphore.acquire_timeout(timeout).await
    }

    /// The holder's (and a waiter's) lease nodes with owner data.
    ///
    /// # Errors
    ///
    /// As [`Semaphore::participants`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads.
    pub async fn participants(&self) -> Result<Vec<Participant>> {
        self.semaphore.participants().await
    }
}

impl Lock for SemaphoreMutex {
    fn acquire_until(&self, deadline: Option<Instant>) -> AcquireFuture<'_> {
        Box::pin(self.semaphore.acquire_one(deadline))
    }
}
