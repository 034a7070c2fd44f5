//! A cache of a subtree, compatible with Apache Curator's `CuratorCache`, with views for one
//! node, the children of a node, and a tree with a depth limit.
//!
//! # How it works
//!
//! A [`Cache`] sets **one** persistent recursive watch on its root (`addWatch`), whatever
//! the size of the subtree, and only then loads the subtree, so no change is missed between
//! the two. The load reads every node's data and the children of every node that has any,
//! with up to [`DEFAULT_READ_WINDOW`] reads on the wire at once. On a server with `multiRead`
//! (ZooKeeper 3.6+, in the client's [`ServerProfile`](zk_client::ServerProfile)) the reads go
//! up to 128 to a request, within a reply budget learnt from the sizes read: one request per
//! hundred nodes instead of two per node, which makes a load of 10,000 nodes several times
//! faster (`bench/cache-curve.md`). A batch whose reply would be longer than the client
//! reads (`Error::ReplyTooLarge`: several nodes near 1 MiB) is split in halves and read again,
//! down to single reads; nothing else notices. A node this client cannot read at all (its
//! data or child list alone over the client's
//! [`max_frame_len`](zk_client::ClientBuilder::max_frame_len), or `NoAuth`) is skipped with a
//! warning, and the rest of the tree loads. After that, a
//! `NodeCreated`/`NodeDataChanged` event makes it read the node again, and `NodeDeleted`
//! removes it (and anything cached below it). The snapshot ([`Cache::get`],
//! [`Cache::children`], [`Cache::entries`]) is in memory and never waits for the network.
//!
//! On a server without `addWatch` (ZooKeeper before 3.6, ClickHouse Keeper without it: see
//! the client's [`ServerProfile`](zk_client::ServerProfile)) the cache follows the tree with
//! one-shot watches instead, as Curator's `TreeCache` does: every read leaves a data or child
//! watch (an exists watch on a missing root), and each fired watch is re-armed by the read its
//! event asks for (`NodeChildrenChanged` lists the node and reads the new children). The
//! events, snapshots and guarantees below are the same; it costs a child listing per node at
//! load and per children change.
//!
//! Events ([`CacheEvent`]) are CuratorCache's: `Created` for every node of the first load and
//! each node that appears later, `Changed` (old and new data and `Stat`) when a node is read
//! with another `Stat.version`, `Deleted`, and `Initialized` once, when the first load is
//! complete. Each consumer has its own [`CacheEvents`] stream, and learns with
//! [`CacheEvent::Lagged`] when it fell behind.
//!
//! # Faults and guarantees
//!
//! [`Cache::watch`] follows the cache's [`CacheState`] with [`zk_client::Transitions`] (as a
//! session's state, a lock's state and leadership are followed).
//!
//! * **While disconnected** ([`CacheState::Disconnected`]) the snapshot stays readable but is
//!   stale: it is the state as of the disconnection, and no events are sent. Nothing is
//!   cleared.
//! * **After a reconnect** (same session) the server re-arms the watch but does not replay
//!   what changed meanwhile, so the cache re-reads the subtree ([`CacheState::Resyncing`])
//!   and reports exactly the differences: `Created` for nodes that appeared, `Changed` for
//!   nodes whose version moved, `Deleted` for nodes gone (found by the re-read not seeing
//!   them). A node deleted and re-created meanwhile is reported as `Deleted` then `Created`
//!   (Curator misses it when the version is the same again). Changes that happened and were
//!   undone during the gap (a node created and deleted) leave no event: the events describe
//!   the differences between snapshots, not every write.
//! * **After a new session** ([`CacheBuilder::build_managed`]): the same, on the new
//!   session, once the watch is set on it. With a plain client the cache ends with its
//!   session ([`CacheState::Ended`]; the snapshot is kept).
//! * **No event is lost or duplicated**: every event is the difference between the snapshot
//!   before and after it, and is sent after the snapshot was updated. Replaying a consumer's
//!   events over the snapshot it started from gives the current snapshot (unless it got
//!   `Lagged`; [`Cache::snapshot_and_events`] gives a matching pair).
//! * Replies and watch events are applied in the order the server sent them (each carries its
//!   [`zk_client::Arrival`]), so a read answered before a deletion never re-inserts the
//!   deleted node, and a deletion the server sent before a read's answer never removes the
//!   node that answer shows. A resync that finds a node replaced reports its old descendants
//!   `Deleted` first (deepest first), then the node, so the snapshot never holds a node
//!   without its parent.
//! * The children's fields of a cached `Stat` (`cversion`, `num_children`, `pzxid`) are as of
//!   that node's last read, as in Curator: a recursive watch reports the children, not the
//!   parent.
//!
//! # Views
//!
//! * [`NodeCache`]: one node (Curator's `NodeCache`, kazoo's `DataWatch`), on a
//!   non-recursive persistent watch.
//! * [`ChildrenCache`]: the direct children of a node (Curator's `PathChildrenCache`,
//!   kazoo's `ChildrenWatch`): a cache with depth 1 whose events skip the parent.
//! * A tree with a depth limit (Curator's `TreeCache`): [`CacheBuilder::max_depth`].
//! * Which nodes keep their data: [`CacheBuilder::keep_data`].
//! * Compressed data (Curator's `compressed()`), decompressed in everything the cache hands
//!   out: [`CacheBuilder::compressed`].
//!
//! ```no_run
//! # async fn f(client: zk_client::Client) -> zk_recipes::Result<()> {
//! use zk_recipes::cache::{Cache, CacheEvent};
//!
//! let (cache, mut events) = Cache::builder("/config").build_with_events(client)?;
//! cache.ready().await?;
//! if let Some(node) = cache.get("/config/db") {
//!     println!("db = {:?}", node.data);
//! }
//! while let Some(event) = events.next().await {
//!     match event {
//!         CacheEvent::Changed { old, new } => println!("{}: {:?} -> {:?}", new.path, old.data, new.data),
//!         CacheEvent::Lagged(_) => println!("fell behind; {} nodes cached", cache.len()),
//!         other => println!("{other:?}"),
//!     }
//! }
//! # Ok(()) }
//! ```

mod batch;
mod builder;
mod compressed;
mod events;
mod handle;
mod node;
mod one_shot;
mod options;
mod order;
mod read_op;
mod reads;
mod shared;
mod store;
mod task;
mod views;
mod zxid;

pub use builder::{CacheBuilder, DEFAULT_READ_WINDOW};
pub use events::{CacheEvents, DEFAULT_EVENT_BUFFER};
pub use handle::Cache;
pub use node::{CacheEvent, ChildData};
pub use shared::CacheState;
pub use views::{ChildrenCache, NodeCache};
