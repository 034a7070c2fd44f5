//! Lock metrics (Cargo feature `metrics`, on the `metrics` facade) and lock tracing spans.
//!
//! Without the feature the metric calls compile away; the tracing span and events are
//! `debug` level and cost a level check when no subscriber wants them. Names are in the
//! table of the repository's `docs/metrics-tracing.md`.

use std::future::Future;
use std::time::{Duration, Instant};

use tracing::{debug, Instrument};

use crate::error::{Error, Result};
use crate::guard::{LockGuard, ReleaseHook};

/// Which lock: `mutex` (FairLock), `read`/`write` (ReadWriteLock sides), from the lock name
/// in the node names. `exclusive` (ExclusiveLock) and `semaphore` (per lease) are set by
/// those recipes.
pub(crate) fn kind_of(lock_name: &str) -> &'static str {
    match lock_name {
        "__READ__" => "read",
        "__WRIT__" => "write",
        _ => "mutex",
    }
}

/// Runs one acquire inside a `lock_acquire` debug span and records its wait and outcome
/// (`Ok(None)`: busy).
pub(crate) async fn acquire<F>(kind: &'static str, path: &str, fut: F) -> Result<Option<LockGuard>>
where
    F: Future<Output = Result<Option<LockGuard>>>,
{
    let span = tracing::debug_span!("lock_acquire", kind, path);
    let started = Instant::now();
    let result = fut.instrument(span.clone()).await;
    let waited = started.elapsed();
    let outcome = match &result {
        Ok(Some(_)) => "acquired",
        Ok(None) => "busy",
        Err(Error::Timeout) => "timeout",
        Err(Error::LockLost(_)) => "lost",
        Err(_) => "error",
    };
    span.in_scope(|| {
        debug!(
            wait_ms = waited.as_millis() as u64,
            outcome, "lock acquire done"
        )
    });
    record_acquire(kind, outcome, waited);
    result
}

/// Wraps a hold's release hook so the hold time is recorded and traced when it runs.
pub(crate) fn on_release(kind: &'static str, path: &str, hook: ReleaseHook) -> ReleaseHook {
    let held_since = Instant::now();
    let path = path.to_owned();
    Box::new(move || {
        let held = held_since.elapsed();
        tracing::debug_span!("lock_release", kind, path = %path)
            .in_scope(|| debug!(held_ms = held.as_millis() as u64, "lock released"));
        record_hold(kind, held);
        hook();
    })
}

#[inline]
fn record_acquire(kind: &'static str, outcome: &'static str, waited: Duration) {
    #[cfg(feature = "metrics")]
    {
        ::metrics::counter!("zk_recipes_lock_acquisitions_total", "kind" => kind, "outcome" => outcome)
            .increment(1);
        if outcome == "acquired" {
            ::metrics::histogram!("zk_recipes_lock_wait_seconds", "kind" => kind)
                .record(waited.as_secs_f64());
        }
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (kind, outcome, waited);
}

#[inline]
fn record_hold(kind: &'static str, held: Duration) {
    #[cfg(feature = "metrics")]
    ::metrics::histogram!("zk_recipes_lock_hold_seconds", "kind" => kind)
        .record(held.as_secs_f64());
    #[cfg(not(feature = "metrics"))]
    let _ = (kind, held);
}

/// A participant of the election at `lock_name` (`latch-` or `lock-`) took (`true`) or gave
/// up (`false`) leadership: `zk_recipes_leadership_changes_total{kind, change}`.
#[inline]
pub(crate) fn leadership(lock_name: &str, taken: bool) {
    #[cfg(feature = "metrics")]
    {
        let kind = if lock_name.starts_with("latch") {
            "latch"
        } else {
            "selector"
        };
        let change = if taken { "taken" } else { "lost" };
        ::metrics::counter!("zk_recipes_leadership_changes_total", "kind" => kind, "change" => change)
            .increment(1);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (lock_name, taken);
}
