//! Host names to addresses: the seam between the connect string and the sockets.
//!
//! Every host of the connect string is resolved when its turn comes to be tried (so a
//! changed DNS record is seen at the next reconnect), into every address it has; each address
//! is then tried as a host of its own, with its own connect timeout. IP literals are never
//! looked up. The default resolver is tokio's `lookup_host` (the system's `getaddrinfo`);
//! [`ClientBuilder::resolver`](crate::ClientBuilder::resolver) replaces it, and unit tests
//! feed names with several addresses through it.

use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;

/// What a resolver returns: the addresses of one host.
pub(crate) type Resolving = Pin<Box<dyn Future<Output = io::Result<Vec<SocketAddr>>> + Send>>;

/// A resolver function: `(host, port)` to its addresses.
type ResolveFn = dyn Fn(&str, u16) -> Resolving + Send + Sync;

/// Resolves `(host, port)` into addresses.
///
/// Asserted unwind safe: `ClientBuilder` (which holds one) stays `UnwindSafe` and
/// `RefUnwindSafe` as before the hook existed; the builder only calls the function from the
/// connection task, never across a `catch_unwind` of the caller's.
pub(crate) struct Resolver(AssertUnwindSafe<Arc<ResolveFn>>);

impl Clone for Resolver {
    fn clone(&self) -> Self {
        Self(AssertUnwindSafe(Arc::clone(&self.0 .0)))
    }
}

impl std::fmt::Debug for Resolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Resolver")
    }
}

impl Default for Resolver {
    /// The system's resolver (tokio's `lookup_host`).
    fn default() -> Self {
        Self::new(|host, port| {
            let host = host.to_owned();
            async move {
                Ok(tokio::net::lookup_host((host.as_str(), port))
                    .await?
                    .collect())
            }
        })
    }
}

impl Resolver {
    pub(crate) fn new<F, Fut>(resolve: F) -> Self
    where
        F: Fn(&str, u16) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = io::Result<Vec<SocketAddr>>> + Send + 'static,
    {
        Self(AssertUnwindSafe(Arc::new(move |host, port| {
            Box::pin(resolve(host, port))
        })))
    }

    /// The addresses of a connect-string host `host:port` (`[v6]:port` for IPv6 literals):
    /// an IP literal as it is, a name through the resolver. Duplicates are dropped; the
    /// order is the resolver's.
    ///
    /// # Errors
    ///
    /// `InvalidInput` for a host without a port, the resolver's error, `NotFound` when it
    /// found no address.
    pub(crate) async fn resolve(&self, host_port: &str) -> io::Result<Vec<SocketAddr>> {
        let (host, port) = split_host_port(host_port)?;
        if let Ok(ip) = host.parse::<IpAddr>() {
            return Ok(vec![SocketAddr::new(ip, port)]);
        }
        let mut addrs = (self.0 .0)(host, port).await?;
        let mut seen = std::collections::HashSet::new();
        addrs.retain(|a| seen.insert(*a));
        if addrs.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{host} has no address"),
            ));
        }
        Ok(addrs)
    }
}

/// `host:port` into the host (brackets of an IPv6 literal removed) and the port.
fn split_host_port(host_port: &str) -> io::Result<(&str, u16)> {
    let bad = || io::Error::new(io::ErrorKind::InvalidInput, "host without a port");
    let (host, port) = host_port.rsplit_once(':').ok_or_else(bad)?;
    let port = port.parse::<u16>().map_err(|_| bad())?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    Ok((host, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn literals_skip_the_resolver_and_names_go_through_it() {
        let resolver = Resolver::new(|host, port| {
            let host = host.to_owned();
            async move {
                match host.as_str() {
                    "two" => Ok(vec![
                        SocketAddr::from(([127, 0, 0, 2], port)),
                        SocketAddr::from(([127, 0, 0, 2], port)),
                        SocketAddr::from(([127, 0, 0, 3], port)),
                    ]),
                    "none" => Ok(vec![]),
                    _ => Err(io::Error::new(io::ErrorKind::NotFound, "no such host")),
                }
            }
        });
        let two = resolver.resolve("two:7").await.unwrap();
        assert_eq!(
            two,
            [
                SocketAddr::from(([127, 0, 0, 2], 7)),
                SocketAddr::from(([127, 0, 0, 3], 7))
            ],
            "both addresses, duplicates dropped"
        );
        assert_eq!(
            resolver.resolve("[::1]:9").await.unwrap(),
            [SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, 9))]
        );
        assert_eq!(
            resolver.resolve("10.0.0.1:9").await.unwrap(),
            [SocketAddr::from(([10, 0, 0, 1], 9))]
        );
        assert!(resolver.resolve("none:1").await.is_err());
        assert!(resolver.resolve("other:1").await.is_err());
        assert!(resolver.resolve("two").await.is_err());
    }

    #[tokio::test]
    async fn the_system_resolver_finds_localhost() {
        let addrs = Resolver::default().resolve("localhost:2181").await.unwrap();
        assert!(addrs
            .iter()
            .all(|a| a.ip().is_loopback() && a.port() == 2181));
    }
}
