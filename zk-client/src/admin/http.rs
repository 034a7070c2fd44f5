//! The AdminServer: the same commands over HTTP (feature `admin-http`).
//!
//! ZooKeeper 3.5+ serves its commands as JSON at `http://<host>:<admin.serverPort>/commands/<name>`
//! (Jetty; `admin.enableServer=true`, port 8080 by default). Unlike the four-letter words it
//! needs no whitelist, and it answers in JSON. [`AdminServer`] sends one `GET` per command
//! (HTTP/1.0, so the answer ends with the connection) and parses the answer with
//! `serde_json`; `mntr`, `ruok` and `isro` are typed as their four-letter words are, every
//! command is available as JSON through [`AdminServer::command`].

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::{short, AdminError, Monitor, DEFAULT_MAX_ANSWER, DEFAULT_TIMEOUT};

/// One server's AdminServer. Cheap to clone; holds no connection.
///
/// ```no_run
/// # async fn f() -> Result<(), zk_client::admin::AdminError> {
/// use zk_client::admin::AdminServer;
/// let admin = AdminServer::new("127.0.0.1:8080");
/// let mntr = admin.mntr().await?;
/// println!("{:?} with {} znodes", mntr.mode, mntr.znode_count);
/// let conf = admin.command("conf").await?;
/// println!("client port {}", conf["client_port"]);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminServer {
    addr: String,
    timeout: Duration,
    max_answer: usize,
}

impl AdminServer {
    /// The AdminServer at `addr` (`host:port`, the `admin.serverPort`), with
    /// [`DEFAULT_TIMEOUT`].
    pub fn new(addr: impl Into<String>) -> AdminServer {
        AdminServer {
            addr: addr.into(),
            timeout: DEFAULT_TIMEOUT,
            max_answer: DEFAULT_MAX_ANSWER,
        }
    }

    /// Bounds each exchange (connect, request, read to the end) by `timeout`.
    pub fn timeout(mut self, timeout: Duration) -> AdminServer {
        self.timeout = timeout;
        self
    }

    /// Caps an answer at `max` bytes (default [`DEFAULT_MAX_ANSWER`]).
    pub fn max_answer(mut self, max: usize) -> AdminServer {
        self.max_answer = max;
        self
    }

    /// The address.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Runs command `name` (`ruok`, `mntr`/`monitor`, `conf`/`configuration`,
    /// `cons`/`connections`, `srvr`/`server_stats`, `wchs`/`watch_summary`, `envi`,
    /// `isro`/`is_read_only`, ...) and returns its JSON answer.
    ///
    /// # Errors
    ///
    /// `InvalidCommand` for a name that is not a plain word (nothing sent); `Io`, `Timeout`,
    /// `TooLarge`; `Unknown` when the server does not know the command ("Unknown command",
    /// HTTP 404); `Unauthorized` when it refuses it (401/403: 3.9's authenticated commands);
    /// `NotServing` when the server says
    /// it is not serving; `Malformed` for an answer that is not a JSON object, or one whose
    /// `error` field is set.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future closes the connection; the commands typed here only read.
    pub async fn command(&self, name: &str) -> Result<Value, AdminError> {
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(AdminError::InvalidCommand(name.to_owned()));
        }
        let get = get(&self.addr, name, self.max_answer);
        let answer = match tokio::time::timeout(self.timeout, get).await {
            Ok(Ok(Some(bytes))) => bytes,
            Ok(Ok(None)) => {
                return Err(AdminError::TooLarge {
                    addr: self.addr.clone(),
                    command: name.to_owned(),
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
                    command: name.to_owned(),
                    after: self.timeout,
                })
            }
        };
        self.interpret(name, &answer)
    }

    /// Status line and JSON body of an HTTP answer to `name`.
    fn interpret(&self, name: &str, answer: &[u8]) -> Result<Value, AdminError> {
        let malformed = |reason: String| AdminError::Malformed {
            addr: self.addr.clone(),
            command: name.to_owned(),
            reason,
        };
        let text = String::from_utf8_lossy(answer);
        let (head, body) = text
            .split_once("\r\n\r\n")
            .ok_or_else(|| malformed(format!("not an HTTP answer: {:?}", short(&text))))?;
        let status: u16 = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| malformed(format!("no HTTP status in {:?}", short(head))))?;
        let (addr, command) = (self.addr.clone(), name.to_owned());
        match status {
            401 | 403 => return Err(AdminError::Unauthorized { addr, command }),
            404 => return Err(AdminError::Unknown { addr, command }),
            _ => {}
        }
        let value: Value = serde_json::from_str(body.trim())
            .map_err(|e| malformed(format!("HTTP {status}, not JSON ({e}): {:?}", short(body))))?;
        let error = value.get("error").filter(|e| !e.is_null());
        match error {
            Some(e) => {
                let e = e.as_str().map_or_else(|| e.to_string(), str::to_owned);
                if e.contains("not currently serving") {
                    Err(AdminError::NotServing {
                        addr: self.addr.clone(),
                    })
                } else if e.starts_with("Unknown command") || e.contains("not found") {
                    Err(AdminError::Unknown {
                        addr: self.addr.clone(),
                        command: name.to_owned(),
                    })
                } else {
                    Err(malformed(e))
                }
            }
            None if status == 200 && value.is_object() => Ok(value),
            None => Err(malformed(format!("HTTP {status}: {:?}", short(body)))),
        }
    }

    /// `ruok`: the server process answers (not that it serves).
    ///
    /// # Errors
    ///
    /// As [`command`](Self::command).
    ///
    /// # Cancel safety
    ///
    /// As [`command`](Self::command).
    pub async fn ruok(&self) -> Result<(), AdminError> {
        self.command("ruok").await.map(drop)
    }

    /// `isro`: whether the server is read-only (a member cut off from its quorum).
    ///
    /// # Errors
    ///
    /// As [`command`](Self::command); `Malformed` without a boolean `read_only`.
    ///
    /// # Cancel safety
    ///
    /// As [`command`](Self::command).
    pub async fn isro(&self) -> Result<bool, AdminError> {
        let value = self.command("is_read_only").await?;
        value
            .get("read_only")
            .and_then(Value::as_bool)
            .ok_or_else(|| AdminError::Malformed {
                addr: self.addr.clone(),
                command: "is_read_only".into(),
                reason: format!("no read_only in {}", short(&value.to_string())),
            })
    }

    /// `mntr` (`monitor`), typed as the four-letter word's [`Monitor`]: the JSON keys get the
    /// word's `zk_` prefix (`server_state` is `zk_server_state`), numbers and strings become
    /// the values as written; [`Monitor::raw`] holds the JSON.
    ///
    /// # Errors
    ///
    /// As [`command`](Self::command); `Malformed` when a key the typed fields need is
    /// missing.
    ///
    /// # Cancel safety
    ///
    /// As [`command`](Self::command).
    pub async fn mntr(&self) -> Result<Monitor, AdminError> {
        let value = self.command("monitor").await?;
        monitor_from_json(&value).map_err(|reason| AdminError::Malformed {
            addr: self.addr.clone(),
            command: "monitor".into(),
            reason,
        })
    }
}

