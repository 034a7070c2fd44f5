//! Helpers shared by the locks: owner identity, containers, the local permit and path checks.
//! Retrying and cleaning up are the crate's toolkit ([`crate::retry`], [`crate::cleanup`]).

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use zk_client::{Client, CreateMode, CreateOptions};

use crate::error::{Error, Result};
use crate::retry::{retry_after, until};

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
        Err(e) => retry_after(client, e).await,
    }
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
