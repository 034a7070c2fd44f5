//! [`DistributedDoubleBarrier`]: Curator's `DistributedDoubleBarrier`.

use std::time::Duration;

use tracing::debug;
use zk_client::{Client, CreateMode, CreateOptions};

use crate::error::{Error, Result};
use crate::path::{check_base, join as child_path, name as name_of};
use crate::queue::{create_marked, delete_guaranteed, local_address, Mark};
use crate::retry::{
    deadline_after, gave_up, retry_after, retrying, session_ended as session_error, turns, until,
};

/// Name of the node that says "everyone is in".
const READY: &str = "ready";

/// A double barrier in Curator's `DistributedDoubleBarrier` layout: members enter together
/// once `member_qty` of them are there, and leave together.
///
/// Each member is an EPHEMERAL node `<path>/<uuid>` (default data, parents as containers);
/// the member that sees the count reached creates the PERSISTENT node `<path>/ready`, which
/// lets everyone in. Leaving: each member deletes its node and waits for the lowest one; the
/// lowest waits for the highest, so it leaves last and then deletes `ready`. Java processes
/// using Curator's class on the same path and count take part alongside ours (put nothing
/// else under the path: Curator counts every child).
///
/// ```no_run
/// # async fn f(client: zk_client::Client) -> zk_recipes::Result<()> {
/// use zk_recipes::barrier::DistributedDoubleBarrier;
/// let barrier = DistributedDoubleBarrier::new(client, "/barriers/job", 3)?;
/// barrier.enter().await?;
/// // ... compute together ...
/// barrier.leave().await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct DistributedDoubleBarrier {
    client: Client,
    path: String,
    member_qty: usize,
    ours: String,
    ready: String,
}

impl DistributedDoubleBarrier {
    /// A member of the barrier at `path` for `member_qty` members, with a fresh UUID.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] for a relative path or the root; [`Error::InvalidArgument`] for
    /// a count of 0.
    pub fn new(client: Client, path: &str, member_qty: usize) -> Result<DistributedDoubleBarrier> {
        let path = check_base(path)?;
        if member_qty == 0 {
            return Err(Error::InvalidArgument(
                "a barrier needs at least one member",
            ));
        }
        let name = uuid::Uuid::new_v4().hyphenated().to_string();
        Ok(DistributedDoubleBarrier {
            ours: child_path(&path, &name),
            ready: child_path(&path, READY),
            client,
            path,
            member_qty,
        })
    }

    /// Our member node's path.
    pub fn node(&self) -> &str {
        &self.ours
    }

    /// Enters: returns once `member_qty` members are in.
    ///
    /// # Errors
    ///
    /// `NodeExists` if this member already entered; `NoAuth` and the session's end;
    /// [`Error::GaveUp`] after the crate's bound on turns. Our node is removed on any error.
    /// Connection losses are waited out.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future may leave our node until [`leave`](Self::leave) or the session's
    /// end.
    pub async fn enter(&self) -> Result<()> {
        self.enter_within(None).await
    }

