//! The queue kernel's cleanup: the guaranteed delete, work that must finish after its caller
//! is gone, and the one drop guard that starts it.

use std::future::Future;
use std::pin::Pin;

use tokio::task::JoinHandle;
use tracing::{debug, warn};
use zk_client::Client;

use super::create::Protected;
use super::delete::delete_guaranteed;

/// Work a drop guard hands to the background.
pub(crate) type BoxTask = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// Spawns `task` on the current tokio runtime; gives it back when there is none (a drop
/// outside any runtime), so the caller can run it inline or give up knowingly.
pub(crate) fn in_background<F>(task: F) -> std::result::Result<JoinHandle<F::Output>, F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => Ok(handle.spawn(task)),
        Err(_) => Err(task),
    }
}

/// Runs `task` as a task of its own and waits for it: dropping the caller's future then only
/// loses the outcome (`None`, also when the runtime shut down), never half of the work.
/// Without a runtime it runs inline.
pub(crate) async fn detached<F>(task: F) -> Option<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    match in_background(task) {
        Ok(handle) => handle.await.ok(),
        Err(task) => Some(task.await),
    }
}

/// A cleanup that runs in the background when dropped while armed: how an abandoned
/// acquisition (error, timeout, or its future dropped) removes what it may have created.
/// `S` is what the cleanup needs, updated as the attempt learns more (say, its node's name).
pub(crate) struct OnDrop<S: Send + 'static> {
    state: Option<S>,
    run: fn(S) -> BoxTask,
    what: &'static str,
}

impl<S: Send + 'static> OnDrop<S> {
    /// Armed with `state`; `run` makes the cleanup task; `what` names it in logs.
    pub(crate) fn new(state: S, run: fn(S) -> BoxTask, what: &'static str) -> OnDrop<S> {
        OnDrop {
            state: Some(state),
            run,
            what,
        }
    }

    /// The state, while armed.
    pub(crate) fn state_mut(&mut self) -> Option<&mut S> {
        self.state.as_mut()
    }

    /// Disarms the guard and returns its state (`None` if already disarmed).
    pub(crate) fn disarm(&mut self) -> Option<S> {
        self.state.take()
    }
}

impl<S: Send + 'static> Drop for OnDrop<S> {
    fn drop(&mut self) {
        let Some(state) = self.state.take() else {
            return;
        };
        if in_background((self.run)(state)).is_err() {
            warn!(
                what = self.what,
                "no tokio runtime for a background cleanup; the node lives until the session ends"
            );
        }
    }
}

/// A node of ours that an abandoned attempt may have created: known by `node`, or only by
/// the guid in its protected name when the create's reply never came.
pub(crate) struct Orphan {
    pub(crate) client: Client,
    pub(crate) nodes: Protected,
    pub(crate) node: Option<String>,
}

impl Orphan {
    /// A drop guard that removes this orphan unless disarmed.
    pub(crate) fn guard(self) -> OnDrop<Orphan> {
        OnDrop::new(self, |o| Box::pin(o.remove()), "abandoned node")
    }

    /// Deletes the node (every node of the guid, unless the name is known), through
    /// reconnects. Requests are ordered at call time, so the listing runs after any create
    /// the attempt had sent.
    pub(crate) async fn remove(self) {
        let Orphan {
            client,
            nodes,
            node,
        } = self;
        let result = match node {
            Some(name) => delete_guaranteed(&client, &nodes.path_of(&name), None)
                .await
                .map(|_| ()),
            None => nodes.delete_all(&client).await.map(|_| ()),
        };
        match result {
            Ok(()) => debug!(base = %nodes.base, "removed abandoned node"),
            Err(e) => warn!(base = %nodes.base, error = %e, "could not remove an abandoned node"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::oneshot;

    fn signal(tx: oneshot::Sender<()>) -> BoxTask {
        Box::pin(async move {
            let _ = tx.send(());
        })
    }

    #[tokio::test]
    async fn an_armed_guard_runs_its_cleanup_when_dropped() {
        let (tx, rx) = oneshot::channel();
        drop(OnDrop::new(tx, signal, "test"));
        assert!(rx.await.is_ok(), "the cleanup ran");
    }

    #[tokio::test]
    async fn a_disarmed_guard_runs_nothing_and_gives_its_state_back() {
        let (tx, rx) = oneshot::channel();
        let mut guard = OnDrop::new(tx, signal, "test");
        assert!(guard.state_mut().is_some());
        let state = guard.disarm();
        assert!(guard.disarm().is_none() && guard.state_mut().is_none());
        drop(guard);
        drop(state); // the sender goes without sending
        assert!(rx.await.is_err(), "the cleanup must not run");
    }

    #[test]
    fn without_a_runtime_the_task_comes_back() {
        assert!(in_background(async { 1 }).is_err());
        // And a dropped guard only logs.
        let (tx, _rx) = oneshot::channel();
        drop(OnDrop::new(tx, signal, "test"));
    }

    #[tokio::test]
    async fn detached_work_finishes_when_its_caller_is_dropped() {
        let (tx, rx) = oneshot::channel();
        let caller = detached(async move {
            tokio::task::yield_now().await;
            let _ = tx.send(());
        });
        // Polled once (so the task is spawned), then dropped.
        let _ = tokio::time::timeout(std::time::Duration::ZERO, caller).await;
        assert!(rx.await.is_ok(), "the detached work ran to its end");
    }
}
