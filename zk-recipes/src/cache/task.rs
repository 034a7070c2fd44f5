//! The cache's task: sets the watch, loads, follows events, resyncs after faults.
//!
//! Per session: wait until connected, `addWatch` (recursive, or plain for a one-node
//! cache; on a server without it, one-shot watches left by the reads, `one_shot.rs`), then a
//! *pass*: a walk of the tree (getData of every node, getChildren of every
//! node that has children, pipelined) that applies what it reads to the snapshot and, once
//! complete, removes every cached node it did not see. A pass runs first, again after every
//! reconnect of the same session (persistent watches are re-armed by the client, but the
//! server does not replay what changed meanwhile), after a lagging watch stream, and on each
//! new session of a `SessionManager`.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::{sleep_until, Instant};
use tokio_util::sync::CancellationToken;
use tracing::{debug, trace, warn};
use zk_client::{
    AddWatchMode, Client, Error, EventType, Feature, PersistentWatcher, SessionState, WatchedEvent,
};

use super::one_shot::WatchKind;
use super::order::{InOrder, Next};
use super::read_op::{Kind, Op, Reply};
use super::reads::{Answered, Reads};
use super::shared::{CacheState, Shared};
use super::zxid::already_shown;
use crate::path::join;
use crate::retry::{gave_up, turns, Pacing};
use crate::session::{NoNext, Sessions};

/// How a session's run ended.
enum End {
    /// Closed by the user (or every handle dropped).
    Cancelled,
    /// The session is over.
    Session(SessionState),
    /// Retries ran out ([`crate::retry::turns`]): the cache ends.
    GaveUp,
}

/// Pause after a failed pass before trying again.
const RETRY_FIRST: Duration = Duration::from_millis(100);

/// The cache's task: one [`session`] after the other, from the base's [`Sessions`] (the
/// next one paced when they die at once), until closed or no session follows.
pub(crate) async fn run(shared: Arc<Shared>, mut sessions: Sessions, cancel: CancellationToken) {
    let mut client = sessions.client().clone();
    // Paces the retries of `addWatch` and of a watch removed under us, across sessions.
    let mut pacing = Pacing::new();
    // One turn per session, or per watch removed under us; running out ends the cache.
    let mut out_of_turns = true;
    // Why the cache ends, for `ready()`: none for a close.
    let mut why = None;
    for _ in turns() {
        let end = tokio::select! {
            _ = cancel.cancelled() => End::Cancelled,
            end = session(&shared, client.clone(), &cancel, &mut pacing) => end,
        };
        let state = match end {
            End::Session(state) => state,
            // `out_of_turns` is still set: the end below says why.
            End::GaveUp => break,
            End::Cancelled => {
                out_of_turns = false;
                break;
            }
        };
        shared.set_state(CacheState::Disconnected);
        if !state.is_terminal() {
            // The watch was removed under us (`remove_watches` by someone else): set it again,
            // paced.
            match pacing.wait(Duration::ZERO, &cancel).await {
                Ok(true) => continue,
                Ok(false) => out_of_turns = false,
                Err(_) => {}
            }
            break;
        }
        debug!(?state, path = %shared.opts.path, "cache: session ended");
        let ended = crate::retry::session_ended(&client);
        shared.failed(ended.clone());
        out_of_turns = false;
        if state != SessionState::Expired {
            why = Some(ended);
            break;
        }
        match sessions.next(&cancel).await {
            Ok(next) => client = next,
            Err(NoNext::Stopped) => break,
            Err(NoNext::Ended(e)) => {
                out_of_turns = e.is_gave_up();
                why = Some(e);
                break;
            }
        }
        out_of_turns = true;
    }
    if out_of_turns {
        warn!(error = %gave_up(), path = %shared.opts.path, "cache: retries ran out; the cache ends");
        why = Some(gave_up());
    }
    shared.end(why);
}

