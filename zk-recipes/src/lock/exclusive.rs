//! The simple exclusive lock: one ephemeral node at a fixed path.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tracing::warn;
use uuid::Uuid;
use zk_client::{Client, CreateMode, CreateOptions, Stat};

use super::support::local_permit;
use crate::error::{Error, Result};
use crate::guard::{Hold, LockGuard};
use crate::path::check_base;
use crate::queue::{delete_guaranteed, ensure_containers, BoxTask, OnDrop, Participant};
use crate::retry::{deadline_after, gave_up, retry_after, retrying, turns, until};

/// A simple exclusive lock: whoever creates the ephemeral node at `path` holds it; the others
/// watch it and race again when it is deleted.
///
/// Prefer it when contention is rare and the holder set is small: acquiring costs one create,
/// there is no queue to list and no parent node to keep. It is **not fair** and each release
/// wakes every waiter (a herd): with many waiters use [`crate::lock::FairLock`].
///
/// The node's data is a guid of the acquisition (or the owner data chosen with
/// [`with_owner_data`](Self::with_owner_data)), so a create whose reply was lost is
/// recognised as ours after the reconnect (by that data under our session). Not re-entrant across `acquire` calls: use [`LockGuard::reenter`].
///
/// # Example
///
/// ```no_run
/// # async fn demo(client: zk_client::Client) -> Result<(), zk_recipes::Error> {
/// let lock = zk_recipes::lock::ExclusiveLock::new(client, "/locks/leader")?;
/// if let Some(guard) = lock.try_acquire().await? {
///     guard.release().await?;
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ExclusiveLock {
    client: Client,
    path: String,
    local: Arc<Semaphore>,
    /// Chosen owner data; `None`: a fresh guid per acquisition.
    owner: Option<Bytes>,
}

/// How an attempt recognises its own node: the data it wrote, under our session.
#[derive(Clone)]
struct Mark {
    data: Bytes,
    session: i64,
}

impl Mark {
    fn is_ours(&self, held_by: &[u8], stat: &Stat) -> bool {
        held_by == self.data.as_ref() && stat.ephemeral_owner == self.session
    }
}

impl ExclusiveLock {
    /// An exclusive lock whose node is `path` itself.
    pub fn new(client: Client, path: &str) -> Result<ExclusiveLock> {
        Ok(ExclusiveLock {
            client,
            path: check_base(path)?,
            local: Arc::new(Semaphore::new(1)),
            owner: None,
        })
    }

    /// This lock with `data` as its node's data (a participant id, say) instead of a fresh
    /// guid per acquisition. A create whose reply was lost is then recognised by this data
    /// under our session: give each instance of one session its own id. Returns a new
    /// instance (no local queue shared with `self`).
    pub fn with_owner_data(&self, data: impl Into<Bytes>) -> ExclusiveLock {
        ExclusiveLock {
            client: self.client.clone(),
            path: self.path.clone(),
            local: Arc::new(Semaphore::new(1)),
            owner: Some(data.into()),
        }
    }

    /// The holder, if any, with its node's data (a guid, or the id it chose).
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
        match retrying(&self.client, || self.client.get_data(&self.path)).await {
            Ok((data, _)) => Ok(vec![Participant {
                path: self.path.clone(),
                data,
                is_first: true,
            }]),
            Err(Error::Client(zk_client::Error::NoNode)) => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }

    /// Waits until the lock is held.
    ///
    /// # Errors
    ///
    /// [`Error::LockLost`]`(`[`SessionEnded`](crate::LossReason::SessionEnded)`)` if the
    /// session expired, was closed or failed authentication, before or while waiting;
    /// [`Error::Client`] for other ZooKeeper failures (connection losses are waited out, not
    /// returned).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: if the dropped attempt had created the node (or might have, with its
    /// reply lost), the node is recognised by its guid and deleted in the background.
    pub async fn acquire(&self) -> Result<LockGuard> {
        self.run(None, false).await?.ok_or(Error::Timeout)
    }

