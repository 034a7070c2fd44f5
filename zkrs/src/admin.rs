//! `zkrs health`, `zkrs mntr`, `zkrs config`: four-letter words to every member of the
//! connect string, no session.
//!
//! `health` is made for monitoring probes; its exit codes follow the Nagios plugin
//! convention ([`HEALTH_EXIT_CODES_HELP`]).

use futures_util::future::join_all;
use serde::Serialize;
use std::collections::BTreeMap;
use zk_client::admin::{AdminError, Mode, Server, ServerStats};
use zk_client::Reconfig;

use crate::cli::{AdminArgs, ReconfigArgs};
use crate::connect::Session;
use crate::error::CliError;
use crate::output::Output;

/// `zkrs health` exit codes, in `zkrs health --help`.
pub(crate) const HEALTH_EXIT_CODES_HELP: &str = "Exit codes (Nagios-style): 0 healthy (every \
member serving, one leader, none lagging); 1 degraded (a quorum serves, but a member is down, \
not serving, read-only or lagging); 2 no quorum (no leader, or fewer than a majority serving); \
3 unknown (bad arguments or any other error).";

/// Port of a host given without one (the client default).
const DEFAULT_PORT: u16 = 2181;

/// The `host:port` of every member of a connect string (the chroot dropped).
pub(crate) fn members(connect: &str) -> Result<Vec<String>, CliError> {
    let hosts = connect.split('/').next().unwrap_or_default();
    let mut out = Vec::new();
    for host in hosts.split(',').map(str::trim).filter(|h| !h.is_empty()) {
        let has_port = match host.strip_prefix('[') {
            Some(rest) => rest
                .split_once(']')
                .is_some_and(|(_, p)| p.starts_with(':')),
            None => host.contains(':'),
        };
        if has_port {
            let port = host.rsplit(':').next().unwrap_or_default();
            if port.parse::<u16>().is_err() {
                return Err(CliError::Usage(format!(
                    "bad port in connect string: {host:?}"
                )));
            }
            out.push(host.to_owned());
        } else {
            out.push(format!("{host}:{DEFAULT_PORT}"));
        }
    }
    if out.is_empty() {
        return Err(CliError::Usage(format!(
            "connect string {connect:?} has no host"
        )));
    }
    Ok(out)
}

/// The servers to ask, each bounded by `--timeout`.
fn servers(connect: &str, args: &AdminArgs) -> Result<Vec<Server>, CliError> {
    Ok(members(connect)?
        .into_iter()
        .map(|addr| Server::new(addr).timeout(args.timeout))
        .collect())
}

/// The verdict of `zkrs health`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Health {
    Healthy,
    Degraded,
    NoQuorum,
}

impl Health {
    /// The exit code ([`HEALTH_EXIT_CODES_HELP`]).
    pub(crate) fn exit_code(self) -> u8 {
        match self {
            Health::Healthy => 0,
            Health::Degraded => 1,
            Health::NoQuorum => 2,
        }
    }
}

/// One member in `zkrs health`.
#[derive(Debug, Serialize)]
struct MemberHealth {
    addr: String,
    /// `leader`, `follower`, `observer`, `standalone`, `read-only`, `not-serving`, `down`,
    /// `error`.
    state: String,
    zxid: Option<String>,
    /// Transactions behind the leader, when both zxids are known and in the same epoch.
    lag: Option<u64>,
    lagging: bool,
    error: Option<String>,
}

/// The whole `zkrs health` report.
#[derive(Debug, Serialize)]
struct HealthReport {
    status: Health,
    leader: Option<String>,
    serving: usize,
    members: usize,
    max_lag: u64,
    detail: Vec<MemberHealth>,
}

/// Asks `srvr` of every member, prints the report, returns the verdict.
pub(crate) async fn health(
    connect: &str,
    out: &Output,
    args: &AdminArgs,
    max_lag: u64,
) -> Result<Health, CliError> {
    let servers = servers(connect, args)?;
    let answers = join_all(servers.iter().map(Server::srvr)).await;
    let report = judge(&servers, answers, max_lag);
    out.emit(&report, || health_text(&report));
    Ok(report.status)
}

