//! Transactions (`multi`), the [`Transaction`] builder, and batched reads (`multiRead`).

use std::future::Future;

use bytes::{Bytes, BytesMut};
use zk_proto::records::{
    CheckVersionRequest, DeleteRequest, GetChildrenRequest, GetDataRequest, MultiOp, MultiRequest,
    MultiResponse, MultiResult, SetDataRequest,
};
use zk_proto::{ErrorCode, OpCode, Record, Stat};

use super::node::create_op;
use super::{Client, CreateOptions};
use crate::error::{Error, Result};
use crate::event::{Arrival, Stamped};
use crate::path::Chroot;
use crate::profile::Feature;

/// One operation of a transaction. See [`Client::multi`].
///
/// ```
/// use zk_client::{CreateOptions, Op};
/// let ops = [
///     Op::check("/config", Some(4)),
///     Op::set_data("/config", b"v5", Some(4)),
///     Op::create("/history/v-", b"v5", &CreateOptions::persistent_sequential()),
///     Op::delete("/stale", None),
/// ];
/// # let _ = ops;
/// ```
#[derive(Debug, Clone)]
pub struct Op {
    kind: OpKind,
}

#[derive(Debug, Clone)]
enum OpKind {
    Create {
        path: String,
        data: Vec<u8>,
        options: CreateOptions,
    },
    Delete {
        path: String,
        version: Option<i32>,
    },
    SetData {
        path: String,
        data: Vec<u8>,
        version: Option<i32>,
    },
    Check {
        path: String,
        version: Option<i32>,
    },
}

impl Op {
    /// Create a node (as [`Client::create`]; sent as a plain `create` unless it is a
    /// container or TTL node: the Java client's rule, `create2` only when a stat is needed).
    pub fn create(path: &str, data: &[u8], options: &CreateOptions) -> Op {
        Op {
            kind: OpKind::Create {
                path: path.to_owned(),
                data: data.to_vec(),
                options: options.clone(),
            },
        }
    }

    /// Delete a node (as [`Client::delete`]).
    pub fn delete(path: &str, version: Option<i32>) -> Op {
        Op {
            kind: OpKind::Delete {
                path: path.to_owned(),
                version,
            },
        }
    }

    /// Set a node's data (as [`Client::set_data`]).
    pub fn set_data(path: &str, data: &[u8], version: Option<i32>) -> Op {
        Op {
            kind: OpKind::SetData {
                path: path.to_owned(),
                data: data.to_vec(),
                version,
            },
        }
    }

    /// Require the node to exist with this version (`None`: any version): the
    /// transaction fails with `NoNode`/`BadVersion` at this op otherwise.
    pub fn check(path: &str, version: Option<i32>) -> Op {
        Op {
            kind: OpKind::Check {
                path: path.to_owned(),
                version,
            },
        }
    }

    fn to_multi_op(&self, chroot: &Chroot) -> Result<MultiOp> {
        Ok(match &self.kind {
            OpKind::Create {
                path,
                data,
                options,
            } => create_op(chroot, path, data, options)?,
            OpKind::Delete { path, version } => MultiOp::Delete(DeleteRequest {
                path: chroot.to_server(path, false)?,
                version: version.unwrap_or(-1),
            }),
            OpKind::SetData {
                path,
                data,
                version,
            } => MultiOp::SetData(SetDataRequest {
                path: chroot.to_server(path, false)?,
                data: Bytes::copy_from_slice(data),
                version: version.unwrap_or(-1),
            }),
            OpKind::Check { path, version } => MultiOp::Check(CheckVersionRequest {
                path: chroot.to_server(path, false)?,
                version: version.unwrap_or(-1),
            }),
        })
    }
}

/// The result of one op of a successful transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum OpResult {
    /// The node was created at `path` (chroot removed, sequence suffix included).
    Create {
        /// The created path.
        path: String,
        /// The new node's stat, when the server sent it (plain creates, which
        /// [`Op::create`] sends, are answered without; a 3.8 server answers any create
        /// inside a multi without).
        stat: Option<Stat>,
    },
    /// The node was deleted.
    Delete,
    /// The data was set.
    SetData {
        /// The node's new stat.
        stat: Stat,
    },
    /// The check passed.
    Check,
}

/// Builds a transaction op by op; [`commit`](Self::commit) sends it as one `multi`.
///
/// ```no_run
/// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
/// use zk_client::{CreateOptions, OpResult};
/// let results = client
///     .transaction()
///     .check("/lock/me", None)
///     .set_data("/guarded", b"v2", None)
///     .create("/log/entry-", b"", &CreateOptions::persistent_sequential())
///     .commit()
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use = "a transaction does nothing until committed"]
pub struct Transaction {
    client: Client,
    ops: Vec<Op>,
}

impl Transaction {
    /// Adds a create.
    pub fn create(mut self, path: &str, data: &[u8], options: &CreateOptions) -> Self {
        self.ops.push(Op::create(path, data, options));
        self
    }

