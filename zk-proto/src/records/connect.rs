//! Session handshake records.
//!
//! Both records carry a trailing `readOnly` boolean that is not in `zookeeper.jute`: the Java
//! client writes it after `ConnectRequest` (`ClientCnxnSocket`/`ConnectRequest` in 3.8) and a
//! 3.4+ server writes it after `ConnectResponse`. Old peers may omit it, so decoding treats a
//! missing flag as `false`.

use bytes::{Buf, Bytes, BytesMut};

use crate::codec::{get_bool, get_buffer, get_i32, get_i64, put_bool, put_buffer};
use crate::{DecodeError, Record};

/// The first packet a client sends on a new connection (no request header).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConnectRequest {
    /// Protocol version, 0.
    pub protocol_version: i32,
    /// The highest zxid the client has seen, so a server behind it refuses the connection.
    pub last_zxid_seen: i64,
    /// Requested session timeout in milliseconds.
    pub timeout: i32,
    /// 0 for a new session, or the id of the session to resume.
    pub session_id: i64,
    /// The session password (16 zero bytes for a new session).
    pub passwd: Bytes,
    /// Whether the client accepts a read-only server.
    pub read_only: bool,
}

impl Record for ConnectRequest {
    fn encode(&self, buf: &mut BytesMut) {
        self.protocol_version.encode(buf);
        self.last_zxid_seen.encode(buf);
        self.timeout.encode(buf);
        self.session_id.encode(buf);
        put_buffer(buf, &self.passwd);
        put_bool(buf, self.read_only);
    }

    fn decode(buf: &mut Bytes) -> Result<Self, DecodeError> {
        Ok(Self {
            protocol_version: get_i32(buf)?,
            last_zxid_seen: get_i64(buf)?,
            timeout: get_i32(buf)?,
            session_id: get_i64(buf)?,
            passwd: get_buffer(buf)?,
            read_only: if buf.has_remaining() {
                get_bool(buf)?
            } else {
                false
            },
        })
    }
}

/// The first packet a server sends on a new connection (no reply header).
///
/// A `timeout` of 0 or less means the session the client asked to resume has expired.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConnectResponse {
    /// Protocol version, 0.
    pub protocol_version: i32,
    /// The negotiated session timeout in milliseconds (<= 0: the session expired).
    pub timeout: i32,
    /// The session id.
    pub session_id: i64,
    /// The session password, needed to resume the session on another server.
    pub passwd: Bytes,
    /// Whether the server is read-only (it lost quorum).
    pub read_only: bool,
}

impl Record for ConnectResponse {
    fn encode(&self, buf: &mut BytesMut) {
        self.protocol_version.encode(buf);
        self.timeout.encode(buf);
        self.session_id.encode(buf);
        put_buffer(buf, &self.passwd);
        put_bool(buf, self.read_only);
    }

    fn decode(buf: &mut Bytes) -> Result<Self, DecodeError> {
        Ok(Self {
            protocol_version: get_i32(buf)?,
            timeout: get_i32(buf)?,
            session_id: get_i64(buf)?,
            passwd: get_buffer(buf)?,
            read_only: if buf.has_remaining() {
                get_bool(buf)?
            } else {
                false
            },
        })
    }
}
