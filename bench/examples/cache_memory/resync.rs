//! `--timings`: the cache's resync after a fault, in a process of its own (`cache_memory
//! resync CONNECT PATH NODES`). The cache runs on a `SessionManager` whose client goes through
//! a TCP proxy (`integration_tests::Proxy`, on a thread and runtime of its own) in front of
//! the server; the server itself is never stopped. Once the subtree is loaded:
//!
//! * **reconnect, session kept**: the proxy refuses new connections and resets the open one;
//!   once the cache reports `Disconnected`, a change is written straight to the server; the
//!   proxy opens again. Timed from the reset until the cache is `Synced` with the change
//!   (and, within it, from the client connected again: the re-read itself).
//! * **session expiry**: the same outage, during which the session is also closed on the
//!   server (`integration_tests::expire_session`); timed from the proxy opening again until the
//!   cache is `Synced` on the manager's new session with the change (and, within it, from
//!   the new session connected: the re-read).
//!
//! Both are a full re-read of the subtree (`zk-recipes/src/cache/task.rs`: a pass after every
//! reconnect, the server does not replay what changed meanwhile). The manager's renewal is
//! paced at 50 ms (its default waits a second before renewing a session younger than a
//! minute, as these are).

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::{Duration, Instant};

use integration_tests::proxy::{Cut, Mode};
use integration_tests::{expire_session, Proxy};
use zk_client::{Client, SessionManager};
use zk_recipes::cache::{Cache, CacheState};

use super::Res;

/// The resync times of one size, in ms (NaN: not measured).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Resync {
    /// Reconnect with the session kept: from the connection's loss until synced with the
    /// change made during the outage.
    pub reconnect_ms: f64,
    /// Of which from the client connected again.
    pub reconnect_reread_ms: f64,
    /// Session expiry: from the outage's end until synced on the new session.
    pub expiry_ms: f64,
    /// Of which from the new session connected.
    pub expiry_reread_ms: f64,
}

impl Resync {
    pub(crate) const NONE: Resync = Resync {
        reconnect_ms: f64::NAN,
        reconnect_reread_ms: f64::NAN,
        expiry_ms: f64::NAN,
        expiry_reread_ms: f64::NAN,
    };

    /// Parses the child's `RESYNC` line's fields.
    pub(crate) fn from_fields(f: &[f64]) -> Res<Resync> {
        let [reconnect_ms, reconnect_reread_ms, expiry_ms, expiry_reread_ms] = f[..] else {
            return Err(format!("resync child: {f:?}").into());
        };
        Ok(Resync {
            reconnect_ms,
            reconnect_reread_ms,
            expiry_ms,
            expiry_reread_ms,
        })
    }
}

/// The proxy, running on a thread of its own (its tasks must not share the measured
/// client's runtime); it stops when this is dropped.
struct ProxyThread {
    proxy: Proxy,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl ProxyThread {
    fn start(upstream: SocketAddr) -> Res<ProxyThread> {
        let (tx, rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = tx.send(Err(e.to_string()));
                    return;
                }
            };
            rt.block_on(async move {
                let _ = tx.send(Ok(Proxy::start(upstream).await));
                let _ = stopped.await;
            });
        });
        let proxy = rx
            .recv_timeout(Duration::from_secs(10))
            .map_err(|e| format!("proxy thread: {e}"))??;
        Ok(ProxyThread { proxy, _stop: stop })
    }
}

