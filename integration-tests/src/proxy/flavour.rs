//! Server flavours emulated in front of the real ZooKeeper 3.8 server: the proxy answers the
//! requests a given server does not know the way that server does, shows or hides what it
//! shows, and forwards the rest (see [`Proxy::emulate`](super::Proxy::emulate)).
//!
//! Sources of each behaviour:
//! * ZooKeeper, an unknown opcode: `ZooKeeperServer.submitRequestNow` sends every request whose
//!   type `Request.isValid` rejects to `UnimplementedRequestProcessor`, which answers
//!   `UNIMPLEMENTED` (-6) and then calls `cnxn.sendCloseSession()`, closing the connection (the
//!   session lives on). The proxy gets exactly that from the real 3.8 server by rewriting the
//!   request's opcode to one 3.8 does not know ([`UNKNOWN_OPCODE`]).
//! * Which opcodes each ZooKeeper lacks: `create2` (15), `createContainer` (19), `createTTL`
//!   (21), `reconfig` (16), `checkWatches`/`removeWatches` (17, 18) arrived in 3.5;
//!   `multiRead` (22), `getEphemerals` (103), `getAllChildrenNumber` (104), `setWatches2`
//!   (105) and `addWatch` (106) in 3.6; `whoAmI` (107) in 3.7 (`ZooDefs.OpCode` of each
//!   release).
//! * ClickHouse Keeper: closes the connection on an opcode it does not know, without an
//!   answer (ClickHouse issues #48141, #55595); never resumes a session (#116690); shows what
//!   it supports as `/keeper/api_version` and `/keeper/feature_flags` (ClickHouse
//!   `src/Coordination/KeeperFeatureFlags.{h,cpp}`). The opcodes it knows are the `OpNum`
//!   values of `src/Common/ZooKeeper/ZooKeeperConstants.h`; releases before late 2025 lack
//!   `create2` (#88797, #90741), `addWatch` (#88813), TTL (#100397) and container (#108908)
//!   nodes; `getEphemerals`, `getAllChildrenNumber`, `whoAmI` and SASL are absent in all.
//! * ZooKeeper 3.9 differs from 3.8 in the zxid of watch events (ZOOKEEPER-4655): its
//!   notifications carry the zxid of the transaction that fired them, which the proxy reads
//!   back from the 3.8 server's tree ([`Emulation::event_zxids`]; sources and method in
//!   `event_zxid.rs`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use bytes::{Buf, BufMut, Bytes, BytesMut};

/// An opcode no ZooKeeper knows: the real server answers it as an unknown request.
pub const UNKNOWN_OPCODE: i32 = 0x7ff0;

/// How a server answers a request it does not support.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// ZooKeeper: `UNIMPLEMENTED` (-6), then the connection is closed; the session lives on.
    Unimplemented,
    /// ClickHouse Keeper: the connection is closed without an answer; with
    /// [`Emulation::no_resume`] the session is gone too.
    Close,
}

/// A server flavour for [`Proxy::emulate`](super::Proxy::emulate).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Emulation {
    /// A name for messages (`"zookeeper-3.5"`).
    pub name: &'static str,
    /// Opcodes the server does not support (top level, or inside a `multi`).
    pub unsupported: Vec<i32>,
    /// How it answers them.
    pub refusal: Refusal,
    /// Turn every session resume into a new session (Keeper).
    pub no_resume: bool,
    /// Where on the real server the emulated `/keeper/...` nodes are: reads of `/keeper` and
    /// below go to `<keeper_root>/keeper/...` instead (Keeper only).
    pub keeper_root: Option<String>,
    /// Notifications carry the zxid of the change that fired them, as from ZooKeeper 3.9
    /// (ZOOKEEPER-4655); otherwise -1, as from 3.4 to 3.8 and Keeper.
    pub event_zxids: bool,
    /// The server has Keeper's `RemoveRecursive` (503); otherwise it is unsupported like
    /// any opcode in [`unsupported`](Self::unsupported).
    pub remove_recursive: bool,
    /// Keeper's own requests the server has are carried out on the 3.8 server
    /// (`keeper_ops.rs`); `false` in front of a real Keeper, which does them itself.
    pub translate_keeper_ops: bool,
}