    /// Waits at most `timeout`.
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`] when `timeout` passes first; otherwise as [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, like [`acquire`](Self::acquire).
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<LockGuard> {
        self.run(deadline_after(Some(timeout)), false)
            .await?
            .ok_or(Error::Timeout)
    }

    /// Takes the lock if it is free, else `Ok(None)`.
    ///
    /// # Errors
    ///
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, like [`acquire`](Self::acquire).
    pub async fn try_acquire(&self) -> Result<Option<LockGuard>> {
        self.run(None, true).await
    }

    async fn run(&self, deadline: Option<Instant>, try_only: bool) -> Result<Option<LockGuard>> {
        let inner = self.run_inner(deadline, try_only);
        crate::metrics::acquire("exclusive", &self.path, inner)
            .await
            .map_err(Error::session_end_as_loss)
    }

    async fn run_inner(
        &self,
        deadline: Option<Instant>,
        try_only: bool,
    ) -> Result<Option<LockGuard>> {
        let Some(permit) = local_permit(&self.local, deadline, try_only).await? else {
            return Ok(None);
        };
        let mark = Mark {
            data: self
                .owner
                .clone()
                .unwrap_or_else(|| Bytes::from(Uuid::new_v4().hyphenated().to_string())),
            session: self.client.session_id(),
        };
        // Deletes the node in the background if this attempt is abandoned after creating it.
        let mut cleanup = OnDrop::new(
            (self.client.clone(), self.path.clone(), mark.clone()),
            remove_if_ours,
            "abandoned exclusive lock node",
        );
        let won = until(deadline, self.race(&mark, try_only)).await?;
        cleanup.disarm();
        let Some((stat, epoch)) = won else {
            return Ok(None);
        };
        let hook = Box::new(move || drop(permit));
        let hook = crate::metrics::on_release("exclusive", &self.path, hook);
        Ok(Some(
            Hold::new(
                self.client.clone(),
                self.path.clone(),
                stat,
                epoch,
                hook,
                true,
            )
            .into_guard(),
        ))
    }

    /// Creates the node or waits for it to go. Returns its stat and the client's connection
    /// epoch read before the request that showed the node ours.
    async fn race(&self, mark: &Mark, try_only: bool) -> Result<Option<(Stat, u64)>> {
        let options = CreateOptions::new(CreateMode::Ephemeral);
        for _ in turns() {
            let epoch = self.client.connection_epoch();
            match self.client.create(&self.path, &mark.data, &options).await {
                Ok((_, stat)) => return Ok(Some((stat, epoch))),
                Err(zk_client::Error::NodeExists) => {
                    let epoch = self.client.connection_epoch();
                    match self.client.get_data_watch(&self.path).await {
                        Ok((held_by, stat, watcher)) => {
                            if mark.is_ours(&held_by, &stat) {
                                // Our own create, whose reply was lost earlier.
                                return Ok(Some((stat, epoch)));
                            }
                            if try_only {
                                return Ok(None);
                            }
                            if let Err(e) = watcher.await {
                                retry_after(&self.client, e).await?;
                            }
                        }
                        Err(zk_client::Error::NoNode) => {}
                        Err(e) => retry_after(&self.client, e).await?,
                    }
                }
                Err(zk_client::Error::NoNode) => {
                    let parent = match self.path.rfind('/') {
                        Some(0) | None => "/",
                        Some(i) => &self.path[..i],
                    };
                    ensure_containers(&self.client, parent).await?;
                }
                Err(e) => {
                    // A connection loss: the create may have applied. Anything else ends here.
                    retry_after(&self.client, e).await?;
                    let epoch = self.client.connection_epoch();
                    if let Some(stat) = self.owned_stat(mark).await? {
                        return Ok(Some((stat, epoch)));
                    }
                }
            }
        }
        Err(gave_up())
    }

    /// The node's stat if it exists and is ours.
    async fn owned_stat(&self, mark: &Mark) -> Result<Option<Stat>> {
        match self.client.get_data(&self.path).await {
            Ok((held_by, stat)) if mark.is_ours(&held_by, &stat) => Ok(Some(stat)),
            Ok(_) | Err(zk_client::Error::NoNode) => Ok(None),
            // A connection loss: go round again (create, then look).
            Err(e) => retry_after(&self.client, e).await.map(|()| None),
        }
    }
}

/// The cleanup of an abandoned attempt: deletes the node at `path` if it is ours.
/// Requests are ordered at call time, so this read sees any create the attempt had sent.
/// Connection losses are waited out: a node of ours left at the path would block every other
/// acquirer for the session's life.
fn remove_if_ours((client, path, mark): (Client, String, Mark)) -> BoxTask {
    Box::pin(async move {
        let removed = match retrying(&client, || client.get_data(&path)).await {
            Ok((held_by, stat)) if mark.is_ours(&held_by, &stat) => {
                delete_guaranteed(&client, &path, Some(stat.czxid))
                    .await
                    .map(drop)
            }
            // Another's, or gone.
            Ok(_) | Err(Error::Client(zk_client::Error::NoNode)) => Ok(()),
            // The session ended: our ephemeral node went with it.
            Err(e) if e.is_session_end() => Ok(()),
            Err(e) => Err(e),
        };
        if let Err(e) = removed {
            warn!(%path, error = %e, "could not remove an abandoned lock node");
        }
    })
}
