//! Watch registration, event mapping, SetWatches on reconnect, auth replay order.

use bytes::Bytes;
use tokio::sync::oneshot;
use zk_proto::records::{
    AuthPacket, EventType, RemoveWatchesRequest, SetWatches, SetWatches2, WatcherType,
};
use zk_proto::{decode_exact, xid as special, ErrorCode, OpCode};

use super::*;
use crate::event_queue::{event_queue, EventReceiver};

fn reconnect(f: &mut Fixture) -> Vec<Sent> {
    f.disconnect(&Disconnect::Transport, f.now);
    f.connect(0x42, false);
    f.sent()
}

fn set_watches(sent: &[Sent]) -> Vec<SetWatches> {
    sent.iter()
        .map(Sent::packet)
        .filter(|p| p.0 == special::SET_WATCHES)
        .map(|(_, op, body)| {
            assert_eq!(op, OpCode::SetWatches.as_i32());
            decode_exact(body).unwrap()
        })
        .collect()
}

#[test]
fn watch_is_registered_only_when_the_call_succeeds() {
    let mut f = connected();
    let (mut reply, mut watcher) = f.watch(OpCode::GetData, "/root/a", WatchKind::Data);
    f.reply(1, 1, ErrorCode::NoNode, b"").unwrap();
    assert!(matches!(reply.try_recv(), Ok(Err(Error::NoNode))));
    assert!(matches!(
        watcher.try_recv(),
        Err(oneshot::error::TryRecvError::Closed)
    ));
    f.notify(EventType::NodeCreated, "/root/a");
    assert!(set_watches(&reconnect(&mut f)).is_empty());
}

#[test]
fn exists_registers_an_exist_watch_on_no_node_and_a_data_watch_otherwise() {
    let mut f = connected();
    let (mut r1, _w1) = f.watch(OpCode::Exists, "/root/missing", WatchKind::Exist);
    let (mut r2, _w2) = f.watch(OpCode::Exists, "/root/present", WatchKind::Exist);
    let (_r3, _w3) = f.watch(OpCode::GetChildren2, "/root/present", WatchKind::Child);
    f.reply(1, 5, ErrorCode::NoNode, b"").unwrap();
    f.reply(2, 6, ErrorCode::Ok, b"").unwrap();
    f.reply(3, 7, ErrorCode::Ok, b"").unwrap();
    assert!(matches!(r1.try_recv(), Ok(Err(Error::NoNode))));
    assert!(r2.try_recv().unwrap().is_ok());
    let batches = set_watches(&reconnect(&mut f));
    assert_eq!(batches.len(), 1);
    let sw = &batches[0];
    assert_eq!(sw.relative_zxid, 7);
    assert_eq!(sw.exist_watches, ["/root/missing"]);
    assert_eq!(sw.data_watches, ["/root/present"]);
    assert_eq!(sw.child_watches, ["/root/present"]);
}

