//! Locks.

pub mod naming;
