//! Helpers shared by the locks: waiting for the session to come back, deadlines, owner
//! identity and the guaranteed background delete.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tracing::{debug, warn};
use zk_client::{Client, CreateMode, CreateOptions, SessionState};

use crate::error::{Error, LossReason, Result};
use crate::guard::Released;

/// Upper bound on the attempts of a background delete (each waits for a reconnect first).
const CLEANUP_ATTEMPTS: usize = 1_000;

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

/// Waits until the client is connected to a read/write server again.
///
/// Fails with [`Error::LockLost`] when the session ended: a lock or a queue position cannot
/// survive that, and the client never opens a new session by itself.
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

/// Who holds a lock locally: the tokio task, or the thread when not inside a task (a
/// `block_on` body, such as a `#[tokio::main]` or `#[tokio::test]` function).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Owner {
    Task(tokio::task::Id),
    Thread(std::thread::ThreadId),
}

impl Owner {
    pub(crate) fn current() -> Owner {
        match tokio::task::try_id() {
            Some(id) => Owner::Task(id),
            None => Owner::Thread(std::thread::current().id()),
        }
    }
}

/// Creates `path` and its missing ancestors as containers (so the server removes them when
/// empty, as Curator does with `creatingParentContainersIfNeeded`). A connection loss is
/// waited out and left to the caller's retry.
pub(crate) async fn ensure_containers(client: &Client, path: &str) -> Result<()> {
    let options = CreateOptions::new(CreateMode::Container);
    match client.create_all(path, &[], &options).await {
        Ok(_) | Err(zk_client::Error::NodeExists) => Ok(()),
        Err(e) if e.is_connection_loss() => wait_connected(client).await,
        Err(e) => Err(e.into()),
    }
}

/// Deletes `path`, retrying through connection losses until it is gone or the session ended
/// (then the ephemeral node is gone anyway). Curator calls this a guaranteed delete.
///
/// Says who removed the node: [`Released::Deleted`] (we did; also when a delete whose
/// reply was lost with the connection is followed by `NoNode`, since that first delete
/// most likely applied), or [`Released::AlreadyGone`] (`NodeDeleted`: it was not there;
/// `SessionEnded`: the session ended first, and took the node).
///
/// `owner` is for a path that other holders reuse (the exclusive lock's): the czxid of the node
/// we created there. Each attempt then first checks that the node at `path` is still that one
/// and deletes it only at the version seen, so neither a delete retried after a lost reply
/// (the first one applied, and the next holder has created the node since) nor one after
/// someone else deleted ours removes the next holder's node.
pub(crate) async fn delete_guaranteed(
    client: &Client,
    path: &str,
    owner: Option<i64>,
) -> Result<Released> {
    let mut maybe_applied = false;
    for _ in 0..CLEANUP_ATTEMPTS {
        let attempt = match owner {
            None => client.delete(path, None).await,
            Some(czxid) => match client.exists(path).await {
                Ok(Some(stat)) if stat.czxid == czxid => {
                    client.delete(path, Some(stat.version)).await
                }
                // Not our node (any more): ours is gone.
                Ok(_) => Err(zk_client::Error::NoNode),
                Err(e) => Err(e),
            },
        };
        match attempt {
            Ok(()) => return Ok(Released::Deleted),
            // Our node changed between the check and the delete: look again.
            Err(zk_client::Error::BadVersion) if owner.is_some() => continue,
            Err(zk_client::Error::NoNode) if maybe_applied => return Ok(Released::Deleted),
            Err(zk_client::Error::NoNode) => {
                return Ok(Released::AlreadyGone(LossReason::NodeDeleted))
            }
            Err(e) if e.is_connection_loss() => {
                maybe_applied = true;
                match wait_connected(client).await {
                    Ok(()) => continue,
                    Err(Error::LockLost(reason)) => return Ok(Released::AlreadyGone(reason)),
                    Err(e) => return Err(e),
                }
            }
            Err(e) if e.is_terminal() => {
                return Ok(Released::AlreadyGone(LossReason::SessionEnded))
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(Error::Client(zk_client::Error::ConnectionLoss))
}

/// Finds and deletes our queue node by its guid, in the background. Used when an acquisition
/// gives up or is cancelled before it knew (or while it knew) its node's name: because requests
/// are ordered at call time, the listing runs after any create this attempt had sent.
pub(crate) fn spawn_cleanup(client: Client, base: String, guid: uuid::Uuid, node: Option<String>) {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        warn!(%base, "no tokio runtime to remove an abandoned lock node; it lives until the session ends");
        return;
    };
    handle.spawn(async move {
        let result = async {
            let name = match node {
                Some(name) => Some(name),
                None => find_own(&client, &base, &guid).await?,
            };
            if let Some(name) = name {
                delete_guaranteed(&client, &format!("{base}/{name}"), None).await?;
                debug!(%base, %name, "removed abandoned lock node");
            }
            Ok::<_, Error>(())
        }
        .await;
        if let Err(e) = result {
            warn!(%base, error = %e, "could not remove an abandoned lock node");
        }
    });
}

/// Lists `base` (retrying through connection losses) and returns our node's name, if any.
pub(crate) async fn find_own(
    client: &Client,
    base: &str,
    guid: &uuid::Uuid,
) -> Result<Option<String>> {
    for _ in 0..CLEANUP_ATTEMPTS {
        match client.get_children(base).await {
            Ok(children) => {
                return Ok(super::naming::find_by_guid(&children, guid).map(str::to_owned))
            }
            Err(zk_client::Error::NoNode) => return Ok(None),
            Err(e) if e.is_connection_loss() => wait_connected(client).await?,
            Err(e) => return Err(e.into()),
        }
    }
    Err(Error::Client(zk_client::Error::ConnectionLoss))
}

/// Takes the instance-local permit that serialises this process's users of one lock
/// instance: at once (`None` if busy) with `try_only`, else waiting until `deadline`.
pub(crate) async fn local_permit(
    local: &Arc<Semaphore>,
    deadline: Option<Instant>,
    try_only: bool,
) -> Result<Option<OwnedSemaphorePermit>> {
    if try_only {
        return Ok(local.clone().try_acquire_owned().ok());
    }
    let local = local.clone();
    until(deadline, async move {
        local
            .acquire_owned()
            .await
            .map(Some)
            .map_err(|_| Error::Client(zk_client::Error::Closed))
    })
    .await
}

/// Converts an optional timeout into a deadline.
pub(crate) fn deadline_after(timeout: Option<Duration>) -> Option<Instant> {
    timeout.map(|t| Instant::now() + t)
}

/// Validates a lock's base path: absolute, not the root, no trailing slash.
pub(crate) fn check_base(path: &str) -> Result<String> {
    let reason = if !path.starts_with('/') {
        "must start with /"
    } else if path == "/" {
        "must not be the root"
    } else if path.ends_with('/') {
        "must not end with /"
    } else {
        return Ok(path.to_owned());
    };
    Err(Error::InvalidPath {
        path: path.to_owned(),
        reason,
    })
}
