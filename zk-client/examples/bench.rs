//! Pipelined getData throughput and client CPU per op:
//! `cargo run --release --example bench -- 127.0.0.1:2181 [ops] [window]`.
use std::time::Instant;

use zk_client::{Client, CreateOptions};

/// utime + stime of this process in seconds, from /proc/self/stat.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> zk_client::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:2181".into());
    let ops: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let window: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1000);
    let client = Client::connect(&addr).await?;
    match client
        .create("/bench", b"0123456789", &CreateOptions::persistent())
        .await
    {
        Ok(_) | Err(zk_client::Error::NodeExists) => {}
        Err(e) => return Err(e),
    }
    for round in 0..3 {
        let (t, cpu) = (Instant::now(), cpu_seconds());
        let mut inflight = std::collections::VecDeque::with_capacity(window);
        for _ in 0..ops {
            if inflight.len() == window {
                let f: std::pin::Pin<Box<_>> = inflight.pop_front().unwrap();
                f.await?;
            }
            inflight.push_back(Box::pin(client.get_data("/bench")));
        }
        for f in inflight {
            f.await?;
        }
        let (wall, cpu) = (t.elapsed().as_secs_f64(), cpu_seconds() - cpu);
        println!(
            "round {round}: {ops} gets, window {window}: {:.0}/s, client cpu {:.1} us/op",
            ops as f64 / wall,
            cpu * 1e6 / ops as f64
        );
    }
    client.close().await
}
