//! Server profiles against a scripted fake server: what a profile lacks is never sent, creates
//! use `create2` only when a `Stat` is needed, an `UNIMPLEMENTED` answer narrows the profile,
//! and detection reads Keeper's feature nodes outside the chroot.

use bytes::Bytes;
use zk_client::{AddWatchMode, Client, CreateOptions, Error, Feature, Flavour, Op, ServerProfile};
use zk_proto::records::{
    Create2Response, CreateResponse, ExistsResponse, GetDataRequest, MultiResponse, MultiResult,
    RemoveRecursiveRequest,
};
use zk_proto::{decode_prefix, ErrorCode, OpCode, Stat};
use zk_test_support::{data_reply, encode, within, Conn, FakeServer};

async fn connect(server: &FakeServer, profile: ServerProfile) -> (Client, Conn) {
    zk_test_support::connect_client(server, "/app", 0x1, 30_000, move |b| b.server(profile)).await
}

fn stat(czxid: i64) -> Stat {
    Stat {
        czxid,
        ..Stat::default()
    }
}

#[tokio::test]
async fn calls_the_profile_lacks_fail_locally_and_are_never_sent() {
    let server = FakeServer::start().await;
    let (client, mut conn) = connect(&server, ServerProfile::zookeeper(3, 5)).await;
    let refused = client.add_watch("/a", AddWatchMode::PersistentRecursive);
    let whoami = client.whoami();
    let ephemerals = client.get_ephemerals("/");
    // The next request on the wire is this read: nothing before it was sent.
    let read = client.get_data("/a");
    let req = conn.read_non_ping().await.unwrap();
    assert_eq!(req.op, OpCode::GetData.as_i32());
    conn.reply(req.xid, 2, ErrorCode::Ok, &data_reply(b"x"))
        .await;
    assert!(matches!(
        within("add_watch", refused).await,
        Err(Error::Unimplemented(Feature::AddWatch))
    ));
    assert!(matches!(
        within("whoami", whoami).await,
        Err(Error::Unimplemented(Feature::WhoAmI))
    ));
    assert!(matches!(
        within("ephemerals", ephemerals).await,
        Err(Error::Unimplemented(Feature::GetEphemerals))
    ));
    assert_eq!(&within("read", read).await.unwrap().0[..], b"x");
    let err = Error::Unimplemented(Feature::AddWatch);
    assert_eq!(err.code(), Some(ErrorCode::Unimplemented));
    assert!(!err.is_retryable() && !err.is_terminal());
}

#[tokio::test]
async fn create_path_and_multi_creates_are_plain_and_create_uses_create2() {
    let server = FakeServer::start().await;
    let (client, mut conn) = connect(&server, ServerProfile::default()).await;
    let plain = client.create_path("/p", b"", &CreateOptions::persistent());
    let req = conn.read_non_ping().await.unwrap();
    assert_eq!(req.op, OpCode::Create.as_i32());
    let body = encode(&CreateResponse {
        path: "/app/p".into(),
    });
    conn.reply(req.xid, 2, ErrorCode::Ok, &body).await;
    assert_eq!(within("create_path", plain).await.unwrap(), "/p");

    let with_stat = client.create("/s", b"", &CreateOptions::persistent());
    let req = conn.read_non_ping().await.unwrap();
    assert_eq!(req.op, OpCode::Create2.as_i32());
    let body = encode(&Create2Response {
        path: "/app/s".into(),
        stat: stat(7),
    });
    conn.reply(req.xid, 3, ErrorCode::Ok, &body).await;
    let (path, got) = within("create", with_stat).await.unwrap();
    assert_eq!((path.as_str(), got.czxid), ("/s", 7));

    let multi = client.multi(&[Op::create("/m", b"", &CreateOptions::persistent())]);
    let req = conn.read_non_ping().await.unwrap();
    assert_eq!(req.op, OpCode::Multi.as_i32());
    // The first MultiHeader's type is the sub-op's opcode.
    assert_eq!(&req.body[..4], &OpCode::Create.as_i32().to_be_bytes());
    let body = encode(&MultiResponse {
        results: vec![MultiResult::Create(CreateResponse {
            path: "/app/m".into(),
        })],
    });
    conn.reply(req.xid, 4, ErrorCode::Ok, &body).await;
    within("multi", multi).await.unwrap();
}

