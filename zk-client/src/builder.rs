//! [`ClientBuilder`]: connect string, timeouts, credentials and limits.

use std::time::Duration;

use crate::client::Client;
use crate::error::Result;

/// Default requested session timeout: 10 s.
///
/// The server clamps the request to `[2 × tickTime, 20 × tickTime]` (4 s..40 s with the
/// default `tickTime=2000`); [`Client::negotiated_timeout`] tells the result.
pub const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// Default bound on requests on the wire at once (see [`ClientBuilder::max_outstanding`]).
pub const DEFAULT_MAX_OUTSTANDING: usize = 1024;

/// Default quarantine of a request the server drops the connection on (see
/// [`ClientBuilder::poison_quarantine`]): 60 s, the rule is on ([`Duration::ZERO`] turns it
/// off).
pub const DEFAULT_POISON_QUARANTINE: Duration = crate::session::poison::DEFAULT_QUARANTINE;

/// The suggested quarantine of the poison rule (see [`ClientBuilder::poison_quarantine`]):
/// 60 s, long enough that a caller looping on the request costs at most one drop a minute;
/// the default.
pub const SUGGESTED_POISON_QUARANTINE: Duration = crate::session::poison::DEFAULT_QUARANTINE;

/// Default bound on the events a [`PersistentWatcher`](crate::PersistentWatcher) holds
/// unread (see [`ClientBuilder::watch_buffer`]).
pub const DEFAULT_WATCH_BUFFER: usize = 4096;

/// The longest wait a builder keeps: a longer one (`Duration::MAX` for "never", say) counts
/// as this, about 30 years, so that every deadline computed from it stays representable.
pub(crate) const LONGEST_WAIT: Duration = Duration::from_secs(30 * 365 * 24 * 60 * 60);

/// `wait`, at most [`LONGEST_WAIT`].
pub(crate) fn capped(wait: Duration) -> Duration {
    wait.min(LONGEST_WAIT)
}

// The constructors of `Client` live here, beside the builder they return, so that the
// client module does not import this one (imports go one way: builder -> client).
impl Client {
    /// A builder for a connect string `"host1:2181,host2:2181/optional/chroot"`.
    ///
    /// A host without a port gets 2181; IPv6 literals go in brackets (`[::1]:2181`). A host
    /// name is resolved each time its turn comes to be tried, into all its A/AAAA records,
    /// and each address is tried as a host of its own with its own connect timeout (see
    /// [`ClientBuilder::connect_timeout`] and [`ClientBuilder::resolver`]); TLS checks the
    /// server certificate against the name, not the address.
    ///
    /// ```no_run
    /// # async fn f() -> zk_client::Result<()> {
    /// let client = zk_client::Client::builder("127.0.0.1:2181").read_only(true).connect().await?;
    /// # Ok(()) }
    /// ```
    pub fn builder(connect_string: &str) -> ClientBuilder {
        ClientBuilder::new(connect_string)
    }

    /// Connects with the default settings and waits for the session.
    ///
    /// ```no_run
    /// # async fn f() -> zk_client::Result<()> {
    /// let client = zk_client::Client::connect("127.0.0.1:2181/app").await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// See [`ClientBuilder::connect`].
    ///
    /// # Cancel safety
    ///
    /// As [`ClientBuilder::connect`].
    pub async fn connect(connect_string: &str) -> Result<Client> {
        Self::builder(connect_string).connect().await
    }
}

