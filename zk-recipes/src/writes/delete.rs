//! Deletes that are safe to retry: [`delete_quietly`] on the caller's task, and
//! [`GuaranteedDelete`] in the background, through reconnects and new sessions (Curator's
//! `delete().quietly()` and `delete().guaranteed()`).

use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};
use zk_client::{Client, SessionManager};

use crate::error::{Error, Result};
use crate::retry::{gave_up, retrying, turns, wait_connected, within, Pacing};
use crate::session::{NoNext, Source};

/// What a safe delete found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeleteOutcome {
    /// The node was deleted by this call (also when a delete's reply was lost and the node
    /// was gone afterwards: that delete most likely applied).
    Deleted,
    /// There was no node at the path when this call first looked.
    AlreadyGone,
    /// The node was an ephemeral node of the session that ended while the delete was
    /// trying: the server removed it with that session ([`GuaranteedDelete`] only).
    GoneWithSession,
}

/// Deletes `path` (at `version`; `None`: any), counting a missing node as success
/// (Curator's `delete().quietly()`), and surviving a lost reply.
///
/// The node is read first and then deleted at the version read (or at `version`): after a
/// connection loss it is read again, and a node at `path` that is not the one read first
/// (deleted and created again by someone else) is left alone. A node changed since
/// (unversioned) is deleted at its new version.
///
/// ```no_run
/// # async fn f(client: zk_client::Client) -> zk_recipes::Result<()> {
/// use zk_recipes::writes::{delete_quietly, DeleteOutcome};
/// if delete_quietly(&client, "/app/lease", None).await? == DeleteOutcome::AlreadyGone {
///     println!("nothing to delete");
/// }
/// # Ok(()) }
/// ```
///
/// # Errors
///
/// `BadVersion` (the node is not at `version`), `NotEmpty`, `NoAuth`; the session's end;
/// [`Error::GaveUp`] after the crate's bound of tries.
///
/// # Cancel safety
///
/// Requests are sent when the future is first polled; dropping the future loses only the
/// outcome (the node may have been deleted). Use [`GuaranteedDelete`] for a delete that
/// must finish anyway.
pub async fn delete_quietly(
    client: &Client,
    path: &str,
    version: Option<i32>,
) -> Result<DeleteOutcome> {
    let mut target = None;
    delete_on(client, path, version, &mut target).await
}

/// The node a delete means: the `czxid` of the node found at the path first, so that a
/// retried delete never removes a node created there again by someone else.
#[derive(Debug, Clone, Copy)]
struct Target {
    czxid: i64,
    /// The node's owner session (0: not ephemeral).
    ephemeral_owner: i64,
    /// A delete of ours was sent and its outcome is unknown (reply lost).
    maybe_applied: bool,
}