#[tokio::test]
async fn without_create2_create_reads_the_stat_and_containers_are_refused() {
    let server = FakeServer::start().await;
    let (client, mut conn) = connect(&server, ServerProfile::keeper()).await;
    let container = client.create("/c", b"", &CreateOptions::container());
    let multi = client.multi(&[Op::create("/c", b"", &CreateOptions::container())]);
    // Spawned: the `exists` goes out only once the create's reply is in.
    let create = tokio::spawn(client.create("/k", b"", &CreateOptions::ephemeral()));
    let req = conn.read_non_ping().await.unwrap();
    assert_eq!(
        req.op,
        OpCode::Create.as_i32(),
        "the container create was sent"
    );
    let body = encode(&CreateResponse {
        path: "/app/k".into(),
    });
    conn.reply(req.xid, 2, ErrorCode::Ok, &body).await;
    let req = within("exists", conn.read_non_ping()).await.unwrap();
    assert_eq!(req.op, OpCode::Exists.as_i32());
    let read: GetDataRequest = decode_prefix(req.body.clone()).unwrap();
    assert_eq!(read.path, "/app/k");
    let body = encode(&ExistsResponse { stat: stat(9) });
    conn.reply(req.xid, 2, ErrorCode::Ok, &body).await;
    let (path, got) = within("create", create).await.unwrap().unwrap();
    assert_eq!((path.as_str(), got.czxid), ("/k", 9));
    for refused in [
        within("container", container).await.map(drop),
        within("multi", multi).await.map(drop),
    ] {
        assert!(
            matches!(refused, Err(Error::Unimplemented(Feature::Container))),
            "{refused:?}"
        );
    }
}

#[tokio::test]
async fn an_unimplemented_answer_narrows_the_profile() {
    let server = FakeServer::start().await;
    let (client, mut conn) = connect(&server, ServerProfile::default()).await;
    let first = client.add_watch("/a", AddWatchMode::Persistent);
    let req = conn.read_non_ping().await.unwrap();
    assert_eq!(req.op, OpCode::AddWatch.as_i32());
    conn.reply(req.xid, 2, ErrorCode::Unimplemented, &[]).await;
    assert!(matches!(
        within("add_watch", first).await,
        Err(Error::Unimplemented(Feature::AddWatch))
    ));
    assert!(!client.server_profile().supports(Feature::AddWatch));
    // The second one stays local: the next request on the wire is the read.
    let second = client.add_watch("/a", AddWatchMode::Persistent);
    let read = client.exists("/a");
    let req = conn.read_non_ping().await.unwrap();
    assert_eq!(req.op, OpCode::Exists.as_i32());
    conn.reply(req.xid, 3, ErrorCode::NoNode, &[]).await;
    assert!(within("exists", read).await.unwrap().is_none());
    assert!(matches!(
        within("add_watch", second).await,
        Err(Error::Unimplemented(Feature::AddWatch))
    ));
    // Other codes are untouched.
    let other = client.whoami();
    let req = conn.read_non_ping().await.unwrap();
    conn.reply(req.xid, 3, ErrorCode::NoAuth, &[]).await;
    assert!(matches!(within("whoami", other).await, Err(Error::NoAuth)));
}

