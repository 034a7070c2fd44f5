//! Creates that are safe to retry: [`create_protected`] (the crate's one protected create,
//! `queue::create_marked`, for a user's node), and [`create_all`] / [`create_quietly`]
//! (Curator's idempotent create, parents as containers).

use zk_client::{Client, CreateMode, CreateOptions, ErrorCode, Stat};

use crate::error::{Error, Result};
use crate::queue::{create_marked, Mark, Orphan, Protected};
use crate::retry::{gave_up, retry_after, retrying, turns};

/// The node [`create_protected`] made.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Created {
    /// The node's full path (relative to the client's chroot): the parent, then
    /// `_c_<guid>-<name>`, then the sequence the server gave a sequential node.
    pub path: String,
    /// The node's `Stat` as created (or as found after a lost reply).
    pub stat: Stat,
    /// Whether the create's reply was lost and the node was found by its guid afterwards.
    pub recovered: bool,
}

impl Created {
    /// The node's name (the last segment of [`path`](Self::path)).
    pub fn name(&self) -> &str {
        crate::path::name(&self.path)
    }
}

/// Creates the node `path` in Curator's protected form and returns the one node created,
/// even when the create's reply is lost with the connection (Curator's
/// `create().withProtection()`).
///
/// The last segment of `path` is prefixed with `_c_<guid>-` (a fresh random guid per call),
/// so the node of `/jobs/job-` created sequentially is `/jobs/_c_<guid>-job-0000000007`:
/// Curator's `ProtectedUtils` and its recipes recognise it. After a connection loss the
/// parent is listed and the node found by the guid, so a lost reply never leads to a second
/// node, for every mode (persistent, ephemeral, sequential or not, TTL, container).
/// Missing parents are created as containers (removed by the server once empty), as
/// Curator's `creatingParentContainersIfNeeded`.
///
/// ```no_run
/// # async fn f(client: zk_client::Client) -> zk_recipes::Result<()> {
/// use zk_client::CreateOptions;
/// let made = zk_recipes::writes::create_protected(
///     &client,
///     "/workers/worker-",
///     b"host-1",
///     &CreateOptions::ephemeral_sequential(),
/// )
/// .await?;
/// println!("registered as {} (recovered: {})", made.path, made.recovered);
/// # Ok(()) }
/// ```
///
/// # Errors
///
/// [`Error::InvalidPath`] for a path that is not absolute, is the root or ends with `/`;
/// the create's errors (`NoAuth`, `InvalidAcl`, `NoChildrenForEphemerals`, ...); the
/// session's end (`SessionExpired`, `Closed`, `AuthFailed`: also when the node is found
/// under another session, which means ours ended); [`Error::GaveUp`] after the crate's bound
/// of tries.
///
/// # Cancel safety
///
/// The create is sent when the future is first polled. If the future is dropped, or the call
/// fails, after the create may have been applied, every node of this call's guid is deleted
/// in the background (through reconnects), as Curator does for a failed protected create:
/// nothing of a call that did not return `Ok` is left behind. One exception: a persistent
/// node whose create applied just before the session ended stays (the clean-up needs the
/// session; Curator has the same gap). Find it by the guid prefix of its name.
pub async fn create_protected(
    client: &Client,
    path: &str,
    data: &[u8],
    options: &CreateOptions,
) -> Result<Created> {
    let path = crate::path::check_base(path)?;
    let parent = crate::path::parent(&path);
    let nodes = Protected::new(parent);
    let full = nodes.path_of(&nodes.name(crate::path::name(&path)));
    let mut orphan = Orphan {
        client: client.clone(),
        nodes: nodes.clone(),
        node: None,
    }
    .guard();
    let made = create_marked(
        client,
        parent,
        &full,
        data,
        options,
        Mark::Guid(nodes.guid),
        false,
    )
    .await?;
    orphan.disarm();
    Ok(Created {
        path: nodes.path_of(&made.name),
        stat: made.stat,
        recovered: made.recovered,
    })
}

