//! The connect string, host rotation and reconnect backoff.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;

use rand::seq::SliceRandom;
use rand::Rng;

use crate::error::{Error, Result};
use crate::path::Chroot;
use crate::resolve::Resolver;

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
/// A host is resolved when its turn comes ([`next_target`](Self::next_target)) into all its
/// addresses, which are then tried one by one, each as an attempt of its own (its own
/// connect timeout, the backoff between attempts), before the next host; a host is resolved
/// again at its next turn, so changed DNS records are followed from one reconnect to the
/// next. The addresses of a name are shuffled (a fleet of clients given one name spreads over
/// its records), the one the session was last connected to goes last.
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
    /// After an [`update`](Self::update) that asks this client to move: where to look first,
    /// until a connection is established or every host was tried once.
    moving: Option<Moving>,
    resolver: Resolver,
    /// The addresses of the host tried last, left to try: (its index, the addresses).
    pending: Option<(usize, VecDeque<SocketAddr>)>,
    /// How many addresses each host had when last resolved (1 before).
    counts: Vec<usize>,
    /// The address the session was last established on.
    last_addr: Option<SocketAddr>,
}

/// What to try next: an address of the host tried last, or the next host, to resolve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// Host `index` (`host:port` as written) at this address.
    Addr(usize, String, SocketAddr),
    /// Host `index` (`host:port` as written), to resolve.
    Name(usize, String),
}

/// The choice of the next host after a host-list update (ZOOKEEPER-1355), until connected.
///
/// The new list splits into hosts that were in the old list ("kept") and hosts that were not
/// ("added"). Each attempt draws: with probability `to_added` an added host not tried yet,
/// else a kept one; when one group is exhausted the other is used; when both are, the list
/// goes back to plain rotation.
#[derive(Debug)]
struct Moving {
    added: Vec<usize>,
    kept: Vec<usize>,
    to_added: f64,
    tried_added: usize,
    tried_kept: usize,
}

impl Moving {
    fn next(&mut self, rng: &mut impl Rng) -> Option<usize> {
        let want_added = rng.gen::<f64>() < self.to_added;
        let added_left = self.tried_added < self.added.len();
        let kept_left = self.tried_kept < self.kept.len();
        if added_left && (want_added || !kept_left) {
            self.tried_added += 1;
            return self.added.get(self.tried_added - 1).copied();
        }
        if kept_left {
            self.tried_kept += 1;
            return self.kept.get(self.tried_kept - 1).copied();
        }
        None
    }
}

/// Whether a client connected to one of `old` hosts should move after the list becomes
/// `new`, and if so how likely it is to pick an added host: ZOOKEEPER-1355's rule, which keeps
/// the expected number of clients per host equal after the change while moving as few
/// clients as possible. `current` is the host the client is (or was last) connected to;
/// `kept` how many hosts of `new` were in `old`; `draw` a uniform number in [0, 1).
///
/// * The list grew (`new > old`): a client whose host is kept moves with probability
///   `1 - old/new`, always to an added host: each kept host then keeps `old/new` of its
///   clients, the share of a host in the bigger list, and the movers fill the added hosts.
///   A client whose host was removed moves to an added host.
/// * The list shrank or kept its size: a client whose host is kept stays (its host only
///   gains load). A client whose host was removed must move; it picks a kept host with
///   probability `kept * (old - new) / (new * (old - kept))`, else an added one. With
///   `old - new` hosts gone net, the kept hosts each need `(old - new) / new` of an old
///   host's load more, which is what that fraction of the removed hosts' clients brings.
///
/// Returns `None` to stay, `Some(p)` to move, picking an added host with probability `p`.
pub(crate) fn rebalance(
    old: usize,
    new: usize,
    kept: usize,
    current_kept: bool,
    draw: f64,
) -> Option<f64> {
    let (old_n, new_n, kept_n) = (old as f64, new as f64, kept as f64);
    if new > old {
        if !current_kept || draw < 1.0 - old_n / new_n {
            return Some(1.0);
        }
        return None;
    }
    if current_kept {
        return None;
    }
    if old == kept {
        // Nothing was removed, so the current host cannot be gone; stay.
        return None;
    }
    let to_kept = kept_n * (old_n - new_n) / (new_n * (old_n - kept_n));
    Some((1.0 - to_kept).clamp(0.0, 1.0))
}

