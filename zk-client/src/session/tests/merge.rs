//! Consecutive plain `getData` calls written in one go travel as one `multiRead`
//! (`session/merge.rs`): what goes on the wire, and what each caller gets back.

use zk_proto::records::{
    GetDataResponse, MultiRequest, MultiResponse, MultiResult, SetDataRequest,
};
use zk_proto::{decode_exact, Stat};

use super::*;
use crate::profile::{ProfileCell, ServerProfile};

/// Connected, with reads merging as they do by default (4 MiB replies: three to a request).
fn merging() -> Fixture {
    let mut f = Fixture::new(SessionConfig {
        max_frame_len: zk_proto::DEFAULT_MAX_FRAME_LEN,
        ..config()
    });
    f.connect(0x42, false);
    f.sent();
    f
}

fn data(d: &'static [u8], version: i32) -> MultiResult {
    MultiResult::GetData(GetDataResponse {
        data: Bytes::from_static(d),
        stat: Stat {
            version,
            ..Stat::default()
        },
    })
}

fn multi_reply(f: &mut Fixture, xid: i32, results: Vec<MultiResult>) {
    let body = encode(&MultiResponse { results });
    f.reply(xid, 5, ErrorCode::Ok, &body).unwrap();
}

fn got(rx: &mut ReplyRx) -> Result<(Bytes, i32)> {
    let body = rx.try_recv().expect("answered")?;
    let r: GetDataResponse = decode_exact(body).unwrap();
    Ok((r.data, r.stat.version))
}

#[test]
fn three_reads_written_together_go_as_one_multi_read_and_each_caller_gets_its_own() {
    let mut f = merging();
    let mut calls: Vec<_> = ["/a", "/b", "/c", "/d"]
        .iter()
        .map(|p| f.get_data(p))
        .collect();
    let sent = f.sent();
    // Three merged (the limit), the fourth alone.
    assert_eq!(sent.len(), 2, "{sent:?}");
    let (xid, op, body) = sent[0].packet();
    assert_eq!(op, OpCode::MultiRead.as_i32());
    let req: MultiRequest = decode_exact(body).unwrap();
    assert_eq!(req.ops.len(), 3);
    assert_eq!(sent[1].packet().1, OpCode::GetData.as_i32());
    multi_reply(
        &mut f,
        xid,
        vec![
            data(b"A", 1),
            MultiResult::Error(ErrorCode::NoNode),
            data(b"C", 3),
        ],
    );
    assert_eq!(got(&mut calls[0]).unwrap(), (Bytes::from_static(b"A"), 1));
    assert!(matches!(got(&mut calls[1]), Err(Error::NoNode)));
    assert_eq!(got(&mut calls[2]).unwrap(), (Bytes::from_static(b"C"), 3));
    // All three arrived with the one frame.
    assert_eq!(calls[0].arrival(), calls[2].arrival());
    assert!(
        calls[3].try_recv().is_err(),
        "the fourth is answered by its own reply"
    );
}

#[test]
fn a_read_alone_a_watch_a_write_between_or_a_written_frame_do_not_merge() {
    let mut f = merging();
    // One call alone goes out as itself.
    let _a = f.get_data("/a");
    let sent = f.sent();
    assert_eq!(sent[0].packet().1, OpCode::GetData.as_i32());
    // Written already: a read after it cannot join it.
    let _b = f.get_data("/b");
    assert_eq!(f.sent()[0].packet().1, OpCode::GetData.as_i32());
    // A read that sets a watch, and a write between two reads, keep every request whole.
    let watched = encode(&GetDataRequest {
        path: "/w".into(),
        watch: true,
    });
    let _c = f.get_data("/c");
    let (tx, _rx) = oneshot::channel();
    let _w = f.submit(
        OpCode::GetData,
        watched,
        Some(WatchAction::Register {
            path: "/w".into(),
            kind: WatchKind::Data,
            sender: WatchSender::Once(tx),
            on_server: true,
        }),
    );
    let write = encode(&SetDataRequest {
        path: "/c".into(),
        data: Bytes::from_static(b"x"),
        version: -1,
    });
    let _d = f.get_data("/d");
    let _set = f.submit(OpCode::SetData, write, None);
    let _e = f.get_data("/e");
    let ops: Vec<i32> = f.sent().iter().map(|s| s.packet().1).collect();
    let get = OpCode::GetData.as_i32();
    assert_eq!(ops, [get, get, get, OpCode::SetData.as_i32(), get]);
}

#[test]
fn a_server_without_multi_read_gets_every_read_alone() {
    let mut f = merging();
    let cell = ProfileCell::new(ServerProfile::zookeeper(3, 5));
    f.s.share_profile(cell);
    let _calls: Vec<_> = ["/a", "/b", "/c"].iter().map(|p| f.get_data(p)).collect();
    let ops: Vec<i32> = f.sent().iter().map(|s| s.packet().1).collect();
    assert_eq!(ops, [OpCode::GetData.as_i32(); 3]);
}

#[test]
fn a_lost_connection_or_an_error_for_the_request_fails_every_merged_call() {
    let mut f = merging();
    let mut calls: Vec<_> = ["/a", "/b"].iter().map(|p| f.get_data(p)).collect();
    let (xid, ..) = f.sent()[0].packet();
    f.reply(xid, 5, ErrorCode::Other(-999), b"").unwrap();
    assert!(calls
        .iter_mut()
        .all(|c| matches!(got(c), Err(Error::Server(_)))));
    let mut calls: Vec<_> = ["/a", "/b", "/c"].iter().map(|p| f.get_data(p)).collect();
    assert_eq!(f.sent().len(), 1);
    let now = f.now;
    f.disconnect(&Disconnect::Transport, now);
    assert!(calls
        .iter_mut()
        .all(|c| matches!(got(c), Err(Error::ConnectionLoss))));
}

#[test]
fn two_closes_with_merged_reads_in_flight_stop_the_merging() {
    let mut f = merging();
    // Other paths each time: the poison rule, which knows a request by its path, does not
    // see them as the same request.
    for (round, paths) in [["/a", "/b"], ["/c", "/d"]].iter().enumerate() {
        let _calls: Vec<_> = paths.iter().map(|p| f.get_data(p)).collect();
        assert_eq!(
            f.sent()[0].packet().1,
            OpCode::MultiRead.as_i32(),
            "round {round}"
        );
        let now = f.now;
        f.disconnect(&Disconnect::Closed, now);
        f.connect(0x42, false);
        f.sent();
    }
    let _calls: Vec<_> = ["/e", "/f"].iter().map(|p| f.get_data(p)).collect();
    let ops: Vec<i32> = f.sent().iter().map(|s| s.packet().1).collect();
    assert_eq!(ops, [OpCode::GetData.as_i32(); 2]);
}
