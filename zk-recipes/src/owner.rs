//! Owner data: what a lock, lease or latch node says about its holder, written as Curator
//! writes it so that Java tools (and Curator's `getParticipantNodes()`) show our holders.

use std::net::{IpAddr, ToSocketAddrs};
use std::sync::OnceLock;

use bytes::Bytes;
use zk_client::Client;

use crate::error::{Error, Result};
use crate::lock::naming;
use crate::retry::retrying;

/// Curator's default node data: the local host's address as text, as Java's
/// `InetAddress.getLocalHost().getHostAddress()` gives it (the host name resolved, IPv4
/// preferred), or empty when the name does not resolve. Worked out once per process.
pub(crate) fn local_address() -> Bytes {
    static ADDRESS: OnceLock<Bytes> = OnceLock::new();
    ADDRESS
        .get_or_init(|| {
            resolve_host_name()
                .map(|ip| Bytes::from(ip.to_string()))
                .unwrap_or_default()
        })
        .clone()
}

/// The first address of this host's name (IPv4 first, as Java prefers by default).
fn resolve_host_name() -> Option<IpAddr> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::env::var("HOSTNAME"))
        .ok()?;
    let name = name.trim();
    if name.is_empty() {
        return None;
    }
    let addrs: Vec<IpAddr> = (name, 0).to_socket_addrs().ok()?.map(|a| a.ip()).collect();
    addrs
        .iter()
        .find(|ip| ip.is_ipv4())
        .or_else(|| addrs.first())
        .copied()
}

/// One node of a lock's queue (or a semaphore's leases) and what its owner wrote into it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Participant {
    /// Full path of the node (as the client sees it, chroot excluded).
    pub path: String,
    /// The node's data: Curator's default is the owner's host address as text; a
    /// participant id when the owner chose one; `__REVOKE__` once someone asked the holder to
    /// let go.
    pub data: Bytes,
}

impl Participant {
    pub(crate) fn new(path: String, data: Bytes) -> Participant {
        Participant { path, data }
    }

    /// The data as UTF-8 text, if it is.
    pub fn data_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.data).ok()
    }

    /// The node's name (last path segment).
    pub fn node_name(&self) -> &str {
        crate::lock::acquire::base_name(&self.path)
    }
}

/// The nodes under `base` in queue order (by trailing sequence number, as the locks order
/// them; nodes without one are not contenders) with their data. Nodes that go while they are
/// read are left out. Connection losses are waited out.
pub(crate) async fn participants(client: &Client, base: &str) -> Result<Vec<Participant>> {
    let children = match retrying(client, || client.get_children(base)).await {
        Ok(children) => children,
        Err(Error::Client(zk_client::Error::NoNode)) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let paths: Vec<String> = naming::queue(&children)
        .into_iter()
        .map(|c| format!("{base}/{}", c.name))
        .collect();
    // Requests are queued when called: every read goes out before the first reply is awaited.
    let reads: Vec<_> = paths.iter().map(|p| client.get_data(p)).collect();
    let mut out = Vec::with_capacity(paths.len());
    for (path, read) in paths.into_iter().zip(reads) {
        let data = match read.await {
            Ok((data, _)) => data,
            Err(zk_client::Error::NoNode) => continue,
            Err(e) if e.is_connection_loss() => {
                match retrying(client, || client.get_data(&path)).await {
                    Ok((data, _)) => data,
                    Err(Error::Client(zk_client::Error::NoNode)) => continue,
                    Err(e) => return Err(e),
                }
            }
            Err(e) => return Err(e.into()),
        };
        out.push(Participant::new(path, data));
    }
    Ok(out)
}
