//! One registration per path (ZOOKEEPER-4466): which watches go to the server, children
//! changes derived under a recursive watch, no duplicates, SetWatches, removal.

use zk_proto::records::{AddWatchRequest, RemoveWatchesRequest, SetWatches2, WatcherType};
use zk_proto::{decode_exact, xid as special, ErrorCode, OpCode};

use super::*;
use crate::event_queue::{event_queue, EventReceiver};

/// Sends `addWatch(path, mode)` with a real body; returns the reply and the stream. Not
/// answered yet.
fn add_watch(f: &mut Fixture, path: &str, kind: WatchKind) -> (super::ReplyRx, EventReceiver) {
    let (tx, rx) = event_queue(64);
    let mode = match kind {
        WatchKind::PersistentRecursive => AddWatchMode::PersistentRecursive,
        _ => AddWatchMode::Persistent,
    };
    let body = encode(&AddWatchRequest {
        path: path.into(),
        mode: mode as i32,
    });
    let action = WatchAction::Register {
        path: path.into(),
        kind,
        sender: WatchSender::Stream(tx),
        on_server: true,
    };
    (f.submit(OpCode::AddWatch, body, Some(action)), rx)
}

/// What went out: (opcode, watch flag or addWatch mode or removeWatches type).
fn requests(f: &mut Fixture) -> Vec<(OpCode, i32)> {
    f.sent()
        .iter()
        .map(Sent::packet)
        .filter(|p| p.0 > 0)
        .map(|(_, op, body)| {
            let op = OpCode::try_from(op).unwrap();
            let arg = match op {
                OpCode::AddWatch => decode_exact::<AddWatchRequest>(body).unwrap().mode,
                OpCode::RemoveWatches => {
                    decode_exact::<RemoveWatchesRequest>(body)
                        .unwrap()
                        .watcher_type
                }
                _ => i32::from(body.last() == Some(&1)),
            };
            (op, arg)
        })
        .collect()
}

fn next(rx: &mut EventReceiver) -> Option<(EventType, String)> {
    rx.try_recv()
        .map(|e| e.map(|e| (e.event_type, e.path)).unwrap())
}

fn once(rx: &mut oneshot::Receiver<Result<WatchedEvent>>) -> Option<(EventType, String)> {
    match rx.try_recv() {
        Ok(Ok(e)) => Some((e.event_type, e.path)),
        _ => None,
    }
}

fn ev(t: EventType, path: &str) -> Option<(EventType, String)> {
    Some((t, path.to_owned()))
}

const RECURSIVE: i32 = AddWatchMode::PersistentRecursive as i32;
const PERSISTENT: i32 = AddWatchMode::Persistent as i32;

/// The issue's session: persistent then recursive on `/r/a`, answered.
fn persistent_then_recursive(f: &mut Fixture) -> (EventReceiver, EventReceiver) {
    let (_r, p) = add_watch(f, "/r/a", WatchKind::Persistent);
    let (_r, r) = add_watch(f, "/r/a", WatchKind::PersistentRecursive);
    assert_eq!(
        requests(f),
        [
            (OpCode::AddWatch, PERSISTENT),
            (OpCode::AddWatch, RECURSIVE)
        ]
    );
    f.reply(1, 1, ErrorCode::Ok, b"").unwrap();
    f.reply(2, 2, ErrorCode::Ok, b"").unwrap();
    (p, r)
}

