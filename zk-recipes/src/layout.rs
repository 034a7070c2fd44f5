//! What a lock queue's node names say, for tools that read queues they did not make (an
//! inspector, a dashboard): which library named a node, what it asks for (mutex, read,
//! write, latch, lease), its owner's guid and its sequence, and who waits for whom.
//!
//! The recipes of this crate use the same rules (this module re-exposes them); Curator's
//! revocation request is [`REVOKE_MESSAGE`](crate::lock::REVOKE_MESSAGE), sent by
//! [`revoke`](crate::lock::revoke).
//!
//! Naming facts (read from each library's source, checked against real runs):
//! * Curator (and zk-recipes, which uses its layout): `_c_<36-char uuid>-<name><seq10>` with
//!   `<name>` = `lock-` (InterProcessMutex, LeaderSelector), `__READ__` / `__WRIT__`
//!   (InterProcessReadWriteLock), `latch-` (LeaderLatch), `lease-` (InterProcessSemaphoreV2's
//!   `leases/` children). The two cannot be told apart by name.
//! * go-zookeeper: `_c_<32 hex>-lock-<seq10>`.
//! * kazoo: `<32 hex>__lock__<seq10>` (Lock, WriteLock) and `<32 hex>__rlock__<seq10>`
//!   (ReadLock).
//!
//! The sequence is the server's `%010d` of the parent's `cversion` (a signed 32-bit counter)
//! at create time, shared by every sequential child of the parent whatever library made it:
//! it is the arrival order.
//!
//! ```
//! use zk_recipes::layout::{parse, Intent, Kind, Library};
//! let name = parse("_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-__READ__0000000012");
//! assert_eq!(name.library, Library::Curator);
//! assert_eq!(name.kind, Kind::Read);
//! assert_eq!(name.kind.intent(), Some(Intent::Read));
//! assert_eq!(name.guid.as_deref(), Some("53345f98-9423-4e0c-a7b5-9f819e3ec2e1"));
//! assert_eq!(name.sequence, Some(12));
//! ```
//!
//! Who waits for whom in a read/write lock: [`queue`] orders the children by sequence
//! (whatever library named them), [`position`] applies the rule for the contender's
//! [`Intent`] (a writer waits for its predecessor, a reader for the nearest writer before it).
//!
//! ```
//! use zk_recipes::layout::{position, queue, Intent, Position};
//! let children: Vec<String> = [
//!     "_c_0f1e7b52-3c7d-4a9a-8c0e-2b6f3a1d9e44-__READ__0000000003",
//!     "_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-__WRIT__0000000001",
//!     "9f86d081884c4d659a2feaa0c55ad015__rlock__0000000002",
//! ]
//! .map(String::from)
//! .into();
//! let queue = queue(&children);
//! assert_eq!(queue[0].name, children[1]); // the writer came first
//! assert_eq!(position(&queue, &children[1], Intent::Write), Position::Acquired);
//! // Both readers wait for the writer only (kazoo's reader too).
//! let blocked = Position::WaitFor { node: children[1].clone(), only: true };
//! assert_eq!(position(&queue, &children[0], Intent::Read), blocked);
//! assert_eq!(position(&queue, &children[2], Intent::Read), blocked);
//! ```

pub use crate::queue::naming::{position, queue, sequence_of, Contender, Intent, Position};

use crate::queue::naming::{sort_curator, SEQUENCE_LEN};

/// Who named the node (by its naming alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Library {
    /// `_c_<uuid>-…`: Apache Curator, or zk-recipes (same layout).
    Curator,
    /// `_c_<32 hex>-…`.
    GoZookeeper,
    /// `<32 hex>__lock__…` / `__rlock__`.
    Kazoo,
    /// A known lock name without a library's id prefix, or no known naming at all.
    Unknown,
}

/// What the contender is waiting for or holding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Kind {
    /// Exclusive lock (`lock-`, kazoo `__lock__`).
    Mutex,
    /// Read side of a read/write lock (`__READ__`, kazoo `__rlock__`).
    Read,
    /// Write side of a read/write lock (`__WRIT__`).
    Write,
    /// Leader latch participant (`latch-`).
    Latch,
    /// Semaphore lease (`lease-`).
    Lease,
    /// No known lock name.
    Unknown,
}

impl Kind {
    /// Excludes every later contender (mutex and write nodes).
    pub fn exclusive(self) -> bool {
        matches!(self, Kind::Mutex | Kind::Write)
    }

