//! Owner data: what a lock, lease or latch node says about its holder, written as Curator
//! writes it so that Java tools (and Curator's `getParticipantNodes()`) show our holders.

use std::net::{IpAddr, ToSocketAddrs};
use std::sync::OnceLock;

use bytes::Bytes;

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
