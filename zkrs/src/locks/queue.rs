//! Ordering a lock's contenders and working out who holds and who waits for whom.
//!
//! Pure: takes what was read from ZooKeeper, returns the report; unit-tested without a server.

use std::collections::{BTreeMap, HashMap};

use serde::{Serialize, Serializer};
use zk_recipes::layout::{self, parse, Contender, Intent, Kind, Library, NodeName, Position};
use zk_recipes::lock::REVOKE_MESSAGE;

use crate::output::{session_hex, utf8};

/// One child of the lock path as read from ZooKeeper.
pub(crate) struct Node {
    pub(crate) name: String,
    pub(crate) data: Vec<u8>,
    pub(crate) ctime: i64,
    pub(crate) ephemeral_owner: i64,
}

/// A contender's place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum State {
    /// At the head under the recipe's rule: holds the lock (or is about to see that it does).
    Holds,
    /// Queued behind `waits_for`.
    Waits,
    /// A semaphore lease: holds if within the semaphore's limit, which ZooKeeper does not store.
    Lease,
    /// Not a lock node we can place.
    Unknown,
}

/// One row of the queue.
#[derive(Debug, Serialize)]
pub(crate) struct Entry {
    pub(crate) position: usize,
    pub(crate) name: String,
    #[serde(serialize_with = "library_name")]
    pub(crate) library: Library,
    #[serde(serialize_with = "kind_name")]
    pub(crate) kind: Kind,
    pub(crate) protected: bool,
    pub(crate) sequence: Option<i32>,
    pub(crate) state: State,
    /// The node this one waits for (its predecessor under the recipe's rule).
    pub(crate) waits_for: Option<String>,
    /// Position of that node.
    pub(crate) waits_for_position: Option<usize>,
    /// The owner's data as text (Curator writes the holder's address or participant id).
    pub(crate) data: Option<String>,
    /// `0x…` session that owns the ephemeral node; `None` for a persistent node.
    pub(crate) owner_session: Option<String>,
    pub(crate) ctime: i64,
    pub(crate) age_ms: i64,
    /// The node's data asks its holder to let go (`__REVOKE__`).
    pub(crate) revoke_requested: bool,
}

/// The whole queue with warnings.
#[derive(Debug, Serialize)]
pub(crate) struct Report {
    pub(crate) path: String,
    pub(crate) entries: Vec<Entry>,
    pub(crate) warnings: Vec<String>,
}

/// Orders `nodes` by sequence (arrival order; a downgrade's read node sorts right after the
/// write node whose sequence it reuses), places each, and collects warnings.
pub(crate) fn analyse(path: &str, nodes: Vec<Node>, now_ms: i64) -> Report {
    let mut named: Vec<(NodeName, Node)> = nodes.into_iter().map(|n| (parse(&n.name), n)).collect();
    named.sort_by(|(a, an), (b, bn)| {
        let key = |n: &NodeName| (n.sequence.is_none(), n.sequence, n.kind == Kind::Read);
        key(a).cmp(&key(b)).then_with(|| an.name.cmp(&bn.name))
    });
    let states = place(&named);
    let entries: Vec<Entry> = named
        .into_iter()
        .zip(states)
        .enumerate()
        .map(|(i, ((naming, node), (state, waits)))| Entry {
            position: i + 1,
            revoke_requested: node.data == REVOKE_MESSAGE,
            data: utf8(&node.data).or_else(|| Some(format!("<{} bytes>", node.data.len()))),
            owner_session: (node.ephemeral_owner != 0).then(|| session_hex(node.ephemeral_owner)),
            age_ms: now_ms.saturating_sub(node.ctime),
            ctime: node.ctime,
            name: node.name,
            library: naming.library,
            kind: naming.kind,
            protected: naming.protected(),
            sequence: naming.sequence,
            state,
            waits_for: None,
            waits_for_position: waits.map(|w| w + 1),
        })
        .collect();
    let mut report = Report {
        path: path.to_owned(),
        entries,
        warnings: Vec::new(),
    };
    let names: Vec<String> = report.entries.iter().map(|e| e.name.clone()).collect();
    for e in &mut report.entries {
        e.waits_for = e.waits_for_position.and_then(|p| names.get(p - 1).cloned());
    }
    report.warnings = warnings(&report.entries);
    report
}

