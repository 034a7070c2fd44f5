//! Ensembles and operators: four-letter words, host updates, reconfiguration, and the
//! harness itself (servers, ensembles, the fault proxy).
//!
//! One test binary; each module was a binary of its own before (see `docs/testing.md`).

mod admin;
mod admin_http;
mod harness_ensemble;
mod harness_proxy;
mod harness_server;
mod hosts;
mod rebalance;
mod reconfig;
mod tracking;
mod tracking_common;
