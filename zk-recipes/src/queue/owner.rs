//! Owner data: what a lock, lease or latch node says about its holder, written as Curator
//! writes it so that Java tools (and Curator's `getParticipantNodes()`) show our holders.

use std::net::{IpAddr, ToSocketAddrs};

use bytes::Bytes;
use tokio::sync::OnceCell;

/// Curator's default node data: the local host's address as text, as Java's
/// `InetAddress.getLocalHost().getHostAddress()` gives it (the host name resolved, IPv4
/// preferred), or empty when the name does not resolve.
///
/// Worked out once per process, on tokio's blocking pool (the lookup may block on DNS), at
/// the first acquisition that needs it: never on the caller's task, never in a constructor.
pub(crate) async fn local_address() -> Bytes {
    static ADDRESS: OnceCell<Bytes> = OnceCell::const_new();
    ADDRESS
        .get_or_init(|| async {
            let resolved = tokio::task::spawn_blocking(|| {
                resolve_host_name()
                    .map(|ip| Bytes::from(ip.to_string()))
                    .unwrap_or_default()
            });
            resolved.await.unwrap_or_default()
        })
        .await
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