/// Sets the watch on `client`'s session and follows it until the session ends.
async fn session(
    shared: &Shared,
    client: Client,
    cancel: &CancellationToken,
    pacing: &mut Pacing,
) -> End {
    let mut states = client.watch();
    let mode = if shared.opts.max_depth == Some(0) {
        AddWatchMode::Persistent
    } else {
        AddWatchMode::PersistentRecursive
    };
    let mut watcher = None;
    // Without addWatch (known from the client's profile, or learned from the server's
    // answer), the cache follows the tree with one-shot watches (`one_shot.rs`).
    let mut one_shot = !client.server_profile().supports(Feature::AddWatch);
    for _ in turns() {
        let state = states.wait_for(SessionState::is_connected).await;
        if state.is_terminal() {
            return End::Session(state);
        }
        if one_shot {
            break;
        }
        match client.add_watch(&shared.opts.path, mode).await {
            Ok(w) => {
                watcher = Some(w);
                break;
            }
            Err(Error::Unimplemented(_)) => {
                debug!(path = %shared.opts.path, "cache: no addWatch on this server; one-shot watches");
                one_shot = true;
                break;
            }
            Err(e) if e.is_terminal() => return End::Session(client.state()),
            Err(e) => {
                warn!(error = %e, path = %shared.opts.path, "cache: addWatch failed; retrying");
                shared.failed(e.clone().into());
                // A request the client refuses for a while is waited out.
                match pacing.wait_after(Duration::ZERO, &e, cancel).await {
                    Ok(true) => {}
                    Ok(false) => return End::Cancelled,
                    Err(_) => return End::GaveUp,
                }
            }
        }
    }
    if watcher.is_none() && !one_shot {
        return End::GaveUp;
    }
    // A persistent watch on a server with multiRead: reads go several to a request
    // (`batch.rs`).
    let batched = !one_shot && client.server_profile().supports(Feature::MultiRead);
    let reads = Reads::new(client.clone(), shared.opts.window, batched);
    let mut sync = Sync {
        shared,
        reads: if one_shot {
            reads.with_one_shot_watches()
        } else {
            reads
        },
        pass: shared.last_pass(),
        walking: false,
        walk_pending: 0,
        walk_failed: false,
        retry_at: None,
        failed_passes: 0,
        in_order: InOrder::default(),
    };
    sync.start_pass();
    sync.follow(watcher, states).await
}

/// One session's state of the synchronisation.
struct Sync<'a> {
    shared: &'a Shared,
    reads: Reads,
    /// The current pass; reads queued in it count as seeing the nodes they find.
    pass: u32,
    walking: bool,
    /// Walk reads of the current pass queued or in flight.
    walk_pending: usize,
    /// A read of the current pass failed: the pass cannot tell what is gone.
    walk_failed: bool,
    /// When to start another pass (a read failed while connected).
    retry_at: Option<Instant>,
    /// Passes failed in a row (bounded by [`turns`], then the cache gives up).
    failed_passes: usize,
    /// Replies and events taken but not applied yet: applied in wire order (`order.rs`).
    in_order: InOrder,
}

