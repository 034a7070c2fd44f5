//! Caches, membership, shared values, barriers, discovery and leader election on real
//! servers, under faults.
//!
//! One test binary; each module was a binary of its own before (see `docs/testing.md`).

mod barrier;
mod cache;
mod cache_faults;
mod discovery;
mod group;
mod leader;
mod leader_ensemble;
mod leader_selector;
mod membership_quorum;
mod persistent_node;
mod poison;
mod shared;
