//! Compressed node data, as Curator's `compressed()` / `decompressed()` store it.
//!
//! A [`Compression`] turns the bytes a caller writes into what the node holds, and back. The
//! [`Client`](crate::Client) helpers [`create_compressed`](crate::Client::create_compressed),
//! [`set_data_compressed`](crate::Client::set_data_compressed) and
//! [`get_data_decompressed`](crate::Client::get_data_decompressed) apply one around the plain
//! calls; anything else that reads or writes node data (a transaction, a cache) can call
//! [`Compression::compress`] and [`Compression::decompress`] itself, which is why the trait
//! works on bytes and knows nothing of the client.
//!
//! [`Gzip`] (feature `gzip`) is Curator's `GzipCompressionProvider` format: plain gzip
//! (RFC 1952), what `java.util.zip.GZIPOutputStream` writes, so a node written by either
//! library reads in the other. Its decompression is bounded
//! ([`Gzip::max_decompressed_len`], 16 MiB by default): a small node that inflates to
//! gigabytes (a "zip bomb") fails with [`CompressionError::TooLarge`] after at most the limit
//! was produced, it never exhausts memory.
//!
//! # Detection
//!
//! Nodes of one path are often a mix: written before compression was turned on, or by a
//! tool that does not compress. By default [`Gzip`] reads data that does not start with the
//! gzip magic bytes (`1f 8b`, then method `08`) as it is, uncompressed. That is a heuristic:
//! uncompressed data that happens to start with those three bytes is taken for gzip and
//! fails to decompress (an error, never silently different bytes, unless it is a valid gzip
//! stream). Formats whose data can start so should turn detection off
//! ([`Gzip::detect`]`(false)`): then every node must be gzip, as with Curator's
//! `decompressed()`, which fails on anything else.
//!
//! Curator's `compressed()` writes gzip for empty data too (a 20-byte stream), and this
//! module does the same; an empty node (written uncompressed) reads as empty with detection
//! on, and fails with detection off, as in Curator.

#[cfg(feature = "gzip")]
mod gzip;

use std::fmt;

use bytes::Bytes;

#[cfg(feature = "gzip")]
pub use gzip::{Gzip, DEFAULT_MAX_DECOMPRESSED_LEN};

/// The first bytes of every gzip stream: magic `1f 8b`, compression method 8 (deflate).
pub const GZIP_MAGIC: [u8; 3] = [0x1f, 0x8b, 0x08];

/// Whether `data` starts as a gzip stream does ([`GZIP_MAGIC`]).
///
/// A heuristic: it says the data may be gzip, not that it is valid gzip.
///
/// ```
/// use zk_client::compression::looks_like_gzip;
/// assert!(looks_like_gzip(&[0x1f, 0x8b, 0x08, 0, 0]));
/// assert!(!looks_like_gzip(b"{\"plain\": true}"));
/// ```
pub fn looks_like_gzip(data: &[u8]) -> bool {
    data.starts_with(&GZIP_MAGIC)
}

/// Compresses node data for writing and decompresses it after reading.
///
/// Implemented by [`Gzip`] (feature `gzip`); implement it for another format (Solr's zlib,
/// a dictionary codec). Implementations are shared between tasks (`Send + Sync`) and must
/// bound what they produce from untrusted input.
pub trait Compression: fmt::Debug + Send + Sync {
    /// The bytes to store for `data`.
    ///
    /// # Errors
    ///
    /// [`CompressionError`] when the data cannot be compressed.
    fn compress(&self, data: &[u8]) -> Result<Vec<u8>, CompressionError>;

    /// The data that `stored` (a node's bytes, as read) holds.
    ///
    /// # Errors
    ///
    /// [`CompressionError::TooLarge`] when it would exceed the implementation's bound,
    /// [`CompressionError::Corrupt`] when it is not in the format.
    fn decompress(&self, stored: Bytes) -> Result<Bytes, CompressionError>;
}

impl<C: Compression + ?Sized> Compression for &C {
    fn compress(&self, data: &[u8]) -> Result<Vec<u8>, CompressionError> {
        (**self).compress(data)
    }

    fn decompress(&self, stored: Bytes) -> Result<Bytes, CompressionError> {
        (**self).decompress(stored)
    }
}

impl<C: Compression + ?Sized> Compression for std::sync::Arc<C> {
    fn compress(&self, data: &[u8]) -> Result<Vec<u8>, CompressionError> {
        (**self).compress(data)
    }

    fn decompress(&self, stored: Bytes) -> Result<Bytes, CompressionError> {
        (**self).decompress(stored)
    }
}

/// Why node data could not be compressed or decompressed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CompressionError {
    /// Decompressing would produce more than `limit` bytes; it was stopped there.
    #[error("decompressed data exceeds the limit of {limit} bytes")]
    TooLarge {
        /// The configured bound, in bytes.
        limit: usize,
    },
    /// The data is not in the expected format (not gzip, truncated, bad checksum).
    #[error("corrupt compressed data: {0}")]
    Corrupt(String),
    /// The data could not be compressed.
    #[error("compression failed: {0}")]
    Compress(String),
}