#[test]
fn under_a_recursive_watch_children_changes_are_derived_from_direct_children() {
    let mut f = connected();
    let (mut p, mut r) = persistent_then_recursive(&mut f);
    let (_r, mut child) = f.watch(OpCode::GetChildren2, "/r/a", WatchKind::Child);
    let (_r, mut data) = f.watch(OpCode::GetData, "/r/a", WatchKind::Data);
    assert_eq!(
        requests(&mut f),
        [(OpCode::GetChildren2, 0), (OpCode::GetData, 0)],
        "the recursive watch serves them: no watch that would replace it"
    );
    f.reply(3, 3, ErrorCode::Ok, b"").unwrap();
    f.reply(4, 4, ErrorCode::Ok, b"").unwrap();

    f.notify(EventType::NodeCreated, "/r/a/b");
    assert_eq!(next(&mut r), ev(EventType::NodeCreated, "/r/a/b"));
    assert_eq!(next(&mut p), ev(EventType::NodeChildrenChanged, "/r/a"));
    assert_eq!(once(&mut child), ev(EventType::NodeChildrenChanged, "/r/a"));
    assert_eq!(once(&mut data), None);
    // A grandchild is no child of /r/a; a deleted child is a change again.
    f.notify(EventType::NodeCreated, "/r/a/b/c");
    assert_eq!(next(&mut r), ev(EventType::NodeCreated, "/r/a/b/c"));
    assert_eq!(next(&mut p), None);
    f.notify(EventType::NodeDeleted, "/r/a/b/c");
    f.notify(EventType::NodeDeleted, "/r/a/b");
    assert_eq!(next(&mut r), ev(EventType::NodeDeleted, "/r/a/b/c"));
    assert_eq!(next(&mut r), ev(EventType::NodeDeleted, "/r/a/b"));
    assert_eq!(next(&mut p), ev(EventType::NodeChildrenChanged, "/r/a"));
    assert_eq!(next(&mut p), None);
    // The node's own events reach every kind.
    f.notify(EventType::NodeDataChanged, "/r/a");
    assert_eq!(once(&mut data), ev(EventType::NodeDataChanged, "/r/a"));
    assert_eq!(next(&mut p), ev(EventType::NodeDataChanged, "/r/a"));
    assert_eq!(next(&mut r), ev(EventType::NodeDataChanged, "/r/a"));
    assert!(
        requests(&mut f).is_empty(),
        "watchers left: nothing removed"
    );
}

#[test]
fn a_real_children_change_beside_a_derived_one_is_not_delivered_twice() {
    // ZooKeeper 3.9 keeps the persistent watch beside the recursive one and sends the
    // children change too, right after the child's NodeCreated.
    let mut f = connected();
    let (mut p, mut r) = persistent_then_recursive(&mut f);
    f.notify(EventType::NodeCreated, "/r/a/b");
    f.notify(EventType::NodeChildrenChanged, "/r/a");
    assert_eq!(next(&mut r), ev(EventType::NodeCreated, "/r/a/b"));
    assert_eq!(next(&mut p), ev(EventType::NodeChildrenChanged, "/r/a"));
    assert_eq!(next(&mut p), None, "one change, one event");
}

#[test]
fn without_a_recursive_watch_nothing_is_derived() {
    let mut f = connected();
    let (_r, mut p) = add_watch(&mut f, "/r/a", WatchKind::Persistent);
    let (_r, mut r) = add_watch(&mut f, "/r", WatchKind::PersistentRecursive);
    f.reply(1, 1, ErrorCode::Ok, b"").unwrap();
    f.reply(2, 2, ErrorCode::Ok, b"").unwrap();
    // The recursive watch on the parent brings /r/a/b's creation, but /r/a's children
    // change comes from the server (the persistent watch there sends it).
    f.notify(EventType::NodeCreated, "/r/a/b");
    assert_eq!(next(&mut r), ev(EventType::NodeCreated, "/r/a/b"));
    assert_eq!(next(&mut p), None);
    f.notify(EventType::NodeChildrenChanged, "/r/a");
    assert_eq!(next(&mut p), ev(EventType::NodeChildrenChanged, "/r/a"));
}

#[test]
fn a_persistent_watch_under_a_recursive_one_goes_as_recursive() {
    let mut f = connected();
    let (_r, mut r) = add_watch(&mut f, "/r/a", WatchKind::PersistentRecursive);
    // Asked before the recursive one is answered: it counts already.
    let (mut reply, mut p) = add_watch(&mut f, "/r/a", WatchKind::Persistent);
    let (_r, _exist) = f.watch(OpCode::Exists, "/r/a", WatchKind::Exist);
    assert_eq!(
        requests(&mut f),
        [
            (OpCode::AddWatch, RECURSIVE),
            (OpCode::AddWatch, RECURSIVE),
            (OpCode::Exists, 0)
        ]
    );
    f.reply(1, 1, ErrorCode::Ok, b"").unwrap();
    f.reply(2, 1, ErrorCode::Ok, b"").unwrap();
    f.reply(3, 1, ErrorCode::NoNode, b"").unwrap();
    assert!(reply.try_recv().unwrap().is_ok());
    f.notify(EventType::NodeCreated, "/r/a");
    f.notify(EventType::NodeCreated, "/r/a/x");
    assert_eq!(next(&mut p), ev(EventType::NodeCreated, "/r/a"));
    assert_eq!(next(&mut p), ev(EventType::NodeChildrenChanged, "/r/a"));
    assert_eq!(next(&mut r), ev(EventType::NodeCreated, "/r/a"));
    assert_eq!(next(&mut r), ev(EventType::NodeCreated, "/r/a/x"));
}

