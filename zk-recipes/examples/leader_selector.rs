//! Two services share a periodic job with a `LeaderSelector`: whoever leads runs one round
//! of the job, gives leadership up, and queues again (auto-requeue), so rounds alternate.
//!
//! ```sh
//! ZK_CONNECT=127.0.0.1:2181 cargo run -p zk-recipes --example leader_selector
//! ```
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zk_client::{Client, SessionManager};
use zk_recipes::leader::{LeaderSelector, LeadershipPolicy};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let hosts = std::env::var("ZK_CONNECT").unwrap_or_else(|_| "127.0.0.1:2181".into());
    let rounds = Arc::new(AtomicUsize::new(0));
    let mut selectors = Vec::new();
    for id in ["service-a", "service-b"] {
        let manager = SessionManager::connect(Client::builder(&hosts)).await?;
        let rounds = rounds.clone();
        let selector = LeaderSelector::builder("/examples/selector", id)
            .policy(LeadershipPolicy::Standard)
            .auto_requeue(true)
            .build_managed(&manager, move |_client, term| {
                let rounds = rounds.clone();
                async move {
                    // The job; dropped at once if leadership is lost.
                    let n = rounds.fetch_add(1, Ordering::SeqCst);
                    println!(
                        "round {n}: {id} runs the job (token {})",
                        term.fencing_token
                    );
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            })?;
        selectors.push((selector, manager));
    }
    while rounds.load(Ordering::SeqCst) < 6 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for (selector, manager) in selectors {
        selector.close().await?;
        manager.close().await?;
    }
    Ok(())
}
