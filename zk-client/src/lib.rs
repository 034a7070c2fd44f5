//! An async [ZooKeeper](https://zookeeper.apache.org) client for tokio.
//!
//! One task owns the connection; [`Client`] handles are cheap to clone and send requests to
//! it. The protocol state machine (`session`) does no IO, so its behaviour is tested
//! without sockets; `zk-proto` encodes and decodes the packets.
//!
//! # Example
//!
//! ```no_run
//! use zk_client::{Client, CreateOptions, EventType};
//!
//! # async fn example() -> zk_client::Result<()> {
//! let client = Client::connect("127.0.0.1:2181/my-app").await?;
//! client.create_all("/config", b"v1", &CreateOptions::persistent()).await?;
//!
//! let (data, stat, watcher) = client.get_data_watch("/config").await?;
//! assert_eq!(&data[..], b"v1");
//!
//! client.set_data("/config", b"v2", Some(stat.version)).await?;
//! let event = watcher.await?;
//! assert_eq!(event.event_type, EventType::NodeDataChanged);
//! assert_eq!(event.path, "/config"); // relative to the chroot
//!
//! client.close().await?;
//! # Ok(()) }
//! ```
//!
//! # Ordering
//!
//! Operations are plain `fn`s returning `impl Future + Send + 'static`: the request is
//! queued **when the method is called**, not when the future is first polled. Requests of
//! one client (and all its clones) reach the server in call order, and ZooKeeper applies a
//! session's requests in the order received, so
//!
//! ```no_run
//! # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
//! let write = client.set_data("/a", b"1", None);
//! let read = client.get_data("/a"); // sees "1" (or a later value)
//! let (_, (data, _)) = tokio::try_join!(write, read)?;
//! # Ok(()) }
//! ```
//!
//! Replies come back in the same order. A watch event is delivered to its [`Watcher`]
//! before the reply of any later read that sees the change, as the protocol promises.
//!
//! # Cancellation
//!
//! Dropping an operation's future never cancels the request: it was queued (and may already
//! be applied) when the method was called; only its reply is discarded. A `*_watch` call
//! whose future is dropped leaves no watch behind (the client removes it when the reply
//! comes; on a server without `removeWatches`, ZooKeeper 3.4 say, the server keeps it until
//! it fires and the client drops its event). Waiting helpers ([`StateWatcher::changed`],
//! [`PersistentWatcher::next`], [`Client::wait_connected`]) are cancel safe. Calls of several
//! steps ([`Client::create_all`], [`Client::delete_all`]) say in their own `# Cancel safety`
//! section which steps a dropped future leaves undone; every method has one.
//!
//! # Pipelining
//!
//! Any number of requests may be in flight: they are written back to back, coalesced into
//! as few writes as possible, and matched to their replies first in, first out. A reply
//! that does not answer the oldest request in flight is a protocol violation: the client
//! drops the connection and reconnects. At most
//! [`max_outstanding`](ClientBuilder::max_outstanding) requests (default 1024) are on the
//! wire; later calls wait in the client's queue, in order.
//!
//! Deep pipelines are read in rounds: while 64 or more requests are in flight, the
//! connection task reads all available replies, then sits out about a millisecond (its
//! socket taken out of the reactor) before reading again, so it is woken once per round
//! instead of once per reply segment. Client CPU per request drops several-fold (2-3 µs
//! against 8-9 µs per `getData` in `bench/`); replies may arrive up to ~2 ms later in that
//! regime. Shallower pipelines and sequential calls never wait. On an idle VM whose vCPUs
//! halt when idle, one connection's rate was measured 10-25 % lower this way, because the
//! server's own loop slows while the client sleeps; [`ClientBuilder::batch_reads`]`(false)`
//! reads every reply as it arrives instead.
//!
//! ```text
//! caller   get(a) get(b) set(c)                 ...await a ...await b ...await c
//! wire     ─[a][b][c]──────────────────────────────────────────▶
//!          ◀───────────────────────[a'][b'][c']─────────────────
//! ```
//!
//! # Where the code is
//!
//! One request, end to end, in four places:
//!
//! 1. `client/mod.rs`, `Client::request`: the operation (one file per family beside it,
//!    e.g. `client/node.rs`) has encoded its record on the caller's task; `request` wraps
//!    it in a `Request` with a reply channel (`command.rs`, the handle-to-task messages) and
//!    queues it.
//! 2. `driver/mod.rs`, the connection task: one loop that feeds the session what happened
//!    (a command, bytes read, a timer, a closed connection), writes what the session wants
//!    sent (`Session::poll_transmit`) and hands its outputs to the callers
//!    (`Session::poll_event`, `Driver::deliver`). It owns the socket (`driver/transport.rs`)
//!    and nothing else.
//! 3. `session/mod.rs`, the sans-IO core: `Session::handle_command` assigns the xid and
//!    frames the request (or queues it behind the outstanding window); `session/inbound.rs`
//!    matches each reply to the oldest request in flight (`session/pending.rs`) and routes
//!    notifications to `session/watches.rs`. Every completed reply, watch event and state
//!    change leaves through one ordered queue, `session/outbox.rs`.
//! 4. Back on the caller's task, the operation's future decodes the reply (`zk-proto`).
//!
//! Module imports go one way: `managed` (the [`SessionManager`], which builds clients) above
//! the public API (`client`, `builder`, `watcher`, `state_watcher`), `connect` wiring them to `driver`, then `session` and `hosts`
//! (no IO), then `command`, `event`, `state`, `path`, `error`; `zk-proto` at the bottom.
//!
//! # Sessions
//!
//! [`Client::connect`] waits for the first session. If the connection drops, calls in flight
//! fail with [`Error::ConnectionLoss`] (they may or may not have been applied, and are never
//! re-sent), the state becomes [`SessionState::Disconnected`], and the client reconnects to
//! the next host of the connect string with the same session id and password. Calls made
//! while disconnected wait for the reconnect, up to
//! [`reconnect_wait`](ClientBuilder::reconnect_wait), then fail with `ConnectionLoss`; so do
//! calls that were still waiting for a slot of the
//! [`max_outstanding`](ClientBuilder::max_outstanding) window when the connection dropped
//! (never written, they are sent after the reconnect, in call order). After a reconnect,
//! credentials are replayed and watches re-registered before any queued request.
//!
//! The session ends in [`SessionState::Expired`] when a server says so or when no server has
//! answered for the whole negotiated timeout; in [`SessionState::AuthFailed`] when
//! credentials are rejected; in [`SessionState::Closed`] after [`Client::close`] or when the
//! last handle is dropped. These states are terminal: every pending and later call fails
//! with [`Error::SessionExpired`], [`Error::AuthFailed`] or [`Error::Closed`], and the
//! client never opens a new session by itself; make a new [`Client`] for that. A resume that
//! a server answers with another session id also ends the session as `Expired`: the old
//! session, its ephemeral nodes and its watches are gone, and that is never hidden.
//! [`SessionManager`] is the opt-in owner that opens a new session (a new [`Client`],
//! published with a generation number) after an expiry, for recipes that must outlive one;
//! [`SessionManager::watch`] follows its [`Generation`]s with the same [`Transitions`] type as
//! the session state, the last one saying why the manager ended.
//!
//! **A session given up is closed on the server.** When the client declares the session
//! expired itself (no server answered for the whole timeout, as during a quorum loss, when
//! the ensemble has *not* expired it: no session expires without a quorum, and a new leader
//! restarts every session's timer), or is closed while disconnected (or its `closeSession`
//! reply is lost with the connection), the session is over for
//! the caller at once, and the connection task keeps trying the hosts in the background
//! (pausing at most 0.5 s between attempts, for at least two minutes) with the old session id
//! only to end it: a server that says "expired" ends it, one that resumes it gets
//! `closeSession`, so the session's ephemeral nodes (lock nodes among them) are gone as soon as
//! the ensemble serves again, not a session timeout later. Nothing else is ever sent on it.
//!
//! Timing: the client pings after 1/3 of the negotiated timeout without sending, and drops a
//! connection after 2/3 without hearing anything (the ratios of the reference clients).
//! Reconnects back off with jitter, from 25-50 ms after the first failed attempt to 0.5-1 s
//! (the Java client waits up to 1 s before each reconnect); a connection that ends before it
//! lasted a read timeout counts as a failed attempt, so a server that accepts the session and
//! hangs up at once is not hammered. [`Client::close`] waits for the `closeSession` reply at
//! most one read timeout. [`ClientBuilder::request_timeout`] (off by default) bounds how long a
//! call on the wire waits for its reply. Follow the state with [`Client::watch`].
//!
//! # Limits
//!
//! A request larger than the server's `jute.maxbuffer` (1 MiB by default) would make the
//! server drop the connection and fail every call in flight; the client fails that call alone
//! with [`Error::RequestTooLarge`] and sends nothing ([`ClientBuilder::max_request_len`]).
//! Replies up to 4 MiB are read ([`ClientBuilder::max_frame_len`]), which covers the largest
//! node the default server stores; a longer reply to a call that sets no watch fails that
//! call alone with [`Error::ReplyTooLarge`] (a `multi_read` of too much, say) and the
//! connection carries on. Replies with bytes after the fields this client knows
//! (newer servers append fields) are accepted, as the Java client does.
//!
//! # Watches
//!
//! Watches are values. `get_data_watch`, `exists_watch` and `get_children_watch` return a
//! [`Watcher`], a future of the one event, only when the call succeeded (an `exists_watch`
//! on a missing node succeeds and watches for its creation). [`Client::add_watch`] returns a
//! [`PersistentWatcher`] stream. Watches survive reconnects (SetWatches relative to the last
//! zxid seen: a one-shot watch fires at once for a change made while disconnected; a
//! persistent one is re-added without that catch-up, see [`PersistentWatcher`]), and resolve
//! with the terminal error when the session ends, so they never hang. Event paths are
//! relative to the chroot. Dropping a watcher before its event drops interest in it: it is
//! not re-registered after a reconnect, and when no other watcher of the client needs the
//! same server-side watch, the client removes it (`removeWatches`).
//! That holds whatever else is going on: a watcher dropped before its call's reply, while
//! another call sets a watch on the same path, or beside a one-shot watcher that keeps a
//! persistent watch alive until it fires; the client looks again each time a registration
//! completes or a one-shot fires.
//!
//! Every watcher gets what ZooKeeper 3.9 would give it, on 3.6 to 3.8 servers too, which keep
//! one watch mode per path and session (ZOOKEEPER-4466): a watch set on a path replaces the
//! one there, so a recursive watch added after a persistent one would leave the persistent
//! and one-shot children watchers deaf. The client keeps, per path, what the server holds
//! and registers only what covers every watcher of the path: the recursive mode if a
//! recursive watcher is there, else the persistent mode, else the one-shot watches; a
//! watcher the path's registration covers asks the server for nothing. Under a recursive
//! watch the path's `NodeChildrenChanged` (which a recursive watch never sends) is derived
//! from the `NodeCreated`/`NodeDeleted` of a direct child, and one the server sends anyway
//! (3.9, keeping an older watch beside it) is dropped, so it is delivered once. The
//! strongest registration stays until no watcher of the path is left. A
//! [`PersistentWatcher`] holds a
//! bounded queue of unread events ([`ClientBuilder::watch_buffer`]); a reader that falls
//! behind gets [`Error::Lagged`] with the number of events dropped, then the events after.
//!
//! # Ensemble changes and operator commands
//!
//! The client rewrites its host list by itself only when asked to
//! ([`ClientBuilder::track_ensemble`] with an [`EnsembleTracking`]). [`Client::config_watcher`]
//! follows the ensemble's membership (`/zookeeper/config`, parsed as [`EnsembleConfig`]),
//! [`Client::reconfig`] changes it, and [`Client::update_hosts`] (and
//! [`SessionManager::update_hosts`]) replaces the hosts while keeping the session, moving
//! just enough clients to even out the load (ZOOKEEPER-1355).
//! [`admin`] sends the four-letter words (`srvr`, `mntr`, `cons`, ...) and parses the
//! answers. See `docs/ensemble.md` and `docs/operator-commands.md` in the repository.
//!
//! # Errors
//!
//! [`Error`] is a flat enum: node outcomes (`NoNode`, `NodeExists`, `BadVersion`, ...),
//! session outcomes (`ConnectionLoss`, `SessionExpired`, ...), `Multi { index, code }` for
//! a failed transaction, `Server(code)` for anything else the server says, local
//! rejections (`InvalidPath`, `InvalidArgument`, `RequestTooLarge`), `Lagged` for a slow
//! persistent watcher, and `Protocol`/`UnexpectedReply` for a server that breaks the
//! protocol (bad bytes, a multi reply with the wrong number of results). It is `Clone + Send + Sync`;
//! [`Error::is_retryable`] and [`Error::code`] help generic handling.
#![forbid(unsafe_code)]
// docs.rs (`--cfg docsrs`, nightly): label items that need a Cargo feature.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod admin;
mod builder;
mod client;
mod command;
pub mod compression;
mod connect;
mod driver;
mod ensemble;
mod error;
mod event;
mod event_queue;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
mod hosts;
#[cfg(feature = "sasl-gssapi")]
mod kerberos;
mod managed;
mod metrics;
mod path;
mod profile;
mod resolve;
mod session;
mod state;
mod state_watcher;
#[cfg(feature = "tls")]
mod tls;
mod trace;
mod tracking;
mod watcher;

