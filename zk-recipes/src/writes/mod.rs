//! Writes that are safe to retry, for a user's own nodes (Curator's protected create,
//! `orSetData`, `creatingParentContainersIfNeeded`, `quietly()`, `guaranteed()` delete).
//!
//! A write whose reply is lost with the connection may or may not have been applied, and
//! [`zk_client::Client`] never re-sends one (ZOOKEEPER-22). These functions decide, for each
//! kind of write, how to find out after the reconnect and finish the job without a second
//! node or an overwrite the caller did not ask for:
//!
//! | write | after a lost reply | Curator |
//! |---|---|---|
//! | [`create_protected`] (any mode, sequential or not) | lists the parent and finds the node by the guid in its name (`_c_<guid>-`) | `create().withProtection()` |
//! | [`create_all`] | `NodeExists`: ours when it holds our data at version 0 (an ephemeral node: owned by our session) | `create().idempotent().creatingParentContainersIfNeeded()` |
//! | [`create_quietly`] | as `create_all`; a node someone else made is `Ok(None)` | `create()` ignoring `NodeExistsException` |
//! | [`create_or_set`], [`set_or_create`] | the create is tried again (`NodeExists` turns it into a set); a set is read back and sent again unless the node already holds our data | `create().orSetData()` |
//! | [`set_data`] | versioned: ours when the node is at the next version with our data, sent again when still at the old version | `setData().idempotent()` |
//! | [`delete_quietly`] | `NoNode` after a lost reply is success | `delete().quietly()` |
//! | [`GuaranteedDelete`] | keeps trying in the background, through reconnects and (with a `SessionManager`) new sessions, paced | `delete().guaranteed()` |
//! | [`retry()`] / [`Retrier`] (also on a `SessionManager`'s sessions) of an [`Idempotent`] op ([`GetData`], [`Exists`], [`GetChildren`], [`SetData`], [`Delete`], [`ProtectedCreate`], [`GuardedMulti`]) | each op type says how it finds out (see [`Idempotent`]); a plain create or an unversioned set has no op type and does not compile | `RetryLoop` with a `RetryPolicy` (which retries anything) |
//!
//! They live in zk-recipes, not zk-client, because each one is a retry loop: it waits for
//! reconnects, paces its tries and ends with [`Error::GaveUp`](crate::Error::GaveUp) after
//! the crate's bound, and the protected create is the one the recipes' queues use
//! (`queue/create.rs`). zk-client stays a client that sends each request once.
//!
//! Every function waits out connection losses on the same session; the session's end is the
//! client's terminal error (`SessionExpired`, `Closed`, `AuthFailed`), never retried on
//! another session, except by [`GuaranteedDelete::new_managed`], which follows a
//! [`SessionManager`](zk_client::SessionManager)'s sessions.
//!
//! ```no_run
//! # async fn f(client: zk_client::Client) -> zk_recipes::Result<()> {
//! use zk_client::CreateOptions;
//! use zk_recipes::writes;
//!
//! // One node, whatever happens to the reply, in Curator's protected name format.
//! let made = writes::create_protected(
//!     &client,
//!     "/jobs/job-",
//!     b"payload",
//!     &CreateOptions::ephemeral_sequential(),
//! )
//! .await?;
//! assert!(made.name().starts_with("_c_"));
//!
//! // Upserts.
//! writes::create_or_set(&client, "/config/limit", b"42", &CreateOptions::persistent()).await?;
//!
//! // Deleted eventually, whatever happens to the connection; the outcome when wanted.
//! let delete = writes::GuaranteedDelete::new(client.clone(), "/config/limit")?;
//! let outcome = delete.outcome().await?;
//! # let _ = outcome;
//! # Ok(()) }
//! ```
//!
//! Inside: `create` and `delete` import nothing of each other; `set` imports `create`'s
//! idempotent create (the upserts); `idempotent` (the op types) imports the output types of
//! `create` and `delete`; `retry` (the loop and its policy) imports `idempotent`.

mod create;
mod delete;
mod idempotent;
mod retry;
mod set;

pub use create::{create_all, create_protected, create_quietly, Created};
pub use delete::{delete_quietly, DeleteOutcome, GuaranteedDelete};
pub use idempotent::{
    Committed, Delete, Exists, GetChildren, GetData, GuardedMulti, Idempotent, ProtectedCreate,
    SetData,
};
pub use retry::{retry, Retrier, RetryPolicy};
pub use set::{create_or_set, set_data, set_or_create};
