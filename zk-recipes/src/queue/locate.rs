//! Our place in a queue, straight from a listing: the rules of [`naming::position`] over
//! [`naming::queue`], in one pass over the children without building the queue (no name
//! copied, no sort). Every turn of an acquisition lists the children and asks only this.

use super::naming::{self, Intent, Position};

/// Our place in a listing: the [`Position`], and when we wait behind more than one node, the
/// blocker next in line before the one we wait for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Place {
    /// What to do next.
    pub(crate) position: Position,
    /// With [`Position::WaitFor`] and more than one blocker: the blocker nearest before
    /// `node`. When it goes, `node` is usually at the head, and listing again then (while
    /// `node` holds) tells whether `node` is our only blocker, so that its release needs no
    /// listing on the hand-off's path.
    pub(crate) second: Option<String>,
}

/// Where `ours` stands among `children` for `intent`, `ignore` set aside (our own write node,
/// in a downgrade): exactly `position(&queue(children without ignore), ours, intent)`, and
/// the second-nearest blocker.
///
/// The node that blocks us is the contender (a child with a trailing sequence) nearest
/// before ours in queue order (sequence, then name) among those that block `intent`: every
/// one for a write, the write requests for a read. That is the largest such key below ours,
/// so one pass finds it (and the next largest) and counts the blockers.
pub(crate) fn locate(
    children: &[String],
    ours: &str,
    intent: Intent,
    ignore: Option<&str>,
) -> Place {
    let missing = Place {
        position: Position::Missing,
        second: None,
    };
    if ignore == Some(ours) {
        return missing;
    }
    let Some(our_sequence) = naming::sequence_of(ours) else {
        return missing;
    };
    let ours_key = (our_sequence, ours);
    let mut found = false;
    let mut blocker: Option<(i32, &str)> = None;
    let mut second: Option<(i32, &str)> = None;
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
            second = blocker;
            blocker = Some(key);
        } else if second.is_none_or(|next| key > next) {
            second = Some(key);
        }
    }
    match (found, blocker) {
        (false, _) => missing,
        (true, None) => Place {
            position: Position::Acquired,
            second: None,
        },
        (true, Some((_, node))) => Place {
            position: Position::WaitFor {
                node: node.to_owned(),
                only: blockers == 1
                    && !(intent == Intent::Write && naming::may_gain_a_downgrade(node)),
            },
            second: second.map(|(_, name)| name.to_owned()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::naming::{position, queue};

    /// The reference: the public queue and position, `ignore` removed first; the second
    /// blocker is the one before the blocker among those that block `intent`.
    fn reference(children: &[String], ours: &str, intent: Intent, ignore: Option<&str>) -> Place {
        let mut q = queue(children);
        if let Some(skip) = ignore {
            q.retain(|c| c.name != skip);
        }
        let position = position(&q, ours, intent);
        let second = match &position {
            Position::WaitFor { .. } => {
                let index = q.iter().position(|c| c.name == ours).unwrap_or(0);
                let blockers: Vec<&str> = q[..index]
                    .iter()
                    .filter(|c| intent == Intent::Write || c.intent == Intent::Write)
                    .map(|c| c.name.as_str())
                    .collect();
                blockers
                    .len()
                    .checked_sub(2)
                    .map(|i| blockers[i].to_owned())
            }
            _ => None,
        };
        Place { position, second }
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
    fn a_mutex_waiter_watches_its_predecessor_and_the_one_before() {
        let children: Vec<String> = [
            "_c_b-lock-0000000002",
            "_c_c-lock-0000000003",
            "_c_a-lock-0000000001",
        ]
        .map(String::from)
        .to_vec();
        let wait = |node: &str, only, second: Option<&str>| Place {
            position: Position::WaitFor {
                node: node.into(),
                only,
            },
            second: second.map(String::from),
        };
        assert_eq!(
            locate(&children, "_c_c-lock-0000000003", Intent::Write, None),
            wait("_c_b-lock-0000000002", false, Some("_c_a-lock-0000000001"))
        );
        assert_eq!(
            locate(&children, "_c_b-lock-0000000002", Intent::Write, None),
            wait("_c_a-lock-0000000001", true, None)
        );
        assert_eq!(
            locate(&children, "_c_a-lock-0000000001", Intent::Write, None).position,
            Position::Acquired
        );
        assert_eq!(
            locate(&children, "_c_d-lock-0000000004", Intent::Write, None).position,
            Position::Missing
        );
    }
}
