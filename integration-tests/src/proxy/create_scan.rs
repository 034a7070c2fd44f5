//! Whether a request creates a node: the create opcodes, or a `multi` holding one (for
//! [`Proxy::drop_next_create_reply`](super::Proxy::drop_next_create_reply)).

use bytes::{Buf, Bytes};

use crate::probe::op;

fn is_create_op(op_code: i32) -> bool {
    matches!(
        op_code,
        op::CREATE | op::CREATE2 | op::CREATE_CONTAINER | op::CREATE_TTL
    )
}

/// Whether a request of `op_code` with `body` creates a node (a multi is scanned op by op).
pub(super) fn is_create(op_code: i32, body: &Bytes) -> bool {
    if is_create_op(op_code) {
        return true;
    }
    if op_code != op::MULTI {
        return false;
    }
    let mut b = body.clone();
    // MultiHeader { type: i32, done: bool, err: i32 } before each op; type -1 / done ends it.
    for _ in 0..100_000 {
        if b.remaining() < 9 {
            return false;
        }
        let kind = b.get_i32();
        let done = b.get_u8() != 0;
        let _err = b.get_i32();
        if done || kind == -1 {
            return false;
        }
        if is_create_op(kind) {
            return true;
        }
        let skipped = match kind {
            op::DELETE | op::CHECK => skip_string(&mut b) && skip(&mut b, 4),
            op::SET_DATA => skip_string(&mut b) && skip_string(&mut b) && skip(&mut b, 4),
            _ => false, // unknown op: its length is unknown, stop looking
        };
        if !skipped {
            return false;
        }
    }
    false
}

fn skip(b: &mut Bytes, n: usize) -> bool {
    if b.remaining() < n {
        return false;
    }
    b.advance(n);
    true
}

fn skip_string(b: &mut Bytes) -> bool {
    if b.remaining() < 4 {
        return false;
    }
    let len = b.get_i32();
    len < 0 || skip(b, len as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(kind: i32) -> Vec<u8> {
        let mut v = kind.to_be_bytes().to_vec();
        v.push(0);
        v.extend((-1i32).to_be_bytes());
        v
    }

    fn string(s: &str) -> Vec<u8> {
        let mut v = (s.len() as i32).to_be_bytes().to_vec();
        v.extend(s.as_bytes());
        v
    }

    #[test]
    fn multi_scanning_finds_a_create_after_other_ops() {
        let mut body = header(op::CHECK);
        body.extend(string("/a"));
        body.extend(3i32.to_be_bytes());
        body.extend(header(op::SET_DATA));
        body.extend(string("/a"));
        body.extend(string("data"));
        body.extend((-1i32).to_be_bytes());
        let without = Bytes::from(body.clone());
        body.extend(header(op::CREATE));
        body.extend(string("/a/b"));
        assert!(is_create(op::MULTI, &Bytes::from(body)));
        let mut end = without.to_vec();
        end.extend((-1i32).to_be_bytes());
        end.push(1);
        end.extend((-1i32).to_be_bytes());
        assert!(!is_create(op::MULTI, &Bytes::from(end)));
        assert!(is_create(op::CREATE_TTL, &Bytes::new()));
        assert!(!is_create(op::GET_DATA, &Bytes::new()));
    }
}
