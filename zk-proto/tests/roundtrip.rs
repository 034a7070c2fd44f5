//! Property tests of the codec: `decode(encode(x)) == x` for every record, trailing bytes and
//! truncations are errors (never panics), arbitrary and mutated input never panics, and hostile
//! lengths fail before anything large is allocated.

use std::fmt::Debug;

use bytes::{BufMut, Bytes, BytesMut};
use proptest::prelude::*;
use proptest::sample::select;
use zk_proto::frame::{decode_frame, encode_frame};
use zk_proto::records::*;
use zk_proto::{
    decode_exact, encode_to_bytes, Acl, DecodeError, ErrorCode, Id, Record, ReplyHeader,
    RequestHeader, Stat,
};

// ===== strategies =====

fn string() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[/a-z0-9._-]{0,16}",
        1 => "\\PC{0,8}",
    ]
}

fn bytes() -> impl Strategy<Value = Bytes> {
    prop::collection::vec(any::<u8>(), 0..24).prop_map(Bytes::from)
}

fn strings() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(string(), 0..5)
}

fn error_code() -> impl Strategy<Value = ErrorCode> {
    prop_oneof![
        select(ErrorCode::KNOWN),
        any::<i32>().prop_map(ErrorCode::from_i32),
    ]
}

fn event_type() -> impl Strategy<Value = EventType> {
    prop_oneof![
        select(EventType::KNOWN),
        any::<i32>().prop_map(EventType::from_i32),
    ]
}

fn keeper_state() -> impl Strategy<Value = KeeperState> {
    prop_oneof![
        select(KeeperState::KNOWN),
        any::<i32>().prop_map(KeeperState::from_i32),
    ]
}

prop_compose! {
    fn stat()(
        czxid in any::<i64>(), mzxid in any::<i64>(), ctime in any::<i64>(),
        mtime in any::<i64>(), version in any::<i32>(), cversion in any::<i32>(),
        aversion in any::<i32>(), ephemeral_owner in any::<i64>(),
        data_length in any::<i32>(), num_children in any::<i32>(), pzxid in any::<i64>(),
    ) -> Stat {
        Stat { czxid, mzxid, ctime, mtime, version, cversion, aversion, ephemeral_owner,
               data_length, num_children, pzxid }
    }
}

fn id() -> impl Strategy<Value = Id> {
    (string(), string()).prop_map(|(scheme, id)| Id { scheme, id })
}

fn acl() -> impl Strategy<Value = Acl> {
    (any::<i32>(), id()).prop_map(|(perms, id)| Acl { perms, id })
}

fn acls() -> impl Strategy<Value = Vec<Acl>> {
    prop::collection::vec(acl(), 0..4)
}

fn request_header() -> impl Strategy<Value = RequestHeader> {
    (any::<i32>(), any::<i32>()).prop_map(|(xid, op)| RequestHeader { xid, op })
}

fn reply_header() -> impl Strategy<Value = ReplyHeader> {
    (any::<i32>(), any::<i64>(), error_code()).prop_map(|(xid, zxid, err)| ReplyHeader {
        xid,
        zxid,
        err,
    })
}

fn connect_request() -> impl Strategy<Value = ConnectRequest> {
    (
        any::<i32>(),
        any::<i64>(),
        any::<i32>(),
        any::<i64>(),
        bytes(),
        any::<bool>(),
    )
        .prop_map(
            |(protocol_version, last_zxid_seen, timeout, session_id, passwd, read_only)| {
                ConnectRequest {
                    protocol_version,
                    last_zxid_seen,
                    timeout,
                    session_id,
                    passwd,
                    read_only,
                }
            },
        )
}

fn connect_response() -> impl Strategy<Value = ConnectResponse> {
    (
        any::<i32>(),
        any::<i32>(),
        any::<i64>(),
        bytes(),
        any::<bool>(),
    )
        .prop_map(
            |(protocol_version, timeout, session_id, passwd, read_only)| ConnectResponse {
                protocol_version,
                timeout,
                session_id,
                passwd,
                read_only,
            },
        )
}

fn create_request() -> impl Strategy<Value = CreateRequest> {
    (string(), bytes(), acls(), any::<i32>()).prop_map(|(path, data, acl, flags)| CreateRequest {
        path,
        data,
        acl,
        flags,
    })
}

