//! [`ServiceDiscovery`]: registering, updating, unregistering and querying instances.

use std::collections::HashMap;
use std::time::Duration;

use tokio::sync::Mutex;
use tracing::warn;
use zk_client::{Client, CreateMode, CreateOptions, SessionManager};

use super::cache::{ProviderStrategy, ServiceCache, ServiceProvider};
use super::instance::{ServiceInstance, ServiceType};
use crate::error::{Error, Result};
use crate::node::{NodeOptions, PersistentNode};
use crate::path::{check_base, check_segment as check_path_segment, join as child_path};
use crate::queue::delete_guaranteed;
use crate::retry::{gave_up, retry_after, retrying, turns};

/// How long [`ServiceDiscovery::register`] waits for a dynamic instance's node.
const REGISTER_WAIT: Duration = Duration::from_secs(3600);

/// A registration of ours.
#[derive(Debug)]
enum Registration {
    /// DYNAMIC or DYNAMIC_SEQUENTIAL: kept by a persistent node across sessions.
    Dynamic(PersistentNode),
    /// STATIC or PERMANENT: a persistent node at this path.
    Persistent(String),
}

/// Service discovery in curator-x-discovery's layout: instances at
/// `<base path>/<service name>/<instance id>`, each node holding the instance's JSON (see
/// [`ServiceInstance`]), so Java's `ServiceDiscovery`, `ServiceCache` and `ServiceProvider`
/// (and Spring Cloud Zookeeper) see our instances and we see theirs.
///
/// Dynamic instances are EPHEMERAL nodes kept by a [`PersistentNode`] on a
/// [`SessionManager`]'s sessions: re-registered after an expiry or a deletion, and a leftover
/// node of our id held by another session (our expired one) is replaced. Unlike Curator, a
/// reconnect does not delete and re-create our own node (CURATOR-320), a
/// DYNAMIC_SEQUENTIAL instance is updated and removed at the node the server named, and
/// [`close`](Self::close) leaves STATIC and PERMANENT instances in place (CURATOR-94).
///
/// ```no_run
/// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
/// use zk_client::{Client, SessionManager};
/// use zk_recipes::discovery::{ProviderStrategy, ServiceDiscovery, ServiceInstance};
///
/// let manager = SessionManager::connect(Client::builder("127.0.0.1:2181")).await?;
/// let discovery = ServiceDiscovery::new_managed(&manager, "/services")?;
/// let me = ServiceInstance::new("orders", "10.0.0.7", 8080);
/// discovery.register(&me).await?;
///
/// let provider = discovery.provider("payments", ProviderStrategy::RoundRobin)?;
/// if let Some(payments) = provider.instance() {
///     println!("calling {}:{:?}", payments.address.unwrap_or_default(), payments.port);
/// }
/// discovery.close().await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ServiceDiscovery {
    manager: SessionManager,
    base: String,
    registered: Mutex<HashMap<(String, String), Registration>>,
}

impl ServiceDiscovery {
    /// Discovery under `base_path`, on `manager`'s sessions.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] for a relative path or the root.
    pub fn new_managed(manager: &SessionManager, base_path: &str) -> Result<ServiceDiscovery> {
        Ok(ServiceDiscovery {
            manager: manager.clone(),
            base: check_base(base_path)?,
            registered: Mutex::new(HashMap::new()),
        })
    }

    /// The base path.
    pub fn base_path(&self) -> &str {
        &self.base
    }

    fn service_path(&self, name: &str) -> String {
        child_path(&self.base, name)
    }

    fn client(&self) -> Client {
        self.manager.client()
    }

