//! The one error type of the codec.

use thiserror::Error;

/// Why a frame or a record could not be decoded.
///
/// Small, `Clone` and `Eq` so that it can be stored, compared in tests and handed to every
/// pending request of a connection that failed. It never allocates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The input ended before a field was complete.
    #[error("unexpected end of input: needed {needed} more bytes, {remaining} remaining")]
    UnexpectedEof {
        /// Bytes the field needed.
        needed: usize,
        /// Bytes that were left.
        remaining: usize,
    },
    /// A length prefix was negative (other than the jute null marker -1 where that is allowed)
    /// or larger than the bytes that follow it.
    #[error("invalid length prefix {0}")]
    InvalidLength(i32),
    /// A `ustring` field was not valid UTF-8.
    #[error("string field is not valid UTF-8")]
    InvalidUtf8,
    /// An opcode that this codec does not know where one is required to decode the body.
    #[error("unknown opcode {0}")]
    UnknownOpCode(i32),
    /// A frame's declared length is negative or exceeds the configured maximum.
    #[error("frame length {len} is outside 0..={max}")]
    FrameTooLarge {
        /// Declared length, as read (may be negative).
        len: i64,
        /// The configured maximum.
        max: usize,
    },
    /// A record was followed by bytes that belong to no field.
    #[error("{0} trailing bytes after the record")]
    TrailingBytes(usize),
    /// A field holds a value outside its domain (for example a multi header flag).
    #[error("invalid value {value} for {field}")]
    InvalidValue {
        /// Name of the field, as in `zookeeper.jute`.
        field: &'static str,
        /// The value received.
        value: i32,
    },
}