#[test]
fn one_shots_then_a_recursive_watch_stay_served() {
    // getChildren(watch) then addWatch(recursive): on 3.8 the recursive mode replaces the
    // child watch, which would never fire.
    let mut f = connected();
    let (_r, mut child) = f.watch(OpCode::GetChildren2, "/r/a", WatchKind::Child);
    f.reply(1, 1, ErrorCode::Ok, b"").unwrap();
    let (_r, _rec) = add_watch(&mut f, "/r/a", WatchKind::PersistentRecursive);
    f.reply(2, 2, ErrorCode::Ok, b"").unwrap();
    f.notify(EventType::NodeDeleted, "/r/a/x");
    assert_eq!(once(&mut child), ev(EventType::NodeChildrenChanged, "/r/a"));
}

#[test]
fn a_one_shot_served_by_an_add_watch_that_fails_is_armed_by_itself() {
    // getData(watch) goes without its watch while addWatch(persistent) is in flight (the
    // persistent mode would serve it). The server refuses the addWatch: the one-shot must
    // still be armed, on this connection, relative to its own read.
    let mut f = connected();
    let (_r, _p) = add_watch(&mut f, "/r/a", WatchKind::Persistent);
    let (_r, mut data) = f.watch(OpCode::GetData, "/r/a", WatchKind::Data);
    assert_eq!(
        requests(&mut f),
        [(OpCode::AddWatch, PERSISTENT), (OpCode::GetData, 0)]
    );
    f.reply(1, 4, ErrorCode::Throttled, b"").unwrap();
    f.reply(2, 5, ErrorCode::Ok, b"").unwrap();
    let sent = f.sent();
    let armed: Vec<zk_proto::records::SetWatches> = sent
        .iter()
        .map(Sent::packet)
        .filter(|p| p.0 == special::SET_WATCHES)
        .map(|(_, op, body)| {
            assert_eq!(op, OpCode::SetWatches.as_i32());
            decode_exact(body).unwrap()
        })
        .collect();
    assert_eq!(armed.len(), 1, "one SetWatches for the unserved one-shot");
    assert_eq!(armed[0].relative_zxid, 5, "relative to the read's reply");
    assert_eq!(armed[0].data_watches, ["/r/a"]);
    f.reply(special::SET_WATCHES, 5, ErrorCode::Ok, b"")
        .unwrap();
    f.notify(EventType::NodeDataChanged, "/r/a");
    assert_eq!(once(&mut data), ev(EventType::NodeDataChanged, "/r/a"));
}

#[test]
fn set_watches_lists_one_shots_then_the_strongest_mode_and_derives_after_its_reply() {
    let mut f = connected();
    let (mut p, mut r) = persistent_then_recursive(&mut f);
    let (_r, mut child) = f.watch(OpCode::GetChildren2, "/r/a", WatchKind::Child);
    f.reply(3, 3, ErrorCode::Ok, b"").unwrap();
    f.disconnect(&Disconnect::Transport, f.now);
    f.connect(0x42, false);
    let sent = f.sent();
    let (xid, op, body) = sent[0].packet();
    assert_eq!(
        (xid, op),
        (special::SET_WATCHES, OpCode::SetWatches2.as_i32())
    );
    let sw: SetWatches2 = decode_exact(body).unwrap();
    assert_eq!(sw.child_watches, ["/r/a"], "for the server to catch up");
    assert!(
        sw.persistent_watches.is_empty(),
        "the recursive one serves it"
    );
    assert_eq!(sw.persistent_recursive_watches, ["/r/a"]);
    // Before the reply: the server catching up. Its children change is delivered, and a
    // deleted child (from a data watch's catch-up) derives nothing.
    f.notify(EventType::NodeChildrenChanged, "/r/a");
    f.notify(EventType::NodeDeleted, "/r/a/gone");
    assert_eq!(once(&mut child), ev(EventType::NodeChildrenChanged, "/r/a"));
    assert_eq!(next(&mut p), ev(EventType::NodeChildrenChanged, "/r/a"));
    assert_eq!(next(&mut p), None);
    assert_eq!(next(&mut r), ev(EventType::NodeDeleted, "/r/a/gone"));
    f.reply(special::SET_WATCHES, 5, ErrorCode::Ok, b"")
        .unwrap();
    f.notify(EventType::NodeCreated, "/r/a/new");
    assert_eq!(next(&mut p), ev(EventType::NodeChildrenChanged, "/r/a"));
    assert_eq!(next(&mut r), ev(EventType::NodeCreated, "/r/a/new"));
}

