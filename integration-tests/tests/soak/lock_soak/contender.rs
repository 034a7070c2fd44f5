//! One contender: its own session (through its own proxies), acquire, work, release, round
//! after round, logging each hold; a new session when the old one ended.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::time::Instant;
use zk_client::{Client, Op, OpResult, SessionState, StateWatcher};
use zk_recipes::lock::{ExclusiveLock, FairLock, HandOff, LockGuard, LockState, ReadWriteLock};

use super::check::describe;
use super::{
    lock, parse_counter, Hold, Outcome, Reads, Resource, Role, Shared, Signal, Write, WriteStyle,
    EXCLUSIVE_LOCK, QUEUE_LOCK,
};

/// How long one `acquire` may wait (the lock recipes remove the queue node on timeout).
pub const ACQUIRE_LIMIT: Duration = Duration::from_secs(10);
/// Extra time before an `acquire` that ignores its own timeout is reported as hung.
const ACQUIRE_GRACE: Duration = Duration::from_secs(30);
/// Bound on the rounds of one contender (the run's time ends them long before).
const MAX_ROUNDS: usize = 10_000_000;

/// Who a contender is and where it connects.
#[derive(Debug, Clone)]
pub struct Spec {
    /// Its index.
    pub id: usize,
    /// Its role.
    pub role: Role,
    /// Its connect string: its own proxies, one per member, then the chroot.
    pub hosts: String,
    /// Seed of its pauses.
    pub seed: u64,
    /// Session timeout to ask for.
    pub session_timeout: Duration,
}

/// The lock of a contender's current session.
enum Locker {
    Queue(FairLock),
    Exclusive(ExclusiveLock),
}

impl Locker {
    /// The lock of `role`; queue locks wait with `hand_off` (the soak mixes both kinds of
    /// waiter in one queue).
    fn new(client: &Client, role: Role, hand_off: HandOff) -> Locker {
        let queue = || {
            ReadWriteLock::new(client.clone(), QUEUE_LOCK)
                .expect("queue lock path")
                .with_hand_off(hand_off)
        };
        match role {
            Role::FairFenced | Role::FairPlain => Locker::Queue(
                FairLock::new(client.clone(), QUEUE_LOCK)
                    .expect("queue lock path")
                    .with_hand_off(hand_off),
            ),
            Role::WriterFenced | Role::WriterPlain => Locker::Queue(queue().write_lock().clone()),
            Role::Reader => Locker::Queue(queue().read_lock().clone()),
            Role::ExclusiveFenced | Role::ExclusivePlain => Locker::Exclusive(
                ExclusiveLock::new(client.clone(), EXCLUSIVE_LOCK).expect("exclusive lock path"),
            ),
        }
    }

    async fn acquire(&self) -> zk_recipes::Result<LockGuard> {
        match self {
            Locker::Queue(l) => l.acquire_timeout(ACQUIRE_LIMIT).await,
            Locker::Exclusive(l) => l.acquire_timeout(ACQUIRE_LIMIT).await,
        }
    }
}