#[test]
/// Events carry the server path: each watcher strips its own client's chroot (`Watcher`,
/// `PersistentWatcher`; tested against a server with sub-client chroots in `client::api`).
fn events_map_to_kinds_like_the_java_client() {
    let mut f = connected();
    let (_r, mut data) = f.watch(OpCode::GetData, "/root/x", WatchKind::Data);
    let (_r, mut exist) = f.watch(OpCode::Exists, "/root/x", WatchKind::Exist);
    let (_r, mut child) = f.watch(OpCode::GetChildren2, "/root/x", WatchKind::Child);
    f.reply(1, 1, ErrorCode::Ok, b"").unwrap();
    f.reply(2, 1, ErrorCode::NoNode, b"").unwrap();
    f.reply(3, 1, ErrorCode::Ok, b"").unwrap();

    f.notify(EventType::NodeChildrenChanged, "/root/x");
    assert_eq!(event(&mut child), Some(EventType::NodeChildrenChanged));
    assert_eq!(event(&mut data), None);
    assert_eq!(event(&mut exist), None);
    f.notify(EventType::NodeDataChanged, "/root/x");
    match data.try_recv() {
        Ok(Ok(e)) => assert_eq!(
            e,
            WatchedEvent {
                event_type: EventType::NodeDataChanged,
                path: "/root/x".into(),
                arrival: e.arrival,
                zxid: None,
            }
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(event(&mut exist), Some(EventType::NodeDataChanged));

    // NodeDeleted fires all three kinds; NodeCreated data and exist.
    let (_r, mut data) = f.watch(OpCode::GetData, "/root/y", WatchKind::Data);
    let (_r, mut child) = f.watch(OpCode::GetChildren2, "/root/y", WatchKind::Child);
    let (_r, mut exist) = f.watch(OpCode::Exists, "/root/z", WatchKind::Exist);
    f.reply(4, 1, ErrorCode::Ok, b"").unwrap();
    f.reply(5, 1, ErrorCode::Ok, b"").unwrap();
    f.reply(6, 1, ErrorCode::NoNode, b"").unwrap();
    f.notify(EventType::NodeDeleted, "/root/y");
    assert_eq!(event(&mut data), Some(EventType::NodeDeleted));
    assert_eq!(event(&mut child), Some(EventType::NodeDeleted));
    f.notify(EventType::NodeCreated, "/root/z");
    assert_eq!(event(&mut exist), Some(EventType::NodeCreated));
    // One-shot: nothing left to re-register.
    assert!(set_watches(&reconnect(&mut f)).is_empty());
}

#[test]
/// ZooKeeper 3.9 puts the zxid of the change in the notification's header
/// (ZOOKEEPER-4655); older servers and Keeper send -1, which is no zxid.
fn a_notification_zxid_is_the_event_zxid_and_minus_one_is_none() {
    let mut f = connected();
    let (_r, mut old) = f.watch(OpCode::GetData, "/root/a", WatchKind::Data);
    let (_r, mut new) = f.watch(OpCode::GetData, "/root/b", WatchKind::Data);
    f.reply(1, 10, ErrorCode::Ok, b"").unwrap();
    f.reply(2, 10, ErrorCode::Ok, b"").unwrap();
    let notify = |f: &mut Fixture, path: &str, zxid: i64| {
        let body = encode(&zk_proto::records::WatcherEvent {
            event_type: EventType::NodeDataChanged,
            state: zk_proto::records::KeeperState::SyncConnected,
            path: path.into(),
        });
        f.reply(special::NOTIFICATION, zxid, ErrorCode::Ok, &body)
            .unwrap();
    };
    notify(&mut f, "/root/a", -1);
    notify(&mut f, "/root/b", 0x1_0000_002a);
    let zxid = |rx: &mut oneshot::Receiver<Result<WatchedEvent>>| match rx.try_recv() {
        Ok(Ok(e)) => e.zxid(),
        other => panic!("{other:?}"),
    };
    assert_eq!(zxid(&mut old), None);
    assert_eq!(zxid(&mut new), Some(0x1_0000_002a));
}

#[test]
fn set_watches_uses_the_last_reply_zxid_not_notification_zxids() {
    let mut f = connected();
    let (_r, _w) = f.watch(OpCode::GetData, "/root/a", WatchKind::Data);
    f.reply(1, 10, ErrorCode::Ok, b"").unwrap();
    let body = {
        let mut b = BytesMut::new();
        zk_proto::records::WatcherEvent {
            event_type: EventType::NodeChildrenChanged,
            state: zk_proto::records::KeeperState::SyncConnected,
            path: "/root/other".into(),
        }
        .encode(&mut b);
        b
    };
    f.reply(special::NOTIFICATION, 99, ErrorCode::Ok, &body)
        .unwrap();
    let sw = set_watches(&reconnect(&mut f));
    assert_eq!(sw[0].relative_zxid, 10);
}

/// An `Auth` request body with digest credentials.
fn digest_auth() -> Bytes {
    encode(&AuthPacket {
        auth_type: 0,
        scheme: "digest".into(),
        auth: Bytes::from_static(b"u:p"),
    })
}

#[test]
fn reconnect_sends_auth_then_set_watches_then_queued_requests() {
    let mut f = connected();
    let auth = digest_auth();
    let mut auth_reply = f.submit(OpCode::Auth, auth.clone(), None);
    let sent = f.sent();
    assert_eq!(sent[0].packet().0, special::AUTH);
    f.reply(special::AUTH, 0, ErrorCode::Ok, b"").unwrap();
    assert!(auth_reply.try_recv().unwrap().is_ok());
    let (_r, _w) = f.watch(OpCode::GetData, "/root/a", WatchKind::Data);
    f.reply(1, 3, ErrorCode::Ok, b"").unwrap();
    f.sent();

    f.disconnect(&Disconnect::Transport, f.now);
    let mut queued = f.get_data("/root/q");
    f.connect(0x42, false);
    let sent: Vec<_> = f.sent().iter().map(Sent::packet).collect();
    let order: Vec<(i32, i32)> = sent.iter().map(|p| (p.0, p.1)).collect();
    assert_eq!(
        order,
        [
            (special::AUTH, OpCode::Auth.as_i32()),
            (special::SET_WATCHES, OpCode::SetWatches.as_i32()),
            (2, OpCode::GetData.as_i32()),
        ]
    );
    assert_eq!(sent[0].2, auth, "the same credentials are replayed");
    // Replies to the replayed packets go nowhere; the queued request gets its own.
    f.reply(special::AUTH, 0, ErrorCode::Ok, b"").unwrap();
    f.reply(special::SET_WATCHES, 0, ErrorCode::Ok, b"")
        .unwrap();
    f.reply(2, 4, ErrorCode::Ok, b"q").unwrap();
    assert_eq!(queued.try_recv().unwrap().unwrap().as_ref(), b"q");
}

#[test]
fn credentials_added_again_after_a_connection_loss_are_replayed_once() {
    // An `add_auth` answered `ConnectionLoss` may or may not have been taken: the caller
    // sends it again. The session keeps each credential once, so a reconnect replays it once.
    let mut f = connected();
    let auth = digest_auth();
    let mut lost = f.submit(OpCode::Auth, auth.clone(), None);
    f.sent();
    f.disconnect(&Disconnect::Transport, f.now);
    assert!(matches!(
        lost.try_recv().unwrap(),
        Err(crate::Error::ConnectionLoss)
    ));
    f.connect(0x42, false);
    f.sent();
    f.reply(special::AUTH, 0, ErrorCode::Ok, b"").unwrap();
    let mut again = f.submit(OpCode::Auth, auth.clone(), None);
    f.sent();
    f.reply(special::AUTH, 0, ErrorCode::Ok, b"").unwrap();
    assert!(again.try_recv().unwrap().is_ok());
    f.disconnect(&Disconnect::Transport, f.now);
    f.connect(0x42, false);
    let replayed: Vec<_> = f
        .sent()
        .iter()
        .map(Sent::packet)
        .filter(|p| p.0 == special::AUTH)
        .map(|p| p.2)
        .collect();
    assert_eq!(replayed, [auth], "one credential, one replay");
}

#[test]
fn a_set_watches_the_server_refuses_drops_the_connection_and_the_next_one_re_arms() {
    let mut f = connected();
    let (_r, mut watcher) = f.watch(OpCode::GetData, "/root/a", WatchKind::Data);
    f.reply(1, 3, ErrorCode::Ok, b"").unwrap();
    assert_eq!(set_watches(&reconnect(&mut f)).len(), 1);
    // The server holds none of the batch's watches: keeping this connection would leave
    // the watcher registered here and never fired.
    assert_eq!(
        f.reply(special::SET_WATCHES, 0, ErrorCode::MarshallingError, b""),
        Err(Disconnect::SetWatchesFailed(ErrorCode::MarshallingError))
    );
    let again = set_watches(&reconnect(&mut f));
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].data_watches, ["/root/a"]);
    f.reply(special::SET_WATCHES, 0, ErrorCode::Ok, b"")
        .unwrap();
    f.notify(EventType::NodeDataChanged, "/root/a");
    let event = watcher.try_recv().unwrap().unwrap();
    assert_eq!(event.event_type, EventType::NodeDataChanged);
}

