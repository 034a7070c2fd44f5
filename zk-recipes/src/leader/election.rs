//! The latch's election on one session: protected create of our node, then either lead
//! (first node, owned by our session) or watch our predecessor only.
//!
//! ```text
//! create _c_<guid>-latch- (data = id) ─ lost reply: list, find the guid, check the owner
//!   ▼
//! list, sort ─ we are gone ─────────────────────────────▶ create a new node (CURATOR-724)
//!   ├─ first: getData+watch own node, owner == our session ─▶ Leader(term) until deleted,
//!   │        suspended (Standard policy: Follower, re-check on reconnect) or session end;
//!   │        owner is another session ─▶ delete that version, create a new node
//!   └─ else: getData+watch the predecessor, wait, list again
//! ```

use std::sync::{Arc, Mutex};

use tracing::{debug, warn};
use zk_client::{Client, CreateMode, EventType, Publisher, SessionState, Stat};

use super::{Leadership, LeadershipPolicy, Term};
use crate::error::{Error, Result};
use crate::queue::{list, naming, wait_for_node, Order, Protected};
use crate::retry::{gave_up, retry_after, turns};

/// Curator's `LeaderLatch.LOCK_NAME`.
pub(crate) const LATCH_NAME: &str = "latch-";
/// Curator's `InterProcessMutex` lock name, which `LeaderSelector` uses.
pub(crate) const MUTEX_NAME: &str = naming::MUTEX_LOCK_NAME;

/// Why an election on one session stopped.
#[derive(Debug)]
pub(crate) enum Ended {
    /// The session ended: re-join on the next one.
    SessionEnded,
}

/// What the latch's task shares with the election on each session.
pub(crate) struct Ctx {
    pub(crate) base: String,
    /// The name inside each node's name: `latch-` for the latch, `lock-` for the selector
    /// (Curator's mutex layout; the mutex's holder is the same first node).
    pub(crate) lock_name: &'static str,
    pub(crate) id: String,
    pub(crate) policy: LeadershipPolicy,
    pub(crate) state: Arc<Publisher<Leadership>>,
    /// The nodes of the current session's guid (a create may be in flight), for the
    /// cleanup on close.
    pub(crate) own: Arc<Mutex<Option<(Client, Protected)>>>,
    pub(crate) terms: std::sync::atomic::AtomicU64,
}

impl Ctx {
    /// Publishes leadership of `node`, starting a term unless one of the same node runs.
    fn claim(&self, client: &Client, node: &str, stat: &Stat) {
        self.state.publish_if(|state| {
            if matches!(state, Leadership::Leader(t) if t.node == node) {
                return false;
            }
            let number = 1 + self.terms.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            *state = Leadership::Leader(Term {
                number,
                fencing_token: stat.czxid,
                node: node.to_owned(),
                session_id: client.session_id(),
            });
            debug!(node, number, "leadership taken");
            crate::metrics::leadership(self.lock_name, true);
            true
        });
    }

    /// Ends the current term, if any.
    pub(crate) fn step_down(&self) {
        self.state.publish_if(|state| {
            if state.is_leader() {
                *state = Leadership::Follower;
                crate::metrics::leadership(self.lock_name, false);
                true
            } else {
                false
            }
        });
    }
}

/// Runs the election on `client` until its session ends. Errors other than the session's
/// end are returned (the caller retries after a pause).
pub(crate) async fn elect(ctx: &Ctx, client: &Client) -> Result<Ended> {
    match elect_inner(ctx, client).await {
        Err(e) if is_session_end(&e) => Ok(Ended::SessionEnded),
        other => other,
    }
}

fn is_session_end(e: &Error) -> bool {
    e.is_session_end()
}

async fn elect_inner(ctx: &Ctx, client: &Client) -> Result<Ended> {
    // Never queue behind a node of our own: an earlier call on this session that ended with
    // an error left its node (the session's end alone would remove it). Within the loop, a
    // round ends only when its node is gone.
    remove_earlier(ctx, client).await?;
    for _ in turns() {
        if client.state().is_terminal() {
            return Ok(Ended::SessionEnded);
        }
        let nodes = Protected::new(&ctx.base);
        if let Ok(mut own) = ctx.own.lock() {
            *own = Some((client.clone(), nodes.clone()));
        }
        // The protected create: a lost reply is recovered by guid, never with a second node.
        let name = nodes.name(ctx.lock_name);
        let mode = CreateMode::EphemeralSequential;
        let (name, _) = nodes.create(client, &name, ctx.id.as_bytes(), mode).await?;
        // Our node is gone (deleted by someone, CURATOR-724): join again with a new one.
        follow(ctx, client, &name).await?;
        ctx.step_down();
    }
    Err(gave_up())
}

