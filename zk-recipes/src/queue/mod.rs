//! The queue kernel: the sequential-queue protocol every recipe is built on.
//!
//! Locks, semaphores and leader elections are all queues of ephemeral nodes under one parent,
//! in Curator's layouts. This module owns everything they share, once:
//!
//! - [`naming`]: node names (Curator's protected `_c_<uuid>-<name><seq>`, kazoo's and
//!   go-zookeeper's), sequence parsing, the queue orders and a contender's position.
//! - [`create_marked`]: the protected create (any data, any mode and options), finding our
//!   node after a lost reply by its guid or by its name and owner ([`Mark`]); used by the
//!   queues, `PersistentNode` and the double barrier. [`Protected`]: the nodes of one guid
//!   (names, find, delete all).
//! - [`locate`](locate::locate): our place in a listing (the rules of `naming`'s queue and
//!   position in one pass).
//! - [`wait_for_node`]: waiting for the node ahead (one watch, no herd).
//! - [`acquire`]: the fair queue's acquisition (create, then wait for the blocker).
//! - [`participants`]: the queue's nodes with their owner data.
//! - [`delete_guaranteed`]: the guaranteed delete ([`Released`] says who removed the node).
//! - [`OnDrop`], [`Orphan`], [`detached`]: the cleanup of an attempt that was abandoned
//!   (error, timeout, future dropped).
//!
//! Inside: `naming`, `owner`, `locate`, `wait` and `delete` at the bottom; `create` above `delete`;
//! `cleanup` above `create`; `acquire` and `participants` on top.
//!
//! The recipes (`lock/`, `semaphore/`, `leader/`) import this module (and `retry`, `error`,
//! the guard and its state), never each other's internals.

mod acquire;
mod cleanup;
mod create;
mod delete;
mod locate;
pub(crate) mod naming;
mod owner;
mod participants;
mod wait;

pub(crate) use acquire::{acquire, create_node, QueueSpec};
pub(crate) use cleanup::{detached, in_background, BoxTask, OnDrop, Orphan};
pub(crate) use create::{
    create_if_absent, create_marked, ensure_containers, find_sequential, Mark, Protected,
};
pub(crate) use delete::delete_guaranteed;
pub use delete::Released;
pub(crate) use owner::local_address;
pub use participants::Participant;
pub(crate) use participants::{list, participants, Order};
pub(crate) use wait::wait_for_node;
pub use wait::HandOff;