#[test]
fn set_watches_is_split_into_batches_under_the_limit() {
    let mut f = Fixture::new(SessionConfig {
        set_watches_batch: 40,
        ..config()
    });
    // The same id `reconnect` resumes with (another id would be a replaced session).
    f.connect(0x42, false);
    f.sent();
    let paths: Vec<String> = (0..10).map(|i| format!("/root/node-{i:02}")).collect();
    let mut watchers = Vec::new();
    for (i, p) in paths.iter().enumerate() {
        let (_r, w) = f.watch(OpCode::GetData, p, WatchKind::Data);
        watchers.push(w);
        f.reply(i as i32 + 1, 1, ErrorCode::Ok, b"").unwrap();
    }
    let batches = set_watches(&reconnect(&mut f));
    assert!(batches.len() >= 4, "{}", batches.len());
    let mut all: Vec<String> = Vec::new();
    for b in &batches {
        let bytes: usize = b.data_watches.iter().map(|p| p.len() + 4).sum();
        assert!(bytes <= 40, "batch of {bytes} bytes");
        all.extend(b.data_watches.iter().cloned());
    }
    all.sort();
    assert_eq!(all, paths);
}

#[test]
fn dropped_watchers_are_not_re_registered() {
    let mut f = connected();
    let (_r, w) = f.watch(OpCode::GetData, "/root/a", WatchKind::Data);
    f.reply(1, 1, ErrorCode::Ok, b"").unwrap();
    drop(w);
    assert!(set_watches(&reconnect(&mut f)).is_empty());
}

