//! The guard of a held lock: release, re-entry, fencing and loss signalling.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use tracing::{debug, warn};
use zk_client::{Client, Op, OpResult, Stat, Transitions};

use crate::error::{Error, LossReason, Result};
use crate::queue::{delete_guaranteed, in_background, BoxTask, OnDrop, Released};
use crate::state::{monitor, LockState, Published};

/// Runs once when the last guard of a hold is gone: frees the local slot of the lock.
pub(crate) type ReleaseHook = Box<dyn FnOnce() + Send + Sync>;

/// One acquisition of a lock node, shared by the guard and its re-entries.
pub(crate) struct Hold {
    client: Client,
    path: String,
    stat: Stat,
    count: AtomicUsize,
    state: Arc<Published>,
    /// The loss monitor, started the first time the state is observed.
    monitor: OnceLock<tokio::task::AbortHandle>,
    hook: Mutex<Option<ReleaseHook>>,
    /// Whether a revocation watch (a getData watch on our node) was ever set.
    revocation_watched: AtomicBool,
    /// The path is the lock's own and the next holder creates its node there too (the
    /// exclusive lock): "a node at the path" is not "our node", so deletes and fences check
    /// the czxid. Queue nodes have unique names and need no such check.
    reused_path: bool,
}

impl Hold {
    /// A freshly acquired node, seen at the head of its queue on the connection of `epoch`
    /// (the client's [`connection_epoch`](Client::connection_epoch) read before the request
    /// that showed it). Nothing watches it until its state is first observed. `reused_path`:
    /// see the field.
    pub(crate) fn new(
        client: Client,
        path: String,
        stat: Stat,
        epoch: u64,
        hook: ReleaseHook,
        reused_path: bool,
    ) -> Arc<Hold> {
        Arc::new(Hold {
            client,
            path,
            stat,
            count: AtomicUsize::new(1),
            state: Published::new(epoch),
            monitor: OnceLock::new(),
            hook: Mutex::new(Some(hook)),
            revocation_watched: AtomicBool::new(false),
            reused_path,
        })
    }

    /// Starts the loss monitor if it is not running yet (and a runtime is there to run it).
    fn observe(&self) {
        if self.monitor.get().is_some() {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        self.monitor.get_or_init(|| {
            // Until now nobody published: start the receivers from what is known now (say,
            // `Suspended` after a reconnect nobody looked at), before the monitor publishes.
            self.state.publish_initial(&self.client);
            let task = monitor(self.client.clone(), self.path.clone(), self.state.clone());
            handle.spawn(task).abort_handle()
        });
    }

    /// What is known now: the monitor's verdict, overridden by the session's own state and
    /// connection epoch (always current, monitored or not; see [`crate::state::decide`]).
    fn current(&self) -> LockState {
        self.state.current(&self.client)
    }

    /// The guard of a fresh hold (its count already is 1).
    pub(crate) fn into_guard(self: Arc<Self>) -> LockGuard {
        LockGuard {
            hold: self,
            active: true,
        }
    }

    /// Whether a guard still holds it (not all released, even if a release is still
    /// deleting the node) and it is not known lost.
    pub(crate) fn is_held(&self) -> bool {
        self.count.load(Ordering::Acquire) > 0 && !matches!(self.current(), LockState::Lost(_))
    }

    /// Path of the lock node.
    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    /// Adds a nested hold if the lock is still held (count > 0).
    pub(crate) fn try_reenter(self: &Arc<Self>) -> Option<LockGuard> {
        let mut current = self.count.load(Ordering::Acquire);
        while current > 0 {
            match self.count.compare_exchange(
                current,
                current + 1,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    return Some(LockGuard {
                        hold: self.clone(),
                        active: true,
                    })
                }
                Err(seen) => current = seen,
            }
        }
        None
    }

