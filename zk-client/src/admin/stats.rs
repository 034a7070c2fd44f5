//! `srvr` and `stat`.

use std::fmt;

use super::{short, ParseError};

/// What a server is doing (`Mode:` of `srvr`, `zk_server_state` of `mntr`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Mode {
    /// The ensemble's leader.
    Leader,
    /// A voting member following the leader.
    Follower,
    /// A non-voting member.
    Observer,
    /// A single server (`standaloneEnabled`, one member).
    Standalone,
    /// An ensemble member without quorum serving reads (`readonlymode.enabled`).
    ReadOnly,
    /// A mode this client does not know, as written.
    Other(String),
}

impl Mode {
    /// Parses `leader`, `follower`, `observer`, `standalone`, `read-only` (also `mntr`'s
    /// `read_only`).
    pub fn parse(s: &str) -> Mode {
        match s.trim() {
            "leader" => Mode::Leader,
            "follower" => Mode::Follower,
            "observer" => Mode::Observer,
            "standalone" => Mode::Standalone,
            "read-only" | "read_only" | "readonly" => Mode::ReadOnly,
            other => Mode::Other(other.to_owned()),
        }
    }

    /// Whether a server in this mode serves writes (leader, follower, observer, standalone).
    pub fn is_serving_writes(&self) -> bool {
        matches!(
            self,
            Mode::Leader | Mode::Follower | Mode::Observer | Mode::Standalone
        )
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Leader => "leader",
            Mode::Follower => "follower",
            Mode::Observer => "observer",
            Mode::Standalone => "standalone",
            Mode::ReadOnly => "read-only",
            Mode::Other(s) => s,
        })
    }
}

/// The answer to `srvr` (or `stat`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ServerStats {
    /// `Zookeeper version:` (e.g. `3.8.0-..., built on ...`).
    pub version: String,
    /// Smallest request latency, ms.
    pub latency_min: f64,
    /// Average request latency, ms.
    pub latency_avg: f64,
    /// Largest request latency, ms.
    pub latency_max: f64,
    /// Packets received.
    pub received: u64,
    /// Packets sent.
    pub sent: u64,
    /// Open client connections (this exchange's own included).
    pub connections: u64,
    /// Requests queued.
    pub outstanding: u64,
    /// The last zxid the server has seen.
    pub zxid: i64,
    /// The mode.
    pub mode: Mode,
    /// Number of znodes.
    pub node_count: u64,
    /// `stat` only: one line per client connection, as written
    /// (` /127.0.0.1:5000[1](queued=0,recved=3,sent=3)`); empty for `srvr`.
    pub clients: Vec<String>,
    /// The whole answer.
    pub raw: String,
}

impl ServerStats {
    /// Parses the answer to `srvr` or `stat`.
    /// Parses the answer's text (for answers obtained another way, e.g. by `nc`).
    ///
    /// # Errors
    ///
    /// [`ParseError`] saying what did not parse.
    pub fn parse(text: &str) -> Result<ServerStats, ParseError> {
        Self::parse_text(text).map_err(ParseError)
    }

    pub(crate) fn parse_text(text: &str) -> Result<ServerStats, String> {
        let mut version = None;
        let mut latency = None;
        let mut counters: [Option<u64>; 5] = [None; 5];
        let mut zxid = None;
        let mut mode = None;
        let mut clients = Vec::new();
        let mut in_clients = false;
        for line in text.lines() {
            if in_clients {
                if line.trim().is_empty() {
                    in_clients = false;
                } else {
                    clients.push(line.trim().to_owned());
                }
                continue;
            }
            if line.trim() == "Clients:" {
                in_clients = true;
                continue;
            }
            let Some((key, value)) = line.split_once(": ") else {
                continue;
            };
            let value = value.trim();
            let number = |v: &str| {
                v.parse::<u64>()
                    .map_err(|_| format!("{key}: not a number: {:?}", short(v)))
            };
            match key {
                "Zookeeper version" => version = Some(value.to_owned()),
                "Latency min/avg/max" => latency = Some(parse_latency(value)?),
                "Received" => counters[0] = Some(number(value)?),
                "Sent" => counters[1] = Some(number(value)?),
                "Connections" => counters[2] = Some(number(value)?),
                "Outstanding" => counters[3] = Some(number(value)?),
                "Node count" => counters[4] = Some(number(value)?),
                "Zxid" => zxid = Some(parse_hex(value)?),
                "Mode" => mode = Some(Mode::parse(value)),
                _ => {}
            }
        }
        let missing = |what: &str| format!("no {what:?} line in {:?}", short(text));
        let (latency_min, latency_avg, latency_max) =
            latency.ok_or_else(|| missing("Latency min/avg/max"))?;
        let [received, sent, connections, outstanding, node_count] = counters;
        Ok(ServerStats {
            version: version.ok_or_else(|| missing("Zookeeper version"))?,
            latency_min,
            latency_avg,
            latency_max,
            received: received.ok_or_else(|| missing("Received"))?,
            sent: sent.ok_or_else(|| missing("Sent"))?,
            connections: connections.ok_or_else(|| missing("Connections"))?,
            outstanding: outstanding.ok_or_else(|| missing("Outstanding"))?,
            zxid: zxid.ok_or_else(|| missing("Zxid"))?,
            mode: mode.ok_or_else(|| missing("Mode"))?,
            node_count: node_count.ok_or_else(|| missing("Node count"))?,
            clients,
            raw: text.to_owned(),
        })
    }
}

/// `0/0.3488/12`.
fn parse_latency(v: &str) -> Result<(f64, f64, f64), String> {
    let bad = || format!("latency is not min/avg/max: {:?}", short(v));
    let mut parts = v.split('/').map(|p| p.trim().parse::<f64>());
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(Ok(a)), Some(Ok(b)), Some(Ok(c)), None) => Ok((a, b, c)),
        _ => Err(bad()),
    }
}

/// `0x100000003` (a zxid may use all 64 bits).
pub(crate) fn parse_hex(v: &str) -> Result<i64, String> {
    let digits = v
        .trim()
        .strip_prefix("0x")
        .ok_or_else(|| format!("not 0x-hex: {:?}", short(v)))?;
    u64::from_str_radix(digits, 16)
        .map(|n| n as i64)
        .map_err(|_| format!("not 0x-hex: {:?}", short(v)))
}
