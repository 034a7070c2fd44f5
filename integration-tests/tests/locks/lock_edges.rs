//! What every lock kind (fair, read, write, exclusive) reports at the edges of a session: a
//! waiter whose session expires, an acquire on an ended session, what `release` says it did,
//! and the lock state across short disconnections.

use std::time::Duration;

use integration_tests::prelude::*;
use integration_tests::proxy::Proxy;
use integration_tests::{expire_session, ZkTarget};
use tokio::time::{timeout, Instant};
use zk_client::{Client, SessionState};
use zk_recipes::{
    lock::{FairLock, LockState, ReadWriteLock, Released},
    LossReason,
};

/// The lock kinds and acquisition paths that must report a session end the same way.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Fair,
    Read,
    Write,
    Exclusive,
}

#[derive(Debug, Clone, Copy)]
enum How {
    Acquire,
    Timeout,
    Try,
}

const KINDS: [Kind; 4] = [Kind::Fair, Kind::Read, Kind::Write, Kind::Exclusive];

/// Acquires `kind` on `path` the `how` way (`Ok(None)`: a try that found the lock busy).
async fn acquire_as(
    kind: Kind,
    how: How,
    client: Client,
    path: &str,
) -> Result<Option<zk_recipes::lock::LockGuard>, zk_recipes::Error> {
    macro_rules! run {
        ($lock:expr) => {
            match how {
                How::Acquire => $lock.acquire().await.map(Some),
                How::Timeout => $lock.acquire_timeout(SOON).await.map(Some),
                How::Try => $lock.try_acquire().await,
            }
        };
    }
    match kind {
        Kind::Fair => run!(FairLock::new(client, path)?),
        Kind::Read => run!(ReadWriteLock::new(client, path)?.read_lock()),
        Kind::Write => run!(ReadWriteLock::new(client, path)?.write_lock()),
        Kind::Exclusive => run!(zk_recipes::lock::ExclusiveLock::new(client, path)?),
    }
}

/// Takes the lock `kind` contends for, so that a `kind` acquirer has to wait.
async fn block(kind: Kind, client: Client, path: &str) -> zk_recipes::lock::LockGuard {
    let holder = match kind {
        Kind::Read => Kind::Write,
        k => k,
    };
    acquire_as(holder, How::Acquire, client, path)
        .await
        .expect("blocker acquires")
        .expect("blocker holds")
}

/// A waiter whose session ends is told `LockLost(SessionEnded)`, as documented, never the
/// client's `SessionExpired`.
#[tokio::test]
async fn waiter_whose_session_expires_gets_lock_lost() {
    let TestRoot { server, hosts, .. } = test_root("waiter_expired").await;
    let admin = connect(&hosts).await;
    let holder = connect(&hosts).await;
    for (i, kind) in KINDS.into_iter().enumerate() {
        for how in [How::Acquire, How::Timeout] {
            let path = format!("/locks/w{i}-{how:?}");
            let blocker = block(kind, holder.clone(), &path).await;
            let waiter = connect(&hosts).await;
            let (id, pw) = (waiter.session_id(), passwd(&waiter));
            let task = {
                let path = path.clone();
                tokio::spawn(async move { acquire_as(kind, how, waiter, &path).await })
            };
            // Queue locks: wait for the waiter's node. The exclusive lock has none: give the
            // waiter time to set its watch (the outcome must be the same either way).
            if matches!(kind, Kind::Exclusive) {
                tokio::time::sleep(Duration::from_millis(300)).await;
            } else {
                assert_eq!(wait_children(&admin, &path, 2, SOON).await.len(), 2);
            }
            expire_session(server.addr(), id, pw)
                .await
                .expect("expire the waiter's session");
            let result = timeout(SOON, task)
                .await
                .unwrap_or_else(|_| panic!("{kind:?}/{how:?}: waiter hung"))
                .unwrap();
            assert!(
                matches!(
                    result,
                    Err(zk_recipes::Error::LockLost(LossReason::SessionEnded))
                ),
                "{kind:?}/{how:?}: {result:?}"
            );
            blocker.release().await.unwrap();
        }
    }
}

