//! The first four scenes of the demo (the fifth is in `leader_scene.rs`). Each prints what happens in plain words and checks that it
//! happened; any surprise ends the demo with an error.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use integration_tests::proxy::{Mode, Proxy};
use tokio::sync::{mpsc, Barrier};
use tokio::time::{sleep, timeout, Instant};
use zk_client::Client;
use zk_recipes::{
    lock::{FairLock, LockState, ReadWriteLock},
    LossReason,
};

use crate::Target;

pub(crate) type Result<T> = std::result::Result<T, String>;

pub(crate) const LIMIT: Duration = Duration::from_secs(30);

pub(crate) fn fail(what: &str, e: impl std::fmt::Display) -> String {
    format!("{what}: {e}")
}

async fn session(connect: &str) -> Result<Client> {
    Client::builder(connect)
        .session_timeout(Duration::from_secs(4))
        .connect()
        .await
        .map_err(|e| fail("connect", e))
}

/// Waits until `path` has `n` children.
pub(crate) async fn wait_queue(client: &Client, path: &str, n: usize) -> Result<()> {
    let end = Instant::now() + LIMIT;
    loop {
        let len = match client.get_children(path).await {
            Ok(c) => c.len(),
            Err(zk_client::Error::NoNode) => 0,
            Err(e) => return Err(fail("list queue", e)),
        };
        if len == n {
            return Ok(());
        }
        if Instant::now() > end {
            return Err(format!("{path} never had {n} children (has {len})"));
        }
        sleep(Duration::from_millis(20)).await;
    }
}

pub(crate) async fn run_all(t: &Target) -> Result<()> {
    fair_lock(t).await?;
    read_write(t).await?;
    protected_create(t).await?;
    expiry(t).await?;
    crate::leader_scene::leader_failover(t).await?;
    Ok(())
}

/// Scene 1: five workers take turns on a fair lock in the order they queued.
async fn fair_lock(t: &Target) -> Result<()> {
    println!("1. Fair lock: five workers, one lock, first come first served");
    let admin = session(&t.connect_string()).await?;
    let first =
        FairLock::new(session(&t.connect_string()).await?, "/jobs").map_err(|e| fail("lock", e))?;
    let held = first.acquire().await.map_err(|e| fail("acquire", e))?;
    println!(
        "   worker 0 holds the lock (fencing token {})",
        held.fencing_token()
    );
    let (tx, mut rx) = mpsc::unbounded_channel();
    for i in 1..5 {
        let lock = FairLock::new(session(&t.connect_string()).await?, "/jobs")
            .map_err(|e| fail("lock", e))?;
        let tx = tx.clone();
        tokio::spawn(async move {
            let result = lock.acquire().await;
            if let Ok(guard) = result {
                let _ = tx.send((i, guard.fencing_token()));
                sleep(Duration::from_millis(50)).await;
                let _ = guard.release().await;
            }
        });
        wait_queue(&admin, "/jobs", i + 1).await?;
        println!(
            "   worker {i} queues and watches only worker {}'s node",
            i - 1
        );
    }
    held.release().await.map_err(|e| fail("release", e))?;
    println!("   worker 0 releases");
    let mut order = Vec::new();
    for _ in 1..5 {
        let (i, token) = timeout(LIMIT, rx.recv())
            .await
            .map_err(|e| fail("hand-off", e))?
            .ok_or("worker died")?;
        println!("   worker {i} gets the lock (fencing token {token}), works, releases");
        order.push(i);
    }
    if order != [1, 2, 3, 4] {
        return Err(format!("workers were served out of order: {order:?}"));
    }
    println!("   served in queue order; each waiter watched only its predecessor, so each release");
    println!("   woke exactly one of them (integration-tests/tests/recipes_herd.rs counts it on the server)\n");
    Ok(())
}

/// Scene 2: readers share, a writer waits for them and then works alone.
async fn read_write(t: &Target) -> Result<()> {
    println!("2. Read/write lock: three readers together, then a writer alone");
    let admin = session(&t.connect_string()).await?;
    let inside = Arc::new(Barrier::new(3));
    let mut readers = Vec::new();
    for i in 1..=3 {
        let lock = ReadWriteLock::new(session(&t.connect_string()).await?, "/catalog")
            .map_err(|e| fail("lock", e))?;
        let inside = inside.clone();
        readers.push(tokio::spawn(async move {
            let guard = lock
                .read_lock()
                .acquire()
                .await
                .map_err(|e| fail("read", e))?;
            println!("   reader {i} is reading");
            // All three must be inside at once to pass this barrier.
            timeout(LIMIT, inside.wait())
                .await
                .map_err(|_| "readers did not share".to_string())?;
            sleep(Duration::from_millis(300)).await;
            println!("   reader {i} is done");
            guard.release().await.map_err(|e| fail("release", e))
        }));
    }
    wait_queue(&admin, "/catalog", 3).await?;
    let writer = ReadWriteLock::new(session(&t.connect_string()).await?, "/catalog")
        .map_err(|e| fail("lock", e))?;
    println!("   a writer arrives and waits for the readers");
    let w = writer
        .write_lock()
        .acquire()
        .await
        .map_err(|e| fail("write", e))?;
    for r in readers {
        r.await.map_err(|e| fail("reader", e))??;
    }
    println!("   the writer writes alone (no reader holds the lock)");
    w.release().await.map_err(|e| fail("release", e))?;
    println!();
    Ok(())
}

