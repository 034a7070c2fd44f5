//! The base of everything that follows a session in the background (caches, persistent
//! nodes, group members, shared values, leader latches and selectors, discovery):
//!
//! - [`Sessions`]: where the sessions come from (a plain `Client`, or a `SessionManager`
//!   with its next client after an expiry), paced so a recipe never spins on sessions that
//!   die at once.
//! - [`Background`]: the task's lifecycle: spawn, stop, `close` (stop and wait), cancel on
//!   drop.
//! - [`Events`]: one consumer's stream of a broadcast of events, with lag reported in the
//!   stream.
//! - [`Following`]: a value re-read after each event and published as `Transitions`.
//!
//! A base room: imports only `error` and `retry`. Inside: `source`, `task`, `events` and
//! `follow` import nothing of each other.

mod events;
mod follow;
mod source;
mod task;

pub(crate) use events::Events;
pub(crate) use follow::Following;
pub(crate) use source::{NoNext, Sessions, Source};
pub(crate) use task::Background;