fn persistent(f: &mut Fixture, path: &str, kind: WatchKind) -> EventReceiver {
    let (tx, rx) = event_queue(64);
    let action = WatchAction::Register {
        path: path.into(),
        kind,
        sender: WatchSender::Stream(tx),
        on_server: true,
    };
    let mut r = f.submit(OpCode::AddWatch, Bytes::new(), Some(action));
    let (xid, _, _) = f.sent().last().unwrap().packet();
    f.reply(xid, 1, ErrorCode::Ok, &[0, 0, 0, 0]).unwrap();
    assert!(r.try_recv().unwrap().is_ok());
    rx
}

fn next(rx: &mut EventReceiver) -> Option<(EventType, String)> {
    rx.try_recv()
        .map(|e| e.map(|e| (e.event_type, e.path)).unwrap())
}

#[test]
fn persistent_and_recursive_watches_and_set_watches2() {
    let mut f = connected();
    let mut p = persistent(&mut f, "/root/p", WatchKind::Persistent);
    let mut r = persistent(&mut f, "/root", WatchKind::PersistentRecursive);
    f.notify(EventType::NodeChildrenChanged, "/root/p");
    assert_eq!(
        next(&mut p),
        Some((EventType::NodeChildrenChanged, "/root/p".into()))
    );
    assert_eq!(next(&mut r), None, "recursive watches get no child events");
    f.notify(EventType::NodeCreated, "/root/p/deep/er");
    assert_eq!(
        next(&mut r),
        Some((EventType::NodeCreated, "/root/p/deep/er".into()))
    );
    assert_eq!(next(&mut p), None);
    f.notify(EventType::NodeDataChanged, "/root/p");
    f.notify(EventType::NodeDeleted, "/root/p");
    assert_eq!(
        next(&mut p),
        Some((EventType::NodeDataChanged, "/root/p".into()))
    );
    assert_eq!(
        next(&mut p),
        Some((EventType::NodeDeleted, "/root/p".into())),
        "persistent: not removed"
    );
    assert_eq!(
        next(&mut r),
        Some((EventType::NodeDataChanged, "/root/p".into()))
    );
    assert_eq!(
        next(&mut r),
        Some((EventType::NodeDeleted, "/root/p".into()))
    );

    let sent = reconnect(&mut f);
    let (xid, op, body) = sent[0].packet();
    assert_eq!(
        (xid, op),
        (special::SET_WATCHES, OpCode::SetWatches2.as_i32())
    );
    let sw: SetWatches2 = decode_exact(body).unwrap();
    assert_eq!(sw.persistent_watches, ["/root/p"]);
    assert_eq!(sw.persistent_recursive_watches, ["/root"]);

    // Expiry ends the streams with the terminal error.
    f.disconnect(&Disconnect::Transport, f.now);
    f.tcp_up(f.now);
    f.frame(encode(&ConnectResponse::default()), f.now).unwrap();
    assert!(matches!(p.try_recv(), Some(Err(Error::SessionExpired))));
    assert!(matches!(r.try_recv(), Some(Err(Error::SessionExpired))));
}