/// The `monitor` JSON as [`Monitor`]: scalar fields as `zk_<key>\t<value>` lines.
fn monitor_from_json(value: &Value) -> Result<Monitor, String> {
    let object = value
        .as_object()
        .ok_or_else(|| "not a JSON object".to_owned())?;
    let mut text = String::new();
    for (key, v) in object {
        let v = match v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => continue,
        };
        if key == "command" || key == "error" || v.contains(['\n', '\t']) {
            continue;
        }
        text.push_str(&format!("zk_{key}\t{v}\n"));
    }
    let mut monitor = Monitor::parse_text(&text)?;
    monitor.raw = value.to_string();
    Ok(monitor)
}

/// `GET /commands/<name>` over HTTP/1.0; the whole answer, `None` when over `max` bytes.
async fn get(addr: &str, name: &str, max: usize) -> std::io::Result<Option<Vec<u8>>> {
    let mut stream = TcpStream::connect(addr).await?;
    let request = format!(
        "GET /commands/{name} HTTP/1.0\r\nHost: {addr}\r\nAccept: application/json\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await?;
    let mut answer = Vec::new();
    let mut limited = (&mut stream).take(max as u64 + 1);
    limited.read_to_end(&mut answer).await?;
    Ok((answer.len() <= max).then_some(answer))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_as_json_or_named_errors() {
        let admin = AdminServer::new("h:1");
        let ok = admin
            .interpret(
                "ruok",
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"command\":\"ruok\",\"error\":null}",
            )
            .unwrap();
        assert_eq!(ok["command"], "ruok");
        assert!(matches!(
            admin.interpret("nope", b"HTTP/1.1 404 Not Found\r\n\r\n"),
            Err(AdminError::Unknown { .. })
        ));
        assert!(matches!(
            admin.interpret("mntr", b"HTTP/1.1 403 Forbidden\r\n\r\n"),
            Err(AdminError::Unauthorized { .. })
        ));
        assert!(matches!(
            admin.interpret(
                "mntr",
                b"HTTP/1.1 200 OK\r\n\r\n{\"error\":\"This ZooKeeper instance is not currently serving requests\"}"
            ),
            Err(AdminError::NotServing { .. })
        ));
        for junk in [
            &b"garbage"[..],
            b"HTTP/1.1 200 OK\r\n\r\nnot json",
            b"HTTP/1.1 500 x\r\n\r\n{}",
        ] {
            assert!(matches!(
                admin.interpret("x", junk),
                Err(AdminError::Malformed { .. })
            ));
        }
    }

    #[test]
    fn monitor_json_becomes_the_typed_monitor() {
        let json: Value = serde_json::from_str(
            r#"{"version":"3.8.0-5a02a05eddb59aee6ac762f7ea82e92a68eb9c0f, built on 2022-02-25","avg_latency":0.5,
                "outstanding_requests":0,"num_alive_connections":2,"znode_count":7,"watch_count":1,
                "ephemerals_count":0,"approximate_data_size":120,"server_state":"leader",
                "synced_followers":2,"command":"monitor","error":null}"#,
        )
        .unwrap();
        let m = monitor_from_json(&json).unwrap();
        assert_eq!(m.mode, super::super::Mode::Leader);
        assert_eq!((m.znode_count, m.synced_followers), (7, Some(2)));
        assert!(monitor_from_json(&serde_json::json!({"znode_count": 1})).is_err());
        assert!(monitor_from_json(&serde_json::json!([1])).is_err());
    }
}
