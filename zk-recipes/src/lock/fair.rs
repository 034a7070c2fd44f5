//! The fair lock: a FIFO queue of ephemeral-sequential nodes, Curator's `InterProcessMutex`
//! layout. Also the engine of both sides of the read/write lock.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use zk_client::{Client, SessionManager};

use super::support::{local_permit, Owner};
use crate::error::{Error, Result};
use crate::guard::{Hold, LockGuard, ReleaseHook};
use crate::path::check_base;
use crate::queue::naming::{Intent, MUTEX_LOCK_NAME};
use crate::queue::{acquire, participants, HandOff, Order, Participant, QueueSpec};
use crate::retry::{deadline_after, until, Pacing};
use crate::session::Source;

/// Who holds the lock in this process, for re-entry.
type Holder = Arc<Mutex<Option<(Owner, Weak<Hold>)>>>;

pub(crate) struct Inner {
    /// The session (a client), or a manager's current one at each acquisition.
    source: Source,
    /// Paces acquisitions that follow failures from ended sessions.
    failures: Mutex<Failures>,
    spec: QueueSpec,
    /// One local holder (or waiter in ZooKeeper) at a time per instance.
    local: Arc<Semaphore>,
    holder: Holder,
    /// For a read lock: the write lock of the same [`crate::lock::ReadWriteLock`], whose node does
    /// not block its own owner's read (a downgrade).
    companion: Option<Arc<Inner>>,
    /// The `kind` label of its lock metrics and spans; `None` for a lock inside another
    /// recipe (a semaphore's mutex), which that recipe reports under its own kind.
    kind: Option<&'static str>,
}

/// The pacing of an instance's acquisitions: after an acquisition failed because its session
/// ended (or the server drops the connection on its create), the next one waits a pause
/// growing with each such failure in a row (with jitter, up to the crate's ceiling), so a
/// user loop around `acquire` never spins on sessions that die at once; after the crate's
/// bound the acquisition fails with [`Error::GaveUp`]. A lock taken resets it.
#[derive(Debug)]
struct Failures {
    pacing: Pacing,
    /// No acquisition starts before this.
    not_before: Option<Instant>,
}

impl Failures {
    fn new() -> Failures {
        Failures {
            pacing: Pacing::new(),
            not_before: None,
        }
    }

    /// An acquisition that started at `started` ended with `result` (after the lock's
    /// mapping of a session's end to `LockLost(SessionEnded)`); returns the result to give
    /// the caller ([`Error::GaveUp`] once the bound is reached).
    fn note<T>(&mut self, started: Instant, result: Result<T>) -> Result<T> {
        let paced = match &result {
            Ok(_) => {
                *self = Failures::new();
                return result;
            }
            Err(Error::LockLost(crate::LossReason::SessionEnded)) => {
                self.pacing.pause(started.elapsed())
            }
            Err(Error::Client(e)) if crate::retry::refused_for(e).is_some() => {
                self.pacing.pause_after(started.elapsed(), e)
            }
            Err(_) => return result,
        };
        match paced {
            Ok(pause) => {
                self.not_before = Some(Instant::now() + pause);
                result
            }
            Err(gave_up) => Err(gave_up),
        }
    }
}

impl Inner {
    /// The hold of the current task (or thread), if it holds this instance.
    fn current_hold(&self) -> Option<Arc<Hold>> {
        let holder = self.holder.lock().ok()?;
        match holder.as_ref() {
            Some((owner, hold)) if *owner == Owner::current() => hold.upgrade(),
            _ => None,
        }
    }
}