pub(crate) async fn first_host(t: &Target) -> Result<SocketAddr> {
    let first = t.hosts.split(',').next().unwrap_or_default().to_owned();
    tokio::net::lookup_host(first.clone())
        .await
        .map_err(|e| fail("resolve", e))?
        .next()
        .ok_or(format!("cannot resolve {first}"))
}

/// Scene 3: the create's reply is lost with the connection; the lock finds its node.
async fn protected_create(t: &Target) -> Result<()> {
    println!("3. Protected create: the server creates our queue node, but the reply is lost");
    let proxy = Proxy::start(first_host(t).await?).await;
    let admin = session(&t.connect_string()).await?;
    let client = session(&format!("{}{}", proxy.connect_string(), t.root)).await?;
    let sid = client.session_id();
    let lock = FairLock::new(client.clone(), "/reports").map_err(|e| fail("lock", e))?;
    admin
        .create_all("/reports", &[], &zk_client::CreateOptions::persistent())
        .await
        .map_err(|e| fail("parent", e))?;
    proxy.drop_next_create_reply();
    let guard = timeout(LIMIT, lock.acquire())
        .await
        .map_err(|e| fail("acquire", e))?
        .map_err(|e| fail("acquire", e))?;
    if !proxy
        .wait_create_reply_dropped(Duration::from_secs(1))
        .await
    {
        return Err("the proxy never dropped the create reply".into());
    }
    println!("   the connection was cut right after the server created the node");
    if client.session_id() != sid {
        return Err("the session changed".into());
    }
    println!("   the client reconnected with the same session 0x{sid:x}");
    let queue = admin
        .get_children("/reports")
        .await
        .map_err(|e| fail("list", e))?;
    println!(
        "   the lock listed the queue and found its node by guid: {}",
        guard.node_name()
    );
    if queue != [guard.node_name().to_owned()] {
        return Err(format!("expected exactly our node, found {queue:?}"));
    }
    println!("   exactly one node in the queue, no ghost; the lock is held\n");
    guard.release().await.map_err(|e| fail("release", e))?;
    Ok(())
}

/// Scene 4: a partition outlasts the holder's session; the holder is told.
async fn expiry(t: &Target) -> Result<()> {
    println!("4. Session expiry: the holder is cut off from ZooKeeper for too long");
    let proxy = Proxy::start(first_host(t).await?).await;
    let holder = session(&format!("{}{}", proxy.connect_string(), t.root)).await?;
    let timeout_ms = holder.negotiated_timeout().as_millis();
    let guard = FairLock::new(holder.clone(), "/billing")
        .map_err(|e| fail("lock", e))?
        .acquire()
        .await
        .map_err(|e| fail("acquire", e))?;
    let next = FairLock::new(session(&t.connect_string()).await?, "/billing")
        .map_err(|e| fail("lock", e))?;
    let waiting = tokio::spawn(async move { next.acquire_timeout(LIMIT).await });
    println!("   the holder works; another worker waits (session timeout {timeout_ms} ms)");
    proxy.set_mode(Mode::Blackhole);
    println!("   network partition between the holder and ZooKeeper");
    let mut states = guard.watch();
    timeout(LIMIT, states.wait_for(|s| s == LockState::Suspended))
        .await
        .map_err(|e| fail("suspend", e))?;
    println!(
        "   holder: lock SUSPENDED (connection lost): it pauses work, it may not own the lock"
    );
    let lost = timeout(LIMIT, guard.lost())
        .await
        .map_err(|e| fail("loss", e))?;
    if lost != LossReason::SessionEnded {
        return Err(format!("unexpected loss reason {lost}"));
    }
    println!("   holder: lock LOST ({lost}); it abandons its work");
    let g = waiting
        .await
        .map_err(|e| fail("waiter", e))?
        .map_err(|e| fail("waiter", e))?;
    println!(
        "   the waiting worker now holds the lock (fencing token {} > {})",
        g.fencing_token(),
        guard.fencing_token()
    );
    proxy.set_mode(Mode::Pass);
    g.release().await.map_err(|e| fail("release", e))?;
    Ok(())
}
