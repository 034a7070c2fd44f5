//! The participants of a queue: its nodes in queue order, with what their owners wrote.

use bytes::Bytes;
use zk_client::Client;

use super::naming;
use crate::error::{Error, Result};
use crate::retry::{retry_after, retrying};

/// How a queue is ordered.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Order {
    /// By trailing sequence number, nodes without one left out (the locks and semaphores).
    Sequence,
    /// Curator's election order: by the text after the lock name, every child kept.
    Election(&'static str),
}

impl Order {
    /// `children` in this order.
    pub(crate) fn sort(self, mut children: Vec<String>) -> Vec<String> {
        match self {
            Order::Sequence => naming::queue(&children)
                .into_iter()
                .map(|c| c.name)
                .collect(),
            Order::Election(lock_name) => {
                naming::sort_curator(&mut children, lock_name);
                children
            }
        }
    }
}

/// One node of a queue (a lock's, a semaphore's leases, an election's) and what its owner
/// wrote into it.
///
/// # Example
///
/// ```no_run
/// # async fn demo(client: zk_client::Client) -> Result<(), zk_recipes::Error> {
/// let lock = zk_recipes::lock::FairLock::new(client, "/locks/jobs")?;
/// for p in lock.participants().await? {
///     println!("{} {:?} first: {}", p.node_name(), p.data_str(), p.is_first);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Participant {
    /// Full path of the node (as the client sees it, chroot excluded).
    pub path: String,
    /// The node's data: Curator's default is the owner's host address as text; a
    /// participant id when the owner chose one (an election's participants always do);
    /// `__REVOKE__` once someone asked the holder to let go.
    pub data: Bytes,
    /// Whether the node is first in queue order: the leader of an election (Curator's
    /// `Participant.isLeader`), the holder of a mutex.
    pub is_first: bool,
}

impl Participant {
    /// The data as UTF-8 text, if it is.
    pub fn data_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.data).ok()
    }

    /// The participant id: the data as UTF-8 with invalid bytes replaced, as Curator reads
    /// an election participant's id.
    pub fn id(&self) -> String {
        String::from_utf8_lossy(&self.data).into_owned()
    }

    /// The node's name (last path segment).
    pub fn node_name(&self) -> &str {
        crate::path::name(&self.path)
    }
}

/// The children of `base` in `order`, waiting out connection losses (empty if `base` does
/// not exist).
pub(crate) async fn list(client: &Client, base: &str, order: Order) -> Result<Vec<String>> {
    match retrying(client, || client.get_children(base)).await {
        Ok(children) => Ok(order.sort(children)),
        Err(Error::Client(zk_client::Error::NoNode)) => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// The nodes under `base` in `order` with their data. Nodes that go while they are read are
/// left out. Connection losses are waited out.
pub(crate) async fn participants(
    client: &Client,
    base: &str,
    order: Order,
) -> Result<Vec<Participant>> {
    let paths: Vec<String> = list(client, base, order)
        .await?
        .into_iter()
        .map(|name| crate::path::join(base, &name))
        .collect();
    // Requests are queued when called: every read goes out before the first reply is awaited.
    let reads: Vec<_> = paths.iter().map(|p| client.get_data(p)).collect();
    let mut out: Vec<Participant> = Vec::with_capacity(paths.len());
    for (path, read) in paths.into_iter().zip(reads) {
        let data = match read.await {
            Ok((data, _)) => data,
            Err(zk_client::Error::NoNode) => continue,
            // A connection loss: wait it out and read this one again; anything else ends here.
            Err(e) => {
                retry_after(client, e).await?;
                match retrying(client, || client.get_data(&path)).await {
                    Ok((data, _)) => data,
                    Err(Error::Client(zk_client::Error::NoNode)) => continue,
                    Err(e) => return Err(e),
                }
            }
        };
        let is_first = out.is_empty();
        out.push(Participant {
            path,
            data,
            is_first,
        });
    }
    Ok(out)
}