    async fn finish(self: Arc<Self>) -> Result<Released> {
        let monitored = self.monitor.get().inspect(|m| m.abort()).is_some()
            || self.revocation_watched.load(Ordering::Acquire);
        let result = if let LockState::Lost(reason) = self.current() {
            // Nothing to delete: the session took the node, or the monitor saw it deleted
            // (and a node at the same path now, an exclusive lock's, would be someone else's).
            Ok(Released::AlreadyGone(reason))
        } else if monitored {
            // Drop the monitor's watch on our node first, in the same flush as the delete
            // (requests are ordered at call time), so that the delete notifies only the next
            // waiter: one release, one server notification.
            let removal = self
                .client
                .remove_watches(&self.path, zk_client::WatcherType::Data);
            let deleted = delete_guaranteed(&self.client, &self.path, self.owner()).await;
            let _ = removal.await;
            deleted
        } else {
            delete_guaranteed(&self.client, &self.path, self.owner()).await
        };
        debug!(path = %self.path, "lock released");
        self.run_hook();
        result
    }

    /// The czxid our node must have for a delete or a fence, on a reused path.
    fn owner(&self) -> Option<i64> {
        self.reused_path.then_some(self.stat.czxid)
    }

    /// The check a fenced write starts with: our node exists, and on a reused path it is
    /// still the one we created (same czxid) at the version seen now. On a reused path this
    /// reads the node first: a node deleted and re-created by the next holder within that one
    /// round trip, at the same version, is the case no ZooKeeper operation can tell apart.
    async fn fence(&self) -> Result<Op> {
        if !self.reused_path {
            return Ok(Op::check(&self.path, None));
        }
        match self.client.exists(&self.path).await? {
            Some(stat) if stat.czxid == self.stat.czxid => {
                Ok(Op::check(&self.path, Some(stat.version)))
            }
            _ => Err(Error::LockLost(LossReason::NodeDeleted)),
        }
    }

    fn run_hook(&self) {
        let hook = self.hook.lock().map(|mut h| h.take()).unwrap_or(None);
        if let Some(hook) = hook {
            hook();
        }
    }
}

/// Proof that a lock is held. Release it with [`LockGuard::release`]; dropping it releases
/// in the background.
///
/// # Example
///
/// ```no_run
/// # async fn demo(client: zk_client::Client) -> Result<(), zk_recipes::Error> {
/// use zk_recipes::lock::{FairLock, LockState};
///
/// let lock = FairLock::new(client, "/locks/jobs")?;
/// let guard = lock.acquire().await?;
/// println!("fencing token {}", guard.fencing_token());
/// assert_eq!(guard.state(), LockState::Held);
/// assert_eq!(guard.release().await?, zk_recipes::lock::Released::Deleted);
/// # Ok(()) }
/// ```
pub struct LockGuard {
    hold: Arc<Hold>,
    active: bool,
}

impl std::fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockGuard")
            .field("path", &self.hold.path)
            .field("state", &self.hold.current())
            .finish()
    }
}

impl LockGuard {
    /// Path of our lock node (as the client sees it, chroot excluded).
    pub fn path(&self) -> &str {
        &self.hold.path
    }

    /// The lock node's name (last path segment).
    pub fn node_name(&self) -> &str {
        crate::path::name(&self.hold.path)
    }

    /// A fencing token: the zxid that created our lock node. Every later holder of the same
    /// lock gets a larger one, so a resource that remembers the largest token it has seen can
    /// refuse a stale holder's late writes.
    pub fn fencing_token(&self) -> i64 {
        self.hold.stat.czxid
    }

    /// The stat of our lock node when it was created.
    pub fn stat(&self) -> &Stat {
        &self.hold.stat
    }

    /// What we currently know about the lock.
    ///
    /// `Held` only while the client is connected (read/write) on the same connection on
    /// which our node was last seen: right after a reconnect it is `Suspended` until the
    /// guard has seen its node again (one `exists`, done by its monitor). The session's state
    /// is always reflected; a deletion of the node is noticed from the first time the state
    /// is observed (this call, [`watch`](Self::watch), [`lost`](Self::lost) or
    /// [`suspended_or_lost`](Self::suspended_or_lost)), which starts watching the node. A guard
    /// nobody observes costs no request beyond the acquisition and the release.
    pub fn state(&self) -> LockState {
        self.hold.observe();
        self.hold.current()
    }

