//! Helpers of the leader election tests: participants on their own session managers, and a
//! shared log of terms checked for overlaps.
#![allow(dead_code, unreachable_pub)]

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;
use zk_client::{Client, SessionManager};
use zk_recipes::leader::{LeaderLatch, Leadership, LeadershipPolicy};

pub const LIMIT: Duration = Duration::from_secs(60);
/// The participants' session timeout (the harness's tickTime is 500 ms).
pub const SESSION: Duration = Duration::from_secs(2);

pub async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    match tokio::time::timeout(LIMIT, fut).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: still not done after {LIMIT:?}"),
    }
}

/// A session manager on `hosts` with a short session timeout and fast renewal.
pub async fn manager(hosts: &str) -> SessionManager {
    let builder = Client::builder(hosts)
        .session_timeout(SESSION)
        .establish_timeout(LIMIT);
    crate::common::managed(builder).await
}

/// One term as the participant observed it: start when `is_leader` became true, end when it
/// observed the loss (or its close).
#[derive(Debug, Clone)]
pub struct TermRecord {
    pub who: String,
    pub number: u64,
    pub token: i64,
    pub start: Instant,
    pub end: Option<Instant>,
}

/// Terms of every participant of one election.
#[derive(Clone, Default)]
pub struct TermLog(Arc<Mutex<Vec<TermRecord>>>);

impl TermLog {
    /// Records `latch`'s terms until it closes.
    pub fn follow(&self, who: &str, latch: &LeaderLatch) -> JoinHandle<()> {
        let log = self.0.clone();
        let who = who.to_owned();
        let mut rx = latch.watch();
        tokio::spawn(async move {
            let mut open: Option<(usize, u64)> = None;
            let mut state = rx.last();
            loop {
                let now = Instant::now();
                {
                    let mut log = log.lock().unwrap();
                    let current = state.term().map(|t| t.number);
                    if let Some((index, number)) = open {
                        if current != Some(number) {
                            log[index].end = Some(now);
                            open = None;
                        }
                    }
                    if let (Some(term), None) = (state.term(), open) {
                        log.push(TermRecord {
                            who: who.clone(),
                            number: term.number,
                            token: term.fencing_token,
                            start: now,
                            end: None,
                        });
                        open = Some((log.len() - 1, term.number));
                    }
                }
                if state == Leadership::Closed {
                    break;
                }
                state = rx.changed().await;
            }
        })
    }

    pub fn terms(&self) -> Vec<TermRecord> {
        self.0.lock().unwrap().clone()
    }

    /// Panics when two terms of different participants overlap; returns the terms in order.
    pub fn assert_no_overlap(&self) -> Vec<TermRecord> {
        let mut terms = self.terms();
        terms.sort_by_key(|t| t.start);
        for pair in terms.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            match a.end {
                Some(end) => assert!(
                    end <= b.start,
                    "two leaders at once: {a:?} still leading when {b:?} started"
                ),
                None => panic!("two leaders at once: {a:?} never ended, {b:?} started"),
            }
            if a.who != b.who {
                assert!(
                    b.token > a.token,
                    "a later leader has a smaller fencing token: {a:?} then {b:?}"
                );
            }
        }
        terms
    }
}

/// Starts a latch and records its terms.
pub fn join(
    log: &TermLog,
    manager: &SessionManager,
    path: &str,
    who: &str,
    policy: LeadershipPolicy,
) -> LeaderLatch {
    let latch = LeaderLatch::new_managed(manager, path, who, policy).expect("start latch");
    log.follow(who, &latch);
    latch
}

/// Waits until `latch` leads.
pub async fn leads(latch: &LeaderLatch) {
    latch
        .ready_timeout(LIMIT)
        .await
        .unwrap_or_else(|e| panic!("{} never led: {e}", latch.id()));
}

/// Waits until `client` sees `n` nodes under `path`.
pub async fn wait_nodes(client: &Client, path: &str, n: usize) -> Vec<String> {
    let end = Instant::now() + LIMIT;
    loop {
        let nodes = match client.get_children(path).await {
            Ok(c) => c,
            Err(zk_client::Error::NoNode) => Vec::new(),
            Err(e) => panic!("list {path}: {e}"),
        };
        if nodes.len() == n {
            return nodes;
        }
        assert!(
            Instant::now() < end,
            "{path} never had {n} nodes: {nodes:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// How many of `latches` lead now.
pub fn leaders(latches: &[&LeaderLatch]) -> usize {
    latches.iter().filter(|l| l.is_leader()).count()
}

/// The participant ids of an election, in queue order.
pub fn participant_ids(
    participants: zk_recipes::Result<Vec<zk_recipes::Participant>>,
) -> Vec<String> {
    participants
        .expect("participants")
        .into_iter()
        .map(|p| p.id())
        .collect()
}
