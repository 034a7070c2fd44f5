//! The operations [`retry`](super::retry()) accepts ([`Idempotent`]): value types whose
//! attempt may be repeated after a connection loss without applying twice.

use std::fmt;
use std::future::Future;

use bytes::Bytes;
use zk_client::{Client, CreateOptions, Op, OpResult, Stat};

use super::create::Created;
use super::delete::DeleteOutcome;
use super::set::{read_back, ReadBack};
use crate::error::{Error, Result};
use crate::queue::{naming, OnDrop, Orphan, Protected};

pub(super) mod sealed {
    /// Keeps [`Idempotent`](super::Idempotent) to the types of this module.
    pub trait Sealed {}

    /// A token only this crate can make: the attempt method cannot be called from outside.
    #[derive(Debug, Clone, Copy)]
    pub struct Token(pub(crate) ());
}

use sealed::{Sealed, Token};

/// An operation that is safe to repeat after a connection loss, decided by its type:
/// passed to [`retry`](super::retry()) and [`Retrier::new_managed`](super::Retrier::new_managed). Sealed:
/// implemented by the op types below only.
///
/// | op | one attempt | after a lost reply |
/// |---|---|---|
/// | [`GetData`], [`Exists`], [`GetChildren`] | the read | read again |
/// | [`SetData`] (version: `i32`, never "any") | the set | read back: still at `version`: send again; at `version + 1` with our data: ours; otherwise `BadVersion` or unknown |
/// | [`Delete`] (version: `i32`) | read the node's `czxid`, then the delete | a node at the path with another `czxid` is someone else's: never deleted |
/// | [`ProtectedCreate`] | the create, named `_c_<guid>-<name>` | list the parent, find the node by the guid |
/// | [`GuardedMulti`] | the `multi`, whose first op is a versioned set of a guard node | read the guard back: at `version + 1` with our data, the whole `multi` applied |
///
/// A plain create, an unversioned set or delete, or a `multi` without a guard has no type
/// here, so it cannot be passed:
///
/// ```compile_fail
/// # async fn f(client: zk_client::Client) {
/// use zk_client::CreateOptions;
/// use zk_recipes::writes::{retry, RetryPolicy};
/// // A plain create whose reply is lost cannot be told from someone else's node: refused.
/// let op = client.create("/jobs/job-", b"", &CreateOptions::persistent_sequential());
/// let _ = retry(&client, op, &RetryPolicy::new()).await;
/// # }
/// ```
///
/// ```compile_fail
/// # async fn f(client: zk_client::Client) {
/// use zk_recipes::writes::{retry, RetryPolicy, SetData};
/// // An unversioned set ("any version") would overwrite a later write: refused.
/// let op = SetData::new("/config", b"v2", None);
/// let _ = retry(&client, op, &RetryPolicy::new()).await;
/// # }
/// ```
///
/// ```compile_fail
/// # async fn f(client: zk_client::Client) {
/// use zk_recipes::writes::{retry, RetryPolicy};
/// // A transaction of zk-client (say a check and a sequential create) may apply twice.
/// let op = [zk_client::Op::check("/lock", Some(3))];
/// let _ = retry(&client, op, &RetryPolicy::new()).await;
/// # }
/// ```
///
/// ```compile_fail
/// use zk_recipes::writes::Idempotent;
/// // Sealed: a type of one's own cannot be declared safe to repeat.
/// struct PlainCreate;
/// impl Idempotent for PlainCreate {
///     type Output = ();
/// }
/// ```
///
/// What is accepted instead:
///
/// ```no_run
/// # async fn f(client: zk_client::Client) -> zk_recipes::Result<()> {
/// use zk_client::{CreateOptions, Op};
/// use zk_recipes::writes::{retry, GetData, GuardedMulti, ProtectedCreate, RetryPolicy, SetData};
/// let policy = RetryPolicy::new();
/// let seq = CreateOptions::persistent_sequential();
/// retry(&client, ProtectedCreate::new("/jobs/job-", b"", &seq)?, &policy).await?;
/// let (_, stat) = retry(&client, GetData::new("/config"), &policy).await?;
/// retry(&client, SetData::new("/config", b"v2", stat.version), &policy).await?;
/// let guarded = GuardedMulti::new("/lock", b"owner-1:7", 3).op(Op::create("/log/e-", b"", &seq));
/// retry(&client, guarded, &policy).await?;
/// # Ok(()) }
/// ```
pub trait Idempotent: Sealed + Send {
    /// What the operation returns.
    type Output: Send;

