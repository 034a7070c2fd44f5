//! Helpers shared by the `client_*` test files (the zk-client suite against real servers).
#![allow(dead_code, unreachable_pub)]

use std::future::Future;
use std::time::Duration;

use integration_tests::{mode_of, Ensemble, ServerMode};
use zk_client::{Client, Error, ErrorCode, SessionState};

/// Generous bound for anything that should happen "soon": a hung test fails instead of
/// hanging. Never used to assert how fast something is.
pub const LIMIT: Duration = Duration::from_secs(60);

/// Awaits `fut`, panicking with `what` if it takes longer than [`LIMIT`].
pub async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    match tokio::time::timeout(LIMIT, fut).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: still not done after {LIMIT:?}"),
    }
}

/// Connects with a session timeout of `secs` seconds.
pub async fn connect_with_timeout(hosts: &str, secs: u64) -> Client {
    within(
        "connect",
        Client::builder(hosts)
            .session_timeout(Duration::from_secs(secs))
            .establish_timeout(LIMIT)
            .connect(),
    )
    .await
    .unwrap_or_else(|e| panic!("connect to {hosts}: {e}"))
}

/// Connects with a 10 s session timeout.
pub async fn connect(hosts: &str) -> Client {
    connect_with_timeout(hosts, 10).await
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

/// The index of the ensemble member (by client address) that holds `session_id`, from the
/// `cons` four-letter word.
pub async fn server_of(addrs: &[std::net::SocketAddr], session_id: i64) -> Option<usize> {
    let needle = format!("sid=0x{session_id:x}");
    for (i, addr) in addrs.iter().enumerate() {
        if let Ok(out) =
            integration_tests::probe::four_letter_word(*addr, "cons", Duration::from_secs(5)).await
        {
            if out.contains(&needle) {
                return Some(i);
            }
        }
    }
    None
}

/// Retries a write through `client` until it is applied (a member may be electing).
pub async fn write_until_done<F, Fut, T>(what: &str, mut op: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = zk_client::Result<T>>,
{
    within(what, async {
        loop {
            match op().await {
                Ok(v) => return v,
                Err(e) if e.is_retryable() || matches!(e, Error::Server(_)) => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => panic!("{what}: {e}"),
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
