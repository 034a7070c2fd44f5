//! The [`Record`] trait and the jute primitive encodings.
//!
//! Jute is big-endian: `int` is 4 bytes, `long` 8, `boolean` 1, `buffer` and `ustring` are an
//! `int` length followed by that many bytes (`-1` means null), `vector<T>` is an `int` count
//! followed by the elements (`-1` means null). Decoders check every length against the bytes
//! that remain before touching or allocating anything.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::DecodeError;

/// A jute record: encodes into a buffer and decodes from one.
///
/// Encoding is infallible; decoding consumes exactly the bytes of the record from the front of
/// `buf` and never panics.
///
/// # Example
///
/// ```
/// use bytes::BytesMut;
/// use zk_proto::{Record, records::GetDataRequest};
///
/// let req = GetDataRequest { path: "/a".into(), watch: true };
/// let mut buf = BytesMut::new();
/// req.encode(&mut buf);
/// assert_eq!(&buf[..], &[0, 0, 0, 2, b'/', b'a', 1]);
/// let back = GetDataRequest::decode(&mut buf.freeze()).unwrap();
/// assert_eq!(back, req);
/// ```
pub trait Record: Sized {
    /// Appends the record's bytes to `buf`.
    fn encode(&self, buf: &mut BytesMut);
    /// Reads one record from the front of `buf`, advancing it.
    fn decode(buf: &mut Bytes) -> Result<Self, DecodeError>;
}

/// Decodes a record that must fill `buf` entirely: trailing bytes are an error.
///
/// ```
/// use zk_proto::{decode_exact, DecodeError, records::GetDataRequest};
/// let err = decode_exact::<GetDataRequest>(bytes::Bytes::from_static(&[0, 0, 0, 1, b'/', 0, 9]));
/// assert_eq!(err, Err(DecodeError::TrailingBytes(1)));
/// ```
pub fn decode_exact<T: Record>(mut buf: Bytes) -> Result<T, DecodeError> {
    let value = T::decode(&mut buf)?;
    if buf.has_remaining() {
        return Err(DecodeError::TrailingBytes(buf.remaining()));
    }
    Ok(value)
}

/// Decodes a record from the front of `buf` and ignores whatever follows it.
///
/// For what a server sends: newer servers append fields that older clients do not know, and
/// the Java client reads the fields it knows and ignores the rest. A record that is cut
/// short is still an error.
///
/// ```
/// use zk_proto::{decode_prefix, DecodeError, records::GetDataRequest};
/// let req: GetDataRequest =
///     decode_prefix(bytes::Bytes::from_static(&[0, 0, 0, 1, b'/', 0, 9])).unwrap();
/// assert_eq!(req.path, "/");
/// let short = decode_prefix::<GetDataRequest>(bytes::Bytes::from_static(&[0, 0, 0, 1, b'/']));
/// assert!(matches!(short, Err(DecodeError::UnexpectedEof { .. })));
/// ```
pub fn decode_prefix<T: Record>(mut buf: Bytes) -> Result<T, DecodeError> {
    T::decode(&mut buf)
}

/// Encodes a record into a new buffer.
pub fn encode_to_bytes<T: Record>(record: &T) -> Bytes {
    let mut buf = BytesMut::new();
    record.encode(&mut buf);
    buf.freeze()
}

fn need(buf: &Bytes, n: usize) -> Result<(), DecodeError> {
    if buf.remaining() < n {
        Err(DecodeError::UnexpectedEof {
            needed: n,
            remaining: buf.remaining(),
        })
    } else {
        Ok(())
    }
}

/// Reads a jute `int`.
pub fn get_i32(buf: &mut Bytes) -> Result<i32, DecodeError> {
    need(buf, 4)?;
    Ok(buf.get_i32())
}

/// Reads a jute `long`.
pub fn get_i64(buf: &mut Bytes) -> Result<i64, DecodeError> {
    need(buf, 8)?;
    Ok(buf.get_i64())
}

/// Reads a jute `boolean` (one byte; any non-zero value is true, as in Java's `readBoolean`).
pub fn get_bool(buf: &mut Bytes) -> Result<bool, DecodeError> {
    need(buf, 1)?;
    Ok(buf.get_u8() != 0)
}

/// Reads a length prefix: `None` for the jute null marker `-1`, an error for any other negative
/// value or a length larger than what remains.
fn get_len(buf: &mut Bytes) -> Result<Option<usize>, DecodeError> {
    let len = get_i32(buf)?;
    match len {
        -1 => Ok(None),
        n if n < 0 => Err(DecodeError::InvalidLength(n)),
        n => {
            let n = n as usize;
            if n > buf.remaining() {
                return Err(DecodeError::InvalidLength(len));
            }
            Ok(Some(n))
        }
    }
}

/// Reads a jute `buffer`; null (`-1`) reads as an empty buffer. Zero-copy.
pub fn get_buffer(buf: &mut Bytes) -> Result<Bytes, DecodeError> {
    Ok(get_opt_buffer(buf)?.unwrap_or_default())
}

/// Reads a jute `buffer` keeping the difference between null (`None`) and empty.
pub fn get_opt_buffer(buf: &mut Bytes) -> Result<Option<Bytes>, DecodeError> {
    Ok(get_len(buf)?.map(|n| buf.split_to(n)))
}

/// Reads a jute `ustring`; null (`-1`) reads as the empty string.
pub fn get_string(buf: &mut Bytes) -> Result<String, DecodeError> {
    match get_len(buf)? {
        None => Ok(String::new()),
        Some(n) => {
            // Copied straight out of the frame: a `split_to` would take and drop a reference
            // on the shared frame buffer (two atomic operations) for bytes that are copied
            // anyway.
            let raw = buf
                .chunk()
                .get(..n)
                .ok_or(DecodeError::InvalidLength(n as i32))?;
            let s = std::str::from_utf8(raw)
                .map(str::to_owned)
                .map_err(|_| DecodeError::InvalidUtf8)?;
            buf.advance(n);
            Ok(s)
        }
    }
}