    /// What a lock contender of this kind asks for in a lock queue ([`position`]): `None`
    /// for latches, leases and unknown names, which are not lock contenders.
    pub fn intent(self) -> Option<Intent> {
        match self {
            Kind::Mutex | Kind::Write => Some(Intent::Write),
            Kind::Read => Some(Intent::Read),
            Kind::Latch | Kind::Lease | Kind::Unknown => None,
        }
    }
}

/// What a node's name says, from [`parse`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NodeName {
    /// Who named it.
    pub library: Library,
    /// What it asks for.
    pub kind: Kind,
    /// The owner's id in the name, by which it finds the node after a lost create reply
    /// (Curator's dashed uuid, go-zookeeper's or kazoo's 32 hex digits).
    pub guid: Option<String>,
    /// The server-assigned sequence, when the name ends with one (negative after the
    /// parent's counter overflowed).
    pub sequence: Option<i32>,
}

impl NodeName {
    /// Has an id prefix its owner can find it by after a lost create (`_c_<uuid>-`, go's
    /// `_c_<hex>-`, kazoo's `<hex>` before the marker).
    pub fn protected(&self) -> bool {
        self.guid.is_some()
    }
}

/// Lock names in the order they are tried (none contains another).
const MARKERS: [(&str, Kind, Library); 7] = [
    ("__READ__", Kind::Read, Library::Curator),
    ("__WRIT__", Kind::Write, Library::Curator),
    ("__rlock__", Kind::Read, Library::Kazoo),
    ("__lock__", Kind::Mutex, Library::Kazoo),
    ("latch-", Kind::Latch, Library::Curator),
    ("lease-", Kind::Lease, Library::Curator),
    ("lock-", Kind::Mutex, Library::Curator),
];

/// Reads one child name of a lock, latch or semaphore path (never fails: a name of no
/// known naming is [`Library::Unknown`] / [`Kind::Unknown`], with its trailing sequence if
/// it has one).
pub fn parse(name: &str) -> NodeName {
    let (prefix, rest) = strip_prefix(name);
    let guid = prefix.map(|(_, guid)| guid.to_owned());
    let found = MARKERS.iter().find_map(|&(marker, kind, lib)| {
        rest.rfind(marker).map(|at| (at + marker.len(), kind, lib))
    });
    let Some((after, kind, marker_library)) = found else {
        return NodeName {
            library: Library::Unknown,
            kind: Kind::Unknown,
            guid,
            sequence: sequence_of(name),
        };
    };
    let sequence = rest
        .get(after..)
        .filter(|tail| tail.len() == SEQUENCE_LEN)
        .and_then(sequence_of);
    let library = match (prefix.map(|(lib, _)| lib), marker_library) {
        // A kazoo marker needs kazoo's hex id; Curator/go names need their `_c_` prefix.
        (Some(Library::Kazoo), Library::Kazoo) => Library::Kazoo,
        (Some(lib @ (Library::Curator | Library::GoZookeeper)), Library::Curator) => lib,
        _ => Library::Unknown,
    };
    NodeName {
        library,
        kind,
        guid,
        sequence,
    }
}

/// Sorts election nodes as Curator's `LeaderLatch` and `LeaderSelector` order them: by the
/// text after the last occurrence of `lock_name` (the whole name if it has none), all
/// children kept. Curator orders its locks the same way, so it ignores kazoo's nodes
/// (`__lock__` does not contain `lock-`); [`queue`] orders by sequence whatever the naming.
pub fn sort_as_curator(children: &mut [String], lock_name: &str) {
    sort_curator(children, lock_name);
}

/// Splits off a library's id prefix and returns the library and the id: Curator
/// `_c_<uuid>-`, go `_c_<32 hex>-`, kazoo `<32 hex>` directly followed by `__`.
fn strip_prefix(name: &str) -> (Option<(Library, &str)>, &str) {
    if let Some(tail) = name.strip_prefix("_c_") {
        if let (Some(id), Some(rest)) = (tail.get(..36), tail.get(36..)) {
            if is_dashed_uuid(id) && rest.len() > 1 && rest.starts_with('-') {
                return (Some((Library::Curator, id)), &rest[1..]);
            }
        }
        if let (Some(id), Some(rest)) = (tail.get(..32), tail.get(32..)) {
            if is_hex(id) && rest.len() > 1 && rest.starts_with('-') {
                return (Some((Library::GoZookeeper, id)), &rest[1..]);
            }
        }
    }
    if let (Some(id), Some(rest)) = (name.get(..32), name.get(32..)) {
        if is_hex(id) && rest.len() > 2 && rest.starts_with("__") {
            return (Some((Library::Kazoo, id)), rest);
        }
    }
    (None, name)
}

/// 8-4-4-4-12 hex digits with dashes.
fn is_dashed_uuid(s: &str) -> bool {
    s.len() == 36
        && s.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}

