//! [`Background`]: the lifecycle of a recipe's background task, written once.

use std::future::Future;
use std::sync::{Mutex, PoisonError};

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A spawned task with its stop token: [`close`](Self::close) asks it to end and waits,
/// and dropping the handle asks (the task then ends
/// in the background, doing its own clean-up, say deleting a node).
#[derive(Debug)]
pub(crate) struct Background {
    stop: CancellationToken,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl Background {
    /// Spawns `task(stop)`; must be called within a tokio runtime.
    pub(crate) fn spawn<F>(task: impl FnOnce(CancellationToken) -> F) -> Background
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let stop = CancellationToken::new();
        let handle = tokio::spawn(task(stop.clone()));
        Background {
            stop,
            task: Mutex::new(Some(handle)),
        }
    }

    /// Whether the task was asked to end (close, or drop).
    pub(crate) fn is_stopped(&self) -> bool {
        self.stop.is_cancelled()
    }

    /// Asks the task to end and waits until it has (at once for a second caller: the first
    /// one waits).
    ///
    /// # Cancel safety
    ///
    /// The task is asked to end as soon as this is called; dropping the future only stops
    /// the wait.
    pub(crate) async fn close(&self) {
        self.stop.cancel();
        let task = self
            .task
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    #[tokio::test]
    async fn close_stops_the_task_and_waits_for_its_clean_up() {
        let cleaned = Arc::new(AtomicBool::new(false));
        let flag = cleaned.clone();
        let task = Background::spawn(|stop| async move {
            stop.cancelled().await;
            tokio::task::yield_now().await;
            flag.store(true, Ordering::SeqCst);
        });
        assert!(!task.is_stopped());
        task.close().await;
        assert!(task.is_stopped());
        assert!(cleaned.load(Ordering::SeqCst));
        // A second close returns at once.
        task.close().await;
    }

    #[tokio::test]
    async fn dropping_the_handle_stops_the_task() {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let task = Background::spawn(|stop| async move {
            stop.cancelled().await;
            let _ = tx.send(());
        });
        drop(task);
        tokio::time::timeout(std::time::Duration::from_secs(5), rx)
            .await
            .expect("the task ended")
            .expect("it said so");
    }
}
