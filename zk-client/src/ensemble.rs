//! The ensemble's membership as ZooKeeper 3.5+ writes it: the data of `/zookeeper/config`
//! ([`Client::get_config`](crate::Client::get_config)), the `membership:` part of the `conf`
//! four-letter word, and a dynamic config file.
//!
//! ```text
//! server.1=10.0.0.1:2888:3888:participant;0.0.0.0:2181
//! server.2=10.0.0.2:2888:3888:participant;10.0.0.2:2181
//! server.3=10.0.0.3:2888:3888:observer;2181
//! version=100000000
//! ```
//!
//! Each `server.<id>` line is `<host>:<quorum port>:<election port>[:<role>][;[<client
//! host>:]<client port>]` (ZooKeeper's `QuorumPeer.QuorumServer`); `version` is the config's
//! zxid in hex, the number [`Reconfig::from_version`](crate::Reconfig::from_version) expects. Lines this
//! parser does not model (`group.N`, `weight.N` of hierarchical quorums) are kept in
//! [`EnsembleConfig::raw`] only.

use std::collections::HashSet;
use std::fmt;

/// What a member does in the ensemble.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Role {
    /// A voting member (may be the leader).
    Participant,
    /// A non-voting member that serves clients.
    Observer,
}

impl Role {
    /// The name ZooKeeper writes (`participant`, `observer`).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Participant => "participant",
            Role::Observer => "observer",
        }
    }
}

/// The address a member serves clients on: `[<host>:]<port>` after the `;`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClientAddress {
    /// The host, as written (`0.0.0.0`, `[::]`, a name, an address); `None` when only a port
    /// is given (the server listens on every interface).
    pub host: Option<String>,
    /// The client port.
    pub port: u16,
}

impl ClientAddress {
    /// Whether the host is missing or a wildcard (`0.0.0.0`, `::`, `[::]`): the server listens
    /// everywhere, which tells a client nothing about where to reach it.
    pub fn is_wildcard(&self) -> bool {
        matches!(
            self.host.as_deref(),
            None | Some("0.0.0.0" | "::" | "[::]" | "[0:0:0:0:0:0:0:0]" | "0:0:0:0:0:0:0:0")
        )
    }
}

/// One `server.<id>` line.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Member {
    /// The server id (`myid`).
    pub id: u64,
    /// Participant or observer.
    pub role: Role,
    /// The host of the quorum and election addresses (IPv6 in brackets, as written).
    pub host: String,
    /// The quorum (follower-to-leader) port.
    pub quorum_port: u16,
    /// The leader election port.
    pub election_port: u16,
    /// The client address; `None` for a member that serves no clients (no `;` part).
    pub client: Option<ClientAddress>,
}

impl Member {
    /// Where a client reaches this member, `host:port`: the client host, or the quorum host
    /// when the client host is a wildcard (`0.0.0.0`: Curator wrote it into connection strings
    /// as is, CURATOR-402). `None` when the member serves no clients.
    ///
    /// ```
    /// let config = zk_client::EnsembleConfig::parse(
    ///     "server.1=10.0.0.1:2888:3888:participant;0.0.0.0:2181\nversion=1",
    /// )?;
    /// assert_eq!(config.members[0].client_address().as_deref(), Some("10.0.0.1:2181"));
    /// # Ok::<(), zk_client::ConfigParseError>(())
    /// ```
    pub fn client_address(&self) -> Option<String> {
        let client = self.client.as_ref()?;
        let host = match &client.host {
            Some(host) if !client.is_wildcard() => host.as_str(),
            _ => self.host.as_str(),
        };
        Some(format!("{host}:{}", client.port))
    }

    /// The right-hand side of the member's line, as a `reconfig` takes it:
    /// `host:quorum:election:role;[client host:]client port`.
    pub fn spec(&self) -> String {
        let mut s = format!(
            "{}:{}:{}:{}",
            self.host,
            self.quorum_port,
            self.election_port,
            self.role.as_str()
        );
        if let Some(client) = &self.client {
            s.push(';');
            if let Some(host) = &client.host {
                s.push_str(host);
                s.push(':');
            }
            s.push_str(&client.port.to_string());
        }
        s
    }
}

impl fmt::Display for Member {
    /// `server.<id>=<spec>`, the line ZooKeeper writes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "server.{}={}", self.id, self.spec())
    }
}

