//! `HandOff::Prepared` through the kernel's faults, on the scripted fake tree: our lock queued
//! behind two nodes of another session (node 0 holds, node 1 waits), so it watches both (the
//! nearest, node 1, and the second, node 0), lists the queue again when node 0 goes, and
//! takes the lock on node 1's release with no listing. The faults: a loss on the second
//! watch's read, a loss on the listing after the second node goes, a node ahead released
//! while we are disconnected, the session's expiry while prepared, a revocation request on
//! either watched node, our own node deleted after our last listing, and a storm of
//! `acquire_timeout` give-ups. Every planned fault must fire; there is exactly one holder (the
//! other session's or ours) or none.
//!
//! Request order of one prepared waiter: create and the first listing (`GetChildren` #0),
//! the watch on the nearest (`GetData` #0) and on the second (`GetData` #1), the listing when
//! the second goes (`GetChildren` #1), then the hand-off.

use super::*;
use zk_recipes::lock::{HandOff, Released};
use zk_recipes::{Error, LossReason};

const NAME: &str = "_c_00000000-0000-0000-0000-000000000000-lock-";

/// A fake tree whose `/lock` holds `ahead` nodes of another session, then a session manager
/// on it with `plans`, and our lock there with `hand_off`.
async fn queue_behind(
    ahead: usize,
    hand_off: HandOff,
    plans: Vec<Plan>,
) -> (
    SessionManager,
    Arc<Mutex<Tree>>,
    tokio::task::JoinHandle<()>,
    FairLock,
) {
    let mut tree = Tree::with(&["/lock"]);
    for _ in 0..ahead {
        tree.foreign("/lock", NAME);
    }
    let (manager, tree, served) = manager_on_tree(tree, plans).await;
    let lock = FairLock::new(manager.client(), "/lock")
        .unwrap()
        .with_hand_off(hand_off);
    (manager, tree, served, lock)
}

/// Listings of the queue the tree answered (both op codes a listing may use).
fn listings(tree: &Tree) -> usize {
    tree.requests(OpCode::GetChildren) + tree.requests(OpCode::GetChildren2)
}

/// What an acquisition cost, seen by the tree.
#[derive(Debug)]
struct Cost {
    listings: usize,
    watches: usize,
}

/// A prepared acquisition behind two nodes of another session through `plans`, which release
/// both: when it holds, ours is the only node in the queue (one holder); nothing of ours is
/// left after the release; every planned fault fired.
async fn held_through(plans: Vec<Plan>) -> Cost {
    let what = format!("Prepared through {plans:?}");
    let planned = plans.len();
    let (manager, tree, served, lock) = queue_behind(2, HandOff::Prepared, plans).await;
    let guard = lock.acquire_timeout(LIMIT).await;
    let queue = tree.lock().unwrap().children("/lock").unwrap();
    let guard = guard.unwrap_or_else(|e| panic!("{what}: acquire: {e} (queue {queue:?})"));
    assert_eq!(
        queue,
        vec![guard.node_name().to_owned()],
        "{what}: we hold, alone in the queue"
    );
    assert_eq!(tree.lock().unwrap().ours("/lock").len(), 1, "{what}");
    let cost = {
        let tree = tree.lock().unwrap();
        Cost {
            listings: listings(&tree),
            watches: tree.requests(OpCode::GetData),
        }
    };
    let released = within("release", guard.release()).await.unwrap();
    assert_eq!(released, Released::Deleted, "{what}");
    {
        let tree = tree.lock().unwrap();
        assert!(
            tree.ours("/lock").is_empty(),
            "{what}: nothing of ours left"
        );
        assert_eq!(tree.faults, planned, "{what}: every planned fault happened");
    }
    let _ = within("manager close", manager.close()).await;
    within("server", served).await.unwrap();
    cost
}

#[tokio::test]
async fn prepared_no_fault_hands_over_with_no_listing() {
    // Node 0 goes once both watches are set; node 1 once we listed again.
    let cost = held_through(vec![
        plan(OpCode::GetData, 1, Fault::ReleaseAfter(0)),
        plan(OpCode::GetChildren, 1, Fault::ReleaseAfter(1)),
    ])
    .await;
    // The first listing, the one when the second goes, none on the hand-off.
    assert_eq!(cost.listings, 2, "{cost:?}");
    assert_eq!(cost.watches, 2, "{cost:?}");
}

