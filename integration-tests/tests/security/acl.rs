//! Digest ACL helpers against a real server: `Acl::digest` ids match what the server computes
//! for `add_auth("digest", "user:password")`.

use integration_tests::prelude::*;
use zk_client::{Acl, CreateOptions, Error, Perms};

#[tokio::test]
async fn digest_acl_built_by_the_helper_admits_the_user_and_no_one_else() {
    let TestRoot { server, root, .. } = test_root("digest_acl").await;
    let hosts = format!("{}{root}", server.connect_string());
    let owner = connect(&hosts).await;
    let acl = vec![
        Acl::digest(Perms::ALL, "alice", "s3cret"),
        Acl::world(Perms::CREATE),
    ];
    owner
        .create(
            "/private",
            b"hidden",
            &CreateOptions::persistent().with_acl(acl.clone()),
        )
        .await
        .expect("create with a digest ACL");

    // No credentials: NoAuth.
    assert!(matches!(
        owner.get_data("/private").await,
        Err(Error::NoAuth)
    ));
    // Wrong password: still NoAuth (digest auth never fails, it just adds another identity).
    let wrong = connect(&hosts).await;
    wrong
        .add_auth("digest", b"alice:wrong")
        .await
        .expect("add_auth");
    assert!(matches!(
        wrong.get_data("/private").await,
        Err(Error::NoAuth)
    ));
    // The right credentials: readable, and the stored id is the helper's.
    let alice = connect(&hosts).await;
    alice
        .add_auth("digest", b"alice:s3cret")
        .await
        .expect("add_auth");
    let (data, _) = alice.get_data("/private").await.expect("read as alice");
    assert_eq!(&data[..], b"hidden");
    let (stored, _) = alice.get_acl("/private").await.expect("get_acl");
    assert_eq!(stored, acl);

    // creator_all_world_read: the creator's identity gets everything, the world reads.
    alice
        .create(
            "/mine",
            b"public",
            &CreateOptions::persistent().with_acl(Acl::creator_all_world_read().to_vec()),
        )
        .await
        .expect("create with creator_all_world_read");
    let (stored, _) = alice.get_acl("/mine").await.expect("get_acl");
    assert_eq!(stored[0], Acl::digest(Perms::ALL, "alice", "s3cret"));
    assert_eq!(
        &owner.get_data("/mine").await.expect("world read").0[..],
        b"public"
    );
    assert!(matches!(
        owner.set_data("/mine", b"x", None).await,
        Err(Error::NoAuth)
    ));
    for c in [owner, wrong, alice] {
        c.close().await.expect("close");
    }
}
