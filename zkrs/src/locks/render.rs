//! The text form of a lock queue.

use super::queue::{kind_label, library_label, Entry, Report, State};
use crate::time::short_age;

/// Longest owner data shown in the table (JSON has all of it).
const DATA_WIDTH: usize = 24;

/// A table, one row per contender in queue order, then the warnings.
pub(crate) fn table(report: &Report) -> String {
    let mut lines = vec![format!("{}: {} node(s)", report.path, report.entries.len())];
    if !report.entries.is_empty() {
        lines.push(format!(
            "{:>3}  {:<12} {:<55} {:<12} {:<6} {:>7}  {:<18} {}",
            "POS", "STATE", "NODE", "LIBRARY", "KIND", "AGE", "SESSION", "DATA"
        ));
    }
    for e in &report.entries {
        lines.push(row(e));
    }
    for w in &report.warnings {
        lines.push(format!("warning: {w}"));
    }
    lines.join("\n")
}

fn row(e: &Entry) -> String {
    let state = match (&e.state, e.waits_for_position) {
        (State::Holds, _) => "HOLDS".to_owned(),
        (State::Waits, Some(p)) => format!("waits for {p}"),
        (State::Waits, None) => "waits".to_owned(),
        (State::Lease, _) => "lease".to_owned(),
        (State::Unknown, _) => "?".to_owned(),
    };
    let mut data = e.data.clone().unwrap_or_default();
    if e.revoke_requested {
        data = "(revocation requested)".into();
    } else if data.chars().count() > DATA_WIDTH {
        data = data.chars().take(DATA_WIDTH - 1).collect::<String>() + "…";
    }
    format!(
        "{:>3}  {:<12} {:<55} {:<12} {:<6} {:>7}  {:<18} {}",
        e.position,
        state,
        e.name,
        library_label(e.library),
        kind_label(e.kind),
        short_age(e.age_ms),
        e.owner_session.as_deref().unwrap_or("persistent"),
        data.escape_debug()
    )
}
