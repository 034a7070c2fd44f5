//! Readers share a read/write lock; a writer waits for them, and watches for loss while it
//! holds the lock.
//!
//! ```sh
//! ZK_CONNECT=127.0.0.1:2181 cargo run -p zk-recipes --example read_write
//! ```
use std::time::Duration;

use zk_client::{Client, CreateOptions, Op};
use zk_recipes::lock::{LockState, ReadWriteLock};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let hosts = std::env::var("ZK_CONNECT").unwrap_or_else(|_| "127.0.0.1:2181".into());
    let client = Client::connect(&hosts).await?;
    let _ = client
        .create_all("/examples/catalog", b"0", &CreateOptions::persistent())
        .await;

    let reader_a = ReadWriteLock::new(Client::connect(&hosts).await?, "/examples/rw")?;
    let reader_b = ReadWriteLock::new(Client::connect(&hosts).await?, "/examples/rw")?;
    let a = reader_a.read_lock().acquire().await?;
    let b = reader_b.read_lock().acquire().await?;
    println!("two readers hold the lock together");

    let writer = ReadWriteLock::new(client.clone(), "/examples/rw")?;
    let write = tokio::spawn(async move {
        let guard = writer.write_lock().acquire().await?;
        println!("writer holds the lock alone");
        // A write that applies only while the lock is ours.
        guard
            .fenced(&[Op::set_data("/examples/catalog", b"1", None)])
            .await?;
        if guard.state() != LockState::Held {
            println!("lock no longer safely held: {:?}", guard.state());
        }
        guard.release().await
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    println!("readers release");
    a.release().await?;
    b.release().await?;
    write.await??;
    client.close().await?;
    Ok(())
}
