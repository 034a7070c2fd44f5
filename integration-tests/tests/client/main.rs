//! zk-client against real ZooKeeper servers: nodes, watches, sessions, failover, limits,
//! pipelining, compression, DNS, server flavours (the metrics test is a binary of its own:
//! it installs the process's one global recorder).
//!
//! One test binary; each module was a binary of its own before (see `docs/testing.md`).

mod api;
mod compression;
mod dns;
mod failover;
mod flavour_events;
mod flavour_recipes;
mod flavours;
mod limits;
mod multi;
mod nodes;
mod pipelining;
mod poison;
mod session;
mod session_manager;
mod sessions_curve;
mod watch_leaks;
mod watch_matrix;
mod watches;
mod watches_curve;
