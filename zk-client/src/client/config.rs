//! Dynamic reconfiguration (ZooKeeper 3.5+): the ensemble config with a watch, a follower of
//! its changes, and `reconfig`.

use std::future::Future;

use bytes::Bytes;
use zk_proto::records::{GetDataRequest, GetDataResponse, ReconfigRequest, CONFIG_NODE};
use zk_proto::{decode_prefix, OpCode, Stat};

use super::node::one_shot;
use super::{encode, Client};
use crate::command::{Command, WatchKind};
use crate::ensemble::EnsembleConfig;
use crate::error::{Error, Result};
use crate::watcher::Watcher;

/// A change of membership for [`Client::reconfig`]: incremental (servers joining and
/// leaving) or non-incremental (the whole new membership), optionally only from a given
/// config version.
///
/// ```
/// use zk_client::Reconfig;
/// // Add server 4 and remove server 1, only if the config is still at version 0x100000000.
/// let change = Reconfig::incremental()
///     .add_server("server.4=10.0.0.4:2888:3888:participant;2181")
///     .remove_server(1)
///     .from_version(0x1_0000_0000);
/// # let _ = change;
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reconfig {
    joining: Vec<String>,
    leaving: Vec<u64>,
    members: Option<Vec<String>>,
    from_version: Option<i64>,
}

impl Reconfig {
    /// An incremental change: add servers with [`add_server`](Self::add_server), remove with
    /// [`remove_server`](Self::remove_server).
    pub fn incremental() -> Reconfig {
        Reconfig::default()
    }

    /// A non-incremental change: the ensemble becomes exactly `members`, each a
    /// `server.<id>=<host>:<quorum port>:<election port>[:role];[<client host>:]<client port>`
    /// line (as [`Member`](crate::Member)'s `Display` writes it).
    pub fn replace<I, S>(members: I) -> Reconfig
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Reconfig {
            members: Some(members.into_iter().map(Into::into).collect()),
            ..Reconfig::default()
        }
    }

    /// Adds a server (`server.<id>=...` line; incremental changes only).
    pub fn add_server(mut self, server: impl Into<String>) -> Reconfig {
        self.joining.push(server.into());
        self
    }

    /// Removes the server with this id (incremental changes only).
    pub fn remove_server(mut self, id: u64) -> Reconfig {
        self.leaving.push(id);
        self
    }

    /// Applies the change only if the current config has this version
    /// ([`EnsembleConfig::version`]); otherwise the call fails with `BadVersion`.
    pub fn from_version(mut self, version: i64) -> Reconfig {
        self.from_version = Some(version);
        self
    }

    fn request(&self) -> Result<ReconfigRequest> {
        let joining_servers = self.joining.join(",");
        let leaving_servers = self
            .leaving
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let new_members = match &self.members {
            Some(_) if !self.joining.is_empty() || !self.leaving.is_empty() => {
                return Err(Error::InvalidArgument(
                    "a reconfig is either incremental (add/remove) or replaces the members",
                ));
            }
            Some(members) if members.is_empty() => {
                return Err(Error::InvalidArgument(
                    "a non-incremental reconfig needs at least one member",
                ))
            }
            Some(members) => members.join(","),
            None if joining_servers.is_empty() && leaving_servers.is_empty() => {
                return Err(Error::InvalidArgument(
                    "an incremental reconfig needs a server to add or remove",
                ))
            }
            None => String::new(),
        };
        Ok(ReconfigRequest {
            joining_servers,
            leaving_servers,
            new_members,
            cur_config_id: self.from_version.unwrap_or(-1),
        })
    }
}

