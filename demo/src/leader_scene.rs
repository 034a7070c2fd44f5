//! Scene 5: leader failover. Three services elect a leader with a `LeaderLatch`; the leader
//! is cut off, steps down, loses its session, and the next service takes over; when the
//! network heals, the old leader's `SessionManager` opens a new session and it re-joins as
//! a follower.

use std::time::Duration;

use integration_tests::proxy::{Mode, Proxy};
use tokio::time::timeout;
use zk_client::{Client, SessionManager};
use zk_recipes::leader::{LeaderLatch, LeadershipPolicy};

use crate::scenes::{fail, first_host, Result, LIMIT};
use crate::Target;

const PATH: &str = "/leader";

async fn manager(connect: &str) -> Result<SessionManager> {
    let builder = Client::builder(connect).session_timeout(Duration::from_secs(2));
    SessionManager::builder(builder)
        .renew_backoff(Duration::from_millis(50), Duration::from_secs(1))
        .renew_attempts(100)
        .connect()
        .await
        .map_err(|e| fail("connect", e))
}

fn latch(m: &SessionManager, id: &str) -> Result<LeaderLatch> {
    LeaderLatch::new_managed(m, PATH, id, LeadershipPolicy::Standard).map_err(|e| fail("latch", e))
}

async fn ids(l: &LeaderLatch) -> Result<Vec<String>> {
    let participants = l
        .participants()
        .await
        .map_err(|e| fail("participants", e))?;
    Ok(participants.into_iter().map(|p| p.id()).collect())
}

/// `fut` within [`LIMIT`], its error (or the timeout) named `what`.
async fn within<T, E: std::fmt::Display>(
    what: &str,
    fut: impl std::future::Future<Output = std::result::Result<T, E>>,
) -> Result<T> {
    timeout(LIMIT, fut)
        .await
        .map_err(|e| fail(what, e))?
        .map_err(|e| fail(what, e))
}

pub(crate) async fn leader_failover(t: &Target) -> Result<()> {
    println!("\n5. Leader failover: three services elect a leader; the leader is cut off");
    let proxy = Proxy::start(first_host(t).await?).await;
    let ma = manager(&format!("{}{}", proxy.connect_string(), t.root)).await?;
    let a = latch(&ma, "service-a")?;
    let first = within("lead", a.ready()).await?;
    let (mb, mc) = (
        manager(&t.connect_string()).await?,
        manager(&t.connect_string()).await?,
    );
    let b = latch(&mb, "service-b")?;
    crate::scenes::wait_queue(&ma.client(), PATH, 2).await?;
    let c = latch(&mc, "service-c")?;
    crate::scenes::wait_queue(&ma.client(), PATH, 3).await?;
    println!(
        "   service-a leads (fencing token {}); queue: {:?}",
        first.fencing_token,
        ids(&b).await?
    );
    let old_session = ma.client().session_id();
    let mut sessions = ma.watch();
    proxy.set_mode(Mode::Blackhole);
    println!("   network partition between service-a and ZooKeeper");
    within("step down", async {
        Ok::<_, zk_recipes::Error>(a.watch().wait_for(|s| !s.is_leader()).await)
    })
    .await?;
    println!(
        "   service-a: connection lost, it steps down at once (before its session can expire)"
    );
    let next = within("failover", b.ready()).await?;
    println!(
        "   service-a's session expired; service-b leads (fencing token {} > {})",
        next.fencing_token, first.fencing_token
    );
    if next.fencing_token <= first.fencing_token || a.is_leader() || c.is_leader() {
        return Err("not exactly one leader with a larger token".into());
    }
    proxy.set_mode(Mode::Pass);
    let renewed = within("renewal", async { sessions.changed().await.live() }).await?;
    crate::scenes::wait_queue(&mb.client(), PATH, 3).await?;
    println!(
        "   network healed: service-a's SessionManager opened session 0x{:x} (was 0x{old_session:x}),",
        renewed.client.session_id()
    );
    println!(
        "   and it re-joined as a follower; queue: {:?}\n",
        ids(&b).await?
    );
    for l in [&a, &b, &c] {
        l.close().await.map_err(|e| fail("close", e))?;
    }
    for m in [&ma, &mb, &mc] {
        let _ = m.close().await;
    }
    Ok(())
}