/// Decides healthy / degraded / no quorum from the members' answers.
fn judge(
    servers: &[Server],
    answers: Vec<Result<ServerStats, AdminError>>,
    max_lag: u64,
) -> HealthReport {
    let leader_at = answers
        .iter()
        .position(|a| matches!(a, Ok(s) if matches!(s.mode, Mode::Leader | Mode::Standalone)));
    let leader_zxid = leader_at
        .and_then(|i| answers.get(i))
        .and_then(|a| a.as_ref().ok())
        .map(|s| s.zxid);
    let leader = leader_at.and_then(|i| servers.get(i));
    let mut detail = Vec::new();
    let mut voters_serving = 0;
    let mut observers = 0;
    for (server, answer) in servers.iter().zip(answers) {
        let member = match answer {
            Ok(stats) => {
                let lag = leader_zxid.and_then(|l| lag_behind(l, stats.zxid));
                // Across epochs the difference means nothing: after an election a follower's
                // last zxid stays in the old epoch until the first write of the new one.
                let lagging = stats.mode.is_serving_writes() && lag.is_some_and(|l| l > max_lag);
                match stats.mode {
                    Mode::Leader | Mode::Follower | Mode::Standalone => voters_serving += 1,
                    Mode::Observer => observers += 1,
                    _ => {}
                }
                MemberHealth {
                    addr: server.addr().to_owned(),
                    state: stats.mode.to_string(),
                    zxid: Some(format!("{:#x}", stats.zxid)),
                    lag,
                    lagging,
                    error: None,
                }
            }
            Err(e) => MemberHealth {
                addr: server.addr().to_owned(),
                state: match &e {
                    AdminError::NotServing { .. } => "not-serving",
                    e if e.is_unreachable() => "down",
                    _ => "error",
                }
                .to_owned(),
                zxid: None,
                lag: None,
                lagging: false,
                error: Some(e.to_string()),
            },
        };
        detail.push(member);
    }
    // Unreachable members may be voters: count every member that is not a known observer.
    let voters = servers.len() - observers;
    let quorum = leader.is_some() && voters_serving * 2 > voters;
    let all_fine = detail
        .iter()
        .all(|m| !m.lagging && m.error.is_none() && m.state != "read-only");
    let status = if !quorum {
        Health::NoQuorum
    } else if all_fine {
        Health::Healthy
    } else {
        Health::Degraded
    };
    HealthReport {
        status,
        leader: leader.map(|s| s.addr().to_owned()),
        serving: detail
            .iter()
            .filter(|m| m.error.is_none() && m.state != "read-only")
            .count(),
        members: servers.len(),
        max_lag,
        detail,
    }
}

/// How many transactions `member` is behind `leader`; `None` when their epochs (the high 32
/// bits) differ, where the difference means nothing.
fn lag_behind(leader: i64, member: i64) -> Option<u64> {
    let (leader, member) = (leader as u64, member as u64);
    if leader >> 32 != member >> 32 {
        return None;
    }
    Some(leader.saturating_sub(member))
}

fn health_text(r: &HealthReport) -> String {
    let mut lines: Vec<String> = r
        .detail
        .iter()
        .map(|m| {
            let mut line = format!("{:<22} {:<11}", m.addr, m.state);
            if let Some(zxid) = &m.zxid {
                line.push_str(&format!(" zxid {zxid}"));
            }
            if let (true, Some(lag)) = (m.lagging, m.lag) {
                line.push_str(&format!(" LAGGING {lag} txns behind"));
            }
            if let Some(e) = &m.error {
                line.push_str(&format!(" ({e})"));
            }
            line
        })
        .collect();
    let status = match r.status {
        Health::Healthy => "healthy",
        Health::Degraded => "DEGRADED",
        Health::NoQuorum => "NO QUORUM",
    };
    lines.push(format!(
        "ensemble: {status} ({} of {} serving, leader {})",
        r.serving,
        r.members,
        r.leader.as_deref().unwrap_or("none")
    ));
    lines.join("\n")
}

