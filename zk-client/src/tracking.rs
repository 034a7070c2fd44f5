//! Opt-in ensemble tracking: a background follower of `/zookeeper/config` that hands each
//! new membership to [`Client::update_hosts`] ([`ClientBuilder::track_ensemble`]).
//!
//! Built to avoid what Curator's `EnsembleTracker` users hit: a wildcard client address
//! (`0.0.0.0`) written into the connect string (CURATOR-402: the member's host is used
//! instead, [`Member::client_address`]); the original connect string used again after a
//! change when a new session is opened (CURATOR-551: a [`SessionManager`] opens its next
//! session on the list last applied); the namespace lost after an update (CURATOR-593: the
//! chroot is never part of the tracked list); tracking that cannot be turned off (it is off
//! unless asked for).
//!
//! [`SessionManager`]: crate::SessionManager

use std::collections::BTreeSet;
use std::fmt;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tracing::{debug, warn};

use crate::client::{Client, WeakClient};
use crate::ensemble::{EnsembleConfig, Member};
use crate::error::Error;
use crate::resolve::Resolver;
use crate::state_watcher::{Observable, Publisher, Transitions};

/// Pause before reading the config again after a read failed for a reason other than the
/// end of the session (a connection loss, a timeout).
const RETRY_PAUSE: Duration = Duration::from_secs(1);

/// Translates a member of the config into the `host:port` this client reaches it at.
type MapFn = dyn Fn(&Member) -> Option<String> + Send + Sync;

/// Whether and how a client follows the ensemble's membership, for
/// [`ClientBuilder::track_ensemble`](crate::ClientBuilder::track_ensemble). Tracking is off
/// unless a builder is given one.
///
/// A tracking client reads `/zookeeper/config` with a watch (ZooKeeper 3.5+), and after
/// each change hands the members' client addresses to [`Client::update_hosts`]: the session
/// stays, and just enough clients move to even out the load (ZOOKEEPER-1355). A
/// [`SessionManager`](crate::SessionManager) opens its later sessions on the list last
/// applied, and the chroot never changes.
///
/// **Where the addresses come from: the user decides.**
/// * [`EnsembleTracking::new`]: the config's own client addresses (a wildcard such as
///   `0.0.0.0` is replaced by the member's host, CURATOR-402). These are the addresses the
///   servers were told, which a client behind NAT, a port mapping or in another container
///   network may not be able to use. So this mode applies a config only when it *describes
///   the client's current list*: at least one address of the new list (after resolving
///   names) is an address of the list the client uses now. A config that shares no address
///   with it (the servers know themselves by names or addresses the client never used) is
///   not applied: the user's list stays, a warning is logged, and
///   [`watch`](Self::watch) reports [`TrackOutcome::Kept`].
/// * [`EnsembleTracking::map_addresses`]: the user translates each member into the address
///   the client reaches it at (a NAT table, a port mapping, a service name); every change
///   is applied through it, without the check above.
/// * No tracking (the default): the list changes only when the application calls
///   [`Client::update_hosts`] or [`SessionManager::update_hosts`](crate::SessionManager::update_hosts).
///
/// One `EnsembleTracking` value (and its clones) reports on one builder: give each builder
/// its own.
///
/// ```no_run
/// # async fn f() -> zk_client::Result<()> {
/// use zk_client::{Client, EnsembleTracking};
/// let tracking = EnsembleTracking::new();
/// let mut tracked = tracking.watch();
/// let client = Client::builder("10.0.0.1:2181,10.0.0.2:2181,10.0.0.3:2181/app")
///     .track_ensemble(tracking)
///     .connect()
///     .await?;
/// let now = tracked.changed().await;
/// println!("config {:#x}: {:?} ({:?})", now.version, now.hosts, now.outcome);
/// # let _ = client; Ok(()) }
/// ```
///
/// Asserted unwind safe (as the resolver is): `ClientBuilder`, which holds one, stays
/// `UnwindSafe` and `RefUnwindSafe`; the map is only called from the follower task, and the
/// publisher's state is a value replaced whole.
pub struct EnsembleTracking {
    map: Option<AssertUnwindSafe<Arc<MapFn>>>,
    published: AssertUnwindSafe<Arc<Publisher<TrackedHosts>>>,
}

impl Clone for EnsembleTracking {
    fn clone(&self) -> Self {
        EnsembleTracking {
            map: self
                .map
                .as_ref()
                .map(|m| AssertUnwindSafe(Arc::clone(&m.0))),
            published: AssertUnwindSafe(Arc::clone(&self.published.0)),
        }
    }
}

impl fmt::Debug for EnsembleTracking {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnsembleTracking")
            .field("mapped", &self.map.is_some())
            .field("current", &self.published.current())
            .finish()
    }
}

impl Default for EnsembleTracking {
    fn default() -> Self {
        Self::new()
    }
}

/// What a tracking client did with the latest config it read: see
/// [`EnsembleTracking::watch`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TrackedHosts {
    /// The config's version ([`EnsembleConfig::version`]); 0 before the first read.
    pub version: i64,
    /// The client's host list after this config (`host:port`, no chroot).
    pub hosts: Vec<String>,
    /// What was done.
    pub outcome: TrackOutcome,
}

