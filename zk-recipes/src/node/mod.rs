//! Nodes that outlive their session: [`PersistentNode`] (Curator's `PersistentNode` and
//! `PersistentEphemeralNode`), kept present across deletions, connection losses and new
//! sessions of a [`SessionManager`](zk_client::SessionManager).

mod events;
pub(crate) mod kernel;
mod persistent;
mod run;
mod ttl;

pub use events::NodeEvents;
pub use persistent::{NodeEvent, NodeOptions, PersistentNode};
pub use ttl::{PersistentTtlNode, DEFAULT_TOUCH_NAME};
