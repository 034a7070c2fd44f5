//! The event-zxid rule of the cache (ZooKeeper 3.9+), beside the wire order of `order.rs`.
//!
//! From ZooKeeper 3.9 an event carries the zxid of the change that fired it
//! ([`WatchedEvent::zxid`](zk_client::WatchedEvent::zxid); ZOOKEEPER-4655). Where it does, the cache compares it with the
//! node's cached `Stat` ([`already_shown`]) so that no change is applied twice:
//!
//! * `NodeCreated` / `NodeDataChanged` with zxid `z`: when the cached node's `mzxid` is `z` or
//!   later, the snapshot already shows that change (or a later one): a read answered after
//!   the change was applied first, e.g. a pass's read of the node queued before the event.
//!   The refresh read the event asks for is not sent. The check is made when the event is
//!   applied and again when its refresh leaves the backlog (refreshes of one node merged
//!   there keep the newest zxid, or none when one of them had none). With one-shot watches
//!   the refresh also re-arms the node's data watch, so it is skipped only while that watch
//!   is armed (or being armed by a read in flight).
//! * `NodeDeleted` with zxid `z`: a cached node whose `czxid` is later than `z` was created
//!   after that deletion (a later incarnation read first): it is not removed.
//! * `NodeChildrenChanged` is always followed (in one-shot mode its listing re-arms the
//!   child watch); the rule never reads a parent's `cversion` or `pzxid`, which ClickHouse
//!   Keeper moves differently (#115457).
//!
//! An event without a zxid (ZooKeeper before 3.9, Keeper, the events a reconnect's
//! `SetWatches` fires) is applied as before. Wire order already keeps a stale event from
//! undoing a newer read within a session; the zxids save reads that wire order cannot tell
//! are redundant and are a second guard, and a zxid from a server can only be later than
//! the change it tells of, never earlier, so a mistaken skip would need a server that lies.

use zk_client::{EventType, Stat};

/// Whether the snapshot, holding `cached` for the event's node, already shows the change an
/// event of `event_type` with `zxid` tells of, or a later state (the rule in the module
/// docs). Always `false` without a zxid.
pub(crate) fn already_shown(
    event_type: EventType,
    zxid: Option<i64>,
    cached: Option<&Stat>,
) -> bool {
    let (Some(zxid), Some(stat)) = (zxid, cached) else {
        return false;
    };
    match event_type {
        EventType::NodeCreated | EventType::NodeDataChanged => stat.mzxid >= zxid,
        EventType::NodeDeleted => stat.czxid > zxid,
        _ => false,
    }
}

/// The zxid of two merged refreshes of one node: the newer, or none when either has none.
pub(crate) fn merged_zxid(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    Some(a?.max(b?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(czxid: i64, mzxid: i64) -> Stat {
        Stat {
            czxid,
            mzxid,
            ..Stat::default()
        }
    }

    #[test]
    fn a_change_the_snapshot_shows_is_not_applied_twice() {
        let cached = stat(5, 9);
        for kind in [EventType::NodeDataChanged, EventType::NodeCreated] {
            // The cached read came after the change (or is it): nothing to read.
            assert!(already_shown(kind, Some(9), Some(&cached)));
            assert!(already_shown(kind, Some(7), Some(&cached)));
            // A newer change, no zxid, or nothing cached: read.
            assert!(!already_shown(kind, Some(10), Some(&cached)));
            assert!(!already_shown(kind, None, Some(&cached)));
            assert!(!already_shown(kind, Some(9), None));
        }
    }

    #[test]
    fn a_deletion_never_removes_a_later_incarnation() {
        let later = stat(12, 12);
        assert!(already_shown(
            EventType::NodeDeleted,
            Some(11),
            Some(&later)
        ));
        let same = stat(5, 9);
        assert!(!already_shown(
            EventType::NodeDeleted,
            Some(11),
            Some(&same)
        ));
        assert!(!already_shown(EventType::NodeDeleted, None, Some(&later)));
        // Children events are always followed.
        assert!(!already_shown(
            EventType::NodeChildrenChanged,
            Some(1),
            Some(&later)
        ));
    }

    #[test]
    fn merged_refreshes_keep_the_newest_zxid_or_none() {
        assert_eq!(merged_zxid(Some(3), Some(8)), Some(8));
        assert_eq!(merged_zxid(Some(8), Some(3)), Some(8));
        assert_eq!(merged_zxid(None, Some(8)), None);
        assert_eq!(merged_zxid(Some(8), None), None);
    }
}
