//! Three services elect a leader with a `LeaderLatch`; each leader steps down after a while
//! (closing its latch) and the next takes over, in queue order.
//!
//! ```sh
//! ZK_CONNECT=127.0.0.1:2181 cargo run -p zk-recipes --example leader_latch
//! ```
use std::time::Duration;

use zk_client::{Client, SessionManager};
use zk_recipes::leader::{LeaderLatch, LeadershipPolicy};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let hosts = std::env::var("ZK_CONNECT").unwrap_or_else(|_| "127.0.0.1:2181".into());
    let mut services = Vec::new();
    for id in ["service-a", "service-b", "service-c"] {
        // One session per service, as separate processes would have; the manager opens a
        // new session if this one expires, and the latch re-joins on it.
        let manager = SessionManager::connect(Client::builder(&hosts)).await?;
        let latch =
            LeaderLatch::new_managed(&manager, "/examples/leader", id, LeadershipPolicy::Standard)?;
        services.push(tokio::spawn(async move {
            let term = latch.ready_timeout(Duration::from_secs(60)).await?;
            let others: Vec<String> = latch
                .participants()
                .await?
                .into_iter()
                .map(|p| p.id())
                .collect();
            println!(
                "{id} leads (token {}), queue {others:?}",
                term.fencing_token
            );
            tokio::time::sleep(Duration::from_millis(300)).await;
            println!("{id} steps down");
            latch.close().await?;
            manager.close().await?;
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
        }));
        // Join one after the other so that the queue order is a, b, c.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for s in services {
        s.await?.map_err(|e| e.to_string())?;
    }
    Ok(())
}