/// Configures and connects a [`Client`].
///
/// Every wait it takes may be as long as you like: one beyond about 30 years
/// (`Duration::MAX` for "never", say) counts as 30 years.
///
/// ```no_run
/// # async fn f() -> zk_client::Result<()> {
/// use std::time::Duration;
/// let client = zk_client::Client::builder("127.0.0.1:2181,127.0.0.1:2182/app")
///     .session_timeout(Duration::from_secs(6))
///     .auth("digest", b"user:secret")
///     .connect()
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ClientBuilder {
    pub(crate) connect_string: String,
    pub(crate) session_timeout: Duration,
    pub(crate) connect_timeout: Option<Duration>,
    pub(crate) establish_timeout: Option<Duration>,
    pub(crate) reconnect_wait: Option<Duration>,
    pub(crate) read_only: bool,
    pub(crate) auths: Vec<(String, Vec<u8>)>,
    pub(crate) max_frame_len: usize,
    pub(crate) max_outstanding: usize,
    pub(crate) batch_reads: bool,
    pub(crate) max_request_len: usize,
    pub(crate) request_timeout: Option<Duration>,
    pub(crate) watch_buffer: usize,
    pub(crate) resume: Option<(i64, bytes::Bytes)>,
    pub(crate) poison_quarantine: Duration,
    /// The poison ledger shared by every session of a `SessionManager` (`None`: each client
    /// gets its own).
    pub(crate) poison: Option<crate::session::poison::PoisonLedger>,
    pub(crate) resolver: Option<crate::resolve::Resolver>,
    /// Ensemble tracking (`None`: off, the default).
    pub(crate) tracking: Option<crate::tracking::EnsembleTracking>,
    /// The hosts a `SessionManager`'s next session uses instead of the connect string's
    /// (the chroot stays the connect string's).
    pub(crate) shared_hosts: Option<std::sync::Arc<crate::tracking::SharedHosts>>,
    pub(crate) server: crate::ServerProfile,
    pub(crate) detect_server: bool,
    #[cfg(feature = "tls")]
    pub(crate) tls: Option<crate::tls::TlsOptions>,
    #[cfg(feature = "sasl")]
    pub(crate) sasl: Option<crate::session::SaslConfig>,
}

impl ClientBuilder {
    pub(crate) fn new(connect_string: &str) -> Self {
        Self {
            connect_string: connect_string.to_owned(),
            session_timeout: DEFAULT_SESSION_TIMEOUT,
            connect_timeout: None,
            establish_timeout: None,
            reconnect_wait: None,
            read_only: false,
            auths: Vec::new(),
            max_frame_len: zk_proto::DEFAULT_MAX_FRAME_LEN,
            max_outstanding: DEFAULT_MAX_OUTSTANDING,
            batch_reads: true,
            max_request_len: zk_proto::SERVER_MAX_BUFFER,
            request_timeout: None,
            watch_buffer: DEFAULT_WATCH_BUFFER,
            resume: None,
            poison_quarantine: DEFAULT_POISON_QUARANTINE,
            poison: None,
            resolver: None,
            tracking: None,
            shared_hosts: None,
            server: crate::ServerProfile::default(),
            detect_server: false,
            #[cfg(feature = "tls")]
            tls: None,
            #[cfg(feature = "sasl")]
            sasl: None,
        }
    }

