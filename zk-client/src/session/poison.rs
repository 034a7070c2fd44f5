//! Poison requests: requests a server answers by dropping the connection.
//!
//! Some requests are never answered: the server closes the connection on reading them. A
//! ZooKeeper server does it to a packet above its `jute.maxbuffer` (often set lower than the
//! client's default), ClickHouse Keeper to every opcode it does not know. The client fails
//! every call in flight with `ConnectionLoss` and reconnects; callers (a cache resyncing, a
//! lock retrying) send the same request again, and the connection drops again: a reconnect
//! storm, and on servers that do not resume sessions a session storm.
//!
//! **The rule.** A connection loss counts against the requests in flight that were written
//! at most [`SUSPECT_WINDOW`] (1 s) before it: they got no reply, and neither did anything
//! written after them (replies come in order). For the next [`PAIR_WINDOW`] (60 s), or until
//! an identical request (a [`Fingerprint`]: opcode, server path, size within the same power
//! of two) is answered, such a suspect is sent *alone*: once every earlier request is
//! answered, and nothing goes out after it until it is. So the next loss tells which one it
//! was: a suspect that loses its connection again while alone on the wire is *quarantined*;
//! requests that merely rode along at the first loss (the read a lock pipelines after its
//! create, a cache's reads before its `addWatch`) are answered and cleared instead. For the
//! quarantine (60 s by default, see `ClientBuilder::poison_quarantine`) identical requests
//! fail at once with [`Error::ServerDropsRequest`](crate::Error::ServerDropsRequest) and
//! nothing is sent. The two calls caught in the losses themselves got `ConnectionLoss`
//! (nothing is ever re-sent by the client). After the quarantine one identical request goes
//! out again; if the connection drops on it again (within one more quarantine period), it is
//! quarantined again at once, so a request that stays poison costs one dropped connection per
//! quarantine period.
//!
//! Only a connection the server *closed in order* counts (the client read end of stream: a
//! FIN), which is how servers refuse a request: ZooKeeper 3.8 shuts its output down before
//! closing the socket of a packet above its `jute.maxbuffer` (measured: the client reads end
//! of stream, 100 of 100 tries from 70 kB to 1 MB, pipelined or alone), and ClickHouse
//! Keeper returns from its handler, closing the socket, on an opcode it does not know. A
//! reset (RST: a proxy or middlebox cutting connections, `SO_LINGER` 0) or any other socket
//! error, read timeouts, protocol errors and the client's own moves break a streak instead:
//! a flaky network that resets connections never quarantines a request.
//!
//! **Scope.** The ledger is shared by every session of one lineage: the connections of one
//! [`Client`](crate::Client), and every generation of a
//! [`SessionManager`](crate::SessionManager), whose new sessions would otherwise start
//! unaware and pay for the poison again.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tracing::{debug, warn};
use zk_proto::OpCode;

use super::pending::InFlight;
use super::{Disconnect, Phase, Session};
use crate::error::Error;

/// A connection loss counts against the requests written at most this long before it.
pub(crate) const SUSPECT_WINDOW: Duration = Duration::from_secs(1);
/// Two losses are "in a row" when at most this far apart (and no other loss came between).
pub(crate) const PAIR_WINDOW: Duration = Duration::from_secs(60);
/// Default quarantine of a poison request (see `ClientBuilder::poison_quarantine`).
pub(crate) const DEFAULT_QUARANTINE: Duration = Duration::from_secs(60);
/// Bytes of the body that identify a request whose body does not start with a path (a
/// `multi`, a `reconfig`).
const PREFIX_BYTES: usize = 256;

/// What makes two requests "the same" here: the opcode, the server path (or the first bytes
/// of a body without one), and the size class (the power of two of the body length), so a
/// small write to a path is not refused because a huge one to it was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fingerprint(u64);

