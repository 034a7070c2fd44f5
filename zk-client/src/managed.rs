//! [`SessionManager`]: an opt-in owner of sessions that opens a new one after an expiry.
//!
//! A [`Client`] never leaves a terminal state. Long-lived recipes (a leader latch, a group
//! member) must outlive one session, so this module owns a [`ClientBuilder`], watches the
//! current client, and after an expiry connects a fresh client from the same builder (with
//! backoff) and publishes it with the next generation number. The new client shares nothing
//! with the old one: no request, watch or ephemeral node of the old session is ever re-sent.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use crate::builder::{capped, ClientBuilder};
use crate::client::Client;
use crate::error::{Error, Result};
use crate::state::SessionState;
use crate::state_watcher::{Observable, Publisher, Transitions};
use crate::tracking::SharedHosts;

/// Default first pause before connecting again after an expiry.
pub const DEFAULT_RENEW_BACKOFF: Duration = Duration::from_millis(100);
/// Default longest pause between two failed renewal attempts.
pub const DEFAULT_RENEW_BACKOFF_MAX: Duration = Duration::from_secs(5);
/// Default bound on consecutive failed renewal attempts before the manager gives up.
pub const DEFAULT_RENEW_ATTEMPTS: u32 = 1_000;
/// Default pause before renewing a session that died young (lived less than
/// [`DEFAULT_RENEW_STABLE_AFTER`]); it doubles with each young death in a row.
pub const DEFAULT_RENEW_PACE_FIRST: Duration = Duration::from_secs(1);
/// Default ceiling of the pause before renewing when every session dies young: at most about
/// two new sessions a minute then.
pub const DEFAULT_RENEW_PACE_MAX: Duration = Duration::from_secs(30);
/// Default age from which a session counts as having lived: its expiry renews after
/// [`DEFAULT_RENEW_BACKOFF`] again, and the pacing starts over.
pub const DEFAULT_RENEW_STABLE_AFTER: Duration = Duration::from_secs(60);

/// One session of a [`SessionManager`]: its client and its generation number (1 for the
/// first session, then +1 for each renewal), and whether the manager ended.
///
/// This is the value a [`SessionManager::watch`] follows: a new generation after each
/// renewal, and once the manager ended, a last value with the same number and client whose
/// [`ended`](Self::ended) says why. That last value is final ([`Observable::is_final`]): the
/// stream ends after it, and [`Transitions::changed`] returns it again at once.
///
/// Two generations are equal when their numbers and their ended-ness are (the number names
/// the client).
///
/// `#[non_exhaustive]`: fields may be added (read them; generations are made by the manager).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Generation {
    /// Counts the sessions the manager opened, starting at 1.
    pub number: u64,
    /// The client of that session.
    pub client: Client,
    /// Why the manager ended, once it did: [`Error::Closed`] after
    /// [`SessionManager::close`] or when every manager handle is dropped,
    /// [`Error::AuthFailed`], or the last connect error when renewal gave up. `None` while
    /// the manager runs.
    pub ended: Option<Error>,
}

impl Generation {
    /// `Ok(self)` while the manager runs, `Err(why it ended)` once it ended (see
    /// [`ended`](Self::ended)): turns a value from [`Transitions::changed`] into the
    /// `?`-friendly form.
    ///
    /// # Errors
    ///
    /// The reason the manager ended (a clone of [`ended`](Self::ended)).
    pub fn live(self) -> Result<Generation> {
        match &self.ended {
            Some(e) => Err(e.clone()),
            None => Ok(self),
        }
    }
}

impl PartialEq for Generation {
    fn eq(&self, other: &Self) -> bool {
        self.number == other.number && self.ended.is_some() == other.ended.is_some()
    }
}

impl Observable for Generation {
    fn is_final(&self) -> bool {
        self.ended.is_some()
    }

    /// The manager's task is gone without saying why (its runtime shut down): `Closed`.
    fn when_gone(last: &Self) -> Self {
        let mut gone = last.clone();
        gone.ended.get_or_insert(Error::Closed);
        gone
    }
}

/// Follows a [`SessionManager`]'s generations: [`Transitions`] of [`Generation`], from
/// [`SessionManager::watch`].
pub type Generations = Transitions<Generation>;

