//! Compressed node data (`zk_client::compression`, feature `gzip`) against a real server and
//! Curator 5.4 itself (`java/CuratorCompression.java`): what Curator writes with
//! `compressed()` reads here, what we write with `Gzip` reads in Curator with
//! `decompressed()`, and hostile or plain data gives the documented outcome.

use integration_tests::prelude::*;
use zk_client::compression::{looks_like_gzip, Compression, CompressionError, Gzip};
use zk_client::{Bytes, CreateOptions, Error};

const JAVA: &str = "CuratorCompression.java";

fn hex(data: &[u8]) -> String {
    if data.is_empty() {
        return "-".into();
    }
    data.iter().map(|b| format!("{b:02x}")).collect()
}

/// Payloads of every shape: empty, short text, a large compressible document (bigger than
/// ~250 KiB), incompressible bytes.
fn payloads() -> Vec<(&'static str, Vec<u8>)> {
    let json: Vec<u8> = (0..6000)
        .flat_map(|i| {
            format!("{{\"shard{i}\":{{\"state\":\"active\",\"replicas\":3}}}},").into_bytes()
        })
        .collect();
    let mut x = 0x9e37_79b9_u32;
    let noise: Vec<u8> = (0..20_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect();
    vec![
        ("empty", Vec::new()),
        ("text", b"hello from the other library".to_vec()),
        ("json", json),
        ("noise", noise),
    ]
}

#[tokio::test]
async fn curator_compressed_writes_read_here() {
    let TestRoot { hosts, .. } = test_root("compression_from_curator").await;
    let client = connect(&hosts).await;
    let mut java = JavaPeer::start(JAVA, &[&hosts], false).await;
    let gzip = Gzip::new();
    let strict = Gzip::new().detect(false);
    for (name, data) in payloads() {
        let path = format!("/c/{name}");
        assert_eq!(
            java.ask(&format!("create {path} {}", hex(&data))).await,
            "CREATED",
            "{name}"
        );
        // Stored compressed, in gzip.
        let (raw, stat) = client.get_data(&path).await.unwrap();
        assert!(
            looks_like_gzip(&raw),
            "{name}: stored {:02x?}",
            &raw[..raw.len().min(10)]
        );
        assert_eq!(stat.data_length as usize, raw.len());
        if name == "empty" {
            // Curator compresses empty data too: a 20-byte gzip stream, as `Gzip` writes.
            assert_eq!(raw.len(), gzip.compress(b"").unwrap().len(), "{name}");
        }
        if name == "json" {
            assert!(
                raw.len() * 10 < data.len(),
                "{name}: {} -> {}",
                data.len(),
                raw.len()
            );
        }
        // Decompressed by our helper, with detection and without.
        let (read, _) = client.get_data_decompressed(&path, &gzip).await.unwrap();
        assert_eq!(read, data, "{name}");
        let (read, _) = client.get_data_decompressed(&path, &strict).await.unwrap();
        assert_eq!(read, data, "{name} (strict)");
        // And Curator's setData().compressed() too.
        let mut changed = data.clone();
        changed.extend_from_slice(b"+set");
        assert_eq!(
            java.ask(&format!("set {path} {}", hex(&changed))).await,
            "SET"
        );
        let (read, stat) = client.get_data_decompressed(&path, &gzip).await.unwrap();
        assert_eq!((read.as_ref(), stat.version), (&changed[..], 1), "{name}");
    }
    java.close().await;
}

#[tokio::test]
async fn our_compressed_writes_read_in_curator() {
    let TestRoot { hosts, .. } = test_root("compression_to_curator").await;
    let client = connect(&hosts).await;
    let mut java = JavaPeer::start(JAVA, &[&hosts], false).await;
    let opts = CreateOptions::persistent().with_container_parents(true);
    for level in [1, 6, 9] {
        let gzip = Gzip::new().level(level);
        for (name, data) in payloads() {
            let path = format!("/r{level}/{name}");
            match client.create(&format!("/r{level}"), b"", &opts).await {
                Ok(_) | Err(Error::NodeExists) => {}
                Err(e) => panic!("parent: {e}"),
            }
            client
                .create_compressed(&path, &data, &opts, &gzip)
                .await
                .unwrap();
            let raw = java.ask(&format!("raw {path}")).await;
            assert!(raw.starts_with("DATA 1f8b08"), "{name}: {raw}");
            assert_eq!(
                java.ask(&format!("get {path}")).await,
                format!("DATA {}", hex(&data)),
                "{name} level {level}"
            );
            let mut changed = data.clone();
            changed.extend_from_slice(b"+set");
            client
                .set_data_compressed(&path, &changed, Some(0), &gzip)
                .await
                .unwrap();
            assert_eq!(
                java.ask(&format!("get {path}")).await,
                format!("DATA {}", hex(&changed)),
                "{name} level {level} after set"
            );
        }
    }
    java.close().await;
}

#[tokio::test]
async fn plain_corrupt_and_bomb_nodes_give_the_documented_outcome() {
    let TestRoot { hosts, .. } = test_root("compression_hostile").await;
    let client = connect(&hosts).await;
    let mut java = JavaPeer::start(JAVA, &[&hosts], false).await;
    let gzip = Gzip::new();
    let opts = CreateOptions::persistent();

    // Plain data: read as it is with detection, an error without (as in Curator).
    client.create("/plain", b"{\"v\":1}", &opts).await.unwrap();
    let (read, _) = client.get_data_decompressed("/plain", &gzip).await.unwrap();
    assert_eq!(read, &b"{\"v\":1}"[..]);
    let strict = client
        .get_data_decompressed("/plain", &gzip.clone().detect(false))
        .await;
    assert!(
        matches!(
            strict,
            Err(Error::Compression(CompressionError::Corrupt(_)))
        ),
        "{strict:?}"
    );
    assert!(java.ask("get /plain").await.starts_with("ERROR "));

    // Truncated gzip: an error here, and in Curator.
    let good = gzip.compress(b"complete data, then cut").unwrap();
    client
        .create("/cut", &good[..good.len() - 6], &opts)
        .await
        .unwrap();
    let cut = client.get_data_decompressed("/cut", &gzip).await;
    assert!(
        matches!(cut, Err(Error::Compression(CompressionError::Corrupt(_)))),
        "{cut:?}"
    );
    assert!(java.ask("get /cut").await.starts_with("ERROR "));

    // A bomb: 64 MiB of zeros in a node of ~64 KiB stops at the bound, memory bounded.
    // Compressed on a blocking thread: seconds of CPU in a debug build, which on the test's
    // runtime thread would starve the session's connection task (a loaded CI machine saw the
    // read timeout fire and the create below fail with ConnectionLoss).
    let bomb = tokio::task::spawn_blocking(|| Gzip::new().level(9).compress(&vec![0u8; 64 << 20]))
        .await
        .unwrap()
        .unwrap();
    assert!(bomb.len() < 128 << 10, "bomb of {} bytes", bomb.len());
    client.create("/bomb", &bomb, &opts).await.unwrap();
    let read = client.get_data_decompressed("/bomb", &gzip).await;
    assert!(
        matches!(
            read,
            Err(Error::Compression(CompressionError::TooLarge {
                limit: 16_777_216
            }))
        ),
        "{read:?}"
    );
    // A larger bound the caller chooses reads it.
    let big = Gzip::new().max_decompressed_len(64 << 20);
    let (read, _) = client.get_data_decompressed("/bomb", &big).await.unwrap();
    assert!(read.len() == 64 << 20 && read.iter().all(|&b| b == 0));

    // Missing node: the server's answer, not a compression error.
    let missing = client.get_data_decompressed("/none", &gzip).await;
    assert!(matches!(missing, Err(Error::NoNode)), "{missing:?}");
    // A trait object works the same (what a cache holding any codec uses).
    let any: std::sync::Arc<dyn Compression> = std::sync::Arc::new(Gzip::new());
    client
        .create_compressed("/dyn", b"through dyn", &opts, &*any)
        .await
        .unwrap();
    let (read, _) = client.get_data_decompressed("/dyn", &any).await.unwrap();
    assert_eq!(read, Bytes::from_static(b"through dyn"));
    java.close().await;
}