impl Sync<'_> {
    /// Follows `watcher`'s events, or without one the one-shot watches' (the reads').
    async fn follow(
        &mut self,
        mut watcher: Option<PersistentWatcher>,
        mut states: zk_client::StateWatcher,
    ) -> End {
        loop {
            let shared = self.shared;
            self.reads
                .fill(|path| shared.read().get(path).map(|c| c.stat));
            let retry_at = self.retry_at;
            let (in_order, reads) = (&mut self.in_order, &mut self.reads);
            let next = std::future::poll_fn(|cx| in_order.poll_next(watcher.as_mut(), reads, cx));
            tokio::select! {
                // Replies and events in the order the server sent them (`order.rs`).
                next = next => match next {
                    Next::Reply(Answered { op, reply, .. }) => self.on_reply(op, reply),
                    Next::Event(event) => self.on_event(&event),
                    Next::WatchFailed(Error::Lagged { missed }) => {
                        debug!(missed, "cache: watch events dropped; resyncing");
                        self.start_pass();
                    }
                    // The session ended, or the watch was removed: the caller looks which.
                    Next::WatchFailed(_) => return End::Session(self.reads.client().state()),
                },
                state = states.changed() => {
                    if state.is_terminal() {
                        return End::Session(state);
                    }
                    if state.is_connected() {
                        // A reconnect: the server did not replay what we missed.
                        self.start_pass();
                    } else {
                        self.shared.set_state(CacheState::Disconnected);
                    }
                }
                _ = sleep_until(retry_at.unwrap_or_else(Instant::now)), if retry_at.is_some() => {
                    self.retry_at = None;
                    if self.reads_client_connected() {
                        self.start_pass();
                    }
                }
            }
            if self.walking && self.walk_pending == 0 {
                self.finish_pass();
                if self.failed_passes >= turns().end {
                    return End::GaveUp;
                }
            }
        }
    }

    fn reads_client_connected(&self) -> bool {
        self.reads.client().state().is_connected()
    }

    fn start_pass(&mut self) {
        self.pass = self.shared.next_pass();
        self.walking = true;
        self.walk_failed = false;
        self.walk_pending = 0;
        self.retry_at = None;
        self.reads.forget_walks_except(self.pass);
        let initialized = self.shared.is_initialized();
        self.shared.set_state(if initialized {
            CacheState::Resyncing
        } else {
            CacheState::Loading
        });
        let root = self.shared.opts.path.clone();
        self.push_walk(Kind::Data, root);
    }

    fn push_walk(&mut self, kind: Kind, path: String) {
        self.walk_pending += 1;
        self.reads.push(Op {
            kind,
            path,
            pass: self.pass,
            walk: true,
            after: None,
            alone: false,
        });
    }

    fn finish_pass(&mut self) {
        self.walking = false;
        self.reads.give_back_room();
        if self.walk_failed {
            // Some node could not be read: what is gone is unknown. Try again soon (a
            // disconnection starts a pass itself on reconnect).
            self.failed_passes += 1;
            self.retry_at = Some(Instant::now() + RETRY_FIRST);
            return;
        }
        self.failed_passes = 0;
        let pass = self.pass;
        self.shared.apply(|store, events| store.sweep(pass, events));
        self.shared.pass_completed();
    }

    fn on_event(&mut self, event: &WatchedEvent) {
        let (kind, path, zxid) = (event.event_type, event.path.as_str(), event.zxid());
        let Some(level) = self.shared.level(path) else {
            return;
        };
        if self.shared.opts.max_depth.is_some_and(|max| level > max) {
            return;
        }
        let cached = || self.shared.read().get(path).map(|c| c.stat);
        match kind {
            EventType::NodeCreated | EventType::NodeDataChanged => {
                let refresh = Op {
                    kind: Kind::Data,
                    path: path.to_owned(),
                    pass: self.pass,
                    walk: false,
                    after: zxid,
                    alone: false,
                };
                if self.reads.is_redundant(&refresh, cached().as_ref()) {
                    trace!(path, ?zxid, "cache: the snapshot shows this change already");
                } else {
                    self.reads.push(refresh);
                }
            }
            EventType::NodeDeleted if already_shown(kind, zxid, cached().as_ref()) => {
                debug!(
                    path,
                    ?zxid,
                    "cache: a deletion older than the cached node; kept"
                );
            }
            EventType::NodeDeleted => {
                self.shared
                    .apply(|store, events| store.remove(path, events));
                if self.one_shot() && level == 0 {
                    // Its creation is told only to an exists watch.
                    self.push_refresh(Kind::Exists, path);
                }
            }
            // One-shot mode: a child watch fired; list the children (re-arming it) and read
            // the new ones.
            EventType::NodeChildrenChanged if self.one_shot() => {
                self.push_refresh(Kind::Children, path)
            }
            // A plain persistent watch's NodeChildrenChanged is not used (the one-node cache
            // has no children); recursive watches never send it.
            _ => {}
        }
    }

    /// Whether the tree is followed with one-shot watches.
    fn one_shot(&self) -> bool {
        self.reads.is_one_shot()
    }

    /// Queues a read asked for by an event (not part of a pass's walk).
    fn push_refresh(&mut self, kind: Kind, path: &str) {
        self.reads.push(Op {
            kind,
            path: path.to_owned(),
            pass: self.pass,
            walk: false,
            after: None,
            alone: false,
        });
    }

    /// Whether nodes below `path` are cached (its level is above the depth limit).
    fn below_cached(&self, path: &str) -> bool {
        self.shared
            .level(path)
            .is_some_and(|l| self.shared.opts.max_depth.is_none_or(|max| l < max))
    }

    fn on_reply(&mut self, op: Op, reply: Reply) {
        let current = op.pass == self.pass;
        let counted = current && op.walk && self.walking;
        if counted {
            self.walk_pending -= 1;
        }
        match reply {
            Reply::Data(Ok((data, stat))) => {
                // One-shot mode lists every node above the depth limit, children or not: the
                // listing leaves the child watch that tells of the first child.
                let below = self.below_cached(&op.path);
                let one_shot = self.one_shot();
                let expand = counted && below && (stat.num_children > 0 || one_shot);
                let arm_children = !counted
                    && below
                    && one_shot
                    && !self.reads.is_armed(WatchKind::Children, &op.path);
                let keep = self.shared.keeps_data(&op.path);
                let seen = current.then_some(self.pass);
                self.shared.apply(|store, events| {
                    store.apply_read(&op.path, stat, data, keep, seen, events)
                });
                if expand {
                    self.push_walk(Kind::Children, op.path);
                } else if arm_children {
                    self.push_refresh(Kind::Children, &op.path);
                }
            }
            Reply::Children(Ok(names)) => {
                if counted {
                    for name in names {
                        let child = join(&op.path, &name);
                        self.push_walk(Kind::Data, child);
                    }
                } else if self.one_shot() {
                    // A child watch fired: read the children not cached yet (the others
                    // have data watches of their own).
                    for name in names {
                        let child = join(&op.path, &name);
                        if self.shared.read().get(&child).is_none() {
                            self.push_refresh(Kind::Data, &child);
                        }
                    }
                }
            }
            Reply::Exists(Ok(Some(_))) => self.push_refresh(Kind::Data, &op.path),
            // Missing: the exists watch tells of its creation.
            Reply::Exists(Ok(None)) => {}
            Reply::Data(Err(Error::NoNode)) => {
                self.shared
                    .apply(|store, events| store.remove(&op.path, events));
                if self.one_shot() && self.shared.level(&op.path) == Some(0) {
                    self.push_refresh(Kind::Exists, &op.path);
                }
            }
            Reply::Children(Err(Error::NoNode)) => {}
            Reply::Data(Err(e)) | Reply::Children(Err(e)) | Reply::Exists(Err(e)) => {
                // Unreadable (no permission, or a reply over our frame limit even alone):
                // never cached, and retrying would not help.
                let unreadable = matches!(e, Error::NoAuth | Error::ReplyTooLarge { .. });
                if unreadable {
                    warn!(path = %op.path, error = %e, "cache: a node cannot be read; it is skipped");
                } else {
                    if counted {
                        self.walk_failed = true;
                    } else if !e.is_terminal() {
                        // A refresh was lost: the change it was for may be missed.
                        self.retry_at
                            .get_or_insert_with(|| Instant::now() + RETRY_FIRST);
                    }
                    debug!(path = %op.path, error = %e, "cache: read failed");
                }
            }
        }
    }
}
