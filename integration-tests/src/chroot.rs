//! One subtree per test on a shared server.

use std::time::{Duration, Instant};

use rand::Rng;

use crate::probe::{CreateMode, Session};
use crate::ZkTarget;

/// Creates a new persistent node `/it-<test_name>-<random>` on `target` and returns its path, to
/// be appended to the connect string (`format!("{}{chroot}", server.connect_string())`) so each
/// test works in its own subtree of a shared server.
///
/// Tries each client address for up to 60 s (an ensemble may still be electing); panics after.
pub async fn chroot(target: &impl ZkTarget, test_name: &str) -> String {
    let clean: String = test_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(60)
        .collect();
    let path = format!("/it-{clean}-{:08x}", rand::thread_rng().gen::<u32>());
    let addrs = target.client_addrs();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last_error = String::new();
    for attempt in 0..10_000usize {
        if Instant::now() >= deadline {
            break;
        }
        let addr = addrs[attempt % addrs.len()];
        match create(addr, &path).await {
            Ok(()) => return path,
            Err(e) => last_error = format!("{addr}: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("could not create chroot {path}: {last_error}");
}

async fn create(addr: std::net::SocketAddr, path: &str) -> Result<(), crate::probe::ProbeError> {
    let mut session = Session::connect(addr).await?;
    session.set_io_timeout(Duration::from_secs(5));
    match session.create(path, b"", CreateMode::Persistent).await {
        Ok(_) | Err(crate::probe::ProbeError::Server(crate::probe::ERR_NODE_EXISTS)) => {}
        Err(e) => return Err(e),
    }
    session.close().await
}
