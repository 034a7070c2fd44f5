//! The `zkrs` binary against real servers: every command with `--json` parsed, the exit codes,
//! `watch` and `locks --watch`, `health` on an ensemble, TLS, and a lock queue shared with real
//! Curator and kazoo processes (`interop/`). One test binary, one module per topic.

mod common;
mod health;
mod locks_interop;
mod nodes;
mod reconfig;
mod secure;
mod services;
mod streams;