fn create_ttl_request() -> impl Strategy<Value = CreateTtlRequest> {
    (string(), bytes(), acls(), any::<i32>(), any::<i64>()).prop_map(
        |(path, data, acl, flags, ttl)| CreateTtlRequest {
            path,
            data,
            acl,
            flags,
            ttl,
        },
    )
}

fn create_response() -> impl Strategy<Value = CreateResponse> {
    string().prop_map(|path| CreateResponse { path })
}

fn create2_response() -> impl Strategy<Value = Create2Response> {
    (string(), stat()).prop_map(|(path, stat)| Create2Response { path, stat })
}

fn delete_request() -> impl Strategy<Value = DeleteRequest> {
    (string(), any::<i32>()).prop_map(|(path, version)| DeleteRequest { path, version })
}

fn exists_request() -> impl Strategy<Value = ExistsRequest> {
    (string(), any::<bool>()).prop_map(|(path, watch)| ExistsRequest { path, watch })
}

fn exists_response() -> impl Strategy<Value = ExistsResponse> {
    stat().prop_map(|stat| ExistsResponse { stat })
}

fn get_data_request() -> impl Strategy<Value = GetDataRequest> {
    (string(), any::<bool>()).prop_map(|(path, watch)| GetDataRequest { path, watch })
}

fn get_data_response() -> impl Strategy<Value = GetDataResponse> {
    (bytes(), stat()).prop_map(|(data, stat)| GetDataResponse { data, stat })
}

fn set_data_request() -> impl Strategy<Value = SetDataRequest> {
    (string(), bytes(), any::<i32>()).prop_map(|(path, data, version)| SetDataRequest {
        path,
        data,
        version,
    })
}

fn set_data_response() -> impl Strategy<Value = SetDataResponse> {
    stat().prop_map(|stat| SetDataResponse { stat })
}

fn check_version_request() -> impl Strategy<Value = CheckVersionRequest> {
    (string(), any::<i32>()).prop_map(|(path, version)| CheckVersionRequest { path, version })
}

fn sync_request() -> impl Strategy<Value = SyncRequest> {
    string().prop_map(|path| SyncRequest { path })
}

fn sync_response() -> impl Strategy<Value = SyncResponse> {
    string().prop_map(|path| SyncResponse { path })
}

fn get_acl_request() -> impl Strategy<Value = GetAclRequest> {
    string().prop_map(|path| GetAclRequest { path })
}

fn get_acl_response() -> impl Strategy<Value = GetAclResponse> {
    (acls(), stat()).prop_map(|(acl, stat)| GetAclResponse { acl, stat })
}

fn set_acl_request() -> impl Strategy<Value = SetAclRequest> {
    (string(), acls(), any::<i32>()).prop_map(|(path, acl, version)| SetAclRequest {
        path,
        acl,
        version,
    })
}

fn set_acl_response() -> impl Strategy<Value = SetAclResponse> {
    stat().prop_map(|stat| SetAclResponse { stat })
}

fn get_children_request() -> impl Strategy<Value = GetChildrenRequest> {
    (string(), any::<bool>()).prop_map(|(path, watch)| GetChildrenRequest { path, watch })
}

fn get_children_response() -> impl Strategy<Value = GetChildrenResponse> {
    strings().prop_map(|children| GetChildrenResponse { children })
}

fn get_children2_request() -> impl Strategy<Value = GetChildren2Request> {
    (string(), any::<bool>()).prop_map(|(path, watch)| GetChildren2Request { path, watch })
}

fn get_children2_response() -> impl Strategy<Value = GetChildren2Response> {
    (strings(), stat()).prop_map(|(children, stat)| GetChildren2Response { children, stat })
}

fn get_all_children_number_request() -> impl Strategy<Value = GetAllChildrenNumberRequest> {
    string().prop_map(|path| GetAllChildrenNumberRequest { path })
}

fn get_all_children_number_response() -> impl Strategy<Value = GetAllChildrenNumberResponse> {
    any::<i32>().prop_map(|total_number| GetAllChildrenNumberResponse { total_number })
}

fn get_ephemerals_request() -> impl Strategy<Value = GetEphemeralsRequest> {
    string().prop_map(|prefix_path| GetEphemeralsRequest { prefix_path })
}

