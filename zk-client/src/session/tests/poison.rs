//! Poison requests: a request the server answers by dropping the connection is refused
//! locally after two losses in a row right after it was written.

use zk_proto::records::{AddWatchRequest, SetDataRequest};

use super::*;
use crate::session::poison::PoisonLedger;

fn add_watch(f: &mut Fixture, path: &str) -> ReplyRx {
    let body = encode(&AddWatchRequest {
        path: path.into(),
        mode: 1,
    });
    f.submit(OpCode::AddWatch, body, None)
}

fn set_data(f: &mut Fixture, path: &str, len: usize) -> ReplyRx {
    let body = encode(&SetDataRequest {
        path: path.into(),
        data: Bytes::from(vec![7; len]),
        version: -1,
    });
    f.submit(OpCode::SetData, body, None)
}

/// Ops of the requests written since the last call.
fn sent_ops(f: &mut Fixture) -> Vec<i32> {
    f.sent()
        .into_iter()
        .filter_map(|s| match s {
            Sent::Packet { op, .. } => Some(op),
            Sent::Connect(_) => None,
        })
        .collect()
}

fn answer(rx: &mut ReplyRx) -> Option<Result<Bytes>> {
    rx.try_recv().ok()
}

/// `add_watch` on `/c` is written, and the server closes the connection 20 ms later.
fn dropped_once(f: &mut Fixture, at: Duration) -> Option<Result<Bytes>> {
    let now = f.at(at);
    f.connect(0x42, false);
    f.sent();
    let mut rx = add_watch(f, "/c");
    assert_eq!(sent_ops(f), vec![OpCode::AddWatch.as_i32()]);
    let now = now + Duration::from_millis(20);
    f.now = now;
    f.disconnect(&Disconnect::Closed, now);
    answer(&mut rx)
}

#[test]
fn a_request_dropped_twice_in_a_row_is_refused_locally() {
    let mut f = Fixture::new(config());
    for i in 0..2 {
        let got = dropped_once(&mut f, Duration::from_secs(i));
        assert!(matches!(got, Some(Err(Error::ConnectionLoss))), "{got:?}");
    }
    // Connected again: the same request fails at once and nothing is sent.
    f.at(Duration::from_secs(2));
    f.connect(0x42, false);
    f.sent();
    let mut rx = add_watch(&mut f, "/c");
    match answer(&mut rx) {
        Some(Err(Error::ServerDropsRequest {
            op,
            path,
            retry_after,
        })) => {
            assert_eq!(op, OpCode::AddWatch);
            assert_eq!(path.as_deref(), Some("/c"));
            assert!(retry_after > Duration::from_secs(55), "{retry_after:?}");
        }
        other => panic!("{other:?}"),
    }
    let err = Error::ServerDropsRequest {
        op: OpCode::AddWatch,
        path: Some("/c".into()),
        retry_after: Duration::from_secs(60),
    };
    assert!(!err.is_retryable());
    assert!(
        err.to_string()
            .starts_with("the server drops the connection on AddWatch requests for /c"),
        "{err}"
    );
    assert!(sent_ops(&mut f).is_empty());
    // Other requests, the same op on another path, go out.
    let _other = add_watch(&mut f, "/d");
    let _read = f.get_data("/c");
    assert_eq!(
        sent_ops(&mut f),
        vec![OpCode::AddWatch.as_i32(), OpCode::GetData.as_i32()]
    );

    // After the quarantine it is sent again; one more drop quarantines it at once.
    let now = f.at(Duration::from_secs(50));
    f.disconnect(&Disconnect::Closed, now);
    let got = dropped_once(&mut f, Duration::from_secs(63));
    assert!(matches!(got, Some(Err(Error::ConnectionLoss))), "{got:?}");
    f.connect(0x42, false);
    f.sent();
    let mut rx = add_watch(&mut f, "/c");
    assert!(matches!(
        answer(&mut rx),
        Some(Err(Error::ServerDropsRequest { .. }))
    ));
}

#[test]
fn losses_long_after_the_write_or_not_by_the_server_do_not_count() {
    let mut f = Fixture::new(config());
    for i in 0..3 {
        let now = f.at(Duration::from_secs(10 * i));
        f.connect(0x42, false);
        f.sent();
        let mut rx = add_watch(&mut f, "/c");
        // The loss comes 2 s after the write: not "right after" it.
        f.disconnect(&Disconnect::Closed, now + Duration::from_secs(2));
        assert!(matches!(answer(&mut rx), Some(Err(Error::ConnectionLoss))));
    }
    for i in 3..6 {
        let now = f.at(Duration::from_secs(10 * i));
        f.connect(0x42, false);
        f.sent();
        let mut rx = add_watch(&mut f, "/c");
        // A read timeout is the server's silence, not a drop.
        f.disconnect(&Disconnect::ReadTimeout, now + Duration::from_millis(5));
        assert!(matches!(answer(&mut rx), Some(Err(Error::ConnectionLoss))));
    }
    f.connect(0x42, false);
    f.sent();
    let _rx = add_watch(&mut f, "/c");
    assert_eq!(sent_ops(&mut f), vec![OpCode::AddWatch.as_i32()]);
}

