//! The checks run over the log of holds and the counters' final values.
//!
//! In-process (the log): a hold counts from `acquire` returning to the first loss signal or
//! the start of `release`, whichever came first; two such spans must not overlap unless both
//! are readers. A holder that saw a signal may overlap a later holder, since its session may
//! have expired meanwhile; it must then not have written after the signal. Nobody but a
//! node's owner deletes lock nodes here, so a holder told its node was deleted while its
//! session lived on had its lock taken by someone else's delete.
//!
//! Server view (the counters): every write reads `v` and writes `v + 1`, so the applied
//! writes, in zxid order, must have strictly increasing values (a repeated value is a lost
//! update) and strictly increasing fencing tokens (one write per hold, holds in token order);
//! the final value must lie between the applied writes and those plus the uncertain ones; a
//! plain write must never meet `BadVersion`; a reader's two reads must see the same `mzxid`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use zk_recipes::{lock::LockState, LossReason};

use super::{Hold, Outcome, Resource, Role, Shared, Signal, WriteStyle};

/// Bound on the holds listed as active in the overlap sweep (readers only pile up so far).
const MAX_ACTIVE: usize = 100_000;

/// One broken promise.
#[derive(Debug, Clone)]
pub struct Violation {
    /// Its kind, for the totals.
    pub kind: &'static str,
    /// The lock it concerns, if one.
    pub resource: Option<Resource>,
    /// What happened, with the holds involved.
    pub detail: String,
}

/// Figures of one counter.
#[derive(Debug, Clone, Default)]
pub struct CounterFigures {
    /// Its value at the end (-1 while the run goes on).
    pub value: i64,
    /// Writes the server applied, by style.
    pub applied_fenced: u64,
    /// Plain writes applied.
    pub applied_plain: u64,
    /// Writes whose connection was lost with the write on the wire.
    pub uncertain: u64,
    /// Writes refused (fence, ended session).
    pub refused: u64,
}

/// What the checks found.
#[derive(Debug, Default)]
pub struct Findings {
    /// Every violation.
    pub violations: Vec<Violation>,
    /// Per counter.
    pub counters: BTreeMap<Resource, CounterFigures>,
    /// Conflicting holds that overlapped only after the earlier one's loss signal.
    pub overlaps_after_signal: u64,
    /// The shortest time from such a signal to the later holder's acquisition.
    pub closest_after_signal: Option<Duration>,
    /// Applied writes during which a signal arrived (the reply beat the disconnection, or the
    /// write waited out a short disconnection on the same session).
    pub applied_across_signal: u64,
    /// Reader holds whose two reads were compared.
    pub reads_compared: u64,
}

impl Findings {
    fn violation(&mut self, kind: &'static str, resource: Resource, detail: String) {
        self.violations.push(Violation {
            kind,
            resource: Some(resource),
            detail,
        });
    }

    /// Violations by kind and lock.
    pub fn totals(&self) -> BTreeMap<String, usize> {
        let mut totals = BTreeMap::new();
        for v in &self.violations {
            let key = match v.resource {
                Some(r) => format!("{} ({r:?})", v.kind),
                None => v.kind.to_owned(),
            };
            *totals.entry(key).or_default() += 1;
        }
        totals
    }
}

/// One line about a hold, for violation reports.
pub fn describe(shared: &Shared, h: &Hold) -> String {
    let mut s = format!(
        "contender {} {} session 0x{:x} node {} token {} held {:.3}..{:.3} s",
        h.contender,
        h.role.label(),
        h.session,
        h.node,
        h.token,
        shared.secs(h.acquired),
        shared.secs(h.released)
    );
    if let Some((at, signal)) = h.signal {
        let _ = write!(s, ", signal {signal:?} at {:.3} s", shared.secs(at));
    }
    if let Some(w) = &h.write {
        let _ = write!(
            s,
            ", write {:?} {}->{} issued {:.3} s returned {:.3} s: {:?}",
            w.style,
            w.read,
            w.read + 1,
            shared.secs(w.issued),
            shared.secs(w.completed),
            w.outcome
        );
    }
    if let Some(r) = &h.reads {
        let _ = write!(s, ", reads {r:?}");
    }
    s
}

/// Runs every check; without the counters' final values (a check while the run goes on),
/// those of the final values are left out.
pub fn check(
    shared: &Shared,
    holds: &[Hold],
    finals: Option<&BTreeMap<Resource, i64>>,
) -> Findings {
    let mut f = Findings::default();
    for resource in [Resource::Queue, Resource::Exclusive] {
        let mine: Vec<&Hold> = holds
            .iter()
            .filter(|h| h.role.resource() == resource)
            .collect();
        overlaps(shared, &mine, &mut f);
        taken_away(shared, &mine, &mut f);
        let value = finals.map(|values| values[&resource]);
        counter(shared, resource, &mine, value, &mut f);
    }
    for h in holds {
        if let Some(r) = h.reads {
            if r.unbroken {
                f.reads_compared += 1;
                if r.first != r.second {
                    f.violation(
                        "reader saw a write",
                        Resource::Queue,
                        format!(
                            "the counter changed under a read lock: {}",
                            describe(shared, h)
                        ),
                    );
                }
            }
        }
    }
    f
}

