//! Quick manual check against a server: `cargo run --example smoke -- 127.0.0.1:2181`.
use zk_client::{AddWatchMode, Client, CreateOptions, Op, ReadOp};

#[tokio::main]
async fn main() -> zk_client::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:2181".into());
    let client = Client::connect(&addr).await?;
    println!(
        "connected {client:?} timeout {:?}",
        client.negotiated_timeout()
    );
    let _ = client.delete("/smoke/a", None).await;
    let _ = client.delete("/smoke", None).await;
    let (p, stat) = client
        .create_all("/smoke/a", b"hello", &CreateOptions::persistent())
        .await?;
    println!("created {p} {stat:?}");
    let (d, s, w) = client.get_data_watch("/smoke/a").await?;
    println!("data {:?} v{}", d, s.version);
    let mut pw = client
        .add_watch("/smoke", AddWatchMode::PersistentRecursive)
        .await?;
    let st = client.set_data("/smoke/a", b"x", Some(s.version)).await?;
    println!("set v{}", st.version);
    println!("event {:?}", w.await?);
    println!("persistent {:?}", pw.next().await?);
    println!("children {:?}", client.get_children("/smoke").await?);
    println!("exists missing {:?}", client.exists("/smoke/zz").await?);
    println!(
        "multi {:?}",
        client
            .multi(&[
                Op::check("/smoke/a", Some(1)),
                Op::create("/smoke/b", b"", &CreateOptions::ephemeral())
            ])
            .await
    );
    println!(
        "multi fail {:?}",
        client
            .multi(&[
                Op::check("/smoke/a", Some(7)),
                Op::create("/smoke/c", b"", &CreateOptions::ephemeral())
            ])
            .await
    );
    println!(
        "multi_read {:?}",
        client
            .multi_read(&[ReadOp::get_data("/smoke/a"), ReadOp::get_children("/nope")])
            .await?
    );
    println!("whoami {:?}", client.whoami().await?);
    println!("ephemerals {:?}", client.get_ephemerals("/").await?);
    println!(
        "count {:?}",
        client.get_all_children_number("/smoke").await?
    );
    println!("acl {:?}", client.get_acl("/smoke").await?.0);
    println!("sync {:?}", client.sync("/smoke").await);
    println!("config {:?}", client.get_config().await.map(|c| c.0));
    for _ in 0..5 {
        let t = std::time::Instant::now();
        let futs: Vec<_> = (0..10000).map(|_| client.get_data("/smoke/a")).collect();
        for f in futs {
            f.await?;
        }
        println!("10k pipelined gets in {:?}", t.elapsed());
    }
    client.close().await?;
    println!("state {:?}", client.state());
    println!("after close {:?}", client.get_data("/smoke/a").await);
    Ok(())
}
