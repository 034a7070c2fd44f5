//! Node operations: create, create_all, delete, exists, get_data, set_data.

use std::future::Future;

use bytes::Bytes;
use tokio::sync::oneshot;
use zk_proto::records::{
    Create2Response, CreateMode, CreateRequest, CreateResponse, CreateTtlRequest, ExistsRequest,
    ExistsResponse, GetDataRequest, GetDataResponse, MultiOp, SetDataResponse,
};
use zk_proto::{decode_prefix, OpCode, Stat};

use super::{bodies, encode, Client, CreateOptions};
use crate::command::{WatchAction, WatchKind, WatchSender};
use crate::error::{Error, Result};
use crate::event::{Arrival, Stamped};
use crate::path::Chroot;
use crate::profile::Feature;
use crate::watcher::Watcher;

/// How many times `create_all` re-creates the parents when they vanish under it.
const CREATE_ALL_TRIES: usize = 3;

/// Builds the request for a create inside a `multi`: a plain `create` (no stat is returned
/// inside a multi by a 3.8 server anyway: apache/zookeeper PR #2230's rule, `create2` only
/// when a stat is needed), `createContainer` or `createTTL`.
pub(crate) fn create_op(
    chroot: &Chroot,
    path: &str,
    data: &[u8],
    options: &CreateOptions,
) -> Result<MultiOp> {
    let path = chroot.to_server(path, options.mode.is_sequential())?;
    let (code, ttl) = bodies::create_kind(options)?;
    let data = Bytes::copy_from_slice(data);
    let acl = options.acl.clone();
    let flags = options.mode.flags();
    if let Some(ttl) = ttl {
        return Ok(MultiOp::CreateTtl(CreateTtlRequest {
            path,
            data,
            acl,
            flags,
            ttl,
        }));
    }
    let request = CreateRequest {
        path,
        data,
        acl,
        flags,
    };
    Ok(if code == OpCode::CreateContainer {
        MultiOp::CreateContainer(request)
    } else {
        MultiOp::Create(request)
    })
}

/// A one-shot watch registration and the watcher the caller gets when the call succeeds
/// (its drop hook armed, since only then is there a server-side watch to remove).
pub(crate) fn one_shot(client: &Client, path: String, kind: WatchKind) -> (WatchAction, Watcher) {
    let (tx, rx) = oneshot::channel();
    let watcher =
        Watcher::new(rx, client.root().clone()).armed(client.commands().downgrade(), path.clone());
    let action = WatchAction::Register {
        path,
        kind,
        sender: WatchSender::Once(tx),
        on_server: true,
    };
    (action, watcher)
}

/// The parents to create for `path`: `/a/b/c` → `/a`, `/a/b`.
fn parents(path: &str) -> Vec<&str> {
    let parent_end = path.rfind('/').unwrap_or(0);
    let parent = &path[..parent_end];
    parent
        .match_indices('/')
        .skip(1)
        .map(|(i, _)| &parent[..i])
        .chain((!parent.is_empty()).then_some(parent))
        .collect()
}