/// What a tracking client did with a config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TrackOutcome {
    /// No config read yet: `hosts` is the list the client was built with.
    Started,
    /// The config's list replaced the client's list ([`Client::update_hosts`]).
    Applied,
    /// The config lists the hosts the client already uses: nothing to do.
    Unchanged,
    /// The config was not applied: its addresses share none with the client's list (see
    /// [`EnsembleTracking::new`]), or it lists no client address at all. `hosts` is the
    /// list kept.
    Kept,
}

impl Observable for TrackedHosts {
    fn is_final(&self) -> bool {
        false
    }

    fn when_gone(last: &Self) -> Self {
        last.clone()
    }
}

impl EnsembleTracking {
    /// Follows the config's own client addresses, applying a config only when it describes
    /// the client's current list (see the type's docs).
    pub fn new() -> EnsembleTracking {
        EnsembleTracking {
            map: None,
            published: AssertUnwindSafe(Arc::new(Publisher::new(TrackedHosts {
                version: 0,
                hosts: Vec::new(),
                outcome: TrackOutcome::Started,
            }))),
        }
    }

    /// Follows the config through `map`, which gives the `host:port` this client reaches a
    /// member at (`None`: leave the member out). Every change is applied: the map is the
    /// user's statement of how the servers are reached.
    ///
    /// ```no_run
    /// # async fn f() -> zk_client::Result<()> {
    /// use zk_client::{Client, EnsembleTracking};
    /// // The servers sit behind a NAT that maps member N's client port to 30000 + N.
    /// let tracking = EnsembleTracking::new()
    ///     .map_addresses(|member| Some(format!("gateway.example.com:{}", 30000 + member.id)));
    /// let client = Client::builder("gateway.example.com:30001")
    ///     .track_ensemble(tracking)
    ///     .connect()
    ///     .await?;
    /// # let _ = client; Ok(()) }
    /// ```
    pub fn map_addresses<F>(mut self, map: F) -> EnsembleTracking
    where
        F: Fn(&Member) -> Option<String> + Send + Sync + 'static,
    {
        self.map = Some(AssertUnwindSafe(Arc::new(map)));
        self
    }

    /// Follows what the tracking did: the current value ([`Transitions::current`]), then
    /// one per config read that changed it.
    pub fn watch(&self) -> Transitions<TrackedHosts> {
        self.published.subscribe()
    }

    /// The list a config asks for: each member's address, through the map when there is
    /// one, duplicates dropped, in config order.
    pub(crate) fn hosts_for(&self, config: &EnsembleConfig) -> Vec<String> {
        let mut seen = BTreeSet::new();
        config
            .members
            .iter()
            .filter_map(|m| match &self.map {
                Some(map) => (map.0)(m),
                None => m.client_address(),
            })
            .filter(|h| seen.insert(h.clone()))
            .collect()
    }
}

/// The host list a [`SessionManager`](crate::SessionManager) opens its next session on,
/// when it differs from the builder's: set by `SessionManager::update_hosts` and by
/// tracking. The number counts the changes, so a renewal can tell one happened meanwhile.
#[derive(Debug, Default)]
pub(crate) struct SharedHosts(Mutex<(u64, Option<Vec<String>>)>);

impl SharedHosts {
    pub(crate) fn get(&self) -> (u64, Option<Vec<String>>) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(crate) fn set(&self, hosts: Vec<String>) {
        let mut guard = self.0.lock().unwrap_or_else(|e| e.into_inner());
        guard.0 += 1;
        guard.1 = Some(hosts);
    }
}

/// Starts following the config for `client`, whose list is `hosts`.
pub(crate) fn spawn(
    client: &Client,
    tracking: EnsembleTracking,
    hosts: Vec<String>,
    shared: Option<Arc<SharedHosts>>,
    resolver: Resolver,
) {
    tracking.published.publish(TrackedHosts {
        version: 0,
        hosts: hosts.clone(),
        outcome: TrackOutcome::Started,
    });
    let follower = Follower {
        client: client.downgrade(),
        tracking,
        hosts,
        shared,
        resolver,
    };
    tokio::spawn(follower.run());
}

struct Follower {
    /// Weak: dropping the user's last handle closes the session, which ends this.
    client: WeakClient,
    tracking: EnsembleTracking,
    /// The client's list now.
    hosts: Vec<String>,
    shared: Option<Arc<SharedHosts>>,
    resolver: Resolver,
}

