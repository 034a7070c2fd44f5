//! [`SharedValue`]: bytes in one node, cached and watched, with a versioned compare-and-set
//! (Curator's `SharedValue`).

use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::debug;
use zk_client::{
    Client, CreateMode, Observable, Publisher, SessionManager, Stat, Transitions, Watcher,
};

use crate::error::{Error, Result};
use crate::path::check_base;
use crate::queue::create_if_absent;
use crate::retry::{gave_up, retry_after, retrying, turns};
use crate::session::{Background, NoNext, Sessions, Source};

/// A value together with the version of the node it was read from (the `version` a
/// compare-and-set must match): Curator's `VersionedValue`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionedValue<T> {
    /// The node's data version (`Stat::version`) the value was read at.
    pub version: i32,
    /// The value.
    pub value: T,
}

/// A [`SharedValue`] or [`SharedCount`](super::SharedCount) as its `watch()` follows it
/// (with [`Transitions`], the type that follows a session's state, a lock's state and
/// leadership too).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SharedState<T> {
    /// The value now, with the version it was read at.
    Current(VersionedValue<T>),
    /// [`SharedCount`](super::SharedCount) only: the node holds fewer than 4 bytes, not a
    /// count (at this version). Following goes on.
    Invalid {
        /// The node's data version.
        version: i32,
    },
    /// The value stopped following its node (its session ended, or every handle was
    /// dropped): no change follows, and writes report why.
    Ended,
}

impl<T: Clone + PartialEq + Send + Sync + 'static> Observable for SharedState<T> {
    fn is_final(&self) -> bool {
        matches!(self, SharedState::Ended)
    }

    fn when_gone(_last: &Self) -> Self {
        SharedState::Ended
    }
}

/// What the cache holds: the value, its version, and the zxid of the change that wrote it
/// (how a newer read is told from an older one, also after the version wraps).
#[derive(Debug, Clone)]
struct Snapshot {
    version: i32,
    mzxid: i64,
    value: Bytes,
}

impl Snapshot {
    fn of(stat: &Stat, value: Bytes) -> Snapshot {
        Snapshot {
            version: stat.version,
            mzxid: stat.mzxid,
            value,
        }
    }

    fn versioned(&self) -> VersionedValue<Bytes> {
        VersionedValue {
            version: self.version,
            value: self.value.clone(),
        }
    }
}

#[derive(Debug)]
struct Inner {
    source: Source,
    path: String,
    cache: watch::Sender<Snapshot>,
    /// Each newer value, then `Ended`.
    published: Publisher<SharedState<Bytes>>,
}

impl Inner {
    fn client(&self) -> Client {
        self.source.client()
    }

    /// Takes `snap` if it is newer than the cached value. Curator compares versions and
    /// ignores reads at a version not greater than the cached one, which gets stuck once the
    /// 32-bit version wraps (CURATOR-688); the mzxid only grows.
    fn offer(&self, snap: Snapshot) {
        self.cache.send_if_modified(|cached| {
            if snap.mzxid > cached.mzxid {
                // Under the cache's lock: published in the order the cache takes them.
                self.published
                    .publish(SharedState::Current(snap.versioned()));
                *cached = snap;
                true
            } else {
                false
            }
        });
    }
}

/// Bytes shared through one node, in Curator's `SharedValue` layout (a PERSISTENT node at
/// `path` holding the raw bytes), kept up to date by a watch.
///
/// [`new`](Self::new) creates the node with the seed when it is missing (parents as
/// containers), reads it and watches it; every change anyone makes is read back and
/// published to [`watch`](Self::watch). [`try_set_value`](Self::try_set_value) is a
/// compare-and-set on the node's version.
///
/// Better than Curator 5.4: newer values are recognised by the change's zxid, not the
/// version, so the cache does not freeze when the version wraps (CURATOR-688); a
/// compare-and-set at version −1 (which the server would take as "any version") is refused
/// (ZOOKEEPER-4743); and when someone deletes the node the value keeps watching for its
/// re-creation instead of going deaf.
///
/// Started with [`new`](Self::new), the value follows one session: when the client's
/// session ends, [`watch`](Self::watch) ends with that error and writes fail with it.
/// Started with [`new_managed`](Self::new_managed), it goes on with each new session of a
/// [`SessionManager`] (read again at once; Curator re-reads on every reconnect too).
///
/// ```no_run
/// # async fn f(client: zk_client::Client) -> zk_recipes::Result<()> {
/// use zk_recipes::shared::SharedValue;
/// let value = SharedValue::new(client.clone(), "/config/mode", b"normal").await?;
/// let current = value.value();
/// if !value.try_set_value(&current, b"maintenance").await? {
///     println!("someone changed it first: {:?}", value.value().value);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SharedValue {
    inner: Arc<Inner>,
    /// The follower; stopped when the last clone is dropped.
    task: Arc<Background>,
}

