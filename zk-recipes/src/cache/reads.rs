//! The read pipeline: a backlog of reads to send and a window of reads on the wire, whose
//! replies are taken strictly in the order they were sent.
//!
//! The client queues a request when its method is called, so calling up to `window` reads
//! before awaiting any keeps that many on the wire (pipelining). Replies of one session come
//! back in order, so only the oldest read can be the next reply. Each reply comes with its
//! [`Arrival`]: where it came among the watch events, which the task uses to apply replies and
//! events in the order the server sent them (see `task.rs`).

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use zk_client::{Arrival, Bytes, Client, EventType, Stamped, Stat, Watcher};

use super::one_shot::{OneShots, WatchKind};
use super::zxid::{already_shown, merged_zxid};

/// The backlog capacity kept when it empties (a steady state's refreshes reuse it).
const BACKLOG_KEPT: usize = 1024;

/// What to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `getData` (no watch).
    Data,
    /// `getChildren` (no watch).
    Children,
    /// `exists` (one-shot mode only: the root while it is missing).
    Exists,
}

impl Kind {
    /// The one-shot watch a read of this kind leaves.
    fn watch_kind(self) -> WatchKind {
        match self {
            Kind::Data => WatchKind::Data,
            Kind::Children => WatchKind::Children,
            Kind::Exists => WatchKind::Exists,
        }
    }
}

/// One read, and why it was made.
#[derive(Debug, Clone)]
pub(crate) struct Op {
    pub(crate) kind: Kind,
    pub(crate) path: String,
    /// The resync pass current when the read was queued.
    pub(crate) pass: u32,
    /// Part of a pass's walk of the tree (its replies lead to more reads); otherwise a
    /// refresh asked by a watch event.
    pub(crate) walk: bool,
    /// For a refresh asked by an event that carried a zxid (ZooKeeper 3.9+): that zxid. The
    /// refresh is not sent when the cached node already shows it (`zxid.rs`).
    pub(crate) after: Option<i64>,
}

/// A reply.
#[derive(Debug)]
pub(crate) enum Reply {
    Data(zk_client::Result<(Bytes, Stat)>),
    Children(zk_client::Result<Vec<String>>),
    Exists(zk_client::Result<Option<Stat>>),
}

/// A read with its reply and where the reply came among the watch events.
#[derive(Debug)]
pub(crate) struct Answered {
    pub(crate) op: Op,
    pub(crate) arrival: Arrival,
    pub(crate) reply: Reply,
}

type Pending = Pin<Box<dyn Future<Output = (Arrival, Reply, Option<Watcher>)> + Send>>;

/// Reads queued and in flight.
pub(crate) struct Reads {
    client: Client,
    window: usize,
    backlog: VecDeque<Op>,
    /// Paths with an event refresh waiting in the backlog (a second one would read the same),
    /// with the merged zxid of the events that asked for it.
    queued_refresh: HashMap<String, Option<i64>>,
    /// Each read with whether it is the one arming its one-shot watch.
    in_flight: VecDeque<(Op, Pending, bool)>,
    /// Follows the tree with one-shot watches (no `addWatch` on the server): reads leave
    /// watches, whose events come out of here.
    one_shot: Option<OneShots>,
}

impl Reads {
    pub(crate) fn new(client: Client, window: usize) -> Reads {
        Reads {
            client,
            window: window.max(1),
            backlog: VecDeque::new(),
            queued_refresh: HashMap::new(),
            in_flight: VecDeque::new(),
            one_shot: None,
        }
    }

    /// Reads from now on leave one-shot watches (see `one_shot.rs`).
    pub(crate) fn with_one_shot_watches(mut self) -> Reads {
        self.one_shot = Some(OneShots::default());
        self
    }

    /// Whether reads leave one-shot watches.
    pub(crate) fn is_one_shot(&self) -> bool {
        self.one_shot.is_some()
    }

    /// The one-shot watches, in one-shot mode.
    pub(crate) fn one_shots(&mut self) -> Option<&mut OneShots> {
        self.one_shot.as_mut()
    }

    /// Whether a `kind` watch on `path` is armed or being armed (one-shot mode).
    pub(crate) fn is_armed(&self, kind: WatchKind, path: &str) -> bool {
        self.one_shot
            .as_ref()
            .is_some_and(|w| w.is_armed(kind, path))
    }

    /// The session's client.
    pub(crate) fn client(&self) -> &Client {
        &self.client
    }

    /// Queues a read; refreshes of a path already waiting are merged (keeping the newer
    /// zxid, or none).
    pub(crate) fn push(&mut self, op: Op) {
        if !op.walk && op.kind == Kind::Data {
            if let Some(after) = self.queued_refresh.get_mut(&op.path) {
                *after = merged_zxid(*after, op.after);
                return;
            }
            self.queued_refresh.insert(op.path.clone(), op.after);
        }
        self.backlog.push_back(op);
    }

    /// Drops the queued walk reads of passes other than `pass` (a new pass redoes them).
    pub(crate) fn forget_walks_except(&mut self, pass: u32) {
        self.backlog.retain(|op| !op.walk || op.pass == pass);
    }