impl HostList {
    pub(crate) fn new(mut hosts: Vec<String>) -> Self {
        hosts.shuffle(&mut rand::thread_rng());
        Self {
            counts: vec![1; hosts.len()],
            hosts,
            next: 0,
            failures: 0,
            moving: None,
            resolver: Resolver::default(),
            pending: None,
            last_addr: None,
        }
    }

    /// Resolves host names with `resolver` (default: the system's).
    pub(crate) fn with_resolver(mut self, resolver: Resolver) -> Self {
        self.resolver = resolver;
        self
    }

    pub(crate) fn resolver(&self) -> &Resolver {
        &self.resolver
    }

    /// The next attempt: the next address of the host tried last, else the next host, for
    /// the caller to resolve and hand back with [`resolved`](Self::resolved).
    pub(crate) fn next_target(&mut self) -> Target {
        if let Some((index, addrs)) = &mut self.pending {
            if let (Some(host), Some(addr)) = (self.hosts.get(*index), addrs.pop_front()) {
                return Target::Addr(*index, host.clone(), addr);
            }
        }
        self.pending = None;
        let (index, host) = self.next_host();
        Target::Name(index, host.to_owned())
    }

    /// Host `index` resolved to `addrs`: they are shuffled, the last connected one put last,
    /// and queued for [`next_target`](Self::next_target); returns the first to try.
    pub(crate) fn resolved(&mut self, index: usize, addrs: Vec<SocketAddr>) -> Option<SocketAddr> {
        self.resolved_with(index, addrs, &mut rand::thread_rng())
    }

    pub(crate) fn resolved_with(
        &mut self,
        index: usize,
        mut addrs: Vec<SocketAddr>,
        rng: &mut impl Rng,
    ) -> Option<SocketAddr> {
        addrs.shuffle(rng);
        if let Some(last) = self.last_addr {
            if let Some(i) = addrs.iter().position(|a| *a == last) {
                let a = addrs.remove(i);
                addrs.push(a);
            }
        }
        if let Some(count) = self.counts.get_mut(index) {
            *count = addrs.len().max(1);
        }
        let mut addrs = VecDeque::from(addrs);
        let first = addrs.pop_front();
        self.pending = Some((index, addrs));
        first
    }

    /// Addresses in one round over every host, as last resolved (a host not resolved yet
    /// counts one): what the default connect timeout divides the session timeout by.
    pub(crate) fn addresses(&self) -> usize {
        self.counts.iter().sum::<usize>().max(1)
    }

    /// Replaces the hosts with `new` (non-empty), keeping the session's place: returns whether
    /// the client should leave `current` (the host it is connected to, or was last) to even
    /// out the load ([`rebalance`]). After a `true`, [`next_host`](Self::next_host) picks as
    /// the rule says until [`on_connected`](Self::on_connected).
    pub(crate) fn update(&mut self, new: Vec<String>, current: Option<&str>) -> bool {
        self.update_with(new, current, &mut rand::thread_rng())
    }

    pub(crate) fn update_with(
        &mut self,
        mut new: Vec<String>,
        current: Option<&str>,
        rng: &mut impl Rng,
    ) -> bool {
        new.sort();
        new.dedup();
        new.shuffle(rng);
        let old = std::mem::take(&mut self.hosts);
        self.counts = new
            .iter()
            .map(|h| {
                old.iter()
                    .position(|o| o == h)
                    .and_then(|i| self.counts.get(i).copied())
                    .unwrap_or(1)
            })
            .collect();
        self.pending = None;
        let (mut kept, mut added) = (Vec::new(), Vec::new());
        for (i, host) in new.iter().enumerate() {
            if old.contains(host) {
                kept.push(i);
            } else {
                added.push(i);
            }
        }
        // Not connected and never was: the first host stands in, as in the Java client.
        let current = current.or(old.first().map(String::as_str));
        let current_kept = current.is_some_and(|c| new.iter().any(|h| h == c));
        let decision = rebalance(
            old.len(),
            new.len(),
            kept.len(),
            current_kept,
            rng.gen::<f64>(),
        );
        self.next = current
            .and_then(|c| new.iter().position(|h| h == c))
            .map_or(0, |i| i + 1)
            % new.len().max(1);
        self.hosts = new;
        self.moving = decision.map(|to_added| Moving {
            added,
            kept,
            to_added,
            tried_added: 0,
            tried_kept: 0,
        });
        self.moving.is_some()
    }