fn get_ephemerals_response() -> impl Strategy<Value = GetEphemeralsResponse> {
    strings().prop_map(|ephemerals| GetEphemeralsResponse { ephemerals })
}

fn reconfig_request() -> impl Strategy<Value = ReconfigRequest> {
    (string(), string(), string(), any::<i64>()).prop_map(
        |(joining_servers, leaving_servers, new_members, cur_config_id)| ReconfigRequest {
            joining_servers,
            leaving_servers,
            new_members,
            cur_config_id,
        },
    )
}

fn auth_packet() -> impl Strategy<Value = AuthPacket> {
    (any::<i32>(), string(), bytes()).prop_map(|(auth_type, scheme, auth)| AuthPacket {
        auth_type,
        scheme,
        auth,
    })
}

fn client_info() -> impl Strategy<Value = ClientInfo> {
    (string(), string()).prop_map(|(auth_scheme, user)| ClientInfo { auth_scheme, user })
}

fn who_am_i_response() -> impl Strategy<Value = WhoAmIResponse> {
    prop::collection::vec(client_info(), 0..4)
        .prop_map(|client_info| WhoAmIResponse { client_info })
}

fn watcher_event() -> impl Strategy<Value = WatcherEvent> {
    (event_type(), keeper_state(), string()).prop_map(|(event_type, state, path)| WatcherEvent {
        event_type,
        state,
        path,
    })
}

fn set_watches() -> impl Strategy<Value = SetWatches> {
    (any::<i64>(), strings(), strings(), strings()).prop_map(
        |(relative_zxid, data_watches, exist_watches, child_watches)| SetWatches {
            relative_zxid,
            data_watches,
            exist_watches,
            child_watches,
        },
    )
}

fn set_watches2() -> impl Strategy<Value = SetWatches2> {
    (
        any::<i64>(),
        strings(),
        strings(),
        strings(),
        strings(),
        strings(),
    )
        .prop_map(
            |(
                relative_zxid,
                data_watches,
                exist_watches,
                child_watches,
                persistent_watches,
                persistent_recursive_watches,
            )| SetWatches2 {
                relative_zxid,
                data_watches,
                exist_watches,
                child_watches,
                persistent_watches,
                persistent_recursive_watches,
            },
        )
}

fn add_watch_request() -> impl Strategy<Value = AddWatchRequest> {
    (string(), any::<i32>()).prop_map(|(path, mode)| AddWatchRequest { path, mode })
}

fn check_watches_request() -> impl Strategy<Value = CheckWatchesRequest> {
    (string(), any::<i32>())
        .prop_map(|(path, watcher_type)| CheckWatchesRequest { path, watcher_type })
}

fn remove_watches_request() -> impl Strategy<Value = RemoveWatchesRequest> {
    (string(), any::<i32>())
        .prop_map(|(path, watcher_type)| RemoveWatchesRequest { path, watcher_type })
}

fn multi_header() -> impl Strategy<Value = MultiHeader> {
    (any::<i32>(), any::<bool>(), any::<i32>()).prop_map(|(op, done, err)| MultiHeader {
        op,
        done,
        err,
    })
}

fn error_response() -> impl Strategy<Value = ErrorResponse> {
    any::<i32>().prop_map(|err| ErrorResponse { err })
}

fn multi_op() -> impl Strategy<Value = MultiOp> {
    prop_oneof![
        create_request().prop_map(MultiOp::Create),
        create_request().prop_map(MultiOp::Create2),
        create_request().prop_map(MultiOp::CreateContainer),
        create_ttl_request().prop_map(MultiOp::CreateTtl),
        delete_request().prop_map(MultiOp::Delete),
        set_data_request().prop_map(MultiOp::SetData),
        check_version_request().prop_map(MultiOp::Check),
        get_children_request().prop_map(MultiOp::GetChildren),
        get_data_request().prop_map(MultiOp::GetData),
    ]
}

fn multi_request() -> impl Strategy<Value = MultiRequest> {
    prop::collection::vec(multi_op(), 0..5).prop_map(|ops| MultiRequest { ops })
}

