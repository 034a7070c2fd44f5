//! Adaptive read batching of deep pipelines: whether the connection pauses after a read.
//!
//! A connection with many requests in flight can read its replies in two ways:
//! - **batched**: after a read that leaves at least [`DEEP_PIPELINE`] requests in flight, the
//!   task sits out [`READ_DEFER`] with its socket out of the reactor, then takes every reply
//!   that arrived meanwhile in one read and sends every request they freed in one write
//!   (~2-3 µs of client CPU per call);
//! - **eager**: every reply segment is read as it arrives (~5-9 µs per call).
//!
//! Which one moves more requests through one connection depends on the machine, not on the
//! client: where idle CPUs halt (a VM with halt-polling off, as `bench/README.md` measures),
//! the server's own thread hand-offs slow down while the client sleeps, and eager reading ran
//! 1.2-1.8x faster; on a busy machine, or with several sessions, batching was as fast. So the
//! client measures instead of guessing.
//!
//! **Trials.** While the pipeline stays deep, the two ways take turns in [`PAIRS`] pairs of
//! [`SLICE`]-long slices (batched then eager, then eager then batched, and so on, so a rate
//! that drifts during the trials favours neither), and each slice counts the replies it
//! completed. Each pair gives one ratio, eager's rate over batched's; eager wins only when
//! the median of the ratios is at least [`MARGIN`].
//! Adjacent slices and a median over pairs make the decision robust to what one slice alone
//! cannot tell apart: a shared machine's rate moved by a factor of two between consecutive
//! windows in `bench/` runs. A tie goes to batching, the cheaper way. Slices are long
//! ([`SLICE`]): in short ones the machine had not settled into the way being measured.
//!
//! **Stints.** The winner then runs for a stint, after which the trials run again: the stint
//! starts at [`FIRST_STINT`] and doubles while the same way keeps winning, up to
//! [`LONGEST_STINT`], so a steady load pays for the losing half of the trials
//! (`PAIRS * SLICE`) less and less often, and a changed machine is noticed within that time.
//!
//! Only time spent deep counts: a read that leaves the pipeline shallow abandons the running
//! slice (its count would measure the caller, not the connection), and a new connection
//! starts the trials over (a new server may behave differently). The state machine takes the
//! time as an argument, so its tests drive it with made-up clocks and counts.

use std::time::{Duration, Instant};

/// With at least this many requests in flight after a read, a pause is worth considering.
/// Shallow pipelines (sequential calls, a few concurrent callers) never pause.
pub(crate) const DEEP_PIPELINE: usize = 64;
/// How long a batched read pauses. Tokio's timer counts whole milliseconds, so it is 1-2 ms.
pub(crate) const READ_DEFER: Duration = Duration::from_millis(1);
/// How long one slice of a trial runs one way. Long enough for the machine to settle into
/// the way: slices of 20-100 ms measured batching faster on the same machine where whole
/// runs of each way measured eager 1.3x faster (the scheduler's view of a task that sleeps
/// changes over tens of milliseconds).
pub(crate) const SLICE: Duration = Duration::from_millis(250);
/// Pairs of slices in one trial (the median of their ratios decides).
pub(crate) const PAIRS: usize = 4;
/// Eager reading must move this much more than batching to be chosen (8 %: batching costs
/// about a third of the CPU, so a gain within the trials' noise is not worth it).
pub(crate) const MARGIN: f64 = 1.08;
/// The first stint of the winner after a trial.
pub(crate) const FIRST_STINT: Duration = Duration::from_secs(4);
/// The longest stint: the most seldom the trials run once settled.
pub(crate) const LONGEST_STINT: Duration = Duration::from_secs(32);
/// A pair's ratio when batching moved nothing in it (and the bound on any pair's ratio).
const RATIO_CLAMP: f64 = 4.0;

const SLICES: usize = 2 * PAIRS;

/// A way of reading a deep pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Way {
    /// Pause after a deep read.
    Batched,
    /// Read every segment as it arrives.
    Eager,
}

/// The way slice `i` of a trial runs: pairs alternate which way goes first.
fn way_of_slice(i: usize) -> Way {
    let first_half = i.is_multiple_of(2);
    let batched_first = (i / 2).is_multiple_of(2);
    if first_half == batched_first {
        Way::Batched
    } else {
        Way::Eager
    }
}

