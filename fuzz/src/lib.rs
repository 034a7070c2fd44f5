//! Shared bodies of the zk-proto fuzz targets, so that each target is a few lines and the
//! seed generator (`examples/seeds.rs`) uses the same record tables.
//!
//! Inputs of `reply`, `request` and `roundtrip` start with one selector byte that picks a
//! record type from the tables below (modulo their length); the rest is the packet.
#![forbid(unsafe_code)]

use std::fmt::Debug;

use bytes::{Bytes, BytesMut};
use zk_proto::frame::{decode_frame, FrameReader, Inbound};
use zk_proto::records::*;
use zk_proto::{
    decode_exact, encode_to_bytes, Acl, ErrorCode, Id, Record, ReplyHeader, RequestHeader, Stat,
};

/// Maximum frame length used by the `frame` target: small, so that length checks are hit.
pub const FRAME_MAX: usize = 512;

/// One record type: its name (as in the golden fixtures) and a checker for its bytes.
pub struct Entry {
    /// The record's name (`Empty` for no body).
    pub name: &'static str,
    /// Decodes the bytes as this record (must never panic; must re-encode to an equal value).
    pub check: fn(Bytes),
}

/// Decodes `data` as exactly one `T`. When that succeeds, the value must survive
/// encode → decode unchanged, and its encoding must be canonical (encode ∘ decode ∘ encode
/// = encode).
pub fn roundtrip<T: Record + Debug + PartialEq>(data: Bytes) {
    let mut partial = data.clone();
    let _ = T::decode(&mut partial);
    if let Ok(value) = decode_exact::<T>(data) {
        let wire = encode_to_bytes(&value);
        let again = decode_exact::<T>(wire.clone()).expect("re-encoding must decode");
        assert_eq!(again, value, "decode(encode(x)) != x");
        assert_eq!(encode_to_bytes(&again), wire, "encoding is not canonical");
    }
}

/// No body at all: pings, deletes, error replies (`-` in the golden fixtures).
#[derive(Debug, PartialEq, Eq)]
pub struct Empty;

impl Record for Empty {
    fn encode(&self, _buf: &mut BytesMut) {}
    fn decode(_buf: &mut Bytes) -> Result<Self, zk_proto::DecodeError> {
        Ok(Empty)
    }
}

macro_rules! entries {
    ($($ty:ty),* $(,)?) => {
        &[$(Entry { name: stringify!($ty), check: roundtrip::<$ty> }),*]
    };
}

/// Reply bodies (after a `ReplyHeader`), plus `ConnectResponse` (no header).
pub const REPLIES: &[Entry] = entries!(
    Empty,
    ConnectResponse,
    CreateResponse,
    Create2Response,
    ExistsResponse,
    GetDataResponse,
    SetDataResponse,
    GetAclResponse,
    SetAclResponse,
    GetChildrenResponse,
    GetChildren2Response,
    GetAllChildrenNumberResponse,
    GetEphemeralsResponse,
    SyncResponse,
    MultiResponse,
    ErrorResponse,
    WatcherEvent,
    WhoAmIResponse,
);

/// Request bodies (after a `RequestHeader`), plus `ConnectRequest` (no header).
pub const REQUESTS: &[Entry] = entries!(
    Empty,
    ConnectRequest,
    CreateRequest,
    CreateTtlRequest,
    DeleteRequest,
    ExistsRequest,
    GetDataRequest,
    SetDataRequest,
    CheckVersionRequest,
    SyncRequest,
    GetAclRequest,
    SetAclRequest,
    GetChildrenRequest,
    GetChildren2Request,
    GetAllChildrenNumberRequest,
    GetEphemeralsRequest,
    ReconfigRequest,
    AuthPacket,
    SetWatches,
    SetWatches2,
    AddWatchRequest,
    CheckWatchesRequest,
    RemoveWatchesRequest,
    MultiRequest,
);

