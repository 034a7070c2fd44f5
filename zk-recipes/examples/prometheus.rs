//! Exports the client's and the locks' metrics in the Prometheus text format.
//!
//! ```text
//! ZK_CONNECT=127.0.0.1:2181 cargo run -p zk-recipes --features metrics --example prometheus
//! ```
//!
//! Installs `metrics-exporter-prometheus`'s recorder, does some work (writes, reads, a
//! contended lock), then prints what a Prometheus scrape would get. A service would instead
//! serve `handle.render()` on its `/metrics` endpoint (or enable the exporter's
//! `http-listener` feature). What a dashboard built on these shows is in the repository's
//! `docs/metrics-tracing.md`.

use std::time::Duration;

use metrics_exporter_prometheus::PrometheusBuilder;
use zk_client::{Client, CreateOptions};
use zk_recipes::lock::FairLock;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let handle = PrometheusBuilder::new()
        .set_buckets(&[0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25, 1.0, 5.0])?
        .install_recorder()?;
    let hosts = std::env::var("ZK_CONNECT").unwrap_or_else(|_| "127.0.0.1:2181".into());
    let client = Client::builder(&hosts)
        .session_timeout(Duration::from_secs(10))
        .connect()
        .await?;
    let base = format!("/prometheus-example-{}", std::process::id());
    client
        .create(&base, b"", &CreateOptions::persistent())
        .await?;
    for i in 0..20u8 {
        client.set_data(&base, &[i], None).await?;
        client.get_data(&base).await?;
    }
    let _ = client.get_data(&format!("{base}/missing")).await;

    // Two contenders: one waits for the other's hold.
    let lock_path = format!("{base}/lock");
    let first = FairLock::new(client.clone(), &lock_path)?.acquire().await?;
    let second = FairLock::new(Client::connect(&hosts).await?, &lock_path)?;
    let waiter = tokio::spawn(async move {
        let guard = second.acquire().await?;
        guard.release().await.map(drop)
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    first.release().await?;
    waiter.await??;

    client.delete_all(&base).await?;
    println!("{}", handle.render());
    client.close().await?;
    Ok(())
}