/// An acquisition on a client that is already closed or expired is told
/// `LockLost(SessionEnded)`, never the client's `Closed` or `SessionExpired`.
#[tokio::test]
async fn acquire_on_an_ended_session_gets_lock_lost() {
    let TestRoot { server, hosts, .. } = test_root("ended_acquire").await;
    let closed = connect(&hosts).await;
    closed.close().await.expect("close");
    let expired = connect(&hosts).await;
    expire_session(server.addr(), expired.session_id(), passwd(&expired))
        .await
        .expect("expire");
    timeout(
        SOON,
        expired.watch().wait_for(|s| s == SessionState::Expired),
    )
    .await
    .expect("the client learns of the expiry");
    for client in [closed, expired] {
        for kind in KINDS {
            for how in [How::Acquire, How::Timeout, How::Try] {
                let result = timeout(SOON, acquire_as(kind, how, client.clone(), "/locks/x"))
                    .await
                    .unwrap_or_else(|_| panic!("{kind:?}/{how:?}: hung"));
                assert!(
                    matches!(
                        result,
                        Err(zk_recipes::Error::LockLost(LossReason::SessionEnded))
                    ),
                    "{:?} {kind:?}/{how:?}: {result:?}",
                    client.state()
                );
            }
        }
    }
}

/// `release` says what happened to the node: we deleted it, someone else had (observed or
/// not), or the session had ended and the node went with it; inner re-entries say how many
/// guards still hold it.
#[tokio::test]
async fn release_says_whether_it_deleted_the_node() {
    let TestRoot { server, hosts, .. } = test_root("release_outcome").await;
    let admin = connect(&hosts).await;
    let client = connect(&hosts).await;
    let lock = FairLock::new(client.clone(), "/locks/r").unwrap();

    // Deleted by us, after the re-entries are released.
    let g = lock.acquire().await.unwrap();
    let inner = g.reenter();
    let inner2 = g.reenter();
    assert_eq!(
        inner.release().await.unwrap(),
        Released::StillHeld { remaining: 2 }
    );
    assert_eq!(
        inner2.release().await.unwrap(),
        Released::StillHeld { remaining: 1 }
    );
    assert_eq!(g.release().await.unwrap(), Released::Deleted);
    assert!(children(&admin, "/locks/r").await.is_empty());

    // A release dropped after its first poll still deletes the node and frees the local slot.
    let g = lock.acquire().await.unwrap();
    let _ = timeout(Duration::ZERO, g.release()).await;
    assert!(wait_children(&admin, "/locks/r", 0, SOON).await.is_empty());
    let g = lock.acquire_timeout(SOON).await.expect("local slot freed");
    assert_eq!(g.release().await.unwrap(), Released::Deleted);

    // Deleted by someone else: unobserved, then observed by the guard's monitor.
    for observed in [false, true] {
        let g = lock.acquire().await.unwrap();
        if observed {
            assert_eq!(g.state(), LockState::Held);
        }
        admin.delete(g.path(), None).await.unwrap();
        if observed {
            assert_eq!(
                timeout(SOON, g.lost()).await.expect("loss signalled"),
                LossReason::NodeDeleted
            );
        }
        assert_eq!(
            g.release().await.unwrap(),
            Released::AlreadyGone(LossReason::NodeDeleted),
            "observed: {observed}"
        );
    }

    // The session ended: expired, or closed by us.
    for expire in [true, false] {
        let client = connect(&hosts).await;
        let g = FairLock::new(client.clone(), "/locks/r")
            .unwrap()
            .acquire()
            .await
            .unwrap();
        if expire {
            expire_session(server.addr(), client.session_id(), passwd(&client))
                .await
                .expect("expire");
            timeout(
                SOON,
                client.watch().wait_for(|s| s == SessionState::Expired),
            )
            .await
            .expect("the client learns of the expiry");
        } else {
            client.close().await.expect("close");
        }
        assert_eq!(
            timeout(SOON, g.release())
                .await
                .expect("release hung")
                .unwrap(),
            Released::AlreadyGone(LossReason::SessionEnded),
            "expired: {expire}"
        );
    }
    assert!(wait_children(&admin, "/locks/r", 0, SOON).await.is_empty());
}

