//! zk-client against a real 3-node ensemble: failover and read-only mode.

use std::time::Duration;

use integration_tests::prelude::*;
use integration_tests::proxy::{Cut, Mode};
use integration_tests::{chroot, ensemble, Ensemble, Proxy, Settings, ZkTarget};
use zk_client::{Client, CreateOptions, Error, EventType, SessionState};

#[tokio::test]
async fn killing_the_server_keeps_session_ephemerals_and_watches() {
    let ens: Ensemble = ensemble().await;
    let root = chroot(&ens, "failover_kill").await;
    // The client reaches each member through a proxy, so the test decides when it may
    // reconnect: after a change made during the outage.
    let mut proxies = Vec::new();
    for i in 0..ens.len() {
        proxies.push(Proxy::start(ens.addr(i)).await);
    }
    let hosts: Vec<String> = proxies.iter().map(|p| p.addr().to_string()).collect();
    // A long session: the outage below includes a leader election and the writes; the
    // client reports Expired by itself once no server answered for the whole timeout.
    let a = connect_with_timeout(&format!("{}{root}", hosts.join(",")), 30).await;
    let id = a.session_id();
    let on = within("find the client's server", async {
        loop {
            if let Some(i) = server_of(&ens.client_addrs(), id).await {
                return i;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    let other = (on + 1) % ens.len();
    let b = connect(&format!("{}{root}", ens.addr(other))).await;

    a.create("/eph", b"mine", &CreateOptions::ephemeral())
        .await
        .unwrap();
    a.create("/w", b"0", &CreateOptions::persistent())
        .await
        .unwrap();
    a.create("/p", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let (_, _, data_watch) = a.get_data_watch("/w").await.unwrap();
    let (_, _, child_watch) = a.get_children_watch("/p").await.unwrap();
    let (_, exist_watch) = a.exists_watch("/born").await.unwrap();
    let mut states = a.watch();
    let outage = std::time::Instant::now();

    for p in &proxies {
        p.set_mode(Mode::Refuse);
    }
    ens.kill(on).await;
    proxies[on].cut(Cut::Reset);
    assert_eq!(
        within("disconnect", states.changed()).await,
        SessionState::Disconnected
    );
    ens.wait_new_leader(on, LIMIT).await;

    write_until_done("set /w", || b.set_data("/w", b"1", None)).await;
    write_until_done("create /p/kid", || async {
        match b.create("/p/kid", b"", &CreateOptions::persistent()).await {
            Err(Error::NodeExists) => Ok(()),
            other => other.map(drop),
        }
    })
    .await;
    write_until_done("create /born", || async {
        match b.create("/born", b"", &CreateOptions::persistent()).await {
            Err(Error::NodeExists) => Ok(()),
            other => other.map(drop),
        }
    })
    .await;

    for p in &proxies {
        p.set_mode(Mode::Pass);
    }
    assert_eq!(
        within("reconnect", states.changed()).await,
        SessionState::Connected
    );
    eprintln!("outage lasted {:?}", outage.elapsed());
    assert_eq!(a.session_id(), id, "the session moved to another member");
    assert_eq!(
        server_of(&ens.client_addrs(), id).await.map(|i| i != on),
        Some(true)
    );
    assert_eq!(
        within("data watch", data_watch).await.unwrap().event_type,
        EventType::NodeDataChanged
    );
    assert_eq!(
        within("child watch", child_watch).await.unwrap().event_type,
        EventType::NodeChildrenChanged
    );
    assert_eq!(
        within("exist watch", exist_watch).await.unwrap().event_type,
        EventType::NodeCreated
    );
    let (data, stat) = b.get_data("/eph").await.unwrap();
    assert_eq!(
        (&data[..], stat.ephemeral_owner),
        (&b"mine"[..], id),
        "ephemeral survived"
    );
    assert_eq!(&a.get_data("/w").await.unwrap().0[..], b"1");
    a.close().await.unwrap();
    b.sync("/").await.unwrap();
    assert!(b.exists("/eph").await.unwrap().is_none());
    b.close().await.unwrap();
}

#[tokio::test]
async fn client_fails_over_by_itself_when_its_server_dies() {
    let ens = ensemble().await;
    let root = chroot(&ens, "failover_plain").await;
    let a = connect_with_timeout(&ens.hosts(&root), 8).await;
    let id = a.session_id();
    a.create("/eph", b"", &CreateOptions::ephemeral())
        .await
        .unwrap();
    let on = within("find server", async {
        loop {
            if let Some(i) = server_of(&ens.client_addrs(), id).await {
                return i;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    let mut states = a.watch();
    ens.kill(on).await;
    assert_eq!(
        within("disconnect", states.changed()).await,
        SessionState::Disconnected
    );
    wait_state(&a, "reconnect", SessionState::is_connected).await;
    assert_eq!(a.session_id(), id);
    let stat = write_until_done("exists", || a.exists("/eph")).await;
    assert_eq!(stat.map(|s| s.ephemeral_owner), Some(id));
    write_until_done("write after failover", || a.set_data("/", b"x", None)).await;
    a.close().await.unwrap();
}

#[tokio::test]
async fn read_only_mode_with_two_of_three_members_down_then_back_to_read_write() {
    let ens = Ensemble::launch_with(3, &Settings::default().with_local_sessions()).await;
    let root = chroot(&ens, "failover_read_only").await;
    let setup = connect(&ens.hosts(&root)).await;
    setup
        .create("/data", b"before", &CreateOptions::persistent())
        .await
        .unwrap();
    setup.close().await.unwrap();

    leave_member_0_read_only(&ens).await;

    let c = within(
        "read-only connect",
        Client::builder(&ens.hosts(&root))
            .read_only(true)
            .session_timeout(Duration::from_secs(6))
            .establish_timeout(LIMIT)
            .connect(),
    )
    .await
    .unwrap();
    assert_read_only_session(&c).await;

    // A client that insists on read/write gets nothing from the read-only member.
    let rw = Client::builder(&ens.addr(0).to_string())
        .establish_timeout(Duration::from_secs(2))
        .connect()
        .await;
    assert!(rw.is_err(), "{rw:?}");

    back_to_read_write(&ens, c).await;
}