#[test]
fn resets_never_count_only_a_servers_orderly_close_does() {
    let mut f = Fixture::new(config());
    // The same request in flight, written 20 ms before, at ten resets in a row (a flaky
    // network, a proxy cutting connections with RST): never refused.
    for i in 0..10 {
        let now = f.at(Duration::from_secs(i));
        f.connect(0x42, false);
        f.sent();
        let mut rx = add_watch(&mut f, "/c");
        assert_eq!(sent_ops(&mut f), vec![OpCode::AddWatch.as_i32()]);
        f.disconnect(&Disconnect::Transport, now + Duration::from_millis(20));
        assert!(matches!(answer(&mut rx), Some(Err(Error::ConnectionLoss))));
    }
    // A reset between two orderly closes breaks the streak too.
    dropped_once(&mut f, Duration::from_secs(20));
    let now = f.at(Duration::from_secs(21));
    f.connect(0x42, false);
    f.sent();
    let mut rx = add_watch(&mut f, "/c");
    f.disconnect(&Disconnect::Transport, now + Duration::from_millis(20));
    assert!(matches!(answer(&mut rx), Some(Err(Error::ConnectionLoss))));
    dropped_once(&mut f, Duration::from_secs(22));
    f.connect(0x42, false);
    f.sent();
    let _rx = add_watch(&mut f, "/c");
    assert_eq!(sent_ops(&mut f), vec![OpCode::AddWatch.as_i32()]);
}

#[test]
fn a_loss_in_between_without_the_request_breaks_the_streak() {
    let mut f = Fixture::new(config());
    dropped_once(&mut f, Duration::ZERO);
    // A loss with only another request in flight.
    f.at(Duration::from_secs(1));
    f.connect(0x42, false);
    f.sent();
    let _rx = f.get_data("/x");
    f.disconnect(&Disconnect::Closed, f.now);
    dropped_once(&mut f, Duration::from_secs(2));
    f.connect(0x42, false);
    f.sent();
    let _rx = add_watch(&mut f, "/c");
    assert_eq!(sent_ops(&mut f), vec![OpCode::AddWatch.as_i32()]);
}

#[test]
fn queued_identical_requests_fail_when_the_request_is_quarantined() {
    let mut f = Fixture::new(SessionConfig {
        max_outstanding: 1,
        ..config()
    });
    dropped_once(&mut f, Duration::ZERO);
    f.at(Duration::from_secs(1));
    f.connect(0x42, false);
    f.sent();
    let mut first = add_watch(&mut f, "/c");
    // The window is full: these two wait.
    let mut queued = add_watch(&mut f, "/c");
    let mut other = f.get_data("/c");
    assert_eq!(f.s.queued(), 2);
    f.disconnect(&Disconnect::Closed, f.now + Duration::from_millis(3));
    assert!(matches!(
        answer(&mut first),
        Some(Err(Error::ConnectionLoss))
    ));
    assert!(matches!(
        answer(&mut queued),
        Some(Err(Error::ServerDropsRequest { .. }))
    ));
    assert!(answer(&mut other).is_none(), "still waiting");
    f.connect(0x42, false);
    assert_eq!(sent_ops(&mut f), vec![OpCode::GetData.as_i32()]);
}

#[test]
fn a_large_write_is_caught_but_a_small_one_to_the_same_node_is_not() {
    let mut f = Fixture::new(config());
    for i in 0..2 {
        let now = f.at(Duration::from_secs(i));
        f.connect(0x42, false);
        f.sent();
        let mut rx = set_data(&mut f, "/big", 600_000);
        f.disconnect(&Disconnect::Closed, now + Duration::from_millis(50));
        assert!(matches!(answer(&mut rx), Some(Err(Error::ConnectionLoss))));
    }
    f.connect(0x42, false);
    f.sent();
    let mut big = set_data(&mut f, "/big", 700_000);
    assert!(matches!(
        answer(&mut big),
        Some(Err(Error::ServerDropsRequest {
            op: OpCode::SetData,
            ..
        }))
    ));
    let _small = set_data(&mut f, "/big", 10);
    assert_eq!(sent_ops(&mut f), vec![OpCode::SetData.as_i32()]);
}

#[test]
fn sessions_sharing_a_ledger_learn_from_each_other() {
    // As a SessionManager's generations: the first session is dropped once and expires, the
    // next one is dropped once on the same request.
    let ledger = PoisonLedger::new(Duration::from_secs(30));
    let mut old = Fixture::new(config());
    old.s.share_poison(ledger.clone());
    dropped_once(&mut old, Duration::ZERO);
    let mut new = Fixture::new(config());
    new.s.share_poison(ledger);
    new.t0 = old.now;
    let got = dropped_once(&mut new, Duration::from_millis(500));
    assert!(matches!(got, Some(Err(Error::ConnectionLoss))), "{got:?}");
    new.connect(0x42, false);
    new.sent();
    let mut rx = add_watch(&mut new, "/c");
    match answer(&mut rx) {
        Some(Err(Error::ServerDropsRequest { retry_after, .. })) => {
            assert!(retry_after <= Duration::from_secs(30), "{retry_after:?}");
        }
        other => panic!("{other:?}"),
    }
    // A client with its own ledger knows nothing of it.
    let mut fresh = Fixture::new(config());
    fresh.connect(0x44, false);
    fresh.sent();
    let _rx = add_watch(&mut fresh, "/c");
    assert_eq!(sent_ops(&mut fresh), vec![OpCode::AddWatch.as_i32()]);
}

