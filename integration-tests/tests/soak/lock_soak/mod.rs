//! The lock soak's parts: who contends ([`Role`]), what each hold leaves in the shared log
//! ([`Hold`]), the contender loop ([`contender`]), the fault lanes ([`faults`]) and the checks
//! run over the log at the end ([`check`]). `tests/soak/locks.rs` wires them together.
#![allow(unreachable_pub)]

pub mod check;
pub mod contender;
pub mod faults;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use zk_client::SessionState;
use zk_recipes::lock::LockState;

/// Base of the queue shared by `FairLock` and both sides of `ReadWriteLock` (Curator's layout:
/// one queue, ordered by sequence number whatever the node's lock name).
pub const QUEUE_LOCK: &str = "/locks/q";
/// Counter written under the queue lock.
pub const QUEUE_COUNTER: &str = "/counter-q";
/// The `ExclusiveLock`'s node (a different layout: the node is the lock).
pub const EXCLUSIVE_LOCK: &str = "/locks/ex";
/// Counter written under the exclusive lock.
pub const EXCLUSIVE_COUNTER: &str = "/counter-ex";

/// Settings of one run, from the environment.
#[derive(Debug, Clone)]
pub struct Config {
    /// `SOAK_SEED`: drives the fault schedule and the contenders' pauses (not the
    /// interleaving, which the machine decides). Default: from the clock.
    pub seed: u64,
    /// `SOAK_SECS`: how long contenders run and faults are injected (default 20 s, CI's short
    /// version: the whole test, ensemble start and end checks included, takes about 30 s).
    pub duration: Duration,
    /// Session timeout every contender asks for (the harness's `tickTime=500` allows it).
    pub session_timeout: Duration,
}

impl Config {
    /// Reads `SOAK_SEED` and `SOAK_SECS`; panics on a value that does not parse, so a replay
    /// never silently runs another schedule.
    pub fn from_env() -> Config {
        let seed = match std::env::var("SOAK_SEED") {
            Ok(s) => s
                .trim()
                .parse()
                .unwrap_or_else(|_| panic!("SOAK_SEED={s:?}: expected an unsigned integer")),
            Err(_) => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64 % 1_000_000_000)
                .unwrap_or(1),
        };
        let secs: f64 = match std::env::var("SOAK_SECS") {
            Ok(s) => s
                .trim()
                .parse()
                .unwrap_or_else(|_| panic!("SOAK_SECS={s:?}: expected a number of seconds")),
            Err(_) => 20.0,
        };
        assert!(
            secs > 0.0 && secs < 7.0 * 86_400.0,
            "SOAK_SECS={secs}: out of range"
        );
        Config {
            seed,
            duration: Duration::from_secs_f64(secs),
            session_timeout: Duration::from_secs(3),
        }
    }
}

/// The lock a contender queues on, or the resource its holds protect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Resource {
    /// [`QUEUE_LOCK`] and [`QUEUE_COUNTER`].
    Queue,
    /// [`EXCLUSIVE_LOCK`] and [`EXCLUSIVE_COUNTER`].
    Exclusive,
}

impl Resource {
    /// The counter its writers increment.
    pub fn counter(self) -> &'static str {
        match self {
            Resource::Queue => QUEUE_COUNTER,
            Resource::Exclusive => EXCLUSIVE_COUNTER,
        }
    }
}

/// How a writer writes the counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteStyle {
    /// `guard.fenced(&[set_data(counter, v + 1, any version)])`: only the fence protects it,
    /// so an overlap shows as a lost update.
    Fenced,
    /// `client.set_data(counter, v + 1, Some(version read))`: an overlap shows as a
    /// `BadVersion`.
    Plain,
}

/// What a contender is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `FairLock` on the queue, fenced writes.
    FairFenced,
    /// `FairLock` on the queue, plain versioned writes.
    FairPlain,
    /// `ReadWriteLock::write_lock` on the queue, fenced writes.
    WriterFenced,
    /// `ReadWriteLock::write_lock` on the queue, plain versioned writes.
    WriterPlain,
    /// `ReadWriteLock::read_lock` on the queue: reads the counter twice, which must not move.
    Reader,
    /// `ExclusiveLock`, fenced writes.
    ExclusiveFenced,
    /// `ExclusiveLock`, plain versioned writes.
    ExclusivePlain,
}

impl Role {
    /// The contenders of a run, one per entry.
    pub const MIX: [Role; 8] = [
        Role::FairFenced,
        Role::FairPlain,
        Role::WriterFenced,
        Role::WriterPlain,
        Role::Reader,
        Role::Reader,
        Role::ExclusiveFenced,
        Role::ExclusivePlain,
    ];

    /// A short name for reports.
    pub fn label(self) -> &'static str {
        match self {
            Role::FairFenced => "fair-fenced",
            Role::FairPlain => "fair-plain",
            Role::WriterFenced => "rw-write-fenced",
            Role::WriterPlain => "rw-write-plain",
            Role::Reader => "rw-read",
            Role::ExclusiveFenced => "exclusive-fenced",
            Role::ExclusivePlain => "exclusive-plain",
        }
    }

    /// Where it contends.
    pub fn resource(self) -> Resource {
        match self {
            Role::ExclusiveFenced | Role::ExclusivePlain => Resource::Exclusive,
            _ => Resource::Queue,
        }
    }

    /// How it writes, `None` for a reader.
    pub fn write_style(self) -> Option<WriteStyle> {
        match self {
            Role::FairFenced | Role::WriterFenced | Role::ExclusiveFenced => {
                Some(WriteStyle::Fenced)
            }
            Role::FairPlain | Role::WriterPlain | Role::ExclusivePlain => Some(WriteStyle::Plain),
            Role::Reader => None,
        }
    }
}

