//! The FIFO queue of requests written to the server and not yet answered.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use zk_proto::OpCode;

use super::merge::Part;
use super::outbox::Outbox;
use super::poison::Fingerprint;
use crate::command::{ReplySender, WatchAction};
use crate::error::{Error, Result};

/// A request on the wire, waiting for its reply.
#[derive(Debug)]
pub(crate) struct InFlight {
    pub(crate) xid: i32,
    pub(crate) op: OpCode,
    pub(crate) reply: ReplySender,
    pub(crate) watch: Option<WatchAction>,
    /// When it was written (for the request timeout and the poison rule).
    pub(crate) sent: Instant,
    /// What identifies it to the poison rule (see `poison.rs`).
    pub(crate) print: Fingerprint,
    /// Its `zk_request` span, closed when the entry is dropped.
    pub(crate) span: tracing::Span,
    /// Calls merged into it as one `multiRead` after its own (`merge.rs`), in order.
    pub(crate) merged: Vec<Part>,
}

impl InFlight {
    /// Fails it, and every call merged into it, with `err`.
    pub(crate) fn fail(self, err: &Error, out: &mut Outbox) {
        for part in self.merged {
            out.reply(part.reply, Err(err.clone()));
        }
        out.reply(self.reply, Err(err.clone()));
    }
}

/// Requests in the order they were written.
///
/// A ZooKeeper server answers one session's requests in order, so the next reply must be for
/// the front entry: a reply for any other xid is a protocol violation, not a lookup miss
/// (Java's `ClientCnxn.readResponse` throws "Xid out of order" there).
#[derive(Debug, Default)]
pub(crate) struct PendingQueue {
    queue: VecDeque<InFlight>,
}

impl PendingQueue {
    pub(crate) fn push(&mut self, inflight: InFlight) {
        crate::metrics::request_sent();
        self.queue.push_back(inflight);
    }

    pub(crate) fn len(&self) -> usize {
        self.queue.len()
    }

    /// Pops the front entry if it has this xid; otherwise returns the xid that was expected
    /// (`None` when nothing is pending).
    pub(crate) fn pop_matching(&mut self, xid: i32) -> Result<InFlight, Option<i32>> {
        match self.queue.front() {
            Some(front) if front.xid == xid => Ok(self.queue.pop_front().expect("front exists")),
            Some(front) => Err(Some(front.xid)),
            None => Err(None),
        }
    }

    /// The newest request waiting for its reply.
    pub(crate) fn back_mut(&mut self) -> Option<&mut InFlight> {
        self.queue.back_mut()
    }

    /// The oldest request waiting for its reply.
    pub(crate) fn front(&self) -> Option<&InFlight> {
        self.queue.front()
    }

    /// Whether the request with this xid is still waiting for its reply.
    pub(crate) fn contains(&self, xid: i32) -> bool {
        self.queue.iter().any(|f| f.xid == xid)
    }

    /// The entries, oldest first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &InFlight> {
        self.queue.iter()
    }

    /// Whether an entry will register a watch on `path`.
    pub(crate) fn registers_watch_on(&self, path: &str) -> bool {
        self.queue
            .iter()
            .any(|f| f.watch.as_ref().is_some_and(|w| w.path() == path))
    }

    /// When the oldest entry was written.
    pub(crate) fn oldest_sent(&self) -> Option<Instant> {
        self.queue.front().map(|f| f.sent)
    }

    /// Fails every entry written `limit` or longer before `now` with `err` (they are the
    /// oldest ones, at the front). Returns whether any was.
    pub(crate) fn fail_sent_before(
        &mut self,
        now: Instant,
        limit: Duration,
        err: &Error,
        out: &mut Outbox,
    ) -> bool {
        let mut failed = 0;
        while let Some(front) = self.queue.front() {
            if now < front.sent + limit {
                break;
            }
            if let Some(inflight) = self.queue.pop_front() {
                failed += 1 + inflight.merged.len();
                inflight.fail(err, out);
            }
        }
        crate::metrics::requests_failed(failed, err);
        failed > 0
    }

    /// Fails every entry with `err`.
    pub(crate) fn fail_all(&mut self, err: &Error, out: &mut Outbox) {
        for inflight in self.queue.drain(..) {
            crate::metrics::requests_failed(1 + inflight.merged.len(), err);
            inflight.fail(err, out);
        }
    }
}
