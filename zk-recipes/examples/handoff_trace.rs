//! Traces one hand-off of a fair lock after the queue sat idle: the holder's release, the
//! delete on the wire, the waiter's notification coming in, and the waiter's `acquire`
//! returning, each with its time since start (client-side events at trace level).
//!
//! ```sh
//! ZK_CONNECT=127.0.0.1:2181 cargo run --release -p zk-recipes --example handoff_trace
//! ```
//!
//! The holder and the waiter have a session each, on one current-thread runtime, as the
//! `W5` workload of `bench/` has.
use std::time::Duration;

use tracing::info;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::fmt::time::Uptime;
use tracing_subscriber::prelude::*;
use zk_client::Client;
use zk_recipes::lock::FairLock;

const BASE: &str = "/examples/handoff-trace";

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let hosts = std::env::var("ZK_CONNECT").unwrap_or_else(|_| "127.0.0.1:2181".into());
    let holder = Client::connect(&hosts).await?;
    let waiter = Client::connect(&hosts).await?;
    let guard = FairLock::new(holder.clone(), BASE)?.acquire().await?;
    let lock = FairLock::new(waiter.clone(), BASE)?;
    let acquire = tokio::spawn(async move {
        let guard = lock.acquire_timeout(Duration::from_secs(30)).await;
        info!("waiter: acquire returned");
        guard
    });
    // Until the waiter is queued and watching, then idle, as a real queue is.
    for _ in 0..500 {
        if holder.get_children(BASE).await?.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;

    // From here on every client event is printed, with the time since the program started.
    let targets = Targets::new()
        .with_target("zk_client", LevelFilter::TRACE)
        .with_target("zk_recipes", LevelFilter::TRACE)
        .with_target("handoff_trace", LevelFilter::INFO);
    tracing_subscriber::registry()
        .with(tracing_subscriber::fmt::layer().with_timer(Uptime::default()))
        .with(targets)
        .init();
    info!("holder: release called");
    let released = guard.release().await?;
    info!(?released, "holder: release returned");
    let next = acquire.await??;
    info!(token = next.fencing_token(), "waiter: holds the lock");
    next.release().await?;
    let _ = holder.delete(BASE, None).await;
    holder.close().await?;
    waiter.close().await?;
    Ok(())
}