/// One session's part of a safe delete; `target` carries what was learned across sessions.
async fn delete_on(
    client: &Client,
    path: &str,
    version: Option<i32>,
    target: &mut Option<Target>,
) -> Result<DeleteOutcome> {
    for _ in turns() {
        // Bounded like every loop: each turn reads the node (retried through connection
        // losses) and sends one delete.
        let stat = retrying(client, || client.exists(path)).await?;
        let gone = |target: &Option<Target>| match target {
            Some(t) if t.maybe_applied => DeleteOutcome::Deleted,
            _ => DeleteOutcome::AlreadyGone,
        };
        let Some(stat) = stat else {
            return Ok(gone(target));
        };
        match target {
            None => {
                *target = Some(Target {
                    czxid: stat.czxid,
                    ephemeral_owner: stat.ephemeral_owner,
                    maybe_applied: false,
                });
            }
            // Another node than the one we meant: ours is gone.
            Some(t) if t.czxid != stat.czxid => return Ok(gone(target)),
            Some(_) => {}
        }
        let at = match version {
            Some(v) if v != stat.version => return Err(zk_client::Error::BadVersion.into()),
            Some(v) => v,
            None => stat.version,
        };
        match client.delete(path, Some(at)).await {
            Ok(()) => return Ok(DeleteOutcome::Deleted),
            // Gone since the read: by someone else (unless a lost delete of ours did it).
            Err(zk_client::Error::NoNode) => return Ok(gone(target)),
            // Changed since the read: look again (a versioned delete then says BadVersion).
            Err(zk_client::Error::BadVersion) => {}
            Err(e) if e.is_connection_loss() => {
                if let Some(t) = target.as_mut() {
                    t.maybe_applied = true;
                }
                wait_connected(client).await?;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(gave_up())
}

/// A delete that keeps trying in the background until the node is gone (Curator's
/// `delete().guaranteed()`): through connection losses, and with
/// [`new_managed`](Self::new_managed) through expired sessions (on the manager's next
/// session), with paced pauses between failed tries; it ends with [`Error::GaveUp`] after
/// the crate's bound.
///
/// It deletes the node found at the path when it starts (known by its `czxid`), never a
/// node created there again by someone else later. An ephemeral node of a session that
/// ended is gone with it ([`DeleteOutcome::GoneWithSession`]); otherwise, with a plain
/// [`Client`], the end of its session ends the delete with the session's error (use
/// [`new_managed`](Self::new_managed) to go on on the next session).
///
/// Dropping the handle does **not** stop the delete (that is the point of it); it runs on
/// until done. [`close`](Self::close) stops it.
///
/// ```no_run
/// # async fn f(client: zk_client::Client) -> zk_recipes::Result<()> {
/// use zk_recipes::writes::{DeleteOutcome, GuaranteedDelete};
/// let delete = GuaranteedDelete::new(client, "/app/lease")?;
/// match delete.outcome_timeout(std::time::Duration::from_secs(30)).await {
///     Ok(DeleteOutcome::Deleted | DeleteOutcome::AlreadyGone | DeleteOutcome::GoneWithSession) => {
///         println!("gone")
///     }
///     Err(e) => println!("still trying or failed: {e}"),
///     Ok(_) => {}
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct GuaranteedDelete {
    stop: CancellationToken,
    outcome: watch::Receiver<Option<Result<DeleteOutcome>>>,
    task: std::sync::Mutex<Option<JoinHandle<()>>>,
}

impl GuaranteedDelete {
    /// Starts deleting `path` on `client`'s session, in the background (must be called
    /// within a tokio runtime).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] for a path that is not absolute, is the root or ends with `/`.
    pub fn new(client: Client, path: &str) -> Result<GuaranteedDelete> {
        GuaranteedDelete::start(Source::Client(client), path)
    }

    /// Starts deleting `path` on `manager`'s sessions: when one expires, the delete goes on
    /// on the next (must be called within a tokio runtime).
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new).
    pub fn new_managed(manager: &SessionManager, path: &str) -> Result<GuaranteedDelete> {
        GuaranteedDelete::start(Source::Manager(manager.clone()), path)
    }

    fn start(source: Source, path: &str) -> Result<GuaranteedDelete> {
        let path = crate::path::check_base(path)?;
        let stop = CancellationToken::new();
        let (tx, outcome) = watch::channel(None);
        let task = tokio::spawn(run(source, path, stop.clone(), tx));
        Ok(GuaranteedDelete {
            stop,
            outcome,
            task: std::sync::Mutex::new(Some(task)),
        })
    }

    /// The outcome, if the delete has ended.
    pub fn try_outcome(&self) -> Option<Result<DeleteOutcome>> {
        self.outcome.borrow().clone()
    }

    /// Waits until the delete has ended and returns its outcome.
    ///
    /// # Errors
    ///
    /// What ended the delete: `NotEmpty`, `NoAuth`; the session's end (a plain client's,
    /// or the manager's end); [`Error::GaveUp`] after the crate's bound of tries;
    /// `Closed` when [`close`](Self::close) stopped it.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future only stops the wait; the delete goes on.
    pub async fn outcome(&self) -> Result<DeleteOutcome> {
        let mut rx = self.outcome.clone();
        let outcome = match rx.wait_for(Option::is_some).await {
            Ok(done) => done.clone().unwrap_or(Err(Error::GaveUp)),
            // The task ended without a word: only if it panicked or the runtime shut down.
            Err(_) => Err(zk_client::Error::Closed.into()),
        };
        outcome
    }

    /// [`outcome`](Self::outcome), waiting at most `timeout`.
    ///
    /// # Errors
    ///
    /// As [`outcome`](Self::outcome); [`Error::Timeout`] when `timeout` passes first (the
    /// delete goes on).
    ///
    /// # Cancel safety
    ///
    /// As [`outcome`](Self::outcome).
    pub async fn outcome_timeout(&self, timeout: Duration) -> Result<DeleteOutcome> {
        within(timeout, self.outcome()).await
    }

    /// Stops trying (if still trying) and waits until the task has ended. The node may or
    /// may not be gone: [`try_outcome`](Self::try_outcome) says what happened.
    ///
    /// # Errors
    ///
    /// None today: `Ok` once the task has ended.
    ///
    /// # Cancel safety
    ///
    /// The task is asked to stop as soon as this is called; dropping the future only stops
    /// the wait.
    pub async fn close(&self) -> Result<()> {
        self.stop.cancel();
        let task = self
            .task
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(task) = task {
            let _ = task.await;
        }
        Ok(())
    }
}

async fn run(
    source: Source,
    path: String,
    stop: CancellationToken,
    tx: watch::Sender<Option<Result<DeleteOutcome>>>,
) {
    let outcome = tokio::select! {
        outcome = delete_guaranteed(source, &path, &stop) => outcome,
        _ = stop.cancelled() => Err(zk_client::Error::Closed.into()),
    };
    match &outcome {
        Ok(done) => debug!(%path, ?done, "guaranteed delete done"),
        Err(e) => warn!(%path, error = %e, "guaranteed delete ended without deleting"),
    }
    tx.send_replace(Some(outcome));
}

/// Whether a delete's error ends the guaranteed delete (the node can never be deleted by
/// trying again) rather than a pause and another try.
fn is_final(e: &Error) -> bool {
    match e {
        Error::Client(e) => matches!(
            e,
            zk_client::Error::NotEmpty | zk_client::Error::NoAuth | zk_client::Error::BadVersion
        ),
        Error::GaveUp => false,
        // `InvalidPath` (a path refused before sending) among them.
        _ => true,
    }
}

async fn delete_guaranteed(
    source: Source,
    path: &str,
    stop: &CancellationToken,
) -> Result<DeleteOutcome> {
    let mut sessions = source.sessions();
    let mut target = None;
    let mut pacing = Pacing::new();
    for _ in turns() {
        let client = sessions.client().clone();
        let tried = tokio::time::Instant::now();
        match delete_on(&client, path, None, &mut target).await {
            Ok(done) => return Ok(done),
            // An ephemeral node of the session that ended went with it.
            Err(e)
                if e.is_session_end()
                    && target.is_some_and(|t| {
                        t.ephemeral_owner != 0 && t.ephemeral_owner == client.session_id()
                    }) =>
            {
                return Ok(DeleteOutcome::GoneWithSession);
            }
            Err(e) if e.is_session_end() => match sessions.next(stop).await {
                Ok(_) => {}
                Err(NoNext::Stopped) => return Err(zk_client::Error::Closed.into()),
                Err(NoNext::Ended(e)) => return Err(e),
            },
            Err(e) if is_final(&e) => return Err(e),
            Err(e) => {
                debug!(%path, error = %e, "guaranteed delete: trying again after a pause");
                if !pacing.wait(tried.elapsed(), stop).await? {
                    return Err(zk_client::Error::Closed.into());
                }
            }
        }
    }
    Err(gave_up())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::time::Instant;
    use zk_proto::records::{DeleteRequest, ExistsResponse};
    use zk_proto::{ErrorCode, OpCode, Stat};
    use zk_test_support::{connect_client, encode, within as limit, FakeServer};

    use crate::retry::PAUSE_FIRST;

    /// A server that keeps answering the delete with `Throttled`: the guaranteed delete
    /// tries again after growing pauses (never at once), and ends with the node deleted
    /// once the server accepts.
    #[tokio::test]
    async fn a_refused_delete_is_tried_again_after_growing_pauses() {
        let server = FakeServer::start().await;
        let (client, mut conn) = connect_client(&server, "", 7, 30_000, |b| b).await;
        let delete = GuaranteedDelete::new(client, "/n").unwrap();
        let stat = Stat {
            czxid: 5,
            version: 3,
            ..Stat::default()
        };
        let mut deletes = Vec::new();
        for turn in 0..4 {
            let exists = limit("exists", conn.read_non_ping()).await.unwrap();
            assert_eq!(exists.op, i32::from(OpCode::Exists));
            conn.reply(
                exists.xid,
                1,
                ErrorCode::Ok,
                &encode(&ExistsResponse { stat: stat.clone() }),
            )
            .await;
            let del = limit("delete", conn.read_non_ping()).await.unwrap();
            assert_eq!(del.op, i32::from(OpCode::Delete));
            // At the version read: never a blind delete of whatever is there.
            let request = zk_proto::decode_prefix::<DeleteRequest>(del.body.clone()).unwrap();
            assert_eq!((request.path.as_str(), request.version), ("/n", 3));
            deletes.push(Instant::now());
            let answer = if turn < 3 {
                ErrorCode::Throttled
            } else {
                ErrorCode::Ok
            };
            conn.reply(del.xid, 1, answer, &[]).await;
        }
        assert_eq!(
            limit("outcome", delete.outcome()).await.unwrap(),
            DeleteOutcome::Deleted
        );
        let gaps: Vec<_> = deletes.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps[0] >= PAUSE_FIRST / 2, "{gaps:?}");
        assert!(gaps[1] >= PAUSE_FIRST, "{gaps:?}");
        assert!(gaps[2] >= PAUSE_FIRST * 2, "{gaps:?}");
    }

    #[tokio::test]
    async fn close_stops_a_delete_that_cannot_finish() {
        let server = FakeServer::start().await;
        let (client, mut conn) = connect_client(&server, "", 8, 30_000, |b| b).await;
        let delete = GuaranteedDelete::new(client, "/n").unwrap();
        // The exists is never answered.
        let _ = limit("exists", conn.read_non_ping()).await.unwrap();
        assert!(delete.try_outcome().is_none());
        limit("close", delete.close()).await.unwrap();
        let outcome = delete.try_outcome();
        assert!(
            matches!(outcome, Some(Err(Error::Client(zk_client::Error::Closed)))),
            "{outcome:?}"
        );
    }

    #[test]
    fn only_errors_a_retry_cannot_mend_end_the_delete() {
        assert!(is_final(&zk_client::Error::NotEmpty.into()));
        assert!(is_final(&zk_client::Error::NoAuth.into()));
        assert!(!is_final(&Error::GaveUp));
        assert!(!is_final(&zk_client::Error::Timeout.into()));
        assert!(!is_final(
            &zk_client::Error::Server(zk_client::ErrorCode::Throttled).into()
        ));
    }
}