fn multi_result() -> impl Strategy<Value = MultiResult> {
    prop_oneof![
        create_response().prop_map(MultiResult::Create),
        create2_response().prop_map(MultiResult::Create2),
        Just(MultiResult::Delete),
        set_data_response().prop_map(MultiResult::SetData),
        Just(MultiResult::Check),
        get_children_response().prop_map(MultiResult::GetChildren),
        get_data_response().prop_map(MultiResult::GetData),
        error_code().prop_map(MultiResult::Error),
    ]
}

fn multi_response() -> impl Strategy<Value = MultiResponse> {
    prop::collection::vec(multi_result(), 0..5).prop_map(|results| MultiResponse { results })
}

// ===== properties =====

/// Whether a record ends in an optional field, so that dropping its last byte still decodes.
trait OptionalTail {
    const OPTIONAL_LAST_BYTE: bool = false;
}

impl OptionalTail for ConnectRequest {
    const OPTIONAL_LAST_BYTE: bool = true;
}
impl OptionalTail for ConnectResponse {
    const OPTIONAL_LAST_BYTE: bool = true;
}

macro_rules! no_optional_tail {
    ($($ty:ty),* $(,)?) => { $( impl OptionalTail for $ty {} )* };
}

/// Every request, response and notification body except the connect handshake's, and the
/// records that travel inside them (`ClientInfo`, `MultiHeader`), handed to the macro `$m`
/// after the `$extra` types: one list for the properties below that cover them all.
macro_rules! with_body_records {
    ($m:ident; $($extra:ty),* $(,)?) => {
        $m!(
            $($extra,)*
            CreateRequest,
            CreateTtlRequest,
            CreateResponse,
            Create2Response,
            DeleteRequest,
            ExistsRequest,
            ExistsResponse,
            GetDataRequest,
            GetDataResponse,
            SetDataRequest,
            SetDataResponse,
            CheckVersionRequest,
            SyncRequest,
            SyncResponse,
            GetAclRequest,
            GetAclResponse,
            SetAclRequest,
            SetAclResponse,
            GetChildrenRequest,
            GetChildrenResponse,
            GetChildren2Request,
            GetChildren2Response,
            GetAllChildrenNumberRequest,
            GetAllChildrenNumberResponse,
            GetEphemeralsRequest,
            GetEphemeralsResponse,
            ReconfigRequest,
            AuthPacket,
            ClientInfo,
            WhoAmIResponse,
            WatcherEvent,
            SetWatches,
            SetWatches2,
            AddWatchRequest,
            CheckWatchesRequest,
            RemoveWatchesRequest,
            MultiHeader,
            ErrorResponse,
            MultiRequest,
            MultiResponse,
        );
    };
}

with_body_records!(no_optional_tail;
    i32,
    i64,
    bool,
    String,
    Bytes,
    Vec<String>,
    Stat,
    Id,
    Acl,
    ErrorCode,
    EventType,
    KeeperState,
    RequestHeader,
    ReplyHeader,
);

/// Every property that holds for one encodable value.
fn check<T>(x: &T, tail: &[u8]) -> Result<(), TestCaseError>
where
    T: Record + OptionalTail + Debug + PartialEq,
{
    let wire = encode_to_bytes(x);

    // decode(encode(x)) == x, consuming exactly the encoding.
    let mut buf = wire.clone();
    prop_assert_eq!(&T::decode(&mut buf)?, x);
    prop_assert!(buf.is_empty());
    prop_assert_eq!(&decode_exact::<T>(wire.clone())?, x);
    // Encoding is deterministic.
    prop_assert_eq!(&encode_to_bytes(&decode_exact::<T>(wire.clone())?), &wire);

    // Trailing bytes are an error with their count.
    if !tail.is_empty() {
        let mut longer = BytesMut::from(&wire[..]);
        longer.put_slice(tail);
        prop_assert_eq!(
            decode_exact::<T>(longer.freeze()),
            Err(DecodeError::TrailingBytes(tail.len()))
        );
        // `decode` alone stops at the end of the record and leaves the rest.
        let mut longer = BytesMut::from(&wire[..]);
        longer.put_slice(tail);
        let mut longer = longer.freeze();
        prop_assert_eq!(&T::decode(&mut longer)?, x);
        prop_assert_eq!(&longer[..], tail);
    }

    // Every truncation fails cleanly (or, for an optional trailing flag, decodes).
    for cut in 0..wire.len() {
        let short = wire.slice(..cut);
        match decode_exact::<T>(short) {
            Err(DecodeError::UnexpectedEof { .. }) | Err(DecodeError::InvalidLength(_)) => {}
            Ok(_) if T::OPTIONAL_LAST_BYTE && cut == wire.len() - 1 => {}
            other => prop_assert!(false, "truncated to {} of {}: {:?}", cut, wire.len(), other),
        }
    }
    Ok(())
}

