//! Persistent watches and watch removal: add_watch, remove_watches.

use std::future::Future;

use zk_proto::records::{AddWatchMode, AddWatchRequest, RemoveWatchesRequest, WatcherType};
use zk_proto::OpCode;

use super::{encode, Client};
use crate::command::{WatchAction, WatchKind, WatchSender};
use crate::error::Result;
use crate::event_queue::event_queue;
use crate::watcher::PersistentWatcher;

impl Client {
    /// Adds a persistent watch (`addWatch`, ZooKeeper 3.6+): a stream of events on `path`
    /// (and, for [`AddWatchMode::PersistentRecursive`], on every descendant) until removed.
    /// The node need not exist.
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// use zk_client::AddWatchMode;
    /// let mut events = client.add_watch("/app", AddWatchMode::PersistentRecursive).await?;
    /// loop {
    ///     let event = events.next().await?;
    ///     println!("{:?} {}", event.event_type, event.path);
    /// }
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// `InvalidPath`, `Unimplemented` on servers before 3.6 (refused locally when the [`ServerProfile`](crate::ServerProfile) says so), plus the session
    /// errors. The stream itself ends with `SessionExpired`/`AuthFailed`/`Closed`.
    ///
    /// # Cancel safety
    ///
    /// The request is sent when this is called: dropping the future discards the reply and leaves
    /// no watch behind (the client removes it when the reply comes).
    pub fn add_watch(
        &self,
        path: &str,
        mode: AddWatchMode,
    ) -> impl Future<Output = Result<PersistentWatcher>> + Send + 'static {
        let reply = self.server_path(path).map(|path| {
            let (tx, rx) = event_queue(self.watch_buffer());
            let kind = match mode {
                AddWatchMode::Persistent => WatchKind::Persistent,
                AddWatchMode::PersistentRecursive => WatchKind::PersistentRecursive,
            };
            let action = WatchAction::Register {
                path: path.clone(),
                kind,
                sender: WatchSender::Stream(tx),
                on_server: true,
            };
            let watcher = PersistentWatcher::new(
                rx,
                self.commands().downgrade(),
                path.clone(),
                self.root().clone(),
            );
            let body = encode(&AddWatchRequest {
                path,
                mode: mode as i32,
            });
            (self.request(OpCode::AddWatch, body, Some(action)), watcher)
        });
        async move {
            let (reply, watcher) = reply?;
            reply.await?;
            Ok(watcher)
        }
    }

    /// Removes this session's watches of `kind` on `path`, on the server and locally
    /// (`removeWatches`). Local watchers are told with a `DataWatchRemoved`,
    /// `ChildWatchRemoved` or `PersistentWatchRemoved` event; persistent streams then end.
    /// `WatcherType::Any` also removes persistent watches.
    ///
    /// ZooKeeper up to 3.8 keeps one watch mode per path (ZOOKEEPER-4466), and the client
    /// serves one-shot watchers on a path it watches persistently from that persistent watch.
    /// There, `Data` or `Children` removes the persistent or recursive mode of that table on
    /// the server too, and 3.9 answers `NoWatcher` (it holds no one-shot watch there): to
    /// stop one-shot watchers on such a path, drop them instead.
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// use zk_client::WatcherType;
    /// client.remove_watches("/app", WatcherType::Any).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// `Server(NoWatcher)` when the server holds no such watch, plus the session errors.
    ///
    /// # Cancel safety
    ///
    /// The request is sent when this is called: dropping the future discards only the reply; if it
    /// succeeds, the watches are still removed, on the server and locally.
    pub fn remove_watches(
        &self,
        path: &str,
        kind: WatcherType,
    ) -> impl Future<Output = Result<()>> + Send + 'static {
        let reply = self.server_path(path).map(|path| {
            let action = WatchAction::Remove {
                path: path.clone(),
                kind,
            };
            let body = encode(&RemoveWatchesRequest {
                path,
                watcher_type: kind as i32,
            });
            self.request(OpCode::RemoveWatches, body, Some(action))
        });
        async move { reply?.await.map(drop) }
    }
}
