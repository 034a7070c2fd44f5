//! zk-client against a real server: multi, transactions, multiRead.

use integration_tests::prelude::*;
use zk_client::{Client, CreateOptions, Error, ErrorCode, Op, OpResult, ReadOp, ReadResult};

async fn client_for(test: &str) -> Client {
    let TestRoot { server, root, .. } = test_root(test).await;
    connect(&format!("{}{root}", server.connect_string())).await
}

#[tokio::test]
async fn multi_applies_all_ops_and_strips_the_chroot() {
    let c = client_for("multi_ok").await;
    c.create("/old", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    c.create("/v", b"0", &CreateOptions::persistent())
        .await
        .unwrap();
    let results = c
        .multi(&[
            Op::create("/new", b"n", &CreateOptions::persistent()),
            Op::create("/seq-", b"", &CreateOptions::persistent_sequential()),
            Op::set_data("/v", b"1", Some(0)),
            Op::check("/v", Some(1)),
            Op::delete("/old", None),
        ])
        .await
        .unwrap();
    assert_eq!(results.len(), 5);
    assert!(matches!(&results[0], OpResult::Create { path, .. } if path == "/new"));
    // The sequence is the parent's cversion: /old, /v and /new came first.
    assert!(
        matches!(&results[1], OpResult::Create { path, .. } if path == "/seq-0000000003"),
        "{results:?}"
    );
    assert!(matches!(&results[2], OpResult::SetData { stat } if stat.version == 1));
    assert_eq!(results[3], OpResult::Check);
    assert_eq!(results[4], OpResult::Delete);
    assert!(c.exists("/old").await.unwrap().is_none());
    assert_eq!(&c.get_data("/new").await.unwrap().0[..], b"n");
    assert!(c.multi(&[]).await.unwrap().is_empty());
    c.close().await.unwrap();
}

#[tokio::test]
async fn failed_multi_reports_the_op_and_applies_nothing() {
    let c = client_for("multi_fail").await;
    c.create("/v", b"0", &CreateOptions::persistent())
        .await
        .unwrap();
    let err = c
        .multi(&[
            Op::create("/a", b"", &CreateOptions::persistent()),
            Op::check("/v", Some(7)),
            Op::delete("/v", None),
        ])
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Multi {
                index: 1,
                code: ErrorCode::BadVersion
            }
        ),
        "{err:?}"
    );
    assert_eq!(err.code(), Some(ErrorCode::BadVersion));
    assert!(c.exists("/a").await.unwrap().is_none(), "rolled back");

    let err = c.multi(&[Op::delete("/missing", None)]).await.unwrap_err();
    assert!(matches!(
        err,
        Error::Multi {
            index: 0,
            code: ErrorCode::NoNode
        }
    ));
    let err = c
        .multi(&[
            Op::set_data("/v", b"", None),
            Op::create("/v", b"", &CreateOptions::persistent()),
        ])
        .await
        .unwrap_err();
    assert!(matches!(
        err,
        Error::Multi {
            index: 1,
            code: ErrorCode::NodeExists
        }
    ));
    assert_eq!(c.get_data("/v").await.unwrap().1.version, 0);
    // Rejected locally, nothing sent.
    assert!(matches!(
        c.multi(&[Op::delete("bad", None)]).await,
        Err(Error::InvalidPath { .. })
    ));
    c.close().await.unwrap();
}

#[tokio::test]
async fn transaction_builder_commits_as_one_multi() {
    let c = client_for("multi_txn").await;
    c.create("/lock", b"", &CreateOptions::ephemeral())
        .await
        .unwrap();
    c.create("/guarded", b"0", &CreateOptions::persistent())
        .await
        .unwrap();
    let results = c
        .transaction()
        .check("/lock", None)
        .set_data("/guarded", b"1", None)
        .create("/log-", b"", &CreateOptions::persistent_sequential())
        .delete("/lock", None)
        .commit()
        .await
        .unwrap();
    assert_eq!(results.len(), 4);
    assert!(c.exists("/lock").await.unwrap().is_none());
    // The fence holds: the lock node is gone, so the guarded write is refused.
    let err = c
        .transaction()
        .check("/lock", None)
        .set_data("/guarded", b"2", None)
        .commit()
        .await;
    assert!(matches!(
        err,
        Err(Error::Multi {
            index: 0,
            code: ErrorCode::NoNode
        })
    ));
    assert_eq!(&c.get_data("/guarded").await.unwrap().0[..], b"1");
    c.close().await.unwrap();
}

#[tokio::test]
async fn multi_read_answers_each_read_on_its_own() {
    let c = client_for("multi_read").await;
    c.create("/d", b"data", &CreateOptions::persistent())
        .await
        .unwrap();
    c.create("/d/k", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let results = c
        .multi_read(&[
            ReadOp::get_data("/d"),
            ReadOp::get_children("/d"),
            ReadOp::get_data("/missing"),
        ])
        .await
        .unwrap();
    assert!(
        matches!(&results[0], ReadResult::Data { data, stat } if &data[..] == b"data" && stat.num_children == 1)
    );
    assert!(matches!(&results[1], ReadResult::Children { children } if children == &["k"]));
    assert!(matches!(&results[2], ReadResult::Error(Error::NoNode)));
    c.close().await.unwrap();
}
