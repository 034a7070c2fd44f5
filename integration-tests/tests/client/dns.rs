//! Host names with several addresses against a real server (loopback only): the names are
//! served by the client's resolver hook (`ClientBuilder::resolver`), the addresses are
//! proxies in front of one server, each refusing, silent (a blackhole: TCP accepted, nothing
//! answered) or passing.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use integration_tests::prelude::*;
use integration_tests::proxy::{Cut, Mode};
use integration_tests::{chroot, standalone, Proxy};
use zk_client::{Client, ClientBuilder, CreateOptions, SessionState};

/// What `zk.test` resolves to, changed by the test; and how many times it was resolved.
#[derive(Clone, Default)]
struct Records {
    addrs: Arc<Mutex<Vec<SocketAddr>>>,
    lookups: Arc<Mutex<usize>>,
}

impl Records {
    fn set(&self, addrs: &[SocketAddr]) {
        *self.addrs.lock().unwrap() = addrs.to_vec();
    }

    fn lookups(&self) -> usize {
        *self.lookups.lock().unwrap()
    }

    /// A builder for `zk.test:2181{root}` resolved from these records.
    fn builder(&self, root: &str) -> ClientBuilder {
        let records = self.clone();
        Client::builder(&format!("zk.test:2181{root}")).resolver(move |host, _port| {
            *records.lookups.lock().unwrap() += 1;
            let found = match host {
                "zk.test" => Ok(records.addrs.lock().unwrap().clone()),
                _ => Err(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "unknown host",
                )),
            };
            async move { found }
        })
    }
}

async fn proxy(upstream: SocketAddr, mode: Mode) -> Proxy {
    let p = Proxy::start(upstream).await;
    p.set_mode(mode);
    p
}

/// One name, three addresses: refused, silent, live. The session timeout over the three
/// addresses gives each 2 s: the client reaches the live one after at most one silent
/// attempt. (When the name counted as one host, the silent address held the attempt for the
/// whole connect timeout and, tried in the resolver's order, every time: no session.)
#[tokio::test]
async fn a_name_with_a_refused_a_silent_and_a_live_address_connects() {
    let zk = standalone().await;
    let root = chroot(zk, "dns_three_addresses").await;
    let refused = proxy(zk.addr(), Mode::Refuse).await;
    let silent = proxy(zk.addr(), Mode::Blackhole).await;
    let live = proxy(zk.addr(), Mode::Pass).await;
    let records = Records::default();
    records.set(&[refused.addr(), silent.addr(), live.addr()]);
    let session_timeout = Duration::from_secs(6);
    let per_address = session_timeout / 3;
    // The client shuffles a name's addresses: connect until the silent one was in the way
    // twice (each round has one chance in two; 12 rounds at most).
    let mut rounds = 0;
    while silent.stats().accepted < 2 && rounds < 12 {
        let silent_before = silent.stats().accepted;
        let started = Instant::now();
        let client = within(
            "connect",
            records
                .builder(&root)
                .session_timeout(session_timeout)
                .connect(),
        )
        .await
        .unwrap_or_else(|e| panic!("round {rounds}: {e}"));
        let took = started.elapsed();
        let silent_tried = silent.stats().accepted - silent_before;
        eprintln!("round {rounds}: connected in {took:?}, silent address tried {silent_tried}");
        assert!(silent_tried <= 1, "each address once per round");
        // Each silent attempt costs its own 2 s, plus the backoffs (well under 1 s).
        assert!(
            took < per_address * silent_tried as u32 + Duration::from_secs(1),
            "round {rounds}: {took:?} with {silent_tried} silent attempts"
        );
        let path = format!("/n{rounds}");
        client
            .create(&path, b"x", &CreateOptions::persistent())
            .await
            .unwrap();
        assert_eq!(&client.get_data(&path).await.unwrap().0[..], b"x");
        client.close().await.unwrap();
        rounds += 1;
    }
    assert!(
        silent.stats().accepted >= 1,
        "the silent address was never in the way"
    );
    assert!(records.lookups() >= rounds, "resolved at each connect");
}

/// A session on one address of the name; the records change and the server behind that
/// address goes away: the reconnect resolves the name again and resumes the session on the
/// new address.
#[tokio::test]
async fn a_reconnect_follows_changed_records() {
    let zk = standalone().await;
    let root = chroot(zk, "dns_changed_records").await;
    let old = proxy(zk.addr(), Mode::Pass).await;
    let new = proxy(zk.addr(), Mode::Pass).await;
    let records = Records::default();
    records.set(&[old.addr()]);
    let client = within(
        "connect",
        records
            .builder(&root)
            .session_timeout(Duration::from_secs(20))
            .establish_timeout(LIMIT)
            .connect(),
    )
    .await
    .unwrap();
    let id = client.session_id();
    client
        .create("/mine", b"", &CreateOptions::ephemeral())
        .await
        .unwrap();
    assert_eq!(records.lookups(), 1);
    assert_eq!(new.stats().accepted, 0);

    records.set(&[new.addr()]);
    old.set_mode(Mode::Refuse);
    old.cut(Cut::Reset);
    wait_state(&client, "disconnected", |s| s != SessionState::Connected).await;
    wait_state(&client, "reconnected", |s| s == SessionState::Connected).await;
    assert!(records.lookups() >= 2, "resolved again");
    assert!(
        new.stats().accepted >= 1,
        "reconnected through the new record"
    );
    assert_eq!(client.session_id(), id, "the same session");
    assert!(
        client.exists("/mine").await.unwrap().is_some(),
        "its ephemeral node kept"
    );
    client.close().await.unwrap();
}
