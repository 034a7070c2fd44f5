//! The protected create, the crate's one ([`create_marked`]): a create whose reply is lost is
//! never made twice; the node is found again by how it is recognised as ours ([`Mark`]): a
//! fresh guid in its name (`_c_<guid>-…`, the queues and protected persistent nodes), or a
//! name ours alone checked with its owner session (a double barrier's member, a persistent
//! node's fixed name). [`Protected`] names the nodes of one guid, finds and removes them.
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

use std::future::Future;
use std::pin::Pin;

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
        let made = create_marked(
            client,
            &self.base,
            &self.path_of(name),
            data,
            &CreateOptions::new(mode),
            Mark::Guid(self.guid),
            list,
        )
        .await?;
        Ok((made.name, made.stat, made.listing))
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

/// A create already sent, as `create` or `create_all` returned it.
type SentCreate = Pin<Box<dyn Future<Output = zk_client::Result<(String, Stat)>> + Send>>;

/// How a node of ours is recognised after a create whose reply was lost.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Mark {
    /// By our guid in its name (Curator's protected `_c_<guid>-` prefix): the parent is
    /// listed and the node found by the guid, whatever sequence the server gave it.
    Guid(Uuid),
    /// By its name, which is ours alone (a fixed path, a fresh UUID as the name): the node
    /// is looked at.
    Name,
    /// By its name's prefix and our session: a plain (unprotected) ephemeral sequential
    /// node, `<name><sequence>` (Curator's `EPHEMERAL_SEQUENTIAL` without protection, as
    /// service discovery's dynamic sequential instances). The parent is listed for names of
    /// the prefix and a sequence, and the one our session owns is ours
    /// ([`find_sequential`]). A persistent sequential node has no owner to tell: protect it.
    Sequence,
}

/// What [`create_marked`] made (or found).
#[derive(Debug)]
pub(crate) struct Made {
    /// The node's name (its last segment, with the sequence the server gave).
    pub(crate) name: String,
    pub(crate) stat: Stat,
    /// The listing asked for, taken right after the first create succeeded.
    pub(crate) listing: Option<Listing>,
    /// Whether the node was found after a lost reply rather than created by the reply we
    /// read (its data is what that create sent, which may be older than the caller's).
    pub(crate) recovered: bool,
}

