//! The demo a new user runs first (`bash scripts/demo.sh`): several workers on a fair lock,
//! readers and a writer on a read/write lock, a holder whose create reply is lost keeping its
//! place, a holder whose session expires being told it lost the lock, and a leader failover
//! (a leader latch whose leader is cut off, and re-joins on a new session).
//!
//! By default it starts a throwaway local ZooKeeper (Debian's package, as a plain process) on
//! 127.0.0.1. Point it at your own server or ensemble with `--connect host:port[,host:port]`
//! or `ZK_CONNECT`; it works under a fresh `/zk-rs-demo-<id>` node there and removes it after.
#![forbid(unsafe_code)]

mod leader_scene;
mod scenes;

use std::time::{Duration, Instant};

use integration_tests::Server;
use zk_client::Client;

/// Where the demo runs.
pub(crate) struct Target {
    /// Connect string of the server(s), no chroot.
    pub(crate) hosts: String,
    /// The demo's own subtree.
    pub(crate) root: String,
}

impl Target {
    /// `hosts` + the demo root, for new sessions.
    pub(crate) fn connect_string(&self) -> String {
        format!("{}{}", self.hosts, self.root)
    }
}

fn connect_arg() -> Option<String> {
    let mut args = std::env::args().skip(1);
    if let Some(arg) = args.next() {
        match arg.as_str() {
            "--connect" => return args.next(),
            "-h" | "--help" => {
                println!("usage: demo [--connect host:port[,host:port...]]  (or ZK_CONNECT=...)");
                std::process::exit(0);
            }
            other => {
                eprintln!("unknown argument {other:?}; try --help");
                std::process::exit(64);
            }
        }
    }
    std::env::var("ZK_CONNECT").ok().filter(|s| !s.is_empty())
}

#[tokio::main]
async fn main() {
    let started = Instant::now();
    let mut _server: Option<Server> = None;
    let hosts = match connect_arg() {
        Some(hosts) => {
            println!("Using your ZooKeeper at {hosts}.");
            hosts
        }
        None => {
            if std::env::var_os("ZK_HARNESS").is_none() {
                std::env::set_var("ZK_HARNESS", "process");
            }
            println!("Starting a throwaway ZooKeeper 3.8 on 127.0.0.1 ...");
            let server = Server::launch().await;
            let hosts = server.connect_string();
            println!("  ready at {hosts} in {:.1?}\n", started.elapsed());
            _server = Some(server);
            hosts
        }
    };
    let root = format!(
        "/zk-rs-demo-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let admin = Client::connect(&hosts).await.expect("connect to ZooKeeper");
    admin
        .create(&root, &[], &zk_client::CreateOptions::persistent())
        .await
        .expect("create the demo root");
    let target = Target { hosts, root };

    let outcome = tokio::time::timeout(Duration::from_secs(120), scenes::run_all(&target)).await;
    let _ = admin.delete_all(&target.root).await;
    let _ = admin.close().await;
    match outcome {
        Ok(Ok(())) => println!(
            "\nAll five scenes behaved as promised, in {:.1?}.",
            started.elapsed()
        ),
        Ok(Err(e)) => {
            eprintln!("\ndemo failed: {e}");
            std::process::exit(1);
        }
        Err(_) => {
            eprintln!("\ndemo timed out");
            std::process::exit(1);
        }
    }
}
