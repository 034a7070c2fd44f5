//! One server of either backend, and how to tell what it is doing (`srvr`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::NodeSpec;
use crate::docker::DockerNode;
use crate::probe::four_letter_word;
use crate::process::ProcessNode;
use crate::runtime::on_bg;

/// How long the harness waits for a server to serve (or an ensemble to form) before panicking.
pub const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// Bound of one `srvr` exchange while polling.
const POLL_SRVR_TIMEOUT: Duration = Duration::from_secs(2);
const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// The role a server reports in the `Mode:` line of `srvr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerMode {
    /// A single server (`standaloneEnabled=true` and one member).
    Standalone,
    /// The ensemble's leader.
    Leader,
    /// A follower of the leader.
    Follower,
    /// An observer.
    Observer,
    /// A member without quorum serving read-only sessions (`readonlymode.enabled`).
    ReadOnly,
}

impl ServerMode {
    /// Parses the output of `srvr` (`None` when it has no known `Mode:` line, e.g. "This
    /// ZooKeeper instance is not currently serving requests").
    pub fn parse_srvr(srvr: &str) -> Option<ServerMode> {
        let mode = srvr.lines().find_map(|l| l.strip_prefix("Mode:"))?.trim();
        match mode {
            "standalone" => Some(ServerMode::Standalone),
            "leader" => Some(ServerMode::Leader),
            "follower" => Some(ServerMode::Follower),
            "observer" => Some(ServerMode::Observer),
            "read-only" => Some(ServerMode::ReadOnly),
            _ => None,
        }
    }

    /// Leader, follower, observer or standalone: serving read-write sessions.
    pub fn is_read_write(self) -> bool {
        self != ServerMode::ReadOnly
    }
}

/// The current mode of the server at `addr`, or `None` if it does not answer `srvr` within
/// `limit` or is not serving.
pub async fn mode_of(addr: SocketAddr, limit: Duration) -> Option<ServerMode> {
    four_letter_word(addr, "srvr", limit)
        .await
        .ok()
        .as_deref()
        .and_then(ServerMode::parse_srvr)
}

/// Polls `srvr` until `ok(mode)` holds or `limit` passes. Returns the last mode seen on success.
pub(crate) async fn wait_mode(
    addr: SocketAddr,
    limit: Duration,
    ok: impl Fn(ServerMode) -> bool,
) -> Result<ServerMode, Option<ServerMode>> {
    let deadline = Instant::now() + limit;
    let mut last = None;
    while Instant::now() < deadline {
        last = mode_of(addr, POLL_SRVR_TIMEOUT).await;
        if let Some(mode) = last.filter(|m| ok(*m)) {
            return Ok(mode);
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
    Err(last)
}

#[derive(Debug)]
enum Backend {
    Docker(DockerNode),
    Process(Arc<ProcessNode>),
}

/// One server, in a container or a local process.
#[derive(Debug)]
pub(crate) struct Node {
    spec: NodeSpec,
    backend: Backend,
}

/// Which backend to use, from `ZK_HARNESS` (`docker`, the default, or `process`) and `ZK_IMAGE`.
#[derive(Debug, Clone)]
pub(crate) enum Flavor {
    Docker(String),
    Process,
}

/// The image run by default (built by `scripts/build-zk-image.sh`).
pub const DEFAULT_IMAGE: &str = "zk-local:3.8.0";

impl Flavor {
    /// The backend for servers with `settings`: local processes when they need them (see
    /// `Settings::needs_process`), else [`Flavor::from_env`].
    pub(crate) fn for_settings(settings: &crate::Settings) -> Flavor {
        if settings.needs_process() {
            Flavor::Process
        } else {
            Flavor::from_env()
        }
    }

    pub(crate) fn from_env() -> Flavor {
        match std::env::var("ZK_HARNESS").as_deref() {
            Ok("process") => Flavor::Process,
            Ok("docker") | Ok("") | Err(_) => {
                Flavor::Docker(std::env::var("ZK_IMAGE").unwrap_or_else(|_| DEFAULT_IMAGE.into()))
            }
            Ok(other) => panic!("ZK_HARNESS={other}: expected `docker` (default) or `process`"),
        }
    }
}

impl Node {
    /// Starts the server of `spec`, without waiting for it to serve.
    pub(crate) async fn launch(spec: NodeSpec, flavor: &Flavor) -> Node {
        let backend = match flavor {
            Flavor::Docker(image) => {
                Backend::Docker(DockerNode::launch(spec.clone(), image.clone()).await)
            }
            Flavor::Process => {
                let s = spec.clone();
                Backend::Process(Arc::new(
                    on_bg(async move { ProcessNode::launch(&s) }).await,
                ))
            }
        };
        Node { spec, backend }
    }

    pub(crate) fn spec(&self) -> &NodeSpec {
        &self.spec
    }

    pub(crate) fn client_addr(&self) -> SocketAddr {
        self.spec.client_addr()
    }

    pub(crate) fn secure_addr(&self) -> Option<SocketAddr> {
        self.spec.secure_addr()
    }

    async fn blocking(&self, f: impl FnOnce(&ProcessNode) + Send + 'static) {
        if let Backend::Process(p) = &self.backend {
            let p = Arc::clone(p);
            on_bg(async move {
                tokio::task::spawn_blocking(move || f(&p))
                    .await
                    .expect("process op")
            })
            .await;
        }
    }

    pub(crate) async fn kill(&self) {
        match &self.backend {
            Backend::Docker(d) => d.kill().await,
            Backend::Process(_) => self.blocking(ProcessNode::kill).await,
        }
    }

    pub(crate) async fn stop(&self) {
        match &self.backend {
            Backend::Docker(d) => d.stop().await,
            Backend::Process(_) => self.blocking(ProcessNode::stop).await,
        }
    }

    pub(crate) async fn start(&self) {
        match &self.backend {
            Backend::Docker(d) => d.start().await,
            Backend::Process(_) => self.blocking(ProcessNode::start).await,
        }
    }

    pub(crate) async fn pause(&self) {
        match &self.backend {
            Backend::Docker(d) => d.pause().await,
            Backend::Process(_) => self.blocking(ProcessNode::pause).await,
        }
    }

    pub(crate) async fn resume(&self) {
        match &self.backend {
            Backend::Docker(d) => d.resume().await,
            Backend::Process(_) => self.blocking(ProcessNode::resume).await,
        }
    }

    pub(crate) async fn logs(&self) -> String {
        match &self.backend {
            Backend::Docker(d) => d.logs().await,
            Backend::Process(p) => p.logs(),
        }
    }

    /// Waits until `ok(mode)` holds, panicking with the server's log tail after `limit`.
    pub(crate) async fn wait_until(
        &self,
        what: &str,
        limit: Duration,
        ok: impl Fn(ServerMode) -> bool,
    ) -> ServerMode {
        match wait_mode(self.client_addr(), limit, ok).await {
            Ok(mode) => mode,
            Err(last) => {
                let logs = self.logs().await;
                let tail: Vec<&str> = logs.lines().rev().take(60).collect();
                let tail: Vec<&str> = tail.into_iter().rev().collect();
                panic!(
                    "server {} ({}) not {what} after {limit:?} (last mode: {last:?}); log tail:\n{}",
                    self.spec.id,
                    self.client_addr(),
                    tail.join("\n")
                );
            }
        }
    }
}