/// Creates `path` and its missing parents, surviving a lost reply (Curator's
/// `create().idempotent().creatingParentsIfNeeded()`). Returns the node's path and `Stat`.
///
/// The parents are made as [`zk_client::Client::create_all`] makes them: persistent, or
/// containers with [`CreateOptions::with_container_parents`] (Curator's
/// `creatingParentContainersIfNeeded()`; persistent where the server has no containers,
/// before ZooKeeper 3.5).
///
/// After a connection loss the create is sent again; if it then finds the node, the node is
/// taken as the one our first create made when it holds our data at version 0 (an ephemeral
/// node: when our session owns it), as Curator's idempotent create decides. A node that
/// does not match is someone else's: `NodeExists`.
///
/// A sequential mode cannot be recognised after a lost reply (the server picks the name):
/// the create is sent once, and a connection loss is returned as it is. Use
/// [`create_protected`] for sequential nodes.
///
/// ```no_run
/// # async fn f(client: zk_client::Client) -> zk_recipes::Result<()> {
/// use zk_client::CreateOptions;
/// zk_recipes::writes::create_all(&client, "/app/config/limits", b"{}", &CreateOptions::persistent())
///     .await?;
/// # Ok(()) }
/// ```
///
/// # Errors
///
/// `NodeExists` when someone else's node is there; the create's other errors; the
/// session's end; `ConnectionLoss` for a sequential mode whose reply was lost;
/// [`Error::GaveUp`] after the crate's bound of tries.
///
/// # Cancel safety
///
/// The create is sent when the future is first polled; dropping the future loses only the
/// outcome (the node may have been created).
pub async fn create_all(
    client: &Client,
    path: &str,
    data: &[u8],
    options: &CreateOptions,
) -> Result<(String, Stat)> {
    create_idempotent(client, path, data, options, true).await
}

