//! The protected create: a node named with a fresh guid (`_c_<guid>-…`), found again by that
//! guid when the create's reply is lost, never made twice, and removed with every other node
//! of the guid.
//!
//! ```text
//! create _c_<guid>-<name> ──ok──────────────────────────────────────────────▶ ours
//!   │ NoNode: create the parents as containers, create again
//!   │ ConnectionLoss (or NodeExists for a plain name): reconnect, list the parent
//!   ▼
//! a child named _c_<guid>- ─ none: create again (the first create did not apply)
//!   └─ found: exists (retried through connection losses, never a second create)
//!        ├─ owned by our session (or not ephemeral) ──────────────────────────▶ ours
//!        ├─ owned by another session: ours ended ─────────────────────▶ SessionEnded
//!        └─ gone since the listing (deleted by someone else): create again
//! ```

use tracing::debug;
use uuid::Uuid;
use zk_client::{Client, CreateMode, CreateOptions, Stat};

use super::delete::{delete_guaranteed, Released};
use super::naming;
use crate::error::{Error, Result};
use crate::retry::{gave_up, retry_after, retrying, turns};

/// A listing of a queue's parent taken right after our node was created.
#[derive(Debug)]
pub(crate) struct Listing {
    /// The client's connection epoch read before the listing was sent.
    pub(crate) epoch: u64,
    /// The parent's children.
    pub(crate) children: Vec<String>,
}

/// The nodes of one guid under one parent: what a recipe creates, finds again after a lost
/// reply, and removes when it is done. One guid per attempt (a lock acquisition, a latch on
/// one session, a lease); the same guid for a re-creation within that attempt.
#[derive(Debug, Clone)]
pub(crate) struct Protected {
    /// The parent.
    pub(crate) base: String,
    /// Our guid.
    pub(crate) guid: Uuid,
}

impl Protected {
    /// Nodes under `base` with a fresh guid.
    pub(crate) fn new(base: &str) -> Protected {
        Protected {
            base: base.to_owned(),
            guid: fresh_guid(),
        }
    }

    /// The node name for `name` (Curator's `_c_<guid>-<name>`; the server appends the
    /// sequence to a sequential node).
    pub(crate) fn name(&self, name: &str) -> String {
        naming::protected_node_name(&self.guid, name)
    }

    /// Full path of the child `name`.
    pub(crate) fn path_of(&self, name: &str) -> String {
        crate::path::join(&self.base, name)
    }

    /// Creates the node `name` (a name from [`name`](Self::name) or another name carrying
    /// our guid) with `data` in `mode`, surviving a lost reply without a second node (see
    /// the module's diagram). Returns the created node's name and stat.
    ///
    /// A found node of an ephemeral mode must be our session's: otherwise our session ended
    /// (`SessionExpired`, the crate's one way to say so; the client never moves to a new
    /// session).
    pub(crate) async fn create(
        &self,
        client: &Client,
        name: &str,
        data: &[u8],
        mode: CreateMode,
    ) -> Result<(String, Stat)> {
        let (name, stat, _) = self.create_listing(client, name, data, mode, false).await?;
        Ok((name, stat))
    }