    /// What the server supports (default: [`ServerProfile::zookeeper`](crate::ServerProfile::zookeeper)`(3, 8)`,
    /// every feature). Calls needing a feature the profile lacks fail with
    /// [`Error::Unimplemented`](crate::Error::Unimplemented) without being sent, and
    /// [`Client::create`] uses a plain `create` when `create2` is missing. Set it for a
    /// ZooKeeper older than 3.7 or for ClickHouse Keeper, or use
    /// [`detect_server`](Self::detect_server). See `docs/servers.md`.
    ///
    /// ```no_run
    /// # async fn f() -> zk_client::Result<()> {
    /// use zk_client::{Feature, ServerProfile};
    /// let client = zk_client::Client::builder("127.0.0.1:2181")
    ///     .server(ServerProfile::keeper().with(Feature::Create2))
    ///     .connect()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn server(mut self, profile: crate::ServerProfile) -> Self {
        self.server = profile;
        self
    }

    /// Detects ClickHouse Keeper when connecting: once the session is established, reads
    /// `/keeper/api_version` (outside the chroot). ZooKeeper answers `NoNode` and the
    /// profile of [`server`](Self::server) stays; Keeper answers with its API version, and
    /// the client reads `/keeper/feature_flags` too and takes
    /// [`ServerProfile::from_keeper_nodes`](crate::ServerProfile::from_keeper_nodes) (plus
    /// the features of the builder's profile when that is a Keeper one: set
    /// `ServerProfile::keeper().with(...)` for what a newer Keeper has that its flags this
    /// client cannot read yet).
    /// Costs one or two reads at connect; off by default. A read that fails otherwise
    /// (`NoAuth`, a lost connection) keeps the builder's profile.
    pub fn detect_server(mut self, detect: bool) -> Self {
        self.detect_server = detect;
        self
    }

    /// The session timeout to ask for (default [`DEFAULT_SESSION_TIMEOUT`], 10 s). The
    /// server's answer sets the ping interval (1/3) and the read timeout (2/3). At most
    /// `i32::MAX` milliseconds (about 24.8 days, the protocol's limit): a longer one asks for
    /// that.
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout.min(Duration::from_millis(i32::MAX as u64));
        self
    }

    /// Bound on one connection attempt (one address): TCP connect plus session handshake.
    /// Default: the session timeout divided by the number of addresses of all hosts, as
    /// last resolved (the Java client's rule, counting each address of a name with several
    /// records), by three when there are fewer (so an attempt that hangs, on a server that
    /// accepts connections and never answers them, cannot use up the session timeout, after
    /// which the client gives the session up), at least 100 ms.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = Some(capped(timeout));
        self
    }

    /// Resolves the host names of the connect string with `resolve` instead of the system's
    /// resolver (tokio's `lookup_host`): service discovery, a DNS client of your choice, a
    /// fixed table in tests.
    ///
    /// `resolve(host, port)` gets a host name as written in the connect string (IP literals
    /// are never resolved) and returns its addresses (each used with the port it carries,
    /// normally `port`). It is called each time the host's turn comes to be tried, so
    /// changed records are followed at the next reconnect. Each address is tried as a host
    /// of its own, with its own connect timeout; a name whose resolution fails, or finds
    /// nothing, is a failed attempt and the next host is tried. TLS verifies the server
    /// certificate against the name, not the address. The function must not block: do the
    /// work in the future it returns.
    ///
    /// ```no_run
    /// # async fn f() -> zk_client::Result<()> {
    /// use std::net::SocketAddr;
    /// let client = zk_client::Client::builder("zk.internal:2181/app")
    ///     .resolver(|host, port| {
    ///         let found = match host {
    ///             "zk.internal" => vec![
    ///                 SocketAddr::from(([10, 0, 0, 1], port)),
    ///                 SocketAddr::from(([10, 0, 0, 2], port)),
    ///             ],
    ///             _ => Vec::new(),
    ///         };
    ///         async move { Ok(found) }
    ///     })
    ///     .connect()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn resolver<F, Fut>(mut self, resolve: F) -> Self
    where
        F: Fn(&str, u16) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = std::io::Result<Vec<std::net::SocketAddr>>>
            + Send
            + 'static,
    {
        self.resolver = Some(crate::resolve::Resolver::new(resolve));
        self
    }

    /// Follows the ensemble's membership (`/zookeeper/config`, ZooKeeper 3.5+) and replaces
    /// the host list after each change, keeping the session and the chroot (off by
    /// default). See [`EnsembleTracking`](crate::EnsembleTracking) for what is tracked and
    /// what the user decides (the config's addresses, guarded, or a translation of them);
    /// with a [`SessionManager`](crate::SessionManager), later sessions open on the list
    /// last applied.
    ///
    /// ```no_run
    /// # async fn f() -> zk_client::Result<()> {
    /// let client = zk_client::Client::builder("10.0.0.1:2181/app")
    ///     .track_ensemble(zk_client::EnsembleTracking::new())
    ///     .connect()
    ///     .await?;
    /// # let _ = client; Ok(()) }
    /// ```
    pub fn track_ensemble(mut self, tracking: crate::tracking::EnsembleTracking) -> Self {
        self.tracking = Some(tracking);
        self
    }

    /// Bound on [`connect`](Self::connect) establishing the first session, across as many
    /// attempts and hosts as fit. Default: twice the session timeout.
    pub fn establish_timeout(mut self, timeout: Duration) -> Self {
        self.establish_timeout = Some(capped(timeout));
        self
    }

    /// How long a call made while disconnected waits for the session to be reconnected
    /// before failing with [`Error::ConnectionLoss`](crate::Error::ConnectionLoss).
    /// Default: the session timeout. (Calls already on the wire when the connection drops
    /// fail at once with `ConnectionLoss`; they are never re-sent.)
    pub fn reconnect_wait(mut self, wait: Duration) -> Self {
        self.reconnect_wait = Some(capped(wait));
        self
    }

    /// Accept read-only servers (servers cut off from their quorum). Default: false.
    ///
    /// While connected to one, the state is
    /// [`ConnectedReadOnly`](crate::SessionState::ConnectedReadOnly), writes fail with
    /// `Server(NotReadOnly)`, and the client keeps probing the other hosts (the `isro`
    /// four-letter word, which servers with `readonlymode.enabled` allow; every 100 ms at
    /// first, backing off to 5 s); it moves to a read/write server as soon as one answers
    /// `rw`. A session first opened on a read-only server is not resumed on a read/write
    /// one: the client gets a new session id there, as the Java client does, and
    /// re-registers its watches on it.
    ///
    /// Server side (measured on 3.8.0): the servers need `readonlymode.enabled=true`, and a
    /// member without quorum serves read-only sessions only with `localSessionsEnabled=true`;
    /// otherwise it refuses new sessions (`NotReadOnly`) and closes reconnecting global
    /// sessions, so the client keeps trying the other hosts.
    pub fn read_only(mut self, allowed: bool) -> Self {
        self.read_only = allowed;
        self
    }

    /// Adds credentials (e.g. `("digest", b"user:password")`), sent right after the
    /// handshake and again after every reconnect. Repeatable.
    pub fn auth(mut self, scheme: &str, auth: &[u8]) -> Self {
        self.auths.push((scheme.to_owned(), auth.to_vec()));
        self
    }

    /// Largest frame accepted from the server (default
    /// [`zk_proto::DEFAULT_MAX_FRAME_LEN`], 4 MiB, the newer Java clients' default). The
    /// default reads any node the default server accepts (up to its 1 MiB `jute.maxbuffer` of
    /// data plus the reply's header and stat) and child listings up to 4 MiB.
    ///
    /// A longer reply to a call that sets no watch fails that call alone with
    /// [`Error::ReplyTooLarge`](crate::Error::ReplyTooLarge): the reply is passed over as it
    /// arrives, never buffered, and the connection carries on (the Java client drops the
    /// connection instead). Any other longer frame (a notification, a reply to a call that
    /// sets a watch, the handshake's answer) is a protocol error that drops the connection:
    /// skipping it would lose an event or leave a watch the client does not know of.
    pub fn max_frame_len(mut self, len: usize) -> Self {
        self.max_frame_len = len;
        self
    }

    /// Largest request sent (default [`zk_proto::SERVER_MAX_BUFFER`], 1,048,575 bytes:
    /// the server's default `jute.maxbuffer`). Set it to the `jute.maxbuffer` of your
    /// servers if they changed it.
    ///
    /// A server drops the connection of a client that sends a larger packet, failing every
    /// call in flight with `ConnectionLoss`. A call whose request (header and body) is larger
    /// than this fails alone with [`Error::RequestTooLarge`](crate::Error::RequestTooLarge)
    /// instead, and nothing is sent. Every call is checked (`multi`, `auth` and
    /// `closeSession` included), and the `SetWatches` packets that re-register watches after
    /// a reconnect are cut to fit this limit too.
    ///
    /// If the servers' limit is lower than this (a `jute.maxbuffer` you did not tell the
    /// client), a larger request reaches them and they drop the connection: after two such
    /// drops in a row on the same request, identical requests fail locally with
    /// [`Error::ServerDropsRequest`](crate::Error::ServerDropsRequest) for a while (see
    /// [`poison_quarantine`](Self::poison_quarantine)). Setting this to the servers' value
    /// avoids even those two drops.
    pub fn max_request_len(mut self, len: usize) -> Self {
        self.max_request_len = len;
        self
    }

    /// How long a request the server drops the connection on is refused locally: 60 s by
    /// default ([`DEFAULT_POISON_QUARANTINE`]); zero turns the rule off.
    ///
    /// **Only the server's orderly close counts** (the client reads end of stream: a FIN),
    /// which is how servers refuse a request: ZooKeeper shuts its side down before closing
    /// on a packet above its `jute.maxbuffer`, ClickHouse Keeper closes after reading an
    /// opcode it does not know. A connection reset (RST: a proxy or middlebox cutting
    /// connections, a failing network) or any other socket error never counts, so a flaky
    /// network does not quarantine requests the server would accept (the `members::shared`
    /// test increments a counter through connections reset every 40 ms: with resets counted
    /// it quarantined its requests and made no progress). What still counts is a server
    /// that closes in order twice in a row right after the same request, say one that
    /// crashes on it; turn the rule off where a network closes connections in order at
    /// random. [`SessionManager`](crate::SessionManager)'s renewal pacing, which bounds the
    /// session storm such a server causes, is on either way.
    ///
    /// A server closes the connection, instead of answering, on a request it does not
    /// accept: ZooKeeper on one above its `jute.maxbuffer` (see
    /// [`max_request_len`](Self::max_request_len): set it to the servers' value and such
    /// requests never leave), ClickHouse Keeper on an opcode it does not know. Each time,
    /// every call in flight fails with `ConnectionLoss`, and callers that send the request
    /// again (a cache resyncing, a lock retrying) make a reconnect storm, and a session storm
    /// on servers that do not resume sessions.
    ///
    /// So when the same request (same opcode and server path, a size within the same power
    /// of two) was in flight, written less than a second before, at two connection losses in
    /// a row (at most a minute apart; after the first, until an identical request is
    /// answered, such requests are sent alone, so that one merely riding along with the
    /// culprit is cleared), identical requests fail at once for this long with
    /// [`Error::ServerDropsRequest`](crate::Error::ServerDropsRequest), and nothing is sent.
    /// The calls caught in those two losses fail with `ConnectionLoss`, as any call in
    /// flight at a loss: the client never re-sends a request by itself. After the quarantine
    /// the next identical request is sent; if the connection drops on it again, it is
    /// quarantined again at once. A [`SessionManager`](crate::SessionManager) keeps what it
    /// learned across its sessions.
    ///
    /// ```no_run
    /// # async fn f() -> zk_client::Result<()> {
    /// use std::time::Duration;
    /// let client = zk_client::Client::builder("127.0.0.1:2181")
    ///     .poison_quarantine(Duration::from_secs(10))
    ///     .connect()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn poison_quarantine(mut self, quarantine: Duration) -> Self {
        self.poison_quarantine = capped(quarantine);
        self.poison = None;
        self
    }

    /// The poison ledger for a new client: the shared one, or a new one.
    pub(crate) fn poison_ledger(&self) -> crate::session::poison::PoisonLedger {
        self.poison
            .clone()
            .unwrap_or_else(|| crate::session::poison::PoisonLedger::new(self.poison_quarantine))
    }

    /// Bound on how long a call on the wire waits for its reply (default: none).
    ///
    /// For servers that answer pings but not calls (a stuck request pipeline): when the
    /// oldest call in flight has waited this long, it fails with
    /// [`Error::Timeout`](crate::Error::Timeout) (it may or may not have been applied), the
    /// connection is dropped (replies are matched in order, so one missing reply blocks every
    /// later one), other calls in flight fail with `ConnectionLoss`, and the client
    /// reconnects, to another server when there is one. Time spent waiting for a connection
    /// or a window slot does not count (see [`reconnect_wait`](Self::reconnect_wait)).
    ///
    /// Choose it well above the slowest call you expect: a `sync` or a large `multi` on a
    /// loaded ensemble can take seconds.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = Some(capped(timeout));
        self
    }

    /// How many events a [`PersistentWatcher`](crate::PersistentWatcher) holds unread
    /// (default [`DEFAULT_WATCH_BUFFER`], 4096). When it is full, further events are dropped
    /// and the watcher reports [`Error::Lagged`](crate::Error::Lagged) with their count at
    /// that point of the stream, so a slow reader costs bounded memory and still learns that
    /// it must re-read. One-shot watchers hold one event and are not affected.
    pub fn watch_buffer(mut self, events: usize) -> Self {
        self.watch_buffer = events.max(1);
        self
    }

    /// Most requests on the wire at once (default [`DEFAULT_MAX_OUTSTANDING`]).
    ///
    /// Further calls are still accepted and keep their call order: they wait in the
    /// client's queue until replies free slots, and their futures simply take longer.
    /// This keeps one client from flooding the server's `globalOutstandingLimit`.
    pub fn max_outstanding(mut self, n: usize) -> Self {
        self.max_outstanding = n.max(1);
        self
    }

    /// Whether a deeply pipelined connection reads its replies in batches (default: true).
    ///
    /// With `true`, after a read that leaves at least 64 requests in flight, the connection
    /// task stops watching the socket for one to two milliseconds (tokio's timer counts in
    /// whole milliseconds) and then takes every reply that arrived meanwhile in one read,
    /// and sends every request those replies freed in one write. Sequential calls and
    /// shallow pipelines are never delayed, and no reply waits longer than that pause.
    ///
    /// With `false`, the task wakes for every reply segment the server writes. Measured on
    /// a 2-vCPU VM with one pipelined session (1,000 `getData` in flight, server on the same
    /// box; see `bench/README.md`): batching costs ~2-3 µs of client CPU per call against
    /// ~8-9 µs without it, but the single connection ran 10-25 % slower, because that
    /// ZooKeeper server's per-connection loop was slower while the client's CPU slept. On
    /// a busy machine, or with several sessions, batching was as fast or faster. Choose
    /// `false` for one session that must push the most requests per second through one
    /// connection and can spend the CPU.
    ///
    /// ```no_run
    /// # async fn f() -> zk_client::Result<()> {
    /// let client = zk_client::Client::builder("127.0.0.1:2181")
    ///     .batch_reads(false)
    ///     .connect()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn batch_reads(mut self, yes: bool) -> Self {
        self.batch_reads = yes;
        self
    }

    /// Resumes an existing session instead of opening a new one (the Java client's
    /// constructor with a session id and password): for a process that takes over the
    /// session of another, e.g. across a restart, keeping its ephemeral nodes and locks.
    /// Take the values from [`Client::session_id`] and [`Client::session_password`].
    ///
    /// The session must still be alive: [`connect`](Self::connect) fails with
    /// `SessionExpired` when the server says it expired. The previous owner must not use
    /// the session any more, and must not close it: dropping a [`Client`] closes its session,
    /// so the handing-over process exits (or is killed) without dropping its client.
    ///
    /// ```no_run
    /// # async fn f(id: i64, password: Vec<u8>) -> zk_client::Result<()> {
    /// let client = zk_client::Client::builder("127.0.0.1:2181")
    ///     .session(id, &password)
    ///     .connect()
    ///     .await?;
    /// assert_eq!(client.session_id(), id);
    /// # Ok(()) }
    /// ```
    pub fn session(mut self, id: i64, password: &[u8]) -> Self {
        self.resume = Some((id, bytes::Bytes::copy_from_slice(password)));
        self
    }

    /// Authenticates every connection with SASL DIGEST-MD5 as `user` (feature `sasl`): a
    /// user of the server's JAAS `Server` section (`user_<name>="<password>"` of
    /// `DigestLoginModule`), the Java client's JAAS `Client` section. The session then holds
    /// the identity `sasl:<user>` (for ACLs, with the server's `SASLAuthenticationProvider`).
    ///
    /// The exchange runs after each handshake, before anything else is sent: the session is
    /// reported connected, and queued calls go out, only once the server accepted it. A
    /// rejected password ends the session: [`connect`](Self::connect) fails with
    /// [`Error::AuthFailed`](crate::Error::AuthFailed) (and after a reconnect, every call does),
    /// as the Java client's `AUTH_FAILED` state. See the repository's `docs/security.md` for
    /// the server side.
    ///
    /// ```no_run
    /// # async fn f() -> zk_client::Result<()> {
    /// let client = zk_client::Client::builder("127.0.0.1:2181")
    ///     .sasl_digest_md5("bob", "secret")
    ///     .connect()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "sasl")]
    pub fn sasl_digest_md5(mut self, user: &str, password: &str) -> Self {
        self.sasl = Some(crate::session::SaslConfig::DigestMd5(
            crate::session::SaslCredentials {
                user: user.to_owned(),
                password: password.to_owned(),
            },
        ));
        self
    }

    /// Authenticates every connection with SASL GSSAPI, Kerberos (feature `sasl-gssapi`):
    /// as the principal of [`KerberosOptions`](crate::KerberosOptions), with its keytab,
    /// to the server principal `zookeeper/<host>` (the Java client's JAAS `Client` section
    /// with `Krb5LoginModule`). The session then holds the identity `sasl:<principal>`
    /// (e.g. `sasl:app@EXAMPLE.COM`; the server's `kerberos.removeHostFromPrincipal` and
    /// `kerberos.removeRealmFromPrincipal` shorten it).
    ///
    /// Before each connection's handshake the client gets fresh tickets from the KDC
    /// (bounded by the connect timeout); the exchange then runs as for
    /// [`sasl_digest_md5`](Self::sasl_digest_md5): the session is reported connected, and
    /// queued calls go out, only once the server accepted it. Refused credentials (a
    /// principal the KDC does not know, a key that does not match) or a server rejecting
    /// the ticket end the session: [`connect`](Self::connect) fails with
    /// [`Error::AuthFailed`](crate::Error::AuthFailed), without retrying. An unreachable KDC
    /// counts as a failed connection attempt (retried). The tracing log says why.
    ///
    /// ```no_run
    /// # async fn f() -> zk_client::Result<()> {
    /// let kerberos = zk_client::KerberosOptions::new("app@EXAMPLE.COM", "/etc/app.keytab");
    /// let client = zk_client::Client::builder("zk1.example.com:2181")
    ///     .sasl_gssapi(kerberos)
    ///     .connect()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "sasl-gssapi")]
    pub fn sasl_gssapi(mut self, options: crate::kerberos::KerberosOptions) -> Self {
        self.sasl = Some(crate::session::SaslConfig::Gssapi(std::sync::Arc::new(
            options,
        )));
        self
    }

    /// Connects every host with TLS (feature `tls`): the ports of the connect string must be
    /// the servers' `secureClientPort`. Reconnects and failover use the same options for
    /// every host. See [`TlsOptions`](crate::TlsOptions) for the certificate options and the
    /// repository's `docs/security.md` for the server side.
    ///
    /// ```no_run
    /// # async fn f() -> zk_client::Result<()> {
    /// let tls = zk_client::TlsOptions::new().ca_file("ca.pem");
    /// let client = zk_client::Client::builder("127.0.0.1:2281").tls(tls).connect().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// A certificate problem makes [`connect`](Self::connect) fail with
    /// [`Error::Tls`](crate::Error::Tls) once every host failed the handshake; after the
    /// first session, TLS failures are retried like any connection failure.
    #[cfg(feature = "tls")]
    pub fn tls(mut self, options: crate::tls::TlsOptions) -> Self {
        self.tls = Some(options);
        self
    }
}