fn is_hex(s: &str) -> bool {
    s.chars().all(|c| c.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(name: &str, library: Library, kind: Kind, protected: bool, seq: Option<i32>) {
        let got = parse(name);
        assert_eq!(
            (got.library, got.kind, got.protected(), got.sequence),
            (library, kind, protected, seq),
            "{name}"
        );
    }

    #[test]
    fn guids_are_the_owner_ids() {
        let curator = parse("_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-lock-0000000012");
        assert_eq!(
            curator.guid.as_deref(),
            Some("53345f98-9423-4e0c-a7b5-9f819e3ec2e1")
        );
        let go = parse("_c_5e0a6b7c8d9e0f1a2b3c4d5e6f708192-lock-0000000005");
        assert_eq!(go.guid.as_deref(), Some("5e0a6b7c8d9e0f1a2b3c4d5e6f708192"));
        let kazoo = parse("9f86d081884c4d659a2feaa0c55ad015__rlock__0000000009");
        assert_eq!(
            kazoo.guid.as_deref(),
            Some("9f86d081884c4d659a2feaa0c55ad015")
        );
        assert_eq!(kazoo.kind.intent(), Some(Intent::Read));
        assert_eq!(parse("lock-0000000001").guid, None);
    }

    // Names below were captured from real runs of Curator 5.4, kazoo 2.9 and zk-recipes
    // against ZooKeeper 3.8 (go-zookeeper's from its CreateProtectedEphemeralSequential).
    #[test]
    fn curator_names() {
        use Kind::*;
        let c = Library::Curator;
        check(
            "_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-lock-0000000012",
            c,
            Mutex,
            true,
            Some(12),
        );
        check(
            "_c_0f1e7b52-3c7d-4a9a-8c0e-2b6f3a1d9e44-__READ__0000000003",
            c,
            Read,
            true,
            Some(3),
        );
        check(
            "_c_0f1e7b52-3c7d-4a9a-8c0e-2b6f3a1d9e44-__WRIT__0000000004",
            c,
            Write,
            true,
            Some(4),
        );
        check(
            "_c_7d4c1a0e-5b1f-4f7e-9a2d-6c3b8e1f0a95-latch-0000000000",
            c,
            Latch,
            true,
            Some(0),
        );
        check(
            "_c_7d4c1a0e-5b1f-4f7e-9a2d-6c3b8e1f0a95-lease-0000000007",
            c,
            Lease,
            true,
            Some(7),
        );
        // After the parent's cversion overflowed.
        check(
            "_c_7d4c1a0e-5b1f-4f7e-9a2d-6c3b8e1f0a95-lock--000000001",
            c,
            Mutex,
            true,
            Some(-1),
        );
    }

    #[test]
    fn go_and_kazoo_names() {
        check(
            "_c_5e0a6b7c8d9e0f1a2b3c4d5e6f708192-lock-0000000005",
            Library::GoZookeeper,
            Kind::Mutex,
            true,
            Some(5),
        );
        check(
            "9f86d081884c4d659a2feaa0c55ad015__lock__0000000002",
            Library::Kazoo,
            Kind::Mutex,
            true,
            Some(2),
        );
        check(
            "9f86d081884c4d659a2feaa0c55ad015__rlock__0000000009",
            Library::Kazoo,
            Kind::Read,
            true,
            Some(9),
        );
    }

    #[test]
    fn unprotected_and_unknown_names() {
        check(
            "lock-0000000001",
            Library::Unknown,
            Kind::Mutex,
            false,
            Some(1),
        );
        check(
            "__lock__0000000001",
            Library::Unknown,
            Kind::Mutex,
            false,
            Some(1),
        );
        check(
            "member-0000000042",
            Library::Unknown,
            Kind::Unknown,
            false,
            Some(42),
        );
        check("leases", Library::Unknown, Kind::Unknown, false, None);
        // A Curator marker behind kazoo's prefix is no library's naming.
        check(
            "9f86d081884c4d659a2feaa0c55ad015__READ__0000000001",
            Library::Unknown,
            Kind::Read,
            true,
            Some(1),
        );
        // Not a sequence: too short, or not digits.
        check(
            "_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-lock-12",
            Library::Curator,
            Kind::Mutex,
            true,
            None,
        );
        check("x-00000000a1", Library::Unknown, Kind::Unknown, false, None);
        // Non-ASCII never panics.
        check("é€-lock-", Library::Unknown, Kind::Mutex, false, None);
        check(
            "_c_ééééééééééééééééééé-lock-0000000001",
            Library::Unknown,
            Kind::Mutex,
            false,
            Some(1),
        );
    }
}
