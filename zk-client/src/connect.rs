//! Wiring: from a [`ClientBuilder`] to a running connection task and a [`Client`] whose first
//! session is established (tokio-postgres' `connect.rs`).

use tokio::sync::{broadcast, mpsc, watch};
use tracing::Instrument;

use crate::builder::ClientBuilder;
use crate::client::Client;
use crate::driver::transport::{Connector, TcpConnector};
use crate::driver::{now, Driver, DriverConfig, TlsFailures};
use crate::error::{Error, Result};
use crate::hosts::{parse_connect_string, HostList};
use crate::profile::Feature;
use crate::session::{timers, Session, SessionConfig, SET_WATCHES_BATCH_BYTES};
use crate::state::{SessionInfo, SessionState, STATE_HISTORY};

impl ClientBuilder {
    /// Connects: spawns the connection task on the current tokio runtime and waits until
    /// a server accepted the session and the credentials.
    ///
    /// ```no_run
    /// # async fn f() -> zk_client::Result<()> {
    /// let client = zk_client::Client::builder("127.0.0.1:2181/app").connect().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// `InvalidArgument`/`InvalidPath` for a bad connect string, `Timeout` when no server
    /// accepted a session within the establish timeout, `AuthFailed` when the server
    /// rejected the credentials (or the SASL exchange), `Tls` for TLS options that do not
    /// load or when every host failed the TLS handshake.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future before it completes drops the new client: its connection task
    /// closes the session it may have opened.
    pub async fn connect(self) -> Result<Client> {
        connect(self).await
    }
}

/// Spawns the connection task for `b` on the current runtime and waits until a server
/// accepted the session and the builder's credentials.
async fn connect(b: ClientBuilder) -> Result<Client> {
    let (mut host_names, chroot) = parse_connect_string(&b.connect_string)?;
    // A SessionManager's later sessions open on the list last set (CURATOR-551).
    if let Some((_, Some(shared))) = b.shared_hosts.as_ref().map(|s| s.get()) {
        if !shared.is_empty() {
            host_names = shared;
        }
    }
    let mut hosts = HostList::new(host_names.clone());
    if let Some(resolver) = &b.resolver {
        hosts = hosts.with_resolver(resolver.clone());
    }
    let mut session = Session::new(session_config(&b, hosts.len()), now());
    session.share_poison(b.poison_ledger());
    let profile = crate::profile::ProfileCell::new(b.server);
    session.share_profile(profile.clone());
    if let Some((id, password)) = &b.resume {
        session.resume(*id, password.clone());
    }
    let (tx, rx) = mpsc::unbounded_channel();
    let (info_tx, info_rx) = watch::channel(SessionInfo::default());
    let (transitions_tx, transitions) = broadcast::channel(STATE_HISTORY);
    let (tls_tx, tls_rx) = watch::channel(TlsFailures::default());
    let span = tracing::debug_span!(
        "zk_session",
        connect = %b.connect_string,
        session_id = tracing::field::Empty
    );
    let parts = Parts {
        session,
        hosts,
        rx,
        info_tx,
        transitions_tx,
        tls_tx,
        cfg: DriverConfig {
            max_frame_len: b.max_frame_len,
            batch_reads: b.batch_reads,
            auto_connect_timeout: b.connect_timeout.is_none().then_some(b.session_timeout),
        },
    };
    #[cfg(feature = "tls")]
    if let Some(opts) = &b.tls {
        spawn_driver(tls_connector(opts)?, parts, span);
    } else {
        spawn_driver(TcpConnector, parts, span);
    }
    #[cfg(not(feature = "tls"))]
    spawn_driver(TcpConnector, parts, span);
    let client = Client::new(tx, info_rx, transitions, chroot, b.watch_buffer, profile);
    establish(&client, &b, tls_rx).await?;
    if b.detect_server {
        // Until the server says what it is, its reads are not merged into a multiRead
        // (`session/merge.rs`): an old Keeper closes the connection on one.
        client.set_server_profile(b.server.without(Feature::MultiRead));
        match client.detect_keeper().await {
            Some(detected) => {
                let profile = detected.detected_over(b.server);
                tracing::debug!(?profile, "ClickHouse Keeper detected");
                client.set_server_profile(profile);
            }
            None => client.set_server_profile(b.server),
        }
    }
    if let Some(tracking) = &b.tracking {
        crate::tracking::spawn(
            &client,
            tracking.clone(),
            host_names,
            b.shared_hosts.clone(),
            b.resolver.clone().unwrap_or_default(),
        );
    }
    Ok(client)
}

