//! The connect string, host rotation and reconnect backoff.

use std::time::Duration;

use rand::seq::SliceRandom;
use rand::Rng;

use crate::error::{Error, Result};
use crate::path::Chroot;

/// Port used when a host in the connect string has none.
pub(crate) const DEFAULT_PORT: u16 = 2181;

/// Longest pause before a connection attempt (the Java client pauses up to 1 s before every
/// reconnect).
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(1);
/// Pause after the first failed attempt; doubles per failed attempt up to [`MAX_BACKOFF`].
const BASE_BACKOFF: Duration = Duration::from_millis(50);

/// Parses `"host1:2181,host2:2181/chroot"` into `host:port` strings and the chroot.
///
/// A host without a port gets 2181; IPv6 literals are written in brackets (`[::1]:2181`).
pub(crate) fn parse_connect_string(s: &str) -> Result<(Vec<String>, Chroot)> {
    let invalid = |reason| Error::InvalidArgument(reason);
    let (hosts_part, chroot) = match s.find('/') {
        Some(i) => (&s[..i], Chroot::new(&s[i..])?),
        None => (s, Chroot::default()),
    };
    let mut hosts = Vec::new();
    for host in hosts_part
        .split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
    {
        let has_port = if let Some(rest) = host.strip_prefix('[') {
            // [v6] or [v6]:port
            let close = rest
                .find(']')
                .ok_or_else(|| invalid("unclosed [ in connect string"))?;
            rest[close + 1..].starts_with(':')
        } else {
            host.contains(':')
        };
        if has_port {
            let port = &host[host.rfind(':').expect("has a colon") + 1..];
            port.parse::<u16>()
                .map_err(|_| invalid("bad port in connect string"))?;
            hosts.push(host.to_owned());
        } else {
            hosts.push(format!("{host}:{DEFAULT_PORT}"));
        }
    }
    if hosts.is_empty() {
        return Err(invalid("connect string has no host"));
    }
    Ok((hosts, chroot))
}

/// The servers of the connect string, shuffled once, tried in rotation.
///
/// Shuffling spreads the clients of one application over the ensemble. Every attempt after a
/// failed one waits a jittered, exponentially growing pause (25-50 ms, doubling up to
/// 0.5-1 s), so a fleet of clients never hammers a struggling ensemble and does not reconnect
/// in lockstep. An attempt fails when the TCP connect or the handshake fails, and also when
/// the session was established but the connection did not last (see
/// [`on_connection_end`](Self::on_connection_end)): a server that completes the handshake and
/// hangs up at once does not reset the backoff.
#[derive(Debug)]
pub(crate) struct HostList {
    hosts: Vec<String>,
    next: usize,
    /// Failed attempts since the last connection that lasted.
    failures: u32,
}

impl HostList {
    pub(crate) fn new(mut hosts: Vec<String>) -> Self {
        hosts.shuffle(&mut rand::thread_rng());
        Self {
            hosts,
            next: 0,
            failures: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.hosts.len()
    }

    /// The next host to try and its index.
    pub(crate) fn next_host(&mut self) -> (usize, &str) {
        let i = self.next % self.hosts.len();
        self.next = (i + 1) % self.hosts.len();
        (i, &self.hosts[i])
    }

    /// All hosts but `skip`, in rotation order after it.
    pub(crate) fn others(&self, skip: usize) -> Vec<(usize, String)> {
        (1..self.hosts.len())
            .map(|k| (skip + k) % self.hosts.len())
            .map(|i| (i, self.hosts[i].clone()))
            .collect()
    }

    /// Makes `index` the next host tried.
    pub(crate) fn prefer(&mut self, index: usize) {
        self.next = index % self.hosts.len();
    }

    /// How long to wait before the next attempt, at most `max`: nothing after a connection
    /// that lasted, else uniform in [b/2, b] where b doubles per failed attempt from 50 ms.
    pub(crate) fn backoff(&self, max: Duration) -> Duration {
        if self.failures == 0 {
            return Duration::ZERO;
        }
        let exp = BASE_BACKOFF
            .saturating_mul(1u32 << (self.failures - 1).min(10))
            .min(max);
        let jitter = rand::thread_rng().gen_range(0..=exp.as_micros() as u64 / 2);
        exp / 2 + Duration::from_micros(jitter)
    }

    /// A connection attempt failed (TCP connect or handshake).
    pub(crate) fn on_failure(&mut self) {
        self.failures = self.failures.saturating_add(1);
    }

    /// A connection whose session was established for `lasted` (`None`: never established)
    /// ended. One that lasted `stable` or longer was good: the next attempt goes at once.
    /// Anything shorter counts as a failed attempt, so a server that accepts the session and
    /// hangs up at once is retried with growing pauses, not in a loop.
    pub(crate) fn on_connection_end(&mut self, lasted: Option<Duration>, stable: Duration) {
        if lasted.is_some_and(|d| d >= stable) {
            self.failures = 0;
        } else {
            self.on_failure();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_hosts_ports_and_chroot() {
        let (hosts, chroot) = parse_connect_string("a:1,b,[::1]:3,[::2]/app/x").unwrap();
        assert_eq!(hosts, ["a:1", "b:2181", "[::1]:3", "[::2]:2181"]);
        assert_eq!(chroot.as_str(), "/app/x");
        let (_, chroot) = parse_connect_string("a:1/").unwrap();
        assert_eq!(chroot.as_str(), "");
        assert!(parse_connect_string("").is_err());
        assert!(parse_connect_string("/app").is_err());
        assert!(parse_connect_string("a:x").is_err());
        assert!(parse_connect_string("a:1/bad/").is_err());
    }

    #[test]
    fn rotation_and_backoff() {
        let mut list = HostList::new(vec!["a:1".into(), "b:1".into(), "c:1".into()]);
        let first: Vec<_> = (0..3).map(|_| list.next_host().0).collect();
        assert_eq!(first, [0, 1, 2]);
        assert_eq!(list.next_host().0, 0);
        assert_eq!(list.backoff(MAX_BACKOFF), Duration::ZERO);
        list.on_failure();
        let b = list.backoff(MAX_BACKOFF);
        assert!(b >= BASE_BACKOFF / 2 && b <= BASE_BACKOFF, "{b:?}");
        list.on_failure();
        let b = list.backoff(MAX_BACKOFF);
        assert!(b >= BASE_BACKOFF && b <= BASE_BACKOFF * 2, "{b:?}");
        for _ in 0..300 {
            list.on_failure();
        }
        let b = list.backoff(MAX_BACKOFF);
        assert!(b >= MAX_BACKOFF / 2 && b <= MAX_BACKOFF, "{b:?}");
        assert!(list.backoff(MAX_BACKOFF / 2) <= MAX_BACKOFF / 2);
        // A session that was established but did not last is a failure too.
        let stable = Duration::from_secs(4);
        list.on_connection_end(Some(Duration::from_millis(3)), stable);
        assert!(list.backoff(MAX_BACKOFF) >= MAX_BACKOFF / 2);
        list.on_connection_end(Some(stable), stable);
        assert_eq!(list.backoff(MAX_BACKOFF), Duration::ZERO);
        assert_eq!(
            list.others(1).iter().map(|h| h.0).collect::<Vec<_>>(),
            [2, 0]
        );
        list.prefer(2);
        assert_eq!(list.next_host().0, 2);
    }
}