#[test]
fn remove_watches_tells_local_watchers_only_on_success() {
    let mut f = connected();
    let (_r, mut data) = f.watch(OpCode::GetData, "/root/a", WatchKind::Data);
    let (_r, mut child) = f.watch(OpCode::GetChildren2, "/root/a", WatchKind::Child);
    f.reply(1, 1, ErrorCode::Ok, b"").unwrap();
    f.reply(2, 1, ErrorCode::Ok, b"").unwrap();
    let remove = |kind| WatchAction::Remove {
        path: "/root/a".into(),
        kind,
    };
    let mut r = f.submit(
        OpCode::RemoveWatches,
        Bytes::new(),
        Some(remove(WatcherType::Children)),
    );
    f.reply(3, 1, ErrorCode::NoWatcher, b"").unwrap();
    assert!(matches!(
        r.try_recv(),
        Ok(Err(Error::Server(ErrorCode::NoWatcher)))
    ));
    assert_eq!(event(&mut child), None);
    let _r = f.submit(
        OpCode::RemoveWatches,
        Bytes::new(),
        Some(remove(WatcherType::Children)),
    );
    f.reply(4, 1, ErrorCode::Ok, b"").unwrap();
    assert_eq!(event(&mut child), Some(EventType::ChildWatchRemoved));
    assert_eq!(event(&mut data), None);
    let _r = f.submit(
        OpCode::RemoveWatches,
        Bytes::new(),
        Some(remove(WatcherType::Data)),
    );
    f.reply(5, 1, ErrorCode::Ok, b"").unwrap();
    assert_eq!(event(&mut data), Some(EventType::DataWatchRemoved));
}

#[test]
fn dropping_the_last_persistent_watcher_removes_the_server_watch() {
    let mut f = connected();
    let p = persistent(&mut f, "/root/p", WatchKind::Persistent);
    let (_r, _keep) = f.watch(OpCode::GetData, "/root/q", WatchKind::Data);
    f.reply(2, 1, ErrorCode::Ok, b"").unwrap();
    let q = persistent(&mut f, "/root/q", WatchKind::Persistent);
    f.sent();
    drop(q);
    f.command(
        Command::DropWatch {
            path: "/root/q".into(),
        },
        f.now,
    );
    assert!(f.sent().is_empty(), "a data watcher still uses /root/q");
    drop(p);
    f.command(
        Command::DropWatch {
            path: "/root/p".into(),
        },
        f.now,
    );
    let sent = f.sent();
    let (_, op, body) = sent[0].packet();
    assert_eq!(op, OpCode::RemoveWatches.as_i32());
    let req: RemoveWatchesRequest = decode_exact(body).unwrap();
    assert_eq!(req.path, "/root/p");
    assert_eq!(req.watcher_type, WatcherType::Any as i32);
}

