//! Our recipes beside the real Curator and kazoo libraries, on one server.
//!
//! One test binary; each module was a binary of its own before (see `docs/testing.md`).

mod curator;
mod curator_semaphore;
mod kazoo;
mod leader_curator;
