//! `Client::update_hosts` against a real five-member ensemble: 50 sessions connected to three
//! members, the list grown to five; ZOOKEEPER-1355's rebalancing measured with `cons`.

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::future::join_all;
use integration_tests::prelude::*;
use integration_tests::{chroot, Ensemble};
use zk_client::admin::Server;
use zk_client::{Client, CreateOptions, Error};

const CLIENTS: usize = 50;

/// Sessions per member (index), by `cons`.
async fn sessions_per_member(zk: &Ensemble) -> Vec<Vec<i64>> {
    let all = join_all((0..zk.len()).map(|i| async move {
        let cons = Server::new(zk.addr(i).to_string()).cons().await.unwrap();
        cons.iter().filter_map(|c| c.session_id).collect::<Vec<_>>()
    }));
    all.await
}

/// Polls `cons` until every session of `ids` is on exactly one member; returns the counts.
async fn settled(zk: &Ensemble, ids: &[i64]) -> Vec<usize> {
    let deadline = tokio::time::Instant::now() + SOON;
    loop {
        let per = sessions_per_member(zk).await;
        let mut seen: BTreeMap<i64, usize> = BTreeMap::new();
        for s in per.iter().flatten() {
            *seen.entry(*s).or_default() += 1;
        }
        if ids.iter().all(|id| seen.get(id) == Some(&1)) {
            return per
                .iter()
                .map(|m| m.iter().filter(|s| ids.contains(s)).count())
                .collect();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "sessions not settled: {per:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn growing_3_to_5_rebalances_and_keeps_every_session() {
    let zk = Ensemble::launch(5).await;
    let root = chroot(&zk, "update_hosts").await;
    let three = format!("{},{},{}", zk.addr(0), zk.addr(1), zk.addr(2));
    let five = zk.connect_string();
    let connects = (0..CLIENTS).map(|_| {
        Client::builder(&format!("{three}{root}"))
            .session_timeout(Duration::from_secs(20))
            .connect()
    });
    let clients: Vec<Client> = join_all(connects)
        .await
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap();
    let ids: Vec<i64> = clients.iter().map(Client::session_id).collect();
    // Each holds an ephemeral node: a lost session would lose it.
    for (i, c) in clients.iter().enumerate() {
        c.create(&format!("/e{i}"), b"", &CreateOptions::ephemeral())
            .await
            .unwrap();
    }
    let before = settled(&zk, &ids).await;
    eprintln!("before update: {before:?}");
    assert_eq!(&before[3..], [0, 0], "nobody on the two members not listed");

    let epochs: Vec<u64> = clients.iter().map(Client::connection_epoch).collect();
    let moved: Vec<bool> = join_all(clients.iter().map(|c| c.update_hosts(&five)))
        .await
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap();
    let movers = moved.iter().filter(|m| **m).count();
    for (c, (&moving, &epoch)) in clients.iter().zip(moved.iter().zip(&epochs)) {
        c.wait_connected(SOON).await.unwrap();
        if moving {
            let deadline = tokio::time::Instant::now() + SOON;
            while c.connection_epoch() == epoch || !c.state().is_connected() {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "mover never reconnected"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        } else {
            assert_eq!(c.connection_epoch(), epoch, "a client told to stay moved");
        }
    }
    let after = settled(&zk, &ids).await;
    eprintln!("after update to 5: {after:?}, {movers} of {CLIENTS} moved");
    // Fair share 10 per member. Each count is random (which clients draw a move, and the
    // first spread over three); its standard deviation is about 3: the bound is 8.
    let fair = CLIENTS / zk.len();
    for (i, n) in after.iter().enumerate() {
        assert!(
            n.abs_diff(fair) <= 8,
            "member {i}: {n} sessions, fair share {fair}: {after:?}"
        );
    }
    // Expected movers: 2/5 of 50 = 20 (binomial, sd 3.5).
    assert!((8..=32).contains(&movers), "{movers} moved");

    // No session lost, same ids, every ephemeral node still there, seen from any member.
    assert_eq!(
        clients.iter().map(Client::session_id).collect::<Vec<_>>(),
        ids
    );
    let children = clients[0].get_children("/").await.unwrap();
    assert_eq!(children.len(), CLIENTS);

    // Errors: a chroot or no host is rejected; the session is untouched.
    for bad in ["", "a:x", &format!("{five}/other")] {
        assert!(matches!(
            clients[0].update_hosts(bad).await,
            Err(Error::InvalidArgument(_))
        ));
    }
    // Shrinking back to the three: the clients on members 4 and 5 move, the others stay.
    let on_added: Vec<bool> = {
        let per = sessions_per_member(&zk).await;
        ids.iter()
            .map(|id| per[3].contains(id) || per[4].contains(id))
            .collect()
    };
    let moved: Vec<bool> = join_all(clients.iter().map(|c| c.update_hosts(&three)))
        .await
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(moved, on_added);
    // The moved clients drop their connections as `update_hosts` returns and reconnect
    // after it: until the servers see that, each session is still listed once, on 4 or 5.
    let deadline = tokio::time::Instant::now() + SOON;
    let back = loop {
        let back = settled(&zk, &ids).await;
        if back[3..] == [0, 0] || tokio::time::Instant::now() >= deadline {
            break back;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    eprintln!("after shrinking back to 3: {back:?}");
    assert_eq!(&back[3..], [0, 0]);
    join_all(clients.iter().map(Client::close)).await;
}