/// Owns a session and replaces it after it expires: each new session is a new [`Client`],
/// published with a generation number to everyone who [`watch`](Self::watch)es it.
///
/// **What renews.** Only [`SessionState::Expired`] (the server expired the session, or the
/// client gave it up after no server answered for the whole timeout) starts a new session.
/// [`SessionState::AuthFailed`] ends the manager (the same credentials would fail again),
/// and so does [`SessionState::Closed`] (someone closed the client: that is taken as the
/// owner's intent). An ended manager publishes no more clients; its watchers see a last
/// [`Generation`] whose [`Generation::ended`] is the error (and [`SessionManager::ended`]
/// returns it).
///
/// **What is never carried over.** A new session starts empty: watches, pending calls and
/// ephemeral nodes of the old one are gone, locks held on it stay lost
/// (`zk_recipes::LockState::Lost`), and nothing is re-sent. Recipes that outlive a session
/// (the leader latch) re-join on the new client by themselves. A builder configured with
/// [`ClientBuilder::session`] resumes that session for the first generation only; renewals
/// open new sessions.
///
/// **Backoff.** After an expiry the manager connects again after
/// [`DEFAULT_RENEW_BACKOFF`], doubling the pause (with up to 50 % jitter) after each failed
/// attempt up to [`DEFAULT_RENEW_BACKOFF_MAX`], and gives up after
/// [`DEFAULT_RENEW_ATTEMPTS`] consecutive failures (about 80 minutes), ending with the last
/// error. [`SessionManager::builder`] changes these.
///
/// **Pacing.** A session that expires less than [`DEFAULT_RENEW_STABLE_AFTER`] (60 s) after
/// it was opened *died young*: something kills every new session (a server that drops the
/// connection on a request the application keeps sending and never resumes sessions, a
/// misconfigured ensemble), and renewing at full speed would open sessions by the hundred,
/// each left on the servers until it expires. So the pause before renewing after a young
/// death is [`DEFAULT_RENEW_PACE_FIRST`] (1 s), doubling with each young death in a row up
/// to [`DEFAULT_RENEW_PACE_MAX`] (30 s), with up to 50 % jitter: at most about six sessions
/// in the first minute of such a storm and two a minute after. A session that lived 60 s
/// starts the pacing over. [`SessionManagerBuilder::renew_pacing`] changes these. The
/// generations also share what their clients learned about requests the server drops the
/// connection on (unless [`ClientBuilder::poison_quarantine`] turned that rule off), so such a
/// request is refused locally in a new session instead of killing it.
///
/// ```no_run
/// # async fn f() -> zk_client::Result<()> {
/// use zk_client::{Client, SessionManager};
/// let manager = SessionManager::connect(Client::builder("127.0.0.1:2181/app")).await?;
/// let mut generations = manager.watch();
/// tokio::spawn(async move {
///     loop {
///         let generation = generations.changed().await;
///         if let Some(why) = &generation.ended {
///             println!("the manager ended: {why}");
///             break;
///         }
///         println!("session {} is {:#x}", generation.number, generation.client.session_id());
///     }
/// });
/// manager.client().create("/hello", b"", &zk_client::CreateOptions::ephemeral()).await?;
/// manager.close().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SessionManager {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    published: Arc<Publisher<Generation>>,
    stop: CancellationToken,
    /// The host list of the current and later sessions, once changed.
    hosts: Arc<SharedHosts>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The last handle is gone: stop renewing (the current client closes when its own
        // last handle is dropped).
        self.stop.cancel();
    }
}

/// Options of a [`SessionManager`], from [`SessionManager::builder`]: the renewal backoff
/// after an expiry (defaults [`DEFAULT_RENEW_BACKOFF`], [`DEFAULT_RENEW_BACKOFF_MAX`],
/// [`DEFAULT_RENEW_ATTEMPTS`]).
///
/// ```no_run
/// # async fn f() -> zk_client::Result<()> {
/// use std::time::Duration;
/// use zk_client::{Client, SessionManager};
/// let manager = SessionManager::builder(Client::builder("127.0.0.1:2181"))
///     .renew_backoff(Duration::from_millis(50), Duration::from_secs(1))
///     .renew_attempts(100)
///     .connect()
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until connected"]
pub struct SessionManagerBuilder {
    client: ClientBuilder,
    backoff: Backoff,
}

impl SessionManagerBuilder {
    /// The pause before the first renewal attempt after an expiry, and the longest pause
    /// (each failed attempt doubles it, with up to 50 % jitter).
    pub fn renew_backoff(mut self, first: Duration, max: Duration) -> Self {
        self.backoff.first = capped(first);
        self.backoff.max = capped(max);
        self
    }