/// Every record type, decoded without a header, for the `roundtrip` target.
pub const ALL: &[Entry] = entries!(
    RequestHeader,
    ReplyHeader,
    Stat,
    Id,
    Acl,
    ErrorCode,
    EventType,
    KeeperState,
    MultiHeader,
    ClientInfo,
    ConnectRequest,
    ConnectResponse,
    CreateRequest,
    CreateTtlRequest,
    CreateResponse,
    Create2Response,
    DeleteRequest,
    ExistsRequest,
    ExistsResponse,
    GetDataRequest,
    GetDataResponse,
    SetDataRequest,
    SetDataResponse,
    CheckVersionRequest,
    SyncRequest,
    SyncResponse,
    GetAclRequest,
    GetAclResponse,
    SetAclRequest,
    SetAclResponse,
    GetChildrenRequest,
    GetChildrenResponse,
    GetChildren2Request,
    GetChildren2Response,
    GetAllChildrenNumberRequest,
    GetAllChildrenNumberResponse,
    GetEphemeralsRequest,
    GetEphemeralsResponse,
    ReconfigRequest,
    AuthPacket,
    WhoAmIResponse,
    WatcherEvent,
    SetWatches,
    SetWatches2,
    AddWatchRequest,
    CheckWatchesRequest,
    RemoveWatchesRequest,
    ErrorResponse,
    MultiRequest,
    MultiResponse,
);

/// Index of a record name in a table (for the seed generator).
pub fn index_of(table: &[Entry], name: &str) -> Option<u8> {
    table.iter().position(|e| e.name == name).map(|i| i as u8)
}

fn select(table: &'static [Entry], data: &[u8]) -> Option<(&'static Entry, Bytes)> {
    let (&sel, rest) = data.split_first()?;
    Some((
        &table[usize::from(sel) % table.len()],
        Bytes::copy_from_slice(rest),
    ))
}

/// `frame` target: cut frames off a byte stream with a small maximum and decode each body's
/// headers; the frames never add up to more than the input.
pub fn fuzz_frame(data: &[u8]) {
    let mut buf = BytesMut::from(data);
    // Each successful iteration consumes at least the 4-byte prefix.
    for _ in 0..=data.len() / 4 {
        match decode_frame(&mut buf, FRAME_MAX) {
            Ok(Some(body)) => {
                assert!(body.len() <= FRAME_MAX);
                let _ = ReplyHeader::decode(&mut body.clone());
                let _ = RequestHeader::decode(&mut body.clone());
            }
            Ok(None) => {
                // Room is reserved for at most one maximal frame.
                assert!(buf.capacity() <= 2 * (data.len() + 4 + FRAME_MAX));
                break;
            }
            Err(_) => break,
        }
    }
    // Every frame decoded consumes its prefix and body: never more than the input.
    let mut buf = BytesMut::from(data);
    let mut total = 0;
    for _ in 0..=data.len() / 4 {
        match decode_frame(&mut buf, FRAME_MAX) {
            Ok(Some(body)) => total += 4 + body.len(),
            Ok(None) | Err(_) => break,
        }
    }
    assert!(total <= data.len());
    // The reader that passes over oversized frames reads the same whether the bytes come at
    // once or in pieces, and never buffers more than one maximal frame.
    let chunk = usize::from(data.first().copied().unwrap_or(0) % 7) + 1;
    assert_eq!(read_frames(&[data]), read_frames(&data.chunks(chunk).collect::<Vec<_>>()));
}

/// What a [`FrameReader`] hands out when fed `pieces` one after another (until an error).
fn read_frames(pieces: &[&[u8]]) -> Vec<Inbound> {
    let mut reader = FrameReader::new(FRAME_MAX, 16);
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for piece in pieces {
        buf.extend_from_slice(piece);
        for _ in 0..=buf.len() / 4 + 1 {
            match reader.next(&mut buf) {
                Ok(Some(got)) => out.push(got),
                Ok(None) => break,
                Err(_) => return out,
            }
        }
        assert!(buf.len() <= piece.len() + 4 + FRAME_MAX + 16);
    }
    out
}

/// `reply` target: a `ReplyHeader` and then the selected response record (or the selected
/// `ConnectResponse`, which has no header).
pub fn fuzz_reply(data: &[u8]) {
    let Some((entry, mut rest)) = select(REPLIES, data) else {
        return;
    };
    if entry.name != "ConnectResponse" && ReplyHeader::decode(&mut rest).is_err() {
        return;
    }
    (entry.check)(rest);
}

/// `request` target: a `RequestHeader` and then the selected request record (or the selected
/// `ConnectRequest`, which has no header).
pub fn fuzz_request(data: &[u8]) {
    let Some((entry, mut rest)) = select(REQUESTS, data) else {
        return;
    };
    if entry.name != "ConnectRequest" && RequestHeader::decode(&mut rest).is_err() {
        return;
    }
    (entry.check)(rest);
}

/// `roundtrip` target: the selected record from the bytes, then encode/decode equality.
pub fn fuzz_roundtrip(data: &[u8]) {
    if let Some((entry, rest)) = select(ALL, data) {
        (entry.check)(rest);
    }
}