#[test]
fn auth_failure_is_terminal() {
    let mut f = connected();
    let (_r, mut w) = f.watch(OpCode::GetData, "/root/a", WatchKind::Data);
    f.reply(1, 1, ErrorCode::Ok, b"").unwrap();
    let mut auth = f.submit(OpCode::Auth, Bytes::from_static(b"x"), None);
    let mut later = f.get_data("/root/b");
    f.reply(special::AUTH, 0, ErrorCode::AuthFailed, b"")
        .unwrap();
    assert!(matches!(auth.try_recv(), Ok(Err(Error::AuthFailed))));
    assert!(matches!(later.try_recv(), Ok(Err(Error::AuthFailed))));
    assert!(matches!(w.try_recv(), Ok(Err(Error::AuthFailed))));
    assert_eq!(f.s.state(), SessionState::AuthFailed);
}

fn removed(f: &mut Fixture) -> Vec<(String, i32)> {
    f.sent()
        .iter()
        .map(Sent::packet)
        .filter(|p| p.1 == OpCode::RemoveWatches.as_i32())
        .map(|p| {
            let r: RemoveWatchesRequest = decode_exact(p.2).unwrap();
            (r.path, r.watcher_type)
        })
        .collect()
}

#[test]
fn dropping_one_shot_watchers_removes_only_unused_server_watches() {
    let mut f = connected();
    let (_r, data) = f.watch(OpCode::GetData, "/root/a", WatchKind::Data);
    let (_r, exist) = f.watch(OpCode::Exists, "/root/a", WatchKind::Exist);
    let (_r, child) = f.watch(OpCode::GetChildren2, "/root/a", WatchKind::Child);
    for xid in 1..=3 {
        f.reply(xid, 1, ErrorCode::Ok, b"").unwrap();
    }
    f.sent();
    let drop_watch = |f: &mut Fixture, _kind: WatchKind| {
        f.command(
            Command::DropWatch {
                path: "/root/a".into(),
            },
            f.now,
        )
    };
    drop(data);
    drop_watch(&mut f, WatchKind::Data);
    assert!(
        removed(&mut f).is_empty(),
        "the exist watcher still uses the data watch"
    );
    drop(exist);
    drop_watch(&mut f, WatchKind::Exist);
    assert_eq!(
        removed(&mut f),
        [("/root/a".to_string(), WatcherType::Data as i32)]
    );
    // A watch being set on the path right now would be removed with it: wait.
    let (_r, _again) = f.watch(OpCode::GetChildren2, "/root/a", WatchKind::Child);
    f.sent();
    drop(child);
    drop_watch(&mut f, WatchKind::Child);
    assert!(removed(&mut f).is_empty());
}

fn drop_watch(f: &mut Fixture, path: &str) {
    f.command(Command::DropWatch { path: path.into() }, f.now);
}

/// The watch flag (last byte) of every getData/exists/getChildren request sent.
fn watch_flags(sent: &[Sent]) -> Vec<(i32, bool)> {
    sent.iter()
        .map(Sent::packet)
        .filter(|p| p.1 != OpCode::RemoveWatches.as_i32())
        .map(|p| (p.1, p.2.last() == Some(&1)))
        .collect()
}

#[test]
fn a_watch_whose_watcher_was_dropped_before_the_reply_is_removed_when_the_reply_comes() {
    let mut f = connected();
    let (_r, w) = f.watch(OpCode::GetData, "/root/a", WatchKind::Data);
    f.sent();
    drop(w);
    drop_watch(&mut f, "/root/a");
    assert!(
        removed(&mut f).is_empty(),
        "not yet: the request is in flight"
    );
    f.reply(1, 1, ErrorCode::Ok, b"").unwrap();
    assert_eq!(
        removed(&mut f),
        [("/root/a".to_string(), WatcherType::Any as i32)]
    );
    f.reply(2, 1, ErrorCode::Ok, b"").unwrap(); // the removal
                                                // The same for a persistent watch whose add_watch future was dropped.
    let (tx, rx) = event_queue(4);
    let _r = f.submit(
        OpCode::AddWatch,
        Bytes::new(),
        Some(WatchAction::Register {
            path: "/root/p".into(),
            kind: WatchKind::PersistentRecursive,
            sender: WatchSender::Stream(tx),
            on_server: true,
        }),
    );
    let (xid, _, _) = f.sent().last().unwrap().packet();
    drop(rx);
    drop_watch(&mut f, "/root/p");
    f.reply(xid, 1, ErrorCode::Ok, b"").unwrap();
    assert_eq!(
        removed(&mut f),
        [("/root/p".to_string(), WatcherType::Any as i32)]
    );
}

