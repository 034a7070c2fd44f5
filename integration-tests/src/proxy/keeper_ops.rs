//! ClickHouse Keeper's own `RemoveRecursive` (opcode 503), emulated on the real 3.8 server.
//!
//! What Keeper does (ClickHouse, `src/Common/ZooKeeper/ZooKeeperConstants.h`:
//! `RemoveRecursive = 503`; `ZooKeeperCommon.cpp`: the request is the path then
//! `remove_nodes_limit`, a `uint32`, and the response has no body; `KeeperStorage.cpp`: the
//! subtree is visited up to the limit and deleted in one transaction, `ZNOTEMPTY` when it has
//! more nodes than the limit; `KeeperFeatureFlags.h`: flag `REMOVE_RECURSIVE` = 4).
//!
//! A missing node is no error there: `preprocess` of the request returns `ZOK` when the
//! parent is missing (`if (!parent_node) return Coordination::Error::ZOK;`) and, with the
//! parent present, visits nothing to delete (the client does not rely on either: it sends an
//! `exists` with the request).
//!
//! How the proxy does it: a session of its own lists the subtree, then the request is
//! forwarded under the same xid as a `multi` of the deletes, deepest first (one transaction
//! on 3.8 too), as a plain `delete` of the node for a subtree over the limit (3.8 answers
//! `NotEmpty`, the node having children), or as an `exists` of `/` for a missing node (no
//! error). The reply is
//! turned back into Keeper's: no body, the first error of the `multi` in its header. A
//! subtree that changes between the listing and the `multi` fails it (`NotEmpty`/`NoNode`)
//! where Keeper, listing inside its transaction, would not.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use super::event_zxid::Side;
use crate::probe::{ProbeError, Session, ERR_NO_NODE};

/// Keeper's `RemoveRecursive`.
pub(super) const REMOVE_RECURSIVE: i32 = 503;
const DELETE: i32 = 2;
const EXISTS: i32 = 3;
const MULTI: i32 = 14;
const GET_CHILDREN: i32 = 8;
/// `RUNTIMEINCONSISTENCY`: what a `multi` reports for the ops after the one that failed.
const RUNTIME_INCONSISTENCY: i32 = -2;
/// The most nodes the proxy lists for one request.
const MAX_NODES: usize = 100_000;

/// The request `{len, xid, 503, path, limit}` as 3.8 requests (same xid), or `None` when it
/// cannot be read or the real server cannot be reached.
pub(super) async fn translate(side: &Side, packet: &Bytes) -> Option<Bytes> {
    let mut b = packet.slice(4..);
    if b.remaining() < 8 {
        return None;
    }
    let xid = b.get_i32();
    let _op = b.get_i32();
    let path = read_string(&mut b)?;
    if b.remaining() < 4 {
        return None;
    }
    let limit = b.get_u32() as usize;
    for _ in 0..2 {
        let mut session = side.session().await;
        let Some(s) = session.as_mut() else {
            continue;
        };
        match subtree(s, &path).await {
            Ok(Some(nodes)) if nodes.len() <= limit.max(1) => {
                return Some(request(xid, MULTI, &deletes(&nodes)));
            }
            // Missing: Keeper answers ZOK (see the module docs); an exists of "/" gets that.
            Ok(None) => return Some(request(xid, EXISTS, &exists_root())),
            // Over the limit: NotEmpty, the node having children.
            Ok(Some(_)) => return Some(request(xid, DELETE, &delete_body(&path))),
            Err(_) => *session = None,
        }
    }
    None
}

/// A reply to a translated request as Keeper's `RemoveRecursive` reply: no body, the error in
/// the header (a `multi`'s first error).
pub(super) fn reply(packet: &Bytes) -> Bytes {
    let mut b = packet.slice(4..);
    if b.remaining() < 16 {
        return packet.clone();
    }
    let xid = b.get_i32();
    let zxid = b.get_i64();
    let mut err = b.get_i32();
    if err == 0 {
        err = first_multi_error(&mut b).unwrap_or(0);
    }
    let mut out = BytesMut::with_capacity(20);
    out.put_u32(16);
    out.put_i32(xid);
    out.put_i64(zxid);
    out.put_i32(err);
    out.freeze()
}

