//! The proxy's "poison" fault: close the connection, instead of forwarding, when a chosen
//! request arrives, as a server does with a request it does not accept (ZooKeeper with a
//! packet above its `jute.maxbuffer`, ClickHouse Keeper with an opcode it does not know).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use bytes::{Buf, Bytes, BytesMut};

/// Which requests make the proxy close the connection (see
/// [`Proxy::drop_on`](super::Proxy::drop_on)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DropRule {
    /// Requests of this opcode (e.g. `106`, `addWatch`).
    pub opcode: Option<i32>,
    /// Requests whose packet (length prefix excluded) is larger than this many bytes, as a
    /// server with `jute.maxbuffer` set to it.
    pub larger_than: Option<usize>,
}

impl DropRule {
    /// Drop on requests of `opcode`.
    pub fn opcode(opcode: i32) -> DropRule {
        DropRule {
            opcode: Some(opcode),
            larger_than: None,
        }
    }

    /// Drop on requests larger than `len` bytes.
    pub fn larger_than(len: usize) -> DropRule {
        DropRule {
            opcode: None,
            larger_than: Some(len),
        }
    }

    /// Whether this request packet (length prefix included) matches.
    fn matches(&self, packet: &Bytes) -> bool {
        let len = packet.len().saturating_sub(4);
        if self.larger_than.is_some_and(|max| len > max) {
            return true;
        }
        let Some(opcode) = self.opcode else {
            return false;
        };
        let mut body = packet.slice(4.min(packet.len())..);
        if body.remaining() < 8 {
            return false;
        }
        let _xid = body.get_i32();
        body.get_i32() == opcode
    }
}

/// The rule in force and what it did.
#[derive(Debug, Default)]
pub(super) struct Dropper {
    rule: Mutex<Option<DropRule>>,
    /// Connections closed because of the rule.
    pub(super) dropped: AtomicU64,
    /// `ConnectRequest`s asking for a new session (session id 0).
    pub(super) new_sessions: AtomicU64,
    /// Turn every resume into a request for a new session.
    pub(super) no_resume: AtomicBool,
}

impl Dropper {
    pub(super) fn set(&self, rule: Option<DropRule>) {
        *self.rule.lock().unwrap_or_else(|e| e.into_inner()) = rule;
    }

    /// Whether the request `packet` must close the connection (counted).
    pub(super) fn drops(&self, packet: &Bytes) -> bool {
        let rule = *self.rule.lock().unwrap_or_else(|e| e.into_inner());
        let hit = rule.is_some_and(|r| r.matches(packet));
        if hit {
            self.dropped.fetch_add(1, Ordering::SeqCst);
        }
        hit
    }

    /// Notes a connection's first client packet, the `ConnectRequest` (length, protocol
    /// version, last zxid, timeout, then the session id at bytes 20..28), and with
    /// `no_resume` turns a resume into a request for a new session: the server then answers
    /// with another session id, as a server that never resumes sessions (ClickHouse Keeper),
    /// and the client's session is gone.
    pub(super) fn note_connect(&self, packet: Bytes) -> Bytes {
        let Some(id) = packet.get(20..28) else {
            return packet;
        };
        let resume = id.iter().any(|b| *b != 0);
        if resume && self.no_resume.load(Ordering::SeqCst) {
            let mut p = BytesMut::from(&packet[..]);
            p[20..28].fill(0);
            self.new_sessions.fetch_add(1, Ordering::SeqCst);
            return p.freeze();
        }
        if !resume {
            self.new_sessions.fetch_add(1, Ordering::SeqCst);
        }
        packet
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(op: i32, extra: usize) -> Bytes {
        let mut v = ((8 + extra) as u32).to_be_bytes().to_vec();
        v.extend(7i32.to_be_bytes());
        v.extend(op.to_be_bytes());
        v.extend(std::iter::repeat_n(0, extra));
        Bytes::from(v)
    }

    #[test]
    fn rules_match_opcode_or_size() {
        let d = Dropper::default();
        assert!(!d.drops(&request(106, 0)));
        d.set(Some(DropRule::opcode(106)));
        assert!(d.drops(&request(106, 10)));
        assert!(!d.drops(&request(4, 10)));
        d.set(Some(DropRule::larger_than(100)));
        assert!(!d.drops(&request(5, 92)));
        assert!(d.drops(&request(5, 93)));
        assert!(!d.drops(&Bytes::from_static(&[0, 0])));
        assert_eq!(d.dropped.load(Ordering::SeqCst), 2);
    }
}
