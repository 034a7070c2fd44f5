//! Operator commands: ZooKeeper's four-letter words, typed.
//!
//! A four-letter word is a plain TCP exchange on a server's client port, outside any session:
//! the client writes four ASCII letters, the server writes its answer and closes. Each method
//! of [`Server`] sends one word, bounds the whole exchange by a timeout, and parses the answer
//! into a struct that keeps the raw text too ([`ServerStats::raw`], ...).
//!
//! | method | word | answer |
//! | --- | --- | --- |
//! | [`ruok`](Server::ruok) | `ruok` | the process runs (not that it serves) |
//! | [`srvr`](Server::srvr), [`stat`](Server::stat) | `srvr`, `stat` | [`ServerStats`]: mode, zxid, counters (`stat` adds clients) |
//! | [`mntr`](Server::mntr) | `mntr` | [`Monitor`]: every `zk_*` metric |
//! | [`conf`](Server::conf) | `conf` | [`ServerConf`]: settings and the membership |
//! | [`cons`](Server::cons) | `cons` | [`Connection`]s with their session ids |
//! | [`wchs`](Server::wchs), [`wchc`](Server::wchc) | `wchs`, `wchc` | [`WatchSummary`], watched paths by session |
//! | [`envi`](Server::envi) | `envi` | [`Environment`]: Java properties |
//! | [`isro`](Server::isro) | `isro` | read-only or read-write |
//!
//! Servers answer only the words in their `4lw.commands.whitelist` (3.5+: `srvr` only by
//! default); any other word gets [`AdminError::NotAllowed`]. With the feature `admin-http`,
//! `AdminServer` sends the same commands to the server's AdminServer (HTTP, JSON), which
//! needs no whitelist. A member without quorum answers
//! most words with "not currently serving requests": [`AdminError::NotServing`].
//!
//! ```no_run
//! # async fn f() -> Result<(), zk_client::admin::AdminError> {
//! use std::time::Duration;
//! use zk_client::admin::{Mode, Server};
//!
//! let server = Server::new("127.0.0.1:2181").timeout(Duration::from_secs(2));
//! let stats = server.srvr().await?;
//! if stats.mode == Mode::Leader {
//!     println!("leader at zxid {:#x}", stats.zxid);
//! }
//! # Ok(()) }
//! ```

#[cfg(feature = "admin-http")]
mod http;
mod lists;
mod mntr;
mod stats;

use std::io;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[cfg(feature = "admin-http")]
#[cfg_attr(docsrs, doc(cfg(feature = "admin-http")))]
pub use http::AdminServer;
pub use lists::{Connection, Environment, ServerConf, SessionWatches, WatchSummary};
pub use mntr::Monitor;
pub use stats::{Mode, ServerStats};

/// Default bound of one exchange (connect, send, read the whole answer).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
/// Default cap on an answer's length (`cons`, `wchc` and `envi` grow with the server).
pub const DEFAULT_MAX_ANSWER: usize = 16 << 20;

/// Why an operator command failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum AdminError {
    /// The word is not four ASCII letters; nothing was sent.
    #[error("invalid four-letter word {0:?}")]
    InvalidCommand(String),
    /// Connecting, writing or reading failed (refused: the server is down).
    #[error("{addr}: {source}")]
    Io {
        /// The server address.
        addr: String,
        /// The socket error.
        source: Arc<io::Error>,
    },
    /// The exchange did not finish within the timeout.
    #[error("{addr}: no answer to {command} within {}ms", .after.as_millis())]
    Timeout {
        /// The server address.
        addr: String,
        /// The word sent.
        command: String,
        /// The bound.
        after: Duration,
    },
    /// The server does not allow this word (`4lw.commands.whitelist`).
    #[error("{addr}: {command} is not in the server's 4lw.commands.whitelist")]
    NotAllowed {
        /// The server address.
        addr: String,
        /// The word sent.
        command: String,
    },
    /// The AdminServer does not know this command ("Unknown command", HTTP 404).
    #[error("{addr}: the AdminServer has no command {command}")]
    Unknown {
        /// The server address.
        addr: String,
        /// The command sent.
        command: String,
    },
    /// The AdminServer refuses this command to us (HTTP 401 or 403: 3.9's authenticated
    /// commands).
    #[error("{addr}: the AdminServer refuses {command} (not authorized)")]
    Unauthorized {
        /// The server address.
        addr: String,
        /// The command sent.
        command: String,
    },
    /// The server runs but does not serve (a member without quorum, or still starting).
    #[error("{addr}: not currently serving requests")]
    NotServing {
        /// The server address.
        addr: String,
    },
    /// The answer is longer than the cap.
    #[error("{addr}: answer to {command} longer than {max} bytes")]
    TooLarge {
        /// The server address.
        addr: String,
        /// The word sent.
        command: String,
        /// The cap.
        max: usize,
    },
    /// The answer does not parse as this word's answer (an old or new server, or not
    /// ZooKeeper at all).
    #[error("{addr}: unexpected answer to {command}: {reason}")]
    Malformed {
        /// The server address.
        addr: String,
        /// The word sent.
        command: String,
        /// What did not parse.
        reason: String,
    },
}

