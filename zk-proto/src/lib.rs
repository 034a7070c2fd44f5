//! Sans-IO codec for the ZooKeeper 3.8 client protocol.
//!
//! This crate turns ZooKeeper client packets into Rust values and back. It does no IO, reads
//! no clock and never panics on input: every length is checked against the bytes present
//! before anything is read or allocated, and malformed input is a [`DecodeError`].
//!
//! # Layout
//!
//! - [`codec`]: the [`Record`] trait and the jute primitives (big-endian `int`/`long`,
//!   length-prefixed `buffer`/`ustring`/`vector`).
//! - [`frame`]: the 4-byte length prefix around every packet, with a maximum frame length,
//!   as pure functions (the crate has no runtime dependency).
//! - [`RequestHeader`] and [`ReplyHeader`] (with their encoded lengths); [`xid`]: the special
//!   xids.
//! - [`OpCode`], [`ErrorCode`]: code tables; unknown error codes stay representable.
//! - [`Stat`], [`acl`]: shared data records; [`records`]: every request/response record.
//!
//! Every public item has one path: the one-item modules (`error_code`, `op_code`, `stat`,
//! `header`) are private and their items are re-exported here.
//!
//! # Wire layout
//!
//! ```text
//! client → server   [len:i32][xid:i32][op:i32][body ...]          (RequestHeader + record)
//! server → client   [len:i32][xid:i32][zxid:i64][err:i32][body]   (ReplyHeader + record)
//! first packets     [len:i32][ConnectRequest] / [len:i32][ConnectResponse]  (no header)
//! ```
//!
//! # Example
//!
//! ```
//! use bytes::BytesMut;
//! use zk_proto::frame::{decode_frame, encode_frame};
//! use zk_proto::records::GetDataRequest;
//! use zk_proto::{decode_exact, OpCode, Record, RequestHeader};
//!
//! // Encode a getData request as the client sends it.
//! let mut wire = BytesMut::new();
//! encode_frame(&mut wire, |buf| {
//!     RequestHeader { xid: 1, op: OpCode::GetData.as_i32() }.encode(buf);
//!     GetDataRequest { path: "/app".into(), watch: false }.encode(buf);
//! });
//!
//! // Decode it back as a server would.
//! let mut frame = decode_frame(&mut wire, 1 << 20).unwrap().unwrap();
//! let header = RequestHeader::decode(&mut frame).unwrap();
//! assert_eq!(OpCode::try_from(header.op), Ok(OpCode::GetData));
//! let req: GetDataRequest = decode_exact(frame).unwrap();
//! assert_eq!(req.path, "/app");
//! ```
#![forbid(unsafe_code)]

pub mod acl;
pub mod codec;
mod codes;
mod error;
mod error_code;
pub mod frame;
mod header;
mod op_code;
pub mod records;
mod stat;
pub mod xid;

pub use acl::{Acl, Id, Perms};
pub use codec::{decode_exact, decode_prefix, encode_to_bytes, Record};
pub use error::DecodeError;
pub use error_code::ErrorCode;
pub use frame::{DEFAULT_MAX_FRAME_LEN, SERVER_MAX_BUFFER};
pub use header::{ReplyHeader, RequestHeader, REPLY_HEADER_LEN, REQUEST_HEADER_LEN};
pub use op_code::OpCode;
pub use stat::{Stat, STAT_LEN};

/// The crate README's example, compiled as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct CrateReadmeDoctests;
