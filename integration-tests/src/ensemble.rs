//! A three-node ensemble with node-level fault injection.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use futures_util::future::join_all;

use crate::config::{cluster, growable_cluster, Settings};
use crate::node::{mode_of, Flavor, Node, ServerMode, READY_TIMEOUT};
use crate::ZkTarget;

/// Bound of one `srvr` exchange when asking a member for its mode.
const MODE_TIMEOUT: Duration = Duration::from_secs(1);

/// A ZooKeeper ensemble on `127.0.0.1` (`standaloneEnabled=false`), each member with its own
/// client, quorum and election ports. Members are indexed `0..len()`; member `i` has `myid`
/// `i + 1`. Dropping it removes every member.
#[derive(Debug)]
pub struct Ensemble {
    nodes: Vec<Node>,
}

/// Starts a three-node ensemble and waits (up to 60 s) for its quorum.
pub async fn ensemble() -> Ensemble {
    Ensemble::launch(3).await
}

impl Ensemble {
    /// Starts an ensemble of `n` members and waits (up to 60 s) until every member is leader or
    /// follower.
    pub async fn launch(n: u32) -> Ensemble {
        Ensemble::launch_with(n, &Settings::default()).await
    }

    /// [`launch`](Self::launch) with non-default settings.
    pub async fn launch_with(n: u32, settings: &Settings) -> Ensemble {
        assert!(
            n >= 2,
            "an ensemble has at least two members; use Server for one"
        );
        let flavor = Flavor::for_settings(settings);
        let launches = cluster(n, settings).into_iter().map(|spec| {
            let flavor = flavor.clone();
            async move { Node::launch(spec, &flavor).await }
        });
        let nodes = join_all(launches).await;
        let ensemble = Ensemble { nodes };
        ensemble.wait_quorum().await;
        ensemble
    }

    /// Starts `n` servers of which the first `initial` form the ensemble, for tests of
    /// dynamic reconfiguration (the settings must enable it: `reconfigEnabled=true` and a
    /// super user). The others are spares: each is configured with the ensemble and itself
    /// and follows the leader without a vote until a `reconfig` adds it (as
    /// `server.<myid(i)>=127.0.0.1:<quorum>:<election>:participant;<client port>`, see
    /// [`member_line`](Self::member_line)). Waits (up to 60 s) for the ensemble's quorum
    /// and for each spare to serve.
    pub async fn launch_growable(n: u32, initial: u32, settings: &Settings) -> Ensemble {
        assert!(initial >= 2 && initial <= n, "2 <= initial <= n");
        let flavor = Flavor::for_settings(settings);
        let launches = growable_cluster(n, initial, settings)
            .into_iter()
            .map(|spec| {
                let flavor = flavor.clone();
                async move { Node::launch(spec, &flavor).await }
            });
        let ensemble = Ensemble {
            nodes: join_all(launches).await,
        };
        let first: Vec<usize> = (0..initial as usize).collect();
        ensemble.wait_members(&first, READY_TIMEOUT).await;
        for node in ensemble.nodes.iter().skip(initial as usize) {
            node.wait_until("serving", READY_TIMEOUT, |_| true).await;
        }
        ensemble
    }

