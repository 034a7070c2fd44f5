//! [`Client`]: the cheap, cloneable handle users call operations on.
//!
//! Each operation validates its path, adds the chroot, encodes its request body on the
//! caller's task and hands it to the connection task **before returning its future**, so
//! requests go to the server in call order. The future waits for the reply bytes and
//! decodes them, again on the caller's task.

mod acl;
mod bodies;
mod children;
mod compressed;
mod config;
mod multi;
mod node;
mod options;
mod stamped_watch;
mod tree;
mod watches;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use zk_proto::records::{
    AuthPacket, ClientInfo, GetDataRequest, GetDataResponse, SyncRequest, WhoAmIResponse,
    CONFIG_NODE,
};
use zk_proto::{decode_prefix, ErrorCode, OpCode, Record, Stat};

use crate::command::{Answer, Command, Request, WatchAction};
use crate::error::{Error, Result};
use crate::event::Arrival;
use crate::path::Chroot;
use crate::profile::{Feature, ProfileCell, ServerProfile};
use crate::state::{SessionInfo, SessionState};
use crate::state_watcher::StateWatcher;

pub use config::{ConfigWatcher, Reconfig};
pub use multi::{Op, OpResult, ReadOp, ReadResult, Transaction};
pub use options::CreateOptions;

/// A ZooKeeper client: a handle to one session.
///
/// Cloning is cheap (an `Arc`); all clones share the session and its connection task. The
/// session is closed (`closeSession` sent) when [`close`](Self::close) is called or when the
/// last clone is dropped.
///
/// See the [crate docs](crate) for ordering, pipelining, sessions, watches and errors.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
    /// Added to every path sent, removed from every path received; per handle, so that
    /// [`chroot`](Self::chroot) sub-clients share the session.
    chroot: Chroot,
}

/// A [`Client`] that does not count as a handle: see [`Client::downgrade`].
#[derive(Clone)]
pub(crate) struct WeakClient {
    inner: std::sync::Weak<Inner>,
    chroot: Chroot,
}

impl WeakClient {
    /// The client, while a handle of it is left.
    pub(crate) fn upgrade(&self) -> Option<Client> {
        Some(Client {
            inner: self.inner.upgrade()?,
            chroot: self.chroot.clone(),
        })
    }
}

struct Inner {
    tx: mpsc::UnboundedSender<Command>,
    info: watch::Receiver<SessionInfo>,
    /// Never read: a template to subscribe `StateWatcher`s from.
    transitions: broadcast::Receiver<SessionState>,
    /// Capacity of each persistent watcher's event queue.
    watch_buffer: usize,
    /// What the server supports, as far as the client knows.
    profile: ProfileCell,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let info = self.inner.info.borrow();
        f.debug_struct("Client")
            .field("session_id", &format_args!("{:#x}", info.session_id))
            .field("state", &info.state)
            .field("chroot", &self.chroot.as_str())
            .finish()
    }
}

/// The reply to one request: resolves to the reply body, or to the session's terminal error
/// when the connection task is gone.
pub(crate) struct Pending {
    rx: oneshot::Receiver<Answer>,
    /// The handle's shared state, for the session state when the task is gone (one `Arc`
    /// count, cheaper than a `watch::Receiver` of its own per request).
    session: Arc<Inner>,
    /// The feature the request needs: an `UNIMPLEMENTED` answer removes it from the profile
    /// and becomes [`Error::Unimplemented`].
    feature: Option<Feature>,
}

