//! Profiling aid for W4: one process serves, another runs N sessions taking turns on one fair
//! lock with ours alone, so `strace -f -c`, `valgrind --tool=callgrind` or `perf stat` see that
//! client and nothing else (counts, not wall-clock, so a loaded machine does not skew them).
//!
//! ```sh
//! cargo build --release -p bench --example w4_profile
//! ZK_HARNESS=process target/release/examples/w4_profile serve 600 &   # prints ADDR
//! valgrind --tool=callgrind target/release/examples/w4_profile run recipe ADDR 8 200 ct
//! strace -f -c target/release/examples/w4_profile run bare ADDR 8 200 ct
//! ```
//!
//! `run recipe` is W4's side of ours (`FairLock::acquire_timeout` + `LockGuard::release`);
//! `run bare` is W4bare's minimal Curator-layout lock on zk-client (create
//! ephemeral-sequential, list, getData-watch the predecessor, list again on its event, delete
//! waiting for the reply). `ct`: tokio current-thread runtime, `mt`: 2 workers. Compare a run
//! of R rounds with one of R/4 to cancel the set-up (sessions, connect, close).

use std::time::Duration;

use integration_tests::Server;

#[path = "../src/workloads/bare_lock.rs"]
mod bare_lock;
use bare_lock::bare_turn;
use tokio::task::JoinSet;
use zk_client::{Client, CreateOptions};

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

const STEP: Duration = Duration::from_secs(30);

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args[..] {
        ["serve", secs] => runtime("ct")?.block_on(serve(Duration::from_secs(secs.parse()?))),
        ["run", side, addr, n, per, rt] => {
            runtime(rt)?.block_on(run(side, addr, n.parse()?, per.parse()?))
        }
        _ => {
            Err("usage: w4_profile serve SECS | run recipe|bare ADDR SESSIONS ROUNDS ct|mt".into())
        }
    }
}

fn runtime(kind: &str) -> Res<tokio::runtime::Runtime> {
    let mut builder = match kind {
        "ct" => tokio::runtime::Builder::new_current_thread(),
        "mt" => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(2);
            b
        }
        _ => return Err(format!("runtime {kind}: ct or mt").into()),
    };
    Ok(builder.enable_all().build()?)
}

async fn serve(limit: Duration) -> Res<()> {
    let server = Server::launch().await;
    println!("{}", server.connect_string());
    integration_tests::serve_until_stdin_closes(limit).await;
    drop(server);
    Ok(())
}

async fn run(side: &str, addr: &str, n: usize, per: usize) -> Res<()> {
    let base = format!("/w4-profile-{side}-{}", std::process::id());
    let setup = Client::connect(addr).await?;
    setup
        .create(&base, b"", &CreateOptions::persistent())
        .await?;
    let mut clients = Vec::with_capacity(n);
    for _ in 0..n {
        clients.push(Client::connect(addr).await?);
    }
    let mut tasks: JoinSet<Res<()>> = JoinSet::new();
    for (i, c) in clients.iter().cloned().enumerate() {
        let base = base.clone();
        match side {
            "recipe" => {
                let lock = zk_recipes::lock::FairLock::new(c, &base)?;
                tasks.spawn(async move {
                    for _ in 0..per {
                        let guard = lock.acquire_timeout(STEP).await?;
                        guard.release().await?;
                    }
                    Ok(())
                });
            }
            "bare" => {
                tasks.spawn(async move {
                    for k in 0..per {
                        tokio::time::timeout(STEP, bare_turn(&c, &base, i, k)).await??;
                    }
                    Ok(())
                });
            }
            _ => return Err(format!("side {side}: recipe or bare").into()),
        }
    }
    while let Some(done) = tokio::time::timeout(STEP * 10, tasks.join_next()).await? {
        done??;
    }
    for c in clients {
        let _ = c.close().await;
    }
    let _ = setup.delete(&base, None).await;
    let _ = setup.close().await;
    Ok(())
}
