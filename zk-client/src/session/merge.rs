//! Consecutive plain `getData` calls written in one go travel as one `multiRead`.
//!
//! # Why
//!
//! A server runs every request through its request pipeline, a hand-off between threads at
//! each stage; that, not the read, is what limits one session's pipelined reads (W2 in
//! `bench/README.md`). A `multiRead` of three reads pays it once: measured on one 3.8 server,
//! 60,000 pipelined `getData` ran at 7.4-12.1k/s one to a request and at 16.1-32.6k/s three to
//! a `multiRead`, at half the client's CPU per read.
//!
//! # When
//!
//! A `getData` that sets no watch (a `multiRead`'s reads never do) joins the request written
//! just before it when that request is a plain `getData` or such a `multiRead` and is still in
//! the outbox: not yet handed to the socket. So nothing waits for a merge: reads merge only
//! when calls come faster than the connection writes them (a deep pipeline), and a call
//! alone goes out as itself. Only on a server whose profile has `multiRead` (ZooKeeper 3.6+),
//! never next to a request the poison rule suspects, never beyond `max_request_len`.
//!
//! # Why it changes nothing a caller can see
//!
//! - *Order*: only requests written one after the other merge, so the server handles them at
//!   the same place among the session's requests, in the same order; and no write lands
//!   between them (ZooKeeper's `CommitProcessor` drains the reads in flight before it applies
//!   a commit), so a watch event comes before all of them or after all of them, as the
//!   client's guarantee needs (an event before the data that follows it).
//! - *Results*: each read succeeds or fails on its own in a `multiRead`, with the codes a
//!   `getData` gets; each caller gets its own reply body, cut out of the `multiRead`'s reply,
//!   and decodes it as a `getData` reply.
//! - *Size*: at most [`merge_limit`] reads merge, so that even nodes of the largest size the
//!   server stores fit in one reply the client reads: three with the default limits (4 MiB
//!   replies, 1 MiB `jute.maxbuffer`).
//! - *Failures*: a lost connection, a timeout or the server's error for the whole request
//!   fail every merged call with the same error, as they would have failed each of them.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use zk_proto::records::{GetDataResponse, MultiHeader};
use zk_proto::{ErrorCode, OpCode, Record, SERVER_MAX_BUFFER};

use crate::command::ReplySender;
use crate::error::{Error, Result};

/// The most reads one `multiRead` takes, whatever the limits.
const MAX_MERGED: usize = 64;

/// Bytes a `getData` result adds to a `multiRead` reply besides the node's data: its header
/// (type, done, err), the data's length and the stat, with room to spare.
const PART_OVERHEAD: usize = 128;

// Three results of the most data a 1 MiB server stores (data + 81 bytes each), the closing
// header and the reply header fit in the default 4 MiB reply.
const _: () = assert!(3 * (SERVER_MAX_BUFFER + 81) + 9 + 16 <= zk_proto::DEFAULT_MAX_FRAME_LEN);

/// How many reads may share one `multiRead`: as many as fit in a reply of `max_frame_len`
/// when every node holds the most data a server with a `jute.maxbuffer` of
/// `max(max_request_len, 1 MiB)` stores. 1 turns merging off.
pub(crate) fn merge_limit(max_frame_len: usize, max_request_len: usize) -> usize {
    let node = max_request_len.max(SERVER_MAX_BUFFER) + PART_OVERHEAD;
    (max_frame_len.saturating_sub(64) / node).clamp(1, MAX_MERGED)
}

/// The last request written, while it is still in the outbox and can take more reads.
#[derive(Debug)]
pub(crate) struct Tail {
    /// Where its frame starts in the outbox, and where it ends.
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) xid: i32,
    /// The bodies of its reads (`GetDataRequest`s), in order; empty while it is one plain
    /// `getData` (its body is in the outbox, copied only if another read joins it).
    pub(crate) parts: Vec<Bytes>,
}

/// A call merged into another's request: where its reply goes, and its span.
#[derive(Debug)]
pub(crate) struct Part {
    pub(crate) reply: ReplySender,
    /// Its `zk_request` span, closed when the part is dropped (answered or failed).
    pub(crate) _span: tracing::Span,
}

/// Whether `op` with `body` may merge: a `getData` whose watch flag (its last byte) is off.
pub(crate) fn mergeable(op: OpCode, body: &[u8], watch: bool) -> bool {
    op == OpCode::GetData && !watch && body.last() == Some(&0)
}

/// Writes the `multiRead` frame of `parts` with `xid` at the end of `out`.
pub(crate) fn write_multi_read(out: &mut BytesMut, xid: i32, parts: &[Bytes]) {
    zk_proto::frame::encode_frame(out, |b| {
        b.put_i32(xid);
        b.put_i32(OpCode::MultiRead.as_i32());
        for part in parts {
            MultiHeader {
                op: OpCode::GetData.as_i32(),
                done: false,
                err: -1,
            }
            .encode(b);
            b.put_slice(part);
        }
        MultiHeader {
            op: -1,
            done: true,
            err: -1,
        }
        .encode(b);
    });
}