/// Removes the nodes of the round before this call when it ran on `client`'s session (it
/// ended with an error).
///
/// # Errors
///
/// The removal's error: no new node is made while an earlier one may be left.
async fn remove_earlier(ctx: &Ctx, client: &Client) -> Result<()> {
    let earlier = ctx.own.lock().ok().and_then(|own| {
        own.as_ref()
            .filter(|(on, _)| on.session_id() == client.session_id())
            .map(|(_, nodes)| nodes.clone())
    });
    if let Some(nodes) = earlier {
        let removed = nodes.delete_all(client).await?;
        if removed > 0 {
            debug!(base = %ctx.base, removed, "removed our node of an earlier round");
        }
    }
    Ok(())
}

/// Follows the queue until our node is gone (returns `Ok`) or the session ends (an error).
async fn follow(ctx: &Ctx, client: &Client, ours: &str) -> Result<()> {
    for _ in turns() {
        let nodes = list(client, &ctx.base, Order::Election(ctx.lock_name)).await?;
        let Some(index) = nodes.iter().position(|n| n == ours) else {
            return Ok(());
        };
        let Some(previous) = index.checked_sub(1).and_then(|i| nodes.get(i)) else {
            if !lead(ctx, client, ours).await? {
                return Ok(());
            }
            continue;
        };
        // Any wake-up: list again.
        wait_for_node(client, &crate::path::join(&ctx.base, previous)).await?;
    }
    Err(gave_up())
}

/// We are first: confirm the node is our session's (CURATOR-696) and lead until it is
/// deleted, the session ends, or (Standard policy) the connection is lost and comes back.
/// Returns `false` when our node is gone (or was another session's and is removed now),
/// `true` to look at the queue again.
async fn lead(ctx: &Ctx, client: &Client, ours: &str) -> Result<bool> {
    let path = crate::path::join(&ctx.base, ours);
    let mut states = client.watch();
    let (stat, mut watcher) = match client.get_data_watch(&path).await {
        Ok((_, stat, watcher)) => (stat, watcher),
        Err(zk_client::Error::NoNode) => return Ok(false),
        // A connection loss is waited out (then look again); anything else ends the round.
        Err(e) => return retry_after(client, e).await.map(|()| true),
    };
    if stat.ephemeral_owner != client.session_id() {
        // A node with our name that another session owns (CURATOR-696): never lead from it,
        // and do not wait behind it either. Like Curator's reset, remove it (only this
        // version of it) and join again with a new node.
        warn!(node = %path, owner = stat.ephemeral_owner, "our node belongs to another session; replacing it");
        match client.delete(&path, Some(stat.version)).await {
            Ok(()) | Err(zk_client::Error::NoNode) => {}
            // Written to meanwhile: look again (and check its owner again).
            Err(zk_client::Error::BadVersion) => return Ok(true),
            Err(e) => return retry_after(client, e).await.map(|()| true),
        }
        return Ok(false);
    }
    if ctx.policy == LeadershipPolicy::Standard && states.current() != SessionState::Connected {
        // Suspended (or on a read-only server): lead only once connected read/write again.
        states.wait_for(|s| s == SessionState::Connected).await;
        return Ok(true);
    }
    ctx.claim(client, &path, &stat);
    for _ in turns() {
        tokio::select! {
            event = &mut watcher => match event {
                Ok(e) if e.event_type == EventType::NodeDeleted => {
                    ctx.step_down();
                    return Ok(false);
                }
                // Data changed (someone wrote to our node): watch again.
                Ok(_) => return Ok(true),
                Err(e) if e.is_terminal() => {
                    ctx.step_down();
                    return Err(e.into());
                }
                Err(_) => return Ok(true),
            },
            state = states.changed() => {
                if let Some(again) = on_state(ctx, state) {
                    return again;
                }
            }
        }
    }
    Err(gave_up())
}

/// A leader's reaction to a session state change: `Some` ends the current `lead`.
fn on_state(ctx: &Ctx, state: SessionState) -> Option<Result<bool>> {
    if state.is_terminal() {
        ctx.step_down();
        return Some(Err(Error::Client(match state {
            SessionState::AuthFailed => zk_client::Error::AuthFailed,
            SessionState::Closed => zk_client::Error::Closed,
            _ => zk_client::Error::SessionExpired,
        })));
    }
    match (ctx.policy, state) {
        (LeadershipPolicy::Standard, SessionState::Connected) => {
            // Back from a suspension: look at the queue again before leading again.
            Some(Ok(true))
        }
        (LeadershipPolicy::Standard, _) => {
            debug!(?state, "connection lost: leadership suspended");
            ctx.step_down();
            None
        }
        _ => None,
    }
}