    /// Registers `instance` (or replaces our registration of the same name and id) and waits
    /// until its node exists.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an empty or `/`-containing name or id; `NoAuth` and the
    /// reasons the node could not be kept (see [`PersistentNode::ready`]).
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe: a registration replaced by this call is closed first, and the new
    /// one is kept only once this returns `Ok`. Dropping the future before then leaves
    /// neither for a dynamic instance (its new node, if made, is deleted); a static or
    /// permanent instance's node, persistent by design, may have been written and stays,
    /// unknown to [`unregister`](Self::unregister). Register again.
    pub async fn register(&self, instance: &ServiceInstance) -> Result<()> {
        check_segment(&instance.name)?;
        check_segment(&instance.id)?;
        let key = (instance.name.clone(), instance.id.clone());
        let path = child_path(&self.service_path(&instance.name), &instance.id);
        let json = instance.to_json();
        let mut registered = self.registered.lock().await;
        if let Some(Registration::Dynamic(node)) = registered.remove(&key) {
            node.close().await?;
        }
        match instance.service_type {
            ServiceType::Dynamic | ServiceType::DynamicSequential => {
                let mode = if instance.service_type == ServiceType::Dynamic {
                    CreateMode::Ephemeral
                } else {
                    CreateMode::EphemeralSequential
                };
                // Curator's names, unprotected: `<id>` or `<id><sequence>` (a sequential
                // create whose reply is lost is found again by its prefix and our session,
                // where Curator would make a second node).
                let options = NodeOptions::new(mode);
                let node =
                    PersistentNode::new_managed(&self.manager, &path, json.as_bytes(), options)?;
                // A registration that cannot be kept (NoAuth, say) is not remembered; its
                // handle is dropped, which removes anything it made.
                node.ready_timeout(REGISTER_WAIT).await?;
                registered.insert(key, Registration::Dynamic(node));
                Ok(())
            }
            ServiceType::Static | ServiceType::Permanent => {
                write_persistent(&self.client(), &path, json.as_bytes()).await?;
                registered.insert(key, Registration::Persistent(path));
                Ok(())
            }
        }
    }

    /// Writes `instance`'s new JSON into our registration of its name and id.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the instance is not registered through this object;
    /// the write's errors.
    ///
    /// # Cancel safety
    ///
    /// A dynamic instance's data is replaced, and a static one's write sent, when the future is
    /// first polled; dropping it afterwards loses only the outcome of the write.
    pub async fn update(&self, instance: &ServiceInstance) -> Result<()> {
        let key = (instance.name.clone(), instance.id.clone());
        let json = instance.to_json();
        let registered = self.registered.lock().await;
        match registered.get(&key) {
            Some(Registration::Dynamic(node)) => node.set_data(json.as_bytes()).await,
            Some(Registration::Persistent(path)) => {
                write_persistent(&self.client(), path, json.as_bytes()).await
            }
            None => Err(Error::InvalidArgument(
                "the instance is not registered here",
            )),
        }
    }

    /// Removes our registration of `instance` (forgotten first, then deleted with a
    /// guaranteed delete). Unknown instances are ignored.
    ///
    /// # Errors
    ///
    /// As [`PersistentNode::close`] for a dynamic instance; the delete's error (`NoAuth`,
    /// say) for a static or permanent one.
    ///
    /// # Cancel safety
    ///
    /// The registration is forgotten when the future is first polled; a dynamic instance's
    /// delete goes on in the background if the future is dropped, a static one's may not be
    /// sent.
    pub async fn unregister(&self, instance: &ServiceInstance) -> Result<()> {
        let key = (instance.name.clone(), instance.id.clone());
        let removed = self.registered.lock().await.remove(&key);
        match removed {
            Some(Registration::Dynamic(node)) => node.close().await,
            Some(Registration::Persistent(path)) => delete_guaranteed(&self.client(), &path, None)
                .await
                .map(drop),
            None => Ok(()),
        }
    }

