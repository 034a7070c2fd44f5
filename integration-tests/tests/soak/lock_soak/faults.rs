//! The fault lanes: one breaks ensemble members (a member or the leader killed and restarted,
//! quorum lost for longer than a session), the other a contender's network (its connections
//! reset, a partition a bit shorter or longer than its session, a dropped create reply,
//! delays; half of these aim at a contender holding a lock). Each lane injects a fault every
//! 0.5-3 s and heals it within a bounded time before the next; the two lanes overlap. Kinds
//! are dealt from a shuffled deck, so even a short run sees each kind.

use std::time::Duration;

use futures_util::future::join_all;
use integration_tests::proxy::{Cut, Mode, Proxy};
use integration_tests::Ensemble;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use tokio::time::Instant;

use super::{lock, Role, Shared};

/// Bound on the faults of one lane (the run's time ends it long before).
const MAX_FAULTS: usize = 1_000_000;

/// What the faults act on.
pub struct Target<'a> {
    /// The ensemble.
    pub ens: &'a Ensemble,
    /// Each contender's proxies, one per member.
    pub proxies: &'a [Vec<Proxy>],
    /// Each contender's role (for the fault log).
    pub roles: &'a [Role],
    /// The run's log and clock.
    pub shared: &'a Shared,
    /// The contenders' session timeout.
    pub session_timeout: Duration,
    /// No fault starts after this.
    pub stop_at: Instant,
}

/// A kind of fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    KillMember,
    KillLeader,
    QuorumLoss,
    Reset,
    Blackhole,
    DropCreateReply,
    Delay,
}

impl Fault {
    /// One deck of the member lane. A quorum loss ends every session (no server answers for
    /// longer than a session) and stalls the locks until the servers expire them, so it is
    /// dealt once in five.
    const MEMBER: [Fault; 5] = [
        Fault::KillMember,
        Fault::KillMember,
        Fault::KillLeader,
        Fault::KillLeader,
        Fault::QuorumLoss,
    ];
    /// One deck of the network lane.
    const NETWORK: [Fault; 4] = [
        Fault::Reset,
        Fault::Blackhole,
        Fault::DropCreateReply,
        Fault::Delay,
    ];

    fn label(self) -> &'static str {
        match self {
            Fault::KillMember => "kill member",
            Fault::KillLeader => "kill leader",
            Fault::QuorumLoss => "quorum loss",
            Fault::Reset => "proxy reset",
            Fault::Blackhole => "blackhole",
            Fault::DropCreateReply => "drop create reply",
            Fault::Delay => "delay",
        }
    }
}

/// Runs both lanes until `target.stop_at` (the fault in progress is healed first), counting
/// faults in `target.shared`.
pub async fn run(target: &Target<'_>, seed: u64) {
    tokio::join!(
        lane(target, &Fault::MEMBER, seed ^ 0x6d65_6d62),
        lane(target, &Fault::NETWORK, seed ^ 0x6e65_7477),
    );
}

async fn lane(t: &Target<'_>, kinds: &[Fault], seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut deck: Vec<Fault> = Vec::new();
    for _ in 0..MAX_FAULTS {
        let gap = Duration::from_millis(rng.gen_range(500..3000));
        tokio::time::sleep_until((Instant::now() + gap).min(t.stop_at)).await;
        if Instant::now() >= t.stop_at {
            break;
        }
        if deck.is_empty() {
            deck = kinds.to_vec();
            deck.shuffle(&mut rng);
        }
        let Some(fault) = deck.pop() else { break };
        inject(t, fault, &mut rng).await;
    }
}

fn note(t: &Target<'_>, what: String) {
    println!("[{:>7.1}s] fault: {what}", t.shared.secs(Instant::now()));
}

fn millis(rng: &mut StdRng, range: std::ops::Range<u64>) -> Duration {
    Duration::from_millis(rng.gen_range(range))
}

/// Injects one fault, counts it, and heals it.
async fn inject(t: &Target<'_>, fault: Fault, rng: &mut StdRng) {
    let members = t.ens.len();
    // Half the network faults aim at a contender holding a lock, if one does.
    let holders: Vec<usize> = lock(&t.shared.holding).iter().copied().collect();
    let victim = match holders.choose(rng) {
        Some(&holder) if rng.gen_bool(0.5) => holder,
        _ => rng.gen_range(0..t.proxies.len()),
    };
    let who = format!("contender {victim} ({})", t.roles[victim].label());
    let proxies = &t.proxies[victim];
    match fault {
        Fault::KillMember | Fault::KillLeader => {
            let leader = if fault == Fault::KillLeader {
                t.ens.leader().await
            } else {
                None
            };
            let member = leader.unwrap_or_else(|| rng.gen_range(0..members));
            let down = millis(rng, 500..3000);
            // No leader to be found (an election under way): a member it is.
            let (kind, role) = match leader {
                Some(_) => (Fault::KillLeader, " (leader)"),
                None => (Fault::KillMember, ""),
            };
            t.shared.fault(kind.label());
            note(
                t,
                format!("kill member {member}{role}, restart after {down:.1?}"),
            );
            t.ens.kill(member).await;
            tokio::time::sleep(down).await;
            t.ens.start(member).await;
            t.ens.wait_quorum().await;
        }
        Fault::QuorumLoss => {
            let mut order: Vec<usize> = (0..members).collect();
            order.shuffle(rng);
            let stopped = &order[..members / 2 + 1];
            t.shared.fault(fault.label());
            let down = t.session_timeout + millis(rng, 500..2500);
            note(
                t,
                format!("quorum loss: stop members {stopped:?} for {down:.1?}"),
            );
            join_all(stopped.iter().map(|&i| t.ens.stop(i))).await;
            tokio::time::sleep(down).await;
            join_all(stopped.iter().map(|&i| t.ens.start(i))).await;
            t.ens.wait_quorum().await;
        }
        Fault::Reset => {
            t.shared.fault(fault.label());
            note(t, format!("reset the connections of {who}"));
            for p in proxies {
                p.cut(Cut::Reset);
            }
        }
        Fault::Blackhole => {
            t.shared.fault(fault.label());
            let span = t.session_timeout.mul_f64(rng.gen_range(0.5..1.6));
            note(t, format!("blackhole {who} for {span:.1?}"));
            set_modes(proxies, Mode::Blackhole);
            tokio::time::sleep(span).await;
            set_modes(proxies, Mode::Pass);
        }
        Fault::DropCreateReply => {
            // Arm the proxy the contender is connected through, if any.
            let open = proxies.iter().position(|p| p.stats().open > 0);
            let p = &proxies[open.unwrap_or_else(|| rng.gen_range(0..proxies.len()))];
            note(t, format!("drop the next create reply of {who}"));
            t.shared.fault(fault.label());
            p.drop_next_create_reply();
            if p.wait_create_reply_dropped(Duration::from_secs(3)).await {
                t.shared.fault("drop create reply (fired within 3 s)");
            }
        }
        Fault::Delay => {
            t.shared.fault(fault.label());
            let delay = millis(rng, 10..600);
            let span = millis(rng, 1000..4000);
            note(t, format!("delay {who} by {delay:.1?} for {span:.1?}"));
            set_modes(proxies, Mode::Delay(delay));
            tokio::time::sleep(span).await;
            set_modes(proxies, Mode::Pass);
        }
    }
}

fn set_modes(proxies: &[Proxy], mode: Mode) {
    for p in proxies {
        p.set_mode(mode);
    }
}