/// The child side: loads `n` nodes at `path` through the proxy, then times both resyncs and
/// prints `RESYNC <reconnect ms> <its re-read ms> <expiry ms> <its re-read ms>`.
pub(crate) async fn child(connect: &str, path: &str, n: usize) -> Res<()> {
    let upstream = connect
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| format!("{connect:?}: no address (one HOST:PORT, no chroot)"))?;
    let proxy = ProxyThread::start(upstream)?;
    let proxy = &proxy.proxy;
    let writer = Client::connect(connect).await?;
    let manager = SessionManager::builder(
        Client::builder(&proxy.connect_string()).session_timeout(Duration::from_secs(30)),
    )
    .renew_backoff(Duration::from_millis(50), Duration::from_secs(1))
    .renew_pacing(
        Duration::from_millis(50),
        Duration::from_secs(1),
        Duration::from_secs(60),
    )
    .connect()
    .await?;
    let limit = Duration::from_secs(60 + (n as u64) / 1_000);
    let cache = Cache::builder(path).build_managed(&manager)?;
    tokio::time::timeout(limit, cache.ready())
        .await
        .map_err(|_| format!("cache not initialized within {limit:?}"))??;
    if cache.len() != n {
        return Err(format!("cached {} nodes, expected {n}", cache.len()).into());
    }
    // A node of the subtree whose data changes during each outage.
    let marker = format!("{path}/p0");
    let marked = |value: &'static [u8]| {
        let cache = &cache;
        let marker = &marker;
        move || {
            cache.state() == CacheState::Synced
                && cache
                    .get(marker)
                    .is_some_and(|c| c.data.as_deref() == Some(value))
        }
    };

    // Reconnect, the session kept.
    let session = manager.client().session_id();
    proxy.set_mode(Mode::Refuse);
    let lost = Instant::now();
    proxy.cut(Cut::Reset);
    until(limit, "the cache disconnected", || {
        cache.state() != CacheState::Synced
    })
    .await?;
    writer.set_data(&marker, b"reconnect", None).await?;
    proxy.set_mode(Mode::Pass);
    let client = manager.client();
    let (reconnect_ms, reconnect_reread_ms) = timed(
        lost,
        limit,
        || client.state().is_connected(),
        marked(b"reconnect"),
    )
    .await?;
    if manager.client().session_id() != session {
        return Err("the reconnect lost the session".into());
    }

    // Session expiry: the same outage, the session closed on the server meanwhile.
    let old = manager.client();
    proxy.set_mode(Mode::Refuse);
    proxy.cut(Cut::Reset);
    until(limit, "the cache disconnected", || {
        cache.state() != CacheState::Synced
    })
    .await?;
    writer.set_data(&marker, b"expiry", None).await?;
    let mut passwd = [0u8; 16];
    let given = old.session_password();
    if given.len() != passwd.len() {
        return Err(format!("a session password of {} bytes", given.len()).into());
    }
    passwd.copy_from_slice(&given);
    expire_session(upstream, old.session_id(), passwd).await?;
    proxy.set_mode(Mode::Pass);
    let reopened = Instant::now();
    let (expiry_ms, expiry_reread_ms) = timed(
        reopened,
        limit,
        || {
            let c = manager.client();
            c.session_id() != session && c.state().is_connected()
        },
        marked(b"expiry"),
    )
    .await?;
    println!(
        "RESYNC {reconnect_ms:.1} {reconnect_reread_ms:.1} {expiry_ms:.1} {expiry_reread_ms:.1}"
    );
    cache.close().await?;
    let _ = manager.close().await;
    let _ = writer.close().await;
    Ok(())
}

/// Polls every millisecond, within `limit`, until `done`.
async fn until(limit: Duration, what: &str, done: impl Fn() -> bool) -> Res<()> {
    let start = Instant::now();
    while !done() {
        if start.elapsed() > limit {
            return Err(format!("{what}: not within {limit:?}").into());
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    Ok(())
}

/// Polls every millisecond, within `limit`, until `synced`; returns the ms from `from` until
/// then, and from when `connected` was first seen until then.
async fn timed(
    from: Instant,
    limit: Duration,
    connected: impl Fn() -> bool,
    synced: impl Fn() -> bool,
) -> Res<(f64, f64)> {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mut at_connected = None;
    loop {
        let now = Instant::now();
        if at_connected.is_none() && connected() {
            at_connected = Some(now);
        }
        if synced() {
            let reread = now.duration_since(at_connected.unwrap_or(now));
            return Ok((ms(now.duration_since(from)), ms(reread)));
        }
        if from.elapsed() > limit {
            return Err(format!("not synced within {limit:?}").into());
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}
