//! [`DistributedAtomicLong`]: an 8-byte counter updated by optimistic compare-and-set, with
//! Curator's promoted-to-lock fallback.

use std::time::{Duration, Instant};

use zk_client::{Client, CreateMode, CreateOptions};

use crate::error::{Error, Result};
use crate::lock::FairLock;
use crate::path::check_base;
use crate::retry::{gave_up, retry_after, retrying, turns};

/// How often an atomic operation is tried before it reports failure, and how long it pauses
/// between tries (doubling from `pause` up to `max_pause`, with jitter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AtomicRetry {
    /// Tries in all (at least one is made).
    pub tries: u32,
    /// Pause after the first failed try.
    pub pause: Duration,
    /// Longest pause.
    pub max_pause: Duration,
}

impl AtomicRetry {
    /// `tries` tries with pauses from `pause` doubling up to `max_pause`.
    pub fn new(tries: u32, pause: Duration, max_pause: Duration) -> AtomicRetry {
        AtomicRetry {
            tries,
            pause,
            max_pause,
        }
    }

    /// One try, no pause (Curator's `PromotedToLock` default, `RetryNTimes(0, 0)`).
    pub fn once() -> AtomicRetry {
        AtomicRetry::new(1, Duration::ZERO, Duration::ZERO)
    }

    fn pause_after(&self, failed: u32) -> Duration {
        use rand::Rng;
        let base = self
            .pause
            .saturating_mul(1u32 << failed.min(16))
            .min(self.max_pause);
        base + base.mul_f64(rand::thread_rng().gen_range(0.0..0.5))
    }
}

impl Default for AtomicRetry {
    /// 10 tries from 10 ms up to 1 s.
    fn default() -> Self {
        AtomicRetry::new(10, Duration::from_millis(10), Duration::from_secs(1))
    }
}

/// Curator's `PromotedToLock`: when the optimistic tries all lose, take an exclusive lock
/// (an `InterProcessMutex` at `lock_path`, our [`FairLock`] in Curator's layout) and try
/// again under it. The lock serialises the promoted writers only; optimistic writers
/// elsewhere still race, and the node's version keeps every write safe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromotedToLock {
    /// The mutex's path.
    pub lock_path: String,
    /// How long to wait for the lock (`None`: as long as it takes).
    pub max_wait: Option<Duration>,
    /// Tries under the lock.
    pub retry: AtomicRetry,
}

impl PromotedToLock {
    /// A promotion to the mutex at `lock_path`, waiting as long as it takes, one try.
    pub fn new(lock_path: &str) -> PromotedToLock {
        PromotedToLock {
            lock_path: lock_path.to_owned(),
            max_wait: None,
            retry: AtomicRetry::once(),
        }
    }
}

/// What an atomic operation did, as Curator's `AtomicValue`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AtomicValue<T> {
    /// Whether the value was written.
    pub succeeded: bool,
    /// The value read before the write (0 for a missing node).
    pub pre_value: T,
    /// The value written; 0 when the operation did not succeed.
    pub post_value: T,
    /// Tries and time spent.
    pub stats: AtomicStats,
}

/// Tries and time of an atomic operation (Curator's `AtomicStats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AtomicStats {
    /// Optimistic tries made.
    pub optimistic_tries: u32,
    /// Tries made under the promoted lock.
    pub promoted_tries: u32,
    /// Time spent in optimistic tries.
    pub optimistic_time: Duration,
    /// Time spent getting the lock and trying under it.
    pub promoted_time: Duration,
}

/// Encodes a value as Curator's `DistributedAtomicLong`: 8 bytes, big-endian.
pub(crate) fn encode_i64(value: i64) -> [u8; 8] {
    value.to_be_bytes()
}

/// Decodes Curator's 8-byte value: empty is 0; fewer than 8 bytes is corrupt; extra bytes are
/// ignored (the leading 8 are used, as Curator does).
pub(crate) fn decode_i64(data: &[u8]) -> Result<i64> {
    if data.is_empty() {
        return Ok(0);
    }
    let head: [u8; 8] = data
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(Error::corrupted)?;
    Ok(i64::from_be_bytes(head))
}

