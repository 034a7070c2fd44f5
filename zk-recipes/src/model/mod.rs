//! Typed nodes: a [`Model<T, C>`] reads and writes one node's data as a `T` through a
//! [`Codec`] (JSON with `Json`, feature `json`; bytes with [`Raw`]; or your own), with
//! versioned writes and a read-modify-write [`update`](Model::update) that retries on
//! `BadVersion`; a [`ModelCache`] is the same typed view over a [`Cache`](crate::cache::Cache).
//! Curator's x-async `ModeledFramework` and `CachedModeledFramework`, in Rust's terms.
//!
//! Writes go through [`writes`](crate::writes), so a lost reply never applies an update
//! twice and never overwrites someone else's later write. Compression composes: a model
//! or a cache given a [`Compression`](zk_client::compression::Compression) stores the
//! encoded bytes compressed (Curator's `compressed()`) and decompresses what it reads.
//!
//! ```no_run
//! # #[cfg(feature = "json")]
//! # async fn f(client: zk_client::Client) -> zk_recipes::Result<()> {
//! use serde::{Deserialize, Serialize};
//! use zk_recipes::model::{Json, Model};
//!
//! #[derive(Serialize, Deserialize, Clone, Debug, Default)]
//! struct Limits {
//!     max_jobs: u32,
//! }
//!
//! let limits = Model::new(client, "/app/limits", Json)?;
//! limits.create(&Limits::default()).await?;
//! // Compare-and-set, retried when another writer got there first.
//! let now = limits.update(|mut l: Limits| { l.max_jobs += 1; l }).await?;
//! println!("{} at version {}", now.value.max_jobs, now.stat.version);
//! # Ok(()) }
//! ```
//!
//! Writes can be checked against a [`SchemaSet`] (Curator's `SchemaSet`): per path pattern,
//! which kinds of node (ephemeral, sequential) are allowed, whether they may be deleted, and
//! a check of the data; a write that breaks it is refused with
//! [`Error::Schema`](crate::Error::Schema) before anything is sent ([`Model::schemas`]).
//!
//! Inside: `codec` and `schema` at the bottom; `cache` imports `codec`; `node` imports all
//! three.

mod cache;
mod codec;
mod node;
mod schema;

pub use cache::ModelCache;
#[cfg(feature = "json")]
pub use codec::Json;
pub use codec::{Codec, CodecError, Raw};
pub use node::{Model, Versioned};
pub use schema::{Allowance, Schema, SchemaSet};
