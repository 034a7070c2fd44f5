//! Queue node names: Curator's protected layout, sequence parsing and the queue orders.
//!
//! Our nodes are named exactly like Curator's: `_c_<uuid>-<lock name><seq>`, where `<seq>` is
//! the 10-character `%010d` suffix the server appends to sequential nodes. Contenders are
//! ordered by that trailing sequence number, whatever library named them, so a Rust locker
//! queues correctly behind Curator's `…-lock-0000000012`, go-zookeeper's
//! `_c_<hex>-lock-0000000012` and kazoo's `<hex>__lock__0000000012`.

use uuid::Uuid;

/// Prefix Curator puts before the guid of a protected node.
pub(crate) const PROTECTED_PREFIX: &str = "_c_";
#[cfg(test)]
/// Length of `_c_` + a 36-character dashed UUID + `-`.
pub(crate) const PROTECTED_PREFIX_LEN: usize = 40;
/// Length of the sequence suffix the server appends (`%010d`).
pub(crate) const SEQUENCE_LEN: usize = 10;

/// Lock name of Curator's `InterProcessMutex`.
pub(crate) const MUTEX_LOCK_NAME: &str = "lock-";
/// Lock name of the read side of Curator's `InterProcessReadWriteLock`.
pub(crate) const READ_LOCK_NAME: &str = "__READ__";
/// Lock name of the write side of Curator's `InterProcessReadWriteLock`.
pub(crate) const WRITE_LOCK_NAME: &str = "__WRIT__";
/// Marker of kazoo's read lock nodes.
pub(crate) const KAZOO_READ_MARKER: &str = "__rlock__";

/// The protected prefix for a guid: `_c_<uuid>-`.
pub(crate) fn protected_prefix(guid: &Uuid) -> String {
    protected_node_name(guid, "")
}

/// The name to create (before the server appends the sequence): `_c_<uuid>-<lock_name>`.
pub(crate) fn protected_node_name(guid: &Uuid, lock_name: &str) -> String {
    let mut buffer = Uuid::encode_buffer();
    let guid = guid.hyphenated().encode_lower(&mut buffer);
    // Room for the sequence the server appends (the name comes back with it).
    let mut name = String::with_capacity(
        PROTECTED_PREFIX.len() + guid.len() + 1 + lock_name.len() + SEQUENCE_LEN,
    );
    name.push_str(PROTECTED_PREFIX);
    name.push_str(guid);
    name.push('-');
    name.push_str(lock_name);
    name
}

/// Whether `name` is a protected name in Curator's sense: longer than 40 characters, starts
/// with `_c_`, has `-` at index 39 and a UUID at 3..39.
#[cfg(test)]
pub(crate) fn is_protected(name: &str) -> bool {
    protected_guid(name).is_some()
}

/// The guid of a protected name, if it is one.
#[cfg(test)]
pub(crate) fn protected_guid(name: &str) -> Option<Uuid> {
    if name.len() <= PROTECTED_PREFIX_LEN
        || !name.starts_with(PROTECTED_PREFIX)
        || name.as_bytes().get(PROTECTED_PREFIX_LEN - 1) != Some(&b'-')
    {
        return None;
    }
    let guid = name.get(PROTECTED_PREFIX.len()..PROTECTED_PREFIX_LEN - 1)?;
    Uuid::parse_str(guid).ok()
}

/// The 10-character sequence suffix of a sequential node's name (`"0000000012"`), if it has
/// a valid one. A downgrade's read node reuses its write node's suffix (see
/// [`position`]).
pub(crate) fn sequence_suffix(name: &str) -> Option<&str> {
    sequence_of(name)?;
    name.get(name.len().checked_sub(SEQUENCE_LEN)?..)
}

/// The sequence number at the end of a sequential node's name: the last 10 characters parsed
/// as a signed 32-bit decimal (the server formats the parent's `cversion` with `%010d`, which
/// goes negative after overflow, e.g. `-000000012`).
pub fn sequence_of(name: &str) -> Option<i32> {
    // Bytes, not chars: a tail of ASCII digits (and a sign) starts on a char boundary, and
    // anything else is not a sequence. Every listing of every acquisition parses each child.
    let bytes = name.as_bytes();
    let tail = bytes.get(bytes.len().checked_sub(SEQUENCE_LEN)?..)?;
    let (negative, digits) = match tail.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, tail),
    };
    let mut value: i64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        value = value * 10 + i64::from(b - b'0');
    }
    i32::try_from(if negative { -value } else { value }).ok()
}