    /// Adds a delete.
    pub fn delete(mut self, path: &str, version: Option<i32>) -> Self {
        self.ops.push(Op::delete(path, version));
        self
    }

    /// Adds a set_data.
    pub fn set_data(mut self, path: &str, data: &[u8], version: Option<i32>) -> Self {
        self.ops.push(Op::set_data(path, data, version));
        self
    }

    /// Adds a version check.
    pub fn check(mut self, path: &str, version: Option<i32>) -> Self {
        self.ops.push(Op::check(path, version));
        self
    }

    /// Sends the transaction (queued now, in call order). See [`Client::multi`].
    ///
    /// # Errors
    ///
    /// As [`Client::multi`].
    ///
    /// # Cancel safety
    ///
    /// As [`Client::multi`]: the transaction is sent when `commit` is called.
    pub fn commit(self) -> impl Future<Output = Result<Vec<OpResult>>> + Send + 'static {
        self.client.multi(&self.ops)
    }
}

/// One read of a [`Client::multi_read`].
///
/// ```
/// use zk_client::ReadOp;
/// let reads = [ReadOp::get_data("/a"), ReadOp::get_children("/b")];
/// # let _ = reads;
/// ```
#[derive(Debug, Clone)]
pub struct ReadOp {
    path: String,
    children: bool,
}

impl ReadOp {
    /// Read the node's data and stat.
    pub fn get_data(path: &str) -> ReadOp {
        ReadOp {
            path: path.to_owned(),
            children: false,
        }
    }

    /// List the node's children.
    pub fn get_children(path: &str) -> ReadOp {
        ReadOp {
            path: path.to_owned(),
            children: true,
        }
    }
}

/// The result of one read of a [`Client::multi_read`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ReadResult {
    /// Result of [`ReadOp::get_data`].
    Data {
        /// The node's data.
        data: Bytes,
        /// The node's stat.
        stat: Stat,
    },
    /// Result of [`ReadOp::get_children`].
    Children {
        /// Child names.
        children: Vec<String>,
    },
    /// This read failed (e.g. `NoNode`); the others are unaffected.
    Error(Error),
}

