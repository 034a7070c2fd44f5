//! zk-client against a real server: every node operation and its error paths.

use std::time::Duration;

use integration_tests::prelude::*;
use zk_client::{Acl, Client, CreateMode, CreateOptions, Error, ErrorCode, Id, Perms};

async fn client_for(test: &str) -> (Client, String) {
    let TestRoot { server, root, .. } = test_root(test).await;
    (
        connect(&format!("{}{root}", server.connect_string())).await,
        root,
    )
}

#[tokio::test]
async fn create_get_set_delete_and_their_errors() {
    let (c, _) = client_for("nodes_crud").await;
    let (path, stat) = c
        .create("/a", b"one", &CreateOptions::persistent())
        .await
        .unwrap();
    assert_eq!(path, "/a");
    assert_eq!(
        (stat.version, stat.data_length, stat.ephemeral_owner),
        (0, 3, 0)
    );
    assert!(matches!(
        c.create("/a", b"", &CreateOptions::persistent()).await,
        Err(Error::NodeExists)
    ));
    assert!(matches!(
        c.create("/missing/b", b"", &CreateOptions::persistent())
            .await,
        Err(Error::NoNode)
    ));

    let (data, stat) = c.get_data("/a").await.unwrap();
    assert_eq!((&data[..], stat.version), (&b"one"[..], 0));
    let stat = c.set_data("/a", b"two", Some(0)).await.unwrap();
    assert_eq!(stat.version, 1);
    assert!(matches!(
        c.set_data("/a", b"x", Some(0)).await,
        Err(Error::BadVersion)
    ));
    let stat = c.set_data("/a", b"three", None).await.unwrap();
    assert_eq!(stat.version, 2);
    assert!(matches!(
        c.set_data("/nope", b"", None).await,
        Err(Error::NoNode)
    ));
    assert_eq!(&c.get_data("/a").await.unwrap().0[..], b"three");

    assert_eq!(c.exists("/a").await.unwrap().map(|s| s.version), Some(2));
    assert_eq!(c.exists("/nope").await.unwrap(), None);
    assert!(matches!(c.get_data("/nope").await, Err(Error::NoNode)));

    c.create("/a/child", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    assert!(matches!(c.delete("/a", None).await, Err(Error::NotEmpty)));
    assert!(matches!(
        c.delete("/a/child", Some(5)).await,
        Err(Error::BadVersion)
    ));
    c.delete("/a/child", Some(0)).await.unwrap();
    c.delete("/a", None).await.unwrap();
    assert!(matches!(c.delete("/a", None).await, Err(Error::NoNode)));
    assert_eq!(c.exists("/a").await.unwrap(), None);
    c.close().await.unwrap();
}

#[tokio::test]
async fn create_modes() {
    let (c, _) = client_for("nodes_modes").await;
    let (_, stat) = c
        .create("/eph", b"", &CreateOptions::ephemeral())
        .await
        .unwrap();
    assert_eq!(stat.ephemeral_owner, c.session_id());
    assert!(matches!(
        c.create("/eph/child", b"", &CreateOptions::persistent())
            .await,
        Err(Error::NoChildrenForEphemerals)
    ));

    c.create("/q", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let (p1, _) = c
        .create("/q/item-", b"", &CreateOptions::persistent_sequential())
        .await
        .unwrap();
    let (p2, s2) = c
        .create("/q/item-", b"", &CreateOptions::ephemeral_sequential())
        .await
        .unwrap();
    assert_eq!(p1, "/q/item-0000000000");
    assert_eq!(p2, "/q/item-0000000001");
    assert_eq!(s2.ephemeral_owner, c.session_id());
    // A sequential create may end with '/': the sequence is the whole name.
    let (p3, _) = c
        .create("/q/", b"", &CreateOptions::persistent_sequential())
        .await
        .unwrap();
    assert_eq!(p3, "/q/0000000002");

    // The server hides the container/TTL marker from clients (ephemeralOwner reads 0).
    let (path, stat) = c
        .create("/container", b"", &CreateOptions::container())
        .await
        .unwrap();
    assert_eq!((path.as_str(), stat.ephemeral_owner), ("/container", 0));

    let ttl = CreateOptions::new(CreateMode::PersistentWithTtl).with_ttl(Duration::from_secs(3600));
    let (path, stat) = c.create("/ttl", b"t", &ttl).await.unwrap();
    assert_eq!((path.as_str(), stat.data_length), ("/ttl", 1));
    let seq_ttl = CreateOptions::new(CreateMode::PersistentSequentialWithTtl)
        .with_ttl(Duration::from_secs(60));
    let (path, _) = c.create("/ttl-", b"", &seq_ttl).await.unwrap();
    assert!(path.starts_with("/ttl-00"), "{path}");
    assert!(matches!(
        c.create(
            "/ttl2",
            b"",
            &CreateOptions::new(CreateMode::PersistentWithTtl)
        )
        .await,
        Err(Error::InvalidArgument(_))
    ));
    c.close().await.unwrap();
}

#[tokio::test]
async fn create_all_makes_parents_and_tolerates_existing_ones() {
    let (c, _) = client_for("nodes_create_all").await;
    let (path, _) = c
        .create_all("/x/y/z", b"deep", &CreateOptions::persistent())
        .await
        .unwrap();
    assert_eq!(path, "/x/y/z");
    assert_eq!(&c.get_data("/x/y/z").await.unwrap().0[..], b"deep");
    // Parents exist now: only the leaf is new.
    let (p, _) = c
        .create_all("/x/y/w", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    assert_eq!(p, "/x/y/w");
    assert!(matches!(
        c.create_all("/x/y/z", b"", &CreateOptions::persistent())
            .await,
        Err(Error::NodeExists)
    ));

    let opts = CreateOptions::ephemeral_sequential().with_container_parents(true);
    let (lock, _) = c.create_all("/locks/job/lock-", b"", &opts).await.unwrap();
    assert_eq!(lock, "/locks/job/lock-0000000000");
    assert!(c.exists("/locks/job").await.unwrap().is_some());
    c.close().await.unwrap();
}

#[tokio::test]
async fn children_counts_and_ephemerals() {
    let (c, _) = client_for("nodes_children").await;
    c.create("/p", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    for name in ["c", "a", "b"] {
        c.create(&format!("/p/{name}"), b"", &CreateOptions::ephemeral())
            .await
            .unwrap();
    }
    c.create("/p/a2", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    c.create("/p/a2/x", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let (mut children, stat) = c.get_children_with_stat("/p").await.unwrap();
    children.sort();
    assert_eq!(children, ["a", "a2", "b", "c"]);
    assert_eq!(stat.num_children, 4);
    let mut plain = c.get_children("/p").await.unwrap();
    plain.sort();
    assert_eq!(plain, children);
    assert!(matches!(
        c.get_children_with_stat("/nope").await,
        Err(Error::NoNode)
    ));
    assert!(matches!(c.get_children("/nope").await, Err(Error::NoNode)));
    assert_eq!(c.get_all_children_number("/p").await.unwrap(), 5);
    assert!(matches!(
        c.get_all_children_number("/nope").await,
        Err(Error::NoNode)
    ));
    let mut eph = c.get_ephemerals("/").await.unwrap();
    eph.sort();
    assert_eq!(
        eph,
        ["/p/a", "/p/b", "/p/c"],
        "paths relative to the chroot"
    );
    let eph = c.get_ephemerals("/p/b").await.unwrap();
    assert_eq!(eph, ["/p/b"]);
    c.close().await.unwrap();
}

#[tokio::test]
async fn acls_auth_and_whoami() {
    let TestRoot { server, root, .. } = test_root("nodes_acl").await;
    let hosts = format!("{}{root}", server.connect_string());
    let owner = connect(&hosts).await;
    let (acl, stat) = owner.get_acl("/").await.unwrap();
    assert_eq!(acl, Acl::open_unsafe());
    assert_eq!(stat.aversion, 0);

    owner
        .create("/ro", b"r", &CreateOptions::persistent())
        .await
        .unwrap();
    let stat = owner
        .set_acl("/ro", Acl::open_unsafe(), Some(0))
        .await
        .unwrap();
    assert_eq!(stat.aversion, 1);
    assert!(matches!(
        owner.set_acl("/ro", Acl::read_unsafe(), Some(0)).await,
        Err(Error::BadVersion)
    ));
    owner
        .set_acl("/ro", Acl::read_unsafe(), Some(1))
        .await
        .unwrap();
    assert!(matches!(
        owner.set_acl("/ro", Acl::open_unsafe(), None).await,
        Err(Error::NoAuth)
    ));
    assert!(matches!(
        owner.set_data("/ro", b"w", None).await,
        Err(Error::NoAuth)
    ));
    assert!(matches!(
        owner.set_acl("/ro", &[], None).await,
        Err(Error::InvalidAcl)
    ));
    assert!(matches!(owner.get_acl("/nope").await, Err(Error::NoNode)));

    // `auth` ACL without credentials is rejected by the server.
    assert!(matches!(
        owner
            .create(
                "/x",
                b"",
                &CreateOptions::persistent().with_acl(Acl::creator_all().to_vec())
            )
            .await,
        Err(Error::InvalidAcl)
    ));
    owner.add_auth("digest", b"alice:secret").await.unwrap();
    let who = owner.whoami().await.unwrap();
    assert!(
        who.iter()
            .any(|i| i.auth_scheme == "digest" && i.user == "alice"),
        "{who:?}"
    );
    owner
        .create(
            "/private",
            b"p",
            &CreateOptions::persistent().with_acl(Acl::creator_all().to_vec()),
        )
        .await
        .unwrap();
    let (acl, _) = owner.get_acl("/private").await.unwrap();
    assert_eq!(acl.len(), 1);
    assert_eq!(acl[0].id.scheme, "digest");
    assert!(acl[0].id.id.starts_with("alice:"));
    assert_eq!(acl[0].perms, Perms::ALL);

    let stranger = connect(&hosts).await;
    assert!(matches!(
        stranger.get_data("/private").await,
        Err(Error::NoAuth)
    ));
    let friend = Client::builder(&hosts)
        .auth("digest", b"alice:secret")
        .connect()
        .await
        .unwrap();
    assert_eq!(&friend.get_data("/private").await.unwrap().0[..], b"p");
    let wrong = connect(&hosts).await;
    wrong.add_auth("digest", b"alice:wrong").await.unwrap();
    assert!(matches!(
        wrong.get_data("/private").await,
        Err(Error::NoAuth)
    ));
    let _ = Id::new("world", "anyone");
    for c in [owner, stranger, friend, wrong] {
        c.close().await.unwrap();
    }
}

#[tokio::test]
async fn chroot_is_added_and_stripped() {
    let TestRoot { server, root, .. } = test_root("nodes_chroot").await;
    let rooted = connect(&format!("{}{root}", server.connect_string())).await;
    let plain = connect(&server.connect_string()).await;
    let (path, _) = rooted
        .create("/n", b"", &CreateOptions::persistent_sequential())
        .await
        .unwrap();
    assert_eq!(path, "/n0000000000");
    assert!(plain
        .exists(&format!("{root}/n0000000000"))
        .await
        .unwrap()
        .is_some());
    let children = rooted.get_children("/").await.unwrap();
    assert_eq!(children, ["n0000000000"]);
    assert!(rooted.exists("/").await.unwrap().is_some());
    rooted.close().await.unwrap();
    plain.close().await.unwrap();
}

#[tokio::test]
async fn invalid_paths_are_rejected_locally() {
    let (c, _) = client_for("nodes_paths").await;
    for bad in [
        "", "a", "/a/", "//a", "/a/../b", "/a/.", "/a\u{0}b", "/\u{1}",
    ] {
        match c.get_data(bad).await {
            Err(Error::InvalidPath { path, .. }) => assert_eq!(path, bad),
            other => panic!("{bad:?}: {other:?}"),
        }
    }
    assert!(matches!(
        c.create("/a/", b"", &CreateOptions::persistent()).await,
        Err(Error::InvalidPath { .. })
    ));
    c.close().await.unwrap();
}

#[tokio::test]
async fn sync_config_and_large_data() {
    let (c, _) = client_for("nodes_misc").await;
    c.sync("/").await.unwrap();
    let _config = c.get_config().await.unwrap();
    let big = vec![7u8; 900 * 1024];
    c.create("/big", &big, &CreateOptions::persistent())
        .await
        .unwrap();
    let (data, stat) = c.get_data("/big").await.unwrap();
    assert_eq!(data.len(), big.len());
    assert_eq!(stat.data_length as usize, big.len());
    // The server rejects a request above its jute.maxbuffer by closing the connection.
    let too_big = vec![0u8; 2 * 1024 * 1024];
    let res = within("oversized set", c.set_data("/big", &too_big, None)).await;
    assert!(res.is_err(), "{res:?}");
    // The session survives: the client reconnects.
    wait_state(&c, "reconnect", |s| s.is_connected()).await;
    assert_eq!(
        within("get", c.get_data("/big")).await.unwrap().0.len(),
        big.len()
    );
    assert!(matches!(
        c.get_data("/nope").await.map_err(|e| e.code()),
        Err(Some(ErrorCode::NoNode))
    ));
    c.close().await.unwrap();
}
