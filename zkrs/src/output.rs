//! Text or JSON on standard output.

use std::io::Write;

use serde::Serialize;

/// Where results go: one JSON document per line with `--json`, text otherwise.
pub(crate) struct Output {
    json: bool,
}

impl Output {
    pub(crate) fn new(json: bool) -> Self {
        Self { json }
    }

    /// Whether output is JSON.
    pub(crate) fn json(&self) -> bool {
        self.json
    }

    /// Prints `value` as one JSON line, or `text()` (which should end without a newline).
    pub(crate) fn emit<T: Serialize>(&self, value: &T, text: impl FnOnce() -> String) {
        let line = if self.json {
            serde_json::to_string(value).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
        } else {
            text()
        };
        let mut stdout = std::io::stdout().lock();
        // A closed pipe (`zkrs ls -R / | head`) is not an error worth a message.
        let _ = writeln!(stdout, "{line}");
        let _ = stdout.flush();
    }
}

/// Data as text when it is UTF-8, else `None` (JSON then carries hex).
pub(crate) fn utf8(data: &[u8]) -> Option<String> {
    std::str::from_utf8(data).ok().map(str::to_owned)
}

/// Lower-case hex of `data`.
pub(crate) fn hex(data: &[u8]) -> String {
    data.iter().map(|b| format!("{b:02x}")).collect()
}

/// A session id as ZooKeeper prints it (`0x` + hex).
pub(crate) fn session_hex(id: i64) -> String {
    format!("0x{id:x}")
}