/// One member's answer in `zkrs mntr` / `zkrs config`.
#[derive(Debug, Serialize)]
struct MemberAnswer<T: Serialize> {
    addr: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    answer: Option<T>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// `zkrs mntr`: every member's metrics (only `keys` when given). Fails with
/// `Unreachable`-style exit 3 when a member did not answer (after printing the others).
pub(crate) async fn mntr(
    connect: &str,
    out: &Output,
    args: &AdminArgs,
    keys: &[String],
) -> Result<(), CliError> {
    let servers = servers(connect, args)?;
    let answers = join_all(servers.iter().map(Server::mntr)).await;
    let mut failed = Vec::new();
    for (server, answer) in servers.iter().zip(answers) {
        let answer = answer.map(|m| {
            m.values
                .into_iter()
                .filter(|(k, _)| keys.is_empty() || keys.contains(k))
                .collect::<BTreeMap<_, _>>()
        });
        emit_member(out, server, answer, &mut failed, |values| {
            values
                .iter()
                .map(|(k, v)| format!("{}\t{k}\t{v}", server.addr()))
                .collect::<Vec<_>>()
                .join("\n")
        });
    }
    all_answered(failed)
}

/// What `zkrs config` shows of a member.
#[derive(Debug, Serialize)]
struct ConfigView {
    server_id: Option<u64>,
    /// The config version, hex (`None` on a standalone server).
    version: Option<String>,
    members: Vec<String>,
}

/// `zkrs config`: each member's view of the membership (`conf`), and whether they agree.
pub(crate) async fn config(connect: &str, out: &Output, args: &AdminArgs) -> Result<(), CliError> {
    let servers = servers(connect, args)?;
    let answers = join_all(servers.iter().map(Server::conf)).await;
    let mut failed = Vec::new();
    let mut versions = Vec::new();
    for (server, answer) in servers.iter().zip(answers) {
        let view = answer.map(|conf| ConfigView {
            server_id: conf.server_id(),
            version: conf.ensemble.as_ref().map(|e| format!("{:#x}", e.version)),
            members: conf
                .ensemble
                .iter()
                .flat_map(|e| e.members.iter().map(ToString::to_string))
                .collect(),
        });
        if let Ok(v) = &view {
            versions.push(v.version.clone());
        }
        emit_member(out, server, view, &mut failed, |v| {
            let mut lines = vec![format!(
                "{}: server id {}, config version {}",
                server.addr(),
                v.server_id.map_or("-".into(), |id| id.to_string()),
                v.version.as_deref().unwrap_or("- (standalone)")
            )];
            lines.extend(v.members.iter().map(|m| format!("  {m}")));
            lines.join("\n")
        });
    }
    versions.dedup();
    if versions.len() > 1 && !out.json() {
        eprintln!("zkrs: members disagree on the config version: {versions:?}");
    }
    all_answered(failed)
}

/// The new config as `zkrs reconfig` prints it.
#[derive(Debug, Serialize)]
struct NewConfig {
    version: String,
    members: Vec<String>,
}

/// `zkrs reconfig`: applies the change on the session, prints the new config.
pub(crate) async fn reconfig(
    session: &Session,
    out: &Output,
    args: ReconfigArgs,
) -> Result<(), CliError> {
    let mut change = if args.members.is_empty() {
        let mut change = Reconfig::incremental();
        for server in args.add {
            change = change.add_server(server);
        }
        for id in args.remove {
            change = change.remove_server(id);
        }
        change
    } else {
        Reconfig::replace(args.members)
    };
    if let Some(v) = &args.from_version {
        let digits = v.strip_prefix("0x").unwrap_or(v);
        let version = i64::from_str_radix(digits, 16)
            .map_err(|_| CliError::Usage(format!("--from-version {v:?} is not hex")))?;
        change = change.from_version(version);
    }
    let (config, _) = session
        .client
        .reconfig(&change)
        .await
        .map_err(|e| CliError::zk("reconfig", e))?;
    let shown = NewConfig {
        version: format!("{:#x}", config.version),
        members: config.members.iter().map(ToString::to_string).collect(),
    };
    out.emit(&shown, || {
        let mut lines = shown.members.clone();
        lines.push(format!("version={}", shown.version));
        lines.join("\n")
    });
    Ok(())
}

fn emit_member<T: Serialize>(
    out: &Output,
    server: &Server,
    answer: Result<T, AdminError>,
    failed: &mut Vec<String>,
    text: impl FnOnce(&T) -> String,
) {
    match answer {
        Ok(value) => {
            let line = text(&value);
            out.emit(
                &MemberAnswer {
                    addr: server.addr().to_owned(),
                    answer: Some(value),
                    error: None,
                },
                || line,
            );
        }
        Err(e) => {
            let msg = e.to_string();
            failed.push(server.addr().to_owned());
            out.emit(
                &MemberAnswer::<T> {
                    addr: server.addr().to_owned(),
                    answer: None,
                    error: Some(msg.clone()),
                },
                || format!("{}: ERROR {msg}", server.addr()),
            );
        }
    }
}

fn all_answered(failed: Vec<String>) -> Result<(), CliError> {
    if failed.is_empty() {
        Ok(())
    } else {
        Err(CliError::MembersFailed(failed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_of_a_connect_string() {
        assert_eq!(
            members("a:1,b,[::1]:3/chroot").unwrap(),
            ["a:1", "b:2181", "[::1]:3"]
        );
        assert!(members("").is_err());
        assert!(members("a:x").is_err());
    }

    #[test]
    fn lag_is_within_one_epoch() {
        assert_eq!(lag_behind(0x1_0000_0010, 0x1_0000_0004), Some(12));
        assert_eq!(lag_behind(0x2_0000_0001, 0x1_0000_0004), None);
        assert_eq!(lag_behind(5, 9), Some(0));
    }

    fn stats(mode: &str, zxid: &str) -> Result<ServerStats, AdminError> {
        let text = format!(
            "Zookeeper version: 3.8.0\nLatency min/avg/max: 0/0.0/0\nReceived: 1\nSent: 1\n\
             Connections: 1\nOutstanding: 0\nZxid: {zxid}\nMode: {mode}\nNode count: 5\n"
        );
        ServerStats::parse(&text).map_err(|e| AdminError::Malformed {
            addr: "x".into(),
            command: "srvr".into(),
            reason: e.0,
        })
    }

    fn down() -> Result<ServerStats, AdminError> {
        Err(AdminError::NotServing { addr: "x".into() })
    }

    #[test]
    fn verdicts() {
        let s: Vec<Server> = ["a:1", "b:1", "c:1"].map(Server::new).to_vec();
        let judge3 = |a, b, c| judge(&s, vec![a, b, c], 10).status;
        let l = || stats("leader", "0x100000050");
        let f = || stats("follower", "0x100000050");
        assert_eq!(judge3(l(), f(), f()), Health::Healthy);
        // A follower still on the last epoch's zxid after an election is not lagging.
        assert_eq!(
            judge3(stats("leader", "0x200000000"), f(), f()),
            Health::Healthy
        );
        assert_eq!(judge3(l(), f(), down()), Health::Degraded);
        assert_eq!(
            judge3(l(), f(), stats("follower", "0x100000001")),
            Health::Degraded
        );
        assert_eq!(judge3(l(), down(), down()), Health::NoQuorum);
        assert_eq!(judge3(down(), f(), f()), Health::NoQuorum);
        assert_eq!(judge3(down(), down(), down()), Health::NoQuorum);
        let one = [Server::new("a:1")];
        assert_eq!(
            judge(&one, vec![stats("standalone", "0x5")], 100).status,
            Health::Healthy
        );
    }
}