    /// The pacing of renewals when sessions die young (see [`SessionManager`], "Pacing"):
    /// the pause before renewing after a session that lived less than `stable_after` is
    /// `first`, doubling with each such death in a row up to `max` (with up to 50 % jitter).
    /// Defaults [`DEFAULT_RENEW_PACE_FIRST`], [`DEFAULT_RENEW_PACE_MAX`],
    /// [`DEFAULT_RENEW_STABLE_AFTER`]. A zero `stable_after` turns the pacing off.
    pub fn renew_pacing(mut self, first: Duration, max: Duration, stable_after: Duration) -> Self {
        self.backoff.pace_first = capped(first);
        self.backoff.pace_max = capped(max);
        self.backoff.stable_after = capped(stable_after);
        self
    }

    /// How many consecutive failed renewal attempts end the manager (at least 1).
    pub fn renew_attempts(mut self, attempts: u32) -> Self {
        self.backoff.attempts = attempts;
        self
    }

    /// Connects the first session and starts watching it, as [`SessionManager::connect`].
    ///
    /// # Errors
    ///
    /// As [`SessionManager::connect`].
    ///
    /// # Cancel safety
    ///
    /// As [`SessionManager::connect`].
    pub async fn connect(self) -> Result<SessionManager> {
        let SessionManagerBuilder {
            client: mut builder,
            backoff,
        } = self;
        // Every generation shares one poison ledger: a request the server drops the
        // connection on stays refused in the next session.
        builder.poison = Some(builder.poison_ledger());
        // Every generation opens on the host list last set (by `update_hosts` or by
        // tracking), not the connect string's (CURATOR-551); the chroot stays.
        let hosts = Arc::new(SharedHosts::default());
        builder.shared_hosts = Some(hosts.clone());
        let client = builder.clone().connect().await?;
        let first_gen = Generation {
            number: 1,
            client,
            ended: None,
        };
        let published = Arc::new(Publisher::new(first_gen.clone()));
        let stop = CancellationToken::new();
        let backoff = Backoff {
            max: backoff.max.max(backoff.first),
            attempts: backoff.attempts.max(1),
            pace_max: backoff.pace_max.max(backoff.pace_first),
            ..backoff
        };
        // Renewals open new sessions: never resume the first one's id again.
        let mut renew_builder = builder;
        renew_builder.resume = None;
        tokio::spawn(supervise(
            renew_builder,
            backoff,
            first_gen,
            published.clone(),
            stop.clone(),
        ));
        Ok(SessionManager {
            inner: Arc::new(Inner {
                published,
                stop,
                hosts,
            }),
        })
    }
}

/// How the manager retries after an expiry.
#[derive(Debug, Clone, Copy)]
struct Backoff {
    first: Duration,
    max: Duration,
    attempts: u32,
    pace_first: Duration,
    pace_max: Duration,
    stable_after: Duration,
}

impl Backoff {
    /// The pause before renewing after a session that lived `lived`, with `young` the
    /// number of young deaths in a row before it (updated).
    fn pause_after(&self, lived: Duration, young: &mut u32) -> Duration {
        if self.stable_after.is_zero() || lived >= self.stable_after {
            *young = 0;
            return self.first;
        }
        let pause = self
            .pace_first
            .saturating_mul(1u32 << (*young).min(20))
            .min(self.pace_max);
        *young = young.saturating_add(1);
        pause
    }
}

impl SessionManager {
    /// Connects the first session from `builder` and starts watching it.
    ///
    /// # Errors
    ///
    /// Whatever [`ClientBuilder::connect`] fails with for the first session (no renewal is
    /// attempted before one session existed).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future before it completes leaves nothing running: the client being
    /// connected is dropped, and closes the session it may have opened (as
    /// [`ClientBuilder::connect`]). A renewal cut short by [`close`](Self::close) does the
    /// same.
    pub async fn connect(builder: ClientBuilder) -> Result<SessionManager> {
        Self::builder(builder).connect().await
    }

    /// A manager with options (the renewal backoff), connected with
    /// [`SessionManagerBuilder::connect`]. [`connect`](Self::connect) is
    /// `SessionManager::builder(builder).connect()`.
    pub fn builder(builder: ClientBuilder) -> SessionManagerBuilder {
        SessionManagerBuilder {
            client: builder,
            backoff: Backoff {
                first: DEFAULT_RENEW_BACKOFF,
                max: DEFAULT_RENEW_BACKOFF_MAX,
                attempts: DEFAULT_RENEW_ATTEMPTS,
                pace_first: DEFAULT_RENEW_PACE_FIRST,
                pace_max: DEFAULT_RENEW_PACE_MAX,
                stable_after: DEFAULT_RENEW_STABLE_AFTER,
            },
        }
    }

