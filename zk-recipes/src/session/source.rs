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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use zk_client::{Client, SessionManager};
    use zk_test_support::{within, Conn, FakeServer};

    use super::*;
    use crate::retry::PAUSE_FIRST;

    const TIMEOUT_MS: i32 = 30_000;

    /// Ends the session of `conn`: the connection drops and the reconnect is told the
    /// session expired; then the manager's next session (`id`) is accepted.
    async fn expire_and_renew(server: &FakeServer, conn: Conn, id: i64) -> Conn {
        drop(conn);
        let mut again = server.accept().await;
        let _ = again.read_connect().await;
        again.send_connect(0, 0, false).await;
        server.accept_session(id, TIMEOUT_MS).await.0
    }

    #[tokio::test]
    async fn the_next_session_is_taken_after_a_paced_pause_when_sessions_die_young() {
        let server = FakeServer::start().await;
        let builder = Client::builder(&server.addr())
            .session_timeout(Duration::from_millis(TIMEOUT_MS as u64));
        let manager = tokio::spawn(SessionManager::connect(builder));
        let (conn, _) = server.accept_session(1, TIMEOUT_MS).await;
        let manager = within("manager", manager).await.unwrap().unwrap();
        let mut sessions = Source::Manager(manager.clone()).sessions();
        let stop = CancellationToken::new();
        let mut conn = conn;
        let mut pauses = Vec::new();
        for id in 2..=4 {
            conn = expire_and_renew(&server, conn, id).await;
            // The manager's next session is up before we ask: what `next` takes is pacing.
            let mut generations = manager.watch();
            within("renewal", generations.wait_for(|g| g.number == id as u64)).await;
            let asked = Instant::now();
            let client = within("next", sessions.next(&stop)).await.unwrap();
            pauses.push(asked.elapsed());
            assert_eq!(client.session_id(), id, "the newest session is taken");
        }
        // Each session died young: pauses grow from the first one (with jitter, each at
        // least half its base), never a spin.
        assert!(pauses[0] >= PAUSE_FIRST / 2, "{pauses:?}");
        assert!(pauses[1] >= PAUSE_FIRST, "{pauses:?}");
        assert!(pauses[2] >= PAUSE_FIRST * 2, "{pauses:?}");
        // Once the manager ended there is no next session, at once.
        let answered = tokio::spawn(async move {
            // The closeSession, answered.
            if let Some(req) = conn.read_non_ping().await {
                conn.reply(req.xid, 0, zk_proto::ErrorCode::Ok, &[]).await;
            }
        });
        within("close", manager.close()).await.unwrap();
        within("closed", answered).await.unwrap();
        let asked = Instant::now();
        let ended = within("ended", sessions.next(&stop)).await;
        assert!(matches!(ended, Err(NoNext::Ended(_))), "{ended:?}");
        assert!(
            asked.elapsed() < PAUSE_FIRST,
            "no pause once the manager ended"
        );
    }

    #[tokio::test]
    async fn a_plain_clients_session_has_no_next_one() {
        let server = FakeServer::start().await;
        let (client, _conn) =
            zk_test_support::connect_client(&server, "", 7, TIMEOUT_MS, |b| b).await;
        let mut sessions = Source::Client(client.clone()).sessions();
        let next = within("next", sessions.next(&CancellationToken::new())).await;
        assert!(
            matches!(next, Err(NoNext::Ended(Error::Client(_)))),
            "{next:?}"
        );
    }
}
