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

use zk_client::{Arrival, Client, EventType, ReadResult, Stamped, Stat, Watcher};

use super::batch::{Batching, Outcome};
use super::one_shot::{OneShots, WatchKind};
use super::read_op::{Kind, Op, Reply};
use super::zxid::{already_shown, merged_zxid};

/// The room the read queues keep when they empty: a steady state's refreshes come a few at
/// a time and reuse it; a load's (one backlog entry per node, ~64 B each, and a window of
/// reads and replies in flight) is given back.
const ROOM_KEPT: usize = 64;

/// A read with its reply and where the reply came among the watch events.
#[derive(Debug)]
pub(crate) struct Answered {
    pub(crate) op: Op,
    pub(crate) arrival: Arrival,
    pub(crate) reply: Reply,
}

type Pending = Pin<Box<dyn Future<Output = (Arrival, Reply, Option<Watcher>)> + Send>>;
type BatchPending = Pin<Box<dyn Future<Output = Stamped<Vec<ReadResult>>> + Send>>;

/// A request on the wire: one read, or a batch of them (`batch.rs`).
enum Flight {
    /// A read with whether it is the one arming its one-shot watch.
    One(Op, Pending, bool),
    Batch(Vec<Op>, BatchPending),
}

/// Reads queued and in flight.
pub(crate) struct Reads {
    client: Client,
    window: usize,
    backlog: VecDeque<Op>,
    /// Paths with an event refresh waiting in the backlog (a second one would read the same),
    /// with the merged zxid of the events that asked for it.
    queued_refresh: HashMap<String, Option<i64>>,
    /// Requests on the wire, oldest first.
    in_flight: VecDeque<Flight>,
    /// Reads in `in_flight` (at most `window`).
    in_flight_reads: usize,
    /// Replies of a batch answered, not handed out yet (they share the batch's arrival).
    answered: VecDeque<Answered>,
    batching: Batching,
    /// Follows the tree with one-shot watches (no `addWatch` on the server): reads leave
    /// watches, whose events come out of here.
    one_shot: Option<OneShots>,
}

impl Reads {
    /// Reads on `client`, `window` at most on the wire, `batched` several to a request.
    pub(crate) fn new(client: Client, window: usize, batched: bool) -> Reads {
        Reads {
            client,
            window: window.max(1),
            backlog: VecDeque::new(),
            queued_refresh: HashMap::new(),
            in_flight: VecDeque::new(),
            in_flight_reads: 0,
            answered: VecDeque::new(),
            batching: Batching::new(batched),
            one_shot: None,
        }
    }