    /// The index of `host` in the list.
    pub(crate) fn index_of(&self, host: &str) -> Option<usize> {
        self.hosts.iter().position(|h| h == host)
    }

    /// A session was established on host `index` at `addr`: rotation goes on after it (the
    /// host's other addresses are not tried next: the next attempt resolves the next host
    /// afresh), and a move after an update is over.
    pub(crate) fn on_connected(&mut self, index: usize, addr: Option<SocketAddr>) {
        self.moving = None;
        self.pending = None;
        self.last_addr = addr;
        self.next = (index + 1) % self.hosts.len().max(1);
    }

    pub(crate) fn len(&self) -> usize {
        self.hosts.len()
    }

    /// The next host to try and its index.
    pub(crate) fn next_host(&mut self) -> (usize, &str) {
        if let Some(moving) = &mut self.moving {
            match moving.next(&mut rand::thread_rng()) {
                Some(i) if i < self.hosts.len() => return (i, &self.hosts[i]),
                // Every host tried once since the update: back to rotation.
                _ => self.moving = None,
            }
        }
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
        self.pending = None;
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

    fn counts(hosts: &[&str], clients: &[String]) -> Vec<usize> {
        hosts
            .iter()
            .map(|h| clients.iter().filter(|c| c == h).count())
            .collect()
    }

    /// `n` clients spread evenly over `old`, each updated to `new`: where each ends up
    /// (its first pick after the update, as if every host accepted it).
    fn simulate(n: usize, old: &[&str], new: &[&str], seed: u64) -> (Vec<String>, usize) {
        use rand::SeedableRng;
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut moved = 0;
        let ends = (0..n)
            .map(|i| {
                let mut list = HostList::new(old.iter().map(|h| h.to_string()).collect());
                let current = old[i % old.len()];
                let new_hosts = new.iter().map(|h| h.to_string()).collect();
                if list.update_with(new_hosts, Some(current), &mut rng) {
                    moved += 1;
                    list.next_host().1.to_owned()
                } else {
                    current.to_owned()
                }
            })
            .collect();
        (ends, moved)
    }

    #[test]
    fn the_rule_in_numbers() {
        // 3 -> 5, my host kept: move with probability 1 - 3/5 = 0.4, to an added host.
        assert_eq!(rebalance(3, 5, 3, true, 0.39), Some(1.0));
        assert_eq!(rebalance(3, 5, 3, true, 0.41), None);
        assert_eq!(rebalance(3, 5, 2, false, 0.99), Some(1.0));
        // Shrinking: a kept host stays; a removed host's client moves.
        assert_eq!(rebalance(5, 3, 3, true, 0.0), None);
        assert_eq!(rebalance(5, 3, 3, false, 0.0), Some(0.0));
        // 3 -> 3 with one replaced: the removed host's clients all go to the added one.
        assert_eq!(rebalance(3, 3, 2, false, 0.5), Some(1.0));
        // 4 -> 3, two removed, one added: to a kept host with 2*1/(3*2) = 1/3.
        let p = rebalance(4, 3, 2, false, 0.0).unwrap();
        assert!((p - 2.0 / 3.0).abs() < 1e-9, "{p}");
    }

    #[test]
    fn growing_3_to_5_evens_out_and_moves_only_what_it_must() {
        let old = ["a:1", "b:1", "c:1"];
        let new = ["a:1", "b:1", "c:1", "d:1", "e:1"];
        let (ends, moved) = simulate(3000, &old, &new, 7);
        // Fair share 600; each count is binomial-like with sd about 15-20: 5 sd = 100.
        for (host, n) in new.iter().zip(counts(&new, &ends)) {
            assert!((500..=700).contains(&n), "{host}: {n}");
        }
        // Only about 2/5 of the clients move (the minimum to even out: 1200 of 3000).
        assert!((1100..=1300).contains(&moved), "{moved}");
    }

    #[test]
    fn shrinking_and_replacing_move_only_the_orphans() {
        let (ends, moved) = simulate(
            3000,
            &["a:1", "b:1", "c:1", "d:1", "e:1"],
            &["a:1", "b:1", "c:1"],
            8,
        );
        assert_eq!(moved, 1200, "only the clients of d and e move");
        for n in counts(&["a:1", "b:1", "c:1"], &ends) {
            assert!((900..=1100).contains(&n), "{n}");
        }
        let (ends, moved) = simulate(3000, &["a:1", "b:1", "c:1"], &["a:1", "b:1", "d:1"], 9);
        assert_eq!(moved, 1000);
        assert_eq!(counts(&["a:1", "b:1", "d:1"], &ends), [1000, 1000, 1000]);
    }

    #[test]
    fn after_a_move_every_host_is_tried_then_rotation() {
        use rand::SeedableRng;
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let mut list = HostList::new(vec!["a:1".into()]);
        let new = vec!["b:1".into(), "c:1".into(), "a:1".into(), "a:1".into()];
        assert!(
            list.update_with(new, Some("z:1"), &mut rng),
            "a removed host moves"
        );
        assert_eq!(list.len(), 3, "duplicates dropped");
        let mut seen: Vec<String> = (0..3).map(|_| list.next_host().1.to_owned()).collect();
        seen.sort();
        assert_eq!(seen, ["a:1", "b:1", "c:1"]);
        // Then plain rotation over the new list.
        let next: Vec<usize> = (0..3).map(|_| list.next_host().0).collect();
        let mut sorted = next.clone();
        sorted.sort();
        assert_eq!(sorted, [0, 1, 2], "{next:?}");
        // Connected: the move is over, rotation goes on after that host.
        assert!(list.update_with(vec!["d:1".into()], Some("a:1"), &mut rng));
        list.on_connected(0, None);
        assert_eq!(list.next_host().1, "d:1");
        assert_eq!(list.index_of("d:1"), Some(0));
    }

    #[test]
    fn each_address_of_a_name_is_a_target_then_the_next_name() {
        use rand::SeedableRng;
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let ip = |n: u8| SocketAddr::from(([127, 0, 0, n], 1));
        let mut list = HostList::new(vec!["a:1".into(), "b:1".into()]);
        assert_eq!(list.addresses(), 2, "one each before resolution");
        let Target::Name(first, host) = list.next_target() else {
            panic!("a name to resolve first");
        };
        let got = list.resolved_with(first, vec![ip(1), ip(2), ip(3)], &mut rng);
        assert_eq!(list.addresses(), 4);
        let mut tried = vec![got.unwrap()];
        while let Target::Addr(i, h, a) = list.next_target() {
            assert_eq!((i, h.as_str()), (first, host.as_str()));
            tried.push(a);
            assert!(tried.len() <= 3);
        }
        tried.sort();
        assert_eq!(tried, [ip(1), ip(2), ip(3)]);
        // Connected on ip(2): the next turn of this name resolves afresh, ip(2) last.
        list.on_connected(first, Some(ip(2)));
        for seed in 0..20 {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            list.resolved_with(first, vec![ip(2), ip(1), ip(3)], &mut rng);
            let mut order = Vec::new();
            while let Target::Addr(_, _, a) = list.next_target() {
                order.push(a);
            }
            assert_eq!(order.last(), Some(&ip(2)), "{order:?}");
        }
        // An update drops what was left of a name and keeps the counts of kept hosts.
        list.resolved_with(first, vec![ip(1), ip(2), ip(3)], &mut rng);
        list.update_with(vec![host.clone(), "c:1".into()], None, &mut rng);
        assert_eq!(list.addresses(), 4);
        assert!(matches!(list.next_target(), Target::Name(..)));
    }
}
