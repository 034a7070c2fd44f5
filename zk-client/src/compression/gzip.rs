//! [`Gzip`]: Curator's `GzipCompressionProvider` format (RFC 1952), in pure Rust (flate2 on
//! miniz_oxide).

use std::io::{Read, Write};

use bytes::Bytes;
use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;

use super::{looks_like_gzip, Compression, CompressionError};

/// The default bound on decompressed data: 16 MiB (16 times the server's default
/// `jute.maxbuffer`, the largest node it stores).
pub const DEFAULT_MAX_DECOMPRESSED_LEN: usize = 16 << 20;

/// Java's `Deflater.DEFAULT_COMPRESSION` (what `GZIPOutputStream` uses) is zlib's level 6.
const DEFAULT_LEVEL: u32 = 6;

/// Gzip node data, as Curator's `compressed()` writes and `decompressed()` reads it.
///
/// Writes a single gzip member (level 6 by default, as `java.util.zip.GZIPOutputStream`);
/// reads one or more concatenated members, as `GZIPInputStream` does. Reading is bounded by
/// [`max_decompressed_len`](Self::max_decompressed_len) and, by default, passes data without
/// the gzip magic bytes through unchanged ([`detect`](Self::detect); see the
/// [module docs](super#detection) for why that is a heuristic).
///
/// ```
/// use zk_client::compression::{Compression, CompressionError, Gzip};
/// use zk_client::Bytes;
///
/// let gzip = Gzip::new();
/// let stored = gzip.compress(b"{\"shards\": 12}").unwrap();
/// assert_eq!(&stored[..2], &[0x1f, 0x8b]);
/// assert_eq!(gzip.decompress(Bytes::from(stored)).unwrap(), &b"{\"shards\": 12}"[..]);
///
/// // Detection (on by default): data that is not gzip reads as it is...
/// assert_eq!(gzip.decompress(Bytes::from_static(b"plain")).unwrap(), &b"plain"[..]);
/// // ...and off, it is an error, as in Curator.
/// let strict = Gzip::new().detect(false);
/// assert!(matches!(
///     strict.decompress(Bytes::from_static(b"plain")),
///     Err(CompressionError::Corrupt(_))
/// ));
///
/// // A bomb stops at the bound.
/// let bomb = gzip.compress(&vec![0u8; 1 << 20]).unwrap();
/// let small = Gzip::new().max_decompressed_len(64 * 1024);
/// assert_eq!(
///     small.decompress(Bytes::from(bomb)),
///     Err(CompressionError::TooLarge { limit: 64 * 1024 })
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(docsrs, doc(cfg(feature = "gzip")))]
pub struct Gzip {
    level: u32,
    max_decompressed_len: usize,
    detect: bool,
}

impl Default for Gzip {
    fn default() -> Self {
        Gzip::new()
    }
}

impl Gzip {
    /// Level 6, at most [`DEFAULT_MAX_DECOMPRESSED_LEN`] bytes out, detection on.
    pub fn new() -> Gzip {
        Gzip {
            level: DEFAULT_LEVEL,
            max_decompressed_len: DEFAULT_MAX_DECOMPRESSED_LEN,
            detect: true,
        }
    }

    /// The compression level, 0 (stored) to 9 (smallest); values above 9 are taken as 9.
    pub fn level(mut self, level: u32) -> Gzip {
        self.level = level.min(9);
        self
    }

    /// The most bytes one [`decompress`](Compression::decompress) may produce; more is
    /// [`CompressionError::TooLarge`]. Decompression stops at the bound, so memory use is
    /// bounded by it whatever the input.
    pub fn max_decompressed_len(mut self, limit: usize) -> Gzip {
        self.max_decompressed_len = limit;
        self
    }

    /// Whether data without the gzip magic bytes is read as it is (`true`, the default) or
    /// is an error (`false`, Curator's behaviour). See the [module docs](super#detection).
    pub fn detect(mut self, detect: bool) -> Gzip {
        self.detect = detect;
        self
    }
}

impl Compression for Gzip {
    fn compress(&self, data: &[u8]) -> Result<Vec<u8>, CompressionError> {
        let out = Vec::with_capacity(data.len() / 2 + 32);
        let mut encoder = GzEncoder::new(out, flate2::Compression::new(self.level));
        encoder
            .write_all(data)
            .map_err(|e| CompressionError::Compress(e.to_string()))?;
        encoder
            .finish()
            .map_err(|e| CompressionError::Compress(e.to_string()))
    }