    /// Reads from now on leave one-shot watches (see `one_shot.rs`).
    pub(crate) fn with_one_shot_watches(mut self) -> Reads {
        self.one_shot = Some(OneShots::default());
        self.batching = Batching::new(false);
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
    ///
    /// While a batch's replies are being handed out, nothing is sent: the reads they lead to
    /// gather in the backlog and go out together once the last is applied.
    pub(crate) fn fill(&mut self, cached: impl Fn(&str) -> Option<Stat>) {
        if !self.answered.is_empty() {
            return;
        }
        while self.in_flight_reads < self.window {
            let limit = self.batching.limit(self.window - self.in_flight_reads);
            if limit > 1 && self.in_flight_reads > 0 && self.backlog.len() < limit {
                // Nagle's rule: a batch goes out full, or when nothing is on the wire; the
                // replies on their way add reads to it meanwhile.
                break;
            }
            let mut batch = Vec::new();
            while batch.len() < limit {
                let Some(op) = self.next_to_send(&cached) else {
                    break;
                };
                if limit > 1 && Batching::batchable(&op) {
                    batch.push(op);
                    continue;
                }
                if batch.is_empty() {
                    self.send_one(op);
                } else {
                    // Goes alone after this batch.
                    self.backlog.push_front(op);
                }
                break;
            }
            match batch.len() {
                0 if self.backlog.is_empty() => {
                    // A load's backlog (one entry per node) is not kept once worked off:
                    // about 45 B per cached node otherwise (bench/examples/cache_memory.rs).
                    if self.backlog.capacity() > ROOM_KEPT {
                        self.backlog.shrink_to_fit();
                    }
                    break;
                }
                0 => {}
                _ => self.send_batch(batch),
            }
        }
    }

    /// The next queued read to send: a refresh whose event's zxid the snapshot already shows
    /// (`cached`: the node's cached `Stat`) is dropped instead, unless it must re-arm the
    /// node's one-shot data watch (`order.rs`).
    fn next_to_send(&mut self, cached: &impl Fn(&str) -> Option<Stat>) -> Option<Op> {
        while let Some(mut op) = self.backlog.pop_front() {
            if !op.walk && op.kind == Kind::Data {
                if let Some(after) = self.queued_refresh.remove(&op.path) {
                    op.after = after;
                }
                if self.is_redundant(&op, cached(&op.path).as_ref()) {
                    continue;
                }
            }
            return Some(op);
        }
        None
    }

    /// Sends `ops` in one `multiRead` (a single op as itself).
    fn send_batch(&mut self, mut ops: Vec<Op>) {
        if ops.len() == 1 {
            let op = ops.pop().expect("one op");
            self.send_one(op);
            return;
        }
        let pending = Box::pin(self.client.multi_read_stamped(&Batching::request(&ops)));
        self.in_flight_reads += ops.len();
        self.in_flight.push_back(Flight::Batch(ops, pending));
    }

    fn send_one(&mut self, op: Op) {
        let (pending, arming) = self.send(&op);
        self.in_flight_reads += 1;
        self.in_flight.push_back(Flight::One(op, pending, arming));
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
                        Ok((names, _, w)) => (arrival, Reply::Children(Ok(names)), Some(w)),
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

    /// A pass's walk is over: the queues of the reads in flight give back the room of their
    /// largest window (a load's) beyond [`ROOM_KEPT`] (what is still in them stays; a queue
    /// already within it is left as it is).
    pub(crate) fn give_back_room(&mut self) {
        self.in_flight.shrink_to(ROOM_KEPT);
        self.answered.shrink_to(ROOM_KEPT);
        self.queued_refresh.shrink_to(ROOM_KEPT);
    }

    /// Polls the oldest read in flight (pending when there is none).
    pub(crate) fn poll_reply(&mut self, cx: &mut Context<'_>) -> Poll<Answered> {
        loop {
            if let Some(answered) = self.answered.pop_front() {
                return Poll::Ready(answered);
            }
            let Some(front) = self.in_flight.front_mut() else {
                return Poll::Pending;
            };
            match front {
                Flight::One(_, pending, _) => {
                    let (arrival, reply, watcher) = std::task::ready!(pending.as_mut().poll(cx));
                    let Some(Flight::One(op, _, arming)) = self.in_flight.pop_front() else {
                        unreachable!("the front was just polled");
                    };
                    self.in_flight_reads -= 1;
                    if let (Some(w), true) = (self.one_shot.as_mut(), arming) {
                        let kind = op.kind.watch_kind();
                        match watcher {
                            Some(watcher) => w.follow(kind, op.path.clone(), watcher),
                            // The read failed: it left no watch.
                            None => w.disarm(kind, &op.path),
                        }
                    }
                    return Poll::Ready(Answered { op, arrival, reply });
                }
                Flight::Batch(_, pending) => {
                    let Stamped {
                        arrival, result, ..
                    } = std::task::ready!(pending.as_mut().poll(cx));
                    let Some(Flight::Batch(ops, _)) = self.in_flight.pop_front() else {
                        unreachable!("the front was just polled");
                    };
                    self.in_flight_reads -= ops.len();
                    match self.batching.answer(&ops, result) {
                        Outcome::Again if ops.len() > 1 && self.batching.limit(2) > 1 => {
                            // A reply too large: each half goes again as a batch of its own,
                            // down to single reads for the nodes too large to share one.
                            let mut first = ops;
                            let second = first.split_off(first.len() / 2);
                            self.send_batch(first);
                            self.send_batch(second);
                        }
                        Outcome::Replies(replies) => {
                            self.answered.extend(
                                ops.into_iter().zip(replies).map(|(op, reply)| Answered {
                                    op,
                                    arrival,
                                    reply,
                                }),
                            );
                        }
                        Outcome::Again => {
                            // Sent again at once, one to a request, in the window the batch
                            // left. Their replies come after the requests sent since: each
                            // is applied at its own arrival, which is all the order needs.
                            for mut op in ops {
                                op.alone = true;
                                self.send_one(op);
                            }
                        }
                    }
                }
            }
        }
    }
}
