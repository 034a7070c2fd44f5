//! Sets that are safe to retry: [`set_data`] (versioned or not), and the upserts
//! [`create_or_set`] / [`set_or_create`] (Curator's `orSetData`).

use zk_client::{Bytes, Client, CreateOptions, Stat};

use super::create::create_idempotent;
use crate::error::{Error, Result};
use crate::retry::{gave_up, retrying, turns, wait_connected};

/// Sets the data of `path`, at `version` (`None`: any), surviving a lost reply
/// (Curator's `setData().idempotent()`). Returns the node's new `Stat`.
///
/// After a connection loss the node is read back before anything is sent again:
///
/// - versioned: still at `version`, the set did not apply and is sent again; at the next
///   version with our data, it did (`Ok`); at the next version with other data, someone
///   else's set won (`BadVersion`). A later write by someone else is never overwritten.
/// - unversioned: holding our data, the set applied (`Ok`); otherwise it is sent again.
///
/// ```no_run
/// # async fn f(client: zk_client::Client) -> zk_recipes::Result<()> {
/// let (_, stat) = client.get_data("/app/limit").await?;
/// let stat = zk_recipes::writes::set_data(&client, "/app/limit", b"43", Some(stat.version)).await?;
/// # let _ = stat;
/// # Ok(()) }
/// ```
///
/// # Errors
///
/// `NoNode`, `BadVersion`, `NoAuth`; the session's end; `ConnectionLoss` only when the
/// outcome cannot be known: a versioned set's reply was lost and the node has since been
/// deleted or moved more than one version; [`Error::GaveUp`] after the crate's bound of
/// tries.
///
/// # Cancel safety
///
/// The set is sent when the future is first polled; dropping the future loses only the
/// outcome.
pub async fn set_data(
    client: &Client,
    path: &str,
    data: &[u8],
    version: Option<i32>,
) -> Result<Stat> {
    for _ in turns() {
        let e = match client.set_data(path, data, version).await {
            Ok(stat) => return Ok(stat),
            Err(e) if e.is_connection_loss() => e,
            Err(e) => return Err(e.into()),
        };
        wait_connected(client).await?;
        let found = match retrying(client, || client.get_data(path)).await {
            Ok(found) => Some(found),
            Err(Error::Client(zk_client::Error::NoNode)) => None,
            Err(e) => return Err(e),
        };
        match (version, found) {
            (None, Some((stored, stat))) if stored == data => return Ok(stat),
            // Not applied (or overwritten since, which an unversioned set may overwrite
            // again: both writes overlapped this call).
            (None, Some(_)) => {}
            (None, None) => return Err(zk_client::Error::NoNode.into()),
            (Some(v), found) => match read_back(v, data, found) {
                ReadBack::NotApplied => {}
                ReadBack::Applied(stat) => return Ok(stat),
                ReadBack::Lost => return Err(zk_client::Error::BadVersion.into()),
                // Ours may or may not be among the writes since.
                ReadBack::Unknown => return Err(e.into()),
            },
        }
    }
    Err(gave_up())
}

/// Creates `path` with `data`, or sets its data when it exists (Curator's
/// `create().orSetData()`), surviving a lost reply of either. Returns the node's `Stat`.
///
/// Missing parents are created (as containers) when `options.container_parents` is set;
/// otherwise a missing parent is `NoNode`. The set is unversioned: the node ends with our
/// data unless someone else writes after it.
///
/// ```no_run
/// # async fn f(client: zk_client::Client) -> zk_recipes::Result<()> {
/// use zk_client::CreateOptions;
/// let options = CreateOptions::persistent().with_container_parents(true);
/// zk_recipes::writes::create_or_set(&client, "/app/config/limit", b"42", &options).await?;
/// # Ok(()) }
/// ```
///
/// # Errors
///
/// [`Error::InvalidArgument`] for a sequential mode (its name cannot be set again); the
/// create's and the set's errors; the session's end; [`Error::GaveUp`] after the crate's
/// bound of tries (the node keeps being deleted and created under us).
///
/// # Cancel safety
///
/// Dropping the future loses only the outcome: the node may have been created or set.
pub async fn create_or_set(
    client: &Client,
    path: &str,
    data: &[u8],
    options: &CreateOptions,
) -> Result<Stat> {
    upsert(client, path, data, options, false).await
}

/// Sets the data of `path`, or creates it when it does not exist: [`create_or_set`] trying
/// the set first, for a node that usually exists (one request instead of two).
///
/// ```no_run
/// # async fn f(client: zk_client::Client) -> zk_recipes::Result<()> {
/// use zk_client::CreateOptions;
/// zk_recipes::writes::set_or_create(&client, "/app/heartbeat", b"12:00", &CreateOptions::persistent())
///     .await?;
/// # Ok(()) }
/// ```
///
/// # Errors
///
/// As [`create_or_set`].
///
/// # Cancel safety
///
/// As [`create_or_set`].
pub async fn set_or_create(
    client: &Client,
    path: &str,
    data: &[u8],
    options: &CreateOptions,
) -> Result<Stat> {
    upsert(client, path, data, options, true).await
}

async fn upsert(
    client: &Client,
    path: &str,
    data: &[u8],
    options: &CreateOptions,
    set_first: bool,
) -> Result<Stat> {
    if options.mode.is_sequential() {
        return Err(Error::InvalidArgument(
            "a sequential node cannot be created or set: its name is the server's",
        ));
    }
    let mut set_now = set_first;
    for _ in turns() {
        if set_now {
            match set_data(client, path, data, None).await {
                Ok(stat) => return Ok(stat),
                Err(Error::Client(zk_client::Error::NoNode)) => set_now = false,
                Err(e) => return Err(e),
            }
        } else {
            match create_idempotent(client, path, data, options, options.container_parents).await {
                Ok((_, stat)) => return Ok(stat),
                Err(Error::Client(zk_client::Error::NodeExists)) => set_now = true,
                Err(e) => return Err(e),
            }
        }
    }
    Err(gave_up())
}

/// What a read-back after a lost versioned write found.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum ReadBack {
    /// Still at the version: the write did not apply; send it again.
    NotApplied,
    /// At the next version with our data: the write applied.
    Applied(Stat),
    /// At the next version with other data: someone else's write won.
    Lost,
    /// Deleted, or moved on by more than one write: ours may or may not be among them.
    Unknown,
}

/// The rule after a lost versioned write of `data` at `version`, from the node read back
/// (`None`: no node).
pub(super) fn read_back(version: i32, data: &[u8], found: Option<(Bytes, Stat)>) -> ReadBack {
    match found {
        Some((_, stat)) if stat.version == version => ReadBack::NotApplied,
        Some((stored, stat)) if stat.version == version.wrapping_add(1) => {
            if stored == data {
                ReadBack::Applied(stat)
            } else {
                ReadBack::Lost
            }
        }
        _ => ReadBack::Unknown,
    }
}
