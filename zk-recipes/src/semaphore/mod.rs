//! Counting semaphores, Curator's `InterProcessSemaphoreV2` layout, and the lock built on
//! them ([`SemaphoreMutex`]).
//!
//! ```text
//! <path>/locks/_c_<uuid>-lock-<seq>     a fair mutex: one contender at a time adds a lease
//! <path>/leases/_c_<uuid>-lease-<seq>   one node per lease held (or being waited for)
//! ```
//!
//! To take a lease: take the `locks` mutex, create our lease node (protected, ephemeral
//! sequential), list `leases` until it has at most `max` children (watching it while it has
//! more), release the mutex. Releasing a lease deletes its node. The lease count is not
//! stored in ZooKeeper: every participant, Java or Rust, must be configured with the same.

mod mutex;
mod wait;

use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;
use tracing::debug;
use zk_client::Client;

use crate::error::{Error, LossReason, Result};
use crate::guard::{Hold, LockGuard};
use crate::path::check_base;
use crate::queue::naming::{Intent, MUTEX_LOCK_NAME};
use crate::queue::{
    acquire, create_node, detached, participants, HandOff, Order, Orphan, Participant, Protected,
    QueueSpec,
};
use crate::retry::{deadline_after, until};
use crate::state::LockState;

pub use mutex::SemaphoreMutex;

/// Curator's `InterProcessSemaphoreV2.LOCK_PARENT`.
const LOCK_PARENT: &str = "locks";
/// Curator's `InterProcessSemaphoreV2.LEASE_PARENT`.
const LEASE_PARENT: &str = "leases";
/// Curator's `InterProcessSemaphoreV2.LEASE_BASE_NAME`.
const LEASE_NAME: &str = "lease-";
/// How many times one acquisition re-creates a waiting lease node deleted by someone else.
const REQUEUES: usize = 100;
/// The `kind` label of the semaphore's lock metrics (one acquisition per lease).
const METRICS_KIND: &str = "semaphore";

/// A lease of a [`Semaphore`]: a guard over our lease node, with everything a [`LockGuard`]
/// offers (the same `Held` / `Suspended` / `Lost` signal, fencing token, fenced writes).
/// Releasing it (or dropping it) deletes the lease node and frees the lease.
pub type Lease = LockGuard;

/// A distributed counting semaphore: at most `max_leases` leases are held at once, across
/// every process (Rust or Java with Curator's `InterProcessSemaphoreV2`) using the same path
/// and the same count.
///
/// Waiters queue fairly on the `locks` mutex; only its holder watches the leases, so a
/// released lease wakes one waiter. A waiting lease node that someone else deletes is made
/// again and the wait goes on.
///
/// # Cancel safety
///
/// Dropping an acquisition at any point leaves no lease node behind in a live session: a
/// node it created (or may have created: a create whose reply was lost) is found by its guid
/// and deleted in the background, and leases already taken by an `acquire_many` are released.
///
/// # Example
///
/// ```no_run
/// # async fn demo(client: zk_client::Client) -> Result<(), zk_recipes::Error> {
/// use std::time::Duration;
/// use zk_recipes::semaphore::Semaphore;
///
/// let slots = Semaphore::new(client, "/limits/exports", 3)?;
/// let lease = slots.acquire_timeout(Duration::from_secs(10)).await?;
/// // ... at most 3 of these run at once ...
/// lease.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Semaphore {
    client: Client,
    path: String,
    max_leases: usize,
    /// The `locks` mutex: a fair queue in Curator's `InterProcessMutex` layout.
    mutex: QueueSpec,
    leases: QueueSpec,
}

impl Semaphore {
    /// A semaphore on `path` with `max_leases` leases.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] for an unusable path; [`Error::InvalidArgument`] when
    /// `max_leases` is 0.
    pub fn new(client: Client, path: &str, max_leases: usize) -> Result<Semaphore> {
        let path = check_base(path)?;
        if max_leases == 0 {
            return Err(Error::InvalidArgument(
                "a semaphore needs at least one lease",
            ));
        }
        let mutex = QueueSpec {
            base: format!("{path}/{LOCK_PARENT}"),
            lock_name: MUTEX_LOCK_NAME,
            intent: Intent::Write,
            data: None,
            hand_off: HandOff::default(),
        };
        let leases = QueueSpec {
            base: format!("{path}/{LEASE_PARENT}"),
            lock_name: LEASE_NAME,
            intent: Intent::Write,
            data: None,
            hand_off: HandOff::default(),
        };
        Ok(Semaphore {
            client,
            path,
            max_leases,
            mutex,
            leases,
        })
    }

    /// This semaphore with `data` as the owner data of its lease (and mutex) nodes, instead
    /// of Curator's default, the local host's address. Returns a new instance.
    pub fn with_owner_data(&self, data: impl Into<Bytes>) -> Semaphore {
        let data = data.into();
        let mut this = self.clone();
        this.mutex.data = Some(data.clone());
        this.leases.data = Some(data);
        this
    }

    /// The semaphore's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// How many leases the semaphore has.
    pub fn max_leases(&self) -> usize {
        self.max_leases
    }

    /// Waits for one lease.
    ///
    /// # Errors
    ///
    /// [`Error::LockLost`] if the session ended (`SessionEnded`), or (`NodeDeleted`) our
    /// waiting lease node was deleted by someone else more than 100 times in one acquisition
    /// (each time it is re-created and the wait goes on, as in Curator); [`Error::Client`]
    /// for other ZooKeeper failures (connection losses are waited out).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: see the type's docs.
    pub async fn acquire(&self) -> Result<Lease> {
        self.acquire_one(None).await
    }

