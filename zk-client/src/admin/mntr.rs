//! `mntr`.

use std::collections::BTreeMap;

use super::stats::Mode;
use super::{short, ParseError};

/// The answer to `mntr`: every `key<TAB>value` line, with the ones a health check reads
/// typed.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Monitor {
    /// `zk_version`.
    pub version: String,
    /// `zk_server_state`.
    pub mode: Mode,
    /// `zk_avg_latency`, ms.
    pub avg_latency: f64,
    /// `zk_outstanding_requests`.
    pub outstanding_requests: u64,
    /// `zk_num_alive_connections`.
    pub alive_connections: u64,
    /// `zk_znode_count`.
    pub znode_count: u64,
    /// `zk_watch_count`.
    pub watch_count: u64,
    /// `zk_ephemerals_count`.
    pub ephemerals_count: u64,
    /// `zk_approximate_data_size`, bytes.
    pub approximate_data_size: u64,
    /// Leader only: `zk_synced_followers` (voting followers in sync).
    pub synced_followers: Option<u64>,
    /// Leader only: `zk_pending_syncs`.
    pub pending_syncs: Option<u64>,
    /// `zk_quorum_size` (3.6+): voting members of the config.
    pub quorum_size: Option<u64>,
    /// Every line, key to value as written.
    pub values: BTreeMap<String, String>,
    /// The whole answer.
    pub raw: String,
}

impl Monitor {
    /// Parses `mntr`'s answer.
    /// Parses the answer's text (for answers obtained another way, e.g. by `nc`).
    ///
    /// # Errors
    ///
    /// [`ParseError`] saying what did not parse.
    pub fn parse(text: &str) -> Result<Monitor, ParseError> {
        Self::parse_text(text).map_err(ParseError)
    }

    pub(crate) fn parse_text(text: &str) -> Result<Monitor, String> {
        let mut values = BTreeMap::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let Some((key, value)) = line.split_once('\t') else {
                return Err(format!("not key<TAB>value: {:?}", short(line)));
            };
            values.insert(key.trim().to_owned(), value.trim().to_owned());
        }
        let text_of = |key: &str| {
            values
                .get(key)
                .cloned()
                .ok_or_else(|| format!("no {key} in {:?}", short(text)))
        };
        let u64_of = |key: &str| -> Result<u64, String> {
            let v = text_of(key)?;
            v.parse().map_err(|_| format!("{key} = {v:?}: not a count"))
        };
        let opt = |key: &str| values.get(key).and_then(|v| v.parse::<u64>().ok());
        let avg_latency = text_of("zk_avg_latency")?;
        Ok(Monitor {
            version: text_of("zk_version")?,
            mode: Mode::parse(&text_of("zk_server_state")?),
            avg_latency: avg_latency
                .parse()
                .map_err(|_| format!("zk_avg_latency = {avg_latency:?}: not a number"))?,
            outstanding_requests: u64_of("zk_outstanding_requests")?,
            alive_connections: u64_of("zk_num_alive_connections")?,
            znode_count: u64_of("zk_znode_count")?,
            watch_count: u64_of("zk_watch_count")?,
            ephemerals_count: u64_of("zk_ephemerals_count")?,
            approximate_data_size: u64_of("zk_approximate_data_size")?,
            synced_followers: opt("zk_synced_followers"),
            pending_syncs: opt("zk_pending_syncs"),
            quorum_size: opt("zk_quorum_size"),
            values,
            raw: text.to_owned(),
        })
    }

    /// The value of `key` as written (e.g. `zk_open_file_descriptor_count`).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }

    /// The value of `key` as a number (counters, gauges, averages).
    pub fn get_f64(&self, key: &str) -> Option<f64> {
        self.get(key)?.parse().ok()
    }
}
