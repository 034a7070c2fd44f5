//! Command-line syntax (clap derive).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::admin::HEALTH_EXIT_CODES_HELP;
use crate::error::{CliError, EXIT_CODES_HELP};
use crate::time::parse_duration;

/// A ZooKeeper command-line tool: node commands, a lock-queue inspector, operator commands.
#[derive(Debug, Parser)]
#[command(name = "zkrs", version, about, after_help = EXIT_CODES_HELP)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) global: Global,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// Options every command takes.
#[derive(Debug, Args)]
pub(crate) struct Global {
    /// Connect string: hosts, then an optional chroot (e.g. 127.0.0.1:2181,127.0.0.1:2182/app).
    #[arg(
        long,
        short = 'c',
        env = "ZK_CONNECT",
        global = true,
        default_value = "127.0.0.1:2181"
    )]
    pub(crate) connect: String,
    /// Give up connecting after this long (e.g. 500ms, 5s).
    #[arg(long, global = true, default_value = "5s", value_parser = parse_duration)]
    pub(crate) connect_timeout: Duration,
    /// Session timeout to ask for.
    #[arg(long, global = true, default_value = "10s", value_parser = parse_duration)]
    pub(crate) session_timeout: Duration,
    /// Credentials, `scheme:auth` (e.g. `digest:user:secret`), added before the command.
    #[arg(long, global = true)]
    pub(crate) auth: Option<String>,
    /// Print JSON (one document per line) instead of text; errors go to stderr as JSON too.
    #[arg(long, global = true)]
    pub(crate) json: bool,
    /// Connect with TLS (every host of the connect string: its secure client port).
    /// Without `--tls-ca`, the system's root certificates are trusted.
    #[arg(long, global = true, env = "ZK_TLS")]
    pub(crate) tls: bool,
    /// TLS: the CA certificate(s) to trust (PEM file). Implies `--tls`.
    #[arg(long, global = true, env = "ZK_TLS_CA")]
    pub(crate) tls_ca: Option<PathBuf>,
    /// TLS: our client certificate (PEM file), with `--tls-key`. Implies `--tls`.
    #[arg(long, global = true, env = "ZK_TLS_CERT", requires = "tls_key")]
    pub(crate) tls_cert: Option<PathBuf>,
    /// TLS: the client certificate's private key (PEM file), with `--tls-cert`.
    #[arg(long, global = true, env = "ZK_TLS_KEY", requires = "tls_cert")]
    pub(crate) tls_key: Option<PathBuf>,
    /// TLS: do not check that the server certificate names the host (the chain is still
    /// checked).
    #[arg(long, global = true)]
    pub(crate) tls_no_verify_hostname: bool,
    /// SASL DIGEST-MD5 as `user:password` (ZooKeeper's JAAS `DigestLoginModule`), before
    /// anything else on every connection.
    #[arg(long, global = true, env = "ZK_SASL")]
    pub(crate) sasl: Option<String>,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// List the children of a node (`-R`: the whole subtree, one path per line).
    Ls {
        /// Node path.
        path: String,
        /// Recurse into the subtree.
        #[arg(short = 'R', long)]
        recursive: bool,
    },
    /// Print a node's data.
    Get {
        /// Node path.
        path: String,
    },
    /// Set a node's data.
    Set {
        /// Node path.
        path: String,
        /// New data (UTF-8 text).
        data: String,
        /// Only if the node has this version.
        #[arg(long)]
        version: Option<i32>,
    },
    /// Print a node's stat.
    Stat {
        /// Node path.
        path: String,
    },
    /// Create a node (prints the created path).
    Create(CreateArgs),
    /// Delete a node (`-R`: with its subtree).
    Delete {
        /// Node path.
        path: String,
        /// Delete the subtree too.
        #[arg(short = 'R', long)]
        recursive: bool,
        /// Only if the node has this version (not with -R).
        #[arg(long, conflicts_with = "recursive")]
        version: Option<i32>,
    },
    /// Print events on a node (or its subtree) as they come.
    Watch(WatchArgs),
    /// Show the queue of a lock, latch or semaphore: who holds, who waits for whom.
    Locks(LocksArgs),
    /// List service instances in curator-x-discovery's layout (`<base>/<name>/<id>`, JSON).
    Services(ServicesArgs),
    /// List a group's members (Curator's `GroupMember`: `<path>/<id>`, the payload as data).
    Members {
        /// The membership path.
        path: String,
    },
    /// Ask the holder of a lock node to let go (Curator's cooperative revocation).
    Revoke {
        /// The lock node (a child of the lock path).
        node: String,
    },
    /// Health of the ensemble: `srvr` of every member of the connect string (no session),
    /// with exit codes for monitoring probes.
    #[command(after_help = HEALTH_EXIT_CODES_HELP)]
    Health {
        #[command(flatten)]
        admin: AdminArgs,
        /// A member more than this many transactions behind the leader is lagging.
        #[arg(long, default_value_t = 1000)]
        max_lag: u64,
    },
    /// Metrics (`mntr`) of every member of the connect string (no session).
    Mntr {
        #[command(flatten)]
        admin: AdminArgs,
        /// Only this key (repeatable), e.g. `-k zk_server_state`.
        #[arg(long = "key", short = 'k')]
        keys: Vec<String>,
    },
    /// The membership each member of the connect string runs with (`conf`; no session).
    Config {
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Change the membership (dynamic reconfiguration; needs a super user, e.g.
    /// `--auth digest:super:secret`) and print the new config.
    Reconfig(ReconfigArgs),
}

/// `reconfig` options: `--add`/`--remove` (incremental) or `--members` (the whole new set).
#[derive(Debug, Args)]
pub(crate) struct ReconfigArgs {
    /// A server to add: `server.<id>=<host>:<quorum port>:<election port>[:role];<client port>`.
    #[arg(long = "add", required_unless_present_any = ["remove", "members"])]
    pub(crate) add: Vec<String>,
    /// A server id to remove.
    #[arg(long = "remove")]
    pub(crate) remove: Vec<u64>,
    /// Non-incremental: every member of the new config (repeat per server).
    #[arg(long = "members", conflicts_with_all = ["add", "remove"])]
    pub(crate) members: Vec<String>,
    /// Only if the current config has this version (hex, as `zkrs config` prints it).
    #[arg(long)]
    pub(crate) from_version: Option<String>,
}

/// Options of the operator commands (four-letter words to every member).
#[derive(Debug, Args)]
pub(crate) struct AdminArgs {
    /// Bound on each member's answer (connect, send, read).
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub(crate) timeout: Duration,
}

/// `create` options.
#[derive(Debug, Args)]
pub(crate) struct CreateArgs {
    /// Node path (with -s, the prefix the server appends a sequence to).
    pub(crate) path: String,
    /// Data (UTF-8 text).
    #[arg(default_value = "")]
    pub(crate) data: String,
    /// Ephemeral: deleted when this command's session ends (right after it prints).
    #[arg(short = 'e', long, conflicts_with = "container")]
    pub(crate) ephemeral: bool,
    /// Sequential: the server appends a 10-digit sequence.
    #[arg(short = 's', long, conflicts_with = "container")]
    pub(crate) sequential: bool,
    /// Container: deleted by the server once its last child is gone.
    #[arg(long)]
    pub(crate) container: bool,
    /// Create missing parents (as persistent nodes).
    #[arg(short = 'p', long)]
    pub(crate) parents: bool,
}

/// `services` options.
#[derive(Debug, Args)]
pub(crate) struct ServicesArgs {
    /// The discovery base path.
    #[arg(long, default_value = "/services")]
    pub(crate) base: String,
    /// Only this service.
    pub(crate) name: Option<String>,
}

/// `watch` options.
#[derive(Debug, Args)]
pub(crate) struct WatchArgs {
    /// Node path.
    pub(crate) path: String,
    /// Watch the whole subtree (persistent recursive watch).
    #[arg(short = 'R', long)]
    pub(crate) recursive: bool,
    #[command(flatten)]
    pub(crate) bound: Bound,
}

/// `locks` options.
#[derive(Debug, Args)]
pub(crate) struct LocksArgs {
    /// The lock path (the parent of the contenders' nodes).
    pub(crate) path: String,
    /// Redraw on every change below the path.
    #[arg(short = 'w', long)]
    pub(crate) watch: bool,
    #[command(flatten)]
    pub(crate) bound: Bound,
}

/// Bounds of the streaming commands.
#[derive(Debug, Args)]
pub(crate) struct Bound {
    /// Stop after this many events (watch) or redraws after the first (locks --watch).
    #[arg(long)]
    pub(crate) count: Option<u64>,
    /// Stop after this long (e.g. 30s); the command then exits 0.
    #[arg(long, value_parser = parse_duration)]
    pub(crate) timeout: Option<Duration>,
}

impl Command {
    /// The path argument of the command (none for the operator commands).
    fn path(&self) -> Option<&str> {
        Some(match self {
            Command::Ls { path, .. }
            | Command::Get { path }
            | Command::Set { path, .. }
            | Command::Stat { path }
            | Command::Delete { path, .. }
            | Command::Revoke { node: path }
            | Command::Members { path } => path,
            Command::Services(a) => &a.base,
            Command::Create(a) => &a.path,
            Command::Watch(a) => &a.path,
            Command::Locks(a) => &a.path,
            Command::Health { .. }
            | Command::Mntr { .. }
            | Command::Config { .. }
            | Command::Reconfig(_) => return None,
        })
    }

    /// Rejects a malformed path before connecting (the server would too, later and vaguer).
    pub(crate) fn check_paths(&self) -> Result<(), CliError> {
        self.path().map_or(Ok(()), check_path)
    }
}

/// ZooKeeper's path rules that matter for typing mistakes.
pub(crate) fn check_path(path: &str) -> Result<(), CliError> {
    let bad = |why: &str| Err(CliError::Usage(format!("bad path {path:?}: {why}")));
    if !path.starts_with('/') {
        return bad("must start with '/'");
    }
    if path.len() > 1 && path.ends_with('/') {
        return bad("must not end with '/'");
    }
    if path.contains("//") {
        return bad("empty segment ('//')");
    }
    if path.split('/').any(|s| s == "." || s == "..") {
        return bad("'.' and '..' are not allowed");
    }
    if path.chars().any(|c| c == '\0' || c.is_control()) {
        return bad("control characters are not allowed");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert!(check_path("/").is_ok());
        assert!(check_path("/a/b-1").is_ok());
        for bad in ["a", "/a/", "/a//b", "/a/./b", "/a/..", "/a\u{1}"] {
            let err = check_path(bad).expect_err(bad);
            assert_eq!(err.exit_code(), 2, "{bad}");
        }
    }

    #[test]
    fn cli_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
