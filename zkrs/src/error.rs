//! The tool's errors and their exit codes.

use std::time::Duration;

use zk_client::Error as ZkError;

/// Exit codes, documented in `zkrs --help`.
pub(crate) const EXIT_CODES_HELP: &str = "Exit codes: 0 ok; 1 other error; 2 bad input \
(usage, bad path, bad argument); 3 ensemble unreachable or connection lost; 4 no such node; \
5 not authorized (NoAuth, AuthFailed); 6 conflict (node exists, not empty, bad version).";

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    /// Bad input caught before anything was sent.
    #[error("{0}")]
    Usage(String),
    /// No server accepted a session in time.
    #[error("cannot reach ZooKeeper at {connect} within {}ms (check --connect / ZK_CONNECT)", .within.as_millis())]
    Unreachable {
        /// The connect string tried.
        connect: String,
        /// The bound used.
        within: Duration,
    },
    /// A ZooKeeper call failed.
    #[error("{what}: {source}")]
    Zk {
        /// What was being done, e.g. `get /a`.
        what: String,
        /// The client's error.
        source: ZkError,
    },
    /// Operator commands: these members did not answer (the others' answers were printed).
    #[error("no answer from {}", .0.join(", "))]
    MembersFailed(Vec<String>),
    /// Anything else.
    #[error("{0}")]
    Other(String),
}

impl CliError {
    /// Wraps a client error with what was being done.
    pub(crate) fn zk(what: impl Into<String>, source: ZkError) -> Self {
        CliError::Zk {
            what: what.into(),
            source,
        }
    }

    /// The process exit code.
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => 2,
            CliError::Unreachable { .. } | CliError::MembersFailed(_) => 3,
            CliError::Other(_) => 1,
            CliError::Zk { source, .. } => match source {
                ZkError::InvalidPath { .. } | ZkError::InvalidArgument(_) => 2,
                ZkError::ConnectionLoss | ZkError::Timeout | ZkError::SessionExpired => 3,
                ZkError::NoNode => 4,
                ZkError::NoAuth | ZkError::AuthFailed => 5,
                ZkError::NodeExists | ZkError::NotEmpty | ZkError::BadVersion => 6,
                _ => 1,
            },
        }
    }

    /// A stable name for scripts (`--json` errors carry it).
    pub(crate) fn kind(&self) -> &'static str {
        match self.exit_code() {
            2 => "bad_input",
            3 => "unreachable",
            4 => "no_node",
            5 => "not_authorized",
            6 => "conflict",
            _ => "error",
        }
    }
}