/// A 64-bit counter in one PERSISTENT node, in Curator's `DistributedAtomicLong` format (8
/// bytes, big-endian two's complement; empty or missing reads as 0), so Java and Rust
/// processes can update one counter together.
///
/// Each update reads the node and writes the new value at the version read; when another
/// writer got there first it tries again per its [`AtomicRetry`], then, if a
/// [`PromotedToLock`] is set, once more under that lock, as Curator does. A missing node is
/// created (parents as containers) by the first update.
///
/// **Ambiguous writes.** When the connection is lost while a write is in flight, it may or may
/// not have been applied, and a counter cannot tell (another writer could have written the
/// same value at the same version). Curator's client retries such a write, which can count
/// an increment twice; here the operation fails with `ConnectionLoss` instead, so every
/// increment reported as succeeded was applied exactly once.
///
/// ```no_run
/// # async fn f(client: zk_client::Client) -> zk_recipes::Result<()> {
/// use zk_recipes::shared::{DistributedAtomicLong, PromotedToLock};
/// let counter = DistributedAtomicLong::new(client, "/counters/orders")?
///     .promoted_to_lock(PromotedToLock::new("/counters/orders-lock"));
/// let result = counter.increment().await?;
/// if result.succeeded {
///     println!("{} -> {}", result.pre_value, result.post_value);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct DistributedAtomicLong {
    client: Client,
    path: String,
    retry: AtomicRetry,
    promoted: Option<PromotedToLock>,
}

/// Outcome of one try.
enum Try {
    Done { pre: i64, post: i64 },
    Lost,
}

impl DistributedAtomicLong {
    /// A counter at `path` with the default [`AtomicRetry`] and no promotion.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] for a relative path or the root.
    pub fn new(client: Client, path: &str) -> Result<DistributedAtomicLong> {
        Ok(DistributedAtomicLong {
            client,
            path: check_base(path)?,
            retry: AtomicRetry::default(),
            promoted: None,
        })
    }

    /// Sets the optimistic retry.
    pub fn with_retry(mut self, retry: AtomicRetry) -> DistributedAtomicLong {
        self.retry = retry;
        self
    }

    /// Falls back to a lock when the optimistic tries lose.
    pub fn promoted_to_lock(mut self, promoted: PromotedToLock) -> DistributedAtomicLong {
        self.promoted = Some(promoted);
        self
    }

    /// The node's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The current value (0 when the node is missing; it is not created).
    ///
    /// # Errors
    ///
    /// `Server(DataInconsistency)` for 1 to 7 bytes of data; `NoAuth` and the session
    /// errors (connection losses are waited out).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads.
    pub async fn get(&self) -> Result<AtomicValue<i64>> {
        let client = &self.client;
        let value = match retrying(client, || client.get_data(&self.path)).await {
            Ok((data, _)) => decode_i64(&data)?,
            Err(Error::Client(zk_client::Error::NoNode)) => 0,
            Err(e) => return Err(e),
        };
        Ok(AtomicValue {
            succeeded: true,
            pre_value: value,
            post_value: value,
            stats: AtomicStats::default(),
        })
    }

    /// Adds 1.
    ///
    /// # Errors
    ///
    /// See [`add`](Self::add).
    ///
    /// # Cancel safety
    ///
    /// As [`add`](Self::add).
    pub async fn increment(&self) -> Result<AtomicValue<i64>> {
        self.add(1).await
    }

    /// Subtracts 1.
    ///
    /// # Errors
    ///
    /// See [`add`](Self::add).
    ///
    /// # Cancel safety
    ///
    /// As [`add`](Self::add).
    pub async fn decrement(&self) -> Result<AtomicValue<i64>> {
        self.add(-1).await
    }

    /// Subtracts `delta`.
    ///
    /// # Errors
    ///
    /// See [`add`](Self::add).
    ///
    /// # Cancel safety
    ///
    /// As [`add`](Self::add).
    pub async fn subtract(&self, delta: i64) -> Result<AtomicValue<i64>> {
        self.add(delta.wrapping_neg()).await
    }

