//! Batched reads: on a server with `multiRead` (ZooKeeper 3.6+), a cache that follows a
//! persistent watch sends the reads waiting in its backlog several to a request.
//!
//! # Why
//!
//! A load reads every node (its data, and its children when it has some). One request per
//! read runs each through the server's request pipeline on its own; a `multiRead` of a
//! hundred goes through it once. Measured on one 3.8 server on loopback: 10,000 `getData`
//! pipelined one to a request took 850-1,036 ms, in `multiRead`s of 100 29-84 ms
//! (`bench/README.md`).
//!
//! # Why it is safe
//!
//! - *No watches*: the reads of a `multiRead` leave none, so only a cache following a
//!   persistent watch batches; with one-shot watches every read arms its node's watch.
//! - *Wire order*: the replies of one `multiRead` come in one frame, so they share one
//!   [`Arrival`](zk_client::Arrival); the task applies them one after the other, each before
//!   any event that came after the frame and after every event that came before
//!   (`order.rs`). No write lands in the middle of a `multiRead`: ZooKeeper's
//!   `CommitProcessor` drains the reads in flight (`waitForEmptyPool`) before it applies a
//!   commit, so a write's notifications go out wholly before or after the reply.
//! - *Size*: the reply must fit the client's frame limit (4 MiB by default), and nodes' sizes
//!   are not known before they are read. A batch takes as many reads as fit in a budget
//!   (a quarter of the limit) at the sizes read so far. A reply over the limit fails that
//!   request alone (`Error::ReplyTooLarge`, the connection carries on): its reads are sent
//!   again one to a request, and the budget drops to a quarter of the limit the error gave.
//! - *A server without it*: `Unimplemented` (declared in the client's profile) or
//!   `ServerDropsRequest` (a server that drops the connection on it) turn batching off for the
//!   session, and the reads are sent again one to a request.

use zk_client::{Error, ReadOp, ReadResult};

use super::read_op::{Kind, Op, Reply};

/// The most reads in one request.
pub(crate) const MAX_BATCH: usize = 128;

/// Reply bytes a batch may take at first: a quarter of the default frame limit.
const FIRST_BUDGET: usize = zk_proto::DEFAULT_MAX_FRAME_LEN / 4;

/// The reply bytes one read is taken to cost before any was read, and at least.
const FIRST_ESTIMATE: usize = 512;
const MIN_ESTIMATE: usize = 96;

/// Bytes of a `getData` result besides its data (its stat, the lengths, the result header).
const DATA_OVERHEAD: usize = 68 + 4 + 12;

/// Whether and how much to batch, learnt as the session goes.
#[derive(Debug, Clone)]
pub(crate) struct Batching {
    enabled: bool,
    budget: usize,
    /// Reply bytes per read, a running average of the batches answered.
    estimate: usize,
}

/// What to do with a batch's answer.
pub(crate) enum Outcome {
    /// One reply per op, in order.
    Replies(Vec<Reply>),
    /// Send the ops again, one to a request.
    Again,
}

impl Batching {
    /// Batching when `enabled` (a persistent watch on a server with `multiRead`).
    pub(crate) fn new(enabled: bool) -> Batching {
        Batching {
            enabled,
            budget: FIRST_BUDGET,
            estimate: FIRST_ESTIMATE,
        }
    }

    /// How many reads the next batch may take (1: send alone).
    pub(crate) fn limit(&self, window: usize) -> usize {
        if !self.enabled {
            return 1;
        }
        (self.budget / self.estimate).clamp(1, MAX_BATCH.min(window))
    }

    /// Whether `op` may go in a batch.
    pub(crate) fn batchable(op: &Op) -> bool {
        !op.alone && matches!(op.kind, Kind::Data | Kind::Children)
    }

    /// The request for `ops`.
    pub(crate) fn request(ops: &[Op]) -> Vec<ReadOp> {
        ops.iter()
            .map(|op| match op.kind {
                Kind::Children => ReadOp::get_children(&op.path),
                _ => ReadOp::get_data(&op.path),
            })
            .collect()
    }

    /// Splits a batch's answer into one reply per op, learning from it.
    pub(crate) fn answer(
        &mut self,
        ops: &[Op],
        result: zk_client::Result<Vec<ReadResult>>,
    ) -> Outcome {
        let results = match result {
            Ok(results) => results,
            Err(Error::ReplyTooLarge { max, .. }) => {
                self.budget = (max / 4).max(1);
                return Outcome::Again;
            }
            Err(Error::Unimplemented(_) | Error::ServerDropsRequest { .. }) => {
                self.enabled = false;
                return Outcome::Again;
            }
            Err(e) => {
                return Outcome::Replies(ops.iter().map(|op| failed(op.kind, e.clone())).collect())
            }
        };
        let mut bytes = 0;
        let replies: Vec<Reply> = ops
            .iter()
            .zip(results)
            .map(|(op, result)| {
                let reply = reply(op.kind, result);
                bytes += reply_bytes(&reply);
                reply
            })
            .collect();
        if let Some(mean) = bytes.checked_div(replies.len()) {
            self.estimate = ((self.estimate * 3 + mean) / 4).max(MIN_ESTIMATE);
        }
        Outcome::Replies(replies)
    }
}