/// Where the controller is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// Running slice `slice` of a trial since `since` (`None` until its first deep read),
    /// with `replies` so far; `rates` holds the finished slices' replies per second.
    Trial {
        slice: usize,
        since: Option<Instant>,
        replies: u64,
        rates: [f64; SLICES],
    },
    /// Running the winner until `until`.
    Stint { way: Way, until: Instant },
}

impl Phase {
    fn new_trial() -> Self {
        Phase::Trial {
            slice: 0,
            since: None,
            replies: 0,
            rates: [0.0; SLICES],
        }
    }
}

/// The adaptive choice between batched and eager reading (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct ReadBatching {
    /// `false`: never pause (`ClientBuilder::batch_reads(false)`).
    enabled: bool,
    phase: Phase,
    /// The length of the next stint.
    stint: Duration,
    /// The last winner (the stint doubles while it stays the same).
    last: Option<Way>,
}

impl ReadBatching {
    /// A controller that starts with a trial; `enabled: false` never pauses.
    pub(crate) fn new(enabled: bool) -> Self {
        Self {
            enabled,
            phase: Phase::new_trial(),
            stint: FIRST_STINT,
            last: None,
        }
    }

    /// A new connection: the trials start over with the shortest stint.
    pub(crate) fn reset(&mut self) {
        self.phase = Phase::new_trial();
        self.stint = FIRST_STINT;
        self.last = None;
    }

    /// The way in use now.
    pub(crate) fn way(&self) -> Way {
        if !self.enabled {
            return Way::Eager;
        }
        match self.phase {
            Phase::Trial { slice, .. } => way_of_slice(slice),
            Phase::Stint { way, .. } => way,
        }
    }

    /// After a read at `now` that completed `replies` requests and left `in_flight` in
    /// flight: whether the connection pauses before its next read.
    pub(crate) fn after_read(&mut self, now: Instant, replies: u64, in_flight: usize) -> bool {
        if !self.enabled {
            return false;
        }
        let deep = in_flight >= DEEP_PIPELINE;
        self.phase = match self.phase {
            Phase::Trial {
                slice,
                since,
                replies: counted,
                mut rates,
            } => match (deep, since) {
                // The caller, not the connection, limits the rate: this slice measures
                // nothing. It starts again at the next deep read.
                (false, _) => Phase::Trial {
                    slice,
                    since: None,
                    replies: 0,
                    rates,
                },
                (true, None) => Phase::Trial {
                    slice,
                    since: Some(now),
                    replies: 0,
                    rates,
                },
                (true, Some(start)) => {
                    let counted = counted + replies;
                    let spent = now.saturating_duration_since(start);
                    if spent < SLICE {
                        Phase::Trial {
                            slice,
                            since,
                            replies: counted,
                            rates,
                        }
                    } else {
                        if let Some(rate) = rates.get_mut(slice) {
                            *rate = counted as f64 / spent.as_secs_f64();
                        }
                        if slice + 1 < SLICES {
                            Phase::Trial {
                                slice: slice + 1,
                                since: Some(now),
                                replies: 0,
                                rates,
                            }
                        } else {
                            self.decide(now, &rates)
                        }
                    }
                }
            },
            Phase::Stint { until, .. } if now >= until => Phase::new_trial(),
            stint @ Phase::Stint { .. } => stint,
        };
        deep && self.way() == Way::Batched
    }

    /// A trial is over: the winner's stint.
    fn decide(&mut self, now: Instant, rates: &[f64; SLICES]) -> Phase {
        let ratio = median_ratio(rates);
        let winner = if ratio >= MARGIN {
            Way::Eager
        } else {
            Way::Batched
        };
        self.stint = match self.last {
            Some(last) if last == winner => (self.stint * 2).min(LONGEST_STINT),
            _ => FIRST_STINT,
        };
        self.last = Some(winner);
        tracing::debug!(
            eager_over_batched = ratio,
            ?winner,
            stint_ms = self.stint.as_millis() as u64,
            "read batching: trial done"
        );
        Phase::Stint {
            way: winner,
            until: now + self.stint,
        }
    }
}