    /// One attempt (requests sent when first polled). Not for use outside this crate.
    #[doc(hidden)]
    fn attempt<'a>(
        &'a mut self,
        client: &'a Client,
        token: Token,
    ) -> impl Future<Output = Result<Self::Output>> + Send + 'a;

    /// Whether `error`, which ended an attempt, may be followed by another attempt: the
    /// loop's rule ([`repeatable`]: a connection loss, a throttled request) unless the
    /// operation knows better. Not for use outside this crate.
    #[doc(hidden)]
    fn may_repeat(&self, error: &Error, _token: Token) -> bool {
        repeatable(error)
    }
}

/// The loop's rule: an attempt that ended with a connection loss, a client or server
/// timeout, a throttled request or a request the client holds back for a while may be
/// followed by another; so may one that met the end of the session (only
/// [`Retrier::new_managed`](super::Retrier::new_managed) has a next session to try on).
pub(super) fn repeatable(error: &Error) -> bool {
    match error {
        Error::Client(e) => {
            e.is_retryable()
                || e.is_terminal()
                || matches!(e, zk_client::Error::ServerDropsRequest { .. })
        }
        _ => false,
    }
}

// ===== reads =====

/// Reads a node's data and `Stat` ([`Client::get_data`]).
#[derive(Debug, Clone)]
pub struct GetData {
    path: String,
}

impl GetData {
    /// Reads `path`.
    pub fn new(path: &str) -> GetData {
        GetData {
            path: path.to_owned(),
        }
    }
}

impl Sealed for GetData {}
impl Idempotent for GetData {
    type Output = (Bytes, Stat);

    fn attempt<'a>(
        &'a mut self,
        client: &'a Client,
        _: Token,
    ) -> impl Future<Output = Result<(Bytes, Stat)>> + Send + 'a {
        let read = client.get_data(&self.path);
        async move { Ok(read.await?) }
    }
}

/// Reads a node's `Stat`, `None` when there is none ([`Client::exists`]).
#[derive(Debug, Clone)]
pub struct Exists {
    path: String,
}

impl Exists {
    /// Looks at `path`.
    pub fn new(path: &str) -> Exists {
        Exists {
            path: path.to_owned(),
        }
    }
}

impl Sealed for Exists {}
impl Idempotent for Exists {
    type Output = Option<Stat>;

    fn attempt<'a>(
        &'a mut self,
        client: &'a Client,
        _: Token,
    ) -> impl Future<Output = Result<Option<Stat>>> + Send + 'a {
        let read = client.exists(&self.path);
        async move { Ok(read.await?) }
    }
}

/// Lists a node's children ([`Client::get_children`]).
#[derive(Debug, Clone)]
pub struct GetChildren {
    path: String,
}

impl GetChildren {
    /// Lists the children of `path`.
    pub fn new(path: &str) -> GetChildren {
        GetChildren {
            path: path.to_owned(),
        }
    }
}

impl Sealed for GetChildren {}
impl Idempotent for GetChildren {
    type Output = Vec<String>;

    fn attempt<'a>(
        &'a mut self,
        client: &'a Client,
        _: Token,
    ) -> impl Future<Output = Result<Vec<String>>> + Send + 'a {
        let read = client.get_children(&self.path);
        async move { Ok(read.await?) }
    }
}

// ===== versioned writes =====