/// Serves a `detect_server` connect: answers the two reads with `api` and `flags`
/// (`None`: `NoNode`), checking they are outside the chroot; returns the client.
async fn detect(
    server: &FakeServer,
    configured: ServerProfile,
    api: Option<&'static [u8]>,
    flags: Option<&'static [u8]>,
) -> Client {
    let hosts = format!("{}/app", server.addr());
    let client = tokio::spawn(async move {
        Client::builder(&hosts)
            .server(configured)
            .detect_server(true)
            .connect()
            .await
    });
    let (mut conn, _) = server.accept_session(0x2, 30_000).await;
    for (path, answer) in [
        ("/keeper/api_version", api),
        ("/keeper/feature_flags", flags),
    ] {
        let req = conn.read_non_ping().await.unwrap();
        assert_eq!(req.op, OpCode::GetData.as_i32());
        let read: GetDataRequest = decode_prefix(req.body.clone()).unwrap();
        assert_eq!(read.path, path);
        match answer {
            Some(data) => {
                conn.reply(req.xid, 1, ErrorCode::Ok, &data_reply(data))
                    .await
            }
            None => {
                conn.reply(req.xid, 1, ErrorCode::NoNode, &Bytes::new())
                    .await
            }
        }
    }
    let client = within("connect", client).await.unwrap().unwrap();
    // Keep the connection open for the caller's checks.
    tokio::spawn(async move { conn.expect_eof().await });
    client
}

#[tokio::test]
async fn detection_reads_keepers_nodes_and_leaves_zookeeper_as_configured() {
    let server = FakeServer::start().await;
    let zk = detect(&server, ServerProfile::zookeeper(3, 6), None, None).await;
    assert_eq!(zk.server_profile(), ServerProfile::zookeeper(3, 6));
    let old = detect(&server, ServerProfile::default(), Some(b"2"), None).await;
    assert_eq!(old.server_profile().flavour(), Flavour::Keeper);
    assert_eq!(
        old.server_profile(),
        ServerProfile::keeper().with(Feature::MultiRead)
    );
    let flagged = detect(
        &server,
        ServerProfile::keeper().with(Feature::Create2),
        Some(b"3"),
        Some(&[0b1000_0000]),
    )
    .await;
    // Flags present without MULTI_READ: no multiRead; the user's create2 kept.
    assert_eq!(
        flagged.server_profile(),
        ServerProfile::keeper().with(Feature::Create2)
    );
}

/// An `exists` (for `NoNode`) and a `RemoveRecursive`, both sent at once: their xids and the
/// removal's request.
async fn exists_then_remove(conn: &mut Conn) -> (i32, i32, RemoveRecursiveRequest) {
    let exists = conn.read_non_ping().await.unwrap();
    assert_eq!(exists.op, OpCode::Exists.as_i32());
    let remove = conn.read_non_ping().await.unwrap();
    assert_eq!(remove.op, OpCode::RemoveRecursive.as_i32());
    let sent: RemoveRecursiveRequest = decode_prefix(remove.body.clone()).unwrap();
    (exists.xid, remove.xid, sent)
}

