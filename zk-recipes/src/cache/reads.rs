//! The read pipeline: a backlog of reads to send and a window of reads on the wire, whose
//! replies are taken strictly in the order they were sent.
//!
//! The client queues a request when its method is called, so calling up to `window` reads
//! before awaiting any keeps that many on the wire (pipelining). Replies of one session come
//! back in order, so only the oldest read can be the next reply. Each reply comes with its
//! [`Arrival`]: where it came among the watch events, which the task uses to apply replies and
//! events in the order the server sent them (see `task.rs`).

use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use zk_client::{Arrival, Bytes, Client, Stamped, Stat};

/// What to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `getData` (no watch).
    Data,
    /// `getChildren` (no watch).
    Children,
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
}

/// A reply.
#[derive(Debug)]
pub(crate) enum Reply {
    Data(zk_client::Result<(Bytes, Stat)>),
    Children(zk_client::Result<Vec<String>>),
}

/// A read with its reply and where the reply came among the watch events.
#[derive(Debug)]
pub(crate) struct Answered {
    pub(crate) op: Op,
    pub(crate) arrival: Arrival,
    pub(crate) reply: Reply,
}

type Pending = Pin<Box<dyn Future<Output = (Arrival, Reply)> + Send>>;

/// Reads queued and in flight.
pub(crate) struct Reads {
    client: Client,
    window: usize,
    backlog: VecDeque<Op>,
    /// Paths with an event refresh waiting in the backlog (a second one would read the same).
    queued_refresh: HashSet<String>,
    in_flight: VecDeque<(Op, Pending)>,
}

impl Reads {
    pub(crate) fn new(client: Client, window: usize) -> Reads {
        Reads {
            client,
            window: window.max(1),
            backlog: VecDeque::new(),
            queued_refresh: HashSet::new(),
            in_flight: VecDeque::new(),
        }
    }

    /// The session's client.
    pub(crate) fn client(&self) -> &Client {
        &self.client
    }

    /// Queues a read; refreshes of a path already waiting are merged.
    pub(crate) fn push(&mut self, op: Op) {
        if !op.walk && op.kind == Kind::Data && !self.queued_refresh.insert(op.path.clone()) {
            return;
        }
        self.backlog.push_back(op);
    }

    /// Drops the queued walk reads of passes other than `pass` (a new pass redoes them).
    pub(crate) fn forget_walks_except(&mut self, pass: u32) {
        self.backlog.retain(|op| !op.walk || op.pass == pass);
    }

    /// Sends queued reads while fewer than `window` are in flight.
    pub(crate) fn fill(&mut self) {
        while self.in_flight.len() < self.window {
            let Some(op) = self.backlog.pop_front() else {
                break;
            };
            if !op.walk && op.kind == Kind::Data {
                self.queued_refresh.remove(&op.path);
            }
            let pending: Pending = match op.kind {
                Kind::Data => {
                    let f = self.client.get_data_stamped(&op.path);
                    Box::pin(async move {
                        let Stamped {
                            arrival, result, ..
                        } = f.await;
                        (arrival, Reply::Data(result))
                    })
                }
                Kind::Children => {
                    let f = self.client.get_children_stamped(&op.path);
                    Box::pin(async move {
                        let Stamped {
                            arrival, result, ..
                        } = f.await;
                        (arrival, Reply::Children(result))
                    })
                }
            };
            self.in_flight.push_back((op, pending));
        }
    }

    /// Polls the oldest read in flight (pending when there is none).
    pub(crate) fn poll_reply(&mut self, cx: &mut Context<'_>) -> Poll<Answered> {
        let Some((_, pending)) = self.in_flight.front_mut() else {
            return Poll::Pending;
        };
        let (arrival, reply) = std::task::ready!(pending.as_mut().poll(cx));
        let (op, _) = self
            .in_flight
            .pop_front()
            .expect("the front was just polled");
        Poll::Ready(Answered { op, arrival, reply })
    }
}