    /// Waits at most `timeout` for one lease; on [`Error::Timeout`] nothing of ours is left.
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`]; otherwise as [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: see the type's docs.
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Lease> {
        self.acquire_one(deadline_after(Some(timeout))).await
    }

    /// Waits for `n` leases, taken one after the other. All or nothing: when one cannot be
    /// had, those already taken are released.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `n` is 0 or more than [`max_leases`](Self::max_leases);
    /// otherwise as [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: see the type's docs.
    pub async fn acquire_many(&self, n: usize) -> Result<Vec<Lease>> {
        self.acquire_many_by(n, None).await
    }

    /// Waits at most `timeout` for `n` leases, taken one after the other, all within
    /// `timeout`. All or nothing, as [`acquire_many`](Self::acquire_many).
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`]; otherwise as [`acquire_many`](Self::acquire_many).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: see the type's docs.
    pub async fn acquire_many_timeout(&self, n: usize, timeout: Duration) -> Result<Vec<Lease>> {
        self.acquire_many_by(n, deadline_after(Some(timeout))).await
    }

    async fn acquire_many_by(&self, n: usize, deadline: Option<Instant>) -> Result<Vec<Lease>> {
        if n == 0 || n > self.max_leases {
            return Err(Error::InvalidArgument(
                "the number of leases must be between 1 and the semaphore's max_leases",
            ));
        }
        let mut taken = Vec::with_capacity(n);
        for _ in 0..n {
            match self.acquire_one(deadline).await {
                Ok(lease) => taken.push(lease),
                Err(e) => {
                    release_all(taken).await;
                    return Err(e);
                }
            }
        }
        Ok(taken)
    }

    /// The lease nodes (held, or being waited for by the `locks` mutex's holder) in sequence
    /// order with their owner data: Curator's `getParticipantNodes()` plus the data.
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
        participants(&self.client, &self.leases.base, Order::Sequence).await
    }

    /// One lease, within the `semaphore` kind's metrics and span.
    pub(crate) async fn acquire_one(&self, deadline: Option<Instant>) -> Result<Lease> {
        let lease = async { self.acquire_unmetered(deadline).await.map(Some) };
        crate::metrics::acquire(METRICS_KIND, &self.path, lease)
            .await?
            .ok_or(Error::Timeout)
    }

    async fn acquire_unmetered(&self, deadline: Option<Instant>) -> Result<Lease> {
        let mutex = self.lock_mutex(deadline).await?;
        let mut lease = Err(Error::Timeout);
        for _ in 0..REQUEUES {
            lease = self
                .add_lease(deadline)
                .await
                .map_err(Error::session_end_as_loss);
            // Our waiting lease node was deleted by someone else while the session lives:
            // as Curator, queue again with a new one (we held nothing yet), as long as we
            // still hold the mutex.
            let requeue = matches!(lease, Err(Error::LockLost(LossReason::NodeDeleted)))
                && !matches!(mutex.state(), LockState::Lost(_));
            if !requeue {
                break;
            }
            debug!(path = %self.path, "our waiting lease node was deleted; queueing again");
        }
        if let Err(e) = mutex.release().await {
            debug!(path = %self.path, error = %e, "semaphore mutex release failed");
        }
        lease
    }

    /// Takes the `locks` mutex by `deadline`.
    async fn lock_mutex(&self, deadline: Option<Instant>) -> Result<LockGuard> {
        let acquired = acquire(&self.client, &self.mutex, deadline, false, None)
            .await
            .map_err(Error::session_end_as_loss)?
            .ok_or(Error::Timeout)?;
        let hook = Box::new(|| {});
        Ok(Hold::new(
            self.client.clone(),
            acquired.path,
            acquired.stat,
            acquired.epoch,
            hook,
            false,
        )
        .into_guard())
    }

    /// Under the mutex: creates our lease node and waits for room.
    async fn add_lease(&self, deadline: Option<Instant>) -> Result<Lease> {
        let nodes = Protected::new(&self.leases.base);
        let mut orphan = Orphan {
            client: self.client.clone(),
            nodes: nodes.clone(),
            node: None,
        }
        .guard();
        let waited = until(deadline, async {
            let (name, stat) = create_node(&self.client, &self.leases, &nodes, None).await?;
            if let Some(o) = orphan.state_mut() {
                o.node = Some(name.clone());
            }
            let epoch =
                wait::wait_for_room(&self.client, &self.leases.base, &name, self.max_leases)
                    .await?;
            Ok((format!("{}/{name}", self.leases.base), stat, epoch))
        })
        .await;
        match waited {
            Ok((path, stat, epoch)) => {
                orphan.disarm();
                let hook = crate::metrics::on_release(METRICS_KIND, &path, Box::new(|| {}));
                Ok(Hold::new(self.client.clone(), path, stat, epoch, hook, false).into_guard())
            }
            Err(e) => {
                // Removed before the mutex goes to the next contender, which would otherwise
                // count our node; detached, so a cancellation cannot stop it halfway.
                if let Some(o) = orphan.disarm() {
                    detached(o.remove()).await;
                }
                Err(e)
            }
        }
    }
}

/// Releases leases in reverse order of taking, ignoring the outcome (they are being given
/// back because the whole acquisition failed).
async fn release_all(leases: Vec<Lease>) {
    for lease in leases.into_iter().rev() {
        if let Err(e) = lease.release().await {
            debug!(error = %e, "releasing a lease after a failed acquisition");
        }
    }
}