impl AdminError {
    /// Whether the server could not be reached or did not answer in time (down, partitioned,
    /// paused), as opposed to answering something.
    pub fn is_unreachable(&self) -> bool {
        matches!(self, AdminError::Io { .. } | AdminError::Timeout { .. })
    }
}

/// An answer that does not parse as the word's answer; says what did not.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(pub String);

/// One server to send four-letter words to. Cheap to clone; holds no connection (each word is
/// its own TCP exchange).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    addr: String,
    timeout: Duration,
    max_answer: usize,
}

impl Server {
    /// A server at `addr` (`host:port`, the client port), with [`DEFAULT_TIMEOUT`].
    pub fn new(addr: impl Into<String>) -> Server {
        Server {
            addr: addr.into(),
            timeout: DEFAULT_TIMEOUT,
            max_answer: DEFAULT_MAX_ANSWER,
        }
    }

    /// Bounds each exchange (connect, send, read to the end) by `timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Server {
        self.timeout = timeout;
        self
    }

    /// Caps an answer at `max` bytes (default [`DEFAULT_MAX_ANSWER`]).
    pub fn max_answer(mut self, max: usize) -> Server {
        self.max_answer = max;
        self
    }

    /// The address.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Sends any four-letter word and returns the answer as text (invalid UTF-8 replaced).
    ///
    /// # Errors
    ///
    /// `InvalidCommand` for a word that is not four ASCII letters, `Io`, `Timeout`,
    /// `TooLarge`, `NotAllowed` when the server answers that the word is not whitelisted.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future closes the connection; the word has no effect on the server
    /// beyond the answer (this client sends no `kill`-style word by itself).
    pub async fn send(&self, command: &str) -> Result<String, AdminError> {
        if command.len() != 4 || !command.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(AdminError::InvalidCommand(command.to_owned()));
        }
        let exchange = exchange(&self.addr, command, self.max_answer);
        let answer = match tokio::time::timeout(self.timeout, exchange).await {
            Ok(Ok(Some(bytes))) => String::from_utf8_lossy(&bytes).into_owned(),
            Ok(Ok(None)) => {
                return Err(AdminError::TooLarge {
                    addr: self.addr.clone(),
                    command: command.to_owned(),
                    max: self.max_answer,
                })
            }
            Ok(Err(e)) => {
                return Err(AdminError::Io {
                    addr: self.addr.clone(),
                    source: Arc::new(e),
                })
            }
            Err(_) => {
                return Err(AdminError::Timeout {
                    addr: self.addr.clone(),
                    command: command.to_owned(),
                    after: self.timeout,
                })
            }
        };
        // "<cmd> is not executed because it is not in the whitelist." (3.5+)
        if answer.trim_end().ends_with("is not in the whitelist.") {
            return Err(AdminError::NotAllowed {
                addr: self.addr.clone(),
                command: command.to_owned(),
            });
        }
        Ok(answer)
    }

    /// Sends `command`, fails on "not currently serving", then parses.
    async fn parsed<T>(
        &self,
        command: &str,
        parse: impl FnOnce(&str) -> Result<T, String>,
    ) -> Result<T, AdminError> {
        let answer = self.send(command).await?;
        if answer.starts_with("This ZooKeeper instance is not currently serving requests") {
            return Err(AdminError::NotServing {
                addr: self.addr.clone(),
            });
        }
        parse(&answer).map_err(|reason| AdminError::Malformed {
            addr: self.addr.clone(),
            command: command.to_owned(),
            reason,
        })
    }

    /// `ruok`: `Ok(())` when the server answers `imok`. It answers so whenever the process
    /// runs, serving or not: use [`srvr`](Self::srvr) to know whether it serves.
    ///
    /// # Errors
    ///
    /// See [`send`](Self::send); `Malformed` for any other answer.
    ///
    /// # Cancel safety
    ///
    /// As [`send`](Self::send).
    pub async fn ruok(&self) -> Result<(), AdminError> {
        self.parsed("ruok", |a| match a.trim() {
            "imok" => Ok(()),
            other => Err(format!("expected imok, got {:?}", short(other))),
        })
        .await
    }

    /// `srvr`: the server's mode, zxid, latency and counters.
    ///
    /// # Errors
    ///
    /// See [`send`](Self::send); `NotServing` for a member without quorum; `Malformed`.
    ///
    /// # Cancel safety
    ///
    /// As [`send`](Self::send).
    pub async fn srvr(&self) -> Result<ServerStats, AdminError> {
        self.parsed("srvr", ServerStats::parse_text).await
    }

    /// `stat`: [`srvr`](Self::srvr) plus the client connections
    /// ([`ServerStats::clients`]).
    ///
    /// # Errors
    ///
    /// As [`srvr`](Self::srvr).
    ///
    /// # Cancel safety
    ///
    /// As [`send`](Self::send).
    pub async fn stat(&self) -> Result<ServerStats, AdminError> {
        self.parsed("stat", ServerStats::parse_text).await
    }

    /// `mntr`: every metric, as key/value pairs with typed accessors.
    ///
    /// # Errors
    ///
    /// As [`srvr`](Self::srvr).
    ///
    /// # Cancel safety
    ///
    /// As [`send`](Self::send).
    pub async fn mntr(&self) -> Result<Monitor, AdminError> {
        self.parsed("mntr", Monitor::parse_text).await
    }

    /// `conf`: the server's settings and, on a 3.5+ ensemble member, its view of the
    /// membership ([`ServerConf::ensemble`]).
    ///
    /// # Errors
    ///
    /// As [`srvr`](Self::srvr).
    ///
    /// # Cancel safety
    ///
    /// As [`send`](Self::send).
    pub async fn conf(&self) -> Result<ServerConf, AdminError> {
        self.parsed("conf", ServerConf::parse_text).await
    }

    /// `cons`: one entry per open connection (this exchange's own included, without a
    /// session id).
    ///
    /// # Errors
    ///
    /// As [`srvr`](Self::srvr).
    ///
    /// # Cancel safety
    ///
    /// As [`send`](Self::send).
    pub async fn cons(&self) -> Result<Vec<Connection>, AdminError> {
        self.parsed("cons", Connection::parse_all_text).await
    }

    /// `wchs`: how many connections watch how many paths.
    ///
    /// # Errors
    ///
    /// As [`srvr`](Self::srvr).
    ///
    /// # Cancel safety
    ///
    /// As [`send`](Self::send).
    pub async fn wchs(&self) -> Result<WatchSummary, AdminError> {
        self.parsed("wchs", WatchSummary::parse_text).await
    }

    /// `wchc`: the watched paths of each session. Can be expensive on a server with many
    /// watches (ZooKeeper's docs warn about it).
    ///
    /// # Errors
    ///
    /// As [`srvr`](Self::srvr).
    ///
    /// # Cancel safety
    ///
    /// As [`send`](Self::send).
    pub async fn wchc(&self) -> Result<Vec<SessionWatches>, AdminError> {
        self.parsed("wchc", SessionWatches::parse_all_text).await
    }

    /// `envi`: the server's environment (Java system properties, version, host).
    ///
    /// # Errors
    ///
    /// As [`srvr`](Self::srvr).
    ///
    /// # Cancel safety
    ///
    /// As [`send`](Self::send).
    pub async fn envi(&self) -> Result<Environment, AdminError> {
        self.parsed("envi", Environment::parse_text).await
    }

    /// `isro`: `true` when the server is in read-only mode (`ro`), `false` when read-write
    /// (`rw`).
    ///
    /// # Errors
    ///
    /// As [`srvr`](Self::srvr); `NotServing` when the server answers `null` (not serving).
    ///
    /// # Cancel safety
    ///
    /// As [`send`](Self::send).
    pub async fn isro(&self) -> Result<bool, AdminError> {
        let answer = self.send("isro").await?;
        match answer.trim() {
            "ro" => Ok(true),
            "rw" => Ok(false),
            "null" => Err(AdminError::NotServing {
                addr: self.addr.clone(),
            }),
            other => Err(AdminError::Malformed {
                addr: self.addr.clone(),
                command: "isro".into(),
                reason: format!("expected ro or rw, got {:?}", short(other)),
            }),
        }
    }
}

/// Connects, writes the word, reads to EOF; `None` when the answer passes `max`.
async fn exchange(addr: &str, command: &str, max: usize) -> io::Result<Option<Vec<u8>>> {
    let mut stream = TcpStream::connect(addr).await?;
    stream.write_all(command.as_bytes()).await?;
    let mut answer = Vec::new();
    let mut limited = (&mut stream).take(max as u64 + 1);
    limited.read_to_end(&mut answer).await?;
    Ok((answer.len() <= max).then_some(answer))
}

/// The first 60 characters of `s`, for error messages.
pub(crate) fn short(s: &str) -> String {
    s.chars().take(60).collect()
}

#[cfg(test)]
mod tests;
