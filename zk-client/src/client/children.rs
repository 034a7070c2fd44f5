//! Listing operations: get_children, get_ephemerals, get_all_children_number.

use std::future::Future;

use zk_proto::records::{
    GetAllChildrenNumberRequest, GetAllChildrenNumberResponse, GetChildren2Request,
    GetChildren2Response, GetChildrenResponse, GetEphemeralsRequest, GetEphemeralsResponse,
};
use zk_proto::{decode_prefix, OpCode, Stat};

use super::node::one_shot;
use super::{bodies, encode, Client};
use crate::command::WatchKind;
use crate::error::Result;
use crate::event::{Arrival, Stamped};
use crate::watcher::Watcher;

impl Client {
    /// The names (not paths) of the node's children, in no particular order
    /// (`getChildren`; Java's `getChildren(path, false)`, Curator's `getChildren()`).
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// let mut children = client.get_children("/locks").await?;
    /// children.sort();
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// `NoNode`, `NoAuth`, `InvalidPath`, plus the session errors.
    ///
    /// # Cancel safety
    ///
    /// The request is sent when this is called: dropping the future discards only the reply;
    /// nothing is changed on the server.
    pub fn get_children(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<Vec<String>>> + Send + 'static {
        let reply = bodies::path_watch(self.root(), path, false)
            .map(|body| self.request(OpCode::GetChildren, body, None));
        async move {
            let resp: GetChildrenResponse = decode_prefix(reply?.await?)?;
            Ok(resp.children)
        }
    }

    /// Like [`get_children`](Self::get_children), with where the reply arrived among this
    /// client's replies and watch events (see [`get_data_stamped`](Self::get_data_stamped)).
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// let read = client.get_children_stamped("/services").await;
    /// let names = read.result?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// In [`Stamped::result`]: as [`get_children`](Self::get_children). A path refused before
    /// anything is sent (`InvalidPath`) is stamped `Arrival::default()`.
    ///
    /// # Cancel safety
    ///
    /// The request is sent when this is called: dropping the future discards only the reply;
    /// nothing is changed on the server.
    pub fn get_children_stamped(
        &self,
        path: &str,
    ) -> impl Future<Output = Stamped<Vec<String>>> + Send + 'static {
        let reply = bodies::path_watch(self.root(), path, false)
            .map(|body| self.request(OpCode::GetChildren, body, None));
        async move {
            let (arrival, body) = match reply {
                Ok(reply) => reply.answer().await,
                Err(err) => (Arrival::default(), Err(err)),
            };
            let result =
                body.and_then(|body| Ok(decode_prefix::<GetChildrenResponse>(body)?.children));
            Stamped::new(arrival, result)
        }
    }

    /// Like [`get_children`](Self::get_children), and also the node's `Stat`
    /// (`getChildren2`; Java's `getChildren(path, false, stat)`).
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// let (children, stat) = client.get_children_with_stat("/locks").await?;
    /// assert_eq!(children.len(), stat.num_children as usize);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// `NoNode`, `NoAuth`, `InvalidPath`, plus the session errors.
    ///
    /// # Cancel safety
    ///
    /// The request is sent when this is called: dropping the future discards only the reply;
    /// nothing is changed on the server.
    pub fn get_children_with_stat(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<String>, Stat)>> + Send + 'static {
        let reply = bodies::path_watch(self.root(), path, false)
            .map(|body| self.request(OpCode::GetChildren2, body, None));
        async move {
            let resp: GetChildren2Response = decode_prefix(reply?.await?)?;
            Ok((resp.children, resp.stat))
        }
    }

    /// Like [`get_children_with_stat`](Self::get_children_with_stat), and leaves a child
    /// watch (fires on
    /// `NodeChildrenChanged` or `NodeDeleted`). No watch is left when the call fails.
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// let (children, _stat, watcher) = client.get_children_watch("/workers").await?;
    /// watcher.await?; // a worker joined or left
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
    pub fn get_children_watch(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<String>, Stat, Watcher)>> + Send + 'static {
        let reply = self.server_path(path).map(|path| {
            let (action, watcher) = one_shot(self, path.clone(), WatchKind::Child);
            let body = encode(&GetChildren2Request { path, watch: true });
            (
                self.request(OpCode::GetChildren2, body, Some(action)),
                watcher,
            )
        });
        async move {
            let (reply, watcher) = reply?;
            let resp: GetChildren2Response = decode_prefix(reply.await?)?;
            Ok((resp.children, resp.stat, watcher))
        }
    }

    /// The paths of this session's ephemeral nodes whose path starts with `prefix`
    /// (`getEphemerals`; `"/"` for all). Paths are relative to the chroot.
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// let mine = client.get_ephemerals("/").await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// `InvalidPath`, `Unimplemented` on servers before 3.6 (refused locally when the [`ServerProfile`](crate::ServerProfile) says so), plus the session errors.
    ///
    /// # Cancel safety
    ///
    /// The request is sent when this is called: dropping the future discards only the reply;
    /// nothing is changed on the server.
    pub fn get_ephemerals(
        &self,
        prefix: &str,
    ) -> impl Future<Output = Result<Vec<String>>> + Send + 'static {
        let reply = self.server_path(prefix).map(|prefix_path| {
            let body = encode(&GetEphemeralsRequest { prefix_path });
            self.request(OpCode::GetEphemerals, body, None)
        });
        let chroot = self.root().clone();
        async move {
            let resp: GetEphemeralsResponse = decode_prefix(reply?.await?)?;
            Ok(resp
                .ephemerals
                .into_iter()
                .map(|p| chroot.strip_owned(p))
                .collect())
        }
    }

    /// The number of descendants of a node, the node itself not counted
    /// (`getAllChildrenNumber`).
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// let n = client.get_all_children_number("/app").await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// `NoNode`, plus the session errors.
    ///
    /// # Cancel safety
    ///
    /// The request is sent when this is called: dropping the future discards only the reply;
    /// nothing is changed on the server.
    pub fn get_all_children_number(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<i32>> + Send + 'static {
        let reply = self.server_path(path).map(|path| {
            let body = encode(&GetAllChildrenNumberRequest { path });
            self.request(OpCode::GetAllChildrenNumber, body, None)
        });
        async move {
            let resp: GetAllChildrenNumberResponse = decode_prefix(reply?.await?)?;
            Ok(resp.total_number)
        }
    }
}