/// The first loss signal a holder saw during a hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// The holder looked and found the session not `Connected`, the guard not `Held`, or
    /// another connection than at the acquisition.
    Seen(SessionState, LockState),
    /// The guard's state left `Held`.
    Lock(LockState),
    /// The session left `Connected`.
    Session(SessionState),
}

/// How a counter write ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The server applied it; the counter's `mzxid` after it.
    Applied {
        /// Zxid of the write.
        mzxid: i64,
    },
    /// Connection lost with the request on the wire: it may or may not have applied.
    Uncertain,
    /// A plain write got `BadVersion`: someone wrote between our read and our write.
    Conflict,
    /// Refused without applying (the fence, or the session ended); why.
    Refused(String),
}

/// One counter write of a hold.
#[derive(Debug, Clone)]
pub struct Write {
    /// How it was written.
    pub style: WriteStyle,
    /// The value read (the write sets `read + 1`).
    pub read: i64,
    /// Taken before the last check for a loss signal, then the write was sent.
    pub issued: Instant,
    /// When the call returned.
    pub completed: Instant,
    /// What happened.
    pub outcome: Outcome,
}

/// A reader's two reads of the queue counter.
#[derive(Debug, Clone, Copy)]
pub struct Reads {
    /// `mzxid` of the counter at the first read.
    pub first: i64,
    /// `mzxid` at the second read.
    pub second: i64,
    /// No loss signal and the same connection from the acquisition to the second reply: the
    /// lock was certainly held across both reads.
    pub unbroken: bool,
}

/// One successful acquisition, as the shared log keeps it.
#[derive(Debug, Clone)]
pub struct Hold {
    /// Index of the contender.
    pub contender: usize,
    /// Its role.
    pub role: Role,
    /// Its session.
    pub session: i64,
    /// The lock node's name.
    pub node: String,
    /// The guard's fencing token (czxid of the lock node).
    pub token: i64,
    /// When `acquire` returned.
    pub acquired: Instant,
    /// When `release` was called.
    pub released: Instant,
    /// The first loss signal seen before `released`, and when.
    pub signal: Option<(Instant, Signal)>,
    /// The writer's counter write, if it made one.
    pub write: Option<Write>,
    /// The reader's reads, if it made them.
    pub reads: Option<Reads>,
    /// Whether `release()` returned `Ok`.
    pub release_ok: bool,
}

impl Hold {
    /// The part of the hold the holder could rely on: from the acquisition to the first loss
    /// signal or the release, whichever came first.
    pub fn trusted_end(&self) -> Instant {
        match self.signal {
            Some((at, _)) if at < self.released => at,
            _ => self.released,
        }
    }
}

/// State shared by the contenders, the fault lanes and the report.
#[derive(Debug)]
pub struct Shared {
    /// Start of the run (every printed time is relative to it).
    pub t0: Instant,
    /// Cancelled when the run's time is up.
    pub stop: CancellationToken,
    /// The log of holds.
    pub holds: Mutex<Vec<Hold>>,
    /// Counts of everything that is not a hold (errors, skipped writes, sessions...).
    pub events: Mutex<BTreeMap<String, u64>>,
    /// Faults injected so far, by kind (and a detail or two, such as dropped create replies
    /// that really fired).
    pub faults: Mutex<BTreeMap<&'static str, u64>>,
    /// Contenders holding a lock now (from `acquire` to `release`), for faults to aim at.
    pub holding: Mutex<BTreeSet<usize>>,
    /// `SOAK_TRACE` is set: print every hold and failed acquisition as it happens.
    pub trace: bool,
}

impl Shared {
    /// An empty log starting now.
    pub fn new() -> Shared {
        Shared {
            t0: Instant::now(),
            stop: CancellationToken::new(),
            holds: Mutex::new(Vec::new()),
            events: Mutex::new(BTreeMap::new()),
            faults: Mutex::new(BTreeMap::new()),
            holding: Mutex::new(BTreeSet::new()),
            trace: std::env::var_os("SOAK_TRACE").is_some(),
        }
    }

    /// Counts one `event`.
    pub fn count(&self, event: impl Into<String>) {
        *lock(&self.events).entry(event.into()).or_default() += 1;
    }

    /// Counts one fault of kind `kind`.
    pub fn fault(&self, kind: &'static str) {
        *lock(&self.faults).entry(kind).or_default() += 1;
    }

    /// Faults so far (details in parentheses not included).
    pub fn fault_total(&self) -> u64 {
        lock(&self.faults)
            .iter()
            .filter(|(kind, _)| !kind.contains('('))
            .map(|(_, n)| n)
            .sum()
    }

    /// Seconds since the start, for printing.
    pub fn secs(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.t0).as_secs_f64()
    }
}

/// Locks a mutex, ignoring poisoning (a panicking contender must not hide the log).
pub fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Parses a counter node's data.
pub fn parse_counter(data: &[u8]) -> Option<i64> {
    std::str::from_utf8(data).ok()?.trim().parse().ok()
}
