//! Nodes that outlive their session: [`PersistentNode`] (Curator's `PersistentNode` and
//! `PersistentEphemeralNode`), kept present across deletions, connection losses and new
//! sessions of a [`SessionManager`](zk_client::SessionManager).
//!
//! Inside: `shared` (what the handle and the task share) at the bottom; `events` and `run`
//! on it; `persistent` (the handle) on those; `ttl` on the handle.

mod events;
mod persistent;
mod run;
mod shared;
mod ttl;

pub use events::NodeEvents;
pub use persistent::PersistentNode;
pub use shared::{NodeEvent, NodeOptions};
pub use ttl::{PersistentTtlNode, DEFAULT_TOUCH_NAME};