/// The median over the trial's pairs of eager's rate over batched's (of an even count, the
/// geometric mean of the middle two), so that one pair that saw a burst or a stall of the
/// machine does not decide. A pair in which batching moved nothing counts as
/// [`RATIO_CLAMP`].
fn median_ratio(rates: &[f64; SLICES]) -> f64 {
    let mut logs = [0.0; PAIRS];
    for (p, log) in logs.iter_mut().enumerate() {
        let (mut batched, mut eager) = (0.0, 0.0);
        for i in [2 * p, 2 * p + 1] {
            let rate = rates.get(i).copied().unwrap_or(0.0);
            match way_of_slice(i) {
                Way::Batched => batched = rate,
                Way::Eager => eager = rate,
            }
        }
        let ratio = if batched > 0.0 {
            eager / batched
        } else if eager > 0.0 {
            RATIO_CLAMP
        } else {
            1.0
        };
        *log = ratio.clamp(1.0 / RATIO_CLAMP, RATIO_CLAMP).ln();
    }
    logs.sort_by(f64::total_cmp);
    let middle = match (logs.get((PAIRS - 1) / 2), logs.get(PAIRS / 2)) {
        (Some(a), Some(b)) => (a + b) / 2.0,
        _ => 0.0,
    };
    middle.exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEEP: usize = 500;
    const MS: Duration = Duration::from_millis(1);
    /// One trial's length (a slice ends on the first read after it is due; reads here come
    /// every millisecond and the next slice starts at that read).
    const TRIAL: Duration = Duration::from_millis(SLICES as u64 * 250 + 1);

    /// A machine where each way has its own reply rate: a read every millisecond that
    /// completes `rate(way, now)` replies.
    fn machine(
        b: &mut ReadBatching,
        mut now: Instant,
        span: Duration,
        mut rate: impl FnMut(Way, Instant) -> u64,
    ) -> Instant {
        let end = now + span;
        while now < end {
            let replies = rate(b.way(), now);
            b.after_read(now, replies, DEEP);
            now += MS;
        }
        now
    }

    fn fixed(batched: u64, eager: u64) -> impl FnMut(Way, Instant) -> u64 {
        move |way, _| match way {
            Way::Batched => batched,
            Way::Eager => eager,
        }
    }

    #[test]
    fn the_test_clock_matches_the_slice() {
        assert_eq!(SLICE, Duration::from_millis(250));
    }

    #[test]
    fn slices_alternate_which_way_goes_first() {
        let ways: Vec<Way> = (0..4).map(way_of_slice).collect();
        assert_eq!(ways, [Way::Batched, Way::Eager, Way::Eager, Way::Batched]);
    }

    #[test]
    fn shallow_pipelines_never_pause() {
        let mut b = ReadBatching::new(true);
        let t = Instant::now();
        for i in 0..3_000u32 {
            assert!(!b.after_read(t + MS * i, 5, DEEP_PIPELINE - 1));
        }
        assert!(
            matches!(b.phase, Phase::Trial { slice: 0, .. }),
            "nothing was measured"
        );
    }

    #[test]
    fn disabled_never_pauses() {
        let mut b = ReadBatching::new(false);
        let t = Instant::now();
        for i in 0..5_000u32 {
            assert!(!b.after_read(t + MS * i, 20, DEEP));
        }
        assert_eq!(b.way(), Way::Eager);
    }

    #[test]
    fn batched_slices_pause_and_eager_ones_do_not() {
        let mut b = ReadBatching::new(true);
        let t = Instant::now();
        assert!(b.after_read(t, 20, DEEP), "slice 0 is batched");
        assert!(!b.after_read(t + SLICE, 20, DEEP), "slice 1 is eager");
        assert!(!b.after_read(t + 2 * SLICE, 20, DEEP), "slice 2 is eager");
        assert!(b.after_read(t + 3 * SLICE, 20, DEEP), "slice 3 is batched");
    }

    #[test]
    fn eager_wins_where_it_moves_more_and_batching_is_retried_later() {
        let mut b = ReadBatching::new(true);
        // Eager moves 30 % more.
        let t = machine(&mut b, Instant::now(), TRIAL + 10 * MS, fixed(20, 26));
        assert_eq!(b.way(), Way::Eager);
        // It keeps eager for the first stint, then tries again, and eager wins again.
        let t = machine(&mut b, t, FIRST_STINT - 100 * MS, fixed(20, 26));
        assert_eq!(b.way(), Way::Eager);
        let t = machine(&mut b, t, TRIAL + 200 * MS, fixed(20, 26));
        assert_eq!(b.way(), Way::Eager, "tried again and eager won again");
        assert_eq!(b.stint, 2 * FIRST_STINT);
        // The machine changes: batching is now as fast. Within the stint plus a trial,
        // batching is back.
        let _ = machine(&mut b, t, 2 * FIRST_STINT + TRIAL, fixed(26, 26));
        assert_eq!(b.way(), Way::Batched);
    }

    #[test]
    fn a_tie_or_a_small_gain_keeps_batching() {
        for eager in [20, 21] {
            let mut b = ReadBatching::new(true);
            let _ = machine(&mut b, Instant::now(), 3 * TRIAL, fixed(20, eager));
            assert_eq!(
                b.way(),
                Way::Batched,
                "eager at {eager} per read against 20"
            );
        }
    }

    #[test]
    fn a_drifting_rate_favours_neither_way() {
        // Both ways equal, but the machine speeds up 3x over the trial: the later slice of
        // a pair sees more. Alternating the order keeps the median at a tie.
        let start = Instant::now();
        let mut b = ReadBatching::new(true);
        let drift = move |_: Way, now: Instant| {
            let ms = now.saturating_duration_since(start).as_millis() as u64;
            10 + ms / 100
        };
        let _ = machine(&mut b, start, TRIAL + 5 * MS, drift);
        assert!(matches!(b.phase, Phase::Stint { .. }), "{:?}", b.phase);
        assert_eq!(b.way(), Way::Batched);
    }

    #[test]
    fn one_stalled_slice_does_not_decide() {
        // Batching is as fast as eager, but one batched slice stalls (the machine paused the
        // VM, say) and moves nothing: that pair alone cannot make eager win.
        let start = Instant::now();
        let mut b = ReadBatching::new(true);
        let stall = move |way: Way, now: Instant| {
            let slice = now.saturating_duration_since(start).as_millis() / 250;
            match way {
                Way::Batched if slice == 3 => 0,
                _ => 20,
            }
        };
        let _ = machine(&mut b, start, TRIAL + 5 * MS, stall);
        assert_eq!(b.way(), Way::Batched);
    }

    #[test]
    fn a_noisy_machine_still_shows_a_large_gain() {
        // Eager is 40 % faster, but one pair sees a burst in its batched slice (a
        // neighbour's load going away, say): the median over the pairs still picks eager.
        let start = Instant::now();
        let mut b = ReadBatching::new(true);
        let noisy = move |way: Way, now: Instant| {
            let pair = now.saturating_duration_since(start).as_millis() / 500;
            match way {
                Way::Eager => 28,
                Way::Batched if pair == 2 => 30,
                Way::Batched => 20,
            }
        };
        let _ = machine(&mut b, start, TRIAL + 5 * MS, noisy);
        assert_eq!(b.way(), Way::Eager);
    }

    #[test]
    fn settled_stints_double_up_to_the_longest() {
        let mut b = ReadBatching::new(true);
        let mut now = Instant::now();
        let mut trials = 0;
        let mut was_trial = false;
        // 200 s of a steady machine where batching wins: count how often the trials start.
        let end = now + Duration::from_secs(200);
        while now < end {
            b.after_read(now, 20, DEEP);
            let is_trial = matches!(b.phase, Phase::Trial { .. });
            if is_trial && !was_trial {
                trials += 1;
            }
            was_trial = is_trial;
            now += MS;
        }
        // The first trial, then after 4, 8, 16 and every 32 s (2 s trials in between).
        assert!((8..=10).contains(&trials), "{trials} trials in 200 s");
        assert_eq!(b.stint, LONGEST_STINT);
    }

    #[test]
    fn a_shallow_read_restarts_the_running_slice() {
        let mut b = ReadBatching::new(true);
        let t = Instant::now();
        // 200 ms of the first (batched) slice at a very low rate, then the caller goes quiet.
        let t = machine(&mut b, t, 200 * MS, fixed(1, 1));
        assert!(!b.after_read(t, 0, 3));
        // The slice starts over: its low count is gone, and eager's 10 % gain wins.
        let _ = machine(&mut b, t, TRIAL + 10 * MS, fixed(20, 22));
        assert_eq!(b.way(), Way::Eager);
    }

    #[test]
    fn reset_starts_the_trials_over() {
        let mut b = ReadBatching::new(true);
        let _ = machine(&mut b, Instant::now(), TRIAL + 10 * MS, fixed(20, 30));
        assert_eq!(b.way(), Way::Eager);
        b.reset();
        assert!(matches!(b.phase, Phase::Trial { slice: 0, .. }));
        assert_eq!(b.stint, FIRST_STINT);
    }
}
