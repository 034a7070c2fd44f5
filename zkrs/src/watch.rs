//! `zkrs watch`: events on a node or subtree as they come (a persistent watch).

use serde::Serialize;
use tokio::time::Instant;
use zk_client::{AddWatchMode, Error as ZkError, PersistentWatcher};

use crate::cli::{Bound, WatchArgs};
use crate::connect::Session;
use crate::error::CliError;
use crate::output::Output;

/// Runs `watch` until `--count` events or `--timeout`, whichever first.
pub(crate) async fn run(session: &Session, out: &Output, args: WatchArgs) -> Result<(), CliError> {
    let mode = if args.recursive {
        AddWatchMode::PersistentRecursive
    } else {
        AddWatchMode::Persistent
    };
    let what = format!("watch {}", args.path);
    let mut watcher = session
        .client
        .add_watch(&args.path, mode)
        .await
        .map_err(|e| CliError::zk(what.clone(), e))?;
    // On stderr so scripts (and tests) know changes from now on are seen.
    eprintln!("watching {}", args.path);
    let mut seen = 0;
    let deadline = Deadline::new(&args.bound);
    while args.bound.count.is_none_or(|n| seen < n) {
        let Some(next) = deadline.run(next_event(&mut watcher)).await else {
            break;
        };
        match next {
            Ok(event) => {
                seen += 1;
                let kind = format!("{:?}", event.event_type);
                let line = EventLine {
                    event: &kind,
                    path: &event.path,
                };
                out.emit(&line, || format!("{kind} {}", event.path));
            }
            Err(ZkError::Lagged { missed }) => {
                eprintln!("zkrs: {missed} events were dropped (output too slow)");
            }
            Err(e) => return Err(CliError::zk(what, e)),
        }
    }
    Ok(())
}

async fn next_event(watcher: &mut PersistentWatcher) -> zk_client::Result<zk_client::WatchedEvent> {
    watcher.next().await
}

/// One event of `watch --json`.
#[derive(Serialize)]
struct EventLine<'a> {
    event: &'a str,
    path: &'a str,
}

/// The `--timeout` of a streaming command.
pub(crate) struct Deadline(Option<Instant>);

impl Deadline {
    pub(crate) fn new(bound: &Bound) -> Self {
        Deadline(bound.timeout.map(|t| Instant::now() + t))
    }

    /// Runs `fut` until the deadline; `None` when the deadline came first.
    pub(crate) async fn run<T>(&self, fut: impl std::future::Future<Output = T>) -> Option<T> {
        match self.0 {
            Some(at) => tokio::time::timeout_at(at, fut).await.ok(),
            None => Some(fut.await),
        }
    }
}
