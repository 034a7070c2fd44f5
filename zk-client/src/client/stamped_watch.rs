//! Reads that leave a one-shot watch and tell where their reply arrived: what a cache that
//! follows a tree with one-shot watches (on a server without `addWatch`) needs to apply its
//! reads and their watches' events in the server's order.

use std::future::Future;

use bytes::Bytes;
use zk_proto::records::{
    ExistsRequest, ExistsResponse, GetChildren2Request, GetChildren2Response, GetDataRequest,
    GetDataResponse,
};
use zk_proto::{decode_prefix, OpCode, Stat};

use super::node::one_shot;
use super::{encode, Client};
use crate::command::WatchKind;
use crate::error::Error;
use crate::event::{Arrival, Stamped};
use crate::watcher::Watcher;

impl Client {
    /// [`get_data_watch`](Self::get_data_watch) with where its reply arrived among this
    /// client's replies and watch events ([`Stamped`]).
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// let read = client.get_data_watch_stamped("/app/config").await;
    /// let (data, _stat, watcher) = read.result?;
    /// let event = watcher.await?;
    /// assert!(event.arrival > read.arrival);
    /// # let _ = data; Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// In [`Stamped::result`]: as [`get_data_watch`](Self::get_data_watch). A path refused
    /// before anything is sent (`InvalidPath`) is stamped `Arrival::default()`.
    ///
    /// # Cancel safety
    ///
    /// The request is sent when this is called: dropping the future discards the reply and leaves
    /// no watch behind (the client removes it when the reply comes).
    pub fn get_data_watch_stamped(
        &self,
        path: &str,
    ) -> impl Future<Output = Stamped<(Bytes, Stat, Watcher)>> + Send + 'static {
        let reply = self.server_path(path).map(|path| {
            let (action, watcher) = one_shot(self, path.clone(), WatchKind::Data);
            let body = encode(&GetDataRequest { path, watch: true });
            (self.request(OpCode::GetData, body, Some(action)), watcher)
        });
        async move {
            let (reply, watcher) = match reply {
                Ok(sent) => sent,
                Err(err) => return Stamped::new(Arrival::default(), Err(err)),
            };
            let (arrival, body) = reply.answer().await;
            let result = body.and_then(|body| {
                let resp: GetDataResponse = decode_prefix(body)?;
                Ok((resp.data, resp.stat, watcher))
            });
            Stamped::new(arrival, result)
        }
    }

    /// [`get_children_watch`](Self::get_children_watch) with where its reply arrived among
    /// this client's replies and watch events ([`Stamped`]). No watch is left when the call
    /// fails.
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// let read = client.get_children_watch_stamped("/workers").await;
    /// let (names, _stat, watcher) = read.result?;
    /// # let _ = (names, watcher); Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// In [`Stamped::result`]: `NoNode` (no watch is left), `NoAuth`, `InvalidPath` (stamped
    /// `Arrival::default()`), plus the session errors.
    ///
    /// # Cancel safety
    ///
    /// The request is sent when this is called: dropping the future discards the reply and leaves
    /// no watch behind (the client removes it when the reply comes).
    pub fn get_children_watch_stamped(
        &self,
        path: &str,
    ) -> impl Future<Output = Stamped<(Vec<String>, Stat, Watcher)>> + Send + 'static {
        let reply = self.server_path(path).map(|path| {
            let (action, watcher) = one_shot(self, path.clone(), WatchKind::Child);
            let body = encode(&GetChildren2Request { path, watch: true });
            (
                self.request(OpCode::GetChildren2, body, Some(action)),
                watcher,
            )
        });
        async move {
            let (reply, watcher) = match reply {
                Ok(sent) => sent,
                Err(err) => return Stamped::new(Arrival::default(), Err(err)),
            };
            let (arrival, body) = reply.answer().await;
            let result = body.and_then(|body| {
                let resp: GetChildren2Response = decode_prefix(body)?;
                Ok((resp.children, resp.stat, watcher))
            });
            Stamped::new(arrival, result)
        }
    }

    /// [`exists_watch`](Self::exists_watch) with where its reply arrived ([`Stamped`]). The
    /// watch is left whether or not the node exists.
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// let read = client.exists_watch_stamped("/app/ready").await;
    /// let (stat, watcher) = read.result?;
    /// if stat.is_none() {
    ///     watcher.await?; // NodeCreated
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// In [`Stamped::result`]: `NoAuth`, `InvalidPath` (stamped `Arrival::default()`), plus
    /// the session errors (a missing node is `Ok((None, _))`).
    ///
    /// # Cancel safety
    ///
    /// The request is sent when this is called: dropping the future discards the reply and leaves
    /// no watch behind (the client removes it when the reply comes).
    pub fn exists_watch_stamped(
        &self,
        path: &str,
    ) -> impl Future<Output = Stamped<(Option<Stat>, Watcher)>> + Send + 'static {
        let reply = self.server_path(path).map(|path| {
            let (action, watcher) = one_shot(self, path.clone(), WatchKind::Exist);
            let body = encode(&ExistsRequest { path, watch: true });
            (self.request(OpCode::Exists, body, Some(action)), watcher)
        });
        async move {
            let (reply, watcher) = match reply {
                Ok(sent) => sent,
                Err(err) => return Stamped::new(Arrival::default(), Err(err)),
            };
            let (arrival, body) = reply.answer().await;
            let result = match body {
                Ok(body) => decode_prefix::<ExistsResponse>(body)
                    .map_or_else(|e| Err(e.into()), |r| Ok((Some(r.stat), watcher))),
                Err(Error::NoNode) => Ok((None, watcher)),
                Err(err) => Err(err),
            };
            Stamped::new(arrival, result)
        }
    }
}