#[tokio::test]
async fn prepared_loss_on_the_second_watchs_read() {
    for fault in [Fault::LoseRequest, Fault::LoseReply] {
        // The watch on node 0 is lost with the connection: look again, watch both again
        // (GetData #2 and #3), then as without the fault.
        held_through(vec![
            plan(OpCode::GetData, 1, fault),
            plan(OpCode::GetData, 3, Fault::ReleaseAfter(0)),
            plan(OpCode::GetChildren, 2, Fault::ReleaseAfter(1)),
        ])
        .await;
    }
}

#[tokio::test]
async fn prepared_loss_on_the_listing_after_the_second_node_goes() {
    for fault in [Fault::LoseRequest, Fault::LoseReply] {
        held_through(vec![
            plan(OpCode::GetData, 1, Fault::ReleaseAfter(0)),
            plan(OpCode::GetChildren, 1, fault),
            plan(OpCode::GetChildren, 2, Fault::ReleaseAfter(1)),
        ])
        .await;
    }
}

#[tokio::test]
async fn prepared_nearest_released_while_disconnected_hands_over() {
    // We listed again and wait for node 1 alone; the connection goes, node 1 is released
    // meanwhile: the reconnect's SetWatches tells us, and we hold.
    held_through(vec![
        plan(OpCode::GetData, 1, Fault::ReleaseAfter(0)),
        plan(OpCode::GetChildren, 1, Fault::ReleaseWhileDisconnected(1)),
    ])
    .await;
}

#[tokio::test]
async fn prepared_second_released_while_disconnected_lists_again() {
    // Both watches are set; the connection goes and node 0 (the holder) is released
    // meanwhile: the reconnect's SetWatches tells us, we list again, and node 1's release
    // hands over.
    held_through(vec![
        plan(OpCode::GetData, 1, Fault::ReleaseWhileDisconnected(0)),
        plan(OpCode::GetChildren, 1, Fault::ReleaseAfter(1)),
    ])
    .await;
}

#[tokio::test]
async fn prepared_revocation_on_the_nearest_while_watching_both() {
    // Someone asks node 1's owner to let go (`__REVOKE__`): our watch on it fires; we look
    // again and watch both again (GetData #2, #3), then as without the fault.
    held_through(vec![
        plan(OpCode::GetData, 1, Fault::RevokeAfter(1)),
        plan(OpCode::GetData, 3, Fault::ReleaseAfter(0)),
        plan(OpCode::GetChildren, 2, Fault::ReleaseAfter(1)),
    ])
    .await;
}

#[tokio::test]
async fn prepared_revocation_on_the_second_while_watching_both() {
    held_through(vec![
        plan(OpCode::GetData, 1, Fault::RevokeAfter(0)),
        plan(OpCode::GetData, 3, Fault::ReleaseAfter(0)),
        plan(OpCode::GetChildren, 2, Fault::ReleaseAfter(1)),
    ])
    .await;
}

#[tokio::test]
async fn prepared_revocation_on_the_nearest_after_listing_again() {
    // Node 0 went, we listed again and kept our watch on node 1; a revocation request on
    // node 1 fires it: we list again (GetChildren #2), watch node 1 again (GetData #2), and
    // its release hands over.
    held_through(vec![
        plan(OpCode::GetData, 1, Fault::ReleaseAfter(0)),
        plan(OpCode::GetChildren, 1, Fault::RevokeAfter(1)),
        plan(OpCode::GetData, 2, Fault::ReleaseAfter(1)),
    ])
    .await;
}