/// On a Keeper with `RemoveRecursive`, `delete_all` is that one request (path under the
/// chroot, a limit of 1000); a `NotEmpty` answer (over the limit) falls back to listing. A
/// profile without it never sends opcode 503.
#[tokio::test]
async fn delete_all_is_one_remove_recursive_on_a_keeper_with_it() {
    let server = FakeServer::start().await;
    let keeper = ServerProfile::keeper().with(Feature::RemoveRecursive);
    let (client, mut conn) = connect(&server, keeper).await;
    let one = tokio::spawn(client.delete_all("/a"));
    let (exists, remove, sent) = exists_then_remove(&mut conn).await;
    assert_eq!(
        (sent.path.as_str(), sent.remove_nodes_limit),
        ("/app/a", 1000)
    );
    let found = encode(&ExistsResponse { stat: stat(3) });
    conn.reply(exists, 2, ErrorCode::Ok, &found).await;
    conn.reply(remove, 2, ErrorCode::Ok, &[]).await;
    within("delete_all", one).await.unwrap().unwrap();

    // Keeper answers a missing node without an error: the exists tells.
    let missing = tokio::spawn(client.delete_all("/gone"));
    let (exists, remove, _) = exists_then_remove(&mut conn).await;
    conn.reply(exists, 3, ErrorCode::NoNode, &[]).await;
    conn.reply(remove, 3, ErrorCode::Ok, &[]).await;
    assert!(matches!(
        within("missing", missing).await.unwrap(),
        Err(Error::NoNode)
    ));

    let big = tokio::spawn(client.delete_all("/big"));
    let (exists, remove, _) = exists_then_remove(&mut conn).await;
    conn.reply(exists, 4, ErrorCode::Ok, &found).await;
    conn.reply(remove, 4, ErrorCode::NotEmpty, &[]).await;
    let req = within("listing", conn.read_non_ping()).await.unwrap();
    assert_eq!(req.op, OpCode::GetChildren.as_i32(), "the fallback lists");
    drop(big);

    let server = FakeServer::start().await;
    let (client, mut conn) = connect(&server, ServerProfile::default()).await;
    let _listing = tokio::spawn(client.delete_all("/a"));
    let req = conn.read_non_ping().await.unwrap();
    assert_eq!(
        req.op,
        OpCode::GetChildren.as_i32(),
        "ZooKeeper has no RemoveRecursive"
    );
}

// ===== docs/servers.md's "What works where" table =====

/// How a cell of the table reads.
#[derive(Debug, PartialEq, Eq)]
enum Cell {
    /// `ok`: sent and works.
    Ok,
    /// `local` (or `create + exists` for a create without `create2`, `list + deletes` for a
    /// `delete_all` without `RemoveRecursive`): never sent.
    Local,
    /// `` `/keeper` says ``: what detection finds.
    Detected,
}

fn cell(text: &str) -> Cell {
    let text = text.trim_end_matches(|c: char| "¹²³⁴⁵ ".contains(c));
    if text.starts_with("ok") {
        Cell::Ok
    } else if text.starts_with("local")
        || text.starts_with("create + exists")
        || text.starts_with("list + deletes")
    {
        Cell::Local
    } else if text.contains("`/keeper` says") {
        Cell::Detected
    } else {
        panic!("docs/servers.md: a cell this test cannot read: {text:?}");
    }
}

/// The header and rows of the table that starts with `| Call (feature)`.
fn servers_table() -> (Vec<String>, Vec<Vec<String>>) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/servers.md");
    let doc = std::fs::read_to_string(&path).expect("docs/servers.md");
    let split = |line: &str| -> Vec<String> {
        line.trim()
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_owned())
            .collect()
    };
    let mut lines = doc
        .lines()
        .skip_while(|l| !l.starts_with("| Call (feature)"));
    let header = split(lines.next().expect("the table's header"));
    let rows = lines
        .skip(1) // |---|---|
        .take_while(|l| l.starts_with('|'))
        .map(split)
        .collect();
    (header, rows)
}