/// Runs rounds until `shared.stop`; returns the last session (still open) for the caller to
/// close once the ensemble is healthy again.
pub async fn run(spec: Spec, shared: Arc<Shared>) -> Option<Client> {
    let mut rng = StdRng::seed_from_u64(spec.seed);
    let mut current: Option<(Client, Locker)> = None;
    for _ in 0..MAX_ROUNDS {
        if shared.stop.is_cancelled() {
            break;
        }
        if current
            .as_ref()
            .is_some_and(|(c, _)| c.state().is_terminal())
        {
            current = None;
        }
        if current.is_none() {
            match connect(&spec).await {
                Some(client) => {
                    shared.count("sessions opened");
                    // Odd contenders hand over in one round trip, even ones the default way.
                    let hand_off = if spec.id % 2 == 1 {
                        HandOff::Prepared
                    } else {
                        HandOff::Lean
                    };
                    let locker = Locker::new(&client, spec.role, hand_off);
                    current = Some((client, locker));
                }
                None => {
                    shared.count("connect failed (retried)");
                    pause(&shared, Duration::from_millis(250)).await;
                    continue;
                }
            }
        }
        let Some((client, locker)) = current.as_ref() else {
            continue;
        };
        let acquired = tokio::select! {
            r = tokio::time::timeout(ACQUIRE_LIMIT + ACQUIRE_GRACE, locker.acquire()) => r,
            () = shared.stop.cancelled() => break,
        };
        match acquired {
            Ok(Ok(guard)) => {
                let hold = hold(&spec, &shared, client, guard, &mut rng).await;
                if shared.trace {
                    println!(
                        "[{:>7.1}s] hold: {}",
                        shared.secs(Instant::now()),
                        describe(&shared, &hold)
                    );
                }
                lock(&shared.holds).push(hold);
            }
            Ok(Err(e)) => {
                let what = acquire_error(&e);
                if shared.trace {
                    println!(
                        "[{:>7.1}s] contender {} ({}) session 0x{:x}: acquire: {e}",
                        shared.secs(Instant::now()),
                        spec.id,
                        spec.role.label(),
                        client.session_id()
                    );
                }
                shared.count(format!("acquire: {what}"));
                if what == "session ended" {
                    current = None;
                } else {
                    let ms = rng.gen_range(20..200);
                    pause(&shared, Duration::from_millis(ms)).await;
                }
            }
            Err(_) => {
                shared.count("acquire: overran its own timeout (session replaced)");
                eprintln!(
                    "[{:>7.1}s] contender {} ({}): acquire ran {:?} past its {:?} timeout",
                    shared.secs(Instant::now()),
                    spec.id,
                    spec.role.label(),
                    ACQUIRE_GRACE,
                    ACQUIRE_LIMIT
                );
                // Closed, not just dropped: tasks of the lock may still hold the client.
                if let Some((old, _)) = current.take() {
                    tokio::spawn(async move {
                        let _ = tokio::time::timeout(Duration::from_secs(10), old.close()).await;
                    });
                }
            }
        }
        let ms = rng.gen_range(0..30);
        pause(&shared, Duration::from_millis(ms)).await;
    }
    current.map(|(client, _)| client)
}

/// A new session through the contender's proxies, or `None` if none came up in time (the
/// ensemble may be without quorum).
async fn connect(spec: &Spec) -> Option<Client> {
    let builder = Client::builder(&spec.hosts).session_timeout(spec.session_timeout);
    let limit = spec.session_timeout * 3;
    match tokio::time::timeout(limit, builder.connect()).await {
        Ok(Ok(client)) => Some(client),
        _ => None,
    }
}

/// Sleeps `d`, or less if the run stops.
async fn pause(shared: &Shared, d: Duration) {
    tokio::select! {
        () = tokio::time::sleep(d) => {}
        () = shared.stop.cancelled() => {}
    }
}

/// A failed acquisition, by kind. `Client(SessionExpired)` and `LockLost(SessionEnded)` both
/// mean the session is over (the recipes report either for now).
fn acquire_error(e: &zk_recipes::Error) -> String {
    use zk_recipes::Error as E;
    match e {
        E::Timeout => "timeout".into(),
        E::LockLost(zk_recipes::LossReason::SessionEnded) => "session ended".into(),
        E::Client(c) if c.is_terminal() => "session ended".into(),
        E::Client(zk_client::Error::ConnectionLoss) => "connection loss".into(),
        other => other.to_string(),
    }
}

/// The first loss signal of a hold, shared by the recorder task and the holder.
type SignalSlot = Arc<Mutex<Option<(Instant, Signal)>>>;