    /// The current generation's client. After an expiry this is the expired client until
    /// the new session is established; use [`watch`](Self::watch) to learn when.
    pub fn client(&self) -> Client {
        self.current().client
    }

    /// The current generation (the last one published, even once the manager ended).
    pub fn current(&self) -> Generation {
        self.inner.published.current()
    }

    /// Whether the manager ended (closed, auth failure, or renewal given up), and why.
    pub fn ended(&self) -> Option<Error> {
        self.current().ended
    }

    /// Follows the generations from now on: each new session after an expiry, then a last
    /// value whose [`Generation::ended`] says why the manager ended. This is the crate's one
    /// transition type, as [`Client::watch`]: [`changed`](Transitions::changed),
    /// [`current`](Transitions::current), and a `Stream` that ends after the final value,
    /// with lag reporting.
    ///
    /// ```no_run
    /// # async fn f(manager: zk_client::SessionManager) -> zk_client::Result<()> {
    /// let mut generations = manager.watch();
    /// // `live()` turns the final value into `Err(why the manager ended)`.
    /// let renewed = generations.changed().await.live()?;
    /// println!("new session {:#x}", renewed.client.session_id());
    /// # Ok(()) }
    /// ```
    pub fn watch(&self) -> Generations {
        self.inner.published.subscribe()
    }

    /// Replaces the servers of the current session and of every later one:
    /// [`Client::update_hosts`] on the current client (the session stays; ZOOKEEPER-1355's
    /// rebalancing decides whether it moves), and each session the manager opens after an
    /// expiry connects to this list, with the chroot of the builder's connect string.
    /// `hosts` is a connect string without chroot.
    ///
    /// Resolves to whether the current session leaves its server (false when there is no
    /// live session: the next one opens on the new list).
    ///
    /// ```no_run
    /// # async fn f(manager: zk_client::SessionManager) -> zk_client::Result<()> {
    /// let config = manager.client().config_watcher().next().await?;
    /// manager.update_hosts(&config.connect_string()).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// `InvalidArgument` for a string with no host, a bad port, or a chroot (nothing
    /// changes); the reason the manager ended, once it did.
    ///
    /// # Cancel safety
    ///
    /// The list for later sessions is set, and the current client's update handed to its
    /// connection task, when this is called; dropping the future only drops the answer.
    pub fn update_hosts(&self, hosts: &str) -> impl Future<Output = Result<bool>> + Send + 'static {
        let checked = crate::hosts::parse_connect_string(hosts).and_then(|(list, chroot)| {
            if chroot.as_str().is_empty() {
                Ok(list)
            } else {
                Err(Error::InvalidArgument(
                    "update_hosts takes hosts only: the chroot cannot change",
                ))
            }
        });
        let current = self.current();
        let update = checked.map(|list| {
            self.inner.hosts.set(list);
            current.client.update_hosts(hosts)
        });
        async move {
            if let Some(why) = current.ended {
                return Err(why);
            }
            match update?.await {
                Ok(moving) => Ok(moving),
                // The session expired meanwhile: the next one opens on the new list.
                Err(Error::SessionExpired) => Ok(false),
                Err(e) => Err(e),
            }
        }
    }

    /// Stops renewing and closes the current client.
    ///
    /// # Errors
    ///
    /// What [`Client::close`] returns for the current client.
    ///
    /// # Cancel safety
    ///
    /// The manager stops as soon as this is called; dropping the future may leave the
    /// client's `closeSession` unanswered (the session then closes when its last handle
    /// is dropped, or expires).
    pub async fn close(&self) -> Result<()> {
        self.inner.stop.cancel();
        let client = self.client();
        client.close().await
    }
}