/// A fair, re-entrant, distributed lock: waiters are served in the order they queued, and
/// each waits only for its immediate predecessor, so a release wakes exactly one waiter (by
/// default; [`with_hand_off`](Self::with_hand_off) trades a second notification for a faster
/// hand-off).
///
/// Nodes are `<path>/_c_<uuid>-lock-<seq>` (ephemeral sequential, parents created as
/// containers), the layout of Curator's `InterProcessMutex`, so Java processes using Curator
/// and Rust processes using this lock on the same path exclude each other. Nodes of kazoo and
/// go-zookeeper are ordered by their trailing sequence number too, so this lock never jumps a
/// holder from another library.
///
/// # Re-entrancy
///
/// Async code has no thread identity, so the identity is the tokio task (or, outside any
/// task, the thread of a `block_on`): `acquire` from the task that holds this instance
/// succeeds at once without a new node and returns another guard; the node is deleted when
/// every guard is released. Other tasks that share the instance wait locally, without
/// touching ZooKeeper, until the holder's last guard is released. [`LockGuard::reenter`] does
/// the same from anywhere the guard is. Two branches of one `join!` are the same task: do not
/// acquire from both.
///
/// # Cancel safety
///
/// Dropping an `acquire` future at any point leaves no node behind in a live session: if it
/// had created its node (or might have: a create whose reply is lost), the node is found by
/// its guid and deleted in the background, through reconnects if needed.
///
/// # Example
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use zk_recipes::lock::FairLock;
///
/// let client = zk_client::Client::connect("127.0.0.1:2181").await?;
/// let lock = FairLock::new(client, "/locks/reports")?;
/// match lock.acquire_timeout(Duration::from_secs(5)).await {
///     Ok(guard) => {
///         // ... exclusive work ...
///         guard.release().await?;
///     }
///     Err(e) if e.is_timeout() => println!("busy, try later"),
///     Err(e) => return Err(e.into()),
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct FairLock {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for FairLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FairLock")
            .field("path", &self.inner.spec.base)
            .field("lock_name", &self.inner.spec.lock_name)
            .finish()
    }
}

impl FairLock {
    /// A fair exclusive lock on `path` (the parent of the queue nodes).
    pub fn new(client: Client, path: &str) -> Result<FairLock> {
        Self::on(Source::Client(client), path)
    }

