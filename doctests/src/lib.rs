//! The Rust examples of the top-level README and of the book in `docs/`, compiled as doctests
//! (never published).
//!
//! Each Markdown file with a ```` ```rust ```` block is included below as the documentation of
//! an item that exists only under `cfg(doctest)`, so `cargo test --workspace` (what
//! `scripts/test.sh` runs) compiles every example, and `cargo test -p doctests --doc` compiles
//! only these. Examples that need a server are `no_run`: compiled, not run. A file of `docs/`
//! with a Rust block that is missing here fails `scripts/check_docs.py`.
#![forbid(unsafe_code)]

/// `README.md`.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct Readme;

/// `docs/client.md`.
#[cfg(doctest)]
#[doc = include_str!("../../docs/client.md")]
pub struct Client;

/// `docs/recipes.md`.
#[cfg(doctest)]
#[doc = include_str!("../../docs/recipes.md")]
pub struct Recipes;

/// `docs/security.md`.
#[cfg(doctest)]
#[doc = include_str!("../../docs/security.md")]
pub struct Security;

/// `docs/metrics-tracing.md`.
#[cfg(doctest)]
#[doc = include_str!("../../docs/metrics-tracing.md")]
pub struct MetricsTracing;

/// `docs/ensemble.md`.
#[cfg(doctest)]
#[doc = include_str!("../../docs/ensemble.md")]
pub struct Ensemble;

/// `docs/operator-commands.md`.
#[cfg(doctest)]
#[doc = include_str!("../../docs/operator-commands.md")]
pub struct OperatorCommands;

/// `docs/framework.md`.
#[cfg(doctest)]
#[doc = include_str!("../../docs/framework.md")]
pub struct Framework;

/// `docs/servers.md`.
#[cfg(doctest)]
#[doc = include_str!("../../docs/servers.md")]
pub struct Servers;
