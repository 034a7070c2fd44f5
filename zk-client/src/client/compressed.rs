//! Writes and reads of compressed node data ([`Compression`]): the plain calls with the data
//! compressed before it is sent and decompressed after it is read.

use std::future::Future;

use bytes::Bytes;
use zk_proto::Stat;

use super::{Client, CreateOptions};
use crate::compression::Compression;
use crate::error::Result;

impl Client {
    /// [`create`](Self::create) with `data` compressed by `compression`, as Curator's
    /// `create().compressed()`.
    ///
    /// The data is compressed on the caller's task when the method is called; the request
    /// is queued then, as for `create`. A sequential node's name is the server's as usual.
    ///
    /// ```no_run
    /// # #[cfg(feature = "gzip")]
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// use zk_client::compression::Gzip;
    /// use zk_client::CreateOptions;
    /// let gzip = Gzip::new();
    /// client
    ///     .create_compressed("/app/state", b"{\"big\": \"json\"}", &CreateOptions::persistent(), &gzip)
    ///     .await?;
    /// let (data, _stat) = client.get_data_decompressed("/app/state", &gzip).await?;
    /// assert_eq!(&data[..], b"{\"big\": \"json\"}");
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Compression`](crate::Error::Compression) when the data cannot be compressed
    /// (nothing is sent); otherwise as [`create`](Self::create).
    ///
    /// # Cancel safety
    ///
    /// As [`create`](Self::create): the data is compressed and the create sent when this is called.
    pub fn create_compressed<C: Compression + ?Sized>(
        &self,
        path: &str,
        data: &[u8],
        options: &CreateOptions,
        compression: &C,
    ) -> impl Future<Output = Result<(String, Stat)>> + Send + 'static {
        let call = compression
            .compress(data)
            .map(|stored| self.create(path, &stored, options));
        async move { call?.await }
    }

    /// [`set_data`](Self::set_data) with `data` compressed by `compression`, as Curator's
    /// `setData().compressed()`.
    ///
    /// # Errors
    ///
    /// [`Error::Compression`](crate::Error::Compression) when the data cannot be compressed
    /// (nothing is sent); otherwise as [`set_data`](Self::set_data).
    ///
    /// # Cancel safety
    ///
    /// The data is compressed and the request sent when this is called: dropping the future
    /// discards only the reply; the write may still be applied.
    pub fn set_data_compressed<C: Compression + ?Sized>(
        &self,
        path: &str,
        data: &[u8],
        version: Option<i32>,
        compression: &C,
    ) -> impl Future<Output = Result<Stat>> + Send + 'static {
        let call = compression
            .compress(data)
            .map(|stored| self.set_data(path, &stored, version));
        async move { call?.await }
    }

    /// [`get_data`](Self::get_data), with the data decompressed by `compression`, as
    /// Curator's `getData().decompressed()`. The `Stat` is the node's (its `data_length` is
    /// the stored, compressed length).
    ///
    /// With [`Gzip`](crate::compression::Gzip)'s detection on (the default), data without
    /// the gzip magic bytes is returned as it is; see
    /// [Detection](crate::compression#detection).
    ///
    /// # Errors
    ///
    /// [`Error::Compression`](crate::Error::Compression) when the stored data does not
    /// decompress or exceeds the bound; otherwise as [`get_data`](Self::get_data).
    ///
    /// # Cancel safety
    ///
    /// The read is sent when this is called: dropping the future discards only the reply (nothing
    /// is decompressed); nothing is changed on the server.
    pub fn get_data_decompressed<C: Compression + Clone + 'static>(
        &self,
        path: &str,
        compression: &C,
    ) -> impl Future<Output = Result<(Bytes, Stat)>> + Send + 'static {
        let read = self.get_data(path);
        let compression = compression.clone();
        async move {
            let (stored, stat) = read.await?;
            Ok((compression.decompress(stored)?, stat))
        }
    }
}
