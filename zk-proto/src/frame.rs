//! Length-prefixed framing: every packet in either direction is a 4-byte big-endian length
//! followed by that many bytes.
//!
//! [`decode_frame`] and [`encode_frame`] are pure functions over `bytes` buffers; a transport
//! (zk-client's connection task, or a `tokio_util` codec of your own) calls them.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::DecodeError;

/// Default maximum length of a frame read from a server: 4 MiB.
///
/// This is `ZKClientConfig.CLIENT_MAX_PACKET_LENGTH_DEFAULT` of the newer Java clients
/// (`4096 * 1024`; older ones used `0xfffff`). Replies can be larger than
/// [`SERVER_MAX_BUFFER`]: the server accepts a node whose `setData` request fits in it, and
/// its `getData` reply adds a 16-byte header and an 68-byte stat (measured: a 1,048,531-byte
/// node, whose reply a `0xfffff` limit cannot read); child listings are not bounded at all.
pub const DEFAULT_MAX_FRAME_LEN: usize = 4096 * 1024;

/// The server's default `jute.maxbuffer`: 1,048,575 bytes (`0xfffff`). A server drops the
/// connection of a client whose packet (after the length prefix) is longer, so clients check
/// requests against it before sending.
pub const SERVER_MAX_BUFFER: usize = 0xfffff;

/// Size of the length prefix.
pub const LENGTH_PREFIX_LEN: usize = 4;

/// Cuts one frame off the front of `buf`.
///
/// Returns `Ok(None)` when more bytes are needed (reserving room for the rest of the frame),
/// `Ok(Some(body))` with the frame body (without its prefix), or an error when the declared
/// length is negative or larger than `max`. The length is checked before anything is
/// allocated, so a hostile prefix costs nothing.
///
/// ```
/// use bytes::BytesMut;
/// use zk_proto::frame::decode_frame;
///
/// let mut buf = BytesMut::from(&[0, 0, 0, 2, 7, 8, 0, 0][..]);
/// assert_eq!(decode_frame(&mut buf, 1024).unwrap().as_deref(), Some(&[7u8, 8][..]));
/// assert_eq!(decode_frame(&mut buf, 1024).unwrap(), None); // 2 bytes of the next prefix
/// ```
pub fn decode_frame(buf: &mut BytesMut, max: usize) -> Result<Option<Bytes>, DecodeError> {
    if buf.len() < LENGTH_PREFIX_LEN {
        return Ok(None);
    }
    let len = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    if len < 0 || len as usize > max {
        return Err(DecodeError::FrameTooLarge {
            len: i64::from(len),
            max,
        });
    }
    let len = len as usize;
    if buf.len() < LENGTH_PREFIX_LEN + len {
        buf.reserve(LENGTH_PREFIX_LEN + len - buf.len());
        return Ok(None);
    }
    buf.advance(LENGTH_PREFIX_LEN);
    Ok(Some(buf.split_to(len).freeze()))
}

/// Appends one frame to `buf`: reserves the length prefix, lets `body` write the payload, then
/// fills the prefix in. The whole frame ends up contiguous so it goes out in one write.
///
/// ```
/// use bytes::{BufMut, BytesMut};
/// use zk_proto::frame::encode_frame;
///
/// let mut buf = BytesMut::new();
/// encode_frame(&mut buf, |b| b.put_slice(b"abc"));
/// assert_eq!(&buf[..], &[0, 0, 0, 3, b'a', b'b', b'c']);
/// ```
pub fn encode_frame(buf: &mut BytesMut, body: impl FnOnce(&mut BytesMut)) {
    let start = buf.len();
    buf.put_i32(0);
    body(buf);
    let len = (buf.len() - start - LENGTH_PREFIX_LEN) as i32;
    buf[start..start + LENGTH_PREFIX_LEN].copy_from_slice(&len.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_and_oversized_lengths_fail_before_allocation() {
        let mut buf = BytesMut::from(&[0xff, 0xff, 0xff, 0xff][..]);
        assert_eq!(
            decode_frame(&mut buf, 100),
            Err(DecodeError::FrameTooLarge { len: -1, max: 100 })
        );
        let mut buf = BytesMut::from(&[0, 0, 0, 101][..]);
        assert_eq!(
            decode_frame(&mut buf, 100),
            Err(DecodeError::FrameTooLarge { len: 101, max: 100 })
        );
        // A 1 GiB claim with the default limit never reserves 1 GiB.
        let mut buf = BytesMut::from(&[0x40, 0, 0, 0][..]);
        assert!(decode_frame(&mut buf, DEFAULT_MAX_FRAME_LEN).is_err());
        assert!(buf.capacity() < 1024);
    }

    #[test]
    fn partial_frames_wait_for_more() {
        let mut buf = BytesMut::from(&[0, 0, 0, 3, 1][..]);
        assert_eq!(decode_frame(&mut buf, 100), Ok(None));
        buf.extend_from_slice(&[2, 3]);
        assert_eq!(
            decode_frame(&mut buf, 100).unwrap().as_deref(),
            Some(&[1u8, 2, 3][..])
        );
        assert!(buf.is_empty());
    }

    #[test]
    fn empty_frame_is_valid() {
        let mut buf = BytesMut::from(&[0, 0, 0, 0][..]);
        assert_eq!(decode_frame(&mut buf, 0).unwrap().as_deref(), Some(&[][..]));
    }
}