/// Cuts the client's connection through `proxy` and waits (bounded) until the client has
/// connected again, on the same session.
async fn blip(proxy: &Proxy, client: &Client) {
    let epoch = client.connection_epoch();
    let session = client.session_id();
    proxy.cut(integration_tests::proxy::Cut::Reset);
    let end = Instant::now() + SOON;
    while client.connection_epoch() == epoch || client.state() != SessionState::Connected {
        assert!(Instant::now() < end, "the client never reconnected");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(client.session_id(), session, "same session");
}

/// A guard nobody observed during a short disconnection must not report `Held` right after
/// the reconnect: nothing has looked at the node since the connection dropped. It reports
/// `Suspended` until its monitor has seen the node again, then `Held`.
///
/// The default (current-thread) runtime makes the first `state()` deterministic: the monitor
/// it starts cannot run before the call returns.
#[tokio::test]
async fn state_after_a_reconnect_is_not_held_before_the_node_is_confirmed() {
    let TestRoot { server, root, .. } = test_root("reconfirm").await;
    let proxy = Proxy::start(server.addr()).await;
    let client = connect(&format!("{}{root}", proxy.connect_string())).await;
    let guard = FairLock::new(client.clone(), "/locks/rc")
        .unwrap()
        .acquire()
        .await
        .unwrap();

    blip(&proxy, &client).await;
    assert_eq!(
        guard.state(),
        LockState::Suspended,
        "Held although the connection dropped since the node was last seen"
    );
    assert_eq!(
        wait_lock_state(&guard, |s| s == LockState::Held).await,
        LockState::Held,
        "the monitor confirms the node again"
    );
    assert_eq!(guard.state(), LockState::Held);
    guard.release().await.unwrap();
}

/// A short disconnection (the client reconnects at once) is reported by the transitions
/// stream as `Suspended` then `Held`, every time, even when it is over before anyone looks;
/// a deletion of the node then ends the stream with `Lost`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transitions_report_every_short_disconnection() {
    use futures_util::StreamExt;

    let TestRoot { server, root, .. } = test_root("transitions").await;
    let admin = connect(&server.hosts(&root)).await;
    let proxy = Proxy::start(server.addr()).await;
    let client = connect(&format!("{}{root}", proxy.connect_string())).await;
    let guard = FairLock::new(client.clone(), "/locks/tr")
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let mut transitions = guard.watch();
    assert_eq!(transitions.last(), LockState::Held);

    for round in 0..3 {
        // The client is back before the stream is read: the suspension is still there.
        blip(&proxy, &client).await;
        for expected in [LockState::Suspended, LockState::Held] {
            let seen = timeout(SOON, transitions.changed())
                .await
                .unwrap_or_else(|_| panic!("round {round}: no transition"));
            assert_eq!(seen, expected, "round {round}");
        }
        assert_eq!(guard.state(), LockState::Held, "round {round}");
    }

    // The same items as a Stream, ending after Lost.
    admin.delete(guard.path(), None).await.unwrap();
    let rest: Vec<LockState> = timeout(SOON, transitions.collect())
        .await
        .expect("the stream ends after the loss");
    assert_eq!(rest, vec![LockState::Lost(LossReason::NodeDeleted)]);
    assert_eq!(
        guard.release().await.unwrap(),
        Released::AlreadyGone(LossReason::NodeDeleted)
    );
}