impl Pending {
    /// The reply with its [`Arrival`].
    fn poll_answer(&mut self, cx: &mut Context<'_>) -> Poll<Answer> {
        match Pin::new(&mut self.rx).poll(cx) {
            Poll::Ready(Ok((arrival, result))) => {
                if let (Some(feature), Err(Error::Server(ErrorCode::Unimplemented))) =
                    (self.feature, &result)
                {
                    self.session.profile.forget(feature);
                    return Poll::Ready((arrival, Err(Error::Unimplemented(feature))));
                }
                Poll::Ready((arrival, result))
            }
            Poll::Ready(Err(_)) => {
                let state = self.session.info.borrow().state;
                let err = state.terminal_error().unwrap_or(Error::Closed);
                Poll::Ready((Arrival::END, Err(err)))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    /// Resolves to the reply with its [`Arrival`].
    pub(crate) async fn answer(mut self) -> Answer {
        std::future::poll_fn(|cx| self.poll_answer(cx)).await
    }
}

impl Future for Pending {
    type Output = Result<Bytes>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.poll_answer(cx).map(|(_, result)| result)
    }
}

/// ClickHouse Keeper's API version node (absent on ZooKeeper).
const KEEPER_API_VERSION: &str = "/keeper/api_version";
/// ClickHouse Keeper's feature flags node (a bit set; absent on older Keepers).
const KEEPER_FEATURE_FLAGS: &str = "/keeper/feature_flags";

/// Room reserved for an encoded request body: enough for nearly every request (a create's
/// path, ACL and small data, a lock node's getData or delete) to be encoded without growing
/// the buffer (each growth is a `realloc` and a copy); the same cost to allocate as less.
const BODY_CAPACITY: usize = 256;

/// Encodes a request body.
pub(crate) fn encode<R: Record>(record: &R) -> BytesMut {
    let mut buf = BytesMut::with_capacity(BODY_CAPACITY);
    record.encode(&mut buf);
    buf
}

impl Client {
    /// A handle on the connection task that `tx` feeds and `info` follows.
    pub(crate) fn new(
        tx: mpsc::UnboundedSender<Command>,
        info: watch::Receiver<SessionInfo>,
        transitions: broadcast::Receiver<SessionState>,
        chroot: Chroot,
        watch_buffer: usize,
        profile: ProfileCell,
    ) -> Client {
        Client {
            inner: Arc::new(Inner {
                tx,
                info,
                transitions,
                watch_buffer,
                profile,
            }),
            chroot,
        }
    }

    /// Hands a request to the connection task (in call order) and returns its reply.
    pub(crate) fn request(
        &self,
        op: OpCode,
        body: BytesMut,
        watch: Option<WatchAction>,
    ) -> Pending {
        let feature = Feature::of(op);
        if let Some(missing) = feature.filter(|f| !self.inner.profile.get().supports(*f)) {
            // Never sent: a server without it may close the connection (and Keeper the
            // session). The watch registration, if any, is dropped unused.
            let (tx, rx) = oneshot::channel();
            let _ = tx.send((Arrival::default(), Err(Error::Unimplemented(missing))));
            return Pending {
                rx,
                session: self.inner.clone(),
                feature: None,
            };
        }
        let (request, rx) = Request::new(op, body, watch);
        // If the task is gone the request is dropped with its reply sender and `Pending`
        // resolves to the terminal error.
        let _ = self.inner.tx.send(Command::Request(request));
        Pending {
            rx,
            session: self.inner.clone(),
            feature,
        }
    }

    /// What the client knows the server supports: the builder's profile (or the detected
    /// one, see [`ClientBuilder::detect_server`](crate::ClientBuilder::detect_server)),
    /// minus every feature the server answered `UNIMPLEMENTED` to since. Calls that need a
    /// feature it lacks fail with [`Error::Unimplemented`] without being sent.
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) {
    /// use zk_client::Feature;
    /// if !client.server_profile().supports(Feature::AddWatch) {
    ///     // follow the tree with one-shot watches instead
    /// }
    /// # }
    /// ```
    pub fn server_profile(&self) -> ServerProfile {
        self.inner.profile.get()
    }

    /// Replaces the profile (detection at connect).
    pub(crate) fn set_server_profile(&self, profile: ServerProfile) {
        self.inner.profile.set(profile);
    }

    /// Validates a client path and adds the chroot.
    pub(crate) fn server_path(&self, path: &str) -> Result<String> {
        self.chroot.to_server(path, false)
    }

    /// The chroot of this handle.
    pub(crate) fn root(&self) -> &Chroot {
        &self.chroot
    }

    /// A handle on the same session whose paths are relative to `path` (under this handle's
    /// own chroot): Curator's `usingNamespace`. Both handles share the connection, the
    /// session, its ordering and its watches; each sees paths relative to its own root.
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// let billing = client.chroot("/apps/billing")?;
    /// billing.create_all("/jobs/j1", b"", &zk_client::CreateOptions::persistent()).await?;
    /// assert!(client.exists("/apps/billing/jobs/j1").await?.is_some());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// `InvalidPath` for a path that is not absolute and valid (`/` gives a handle with the
    /// same root).
    pub fn chroot(&self, path: &str) -> Result<Client> {
        let root = if path == "/" {
            self.chroot.clone()
        } else {
            Chroot::new(&self.chroot.to_server(path, false)?)?
        };
        Ok(Client {
            inner: self.inner.clone(),
            chroot: root,
        })
    }

    pub(crate) fn watch_buffer(&self) -> usize {
        self.inner.watch_buffer
    }

    /// A handle that does not keep the session open (background followers hold one, so that
    /// dropping the user's last handle still closes the session).
    pub(crate) fn downgrade(&self) -> WeakClient {
        WeakClient {
            inner: Arc::downgrade(&self.inner),
            chroot: self.chroot.clone(),
        }
    }

    pub(crate) fn commands(&self) -> &mpsc::UnboundedSender<Command> {
        &self.inner.tx
    }

    /// The current session id (0 before the first session).
    pub fn session_id(&self) -> i64 {
        self.inner.info.borrow().session_id
    }

    /// The current session password (empty before the first session).
    pub fn session_password(&self) -> Bytes {
        self.inner.info.borrow().password.clone()
    }

    /// The session timeout the server granted.
    pub fn negotiated_timeout(&self) -> Duration {
        self.inner.info.borrow().timeout
    }

    /// How many connections this client's session has had: 1 once [`connect`](Self::connect)
    /// returns, one more after each reconnect (0 before the first session).
    ///
    /// Two equal readings with [`SessionState::Connected`] at both mean the connection never
    /// dropped in between, so nothing the server did meanwhile can have been missed by a
    /// watcher (lock guards use this to never report a lock as held across a disconnection
    /// they have not looked at yet).
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) {
    /// let before = client.connection_epoch();
    /// // ... work ...
    /// let unbroken = client.connection_epoch() == before && client.state().is_connected();
    /// # let _ = unbroken; }
    /// ```
    pub fn connection_epoch(&self) -> u64 {
        self.inner.info.borrow().epoch
    }

    /// The current session state.
    pub fn state(&self) -> SessionState {
        self.inner.info.borrow().state
    }

    /// Waits until the client is connected (to a read/write server, or a read-only one if the
    /// builder allowed them), at most `timeout` (Curator's `blockUntilConnected`).
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// client.wait_connected(std::time::Duration::from_secs(5)).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`] when still not connected after `timeout`; the terminal error
    /// (`SessionExpired`, `AuthFailed`, `Closed`) when the session is over.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only watches the state.
    pub async fn wait_connected(&self, timeout: Duration) -> Result<()> {
        let mut states = self.watch();
        match tokio::time::timeout(timeout, states.wait_for(SessionState::is_connected)).await {
            Ok(state) => state.terminal_error().map_or(Ok(()), Err),
            Err(_) => Err(Error::Timeout),
        }
    }

    /// Follows the session's state: its current value and every transition from now on, in
    /// order ([`Transitions`](crate::Transitions), the one type that follows a value in both
    /// crates: a lock's state, a cache's state, leadership, group members...). Not a node
    /// watch: those are [`get_data_watch`](Self::get_data_watch),
    /// [`add_watch`](Self::add_watch) and the like.
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) {
    /// use zk_client::SessionState;
    /// let mut states = client.watch();
    /// while !states.current().is_terminal() {
    ///     println!("session: {:?}", states.changed().await);
    /// }
    /// # }
    /// ```
    pub fn watch(&self) -> StateWatcher {
        StateWatcher::new(
            self.inner.info.clone(),
            self.inner.transitions.resubscribe(),
        )
    }

    /// Adds credentials to the session (`addAuth`), e.g. `("digest", b"user:password")`.
    /// They are kept and replayed after every reconnect, before any other request.
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// client.add_auth("digest", b"alice:secret").await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// `AuthFailed` (terminal: the server closes the session), `ConnectionLoss`: the
    /// credentials may or may not have been taken (sent before the connection dropped, they
    /// are kept and replayed on every reconnect; not sent within
    /// [`reconnect_wait`](crate::ClientBuilder::reconnect_wait), they are not). Call again:
    /// the client keeps each credential once, and the server holds one identity for it.
    ///
    /// # Cancel safety
    ///
    /// The request is sent when this is called: dropping the future discards only the reply; the
    /// credentials are still sent, and kept for reconnects.
    pub fn add_auth(
        &self,
        scheme: &str,
        auth: &[u8],
    ) -> impl Future<Output = Result<()>> + Send + 'static {
        let body = encode(&AuthPacket {
            auth_type: 0,
            scheme: scheme.to_owned(),
            auth: Bytes::copy_from_slice(auth),
        });
        let reply = self.request(OpCode::Auth, body, None);
        async move { reply.await.map(drop) }
    }

    /// The identities the session is authenticated as (`whoAmI`, ZooKeeper 3.7+).
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// for id in client.whoami().await? {
    ///     println!("{}:{}", id.auth_scheme, id.user);
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// `Unimplemented` on servers before 3.7 (refused locally when the [`ServerProfile`](crate::ServerProfile) says so), plus the session errors.
    ///
    /// # Cancel safety
    ///
    /// The request is sent when this is called: dropping the future discards only the reply;
    /// nothing is changed on the server.
    pub fn whoami(&self) -> impl Future<Output = Result<Vec<ClientInfo>>> + Send + 'static {
        let reply = self.request(OpCode::WhoAmI, BytesMut::new(), None);
        async move {
            let resp: WhoAmIResponse = decode_prefix(reply.await?)?;
            Ok(resp.client_info)
        }
    }

