//! Coordination recipes on [`zk_client`], in Apache Curator's node layouts so that Rust and
//! Java services share them: locks, semaphores, leader election, caches, persistent nodes,
//! group membership, shared values and counters, barriers and service discovery.
//!
//! See ZooKeeper's "Recipes and Solutions" page for the algorithms. Every family lives in a
//! module of its own, named for what it is (like Curator's packages); the crate's root holds
//! only what all of them share ([`Error`], [`Result`], [`LossReason`], [`Participant`]).
//!
//! | module | recipes | Curator |
//! |---|---|---|
//! | [`lock`] | [`FairLock`](lock::FairLock), [`ReadWriteLock`](lock::ReadWriteLock), [`ExclusiveLock`](lock::ExclusiveLock), [`MultiLock`](lock::MultiLock); the held lock [`LockGuard`](lock::LockGuard) (fencing token, fenced writes, loss signal), [`revoke`](lock::revoke) | `InterProcessMutex`, `InterProcessReadWriteLock`, `InterProcessMultiLock`, `Revoker` |
//! | [`semaphore`] | [`Semaphore`](semaphore::Semaphore), [`SemaphoreMutex`](semaphore::SemaphoreMutex), each lease a [`Lease`](semaphore::Lease) | `InterProcessSemaphoreV2`, `InterProcessSemaphoreMutex` |
//! | [`leader`] | [`LeaderLatch`](leader::LeaderLatch), [`LeaderSelector`](leader::LeaderSelector) | `LeaderLatch`, `LeaderSelector` |
//! | [`cache`] | [`Cache`](cache::Cache), [`NodeCache`](cache::NodeCache), [`ChildrenCache`](cache::ChildrenCache) | `CuratorCache`, `NodeCache`, `PathChildrenCache`, `TreeCache` |
//! | [`node`] | [`PersistentNode`](node::PersistentNode), [`PersistentTtlNode`](node::PersistentTtlNode) | `PersistentNode`, `PersistentTtlNode` |
//! | [`group`] | [`GroupMember`](group::GroupMember) | `GroupMember` |
//! | [`shared`] | [`SharedValue`](shared::SharedValue), [`SharedCount`](shared::SharedCount), [`DistributedAtomicLong`](shared::DistributedAtomicLong) | the same names |
//! | [`barrier`] | [`DistributedBarrier`](barrier::DistributedBarrier), [`DistributedDoubleBarrier`](barrier::DistributedDoubleBarrier) | the same names |
//! | `discovery` (feature `discovery`) | `ServiceDiscovery`, `ServiceCache`, `ServiceProvider` | curator-x-discovery |
//! | [`layout`] | what a queue node's name says, who waits for whom | (for tools) |
//! | [`model`] | typed nodes: [`Model`](model::Model) (get, versioned set, compare-and-set `update`), [`ModelCache`](model::ModelCache); codecs [`Raw`](model::Raw), `Json` (feature `json`); [`SchemaSet`](model::SchemaSet) | x-async `ModeledFramework`, `CachedModeledFramework`, `SchemaSet` |
//! | [`writes`] | writes safe to retry: [`create_protected`](writes::create_protected), [`create_or_set`](writes::create_or_set), [`create_all`](writes::create_all), `*_quietly`, [`GuaranteedDelete`](writes::GuaranteedDelete); the typed retry helper [`retry`](writes::retry()) / [`Retrier`](writes::Retrier) of [`Idempotent`](writes::Idempotent) ops | `withProtection()`, `orSetData()`, `idempotent()`, `quietly()`, `guaranteed()`, `RetryLoop` |
//!
//! | lock | nodes | fair | wakes on release | use when |
//! |---|---|---|---|---|
//! | [`FairLock`](lock::FairLock) | `<path>/_c_<uuid>-lock-<seq>` | yes | the next waiter only | general mutual exclusion, many contenders, mixing with Curator |
//! | [`ReadWriteLock`](lock::ReadWriteLock) | `__READ__` / `__WRIT__` queue | yes | only the waiters it unblocks | many readers, occasional writers |
//! | [`ExclusiveLock`](lock::ExclusiveLock) | one node at `<path>` | no | every waiter | rare contention, smallest cost |
//! | [`SemaphoreMutex`](semaphore::SemaphoreMutex) | `<path>/locks`, `<path>/leases` | yes | one waiter | Curator's `InterProcessSemaphoreMutex` |
//!
//! # Conventions
//!
//! Every public item follows one table (`scripts/api_conventions.py` checks the
//! public-API snapshots against it in CI):
//!
//! | to... | write | on |
//! |---|---|---|
//! | follow a value (its current value, then every transition in order, lag counted) | `watch() -> Transitions<T>` ([`zk_client::Transitions`]) | [`zk_client::Client::watch`] (the session's state), [`LockGuard`](lock::LockGuard), [`LeaderLatch`](leader::LeaderLatch), [`LeaderSelector`](leader::LeaderSelector), the caches, [`GroupMember`](group::GroupMember), `ServiceCache`, [`SharedValue`](shared::SharedValue), [`SharedCount`](shared::SharedCount) (and `SessionManager::watch` follows the manager's sessions) |
//! | read that value now | a getter named for it (`state()`, `leadership()`, `value()`, `instances()`, `current_members()`) | the same types |
//! | follow a stream of events (with `Lagged(n)` when a consumer falls behind) | `events()` | the caches, [`PersistentNode`](node::PersistentNode) |
//! | wait until a background recipe is ready (and ask without waiting: `is_ready()` on the caches) | `ready()` / `ready_timeout(d)` | the caches (first load), `ServiceCache`, [`PersistentNode`](node::PersistentNode) (node created: its path), [`GroupMember`](group::GroupMember) (joined), [`LeaderLatch`](leader::LeaderLatch) (leading: the term) |
//! | any other wait | `x()` / `x_timeout(d)` ([`Error::Timeout`] when it passes, nothing of ours left behind) | `acquire`, `acquire_many`, `enter`, `leave`, `wait_on_barrier` |
//! | make one on one session | `X::new(client: Client, ..)`, or `X::builder(..)` ... `.build(client)` | locks, semaphores, barriers, caches, shared values |
//! | make one that follows a [`SessionManager`](zk_client::SessionManager)'s sessions (re-created, re-joined, resynced after an expiry) | `X::new_managed(&manager, ..)`, or `X::builder(..)` ... `.build_managed(&manager, ..)` | caches, shared values, persistent nodes, group members, leader latch and selector, service discovery, [`FairLock`](lock::FairLock) (each acquisition on the manager's current session) |
//! | stop what runs in the background | `async fn close(&self) -> Result<()>`; dropping the (last) handle does the same in the background | caches, persistent nodes, group members, leader latch and selector, shared values and counts, service discovery and caches |
//!
//! Constructors are plain `fn`s that start the background work and return at once (wait
//! with `ready()`), except where the handle needs an answer first: `SharedValue::new`
//! (its first read) and `GroupMember::new_managed` (the local address) are `async`. Locks
//! and other recipes that run nothing in the background have no `close`.
//!
//! Errors: a retry loop that runs out ends with [`Error::GaveUp`], never `Timeout`. The end
//! of a session is the client's terminal error ([`Error::Client`] with
//! [`zk_client::Error::SessionExpired`], `AuthFailed` or `Closed`) everywhere, except at a
//! lock's edges (acquiring, holding, releasing a lock, a lease or a queue position), where it
//! is [`Error::LockLost`]`(`[`LossReason::SessionEnded`]`)`.
//!
//! # Layout of the crate
//!
//! Families stand on base rooms; the import rule is one-way:
//!
//! ```text
//!  families   lock  semaphore  leader  cache  node  group  shared  barrier  discovery  layout
//!             writes  model
//!                         |  (each imports the base, and other families' public types)
//!                         v
//!  base       guard, state, revoke, metrics   a held queue node and what it observes
//!             queue/   sequential queues: naming, protected create (guid in the name or
//!                      owner session), find-own, order, wait for the node ahead,
//!                      participants, guaranteed delete, cleanup of abandoned attempts
//!             session/ what follows a session in the background: the session source
//!                      (a Client, or a SessionManager's next client after an expiry,
//!                      paced), the task lifecycle (spawn, stop, close, cancel on drop),
//!                      the event stream with lag reporting, a value followed over events
//!             retry    turns, the bound, waiting out a connection loss, pacing, timeouts
//!             path     join, parent, name, checks
//!             error
//! ```
//!
//! - A base room imports only the rooms listed below it, never a family.
//! - A family imports the base and other families' *public* types only (composition, as
//!   Curator's `GroupMember` is a `PersistentNode` plus a cache): `crate::cache::ChildrenCache`,
//!   never `crate::cache::task`.
//! - No import loop anywhere, between folders or between the files of one folder
//!   (`scripts/import_graph.py` checks `use crate::..`/`super::..` paths in CI).
//!
//! # Holding a lock safely
//!
//! A ZooKeeper lock is only as good as the session behind it. The guard's [`LockState`](lock::LockState) tells
//! the holder what it can know:
//!
//! - `Held`: our node was seen on the connection the client has now.
//! - `Suspended`: the connection is lost, or was lost since the node was last seen. The
//!   session may live on (the lock is still ours when it comes back) or may expire (then it
//!   has passed on). Stop work that needs the lock until the state is `Held` again.
//! - `Lost`: the session ended or the node was deleted. Abort the work; never resume it
//!   without acquiring again.
//!
//! [`LockGuard::watch`](lock::LockGuard::watch) reports every change in order, so a suspension that is over
//! before the holder looks is still seen. It is zk-client's one transition type,
//! [`zk_client::Transitions`] (current value, `changed()`, a `Stream` of every transition, lag
//! counted), the same that follows the session ([`zk_client::Client::watch`]) and
//! leadership ([`LeaderLatch::watch`](leader::LeaderLatch::watch)). [`LockGuard::release`](lock::LockGuard::release) tells whether the lock was
//! still ours up to the release ([`Released`](lock::Released)).
//!
//! Session changes are always reflected. To notice a deletion of the node (an operator, a
//! revocation), the guard watches its node from the first time its state is observed
//! ([`LockGuard::state`](lock::LockGuard::state), [`LockGuard::lost`](lock::LockGuard::lost), ...); a guard nobody observes costs no request
//! beyond the acquisition and the release.
//!
//! For writes to ZooKeeper itself, [`LockGuard::fenced`](lock::LockGuard::fenced) runs them in one transaction with a
//! check of the lock node, so they cannot apply after the lock is lost. For other resources,
//! pass [`LockGuard::fencing_token`](lock::LockGuard::fencing_token) along and have the resource reject smaller tokens.
//! Nothing done under a lock is ever re-sent on a new session: the client does not retry
//! after a connection loss and never opens a new session by itself.
//!
//! # Timeouts
//!
//! Every wait comes as `x()` (no limit) and `x_timeout(Duration)` ([`Error::Timeout`] when
//! it passes, nothing of ours left behind; see [Conventions](#conventions)): `acquire` /
//! `acquire_timeout`, [`Semaphore::acquire_many`](semaphore::Semaphore::acquire_many) / [`Semaphore::acquire_many_timeout`](semaphore::Semaphore::acquire_many_timeout),
//! [`LeaderLatch::ready`](leader::LeaderLatch::ready) / [`LeaderLatch::ready_timeout`](leader::LeaderLatch::ready_timeout). Deadlines
//! (`Option<Instant>`) appear only in [`Lock::acquire_until`](lock::Lock::acquire_until), to compose locks
//! ([`MultiLock`](lock::MultiLock)). A retry loop that runs out ends with [`Error::GaveUp`], never `Timeout`.
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
//! the guid, instead of creating a second node that would wait behind a ghost forever. The
//! same create serves every recipe that makes a node of its own: a protected
//! [`PersistentNode`](node::PersistentNode) is found by its guid, a persistent node's fixed
//! name and a double barrier member's UUID name by the name and the owner session.
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
pub mod leader;
pub mod lock;
mod metrics;
pub mod model;
pub mod node;
mod path;
mod queue;
mod retry;
mod revoke;
pub mod semaphore;
mod session;
pub mod shared;
mod state;
pub mod writes;

pub use error::{Error, LossReason, Result};
pub use queue::Participant;

/// The crate README's example (the one crates.io shows), compiled as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct CrateReadmeDoctests;
