//! ZooKeeper 3.9's watch-event zxid (ZOOKEEPER-4655), emulated in front of the real 3.8.
//!
//! What 3.9 sends (apache/zookeeper, tag `release-3.9.5`):
//! * `NIOServerCnxn.process(WatchedEvent, List<ACL>)` (line 722; `NettyServerCnxn` line 180)
//!   writes `new ReplyHeader(ClientCnxn.NOTIFICATION_XID, event.getZxid(), 0)`: the
//!   notification's reply header carries the event's zxid. 3.8 (`release-3.8.4`,
//!   `NIOServerCnxn` line 715) writes `-1L` there, and so does ClickHouse Keeper
//!   (`watch_response->zxid = -1` in `KeeperStorage.cpp`).
//! * The event's zxid is the one `DataTree` passes to `triggerWatch`, the transaction's own:
//!   `createNode` (lines 519-521: `NodeCreated` on the node, `NodeChildrenChanged` on the
//!   parent), `deleteNode` (lines 621-624: `NodeDeleted` on the node, `NodeChildrenChanged`
//!   on the parent), `setData` (line 658: `NodeDataChanged`).
//! * The events `DataTree.setWatches` fires for a reconnect's `SetWatches` (lines 1488-1515)
//!   are built without one (`WatchedEvent.NO_ZXID`, -1), as are session events.
//!
//! How the proxy gets it: the 3.8 server's tree keeps each of these zxids, so the proxy holds
//! a notification (and everything after it on that connection) while a session of its own
//! reads them back, as 3.9's tree set them: `NodeCreated` → the node's `czxid`,
//! `NodeDataChanged` → its `mzxid`, `NodeDeleted` → the parent's `pzxid` (3.8's `deleteNode`
//! sets it to the delete's zxid), `NodeChildrenChanged` → the node's `pzxid`. A node gone
//! by then is replaced by its nearest existing ancestor's `pzxid`. The read comes after the
//! notification, so the value is exact unless the node (or the parent) changed again in
//! between, and then it is later, never earlier, than 3.9's: a client can never take the
//! event for older than it is. Notifications between a `SetWatches` request and its reply
//! keep -1 (a change made by another session in that window would have its zxid on 3.9).

use std::net::SocketAddr;

use bytes::{Buf, Bytes, BytesMut};

use crate::probe::{op, ProbeError, Session, ERR_NO_NODE};

/// The notification xid.
pub(super) const NOTIFICATION: i32 = -1;
/// `SetWatches`' xid (and `SetWatches2`'s).
pub(super) const SET_WATCHES: i32 = -8;

const NODE_CREATED: i32 = 1;
const NODE_DELETED: i32 = 2;
const NODE_DATA_CHANGED: i32 = 3;
const NODE_CHILDREN_CHANGED: i32 = 4;

/// Which zxid of a `Stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Czxid,
    Mzxid,
    Pzxid,
}

/// A session of the proxy's own on the real server, connected when first needed and
/// replaced when it fails (it expires while idle).
#[derive(Debug)]
pub(super) struct Side {
    upstream: SocketAddr,
    session: tokio::sync::Mutex<Option<Session>>,
}

impl Side {
    pub(super) fn new(upstream: SocketAddr) -> Side {
        Side {
            upstream,
            session: tokio::sync::Mutex::new(None),
        }
    }

    /// The session, connected (`None` inside when the server cannot be reached); set it to
    /// `None` after a failure so that the next call connects again.
    pub(super) async fn session(&self) -> tokio::sync::MutexGuard<'_, Option<Session>> {
        let mut session = self.session.lock().await;
        if session.is_none() {
            *session = Session::connect(self.upstream).await.ok();
        }
        session
    }
}

/// Fills notifications' zxids from a side session on the real server.
#[derive(Debug)]
pub(super) struct EventZxids {
    side: Side,
}

impl EventZxids {
    pub(super) fn new(upstream: SocketAddr) -> EventZxids {
        EventZxids {
            side: Side::new(upstream),
        }
    }

    /// `packet` (length prefix included) with 3.9's zxid in its header when it is a node
    /// event's notification; anything else, or a notification whose zxid could not be read,
    /// as it is.
    pub(super) async fn fill(&self, packet: Bytes) -> Bytes {
        let Some((event_type, path)) = notification(&packet) else {
            return packet;
        };
        let Some(zxid) = self.lookup(event_type, &path).await else {
            return packet;
        };
        with_zxid(&packet, zxid)
    }

    /// The zxid 3.9 would send with `event_type` on `path` (see the module docs).
    async fn lookup(&self, event_type: i32, path: &str) -> Option<i64> {
        let (at, field) = match event_type {
            NODE_CREATED => (path.to_owned(), Field::Czxid),
            NODE_DATA_CHANGED => (path.to_owned(), Field::Mzxid),
            NODE_DELETED => (parent(path)?, Field::Pzxid),
            NODE_CHILDREN_CHANGED => (path.to_owned(), Field::Pzxid),
            _ => return None,
        };
        // A side session that expired while idle is replaced once.
        for _ in 0..2 {
            let mut session = self.side.session().await;
            let Some(s) = session.as_mut() else {
                continue;
            };
            match walk_up(s, at.clone(), field).await {
                Ok(zxid) => return Some(zxid),
                Err(_) => *session = None,
            }
        }
        None
    }
}