impl Client {
    /// [`get_config`](Self::get_config) with a one-shot watch on `/zookeeper/config`: the
    /// watcher fires (`NodeDataChanged`, path `/zookeeper/config` whatever the chroot) when
    /// the membership changes.
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// let (data, _stat, watcher) = client.get_config_watch().await?;
    /// let config = zk_client::EnsembleConfig::parse(&String::from_utf8_lossy(&data));
    /// watcher.await?;
    /// # let _ = config; Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// `NoNode` when the server has no dynamic configuration (before 3.5), `NoAuth`, plus the
    /// session errors.
    ///
    /// # Cancel safety
    ///
    /// The request is sent when this is called: dropping the future discards the reply and leaves
    /// no watch behind (the client removes it when the reply comes).
    pub fn get_config_watch(
        &self,
    ) -> impl Future<Output = Result<(Bytes, Stat, Watcher)>> + Send + 'static {
        let path = CONFIG_NODE.to_owned();
        let (action, watcher) = one_shot(self, path.clone(), WatchKind::Data);
        let body = encode(&GetDataRequest { path, watch: true });
        let reply = self.request(OpCode::GetData, body, Some(action));
        async move {
            let resp: GetDataResponse = decode_prefix(reply.await?)?;
            Ok((resp.data, resp.stat, watcher))
        }
    }

    /// A follower of the ensemble config: [`ConfigWatcher::next`] returns the current config,
    /// then each new one as the membership changes (a `get_config_watch` loop).
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// let mut configs = client.config_watcher();
    /// loop {
    ///     let config = configs.next().await?;
    ///     println!("version {:#x}: {}", config.version, config.connect_string());
    /// }
    /// # }
    /// ```
    pub fn config_watcher(&self) -> ConfigWatcher {
        ConfigWatcher {
            client: self.clone(),
            watcher: None,
            last: None,
        }
    }

    /// Changes the ensemble's membership (`reconfig`, ZooKeeper 3.5+ with
    /// `reconfigEnabled=true`) and returns the new config.
    ///
    /// The server lets only a super user (or any session with `skipACL`, or one that may
    /// write `/zookeeper/config` by its ACL) reconfigure.
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// use zk_client::Reconfig;
    /// let current = client.config_watcher().next().await?;
    /// let (config, _stat) = client
    ///     .reconfig(&Reconfig::incremental().remove_server(3).from_version(current.version))
    ///     .await?;
    /// assert!(config.member(3).is_none());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// * `InvalidArgument`: an empty change, or one both incremental and not; nothing sent.
    /// * `BadVersion`: the config is no longer at [`Reconfig::from_version`].
    /// * `NoAuth`: the session may not reconfigure.
    /// * `Server(ErrorCode::ReconfigInProgress)`: another reconfiguration is under way; try
    ///   again later.
    /// * `Server(ErrorCode::NewConfigNoQuorum)`: no quorum of the new config is connected
    ///   and in sync with the leader; nothing changed.
    /// * `Server(ErrorCode::ReconfigDisabled)`: the server runs without `reconfigEnabled`.
    /// * `Server(ErrorCode::BadArguments)`: a server line the server does not accept.
    /// * `UnexpectedReply`: the new config does not parse; plus the session errors.
    ///   `ConnectionLoss` leaves it unknown whether the change was applied: read the config.
    ///
    /// # Cancel safety
    ///
    /// The request is sent when `reconfig` is called; dropping the future does not undo it.
    pub fn reconfig(
        &self,
        change: &Reconfig,
    ) -> impl Future<Output = Result<(EnsembleConfig, Stat)>> + Send + 'static {
        let reply = change
            .request()
            .map(|req| self.request(OpCode::Reconfig, encode(&req), None));
        async move {
            let resp: GetDataResponse = decode_prefix(reply?.await?)?;
            Ok((parse(&resp.data)?, resp.stat))
        }
    }
}

