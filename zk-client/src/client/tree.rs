//! Whole subtrees: delete_all.

use std::future::Future;

use zk_proto::records::RemoveRecursiveRequest;
use zk_proto::OpCode;

use super::{encode, Client};
use crate::error::{Error, Result};
use crate::profile::Feature;

/// Rounds of list-then-delete before giving up on a subtree that others keep adding to.
const DELETE_ALL_TRIES: usize = 10;

/// The most nodes `delete_all` asks a ClickHouse Keeper to delete in one `RemoveRecursive`
/// (one transaction on the server); a larger subtree is deleted by listing, as on ZooKeeper.
const REMOVE_RECURSIVE_LIMIT: i32 = 1000;

impl Client {
    /// Deletes `path` and every node below it (Curator's `deletingChildrenIfNeeded`, kazoo's
    /// `delete(recursive=True)`).
    ///
    /// On a ClickHouse Keeper with `RemoveRecursive` ([`Feature::RemoveRecursive`], from its
    /// feature flags) it is one round trip (that request and an `exists` for the `NoNode`
    /// case): the server deletes the subtree in one transaction, when it has at most 1000
    /// nodes. Otherwise (and when that request is answered
    /// `NotEmpty`: a larger subtree, or one that grew) it lists the subtree level by level
    /// (each level's `getChildren` calls pipelined), then deletes it deepest first, every
    /// delete pipelined: the server applies them in call order, so children go before their
    /// parents. Nodes that vanish meanwhile are fine; when someone adds a child meanwhile
    /// (`NotEmpty`) it lists and deletes again, up to 10 rounds. Not atomic: a failure can
    /// leave part of the subtree.
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// client.delete_all("/app/jobs").await?;
    /// assert!(client.exists("/app/jobs").await?.is_none());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// `NoNode` when `path` does not exist; `InvalidPath` for a bad path or the root of the
    /// server (`/` without a chroot); `NotEmpty` when children kept appearing through every
    /// round; `NoAuth`, plus the session errors.
    ///
    /// # Cancel safety
    ///
    /// Nothing is sent until the future is first polled. The calls already made go on when it
    /// is dropped; later rounds do not happen.
    pub fn delete_all(&self, path: &str) -> impl Future<Output = Result<()>> + Send + 'static {
        let checked = self.server_path(path).and_then(|server_path| {
            if server_path == "/" {
                Err(Error::InvalidPath {
                    path: path.to_owned(),
                    reason: "the root of the server cannot be deleted",
                })
            } else {
                Ok(())
            }
        });
        let client = self.clone();
        let path = path.to_owned();
        async move {
            checked?;
            if client.server_profile().supports(Feature::RemoveRecursive) {
                // Both sent at once (one round trip): Keeper answers a RemoveRecursive of a
                // missing node without an error, the exists says `NoNode`.
                let exists = client.exists(&path);
                let removed = client.remove_recursive(&path, REMOVE_RECURSIVE_LIMIT);
                let (exists, removed) = (exists.await, removed.await);
                match (exists, removed) {
                    (Ok(None), Ok(())) => return Err(Error::NoNode),
                    (Ok(Some(_)), Ok(())) => return Ok(()),
                    // Over the limit (or growing): list and delete, below.
                    (_, Err(Error::NotEmpty | Error::Unimplemented(_))) => {}
                    (Err(e), _) | (_, Err(e)) => return Err(e),
                }
            }
            for round in 0..DELETE_ALL_TRIES {
                let nodes = match client.subtree(&path).await {
                    Ok(nodes) => nodes,
                    // Gone since the previous round: done.
                    Err(Error::NoNode) if round > 0 => return Ok(()),
                    Err(e) => return Err(e),
                };
                let deletes: Vec<_> = nodes.iter().rev().map(|p| client.delete(p, None)).collect();
                let mut again = false;
                for delete in deletes {
                    match delete.await {
                        Ok(()) | Err(Error::NoNode) => {}
                        Err(Error::NotEmpty) => again = true,
                        Err(e) => return Err(e),
                    }
                }
                if !again {
                    return Ok(());
                }
            }
            Err(Error::NotEmpty)
        }
    }

    /// ClickHouse Keeper's `RemoveRecursive` of `path` (refused locally without the
    /// feature), sent when called.
    fn remove_recursive(
        &self,
        path: &str,
        limit: i32,
    ) -> impl Future<Output = Result<()>> + Send + 'static {
        let reply = self.server_path(path).map(|path| {
            let request = RemoveRecursiveRequest {
                path,
                remove_nodes_limit: limit,
            };
            self.request(OpCode::RemoveRecursive, encode(&request), None)
        });
        async move { reply?.await.map(drop) }
    }

    /// `path` and every node below it, parents before children (`NoNode` when `path` is
    /// missing).
    async fn subtree(&self, path: &str) -> Result<Vec<String>> {
        let mut nodes = vec![path.to_owned()];
        let mut level = 0;
        while level < nodes.len() {
            let end = nodes.len();
            let listings: Vec<_> = nodes[level..end]
                .iter()
                .map(|p| self.get_children(p))
                .collect();
            for (i, listing) in listings.into_iter().enumerate() {
                let parent = nodes[level + i].clone();
                match listing.await {
                    Ok(children) => nodes.extend(children.iter().map(|c| child(&parent, c))),
                    Err(Error::NoNode) if level + i > 0 => {}
                    Err(e) => return Err(e),
                }
            }
            level = end;
        }
        Ok(nodes)
    }
}

fn child(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}
