//! Helpers shared by the locks: the local owner identity and the instance-local permit.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use crate::error::{Error, Result};
use crate::retry::until;

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