fn tail() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..6)
}

macro_rules! roundtrip_tests {
    ($($name:ident: $strategy:expr;)*) => {
        proptest! {
            $(
                #[test]
                fn $name(x in $strategy, tail in tail()) {
                    check(&x, &tail)?;
                }
            )*
        }
    };
}

roundtrip_tests! {
    rt_i32: any::<i32>();
    rt_i64: any::<i64>();
    rt_bool: any::<bool>();
    rt_string: string();
    rt_bytes: bytes();
    rt_vec_string: strings();
    rt_stat: stat();
    rt_id: id();
    rt_acl: acl();
    rt_error_code: error_code();
    rt_event_type: event_type();
    rt_keeper_state: keeper_state();
    rt_request_header: request_header();
    rt_reply_header: reply_header();
    rt_connect_request: connect_request();
    rt_connect_response: connect_response();
    rt_create_request: create_request();
    rt_create_ttl_request: create_ttl_request();
    rt_create_response: create_response();
    rt_create2_response: create2_response();
    rt_delete_request: delete_request();
    rt_exists_request: exists_request();
    rt_exists_response: exists_response();
    rt_get_data_request: get_data_request();
    rt_get_data_response: get_data_response();
    rt_set_data_request: set_data_request();
    rt_set_data_response: set_data_response();
    rt_check_version_request: check_version_request();
    rt_sync_request: sync_request();
    rt_sync_response: sync_response();
    rt_get_acl_request: get_acl_request();
    rt_get_acl_response: get_acl_response();
    rt_set_acl_request: set_acl_request();
    rt_set_acl_response: set_acl_response();
    rt_get_children_request: get_children_request();
    rt_get_children_response: get_children_response();
    rt_get_children2_request: get_children2_request();
    rt_get_children2_response: get_children2_response();
    rt_get_all_children_number_request: get_all_children_number_request();
    rt_get_all_children_number_response: get_all_children_number_response();
    rt_get_ephemerals_request: get_ephemerals_request();
    rt_get_ephemerals_response: get_ephemerals_response();
    rt_reconfig_request: reconfig_request();
    rt_auth_packet: auth_packet();
    rt_client_info: client_info();
    rt_who_am_i_response: who_am_i_response();
    rt_watcher_event: watcher_event();
    rt_set_watches: set_watches();
    rt_set_watches2: set_watches2();
    rt_add_watch_request: add_watch_request();
    rt_check_watches_request: check_watches_request();
    rt_remove_watches_request: remove_watches_request();
    rt_multi_header: multi_header();
    rt_error_response: error_response();
    rt_multi_request: multi_request();
    rt_multi_response: multi_response();
}

// ===== arbitrary input never panics =====

/// Decodes `data` as every record type, both with `decode` and `decode_exact`. Only the
/// absence of a panic is checked, plus: whatever decodes re-encodes to something that
/// decodes to the same value.
fn decode_everything(data: &[u8]) {
    fn one<T: Record + Debug + PartialEq>(data: &[u8]) {
        let mut buf = Bytes::copy_from_slice(data);
        let _ = T::decode(&mut buf);
        if let Ok(x) = decode_exact::<T>(Bytes::copy_from_slice(data)) {
            let again = encode_to_bytes(&x);
            assert_eq!(decode_exact::<T>(again).as_ref(), Ok(&x));
        }
    }
    macro_rules! all {
        ($($ty:ty),* $(,)?) => { $( one::<$ty>(data); )* };
    }
    with_body_records!(all;
        RequestHeader,
        ReplyHeader,
        Stat,
        Acl,
        Vec<Acl>,
        ConnectRequest,
        ConnectResponse,
    );
}