/// Notes the time of the first change away from `Held` (guard) or `Connected` (session). The
/// time is taken after the change was seen, so it is never earlier than the change itself.
async fn record_signal(
    mut guard_states: zk_client::Transitions<LockState>,
    mut session: StateWatcher,
    slot: SignalSlot,
) {
    let signal = tokio::select! {
        seen = guard_states.wait_for(|s| s != LockState::Held) => Signal::Lock(seen),
        state = session.changed() => Signal::Session(state),
    };
    let now = Instant::now();
    lock(&slot).get_or_insert((now, signal));
}

/// What the holder knows right now without waiting: no loss signal so far, the same
/// connection as at the acquisition, connected, and the guard says `Held`. A first sign of
/// trouble found here becomes the hold's signal, timed now (after it happened).
fn look(client: &Client, guard: &LockGuard, epoch: u64, slot: &SignalSlot) -> bool {
    let (session, state) = (client.state(), guard.state());
    let fine = session == SessionState::Connected
        && state == LockState::Held
        && client.connection_epoch() == epoch;
    let mut first = lock(slot);
    if !fine {
        first.get_or_insert((Instant::now(), Signal::Seen(session, state)));
    }
    fine && first.is_none()
}

/// One hold: watch for loss signals, do the role's work while none came, release.
async fn hold(
    spec: &Spec,
    shared: &Shared,
    client: &Client,
    guard: LockGuard,
    rng: &mut StdRng,
) -> Hold {
    let acquired = Instant::now();
    lock(&shared.holding).insert(spec.id);
    let epoch = client.connection_epoch();
    let slot: SignalSlot = Arc::default();
    // Watchers first, then a look: a change in between is seen by one or the other.
    let (guard_states, session_states) = (guard.watch(), client.watch());
    look(client, &guard, epoch, &slot);
    let recorder = tokio::spawn(record_signal(guard_states, session_states, slot.clone()));
    let mut record = Hold {
        contender: spec.id,
        role: spec.role,
        session: client.session_id(),
        node: guard.node_name().to_owned(),
        token: guard.fencing_token(),
        acquired,
        released: acquired,
        signal: None,
        write: None,
        reads: None,
        release_ok: false,
    };
    let work = Work {
        shared,
        client,
        guard: &guard,
        epoch,
        slot: &slot,
    };
    match spec.role.write_style() {
        Some(style) => record.write = work.write(spec.role.resource(), style, rng).await,
        None => record.reads = work.read_twice(rng).await,
    }
    // Half the holders that saw a signal finish slowly, writing nothing: if suspended they
    // wait (bounded) to learn whether the lock comes back or is lost, as a careful holder
    // would, then they linger up to a session timeout before releasing. Meanwhile the lock
    // may pass on (their session expired): an overlap after a signal, which the checks allow
    // and measure (how long after the signal the next holder got the lock).
    if !work.look() && rng.gen_bool(0.5) {
        if guard.state() == LockState::Suspended {
            let mut states = guard.watch();
            let outcome = tokio::time::timeout(
                spec.session_timeout * 2,
                states.wait_for(|s| s != LockState::Suspended),
            )
            .await;
            shared.count(match outcome {
                Ok(LockState::Held) => "suspension waited out: held again",
                Ok(_) => "suspension waited out: lost",
                Err(_) => "suspension waited out: still suspended",
            });
        }
        let linger = rng.gen_range(Duration::ZERO..spec.session_timeout);
        tokio::time::sleep(linger).await;
    }
    record.released = Instant::now();
    lock(&shared.holding).remove(&spec.id);
    recorder.abort();
    record.signal = *lock(&slot);
    if record.signal.is_some() {
        shared.count("holds with a loss signal");
    }
    // Only `is_ok()` is used: the Ok value of `release` may change.
    record.release_ok = guard.release().await.is_ok();
    if !record.release_ok {
        shared.count("release returned an error");
    }
    record
}

/// The work of one hold.
struct Work<'a> {
    shared: &'a Shared,
    client: &'a Client,
    guard: &'a LockGuard,
    epoch: u64,
    slot: &'a SignalSlot,
}

