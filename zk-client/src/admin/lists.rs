//! `cons`, `wchs`, `wchc`, `envi` and `conf`.

use std::collections::BTreeMap;

use super::stats::parse_hex;
use super::{short, ParseError};
use crate::ensemble::EnsembleConfig;

/// One entry of `cons`: a client connection and, once it has one, its session.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Connection {
    /// The client's address as the server sees it (`/127.0.0.1:40000`).
    pub remote: String,
    /// Packets queued for the client.
    pub queued: u64,
    /// Packets received from the client.
    pub received: u64,
    /// Packets sent to the client.
    pub sent: u64,
    /// The session id (`sid`); `None` for a connection without a session (a four-letter word,
    /// a handshake in progress).
    pub session_id: Option<i64>,
    /// The last operation (`lop`, e.g. `PING`, `GETD`).
    pub last_operation: Option<String>,
    /// The negotiated session timeout in ms (`to`).
    pub timeout_ms: Option<u64>,
    /// Every `key=value` of the entry, as written.
    pub fields: BTreeMap<String, String>,
}

impl Connection {
    /// Parses `cons`'s answer: one entry per non-empty line.
    /// Parses the answer's text (for answers obtained another way, e.g. by `nc`).
    ///
    /// # Errors
    ///
    /// [`ParseError`] saying what did not parse.
    pub fn parse_all(text: &str) -> Result<Vec<Connection>, ParseError> {
        Self::parse_all_text(text).map_err(ParseError)
    }

    pub(crate) fn parse_all_text(text: &str) -> Result<Vec<Connection>, String> {
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(Connection::parse)
            .collect()
    }

    /// ` /127.0.0.1:40000[1](queued=0,recved=3,sent=3,sid=0x1000...,lop=PING,...)`
    fn parse(line: &str) -> Result<Connection, String> {
        let bad = |why: &str| format!("{why}: {:?}", short(line));
        let line = line.trim();
        let open = line.find("](").ok_or_else(|| bad("no [ops](...)"))?;
        let head = line.get(..open).unwrap_or_default();
        let remote = head.rfind('[').and_then(|i| head.get(..i));
        let remote = remote.ok_or_else(|| bad("no [ops]"))?.to_owned();
        let body = line
            .get(open + 2..)
            .and_then(|b| b.strip_suffix(')'))
            .ok_or_else(|| bad("unclosed ("))?;
        let mut fields = BTreeMap::new();
        for pair in body.split(',').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').ok_or_else(|| bad("not key=value"))?;
            fields.insert(k.trim().to_owned(), v.trim().to_owned());
        }
        let count = |k: &str| -> Result<u64, String> {
            let v = fields.get(k).ok_or_else(|| bad(&format!("no {k}")))?;
            v.parse().map_err(|_| bad(&format!("{k} is not a count")))
        };
        Ok(Connection {
            remote,
            queued: count("queued")?,
            received: count("recved")?,
            sent: count("sent")?,
            session_id: match fields.get("sid") {
                Some(sid) => Some(parse_hex(sid)?),
                None => None,
            },
            last_operation: fields.get("lop").cloned(),
            timeout_ms: fields.get("to").and_then(|v| v.parse().ok()),
            fields,
        })
    }
}

/// The answer to `wchs`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WatchSummary {
    /// Connections with at least one watch.
    pub connections: u64,
    /// Distinct watched paths.
    pub paths: u64,
    /// Watches in total.
    pub total: u64,
    /// The whole answer.
    pub raw: String,
}

impl WatchSummary {
    /// `3 connections watching 5 paths\nTotal watches:7`
    /// Parses the answer's text (for answers obtained another way, e.g. by `nc`).
    ///
    /// # Errors
    ///
    /// [`ParseError`] saying what did not parse.
    pub fn parse(text: &str) -> Result<WatchSummary, ParseError> {
        Self::parse_text(text).map_err(ParseError)
    }

    pub(crate) fn parse_text(text: &str) -> Result<WatchSummary, String> {
        let bad = || format!("not a watch summary: {:?}", short(text));
        let mut lines = text.lines().filter(|l| !l.trim().is_empty());
        let first: Vec<&str> = lines.next().ok_or_else(bad)?.split_whitespace().collect();
        let (connections, paths) = match first.as_slice() {
            [c, "connections", "watching", p, "paths"] => (c.parse(), p.parse()),
            _ => return Err(bad()),
        };
        let total = lines
            .next()
            .and_then(|l| l.trim().strip_prefix("Total watches:"))
            .map(|t| t.trim().parse());
        match (connections, paths, total) {
            (Ok(connections), Ok(paths), Some(Ok(total))) => Ok(WatchSummary {
                connections,
                paths,
                total,
                raw: text.to_owned(),
            }),
            _ => Err(bad()),
        }
    }
}