/// Reads `path` back after a lost write: `None` when there is no node.
async fn read_node(client: &Client, path: &str) -> Result<Option<(Bytes, Stat)>> {
    match client.get_data(path).await {
        Ok(found) => Ok(Some(found)),
        Err(zk_client::Error::NoNode) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The error that ends a write whose outcome cannot be found out: `ConnectionLoss` ("may or
/// may not have been applied"), not repeated.
fn unknown() -> Error {
    zk_client::Error::ConnectionLoss.into()
}

/// Sets a node's data at a given version ([`Client::set_data`] with `Some(version)`).
///
/// The version is an `i32`, not an `Option`: an unversioned set repeated after a lost reply
/// would overwrite whatever was written meanwhile, so it cannot be retried here (use
/// [`set_data`](super::set_data) with `None` for a set that accepts that).
#[derive(Debug, Clone)]
pub struct SetData {
    path: String,
    data: Vec<u8>,
    version: i32,
    /// A set of ours was sent and its reply lost.
    sent: bool,
    /// The outcome can no longer be found out.
    unknown: bool,
}

impl SetData {
    /// Sets `path` to `data` if the node is at `version`.
    pub fn new(path: &str, data: &[u8], version: i32) -> SetData {
        SetData {
            path: path.to_owned(),
            data: data.to_vec(),
            version,
            sent: false,
            unknown: false,
        }
    }
}

impl Sealed for SetData {}
impl Idempotent for SetData {
    type Output = Stat;

    async fn attempt(&mut self, client: &Client, _: Token) -> Result<Stat> {
        if self.sent {
            match read_back(
                self.version,
                &self.data,
                read_node(client, &self.path).await?,
            ) {
                ReadBack::NotApplied => {}
                ReadBack::Applied(stat) => return Ok(stat),
                ReadBack::Lost => return Err(zk_client::Error::BadVersion.into()),
                ReadBack::Unknown => {
                    self.unknown = true;
                    return Err(unknown());
                }
            }
        }
        let set = client.set_data(&self.path, &self.data, Some(self.version));
        match set.await {
            Ok(stat) => Ok(stat),
            Err(e) => {
                self.sent |= e.is_connection_loss();
                Err(e.into())
            }
        }
    }

    fn may_repeat(&self, error: &Error, _: Token) -> bool {
        !self.unknown && repeatable(error)
    }
}

/// Deletes a node at a given version ([`Client::delete`] with `Some(version)`), counting a
/// node that is already gone as success ([`DeleteOutcome::AlreadyGone`]).
///
/// The node is read first (its `czxid`): after a lost reply, a node at the path with another
/// `czxid` was created again by someone else and is left alone. There is no unversioned
/// form (use [`delete_quietly`](super::delete_quietly) with `None`).
#[derive(Debug, Clone)]
pub struct Delete {
    path: String,
    version: i32,
    /// The `czxid` of the node first found at the path.
    czxid: Option<i64>,
    /// A delete of ours was sent and its reply lost.
    sent: bool,
}

impl Delete {
    /// Deletes `path` if the node is at `version`.
    pub fn new(path: &str, version: i32) -> Delete {
        Delete {
            path: path.to_owned(),
            version,
            czxid: None,
            sent: false,
        }
    }

    fn gone(&self) -> DeleteOutcome {
        if self.sent {
            DeleteOutcome::Deleted
        } else {
            DeleteOutcome::AlreadyGone
        }
    }
}

impl Sealed for Delete {}
impl Idempotent for Delete {
    type Output = DeleteOutcome;

    async fn attempt(&mut self, client: &Client, _: Token) -> Result<DeleteOutcome> {
        let Some(stat) = client.exists(&self.path).await? else {
            return Ok(self.gone());
        };
        match self.czxid {
            None => self.czxid = Some(stat.czxid),
            // Another node than the one we meant: ours is gone.
            Some(czxid) if czxid != stat.czxid => return Ok(self.gone()),
            Some(_) => {}
        }
        if stat.version != self.version {
            // Our delete cannot have applied (the node is still there).
            return Err(zk_client::Error::BadVersion.into());
        }
        match client.delete(&self.path, Some(self.version)).await {
            Ok(()) => Ok(DeleteOutcome::Deleted),
            Err(zk_client::Error::NoNode) => Ok(self.gone()),
            Err(e) => {
                self.sent |= e.is_connection_loss();
                Err(e.into())
            }
        }
    }
}

// ===== the protected create =====

/// A create in Curator's protected form ([`create_protected`](super::create_protected)'s
/// node, `_c_<guid>-<name>`): after a lost reply the parent is listed and the node found by
/// the guid, so a repeat never makes a second node, in every mode (sequential or not).
/// Missing parents are made as containers.
///
/// The guid is chosen once per value and kept across attempts (and, with
/// [`Retrier::new_managed`](super::Retrier::new_managed), sessions: a persistent node made on an expired
/// session is found again on the next). If the retry fails or its future is dropped, every
/// node of the guid is deleted in the background, as Curator does for a failed protected
/// create.
pub struct ProtectedCreate {
    nodes: Protected,
    /// The full path of the node to create (before the server's sequence).
    full: String,
    data: Vec<u8>,
    options: CreateOptions,
    /// A create of ours was sent and its reply lost (or it said `NodeExists`).
    sent: bool,
    /// Removes the nodes of the guid unless the create succeeded.
    orphan: Option<OnDrop<Orphan>>,
}

impl fmt::Debug for ProtectedCreate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProtectedCreate")
            .field("path", &self.full)
            .field("mode", &self.options.mode)
            .field("sent", &self.sent)
            .finish_non_exhaustive()
    }
}

impl ProtectedCreate {
    /// The protected create of `path` (its last segment gets the `_c_<guid>-` prefix) with
    /// `data` and `options`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] for a path that is not absolute, is the root or ends with `/`.
    pub fn new(path: &str, data: &[u8], options: &CreateOptions) -> Result<ProtectedCreate> {
        let path = crate::path::check_base(path)?;
        let nodes = Protected::new(crate::path::parent(&path));
        let full = nodes.path_of(&nodes.name(crate::path::name(&path)));
        Ok(ProtectedCreate {
            nodes,
            full,
            data: data.to_vec(),
            options: options.clone().with_container_parents(true),
            sent: false,
            orphan: None,
        })
    }

    /// Our node, if the parent lists one of our guid (owned by `client`'s session when
    /// ephemeral: a node of an expired session of ours is gone with it).
    async fn find(&self, client: &Client) -> Result<Option<Created>> {
        let children = match client.get_children(&self.nodes.base).await {
            Ok(children) => children,
            Err(zk_client::Error::NoNode) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        for name in naming::all_by_guid(&children, &self.nodes.guid) {
            let path = self.nodes.path_of(name);
            match client.exists(&path).await? {
                Some(stat)
                    if !self.options.mode.is_ephemeral()
                        || stat.ephemeral_owner == client.session_id() =>
                {
                    return Ok(Some(Created {
                        path,
                        stat,
                        recovered: true,
                    }));
                }
                _ => {}
            }
        }
        Ok(None)
    }

    fn done(&mut self, made: Created) -> Created {
        if let Some(mut orphan) = self.orphan.take() {
            orphan.disarm();
        }
        made
    }
}

impl Sealed for ProtectedCreate {}
impl Idempotent for ProtectedCreate {
    type Output = Created;

    async fn attempt(&mut self, client: &Client, _: Token) -> Result<Created> {
        // The cleanup, should the retry fail, runs on the latest session.
        match self.orphan.as_mut().and_then(OnDrop::state_mut) {
            Some(orphan) => orphan.client = client.clone(),
            None => {
                self.orphan = Some(
                    Orphan {
                        client: client.clone(),
                        nodes: self.nodes.clone(),
                        node: None,
                    }
                    .guard(),
                );
            }
        }
        if self.sent {
            if let Some(made) = self.find(client).await? {
                return Ok(self.done(made));
            }
        }
        let create = client.create_all(&self.full, &self.data, &self.options);
        match create.await {
            Ok((path, stat)) => Ok(self.done(Created {
                path,
                stat,
                recovered: false,
            })),
            Err(e) => {
                // A guid name exists only if it is ours: found on the next attempt.
                self.sent |= e.is_connection_loss() || matches!(e, zk_client::Error::NodeExists);
                Err(e.into())
            }
        }
    }

    fn may_repeat(&self, error: &Error, _: Token) -> bool {
        // `NodeExists` of a fresh guid's name is our own node: look for it.
        repeatable(error) || matches!(error, Error::Client(zk_client::Error::NodeExists))
    }
}

// ===== the guarded multi =====

/// A `multi` made safe to repeat by its first op: a versioned set of a guard node
/// (`set_data(guard, data, Some(version))`), applied with the other ops or not at all.
///
/// Once the `multi` applied, the guard is at `version + 1` and any repeat fails at the
/// guard, so it never applies twice; after a lost reply the guard is read back: still at
/// `version`, the `multi` did not apply (sent again); at `version + 1` with our data, it did
/// ([`Committed::results`] is `None`: the replies were lost). A `check` alone is not a guard
/// (it does not move the version: a repeat would apply again), so there is no constructor for
/// it. Give the guard data that differs from what a concurrent writer would set (a counter,
/// an owner and a sequence): the read-back recognises the `multi` by it.
#[derive(Debug, Clone)]
pub struct GuardedMulti {
    guard: SetData,
    ops: Vec<Op>,
}

/// What a [`GuardedMulti`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Committed {
    /// The guard node's `Stat` after the `multi` (at the guarded version + 1).
    pub guard: Stat,
    /// The results of the other ops, in order; `None` when the reply was lost and the
    /// `multi` was found applied by reading the guard back.
    pub results: Option<Vec<OpResult>>,
}

impl GuardedMulti {
    /// A `multi` whose first op sets `guard` to `data` at `version`.
    pub fn new(guard: &str, data: &[u8], version: i32) -> GuardedMulti {
        GuardedMulti {
            guard: SetData::new(guard, data, version),
            ops: Vec::new(),
        }
    }

    /// Adds an op after the guard (any op: the guard keeps the whole `multi` from applying
    /// twice).
    #[must_use]
    pub fn op(mut self, op: Op) -> GuardedMulti {
        self.ops.push(op);
        self
    }
}

impl Sealed for GuardedMulti {}
impl Idempotent for GuardedMulti {
    type Output = Committed;

    async fn attempt(&mut self, client: &Client, _: Token) -> Result<Committed> {
        let guard = &mut self.guard;
        if guard.sent {
            match read_back(
                guard.version,
                &guard.data,
                read_node(client, &guard.path).await?,
            ) {
                ReadBack::NotApplied => {}
                ReadBack::Applied(stat) => {
                    return Ok(Committed {
                        guard: stat,
                        results: None,
                    })
                }
                ReadBack::Lost => {
                    return Err(zk_client::Error::Multi {
                        index: 0,
                        code: zk_client::ErrorCode::BadVersion,
                    }
                    .into())
                }
                ReadBack::Unknown => {
                    guard.unknown = true;
                    return Err(unknown());
                }
            }
        }
        let mut ops = Vec::with_capacity(self.ops.len() + 1);
        ops.push(Op::set_data(&guard.path, &guard.data, Some(guard.version)));
        ops.extend(self.ops.iter().cloned());
        match client.multi(&ops).await {
            Ok(mut results) => {
                let first = if results.is_empty() {
                    None
                } else {
                    Some(results.remove(0))
                };
                match first {
                    Some(OpResult::SetData { stat }) => Ok(Committed {
                        guard: stat,
                        results: Some(results),
                    }),
                    _ => {
                        Err(zk_client::Error::Server(zk_client::ErrorCode::MarshallingError).into())
                    }
                }
            }
            Err(e) => {
                guard.sent |= e.is_connection_loss();
                Err(e.into())
            }
        }
    }

    fn may_repeat(&self, error: &Error, _: Token) -> bool {
        !self.guard.unknown && repeatable(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(version: i32) -> Stat {
        Stat {
            version,
            ..Stat::default()
        }
    }

    #[test]
    fn a_lost_versioned_write_is_decided_by_the_node_read_back() {
        let node = |data: &'static [u8], version| Some((Bytes::from_static(data), stat(version)));
        assert_eq!(read_back(4, b"ours", node(b"old", 4)), ReadBack::NotApplied);
        assert_eq!(
            read_back(4, b"ours", node(b"ours", 5)),
            ReadBack::Applied(stat(5))
        );
        assert_eq!(read_back(4, b"ours", node(b"theirs", 5)), ReadBack::Lost);
        assert_eq!(read_back(4, b"ours", node(b"ours", 6)), ReadBack::Unknown);
        assert_eq!(read_back(4, b"ours", None), ReadBack::Unknown);
        assert_eq!(
            read_back(i32::MAX, b"x", node(b"x", i32::MIN)),
            ReadBack::Applied(stat(i32::MIN)),
            "the version wraps as the server's does"
        );
    }
}
