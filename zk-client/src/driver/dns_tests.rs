//! Host names with several addresses, over in-memory streams with paused time: each address
//! is an attempt of its own with its own connect timeout, and names are resolved again at
//! each turn (changed records are followed at the next reconnect).

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{duplex, AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio::sync::{broadcast, mpsc, watch};
use tokio::time::Instant;
use zk_proto::records::{ConnectRequest, ConnectResponse};
use zk_proto::Record;

use super::transport::{Connector, Endpoint};
use super::{Driver, DriverConfig};
use crate::client::Client;
use crate::hosts::HostList;
use crate::path::Chroot;
use crate::resolve::Resolver;
use crate::session::{Session, SessionConfig, SET_WATCHES_BATCH_BYTES};
use crate::state::{SessionInfo, SessionState, STATE_HISTORY};

const SESSION: Duration = Duration::from_secs(9);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Behaviour {
    /// Connection refused at once.
    Refuse,
    /// The connect never completes (a dropped SYN).
    Blackhole,
    /// Connects; the test gets the server end.
    Accept,
}

/// One connection attempt as the connector saw it.
#[derive(Debug, Clone)]
struct Attempt {
    at: Duration,
    host: String,
    addr: SocketAddr,
}

#[derive(Clone)]
struct AddrConnector {
    t0: Instant,
    behaviours: Arc<Mutex<HashMap<SocketAddr, Behaviour>>>,
    attempts: mpsc::UnboundedSender<Attempt>,
    accepted: mpsc::UnboundedSender<DuplexStream>,
}

impl Connector for AddrConnector {
    type Stream = DuplexStream;

    async fn connect(&self, to: &Endpoint) -> io::Result<DuplexStream> {
        let _ = self.attempts.send(Attempt {
            at: self.t0.elapsed(),
            host: to.host.clone(),
            addr: to.addr,
        });
        let behaviour = self
            .behaviours
            .lock()
            .unwrap()
            .get(&to.addr)
            .copied()
            .unwrap_or(Behaviour::Refuse);
        match behaviour {
            Behaviour::Refuse => Err(io::ErrorKind::ConnectionRefused.into()),
            Behaviour::Blackhole => std::future::pending().await,
            Behaviour::Accept => {
                let (client, server) = duplex(1 << 20);
                let _ = self.accepted.send(server);
                Ok(client)
            }
        }
    }
}

impl super::transport::Transport for DuplexStream {
    type Parked = DuplexStream;

    fn park(self) -> io::Result<Self::Parked> {
        Ok(self)
    }

    fn unpark(parked: Self::Parked) -> io::Result<Self> {
        Ok(parked)
    }
}

fn addr(last: u8) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, last], 2181))
}

struct Dns {
    client: Client,
    attempts: mpsc::UnboundedReceiver<Attempt>,
    accepted: mpsc::UnboundedReceiver<DuplexStream>,
    behaviours: Arc<Mutex<HashMap<SocketAddr, Behaviour>>>,
    /// What `zk` resolves to now.
    records: Arc<Mutex<Vec<SocketAddr>>>,
    /// When `zk` was resolved.
    lookups: Arc<Mutex<Vec<Duration>>>,
}

/// A client of `zk:2181` with no connect timeout set: the default one divides the session
/// timeout by the addresses `zk` resolves to.
fn start(records: Vec<SocketAddr>, behaviours: &[(SocketAddr, Behaviour)]) -> Dns {
    let t0 = Instant::now();
    let (attempts_tx, attempts) = mpsc::unbounded_channel();
    let (accepted_tx, accepted) = mpsc::unbounded_channel();
    let behaviours = Arc::new(Mutex::new(behaviours.iter().copied().collect()));
    let records = Arc::new(Mutex::new(records));
    let lookups = Arc::new(Mutex::new(Vec::new()));
    let (r, l) = (records.clone(), lookups.clone());
    let resolver = Resolver::new(move |host, _port| {
        l.lock().unwrap().push(t0.elapsed());
        let found = if host == "zk" {
            Ok(r.lock().unwrap().clone())
        } else {
            Err(io::Error::new(io::ErrorKind::NotFound, "unknown host"))
        };
        async move { found }
    });
    let connector = AddrConnector {
        t0,
        behaviours: behaviours.clone(),
        attempts: attempts_tx,
        accepted: accepted_tx,
    };
    let cfg = SessionConfig {
        session_timeout: SESSION,
        // What the session would use for one host: the driver's default replaces it.
        connect_timeout: SESSION,
        read_only: false,
        max_outstanding: 100,
        reconnect_wait: SESSION,
        set_watches_batch: SET_WATCHES_BATCH_BYTES,
        max_request_len: zk_proto::SERVER_MAX_BUFFER,
        max_frame_len: zk_proto::DEFAULT_MAX_FRAME_LEN,
        request_timeout: None,
        #[cfg(feature = "sasl")]
        sasl: None,
    };
    let (tx, rx) = mpsc::unbounded_channel();
    let (info_tx, info_rx) = watch::channel(SessionInfo::default());
    let (transitions_tx, transitions) = broadcast::channel(STATE_HISTORY);
    let driver = Driver::new(
        connector,
        Session::new(cfg, super::now()),
        HostList::new(vec!["zk:2181".into()]).with_resolver(resolver),
        rx,
        info_tx,
        transitions_tx,
        DriverConfig {
            max_frame_len: zk_proto::DEFAULT_MAX_FRAME_LEN,
            batch_reads: true,
            auto_connect_timeout: Some(SESSION),
        },
    );
    tokio::spawn(driver.run());
    Dns {
        client: Client::new(
            tx,
            info_rx,
            transitions,
            Chroot::default(),
            16,
            Default::default(),
        ),
        attempts,
        accepted,
        behaviours,
        records,
        lookups,
    }
}

