//! The one seam between the membership recipes (`node`, `group`, `discovery`, `shared`,
//! `barrier`) and the crate's queue kernel: protected naming, find-own-by-guid, guaranteed
//! delete, waiting out a connection loss, and Curator's default data.
//!
//! Everything these recipes need from the rest of the crate comes through here, so moving
//! them onto a restructured kernel changes only this file.

use zk_client::{Client, CreateMode, CreateOptions, ErrorCode, SessionState};

use crate::error::{Error, Result};

pub(crate) use crate::queue::naming::protected_prefix;
pub(crate) use crate::queue::{check_base, local_address};
pub(crate) use crate::retry::turns;

/// The lock kernel reports a session that ended while waiting as a lost lock; these recipes
/// report the client's own terminal error instead.
fn ended(client: &Client, error: Error) -> Error {
    match error {
        Error::LockLost(_) => session_error(client),
        e => e,
    }
}

/// The error for a session that ended: the client's terminal error (`Closed` while it has
/// none yet, say when a recipe was closed).
pub(crate) fn session_error(client: &Client) -> Error {
    Error::Client(match client.state() {
        SessionState::AuthFailed => zk_client::Error::AuthFailed,
        SessionState::Expired => zk_client::Error::SessionExpired,
        _ => zk_client::Error::Closed,
    })
}

/// Waits until the client is connected to a read/write server again.
///
/// # Errors
///
/// The client's terminal error when the session ended.
pub(crate) async fn wait_connected(client: &Client) -> Result<()> {
    crate::retry::wait_connected(client)
        .await
        .map_err(|e| ended(client, e))
}

/// The retry arm of a loop: waits out a connection loss (`Ok`: go round again); any other
/// client error is returned.
pub(crate) async fn retry_after(client: &Client, error: zk_client::Error) -> Result<()> {
    crate::retry::retry_after(client, error)
        .await
        .map_err(|e| ended(client, e))
}

/// Runs an idempotent operation until it gets an answer other than a connection loss.
pub(crate) async fn retrying<T, F, Fut>(client: &Client, op: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = zk_client::Result<T>>,
{
    crate::retry::retrying(client, op)
        .await
        .map_err(|e| ended(client, e))
}

/// Deletes `path` through connection losses until it is gone (`NoNode` is success) or the
/// session ended (an ephemeral node then went with it). Curator's guaranteed delete.
pub(crate) async fn delete_guaranteed(client: &Client, path: &str) -> Result<()> {
    crate::queue::delete_guaranteed(client, path, None)
        .await
        .map(drop)
        .map_err(|e| ended(client, e))
}

/// Our first node of `guid` under `base`, if any (listing retried through connection
/// losses): the kernel's find-own-by-guid.
pub(crate) async fn find_own(
    client: &Client,
    base: &str,
    guid: &uuid::Uuid,
) -> Result<Option<String>> {
    crate::queue::Protected {
        base: base.to_owned(),
        guid: *guid,
    }
    .find(client)
    .await
}

/// Creates `path` with `data` (parents as containers), retrying connection losses, and
/// treating `NodeExists` as done: for nodes whose creation is idempotent in effect (a seed
/// value, a barrier).
pub(crate) async fn create_if_absent(
    client: &Client,
    path: &str,
    data: &[u8],
    mode: CreateMode,
) -> Result<bool> {
    let options = CreateOptions::new(mode).with_container_parents(true);
    for _ in turns() {
        match client.create_all(path, data, &options).await {
            Ok(_) => return Ok(true),
            Err(zk_client::Error::NodeExists) => return Ok(false),
            Err(e) => retry_after(client, e).await?,
        }
    }
    Err(gave_up())
}

/// The error of a loop that ran out of turns.
pub(crate) fn gave_up() -> Error {
    crate::retry::gave_up()
}

/// The error for node data that does not decode (Curator reports `DATAINCONSISTENCY` too).
pub(crate) fn corrupted() -> Error {
    Error::Client(zk_client::Error::Server(ErrorCode::DataInconsistency))
}

/// The parent of a path (`/a/b` → `/a`; `/a` → `/`).
pub(crate) fn parent_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// The last segment of a path.
pub(crate) fn name_of(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// `parent/name`, for the root too.
pub(crate) fn child_path(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}