/// The one protected create of the crate (queue nodes, persistent nodes, barrier members):
/// creates `path` under `parent` with `options`, surviving a lost reply without a second
/// node (see the module's diagram): after a connection loss it reconnects and looks for its
/// node by `mark`. A found node of an ephemeral mode must be our session's: otherwise our
/// session ended (`SessionExpired`, the crate's one way to say so: the client never moves to
/// a new session) for a guid, or the name is someone else's (`NodeExists`) for a name. With
/// `list`, the first create goes out together with a listing of `parent` (see
/// [`Protected::create_listing`]).
///
/// Missing parents are made as containers (with `options.container_parents`, through
/// `create_all`, with the node's ACL).
///
/// # Errors
///
/// `NodeExists` for a [`Mark::Name`] held by someone else; the session's end; any other
/// error of the create ([`Error::GaveUp`] after the crate's bound of turns).
pub(crate) async fn create_marked(
    client: &Client,
    parent: &str,
    path: &str,
    data: &[u8],
    options: &CreateOptions,
    mark: Mark,
    list: bool,
) -> Result<Made> {
    let session = client.session_id();
    let ephemeral = options.mode.is_ephemeral();
    // Sent when called (the client queues a request at once), so a listing asked for right
    // after it follows it on the wire.
    let create = || -> SentCreate {
        if options.container_parents {
            Box::pin(client.create_all(path, data, options))
        } else {
            Box::pin(client.create(path, data, options))
        }
    };
    let epoch = client.connection_epoch();
    let first = create();
    let listing = list.then(|| client.get_children(parent));
    let mut attempt = first.await;
    let listed = match listing {
        Some(listing) if attempt.is_ok() => listing
            .await
            .ok()
            .map(|children| Listing { epoch, children }),
        // Its reply (if any) is dropped with it.
        _ => None,
    };
    let made = |name: &str, stat: Stat, listing: Option<Listing>, recovered: bool| Made {
        name: name.to_owned(),
        stat,
        listing,
        recovered,
    };
    for _ in turns() {
        match attempt {
            Ok((created, stat)) => {
                return Ok(made(crate::path::name(&created), stat, listed, false));
            }
            Err(zk_client::Error::NoNode) => ensure_containers(client, parent).await?,
            Err(zk_client::Error::NodeExists) if matches!(mark, Mark::Name) => {
                return Err(zk_client::Error::NodeExists.into());
            }
            Err(e) => {
                // A guid name can exist already only if it is ours (the guid is fresh):
                // recover it like a lost reply. After a connection loss the create may or
                // may not have happened: look for our node. Anything else ends here.
                if !matches!(e, zk_client::Error::NodeExists) {
                    retry_after(client, e).await?;
                }
                let found = match mark {
                    Mark::Guid(guid) => Protected {
                        base: parent.to_owned(),
                        guid,
                    }
                    .find(client)
                    .await?
                    .map(|name| (crate::path::join(parent, &name), name)),
                    Mark::Name => Some((path.to_owned(), crate::path::name(path).to_owned())),
                    Mark::Sequence => find_sequential(client, parent, crate::path::name(path))
                        .await?
                        .map(|name| (crate::path::join(parent, &name), name)),
                };
                if let Some((full, name)) = found {
                    // Retried: a connection loss here must not lead to a second create.
                    match retrying(client, || client.exists(&full)).await? {
                        Some(stat) if !ephemeral || stat.ephemeral_owner == session => {
                            debug!(node = %full, "recovered our node after a lost create reply");
                            return Ok(made(&name, stat, None, true));
                        }
                        // A name of ours held by someone else.
                        Some(_) if matches!(mark, Mark::Name) => {
                            return Err(zk_client::Error::NodeExists.into());
                        }
                        // Found under another session. Curator deletes it and starts over
                        // with a new guid (CURATOR-498). Our client never moves to a new
                        // session (expiry is terminal), so a different owner means our
                        // session is gone: the node is an expired session's and goes
                        // with it.
                        Some(_) => return Err(Error::Client(zk_client::Error::SessionExpired)),
                        // Deleted since (by someone else), or never made: create again.
                        None => {}
                    }
                }
                // Not found: the create did not apply; create again.
            }
        }
        attempt = create().await;
    }
    Err(gave_up())
}

/// The newest of `parent`'s children named `prefix` and a sequence that our session owns:
/// a plain ephemeral sequential node of ours ([`Mark::Sequence`]). The listing and the reads
/// are retried through connection losses; a missing parent is `None`.
///
/// # Errors
///
/// The session's end; the listing's or a read's other errors.
pub(crate) async fn find_sequential(
    client: &Client,
    parent: &str,
    prefix: &str,
) -> Result<Option<String>> {
    let session = client.session_id();
    let children = match retrying(client, || client.get_children(parent)).await {
        Ok(children) => children,
        Err(Error::Client(zk_client::Error::NoNode)) => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut ours: Vec<&String> = children
        .iter()
        .filter(|name| {
            name.strip_prefix(prefix)
                .is_some_and(|rest| rest.len() == naming::SEQUENCE_LEN)
                && naming::sequence_suffix(name).is_some()
        })
        .collect();
    ours.sort_by_key(|name| std::cmp::Reverse(naming::sequence_of(name)));
    for name in ours {
        let path = crate::path::join(parent, name);
        match retrying(client, || client.exists(&path)).await? {
            Some(stat) if stat.ephemeral_owner == session => return Ok(Some(name.clone())),
            _ => {}
        }
    }
    Ok(None)
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
    // Persistent where the server has no containers (Keeper before #108908, ZooKeeper 3.4).
    let mode = if client
        .server_profile()
        .supports(zk_client::Feature::Container)
    {
        CreateMode::Container
    } else {
        CreateMode::Persistent
    };
    let options = CreateOptions::new(mode);
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
