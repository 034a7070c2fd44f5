//! [`Source`] and [`Sessions`]: where a background recipe's sessions come from, and "the
//! session ended, take the next client", written once and paced.

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use zk_client::{Client, Generations, SessionManager};

use crate::error::Error;
use crate::retry::{session_ended, turns, Pacing};

/// Where a recipe's sessions come from.
#[derive(Debug, Clone)]
pub(crate) enum Source {
    /// One session: the recipe ends with it.
    Client(Client),
    /// A session manager: the recipe goes on with each new session after an expiry.
    Manager(SessionManager),
}

impl Source {
    /// The client to use now (a manager's current one: after an expiry, the expired client
    /// until the next session is up).
    pub(crate) fn client(&self) -> Client {
        match self {
            Source::Client(c) => c.clone(),
            Source::Manager(m) => m.client(),
        }
    }

    /// The sessions from now on, for a background task.
    pub(crate) fn sessions(&self) -> Sessions {
        match self {
            Source::Client(c) => Sessions {
                generations: None,
                client: c.clone(),
                number: 0,
                since: Instant::now(),
                pacing: Pacing::new(),
            },
            Source::Manager(m) => {
                let generations = m.watch();
                let current = generations.current();
                Sessions {
                    client: current.client.clone(),
                    number: current.number,
                    generations: Some(generations),
                    since: Instant::now(),
                    pacing: Pacing::new(),
                }
            }
        }
    }
}

/// A background task's sessions: the client of the current one, and the next one once it
/// ended.
#[derive(Debug)]
pub(crate) struct Sessions {
    /// A manager's generations; `None` for a plain client.
    generations: Option<Generations>,
    client: Client,
    /// The generation of `client` (0 for a plain client).
    number: u64,
    /// When `client` was taken.
    since: Instant,
    pacing: Pacing,
}

/// Why [`Sessions::next`] has no next client.
#[derive(Debug)]
pub(crate) enum NoNext {
    /// The task was asked to stop.
    Stopped,
    /// No session follows: a plain client's session ended (its terminal error), the
    /// manager ended (why), or sessions kept dying until the pacing gave up
    /// ([`Error::GaveUp`]).
    Ended(Error),
}

impl Sessions {
    /// The current session's client.
    pub(crate) fn client(&self) -> &Client {
        &self.client
    }

    /// The current session ended (or cannot be used): the next one's client, after a
    /// paced pause when the last one did not live long ([`Pacing`]). A manager's sessions
    /// that came and went during the pause are skipped: the newest one is taken.
    ///
    /// # Errors
    ///
    /// [`NoNext`]: stopped, or no next session.
    pub(crate) async fn next(&mut self, stop: &CancellationToken) -> Result<Client, NoNext> {
        let Some(generations) = self.generations.as_mut() else {
            return Err(NoNext::Ended(session_ended(&self.client)));
        };
        if let Some(why) = generations.current().ended {
            return Err(NoNext::Ended(why.into()));
        }
        match self.pacing.wait(self.since.elapsed(), stop).await {
            Ok(true) => {}
            Ok(false) => return Err(NoNext::Stopped),
            Err(e) => return Err(NoNext::Ended(e)),
        }
        // Bounded: each turn waits for the manager's next generation.
        for _ in turns() {
            let current = generations.current();
            if let Some(why) = current.ended {
                return Err(NoNext::Ended(why.into()));
            }
            if current.number != self.number {
                self.number = current.number;
                self.client = current.client;
                self.since = Instant::now();
                return Ok(self.client.clone());
            }
            tokio::select! {
                _ = stop.cancelled() => return Err(NoNext::Stopped),
                _ = generations.changed() => {}
            }
        }
        Err(NoNext::Ended(crate::retry::gave_up()))
    }
}