/// A parsed ensemble configuration: its members and version, with the text it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnsembleConfig {
    /// The members, in the order written (ZooKeeper writes them by id).
    pub members: Vec<Member>,
    /// The config version (hex in the text): the zxid that made this config. 0 when the text
    /// has no `version` line (a static configuration).
    pub version: i64,
    raw: String,
}

/// Text that is not an ensemble configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("ensemble config line {line}: {reason}")]
pub struct ConfigParseError {
    /// The 1-based line number.
    pub line: usize,
    /// What is wrong with it.
    pub reason: String,
}

impl EnsembleConfig {
    /// Parses the text of `/zookeeper/config` (or of a dynamic config file, or the membership
    /// part of `conf`).
    ///
    /// ```
    /// use zk_client::{EnsembleConfig, Role};
    /// let config = EnsembleConfig::parse(
    ///     "server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181\n\
    ///      server.2=127.0.0.1:2889:3889:observer;2182\n\
    ///      version=100000000",
    /// )?;
    /// assert_eq!(config.version, 0x1_0000_0000);
    /// assert_eq!(config.members[1].role, Role::Observer);
    /// assert_eq!(config.connect_string(), "127.0.0.1:2181,127.0.0.1:2182");
    /// # Ok::<(), zk_client::ConfigParseError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ConfigParseError`] naming the first line that is not `key=value`, a `server.N` line
    /// that does not parse, a duplicate id, or a `version` that is not hex.
    pub fn parse(text: &str) -> Result<EnsembleConfig, ConfigParseError> {
        let mut members: Vec<Member> = Vec::new();
        // Ids seen so far: a config of many lines is checked in linear time.
        let mut ids = HashSet::new();
        let mut version = 0;
        for (i, line) in text.lines().enumerate() {
            let err = |reason: String| ConfigParseError {
                line: i + 1,
                reason,
            };
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let Some((key, value)) = line.split_once('=') else {
                return Err(err(format!("not key=value: {line:?}")));
            };
            if let Some(id) = key.strip_prefix("server.") {
                let id: u64 = id
                    .parse()
                    .map_err(|_| err(format!("bad server id {id:?}")))?;
                if !ids.insert(id) {
                    return Err(err(format!("server.{id} appears twice")));
                }
                members.push(parse_member(id, value).map_err(err)?);
            } else if key == "version" {
                version = i64::from_str_radix(value, 16)
                    .map_err(|_| err(format!("version is not hex: {value:?}")))?;
            }
        }
        Ok(EnsembleConfig {
            members,
            version,
            raw: text.to_owned(),
        })
    }

    /// The text this was parsed from.
    pub fn raw(&self) -> &str {
        &self.raw
    }

    /// The member with this id.
    pub fn member(&self, id: u64) -> Option<&Member> {
        self.members.iter().find(|m| m.id == id)
    }

    /// The voting members.
    pub fn participants(&self) -> impl Iterator<Item = &Member> {
        self.members.iter().filter(|m| m.role == Role::Participant)
    }

    /// `host:port,host:port,...`: every member's [`client_address`](Member::client_address)
    /// (participants and observers, members without a client port left out), in config order.
    /// A connect string without chroot, for [`Client::update_hosts`](crate::Client::update_hosts).
    pub fn connect_string(&self) -> String {
        self.members
            .iter()
            .filter_map(Member::client_address)
            .collect::<Vec<_>>()
            .join(",")
    }
}

