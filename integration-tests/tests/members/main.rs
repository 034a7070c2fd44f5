//! Caches, membership, shared values, barriers, discovery and leader election on real
//! servers, under faults; and the framework layer (safe writes, typed nodes) beside Curator
//! 5.4 and Jackson.
//!
//! One test binary; each module was a binary of its own before (see `docs/testing.md`).

mod barrier;
mod cache;
mod cache_compressed;
mod cache_faults;
mod deletes;
mod discovery;
mod group;
mod leader;
mod leader_ensemble;
mod leader_selector;
mod membership_quorum;
mod models;
mod persistent_node;
mod poison;
mod retries;
mod shared;
mod support;
mod writes;