/// A prepared acquisition behind two nodes of another session whose session expires at
/// `plans`' last fault: it ends with `LockLost(SessionEnded)`, nothing of ours is left, and
/// node 1 (and node 0, unless released) still holds or waits: one holder or none.
async fn expires_through(plans: Vec<Plan>) {
    let what = format!("Prepared through {plans:?}");
    let planned = plans.len();
    let (manager, tree, served, lock) = queue_behind(2, HandOff::Prepared, plans).await;
    let result = lock.acquire_timeout(LIMIT).await.map(drop);
    assert!(
        matches!(result, Err(Error::LockLost(LossReason::SessionEnded))),
        "{what}: {result:?}"
    );
    {
        let tree = tree.lock().unwrap();
        assert!(tree.ours("/lock").is_empty(), "{what}: nothing of ours");
        let foreigner = tree.foreigners[1].clone();
        assert!(tree.nodes.contains_key(&foreigner), "{what}: node 1 stays");
        assert_eq!(tree.faults, planned, "{what}: every planned fault happened");
    }
    next_session(&tree).await;
    let _ = within("manager close", manager.close()).await;
    within("server", served).await.unwrap();
}

#[tokio::test]
async fn prepared_expiry_while_watching_both() {
    expires_through(vec![plan(OpCode::GetData, 1, Fault::Expire)]).await;
}

#[tokio::test]
async fn prepared_expiry_on_the_listing_after_the_second_node_goes() {
    expires_through(vec![
        plan(OpCode::GetData, 1, Fault::ReleaseAfter(0)),
        plan(OpCode::GetChildren, 1, Fault::Expire),
    ])
    .await;
}

/// Our node is deleted by someone else after our last listing, and then the node we wait for
/// is released: the hand-off needs no listing, so `acquire` returns a guard (as `HandOff`'s
/// docs say), and that guard reports `Lost(NodeDeleted)` once observed; its release finds
/// the node gone. Nothing of ours is left; the other session's nodes are all gone, so nobody
/// else holds.
async fn deleted_after_the_last_listing(ahead: usize, hand_off: HandOff, plans: Vec<Plan>) {
    let what = format!("{hand_off:?} through {plans:?}");
    let planned = plans.len();
    let (manager, tree, served, lock) = queue_behind(ahead, hand_off, plans).await;
    let guard = lock
        .acquire_timeout(LIMIT)
        .await
        .unwrap_or_else(|e| panic!("{what}: acquire: {e}"));
    assert_eq!(
        within("lost", guard.lost()).await,
        LossReason::NodeDeleted,
        "{what}"
    );
    assert_eq!(
        guard.state(),
        zk_recipes::lock::LockState::Lost(LossReason::NodeDeleted),
        "{what}"
    );
    let released = within("release", guard.release()).await.unwrap();
    assert_eq!(
        released,
        Released::AlreadyGone(LossReason::NodeDeleted),
        "{what}"
    );
    {
        let tree = tree.lock().unwrap();
        assert_eq!(
            tree.children("/lock").unwrap(),
            Vec::<String>::new(),
            "{what}"
        );
        assert_eq!(tree.faults, planned, "{what}: every planned fault happened");
    }
    let _ = within("manager close", manager.close()).await;
    within("server", served).await.unwrap();
}

#[tokio::test]
async fn prepared_own_node_deleted_after_the_last_listing_is_reported_by_the_guard() {
    deleted_after_the_last_listing(
        2,
        HandOff::Prepared,
        vec![
            plan(OpCode::GetData, 1, Fault::ReleaseAfter(0)),
            plan(OpCode::GetChildren, 1, Fault::DeleteOursThenRelease(1)),
        ],
    )
    .await;
}

#[tokio::test]
async fn lean_own_node_deleted_behind_the_only_blocker_is_reported_by_the_guard() {
    // The default, behind the holder alone: the first listing is the last one too.
    deleted_after_the_last_listing(
        1,
        HandOff::Lean,
        vec![plan(OpCode::GetData, 0, Fault::DeleteOursThenRelease(0))],
    )
    .await;
}

/// Whether `name` is still in the tree's `/lock`.
fn queued(tree: &Mutex<Tree>, name: &str) -> bool {
    tree.lock()
        .unwrap()
        .children("/lock")
        .unwrap_or_default()
        .iter()
        .any(|n| n == name)
}