impl Follower {
    async fn run(mut self) {
        let mut last_version = None;
        loop {
            let Some(client) = self.client.upgrade() else {
                return;
            };
            let read = client.get_config_watch();
            drop(client);
            let (data, watcher) = match read.await {
                Ok((data, _, watcher)) => (data, watcher),
                Err(e) if e.is_terminal() => return,
                Err(Error::NoNode) => {
                    debug!("no /zookeeper/config (no dynamic configuration): tracking stops");
                    return;
                }
                Err(e) => {
                    debug!(error = %e, "reading the ensemble config failed; trying again");
                    tokio::time::sleep(RETRY_PAUSE).await;
                    continue;
                }
            };
            match std::str::from_utf8(&data)
                .ok()
                .and_then(|t| EnsembleConfig::parse(t).ok())
            {
                Some(config) if last_version != Some(config.version) => {
                    last_version = Some(config.version);
                    if !self.apply(&config).await {
                        return;
                    }
                }
                Some(_) => {}
                None => warn!("the ensemble config does not parse; not tracked"),
            }
            match watcher.await {
                Ok(_) => {}
                Err(e) if e.is_terminal() => return,
                Err(_) => {}
            }
        }
    }

    /// Applies `config` when the rules allow; false when the session is over.
    async fn apply(&mut self, config: &EnsembleConfig) -> bool {
        let wanted = self.tracking.hosts_for(config);
        let outcome = if wanted.is_empty() {
            warn!(
                version = config.version,
                "the ensemble config lists no client address; keeping the host list"
            );
            TrackOutcome::Kept
        } else if same_set(&wanted, &self.hosts) {
            TrackOutcome::Unchanged
        } else if self.tracking.map.is_none() && !self.overlaps(&wanted).await {
            warn!(
                version = config.version,
                config = ?wanted,
                hosts = ?self.hosts,
                "the ensemble config names no address this client uses (NAT, port mapping, \
                 containers?); keeping the host list: map the addresses \
                 (EnsembleTracking::map_addresses) or call update_hosts"
            );
            TrackOutcome::Kept
        } else {
            let Some(client) = self.client.upgrade() else {
                return false;
            };
            match client.update_hosts(&wanted.join(",")).await {
                Ok(moving) => {
                    debug!(version = config.version, moving, hosts = ?wanted, "tracked a new ensemble config");
                    self.hosts = wanted;
                    if let Some(shared) = &self.shared {
                        shared.set(self.hosts.clone());
                    }
                    TrackOutcome::Applied
                }
                Err(e) if e.is_terminal() => return false,
                Err(e) => {
                    warn!(error = %e, hosts = ?wanted, "the tracked host list was refused");
                    TrackOutcome::Kept
                }
            }
        };
        self.tracking.published.publish(TrackedHosts {
            version: config.version,
            hosts: self.hosts.clone(),
            outcome,
        });
        true
    }

    /// Whether any address of `wanted` is an address of the current list (names resolved;
    /// a name that does not resolve counts by its text only).
    async fn overlaps(&self, wanted: &[String]) -> bool {
        if wanted.iter().any(|w| self.hosts.contains(w)) {
            return true;
        }
        let ours = self.addresses(&self.hosts).await;
        let theirs = self.addresses(wanted).await;
        !ours.is_disjoint(&theirs)
    }

    async fn addresses(&self, hosts: &[String]) -> BTreeSet<SocketAddr> {
        let mut all = BTreeSet::new();
        for host in hosts {
            let resolved =
                tokio::time::timeout(Duration::from_secs(5), self.resolver.resolve(host)).await;
            if let Ok(Ok(addrs)) = resolved {
                all.extend(addrs);
            }
        }
        all
    }
}

fn same_set(a: &[String], b: &[String]) -> bool {
    a.iter().collect::<BTreeSet<_>>() == b.iter().collect::<BTreeSet<_>>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_become_member_hosts_and_maps_translate() {
        let config = EnsembleConfig::parse(
            "server.1=10.0.0.1:2888:3888:participant;0.0.0.0:2181\n\
             server.2=10.0.0.2:2888:3888:participant;[::]:2182\n\
             server.3=10.0.0.3:2888:3888:observer;2183\n\
             server.4=10.0.0.4:2888:3888:participant\n\
             version=100000003",
        )
        .unwrap();
        // CURATOR-402: no wildcard reaches the list; a member without client port is left out.
        assert_eq!(
            EnsembleTracking::new().hosts_for(&config),
            ["10.0.0.1:2181", "10.0.0.2:2182", "10.0.0.3:2183"]
        );
        let mapped = EnsembleTracking::new()
            .map_addresses(|m| (m.id != 3).then(|| format!("nat.example:{}", 30000 + m.id)));
        assert_eq!(
            mapped.hosts_for(&config),
            [
                "nat.example:30001",
                "nat.example:30002",
                "nat.example:30004"
            ]
        );
        let same = EnsembleTracking::new().map_addresses(|_| Some("gw:1".into()));
        assert_eq!(same.hosts_for(&config), ["gw:1"], "duplicates dropped");
    }

    #[test]
    fn shared_hosts_count_changes() {
        let shared = SharedHosts::default();
        assert_eq!(shared.get(), (0, None));
        shared.set(vec!["a:1".into()]);
        shared.set(vec!["b:1".into()]);
        assert_eq!(shared.get(), (2, Some(vec!["b:1".to_owned()])));
        assert!(same_set(
            &["a:1".into(), "b:1".into()],
            &["b:1".into(), "a:1".into()]
        ));
    }
}
