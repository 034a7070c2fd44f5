//! Sessions: the prologue every test starts with, connecting, and waiting on a session.

use std::time::Duration;

use zk_client::{Client, ClientBuilder, Error, ErrorCode, SessionManager, SessionState};

use super::limits::{within, LIMIT};
use crate::{chroot, mode_of, standalone, Ensemble, Server, ServerMode, ZkTarget};

/// The session timeout of [`manager`]'s sessions: short, for the expiry tests (the harness's
/// tickTime is 500 ms).
pub const SESSION: Duration = Duration::from_secs(2);

/// Where a test runs: the binary's shared server and a fresh subtree of its own.
pub struct TestRoot {
    /// The shared server (its address for a proxy, its four-letter words).
    pub server: &'static Server,
    /// The test's subtree, e.g. `/it-nodes-3f2a`.
    pub root: String,
    /// The connect string of that subtree: give it to [`connect`] as often as sessions are
    /// needed.
    pub hosts: String,
}

/// The prologue of every test on the shared server: a fresh chroot named after `test`.
///
/// ```no_run
/// use integration_tests::prelude::*;
///
/// # async fn example() {
/// let TestRoot { hosts, .. } = test_root("creates_a_node").await;
/// let client = connect(&hosts).await;
/// # drop(client);
/// # }
/// ```
pub async fn test_root(test: &str) -> TestRoot {
    let server = standalone().await;
    let root = chroot(server, test).await;
    let hosts = server.hosts(&root);
    TestRoot {
        server,
        root,
        hosts,
    }
}

/// The builder every kit connect starts from: a session timeout of `secs` seconds and an
/// establish timeout of [`LIMIT`].
fn builder(hosts: &str, secs: u64) -> ClientBuilder {
    Client::builder(hosts)
        .session_timeout(Duration::from_secs(secs))
        .establish_timeout(LIMIT)
}

/// Connects `builder` (made for `hosts`) within [`LIMIT`].
async fn connect_builder(hosts: &str, builder: ClientBuilder) -> Client {
    within("connect", builder.connect())
        .await
        .unwrap_or_else(|e| panic!("connect to {hosts}: {e}"))
}

/// Connects with a session timeout of `secs` seconds, within [`LIMIT`].
pub async fn connect_with_timeout(hosts: &str, secs: u64) -> Client {
    connect_builder(hosts, builder(hosts, secs)).await
}

/// A new session on `hosts` with a 10 s session timeout.
pub async fn connect(hosts: &str) -> Client {
    connect_with_timeout(hosts, 10).await
}

/// A new session for a test that drops requests on purpose (behind the fault proxy): as
/// [`connect`], with the poison rule off, since a request dropped twice in a row by the
/// proxy would otherwise be refused locally for a while.
pub async fn connect_for_faults(hosts: &str) -> Client {
    connect_builder(hosts, builder(hosts, 10).poison_quarantine(Duration::ZERO)).await
}

/// A session manager on `builder` that renews an expired session quickly (backoff 50 ms to
/// 1 s, 200 attempts; sessions that die young paced from 50 ms to 1 s only): what the
/// recipes' expiry tests use.
pub async fn managed(builder: ClientBuilder) -> SessionManager {
    within(
        "first managed session",
        SessionManager::builder(builder)
            .renew_backoff(Duration::from_millis(50), Duration::from_secs(1))
            .renew_pacing(
                Duration::from_millis(50),
                Duration::from_secs(1),
                Duration::from_secs(60),
            )
            .renew_attempts(200)
            .connect(),
    )
    .await
    .expect("connect the first session")
}

/// A session manager on `hosts` with [`SESSION`] as session timeout and fast renewal.
pub async fn manager(hosts: &str) -> SessionManager {
    manager_with_session(hosts, SESSION).await
}

/// [`manager`] with sessions of `timeout`.
pub async fn manager_with_session(hosts: &str, timeout: Duration) -> SessionManager {
    let builder = Client::builder(hosts)
        .session_timeout(timeout)
        .establish_timeout(LIMIT);
    managed(builder).await
}

/// Waits until the client's state satisfies `pred` and returns it.
pub async fn wait_state(
    client: &Client,
    what: &str,
    pred: impl FnMut(SessionState) -> bool,
) -> SessionState {
    let mut states = client.watch();
    within(what, states.wait_for(pred)).await
}