impl Fingerprint {
    /// The fingerprint of a request of `op` with this encoded body (FNV-1a: a few ns for a
    /// usual path; computed for every request written).
    pub(crate) fn of(op: OpCode, body: &[u8]) -> Fingerprint {
        const PRIME: u64 = 0x0000_0100_0000_01b3;
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let size_class = usize::BITS - body.len().leading_zeros();
        let key = path_bytes(op, body).unwrap_or_else(|| &body[..body.len().min(PREFIX_BYTES)]);
        for b in op
            .as_i32()
            .to_be_bytes()
            .iter()
            .chain(size_class.to_be_bytes().iter())
            .chain(key.iter())
        {
            h = (h ^ u64::from(*b)).wrapping_mul(PRIME);
        }
        Fingerprint(h)
    }
}

/// The encoded path at the start of the body (jute `ustring`: length, then UTF-8), for the
/// requests whose first field is their path.
fn path_bytes(op: OpCode, body: &[u8]) -> Option<&[u8]> {
    if !crate::trace::starts_with_path(op) {
        return None;
    }
    let len = body.get(..4)?;
    let len = usize::try_from(i32::from_be_bytes(len.try_into().ok()?)).ok()?;
    body.get(4..4usize.checked_add(len)?)
}

/// The path of a request, for the error message.
fn path_of(op: OpCode, body: &[u8]) -> Option<String> {
    path_bytes(op, body).map(|p| String::from_utf8_lossy(p).into_owned())
}

/// What one lineage of sessions knows about poison requests. Cloning shares it.
#[derive(Debug, Clone)]
pub(crate) struct PoisonLedger {
    inner: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    /// Whether any request is remembered (checked without the lock on every submit).
    any: AtomicBool,
    quarantine: Duration,
    ledger: Mutex<Ledger>,
}

#[derive(Debug, Default)]
struct Ledger {
    /// The suspects of the last counted connection loss, and when it happened.
    last: Option<(Instant, Vec<Fingerprint>)>,
    /// Quarantined requests, and past ones still remembered.
    entries: Vec<Entry>,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    print: Fingerprint,
    /// Identical requests are refused until then.
    until: Instant,
    /// One more drop re-quarantines it at once until then; forgotten after.
    remembered: Instant,
}