    /// Follows the lock's state: every change from now on, in order (`Held` → `Suspended` →
    /// `Held` ..., then `Lost`), even a disconnection that is over before the receiver looks,
    /// with [`current`](Transitions::current) for the state now. Starts watching the node.
    ///
    /// The same [`Transitions`] type follows the session
    /// ([`Client::watch`](zk_client::Client::watch)) and leadership
    /// ([`LeaderLatch::watch`](crate::leader::LeaderLatch::watch)). It reports the changes made after
    /// it was created (ask [`state`](Self::state) for the state then). If it falls more than
    /// [`zk_client::HISTORY`] changes behind, it skips to the latest state, still reporting a
    /// `Suspended` before a `Held` when changes were skipped, so no suspension goes
    /// unreported ([`Transitions::missed`] counts the skipped ones). A receiver that outlives
    /// the guard ends with `Lost(Released)`. Also a `futures_core::Stream` of the same items,
    /// which ends after `Lost`.
    ///
    /// ```no_run
    /// # async fn f(guard: zk_recipes::lock::LockGuard) {
    /// use zk_recipes::lock::LockState;
    /// let mut states = guard.watch();
    /// loop {
    ///     match states.changed().await {
    ///         LockState::Suspended => println!("pause the work: the lock may be lost"),
    ///         LockState::Held => println!("resume: the node was seen again"),
    ///         LockState::Lost(reason) => break println!("abandon the work: {reason}"),
    ///     }
    /// }
    /// # }
    /// ```
    pub fn watch(&self) -> Transitions<LockState> {
        // Subscribed before the monitor can start, so it misses none of its changes.
        let transitions = self.hold.state.transitions();
        self.hold.observe();
        transitions
    }

    /// Resolves when the lock may no longer be ours: on `Suspended` (connection lost, possible
    /// loss) or `Lost` (certain loss), including a suspension that is already over when this
    /// future is next polled. Returns that state (at once if [`state`](Self::state) is not
    /// `Held` now).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe (it holds no resource), but a suspension that happens while no call is
    /// pending is not reported by a later call once it is over: keep one future, or use
    /// [`watch`](Self::watch), to follow a long piece of work.
    pub async fn suspended_or_lost(&self) -> LockState {
        let mut transitions = self.watch();
        let now = self.hold.current();
        if now != LockState::Held {
            return now;
        }
        // Bounded by the hold: `Lost` is final and comes when the hold ends at the latest.
        transitions.wait_for(|s| s != LockState::Held).await
    }

    /// Resolves when the lock is certainly lost, with the reason.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it holds no resource and `Lost` is final, so a later call sees it.
    pub async fn lost(&self) -> LossReason {
        let mut rx = self.watch();
        if let LockState::Lost(reason) = self.hold.current() {
            return reason;
        }
        match rx.wait_for(|s| matches!(s, LockState::Lost(_))).await {
            LockState::Lost(reason) => reason,
            _ => LossReason::SessionEnded,
        }
    }

