//! The TLS stream against a rustls server over in-memory pipes (and loopback TCP for
//! parking): TLS 1.2 and 1.3, records split across reads and many in one read, writes of
//! many records, close_notify and EOF, a corrupted record, a TLS 1.3 key update.

use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ServerConfig, ServerConnection, SupportedProtocolVersion};
use tokio::io::{duplex, AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio::time::timeout;
use tokio_rustls::TlsAcceptor;

use super::TlsStream;

const CA: &[u8] = include_bytes!("testdata/ca.pem");
const CERT: &[u8] = include_bytes!("testdata/server.pem");
const KEY: &[u8] = include_bytes!("testdata/server.key");
const LIMIT: Duration = Duration::from_secs(10);

const VERSIONS: [&SupportedProtocolVersion; 2] = [&rustls::version::TLS12, &rustls::version::TLS13];

/// A rustls server; `tickets`: TLS 1.3 session tickets sent after the handshake (none over
/// a tiny pipe, where nobody would read them before the handshake returns).
fn acceptor(version: &'static SupportedProtocolVersion, tickets: bool) -> TlsAcceptor {
    let chain = vec![CertificateDer::from_pem_slice(CERT).expect("test cert")];
    let key = PrivateKeyDer::from_pem_slice(KEY).expect("test key");
    let mut config =
        ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_protocol_versions(&[version])
            .expect("versions")
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("server config");
    if !tickets {
        config.send_tls13_tickets = 0;
    }
    TlsAcceptor::from(Arc::new(config))
}

fn client_config() -> Arc<rustls::ClientConfig> {
    crate::tls::TlsOptions::new()
        .ca_pem(CA)
        .client_config()
        .expect("client config")
}

/// A connected pair over a pipe of `pipe` bytes: our client, the server's sans-IO
/// connection and its end of the pipe.
async fn pair(
    version: &'static SupportedProtocolVersion,
    pipe: usize,
) -> (TlsStream<DuplexStream>, ServerConnection, DuplexStream) {
    let (client_io, server_io) = duplex(pipe);
    let tickets = pipe > 1024;
    let server = tokio::spawn(async move { acceptor(version, tickets).accept(server_io).await });
    let name = ServerName::try_from("localhost").expect("name");
    let client = timeout(LIMIT, TlsStream::connect(client_io, client_config(), name))
        .await
        .expect("in time")
        .expect("handshake");
    let server = timeout(LIMIT, server)
        .await
        .expect("server in time")
        .expect("task")
        .expect("server handshake");
    let (io, conn) = server.into_inner();
    (client, conn, io)
}

/// The server's records for `chunks` (one record each) as bytes.
fn records(conn: &mut ServerConnection, chunks: &[Vec<u8>]) -> Vec<u8> {
    for chunk in chunks {
        conn.writer().write_all(chunk).expect("plaintext");
    }
    let mut out = Vec::new();
    while conn.wants_write() {
        conn.write_tls(&mut out).expect("ciphertext");
    }
    out
}

/// Gives the server what the client sent (rustls takes at most 4 KiB per `read_tls`); the
/// plaintext goes to `got`.
fn feed(conn: &mut ServerConnection, mut wire: &[u8], got: &mut Vec<u8>) {
    let mut plain = vec![0; 64 * 1024];
    while !wire.is_empty() {
        conn.read_tls(&mut wire).expect("read_tls");
        conn.process_new_packets()
            .expect("our records authenticate");
        while let Ok(k) = std::io::Read::read(&mut conn.reader(), &mut plain) {
            if k == 0 {
                break;
            }
            got.extend_from_slice(&plain[..k]);
        }
    }
}

/// Reads from the client until `want` bytes arrived.
async fn read_exactly(client: &mut TlsStream<DuplexStream>, want: usize) -> BytesMut {
    let mut buf = BytesMut::with_capacity(64 * 1024);
    timeout(LIMIT, async {
        while buf.len() < want {
            let n = std::future::poll_fn(|cx| client.read_into(cx, &mut buf))
                .await
                .expect("read");
            assert_ne!(n, 0, "EOF after {} of {want} bytes", buf.len());
        }
    })
    .await
    .expect("in time");
    buf
}

fn replies(n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| format!("reply {i} ").repeat(i % 7 + 1).into_bytes())
        .collect()
}