/// What a contender in a lock queue asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    /// Shares the lock with other readers (`__READ__`, kazoo's `__rlock__`).
    Read,
    /// Excludes everyone (`__WRIT__`, `lock-`, kazoo's `__lock__`, anything else sequential).
    Write,
}

/// Whether a child name is a read request of any library we know.
pub(crate) fn intent_of(name: &str) -> Intent {
    if name.contains(READ_LOCK_NAME) || name.contains(KAZOO_READ_MARKER) {
        Intent::Read
    } else {
        Intent::Write
    }
}

/// One node of a lock queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contender {
    /// The child name.
    pub name: String,
    /// Its trailing sequence number.
    pub sequence: i32,
    /// Read or write.
    pub intent: Intent,
}

/// Turns a parent's children into the lock queue: every child with a trailing sequence
/// number, ordered by that number, ties by name. Children without a sequence are not
/// contenders.
///
/// The server never gives two sequential nodes of one parent the same number, but a
/// read/write downgrade does: its read node is a plain ephemeral node named with the
/// sequence of its owner's write node (CURATOR-621), so the two tie. Curator leaves such a
/// tie in the server's listing order; ordering it by name instead is as good, because every
/// rule below treats the two tied nodes alike (both block a writer queued behind them; the
/// read node blocks no reader).
pub fn queue(children: &[String]) -> Vec<Contender> {
    let mut queue: Vec<Contender> = children
        .iter()
        .filter_map(|name| {
            Some(Contender {
                sequence: sequence_of(name)?,
                intent: intent_of(name),
                name: name.clone(),
            })
        })
        .collect();
    queue.sort_by(|a, b| {
        a.sequence
            .cmp(&b.sequence)
            .then_with(|| a.name.cmp(&b.name))
    });
    queue
}

/// What a contender must do next.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Position {
    /// The lock is ours.
    Acquired,
    /// Wait for `node` to go away, then look again.
    WaitFor {
        /// The node that blocks us.
        node: String,
        /// Whether it is the only node that blocks us, now and later: when it is deleted the
        /// lock is ours without listing the queue again. A contender that arrives later gets
        /// a larger sequence number and queues behind us, with one exception: the owner of a
        /// read/write lock's write node may downgrade, adding a read node at the write
        /// node's own sequence (CURATOR-621). So a writer whose only blocker is a `__WRIT__`
        /// node is never told `only`: it lists again when that node goes.
        only: bool,
    },
    /// Our node is not in the queue (deleted by someone, or the session ended).
    Missing,
}

/// Where `ours` stands in `queue` for the given intent.
///
/// - Write (and the plain mutex): held when first; otherwise watch the immediate predecessor.
/// - Read: held when no write request precedes ours; otherwise watch the nearest preceding
///   write request (the ZooKeeper recipe's rule, which wakes only readers a writer's release
///   unblocks; Curator watches the lowest write node instead).
pub fn position(queue: &[Contender], ours: &str, intent: Intent) -> Position {
    let Some(index) = queue.iter().position(|c| c.name == ours) else {
        return Position::Missing;
    };
    let before = &queue[..index];
    let (blocker, blockers) = match intent {
        Intent::Write => (before.last(), before.len()),
        Intent::Read => {
            let mut writes = before.iter().filter(|c| c.intent == Intent::Write);
            (writes.clone().next_back(), writes.by_ref().count())
        }
    };
    match blocker {
        None => Position::Acquired,
        Some(c) => Position::WaitFor {
            node: c.name.clone(),
            only: blockers == 1 && !(intent == Intent::Write && may_gain_a_downgrade(&c.name)),
        },
    }
}

/// Whether a read node may still appear at the sequence of the node `name`: it is a
/// read/write lock's write node, whose owner may take the read lock while holding it.
pub(crate) fn may_gain_a_downgrade(name: &str) -> bool {
    name.contains(WRITE_LOCK_NAME)
}

