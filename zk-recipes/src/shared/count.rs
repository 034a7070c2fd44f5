//! [`SharedCount`]: a [`SharedValue`] holding a 4-byte big-endian `i32` (Curator's
//! `SharedCount`).

use std::sync::Arc;

use bytes::Bytes;
use zk_client::{Client, Observable, Publisher, Transitions};

use super::value::{SharedState, SharedValue, VersionedValue};
use crate::error::{Error, Result};

/// Encodes a count as Curator does: 4 bytes, big-endian two's complement.
pub(crate) fn encode_i32(count: i32) -> [u8; 4] {
    count.to_be_bytes()
}

/// Decodes a count: the first 4 bytes big-endian (extra bytes are ignored, as Curator does).
///
/// # Errors
///
/// `Server(DataInconsistency)` when there are fewer than 4 bytes.
pub(crate) fn decode_i32(data: &[u8]) -> Result<i32> {
    let head: [u8; 4] = data
        .get(..4)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(Error::corrupted)?;
    Ok(i32::from_be_bytes(head))
}

fn decode_versioned(v: VersionedValue<Bytes>) -> Result<VersionedValue<i32>> {
    Ok(VersionedValue {
        version: v.version,
        value: decode_i32(&v.value)?,
    })
}

/// A counter shared through one node in Curator's `SharedCount` format (4 bytes, big-endian
/// two's complement), so Java's `SharedCount` on the same path sees our writes and we see
/// its. See [`SharedValue`] for how the value is kept and followed.
///
/// ```no_run
/// # async fn f(client: zk_client::Client) -> zk_recipes::Result<()> {
/// use zk_recipes::shared::SharedCount;
/// let count = SharedCount::new(client.clone(), "/counters/jobs", 0).await?;
/// // Increment with compare-and-set, retrying on conflicts.
/// loop {
///     let current = count.versioned()?;
///     if count.try_set_count(&current, current.value + 1).await? {
///         break;
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SharedCount {
    value: SharedValue,
    counts: Arc<Publisher<SharedState<i32>>>,
}

impl SharedCount {
    /// Creates the node with `seed` unless it exists, reads it and starts watching it.
    ///
    /// # Errors
    ///
    /// As [`SharedValue::new`].
    ///
    /// # Cancel safety
    ///
    /// As [`SharedValue::new`].
    pub async fn new(client: Client, path: &str, seed: i32) -> Result<SharedCount> {
        let value = SharedValue::new(client, path, &encode_i32(seed)).await?;
        Ok(SharedCount::following(value))
    }

    /// As [`new`](Self::new), on `manager`'s sessions (see
    /// [`SharedValue::new_managed`]).
    ///
    /// # Errors
    ///
    /// As [`SharedValue::new`].
    ///
    /// # Cancel safety
    ///
    /// As [`SharedValue::new`].
    pub async fn new_managed(
        manager: &zk_client::SessionManager,
        path: &str,
        seed: i32,
    ) -> Result<SharedCount> {
        let value = SharedValue::new_managed(manager, path, &encode_i32(seed)).await?;
        Ok(SharedCount::following(value))
    }

    /// Publishes the value's changes decoded; must be called within a tokio runtime.
    fn following(value: SharedValue) -> SharedCount {
        let mut values = value.watch();
        let counts = Arc::new(Publisher::new(count_of(values.current())));
        let publisher = counts.clone();
        // Ends with the value's transitions (their final `Ended`).
        tokio::spawn(async move {
            loop {
                let next = values.changed().await;
                let done = next.is_final();
                publisher.publish(count_of(next));
                if done {
                    break;
                }
            }
        });
        SharedCount { value, counts }
    }

    /// Stops following the node (see [`SharedValue::close`]).
    ///
    /// # Errors
    ///
    /// As [`SharedValue::close`].
    ///
    /// # Cancel safety
    ///
    /// As [`SharedValue::close`].
    pub async fn close(&self) -> Result<()> {
        self.value.close().await
    }

    /// The node's path.
    pub fn path(&self) -> &str {
        self.value.path()
    }

    /// The cached count.
    ///
    /// # Errors
    ///
    /// `Server(DataInconsistency)` when the node holds fewer than 4 bytes.
    pub fn count(&self) -> Result<i32> {
        decode_i32(&self.value.value().value)
    }

    /// The cached count with its version (for [`try_set_count`](Self::try_set_count)).
    ///
    /// # Errors
    ///
    /// As [`count`](Self::count).
    pub fn versioned(&self) -> Result<VersionedValue<i32>> {
        decode_versioned(self.value.value())
    }

    /// Follows the count (see [`SharedValue::watch`]); a value that is not a count is
    /// [`SharedState::Invalid`].
    pub fn watch(&self) -> Transitions<SharedState<i32>> {
        self.counts.subscribe()
    }

    /// Writes `count` whatever the node holds.
    ///
    /// # Errors
    ///
    /// As [`SharedValue::set_value`].
    ///
    /// # Cancel safety
    ///
    /// As [`SharedValue::set_value`].
    pub async fn set_count(&self, count: i32) -> Result<()> {
        self.value.set_value(&encode_i32(count)).await
    }

    /// Writes `count` only if the node still holds `expected` (version and count).
    ///
    /// # Errors
    ///
    /// As [`SharedValue::try_set_value`].
    ///
    /// # Cancel safety
    ///
    /// As [`SharedValue::set_value`].
    pub async fn try_set_count(&self, expected: &VersionedValue<i32>, count: i32) -> Result<bool> {
        let current = self.value.value();
        match decode_i32(&current.value) {
            Ok(value) if value == expected.value && current.version == expected.version => {
                self.value.try_set_value(&current, &encode_i32(count)).await
            }
            _ => Ok(false),
        }
    }
}

/// A value's state as a count's.
fn count_of(value: SharedState<Bytes>) -> SharedState<i32> {
    match value {
        SharedState::Current(v) => {
            let version = v.version;
            match decode_versioned(v) {
                Ok(count) => SharedState::Current(count),
                Err(_) => SharedState::Invalid { version },
            }
        }
        SharedState::Invalid { version } => SharedState::Invalid { version },
        SharedState::Ended => SharedState::Ended,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_four_bytes_big_endian_twos_complement() {
        assert_eq!(encode_i32(1), [0, 0, 0, 1]);
        assert_eq!(encode_i32(-2), [0xff, 0xff, 0xff, 0xfe]);
        assert_eq!(encode_i32(0x0102_0304), [1, 2, 3, 4]);
        assert_eq!(decode_i32(&[0xff, 0xff, 0xff, 0xfe]).unwrap(), -2);
        // Extra bytes are ignored, as Curator's reader does.
        assert_eq!(decode_i32(&[0, 0, 1, 0, 9, 9]).unwrap(), 256);
        assert!(decode_i32(&[0, 0, 1]).is_err());
        assert!(decode_i32(&[]).is_err());
    }
}
