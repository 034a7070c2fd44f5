//! Leader election, in Curator's layouts: [`LeaderLatch`] (Curator `LeaderLatch`) and
//! [`LeaderSelector`] (Curator `LeaderSelector`, a mutex whose holder leads).
//!
//! Both run on a [`SessionManager`](zk_client::SessionManager): when a participant's session
//! expires it loses leadership (never carried over), and it re-joins the election on the
//! manager's next session with a new node at the end of the queue.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use zk_client::{Client, SessionManager};
//! use zk_recipes::leader::{LeaderLatch, Leadership, LeadershipPolicy};
//!
//! let manager = SessionManager::connect(Client::builder("127.0.0.1:2181")).await?;
//! let latch = LeaderLatch::new_managed(&manager, "/election/app", "me", LeadershipPolicy::Standard)?;
//! // The one transition type of both crates (zk_client::Transitions), as for a lock's state.
//! let mut changes = latch.watch();
//! loop {
//!     match changes.changed().await {
//!         Leadership::Leader(term) => println!("term {} (token {})", term.number, term.fencing_token),
//!         Leadership::Follower => println!("following"),
//!         _ => break,
//!     }
//! }
//! # Ok(()) }
//! ```

mod election;
mod latch;
mod selector;

pub use latch::LeaderLatch;
pub use selector::{LeaderSelector, LeaderSelectorBuilder};

/// When a leader considers its leadership gone (Curator's connection-state error policy).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum LeadershipPolicy {
    /// Leadership ends as soon as the connection is lost (Suspended), and is taken again
    /// (a new term) when the connection comes back and our node is still first. Curator's
    /// `StandardConnectionStateErrorPolicy`. Safe: a leader that cannot reach the ensemble
    /// stops before its session can expire and another participant take over.
    #[default]
    Standard,
    /// Leadership ends only when the session ends (Lost) or our node is deleted. Curator's
    /// `SessionConnectionStateErrorPolicy`. Fewer leader changes on flaky networks, but a
    /// partitioned leader keeps believing it leads until its client gives the session up,
    /// which can be after the ensemble expired it and elected someone else: use the fencing
    /// token for anything that must not overlap.
    SessionLoss,
}

impl zk_client::Observable for Leadership {
    fn is_final(&self) -> bool {
        *self == Leadership::Ended
    }

    fn when_gone(_last: &Self) -> Self {
        Leadership::Ended
    }
}

/// One term of leadership of one participant.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Term {
    /// Counts this participant's terms, from 1.
    pub number: u64,
    /// The czxid of our election node: grows with every node created on the path, so a
    /// later leader's token is always larger. A term that resumes after a suspension on the
    /// same node keeps its token (nobody else can have led while our node was first).
    pub fencing_token: i64,
    /// Our election node's path.
    pub node: String,
    /// The session the term belongs to.
    pub session_id: i64,
}

/// A participant's view of its own leadership, as published by [`LeaderLatch::watch`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Leadership {
    /// Not the leader (yet, or any more).
    Follower,
    /// The leader, in this term.
    Leader(Term),
    /// The latch was closed or its session manager ended. Terminal (as `Ended` of every
    /// other family's state).
    Ended,
}

impl Leadership {
    /// Whether this is [`Leadership::Leader`].
    pub fn is_leader(&self) -> bool {
        matches!(self, Leadership::Leader(_))
    }

    /// The term, if leader.
    pub fn term(&self) -> Option<&Term> {
        match self {
            Leadership::Leader(term) => Some(term),
            _ => None,
        }
    }
}
