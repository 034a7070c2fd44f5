//! Wiring: from a [`ClientBuilder`] to a running connection task and a [`Client`] whose first
//! session is established (tokio-postgres' `connect.rs`).

use tokio::sync::{broadcast, mpsc, watch};
use tracing::Instrument;

use crate::builder::ClientBuilder;
use crate::client::Client;
use crate::driver::transport::TcpConnector;
use crate::driver::{now, Driver, DriverConfig};
use crate::error::{Error, Result};
use crate::hosts::{parse_connect_string, HostList};
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
    /// rejected the credentials.
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
    let (hosts, chroot) = parse_connect_string(&b.connect_string)?;
    let hosts = HostList::new(hosts);
    let mut session = Session::new(session_config(&b, hosts.len()), now());
    if let Some((id, password)) = &b.resume {
        session.resume(*id, password.clone());
    }
    let (tx, rx) = mpsc::unbounded_channel();
    let (info_tx, info_rx) = watch::channel(SessionInfo::default());
    let (transitions_tx, transitions) = broadcast::channel(STATE_HISTORY);
    let driver = Driver::new(
        TcpConnector,
        session,
        hosts,
        rx,
        info_tx,
        transitions_tx,
        DriverConfig {
            max_frame_len: b.max_frame_len,
            batch_reads: b.batch_reads,
        },
    );
    let span = tracing::debug_span!(
        "zk_session",
        connect = %b.connect_string,
        session_id = tracing::field::Empty
    );
    tokio::spawn(driver.run().instrument(span));
    let client = Client::new(tx, info_rx, transitions, chroot, b.watch_buffer);
    establish(&client, &b).await?;
    Ok(client)
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
        request_timeout: b.request_timeout,
    }
}

/// Waits for the first session and the builder's credentials, within the establish timeout.
async fn establish(client: &Client, b: &ClientBuilder) -> Result<()> {
    let auths: Vec<_> = b
        .auths
        .iter()
        .map(|(scheme, auth)| client.add_auth(scheme, auth))
        .collect();
    let mut states = client.state_watcher();
    let ready = async {
        let state = states.wait_for(SessionState::is_connected).await;
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
