//! Profiling aid for the `tls` workload: one process serves, another runs the client alone, so
//! `strace -f -c`, `valgrind --tool=callgrind` or `perf stat` see the client and nothing else
//! (counts, not wall-clock, so a loaded machine does not skew them).
//!
//! ```sh
//! cargo build --release -p bench --example tls_profile
//! ZK_HARNESS=process target/release/examples/tls_profile serve 600 &   # prints PLAIN TLS PKI_DIR
//! strace -f -c target/release/examples/tls_profile run tcp PLAIN PKI_DIR seq 20000
//! strace -f -c target/release/examples/tls_profile run tls TLS PKI_DIR seq 20000
//! valgrind --tool=callgrind target/release/examples/tls_profile run tls TLS PKI_DIR pipe 200000
//! ```
//!
//! `run` makes one session, one warm-up read, then N `getData` of the 100-byte node the
//! server made: `seq` one at a time (the bench's W1), `pipe` 1,000 outstanding (W2). Compare
//! a run of N with a run of N/5 to cancel the set-up; `bench/tls_counts.sh BIN PLAIN TLS
//! PKI_DIR` does that for both transports and modes (callgrind and strace counts per call).

use std::time::Duration;

use futures_util::stream::{FuturesUnordered, StreamExt};
use integration_tests::pki::{ClientAuth, Pki};
use integration_tests::Server;
use zk_client::{Client, CreateOptions, TlsOptions};

const NODE: &str = "/zk-bench-tls-profile";

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["serve", secs] => rt.block_on(serve(Duration::from_secs(secs.parse()?))),
        ["run", side, addr, dir, mode, n] => rt.block_on(run(side, addr, dir, mode, n.parse()?)),
        _ => Err("usage: tls_profile serve SECS | run tcp|tls ADDR PKI_DIR seq|pipe N".into()),
    }
}

async fn serve(limit: Duration) -> Res<()> {
    let pki = Pki::new();
    let server = Server::launch_with(&pki.server_settings(ClientAuth::Need)).await;
    let secure = server.secure_addr().ok_or("no secure port")?;
    let admin = Client::connect(&server.connect_string()).await?;
    let _ = admin
        .create(NODE, &[0x5a; 100], &CreateOptions::persistent())
        .await;
    admin.close().await?;
    let dir = pki.ca_pem();
    let dir = dir.parent().ok_or("pki dir")?;
    println!("{} {} {}", server.addr(), secure, dir.display());
    integration_tests::serve_until_stdin_closes(limit).await;
    drop(server);
    drop(pki);
    Ok(())
}

async fn run(side: &str, addr: &str, dir: &str, mode: &str, n: usize) -> Res<()> {
    let mut builder = Client::builder(addr);
    if side == "tls" {
        let dir = std::path::Path::new(dir);
        builder = builder.tls(
            TlsOptions::new()
                .ca_file(dir.join("ca.pem"))
                .client_cert_files(dir.join("client.pem"), dir.join("client.key")),
        );
    }
    let client = builder.connect().await?;
    client.get_data(NODE).await?;
    match mode {
        "seq" => {
            for _ in 0..n {
                client.get_data(NODE).await?;
            }
        }
        "pipe" => {
            let mut inflight = FuturesUnordered::new();
            let mut issued = 0;
            while issued < n || !inflight.is_empty() {
                while issued < n && inflight.len() < 1000 {
                    inflight.push(client.get_data(NODE));
                    issued += 1;
                }
                if let Some(r) = inflight.next().await {
                    r?;
                }
            }
        }
        other => return Err(format!("mode {other}: seq or pipe").into()),
    }
    client.close().await?;
    Ok(())
}
