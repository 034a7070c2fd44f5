//! Recipes against the scripted fake server of `zk-test-support`, where a real server is not
//! the point: the exact moment a reply is lost, and the exact requests the lock sends.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use zk_proto::records::{
    Create2Response, CreateRequest, DeleteRequest, ExistsResponse, GetChildren2Response,
    GetChildrenResponse, GetDataResponse,
};
use zk_proto::{decode_exact, ErrorCode, OpCode, Stat};
use zk_recipes::lock::{FairLock, Released};
use zk_test_support::{connect_client, encode, within, Conn, FakeServer};

const SESSION: i64 = 0x5e55;
const TIMEOUT_MS: i32 = 10_000;

/// What the fake queue saw.
#[derive(Debug, Default)]
struct Seen {
    creates: Vec<String>,
    deletes: Vec<String>,
}

/// The one node of the queue: its path and stat.
struct Node {
    path: String,
    stat: Stat,
}

/// Answers the lock's requests on `conn` as a server holding `node` (ours) as the only child
/// of its parent, until the client hangs up. Anything else the lock sends fails the test.
async fn serve_queue(mut conn: Conn, node: Node, seen: Arc<Mutex<Seen>>) {
    let name = node
        .path
        .rsplit_once('/')
        .expect("a child path")
        .1
        .to_owned();
    let mut present = true;
    while let Some(req) = conn.read_non_ping().await {
        let op = OpCode::try_from(req.op).expect("a known op code");
        let (err, body): (ErrorCode, Bytes) = match op {
            OpCode::Create2 => {
                let r: CreateRequest = decode_exact(req.body.clone()).unwrap();
                seen.lock().unwrap().creates.push(r.path);
                let reply = Create2Response {
                    path: node.path.clone(),
                    stat: node.stat.clone(),
                };
                (ErrorCode::Ok, encode(&reply))
            }
            OpCode::GetChildren | OpCode::GetChildren2 => {
                let children: Vec<String> = present.then(|| name.clone()).into_iter().collect();
                let body = if op == OpCode::GetChildren {
                    encode(&GetChildrenResponse { children })
                } else {
                    encode(&GetChildren2Response {
                        children,
                        stat: Stat::default(),
                    })
                };
                (ErrorCode::Ok, body)
            }
            OpCode::Exists | OpCode::GetData if !present => (ErrorCode::NoNode, Bytes::new()),
            OpCode::Exists => {
                let stat = node.stat.clone();
                (ErrorCode::Ok, encode(&ExistsResponse { stat }))
            }
            OpCode::GetData => {
                let reply = GetDataResponse {
                    data: Bytes::new(),
                    stat: node.stat.clone(),
                };
                (ErrorCode::Ok, encode(&reply))
            }
            OpCode::Delete => {
                let r: DeleteRequest = decode_exact(req.body.clone()).unwrap();
                assert_eq!(r.path, node.path, "the lock deletes its own node only");
                seen.lock().unwrap().deletes.push(r.path);
                present = false;
                (ErrorCode::Ok, Bytes::new())
            }
            OpCode::RemoveWatches | OpCode::CheckWatches => (ErrorCode::Ok, Bytes::new()),
            OpCode::CloseSession => {
                conn.reply(req.xid, 9, ErrorCode::Ok, &[]).await;
                return;
            }
            other => panic!("the fake queue got an unexpected {other:?}"),
        };
        conn.reply(req.xid, 9, err, &body).await;
    }
}

#[tokio::test]
async fn a_create_whose_reply_is_lost_is_found_by_its_guid_and_not_made_twice() {
    let server = FakeServer::start().await;
    let (client, mut conn) = connect_client(&server, "", SESSION, TIMEOUT_MS, |b| b).await;
    let lock = FairLock::new(client.clone(), "/lock").unwrap();
    let acquire = tokio::spawn(async move { lock.acquire_timeout(Duration::from_secs(20)).await });

    // The create reaches the server, which makes the node; its reply is lost with the
    // connection.
    let req = within("create", conn.read_non_ping())
        .await
        .expect("a create");
    assert_eq!(req.op, OpCode::Create2.as_i32());
    let create: CreateRequest = decode_exact(req.body).unwrap();
    assert!(
        create.path.starts_with("/lock/_c_") && create.path.ends_with("-lock-"),
        "a protected sequential name: {}",
        create.path
    );
    drop(conn);

    // The client resumes the session on a new connection; the node is there, owned by it.
    let mut conn = server.accept().await;
    let resume = conn.read_connect().await;
    assert_eq!(resume.session_id, SESSION, "the same session is resumed");
    conn.send_connect(SESSION, TIMEOUT_MS, false).await;
    let node = Node {
        path: format!("{}0000000007", create.path),
        stat: Stat {
            czxid: 77,
            ephemeral_owner: SESSION,
            ..Stat::default()
        },
    };
    let seen = Arc::new(Mutex::new(Seen::default()));
    let queue = tokio::spawn(serve_queue(conn, node, seen.clone()));

    let guard = within("acquire", acquire).await.unwrap().unwrap();
    assert_eq!(guard.path(), format!("{}0000000007", create.path));
    assert_eq!(guard.fencing_token(), 77, "the found node's czxid");
    assert!(
        seen.lock().unwrap().creates.is_empty(),
        "no second create after the lost reply: {:?}",
        seen.lock().unwrap().creates
    );

    assert!(matches!(
        within("release", guard.release()).await.unwrap(),
        Released::Deleted
    ));
    assert_eq!(
        seen.lock().unwrap().deletes,
        [format!("{}0000000007", create.path)]
    );
    let _ = within("close", client.close()).await;
    within("queue", queue).await.unwrap();
}