    /// Adds `delta` (wrapping, as Java's `long` arithmetic). `succeeded` is false when every
    /// try lost to another writer.
    ///
    /// # Errors
    ///
    /// `ConnectionLoss` when a write's outcome is unknown (see the type's docs),
    /// `Server(DataInconsistency)` for undecodable data, [`Error::Timeout`] when the promoted
    /// lock's `max_wait` passed, `NoAuth` and the session errors.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future may leave one write applied (whose outcome is then unknown).
    pub async fn add(&self, delta: i64) -> Result<AtomicValue<i64>> {
        self.update(move |v| v.wrapping_add(delta)).await
    }

    /// Writes `value` whatever the current value (through the optimistic tries and the
    /// promotion, as [`add`](Self::add)).
    ///
    /// # Errors
    ///
    /// As [`add`](Self::add).
    ///
    /// # Cancel safety
    ///
    /// As [`add`](Self::add).
    pub async fn try_set(&self, value: i64) -> Result<AtomicValue<i64>> {
        self.update(move |_| value).await
    }

    /// Writes `new` if the current value is `expected`: one read and at most one write, no
    /// retry, no lock, no create (as Curator).
    ///
    /// # Errors
    ///
    /// As [`add`](Self::add).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future may leave its one write applied (whose outcome is then unknown).
    pub async fn compare_and_set(&self, expected: i64, new: i64) -> Result<AtomicValue<i64>> {
        let started = Instant::now();
        let client = &self.client;
        let mut result = AtomicValue {
            succeeded: false,
            pre_value: 0,
            post_value: 0,
            stats: AtomicStats {
                optimistic_tries: 1,
                ..AtomicStats::default()
            },
        };
        match retrying(client, || client.get_data(&self.path)).await {
            Ok((data, stat)) => {
                // Curator compares the stored bytes with the encoded expectation.
                result.pre_value = decode_i64(&data)?;
                if data.as_ref() == encode_i64(expected) {
                    match client
                        .set_data(&self.path, &encode_i64(new), Some(stat.version))
                        .await
                    {
                        Ok(_) => {
                            result.succeeded = true;
                            result.post_value = new;
                        }
                        Err(zk_client::Error::BadVersion | zk_client::Error::NoNode) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
            }
            Err(Error::Client(zk_client::Error::NoNode)) => {}
            Err(e) => return Err(e),
        }
        result.stats.optimistic_time = started.elapsed();
        Ok(result)
    }

    /// Creates the node with `value` if it is missing: `true` if this call created it.
    ///
    /// # Errors
    ///
    /// `ConnectionLoss` when the create's outcome is unknown, `NoAuth` and the session
    /// errors.
    ///
    /// # Cancel safety
    ///
    /// The create is sent when the future is first polled; dropping the future loses only the
    /// outcome (the node may have been created).
    pub async fn initialize(&self, value: i64) -> Result<bool> {
        let options = CreateOptions::new(CreateMode::Persistent).with_container_parents(true);
        match self
            .client
            .create_all(&self.path, &encode_i64(value), &options)
            .await
        {
            Ok(_) => Ok(true),
            Err(zk_client::Error::NodeExists) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Writes `value` unconditionally, creating the node if needed.
    ///
    /// # Errors
    ///
    /// `NoAuth` and the session errors (an unconditional write is safe to repeat, so
    /// connection losses are waited out).
    ///
    /// # Cancel safety
    ///
    /// Requests are sent when the future is first polled; dropping the future loses only the
    /// outcome: the node may have been created or set.
    pub async fn force_set(&self, value: i64) -> Result<()> {
        let client = &self.client;
        let data = encode_i64(value);
        let options = CreateOptions::new(CreateMode::Persistent).with_container_parents(true);
        for _ in turns() {
            match client.set_data(&self.path, &data, None).await {
                Ok(_) => return Ok(()),
                Err(zk_client::Error::NoNode) => {
                    match client.create_all(&self.path, &data, &options).await {
                        Ok(_) => return Ok(()),
                        Err(zk_client::Error::NodeExists) => {}
                        Err(e) => retry_after(client, e).await?,
                    }
                }
                Err(e) => retry_after(client, e).await?,
            }
        }
        Err(gave_up())
    }

    /// The optimistic loop, then the promoted one.
    async fn update(&self, op: impl Fn(i64) -> i64) -> Result<AtomicValue<i64>> {
        let mut stats = AtomicStats::default();
        let started = Instant::now();
        let mut outcome = self
            .tries(&self.retry, &op, &mut stats.optimistic_tries)
            .await?;
        stats.optimistic_time = started.elapsed();
        if let (Try::Lost, Some(promoted)) = (&outcome, &self.promoted) {
            let started = Instant::now();
            let lock = FairLock::new(self.client.clone(), &promoted.lock_path)?;
            let guard = match promoted.max_wait {
                Some(wait) => lock.acquire_timeout(wait).await?,
                None => lock.acquire().await?,
            };
            let result = self
                .tries(&promoted.retry, &op, &mut stats.promoted_tries)
                .await;
            let released = guard.release().await;
            outcome = result?;
            released?;
            stats.promoted_time = started.elapsed();
        }
        Ok(match outcome {
            Try::Done { pre, post } => AtomicValue {
                succeeded: true,
                pre_value: pre,
                post_value: post,
                stats,
            },
            Try::Lost => AtomicValue {
                succeeded: false,
                pre_value: 0,
                post_value: 0,
                stats,
            },
        })
    }

    async fn tries(
        &self,
        retry: &AtomicRetry,
        op: &impl Fn(i64) -> i64,
        count: &mut u32,
    ) -> Result<Try> {
        for attempt in 0..retry.tries.max(1) {
            if attempt > 0 {
                tokio::time::sleep(retry.pause_after(attempt - 1)).await;
            }
            *count += 1;
            if let Try::Done { pre, post } = self.try_once(op).await? {
                return Ok(Try::Done { pre, post });
            }
        }
        Ok(Try::Lost)
    }

    /// One read and one conditional write (a create when the node is missing).
    async fn try_once(&self, op: &impl Fn(i64) -> i64) -> Result<Try> {
        let client = &self.client;
        match retrying(client, || client.get_data(&self.path)).await {
            Ok((data, stat)) => {
                let pre = decode_i64(&data)?;
                let post = op(pre);
                match client
                    .set_data(&self.path, &encode_i64(post), Some(stat.version))
                    .await
                {
                    Ok(_) => Ok(Try::Done { pre, post }),
                    Err(zk_client::Error::BadVersion | zk_client::Error::NoNode) => Ok(Try::Lost),
                    Err(e) => Err(e.into()),
                }
            }
            Err(Error::Client(zk_client::Error::NoNode)) => {
                let post = op(0);
                let options =
                    CreateOptions::new(CreateMode::Persistent).with_container_parents(true);
                match client
                    .create_all(&self.path, &encode_i64(post), &options)
                    .await
                {
                    Ok(_) => Ok(Try::Done { pre: 0, post }),
                    Err(zk_client::Error::NodeExists) => Ok(Try::Lost),
                    Err(e) => Err(e.into()),
                }
            }
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_eight_bytes_big_endian() {
        assert_eq!(encode_i64(1), [0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(decode_i64(&encode_i64(-5)).unwrap(), -5);
        assert_eq!(decode_i64(&[]).unwrap(), 0);
        assert!(decode_i64(&[0, 1, 2]).is_err());
        // Extra bytes: the leading eight are used.
        assert_eq!(decode_i64(&[0, 0, 0, 0, 0, 0, 1, 0, 7]).unwrap(), 256);
    }

    #[test]
    fn retry_pauses_grow_to_the_bound() {
        let retry = AtomicRetry::new(5, Duration::from_millis(10), Duration::from_millis(40));
        assert!(retry.pause_after(0) >= Duration::from_millis(10));
        assert!(retry.pause_after(0) < Duration::from_millis(15));
        assert!(retry.pause_after(10) >= Duration::from_millis(40));
        assert!(retry.pause_after(10) < Duration::from_millis(60));
        assert_eq!(AtomicRetry::once().tries, 1);
    }
}