async fn handshake(s: &mut DuplexStream, session_id: i64) -> ConnectRequest {
    let len = s.read_i32().await.expect("a ConnectRequest");
    let mut body = vec![0; usize::try_from(len).expect("a length")];
    s.read_exact(&mut body).await.expect("its body");
    let req = ConnectRequest::decode(&mut Bytes::from(body)).expect("a ConnectRequest");
    let mut out = BytesMut::new();
    zk_proto::frame::encode_frame(&mut out, |b| {
        ConnectResponse {
            protocol_version: 0,
            timeout: SESSION.as_millis() as i32,
            session_id,
            passwd: Bytes::from_static(b"0123456789abcdef"),
            read_only: false,
        }
        .encode(b)
    });
    s.write_all(&out).await.expect("the answer");
    req
}

impl Dns {
    async fn attempts(&mut self, n: usize) -> Vec<Attempt> {
        let mut out = Vec::new();
        while out.len() < n {
            out.push(self.attempts.recv().await.expect("an attempt"));
        }
        out
    }
}

#[tokio::test(start_paused = true)]
async fn each_address_of_a_name_is_an_attempt_with_its_own_connect_timeout() {
    let (refused, silent1, silent2, good) = (addr(1), addr(2), addr(3), addr(4));
    let mut dns = start(
        vec![refused, silent1, silent2],
        &[
            (refused, Behaviour::Refuse),
            (silent1, Behaviour::Blackhole),
            (silent2, Behaviour::Blackhole),
            (good, Behaviour::Accept),
        ],
    );
    // One round: each of the three addresses once, resolved once before it.
    let round = dns.attempts(3).await;
    let mut tried: Vec<SocketAddr> = round.iter().map(|a| a.addr).collect();
    tried.sort();
    assert_eq!(tried, [refused, silent1, silent2], "{round:?}");
    assert!(round.iter().all(|a| a.host == "zk:2181"), "{round:?}");
    assert_eq!(dns.lookups.lock().unwrap().len(), 1);
    // Each silent address had its own 3 s (the 9 s session timeout over 3 addresses), not
    // one timeout shared by the name; then the backoff (at most 1 s).
    let per_address = SESSION / 3;
    for pair in round.windows(2) {
        let gap = pair[1].at - pair[0].at;
        if pair[0].addr == refused {
            assert!(gap <= Duration::from_secs(1), "{round:?}");
        } else {
            assert!(
                gap >= per_address && gap <= per_address + Duration::from_secs(1),
                "{round:?}"
            );
        }
    }
    // The records change: the next round resolves again and finds the new server.
    *dns.records.lock().unwrap() = vec![good];
    let next = dns.attempts(1).await;
    assert_eq!(next[0].addr, good);
    assert_eq!(dns.lookups.lock().unwrap().len(), 2);
    let mut s = dns.accepted.recv().await.expect("a connection");
    handshake(&mut s, 0x7).await;
    let mut states = dns.client.watch();
    assert_eq!(
        states.wait_for(|s| s.is_connected()).await,
        SessionState::Connected
    );
}

#[tokio::test(start_paused = true)]
async fn a_reconnect_resolves_again_and_tries_the_last_address_last() {
    let (first, second, third) = (addr(1), addr(2), addr(3));
    let mut dns = start(
        vec![first],
        &[(first, Behaviour::Accept), (second, Behaviour::Accept)],
    );
    let mut s = dns.accepted.recv().await.expect("a connection");
    handshake(&mut s, 0x8).await;
    let mut states = dns.client.watch();
    states.wait_for(|s| s.is_connected()).await;
    assert_eq!(dns.attempts(1).await[0].addr, first);
    assert_eq!(dns.lookups.lock().unwrap().len(), 1);
    // The name now has two more records, one of them dead; the server goes away.
    *dns.records.lock().unwrap() = vec![first, second, third];
    dns.behaviours
        .lock()
        .unwrap()
        .insert(first, Behaviour::Refuse);
    dns.behaviours
        .lock()
        .unwrap()
        .insert(third, Behaviour::Refuse);
    drop(s);
    assert_eq!(
        states.wait_for(|s| !s.is_connected()).await,
        SessionState::Disconnected
    );
    // Resolved again; the new addresses are tried before the one just lost.
    let mut tried = Vec::new();
    while !tried.contains(&second) {
        tried.push(dns.attempts(1).await[0].addr);
        assert!(tried.len() <= 2, "{tried:?}");
    }
    assert!(
        !tried.contains(&first),
        "the lost address goes last: {tried:?}"
    );
    assert_eq!(dns.lookups.lock().unwrap().len(), 2);
    let mut s2 = dns.accepted.recv().await.expect("a connection");
    let req = handshake(&mut s2, 0x8).await;
    assert_eq!(
        req.session_id, 0x8,
        "the session is resumed on the new address"
    );
    states.wait_for(|s| s.is_connected()).await;
}

#[tokio::test(start_paused = true)]
async fn a_name_that_does_not_resolve_is_a_failed_attempt_and_retried() {
    let good = addr(9);
    let mut dns = start(Vec::new(), &[(good, Behaviour::Accept)]);
    // No address: nothing is connected to, the name is looked up again after a backoff.
    while dns.lookups.lock().unwrap().len() < 3 {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(dns.attempts.try_recv().is_err());
    *dns.records.lock().unwrap() = vec![good];
    assert_eq!(dns.attempts(1).await[0].addr, good);
    let mut s = dns.accepted.recv().await.expect("a connection");
    handshake(&mut s, 0x9).await;
    dns.client.watch().wait_for(|s| s.is_connected()).await;
}