/// Cuts a `multiRead` reply `body` into one `getData` reply body or error per read; `n`
/// results are expected. A reply that does not parse fails the reads it does not cover.
pub(crate) fn split_reply(mut body: Bytes, n: usize) -> Vec<Result<Bytes>> {
    let mut results = Vec::with_capacity(n);
    while results.len() < n {
        match next_result(&mut body) {
            Some(r) => results.push(r),
            None => break,
        }
    }
    while results.len() < n {
        results.push(Err(Error::UnexpectedReply(
            "multiRead reply has fewer results than the merged reads",
        )));
    }
    results
}

/// The next result of a `multiRead` reply, or `None` when it does not parse.
fn next_result(body: &mut Bytes) -> Option<Result<Bytes>> {
    let header = MultiHeader::decode(body).ok()?;
    if header.done {
        return None;
    }
    if header.op == -1 {
        // An error result: its code (again) as the body.
        if body.remaining() < 4 {
            return None;
        }
        let code = ErrorCode::from_i32(body.get_i32());
        return Some(Err(code.into()));
    }
    if header.op != OpCode::GetData.as_i32() {
        return None;
    }
    let mut rest = body.clone();
    GetDataResponse::decode(&mut rest).ok()?;
    let used = body.len() - rest.len();
    Some(Ok(body.split_to(used)))
}

#[cfg(test)]
mod tests {
    use zk_proto::records::{GetDataRequest, MultiResponse, MultiResult};
    use zk_proto::{decode_exact, Stat};

    use super::*;

    fn get(path: &str) -> Bytes {
        let mut b = BytesMut::new();
        GetDataRequest {
            path: path.into(),
            watch: false,
        }
        .encode(&mut b);
        b.freeze()
    }

    #[test]
    fn three_reads_merge_with_the_default_limits_and_more_with_larger_replies() {
        let default = merge_limit(zk_proto::DEFAULT_MAX_FRAME_LEN, SERVER_MAX_BUFFER);
        assert_eq!(default, 3);
        assert_eq!(merge_limit(1024 * 1024, SERVER_MAX_BUFFER), 1);
        assert_eq!(merge_limit(64 * 1024 * 1024, SERVER_MAX_BUFFER), 63);
        assert_eq!(merge_limit(usize::MAX, SERVER_MAX_BUFFER), MAX_MERGED);
        // A server told to store larger nodes merges fewer.
        assert_eq!(
            merge_limit(zk_proto::DEFAULT_MAX_FRAME_LEN, 2 * SERVER_MAX_BUFFER),
            1
        );
    }

    #[test]
    fn the_frame_is_a_multi_read_the_codec_decodes() {
        let parts = [get("/a"), get("/b/c")];
        let mut out = BytesMut::from(&b"xx"[..]);
        write_multi_read(&mut out, 7, &parts);
        let mut frame = out.split_off(2).freeze();
        frame.advance(4);
        let header = zk_proto::RequestHeader::decode(&mut frame).unwrap();
        assert_eq!((header.xid, header.op), (7, OpCode::MultiRead.as_i32()));
        let req: zk_proto::records::MultiRequest = decode_exact(frame).unwrap();
        assert_eq!(req.ops.len(), 2);
        assert!(mergeable(OpCode::GetData, &parts[0], false));
        assert!(!mergeable(OpCode::GetData, &parts[0], true));
        assert!(!mergeable(OpCode::GetChildren, &parts[0], false));
    }

    #[test]
    fn a_reply_is_cut_into_each_reads_own_reply() {
        let stat = Stat {
            version: 4,
            ..Stat::default()
        };
        let mut body = BytesMut::new();
        MultiResponse {
            results: vec![
                MultiResult::GetData(GetDataResponse {
                    data: Bytes::from_static(b"one"),
                    stat: stat.clone(),
                }),
                MultiResult::Error(ErrorCode::NoNode),
                MultiResult::GetData(GetDataResponse {
                    data: Bytes::new(),
                    stat,
                }),
            ],
        }
        .encode(&mut body);
        let results = split_reply(body.freeze(), 3);
        let first: GetDataResponse = decode_exact(results[0].clone().unwrap()).unwrap();
        assert_eq!((&first.data[..], first.stat.version), (&b"one"[..], 4));
        assert!(matches!(results[1], Err(Error::NoNode)));
        let third: GetDataResponse = decode_exact(results[2].clone().unwrap()).unwrap();
        assert!(third.data.is_empty());
        // Too few results, or garbage: the reads left fail, nothing panics.
        let short = split_reply(Bytes::from_static(&[0, 0, 0, 4, 0]), 2);
        assert!(short
            .iter()
            .all(|r| matches!(r, Err(Error::UnexpectedReply(_)))));
    }
}
