//! Helpers of the lock, semaphore and leader tests.

use std::sync::{Arc, Mutex};

use tokio::task::JoinHandle;
use tokio::time::Instant;
use zk_client::{Client, CreateOptions, SessionManager};
use zk_recipes::leader::{LeaderLatch, Leadership, LeadershipPolicy};

use super::limits::{within_for, LIMIT, SOON};
use super::tree::children;

/// Waits (within [`SOON`]) until the lock state satisfies `pred`.
pub async fn wait_lock_state(
    guard: &zk_recipes::lock::LockGuard,
    pred: impl Fn(zk_recipes::lock::LockState) -> bool,
) -> zk_recipes::lock::LockState {
    let mut rx = guard.watch();
    within_for(SOON, "lock state", rx.wait_for(pred)).await
}

/// A semaphore holder's critical section: an ephemeral marker under `/inside` for as long as
/// it holds a lease. Markers of an expired holder go with its session, as its lease does, so
/// the number of markers is the number of holders the server sees. Returns the marker and
/// that number.
pub async fn enter(client: &Client) -> (String, usize) {
    let (marker, _) = client
        .create("/inside/h-", &[], &CreateOptions::ephemeral_sequential())
        .await
        .expect("marker");
    (marker, children(client, "/inside").await.len())
}

/// One term as the participant observed it: start when `is_leader` became true, end when it
/// observed the loss (or its close).
#[derive(Debug, Clone)]
pub struct TermRecord {
    /// The participant.
    pub who: String,
    /// The term's number.
    pub number: u64,
    /// Its fencing token.
    pub token: i64,
    /// When the participant saw itself lead.
    pub start: Instant,
    /// When it saw the term end (`None`: still leading).
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
                if state == Leadership::Ended {
                    break;
                }
                state = rx.changed().await;
            }
        })
    }

    /// Every term recorded so far.
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
