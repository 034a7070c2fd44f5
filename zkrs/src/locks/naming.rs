//! Which library named a lock node, and what kind of contender it is.
//!
//! Naming facts (read from each library's source):
//! * Curator (and zk-recipes, which copies its layout): `_c_<36-char uuid>-<name><seq10>` with
//!   `<name>` = `lock-` (InterProcessMutex, LeaderSelector), `__READ__` / `__WRIT__`
//!   (InterProcessReadWriteLock), `latch-` (LeaderLatch), `lease-` (InterProcessSemaphoreV2's
//!   `leases/` children). The two cannot be told apart by name.
//! * go-zookeeper: `_c_<32 hex>-lock-<seq10>`.
//! * kazoo: `<32 hex>__lock__<seq10>` (Lock, WriteLock) and `<32 hex>__rlock__<seq10>`
//!   (ReadLock).
//!
//! The sequence is the server's `%010d` of the parent's cversion at create time, shared by
//! every sequential child of the parent whatever library made it: it is the arrival order.

use serde::Serialize;

/// Who named the node (by its naming alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Library {
    /// `_c_<uuid>-…`: Apache Curator, or zk-recipes (same layout).
    Curator,
    /// `_c_<32 hex>-…`.
    GoZookeeper,
    /// `<32 hex>__lock__…` / `__rlock__`.
    Kazoo,
    /// A known lock name without a library's id prefix, or no known naming at all.
    Unknown,
}

impl Library {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Library::Curator => "curator",
            Library::GoZookeeper => "go-zookeeper",
            Library::Kazoo => "kazoo",
            Library::Unknown => "?",
        }
    }
}

/// What the contender is waiting for or holding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Kind {
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
    pub(crate) fn label(self) -> &'static str {
        match self {
            Kind::Mutex => "mutex",
            Kind::Read => "read",
            Kind::Write => "write",
            Kind::Latch => "latch",
            Kind::Lease => "lease",
            Kind::Unknown => "?",
        }
    }

    /// Excludes every later contender (mutex and write nodes).
    pub(crate) fn exclusive(self) -> bool {
        matches!(self, Kind::Mutex | Kind::Write)
    }
}

/// What a node's name says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Naming {
    pub(crate) library: Library,
    pub(crate) kind: Kind,
    /// Has an id prefix its owner can find it by after a lost create (`_c_<uuid>-`, go's
    /// `_c_<hex>-`, kazoo's `<hex>` before the marker).
    pub(crate) protected: bool,
    /// The server-assigned sequence, when the name ends with one.
    pub(crate) sequence: Option<i64>,
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

const SEQUENCE_LEN: usize = 10;

/// Classifies one child name of a lock path.
pub(crate) fn classify(name: &str) -> Naming {
    let (prefix_library, rest) = strip_prefix(name);
    let found = MARKERS.iter().find_map(|&(marker, kind, lib)| {
        rest.rfind(marker).map(|at| (at + marker.len(), kind, lib))
    });
    let Some((after, kind, marker_library)) = found else {
        return Naming {
            library: Library::Unknown,
            kind: Kind::Unknown,
            protected: prefix_library.is_some(),
            sequence: trailing_sequence(name),
        };
    };
    let sequence = rest.get(after..).and_then(parse_sequence);
    let library = match (prefix_library, marker_library) {
        // A kazoo marker needs kazoo's hex id; Curator/go names need their `_c_` prefix.
        (Some(Library::Kazoo), Library::Kazoo) => Library::Kazoo,
        (Some(lib @ (Library::Curator | Library::GoZookeeper)), Library::Curator) => lib,
        _ => Library::Unknown,
    };
    Naming {
        library,
        kind,
        protected: prefix_library.is_some(),
        sequence,
    }
}

/// Splits off a library's id prefix: Curator `_c_<uuid>-`, go `_c_<32 hex>-`, kazoo `<32 hex>`
/// directly followed by `__`.
fn strip_prefix(name: &str) -> (Option<Library>, &str) {
    if let Some(tail) = name.strip_prefix("_c_") {
        if tail.len() > 37
            && tail.get(..36).is_some_and(is_dashed_uuid)
            && tail[36..].starts_with('-')
        {
            return (Some(Library::Curator), &tail[37..]);
        }
        if tail.len() > 33 && tail.get(..32).is_some_and(is_hex) && tail[32..].starts_with('-') {
            return (Some(Library::GoZookeeper), &tail[33..]);
        }
    }
    if name.len() > 34 && name.get(..32).is_some_and(is_hex) && name[32..].starts_with("__") {
        return (Some(Library::Kazoo), &name[32..]);
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

/// `%010d` of a signed 32-bit counter: ten digits, or `-` and nine (after overflow).
fn parse_sequence(text: &str) -> Option<i64> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    if text.len() != SEQUENCE_LEN || digits.is_empty() || !is_digits(digits) {
        return None;
    }
    text.parse().ok()
}

fn is_digits(s: &str) -> bool {
    s.chars().all(|c| c.is_ascii_digit())
}

/// The last ten characters as a sequence, for names of no known library.
fn trailing_sequence(name: &str) -> Option<i64> {
    let start = name.len().checked_sub(SEQUENCE_LEN)?;
    name.get(start..).and_then(parse_sequence)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(name: &str, library: Library, kind: Kind, protected: bool, seq: Option<i64>) {
        let got = classify(name);
        let want = Naming {
            library,
            kind,
            protected,
            sequence: seq,
        };
        assert_eq!(got, want, "{name}");
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