#[test]
fn a_drop_deferred_by_another_registration_is_done_when_that_one_completes() {
    let mut f = connected();
    let (_r, exist) = f.watch(OpCode::Exists, "/root/a", WatchKind::Exist);
    f.reply(1, 1, ErrorCode::Ok, b"").unwrap();
    // A child watch is being set on the same path when the exist watcher goes.
    let (_r, _child) = f.watch(OpCode::GetChildren2, "/root/a", WatchKind::Child);
    f.sent();
    drop(exist);
    drop_watch(&mut f, "/root/a");
    assert!(removed(&mut f).is_empty(), "waits for the registration");
    f.reply(2, 1, ErrorCode::Ok, b"").unwrap();
    assert_eq!(
        removed(&mut f),
        [("/root/a".to_string(), WatcherType::Data as i32)],
        "the data watch nobody needs goes; the child watch stays"
    );
    f.reply(3, 1, ErrorCode::Ok, b"").unwrap(); // the removal
                                                // A registration that fails (the node is gone) also lets a deferred drop through.
    let (_r, data) = f.watch(OpCode::GetData, "/root/b", WatchKind::Data);
    f.reply(4, 1, ErrorCode::Ok, b"").unwrap();
    let (_r, _failing) = f.watch(OpCode::GetData, "/root/b", WatchKind::Data);
    f.sent();
    drop(data);
    drop_watch(&mut f, "/root/b");
    f.reply(5, 1, ErrorCode::NoNode, b"").unwrap();
    assert_eq!(
        removed(&mut f),
        [("/root/b".to_string(), WatcherType::Any as i32)]
    );
}

#[test]
fn a_persistent_watch_kept_for_a_one_shot_watcher_goes_when_that_one_fires() {
    let mut f = connected();
    let (_r, mut once) = f.watch(OpCode::GetData, "/root/a", WatchKind::Data);
    f.reply(1, 1, ErrorCode::Ok, b"").unwrap();
    let p = persistent(&mut f, "/root/a", WatchKind::Persistent);
    f.sent();
    drop(p);
    drop_watch(&mut f, "/root/a");
    assert!(
        removed(&mut f).is_empty(),
        "the server's persistent watch serves the one-shot watcher (ZOOKEEPER-4466)"
    );
    f.notify(EventType::NodeDataChanged, "/root/a");
    assert_eq!(event(&mut once), Some(EventType::NodeDataChanged));
    assert_eq!(
        removed(&mut f),
        [("/root/a".to_string(), WatcherType::Any as i32)]
    );
}

#[test]
fn a_one_shot_watch_on_a_persistently_watched_path_is_served_locally() {
    let mut f = connected();
    let mut p = persistent(&mut f, "/root/a", WatchKind::Persistent);
    let (r, mut once) = f.watch(OpCode::GetData, "/root/a", WatchKind::Data);
    let (_r, mut child) = f.watch(OpCode::GetChildren2, "/root/a", WatchKind::Child);
    let (_r, mut elsewhere) = f.watch(OpCode::GetData, "/root/b", WatchKind::Data);
    assert_eq!(
        watch_flags(&f.sent()),
        [
            (OpCode::GetData.as_i32(), false),
            (OpCode::GetChildren2.as_i32(), false),
            (OpCode::GetData.as_i32(), true),
        ],
        "no one-shot watch that would replace the persistent one"
    );
    for xid in 2..=4 {
        f.reply(xid, 1, ErrorCode::Ok, b"").unwrap();
    }
    drop(r);
    f.notify(EventType::NodeDataChanged, "/root/a");
    assert_eq!(event(&mut once), Some(EventType::NodeDataChanged));
    assert_eq!(next(&mut p).map(|e| e.0), Some(EventType::NodeDataChanged));
    f.notify(EventType::NodeChildrenChanged, "/root/a");
    assert_eq!(event(&mut child), Some(EventType::NodeChildrenChanged));
    assert_eq!(event(&mut elsewhere), None);
    assert!(
        removed(&mut f).is_empty(),
        "the persistent watcher lives on"
    );
}