/// `path` and its subtree, parents before children; `None` when `path` does not exist.
async fn subtree(s: &mut Session, path: &str) -> Result<Option<Vec<String>>, ProbeError> {
    let mut nodes = vec![path.to_owned()];
    let mut next = 0;
    while next < nodes.len() && nodes.len() <= MAX_NODES {
        let parent = nodes[next].clone();
        let mut body = string(&parent);
        body.push(0);
        match s.call(GET_CHILDREN, &body).await {
            Ok(mut reply) => {
                let count = if reply.remaining() >= 4 {
                    reply.get_i32()
                } else {
                    0
                };
                for _ in 0..count.max(0) {
                    let Some(name) = read_string(&mut reply) else {
                        break;
                    };
                    nodes.push(child(&parent, &name));
                }
            }
            Err(ProbeError::Server(ERR_NO_NODE)) if next == 0 => return Ok(None),
            // Gone meanwhile: the multi will say so.
            Err(ProbeError::Server(ERR_NO_NODE)) => {}
            Err(e) => return Err(e),
        }
        next += 1;
    }
    Ok(Some(nodes))
}

/// A `multi` body deleting `nodes` (parents first) children first.
fn deletes(nodes: &[String]) -> Vec<u8> {
    let mut body = Vec::new();
    for node in nodes.iter().rev() {
        body.extend(DELETE.to_be_bytes());
        body.push(0);
        body.extend((-1i32).to_be_bytes());
        body.extend(delete_body(node));
    }
    body.extend((-1i32).to_be_bytes());
    body.push(1);
    body.extend((-1i32).to_be_bytes());
    body
}

fn exists_root() -> Vec<u8> {
    let mut body = string("/");
    body.push(0);
    body
}

fn delete_body(path: &str) -> Vec<u8> {
    let mut body = string(path);
    body.extend((-1i32).to_be_bytes());
    body
}

/// The first error of a `MultiResponse` body (`RUNTIMEINCONSISTENCY` only when nothing else).
fn first_multi_error(b: &mut Bytes) -> Option<i32> {
    let mut fallback = None;
    for _ in 0..MAX_NODES {
        if b.remaining() < 9 {
            break;
        }
        let kind = b.get_i32();
        let done = b.get_u8() != 0;
        let _ = b.get_i32();
        if done {
            break;
        }
        if kind == -1 && b.remaining() >= 4 {
            let err = b.get_i32();
            if err != 0 && err != RUNTIME_INCONSISTENCY {
                return Some(err);
            }
            fallback = fallback.or(Some(err).filter(|e| *e != 0));
        }
    }
    fallback
}

fn request(xid: i32, op: i32, body: &[u8]) -> Bytes {
    let mut p = BytesMut::with_capacity(12 + body.len());
    p.put_u32((8 + body.len()) as u32);
    p.put_i32(xid);
    p.put_i32(op);
    p.put_slice(body);
    p.freeze()
}

fn string(s: &str) -> Vec<u8> {
    let mut v = (s.len() as i32).to_be_bytes().to_vec();
    v.extend(s.as_bytes());
    v
}

fn read_string(b: &mut Bytes) -> Option<String> {
    if b.remaining() < 4 {
        return None;
    }
    let len = usize::try_from(b.get_i32()).ok()?;
    if b.remaining() < len {
        return None;
    }
    String::from_utf8(b.split_to(len).to_vec()).ok()
}

fn child(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deletes_go_children_first_and_end_the_multi() {
        let body = deletes(&["/a".to_owned(), "/a/b".to_owned()]);
        let mut b = Bytes::from(body);
        assert_eq!(b.get_i32(), DELETE);
        b.advance(5);
        assert_eq!(read_string(&mut b).as_deref(), Some("/a/b"));
        b.advance(4);
        assert_eq!(b.get_i32(), DELETE);
        b.advance(5);
        assert_eq!(read_string(&mut b).as_deref(), Some("/a"));
        b.advance(4);
        assert_eq!((b.get_i32(), b.get_u8()), (-1, 1));
    }

    #[test]
    fn a_failed_multi_becomes_its_first_error_and_no_body() {
        // Reply header ok; results: an error result NOTEMPTY (-111), then RUNTIMEINCONSISTENCY.
        let mut p = BytesMut::new();
        p.put_u32(0);
        p.put_i32(7);
        p.put_i64(42);
        p.put_i32(0);
        for err in [-111, RUNTIME_INCONSISTENCY] {
            p.put_i32(-1);
            p.put_u8(0);
            p.put_i32(err);
            p.put_i32(err);
        }
        p.put_i32(-1);
        p.put_u8(1);
        p.put_i32(-1);
        let out = reply(&p.freeze());
        assert_eq!(out.len(), 20);
        assert_eq!(&out[4..8], &7i32.to_be_bytes());
        assert_eq!(&out[8..16], &42i64.to_be_bytes());
        assert_eq!(&out[16..20], &(-111i32).to_be_bytes());
    }
}