/// The state of each sorted node and the index it waits for: lock nodes (mutex, read and
/// write, kazoo's too) and latch participants each form a queue, placed by zk-recipes' rules
/// ([`layout::position`]: a writer waits for its predecessor, a reader for the nearest
/// writer before it).
fn place(named: &[(NodeName, Node)]) -> Vec<(State, Option<usize>)> {
    let index: HashMap<&str, usize> = named
        .iter()
        .enumerate()
        .map(|(i, (_, node))| (node.name.as_str(), i))
        .collect();
    let contenders = |intent: fn(Kind) -> Option<Intent>| -> Vec<Contender> {
        named
            .iter()
            .filter_map(|(naming, node)| {
                Some(Contender {
                    name: node.name.clone(),
                    sequence: naming.sequence?,
                    intent: intent(naming.kind)?,
                })
            })
            .collect()
    };
    let locks = contenders(Kind::intent);
    let latches = contenders(|kind| (kind == Kind::Latch).then_some(Intent::Write));
    named
        .iter()
        .map(|(naming, node)| {
            let (queue, intent) = match (naming.sequence, naming.kind) {
                (None, _) => return (State::Unknown, None),
                (Some(_), Kind::Lease) => return (State::Lease, None),
                (Some(_), Kind::Latch) => (&latches, Intent::Write),
                (Some(_), kind) => match kind.intent() {
                    Some(intent) => (&locks, intent),
                    None => return (State::Unknown, None),
                },
            };
            match layout::position(queue, &node.name, intent) {
                Position::Acquired => (State::Holds, None),
                Position::WaitFor { node: blocker, .. } => match index.get(blocker.as_str()) {
                    // A downgrade: the write holder's own read node shares its sequence.
                    Some(&w)
                        if intent == Intent::Read
                            && same_owner_and_sequence(&named[w], (naming, node)) =>
                    {
                        (State::Holds, None)
                    }
                    Some(&w) => (State::Waits, Some(w)),
                    None => (State::Unknown, None),
                },
                // Missing (cannot be: the node is in its queue), or a future case.
                _ => (State::Unknown, None),
            }
        })
        .collect()
}

fn same_owner_and_sequence(write: &(NodeName, Node), read: (&NodeName, &Node)) -> bool {
    write.0.sequence == read.0.sequence
        && write.1.ephemeral_owner == read.1.ephemeral_owner
        && write.1.ephemeral_owner != 0
}

/// The short name of a library (table and JSON).
pub(crate) fn library_label(library: Library) -> &'static str {
    match library {
        Library::Curator => "curator",
        Library::GoZookeeper => "go-zookeeper",
        Library::Kazoo => "kazoo",
        _ => "?",
    }
}

/// The short name of a contender's kind (table and JSON).
pub(crate) fn kind_label(kind: Kind) -> &'static str {
    match kind {
        Kind::Mutex => "mutex",
        Kind::Read => "read",
        Kind::Write => "write",
        Kind::Latch => "latch",
        Kind::Lease => "lease",
        _ => "?",
    }
}

fn library_name<S: Serializer>(library: &Library, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(match library_label(*library) {
        "?" => "unknown",
        label => label,
    })
}

fn kind_name<S: Serializer>(kind: &Kind, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(match kind_label(*kind) {
        "?" => "unknown",
        label => label,
    })
}

