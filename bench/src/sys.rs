//! Process measurements: CPU time and context switches (getrusage), resident memory
//! (/proc/self/status), and the server's watch-notification counters (`mntr`).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use nix::sys::resource::{getrusage, UsageWho};
use nix::sys::time::TimeValLike;

/// What one workload run cost this process.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sample {
    /// Operations completed (as defined by the workload).
    pub(crate) ops: u64,
    /// Wall time of the measured part.
    pub(crate) wall: Duration,
    /// user + sys CPU time of the whole process during the measured part.
    pub(crate) cpu: Duration,
    /// The kernel's part of `cpu` (system time).
    pub(crate) sys: Duration,
    /// Voluntary context switches (the process went to sleep waiting for something).
    pub(crate) vcsw: i64,
    /// Requests the server received (`zk_packets_received` of `mntr`) during the run.
    pub(crate) server_packets: Option<f64>,
    /// Log fsyncs of the server (`zk_cnt_fsynctime`) during the run.
    pub(crate) server_fsyncs: Option<f64>,
}

impl Sample {
    pub(crate) fn ops_per_sec(&self) -> f64 {
        self.ops as f64 / self.wall.as_secs_f64().max(1e-9)
    }

    /// Milliseconds of client CPU per 1,000 operations (= microseconds per operation).
    pub(crate) fn cpu_ms_per_1k(&self) -> f64 {
        self.cpu.as_secs_f64() * 1e6 / (self.ops.max(1) as f64)
    }

    /// Share of the CPU time spent in the kernel (0..1).
    pub(crate) fn sys_share(&self) -> f64 {
        self.sys.as_secs_f64() / self.cpu.as_secs_f64().max(1e-9)
    }

    pub(crate) fn vcsw_per_op(&self) -> f64 {
        self.vcsw as f64 / (self.ops.max(1) as f64)
    }

    /// Requests the server received per operation (NaN when unknown).
    pub(crate) fn requests_per_op(&self) -> f64 {
        self.server_packets.unwrap_or(f64::NAN) / (self.ops.max(1) as f64)
    }

    /// Server log fsyncs per operation (NaN when unknown).
    pub(crate) fn fsyncs_per_op(&self) -> f64 {
        self.server_fsyncs.unwrap_or(f64::NAN) / (self.ops.max(1) as f64)
    }
}

#[derive(Debug, Clone, Copy)]
struct Usage {
    cpu: Duration,
    sys: Duration,
    vcsw: i64,
}

fn usage() -> Usage {
    match getrusage(UsageWho::RUSAGE_SELF) {
        Ok(u) => {
            let sys = u.system_time().num_microseconds().max(0) as u64;
            let micros = u.user_time().num_microseconds() + u.system_time().num_microseconds();
            Usage {
                cpu: Duration::from_micros(micros.max(0) as u64),
                sys: Duration::from_micros(sys),
                vcsw: u.voluntary_context_switches(),
            }
        }
        Err(_) => Usage {
            cpu: Duration::ZERO,
            sys: Duration::ZERO,
            vcsw: 0,
        },
    }
}

/// Measures the process (and the server's request and fsync counters) around the measured
/// part of a workload. The counters are read outside the timed span.
#[derive(Debug)]
pub(crate) struct Meter {
    addr: SocketAddr,
    server: Option<(f64, f64)>,
    start: Instant,
    usage: Usage,
}

impl Meter {
    pub(crate) async fn start(addr: SocketAddr) -> Meter {
        let server = server_counters(addr).await;
        Meter {
            addr,
            server,
            usage: usage(),
            start: Instant::now(),
        }
    }

    pub(crate) async fn stop(self, ops: u64) -> Sample {
        let wall = self.start.elapsed();
        let end = usage();
        let server = server_counters(self.addr).await;
        let (server_packets, server_fsyncs) = server_delta(self.server, server);
        Sample {
            ops,
            wall,
            cpu: end.cpu.saturating_sub(self.usage.cpu),
            sys: end.sys.saturating_sub(self.usage.sys),
            vcsw: end.vcsw - self.usage.vcsw,
            server_packets,
            server_fsyncs,
        }
    }
}

/// The increase of the server's (packets received, fsyncs) between two [`server_counters`]
/// reads, when both answered.
pub(crate) fn server_delta(
    before: Option<(f64, f64)>,
    after: Option<(f64, f64)>,
) -> (Option<f64>, Option<f64>) {
    match (before, after) {
        (Some((p0, f0)), Some((p1, f1))) => (Some(p1 - p0), Some(f1 - f0)),
        _ => (None, None),
    }
}

/// `zk_packets_received` and `zk_cnt_fsynctime` from one `mntr`, if the server answers.
pub(crate) async fn server_counters(addr: SocketAddr) -> Option<(f64, f64)> {
    let out = integration_tests::probe::four_letter_word(addr, "mntr", Duration::from_secs(5))
        .await
        .ok()?;
    let value = |key: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().parse::<f64>().ok())
    };
    Some((
        value("zk_packets_received\t")?,
        value("zk_cnt_fsynctime\t")?,
    ))
}

/// Resident set size of this process in KiB (`VmRSS` of /proc/self/status).
pub(crate) fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// The `mntr` counters whose sum is the number of watch notifications the server has fired.
pub(crate) const WATCH_COUNTERS: [&str; 4] = [
    "zk_sum_node_created_watch_count",
    "zk_sum_node_deleted_watch_count",
    "zk_sum_node_changed_watch_count",
    "zk_sum_node_children_watch_count",
];

/// Sum of [`WATCH_COUNTERS`] from one `mntr` of the server.
pub(crate) async fn notifications_fired(addr: SocketAddr) -> Result<u64, String> {
    let out = integration_tests::probe::four_letter_word(addr, "mntr", Duration::from_secs(5))
        .await
        .map_err(|e| format!("mntr: {e}"))?;
    let mut total = 0u64;
    let mut found = 0;
    for line in out.lines() {
        let mut parts = line.split_whitespace();
        let (Some(key), Some(value)) = (parts.next(), parts.next()) else {
            continue;
        };
        if WATCH_COUNTERS.contains(&key) {
            found += 1;
            // Summary values may print as integers or decimals.
            total += value.parse::<f64>().map_err(|e| format!("{key}: {e}"))? as u64;
        }
    }
    if found != WATCH_COUNTERS.len() {
        return Err(format!(
            "mntr printed {found} of the {} watch counters",
            WATCH_COUNTERS.len()
        ));
    }
    Ok(total)
}

/// Median of a non-empty list (mean of the middle two for an even count).
pub(crate) fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(|a, b| a.total_cmp(b));
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}