/// Cuts frames from `data` until it runs dry or errors; the loop is bounded by the input.
fn frame_everything(data: &[u8], max: usize) {
    let mut buf = BytesMut::from(data);
    for _ in 0..=data.len() {
        match decode_frame(&mut buf, max) {
            Ok(Some(body)) => {
                assert!(body.len() <= max);
                decode_everything(&body);
            }
            Ok(None) | Err(_) => break,
        }
    }
}

/// A valid encoding of some record, to be mutated.
fn valid_encoding() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        multi_request().prop_map(|x| encode_to_bytes(&x).to_vec()),
        multi_response().prop_map(|x| encode_to_bytes(&x).to_vec()),
        connect_request().prop_map(|x| encode_to_bytes(&x).to_vec()),
        create_ttl_request().prop_map(|x| encode_to_bytes(&x).to_vec()),
        get_acl_response().prop_map(|x| encode_to_bytes(&x).to_vec()),
        set_watches2().prop_map(|x| encode_to_bytes(&x).to_vec()),
        get_children2_response().prop_map(|x| encode_to_bytes(&x).to_vec()),
        who_am_i_response().prop_map(|x| encode_to_bytes(&x).to_vec()),
    ]
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Insert(usize, u8),
    Remove(usize),
    SetI32(usize, i32),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        any::<usize>().prop_map(Mutation::Remove),
        (
            any::<usize>(),
            prop_oneof![
                Just(-1),
                Just(-2),
                Just(i32::MAX),
                Just(i32::MIN),
                Just(0),
                any::<i32>()
            ]
        )
            .prop_map(|(i, v)| Mutation::SetI32(i, v)),
    ]
}

fn apply(mut data: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for m in mutations {
        let n = data.len().max(1);
        match *m {
            Mutation::Flip(i, b) if !data.is_empty() => data[i % n] ^= b,
            Mutation::Insert(i, b) => data.insert(i % (data.len() + 1), b),
            Mutation::Remove(i) if !data.is_empty() => {
                data.remove(i % n);
            }
            Mutation::SetI32(i, v) if data.len() >= 4 => {
                let at = i % (data.len() - 3);
                data[at..at + 4].copy_from_slice(&v.to_be_bytes());
            }
            _ => {}
        }
    }
    data
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..256)) {
        decode_everything(&data);
    }

    #[test]
    fn mutated_encodings_never_panic(
        data in valid_encoding(),
        mutations in prop::collection::vec(mutation(), 1..4),
    ) {
        decode_everything(&apply(data, &mutations));
    }

    #[test]
    fn arbitrary_frames_never_panic(
        data in prop::collection::vec(any::<u8>(), 0..256),
        max in 0usize..300,
    ) {
        frame_everything(&data, max);
    }

    #[test]
    fn frames_roundtrip_and_split_anywhere(
        bodies in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 0..5),
        split in any::<usize>(),
    ) {
        let mut wire = BytesMut::new();
        for body in &bodies {
            encode_frame(&mut wire, |b| b.put_slice(body));
        }
        let split = split % (wire.len() + 1);
        let mut buf = BytesMut::from(&wire[..split]);
        let mut rest = &wire[split..];
        let mut got = Vec::new();
        for _ in 0..=wire.len() + 1 {
            match decode_frame(&mut buf, 40)? {
                Some(body) => got.push(body.to_vec()),
                None if rest.is_empty() => break,
                None => {
                    buf.put_slice(rest);
                    rest = &[];
                }
            }
        }
        prop_assert_eq!(got, bodies);
        prop_assert!(buf.is_empty());
    }

    #[test]
    fn oversized_or_negative_frame_lengths_fail(len in any::<i32>(), max in 0usize..1000) {
        prop_assume!(len < 0 || len as usize > max);
        let mut buf = BytesMut::from(&len.to_be_bytes()[..]);
        prop_assert_eq!(
            decode_frame(&mut buf, max),
            Err(DecodeError::FrameTooLarge { len: i64::from(len), max })
        );
        prop_assert!(buf.capacity() < 64);
    }

    #[test]
    fn hostile_counts_fail_without_allocating(count in 5i32.., extra in 0usize..4) {
        // A vector count larger than the bytes that follow it is an error before any
        // element is read or any capacity reserved for it.
        let mut buf = BytesMut::new();
        buf.put_i32(count);
        buf.put_slice(&[0u8; 4][..extra]);
        let data = buf.freeze();
        prop_assert_eq!(
            decode_exact::<GetChildrenResponse>(data.clone()),
            Err(DecodeError::InvalidLength(count))
        );
        prop_assert_eq!(
            decode_exact::<Vec<Acl>>(data.clone()),
            Err(DecodeError::InvalidLength(count))
        );
        prop_assert_eq!(
            decode_exact::<Bytes>(data.clone()),
            Err(DecodeError::InvalidLength(count))
        );
        prop_assert_eq!(decode_exact::<String>(data), Err(DecodeError::InvalidLength(count)));
    }
}

