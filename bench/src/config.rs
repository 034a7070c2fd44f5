//! Workload sizes, time bounds and what every workload needs ([`Ctx`]).

use std::net::SocketAddr;
use std::time::Duration;

use crate::workloads::Limits;

/// Workload sizes (full run, or `--quick`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sizes {
    pub(crate) w1_calls: usize,
    pub(crate) w2_calls: usize,
    pub(crate) w2_window: usize,
    pub(crate) w2x_sessions: usize,
    pub(crate) w3_pairs: usize,
    pub(crate) w4_sessions: usize,
    pub(crate) w4_rounds: usize,
    pub(crate) w5_waiters: usize,
    pub(crate) w5_releases: usize,
    /// How long the W5 queue sits idle before the first measured release.
    pub(crate) w5_idle: Duration,
    pub(crate) idle_sessions: usize,
    pub(crate) codec_budget: Duration,
}

impl Sizes {
    pub(crate) fn full() -> Sizes {
        Sizes {
            w1_calls: 20_000,
            w2_calls: 200_000,
            w2_window: 1_000,
            w2x_sessions: 8,
            w3_pairs: 5_000,
            w4_sessions: 8,
            w4_rounds: 200,
            w5_waiters: 50,
            w5_releases: 3,
            w5_idle: Duration::from_secs(3),
            idle_sessions: 200,
            codec_budget: Duration::from_millis(500),
        }
    }

    pub(crate) fn quick() -> Sizes {
        Sizes {
            w1_calls: 2_000,
            w2_calls: 20_000,
            w2_window: 1_000,
            w2x_sessions: 8,
            w3_pairs: 500,
            w4_sessions: 8,
            w4_rounds: 20,
            w5_waiters: 50,
            w5_releases: 1,
            w5_idle: Duration::from_millis(500),
            idle_sessions: 50,
            codec_budget: Duration::from_millis(100),
        }
    }
}

/// What every workload needs.
#[derive(Debug, Clone)]
pub(crate) struct Ctx {
    /// `host:port` for both clients.
    pub(crate) connect: String,
    /// The server's address, for four-letter words.
    pub(crate) addr: SocketAddr,
    /// Our subtree on the server.
    pub(crate) root: String,
    pub(crate) sizes: Sizes,
    pub(crate) limits: Limits,
    /// zk-client connects over TLS with these (the `tls` workload only).
    pub(crate) tls: Option<zk_client::TlsOptions>,
    /// zookeeper-client connects over TLS with these (the `tls` workload only).
    pub(crate) theirs_tls: Option<zookeeper_client::TlsOptions>,
}

impl Ctx {
    /// The 100-byte node every getData workload reads.
    pub(crate) fn data_node(&self) -> String {
        format!("{}/data100", self.root)
    }
}

/// Time bounds of a full or a `--quick` run.
pub(crate) fn limits(quick: bool) -> Limits {
    Limits {
        workload: Duration::from_secs(if quick { 60 } else { 180 }),
        step: Duration::from_secs(30),
    }
}