impl fmt::Display for EnsembleConfig {
    /// The text it was parsed from.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

/// Splits `host:rest` where host may be a bracketed IPv6 literal; returns (host, rest after
/// the colon).
fn split_host(s: &str) -> Option<(&str, &str)> {
    if s.starts_with('[') {
        let close = s.find(']')?;
        let rest = s.get(close + 1..)?.strip_prefix(':')?;
        Some((s.get(..=close)?, rest))
    } else {
        s.split_once(':')
    }
}

fn port(s: &str, what: &str) -> Result<u16, String> {
    s.trim()
        .parse()
        .map_err(|_| format!("bad {what} port {s:?}"))
}

/// `host:quorum:election[:role][;[client host:]client port]`; with 3.6+ multi-address
/// members (`a|b`), the first address is kept.
fn parse_member(id: u64, value: &str) -> Result<Member, String> {
    let (server, client) = match value.split_once(';') {
        Some((server, client)) => (server, Some(client.trim())),
        None => (value, None),
    };
    let first = server.split('|').next().unwrap_or(server).trim();
    let (host, rest) =
        split_host(first).ok_or_else(|| format!("server.{id}: no ports in {value:?}"))?;
    if host.is_empty() {
        return Err(format!("server.{id}: empty host"));
    }
    let mut parts = rest.split(':');
    let quorum_port = port(parts.next().unwrap_or(""), "quorum")?;
    let election_port = port(
        parts
            .next()
            .ok_or_else(|| format!("server.{id}: no election port"))?,
        "election",
    )?;
    // With several addresses the role follows the last one.
    let role_part = server
        .rsplit('|')
        .next()
        .and_then(|last| split_host(last.trim()))
        .and_then(|(_, rest)| rest.split(':').nth(2));
    let role = match role_part.map(str::trim) {
        None | Some("participant") => Role::Participant,
        Some("observer") => Role::Observer,
        Some(other) => return Err(format!("server.{id}: unknown role {other:?}")),
    };
    let client = match client {
        None | Some("") => None,
        Some(c) => Some(match split_host(c) {
            Some((host, p)) => ClientAddress {
                host: Some(host.to_owned()),
                port: port(p, "client")?,
            },
            None => ClientAddress {
                host: None,
                port: port(c, "client")?,
            },
        }),
    };
    Ok(Member {
        id,
        role,
        host: host.to_owned(),
        quorum_port,
        election_port,
        client,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_a_3_8_server_writes() {
        let text = "server.1=127.0.0.1:29111:29121:participant;127.0.0.1:29101\n\
                    server.2=127.0.0.1:29112:29122:participant;127.0.0.1:29102\n\
                    server.3=127.0.0.1:29113:29123:participant;0.0.0.0:29103\n\
                    version=100000000";
        let c = EnsembleConfig::parse(text).unwrap();
        assert_eq!(c.version, 0x1_0000_0000);
        assert_eq!(c.members.len(), 3);
        let m3 = c.member(3).unwrap();
        assert_eq!(m3.quorum_port, 29113);
        assert_eq!(m3.election_port, 29123);
        assert!(m3.client.as_ref().unwrap().is_wildcard());
        // CURATOR-402: the wildcard never reaches a connect string.
        assert_eq!(
            c.connect_string(),
            "127.0.0.1:29101,127.0.0.1:29102,127.0.0.1:29103"
        );
        assert_eq!(
            m3.to_string(),
            "server.3=127.0.0.1:29113:29123:participant;0.0.0.0:29103"
        );
        assert_eq!(c.raw(), text);
    }

    #[test]
    fn ipv6_observers_and_bare_ports() {
        let c = EnsembleConfig::parse(
            "server.7=[::1]:2888:3888:observer;[::]:2181\nserver.8=h:1:2;3\nserver.9=h:1:2\n",
        )
        .unwrap();
        assert_eq!(c.version, 0);
        assert_eq!(c.members[0].host, "[::1]");
        assert_eq!(c.members[0].role, Role::Observer);
        assert_eq!(c.members[0].client_address().as_deref(), Some("[::1]:2181"));
        assert_eq!(c.members[1].role, Role::Participant);
        assert_eq!(c.members[1].client_address().as_deref(), Some("h:3"));
        assert_eq!(c.members[1].spec(), "h:1:2:participant;3");
        assert_eq!(c.members[2].client_address(), None);
        assert_eq!(c.participants().count(), 2);
        let multi = EnsembleConfig::parse("server.1=a:1:2|b:3:4:observer;5").unwrap();
        assert_eq!(multi.members[0].host, "a");
        assert_eq!(multi.members[0].role, Role::Observer);
    }

    #[test]
    fn junk_is_an_error_naming_the_line() {
        for (text, line) in [
            ("server.1=h:1:2\nnonsense", 2),
            ("server.x=h:1:2", 1),
            ("server.1=h", 1),
            ("server.1=h:1", 1),
            ("server.1=h:99999:2", 1),
            ("server.1=h:1:2:boss", 1),
            ("server.1=h:1:2;x", 1),
            ("server.1=[::1:1:2", 1),
            ("server.1=:1:2", 1),
            ("server.1=h:1:2\nserver.1=h:1:2", 2),
            ("version=zz", 1),
        ] {
            let err = EnsembleConfig::parse(text).expect_err(text);
            assert_eq!(err.line, line, "{text}: {err}");
        }
        // Bytes that are not even text never panic.
        let _ = EnsembleConfig::parse("\u{0}\u{fffd}=;;::[]|");
    }
}