/// `kind`'s reply failing with `e`.
fn failed(kind: Kind, e: Error) -> Reply {
    match kind {
        Kind::Children => Reply::Children(Err(e)),
        _ => Reply::Data(Err(e)),
    }
}

/// One result of a `multiRead` as the reply of its op.
fn reply(kind: Kind, result: ReadResult) -> Reply {
    match (kind, result) {
        (Kind::Children, ReadResult::Children { children }) => Reply::Children(Ok(children)),
        (Kind::Data, ReadResult::Data { data, stat }) => Reply::Data(Ok((data, stat))),
        (kind, ReadResult::Error(e)) => failed(kind, e),
        (kind, _) => failed(
            kind,
            Error::UnexpectedReply("multiRead result of another kind than its read"),
        ),
    }
}

/// Roughly the bytes `reply` took on the wire.
fn reply_bytes(reply: &Reply) -> usize {
    match reply {
        Reply::Data(Ok((data, _))) => data.len() + DATA_OVERHEAD,
        Reply::Children(Ok(names)) => 12 + names.iter().map(|n| n.len() + 4).sum::<usize>(),
        _ => 12,
    }
}

#[cfg(test)]
mod tests {
    use zk_client::{Bytes, Stat};

    use super::*;

    fn op(kind: Kind, path: &str) -> Op {
        Op {
            kind,
            path: path.to_owned(),
            pass: 1,
            walk: true,
            after: None,
            alone: false,
        }
    }

    fn data(len: usize) -> ReadResult {
        ReadResult::Data {
            data: Bytes::from(vec![0; len]),
            stat: Stat::default(),
        }
    }

    #[test]
    fn batches_shrink_as_the_nodes_read_grow() {
        let mut b = Batching::new(true);
        assert_eq!(b.limit(1024), MAX_BATCH);
        assert_eq!(b.limit(10), 10);
        let ops: Vec<_> = (0..4).map(|i| op(Kind::Data, &format!("/n{i}"))).collect();
        for _ in 0..8 {
            let Outcome::Replies(r) = b.answer(&ops, Ok((0..4).map(|_| data(100_000)).collect()))
            else {
                panic!("answered")
            };
            assert_eq!(r.len(), 4);
        }
        // About 100 kB a read: 10 fit in the 1 MiB budget.
        assert!((8..=11).contains(&b.limit(1024)), "{}", b.limit(1024));
    }

    #[test]
    fn a_reply_too_large_sends_the_reads_again_alone_and_lowers_the_budget() {
        let mut b = Batching::new(true);
        let ops = [op(Kind::Data, "/a")];
        let too_large = Err(Error::ReplyTooLarge {
            len: 70_000,
            max: 65_536,
        });
        assert!(matches!(b.answer(&ops, too_large), Outcome::Again));
        // 16 kB at 512 B a read.
        assert_eq!(b.limit(1024), 32);
    }

    #[test]
    fn a_server_without_multi_read_turns_batching_off() {
        let mut b = Batching::new(true);
        let ops = [op(Kind::Children, "/a")];
        let refused = Err(Error::Unimplemented(zk_client::Feature::MultiRead));
        assert!(matches!(b.answer(&ops, refused), Outcome::Again));
        assert_eq!(b.limit(1024), 1);
        assert_eq!(Batching::new(false).limit(1024), 1);
    }

    #[test]
    fn each_read_gets_its_own_result_and_other_failures_fail_every_read() {
        let mut b = Batching::new(true);
        let ops = [
            op(Kind::Data, "/a"),
            op(Kind::Children, "/a"),
            op(Kind::Data, "/b"),
        ];
        let results = vec![
            data(3),
            ReadResult::Children {
                children: vec!["c".into()],
            },
            ReadResult::Error(Error::NoNode),
        ];
        let Outcome::Replies(r) = b.answer(&ops, Ok(results)) else {
            panic!("answered")
        };
        assert!(matches!(&r[0], Reply::Data(Ok((d, _))) if d.len() == 3));
        assert!(matches!(&r[1], Reply::Children(Ok(n)) if n == &["c".to_owned()]));
        assert!(matches!(&r[2], Reply::Data(Err(Error::NoNode))));
        let Outcome::Replies(r) = b.answer(&ops, Err(Error::ConnectionLoss)) else {
            panic!("answered")
        };
        assert_eq!(r.len(), 3);
        assert!(matches!(&r[1], Reply::Children(Err(Error::ConnectionLoss))));
        // A result of the wrong kind is the server's error, not a panic.
        let Outcome::Replies(r) = b.answer(
            &ops[..1],
            Ok(vec![ReadResult::Children { children: vec![] }]),
        ) else {
            panic!("answered")
        };
        assert!(matches!(&r[0], Reply::Data(Err(Error::UnexpectedReply(_)))));
    }
}