/// Waits (bounded) until the tree's counts have not changed for 200 ms; returns
/// (listings, notifications).
async fn settled(tree: &Mutex<Tree>) -> (usize, usize) {
    let counts = || {
        let tree = tree.lock().unwrap();
        (listings(&tree), tree.notified)
    };
    let mut last = counts();
    let mut same = 0;
    for _ in 0..LIMIT.as_millis() / 50 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let now = counts();
        same = if now == last { same + 1 } else { 0 };
        last = now;
        if same >= 4 {
            return last;
        }
    }
    panic!("the tree kept answering for {LIMIT:?}");
}

#[tokio::test]
async fn a_storm_of_prepared_give_ups_costs_at_most_two_wakeups_each() {
    // Behind a holder of another session, 6 prepared waiters (lock instances on one
    // session) give up one by one, out of queue order: each give-up deletes a node watched
    // by at most the waiter behind it (its nearest) and the one behind that (its second), so
    // it may cost at most 2 listings, and the server at most 2 notifications (one session:
    // one per watched path here).
    const WAITERS: usize = 6;
    const ORDER: [usize; WAITERS] = [2, 0, 4, 1, 5, 3];
    const GAP: Duration = Duration::from_millis(400);
    let (manager, tree, served, lock) = queue_behind(1, HandOff::Prepared, vec![]).await;
    let start = tokio::time::Instant::now() + Duration::from_secs(2);
    let mut tasks = Vec::new();
    let mut names = Vec::new();
    for i in 0..WAITERS {
        let before = tree.lock().unwrap().ours("/lock");
        let rank = ORDER.iter().position(|r| *r == i).unwrap();
        let gives_up_at = start + GAP * u32::try_from(rank + 1).unwrap();
        let lock = lock.with_hand_off(HandOff::Prepared);
        tasks.push(tokio::spawn(async move {
            lock.acquire_timeout(gives_up_at - tokio::time::Instant::now())
                .await
                .map(drop)
        }));
        // One at a time, so the queue order is the index order.
        let mut name = None;
        for _ in 0..LIMIT.as_millis() / 10 {
            let now = tree.lock().unwrap().ours("/lock");
            if let Some(new) = now.into_iter().find(|n| !before.contains(n)) {
                name = Some(new);
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        names.push(name.unwrap_or_else(|| panic!("waiter {i} never queued")));
    }
    assert!(
        tokio::time::Instant::now() < start,
        "the waiters took too long to queue"
    );
    let first = settled(&tree).await;
    // Each window ends once more of our nodes are gone and the counts settled. On a loaded
    // machine two give-ups may share a window, so the bound is checked on the running totals
    // (a give-up's delete comes before what it causes, and every node gone by then counts).
    let gone = || names.iter().filter(|n| !queued(&tree, n.as_str())).count();
    let mut so_far = 0;
    let mut windows = Vec::new();
    for _ in 0..LIMIT.as_millis() / 10 {
        if so_far == WAITERS {
            break;
        }
        if gone() == so_far {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        }
        let now = settled(&tree).await;
        so_far = gone();
        let (listed, notified) = (now.0 - first.0, now.1 - first.1);
        windows.push((so_far, listed, notified));
        assert!(
            listed <= 2 * so_far && notified <= 2 * so_far,
            "{so_far} give-ups cost {listed} listings and {notified} notifications: {windows:?}"
        );
    }
    println!("give-ups so far, listings and notifications so far: {windows:?}");
    assert_eq!(so_far, WAITERS, "every waiter gave up: {windows:?}");
    for (i, task) in tasks.into_iter().enumerate() {
        let result = within("give-up", task).await.unwrap();
        assert!(
            matches!(result, Err(Error::Timeout)),
            "waiter {i}: {result:?}"
        );
    }
    // The give-ups did wake waiters (all but the last in the queue have one behind them):
    // the counts above measured something.
    let total = windows.last().copied().unwrap_or_default();
    assert!(total.1 >= WAITERS - 1, "give-ups woke nobody: {windows:?}");
    {
        let tree = tree.lock().unwrap();
        assert!(tree.ours("/lock").is_empty(), "nothing of ours is left");
        assert_eq!(tree.children("/lock").unwrap().len(), 1, "the holder holds");
    }
    let _ = within("manager close", manager.close()).await;
    within("server", served).await.unwrap();
}
