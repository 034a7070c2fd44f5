//! Request and reply headers.

use crate::codec::record;
use crate::ErrorCode;

record! {
    /// Precedes every request body except the very first `ConnectRequest`.
    pub struct RequestHeader {
        /// Request id: from 1 upwards for ordinary requests, or a special value from
        /// [`crate::xid`].
        pub xid: i32,
        /// The opcode, see [`crate::OpCode`].
        pub op: i32,
    }
}

/// Precedes every reply body except the first `ConnectResponse`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyHeader {
    /// The xid of the request this answers, or a special value ([`crate::xid::NOTIFICATION`]
    /// for watch events).
    pub xid: i32,
    /// The zxid the server had reached when it answered (-1 in notifications).
    pub zxid: i64,
    /// The outcome.
    pub err: ErrorCode,
}

impl Default for ReplyHeader {
    fn default() -> Self {
        Self {
            xid: 0,
            zxid: 0,
            err: ErrorCode::Ok,
        }
    }
}

impl crate::Record for ReplyHeader {
    fn encode(&self, buf: &mut bytes::BytesMut) {
        self.xid.encode(buf);
        self.zxid.encode(buf);
        self.err.encode(buf);
    }
    fn decode(buf: &mut bytes::Bytes) -> Result<Self, crate::DecodeError> {
        Ok(Self {
            xid: i32::decode(buf)?,
            zxid: i64::decode(buf)?,
            err: ErrorCode::decode(buf)?,
        })
    }
}

/// Encoded size of a [`ReplyHeader`].
pub const REPLY_HEADER_LEN: usize = 16;
/// Encoded size of a [`RequestHeader`].
pub const REQUEST_HEADER_LEN: usize = 8;
