//! Coordination recipes on [`zk_client`]: distributed locks that interoperate with Apache
//! Curator and never lose a lock silently.
//!
//! See ZooKeeper's "Recipes and Solutions" page for the algorithms; the node layout follows
//! Curator so Rust and Java processes can share one lock.
//!
//! - [`FairLock`]: a FIFO queue of ephemeral-sequential nodes, each waiter watching only its
//!   predecessor (no herd effect); re-entrant per task; timeouts; cancellation safe.
//! - [`ReadWriteLock`]: shared readers, exclusive writers, in one fair queue.
//! - [`ExclusiveLock`]: one ephemeral node, the simplest lock.
//! - [`LockGuard`]: the proof of holding: fencing token, fenced writes, loss signalling.
//! - [`Semaphore`] / [`SemaphoreMutex`]: leases (Curator's `InterProcessSemaphoreV2`
//!   layout), each a [`Lease`] guard with the same loss signal; cancellation safe.
//! - [`MultiLock`]: several locks taken in order, released in reverse, all or nothing.
//! - Owner data and [`Participant`]s: nodes carry Curator's default data (the local address)
//!   or a chosen id, and every lock lists its queue; [`revoke`] and
//!   [`LockGuard::revocation_requested`] are Curator's cooperative revocation.
//! - [`LeaderLatch`]: leader election in Curator's `LeaderLatch` layout, re-joining after
//!   an expiry on a [`zk_client::SessionManager`]; [`Leadership`] is followed with the same
//!   transition type as a lock's state.
//! - [`LeaderSelector`]: runs a future while leader (Curator's `LeaderSelector` layout),
//!   configured with [`LeaderSelector::builder`].
//! - Membership and shared values in Curator's layouts: [`node::PersistentNode`],
//!   [`group::GroupMember`], service discovery (`discovery`, feature `discovery`),
//!   [`shared`] counters and values, [`barrier`]s.
//! - [`layout`]: what a queue node's name says (library, kind, guid, sequence) and who waits
//!   for whom, by the rules the recipes use, for tools that read any library's queues.
//!
//! Every public item has one path: the locks, semaphores and leader election are at the
//! crate's root (their modules are private); the newer families live in their own modules
//! ([`cache`], [`node`], [`group`], [`shared`], [`barrier`], `discovery`).
//!
//! | lock | nodes | fair | wakes on release | use when |
//! |---|---|---|---|---|
//! | [`FairLock`] | `<path>/_c_<uuid>-lock-<seq>` | yes | the next waiter only | general mutual exclusion, many contenders, mixing with Curator |
//! | [`ReadWriteLock`] | `__READ__` / `__WRIT__` queue | yes | only the waiters it unblocks | many readers, occasional writers |
//! | [`ExclusiveLock`] | one node at `<path>` | no | every waiter | rare contention, smallest cost |
//! | [`SemaphoreMutex`] | `<path>/locks`, `<path>/leases` | yes | one waiter | Curator's `InterProcessSemaphoreMutex` |
//!
//! # Layout of the crate
//!
//! One queue kernel (`queue/`: node names, the protected create, find-own-by-guid, queue
//! order, the wait for the node ahead, participants, the guaranteed delete and the cleanup
//! of abandoned attempts) under every recipe (`lock/`, `semaphore/`, `leader/`), which
//! never import each other's internals; one retry bound ending in [`Error::GaveUp`].
//!
//! # Holding a lock safely
//!
//! A ZooKeeper lock is only as good as the session behind it. The guard's [`LockState`] tells
//! the holder what it can know:
//!
//! - `Held`: our node was seen on the connection the client has now.
//! - `Suspended`: the connection is lost, or was lost since the node was last seen. The
//!   session may live on (the lock is still ours when it comes back) or may expire (then it
//!   has passed on). Stop work that needs the lock until the state is `Held` again.
//! - `Lost`: the session ended or the node was deleted. Abort the work; never resume it
//!   without acquiring again.
//!
//! [`LockGuard::state_watcher`] reports every change in order, so a suspension that is over
//! before the holder looks is still seen. It is zk-client's one transition type,
//! [`zk_client::Transitions`] (current value, `changed()`, a `Stream` of every transition, lag
//! counted), the same that follows the session ([`zk_client::Client::state_watcher`]) and
//! leadership ([`LeaderLatch::watch`]). [`LockGuard::release`] tells whether the lock was
//! still ours up to the release ([`Released`]).
//!
//! Session changes are always reflected. To notice a deletion of the node (an operator, a
//! revocation), the guard watches its node from the first time its state is observed
//! ([`LockGuard::state`], [`LockGuard::lost`], ...); a guard nobody observes costs no request
//! beyond the acquisition and the release.
//!
//! For writes to ZooKeeper itself, [`LockGuard::fenced`] runs them in one transaction with a
//! check of the lock node, so they cannot apply after the lock is lost. For other resources,
//! pass [`LockGuard::fencing_token`] along and have the resource reject smaller tokens.
//! Nothing done under a lock is ever re-sent on a new session: the client does not retry
//! after a connection loss and never opens a new session by itself.
//!
//! # Timeouts
//!
//! One convention: every wait comes as `x()` (no limit) and `x_timeout(Duration)`
//! ([`Error::Timeout`] when it passes, nothing of ours left behind): `acquire` /
//! `acquire_timeout`, [`Semaphore::acquire_many`] / [`Semaphore::acquire_many_timeout`],
//! [`LeaderLatch::await_leadership`] / [`LeaderLatch::await_leadership_timeout`]. Deadlines
//! (`Option<Instant>`) appear only in [`Lock::acquire_until`], to compose locks
//! ([`MultiLock`]). A retry loop that runs out ends with [`Error::GaveUp`], never `Timeout`.
//!
//! # When requests are sent, and cancellation
//!
//! The recipes' calls are `async fn`s: unlike [`zk_client::Client`]'s operations, which queue
//! their request when called, a lock call sends nothing until its future is first polled.
//! `let r = guard.release();` releases nothing until `r` is awaited (and if `r` is dropped
//! unpolled, the guard it holds is dropped, which releases in the background). Spawn the call
//! (`tokio::spawn(guard.release())`) to start it at once.
//!
//! Dropping a pending call is always safe: a dropped acquisition removes its queue node in the
//! background (through reconnects), a dropped release still deletes the node, and a dropped
//! guard releases in the background. Each method's `# Cancel safety` section says what is lost
//! (only the outcome).
//!
//! # The protected create
//!
//! Each queue node's name carries a fresh guid (`_c_<uuid>-`). When a create's reply is lost
//! with the connection, the lock lists the parent after the reconnect and finds its node by
//! the guid, instead of creating a second node that would wait behind a ghost forever.
#![forbid(unsafe_code)]
// docs.rs (`--cfg docsrs`, nightly): label items that need a Cargo feature.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod barrier;
pub mod cache;
#[cfg(feature = "discovery")]
pub mod discovery;
mod error;
pub mod group;
mod guard;
pub mod layout;
mod leader;
mod lock;
mod metrics;
pub mod node;
mod queue;
mod retry;
mod revoke;
mod semaphore;
pub mod shared;
mod state;

pub use error::{Error, LossReason, Result};
pub use guard::LockGuard;
pub use leader::{
    LeaderLatch, LeaderSelector, LeaderSelectorBuilder, Leadership, LeadershipPolicy, Term,
};
pub use lock::{
    AcquireFuture, ExclusiveLock, FairLock, Lock, MultiGuard, MultiLock, ReadWriteLock,
};
pub use queue::{HandOff, Participant, Released};
pub use revoke::{revoke, REVOKE_MESSAGE};
pub use semaphore::{Lease, Semaphore, SemaphoreMutex};
pub use state::LockState;

/// The crate README's example (the one crates.io shows), compiled as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct CrateReadmeDoctests;