impl SharedValue {
    /// Creates the node with `seed` unless it exists, reads it and starts watching it.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] for a relative path or the root; `NoAuth` and the session
    /// errors (connection losses are waited out).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future may leave the node created; nothing keeps running.
    pub async fn new(client: Client, path: &str, seed: &[u8]) -> Result<SharedValue> {
        Self::start_on(Source::Client(client), path, seed).await
    }

    /// As [`new`](Self::new), on `manager`'s sessions: the value keeps following the node
    /// (and writes go) on each new session after an expiry.
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new).
    ///
    /// # Cancel safety
    ///
    /// As [`new`](Self::new).
    pub async fn new_managed(
        manager: &SessionManager,
        path: &str,
        seed: &[u8],
    ) -> Result<SharedValue> {
        Self::start_on(Source::Manager(manager.clone()), path, seed).await
    }

    async fn start_on(source: Source, path: &str, seed: &[u8]) -> Result<SharedValue> {
        let path = check_base(path)?;
        let sessions = source.sessions();
        let client = sessions.client().clone();
        create_if_absent(&client, &path, seed, CreateMode::Persistent).await?;
        let (snap, watch) = read_watch(&client, &path).await?;
        let published = Publisher::new(SharedState::Current(snap.versioned()));
        let (cache, _) = watch::channel(snap);
        let inner = Arc::new(Inner {
            source,
            path,
            cache,
            published,
        });
        let task = Background::spawn({
            let inner = inner.clone();
            |stop| follow(inner, sessions, watch, stop)
        });
        Ok(SharedValue {
            inner,
            task: Arc::new(task),
        })
    }

    /// The node's path.
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// The cached value and its version.
    pub fn value(&self) -> VersionedValue<Bytes> {
        self.inner.cache.borrow().versioned()
    }

    /// Follows the value: each change (by anyone, ours included) once it is read back, as
    /// [`Transitions`]; it ends with [`SharedState::Ended`] when the value stops following
    /// the node (its session ended, or every handle was dropped). A follower that falls more
    /// than [`zk_client::HISTORY`] changes behind skips to the newest value.
    pub fn watch(&self) -> Transitions<SharedState<Bytes>> {
        self.inner.published.subscribe()
    }

    /// Stops following the node, for every clone of this handle: [`watch`](Self::watch)
    /// ends with [`SharedState::Ended`] and writes fail. The node stays (it is shared).
    /// Dropping the last clone does the same in the background.
    ///
    /// # Errors
    ///
    /// None today: nothing is undone on the server. The `Result` is the crate's one `close`
    /// shape (see the [crate docs](crate#conventions)).
    ///
    /// # Cancel safety
    ///
    /// The value stops as soon as this is called; the future only waits for its follower.
    pub async fn close(&self) -> Result<()> {
        self.task.close().await;
        Ok(())
    }

    /// `Closed` once [`close`](Self::close) was called: nothing is sent.
    fn check_open(&self) -> Result<()> {
        if self.task.is_stopped() {
            return Err(Error::Client(zk_client::Error::Closed));
        }
        Ok(())
    }

    /// Writes `value` whatever the node holds (`setData` at any version).
    ///
    /// # Errors
    ///
    /// `NoNode` when the node was deleted, `NoAuth`, and the session errors; a connection
    /// loss is returned (the write may or may not have been applied). `Closed` after
    /// [`close`](Self::close), with nothing sent.
    ///
    /// # Cancel safety
    ///
    /// The write is sent when the future is first polled; dropping it afterwards loses only
    /// the outcome.
    pub async fn set_value(&self, value: &[u8]) -> Result<()> {
        self.check_open()?;
        let stat = self
            .inner
            .client()
            .set_data(&self.inner.path, value, None)
            .await?;
        self.inner
            .offer(Snapshot::of(&stat, Bytes::copy_from_slice(value)));
        Ok(())
    }

    /// Writes `value` only if the node still holds `expected` (its version and bytes, as
    /// [`value`](Self::value) returned them). `Ok(false)` without any request when the cache
    /// already differs; on a version conflict the node is read again before returning
    /// `Ok(false)`, so [`value`](Self::value) is fresh for the next try.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `expected.version` is −1 (the server would ignore the
    /// version: ZOOKEEPER-4743); `NoNode`, `NoAuth`, and the session errors (a connection
    /// loss is returned: the write may or may not have been applied); `Closed` after
    /// [`close`](Self::close).
    ///
    /// # Cancel safety
    ///
    /// As [`set_value`](Self::set_value).
    pub async fn try_set_value(
        &self,
        expected: &VersionedValue<Bytes>,
        value: &[u8],
    ) -> Result<bool> {
        self.check_open()?;
        if self.value() != *expected {
            return Ok(false);
        }
        if expected.version == -1 {
            return Err(Error::InvalidArgument(
                "cannot compare-and-set at version -1 (the server takes it as any version)",
            ));
        }
        let client = &self.inner.client();
        match client
            .set_data(&self.inner.path, value, Some(expected.version))
            .await
        {
            Ok(stat) => {
                self.inner
                    .offer(Snapshot::of(&stat, Bytes::copy_from_slice(value)));
                Ok(true)
            }
            Err(zk_client::Error::BadVersion) => {
                let (data, stat) = retrying(client, || client.get_data(&self.inner.path)).await?;
                self.inner.offer(Snapshot::of(&stat, data));
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }
}

/// Reads the node with a data watch; a missing node is reported as `NoNode`.
async fn read_watch(client: &Client, path: &str) -> Result<(Snapshot, Watcher)> {
    let (data, stat, watch) = retrying(client, || client.get_data_watch(path)).await?;
    Ok((Snapshot::of(&stat, data), watch))
}

/// The background follower: on every event on the node, read it again (with a new watch)
/// and publish it if newer. A deleted node is watched with `exists` until it returns.
async fn follow(inner: Arc<Inner>, sessions: Sessions, watch: Watcher, stop: CancellationToken) {
    follow_until(&inner, sessions, watch, &stop).await;
    inner.published.publish(SharedState::Ended);
}

async fn follow_until(
    inner: &Inner,
    mut sessions: Sessions,
    mut watch: Watcher,
    stop: &CancellationToken,
) {
    let mut client = sessions.client().clone();
    for _ in turns() {
        let event = tokio::select! {
            _ = stop.cancelled() => return,
            event = &mut watch => event,
        };
        let mut failed = event.err();
        if failed.is_none() {
            match rearm(inner, &client).await {
                Ok(next) => {
                    watch = next;
                    continue;
                }
                Err(Error::Client(e)) if e.is_terminal() => failed = Some(e),
                Err(e) => {
                    debug!(path = %inner.path, error = %e, "shared value stops following");
                    return;
                }
            }
        }
        // The session ended: go on with the next one, if any (paced by the base).
        let mut renewed = false;
        for _ in turns() {
            match sessions.next(stop).await {
                Ok(next) => client = next,
                Err(NoNext::Stopped) => return,
                Err(NoNext::Ended(e)) => {
                    debug!(path = %inner.path, error = %e, failed = ?failed, "shared value stops following");
                    return;
                }
            }
            match rearm(inner, &client).await {
                Ok(next) => {
                    watch = next;
                    renewed = true;
                    break;
                }
                // That session ended too: wait for the next one.
                Err(Error::Client(e)) if e.is_terminal() => {}
                Err(e) => {
                    debug!(path = %inner.path, error = %e, "shared value stops following");
                    return;
                }
            }
        }
        if !renewed {
            return;
        }
    }
}

/// Reads the node again and returns the watch for its next change.
async fn rearm(inner: &Inner, client: &Client) -> Result<Watcher> {
    for _ in turns() {
        match client.get_data_watch(&inner.path).await {
            Ok((data, stat, watch)) => {
                inner.offer(Snapshot::of(&stat, data));
                return Ok(watch);
            }
            // Deleted: wait for it to come back (exists leaves a watch on a missing node,
            // getData does not: Curator goes deaf here).
            Err(zk_client::Error::NoNode) => match client.exists_watch(&inner.path).await {
                Ok((None, watch)) => return Ok(watch),
                Ok((Some(_), _)) => continue,
                Err(e) => retry_after(client, e).await?,
            },
            Err(e) => retry_after(client, e).await?,
        }
    }
    Err(gave_up())
}
