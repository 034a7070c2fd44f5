//! Byte-exact golden vectors: frames that the real ZooKeeper 3.8.0 Java client and server put
//! on the wire, captured with `tests/capture/` (see `tests/fixtures/README.md`).
//!
//! Every frame is cut with `decode_frame`, decoded into its zk-proto records and re-encoded;
//! the re-encoding must give the captured bytes back. The only exception is a jute null
//! buffer or string (length `-1`), which zk-proto reads as empty and so writes back as length
//! `0`; those frames are listed in [`NULL_FIELD_FRAMES`] and checked field by field instead.

use std::collections::BTreeSet;
use std::fmt::Debug;
use std::sync::OnceLock;

use bytes::{BufMut, Bytes, BytesMut};
use zk_proto::acl::Perms;
use zk_proto::frame::{decode_frame, encode_frame, DEFAULT_MAX_FRAME_LEN};
use zk_proto::records::*;
use zk_proto::{
    decode_exact, encode_to_bytes, xid, Acl, DecodeError, ErrorCode, Id, OpCode, Record,
    ReplyHeader, RequestHeader, Stat,
};

const FILES: &[(&str, &str)] = &[
    ("acl.hex", include_str!("fixtures/acl.hex")),
    ("auth.hex", include_str!("fixtures/auth.hex")),
    ("children.hex", include_str!("fixtures/children.hex")),
    ("config.hex", include_str!("fixtures/config.hex")),
    ("connect.hex", include_str!("fixtures/connect.hex")),
    ("multi.hex", include_str!("fixtures/multi.hex")),
    ("node.hex", include_str!("fixtures/node.hex")),
    ("session.hex", include_str!("fixtures/session.hex")),
    ("watch.hex", include_str!("fixtures/watch.hex")),
];

/// Frames holding a jute null (`-1`) `buffer`: the Java client sends null data for
/// `create(path, null, ...)`, and the server answers `getData` of such a node with null data.
/// zk-proto decodes null as empty, so these re-encode with length 0 where the capture has -1;
/// everything else must match. (The null strings of `reconfig` do re-encode exactly: zk-proto
/// writes an empty reconfig string as null, because the server reads the mode from nulls.)
const NULL_FIELD_FRAMES: &[&str] = &[
    "node.create.null_data.create.req",
    "node.get_data.null.getData.rep",
    "children.get_children.create.req",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dir {
    ClientToServer,
    ServerToClient,
}

#[derive(Debug)]
struct Fixture {
    file: &'static str,
    name: String,
    dir: Dir,
    record: String,
    wire: Bytes,
}

fn fixtures() -> &'static [Fixture] {
    static ALL: OnceLock<Vec<Fixture>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut out = Vec::new();
        for (file, text) in FILES {
            for line in text.lines() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let parts: Vec<&str> = line.split_whitespace().collect();
                assert_eq!(parts.len(), 4, "{file}: bad fixture line {line:?}");
                let dir = match parts[1] {
                    "C>S" => Dir::ClientToServer,
                    "S>C" => Dir::ServerToClient,
                    other => panic!("{file}: bad direction {other}"),
                };
                out.push(Fixture {
                    file,
                    name: parts[0].to_owned(),
                    dir,
                    record: parts[2].to_owned(),
                    wire: Bytes::from(hex::decode(parts[3]).expect("fixture hex")),
                });
            }
        }
        out
    })
}

fn fixture(name: &str) -> &'static Fixture {
    fixtures()
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no fixture frame named {name}"))
}

/// Cuts the one frame out of a fixture's bytes, checking the length prefix.
fn body_of(f: &Fixture) -> Bytes {
    let mut buf = BytesMut::from(&f.wire[..]);
    let body = decode_frame(&mut buf, DEFAULT_MAX_FRAME_LEN)
        .unwrap_or_else(|e| panic!("{}: frame: {e}", f.name))
        .unwrap_or_else(|| panic!("{}: incomplete frame", f.name));
    assert!(buf.is_empty(), "{}: bytes after the frame", f.name);
    body
}

/// A reply or request with no body (ping, delete, error replies, ...).
#[derive(Debug, PartialEq, Eq)]
struct Empty;

impl Record for Empty {
    fn encode(&self, _buf: &mut BytesMut) {}
    fn decode(_buf: &mut Bytes) -> Result<Self, DecodeError> {
        Ok(Empty)
    }
}