/// One session of `wchc`: the paths it watches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionWatches {
    /// The session id.
    pub session_id: i64,
    /// The watched paths.
    pub paths: Vec<String>,
}

impl SessionWatches {
    /// `0x1000...\n\t/a\n\t/b\n0x1000...\n\t/c`
    /// Parses the answer's text (for answers obtained another way, e.g. by `nc`).
    ///
    /// # Errors
    ///
    /// [`ParseError`] saying what did not parse.
    pub fn parse_all(text: &str) -> Result<Vec<SessionWatches>, ParseError> {
        Self::parse_all_text(text).map_err(ParseError)
    }

    pub(crate) fn parse_all_text(text: &str) -> Result<Vec<SessionWatches>, String> {
        let mut all: Vec<SessionWatches> = Vec::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            if let Some(path) = line.strip_prefix('\t') {
                let session = all
                    .last_mut()
                    .ok_or_else(|| format!("a path before any session: {:?}", short(line)))?;
                session.paths.push(path.to_owned());
            } else {
                all.push(SessionWatches {
                    session_id: parse_hex(line)?,
                    paths: Vec::new(),
                });
            }
        }
        Ok(all)
    }
}

/// The answer to `envi`: the server's environment.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Environment {
    /// Every `key=value` (`zookeeper.version`, `host.name`, `java.version`, ...).
    pub values: BTreeMap<String, String>,
    /// The whole answer.
    pub raw: String,
}

impl Environment {
    /// Parses the answer's text (for answers obtained another way, e.g. by `nc`).
    ///
    /// # Errors
    ///
    /// [`ParseError`] saying what did not parse.
    pub fn parse(text: &str) -> Result<Environment, ParseError> {
        Self::parse_text(text).map_err(ParseError)
    }

    pub(crate) fn parse_text(text: &str) -> Result<Environment, String> {
        let mut lines = text.lines();
        if lines.next().map(str::trim) != Some("Environment:") {
            return Err(format!("no Environment: header in {:?}", short(text)));
        }
        Ok(Environment {
            values: key_values(lines)?,
            raw: text.to_owned(),
        })
    }

    /// The value of `key` (e.g. `zookeeper.version`).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }
}

/// The answer to `conf`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerConf {
    /// Every setting before the membership (`clientPort`, `dataDir`, `tickTime`,
    /// `serverId`, ...), as written.
    pub settings: BTreeMap<String, String>,
    /// The membership this server runs with (the `membership:` part, 3.5+ ensembles); `None`
    /// on a standalone server.
    pub ensemble: Option<EnsembleConfig>,
    /// The whole answer.
    pub raw: String,
}

impl ServerConf {
    /// Parses the answer's text (for answers obtained another way, e.g. by `nc`).
    ///
    /// # Errors
    ///
    /// [`ParseError`] saying what did not parse.
    pub fn parse(text: &str) -> Result<ServerConf, ParseError> {
        Self::parse_text(text).map_err(ParseError)
    }

    pub(crate) fn parse_text(text: &str) -> Result<ServerConf, String> {
        let (settings, membership) = match text.split_once("membership:") {
            Some((settings, membership)) => (settings, Some(membership)),
            None => (text, None),
        };
        let ensemble = match membership {
            Some(m) => Some(EnsembleConfig::parse(m.trim()).map_err(|e| e.to_string())?),
            None => None,
        };
        Ok(ServerConf {
            settings: key_values(settings.lines())?,
            ensemble,
            raw: text.to_owned(),
        })
    }

    /// The value of `key` (e.g. `clientPort`).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.settings.get(key).map(String::as_str)
    }

    /// `serverId` (the member's `myid`), when the server is an ensemble member.
    pub fn server_id(&self) -> Option<u64> {
        self.get("serverId")?.parse().ok()
    }
}

fn key_values<'a>(
    lines: impl Iterator<Item = &'a str>,
) -> Result<BTreeMap<String, String>, String> {
    let mut values = BTreeMap::new();
    for line in lines.filter(|l| !l.trim().is_empty()) {
        let (k, v) = line
            .split_once('=')
            .ok_or_else(|| format!("not key=value: {:?}", short(line)))?;
        values.insert(k.trim().to_owned(), v.trim().to_owned());
    }
    Ok(values)
}
