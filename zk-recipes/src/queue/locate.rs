//! Our place in a queue, straight from a listing: the rules of [`naming::position`] over
//! [`naming::queue`], in one pass over the children without building the queue (no name
//! copied, no sort). Every turn of an acquisition lists the children and asks only this.

use super::naming::{self, Intent, Position};

/// Where `ours` stands among `children` for `intent`, `ignore` set aside (our own write node,
/// in a downgrade): exactly `position(&queue(children without ignore), ours, intent)`.
///
/// The node that blocks us is the contender (a child with a trailing sequence) nearest
/// before ours in queue order (sequence, then name) among those that block `intent`: every
/// one for a write, the write requests for a read. That is the largest such key below ours,
/// so one pass finds it and counts the blockers.
pub(crate) fn locate(
    children: &[String],
    ours: &str,
    intent: Intent,
    ignore: Option<&str>,
) -> Position {
    if ignore == Some(ours) {
        return Position::Missing;
    }
    let Some(our_sequence) = naming::sequence_of(ours) else {
        return Position::Missing;
    };
    let ours_key = (our_sequence, ours);
    let mut found = false;
    let mut blocker: Option<(i32, &str)> = None;
    let mut blockers = 0usize;
    for name in children.iter().map(String::as_str) {
        if name == ours {
            found = true;
            continue;
        }
        if ignore == Some(name) {
            continue;
        }
        let Some(sequence) = naming::sequence_of(name) else {
            continue;
        };
        let key = (sequence, name);
        if key >= ours_key || (intent == Intent::Read && naming::intent_of(name) != Intent::Write) {
            continue;
        }
        blockers += 1;
        if blocker.is_none_or(|nearest| key > nearest) {
            blocker = Some(key);
        }
    }
    match (found, blocker) {
        (false, _) => Position::Missing,
        (true, None) => Position::Acquired,
        (true, Some((_, node))) => Position::WaitFor {
            node: node.to_owned(),
            only: blockers == 1 && !(intent == Intent::Write && naming::may_gain_a_downgrade(node)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::naming::{position, queue};

    /// The reference: the public queue and position, `ignore` removed first.
    fn reference(
        children: &[String],
        ours: &str,
        intent: Intent,
        ignore: Option<&str>,
    ) -> Position {
        let mut q = queue(children);
        if let Some(skip) = ignore {
            q.retain(|c| c.name != skip);
        }
        position(&q, ours, intent)
    }

    /// A small deterministic generator (xorshift), so the cases are the same on every run.
    struct Gen(u64);
    impl Gen {
        fn next(&mut self, bound: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % bound
        }
    }

    /// A child name in one of the layouts a lock queue meets, sequences drawn from a small
    /// range so that ties (a downgrade's read node) and negative overflow occur.
    fn name(g: &mut Gen, i: usize) -> String {
        let seq = g.next(6) as i64 - 1;
        let suffix = if seq < 0 {
            format!("-{:09}", -seq)
        } else {
            format!("{seq:010}")
        };
        match g.next(7) {
            0 => format!("_c_{i:08x}-lock-{suffix}"),
            1 => format!("_c_{i:08x}-__READ__{suffix}"),
            2 => format!("_c_{i:08x}-__WRIT__{suffix}"),
            3 => format!("{i:032x}__rlock__{suffix}"),
            4 => format!("{i:032x}__lock__{suffix}"),
            5 => format!("no-sequence-{i}"),
            _ => format!("_c_{i:08x}-lock-00000000x{}", i % 10),
        }
    }

    #[test]
    fn agrees_with_queue_and_position_on_generated_listings() {
        let mut g = Gen(0x9e37_79b9_7f4a_7c15);
        let mut compared = 0;
        for _ in 0..2_000 {
            let len = g.next(9) as usize;
            let children: Vec<String> = (0..len).map(|i| name(&mut g, i)).collect();
            // Every listed child, and one that is not listed.
            let unlisted = std::iter::once("_c_ffffffff-lock-0000000003");
            for ours in children.iter().map(String::as_str).chain(unlisted) {
                for intent in [Intent::Read, Intent::Write] {
                    let ignores = std::iter::once(None)
                        .chain(children.iter().map(|c| Some(c.as_str())))
                        .take(3);
                    for ignore in ignores {
                        assert_eq!(
                            locate(&children, ours, intent, ignore),
                            reference(&children, ours, intent, ignore),
                            "{children:?}, ours {ours}, {intent:?}, ignore {ignore:?}"
                        );
                        compared += 1;
                    }
                }
            }
        }
        assert!(compared > 10_000, "{compared} cases");
    }

    #[test]
    fn a_mutex_waiter_watches_its_predecessor() {
        let children: Vec<String> = [
            "_c_b-lock-0000000002",
            "_c_c-lock-0000000003",
            "_c_a-lock-0000000001",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            locate(&children, "_c_c-lock-0000000003", Intent::Write, None),
            Position::WaitFor {
                node: "_c_b-lock-0000000002".into(),
                only: false
            }
        );
        assert_eq!(
            locate(&children, "_c_b-lock-0000000002", Intent::Write, None),
            Position::WaitFor {
                node: "_c_a-lock-0000000001".into(),
                only: true
            }
        );
        assert_eq!(
            locate(&children, "_c_a-lock-0000000001", Intent::Write, None),
            Position::Acquired
        );
        assert_eq!(
            locate(&children, "_c_d-lock-0000000004", Intent::Write, None),
            Position::Missing
        );
    }
}