// ===== size =====

#[test]
fn every_request_and_set_watches_batch_stays_under_the_request_limit() {
    let max = 200;
    let mut f = Fixture::new(SessionConfig {
        max_request_len: max,
        ..config()
    });
    f.connect(0x42, false);
    f.sent();
    let paths: Vec<String> = (0..20).map(|i| format!("/root/node-{i:02}")).collect();
    let mut watchers = Vec::new();
    for (i, p) in paths.iter().enumerate() {
        let (_r, w) = f.watch(OpCode::GetData, p, WatchKind::Data);
        watchers.push(w);
        f.reply(i as i32 + 1, 1, ErrorCode::Ok, b"").unwrap();
    }
    f.sent();
    // A request over the limit fails alone, nothing sent.
    let mut big = set_data(&mut f, "/root/big", max);
    assert!(matches!(
        answer(&mut big),
        Some(Err(Error::RequestTooLarge { max: 200, .. }))
    ));
    assert!(f.sent().is_empty());
    // On reconnect the SetWatches batches each fit the limit (header included).
    f.disconnect(&Disconnect::Closed, f.now);
    f.connect(0x42, false);
    let batches: Vec<(i32, i32, Bytes)> = f.sent().iter().map(Sent::packet).collect();
    assert!(batches.len() >= 2, "{}", batches.len());
    for (xid, _, body) in &batches {
        assert_eq!(*xid, special::SET_WATCHES);
        assert!(
            body.len() + 8 <= max,
            "a packet of {} bytes",
            body.len() + 8
        );
    }
}

// ===== riders =====

#[test]
fn a_request_riding_along_with_lost_creates_is_never_quarantined() {
    // A lock: a create with a fresh name each time, and a read of the lock's node pipelined
    // after it; the connection is lost with the create's reply, round after round.
    let mut f = Fixture::new(config());
    let mut held: Option<ReplyRx> = None;
    let mut reads_sent_alone = 0;
    for round in 0..6u64 {
        let now = f.at(Duration::from_secs(round));
        f.connect(0x42, false);
        // A read held back at the last loss goes out alone now, and is answered.
        for sent in f.sent() {
            let (xid, op, _) = sent.packet();
            assert_eq!(op, OpCode::GetData.as_i32(), "round {round}");
            reads_sent_alone += 1;
            f.reply(xid, 1, ErrorCode::Ok, b"").unwrap();
        }
        if let Some(mut rx) = held.take() {
            assert!(matches!(answer(&mut rx), Some(Ok(_))), "round {round}");
        }
        let create = encode(&AddWatchRequest {
            path: format!("/lock/_c_{round}-n-"),
            mode: 0,
        });
        let mut created = f.submit(OpCode::Create2, create, None);
        let mut read = f.get_data("/lock");
        f.sent();
        f.disconnect(&Disconnect::Closed, now + Duration::from_millis(5));
        assert!(matches!(
            answer(&mut created),
            Some(Err(Error::ConnectionLoss))
        ));
        match answer(&mut read) {
            Some(Err(Error::ConnectionLoss)) => {}
            // Suspected at the last loss: held until the create was answered.
            None => held = Some(read),
            other => panic!("round {round}: {other:?}"),
        }
    }
    assert!(reads_sent_alone >= 2, "{reads_sent_alone}");
}

#[test]
fn a_suspect_waits_for_earlier_requests_and_holds_later_ones() {
    let mut f = Fixture::new(config());
    dropped_once(&mut f, Duration::ZERO);
    f.at(Duration::from_secs(1));
    f.connect(0x42, false);
    f.sent();
    let mut before = f.get_data("/a");
    let mut suspect = add_watch(&mut f, "/c");
    let mut after = f.get_data("/b");
    // One packet at a time: the earlier read, then the suspect alone, then the later read.
    for (op, rx) in [
        (OpCode::GetData, &mut before),
        (OpCode::AddWatch, &mut suspect),
        (OpCode::GetData, &mut after),
    ] {
        let sent = f.sent();
        assert_eq!(sent.len(), 1, "{sent:?}");
        let (xid, sent_op, _) = sent[0].packet();
        assert_eq!(sent_op, op.as_i32());
        f.reply(xid, 1, ErrorCode::Ok, b"").unwrap();
        assert!(matches!(answer(rx), Some(Ok(_))));
    }
    // Answered once: cleared, pipelined again.
    let _a = add_watch(&mut f, "/c");
    let _b = f.get_data("/b");
    assert_eq!(
        sent_ops(&mut f),
        vec![OpCode::AddWatch.as_i32(), OpCode::GetData.as_i32()]
    );
}
