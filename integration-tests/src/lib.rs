//! Test harness for running this workspace's client against real ZooKeeper servers.
//!
//! * [`standalone`]: one server shared by every test of a test binary; give each test its own
//!   subtree with [`chroot`]. [`fresh_standalone`]: a dedicated server a test may kill or pause.
//! * [`ensemble`]: three members with `kill`/`stop`/`start`/`pause`/`resume`, `leader()` and
//!   quorum waits.
//! * [`Proxy`]: a ZooKeeper-aware TCP proxy injecting network faults (blackhole, refuse, cut,
//!   delay, and dropping the reply of a create).
//! * [`probe`]: a tiny raw-protocol client (handshake, create/exists/getData/delete,
//!   `closeSession`, four-letter words) and [`probe::expire_session`].
//! * [`kit`] and its [`prelude`]: what the test binaries share (time limits, the prologue,
//!   `connect`, `managed`, Java peers), imported with `use integration_tests::prelude::*;`.
//!
//! Servers run on `127.0.0.1` only: docker containers on the host network (testcontainers,
//! image `zk-local:3.8.0` built by `scripts/build-zk-image.sh`, or `ZK_IMAGE`), or with
//! `ZK_HARNESS=process` plain local `java` processes. Config: `tickTime=500` (sessions of 1 s to
//! 60 s), TTL nodes enabled, read-only mode enabled, every four-letter word allowed. A test that
//! cannot get a server panics naming the command to run; it never skips.
//!
//! ```no_run
//! use integration_tests::{chroot, standalone};
//!
//! #[tokio::test]
//! async fn creates_a_node() {
//!     let server = standalone().await;
//!     let root = chroot(server, "creates_a_node").await;
//!     let hosts = format!("{}{root}", server.connect_string());
//!     // connect the client under test to `hosts` ...
//! }
//! ```
#![forbid(unsafe_code)]

use std::net::SocketAddr;

mod chroot;
mod config;
mod docker;
mod ensemble;
mod node;
mod process;
mod runtime;
mod scratch;
mod server;

pub mod kdc;
pub mod kit;
pub mod pki;
pub mod probe;
pub mod proxy;

pub use chroot::chroot;
pub use config::Settings;
pub use ensemble::{ensemble, Ensemble};
pub use node::{mode_of, ServerMode, DEFAULT_IMAGE, READY_TIMEOUT};
pub use probe::expire_session;
pub use proxy::Proxy;
pub use scratch::ScratchDir;
pub use server::{fresh_standalone, standalone, Server};

/// Everything a test file needs from the kit, in one import: the kit's helpers and the
/// harness's servers, proxy and probes.
pub mod prelude {
    pub use crate::kit::*;
    pub use crate::{chroot, ensemble, expire_session, fresh_standalone, standalone};
    pub use crate::{Ensemble, Proxy, Server, ZkTarget};
}

/// For programs that keep a server for other processes (bench's `serve` modes): returns when
/// stdin is closed or after `limit`, whichever is first.
pub async fn serve_until_stdin_closes(limit: std::time::Duration) {
    let stdin_closed = tokio::task::spawn_blocking(|| {
        let mut sink = String::new();
        // Bounded by stdin: ends at EOF or on a read error.
        while std::io::stdin().read_line(&mut sink).is_ok_and(|n| n > 0) {
            sink.clear();
        }
    });
    let _ = tokio::time::timeout(limit, stdin_closed).await;
}

/// Something clients can connect to: a [`Server`], an [`Ensemble`] or a [`Proxy`].
pub trait ZkTarget {
    /// The client addresses, in connect-string order.
    fn client_addrs(&self) -> Vec<SocketAddr>;

    /// `host:port[,host:port...]` followed by `chroot` (which may be empty).
    fn hosts(&self, chroot: &str) -> String {
        let addrs: Vec<String> = self
            .client_addrs()
            .iter()
            .map(SocketAddr::to_string)
            .collect();
        format!("{}{chroot}", addrs.join(","))
    }
}
