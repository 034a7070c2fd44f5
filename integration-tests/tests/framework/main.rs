//! The framework layer on real servers: writes that are safe to retry (protected create,
//! upserts, versioned sets, guaranteed deletes) through lost replies, and typed nodes, beside
//! Curator 5.4 and Jackson.
//!
//! One test binary, one module per topic (see `docs/testing.md`).

mod deletes;
mod models;
mod support;
mod writes;