fn handshake<T: Record>(name: &str) -> T {
    let f = fixture(name);
    decode_exact(body_of(f)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn request<T: Record>(name: &str) -> (RequestHeader, T) {
    let f = fixture(name);
    assert_eq!(f.dir, Dir::ClientToServer, "{name}");
    let mut body = body_of(f);
    let header = RequestHeader::decode(&mut body).unwrap();
    let rec = decode_exact(body).unwrap_or_else(|e| panic!("{name}: {e}"));
    (header, rec)
}

fn reply<T: Record>(name: &str) -> (ReplyHeader, T) {
    let f = fixture(name);
    assert_eq!(f.dir, Dir::ServerToClient, "{name}");
    let mut body = body_of(f);
    let header = ReplyHeader::decode(&mut body).unwrap();
    let rec = decode_exact(body).unwrap_or_else(|e| panic!("{name}: {e}"));
    (header, rec)
}

fn s(b: &[u8]) -> &str {
    std::str::from_utf8(b).unwrap()
}

// ===== every frame: decode, re-encode, compare =====

/// Decodes `body` as `T` (all of it) and returns its re-encoding, checking that the
/// re-encoding decodes to the same value.
fn reencode<T: Record + Debug + PartialEq>(name: &str, body: Bytes) -> Bytes {
    let value: T = decode_exact(body).unwrap_or_else(|e| panic!("{name}: {e}"));
    let again = encode_to_bytes(&value);
    assert_eq!(decode_exact::<T>(again.clone()).unwrap(), value, "{name}");
    again
}

fn reencode_body(f: &Fixture, body: Bytes) -> Bytes {
    let name = f.name.as_str();
    macro_rules! by_name {
        ($($ty:ident),* $(,)?) => {
            match f.record.as_str() {
                "-" => reencode::<Empty>(name, body),
                $( stringify!($ty) => reencode::<$ty>(name, body), )*
                other => panic!("{name}: fixture names unknown record {other}"),
            }
        };
    }
    by_name!(
        ConnectRequest,
        ConnectResponse,
        CreateRequest,
        CreateResponse,
        Create2Response,
        CreateTtlRequest,
        DeleteRequest,
        ExistsRequest,
        ExistsResponse,
        GetDataRequest,
        GetDataResponse,
        SetDataRequest,
        SetDataResponse,
        GetAclRequest,
        GetAclResponse,
        SetAclRequest,
        SetAclResponse,
        GetChildrenRequest,
        GetChildrenResponse,
        GetChildren2Request,
        GetChildren2Response,
        GetEphemeralsRequest,
        GetEphemeralsResponse,
        GetAllChildrenNumberRequest,
        GetAllChildrenNumberResponse,
        SyncRequest,
        SyncResponse,
        MultiRequest,
        MultiResponse,
        ReconfigRequest,
        CheckWatchesRequest,
        RemoveWatchesRequest,
        AddWatchRequest,
        ErrorResponse,
        SetWatches,
        SetWatches2,
        WatcherEvent,
        AuthPacket,
        WhoAmIResponse,
    )
}

/// Re-encodes a whole captured frame from its decoded parts.
fn reencode_frame(f: &Fixture) -> Bytes {
    let mut body = body_of(f);
    let mut out = BytesMut::new();
    match (f.record.as_str(), f.dir) {
        ("ConnectRequest" | "ConnectResponse", _) => {
            let again = reencode_body(f, body);
            encode_frame(&mut out, |b| b.put_slice(&again));
        }
        (_, Dir::ClientToServer) => {
            let header = RequestHeader::decode(&mut body).unwrap();
            let again = reencode_body(f, body);
            encode_frame(&mut out, |b| {
                header.encode(b);
                b.put_slice(&again);
            });
        }
        (_, Dir::ServerToClient) => {
            let header = ReplyHeader::decode(&mut body).unwrap();
            let again = reencode_body(f, body);
            encode_frame(&mut out, |b| {
                header.encode(b);
                b.put_slice(&again);
            });
        }
    }
    out.freeze()
}

#[test]
fn every_captured_frame_decodes_and_reencodes_byte_exact() {
    let all = fixtures();
    assert!(all.len() >= 100, "only {} fixture frames", all.len());
    let mut names = BTreeSet::new();
    for f in all {
        assert!(names.insert(f.name.as_str()), "duplicate name {}", f.name);
        let again = reencode_frame(f);
        if NULL_FIELD_FRAMES.contains(&f.name.as_str()) {
            // Same length; differs only in 4-byte windows where the capture has the jute
            // null marker and the re-encoding an empty length.
            assert_eq!(again.len(), f.wire.len(), "{}", f.name);
            assert_ne!(
                again, f.wire,
                "{} is byte-exact: drop it from the list",
                f.name
            );
            let mut i = 0;
            while i < again.len() {
                if again[i] == f.wire[i] {
                    i += 1;
                    continue;
                }
                assert_eq!(&f.wire[i..i + 4], &[0xff; 4], "{} at {i}", f.name);
                assert_eq!(&again[i..i + 4], &[0; 4], "{} at {i}", f.name);
                i += 4;
            }
        } else {
            assert_eq!(
                hex::encode(&again),
                hex::encode(&f.wire),
                "{} ({}) does not re-encode byte-exact",
                f.name,
                f.file
            );
        }
    }
    for name in NULL_FIELD_FRAMES {
        fixture(name);
    }
}

#[test]
fn every_record_family_is_covered() {
    let records: BTreeSet<&str> = fixtures().iter().map(|f| f.record.as_str()).collect();
    for want in [
        "ConnectRequest",
        "ConnectResponse",
        "CreateRequest",
        "CreateResponse",
        "Create2Response",
        "CreateTtlRequest",
        "DeleteRequest",
        "ExistsRequest",
        "ExistsResponse",
        "GetDataRequest",
        "GetDataResponse",
        "SetDataRequest",
        "SetDataResponse",
        "GetAclRequest",
        "GetAclResponse",
        "SetAclRequest",
        "SetAclResponse",
        "GetChildrenRequest",
        "GetChildrenResponse",
        "GetChildren2Request",
        "GetChildren2Response",
        "GetEphemeralsRequest",
        "GetEphemeralsResponse",
        "GetAllChildrenNumberRequest",
        "GetAllChildrenNumberResponse",
        "SyncRequest",
        "SyncResponse",
        "MultiRequest",
        "MultiResponse",
        "ReconfigRequest",
        "CheckWatchesRequest",
        "RemoveWatchesRequest",
        "AddWatchRequest",
        "ErrorResponse",
        "SetWatches",
        "SetWatches2",
        "WatcherEvent",
        "AuthPacket",
        "WhoAmIResponse",
    ] {
        assert!(records.contains(want), "no captured frame of {want}");
    }
    let ops: BTreeSet<i32> = fixtures()
        .iter()
        .filter(|f| f.dir == Dir::ClientToServer && !f.record.starts_with("Connect"))
        .map(|f| RequestHeader::decode(&mut body_of(f)).unwrap().op)
        .collect();
    for op in [
        OpCode::Create,
        OpCode::Delete,
        OpCode::Exists,
        OpCode::GetData,
        OpCode::SetData,
        OpCode::GetAcl,
        OpCode::SetAcl,
        OpCode::GetChildren,
        OpCode::Sync,
        OpCode::Ping,
        OpCode::GetChildren2,
        OpCode::Multi,
        OpCode::Create2,
        OpCode::Reconfig,
        OpCode::CheckWatches,
        OpCode::RemoveWatches,
        OpCode::CreateContainer,
        OpCode::CreateTtl,
        OpCode::MultiRead,
        OpCode::Auth,
        OpCode::SetWatches,
        OpCode::GetEphemerals,
        OpCode::GetAllChildrenNumber,
        OpCode::SetWatches2,
        OpCode::AddWatch,
        OpCode::WhoAmI,
        OpCode::CloseSession,
    ] {
        assert!(
            ops.contains(&op.as_i32()),
            "no captured request with {op:?}"
        );
    }
}

// ===== connect =====

#[test]
fn connect_new_session() {
    let req: ConnectRequest = handshake("connect.new.connect.req");
    assert_eq!(req.protocol_version, 0);
    assert_eq!(req.last_zxid_seen, 0);
    assert_eq!(req.timeout, 4000);
    assert_eq!(req.session_id, 0);
    assert_eq!(&req.passwd[..], &[0u8; 16]);
    assert!(
        req.read_only,
        "Capture.java connects with canBeReadOnly = true"
    );

    let rep: ConnectResponse = handshake("connect.new.connect.rep");
    assert_eq!(rep.protocol_version, 0);
    assert_eq!(rep.timeout, 4000);
    assert_ne!(rep.session_id, 0);
    assert_eq!(rep.passwd.len(), 16);
    assert!(!rep.read_only);
}

#[test]
fn connect_resumes_session_on_reconnect() {
    let first: ConnectResponse = handshake("connect.new.connect.rep");
    for step in ["set_watches", "set_watches2"] {
        let req: ConnectRequest = handshake(&format!("watch.reconnect.{step}.connect.req"));
        assert_eq!(req.session_id, first.session_id, "{step}");
        assert_eq!(req.passwd, first.passwd, "{step}");
        assert!(req.last_zxid_seen > 0, "{step}");
        let rep: ConnectResponse = handshake(&format!("watch.reconnect.{step}.connect.rep"));
        assert_eq!(rep.session_id, first.session_id);
        assert_eq!(rep.timeout, 4000);
    }
}

#[test]
fn connect_request_without_read_only_flag_decodes_as_false() {
    // A pre-3.4 client stops after the password; the trailing flag is optional.
    let f = fixture("connect.new.connect.req");
    let body = body_of(f);
    let short = body.slice(..body.len() - 1);
    let req: ConnectRequest = decode_exact(short).unwrap();
    assert!(!req.read_only);
    assert_eq!(req.timeout, 4000);
}

// ===== node operations =====

fn assert_open_acl(acl: &[Acl]) {
    assert_eq!(acl, Acl::open_unsafe());
}

#[test]
fn create_modes() {
    for (step, path, flags, mode) in [
        ("persistent", "/zkcap", 0, CreateMode::Persistent),
        ("ephemeral", "/zkcap/eph", 1, CreateMode::Ephemeral),
        (
            "persistent_sequential",
            "/zkcap/seq-",
            2,
            CreateMode::PersistentSequential,
        ),
        (
            "ephemeral_sequential",
            "/zkcap/eseq-",
            3,
            CreateMode::EphemeralSequential,
        ),
    ] {
        let (h, req): (_, CreateRequest) = request(&format!("node.create.{step}.create.req"));
        assert_eq!(h.op, OpCode::Create.as_i32(), "{step}");
        assert!(h.xid > 0);
        assert_eq!(req.path, path);
        assert_eq!(req.flags, flags);
        assert_eq!(CreateMode::from_flags(req.flags), Some(mode));
        assert_open_acl(&req.acl);

        let (rh, rep): (_, CreateResponse) = reply(&format!("node.create.{step}.create.rep"));
        assert_eq!(rh.xid, h.xid);
        assert_eq!(rh.err, ErrorCode::Ok);
        assert!(rh.zxid > 0);
        if mode.is_sequential() {
            let suffix = rep.path.strip_prefix(path).unwrap();
            assert_eq!(suffix.len(), 10, "{}", rep.path);
            assert!(suffix.bytes().all(|c| c.is_ascii_digit()));
        } else {
            assert_eq!(rep.path, path);
        }
    }
    let (_, req): (_, CreateRequest) = request("node.create.persistent.create.req");
    assert_eq!(s(&req.data), "root");
    let (_, req): (_, CreateRequest) = request("node.create.ephemeral_sequential.create.req");
    assert!(req.data.is_empty());
}

#[test]
fn create_with_null_data_reads_as_empty() {
    let f = fixture("node.create.null_data.create.req");
    // [len][xid][op][path len 15]["/zkcap/nulldata"][data len -1]...
    assert_eq!(&f.wire[12 + 4 + 15..12 + 4 + 15 + 4], &[0xff; 4]);
    let (_, req): (_, CreateRequest) = request(&f.name);
    assert_eq!(req.path, "/zkcap/nulldata");
    assert!(req.data.is_empty());

    let (_, rep): (_, GetDataResponse) = reply("node.get_data.null.getData.rep");
    assert!(rep.data.is_empty());
    assert_eq!(rep.stat.data_length, 0);
}

#[test]
fn create_error_reply_has_no_body() {
    let (h, _): (_, CreateRequest) = request("node.create.node_exists.create.req");
    let (rh, Empty) = reply("node.create.node_exists.create.rep");
    assert_eq!(rh.xid, h.xid);
    assert_eq!(rh.err, ErrorCode::NodeExists);
}

#[test]
fn create2_container_and_ttl() {
    let (h, req): (_, CreateRequest) = request("node.create2.create2.req");
    assert_eq!(h.op, OpCode::Create2.as_i32());
    assert_eq!((req.path.as_str(), req.flags), ("/zkcap/c2", 0));
    let (_, rep): (_, Create2Response) = reply("node.create2.create2.rep");
    assert_eq!(rep.path, "/zkcap/c2");
    assert_eq!(rep.stat.data_length, 3);
    assert_eq!(rep.stat.version, 0);
    assert_eq!(rep.stat.czxid, rep.stat.mzxid);
    assert_eq!(rep.stat.ephemeral_owner, 0);

    let (h, req): (_, CreateRequest) = request("node.create.container.createContainer.req");
    assert_eq!(h.op, OpCode::CreateContainer.as_i32());
    assert_eq!(
        CreateMode::from_flags(req.flags),
        Some(CreateMode::Container)
    );
    let (_, rep): (_, Create2Response) = reply("node.create.container.createContainer.rep");
    assert_eq!(rep.path, "/zkcap/cont");
    // The server keeps containers apart with a special ephemeralOwner internally, but the
    // stat in the create reply shows 0 (observed with 3.8.0).
    assert_eq!(rep.stat.ephemeral_owner, 0);

    let (h, req): (_, CreateTtlRequest) = request("node.create.ttl.createTTL.req");
    assert_eq!(h.op, OpCode::CreateTtl.as_i32());
    assert_eq!(req.path, "/zkcap/ttl");
    assert_eq!(req.ttl, 60_000);
    assert_eq!(
        CreateMode::from_flags(req.flags),
        Some(CreateMode::PersistentWithTtl)
    );
    assert_open_acl(&req.acl);
    let (_, rep): (_, Create2Response) = reply("node.create.ttl.createTTL.rep");
    assert_eq!(rep.path, "/zkcap/ttl");
    // As for containers, the create reply's stat does not expose the TTL encoding.
    assert_eq!(rep.stat.ephemeral_owner, 0);
}

#[test]
fn exists_hit_and_no_node() {
    let (h, req): (_, ExistsRequest) = request("node.exists.hit.exists.req");
    assert_eq!(h.op, OpCode::Exists.as_i32());
    assert_eq!(
        req,
        ExistsRequest {
            path: "/zkcap".into(),
            watch: false
        }
    );
    let (_, rep): (_, ExistsResponse) = reply("node.exists.hit.exists.rep");
    assert_eq!(rep.stat.data_length, 4);
    assert!(rep.stat.num_children > 0);

    let (_, req): (_, ExistsRequest) = request("node.exists.no_node_watch.exists.req");
    assert_eq!(
        req,
        ExistsRequest {
            path: "/zkcap/missing".into(),
            watch: true
        }
    );
    let (rh, Empty) = reply("node.exists.no_node_watch.exists.rep");
    assert_eq!(rh.err, ErrorCode::NoNode);
}

#[test]
fn get_data_set_data_and_notification() {
    let (h, req): (_, GetDataRequest) = request("node.get_data.getData.req");
    assert_eq!(h.op, OpCode::GetData.as_i32());
    assert!(!req.watch);
    let (_, rep): (_, GetDataResponse) = reply("node.get_data.getData.rep");
    assert_eq!(s(&rep.data), "root");
    assert_eq!(rep.stat.data_length, 4);

    let (_, req): (_, GetDataRequest) = request("node.get_data.watch.getData.req");
    assert_eq!(
        req,
        GetDataRequest {
            path: "/zkcap/w".into(),
            watch: true
        }
    );
    let (_, rep): (_, GetDataResponse) = reply("node.get_data.watch.getData.rep");
    assert_eq!(s(&rep.data), "v1");

    let (h, req): (_, SetDataRequest) = request("node.set_data.fires_watch.setData.req");
    assert_eq!(h.op, OpCode::SetData.as_i32());
    assert_eq!(req.path, "/zkcap/w");
    assert_eq!(s(&req.data), "v2");
    assert_eq!(req.version, -1);
    let (rh, rep): (_, SetDataResponse) = reply("node.set_data.fires_watch.setData.rep");
    assert_eq!(rep.stat.version, 1);
    assert_eq!(rep.stat.mzxid, rh.zxid);

    let (eh, ev): (_, WatcherEvent) = reply("node.set_data.fires_watch.notification.event");
    assert_eq!(eh.xid, xid::NOTIFICATION);
    assert_eq!(eh.zxid, -1);
    assert_eq!(eh.err, ErrorCode::Ok);
    assert_eq!(ev.event_type, EventType::NodeDataChanged);
    assert_eq!(ev.state, KeeperState::SyncConnected);
    assert_eq!(ev.path, "/zkcap/w");
}

#[test]
fn sync_and_delete() {
    let (h, req): (_, SyncRequest) = request("node.sync.sync.req");
    assert_eq!(h.op, OpCode::Sync.as_i32());
    assert_eq!(req.path, "/zkcap");
    let (_, rep): (_, SyncResponse) = reply("node.sync.sync.rep");
    assert_eq!(rep.path, "/zkcap");

    let (h, req): (_, DeleteRequest) = request("node.delete.delete.req");
    assert_eq!(h.op, OpCode::Delete.as_i32());
    assert_eq!(
        req,
        DeleteRequest {
            path: "/zkcap/m1".into(),
            version: 1
        }
    );
    let (rh, Empty) = reply("node.delete.delete.rep");
    assert_eq!(rh.err, ErrorCode::Ok);

    let (_, req): (_, DeleteRequest) = request("node.delete.not_empty.delete.req");
    assert_eq!(req.version, -1);
    let (rh, Empty) = reply("node.delete.not_empty.delete.rep");
    assert_eq!(rh.err, ErrorCode::NotEmpty);
}

// ===== ACLs and auth =====

#[test]
fn get_and_set_acl() {
    let (h, req): (_, GetAclRequest) = request("acl.get_acl.getACL.req");
    assert_eq!(h.op, OpCode::GetAcl.as_i32());
    assert_eq!(req.path, "/zkcap");
    let (_, rep): (_, GetAclResponse) = reply("acl.get_acl.getACL.rep");
    assert_open_acl(&rep.acl);
    assert_eq!(rep.stat.aversion, 0);

    let (h, req): (_, SetAclRequest) = request("acl.set_acl.setACL.req");
    assert_eq!(h.op, OpCode::SetAcl.as_i32());
    assert_eq!(req.path, "/zkcap/acl");
    assert_eq!(req.version, -1);
    assert_eq!(
        req.acl,
        vec![
            Acl::new(Perms::ALL, Id::new("world", "anyone")),
            Acl::new(Perms::READ | Perms::WRITE, Id::new("ip", "127.0.0.1")),
        ]
    );
    let (_, rep): (_, SetAclResponse) = reply("acl.set_acl.setACL.rep");
    assert_eq!(rep.stat.aversion, 1);
}

#[test]
fn auth_digest_and_creator_acl() {
    let (h, req): (_, AuthPacket) = request("auth.add_auth.auth.req");
    assert_eq!(h.xid, xid::AUTH);
    assert_eq!(h.op, OpCode::Auth.as_i32());
    assert_eq!(req.auth_type, 0);
    assert_eq!(req.scheme, "digest");
    assert_eq!(s(&req.auth), "user:secret");
    let (rh, Empty) = reply("auth.add_auth.auth.rep");
    assert_eq!(rh.xid, xid::AUTH);
    assert_eq!(rh.err, ErrorCode::Ok);

    let (h, Empty) = request("auth.who_am_i.whoAmI.req");
    assert_eq!(h.op, OpCode::WhoAmI.as_i32());
    let (_, rep): (_, WhoAmIResponse) = reply("auth.who_am_i.whoAmI.rep");
    assert_eq!(
        rep.client_info,
        vec![
            ClientInfo {
                auth_scheme: "ip".into(),
                user: "127.0.0.1".into()
            },
            ClientInfo {
                auth_scheme: "digest".into(),
                user: "user".into()
            },
        ]
    );

    let (_, req): (_, CreateRequest) = request("acl.create_creator_all.create.req");
    assert_eq!(req.acl, Acl::creator_all());
    let (_, rep): (_, GetAclResponse) = reply("acl.create_creator_all.getACL.rep");
    assert_eq!(rep.acl.len(), 1);
    assert_eq!(rep.acl[0].perms, Perms::ALL);
    assert_eq!(rep.acl[0].id.scheme, "digest");
    // digest ids are "user:base64(sha1(user:password))".
    let (user, hash) = rep.acl[0].id.id.split_once(':').unwrap();
    assert_eq!(user, "user");
    assert_eq!(hash.len(), 28);
}

// ===== children =====

#[test]
fn children_family() {
    let (h, req): (_, GetChildrenRequest) = request("children.get_children.getChildren.req");
    assert_eq!(h.op, OpCode::GetChildren.as_i32());
    assert_eq!(req.path, "/zkcap/kids");
    assert!(!req.watch);
    let (_, rep): (_, GetChildrenResponse) = reply("children.get_children.getChildren.rep");
    let mut kids = rep.children.clone();
    kids.sort();
    assert_eq!(kids, ["a", "b"]);

    let (_, req): (_, GetChildrenRequest) = request("children.get_children.watch.getChildren.req");
    assert!(req.watch);

    let (h, req): (_, GetChildren2Request) = request("children.get_children2.getChildren2.req");
    assert_eq!(h.op, OpCode::GetChildren2.as_i32());
    assert_eq!(req.path, "/zkcap/kids");
    let (_, rep): (_, GetChildren2Response) = reply("children.get_children2.getChildren2.rep");
    assert_eq!(rep.children.len(), 2);
    assert_eq!(rep.stat.num_children, 2);
    assert_eq!(rep.stat.cversion, 2);

    let (h, req): (_, GetEphemeralsRequest) = request("children.get_ephemerals.getEphemerals.req");
    assert_eq!(h.op, OpCode::GetEphemerals.as_i32());
    assert_eq!(req.prefix_path, "/zkcap");
    let (_, rep): (_, GetEphemeralsResponse) = reply("children.get_ephemerals.getEphemerals.rep");
    assert_eq!(rep.ephemerals.len(), 2);
    assert!(rep.ephemerals.iter().any(|p| p == "/zkcap/eph"));
    assert!(rep.ephemerals.iter().any(|p| p.starts_with("/zkcap/eseq-")));

    let (h, req): (_, GetAllChildrenNumberRequest) =
        request("children.get_all_children_number.getAllChildrenNumber.req");
    assert_eq!(h.op, OpCode::GetAllChildrenNumber.as_i32());
    assert_eq!(req.path, "/zkcap");
    let (_, rep): (_, GetAllChildrenNumberResponse) =
        reply("children.get_all_children_number.getAllChildrenNumber.rep");
    // eph, seq-, eseq-, nulldata, c2, cont, ttl, w, acl, kids, kids/a, kids/b
    assert_eq!(rep.total_number, 12);
}

// ===== multi =====

#[test]
fn multi_success() {
    let (h, req): (_, MultiRequest) = request("multi.multi.ok.multi.req");
    assert_eq!(h.op, OpCode::Multi.as_i32());
    let codes: Vec<OpCode> = req.ops.iter().map(MultiOp::op_code).collect();
    assert_eq!(
        codes,
        [
            OpCode::Create,
            OpCode::CreateContainer,
            OpCode::CreateTtl,
            OpCode::SetData,
            OpCode::Check,
            OpCode::Delete
        ]
    );
    match &req.ops[2] {
        MultiOp::CreateTtl(r) => assert_eq!((r.path.as_str(), r.ttl), ("/zkcap/mt", 60_000)),
        other => panic!("{other:?}"),
    }
    match &req.ops[4] {
        MultiOp::Check(r) => assert_eq!((r.path.as_str(), r.version), ("/zkcap/m1", 1)),
        other => panic!("{other:?}"),
    }

    let (rh, rep): (_, MultiResponse) = reply("multi.multi.ok.multi.rep");
    assert_eq!(rh.err, ErrorCode::Ok);
    assert_eq!(rep.results.len(), 6);
    assert_eq!(
        rep.results[0],
        MultiResult::Create(CreateResponse {
            path: "/zkcap/m1".into()
        })
    );
    // The server answers createContainer and createTTL with create2 results.
    for (i, path) in [(1, "/zkcap/mc"), (2, "/zkcap/mt")] {
        match &rep.results[i] {
            MultiResult::Create2(r) => assert_eq!(r.path, path),
            other => panic!("{other:?}"),
        }
    }
    match &rep.results[3] {
        MultiResult::SetData(r) => assert_eq!(r.stat.version, 1),
        other => panic!("{other:?}"),
    }
    assert_eq!(rep.results[4], MultiResult::Check);
    assert_eq!(rep.results[5], MultiResult::Delete);
}

#[test]
fn multi_failure_has_error_results() {
    let (_, req): (_, MultiRequest) = request("multi.multi.fail.multi.req");
    assert_eq!(req.ops.len(), 3);
    // The whole multi reply is Ok; the outcome is in the per-op results: ops before the
    // failing one report Ok, the failing one its code, later ones RuntimeInconsistency.
    let (rh, rep): (_, MultiResponse) = reply("multi.multi.fail.multi.rep");
    assert_eq!(rh.err, ErrorCode::Ok);
    assert_eq!(
        rep.results,
        [
            MultiResult::Error(ErrorCode::Ok),
            MultiResult::Error(ErrorCode::BadVersion),
            MultiResult::Error(ErrorCode::RuntimeInconsistency),
        ]
    );
}

#[test]
fn multi_read() {
    let (h, req): (_, MultiRequest) = request("multi.multi_read.multiRead.req");
    assert_eq!(h.op, OpCode::MultiRead.as_i32());
    assert_eq!(
        req.ops,
        [
            MultiOp::GetData(GetDataRequest {
                path: "/zkcap/m1".into(),
                watch: false
            }),
            MultiOp::GetChildren(GetChildrenRequest {
                path: "/zkcap/kids".into(),
                watch: false
            }),
            MultiOp::GetData(GetDataRequest {
                path: "/zkcap/missing".into(),
                watch: false
            }),
        ]
    );
    let (_, rep): (_, MultiResponse) = reply("multi.multi_read.multiRead.rep");
    match &rep.results[0] {
        MultiResult::GetData(r) => assert_eq!(s(&r.data), "m1b"),
        other => panic!("{other:?}"),
    }
    match &rep.results[1] {
        MultiResult::GetChildren(r) => assert_eq!(r.children.len(), 2),
        other => panic!("{other:?}"),
    }
    assert_eq!(rep.results[2], MultiResult::Error(ErrorCode::NoNode));
}

// ===== watches =====

#[test]
fn set_watches_on_reconnect() {
    // The 3.8 Java client queues SetWatches with xid -8, but its NIO socket then overwrites
    // the xid of every packet except ping and auth with the next ordinary xid
    // (ClientCnxnSocketNIO.doIO), so on the wire it is an ordinary xid, echoed by the reply.
    let (h, req): (_, SetWatches) = request("watch.reconnect.set_watches.setWatches.req");
    assert!(h.xid > 0);
    assert!(!xid::is_special(h.xid));
    assert_eq!(h.op, OpCode::SetWatches.as_i32());
    assert!(req.relative_zxid > 0);
    assert_eq!(req.data_watches, ["/zkcap/w2"]);
    assert_eq!(req.exist_watches, ["/zkcap/missing"]);
    assert_eq!(req.child_watches, ["/zkcap/kids"]);
    let (rh, Empty) = reply("watch.reconnect.set_watches.setWatches.rep");
    assert_eq!(rh.xid, h.xid);
    assert_eq!(rh.err, ErrorCode::Ok);

    let (h, req): (_, SetWatches2) = request("watch.reconnect.set_watches2.setWatches2.req");
    assert!(h.xid > 0);
    assert_eq!(h.op, OpCode::SetWatches2.as_i32());
    assert_eq!(req.data_watches, ["/zkcap/w2"]);
    assert_eq!(req.persistent_watches, ["/zkcap/p"]);
    assert_eq!(req.persistent_recursive_watches, ["/zkcap/r"]);
    let (rh, Empty) = reply("watch.reconnect.set_watches2.setWatches2.rep");
    assert_eq!(rh.xid, h.xid);
}

#[test]
fn add_watch_and_persistent_events() {
    for (step, path, mode) in [
        ("persistent", "/zkcap/p", AddWatchMode::Persistent),
        (
            "persistent_recursive",
            "/zkcap/r",
            AddWatchMode::PersistentRecursive,
        ),
    ] {
        let (h, req): (_, AddWatchRequest) =
            request(&format!("watch.add_watch.{step}.addWatch.req"));
        assert_eq!(h.op, OpCode::AddWatch.as_i32());
        assert_eq!(req.path, path);
        assert_eq!(req.mode, mode as i32);
        let (rh, rep): (_, ErrorResponse) = reply(&format!("watch.add_watch.{step}.addWatch.rep"));
        assert_eq!(rh.err, ErrorCode::Ok);
        assert_eq!(rep.err, 0);
    }
    let (_, ev): (_, WatcherEvent) =
        reply("watch.event.persistent_data_changed.notification.event");
    assert_eq!(ev.event_type, EventType::NodeDataChanged);
    assert_eq!(ev.path, "/zkcap/p");
    let (_, ev): (_, WatcherEvent) = reply("watch.event.recursive_node_created.notification.event");
    assert_eq!(ev.event_type, EventType::NodeCreated);
    assert_eq!(ev.state, KeeperState::SyncConnected);
    assert_eq!(ev.path, "/zkcap/r/child");
}

#[test]
fn check_and_remove_watches() {
    let (h, req): (_, CheckWatchesRequest) = request("watch.check_watches.checkWatches.req");
    assert_eq!(h.op, OpCode::CheckWatches.as_i32());
    assert_eq!(req.path, "/zkcap/w");
    assert_eq!(req.watcher_type, WatcherType::Data as i32);
    let (rh, Empty) = reply("watch.check_watches.checkWatches.rep");
    assert_eq!(rh.err, ErrorCode::Ok);

    let (h, req): (_, RemoveWatchesRequest) = request("watch.remove_watches.removeWatches.req");
    assert_eq!(h.op, OpCode::RemoveWatches.as_i32());
    assert_eq!(req.path, "/zkcap/kids");
    assert_eq!(req.watcher_type, WatcherType::Children as i32);
    let (rh, Empty) = reply("watch.remove_watches.removeWatches.rep");
    assert_eq!(rh.err, ErrorCode::Ok);
}

// ===== config, session =====

#[test]
fn get_config_and_reconfig() {
    let (h, req): (_, GetDataRequest) = request("config.get_config.getData.req");
    assert_eq!(h.op, OpCode::GetData.as_i32());
    assert_eq!(req.path, CONFIG_NODE);
    let (rh, _rep): (_, GetDataResponse) = reply("config.get_config.getData.rep");
    assert_eq!(rh.err, ErrorCode::Ok);

    let (h, req): (_, ReconfigRequest) = request("config.reconfig.disabled.reconfig.req");
    assert_eq!(h.op, OpCode::Reconfig.as_i32());
    assert_eq!(req.joining_servers, "server.2=127.0.0.1:2888:3888;2182");
    // Java sends null for the unused arguments (and so does zk-proto for empty strings).
    let f = fixture("config.reconfig.disabled.reconfig.req");
    assert_eq!(&f.wire[f.wire.len() - 16..f.wire.len() - 8], &[0xff; 8]);
    assert_eq!(req.leaving_servers, "");
    assert_eq!(req.new_members, "");
    assert_eq!(req.cur_config_id, -1);
    let (rh, Empty) = reply("config.reconfig.disabled.reconfig.rep");
    assert_eq!(rh.err, ErrorCode::ReconfigDisabled);
}

#[test]
fn ping_and_close_session() {
    let (h, Empty) = request("session.ping.ping.req");
    assert_eq!(
        h,
        RequestHeader {
            xid: xid::PING,
            op: OpCode::Ping.as_i32()
        }
    );
    let (rh, Empty) = reply("session.ping.ping.rep");
    assert_eq!(rh.xid, xid::PING);
    assert_eq!(rh.err, ErrorCode::Ok);

    let (h, Empty) = request("session.close.closeSession.req");
    assert_eq!(h.op, OpCode::CloseSession.as_i32());
    assert!(h.xid > 0);
    let (rh, Empty) = reply("session.close.closeSession.rep");
    assert_eq!(rh.xid, h.xid);
    assert_eq!(rh.err, ErrorCode::Ok);
}

#[test]
fn stat_of_a_fresh_node() {
    let (rh, rep): (_, Create2Response) = reply("node.create2.create2.rep");
    let st: &Stat = &rep.stat;
    assert_eq!(st.czxid, rh.zxid);
    assert_eq!(st.pzxid, st.czxid);
    assert_eq!(st.ctime, st.mtime);
    assert!(st.ctime > 1_600_000_000_000, "ctime is ms since the epoch");
    assert_eq!((st.cversion, st.aversion, st.num_children), (0, 0, 0));
}