impl PoisonLedger {
    /// A ledger whose quarantine lasts `quarantine` (zero: never quarantine anything).
    pub(crate) fn new(quarantine: Duration) -> Self {
        Self {
            inner: Arc::new(Shared {
                any: AtomicBool::new(false),
                quarantine,
                ledger: Mutex::new(Ledger::default()),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Ledger> {
        self.inner
            .ledger
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether a request with this fingerprint must go out alone: in flight at the last
    /// counted loss (less than [`PAIR_WINDOW`] ago), or remembered as poison.
    pub(super) fn suspected(&self, print: Fingerprint, now: Instant) -> bool {
        if !self.inner.any.load(Ordering::Acquire) {
            return false;
        }
        let ledger = self.lock();
        let recent = ledger.last.as_ref().is_some_and(|(at, prints)| {
            now.saturating_duration_since(*at) <= PAIR_WINDOW && prints.contains(&print)
        });
        recent || ledger.entries.iter().any(|e| e.print == print)
    }

    /// An identical request was answered: it is not poison (any more).
    fn exonerate(&self, print: Fingerprint, now: Instant) {
        let mut ledger = self.lock();
        if let Some((_, prints)) = &mut ledger.last {
            prints.retain(|p| *p != print);
        }
        ledger.entries.retain(|e| e.print != print || now < e.until);
        self.update_any(&ledger);
    }

    fn update_any(&self, ledger: &Ledger) {
        let any =
            !ledger.entries.is_empty() || ledger.last.as_ref().is_some_and(|l| !l.1.is_empty());
        self.inner.any.store(any, Ordering::Release);
    }

    /// How long a request with this fingerprint is still refused, if it is.
    fn refused(&self, print: Fingerprint, now: Instant) -> Option<Duration> {
        if !self.inner.any.load(Ordering::Acquire) {
            return None;
        }
        let ledger = self.lock();
        ledger
            .entries
            .iter()
            .find(|e| e.print == print && now < e.until)
            .map(|e| e.until.saturating_duration_since(now))
    }

    /// A counted connection loss at `now` with these suspects (empty: a loss that breaks the
    /// streak). Returns the requests it quarantines.
    fn on_loss(&self, now: Instant, suspects: Vec<Fingerprint>) -> Vec<Fingerprint> {
        let quarantine = self.inner.quarantine;
        if quarantine.is_zero() {
            return Vec::new();
        }
        let mut ledger = self.lock();
        ledger.entries.retain(|e| now < e.remembered);
        let previous = ledger.last.take();
        let mut caught = Vec::new();
        for print in &suspects {
            let repeated = previous.as_ref().is_some_and(|(at, prints)| {
                now.saturating_duration_since(*at) <= PAIR_WINDOW && prints.contains(print)
            });
            let known = ledger.entries.iter().any(|e| e.print == *print);
            if (repeated || known) && !caught.contains(print) {
                caught.push(*print);
            }
        }
        for print in &caught {
            let entry = Entry {
                print: *print,
                until: now + quarantine,
                remembered: now + quarantine * 2,
            };
            match ledger.entries.iter_mut().find(|e| e.print == *print) {
                Some(e) => *e = entry,
                None => ledger.entries.push(entry),
            }
        }
        if !suspects.is_empty() {
            ledger.last = Some((now, suspects));
        }
        self.update_any(&ledger);
        caught
    }
}

impl Default for PoisonLedger {
    fn default() -> Self {
        Self::new(DEFAULT_QUARANTINE)
    }
}

impl Session {
    /// Uses `ledger` (shared with the other sessions of a lineage) instead of this session's
    /// own.
    pub(crate) fn share_poison(&mut self, ledger: PoisonLedger) {
        self.poison = ledger;
    }

    /// The error for a request the server is known to drop, if this one is.
    pub(super) fn poison_refusal(
        &self,
        print: Fingerprint,
        op: OpCode,
        body: &[u8],
        now: Instant,
    ) -> Option<Error> {
        let retry_after = self.poison.refused(print, now)?;
        Some(Error::ServerDropsRequest {
            op,
            path: path_of(op, body),
            retry_after,
        })
    }

    /// Whether a request may be written now: a suspect (see the module docs) only when
    /// nothing else is in flight, and nothing while a suspect is.
    pub(super) fn may_transmit(&self, print: Fingerprint, now: Instant) -> bool {
        if self.isolated.is_some() {
            return false;
        }
        self.pending.len() == 0 || !self.poison.suspected(print, now)
    }

    /// The request `xid` was written: note it if it is a suspect, which is then alone.
    pub(super) fn note_isolated(&mut self, xid: i32, print: Fingerprint, now: Instant) {
        if self.poison.suspected(print, now) {
            debug!(
                xid,
                "a request in flight at the last connection loss: sent alone"
            );
            self.isolated = Some((xid, print));
        }
    }

    /// Called as replies free the window: a suspect that was answered is cleared.
    pub(super) fn note_isolated_answered(&mut self) {
        if let Some((xid, print)) = self.isolated {
            if !self.pending.contains(xid) {
                self.isolated = None;
                self.poison.exonerate(print, self.last_recv);
            }
        }
    }

    /// The connection is lost: counts the loss against the requests written right before it
    /// (see the module docs), and fails the queued requests it quarantines.
    pub(super) fn note_loss(&mut self, reason: &Disconnect, now: Instant) {
        self.isolated = None;
        if !matches!(self.phase, Phase::Connected { .. }) {
            return;
        }
        // Only an orderly close by the server counts: a reset or a failed socket is the
        // network's doing, never a request's (see the module docs).
        let suspects: Vec<Fingerprint> = if *reason == Disconnect::Closed {
            self.pending
                .iter()
                .filter(|f| is_suspect(f, now))
                .map(|f| f.print)
                .collect()
        } else {
            Vec::new()
        };
        let caught = self.poison.on_loss(now, suspects);
        if caught.is_empty() {
            return;
        }
        for f in self.pending.iter().filter(|f| caught.contains(&f.print)) {
            warn!(
                op = ?f.op,
                "the server dropped the connection on this request twice in a row: refusing identical requests for a while"
            );
        }
        let waiting = std::mem::take(&mut self.waiting);
        for w in waiting {
            if caught.contains(&w.print) {
                let err = Error::ServerDropsRequest {
                    op: w.req.op,
                    path: path_of(w.req.op, &w.req.body),
                    retry_after: self.poison.inner.quarantine,
                };
                self.events.reply(w.req.reply, Err(err));
            } else {
                self.waiting.push_back(w);
            }
        }
    }
}

/// Whether a request in flight at a connection loss is suspected of causing it: written at
/// most [`SUSPECT_WINDOW`] before, and one a caller chose to send (not the session's own).
fn is_suspect(f: &InFlight, now: Instant) -> bool {
    now.saturating_duration_since(f.sent) <= SUSPECT_WINDOW
        && !matches!(f.op, OpCode::CloseSession | OpCode::Ping)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn print(op: OpCode, path: &str, extra: usize) -> Fingerprint {
        let mut body = (path.len() as i32).to_be_bytes().to_vec();
        body.extend(path.as_bytes());
        body.extend(std::iter::repeat_n(0, extra));
        Fingerprint::of(op, &body)
    }

    #[test]
    fn fingerprints_tell_opcode_path_and_size_class() {
        let a = print(OpCode::SetData, "/a", 10);
        assert_eq!(a, print(OpCode::SetData, "/a", 11));
        assert_ne!(a, print(OpCode::SetData, "/b", 10));
        assert_ne!(a, print(OpCode::GetData, "/a", 10));
        assert_ne!(a, print(OpCode::SetData, "/a", 5_000));
        // A body shorter than its declared path does not panic.
        let _ = Fingerprint::of(OpCode::GetData, &[0, 0, 0, 9, b'/']);
        let _ = Fingerprint::of(OpCode::GetData, &[0xff, 0xff, 0xff, 0xff]);
        let _ = Fingerprint::of(OpCode::GetData, &[]);
    }

    #[test]
    fn two_losses_in_a_row_quarantine_then_the_memory_fades() {
        let ledger = PoisonLedger::new(Duration::from_secs(60));
        let t0 = Instant::now();
        let (p, q) = (
            print(OpCode::AddWatch, "/a", 4),
            print(OpCode::GetData, "/b", 1),
        );
        assert!(ledger.on_loss(t0, vec![p, q]).is_empty());
        // A loss without suspects breaks the streak.
        assert!(ledger.on_loss(t0, Vec::new()).is_empty());
        assert!(ledger.on_loss(t0, vec![p]).is_empty());
        // Too far apart: not in a row.
        let t1 = t0 + PAIR_WINDOW + Duration::from_secs(1);
        assert!(ledger.on_loss(t1, vec![p]).is_empty());
        let t2 = t1 + Duration::from_secs(2);
        assert_eq!(ledger.on_loss(t2, vec![p, q]), vec![p]);
        assert_eq!(ledger.refused(p, t2), Some(Duration::from_secs(60)));
        assert_eq!(ledger.refused(q, t2), None);
        let t3 = t2 + Duration::from_secs(60);
        assert_eq!(ledger.refused(p, t3), None);
        // Dropped again on its first try after the quarantine: quarantined at once.
        assert_eq!(ledger.on_loss(t3, vec![p]), vec![p]);
        // Forgotten two quarantines after the last drop.
        let t4 = t3 + Duration::from_secs(121);
        assert!(ledger.on_loss(t4, vec![q]).is_empty());
        assert!(!ledger.suspected(p, t4));
        assert!(ledger.suspected(q, t4));
        // Answered: cleared.
        ledger.exonerate(q, t4);
        assert!(!ledger.suspected(q, t4));
        assert!(!ledger.inner.any.load(Ordering::Acquire));
    }

    #[test]
    fn a_zero_quarantine_turns_it_off() {
        let ledger = PoisonLedger::new(Duration::ZERO);
        let t0 = Instant::now();
        let p = print(OpCode::AddWatch, "/a", 4);
        for _ in 0..3 {
            assert!(ledger.on_loss(t0, vec![p]).is_empty());
        }
        assert_eq!(ledger.refused(p, t0), None);
    }
}