#[tokio::test]
async fn many_records_in_one_read_are_all_decrypted() {
    for version in VERSIONS {
        let (mut client, mut conn, mut io) = pair(version, 1 << 20).await;
        let chunks = replies(200);
        io.write_all(&records(&mut conn, &chunks))
            .await
            .expect("send");
        let got = read_exactly(&mut client, chunks.iter().map(Vec::len).sum()).await;
        assert_eq!(&got[..], &chunks.concat()[..], "{version:?}");
    }
}

#[tokio::test]
async fn records_split_across_reads_are_reassembled() {
    for version in VERSIONS {
        // A 7-byte pipe: every record arrives in pieces, headers split too.
        let (mut client, mut conn, mut io) = pair(version, 7).await;
        let chunks = replies(30);
        let wire = records(&mut conn, &chunks);
        let want = chunks.iter().map(Vec::len).sum();
        let writer = tokio::spawn(async move {
            io.write_all(&wire).await.expect("send");
            io
        });
        let got = read_exactly(&mut client, want).await;
        assert_eq!(&got[..], &chunks.concat()[..], "{version:?}");
        drop(timeout(LIMIT, writer).await.expect("writer in time"));
    }
}

#[tokio::test]
async fn writes_reach_the_server_as_records_of_at_most_16_kib() {
    for version in VERSIONS {
        let (mut client, mut conn, mut io) = pair(version, 1 << 20).await;
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        timeout(LIMIT, async {
            client.write_all(&data).await.expect("write");
            client.flush().await.expect("flush");
        })
        .await
        .expect("in time");
        let mut got = Vec::new();
        let mut wire = vec![0; 256 * 1024];
        timeout(LIMIT, async {
            while got.len() < data.len() {
                let n = io.read(&mut wire).await.expect("read");
                assert_ne!(n, 0, "EOF");
                feed(&mut conn, &wire[..n], &mut got);
            }
        })
        .await
        .expect("in time");
        assert_eq!(got, data, "{version:?}");
    }
}

#[tokio::test]
async fn close_notify_and_socket_eof_read_as_eof() {
    for version in VERSIONS {
        let (mut client, mut conn, mut io) = pair(version, 1 << 20).await;
        let mut wire = records(&mut conn, &[b"last".to_vec()]);
        conn.send_close_notify();
        conn.write_tls(&mut wire).expect("alert");
        io.write_all(&wire).await.expect("send");
        let got = read_exactly(&mut client, 4).await;
        assert_eq!(&got[..], b"last");
        let mut buf = BytesMut::new();
        let n = std::future::poll_fn(|cx| client.read_into(cx, &mut buf)).await;
        assert_eq!(n.expect("clean EOF"), 0);

        let (mut client, _conn, io) = pair(version, 1 << 20).await;
        drop(io);
        let n = std::future::poll_fn(|cx| client.read_into(cx, &mut buf)).await;
        assert_eq!(n.expect("EOF"), 0);
    }
}

#[tokio::test]
async fn a_corrupted_record_is_a_decrypt_error_not_a_panic() {
    for version in VERSIONS {
        let (mut client, mut conn, mut io) = pair(version, 1 << 20).await;
        let mut wire = records(&mut conn, &[b"hello".to_vec()]);
        let last = wire.len() - 1;
        wire[last] ^= 1;
        io.write_all(&wire).await.expect("send");
        let mut buf = BytesMut::new();
        let err = timeout(
            LIMIT,
            std::future::poll_fn(|cx| client.read_into(cx, &mut buf)),
        )
        .await
        .expect("in time")
        .expect_err("a corrupted record fails");
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("decrypt"), "{err}");
        assert!(buf.is_empty());
    }
}

#[tokio::test]
async fn an_oversized_record_header_is_an_error() {
    let (mut client, _conn, mut io) = pair(&rustls::version::TLS12, 1 << 20).await;
    io.write_all(&[23, 3, 3, 0xff, 0xff]).await.expect("send");
    let mut buf = BytesMut::new();
    let err = std::future::poll_fn(|cx| client.read_into(cx, &mut buf))
        .await
        .expect_err("oversized");
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
}