/// Opcodes ZooKeeper 3.5 added.
const SINCE_3_5: [i32; 6] = [15, 16, 17, 18, 19, 21];
/// Opcodes ZooKeeper 3.6 added.
const SINCE_3_6: [i32; 5] = [22, 103, 104, 105, 106];
/// Opcodes ZooKeeper 3.7 added.
const SINCE_3_7: [i32; 1] = [107];

impl Emulation {
    fn zookeeper(name: &'static str, unsupported: Vec<i32>) -> Emulation {
        Emulation {
            name,
            unsupported,
            refusal: Refusal::Unimplemented,
            no_resume: false,
            keeper_root: None,
            event_zxids: false,
            remove_recursive: false,
            translate_keeper_ops: false,
        }
    }

    /// ZooKeeper 3.4: none of the opcodes of 3.5 and later.
    pub fn zookeeper_3_4() -> Emulation {
        let ops = [&SINCE_3_5[..], &SINCE_3_6, &SINCE_3_7].concat();
        Emulation::zookeeper("zookeeper-3.4", ops)
    }

    /// ZooKeeper 3.5: no `addWatch`, `multiRead`, `getEphemerals`, `getAllChildrenNumber`,
    /// `whoAmI`.
    pub fn zookeeper_3_5() -> Emulation {
        Emulation::zookeeper("zookeeper-3.5", [&SINCE_3_6[..], &SINCE_3_7].concat())
    }

    /// ZooKeeper 3.6: no `whoAmI`.
    pub fn zookeeper_3_6() -> Emulation {
        Emulation::zookeeper("zookeeper-3.6", SINCE_3_7.to_vec())
    }

    /// ZooKeeper 3.8: the real server as it is (every opcode; notifications without a zxid).
    pub fn zookeeper_3_8() -> Emulation {
        Emulation::zookeeper("zookeeper-3.8", Vec::new())
    }

    /// ZooKeeper 3.9: every opcode of 3.8, and notifications carry the zxid of the change
    /// that fired them (ZOOKEEPER-4655; see [`event_zxids`](Self::event_zxids)).
    pub fn zookeeper_3_9() -> Emulation {
        Emulation {
            event_zxids: true,
            ..Emulation::zookeeper("zookeeper-3.9", Vec::new())
        }
    }

    /// ClickHouse Keeper before late 2025, its `/keeper` nodes under `keeper_root` on the
    /// real server: no `create2`, `createContainer`, `createTTL`, `addWatch`,
    /// `setWatches2`, `getEphemerals`, `getAllChildrenNumber`, `whoAmI`,
    /// `checkWatches`/`removeWatches`; closes the connection on them; never resumes.
    pub fn keeper_old(keeper_root: &str) -> Emulation {
        Emulation {
            name: "keeper-old",
            // create2, createContainer, createTTL, addWatch, setWatches2, getEphemerals,
            // getAllChildrenNumber, whoAmI, checkWatches/removeWatches.
            unsupported: vec![15, 17, 18, 19, 21, 103, 104, 105, 106, 107],
            refusal: Refusal::Close,
            no_resume: true,
            keeper_root: Some(keeper_root.to_owned()),
            event_zxids: false,
            remove_recursive: false,
            translate_keeper_ops: false,
        }
    }

    /// ClickHouse Keeper of 2026 with `create2`, `addWatch`, TTL and container nodes
    /// enabled, and its own `RemoveRecursive` (`keeper_ops.rs`): still no `getEphemerals`,
    /// `getAllChildrenNumber`, `whoAmI`.
    pub fn keeper_2026(keeper_root: &str) -> Emulation {
        Emulation {
            name: "keeper-2026",
            unsupported: vec![17, 18, 103, 104, 107],
            remove_recursive: true,
            translate_keeper_ops: true,
            ..Emulation::keeper_old(keeper_root)
        }
    }

    /// Keeper's own opcodes (500 and up) are unknown to every ZooKeeper and to a Keeper
    /// without them.
    fn refuses(&self, op: i32) -> bool {
        self.unsupported.contains(&op) || (op >= 500 && !(self.remove_recursive && op == 503))
    }
}

/// What the proxy does with one request.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Action {
    /// Forward this packet (possibly rewritten).
    Forward(Bytes),
    /// Close the connection without forwarding.
    Close,
}