/// The 16-byte password of `client`'s session (for [`crate::expire_session`]).
pub fn passwd(client: &Client) -> [u8; 16] {
    let mut p = [0u8; 16];
    let bytes = client.session_password();
    assert_eq!(bytes.len(), 16, "session password length");
    p.copy_from_slice(&bytes);
    p
}

/// The index of the ensemble member (by client address) that holds `session_id`, from the
/// `cons` four-letter word.
pub async fn server_of(addrs: &[std::net::SocketAddr], session_id: i64) -> Option<usize> {
    let needle = format!("sid=0x{session_id:x}");
    for (i, addr) in addrs.iter().enumerate() {
        if let Ok(out) = crate::probe::four_letter_word(*addr, "cons", Duration::from_secs(5)).await
        {
            if out.contains(&needle) {
                return Some(i);
            }
        }
    }
    None
}

/// Expires `client`'s session on the server at `server` (a client address of it), and waits
/// (within [`LIMIT`]) until the client has seen the expiry.
pub async fn expire_client(server: std::net::SocketAddr, client: &Client) {
    let id = client.session_id();
    let passwd = passwd(client);
    within("expire", async {
        while client.state() != SessionState::Expired {
            let _ = crate::expire_session(server, id, passwd).await;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
}

/// `op` again while it fails with a retryable error (a member of a shared ensemble may be
/// down, or the members electing: a leader's death makes every member drop its clients),
/// within [`LIMIT`]; its first other outcome.
pub async fn answered<F, Fut, T>(what: &str, op: F) -> zk_client::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = zk_client::Result<T>>,
{
    again_while(what, op, Error::is_retryable).await
}

/// Retries a write through `client` until it is applied (a member may be electing).
pub async fn write_until_done<F, Fut, T>(what: &str, op: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = zk_client::Result<T>>,
{
    let again = |e: &Error| e.is_retryable() || matches!(e, Error::Server(_));
    again_while(what, op, again)
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// `op` again, 100 ms apart, while its error is one `again` accepts, within [`LIMIT`].
async fn again_while<F, Fut, T>(
    what: &str,
    mut op: F,
    again: impl Fn(&Error) -> bool,
) -> zk_client::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = zk_client::Result<T>>,
{
    within(what, async {
        loop {
            match op().await {
                Err(e) if again(&e) => tokio::time::sleep(Duration::from_millis(100)).await,
                other => return other,
            }
        }
    })
    .await
}

/// Stops members 1 and 2 of `ens` and waits until member 0 serves read-only.
pub async fn leave_member_0_read_only(ens: &Ensemble) {
    ens.stop(1).await;
    ens.stop(2).await;
    within("member 0 read-only", async {
        while mode_of(ens.addr(0), Duration::from_secs(5)).await != Some(ServerMode::ReadOnly) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
}

/// `c` is a read-only session: it reads `/data` (written as `before`) and is refused writes.
pub async fn assert_read_only_session(c: &Client) {
    assert_eq!(c.state(), SessionState::ConnectedReadOnly);
    assert_eq!(&c.get_data("/data").await.unwrap().0[..], b"before");
    assert!(matches!(
        c.set_data("/data", b"x", None).await,
        Err(Error::Server(ErrorCode::NotReadOnly))
    ));
}

/// Starts members 1 and 2 of `ens` again; the read-only session `c` becomes read/write and
/// writes `/data`. Closes `c`.
pub async fn back_to_read_write(ens: &Ensemble, c: Client) {
    ens.start(1).await;
    ens.start(2).await;
    ens.wait_quorum().await;
    wait_state(&c, "back to read/write", |s| s == SessionState::Connected).await;
    write_until_done("write", || c.set_data("/data", b"after", None)).await;
    assert_eq!(&c.get_data("/data").await.unwrap().0[..], b"after");
    c.close().await.unwrap();
}

/// Asserts that `states` saw no transition since it was made (or last looked at): the
/// connection never dropped meanwhile. Waits 50 ms for one that is still on its way.
pub async fn assert_no_state_change(states: &mut zk_client::StateWatcher) {
    let changed = tokio::time::timeout(Duration::from_millis(50), states.changed()).await;
    assert!(
        changed.is_err(),
        "no state change expected, got {changed:?} (now {:?})",
        states.current()
    );
}