/// Reads a jute `vector<T>`; null (`-1`) reads as an empty vector.
///
/// The capacity reserved up front is bounded by the bytes remaining, so a hostile count never
/// allocates more than the frame holds.
pub fn get_vec<T: Record>(buf: &mut Bytes) -> Result<Vec<T>, DecodeError> {
    let count = get_i32(buf)?;
    if count == -1 {
        return Ok(Vec::new());
    }
    if count < 0 || count as usize > buf.remaining() {
        return Err(DecodeError::InvalidLength(count));
    }
    // Every element takes at least one byte, but a decoded element can be larger in memory
    // than on the wire; cap the up-front reservation so hostile counts amplify nothing.
    let mut out = Vec::with_capacity((count as usize).min(buf.remaining() / 4).min(1024));
    for _ in 0..count {
        out.push(T::decode(buf)?);
    }
    Ok(out)
}

/// Writes a jute `buffer`.
pub fn put_buffer(buf: &mut BytesMut, data: &[u8]) {
    buf.put_i32(data.len() as i32);
    buf.put_slice(data);
}

/// Writes a jute `buffer` that may be null.
pub fn put_opt_buffer(buf: &mut BytesMut, data: Option<&[u8]>) {
    match data {
        Some(d) => put_buffer(buf, d),
        None => buf.put_i32(-1),
    }
}

/// Writes a jute `ustring`.
pub fn put_string(buf: &mut BytesMut, s: &str) {
    put_buffer(buf, s.as_bytes());
}

/// Writes a jute `boolean`.
pub fn put_bool(buf: &mut BytesMut, b: bool) {
    buf.put_u8(u8::from(b));
}

/// Writes a jute `vector<T>`.
pub fn put_vec<T: Record>(buf: &mut BytesMut, items: &[T]) {
    buf.put_i32(items.len() as i32);
    for item in items {
        item.encode(buf);
    }
}

// ===== impl Record for primitives =====

impl Record for i32 {
    fn encode(&self, buf: &mut BytesMut) {
        buf.put_i32(*self);
    }
    fn decode(buf: &mut Bytes) -> Result<Self, DecodeError> {
        get_i32(buf)
    }
}

impl Record for i64 {
    fn encode(&self, buf: &mut BytesMut) {
        buf.put_i64(*self);
    }
    fn decode(buf: &mut Bytes) -> Result<Self, DecodeError> {
        get_i64(buf)
    }
}

impl Record for bool {
    fn encode(&self, buf: &mut BytesMut) {
        put_bool(buf, *self);
    }
    fn decode(buf: &mut Bytes) -> Result<Self, DecodeError> {
        get_bool(buf)
    }
}

impl Record for String {
    fn encode(&self, buf: &mut BytesMut) {
        put_string(buf, self);
    }
    fn decode(buf: &mut Bytes) -> Result<Self, DecodeError> {
        get_string(buf)
    }
}

impl Record for Bytes {
    fn encode(&self, buf: &mut BytesMut) {
        put_buffer(buf, self);
    }
    fn decode(buf: &mut Bytes) -> Result<Self, DecodeError> {
        get_buffer(buf)
    }
}

impl<T: Record> Record for Vec<T> {
    fn encode(&self, buf: &mut BytesMut) {
        put_vec(buf, self);
    }
    fn decode(buf: &mut Bytes) -> Result<Self, DecodeError> {
        get_vec(buf)
    }
}

/// Defines a jute record struct whose fields are encoded in declaration order.
///
/// Each field's type must implement [`Record`]. This is a one-arm `macro_rules!` over plain
/// field lists, not a derive: the generated impl reads and writes the fields in the order the
/// `zookeeper.jute` class lists them.
macro_rules! record {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* pub $field:ident : $ty:ty ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty ),*
        }

        impl $crate::Record for $name {
            #[allow(unused_variables)]
            fn encode(&self, buf: &mut ::bytes::BytesMut) {
                $( $crate::Record::encode(&self.$field, buf); )*
            }
            #[allow(unused_variables)]
            fn decode(buf: &mut ::bytes::Bytes) -> Result<Self, $crate::DecodeError> {
                Ok(Self { $( $field: <$ty as $crate::Record>::decode(buf)? ),* })
            }
        }
    };
}
pub(crate) use record;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_string_and_buffer_read_as_empty() {
        let mut b = Bytes::from_static(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(get_string(&mut b).unwrap(), "");
        assert_eq!(get_opt_buffer(&mut b).unwrap(), None);
    }

    #[test]
    fn hostile_lengths_are_rejected_before_allocation() {
        let mut b = Bytes::from_static(&[0x7f, 0xff, 0xff, 0xff, 1, 2]);
        assert_eq!(
            get_buffer(&mut b),
            Err(DecodeError::InvalidLength(i32::MAX))
        );
        let mut b = Bytes::from_static(&[0xff, 0xff, 0xff, 0xfe]);
        assert_eq!(get_string(&mut b), Err(DecodeError::InvalidLength(-2)));
        let mut b = Bytes::from_static(&[0x10, 0, 0, 0]);
        assert!(get_vec::<i64>(&mut b).is_err());
    }

    #[test]
    fn invalid_utf8_is_an_error() {
        let mut b = Bytes::from_static(&[0, 0, 0, 2, 0xc3, 0x28]);
        assert_eq!(get_string(&mut b), Err(DecodeError::InvalidUtf8));
    }
}