    /// [`enter`](Self::enter) within `timeout`.
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`] when fewer than `member_qty` members are in after `timeout` (our
    /// node is then removed); otherwise as [`enter`](Self::enter).
    ///
    /// # Cancel safety
    ///
    /// As [`enter`](Self::enter).
    pub async fn enter_timeout(&self, timeout: Duration) -> Result<()> {
        self.enter_within(Some(timeout)).await
    }

    async fn enter_within(&self, timeout: Option<Duration>) -> Result<()> {
        let entered = until(deadline_after(timeout), self.enter_inner()).await;
        if entered.is_err() {
            // Never leave a node behind that later entrants would count (CURATOR-80).
            let _ = delete_guaranteed(&self.client, &self.ours, None)
                .await
                .map(drop);
        }
        entered
    }

    async fn enter_inner(&self) -> Result<()> {
        let client = &self.client;
        let (ready, watcher) = retrying(client, || client.exists_watch(&self.ready)).await?;
        self.create_ours().await?;
        if ready.is_some() {
            return Ok(());
        }
        let mut watcher = Some(watcher);
        for _ in turns() {
            let children = retrying(client, || client.get_children(&self.path)).await?;
            if children.iter().any(|c| c == READY) {
                return Ok(());
            }
            if children.len() >= self.member_qty {
                match client
                    .create(
                        &self.ready,
                        &local_address().await,
                        &CreateOptions::persistent(),
                    )
                    .await
                {
                    Ok(_) | Err(zk_client::Error::NodeExists) => return Ok(()),
                    Err(e) => {
                        retry_after(client, e).await?;
                        continue;
                    }
                }
            }
            let w = match watcher.take() {
                Some(w) => w,
                None => match retrying(client, || client.exists_watch(&self.ready)).await? {
                    (Some(_), _) => return Ok(()),
                    (None, w) => w,
                },
            };
            // Checked again after every wake-up: Curator 5.4 returns after the first one
            // (GH-1290).
            if let Err(e) = w.await {
                if e.is_terminal() {
                    return Err(session_error(client));
                }
            }
        }
        Err(gave_up())
    }

    /// Creates our member node through the crate's protected create: its UUID name is ours
    /// alone, so a lost reply is recovered by looking at the node and its owner.
    async fn create_ours(&self) -> Result<()> {
        let options = CreateOptions::new(CreateMode::Ephemeral).with_container_parents(true);
        // `NodeExists`: the UUID is ours alone, so this member entered already.
        create_marked(
            &self.client,
            &self.path,
            &self.ours,
            &local_address().await,
            &options,
            Mark::Name,
            false,
        )
        .await
        .map(drop)
    }

    /// Leaves: returns once every member left (our node is removed in any case).
    ///
    /// # Errors
    ///
    /// `NoAuth` and the session's end; [`Error::GaveUp`] after the crate's bound on turns.
    /// Connection losses are waited out.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future may leave our node until the session's end.
    pub async fn leave(&self) -> Result<()> {
        self.leave_within(None).await
    }

    /// [`leave`](Self::leave) within `timeout`.
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`] when other members are still in after `timeout` (our node is
    /// removed); otherwise as [`leave`](Self::leave).
    ///
    /// # Cancel safety
    ///
    /// As [`leave`](Self::leave).
    pub async fn leave_timeout(&self, timeout: Duration) -> Result<()> {
        self.leave_within(Some(timeout)).await
    }

    async fn leave_within(&self, timeout: Option<Duration>) -> Result<()> {
        let left = until(deadline_after(timeout), self.leave_inner()).await;
        let _ = delete_guaranteed(&self.client, &self.ours, None)
            .await
            .map(drop);
        // As Curator: whoever finishes (or gives up) removes `ready`.
        let _ = delete_guaranteed(&self.client, &self.ready, None)
            .await
            .map(drop);
        left
    }

    async fn leave_inner(&self) -> Result<()> {
        let client = &self.client;
        let ours = name_of(&self.ours).to_owned();
        let mut deleted = false;
        for _ in turns() {
            let mut children = match retrying(client, || client.get_children(&self.path)).await {
                Ok(children) => children,
                Err(Error::Client(zk_client::Error::NoNode)) => Vec::new(),
                Err(e) => return Err(e),
            };
            children.retain(|c| c != READY);
            children.sort();
            let Some(lowest) = children.first().cloned() else {
                return Ok(());
            };
            let present = children.contains(&ours);
            if !present && !deleted {
                debug!(node = %self.ours, "our barrier node is gone");
                deleted = true;
            }
            if children.len() == 1 {
                if present {
                    delete_guaranteed(client, &self.ours, None)
                        .await
                        .map(drop)?;
                }
                return Ok(());
            }
            let watch = if present && lowest == ours {
                // Lowest: wait for the highest to go.
                children.last().cloned().unwrap_or_default()
            } else {
                if present && !deleted {
                    delete_guaranteed(client, &self.ours, None)
                        .await
                        .map(drop)?;
                    deleted = true;
                }
                lowest
            };
            let watched = child_path(&self.path, &watch);
            if let (Some(_), watcher) = retrying(client, || client.exists_watch(&watched)).await? {
                if let Err(e) = watcher.await {
                    if e.is_terminal() {
                        return Err(session_error(client));
                    }
                }
            }
        }
        Err(gave_up())
    }
}