impl Client {
    /// Applies `ops` atomically: all or none (`multi`).
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// use zk_client::{Error, ErrorCode, Op};
    /// match client.multi(&[Op::check("/a", Some(3)), Op::delete("/b", None)]).await {
    ///     Ok(results) => assert_eq!(results.len(), 2),
    ///     Err(Error::Multi { index: 0, code: ErrorCode::BadVersion }) => { /* /a moved on */ }
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// `Error::Multi { index, code }` when op `index` failed with `code` (nothing was
    /// applied); `InvalidPath`/`InvalidAcl`/`InvalidArgument` for an op rejected before
    /// sending; `Unimplemented` for a container or TTL create the server does not have
    /// (nothing sent); `UnexpectedReply` when the reply has another number of results than `ops`
    /// or a result of another kind than its op;
    /// plus the session errors.
    ///
    /// # Cancel safety
    ///
    /// The transaction is sent when this is called: dropping the future discards only the reply;
    /// the transaction may still be applied (all of it or none).
    pub fn multi(
        &self,
        ops: &[Op],
    ) -> impl Future<Output = Result<Vec<OpResult>>> + Send + 'static {
        let chroot = self.root().clone();
        let expected = ops.len();
        let profile = self.server_profile();
        let reply = ops
            .iter()
            .map(|op| {
                let op = op.to_multi_op(&chroot)?;
                // A container or TTL create inside the multi needs the feature too.
                match Feature::of(op.op_code()) {
                    Some(feature) if !profile.supports(feature) => {
                        Err(Error::Unimplemented(feature))
                    }
                    _ => Ok(op),
                }
            })
            .collect::<Result<Vec<_>>>()
            .map(|ops| {
                let kinds: Vec<OpCode> = ops.iter().map(MultiOp::op_code).collect();
                let mut body = BytesMut::new();
                MultiRequest { ops }.encode(&mut body);
                (kinds, self.request(OpCode::Multi, body, None))
            });
        async move {
            let (kinds, reply) = reply?;
            let resp = MultiResponse::decode_at_most(&mut reply.await?, expected + 1)?;
            check_count(resp.results.len(), expected)?;
            if let Some((index, code)) =
                resp.results.iter().enumerate().find_map(|(i, r)| match r {
                    MultiResult::Error(code) if !code.is_ok() => Some((i, *code)),
                    _ => None,
                })
            {
                return Err(Error::Multi { index, code });
            }
            resp.results
                .into_iter()
                .zip(kinds)
                .map(|(r, kind)| op_result(kind, r, &chroot))
                .collect()
        }
    }

    /// Starts a [`Transaction`] builder.
    pub fn transaction(&self) -> Transaction {
        Transaction {
            client: self.clone(),
            ops: Vec::new(),
        }
    }

    /// Runs several reads in one request (`multiRead`, ZooKeeper 3.6+). Unlike
    /// [`multi`](Self::multi) each read succeeds or fails on its own, and the reads are not
    /// a consistent snapshot.
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// use zk_client::{ReadOp, ReadResult};
    /// let results = client.multi_read(&[ReadOp::get_data("/a"), ReadOp::get_children("/b")]).await?;
    /// if let ReadResult::Data { data, .. } = &results[0] { /* ... */ }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// `InvalidPath` for an op's path, `UnexpectedReply` when the reply has another number
    /// of results than `ops`, plus the session errors; each read's own failure is in its
    /// [`ReadResult::Error`].
    ///
    /// # Cancel safety
    ///
    /// The request is sent when this is called: dropping the future discards only the reply;
    /// nothing is changed on the server.
    pub fn multi_read(
        &self,
        ops: &[ReadOp],
    ) -> impl Future<Output = Result<Vec<ReadResult>>> + Send + 'static {
        let read = self.multi_read_stamped(ops);
        async move { read.await.result }
    }

    /// Like [`multi_read`](Self::multi_read), with where the reply arrived among this
    /// client's replies and watch events ([`Stamped`], [`Arrival`](crate::Arrival)): all the
    /// reads of one `multiRead` arrive at once, in one frame.
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// use zk_client::ReadOp;
    /// let read = client.multi_read_stamped(&[ReadOp::get_data("/a")]).await;
    /// println!("{} results in frame {}", read.result?.len(), read.arrival.get());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// In [`Stamped::result`]: as [`multi_read`](Self::multi_read). A path refused before
    /// anything is sent (`InvalidPath`) is stamped `Arrival::default()`.
    ///
    /// # Cancel safety
    ///
    /// The request is sent when this is called: dropping the future discards only the reply;
    /// nothing is changed on the server.
    pub fn multi_read_stamped(
        &self,
        ops: &[ReadOp],
    ) -> impl Future<Output = Stamped<Vec<ReadResult>>> + Send + 'static {
        let chroot = self.root();
        let expected = ops.len();
        let reply = ops
            .iter()
            .map(|op| {
                let path = chroot.to_server(&op.path, false)?;
                Ok(if op.children {
                    MultiOp::GetChildren(GetChildrenRequest { path, watch: false })
                } else {
                    MultiOp::GetData(GetDataRequest { path, watch: false })
                })
            })
            .collect::<Result<Vec<_>>>()
            .map(|ops| {
                let mut body = BytesMut::new();
                MultiRequest { ops }.encode(&mut body);
                self.request(OpCode::MultiRead, body, None)
            });
        async move {
            let (arrival, body) = match reply {
                Ok(reply) => reply.answer().await,
                Err(err) => (Arrival::default(), Err(err)),
            };
            let result = body.and_then(|mut body| {
                let resp = MultiResponse::decode_at_most(&mut body, expected + 1)?;
                check_count(resp.results.len(), expected)?;
                Ok(resp
                    .results
                    .into_iter()
                    .map(|r| match r {
                        MultiResult::GetData(r) => ReadResult::Data {
                            data: r.data,
                            stat: r.stat,
                        },
                        MultiResult::GetChildren(r) => ReadResult::Children {
                            children: r.children,
                        },
                        MultiResult::Error(code) => ReadResult::Error(code.into()),
                        _ => ReadResult::Error(Error::Server(ErrorCode::MarshallingError)),
                    })
                    .collect())
            });
            Stamped::new(arrival, result)
        }
    }
}

/// A multi reply must have one result per op: anything else is the server breaking the
/// protocol, and results could be matched to the wrong ops.
/// The result of one op of a multi that applied: `UnexpectedReply` when the server's result
/// is of another kind than the op (an `Error` result with code 0 included), so that no
/// create's path or write's `Stat` is ever made up.
fn op_result(kind: OpCode, result: MultiResult, chroot: &Chroot) -> Result<OpResult> {
    let create = matches!(
        kind,
        OpCode::Create | OpCode::Create2 | OpCode::CreateContainer | OpCode::CreateTtl
    );
    Ok(match result {
        MultiResult::Create2(r) if create => OpResult::Create {
            path: chroot.strip_owned(r.path),
            stat: Some(r.stat),
        },
        MultiResult::Create(r) if create => OpResult::Create {
            path: chroot.strip_owned(r.path),
            stat: None,
        },
        MultiResult::Delete if kind == OpCode::Delete => OpResult::Delete,
        MultiResult::SetData(r) if kind == OpCode::SetData => OpResult::SetData { stat: r.stat },
        MultiResult::Check if kind == OpCode::Check => OpResult::Check,
        _ => {
            return Err(Error::UnexpectedReply(
                "a multi result is of another kind than its op",
            ))
        }
    })
}

fn check_count(results: usize, ops: usize) -> Result<()> {
    if results == ops {
        Ok(())
    } else {
        Err(Error::UnexpectedReply(
            "multi reply has another number of results than the request had ops",
        ))
    }
}