/// The name of a downgrade's read node: `_c_<uuid>-__READ__<seq>`, where `<seq>` is the
/// sequence suffix of the owner's write node `write_node`, created as a plain (not
/// sequential) ephemeral node so that it sorts at the write node's position (Curator 5.5.0+,
/// CURATOR-621). `None` if `write_node` has no sequence suffix.
pub(crate) fn downgrade_node_name(guid: &Uuid, write_node: &str) -> Option<String> {
    let seq = sequence_suffix(write_node)?;
    Some(format!(
        "{}{seq}",
        protected_node_name(guid, READ_LOCK_NAME)
    ))
}

/// Finds our node among the children by its guid (the protected create's recovery step).
#[cfg(test)]
pub(crate) fn find_by_guid<'a>(children: &'a [String], guid: &Uuid) -> Option<&'a str> {
    all_by_guid(children, guid).next()
}

/// Every child named with our guid (normally one; a cleanup removes them all).
pub(crate) fn all_by_guid<'a>(
    children: &'a [String],
    guid: &Uuid,
) -> impl Iterator<Item = &'a str> + 'a {
    let prefix = protected_prefix(guid);
    children
        .iter()
        .map(String::as_str)
        .filter(move |name| name.starts_with(&prefix))
}

/// Sorts election nodes as Curator's `LeaderLatch` and `LeaderSelector` do: by the text after
/// the last occurrence of `lock_name` (the whole name if it has none), all children kept.
/// For nodes with a sequence suffix this is the order of [`queue`] (the suffix is fixed-width
/// and a negative one sorts first in both).
pub(crate) fn sort_curator(children: &mut [String], lock_name: &str) {
    fn key<'a>(name: &'a str, lock_name: &str) -> &'a str {
        match name.rfind(lock_name) {
            Some(at) => name.get(at + lock_name.len()..).unwrap_or(name),
            None => name,
        }
    }
    children.sort_by(|a, b| key(a, lock_name).cmp(key(b, lock_name)));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn protected_names_match_curators_layout() {
        let guid = Uuid::parse_str("53345f98-9423-4e0c-a7b5-9f819e3ec2e1").unwrap();
        let name = format!("{}0000000012", protected_node_name(&guid, MUTEX_LOCK_NAME));
        assert_eq!(
            name,
            "_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-lock-0000000012"
        );
        assert!(is_protected(&name));
        assert_eq!(protected_guid(&name), Some(guid));
        assert_eq!(sequence_of(&name), Some(12));
        // Curator's read/write names have the same length as the mutex prefix on purpose.
        assert_eq!(READ_LOCK_NAME.len(), WRITE_LOCK_NAME.len());
    }

    #[test]
    fn unprotected_names_are_not_protected() {
        assert!(!is_protected("lock-0000000001"));
        assert!(!is_protected(
            "_c_not-a-uuid-at-all-but-long-enough-lock-0000000001"
        ));
        assert!(!is_protected("_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1"));
        assert!(!is_protected(
            "é_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-lock-0000000001"
        ));
    }

    #[test]
    fn sequences_parse_including_negative_overflow() {
        assert_eq!(sequence_of("x-lock-0000000007"), Some(7));
        assert_eq!(sequence_of("x-lock--000000012"), Some(-12));
        assert_eq!(sequence_of("abc__lock__2147483647"), Some(i32::MAX));
        assert_eq!(sequence_of("leases"), None);
        assert_eq!(sequence_of("lock-00000000x1"), None);
        assert_eq!(sequence_of("é0000000001"), Some(1));
        assert_eq!(sequence_of("ééééé"), None);
    }

    #[test]
    fn mixed_libraries_queue_by_trailing_sequence() {
        let children = names(&[
            "6f1c2a9be0c94b1e8f0a0b1c2d3e4f50__lock__0000000003", // kazoo
            "_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-lock-0000000004", // Curator / ours
            "_c_0123456789abcdef0123456789abcdef-lock-0000000001", // go-zookeeper
            "leases",                                             // not a contender
            "_c_11111111-2222-3333-4444-555555555555-lock-0000000002",
        ]);
        let q = queue(&children);
        let seqs: Vec<i32> = q.iter().map(|c| c.sequence).collect();
        assert_eq!(seqs, vec![1, 2, 3, 4]);
        // The Curator node at 4 must wait for the kazoo holder at 3, not skip it.
        assert_eq!(
            position(&q, &children[1], Intent::Write),
            Position::WaitFor {
                node: children[0].clone(),
                only: false
            }
        );
        assert_eq!(
            position(&q, &children[2], Intent::Write),
            Position::Acquired
        );
        // Second in line: the holder is the only blocker.
        assert_eq!(
            position(&q, &children[4], Intent::Write),
            Position::WaitFor {
                node: children[2].clone(),
                only: true
            }
        );
        assert_eq!(
            position(&q, "gone-0000000009", Intent::Write),
            Position::Missing
        );
    }

    #[test]
    fn readers_share_and_wait_only_for_the_nearest_writer() {
        let children = names(&[
            "_c_a-__READ__0000000001",
            "_c_b-__READ__0000000002",
            "_c_c-__WRIT__0000000003",
            "_c_d-__READ__0000000004",
            "_c_e-__READ__0000000005",
            "_c_f-__WRIT__0000000006",
        ]);
        let q = queue(&children);
        assert_eq!(position(&q, &children[0], Intent::Read), Position::Acquired);
        assert_eq!(position(&q, &children[1], Intent::Read), Position::Acquired);
        let wait = |node: &String, only| Position::WaitFor {
            node: node.clone(),
            only,
        };
        // The writer waits for its immediate predecessor only (two readers block it).
        assert_eq!(
            position(&q, &children[2], Intent::Write),
            wait(&children[1], false)
        );
        // Later readers all watch the same writer, not each other; it is their only blocker.
        assert_eq!(
            position(&q, &children[3], Intent::Read),
            wait(&children[2], true)
        );
        assert_eq!(
            position(&q, &children[4], Intent::Read),
            wait(&children[2], true)
        );
        assert_eq!(
            position(&q, &children[5], Intent::Write),
            wait(&children[4], false)
        );
        // A reader behind two writers is not unblocked by the nearer one alone.
        let more = names(&[
            "_c_a-__WRIT__0000000001",
            "_c_b-__WRIT__0000000002",
            "_c_c-__READ__0000000003",
        ]);
        let q = queue(&more);
        assert_eq!(position(&q, &more[2], Intent::Read), wait(&more[1], false));
    }

    #[test]
    fn downgrade_read_node_sorts_at_its_write_node() {
        let guid = Uuid::parse_str("53345f98-9423-4e0c-a7b5-9f819e3ec2e1").unwrap();
        let write = "_c_ffffffff-9423-4e0c-a7b5-9f819e3ec2e1-__WRIT__0000000005";
        let read = downgrade_node_name(&guid, write).unwrap();
        assert_eq!(
            read,
            "_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-__READ__0000000005"
        );
        assert!(is_protected(&read));
        assert_eq!(sequence_of(&read), Some(5));
        assert_eq!(intent_of(&read), Intent::Read);
        assert_eq!(downgrade_node_name(&guid, "no-sequence"), None);
        assert_eq!(sequence_suffix("x-lock--000000012"), Some("-000000012"));
        assert_eq!(sequence_suffix("lock-00000000x1"), None);
    }

    #[test]
    fn downgrade_ties_order_by_name_and_block_a_queued_writer_twice() {
        // Both orders of the tie: the read node's guid sorts before or after the write node's.
        for (read, write) in [
            ("_c_a-__READ__0000000005", "_c_b-__WRIT__0000000005"),
            ("_c_b-__READ__0000000005", "_c_a-__WRIT__0000000005"),
        ] {
            let writer = "_c_c-__WRIT__0000000006";
            let reader = "_c_d-__READ__0000000007";
            let children = names(&[writer, read, reader, write]);
            let q = queue(&children);
            let order: Vec<&str> = q.iter().map(|c| c.name.as_str()).collect();
            let (first, second) = if read < write {
                (read, write)
            } else {
                (write, read)
            };
            assert_eq!(order, vec![first, second, writer, reader]);

            // The downgrader's read holds once its own write node is set aside (the
            // `ignore` of the acquisition), wherever the tie put it.
            let mine: Vec<Contender> = q.iter().filter(|c| c.name != write).cloned().collect();
            assert_eq!(position(&mine, read, Intent::Read), Position::Acquired);
            // Without setting it aside, the read would wait for its own write node whenever
            // that sorts first: the acquisition must ignore it.
            if write < read {
                assert_eq!(
                    position(&q, read, Intent::Read),
                    Position::WaitFor {
                        node: write.to_owned(),
                        only: true
                    }
                );
            }

            // The queued writer waits for both tied nodes: it watches the later one and,
            // not being told `only`, lists again when it goes.
            assert_eq!(
                position(&q, writer, Intent::Write),
                Position::WaitFor {
                    node: second.to_owned(),
                    only: false
                }
            );
            for gone in [write, read] {
                let left: Vec<Contender> = q.iter().filter(|c| c.name != gone).cloned().collect();
                let other = if gone == write { read } else { write };
                assert_eq!(
                    position(&left, writer, Intent::Write),
                    Position::WaitFor {
                        node: other.to_owned(),
                        only: other.contains(READ_LOCK_NAME)
                    },
                    "{gone} released first"
                );
            }
            // A later reader waits only for the writers ahead of it, not the read node.
            assert_eq!(
                position(&q, reader, Intent::Read),
                Position::WaitFor {
                    node: writer.to_owned(),
                    only: false
                }
            );
        }
    }

    #[test]
    fn a_writer_behind_a_write_node_is_never_told_only() {
        // Its owner may still add a downgrade read node at the same sequence.
        let children = names(&["_c_a-__WRIT__0000000001", "_c_b-__WRIT__0000000002"]);
        let q = queue(&children);
        assert_eq!(
            position(&q, &children[1], Intent::Write),
            Position::WaitFor {
                node: children[0].clone(),
                only: false
            }
        );
        // Readers are not blocked by read nodes, so for them it stays exact.
        let children = names(&["_c_a-__WRIT__0000000001", "_c_b-__READ__0000000002"]);
        let q = queue(&children);
        assert_eq!(
            position(&q, &children[1], Intent::Read),
            Position::WaitFor {
                node: children[0].clone(),
                only: true
            }
        );
        // A writer behind a reader, or a mutex waiter behind its predecessor, keeps `only`.
        let children = names(&["_c_a-__READ__0000000001", "_c_b-__WRIT__0000000002"]);
        let q = queue(&children);
        assert_eq!(
            position(&q, &children[1], Intent::Write),
            Position::WaitFor {
                node: children[0].clone(),
                only: true
            }
        );
    }

    #[test]
    fn kazoo_read_nodes_count_as_readers() {
        assert_eq!(intent_of("abcd__rlock__0000000001"), Intent::Read);
        assert_eq!(intent_of("abcd__lock__0000000001"), Intent::Write);
        assert_eq!(intent_of("_c_x-lock-0000000001"), Intent::Write);
    }

    #[test]
    fn guid_lookup_finds_only_our_node() {
        let ours = Uuid::new_v4();
        let other = Uuid::new_v4();
        let children = names(&[
            &format!("{}0000000001", protected_node_name(&other, MUTEX_LOCK_NAME)),
            &format!("{}0000000002", protected_node_name(&ours, MUTEX_LOCK_NAME)),
        ]);
        assert_eq!(find_by_guid(&children, &ours), Some(children[1].as_str()));
        assert_eq!(find_by_guid(&children, &Uuid::new_v4()), None);
    }

    #[test]
    fn sorts_by_the_text_after_the_lock_name_as_curator_does() {
        let mut names: Vec<String> = [
            "_c_bbbbbbbb-0000-0000-0000-000000000000-latch-0000000003",
            "_c_aaaaaaaa-0000-0000-0000-000000000000-latch-0000000010",
            "foreign",
            "_c_cccccccc-0000-0000-0000-000000000000-latch-0000000001",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        sort_curator(&mut names, "latch-");
        assert!(names[0].ends_with("0000000001"));
        assert!(names[1].ends_with("0000000003"));
        assert!(names[2].ends_with("0000000010"));
        assert_eq!(names[3], "foreign");
    }
}