/// What an operator should know about this queue.
fn warnings(entries: &[Entry]) -> Vec<String> {
    let mut out = Vec::new();
    let locks = |lib: Library| {
        entries
            .iter()
            .any(|e| e.library == lib && matches!(e.kind, Kind::Mutex | Kind::Read | Kind::Write))
    };
    if locks(Library::Kazoo) && (locks(Library::Curator) || locks(Library::GoZookeeper)) {
        out.push(
            "UNSAFE MIX: kazoo `__lock__`/`__rlock__` nodes next to Curator-style nodes. Curator \
             orders children by the text after its lock name and so ignores kazoo's nodes: a \
             kazoo holder and a Curator holder can hold at once (zk-recipes and go-zookeeper \
             order by sequence and do see them)."
                .to_owned(),
        );
    }
    let unprotected: Vec<&str> = entries
        .iter()
        .filter(|e| e.kind != Kind::Unknown && !e.protected)
        .map(|e| e.name.as_str())
        .collect();
    if !unprotected.is_empty() {
        out.push(format!(
            "unprotected names (no `_c_<uuid>-` or kazoo id prefix): {}. A create lost to a \
             connection loss leaves such a node behind where its owner cannot recognise it, and \
             the queue stalls behind it until the owner's session ends.",
            unprotected.join(", ")
        ));
    }
    for e in entries
        .iter()
        .filter(|e| e.owner_session.is_none() && e.kind != Kind::Unknown)
    {
        out.push(format!(
            "{} is not ephemeral: it outlives its owner; if no one holds it, delete it by hand.",
            e.name
        ));
    }
    let mut per_session: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for e in entries.iter().filter(|e| e.kind.exclusive()) {
        if let Some(s) = &e.owner_session {
            per_session
                .entry(s.as_str())
                .or_default()
                .push(e.name.as_str());
        }
    }
    for (session, names) in per_session.iter().filter(|(_, n)| n.len() > 1) {
        out.push(format!(
            "session {session} owns {} exclusive nodes ({}): two threads of one process, or an \
             orphan of a create that was lost to a connection loss.",
            names.len(),
            names.join(", ")
        ));
    }
    let unknown = entries.iter().filter(|e| e.kind == Kind::Unknown).count();
    if unknown > 0 {
        out.push(format!(
            "{unknown} node(s) with no known lock naming (listed last or by trailing digits)."
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const CUR_A: &str = "_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1";
    const CUR_B: &str = "_c_0f1e7b52-3c7d-4a9a-8c0e-2b6f3a1d9e44";
    const KAZ: &str = "9f86d081884c4d659a2feaa0c55ad015";

    fn node(name: String, owner: i64) -> Node {
        Node {
            name,
            data: b"127.0.0.1".to_vec(),
            ctime: 1_000,
            ephemeral_owner: owner,
        }
    }

    fn states(r: &Report) -> Vec<(State, Option<usize>)> {
        r.entries
            .iter()
            .map(|e| (e.state.clone(), e.waits_for_position))
            .collect()
    }

    #[test]
    fn mutex_queue_in_sequence_order_across_libraries() {
        let nodes = vec![
            node(format!("{KAZ}__lock__0000000002"), 3),
            node(format!("{CUR_B}-lock-0000000001"), 2),
            node(format!("{CUR_A}-lock-0000000000"), 1),
        ];
        let r = analyse("/l", nodes, 5_000);
        let names: Vec<_> = r.entries.iter().map(|e| e.sequence).collect();
        assert_eq!(names, [Some(0), Some(1), Some(2)]);
        assert_eq!(
            states(&r),
            [
                (State::Holds, None),
                (State::Waits, Some(1)),
                (State::Waits, Some(2))
            ]
        );
        assert_eq!(r.entries[2].library, Library::Kazoo);
        assert_eq!(
            r.entries[2].waits_for.as_deref(),
            Some(r.entries[1].name.as_str())
        );
        assert_eq!(r.entries[0].age_ms, 4_000);
        assert!(
            r.warnings.iter().any(|w| w.starts_with("UNSAFE MIX")),
            "{:?}",
            r.warnings
        );
    }

    #[test]
    fn readers_share_until_a_writer() {
        let nodes = vec![
            node(format!("{CUR_A}-__READ__0000000000"), 1),
            node(format!("{CUR_B}-__READ__0000000001"), 2),
            node(format!("{CUR_A}-__WRIT__0000000002"), 3),
            node(format!("{CUR_B}-__READ__0000000003"), 4),
            node(format!("{CUR_B}-__WRIT__0000000004"), 5),
        ];
        let r = analyse("/rw", nodes, 5_000);
        assert_eq!(
            states(&r),
            [
                (State::Holds, None),
                (State::Holds, None),
                (State::Waits, Some(2)),
                (State::Waits, Some(3)),
                (State::Waits, Some(4)),
            ]
        );
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    }

    #[test]
    fn downgrade_read_node_holds_beside_its_write_node() {
        let nodes = vec![
            node(format!("{CUR_A}-__READ__0000000007"), 9),
            node(format!("{CUR_A}-__WRIT__0000000007"), 9),
            node(format!("{CUR_B}-__WRIT__0000000008"), 4),
        ];
        let r = analyse("/rw", nodes, 5_000);
        assert_eq!(r.entries[0].kind, Kind::Write);
        assert_eq!(
            states(&r),
            [
                (State::Holds, None),
                (State::Holds, None),
                (State::Waits, Some(2))
            ]
        );
    }

    #[test]
    fn latch_leases_and_warnings() {
        let mut revoked = node(format!("{CUR_A}-latch-0000000001"), 1);
        revoked.data = REVOKE_MESSAGE.to_vec();
        let nodes = vec![
            revoked,
            node(format!("{CUR_B}-latch-0000000002"), 0),
            node("lock-0000000003".into(), 7),
            node("leases".into(), 0),
        ];
        let r = analyse("/x", nodes, 5_000);
        assert_eq!(
            states(&r)[..2],
            [(State::Holds, None), (State::Waits, Some(1))]
        );
        assert!(r.entries[0].revoke_requested);
        assert_eq!(r.entries[3].state, State::Unknown);
        let all = r.warnings.join("\n");
        assert!(
            all.contains("unprotected names") && all.contains("lock-0000000003"),
            "{all}"
        );
        assert!(all.contains("latch-0000000002 is not ephemeral"), "{all}");
        assert!(all.contains("1 node(s) with no known lock naming"), "{all}");
        assert!(!all.contains("UNSAFE MIX"), "{all}");
    }

    #[test]
    fn one_session_with_two_exclusive_nodes_is_flagged() {
        let nodes = vec![
            node(format!("{CUR_A}-lock-0000000000"), 0x77),
            node(format!("{CUR_B}-lock-0000000001"), 0x77),
        ];
        let r = analyse("/l", nodes, 5_000);
        assert!(
            r.warnings
                .iter()
                .any(|w| w.starts_with("session 0x77 owns 2")),
            "{:?}",
            r.warnings
        );
    }
}