impl Work<'_> {
    fn look(&self) -> bool {
        look(self.client, self.guard, self.epoch, self.slot)
    }

    /// Read-modify-write of the resource's counter, unless a loss signal came first.
    async fn write(
        &self,
        resource: Resource,
        style: WriteStyle,
        rng: &mut StdRng,
    ) -> Option<Write> {
        let counter = resource.counter();
        if !self.look() {
            self.shared.count("write skipped: signal before the read");
            return None;
        }
        let (data, stat) = match self.client.get_data(counter).await {
            Ok(read) => read,
            Err(e) => {
                self.shared.count(format!("counter read failed: {e}"));
                return None;
            }
        };
        let read = parse_counter(&data).expect("counter holds a number");
        // The window between read and write, where an overlap would do its damage.
        tokio::time::sleep(work_time(rng)).await;
        // Taken before the check: a signal recorded before this instant was visible to it.
        let issued = Instant::now();
        if !self.look() {
            self.shared.count("write skipped: signal after the read");
            return None;
        }
        let next = (read + 1).to_string();
        let outcome = match style {
            WriteStyle::Fenced => {
                let ops = [Op::set_data(counter, next.as_bytes(), None)];
                match self.guard.fenced(&ops).await {
                    Ok(results) => match results.first() {
                        Some(OpResult::SetData { stat }) => Outcome::Applied { mzxid: stat.mzxid },
                        other => panic!("fenced set_data answered {other:?}"),
                    },
                    Err(zk_recipes::Error::Client(e)) => client_outcome(&e),
                    Err(e) => Outcome::Refused(e.to_string()),
                }
            }
            WriteStyle::Plain => {
                let write = self
                    .client
                    .set_data(counter, next.as_bytes(), Some(stat.version));
                match write.await {
                    Ok(stat) => Outcome::Applied { mzxid: stat.mzxid },
                    Err(e) => client_outcome(&e),
                }
            }
        };
        let completed = Instant::now();
        if let Outcome::Refused(why) = &outcome {
            self.shared.count(format!("write refused: {why}"));
        }
        Some(Write {
            style,
            read,
            issued,
            completed,
            outcome,
        })
    }

    /// A reader's check: the queue counter read twice, a little apart, must not move while
    /// the read lock is held.
    async fn read_twice(&self, rng: &mut StdRng) -> Option<Reads> {
        let counter = Resource::Queue.counter();
        if !self.look() {
            self.shared
                .count("reads skipped: signal before the first read");
            return None;
        }
        let first = self.client.get_data(counter).await;
        tokio::time::sleep(work_time(rng)).await;
        let second = self.client.get_data(counter).await;
        let unbroken = self.look();
        match (first, second) {
            (Ok((_, a)), Ok((_, b))) => Some(Reads {
                first: a.mzxid,
                second: b.mzxid,
                unbroken,
            }),
            (Err(e), _) | (_, Err(e)) => {
                self.shared.count(format!("counter read failed: {e}"));
                None
            }
        }
    }
}

/// How long a holder works between its two requests: mostly a few milliseconds, sometimes
/// long enough for a fault to strike while it holds the lock.
fn work_time(rng: &mut StdRng) -> Duration {
    let ms = if rng.gen_bool(0.2) {
        rng.gen_range(100..800)
    } else {
        rng.gen_range(0..15)
    };
    Duration::from_millis(ms)
}

/// A failed write, by what it means for the counter.
fn client_outcome(e: &zk_client::Error) -> Outcome {
    use zk_client::Error as E;
    match e {
        // On the wire when the connection dropped, or never sent: may have applied.
        E::ConnectionLoss | E::Timeout => Outcome::Uncertain,
        E::BadVersion => Outcome::Conflict,
        E::Multi {
            index: 0,
            code: zk_client::ErrorCode::NoNode,
        } => Outcome::Refused("fence: the lock node is gone".into()),
        e if e.is_terminal() => Outcome::Refused("session ended".into()),
        e => Outcome::Refused(e.to_string()),
    }
}
