//! A standalone server: the one shared by a test binary, or a dedicated one.

use std::net::SocketAddr;

use tokio::sync::OnceCell;

use crate::config::{cluster, Settings};
use crate::node::{mode_of, Flavor, Node, ServerMode, READY_TIMEOUT};
use crate::ZkTarget;

/// A standalone ZooKeeper server on `127.0.0.1` (a container on the host network, or a local
/// process with `ZK_HARNESS=process`). Dropping it removes the server.
#[derive(Debug)]
pub struct Server {
    node: Node,
}

/// The server shared by every test of this test binary, started on first use.
///
/// Use [`chroot`](crate::chroot) to give each test its own subtree. Never kill, stop or pause it
/// (use [`fresh_standalone`] for that): other tests run against it concurrently. It lives until
/// the test binary exits; then the harness' reaper (and `scripts/test.sh`) remove it.
pub async fn standalone() -> &'static Server {
    static SHARED: OnceCell<Server> = OnceCell::const_new();
    SHARED.get_or_init(Server::launch).await
}

/// A dedicated standalone server for one test (one that kills, stops or pauses it).
pub async fn fresh_standalone() -> Server {
    Server::launch().await
}

impl Server {
    /// Starts a standalone server and waits (up to 60 s) until it serves.
    pub async fn launch() -> Server {
        Server::launch_with(&Settings::default()).await
    }

    /// [`launch`](Self::launch) with non-default settings.
    pub async fn launch_with(settings: &Settings) -> Server {
        let spec = cluster(1, settings).remove(0);
        let node = Node::launch(spec, &Flavor::for_settings(settings)).await;
        let server = Server { node };
        server.wait_ready().await;
        server
    }

    /// `127.0.0.1:PORT`, the connect string of this server.
    pub fn connect_string(&self) -> String {
        self.addr().to_string()
    }

    /// The client address.
    pub fn addr(&self) -> SocketAddr {
        self.node.client_addr()
    }

    /// The TLS client address, for a server launched with
    /// [`Settings::secure_client_port`](crate::Settings::secure_client_port).
    pub fn secure_addr(&self) -> Option<SocketAddr> {
        self.node.secure_addr()
    }

    /// The `srvr` mode now (`None` if it does not answer within 2 s).
    pub async fn mode(&self) -> Option<ServerMode> {
        mode_of(self.addr(), std::time::Duration::from_secs(2)).await
    }

    /// Waits (up to 60 s) until the server answers `srvr` with `Mode: standalone`; panics with
    /// the server's log otherwise.
    pub async fn wait_ready(&self) {
        self.node
            .wait_until("serving", READY_TIMEOUT, |m| m == ServerMode::Standalone)
            .await;
    }

    /// Kills the server (SIGKILL: a crash; sessions survive in its data only as snapshots).
    pub async fn kill(&self) {
        self.node.kill().await;
    }

    /// Stops the server gracefully (SIGTERM; SIGKILL after 10 s).
    pub async fn stop(&self) {
        self.node.stop().await;
    }

    /// Starts the server again after [`kill`](Self::kill)/[`stop`](Self::stop), on the same port
    /// and data, and waits until it serves.
    pub async fn start(&self) {
        self.node.start().await;
        self.wait_ready().await;
    }

    /// [`kill`](Self::kill) then [`start`](Self::start).
    pub async fn restart(&self) {
        self.kill().await;
        self.start().await;
    }

    /// Freezes the server: TCP connects still succeed, nothing is answered (a hang).
    pub async fn pause(&self) {
        self.node.pause().await;
    }

    /// Unfreezes the server after [`pause`](Self::pause).
    pub async fn resume(&self) {
        self.node.resume().await;
    }

    /// The server's log so far.
    pub async fn logs(&self) -> String {
        self.node.logs().await
    }
}

impl ZkTarget for Server {
    fn client_addrs(&self) -> Vec<SocketAddr> {
        vec![self.addr()]
    }
}
