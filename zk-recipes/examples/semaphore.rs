//! Five workers share three leases of one semaphore (Curator's `InterProcessSemaphoreV2`
//! layout); one of them is asked to give its lease back through a revocation request.
//!
//! ```sh
//! ZK_CONNECT=127.0.0.1:2181 cargo run -p zk-recipes --example semaphore
//! ```
use std::time::Duration;

use zk_client::Client;
use zk_recipes::semaphore::Semaphore;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let hosts = std::env::var("ZK_CONNECT").unwrap_or_else(|_| "127.0.0.1:2181".into());
    let mut workers = Vec::new();
    for id in 0..5 {
        // One session per worker, as separate processes would have.
        let client = Client::connect(&hosts).await?;
        workers.push(tokio::spawn(async move {
            let slots = Semaphore::new(client.clone(), "/examples/semaphore", 3)?
                .with_owner_data(format!("worker-{id}"));
            let lease = slots.acquire_timeout(Duration::from_secs(30)).await?;
            let holders: Vec<String> = slots
                .participants()
                .await?
                .iter()
                .filter_map(|p| p.data_str().map(str::to_owned))
                .collect();
            println!("worker {id} holds a lease; lease nodes: {holders:?}");
            // Work until done, or until someone asks for the lease back.
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(300)) => {}
                asked = lease.revocation_requested() => {
                    asked?;
                    println!("worker {id} was asked to give its lease back");
                }
            }
            lease.release().await?;
            client.close().await?;
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
        }));
    }
    // Ask the first lease holder we see to hurry up (Curator's Revoker does the same).
    let admin = Client::connect(&hosts).await?;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let slots = Semaphore::new(admin.clone(), "/examples/semaphore", 3)?;
    if let Some(first) = slots.participants().await?.first() {
        zk_recipes::lock::revoke(&admin, &first.path).await?;
    }
    for w in workers {
        w.await?.map_err(|e| e.to_string())?;
    }
    admin.close().await?;
    Ok(())
}
