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

/// What [`FrameReader::next`] cut off the front of the buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inbound {
    /// A whole frame's body (without its prefix).
    Frame(Bytes),
    /// A frame longer than the maximum: only its first `head.len()` bytes were kept, and the
    /// reader now discards the rest as it arrives, without buffering it. The caller decides
    /// from the head (a reply header) whether it can drop that one frame; if it cannot, it
    /// ends the connection.
    Oversized {
        /// The frame's first bytes (the reader's `head_len`, or the whole frame if shorter).
        head: Bytes,
        /// The frame's declared length.
        len: usize,
    },
}

/// Cuts frames off a connection's read buffer, like [`decode_frame`], but passes over a frame
/// longer than the maximum instead of failing: it hands out the frame's head and then
/// discards the rest of that frame as it comes, so the frames after it read as usual. A
/// negative length is still an error (the stream cannot be followed after it).
///
/// Memory stays bounded by the maximum: an oversized frame is never buffered.
///
/// ```
/// use bytes::BytesMut;
/// use zk_proto::frame::{FrameReader, Inbound};
///
/// let mut reader = FrameReader::new(4, 2);
/// // A 6-byte frame (over the 4-byte maximum), then a 1-byte one.
/// let mut buf = BytesMut::from(&[0, 0, 0, 6, 1, 2, 3][..]);
/// let head = match reader.next(&mut buf).unwrap() {
///     Some(Inbound::Oversized { head, len: 6 }) => head,
///     other => panic!("{other:?}"),
/// };
/// assert_eq!(&head[..], &[1, 2]);
/// assert_eq!(reader.next(&mut buf).unwrap(), None); // 3 of the 6 bytes are in
/// buf.extend_from_slice(&[4, 5, 6, 0, 0, 0, 1, 9]);
/// assert_eq!(reader.next(&mut buf).unwrap(), Some(Inbound::Frame(vec![9u8].into())));
/// ```
#[derive(Debug, Clone)]
pub struct FrameReader {
    max: usize,
    head_len: usize,
    /// Bytes of an oversized frame still to discard.
    skip: usize,
}

impl FrameReader {
    /// A reader of frames up to `max` bytes that keeps the first `head_len` bytes of longer
    /// ones.
    pub fn new(max: usize, head_len: usize) -> FrameReader {
        FrameReader {
            max,
            head_len,
            skip: 0,
        }
    }

    /// The maximum frame length.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Cuts the next frame (or an oversized frame's head) off the front of `buf`.
    ///
    /// # Errors
    ///
    /// [`DecodeError::FrameTooLarge`] for a negative length.
    pub fn next(&mut self, buf: &mut BytesMut) -> Result<Option<Inbound>, DecodeError> {
        if self.skip > 0 {
            let n = self.skip.min(buf.len());
            buf.advance(n);
            self.skip -= n;
            if self.skip > 0 {
                return Ok(None);
            }
        }
        match decode_frame(buf, self.max) {
            Err(DecodeError::FrameTooLarge { len, .. }) if len >= 0 => {
                let len = usize::try_from(len).unwrap_or(usize::MAX);
                let head_len = self.head_len.min(len);
                if buf.len() < LENGTH_PREFIX_LEN + head_len {
                    return Ok(None);
                }
                buf.advance(LENGTH_PREFIX_LEN);
                let head = buf.split_to(head_len).freeze();
                self.skip = len - head_len;
                let n = self.skip.min(buf.len());
                buf.advance(n);
                self.skip -= n;
                Ok(Some(Inbound::Oversized { head, len }))
            }
            other => other.map(|f| f.map(Inbound::Frame)),
        }
    }
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

    #[test]
    fn an_oversized_frame_is_passed_over_in_pieces_without_buffering() {
        let mut reader = FrameReader::new(8, 3);
        let mut buf = BytesMut::from(&[0, 0, 0, 20, 1][..]);
        // The head is not in yet.
        assert_eq!(reader.next(&mut buf), Ok(None));
        buf.extend_from_slice(&[2, 3, 4]);
        assert_eq!(
            reader.next(&mut buf),
            Ok(Some(Inbound::Oversized {
                head: vec![1u8, 2, 3].into(),
                len: 20
            }))
        );
        assert!(buf.is_empty());
        // 16 of the 20 bytes are still to come, in two reads, then a normal frame.
        buf.extend_from_slice(&[0; 10]);
        assert_eq!(reader.next(&mut buf), Ok(None));
        assert!(buf.is_empty());
        buf.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 7, 8]);
        assert_eq!(
            reader.next(&mut buf),
            Ok(Some(Inbound::Frame(vec![7u8, 8].into())))
        );
        assert!(buf.capacity() < 1024);
        // A negative length is still an error.
        buf.extend_from_slice(&[0xff, 0xff, 0xff, 0xff]);
        assert!(reader.next(&mut buf).is_err());
    }

    #[test]
    fn an_oversized_frame_shorter_than_the_head_is_handed_out_whole() {
        let mut reader = FrameReader::new(1, 16);
        let mut buf = BytesMut::from(&[0, 0, 0, 2, 5, 6, 0, 0, 0, 1, 9][..]);
        assert_eq!(
            reader.next(&mut buf),
            Ok(Some(Inbound::Oversized {
                head: vec![5u8, 6].into(),
                len: 2
            }))
        );
        assert_eq!(
            reader.next(&mut buf),
            Ok(Some(Inbound::Frame(vec![9u8].into())))
        );
    }
}
