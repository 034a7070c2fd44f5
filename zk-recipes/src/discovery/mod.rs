//! Service discovery in curator-x-discovery's layout and JSON (feature `discovery`).
//!
//! Instances live at `<base path>/<service name>/<instance id>`; each node holds the
//! instance's JSON exactly as Curator 5.4's default `JsonInstanceSerializer` writes it (see
//! [`ServiceInstance`]). Java services using `ServiceDiscovery`, `ServiceCache` or
//! `ServiceProvider` (or Spring Cloud Zookeeper, which sits on them) on the same base path
//! find our instances, and we find theirs.
//!
//! - [`ServiceDiscovery`]: register (dynamic instances are ephemeral and re-registered on
//!   each new session), update, unregister; query names, instances, one instance.
//! - [`ServiceCache`]: a service's instances, followed.
//! - [`ServiceProvider`]: one instance at a time, round-robin or random.

mod cache;
mod instance;
mod registry;

pub use cache::{Instances, ProviderStrategy, ServiceCache, ServiceProvider};
pub use instance::{ServiceInstance, ServiceType, UriPart, UriSpec};
pub use registry::ServiceDiscovery;
/// The JSON crate of [`ServiceInstance::payload`], re-exported so callers need not depend on
/// the same version themselves.
pub use serde_json;