    /// Member `i`'s `server.N=...` line for a `reconfig` (participant, its original client
    /// port, or `client_port` when given).
    pub fn member_line(&self, i: usize, client_port: Option<u16>) -> String {
        let spec = self.nodes[i].spec();
        let p = spec.ports();
        format!(
            "server.{}=127.0.0.1:{}:{}:participant;127.0.0.1:{}",
            spec.id,
            p.quorum,
            p.election,
            client_port.unwrap_or(p.client)
        )
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Always false: an ensemble has members.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// `127.0.0.1:P1,127.0.0.1:P2,...`, every member's client address.
    pub fn connect_string(&self) -> String {
        self.client_addrs()
            .iter()
            .map(SocketAddr::to_string)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The client address of member `i`.
    pub fn addr(&self, i: usize) -> SocketAddr {
        self.nodes[i].client_addr()
    }

    /// The TLS client address of member `i`, for an ensemble launched with
    /// [`Settings::secure_client_port`](crate::Settings::secure_client_port).
    pub fn secure_addr(&self, i: usize) -> Option<SocketAddr> {
        self.nodes[i].secure_addr()
    }

    /// Member `i`'s mode now, `None` if it does not answer `srvr` within 1 s or is not serving
    /// (killed, paused, looking for a leader).
    pub async fn mode(&self, i: usize) -> Option<ServerMode> {
        mode_of(self.addr(i), MODE_TIMEOUT).await
    }

    /// The index of the member that reports itself leader now, if any.
    pub async fn leader(&self) -> Option<usize> {
        let modes = join_all((0..self.len()).map(|i| self.mode(i))).await;
        modes.iter().position(|m| *m == Some(ServerMode::Leader))
    }

    /// Waits (up to 60 s) until every member is leader or follower; panics with the logs of the
    /// members that are not.
    pub async fn wait_quorum(&self) {
        let all: Vec<usize> = (0..self.len()).collect();
        self.wait_members(&all, READY_TIMEOUT).await;
    }

    /// Waits up to `limit` until each member in `members` is leader or follower and exactly one
    /// of them is leader; returns the leader's index. Panics with logs after `limit`.
    pub async fn wait_members(&self, members: &[usize], limit: Duration) -> usize {
        let deadline = Instant::now() + limit;
        loop {
            let modes = join_all(members.iter().map(|&i| self.mode(i))).await;
            let serving = modes
                .iter()
                .all(|m| matches!(m, Some(ServerMode::Leader) | Some(ServerMode::Follower)));
            let leaders: Vec<usize> = members
                .iter()
                .zip(&modes)
                .filter(|(_, m)| **m == Some(ServerMode::Leader))
                .map(|(&i, _)| i)
                .collect();
            if serving && leaders.len() == 1 {
                return leaders[0];
            }
            if Instant::now() >= deadline {
                let mut report = String::new();
                for (&i, m) in members.iter().zip(&modes) {
                    let logs = self.nodes[i].logs().await;
                    let tail: Vec<&str> = logs.lines().rev().take(25).collect();
                    report.push_str(&format!("--- member {i} ({m:?}):\n"));
                    for line in tail.into_iter().rev() {
                        report.push_str(line);
                        report.push('\n');
                    }
                }
                panic!("members {members:?} not in quorum after {limit:?}:\n{report}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits up to `limit` for a leader among the members other than `excluded` (e.g. the one
    /// just killed); returns its index.
    pub async fn wait_new_leader(&self, excluded: usize, limit: Duration) -> usize {
        let others: Vec<usize> = (0..self.len()).filter(|&i| i != excluded).collect();
        self.wait_members(&others, limit).await
    }

    /// Kills member `i` (SIGKILL: a crash).
    pub async fn kill(&self, i: usize) {
        self.nodes[i].kill().await;
    }

    /// Stops member `i` gracefully (SIGTERM; SIGKILL after 10 s).
    pub async fn stop(&self, i: usize) {
        self.nodes[i].stop().await;
    }

    /// Starts member `i` again after [`kill`](Self::kill)/[`stop`](Self::stop) (same ports and
    /// data) and waits (up to 60 s) until it answers `srvr` with any mode (it may be read-only
    /// when there is no quorum).
    pub async fn start(&self, i: usize) {
        self.nodes[i].start().await;
        self.nodes[i]
            .wait_until("serving", READY_TIMEOUT, |_| true)
            .await;
    }

    /// [`kill`](Self::kill) then [`start`](Self::start).
    pub async fn restart(&self, i: usize) {
        self.kill(i).await;
        self.start(i).await;
    }

    /// Freezes member `i`: TCP connects still succeed, nothing is answered.
    pub async fn pause(&self, i: usize) {
        self.nodes[i].pause().await;
    }

    /// Unfreezes member `i`.
    pub async fn resume(&self, i: usize) {
        self.nodes[i].resume().await;
    }

    /// Member `i`'s log so far.
    pub async fn logs(&self, i: usize) -> String {
        self.nodes[i].logs().await
    }

    /// The `myid` of member `i` (`i + 1`).
    pub fn myid(&self, i: usize) -> u32 {
        self.nodes[i].spec().id
    }
}

impl ZkTarget for Ensemble {
    fn client_addrs(&self) -> Vec<SocketAddr> {
        (0..self.len()).map(|i| self.addr(i)).collect()
    }
}