    /// As [`create`](Self::create); with `list`, the first create goes out together with a
    /// listing of the parent (requests are ordered when called: one flush, and both replies
    /// come back together), and when that create succeeds its listing is returned too,
    /// with the client's connection epoch read before either was sent. The listing was
    /// taken after our node was made, so it shows it: a queue acquisition needs no other
    /// before its first look. `None` when not asked, when the first create failed (the
    /// recovery lists for itself) or when the listing failed.
    pub(crate) async fn create_listing(
        &self,
        client: &Client,
        name: &str,
        data: &[u8],
        mode: CreateMode,
        list: bool,
    ) -> Result<(String, Stat, Option<Listing>)> {
        let path = self.path_of(name);
        let options = CreateOptions::new(mode);
        let session = client.session_id();
        let ephemeral = matches!(
            mode,
            CreateMode::Ephemeral | CreateMode::EphemeralSequential
        );
        let epoch = client.connection_epoch();
        let first = client.create(&path, data, &options);
        let listing = list.then(|| client.get_children(&self.base));
        let mut attempt = first.await;
        let listed = match listing {
            Some(listing) if attempt.is_ok() => listing
                .await
                .ok()
                .map(|children| Listing { epoch, children }),
            // Its reply (if any) is dropped with it.
            _ => None,
        };
        for _ in turns() {
            match attempt {
                Ok((created, stat)) => {
                    return Ok((naming::base_name(&created).to_owned(), stat, listed))
                }
                Err(zk_client::Error::NoNode) => ensure_containers(client, &self.base).await?,
                Err(e) => {
                    // A plain name can exist already only if it is ours (the guid is fresh):
                    // recover it like a lost reply. After a connection loss the create may or
                    // may not have happened: look for our guid. Anything else ends here.
                    if !matches!(e, zk_client::Error::NodeExists) {
                        retry_after(client, e).await?;
                    }
                    if let Some(found) = self.find(client).await? {
                        let full = self.path_of(&found);
                        // Retried: a connection loss here must not lead to a second create.
                        match retrying(client, || client.exists(&full)).await? {
                            Some(stat) if !ephemeral || stat.ephemeral_owner == session => {
                                debug!(node = %full, "recovered our node after a lost create reply");
                                return Ok((found, stat, None));
                            }
                            // Found under another session. Curator deletes it and starts over
                            // with a new guid (CURATOR-498). Our client never moves to a new
                            // session (expiry is terminal), so a different owner means our
                            // session is gone: the node is an expired session's and goes
                            // with it.
                            Some(_) => return Err(Error::Client(zk_client::Error::SessionExpired)),
                            // Deleted since the listing (by someone else): create again.
                            None => {}
                        }
                    }
                    // Not found: the create did not apply; create again.
                }
            }
            attempt = client.create(&path, data, &options).await;
        }
        Err(gave_up())
    }

    /// Our first node under the parent, if any (listing retried through connection losses).
    pub(crate) async fn find(&self, client: &Client) -> Result<Option<String>> {
        Ok(self.find_all(client).await?.into_iter().next())
    }

    /// Every node of our guid under the parent (normally one).
    pub(crate) async fn find_all(&self, client: &Client) -> Result<Vec<String>> {
        match retrying(client, || client.get_children(&self.base)).await {
            Ok(children) => Ok(naming::all_by_guid(&children, &self.guid)
                .map(str::to_owned)
                .collect()),
            Err(Error::Client(zk_client::Error::NoNode)) => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }

    /// Deletes every node of our guid (guaranteed deletes, through reconnects). Requests
    /// are ordered at call time, so the listing follows any create already sent. Returns
    /// how many were removed by us.
    pub(crate) async fn delete_all(&self, client: &Client) -> Result<usize> {
        let mut removed = 0;
        for name in self.find_all(client).await? {
            let deleted = delete_guaranteed(client, &self.path_of(&name), None).await?;
            if deleted == Released::Deleted {
                debug!(base = %self.base, %name, "removed our node");
                removed += 1;
            }
        }
        Ok(removed)
    }
}

/// A random (version 4) guid from the thread's CSPRNG (`rand::thread_rng`, seeded from the
/// OS once per thread), rather than `Uuid::new_v4`'s one `getrandom` system call per guid:
/// every acquisition makes one.
fn fresh_guid() -> Uuid {
    uuid::Builder::from_random_bytes(rand::random()).into_uuid()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_guids_are_random_version_4_and_differ() {
        let (a, b) = (fresh_guid(), fresh_guid());
        assert_ne!(a, b);
        assert_eq!(a.get_version(), Some(uuid::Version::Random));
        assert_eq!(a.get_variant(), uuid::Variant::RFC4122);
        let name = naming::protected_node_name(&a, "lock-");
        assert_eq!(name, format!("_c_{}-lock-", a.hyphenated()));
        assert_eq!(Protected::new("/a").path_of("b"), "/a/b");
    }
}
