//! `zkrs locks` (the queue of a lock, latch or semaphore) and `zkrs revoke`.

mod queue;
mod render;

use std::io::IsTerminal;

use zk_client::{AddWatchMode, Error as ZkError};

use crate::cli::LocksArgs;
use crate::connect::Session;
use crate::error::CliError;
use crate::nodes::child_path;
use crate::output::Output;
use crate::time::now_millis;
use crate::watch::Deadline;

use queue::{analyse, Node, Report};

/// Quiet time that ends a burst of changes before a redraw.
const SETTLE: std::time::Duration = std::time::Duration::from_millis(20);
/// Most events folded into one redraw.
const BURST: usize = 100;

/// Children of a Curator semaphore path (`InterProcessSemaphoreV2`).
const SEMAPHORE_PARTS: [&str; 2] = ["locks", "leases"];

/// Shows the queue once, or redraws it on every change with `--watch`.
pub(crate) async fn run(session: &Session, out: &Output, args: LocksArgs) -> Result<(), CliError> {
    if !args.watch {
        let reports = read(session, &args.path).await?;
        show(out, &reports, false);
        return Ok(());
    }
    let what = format!("locks --watch {}", args.path);
    let mut watcher = session
        .client
        .add_watch(&args.path, AddWatchMode::PersistentRecursive)
        .await
        .map_err(|e| CliError::zk(what.clone(), e))?;
    let deadline = Deadline::new(&args.bound);
    let clear = !out.json() && std::io::stdout().is_terminal();
    let mut redraws = 0;
    loop {
        // Read after the watch is set, so no change between the read and the wait is missed.
        match read(session, &args.path).await {
            Ok(reports) => show(out, &reports, clear),
            Err(CliError::Zk {
                source: ZkError::NoNode,
                ..
            }) => show(out, &[empty(&args.path)], clear),
            Err(e) => return Err(e),
        }
        if args.bound.count.is_some_and(|n| redraws >= n) {
            return Ok(());
        }
        let Some(event) = deadline.run(watcher.next()).await else {
            return Ok(());
        };
        match event {
            Ok(_) | Err(ZkError::Lagged { .. }) => {}
            Err(e) => return Err(CliError::zk(what, e)),
        }
        // Let a burst of changes (a hand-off is a delete and a wake-up) settle into one
        // redraw: take what arrives within 20 ms of the last event, at most BURST events.
        for _ in 0..BURST {
            let settle = tokio::time::timeout(SETTLE, watcher.next());
            if !matches!(deadline.run(settle).await, Some(Ok(Ok(_)))) {
                break;
            }
        }
        redraws += 1;
    }
}

/// The queue at `path`; for a Curator semaphore, its `locks` and `leases` queues.
async fn read(session: &Session, path: &str) -> Result<Vec<Report>, CliError> {
    let children = session
        .client
        .get_children(path)
        .await
        .map_err(|e| CliError::zk(format!("locks {path}"), e))?;
    if SEMAPHORE_PARTS
        .iter()
        .all(|p| children.iter().any(|c| c == p))
    {
        let mut reports = Vec::new();
        for part in SEMAPHORE_PARTS {
            let sub = child_path(path, part);
            reports.push(read_queue(session, &sub).await?);
        }
        return Ok(reports);
    }
    read_queue(session, path).await.map(|r| vec![r])
}

/// Reads every child's data and stat (pipelined) and analyses the queue.
async fn read_queue(session: &Session, path: &str) -> Result<Report, CliError> {
    let client = &session.client;
    let names = match client.get_children(path).await {
        Ok(names) => names,
        Err(ZkError::NoNode) => Vec::new(),
        Err(e) => return Err(CliError::zk(format!("locks {path}"), e)),
    };
    // Requests are ordered when made, so making them all before awaiting pipelines them.
    let reads: Vec<_> = names
        .iter()
        .map(|n| client.get_data(&child_path(path, n)))
        .collect();
    let mut nodes = Vec::with_capacity(names.len());
    for (name, read) in names.into_iter().zip(reads) {
        match read.await {
            Ok((data, stat)) => nodes.push(Node {
                name,
                data: data.to_vec(),
                ctime: stat.ctime,
                ephemeral_owner: stat.ephemeral_owner,
            }),
            // Left the queue between the listing and the read.
            Err(ZkError::NoNode) => {}
            Err(e) => return Err(CliError::zk(format!("locks {path}: read {name}"), e)),
        }
    }
    Ok(analyse(path, nodes, now_millis()))
}

fn empty(path: &str) -> Report {
    analyse(path, Vec::new(), now_millis())
}

fn show(out: &Output, reports: &[Report], clear: bool) {
    if clear {
        // ANSI: clear the screen, cursor home.
        print!("\x1b[2J\x1b[H");
    }
    match reports {
        [one] => out.emit(one, || render::table(one)),
        many => out.emit(&many, || {
            many.iter()
                .map(render::table)
                .collect::<Vec<_>>()
                .join("\n\n")
        }),
    }
}

/// `zkrs revoke NODE`: writes `__REVOKE__` into the node, as Curator's `Revoker` does. The
/// holder decides whether to let go (only locks made revocable listen).
pub(crate) async fn revoke(session: &Session, out: &Output, node: &str) -> Result<(), CliError> {
    let what = || format!("revoke {node}");
    match zk_recipes::lock::revoke(&session.client, node).await {
        Ok(true) => {}
        Ok(false) => return Err(CliError::zk(what(), ZkError::NoNode)),
        Err(zk_recipes::Error::Client(e)) => return Err(CliError::zk(what(), e)),
        Err(e) => return Err(CliError::Other(format!("{}: {e}", what()))),
    }
    out.emit(&serde_json::json!({ "revoke_requested": node }), || {
        format!("asked the holder of {node} to release it (cooperative: the holder decides)")
    });
    Ok(())
}