/// The `field` of `at`, or the `pzxid` of its nearest existing ancestor.
async fn walk_up(
    session: &mut Session,
    mut at: String,
    mut field: Field,
) -> Result<i64, ProbeError> {
    // Bounded by the path's depth ("/" always exists).
    for _ in 0..=at.len() {
        if let Some(stat) = stat(session, &at).await? {
            return zxid_of(&stat, field).ok_or(ProbeError::Protocol("short Stat"));
        }
        let Some(up) = parent(&at) else {
            break;
        };
        at = up;
        field = Field::Pzxid;
    }
    Err(ProbeError::Protocol("no ancestor exists"))
}

/// The `Stat` of `path` (an `exists` without a watch), `None` when it does not exist.
pub(super) async fn stat(session: &mut Session, path: &str) -> Result<Option<Bytes>, ProbeError> {
    let mut body = Vec::with_capacity(5 + path.len());
    body.extend((path.len() as i32).to_be_bytes());
    body.extend(path.as_bytes());
    body.push(0);
    match session.call(op::EXISTS, &body).await {
        Ok(stat) => Ok(Some(stat)),
        Err(ProbeError::Server(ERR_NO_NODE)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// `field` of a jute `Stat`: czxid, mzxid, ctime, mtime (i64), version, cversion, aversion
/// (i32), ephemeralOwner (i64), dataLength, numChildren (i32), pzxid (i64).
fn zxid_of(stat: &[u8], field: Field) -> Option<i64> {
    let at = match field {
        Field::Czxid => 0,
        Field::Mzxid => 8,
        Field::Pzxid => 60,
    };
    let bytes: [u8; 8] = stat.get(at..at + 8)?.try_into().ok()?;
    Some(i64::from_be_bytes(bytes))
}

/// The parent of an absolute path (`None` for `/`).
pub(super) fn parent(path: &str) -> Option<String> {
    if path == "/" {
        return None;
    }
    let cut = path.rfind('/')?;
    Some(if cut == 0 {
        "/".to_owned()
    } else {
        path[..cut].to_owned()
    })
}

/// The xid of a server packet (length prefix included).
pub(super) fn reply_xid(packet: &[u8]) -> Option<i32> {
    Some(i32::from_be_bytes(packet.get(4..8)?.try_into().ok()?))
}

/// The event type and path of a notification packet `{len, xid -1, zxid, err, type, state,
/// path}`.
fn notification(packet: &Bytes) -> Option<(i32, String)> {
    if reply_xid(packet)? != NOTIFICATION {
        return None;
    }
    let mut b = packet.slice(4..);
    if b.remaining() < 16 + 8 + 4 {
        return None;
    }
    b.advance(16);
    let event_type = b.get_i32();
    let _state = b.get_i32();
    let len = usize::try_from(b.get_i32()).ok()?;
    let path = String::from_utf8(b.get(..len)?.to_vec()).ok()?;
    Some((event_type, path))
}

/// `packet` with `zxid` in its reply header.
fn with_zxid(packet: &[u8], zxid: i64) -> Bytes {
    let mut p = BytesMut::from(packet);
    if let Some(slot) = p.get_mut(8..16) {
        slot.copy_from_slice(&zxid.to_be_bytes());
    }
    p.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(event_type: i32, path: &str) -> Bytes {
        let mut v = Vec::new();
        let body_len = 16 + 12 + path.len();
        v.extend((body_len as u32).to_be_bytes());
        v.extend(NOTIFICATION.to_be_bytes());
        v.extend((-1i64).to_be_bytes());
        v.extend(0i32.to_be_bytes());
        v.extend(event_type.to_be_bytes());
        v.extend(3i32.to_be_bytes());
        v.extend((path.len() as i32).to_be_bytes());
        v.extend(path.as_bytes());
        Bytes::from(v)
    }

    #[test]
    fn notifications_are_read_and_their_zxid_rewritten() {
        let p = event(NODE_DATA_CHANGED, "/a/b");
        assert_eq!(
            notification(&p),
            Some((NODE_DATA_CHANGED, "/a/b".to_owned()))
        );
        let filled = with_zxid(&p, 0x1_0000_0007);
        assert_eq!(&filled[8..16], &0x1_0000_0007i64.to_be_bytes());
        assert_eq!(&filled[..8], &p[..8]);
        assert_eq!(&filled[16..], &p[16..]);
        let mut reply = p.to_vec();
        reply[4..8].copy_from_slice(&5i32.to_be_bytes());
        assert_eq!(notification(&Bytes::from(reply)), None);
        assert_eq!(notification(&p.slice(..20)), None);
    }

    #[test]
    fn parents_and_stat_fields() {
        assert_eq!(parent("/a/b").as_deref(), Some("/a"));
        assert_eq!(parent("/a").as_deref(), Some("/"));
        assert_eq!(parent("/"), None);
        let mut stat = vec![0u8; 68];
        stat[0..8].copy_from_slice(&1i64.to_be_bytes());
        stat[8..16].copy_from_slice(&2i64.to_be_bytes());
        stat[60..68].copy_from_slice(&3i64.to_be_bytes());
        assert_eq!(zxid_of(&stat, Field::Czxid), Some(1));
        assert_eq!(zxid_of(&stat, Field::Mzxid), Some(2));
        assert_eq!(zxid_of(&stat, Field::Pzxid), Some(3));
        assert_eq!(zxid_of(&stat[..40], Field::Pzxid), None);
    }
}
