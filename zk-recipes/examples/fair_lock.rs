//! Several workers take turns on one fair lock; each prints its fencing token.
//!
//! ```sh
//! ZK_CONNECT=127.0.0.1:2181 cargo run -p zk-recipes --example fair_lock
//! ```
use std::time::Duration;

use zk_client::Client;
use zk_recipes::lock::FairLock;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let hosts = std::env::var("ZK_CONNECT").unwrap_or_else(|_| "127.0.0.1:2181".into());
    let mut workers = Vec::new();
    for id in 0..4 {
        // One session per worker, as separate processes would have.
        let client = Client::connect(&hosts).await?;
        workers.push(tokio::spawn(async move {
            let lock = FairLock::new(client.clone(), "/examples/fair-lock")?;
            for round in 0..3 {
                let guard = lock.acquire_timeout(Duration::from_secs(30)).await?;
                println!("worker {id} round {round}: token {}", guard.fencing_token());
                tokio::time::sleep(Duration::from_millis(20)).await;
                guard.release().await?;
            }
            client.close().await?;
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
        }));
    }
    for w in workers {
        w.await?.map_err(|e| e.to_string())?;
    }
    Ok(())
}