/// Watches each generation's client and replaces it after an expiry, until stopped.
async fn supervise(
    builder: ClientBuilder,
    backoff: Backoff,
    mut current: Generation,
    published: Arc<Publisher<Generation>>,
    stop: CancellationToken,
) {
    let mut born = tokio::time::Instant::now();
    let mut young = 0;
    let ended = loop {
        let mut states = current.client.watch();
        let end = tokio::select! {
            _ = stop.cancelled() => break Error::Closed,
            end = states.wait_for(SessionState::is_terminal) => end,
        };
        if end != SessionState::Expired {
            debug!(state = ?end, "session ended for good; the manager stops");
            break end.terminal_error().unwrap_or(Error::Closed);
        }
        let pause = backoff.pause_after(born.elapsed(), &mut young);
        if young > 0 {
            warn!(
                session = current.client.session_id(),
                lived_ms = born.elapsed().as_millis() as u64,
                young,
                pause_ms = pause.as_millis() as u64,
                "session died young; pacing the renewal"
            );
        } else {
            debug!(
                session = current.client.session_id(),
                "session expired; opening a new one"
            );
        }
        let hosts = builder.shared_hosts.clone().unwrap_or_default();
        let (before, _) = hosts.get();
        let client = tokio::select! {
            _ = stop.cancelled() => break Error::Closed,
            renewed = renew(&builder, backoff, pause) => match renewed {
                Ok(client) => client,
                Err(e) => break e,
            },
        };
        // The list changed while the new session was being opened: it follows too.
        if let (after, Some(list)) = hosts.get() {
            if after != before {
                let _ = client.update_hosts(&list.join(",")).await;
            }
        }
        born = tokio::time::Instant::now();
        current = Generation {
            number: current.number + 1,
            client,
            ended: None,
        };
        debug!(
            generation = current.number,
            session = current.client.session_id(),
            "new session published"
        );
        published.publish(current.clone());
    };
    published.publish_if(|generation| {
        generation.ended = Some(ended);
        true
    });
}

/// Connects a new session after `pause`, retrying with backoff.
async fn renew(builder: &ClientBuilder, backoff: Backoff, pause: Duration) -> Result<Client> {
    let mut pause = pause;
    let max = backoff.max.max(pause);
    let mut last = Error::ConnectionLoss;
    for attempt in 0..backoff.attempts {
        tokio::time::sleep(jittered(pause)).await;
        match builder.clone().connect().await {
            Ok(client) => return Ok(client),
            // Bad credentials do not get better by retrying.
            Err(Error::AuthFailed) => return Err(Error::AuthFailed),
            Err(e) => {
                warn!(attempt, error = %e, "could not open a new session; retrying");
                last = e;
            }
        }
        pause = (pause * 2).min(max);
    }
    Err(last)
}

/// `pause` plus up to half of it again, so that many managers do not reconnect in step.
fn jittered(pause: Duration) -> Duration {
    use rand::Rng;
    let extra = rand::thread_rng().gen_range(0.0..0.5);
    pause + pause.mul_f64(extra)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn young_deaths_pace_renewals_up_to_a_ceiling_and_a_long_life_resets() {
        let b = SessionManager::builder(ClientBuilder::new("127.0.0.1:1")).backoff;
        let mut young = 0;
        let short = Duration::from_secs(2);
        let pauses: Vec<u64> = (0..8)
            .map(|_| b.pause_after(short, &mut young).as_secs())
            .collect();
        assert_eq!(pauses, [1, 2, 4, 8, 16, 30, 30, 30]);
        // A session that lived a minute: renewed after the short backoff, pacing reset.
        assert_eq!(
            b.pause_after(Duration::from_secs(60), &mut young),
            DEFAULT_RENEW_BACKOFF
        );
        assert_eq!(b.pause_after(short, &mut young), Duration::from_secs(1));
        // Sessions in the first ten minutes of a storm where each dies at once: the sum of
        // the pauses (without jitter, which only lengthens them).
        let mut young = 0;
        let (mut t, mut sessions) = (Duration::ZERO, 0);
        let mut per_minute = [0u32; 10];
        while t < Duration::from_secs(600) {
            t += b.pause_after(Duration::ZERO, &mut young);
            sessions += 1;
            if let Some(m) = per_minute.get_mut((t.as_secs() / 60) as usize) {
                *m += 1;
            }
        }
        assert!(sessions <= 25, "{sessions}");
        assert!(per_minute[0] <= 6, "{per_minute:?}");
        assert!(per_minute[2..].iter().all(|m| *m <= 2), "{per_minute:?}");
    }

    #[test]
    fn zero_stable_after_turns_pacing_off() {
        let b = SessionManager::builder(ClientBuilder::new("127.0.0.1:1"))
            .renew_pacing(
                Duration::from_secs(1),
                Duration::from_secs(9),
                Duration::ZERO,
            )
            .backoff;
        let mut young = 0;
        for _ in 0..3 {
            assert_eq!(
                b.pause_after(Duration::ZERO, &mut young),
                DEFAULT_RENEW_BACKOFF
            );
        }
    }
}