impl Client {
    /// Creates a node and returns its path (with the sequence suffix for sequential
    /// modes, chroot removed) and its `Stat`.
    ///
    /// Uses `create2`, `createContainer` or `createTTL` depending on the mode. On a server
    /// without `create2` ([`ServerProfile`](crate::ServerProfile): ZooKeeper 3.4, ClickHouse
    /// Keeper before its `create2`), it sends a plain `create` and reads the `Stat` with an
    /// `exists` of the created path right after: then the `Stat` is the node's a moment
    /// after its creation (another session may have changed it in between). When only the
    /// path is needed, [`create_path`](Self::create_path) makes one plain `create`
    /// everywhere.
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// use zk_client::CreateOptions;
    /// let (path, stat) = client
    ///     .create("/queue/item-", b"payload", &CreateOptions::persistent_sequential())
    ///     .await?;
    /// assert!(path.starts_with("/queue/item-"));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// `NodeExists`, `NoNode` (no parent; or, without `create2`, the node was deleted before
    /// its `Stat` was read), `NoChildrenForEphemerals`, `NoAuth`, `InvalidAcl`,
    /// `InvalidPath`, `InvalidArgument` (TTL mismatch), `Unimplemented` for a container or
    /// TTL node on a server without them (TTL nodes on a ZooKeeper without
    /// `extendedTypesEnabled` included), plus the session errors.
    ///
    /// # Cancel safety
    ///
    /// The create is sent when this is called: dropping the future discards only the reply; the
    /// node may still be created. Without `create2`, the `exists` that reads the `Stat` is sent
    /// only after the create's reply: a dropped future may skip it.
    pub fn create(
        &self,
        path: &str,
        data: &[u8],
        options: &CreateOptions,
    ) -> impl Future<Output = Result<(String, Stat)>> + Send + 'static {
        let plain = !self.server_profile().supports(Feature::Create2);
        let reply = bodies::create(self.root(), path, data, options).map(|(code, body)| {
            if plain && code == OpCode::Create2 {
                (true, self.request(OpCode::Create, body, None))
            } else {
                (false, self.request(code, body, None))
            }
        });
        let chroot = self.root().clone();
        let client = self.clone();
        async move {
            let (plain, reply) = reply?;
            let body = reply.await?;
            if !plain {
                let resp: Create2Response = decode_prefix(body)?;
                return Ok((chroot.strip_owned(resp.path), resp.stat));
            }
            let resp: CreateResponse = decode_prefix(body)?;
            let created = chroot.strip_owned(resp.path);
            match client.exists(&created).await? {
                Some(stat) => Ok((created, stat)),
                None => Err(Error::NoNode),
            }
        }
    }

    /// Creates a node and returns its path (with the sequence suffix for sequential modes,
    /// chroot removed), without its `Stat`: a plain `create` (opcode 1) on every server, as
    /// the Java client does when no `Stat` is asked for (apache/zookeeper PR #2230). Container
    /// and TTL nodes use their own opcodes.
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// use zk_client::CreateOptions;
    /// let path = client.create_path("/jobs/j-", b"", &CreateOptions::persistent_sequential()).await?;
    /// # let _ = path; Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`create`](Self::create).
    ///
    /// # Cancel safety
    ///
    /// The request is sent when this is called: dropping the future discards only the reply; the
    /// node may still be created.
    pub fn create_path(
        &self,
        path: &str,
        data: &[u8],
        options: &CreateOptions,
    ) -> impl Future<Output = Result<String>> + Send + 'static {
        let reply = bodies::create(self.root(), path, data, options).map(|(code, body)| {
            let code = if code == OpCode::Create2 {
                OpCode::Create
            } else {
                code
            };
            self.request(code, body, None)
        });
        let chroot = self.root().clone();
        async move {
            // `CreateResponse` is the prefix of `Create2Response`: the path.
            let resp: CreateResponse = decode_prefix(reply?.await?)?;
            Ok(chroot.strip_owned(resp.path))
        }
    }

    /// Creates a node and any missing parents.
    ///
    /// The node itself is requested at once; only if its parent is missing are the parents
    /// created (persistent, or containers when `options.container_parents` and the server
    /// has containers, with `options.acl`; `NodeExists` on a parent is fine; plain
    /// `create`s), pipelined with a second attempt.
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// use zk_client::CreateOptions;
    /// let opts = CreateOptions::ephemeral_sequential().with_container_parents(true);
    /// let (me, _) = client.create_all("/locks/job-42/lock-", b"", &opts).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`create`](Self::create); a parent's error other than `NodeExists` is returned
    /// when the node could not be created.
    ///
    /// # Cancel safety
    ///
    /// The node's first create is sent when this is called, and may still be applied. The parents
    /// and the retries are sent later, by the future: when it is dropped, the creates already sent
    /// go on (parents may be left without the node); later ones are not sent.
    pub fn create_all(
        &self,
        path: &str,
        data: &[u8],
        options: &CreateOptions,
    ) -> impl Future<Output = Result<(String, Stat)>> + Send + 'static {
        let first = self.create(path, data, options);
        let client = self.clone();
        let path = path.to_owned();
        let data = data.to_vec();
        let options = options.clone();
        async move {
            match first.await {
                Err(Error::NoNode) => {}
                other => return other,
            }
            // Containers where the server has them; persistent parents otherwise (as
            // Curator's `creatingParentContainersIfNeeded` does).
            let containers =
                options.container_parents && client.server_profile().supports(Feature::Container);
            let mut parent_options = CreateOptions::new(if containers {
                CreateMode::Container
            } else {
                CreateMode::Persistent
            });
            parent_options.acl = options.acl.clone();
            let mut last = Err(Error::NoNode);
            for _ in 0..CREATE_ALL_TRIES {
                let parent_creates: Vec<_> = parents(&path)
                    .into_iter()
                    .map(|p| client.create_path(p, &[], &parent_options))
                    .collect();
                let node = client.create(&path, &data, &options);
                let mut parent_error = None;
                for create in parent_creates {
                    match create.await {
                        Ok(_) | Err(Error::NodeExists) => {}
                        Err(err) => {
                            parent_error.get_or_insert(err);
                        }
                    }
                }
                last = node.await;
                match (&last, parent_error) {
                    (Err(Error::NoNode), Some(err)) => return Err(err),
                    (Err(Error::NoNode), None) => continue,
                    _ => return last,
                }
            }
            last
        }
    }

    /// Deletes a node, if its version is `version` (`None`: any version).
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// client.delete("/app/node", None).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// `NoNode`, `BadVersion`, `NotEmpty`, `NoAuth`, plus the session errors.
    ///
    /// # Cancel safety
    ///
    /// The request is sent when this is called: dropping the future discards only the reply; the
    /// node may still be deleted.
    pub fn delete(
        &self,
        path: &str,
        version: Option<i32>,
    ) -> impl Future<Output = Result<()>> + Send + 'static {
        let reply = bodies::delete(self.root(), path, version)
            .map(|body| self.request(OpCode::Delete, body, None));
        async move { reply?.await.map(drop) }
    }

    /// The node's `Stat`, or `None` when it does not exist.
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// if client.exists("/app/ready").await?.is_some() { /* ... */ }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// `NoAuth`, `InvalidPath`, plus the session errors (a missing node is `Ok(None)`).
    ///
    /// # Cancel safety
    ///
    /// The request is sent when this is called: dropping the future discards only the reply;
    /// nothing is changed on the server.
    pub fn exists(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<Option<Stat>>> + Send + 'static {
        let reply = bodies::path_watch(self.root(), path, false)
            .map(|body| self.request(OpCode::Exists, body, None));
        async move {
            match reply?.await {
                Ok(body) => Ok(Some(decode_prefix::<ExistsResponse>(body)?.stat)),
                Err(Error::NoNode) => Ok(None),
                Err(err) => Err(err),
            }
        }
    }

    /// Like [`exists`](Self::exists), and leaves a watch: it fires on `NodeCreated` when
    /// the node is missing, on `NodeDataChanged`/`NodeDeleted` when it exists.
    ///
    /// The watch is registered whether or not the node exists.
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// let (stat, watcher) = client.exists_watch("/app/ready").await?;
    /// if stat.is_none() {
    ///     let event = watcher.await?; // NodeCreated
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// `NoAuth`, `InvalidPath`, plus the session errors (a missing node is `Ok((None, _))`,
    /// watched for its creation).
    ///
    /// # Cancel safety
    ///
    /// The request is sent when this is called: dropping the future discards the reply and leaves
    /// no watch behind (the client removes it when the reply comes).
    pub fn exists_watch(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Option<Stat>, Watcher)>> + Send + 'static {
        let reply = self.server_path(path).map(|path| {
            let (action, watcher) = one_shot(self, path.clone(), WatchKind::Exist);
            let body = encode(&ExistsRequest { path, watch: true });
            (self.request(OpCode::Exists, body, Some(action)), watcher)
        });
        async move {
            let (reply, watcher) = reply?;
            match reply.await {
                Ok(body) => Ok((Some(decode_prefix::<ExistsResponse>(body)?.stat), watcher)),
                Err(Error::NoNode) => Ok((None, watcher)),
                Err(err) => Err(err),
            }
        }
    }

    /// The node's data and `Stat`.
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// let (data, stat) = client.get_data("/app/config").await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// `NoNode`, `NoAuth`, plus the session errors.
    ///
    /// # Cancel safety
    ///
    /// The request is sent when this is called: dropping the future discards only the reply;
    /// nothing is changed on the server.
    pub fn get_data(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Bytes, Stat)>> + Send + 'static {
        let reply = bodies::path_watch(self.root(), path, false)
            .map(|body| self.request(OpCode::GetData, body, None));
        async move {
            let resp: GetDataResponse = decode_prefix(reply?.await?)?;
            Ok((resp.data, resp.stat))
        }
    }

    /// Like [`get_data`](Self::get_data), with where the reply arrived among this client's
    /// replies and watch events ([`Stamped`], [`Arrival`](crate::Arrival)): what a cache
    /// following a persistent watch needs to apply its reads and the watch's events in the
    /// server's order.
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// let read = client.get_data_stamped("/app/config").await;
    /// let (data, stat) = read.result?;
    /// println!("{} bytes, version {}, frame {}", data.len(), stat.version, read.arrival.get());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// In [`Stamped::result`]: as [`get_data`](Self::get_data). A path refused before anything
    /// is sent (`InvalidPath`) is stamped `Arrival::default()`.
    ///
    /// # Cancel safety
    ///
    /// The request is sent when this is called: dropping the future discards only the reply;
    /// nothing is changed on the server.
    pub fn get_data_stamped(
        &self,
        path: &str,
    ) -> impl Future<Output = Stamped<(Bytes, Stat)>> + Send + 'static {
        let reply = bodies::path_watch(self.root(), path, false)
            .map(|body| self.request(OpCode::GetData, body, None));
        async move {
            let (arrival, body) = match reply {
                Ok(reply) => reply.answer().await,
                Err(err) => (Arrival::default(), Err(err)),
            };
            let result = body.and_then(|body| {
                let resp: GetDataResponse = decode_prefix(body)?;
                Ok((resp.data, resp.stat))
            });
            Stamped::new(arrival, result)
        }
    }

    /// Like [`get_data`](Self::get_data), and leaves a data watch (fires on
    /// `NodeDataChanged` or `NodeDeleted`). No watch is left when the call fails.
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// let (data, _stat, watcher) = client.get_data_watch("/app/config").await?;
    /// let event = watcher.await?;
    /// println!("{:?} on {}", event.event_type, event.path);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// `NoNode` (no watch is left), `NoAuth`, `InvalidPath`, plus the session errors.
    ///
    /// # Cancel safety
    ///
    /// The request is sent when this is called: dropping the future discards the reply and leaves
    /// no watch behind (the client removes it when the reply comes).
    pub fn get_data_watch(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Bytes, Stat, Watcher)>> + Send + 'static {
        let reply = self.server_path(path).map(|path| {
            let (action, watcher) = one_shot(self, path.clone(), WatchKind::Data);
            let body = encode(&GetDataRequest { path, watch: true });
            (self.request(OpCode::GetData, body, Some(action)), watcher)
        });
        async move {
            let (reply, watcher) = reply?;
            let resp: GetDataResponse = decode_prefix(reply.await?)?;
            Ok((resp.data, resp.stat, watcher))
        }
    }

    /// Replaces the node's data, if its version is `version` (`None`: any version).
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// let (_, stat) = client.get_data("/counter").await?;
    /// client.set_data("/counter", b"2", Some(stat.version)).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// `NoNode`, `BadVersion`, `NoAuth`, plus the session errors.
    ///
    /// # Cancel safety
    ///
    /// The request is sent when this is called: dropping the future discards only the reply; the
    /// write may still be applied.
    pub fn set_data(
        &self,
        path: &str,
        data: &[u8],
        version: Option<i32>,
    ) -> impl Future<Output = Result<Stat>> + Send + 'static {
        let reply = bodies::set_data(self.root(), path, data, version)
            .map(|body| self.request(OpCode::SetData, body, None));
        async move {
            let resp: SetDataResponse = decode_prefix(reply?.await?)?;
            Ok(resp.stat)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parent_paths() {
        assert_eq!(parents("/a/b/c"), ["/a", "/a/b"]);
        assert_eq!(parents("/a"), Vec::<&str>::new());
        assert_eq!(parents("/a/b/lock-"), ["/a", "/a/b"]);
        assert_eq!(parents("/a/b/"), ["/a", "/a/b"]);
    }

    #[test]
    fn create_op_picks_the_opcode_and_checks_ttl() {
        let chroot = Chroot::new("/r").unwrap();
        let op = create_op(&chroot, "/x", b"", &CreateOptions::persistent()).unwrap();
        assert_eq!(op.op_code(), OpCode::Create);
        assert_eq!(op.path(), "/r/x");
        let op = create_op(&chroot, "/x", b"", &CreateOptions::container()).unwrap();
        assert_eq!(op.op_code(), OpCode::CreateContainer);
        let ttl = CreateOptions::new(CreateMode::PersistentWithTtl);
        assert!(matches!(
            create_op(&chroot, "/x", b"", &ttl),
            Err(Error::InvalidArgument(_))
        ));
        let op = create_op(
            &chroot,
            "/x",
            b"",
            &ttl.with_ttl(std::time::Duration::from_secs(1)),
        )
        .unwrap();
        assert_eq!(op.op_code(), OpCode::CreateTtl);
        assert!(matches!(
            create_op(
                &chroot,
                "/x",
                b"",
                &CreateOptions::persistent().with_ttl(std::time::Duration::from_secs(1))
            ),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            create_op(
                &chroot,
                "/x",
                b"",
                &CreateOptions::persistent().with_acl(vec![])
            ),
            Err(Error::InvalidAcl)
        ));
        assert!(create_op(&chroot, "/x/", b"", &CreateOptions::persistent_sequential()).is_ok());
        assert!(create_op(&chroot, "/x/", b"", &CreateOptions::persistent()).is_err());
    }
}