#[tokio::test]
async fn tls13_key_updates_from_the_server_are_followed_both_ways() {
    let (mut client, mut conn, mut io) = pair(&rustls::version::TLS13, 1 << 20).await;
    for round in 0..3 {
        conn.refresh_traffic_keys().expect("key update");
        let chunk = format!("after key update {round}").into_bytes();
        io.write_all(&records(&mut conn, std::slice::from_ref(&chunk)))
            .await
            .expect("send");
        let got = read_exactly(&mut client, chunk.len()).await;
        assert_eq!(&got[..], &chunk[..]);
        // What we send now (after our own update when the server asked for one) authenticates.
        client.write_all(b"ping").await.expect("write");
        client.flush().await.expect("flush");
        let mut wire = vec![0; 4096];
        let mut got = Vec::new();
        timeout(LIMIT, async {
            while got.len() < 4 {
                let n = io.read(&mut wire).await.expect("read");
                assert_ne!(n, 0);
                feed(&mut conn, &wire[..n], &mut got);
            }
        })
        .await
        .expect("in time");
        assert_eq!(got, b"ping");
    }
}

#[tokio::test]
async fn a_parked_connection_reads_what_arrived_meanwhile() {
    use super::super::transport::Transport;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.expect("accept");
        acceptor(&rustls::version::TLS13, true)
            .accept(tcp)
            .await
            .expect("server handshake")
    });
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let name = ServerName::try_from("127.0.0.1").expect("name");
    let client = TlsStream::connect(tcp, client_config(), name)
        .await
        .expect("handshake");
    let mut server = timeout(LIMIT, server)
        .await
        .expect("server in time")
        .expect("task");
    let parked = client.park().expect("park");
    server.write_all(b"while parked").await.expect("send");
    server.flush().await.expect("flush");
    tokio::time::sleep(Duration::from_millis(20)).await;
    let mut client = TlsStream::unpark(parked).expect("unpark");
    let mut buf = BytesMut::new();
    timeout(LIMIT, async {
        while buf.len() < 12 {
            let n = std::future::poll_fn(|cx| client.poll_read_into(cx, &mut buf))
                .await
                .expect("read");
            assert_ne!(n, 0);
        }
    })
    .await
    .expect("in time");
    assert_eq!(&buf[..], b"while parked");
}

#[tokio::test]
async fn at_the_record_limit_tls13_updates_its_key_and_tls12_ends_the_connection() {
    for version in VERSIONS {
        let (mut client, mut conn, mut io) = pair(version, 1 << 20).await;
        client.tls.records.set_limit(3);
        let mut sent = Vec::new();
        let mut failed = None;
        for i in 0..8u8 {
            let chunk = [b'a' + i; 10];
            let wrote = timeout(LIMIT, async {
                client.write_all(&chunk).await?;
                client.flush().await
            })
            .await
            .expect("in time");
            match wrote {
                Ok(()) => sent.extend_from_slice(&chunk),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        let mut wire = vec![0; 64 * 1024];
        let mut got = Vec::new();
        timeout(LIMIT, async {
            while got.len() < sent.len() {
                let n = io.read(&mut wire).await.expect("read");
                assert_ne!(n, 0);
                feed(&mut conn, &wire[..n], &mut got);
            }
        })
        .await
        .expect("in time");
        assert_eq!(got, sent, "{version:?}");
        if version == &rustls::version::TLS13 {
            assert!(failed.is_none(), "{failed:?}");
            assert_eq!(sent.len(), 80, "every record after key updates");
        } else {
            let err = failed.expect("TLS 1.2 stops at the limit");
            assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
            // Records 1 and 2 (the Finished message was record 0).
            assert_eq!(sent.len(), 20, "records up to the limit");
        }
    }
}

#[tokio::test]
async fn data_right_behind_the_handshake_is_not_lost() {
    for version in VERSIONS {
        let (client_io, server_io) = duplex(1 << 20);
        // The server writes at once after its last handshake message, before the client
        // runs again: both arrive in one read.
        let server = tokio::spawn(async move {
            let mut tls = acceptor(version, true)
                .accept(server_io)
                .await
                .expect("server handshake");
            tls.write_all(b"first").await.expect("send");
            tls.flush().await.expect("flush");
            tls
        });
        let name = ServerName::try_from("localhost").expect("name");
        let mut client = timeout(LIMIT, TlsStream::connect(client_io, client_config(), name))
            .await
            .expect("in time")
            .expect("handshake");
        let _server = timeout(LIMIT, server)
            .await
            .expect("in time")
            .expect("task");
        let mut got = Vec::new();
        timeout(LIMIT, async {
            while got.len() < 5 {
                let mut chunk = [0; 16];
                let n = client.read(&mut chunk).await.expect("read");
                assert_ne!(n, 0, "EOF");
                got.extend_from_slice(&chunk[..n]);
            }
        })
        .await
        .expect("in time");
        assert_eq!(got, b"first", "{version:?}");
    }
}