#[test]
fn a_path_derives_again_once_its_own_set_watches_packet_is_answered() {
    // Enough watched paths for the re-arm to go in two packets: `/r/a` (recursive, with a
    // persistent watcher) in the first. A child created after the first reply, before the
    // second, is `/r/a`'s children change: it must be derived (a 3.8 server sends none for a
    // recursive watch), not held back until every packet is answered.
    let mut f = Fixture::new(SessionConfig {
        set_watches_batch: 64,
        ..config()
    });
    f.connect(0x42, false);
    f.sent();
    let (mut p, mut r) = persistent_then_recursive(&mut f);
    let mut others = Vec::new();
    for i in 0..8 {
        let (_r, w) = f.watch(
            OpCode::GetData,
            &format!("/z/{i:02}-{}", "x".repeat(20)),
            WatchKind::Data,
        );
        f.reply(3 + i, 3 + i64::from(i), ErrorCode::Ok, b"")
            .unwrap();
        others.push(w);
    }
    f.disconnect(&Disconnect::Transport, f.now);
    f.connect(0x42, false);
    let batches: Vec<_> = f
        .sent()
        .iter()
        .map(Sent::packet)
        .filter(|p| p.0 == special::SET_WATCHES)
        .map(|(_, _, body)| decode_exact::<SetWatches2>(body).unwrap())
        .collect();
    assert!(batches.len() >= 2, "{batches:?}");
    assert_eq!(batches[0].persistent_recursive_watches, ["/r/a"]);
    f.reply(special::SET_WATCHES, 20, ErrorCode::Ok, b"")
        .unwrap();
    f.notify(EventType::NodeCreated, "/r/a/new");
    assert_eq!(next(&mut r), ev(EventType::NodeCreated, "/r/a/new"));
    assert_eq!(next(&mut p), ev(EventType::NodeChildrenChanged, "/r/a"));
    for _ in 1..batches.len() {
        f.reply(special::SET_WATCHES, 20, ErrorCode::Ok, b"")
            .unwrap();
    }
    assert_eq!(next(&mut p), None, "once, not again after the last reply");
}

#[test]
fn dropping_every_watcher_removes_all_with_any_and_never_a_persistent_type() {
    let mut f = connected();
    let (p, r) = persistent_then_recursive(&mut f);
    let (_r, data) = f.watch(OpCode::GetData, "/r/a", WatchKind::Data);
    f.reply(3, 3, ErrorCode::Ok, b"").unwrap();
    f.sent();
    drop(r);
    f.command(
        Command::DropWatch {
            path: "/r/a".into(),
        },
        f.now,
    );
    assert!(
        requests(&mut f).is_empty(),
        "the recursive registration serves the others: it stays"
    );
    drop(p);
    f.command(
        Command::DropWatch {
            path: "/r/a".into(),
        },
        f.now,
    );
    assert!(requests(&mut f).is_empty());
    drop(data);
    f.command(
        Command::DropWatch {
            path: "/r/a".into(),
        },
        f.now,
    );
    assert_eq!(
        requests(&mut f),
        [(OpCode::RemoveWatches, WatcherType::Any as i32)]
    );
}

#[test]
fn a_dropped_one_shot_beside_a_one_shot_of_the_other_table_removes_its_table_only() {
    let mut f = connected();
    let (_r, data) = f.watch(OpCode::GetData, "/r/a", WatchKind::Data);
    let (_r, _child) = f.watch(OpCode::GetChildren2, "/r/a", WatchKind::Child);
    f.reply(1, 1, ErrorCode::Ok, b"").unwrap();
    f.reply(2, 1, ErrorCode::Ok, b"").unwrap();
    f.sent();
    drop(data);
    f.command(
        Command::DropWatch {
            path: "/r/a".into(),
        },
        f.now,
    );
    assert_eq!(
        requests(&mut f),
        [(OpCode::RemoveWatches, WatcherType::Data as i32)]
    );
}