    /// A fair exclusive lock on `path` that takes each acquisition on `manager`'s current
    /// session: after an expiry, the next `acquire` queues on the manager's next session
    /// (a guard stays tied to the session it was acquired on, and is lost with it).
    ///
    /// Acquisitions in a loop are paced: after one failed because its session ended
    /// (`LockLost(SessionEnded)`, say while the manager has no live session yet) or because
    /// the server drops the connection on the lock's create
    /// ([`zk_client::Error::ServerDropsRequest`], then for at least its `retry_after`), the
    /// next acquisition of this instance (and its clones) first waits a pause that grows
    /// with each such failure in a row (100 ms doubling to 30 s, with jitter), and after the
    /// crate's bound fails with [`Error::GaveUp`]. A lock taken starts over. (A lock made
    /// with [`new`](Self::new) is paced the same way.)
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] for a relative path or the root.
    ///
    /// ```no_run
    /// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
    /// use zk_client::{Client, SessionManager};
    /// use zk_recipes::lock::FairLock;
    ///
    /// let manager = SessionManager::connect(Client::builder("127.0.0.1:2181")).await?;
    /// let lock = FairLock::new_managed(&manager, "/locks/reports")?;
    /// for _ in 0..10 {
    ///     match lock.acquire().await {
    ///         Ok(guard) => {
    ///             // ... exclusive work ...
    ///             guard.release().await?;
    ///             break;
    ///         }
    ///         // The session ended: the next try waits a growing pause first.
    ///         Err(e) if e.is_lock_lost() => continue,
    ///         Err(e) => return Err(e.into()),
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn new_managed(manager: &SessionManager, path: &str) -> Result<FairLock> {
        Self::on(Source::Manager(manager.clone()), path)
    }

    fn on(source: Source, path: &str) -> Result<FairLock> {
        Ok(Self::with_source(
            source,
            QueueSpec {
                base: check_base(path)?,
                lock_name: MUTEX_LOCK_NAME,
                intent: Intent::Write,
                data: None,
                hand_off: HandOff::default(),
            },
            None,
        ))
    }

    pub(crate) fn with_spec(
        client: Client,
        spec: QueueSpec,
        companion: Option<&FairLock>,
    ) -> FairLock {
        Self::with_source(Source::Client(client), spec, companion)
    }

    pub(crate) fn with_source(
        source: Source,
        spec: QueueSpec,
        companion: Option<&FairLock>,
    ) -> FairLock {
        let spec_lock_name = spec.lock_name;
        FairLock {
            inner: Arc::new(Inner {
                source,
                failures: Mutex::new(Failures::new()),
                spec,
                local: Arc::new(Semaphore::new(1)),
                holder: Arc::new(Mutex::new(None)),
                companion: companion.map(|c| c.inner.clone()),
                kind: Some(crate::metrics::kind_of(spec_lock_name)),
            }),
        }
    }

    /// The lock's path.
    pub fn path(&self) -> &str {
        &self.inner.spec.base
    }

    /// This lock with `data` as its nodes' owner data (a participant id, say) instead of
    /// Curator's default, the local host's address. Java peers read it with
    /// `getParticipantNodes()` and `getData`; [`participants`](Self::participants) shows it.
    ///
    /// Returns a new instance (it shares no local queue or re-entry with `self`); set it
    /// before sharing the lock.
    ///
    /// ```no_run
    /// # fn f(client: zk_client::Client) -> Result<(), zk_recipes::Error> {
    /// let lock = zk_recipes::lock::FairLock::new(client, "/locks/jobs")?.with_owner_data("worker-7");
    /// # Ok(()) }
    /// ```
    pub fn with_owner_data(&self, data: impl Into<Bytes>) -> FairLock {
        self.edited(|spec| spec.data = Some(data.into()))
    }

    /// This lock with `hand_off` as the way its waiters learn that the lock came to them
    /// (default [`HandOff::Lean`], ZooKeeper's recipe: a release wakes exactly one waiter).
    /// [`HandOff::Prepared`] hands a busy lock over in one round trip instead of two, for
    /// one more notification per release and one more server request per acquisition
    /// (about 1.5x the default's acquisitions per second in a deep queue).
    ///
    /// Returns a new instance (it shares no local queue or re-entry with `self`); set it
    /// before sharing the lock. Contenders with either setting, and those of other
    /// libraries, queue together as before.
    ///
    /// ```no_run
    /// # fn f(client: zk_client::Client) -> Result<(), zk_recipes::Error> {
    /// use zk_recipes::lock::{FairLock, HandOff};
    /// let lock = FairLock::new(client, "/locks/jobs")?.with_hand_off(HandOff::Prepared);
    /// assert_eq!(lock.hand_off(), HandOff::Prepared);
    /// # Ok(()) }
    /// ```
    pub fn with_hand_off(&self, hand_off: HandOff) -> FairLock {
        self.edited(|spec| spec.hand_off = hand_off)
    }

    /// How this lock's waiters learn that the lock came to them (see
    /// [`with_hand_off`](Self::with_hand_off)).
    pub fn hand_off(&self) -> HandOff {
        self.inner.spec.hand_off
    }

    /// A new instance (own local queue and re-entry, same companion and metrics kind) with
    /// this lock's spec changed by `edit`.
    pub(super) fn edited(&self, edit: impl FnOnce(&mut QueueSpec)) -> FairLock {
        let mut spec = self.inner.spec.clone();
        edit(&mut spec);
        FairLock {
            inner: Arc::new(Inner {
                source: self.inner.source.clone(),
                failures: Mutex::new(Failures::new()),
                spec,
                local: Arc::new(Semaphore::new(1)),
                holder: Arc::new(Mutex::new(None)),
                companion: self.inner.companion.clone(),
                kind: self.inner.kind,
            }),
        }
    }

    /// The owner data this lock's nodes carry, if chosen with
    /// [`with_owner_data`](Self::with_owner_data); `None`: Curator's default, the local
    /// host's address (resolved once per process, off the runtime, at the first acquisition).
    pub fn owner_data(&self) -> Option<&Bytes> {
        self.inner.spec.data.as_ref()
    }

    /// Everyone queued on this lock, holder first, with their owner data: Curator's
    /// `getParticipantNodes()` plus each node's data. Nodes of every library and side (a
    /// read/write lock's readers and writers) are listed in the shared queue order.
    ///
    /// # Errors
    ///
    /// [`Error::Client`] for ZooKeeper failures (connection losses are waited out);
    /// the session's end as [`Error::Client`] (`SessionExpired`, `Closed`, `AuthFailed`).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads.
    pub async fn participants(&self) -> Result<Vec<Participant>> {
        participants(
            &self.inner.source.client(),
            &self.inner.spec.base,
            Order::Sequence,
        )
        .await
    }

    /// Waits until the lock is held.
    ///
    /// # Errors
    ///
    /// - [`Error::LockLost`]`(`[`SessionEnded`](crate::LossReason::SessionEnded)`)` if the
    ///   session expired, was closed or failed authentication, before or while waiting;
    /// - [`Error::LockLost`]`(`[`NodeDeleted`](crate::LossReason::NodeDeleted)`)` if our queue
    ///   node was deleted by someone else while we waited, as seen by a listing of the queue
    ///   (a hand-off that needs no listing does not look again: then the guard reports the
    ///   loss, see [`HandOff`'s docs](HandOff#our-own-node-on-the-hand-off));
    /// - [`Error::Client`] for other ZooKeeper failures (connection losses are waited out,
    ///   not returned);
    /// - [`Error::GaveUp`] after the crate's bound of acquisitions in a row that failed
    ///   because their session ended: each such failure makes the next acquisition of this
    ///   instance wait a growing pause first (see [`new_managed`](Self::new_managed)).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future leaves no node behind (see the type's docs).
    pub async fn acquire(&self) -> Result<LockGuard> {
        self.acquire_until(None, false).await?.ok_or(Error::Timeout)
    }

    /// Waits at most `timeout` for the lock; on [`Error::Timeout`] our queue node is removed.
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`] when `timeout` passes first; otherwise as [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, like [`acquire`](Self::acquire).
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<LockGuard> {
        self.acquire_until(deadline_after(Some(timeout)), false)
            .await?
            .ok_or(Error::Timeout)
    }

    /// Takes the lock only if nobody holds it or waits ahead of us: `Ok(None)` otherwise (our
    /// queue node is removed before this returns).
    ///
    /// # Errors
    ///
    /// As [`acquire`](Self::acquire) (a session that ended is `LockLost(SessionEnded)`).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, like [`acquire`](Self::acquire).
    pub async fn try_acquire(&self) -> Result<Option<LockGuard>> {
        self.acquire_until(None, true).await
    }

    pub(crate) fn source(&self) -> &Source {
        &self.inner.source
    }

    pub(crate) fn spec(&self) -> &QueueSpec {
        &self.inner.spec
    }

    /// Waits for the lock until `deadline` (none: forever); [`Error::Timeout`] after it.
    pub(crate) async fn acquire_by(&self, deadline: Option<Instant>) -> Result<LockGuard> {
        self.acquire_until(deadline, false)
            .await?
            .ok_or(Error::Timeout)
    }

    /// Whether the current task (or thread) holds this instance.
    pub fn is_held_by_current_task(&self) -> bool {
        self.inner.current_hold().is_some()
    }

    async fn acquire_until(
        &self,
        deadline: Option<Instant>,
        try_only: bool,
    ) -> Result<Option<LockGuard>> {
        // Boxed once here: the acquisition's state is a few KiB, and every layer above
        // (metrics, timeout, the caller's own futures) would otherwise move it by value.
        let not_before = self.inner.failures.lock().ok().and_then(|f| f.not_before);
        if let Some(at) = not_before.filter(|at| *at > Instant::now()) {
            // Paced after failures from ended sessions (see `new_managed`).
            until(deadline, async {
                tokio::time::sleep_until(at).await;
                Ok(())
            })
            .await?;
        }
        let started = Instant::now();
        let inner = Box::pin(self.acquire_inner(deadline, try_only));
        let result = match self.inner.kind {
            Some(kind) => crate::metrics::acquire(kind, &self.inner.spec.base, inner).await,
            None => inner.await,
        };
        let result = result.map_err(Error::session_end_as_loss);
        match self.inner.failures.lock() {
            Ok(mut failures) => failures.note(started, result),
            Err(_) => result,
        }
    }

    async fn acquire_inner(
        &self,
        deadline: Option<Instant>,
        try_only: bool,
    ) -> Result<Option<LockGuard>> {
        if let Some(guard) = self.inner.current_hold().and_then(|h| h.try_reenter()) {
            return Ok(Some(guard));
        }
        let Some(permit) = local_permit(&self.inner.local, deadline, try_only).await? else {
            return Ok(None);
        };
        // A downgrade: this task holds the companion write lock, so our read node goes at
        // the write node's position (CURATOR-621) instead of the end of the queue. Only
        // while a guard holds it: a dropped guard's release may still be deleting the node,
        // and another writer may hold the lock already.
        let own_writer = self
            .inner
            .companion
            .as_ref()
            .and_then(|w| w.current_hold())
            .filter(|h| h.is_held())
            .map(|h| crate::path::name(h.path()).to_owned());
        let client = self.inner.source.client();
        let Some(acquired) = acquire(
            &client,
            &self.inner.spec,
            deadline,
            try_only,
            own_writer.as_deref(),
        )
        .await?
        else {
            return Ok(None);
        };
        let holder = self.inner.holder.clone();
        let hook = Box::new(move || {
            if let Ok(mut h) = holder.lock() {
                *h = None;
            }
            drop(permit);
        });
        let hook: ReleaseHook = match self.inner.kind {
            Some(kind) => crate::metrics::on_release(kind, &acquired.path, hook),
            None => hook,
        };
        let hold = Hold::new(
            client,
            acquired.path,
            acquired.stat,
            acquired.epoch,
            hook,
            false,
        );
        if let Ok(mut h) = self.inner.holder.lock() {
            *h = Some((Owner::current(), Arc::downgrade(&hold)));
        }
        Ok(Some(hold.into_guard()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retry::{turns, PAUSE_CEILING, PAUSE_FIRST};
    use crate::LossReason;

    fn pause_after(failures: &mut Failures, error: Error) -> Duration {
        let now = Instant::now();
        let out: Result<()> = failures.note(now, Err(error));
        assert!(out.is_err());
        failures
            .not_before
            .expect("paced")
            .saturating_duration_since(now)
    }

    #[test]
    fn acquisitions_after_ended_sessions_back_off_and_a_lock_taken_resets() {
        let mut failures = Failures::new();
        let lost = || Error::LockLost(LossReason::SessionEnded);
        let pauses: Vec<Duration> = (0..12)
            .map(|_| pause_after(&mut failures, lost()))
            .collect();
        assert!(pauses[0] >= PAUSE_FIRST / 2, "{pauses:?}");
        assert!(pauses[3] >= PAUSE_FIRST * 4, "grows: {pauses:?}");
        assert!(
            pauses
                .iter()
                .all(|p| *p <= PAUSE_CEILING + Duration::from_millis(50)),
            "up to the ceiling: {pauses:?}"
        );
        assert!(pauses[11] >= PAUSE_CEILING / 2, "{pauses:?}");
        // Another error (a timeout, a deleted node) neither paces nor resets.
        let before = failures.not_before;
        let _ = failures.note::<()>(Instant::now(), Err(Error::Timeout));
        assert_eq!(failures.not_before, before);
        // A lock taken starts over.
        assert!(failures.note(Instant::now(), Ok(())).is_ok());
        assert_eq!(failures.not_before, None);
        assert!(pause_after(&mut failures, lost()) <= PAUSE_FIRST);
    }

    #[test]
    fn a_refused_create_is_waited_out_and_the_bound_ends_in_gave_up() {
        let mut failures = Failures::new();
        let refused = Error::Client(zk_client::Error::ServerDropsRequest {
            op: zk_client::OpCode::Create2,
            path: Some("/locks/a".into()),
            retry_after: Duration::from_secs(20),
        });
        assert!(pause_after(&mut failures, refused) >= Duration::from_secs(20));
        let mut last = Ok(());
        for _ in turns() {
            last = failures.note(
                Instant::now(),
                Err(Error::LockLost(LossReason::SessionEnded)),
            );
            if matches!(last, Err(Error::GaveUp)) {
                break;
            }
        }
        assert!(matches!(last, Err(Error::GaveUp)), "{last:?}");
    }
}