/// The emulation in force and what it refused.
#[derive(Debug, Default)]
pub(super) struct Emulator {
    rule: Mutex<Option<Emulation>>,
    /// Requests the emulated server does not support that reached the proxy.
    pub(super) refused: AtomicU64,
    /// Keeper's own requests carried out on the 3.8 server.
    pub(super) translated: AtomicU64,
}

impl Emulator {
    pub(super) fn set(&self, rule: Option<Emulation>) {
        *self.rule.lock().unwrap_or_else(|e| e.into_inner()) = rule;
    }

    pub(super) fn count_translated(&self) {
        self.translated.fetch_add(1, Ordering::SeqCst);
    }

    pub(super) fn get(&self) -> Option<Emulation> {
        self.rule.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// What to do with the request `packet` (length prefix included).
    pub(super) fn handle(&self, packet: Bytes) -> Action {
        let Some(rule) = self.get() else {
            return Action::Forward(packet);
        };
        let Some(mut body) = packet.get(4..).map(Bytes::copy_from_slice) else {
            return Action::Forward(packet);
        };
        if body.remaining() < 8 {
            return Action::Forward(packet);
        }
        let xid = body.get_i32();
        let op = body.get_i32();
        let refused =
            rule.refuses(op) || (op == MULTI && multi_ops(&body).iter().any(|o| rule.refuses(*o)));
        if refused {
            self.refused.fetch_add(1, Ordering::SeqCst);
            return match rule.refusal {
                Refusal::Close => Action::Close,
                Refusal::Unimplemented => Action::Forward(rewrite(xid, UNKNOWN_OPCODE, &body)),
            };
        }
        if let Some(root) = &rule.keeper_root {
            if matches!(op, EXISTS | GET_DATA | GET_CHILDREN | GET_CHILDREN2) {
                if let Some(moved) = keeper_path(root, &body) {
                    return Action::Forward(rewrite(xid, op, &moved));
                }
            }
        }
        Action::Forward(packet)
    }
}

const EXISTS: i32 = 3;
const GET_DATA: i32 = 4;
const GET_CHILDREN: i32 = 8;
const GET_CHILDREN2: i32 = 12;
const MULTI: i32 = 14;

/// A request packet: length, xid, opcode, body.
fn rewrite(xid: i32, op: i32, body: &[u8]) -> Bytes {
    let mut p = BytesMut::with_capacity(12 + body.len());
    p.put_u32((8 + body.len()) as u32);
    p.put_i32(xid);
    p.put_i32(op);
    p.put_slice(body);
    p.freeze()
}

/// A `{path, watch}` body whose path is `/keeper` or below, moved under `root`.
fn keeper_path(root: &str, body: &Bytes) -> Option<Vec<u8>> {
    let mut b = body.clone();
    let path = read_string(&mut b)?;
    if path != "/keeper" && !path.starts_with("/keeper/") {
        return None;
    }
    let moved = format!("{root}{path}");
    let mut out = Vec::with_capacity(4 + moved.len() + b.remaining());
    out.extend((moved.len() as i32).to_be_bytes());
    out.extend(moved.as_bytes());
    out.extend(b.chunk());
    Some(out)
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

fn skip(b: &mut Bytes, n: usize) -> Option<()> {
    (b.remaining() >= n).then(|| b.advance(n))
}

fn skip_buffer(b: &mut Bytes) -> Option<()> {
    if b.remaining() < 4 {
        return None;
    }
    let len = b.get_i32();
    if len < 0 {
        return Some(());
    }
    skip(b, len as usize)
}

/// The opcodes of a `multi`'s ops, as far as they can be walked.
fn multi_ops(body: &Bytes) -> Vec<i32> {
    let mut b = body.clone();
    let mut ops = Vec::new();
    for _ in 0..100_000 {
        if b.remaining() < 9 {
            break;
        }
        let kind = b.get_i32();
        let done = b.get_u8() != 0;
        let _err = b.get_i32();
        if done || kind == -1 {
            break;
        }
        ops.push(kind);
        let walked = match kind {
            // CreateRequest {path, data, acl, flags} (+ ttl for createTTL).
            1 | 15 | 19 | 21 => skip_create(&mut b, kind == 21),
            // DeleteRequest / CheckVersionRequest {path, version}.
            2 | 13 => skip_buffer(&mut b).and_then(|()| skip(&mut b, 4)),
            // SetDataRequest {path, data, version}.
            5 => skip_buffer(&mut b)
                .and_then(|()| skip_buffer(&mut b))
                .and_then(|()| skip(&mut b, 4)),
            // GetChildren / GetData {path, watch} (multiRead).
            4 | 8 => skip_buffer(&mut b).and_then(|()| skip(&mut b, 1)),
            _ => None,
        };
        if walked.is_none() {
            break;
        }
    }
    ops
}

fn skip_create(b: &mut Bytes, ttl: bool) -> Option<()> {
    skip_buffer(b)?;
    skip_buffer(b)?;
    if b.remaining() < 4 {
        return None;
    }
    let acls = b.get_i32().max(0);
    for _ in 0..acls {
        skip(b, 4)?;
        skip_buffer(b)?;
        skip_buffer(b)?;
    }
    skip(b, 4)?;
    if ttl {
        skip(b, 8)?;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(s: &str) -> Vec<u8> {
        let mut v = (s.len() as i32).to_be_bytes().to_vec();
        v.extend(s.as_bytes());
        v
    }

    fn packet(op: i32, body: &[u8]) -> Bytes {
        rewrite(9, op, body)
    }

    fn create_body(path: &str) -> Vec<u8> {
        let mut v = string(path);
        v.extend(string("data"));
        v.extend(1i32.to_be_bytes());
        v.extend(31i32.to_be_bytes());
        v.extend(string("world"));
        v.extend(string("anyone"));
        v.extend(0i32.to_be_bytes());
        v
    }

    fn multi(ops: &[(i32, Vec<u8>)]) -> Vec<u8> {
        let mut v = Vec::new();
        for (op, body) in ops {
            v.extend(op.to_be_bytes());
            v.push(0);
            v.extend((-1i32).to_be_bytes());
            v.extend(body);
        }
        v.extend((-1i32).to_be_bytes());
        v.push(1);
        v.extend((-1i32).to_be_bytes());
        v
    }

    #[test]
    fn zookeeper_refusals_become_an_unknown_opcode_and_are_counted() {
        let e = Emulator::default();
        let add_watch = packet(106, &string("/a"));
        assert_eq!(
            e.handle(add_watch.clone()),
            Action::Forward(add_watch.clone())
        );
        e.set(Some(Emulation::zookeeper_3_5()));
        let Action::Forward(p) = e.handle(add_watch) else {
            panic!("forwarded");
        };
        assert_eq!(&p[4..8], &9i32.to_be_bytes());
        assert_eq!(&p[8..12], &UNKNOWN_OPCODE.to_be_bytes());
        let get = packet(4, &string("/a"));
        assert_eq!(e.handle(get.clone()), Action::Forward(get));
        assert_eq!(e.refused.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn keeper_closes_on_refusals_inside_a_multi_too_and_moves_its_nodes() {
        let e = Emulator::default();
        e.set(Some(Emulation::keeper_old("/emu")));
        let plain = multi(&[
            (1, create_body("/x")),
            (2, [string("/y"), vec![0; 4]].concat()),
        ]);
        assert_eq!(multi_ops(&Bytes::from(plain.clone())), vec![1, 2]);
        let p = packet(14, &plain);
        assert_eq!(e.handle(p.clone()), Action::Forward(p));
        let with_create2 = multi(&[(1, create_body("/x")), (15, create_body("/z"))]);
        assert_eq!(e.handle(packet(14, &with_create2)), Action::Close);
        assert_eq!(e.handle(packet(15, &create_body("/z"))), Action::Close);
        assert_eq!(e.refused.load(Ordering::SeqCst), 2);
        let mut read = string("/keeper/api_version");
        read.push(0);
        let Action::Forward(p) = e.handle(packet(4, &read)) else {
            panic!("forwarded");
        };
        let mut expected = string("/emu/keeper/api_version");
        expected.push(0);
        assert_eq!(&p[12..], &expected[..]);
        let mut other = string("/keeperish");
        other.push(0);
        let p = packet(4, &other);
        assert_eq!(e.handle(p.clone()), Action::Forward(p));
    }
}