#[test]
/// Replies and watch events carry the number of the frame that brought them, so a consumer of
/// both (a cache: a read's reply and a persistent watcher's events) can apply them in the
/// server's order; one notification told to two watchers has one arrival.
fn replies_and_events_are_stamped_in_the_order_their_frames_came() {
    let mut f = connected();
    let (mut first, mut data) = f.watch(OpCode::GetData, "/root/x", WatchKind::Data);
    let (_r, mut exist) = f.watch(OpCode::Exists, "/root/x", WatchKind::Exist);
    let mut read = f.get_data("/root/y");
    f.reply(1, 1, ErrorCode::Ok, b"").unwrap();
    f.reply(2, 1, ErrorCode::Ok, b"").unwrap();
    f.notify(EventType::NodeDataChanged, "/root/x");
    f.reply(3, 2, ErrorCode::NoNode, b"").unwrap();

    assert!(first.try_recv().unwrap().is_ok());
    assert!(matches!(read.try_recv(), Ok(Err(Error::NoNode))));
    let event = |rx: &mut oneshot::Receiver<Result<WatchedEvent>>| match rx.try_recv() {
        Ok(Ok(e)) => e,
        other => panic!("{other:?}"),
    };
    let (data, exist) = (event(&mut data), event(&mut exist));
    assert_eq!(data.arrival, exist.arrival, "one notification, one arrival");
    assert!(
        first.arrival() < data.arrival,
        "the event came after the first reply"
    );
    assert!(data.arrival < read.arrival(), "and before the last one");

    // A reply the client makes itself comes after every frame received before it, and a new
    // connection goes on counting.
    let mut lost = f.get_data("/root/z");
    f.disconnect(&Disconnect::Transport, f.now);
    assert!(matches!(lost.try_recv(), Ok(Err(Error::ConnectionLoss))));
    assert!(lost.arrival() >= read.arrival());
    f.connect(0x42, false);
    f.sent();
    let mut again = f.get_data("/root/z");
    let xid = f.sent().last().expect("the read").packet().0;
    f.reply(xid, 3, ErrorCode::Ok, b"").unwrap();
    assert!(again.try_recv().unwrap().is_ok());
    assert!(again.arrival() > lost.arrival());
}

/// Sets `n` data watches on distinct paths, all queued at once as a pipelined caller does,
/// and answers them in order; how often the session looked through its queues meanwhile.
fn set_pipelined(n: usize) -> usize {
    let mut f = connected();
    let mut watchers = Vec::with_capacity(n);
    for i in 0..n {
        watchers.push(f.watch(OpCode::GetData, &format!("/w/{i:06}"), WatchKind::Data));
    }
    crate::session::QUEUE_SCANS.with(|c| c.set(0));
    for xid in 1..=n {
        let xid = i32::try_from(xid).unwrap_or(i32::MAX);
        f.reply(xid, i64::from(xid), ErrorCode::Ok, b"").unwrap();
        if xid % 512 == 0 {
            f.sent();
        }
    }
    assert!(watchers.iter_mut().all(|(r, _)| r.try_recv().is_ok()));
    crate::session::QUEUE_SCANS.with(std::cell::Cell::get)
}

#[test]
fn pipelined_watches_cost_the_same_however_many_are_queued() {
    // Each reply looking through every queued request for another one setting a watch on
    // its path made setting N pipelined watches cost O(N²) (20,000 took 32 s of a debug
    // build; 100,000 starved the connection): a reply for a live watcher needs no scan.
    for n in [1, 100, 3_000] {
        assert_eq!(set_pipelined(n), 0, "queue scans while setting {n} watches");
    }
}