    /// Resolves when someone asks us to release the lock: our node's data became
    /// `__REVOKE__` ([`revoke`](crate::lock::revoke), or Curator's `Revoker.attemptRevoke` from
    /// Java). Revocation is cooperative: nothing is released until the holder does it.
    ///
    /// Keeps a data watch on our node while pending (removed with the release).
    ///
    /// ```no_run
    /// # async fn f(guard: zk_recipes::lock::LockGuard) -> Result<(), zk_recipes::Error> {
    /// tokio::select! {
    ///     _ = guard.revocation_requested() => println!("asked to let go"),
    ///     _ = tokio::time::sleep(std::time::Duration::from_secs(60)) => {}
    /// }
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::LockLost`] when the node is deleted or the session ends first;
    /// [`Error::Client`] for other ZooKeeper failures (connection losses are waited out).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a request made while no call is pending stays in the node's data, so the
    /// next call sees it at once.
    pub async fn revocation_requested(&self) -> Result<()> {
        self.hold.revocation_watched.store(true, Ordering::Release);
        crate::revoke::requested(&self.hold.client, &self.hold.path)
            .await
            .map_err(Error::session_end_as_loss)
    }

    /// Takes the same lock again without a new node (re-entry). Each guard must be released;
    /// the node goes when the last one is.
    pub fn reenter(&self) -> LockGuard {
        self.hold.count.fetch_add(1, Ordering::AcqRel);
        LockGuard {
            hold: self.hold.clone(),
            active: true,
        }
    }

    /// How many guards (this one and its re-entries) hold the node now.
    pub fn hold_count(&self) -> usize {
        self.hold.count.load(Ordering::Acquire)
    }

    /// Runs `ops` as one transaction that also checks that our lock node still exists: it
    /// applies only while we hold the lock, and fails as a whole otherwise. Refuses to send
    /// anything once the lock is known to be lost.
    ///
    /// The client never re-sends a request after a connection loss or on another session, so a
    /// fenced write cannot land after the lock has passed on.
    ///
    /// For an [`ExclusiveLock`](crate::lock::ExclusiveLock), whose every holder creates its node at
    /// the same path, "a node exists" is not enough: the fence first reads the node and goes
    /// ahead only if it is still the one this guard created (same czxid), checking its version
    /// in the transaction. That costs one more round trip, and leaves one case no ZooKeeper
    /// operation can tell apart: our node deleted by someone else *and* re-created by the next
    /// holder, at the same version, within that round trip. Queue locks ([`FairLock`](crate::lock::FairLock),
    /// [`ReadWriteLock`](crate::lock::ReadWriteLock)) have unique node names and need neither.
    ///
    /// Returns the results of `ops` (the check's own result removed), one per op, in order.
    ///
    /// # Errors
    ///
    /// [`Error::LockLost`] without sending anything once the loss is known (or, for an
    /// exclusive lock, when the node at its path is no longer ours);
    /// [`Error::Client`] with `Multi { index: 0, .. }` when the check failed (the node is
    /// gone), with `Multi { index: i + 1, .. }` when `ops[i]` failed, with the client's
    /// session errors, and with `UnexpectedReply` when the server's reply does not have one
    /// result of the op's kind per op.
    ///
    /// # Cancel safety
    ///
    /// The transaction is sent when the future is first polled (after the fence's read, for an
    /// exclusive lock); dropping the future loses only the outcome (the transaction may have
    /// applied).
    pub async fn fenced(&self, ops: &[Op]) -> Result<Vec<OpResult>> {
        if let LockState::Lost(reason) = self.hold.current() {
            return Err(Error::LockLost(reason));
        }
        let mut all = Vec::with_capacity(ops.len() + 1);
        all.push(self.hold.fence().await?);
        all.extend_from_slice(ops);
        let results = self.hold.client.multi(&all).await?;
        without_check(results, ops.len())
    }

    /// Releases this hold: deletes the lock node when it is the last guard, retrying through
    /// connection losses until the node is gone or the session ended, and says which
    /// happened.
    ///
    /// - [`Released::Deleted`]: we deleted the node; the lock was ours until now. If a
    ///   connection loss hid the outcome of a delete and the retry found no node, the first
    ///   delete is taken to have applied.
    /// - [`Released::AlreadyGone`]: the lock was lost before this release, because the session
    ///   ended (then nothing is sent) or someone else deleted the node.
    /// - [`Released::StillHeld`]: a re-entry was released; the node stays for the other
    ///   guards.
    ///
    /// # Errors
    ///
    /// [`Error::Client`] when the server refuses the delete for another reason (for example
    /// `NoAuth`: the node then stays until the session ends), or `Closed` if the runtime
    /// shut down during the release.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: the last guard's release runs on the caller's task, and if this future is
    /// dropped before it is done, a background task takes the release over (from the start),
    /// so dropping it only loses the outcome; the node is still deleted (through reconnects)
    /// and the local slot freed, as when the guard is dropped. A future never polled releases
    /// nothing itself: it drops the guard, which releases in the background.
    pub async fn release(mut self) -> Result<Released> {
        self.active = false;
        let before = self.hold.count.fetch_sub(1, Ordering::AcqRel);
        if before != 1 {
            return Ok(Released::StillHeld {
                remaining: before.saturating_sub(1),
            });
        }
        // Runs here, on the caller's task (no task spawned per release). If this future is
        // dropped before it is done, the guard hands the release to a background task, which
        // does it again from the start: the node is still deleted (a delete that applied
        // already leaves `NoNode`, and a reused path is checked by its czxid) and the local
        // slot freed, as when a guard is dropped.
        let mut unfinished = OnDrop::new(self.hold.clone(), finish_in_background, "lock release");
        let result = self.hold.clone().finish().await;
        unfinished.disarm();
        result
    }
}

/// The release of a hold as a background task: a dropped guard's, or the rest of a
/// [`LockGuard::release`] whose future was dropped midway.
fn finish_in_background(hold: Arc<Hold>) -> BoxTask {
    Box::pin(async move {
        match hold.finish().await {
            Ok(Released::AlreadyGone(reason)) => {
                debug!(%reason, "background release: the lock had been lost already")
            }
            Ok(_) => {}
            Err(e) => warn!(error = %e, "background lock release failed"),
        }
    })
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if !self.active || self.hold.count.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        if in_background(finish_in_background(self.hold.clone())).is_err() {
            let hold = &self.hold;
            warn!(path = %hold.path, "guard dropped outside a runtime; the node lives until the session ends");
            if let Some(m) = hold.monitor.get() {
                m.abort();
            }
            hold.run_hook();
        }
    }
}

/// The results of a fenced multi without the leading check's: exactly one per op of the
/// caller. A reply with another count, or without the check's result first, is the server
/// breaking the protocol (a multi answers every op, in order); it is reported, never
/// indexed into.
fn without_check(results: Vec<OpResult>, ops: usize) -> Result<Vec<OpResult>> {
    // `Client::multi` already checks both; the client's error for it is kept here too.
    let unexpected = |what| Err(Error::Client(zk_client::Error::UnexpectedReply(what)));
    if results.len() != ops + 1 {
        return unexpected("a fenced multi's reply has another number of results than its ops");
    }
    let mut results = results.into_iter();
    match results.next() {
        Some(OpResult::Check) => Ok(results.collect()),
        _ => unexpected("a fenced multi's first result is not its lock node check"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set() -> OpResult {
        OpResult::SetData {
            stat: Stat::default(),
        }
    }

    #[test]
    fn fenced_results_drop_the_check() {
        let results = without_check(vec![OpResult::Check, set(), OpResult::Delete], 2).unwrap();
        assert_eq!(results, vec![set(), OpResult::Delete]);
        assert_eq!(without_check(vec![OpResult::Check], 0).unwrap(), vec![]);
    }

    #[test]
    fn fenced_result_mismatch_is_the_clients_unexpected_reply_not_a_panic() {
        for (results, ops) in [
            (vec![], 0),
            (vec![], 2),
            (vec![OpResult::Check], 1),
            (vec![OpResult::Check, set(), set()], 1),
            (vec![set(), OpResult::Check], 1),
        ] {
            let err = without_check(results.clone(), ops).unwrap_err();
            assert!(
                matches!(err, Error::Client(zk_client::Error::UnexpectedReply(_))),
                "{results:?} for {ops} ops: {err:?}"
            );
        }
    }
}
