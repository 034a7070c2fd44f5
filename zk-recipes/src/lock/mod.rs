//! Distributed locks in Curator's layouts, the guard that proves holding one
//! ([`LockGuard`]: fencing token, fenced writes, [`LockState`] followed with
//! [`LockGuard::watch`]) and Curator's cooperative revocation ([`revoke`]).
//!
//! | lock | nodes | fair | wakes on release | use when |
//! |---|---|---|---|---|
//! | [`FairLock`] | `<path>/_c_<uuid>-lock-<seq>` | yes | the next waiter only | general mutual exclusion, many contenders, mixing with Curator |
//! | [`ReadWriteLock`] | `__READ__` / `__WRIT__` queue | yes | only the waiters it unblocks | many readers, occasional writers |
//! | [`ExclusiveLock`] | one node at `<path>` | no | every waiter | rare contention, smallest cost |

mod exclusive;
mod fair;
mod multi;
mod shared;
mod support;

pub use crate::guard::LockGuard;
pub use crate::queue::{HandOff, Released};
pub use crate::revoke::{revoke, REVOKE_MESSAGE};
pub use crate::state::LockState;
pub use exclusive::ExclusiveLock;
pub use fair::FairLock;
pub use multi::{AcquireFuture, Lock, MultiGuard, MultiLock};
pub use shared::ReadWriteLock;
