//! The workloads, one module each, named by [`Workload`].
//!
//! Every client workload sets up outside the measured part (sessions, nodes), measures only
//! the operations with a [`Meter`](crate::sys::Meter), and tears down after. Every wait is
//! bounded by [`Limits`].

mod bare_lock;
pub(crate) mod c_client;
pub(crate) mod cache;
mod common;
mod floor;
pub(crate) mod tls;
mod w1;
mod w2;
mod w3;
mod w4;
pub(crate) mod w5;

pub(crate) use common::{connect_ours, connect_theirs, ensure_node, Limits, Which};
pub(crate) use w5::Herd;

use crate::sys::Sample;
use crate::{Ctx, Res, Sizes};

/// One workload of the benchmark (`--workloads` takes their names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Workload {
    /// Sequential getData.
    W1,
    /// Pipelined getData, one session.
    W2,
    /// Diagnostic for W2: zk-client reading every reply as it arrives.
    W2eager,
    /// Pipelined getData over several sessions.
    W2x,
    /// Sequential create + delete.
    W3,
    /// Diagnostic for W3: its requests over a blocking socket, no client (the CPU floor).
    W3floor,
    /// Diagnostic for W3: its requests over tokio's socket in the bench's task, no client (the
    /// CPU floor of any tokio client).
    W3tokio,
    /// Lock hand-off between sessions.
    W4,
    /// Diagnostic for W4: a minimal lock written in the bench.
    W4bare,
    /// Diagnostic for W4: zk-recipes with `HandOff::Prepared`.
    W4prepared,
    /// The herd check and the hand-off latency of one release.
    W5,
    /// zk-proto encode/decode throughput.
    Codec,
    /// Memory per idle session.
    Mem,
    /// zk-client's W1 and W2 over TLS against plain TCP, on one server.
    Tls,
    /// Initial load of 10,000 and 100,000 nodes into zk_recipes' cache vs Java's CuratorCache.
    Cache,
    /// Anchor for W1: ZooKeeper's C client (`bench/c/zk_c_bench.c`), its own process.
    W1c,
    /// Anchor for W2: the C client's async API with W2's window, one session.
    W2c,
    /// Anchor for W3: the C client's plain create + delete.
    W3c,
}

/// The row label of the C client anchor.
const C_LABEL: &str = "C client (libzookeeper_mt)";

/// A workload's target, checked on the medians of the paired ratios.
pub(crate) struct Target {
    pub(crate) text: &'static str,
    pub(crate) check: fn(ops_ratio: f64, cpu_ratio: f64) -> bool,
}

impl Workload {
    pub(crate) const ALL: [Workload; 18] = [
        Workload::W1,
        Workload::W2,
        Workload::W2eager,
        Workload::W2x,
        Workload::W3,
        Workload::W3floor,
        Workload::W3tokio,
        Workload::W4,
        Workload::W4bare,
        Workload::W4prepared,
        Workload::W5,
        Workload::Codec,
        Workload::Mem,
        Workload::Tls,
        Workload::Cache,
        Workload::W1c,
        Workload::W2c,
        Workload::W3c,
    ];

    /// The workloads both clients run, back to back, in report order.
    pub(crate) const PAIRED: [Workload; 5] = [
        Workload::W1,
        Workload::W2,
        Workload::W2x,
        Workload::W3,
        Workload::W4,
    ];

    /// The zk-client-only diagnostics: (the workload whose table rows they join, row label).
    pub(crate) fn diagnostic(self) -> Option<(Workload, &'static str)> {
        match self {
            Workload::W2eager => Some((Workload::W2, "zk-client, batch_reads(false)")),
            Workload::W3floor => Some((Workload::W3, "floor: blocking socket, no client")),
            Workload::W3tokio => Some((Workload::W3, "floor: tokio socket, no client")),
            Workload::W4bare => Some((Workload::W4, "zk-client + bare lock in bench/")),
            Workload::W4prepared => Some((Workload::W4, "zk-recipes, HandOff::Prepared")),
            Workload::W1c => Some((Workload::W1, C_LABEL)),
            Workload::W2c => Some((Workload::W2, C_LABEL)),
            Workload::W3c => Some((Workload::W3, C_LABEL)),
            _ => None,
        }
    }