    /// Sends queued reads while fewer than `window` are in flight. A refresh whose event's
    /// zxid the snapshot already shows (`cached`: the node's cached `Stat`) is dropped
    /// instead, unless it must re-arm the node's one-shot data watch (`order.rs`).
    pub(crate) fn fill(&mut self, cached: impl Fn(&str) -> Option<Stat>) {
        while self.in_flight.len() < self.window {
            let Some(mut op) = self.backlog.pop_front() else {
                // A load's backlog (one entry per node) is not kept once worked off: about
                // 45 B per cached node otherwise (bench/examples/cache_memory.rs).
                if self.backlog.capacity() > BACKLOG_KEPT {
                    self.backlog.shrink_to_fit();
                }
                break;
            };
            if !op.walk && op.kind == Kind::Data {
                if let Some(after) = self.queued_refresh.remove(&op.path) {
                    op.after = after;
                }
                if self.is_redundant(&op, cached(&op.path).as_ref()) {
                    continue;
                }
            }
            let (pending, arming) = self.send(&op);
            self.in_flight.push_back((op, pending, arming));
        }
    }

    /// Whether the refresh `op` would read what the snapshot (`cached`) shows already, and
    /// no one-shot data watch depends on it.
    pub(crate) fn is_redundant(&self, op: &Op, cached: Option<&Stat>) -> bool {
        let watch_kept = self.one_shot.is_none() || self.is_armed(WatchKind::Data, &op.path);
        watch_kept && already_shown(EventType::NodeDataChanged, op.after, cached)
    }

    /// Sends one read: with a watch in one-shot mode when none of its kind is armed on the
    /// path.
    fn send(&mut self, op: &Op) -> (Pending, bool) {
        let kind = op.kind.watch_kind();
        let arming = self
            .one_shot
            .as_mut()
            .is_some_and(|w| w.arm(kind, &op.path));
        (self.send_read(op, arming), arming)
    }

    fn send_read(&self, op: &Op, arming: bool) -> Pending {
        let client = &self.client;
        match op.kind {
            Kind::Data if arming => {
                let f = client.get_data_watch_stamped(&op.path);
                Box::pin(async move {
                    let Stamped {
                        arrival, result, ..
                    } = f.await;
                    match result {
                        Ok((data, stat, w)) => (arrival, Reply::Data(Ok((data, stat))), Some(w)),
                        Err(e) => (arrival, Reply::Data(Err(e)), None),
                    }
                })
            }
            Kind::Data => {
                let f = client.get_data_stamped(&op.path);
                Box::pin(async move {
                    let Stamped {
                        arrival, result, ..
                    } = f.await;
                    (arrival, Reply::Data(result), None)
                })
            }
            Kind::Children if arming => {
                let f = client.get_children_watch_stamped(&op.path);
                Box::pin(async move {
                    let Stamped {
                        arrival, result, ..
                    } = f.await;
                    match result {
                        Ok((names, w)) => (arrival, Reply::Children(Ok(names)), Some(w)),
                        Err(e) => (arrival, Reply::Children(Err(e)), None),
                    }
                })
            }
            Kind::Children => {
                let f = client.get_children_stamped(&op.path);
                Box::pin(async move {
                    let Stamped {
                        arrival, result, ..
                    } = f.await;
                    (arrival, Reply::Children(result), None)
                })
            }
            Kind::Exists if arming => {
                let f = client.exists_watch_stamped(&op.path);
                Box::pin(async move {
                    let Stamped {
                        arrival, result, ..
                    } = f.await;
                    match result {
                        Ok((stat, w)) => (arrival, Reply::Exists(Ok(stat)), Some(w)),
                        Err(e) => (arrival, Reply::Exists(Err(e)), None),
                    }
                })
            }
            Kind::Exists => {
                // An exists watch is armed already: a stamped read tells the same.
                let f = client.get_data_stamped(&op.path);
                Box::pin(async move {
                    let Stamped {
                        arrival, result, ..
                    } = f.await;
                    let result = match result {
                        Ok((_, stat)) => Ok(Some(stat)),
                        Err(zk_client::Error::NoNode) => Ok(None),
                        Err(e) => Err(e),
                    };
                    (arrival, Reply::Exists(result), None)
                })
            }
        }
    }

    /// Polls the oldest read in flight (pending when there is none).
    pub(crate) fn poll_reply(&mut self, cx: &mut Context<'_>) -> Poll<Answered> {
        let Some((_, pending, _)) = self.in_flight.front_mut() else {
            return Poll::Pending;
        };
        let (arrival, reply, watcher) = std::task::ready!(pending.as_mut().poll(cx));
        let (op, _, arming) = self
            .in_flight
            .pop_front()
            .expect("the front was just polled");
        if let (Some(w), true) = (self.one_shot.as_mut(), arming) {
            let kind = op.kind.watch_kind();
            match watcher {
                Some(watcher) => w.follow(kind, op.path.clone(), watcher),
                // The read failed: it left no watch.
                None => w.disarm(kind, &op.path),
            }
        }
        Poll::Ready(Answered { op, arrival, reply })
    }
}
