//! [`Codec`]: how a typed value becomes a node's bytes and back; [`Json`] and [`Raw`].

use zk_client::compression::Compression;
use zk_client::Bytes;

use crate::error::{Error, Result};

/// What a [`Codec`] reports when a value does not encode or data does not decode: any error
/// type (`serde_json::Error`, a bincode error, a message) boxed.
pub type CodecError = Box<dyn std::error::Error + Send + Sync>;

/// Turns a `T` into a node's bytes and back: implement it for your own format (bincode,
/// protobuf, a version byte before JSON).
///
/// Implementations are shared between tasks and must not panic on any input: `decode`
/// reads data anyone with write access may have put there.
///
/// ```
/// use zk_recipes::model::{Codec, CodecError};
///
/// /// A counter stored as decimal text.
/// struct Decimal;
///
/// impl Codec<u64> for Decimal {
///     fn encode(&self, value: &u64) -> Result<Vec<u8>, CodecError> {
///         Ok(value.to_string().into_bytes())
///     }
///     fn decode(&self, data: &[u8]) -> Result<u64, CodecError> {
///         Ok(std::str::from_utf8(data)?.trim().parse()?)
///     }
/// }
/// assert_eq!(Decimal.decode(b"42").unwrap(), 42);
/// assert!(Decimal.decode(b"forty-two").is_err());
/// ```
pub trait Codec<T>: Send + Sync + 'static {
    /// The bytes to store for `value`.
    ///
    /// # Errors
    ///
    /// When `value` cannot be encoded.
    fn encode(&self, value: &T) -> std::result::Result<Vec<u8>, CodecError>;

    /// The value `data` (a node's bytes) holds.
    ///
    /// # Errors
    ///
    /// When `data` is not in the format.
    fn decode(&self, data: &[u8]) -> std::result::Result<T, CodecError>;
}

/// JSON through serde (`serde_json`), the format of Curator's `JacksonModelSerializer` for
/// plain data classes (feature `json`).
#[cfg(feature = "json")]
#[cfg_attr(docsrs, doc(cfg(feature = "json")))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Json;

#[cfg(feature = "json")]
impl<T> Codec<T> for Json
where
    T: serde::Serialize + serde::de::DeserializeOwned,
{
    fn encode(&self, value: &T) -> std::result::Result<Vec<u8>, CodecError> {
        Ok(serde_json::to_vec(value)?)
    }

    fn decode(&self, data: &[u8]) -> std::result::Result<T, CodecError> {
        Ok(serde_json::from_slice(data)?)
    }
}

/// The bytes as they are (with a compression, a decompressing view).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Raw;

impl Codec<Bytes> for Raw {
    fn encode(&self, value: &Bytes) -> std::result::Result<Vec<u8>, CodecError> {
        Ok(value.to_vec())
    }

    fn decode(&self, data: &[u8]) -> std::result::Result<Bytes, CodecError> {
        Ok(Bytes::copy_from_slice(data))
    }
}

/// A codec with an optional compression around it: what a model or a typed cache applies.
pub(super) struct Format<C> {
    pub(super) codec: C,
    pub(super) compression: Option<std::sync::Arc<dyn Compression>>,
}

impl<C> Format<C> {
    /// The bytes to store for `value` (the model checks a schema between the two steps).
    #[cfg(test)]
    pub(super) fn encode<T>(&self, path: &str, value: &T) -> Result<Vec<u8>>
    where
        C: Codec<T>,
    {
        self.store(self.plain(path, value)?)
    }

    /// The encoded bytes of `value`, before compression (what a schema checks).
    pub(super) fn plain<T>(&self, path: &str, value: &T) -> Result<Vec<u8>>
    where
        C: Codec<T>,
    {
        self.codec
            .encode(value)
            .map_err(|e| codec_error(path, "encode", &*e))
    }

    /// The bytes to store for the encoded bytes `plain` (compressed if asked).
    pub(super) fn store(&self, plain: Vec<u8>) -> Result<Vec<u8>> {
        match &self.compression {
            Some(z) => z
                .compress(&plain)
                .map_err(|e| zk_client::Error::from(e).into()),
            None => Ok(plain),
        }
    }

    /// The value `stored` (a node's bytes) holds.
    pub(super) fn decode<T>(&self, path: &str, stored: Bytes) -> Result<T>
    where
        C: Codec<T>,
    {
        let plain = match &self.compression {
            Some(z) => z.decompress(stored).map_err(zk_client::Error::from)?,
            None => stored,
        };
        self.codec
            .decode(&plain)
            .map_err(|e| codec_error(path, "decode", &*e))
    }
}

fn codec_error(path: &str, what: &str, e: &(dyn std::error::Error + Send + Sync)) -> Error {
    Error::Codec {
        path: path.to_owned(),
        reason: format!("{what}: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_keeps_the_bytes_and_errors_name_the_path() {
        let format = Format {
            codec: Raw,
            compression: None,
        };
        let data = Bytes::from_static(b"\x00\xff");
        assert_eq!(format.encode("/a", &data).unwrap(), b"\x00\xff");
        let back: Bytes = format.decode("/a", data.clone()).unwrap();
        assert_eq!(back, data);
    }

    #[cfg(feature = "json")]
    #[test]
    fn json_errors_are_reported_never_panics() {
        let format = Format {
            codec: Json,
            compression: None,
        };
        let bad: Result<Vec<u32>> = format.decode("/n", Bytes::from_static(b"{not json"));
        match bad {
            Err(Error::Codec { path, reason }) => {
                assert_eq!(path, "/n");
                assert!(reason.starts_with("decode: "), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        let ok: Vec<u32> = format.decode("/n", Bytes::from_static(b"[1,2]")).unwrap();
        assert_eq!(ok, vec![1, 2]);
    }
}