    /// Whether this row is an anchor (another client, its ratios ours / it) rather than a
    /// zk-client diagnostic.
    pub(crate) fn is_anchor(self) -> bool {
        matches!(self, Workload::W1c | Workload::W2c | Workload::W3c)
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Workload::W1 => "W1",
            Workload::W2 => "W2",
            Workload::W2eager => "W2eager",
            Workload::W2x => "W2x",
            Workload::W3 => "W3",
            Workload::W3floor => "W3floor",
            Workload::W3tokio => "W3tokio",
            Workload::W4 => "W4",
            Workload::W4bare => "W4bare",
            Workload::W4prepared => "W4prepared",
            Workload::W5 => "W5",
            Workload::Codec => "codec",
            Workload::Mem => "mem",
            Workload::Tls => "tls",
            Workload::Cache => "cache",
            Workload::W1c => "W1c",
            Workload::W2c => "W2c",
            Workload::W3c => "W3c",
        }
    }

    /// The workload called `name` (any case).
    pub(crate) fn parse(name: &str) -> Option<Workload> {
        Workload::ALL
            .into_iter()
            .find(|w| w.name().eq_ignore_ascii_case(name))
    }

    /// One measured run of a paired workload or a diagnostic (diagnostics run zk-client only,
    /// whatever `which` says).
    ///
    /// # Errors
    ///
    /// A failed or timed-out run, or a workload that yields no [`Sample`] (W5, codec, mem).
    pub(crate) async fn sample(self, ctx: &Ctx, which: Which, round: usize) -> Res<Sample> {
        match self {
            Workload::W1 => w1::run(ctx, which).await,
            Workload::W2 => w2::run(ctx, which, 1).await,
            Workload::W2x => w2::run(ctx, which, ctx.sizes.w2x_sessions).await,
            Workload::W2eager => w2::eager(ctx).await,
            Workload::W3 => w3::run(ctx, which, round).await,
            Workload::W3floor => floor::blocking(ctx, round).await,
            Workload::W3tokio => floor::tokio(ctx, round).await,
            Workload::W4 => w4::run(ctx, which, round).await,
            Workload::W4bare => w4::bare(ctx, round).await,
            Workload::W4prepared => w4::prepared(ctx, round).await,
            Workload::W1c => c_client::w1(ctx).await,
            Workload::W2c => c_client::w2(ctx).await,
            Workload::W3c => c_client::w3(ctx, round).await,
            Workload::W5 | Workload::Codec | Workload::Mem | Workload::Tls | Workload::Cache => {
                Err(format!("{} is not a sampled workload", self.name()).into())
            }
        }
    }

    /// The table's description of a paired workload.
    pub(crate) fn describe(self, s: &Sizes) -> String {
        match self {
            Workload::W1 => format!("W1 sequential getData, {} calls", s.w1_calls),
            Workload::W2 => format!(
                "W2 pipelined getData, 1 session, {} calls, {} outstanding",
                s.w2_calls, s.w2_window
            ),
            Workload::W2x => format!(
                "W2x pipelined getData, {} sessions, {} calls, {} outstanding in all",
                s.w2x_sessions, s.w2_calls, s.w2_window
            ),
            Workload::W3 => format!(
                "W3 sequential create+delete, {} pairs (ops = requests)",
                s.w3_pairs
            ),
            Workload::W4 => format!(
                "W4 lock hand-off, {} sessions x {} acquire+release (ops = acquisitions)",
                s.w4_sessions, s.w4_rounds
            ),
            other => other.name().to_owned(),
        }
    }

    /// The target of a paired workload.
    pub(crate) fn target(self) -> Target {
        match self {
            Workload::W1 | Workload::W3 => Target {
                text: "ops >= 1.0x, CPU <= 0.5x",
                check: |o, c| o >= 1.0 && c <= 0.5,
            },
            // "Match" on a server-capped workload: within 5% (the run-to-run noise is larger).
            Workload::W2 => Target {
                text: "ops >= 0.95x, CPU <= 0.35x",
                check: |o, c| o >= 0.95 && c <= 0.35,
            },
            Workload::W2x => Target {
                text: "ops >= 1.15x",
                check: |o, _| o >= 1.15,
            },
            // W4 (issue 23): a faster hand-off at half the other client's CPU.
            _ => Target {
                text: "ops >= 1.3x, CPU <= 0.5x",
                check: |o, c| o >= 1.3 && c <= 0.5,
            },
        }
    }
}