// ===== fixed cases =====

#[test]
fn huge_vector_count_in_small_buffer_is_an_error() {
    // 0x7fffffff strings claimed, 8 bytes present.
    let data = Bytes::from_static(&[0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 1, b'a', 0, 0, 0]);
    assert_eq!(
        decode_exact::<GetChildrenResponse>(data),
        Err(DecodeError::InvalidLength(i32::MAX))
    );
    // A count that fits the bytes but whose elements do not: EOF, not a huge reservation.
    let data = Bytes::from_static(&[0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0]);
    assert!(matches!(
        decode_exact::<GetChildrenResponse>(data),
        Err(DecodeError::UnexpectedEof { .. })
    ));
}

#[test]
fn vector_capacity_is_bounded_by_input() {
    // 100 empty strings take 400 bytes; the decoded vector must not reserve for more than the
    // input could hold.
    let mut buf = BytesMut::new();
    buf.put_i32(100);
    for _ in 0..100 {
        buf.put_i32(0);
    }
    let rep: GetChildrenResponse = decode_exact(buf.freeze()).unwrap();
    assert_eq!(rep.children.len(), 100);
    assert!(rep.children.capacity() <= 100);
}

#[test]
fn null_markers_decode_as_empty() {
    // SetWatches with all three vectors null (-1), as an old client might send.
    let mut buf = BytesMut::new();
    buf.put_i64(7);
    for _ in 0..3 {
        buf.put_i32(-1);
    }
    let sw: SetWatches = decode_exact(buf.freeze()).unwrap();
    assert_eq!(sw.relative_zxid, 7);
    assert!(sw.data_watches.is_empty() && sw.exist_watches.is_empty());
    // Other negative lengths are errors.
    let data = Bytes::from_static(&[0xff, 0xff, 0xff, 0xfe]);
    assert_eq!(
        decode_exact::<String>(data.clone()),
        Err(DecodeError::InvalidLength(-2))
    );
    assert_eq!(
        decode_exact::<Vec<String>>(data),
        Err(DecodeError::InvalidLength(-2))
    );
}

#[test]
fn multi_with_unknown_op_is_an_error() {
    let mut buf = BytesMut::new();
    MultiHeader {
        op: 999,
        done: false,
        err: -1,
    }
    .encode(&mut buf);
    assert_eq!(
        decode_exact::<MultiRequest>(buf.clone().freeze()),
        Err(DecodeError::UnknownOpCode(999))
    );
    assert_eq!(
        decode_exact::<MultiResponse>(buf.freeze()),
        Err(DecodeError::UnknownOpCode(999))
    );
    // A multi without its closing header is truncated.
    let mut buf = BytesMut::new();
    MultiHeader {
        op: 13,
        done: false,
        err: -1,
    }
    .encode(&mut buf);
    CheckVersionRequest {
        path: "/a".into(),
        version: 1,
    }
    .encode(&mut buf);
    assert!(matches!(
        decode_exact::<MultiRequest>(buf.freeze()),
        Err(DecodeError::UnexpectedEof { .. })
    ));
}

#[test]
fn open_code_enums_keep_unknown_values() {
    for v in [-1000, -126, 2, 8, 1 << 20] {
        let code = ErrorCode::from_i32(v);
        assert_eq!(code.as_i32(), v);
        let back: ErrorCode = decode_exact(encode_to_bytes(&code)).unwrap();
        assert_eq!(back, code);
        assert_eq!(EventType::from_i32(v).as_i32(), v);
        assert_eq!(KeeperState::from_i32(v).as_i32(), v);
    }
    for code in ErrorCode::KNOWN {
        assert_eq!(ErrorCode::from_i32(code.as_i32()), *code);
        assert!(!matches!(code, ErrorCode::Other(_)));
    }
}
