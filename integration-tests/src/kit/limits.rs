//! Time limits: three named classes instead of a constant per test file. They bound waits so
//! that a hung test fails instead of hanging; none of them asserts how fast anything is.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

/// For what should happen within seconds on a quiet machine: an event after a change, a state
/// after a restart, a lock after its holder let go.
pub const SOON: Duration = Duration::from_secs(30);

/// The default bound: a connect, one step of a scenario, anything that involves an election.
pub const LIMIT: Duration = Duration::from_secs(60);

/// For what starts a Java process (a Curator peer) or runs a whole multi-step scenario.
pub const LONG: Duration = Duration::from_secs(180);

/// Awaits `fut`, panicking with `what` if it takes longer than [`LIMIT`].
pub async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    within_for(LIMIT, what, fut).await
}

/// Awaits `fut`, panicking with `what` if it takes longer than `limit` (one of the classes).
pub async fn within_for<T>(limit: Duration, what: &str, fut: impl Future<Output = T>) -> T {
    match tokio::time::timeout(limit, fut).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: still not done after {limit:?}"),
    }
}

/// Polls `check` every 50 ms until it returns `Some`, for at most `limit`.
pub async fn eventually<T, F, Fut>(what: &str, limit: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let end = Instant::now() + limit;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(Instant::now() < end, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The largest size a cost curve runs to: the number in the environment variable `var`
/// (e.g. `ZK_SESSIONS_MAX=1000` for the long run), else `default` (the short run CI does).
pub fn curve_max(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
