//! `multi` (opcode 14) and `multiRead` (opcode 22) records.
//!
//! A multi body is a sequence of `MultiHeader` + record pairs closed by a header with
//! `done = true` (`MultiOperationRecord`/`MultiResponse` in the 3.8 Java sources). Requests
//! carry headers `{type: opcode, done: false, err: -1}`, results
//! `{type: opcode or -1 for an error, done: false, err}`; the closing header is
//! `{type: -1, done: true, err: -1}`.

use bytes::{Bytes, BytesMut};

use crate::codec::{get_bool, get_i32, put_bool, record};
use crate::records::children::{GetChildrenRequest, GetChildrenResponse};
use crate::records::node::{
    CheckVersionRequest, Create2Response, CreateRequest, CreateResponse, CreateTtlRequest,
    DeleteRequest, GetDataRequest, GetDataResponse, SetDataRequest, SetDataResponse,
};
use crate::{DecodeError, ErrorCode, OpCode, Record};

/// The header before each op and result of a multi.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MultiHeader {
    /// The opcode of the following record (-1 for an error result or the end marker).
    pub op: i32,
    /// True on the closing header.
    pub done: bool,
    /// Error code of a result (-1 in requests).
    pub err: i32,
}

impl MultiHeader {
    /// The closing header.
    pub const END: MultiHeader = MultiHeader {
        op: -1,
        done: true,
        err: -1,
    };
}

impl Record for MultiHeader {
    fn encode(&self, buf: &mut BytesMut) {
        self.op.encode(buf);
        put_bool(buf, self.done);
        self.err.encode(buf);
    }
    fn decode(buf: &mut Bytes) -> Result<Self, DecodeError> {
        Ok(Self {
            op: get_i32(buf)?,
            done: get_bool(buf)?,
            err: get_i32(buf)?,
        })
    }
}

record! {
    /// The body of an error result, and of the `addWatch` reply.
    pub struct ErrorResponse {
        /// The error code.
        pub err: i32,
    }
}

/// One operation of a multi request.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MultiOp {
    /// `create` (result: path only).
    Create(CreateRequest),
    /// `create2` (result: path and stat).
    Create2(CreateRequest),
    /// `createContainer`.
    CreateContainer(CreateRequest),
    /// `createTTL`.
    CreateTtl(CreateTtlRequest),
    /// `delete`.
    Delete(DeleteRequest),
    /// `setData`.
    SetData(SetDataRequest),
    /// `check`: a version precondition.
    Check(CheckVersionRequest),
    /// `getChildren` (multiRead only).
    GetChildren(GetChildrenRequest),
    /// `getData` (multiRead only).
    GetData(GetDataRequest),
}

impl MultiOp {
    /// The opcode written in this op's header.
    pub fn op_code(&self) -> OpCode {
        match self {
            MultiOp::Create(_) => OpCode::Create,
            MultiOp::Create2(_) => OpCode::Create2,
            MultiOp::CreateContainer(_) => OpCode::CreateContainer,
            MultiOp::CreateTtl(_) => OpCode::CreateTtl,
            MultiOp::Delete(_) => OpCode::Delete,
            MultiOp::SetData(_) => OpCode::SetData,
            MultiOp::Check(_) => OpCode::Check,
            MultiOp::GetChildren(_) => OpCode::GetChildren,
            MultiOp::GetData(_) => OpCode::GetData,
        }
    }

    /// The path the op targets.
    pub fn path(&self) -> &str {
        match self {
            MultiOp::Create(r) | MultiOp::Create2(r) | MultiOp::CreateContainer(r) => &r.path,
            MultiOp::CreateTtl(r) => &r.path,
            MultiOp::Delete(r) => &r.path,
            MultiOp::SetData(r) => &r.path,
            MultiOp::Check(r) => &r.path,
            MultiOp::GetChildren(r) => &r.path,
            MultiOp::GetData(r) => &r.path,
        }
    }

    fn encode_body(&self, buf: &mut BytesMut) {
        match self {
            MultiOp::Create(r) | MultiOp::Create2(r) | MultiOp::CreateContainer(r) => r.encode(buf),
            MultiOp::CreateTtl(r) => r.encode(buf),
            MultiOp::Delete(r) => r.encode(buf),
            MultiOp::SetData(r) => r.encode(buf),
            MultiOp::Check(r) => r.encode(buf),
            MultiOp::GetChildren(r) => r.encode(buf),
            MultiOp::GetData(r) => r.encode(buf),
        }
    }

    fn decode_body(op: i32, buf: &mut Bytes) -> Result<Self, DecodeError> {
        Ok(match OpCode::try_from(op)? {
            OpCode::Create => MultiOp::Create(Record::decode(buf)?),
            OpCode::Create2 => MultiOp::Create2(Record::decode(buf)?),
            OpCode::CreateContainer => MultiOp::CreateContainer(Record::decode(buf)?),
            OpCode::CreateTtl => MultiOp::CreateTtl(Record::decode(buf)?),
            OpCode::Delete => MultiOp::Delete(Record::decode(buf)?),
            OpCode::SetData => MultiOp::SetData(Record::decode(buf)?),
            OpCode::Check => MultiOp::Check(Record::decode(buf)?),
            OpCode::GetChildren => MultiOp::GetChildren(Record::decode(buf)?),
            OpCode::GetData => MultiOp::GetData(Record::decode(buf)?),
            _ => return Err(DecodeError::UnknownOpCode(op)),
        })
    }
}