impl Client {
    /// Replaces the servers this client connects to, keeping the session (and its watches,
    /// ephemeral nodes and chroot). `hosts` is a connect string without chroot
    /// (`"zk1:2181,zk4:2181"`), for example [`EnsembleConfig::connect_string`].
    ///
    /// Resolves to whether this client leaves its current server to even out the load over
    /// the new list, by ZOOKEEPER-1355's rule (the Java client's `updateServerList`): when the
    /// list grows from `old` to `new` hosts, a client whose server stays moves with
    /// probability `1 - old/new`, to one of the added hosts; a client whose server is gone
    /// always moves; when the list shrinks, clients of servers that stay never move. Over
    /// many clients each server ends up with its fair share in expectation, and no more
    /// clients move than that takes. A moving client drops its connection (calls in flight
    /// fail with `ConnectionLoss`, as on any reconnect) and resumes the session elsewhere.
    /// See `docs/ensemble.md` for the measured spread.
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_client::Result<()> {
    /// let config = client.config_watcher().next().await?;
    /// let moved = client.update_hosts(&config.connect_string()).await?;
    /// # let _ = moved; Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// `InvalidArgument` for a string with no host, a bad port, or a chroot (the chroot
    /// cannot change: it stays the one the client was built with); the terminal session
    /// errors when the session is over.
    ///
    /// # Cancel safety
    ///
    /// The update is handed to the connection task when `update_hosts` is called; dropping
    /// the future only drops the answer.
    pub fn update_hosts(&self, hosts: &str) -> impl Future<Output = Result<bool>> + Send + 'static {
        let parsed = crate::hosts::parse_connect_string(hosts).and_then(|(hosts, chroot)| {
            if chroot.as_str().is_empty() {
                Ok(hosts)
            } else {
                Err(Error::InvalidArgument(
                    "update_hosts takes hosts only: the chroot cannot change",
                ))
            }
        });
        let sent = parsed.map(|hosts| {
            let (reply, rx) = tokio::sync::oneshot::channel();
            let _ = self.commands().send(Command::UpdateHosts { hosts, reply });
            rx
        });
        let state = self.watch();
        async move {
            match sent?.await {
                Ok(moving) => Ok(moving),
                Err(_) => Err(state.current().terminal_error().unwrap_or(Error::Closed)),
            }
        }
    }
}

fn parse(data: &[u8]) -> Result<EnsembleConfig> {
    let text = std::str::from_utf8(data)
        .map_err(|_| Error::UnexpectedReply("the ensemble config is not UTF-8"))?;
    EnsembleConfig::parse(text)
        .map_err(|_| Error::UnexpectedReply("the ensemble config does not parse"))
}

/// Follows `/zookeeper/config`: returned by [`Client::config_watcher`].
///
/// Each [`next`](Self::next) returns a config whose version differs from the last one
/// returned (the first call returns the current config). Between calls a one-shot watch is
/// set on the server, so no change is missed; several changes in a row may show as one (the
/// latest). It survives reconnects of the same session.
#[derive(Debug)]
pub struct ConfigWatcher {
    client: Client,
    watcher: Option<Watcher>,
    last: Option<i64>,
}

impl ConfigWatcher {
    /// The next config: the current one on the first call, then the next change.
    ///
    /// # Errors
    ///
    /// `NoNode`/`NoAuth` as [`Client::get_config_watch`]; `ConnectionLoss` and `Timeout`
    /// when the read failed (call again: it re-reads); the terminal session errors
    /// (`SessionExpired`, `Closed`, `AuthFailed`) once the session is over.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a dropped call loses no change; the next call sees it.
    pub async fn next(&mut self) -> Result<EnsembleConfig> {
        loop {
            if let Some(watcher) = &mut self.watcher {
                let fired = watcher.await;
                self.watcher = None;
                fired?;
            }
            let (data, _stat, watcher) = self.client.get_config_watch().await?;
            self.watcher = Some(watcher);
            let config = parse(&data)?;
            if self.last != Some(config.version) {
                self.last = Some(config.version);
                return Ok(config);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_become_the_request_the_server_expects() {
        let req = Reconfig::incremental()
            .add_server("server.4=h:1:2;3")
            .add_server("server.5=h:4:5;6")
            .remove_server(1)
            .remove_server(2)
            .request()
            .unwrap();
        assert_eq!(req.joining_servers, "server.4=h:1:2;3,server.5=h:4:5;6");
        assert_eq!(req.leaving_servers, "1,2");
        assert_eq!(req.new_members, "");
        assert_eq!(req.cur_config_id, -1);
        let req = Reconfig::replace(["server.1=a:1:2;3", "server.2=b:1:2;3"])
            .from_version(0x1_0000_0003)
            .request()
            .unwrap();
        assert_eq!(req.new_members, "server.1=a:1:2;3,server.2=b:1:2;3");
        assert_eq!(
            (req.joining_servers.as_str(), req.leaving_servers.as_str()),
            ("", "")
        );
        assert_eq!(req.cur_config_id, 0x1_0000_0003);
        for bad in [
            Reconfig::incremental(),
            Reconfig::replace(Vec::<String>::new()),
            Reconfig::replace(["server.1=a:1:2"]).add_server("server.2=b:1:2"),
        ] {
            assert!(matches!(bad.request(), Err(Error::InvalidArgument(_))));
        }
    }
}