/// What the connection task is made of, besides its connector.
struct Parts {
    session: Session,
    hosts: HostList,
    rx: mpsc::UnboundedReceiver<crate::command::Command>,
    info_tx: watch::Sender<SessionInfo>,
    transitions_tx: broadcast::Sender<SessionState>,
    tls_tx: watch::Sender<TlsFailures>,
    cfg: DriverConfig,
}

/// Spawns the connection task over `connector` (one instance per transport: plain TCP pays
/// nothing for TLS).
fn spawn_driver<C: Connector>(connector: C, p: Parts, span: tracing::Span) {
    let driver = Driver::new(
        connector,
        p.session,
        p.hosts,
        p.rx,
        p.info_tx,
        p.transitions_tx,
        p.cfg,
    )
    .report_tls_failures(p.tls_tx);
    tokio::spawn(driver.run().instrument(span));
}

/// The TLS connector of the builder's options; files are read now.
#[cfg(feature = "tls")]
fn tls_connector(opts: &crate::tls::TlsOptions) -> Result<crate::driver::tls::TlsConnector> {
    use crate::driver::transport::TlsFailure;
    let config = opts.client_config()?;
    let names = opts.clone();
    let name_for: crate::driver::tls::NameFor = std::sync::Arc::new(move |host| {
        names.server_name_for(host).map_err(|e| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, TlsFailure(e.to_string()))
        })
    });
    Ok(crate::driver::tls::TlsConnector::new(config, name_for).reloading(opts.clone()))
}

fn session_config(b: &ClientBuilder, hosts: usize) -> SessionConfig {
    SessionConfig {
        session_timeout: b.session_timeout,
        connect_timeout: b
            .connect_timeout
            .unwrap_or_else(|| timers::connect_timeout(b.session_timeout, hosts)),
        read_only: b.read_only,
        max_outstanding: b.max_outstanding,
        reconnect_wait: b.reconnect_wait.unwrap_or(b.session_timeout),
        set_watches_batch: SET_WATCHES_BATCH_BYTES,
        max_request_len: b.max_request_len,
        max_frame_len: b.max_frame_len,
        request_timeout: b.request_timeout,
        #[cfg(feature = "sasl")]
        sasl: b.sasl.clone(),
    }
}

/// Waits for the first session and the builder's credentials, within the establish timeout.
/// Fails early with `Error::Tls` once every address of every host failed in TLS.
async fn establish(
    client: &Client,
    b: &ClientBuilder,
    mut tls: watch::Receiver<TlsFailures>,
) -> Result<()> {
    let auths: Vec<_> = b
        .auths
        .iter()
        .map(|(scheme, auth)| client.add_auth(scheme, auth))
        .collect();
    let mut states = client.watch();
    let tls_failed = async {
        let failed = tls
            .wait_for(|f| f.round > 0 && f.in_a_row >= f.round)
            .await
            .map(|f| f.last.clone().unwrap_or_default());
        match failed {
            Ok(msg) => Error::Tls(msg),
            // The task ended: the state tells why.
            Err(_) => std::future::pending().await,
        }
    };
    let ready = async {
        let state = tokio::select! {
            state = states.wait_for(SessionState::is_connected) => state,
            err = tls_failed => return Err(err),
        };
        if let Some(err) = state.terminal_error() {
            return Err(err);
        }
        for auth in auths {
            auth.await?;
        }
        Ok(())
    };
    let establish = b.establish_timeout.unwrap_or(b.session_timeout * 2);
    tokio::time::timeout(establish, ready)
        .await
        .unwrap_or(Err(Error::Timeout))
}