pub use builder::{
    ClientBuilder, DEFAULT_MAX_OUTSTANDING, DEFAULT_POISON_QUARANTINE, DEFAULT_SESSION_TIMEOUT,
    DEFAULT_WATCH_BUFFER, SUGGESTED_POISON_QUARANTINE,
};
pub use bytes::Bytes;
pub use client::{
    Client, ConfigWatcher, CreateOptions, Op, OpResult, ReadOp, ReadResult, Reconfig, Transaction,
};
pub use ensemble::{ClientAddress, ConfigParseError, EnsembleConfig, Member, Role};
pub use error::{Error, Result};
pub use event::{AddWatchMode, Arrival, EventType, Stamped, WatchedEvent, WatcherType};
#[cfg(feature = "sasl-gssapi")]
pub use kerberos::KerberosOptions;
pub use managed::{
    Generation, Generations, SessionManager, SessionManagerBuilder, DEFAULT_RENEW_ATTEMPTS,
    DEFAULT_RENEW_BACKOFF, DEFAULT_RENEW_BACKOFF_MAX, DEFAULT_RENEW_PACE_FIRST,
    DEFAULT_RENEW_PACE_MAX, DEFAULT_RENEW_STABLE_AFTER,
};
pub use profile::{Feature, Flavour, ServerProfile};
pub use state::SessionState;
pub use state_watcher::{Observable, Publisher, StateWatcher, Transitions, HISTORY};
#[cfg(feature = "tls")]
pub use tls::TlsOptions;
pub use tracking::{EnsembleTracking, TrackOutcome, TrackedHosts};
pub use watcher::{PersistentWatcher, Watcher};
pub use zk_proto::records::{ClientInfo, CreateMode};
pub use zk_proto::{Acl, ErrorCode, Id, OpCode, Perms, Stat};

#[cfg(test)]
mod tests {
    /// The handles are meant to be shared across tasks and threads.
    #[test]
    fn public_types_are_send_and_sync() {
        fn send_sync<T: Send + Sync + 'static>() {}
        fn send<T: Send + 'static>() {}
        send_sync::<crate::Client>();
        send_sync::<crate::Error>();
        send_sync::<crate::StateWatcher>();
        send_sync::<crate::Transaction>();
        send::<crate::Watcher>();
        send::<crate::PersistentWatcher>();
    }
}

/// The crate README's example, compiled as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct CrateReadmeDoctests;