    /// The service names under the base path (empty when it does not exist).
    ///
    /// # Errors
    ///
    /// `NoAuth` and the session errors (connection losses are waited out).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads.
    pub async fn query_for_names(&self) -> Result<Vec<String>> {
        let client = self.client();
        match retrying(&client, || client.get_children(&self.base)).await {
            Ok(mut names) => {
                names.sort();
                Ok(names)
            }
            Err(Error::Client(zk_client::Error::NoNode)) => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }

    /// Every instance of `name`, read now. Nodes that do not hold an instance's JSON are
    /// skipped with a warning (Curator's query throws on them).
    ///
    /// # Errors
    ///
    /// `NoAuth` and the session errors (connection losses are waited out).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads.
    pub async fn query_for_instances(&self, name: &str) -> Result<Vec<ServiceInstance>> {
        let client = self.client();
        let path = self.service_path(name);
        let children = match retrying(&client, || client.get_children(&path)).await {
            Ok(children) => children,
            Err(Error::Client(zk_client::Error::NoNode)) => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut instances = Vec::new();
        for child in children {
            if let Some(instance) = read_instance(&client, &child_path(&path, &child)).await? {
                instances.push(instance);
            }
        }
        Ok(instances)
    }

    /// The instance of `name` with node name `id`, if any.
    ///
    /// # Errors
    ///
    /// As [`query_for_instances`](Self::query_for_instances).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads.
    pub async fn query_for_instance(
        &self,
        name: &str,
        id: &str,
    ) -> Result<Option<ServiceInstance>> {
        check_segment(id)?;
        read_instance(&self.client(), &child_path(&self.service_path(name), id)).await
    }

    /// A cache of `name`'s instances that follows every change (Curator's `ServiceCache`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) when `name` makes a malformed path.
    pub fn service_cache(&self, name: &str) -> Result<ServiceCache> {
        ServiceCache::start(&self.manager, self.service_path(name))
    }

    /// A provider of `name`'s instances over a [`ServiceCache`] (Curator's
    /// `ServiceProvider`).
    ///
    /// # Errors
    ///
    /// As [`service_cache`](Self::service_cache).
    pub fn provider(&self, name: &str, strategy: ProviderStrategy) -> Result<ServiceProvider> {
        Ok(ServiceProvider::new(self.service_cache(name)?, strategy))
    }

    /// Unregisters every dynamic instance registered here. STATIC and PERMANENT ones stay
    /// (Curator deletes them too: CURATOR-94); [`unregister`](Self::unregister) removes them.
    ///
    /// # Errors
    ///
    /// The first delete's error (the others are still attempted).
    ///
    /// # Cancel safety
    ///
    /// The registrations are forgotten when the future is first polled; the dynamic instances'
    /// deletes go on in the background if the future is dropped.
    pub async fn close(&self) -> Result<()> {
        let drained: Vec<Registration> = self
            .registered
            .lock()
            .await
            .drain()
            .map(|(_, r)| r)
            .collect();
        let mut first = Ok(());
        for registration in drained {
            if let Registration::Dynamic(node) = registration {
                if let Err(e) = node.close().await {
                    if first.is_ok() {
                        first = Err(e);
                    }
                }
            }
        }
        first
    }
}

/// Reads one instance node; `None` when it is gone or does not hold an instance.
async fn read_instance(client: &Client, path: &str) -> Result<Option<ServiceInstance>> {
    match retrying(client, || client.get_data(path)).await {
        Ok((data, _)) => match ServiceInstance::from_json(&data) {
            Ok(instance) => Ok(Some(instance)),
            Err(e) => {
                warn!(%path, error = %e, "not a service instance; skipped");
                Ok(None)
            }
        },
        Err(Error::Client(zk_client::Error::NoNode)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Creates or overwrites a persistent instance node (parents as containers).
async fn write_persistent(client: &Client, path: &str, data: &[u8]) -> Result<()> {
    let options = CreateOptions::new(CreateMode::Persistent).with_container_parents(true);
    for _ in turns() {
        match client.set_data(path, data, None).await {
            Ok(_) => return Ok(()),
            Err(zk_client::Error::NoNode) => match client.create_all(path, data, &options).await {
                Ok(_) => return Ok(()),
                Err(zk_client::Error::NodeExists) => {}
                Err(e) => retry_after(client, e).await?,
            },
            Err(e) => retry_after(client, e).await?,
        }
    }
    Err(gave_up())
}

fn check_segment(segment: &str) -> Result<()> {
    check_path_segment(
        segment,
        "a service name or instance id is one non-empty path segment",
    )
}