/// As [`create_all`], with a node that already exists counted as success: `Ok(None)` when
/// someone else's node is at `path`, `Ok(Some(..))` when this call created it.
///
/// ```no_run
/// # async fn f(client: zk_client::Client) -> zk_recipes::Result<()> {
/// use zk_client::CreateOptions;
/// let made = zk_recipes::writes::create_quietly(&client, "/app/seed", b"0", &CreateOptions::persistent())
///     .await?;
/// if made.is_none() {
///     println!("already seeded");
/// }
/// # Ok(()) }
/// ```
///
/// # Errors
///
/// As [`create_all`], without `NodeExists`.
///
/// # Cancel safety
///
/// As [`create_all`].
pub async fn create_quietly(
    client: &Client,
    path: &str,
    data: &[u8],
    options: &CreateOptions,
) -> Result<Option<(String, Stat)>> {
    match create_idempotent(client, path, data, options, true).await {
        Ok(made) => Ok(Some(made)),
        Err(Error::Client(zk_client::Error::NodeExists)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The idempotent create: `NodeExists` after a lost reply is ours when the node holds our
/// data at version 0 (ephemeral: owned by our session). With `parents`, missing parents are
/// made as `options` says (containers with `container_parents`, falling back to persistent
/// parents when the server has no containers: `Unimplemented`).
pub(super) async fn create_idempotent(
    client: &Client,
    path: &str,
    data: &[u8],
    options: &CreateOptions,
    parents: bool,
) -> Result<(String, Stat)> {
    let sequential = options.mode.is_sequential();
    let session = client.session_id();
    let mut containers = parents && options.container_parents;
    let mut lost = false;
    for _ in turns() {
        let attempt = if parents {
            let opts = options.clone().with_container_parents(containers);
            client.create_all(path, data, &opts).await
        } else {
            client.create(path, data, options).await
        };
        match attempt {
            Ok(made) => return Ok(made),
            // No containers on this server (before 3.5): persistent parents, as Curator's
            // fallback. A TTL or container node itself cannot fall back. (The client names
            // the feature and narrows its server profile, so the next try sends none.)
            Err(
                zk_client::Error::Unimplemented(zk_client::Feature::Container)
                | zk_client::Error::Server(ErrorCode::Unimplemented),
            ) if containers && !needs_extended_types(options.mode) => {
                containers = false;
            }
            Err(zk_client::Error::NodeExists) if lost => {
                let found = retrying(client, || client.get_data(path)).await;
                match found {
                    Ok((stored, stat)) if is_ours(options.mode, session, data, &stored, &stat) => {
                        return Ok((path.to_owned(), stat));
                    }
                    Ok(_) => return Err(zk_client::Error::NodeExists.into()),
                    // Deleted since: create again.
                    Err(Error::Client(zk_client::Error::NoNode)) => {}
                    Err(e) => return Err(e),
                }
            }
            Err(e) if e.is_connection_loss() && sequential => return Err(e.into()),
            Err(e) => {
                let loss = e.is_connection_loss();
                retry_after(client, e).await?;
                lost |= loss;
            }
        }
    }
    Err(gave_up())
}

/// Whether `mode` needs the server's extended types (TTL nodes) or is a container itself.
fn needs_extended_types(mode: CreateMode) -> bool {
    matches!(
        mode,
        CreateMode::Container
            | CreateMode::PersistentWithTtl
            | CreateMode::PersistentSequentialWithTtl
    )
}

/// Curator's idempotent rule: the node found after a lost reply is ours when it is what our
/// create would have made (our data at version 0; an ephemeral one owned by our session).
fn is_ours(mode: CreateMode, session: i64, data: &[u8], stored: &[u8], stat: &Stat) -> bool {
    if mode.is_ephemeral() {
        stat.ephemeral_owner == session && stored == data
    } else {
        stat.version == 0 && stored == data
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zk_proto::records::{Create2Response, CreateResponse};
    use zk_proto::OpCode;
    use zk_test_support::{connect_client, encode, within, Conn, FakeServer};

    /// Reads the next request, checks its opcode and the path it starts with, answers `code`.
    async fn answer(conn: &mut Conn, op: OpCode, path: &str, code: ErrorCode) {
        let req = within("request", conn.read_non_ping()).await.unwrap();
        assert_eq!(req.op, i32::from(op), "{path}");
        let sent = zk_proto::decode_prefix::<String>(req.body.clone()).unwrap();
        assert_eq!(sent, path);
        let body = if code == ErrorCode::Ok && op == OpCode::Create {
            encode(&CreateResponse {
                path: path.to_owned(),
            })
        } else if code == ErrorCode::Ok {
            encode(&Create2Response {
                path: path.to_owned(),
                stat: Stat::default(),
            })
        } else {
            Default::default()
        };
        conn.reply(req.xid, 1, code, &body).await;
    }

    /// A server without containers (before 3.5) answers their create with `Unimplemented`:
    /// `create_all` asked for container parents makes them persistent instead, as Curator
    /// falls back.
    #[tokio::test]
    async fn parents_fall_back_to_persistent_without_containers() {
        let server = FakeServer::start().await;
        let (client, mut conn) = connect_client(&server, "", 9, 30_000, |b| b).await;
        let made = tokio::spawn(async move {
            let options = CreateOptions::persistent().with_container_parents(true);
            create_all(&client, "/a/b", b"x", &options).await
        });
        answer(&mut conn, OpCode::Create2, "/a/b", ErrorCode::NoNode).await;
        answer(
            &mut conn,
            OpCode::CreateContainer,
            "/a",
            ErrorCode::Unimplemented,
        )
        .await;
        answer(&mut conn, OpCode::Create2, "/a/b", ErrorCode::NoNode).await;
        // Again, with persistent parents (made with a plain create: no `Stat` is needed).
        answer(&mut conn, OpCode::Create2, "/a/b", ErrorCode::NoNode).await;
        answer(&mut conn, OpCode::Create, "/a", ErrorCode::Ok).await;
        answer(&mut conn, OpCode::Create2, "/a/b", ErrorCode::Ok).await;
        let (path, _) = within("create_all", made).await.unwrap().unwrap();
        assert_eq!(path, "/a/b");
    }

    #[test]
    fn a_found_node_is_ours_only_as_our_create_would_have_made_it() {
        let stat = |version, owner| Stat {
            version,
            ephemeral_owner: owner,
            ..Stat::default()
        };
        let p = CreateMode::Persistent;
        assert!(is_ours(p, 7, b"a", b"a", &stat(0, 0)));
        assert!(!is_ours(p, 7, b"a", b"a", &stat(1, 0)), "written since");
        assert!(!is_ours(p, 7, b"a", b"b", &stat(0, 0)), "other data");
        let e = CreateMode::Ephemeral;
        assert!(is_ours(e, 7, b"a", b"a", &stat(0, 7)));
        assert!(!is_ours(e, 7, b"a", b"a", &stat(0, 8)), "another session's");
        assert!(needs_extended_types(CreateMode::PersistentWithTtl));
        assert!(!needs_extended_types(CreateMode::EphemeralSequential));
    }
}