    /// The ensemble configuration (`getConfig`: the data of `/zookeeper/config`, read
    /// outside the chroot).
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// let (config, _stat) = client.get_config().await?;
    /// println!("{}", String::from_utf8_lossy(&config));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// `NoNode` when the server has no dynamic configuration, `NoAuth`, plus the session
    /// errors.
    ///
    /// # Cancel safety
    ///
    /// The request is sent when this is called: dropping the future discards only the reply;
    /// nothing is changed on the server.
    pub fn get_config(&self) -> impl Future<Output = Result<(Bytes, Stat)>> + Send + 'static {
        let body = encode(&GetDataRequest {
            path: CONFIG_NODE.to_owned(),
            watch: false,
        });
        let reply = self.request(OpCode::GetData, body, None);
        async move {
            let resp: GetDataResponse = decode_prefix(reply.await?)?;
            Ok((resp.data, resp.stat))
        }
    }

    /// Reads Keeper's feature nodes (outside the chroot): the Keeper profile they describe,
    /// or `None` when `/keeper/api_version` is missing (ZooKeeper) or cannot be read.
    pub(crate) async fn detect_keeper(&self) -> Option<ServerProfile> {
        let read = |path: &str| {
            let body = encode(&GetDataRequest {
                path: path.to_owned(),
                watch: false,
            });
            self.request(OpCode::GetData, body, None)
        };
        // Both sent at once: one round trip.
        let api = read(KEEPER_API_VERSION);
        let flags = read(KEEPER_FEATURE_FLAGS);
        let api: GetDataResponse = decode_prefix(api.await.ok()?).ok()?;
        let flags = match flags.await {
            Ok(body) => Some(decode_prefix::<GetDataResponse>(body).ok()?.data),
            Err(_) => None,
        };
        Some(ServerProfile::from_keeper_nodes(
            &api.data,
            flags.as_deref(),
        ))
    }

    /// Waits until the server this client is connected to has caught up with the leader
    /// for `path` (`sync`), so a following read sees every write committed before.
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// client.sync("/config").await?;
    /// let (latest, _) = client.get_data("/config").await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// `InvalidPath`, plus the session errors.
    ///
    /// # Cancel safety
    ///
    /// The request is sent when this is called: dropping the future discards only the reply;
    /// nothing is changed on the server.
    pub fn sync(&self, path: &str) -> impl Future<Output = Result<()>> + Send + 'static {
        let reply = self
            .server_path(path)
            .map(|path| self.request(OpCode::Sync, encode(&SyncRequest { path }), None));
        async move { reply?.await.map(drop) }
    }

    /// Closes the session: sends `closeSession`, waits for the reply, and ends in
    /// [`SessionState::Closed`]. Ephemeral nodes go at once. Calls made after this fail
    /// with `Closed`; every watcher resolves with `Err(Closed)`.
    ///
    /// Succeeds too when the session is already over. When disconnected (or when the
    /// connection drops before the reply), the session is over for the client at once and is
    /// closed on the server as soon as one answers (see the crate docs, Sessions). Waits for
    /// the reply at most one read timeout (2/3 of the session timeout).
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// client.close().await?;
    /// assert_eq!(client.state(), zk_client::SessionState::Closed);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// None in practice: it returns `Ok(())` once the session is over for this client,
    /// whichever way. (`Result` leaves room for failures a future protocol may add.)
    ///
    /// # Cancel safety
    ///
    /// The `closeSession` is sent when `close` is called; dropping the future only stops
    /// waiting for the state to become `Closed`.
    pub fn close(&self) -> impl Future<Output = Result<()>> + Send + 'static {
        let reply = self.request(OpCode::CloseSession, BytesMut::new(), None);
        let mut states = self.watch();
        async move {
            match reply.await {
                Ok(_) => {}
                Err(err) if err.is_terminal() => {}
                Err(err) => return Err(err),
            }
            states.wait_for(SessionState::is_terminal).await;
            Ok(())
        }
    }
}