fn conflicting(a: &Hold, b: &Hold) -> bool {
    !(a.role == Role::Reader && b.role == Role::Reader)
}

/// Sweeps the holds of one lock in order of acquisition.
fn overlaps(shared: &Shared, holds: &[&Hold], f: &mut Findings) {
    let mut sorted = holds.to_vec();
    sorted.sort_by_key(|h| h.acquired);
    let mut active: Vec<&Hold> = Vec::new();
    for h in sorted {
        active.retain(|a| a.released > h.acquired);
        for a in &active {
            if !conflicting(a, h) {
                continue;
            }
            let (a_end, h_end) = (a.trusted_end(), h.trusted_end());
            if h.acquired < a_end && h.acquired < h_end {
                f.violation(
                    "overlapping holds",
                    h.role.resource(),
                    format!(
                        "two holders without a loss signal:\n    {}\n    {}",
                        describe(shared, a),
                        describe(shared, h)
                    ),
                );
            } else {
                f.overlaps_after_signal += 1;
                let gap = h.acquired.saturating_duration_since(a_end);
                if a_end <= h.acquired && f.closest_after_signal.is_none_or(|c| gap < c) {
                    f.closest_after_signal = Some(gap);
                }
            }
        }
        if active.len() < MAX_ACTIVE {
            active.push(h);
        }
    }
}

/// Nobody deletes lock nodes in the soak but their owners, so a holder told its node was
/// deleted while its session lived on (it held the lock again later) lost the lock to another
/// client's delete: the lock was taken from a live holder, and only the speed of the
/// notification kept the next holder from overlapping it.
fn taken_away(shared: &Shared, holds: &[&Hold], f: &mut Findings) {
    let mut last_by_session: BTreeMap<i64, tokio::time::Instant> = BTreeMap::new();
    for h in holds {
        let last = last_by_session.entry(h.session).or_insert(h.acquired);
        *last = (*last).max(h.acquired);
    }
    for h in holds {
        let deleted = matches!(
            h.signal,
            Some((_, Signal::Lock(LockState::Lost(LossReason::NodeDeleted))))
                | Some((_, Signal::Seen(_, LockState::Lost(LossReason::NodeDeleted))))
        );
        if deleted && last_by_session[&h.session] > h.released {
            f.violation(
                "lock node deleted under a live session",
                h.role.resource(),
                format!(
                    "the holder's session held the lock again later: {}",
                    describe(shared, h)
                ),
            );
        }
    }
}

/// The server's view of one counter.
fn counter(
    shared: &Shared,
    resource: Resource,
    holds: &[&Hold],
    value: Option<i64>,
    f: &mut Findings,
) {
    let mut figures = CounterFigures {
        value: value.unwrap_or(-1),
        ..CounterFigures::default()
    };
    // (mzxid, value written, hold)
    let mut applied: Vec<(i64, i64, &Hold)> = Vec::new();
    for h in holds {
        let Some(w) = &h.write else { continue };
        match &w.outcome {
            Outcome::Applied { mzxid } => {
                applied.push((*mzxid, w.read + 1, h));
                match w.style {
                    WriteStyle::Fenced => figures.applied_fenced += 1,
                    WriteStyle::Plain => figures.applied_plain += 1,
                }
                match h.signal {
                    Some((at, _)) if at <= w.issued => f.violation(
                        "write after a loss signal",
                        resource,
                        format!(
                            "applied though issued after the signal: {}",
                            describe(shared, h)
                        ),
                    ),
                    Some((at, _)) if at <= w.completed => f.applied_across_signal += 1,
                    _ => {}
                }
            }
            Outcome::Uncertain => figures.uncertain += 1,
            Outcome::Refused(_) => figures.refused += 1,
            Outcome::Conflict => f.violation(
                "conflicting write (BadVersion)",
                resource,
                format!(
                    "someone wrote between the holder's read and write: {}",
                    describe(shared, h)
                ),
            ),
        }
    }
    applied.sort_by_key(|(mzxid, _, _)| *mzxid);
    for pair in applied.windows(2) {
        let ((_, v0, h0), (_, v1, h1)) = (pair[0], pair[1]);
        if v1 <= v0 {
            f.violation(
                "lost update",
                resource,
                format!(
                    "{} wrote {v1} after {v0} was written:\n    {}\n    {}",
                    resource.counter(),
                    describe(shared, h0),
                    describe(shared, h1)
                ),
            );
        }
        if h1.token <= h0.token {
            f.violation(
                "fencing tokens out of order",
                resource,
                format!(
                    "{}: token {} wrote after token {}:\n    {}\n    {}",
                    resource.counter(),
                    h1.token,
                    h0.token,
                    describe(shared, h0),
                    describe(shared, h1)
                ),
            );
        }
    }
    let confirmed = applied.len() as i64;
    let uncertain = figures.uncertain as i64;
    f.counters.insert(resource, figures);
    let Some(value) = value else { return };
    if value < confirmed {
        f.violation(
            "lost update",
            resource,
            format!(
                "{} is {value} after {confirmed} applied increments",
                resource.counter()
            ),
        );
    }
    if value > confirmed + uncertain {
        f.violation(
            "unaccounted write",
            resource,
            format!(
                "{} is {value}: more than {confirmed} applied + {uncertain} uncertain increments",
                resource.counter()
            ),
        );
    }
}
