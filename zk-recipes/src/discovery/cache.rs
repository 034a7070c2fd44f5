//! [`ServiceCache`] and [`ServiceProvider`]: a service's instances, followed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tracing::warn;
use zk_client::{Observable, SessionManager, Transitions};

use super::instance::ServiceInstance;
use crate::cache::{ChildData, ChildrenCache};
use crate::error::Result;
use crate::session::Following;

/// A service's instances, kept up to date with a watch on `<base>/<name>` (Curator's
/// `ServiceCache`): instances join, change and leave the cache as their nodes do, across
/// reconnects and the sessions of the [`SessionManager`]. Nodes that do not hold an
/// instance's JSON are left out (Curator logs and skips them too).
#[derive(Debug)]
pub struct ServiceCache {
    cache: ChildrenCache,
    path: String,
    instances: Following<Instances>,
}

impl ServiceCache {
    pub(crate) fn start(manager: &SessionManager, path: String) -> Result<ServiceCache> {
        let cache = ChildrenCache::new_managed(manager, &path)?;
        let service = path.clone();
        let instances = Following::start(
            cache.events(),
            {
                let cache = cache.clone();
                move || Instances::Current(parse(&service, cache.children()))
            },
            Instances::Ended,
        );
        Ok(ServiceCache {
            cache,
            path,
            instances,
        })
    }

    /// The service's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The cached instances, ordered by node name.
    pub fn instances(&self) -> Vec<ServiceInstance> {
        parse(&self.path, self.cache.children())
    }

    /// Whether the cache has read the service once ([`ready`](Self::ready) would return at
    /// once).
    pub fn is_ready(&self) -> bool {
        self.cache.cache().is_ready()
    }

    /// Waits until the cache has read the service once.
    ///
    /// # Errors
    ///
    /// As [`Cache::ready`](crate::cache::Cache::ready): the error that ended the cache first.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub async fn ready(&self) -> Result<()> {
        self.cache.ready().await
    }

    /// [`ready`](Self::ready) within `timeout`.
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`](crate::Error::Timeout) after `timeout`; otherwise as [`ready`](Self::ready).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub async fn ready_timeout(&self, timeout: Duration) -> Result<()> {
        self.cache.ready_timeout(timeout).await
    }

    /// Follows the cached instances (ordered by node name) with [`Transitions`], the type
    /// that follows a session's state, a lock's state and leadership too. It ends with
    /// [`Instances::Ended`] once the cache is dropped or its session manager ended.
    pub fn watch(&self) -> Transitions<Instances> {
        self.instances.subscribe()
    }

    /// Stops following the service: the cache ends and [`watch`](Self::watch) ends with
    /// [`Instances::Ended`]. Dropping the cache does the same in the background.
    ///
    /// # Errors
    ///
    /// As [`Cache::close`](crate::cache::Cache::close).
    ///
    /// # Cancel safety
    ///
    /// The cache stops as soon as this is called; the future only waits for its task.
    pub async fn close(&self) -> Result<()> {
        self.cache.close().await
    }
}

/// A service's instances as [`ServiceCache::watch`] follows them.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Instances {
    /// The cached instances, ordered by node name.
    Current(Vec<ServiceInstance>),
    /// The cache was dropped or its session manager ended: no change follows.
    Ended,
}

impl Observable for Instances {
    fn is_final(&self) -> bool {
        *self == Instances::Ended
    }

    fn when_gone(_last: &Self) -> Self {
        Instances::Ended
    }
}

fn parse(path: &str, children: Vec<ChildData>) -> Vec<ServiceInstance> {
    children
        .iter()
        .filter_map(|child| {
            match ServiceInstance::from_json(child.data.as_deref().unwrap_or_default()) {
                Ok(instance) => Some(instance),
                Err(e) => {
                    let name = child.name();
                    warn!(%path, %name, error = %e, "not a service instance; skipped");
                    None
                }
            }
        })
        .collect()
}

/// How a [`ServiceProvider`] picks an instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ProviderStrategy {
    /// Each instance in turn (Curator's default `RoundRobinStrategy`).
    #[default]
    RoundRobin,
    /// Uniformly at random (`RandomStrategy`).
    Random,
}

/// Picks one of a service's instances from a [`ServiceCache`] (Curator's `ServiceProvider`):
/// disabled instances (`enabled: false`) are never picked.
#[derive(Debug)]
pub struct ServiceProvider {
    cache: ServiceCache,
    strategy: ProviderStrategy,
    next: AtomicUsize,
}

impl ServiceProvider {
    pub(crate) fn new(cache: ServiceCache, strategy: ProviderStrategy) -> ServiceProvider {
        ServiceProvider {
            cache,
            strategy,
            next: AtomicUsize::new(0),
        }
    }

    /// The cache underneath.
    pub fn cache(&self) -> &ServiceCache {
        &self.cache
    }

    /// Stops the cache underneath (see [`ServiceCache::close`]).
    ///
    /// # Errors
    ///
    /// As [`ServiceCache::close`].
    ///
    /// # Cancel safety
    ///
    /// As [`ServiceCache::close`].
    pub async fn close(&self) -> Result<()> {
        self.cache.close().await
    }

    /// Every instance that may be picked now.
    pub fn all_instances(&self) -> Vec<ServiceInstance> {
        let mut instances = self.cache.instances();
        instances.retain(ServiceInstance::is_enabled);
        instances
    }

    /// One instance, by the strategy; `None` when there is none.
    pub fn instance(&self) -> Option<ServiceInstance> {
        let mut instances = self.all_instances();
        if instances.is_empty() {
            return None;
        }
        let index = match self.strategy {
            ProviderStrategy::RoundRobin => {
                self.next.fetch_add(1, Ordering::Relaxed) % instances.len()
            }
            ProviderStrategy::Random => {
                use rand::Rng;
                rand::thread_rng().gen_range(0..instances.len())
            }
        };
        Some(instances.swap_remove(index))
    }
}