    fn decompress(&self, stored: Bytes) -> Result<Bytes, CompressionError> {
        if self.detect && !looks_like_gzip(&stored) {
            return Ok(stored);
        }
        if stored.is_empty() {
            return Err(CompressionError::Corrupt("empty data is not gzip".into()));
        }
        let limit = self.max_decompressed_len;
        // One byte past the limit tells "exactly the limit" from "more".
        let bound = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
        let mut out = Vec::with_capacity(stored.len().saturating_mul(4).min(limit));
        MultiGzDecoder::new(&stored[..])
            .take(bound)
            .read_to_end(&mut out)
            .map_err(|e| CompressionError::Corrupt(e.to_string()))?;
        if out.len() > limit {
            return Err(CompressionError::TooLarge { limit });
        }
        Ok(Bytes::from(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compression::GZIP_MAGIC;

    fn roundtrip(gzip: &Gzip, data: &[u8]) -> Bytes {
        let stored = gzip.compress(data).expect("compress");
        assert!(looks_like_gzip(&stored), "gzip header");
        gzip.decompress(Bytes::from(stored)).expect("decompress")
    }

    #[test]
    fn round_trips_at_every_level_and_size() {
        let text: Vec<u8> = (0..50_000u32)
            .flat_map(|i| (i % 251).to_be_bytes())
            .collect();
        for level in [0, 1, 6, 9] {
            let gzip = Gzip::new().level(level);
            for data in [&b""[..], b"x", b"hello, zookeeper", &text[..]] {
                assert_eq!(roundtrip(&gzip, data), data, "level {level}");
            }
        }
    }

    #[test]
    fn empty_data_compresses_to_a_gzip_stream() {
        // As GZIPOutputStream: header (10) + empty deflate block + crc + length (8).
        let stored = Gzip::new().compress(b"").unwrap();
        assert_eq!(stored.len(), 20);
        assert_eq!(
            Gzip::new().detect(false).decompress(Bytes::from(stored)),
            Ok(Bytes::new())
        );
    }

    #[test]
    fn detection_passes_plain_data_and_strict_mode_refuses_it() {
        let gzip = Gzip::new();
        for plain in [&b""[..], b"{}", b"\x1f", b"\x1f\x8b", b"\x1f\x8b\x07zz"] {
            let plain = Bytes::copy_from_slice(plain);
            assert_eq!(gzip.decompress(plain.clone()), Ok(plain.clone()));
            assert!(matches!(
                Gzip::new().detect(false).decompress(plain),
                Err(CompressionError::Corrupt(_))
            ));
        }
    }

    #[test]
    fn junk_after_the_magic_bytes_is_an_error_not_a_panic() {
        let gzip = Gzip::new();
        let good = gzip
            .compress(b"some data that compresses somewhat")
            .unwrap();
        // Every truncation, and every single-byte corruption of the body.
        for cut in 3..good.len() {
            let r = gzip.decompress(Bytes::copy_from_slice(&good[..cut]));
            assert!(
                matches!(r, Err(CompressionError::Corrupt(_))),
                "cut {cut}: {r:?}"
            );
        }
        for i in 10..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x55;
            // Either detected (crc, length, bad block) or, never, different bytes.
            if let Ok(data) = gzip.decompress(Bytes::from(bad)) {
                assert_eq!(data, &b"some data that compresses somewhat"[..], "byte {i}");
            }
        }
        let mut rng_state = 0x2545_f491_u32;
        for len in 0..200 {
            let mut junk = GZIP_MAGIC.to_vec();
            for _ in 0..len {
                rng_state ^= rng_state << 13;
                rng_state ^= rng_state >> 17;
                rng_state ^= rng_state << 5;
                junk.push(rng_state as u8);
            }
            let _ = gzip.decompress(Bytes::from(junk));
        }
    }

    #[test]
    fn a_bomb_stops_at_the_limit() {
        let gzip = Gzip::new();
        // 64 MiB of zeros deflate to ~64 KiB: far above the default 16 MiB bound.
        let bomb = gzip.compress(&vec![0u8; 64 << 20]).unwrap();
        assert!(bomb.len() < 128 << 10, "{}", bomb.len());
        assert_eq!(
            gzip.decompress(Bytes::from(bomb)),
            Err(CompressionError::TooLarge {
                limit: DEFAULT_MAX_DECOMPRESSED_LEN
            })
        );
        // Exactly the limit is fine; one byte more is not.
        let limited = Gzip::new().max_decompressed_len(1000);
        let at = limited.compress(&[7u8; 1000]).unwrap();
        assert_eq!(limited.decompress(Bytes::from(at)).unwrap().len(), 1000);
        let over = limited.compress(&[7u8; 1001]).unwrap();
        assert_eq!(
            limited.decompress(Bytes::from(over)),
            Err(CompressionError::TooLarge { limit: 1000 })
        );
    }

    #[test]
    fn concatenated_members_read_as_one_as_in_java() {
        let gzip = Gzip::new();
        let mut both = gzip.compress(b"first,").unwrap();
        both.extend(gzip.compress(b"second").unwrap());
        assert_eq!(
            gzip.decompress(Bytes::from(both)).unwrap(),
            &b"first,second"[..]
        );
    }

    #[test]
    fn works_through_references_and_trait_objects() {
        let gzip: std::sync::Arc<dyn Compression> = std::sync::Arc::new(Gzip::new());
        let by_ref = &gzip;
        let stored = by_ref.compress(b"abc").unwrap();
        assert_eq!(gzip.decompress(Bytes::from(stored)).unwrap(), &b"abc"[..]);
    }
}