/// The table says of every feature on every server column what `ServerProfile` says: `ok`
/// where the profile has it, `local` where it does not, `` `/keeper` says `` where Keeper's
/// detection decides; and which servers resume sessions. The flavours tests (integration)
/// run every call on profiles built the same way (`ServerProfile::zookeeper(3, x)`, Keeper's
/// detected from its nodes), so a table that drifts from them fails here.
#[test]
fn the_servers_table_matches_the_profiles() {
    let (header, rows) = servers_table();
    assert_eq!(
        header,
        [
            "Call (feature)",
            "ZK 3.4",
            "ZK 3.5",
            "ZK 3.6",
            "ZK 3.7-3.9",
            "Keeper (no flags)",
            "Keeper 2026 (flags on)"
        ],
        "docs/servers.md: the table's columns changed; update this test"
    );
    // What the 2026 Keeper of the flavours tests ends with: configured, plus its flags.
    let keeper_2026 = ServerProfile::from_keeper_nodes(b"3", Some(&[0b1111_1000]))
        .with(Feature::Create2)
        .with(Feature::Container)
        .with(Feature::Ttl)
        .with(Feature::AddWatch);
    // Each column: the profiles it stands for; Keeper's as detection leaves them with
    // nothing detected (the `/keeper says` cells are checked against detection itself).
    let columns: Vec<Vec<ServerProfile>> = vec![
        vec![ServerProfile::zookeeper(3, 4)],
        vec![ServerProfile::zookeeper(3, 5)],
        vec![ServerProfile::zookeeper(3, 6)],
        vec![
            ServerProfile::zookeeper(3, 7),
            ServerProfile::zookeeper(3, 8),
            ServerProfile::zookeeper(3, 9),
        ],
        vec![ServerProfile::from_keeper_nodes(b"0", None)],
        vec![keeper_2026],
    ];
    let rows_of: &[(&str, &[Feature])] = &[
        ("`create` with its `Stat`", &[Feature::Create2]),
        ("container nodes", &[Feature::Container]),
        ("TTL nodes", &[Feature::Ttl]),
        ("`add_watch`", &[Feature::AddWatch]),
        ("`multi_read`", &[Feature::MultiRead]),
        (
            "`get_ephemerals`, `get_all_children_number`",
            &[Feature::GetEphemerals, Feature::GetAllChildrenNumber],
        ),
        ("`whoami`", &[Feature::WhoAmI]),
        ("`remove_watches`", &[Feature::RemoveWatches]),
        ("`reconfig`", &[Feature::Reconfig]),
        ("`delete_all` in one request", &[Feature::RemoveRecursive]),
    ];
    let mut covered = Vec::new();
    let mut sessions_row = false;
    for row in &rows {
        let (label, cells) = row.split_first().expect("a row");
        assert_eq!(cells.len(), columns.len(), "docs/servers.md row {label:?}");
        if label.starts_with("`create_path`") {
            assert!(
                cells.iter().all(|c| c == "plain `create`"),
                "{label}: {cells:?}"
            );
            continue;
        }
        if label.starts_with("session after a reconnect") {
            sessions_row = true;
            for (text, profiles) in cells.iter().zip(&columns) {
                for p in profiles {
                    let said = if p.resumes_sessions() {
                        "resumed"
                    } else {
                        "`Expired`"
                    };
                    assert_eq!(text, said, "{label}: {p:?}");
                }
            }
            continue;
        }
        let Some((_, features)) = rows_of.iter().find(|(prefix, _)| label.starts_with(prefix))
        else {
            panic!("docs/servers.md: a row this test does not know: {label:?}");
        };
        covered.extend_from_slice(features);
        for (text, profiles) in cells.iter().zip(&columns) {
            for p in profiles {
                for &f in *features {
                    match cell(text) {
                        Cell::Ok => assert!(p.supports(f), "{label}: {text:?} but {p:?}"),
                        Cell::Local => assert!(!p.supports(f), "{label}: {text:?} but {p:?}"),
                        Cell::Detected => {
                            assert_eq!(p.flavour(), Flavour::Keeper, "{label}: {text:?}");
                            // Flag 1 (MULTI_READ), or api_version 2+ without flags.
                            let on = ServerProfile::from_keeper_nodes(b"3", Some(&[0x40]));
                            let off = ServerProfile::from_keeper_nodes(b"3", Some(&[0]));
                            assert!(on.supports(f) && !off.supports(f), "{label}");
                            assert!(ServerProfile::from_keeper_nodes(b"2", None).supports(f));
                            assert!(!ServerProfile::from_keeper_nodes(b"1", None).supports(f));
                        }
                    }
                }
            }
        }
    }
    assert!(sessions_row, "docs/servers.md: no session row");
    for f in Feature::ALL {
        assert!(covered.contains(f), "docs/servers.md: no row for {f}");
    }
}