/// The body of a `multi` or `multiRead` request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MultiRequest {
    /// The operations, applied atomically (multi) or read in order (multiRead).
    pub ops: Vec<MultiOp>,
}

impl Record for MultiRequest {
    fn encode(&self, buf: &mut BytesMut) {
        for op in &self.ops {
            MultiHeader {
                op: op.op_code().as_i32(),
                done: false,
                err: -1,
            }
            .encode(buf);
            op.encode_body(buf);
        }
        MultiHeader::END.encode(buf);
    }

    fn decode(buf: &mut Bytes) -> Result<Self, DecodeError> {
        let mut ops = Vec::new();
        // Each iteration consumes at least one 9-byte header, so this ends with the input.
        loop {
            let header = MultiHeader::decode(buf)?;
            if header.done {
                return Ok(Self { ops });
            }
            ops.push(MultiOp::decode_body(header.op, buf)?);
        }
    }
}

/// One result of a multi response, in the order of the request's ops.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MultiResult {
    /// Result of `create`.
    Create(CreateResponse),
    /// Result of `create2`, `createContainer` or `createTTL` (the server answers all three
    /// with type `create2`).
    Create2(Create2Response),
    /// Result of `delete`.
    Delete,
    /// Result of `setData`.
    SetData(SetDataResponse),
    /// Result of `check`.
    Check,
    /// Result of `getChildren`.
    GetChildren(GetChildrenResponse),
    /// Result of `getData`.
    GetData(GetDataResponse),
    /// The op failed (or was rolled back because another op failed: `RuntimeInconsistency`
    /// for the ops after the failing one, `Ok` for those before it).
    Error(ErrorCode),
}

impl MultiResult {
    fn header_op(&self) -> i32 {
        match self {
            MultiResult::Create(_) => OpCode::Create.as_i32(),
            MultiResult::Create2(_) => OpCode::Create2.as_i32(),
            MultiResult::Delete => OpCode::Delete.as_i32(),
            MultiResult::SetData(_) => OpCode::SetData.as_i32(),
            MultiResult::Check => OpCode::Check.as_i32(),
            MultiResult::GetChildren(_) => OpCode::GetChildren.as_i32(),
            MultiResult::GetData(_) => OpCode::GetData.as_i32(),
            MultiResult::Error(_) => OpCode::Error.as_i32(),
        }
    }
}

/// The body of a `multi` or `multiRead` reply.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MultiResponse {
    /// One result per op of the request.
    pub results: Vec<MultiResult>,
}

impl Record for MultiResponse {
    fn encode(&self, buf: &mut BytesMut) {
        for result in &self.results {
            let err = match result {
                MultiResult::Error(code) => code.as_i32(),
                _ => 0,
            };
            MultiHeader {
                op: result.header_op(),
                done: false,
                err,
            }
            .encode(buf);
            match result {
                MultiResult::Create(r) => r.encode(buf),
                MultiResult::Create2(r) => r.encode(buf),
                MultiResult::SetData(r) => r.encode(buf),
                MultiResult::GetChildren(r) => r.encode(buf),
                MultiResult::GetData(r) => r.encode(buf),
                MultiResult::Error(code) => ErrorResponse { err: code.as_i32() }.encode(buf),
                MultiResult::Delete | MultiResult::Check => {}
            }
        }
        MultiHeader::END.encode(buf);
    }

    fn decode(buf: &mut Bytes) -> Result<Self, DecodeError> {
        Self::decode_at_most(buf, usize::MAX)
    }
}

impl MultiResponse {
    /// Decodes at most `max` results: a reply with more ends there, holding `max` results
    /// (the rest of `buf` unread), so that a caller which sent `n` ops can pass `n + 1` and
    /// refuse a reply by its count without decoding more than it asked for. A `delete` or
    /// `check` result is 9 bytes on the wire and much larger decoded: without the bound, a
    /// reply to one op could fill memory with results nobody asked for.
    ///
    /// ```
    /// use zk_proto::records::{MultiResponse, MultiResult};
    /// use zk_proto::Record;
    ///
    /// let reply = MultiResponse { results: vec![MultiResult::Check; 3] };
    /// let mut bytes = zk_proto::encode_to_bytes(&reply);
    /// let first_two = MultiResponse::decode_at_most(&mut bytes, 2).unwrap();
    /// assert_eq!(first_two.results.len(), 2);
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Record::decode`], for the results it decodes.
    pub fn decode_at_most(buf: &mut Bytes, max: usize) -> Result<Self, DecodeError> {
        let mut results = Vec::new();
        loop {
            if results.len() == max {
                return Ok(Self { results });
            }
            let header = MultiHeader::decode(buf)?;
            if header.done {
                return Ok(Self { results });
            }
            let result = match OpCode::try_from(header.op)? {
                OpCode::Create => MultiResult::Create(Record::decode(buf)?),
                OpCode::Create2 => MultiResult::Create2(Record::decode(buf)?),
                OpCode::Delete => MultiResult::Delete,
                OpCode::SetData => MultiResult::SetData(Record::decode(buf)?),
                OpCode::Check => MultiResult::Check,
                OpCode::GetChildren => MultiResult::GetChildren(Record::decode(buf)?),
                OpCode::GetData => MultiResult::GetData(Record::decode(buf)?),
                OpCode::Error => {
                    let body = ErrorResponse::decode(buf)?;
                    MultiResult::Error(ErrorCode::from_i32(body.err))
                }
                _ => return Err(DecodeError::UnknownOpCode(header.op)),
            };
            results.push(result);
        }
    }
}
