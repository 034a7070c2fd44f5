//! Shared values in Curator's formats: [`SharedValue`] and [`SharedCount`] (a watched node with
//! a versioned compare-and-set) and [`DistributedAtomicLong`] (an optimistic 8-byte counter
//! with a promoted-to-lock fallback).
//!
//! | recipe | Curator class | node | data |
//! |---|---|---|---|
//! | [`SharedValue`] | `SharedValue` | PERSISTENT at `path` | the bytes |
//! | [`SharedCount`] | `SharedCount` | PERSISTENT at `path` | 4 bytes, big-endian `int` |
//! | [`DistributedAtomicLong`] | `DistributedAtomicLong` | PERSISTENT at `path` | 8 bytes, big-endian `long` |
//!
//! Parents are created as containers, as Curator creates them; a Java process using the
//! Curator class on the same path shares the value with us.

mod atomic;
mod count;
mod value;

pub use atomic::{AtomicRetry, AtomicStats, AtomicValue, DistributedAtomicLong, PromotedToLock};
pub use count::SharedCount;
pub use value::{SharedState, SharedValue, VersionedValue};
