//! tls: what TLS costs zk-client per request. One ZooKeeper with a plain and a secure client
//! port (Netty, keystores made by `integration_tests::pki`); W1 and W2 with zk-client and with
//! the `zookeeper-client` crate over plain TCP and over TLS (both rustls with ring, both with
//! the client certificate), back to back, against that one server.

use integration_tests::pki::{ClientAuth, Pki};
use integration_tests::Server;
use zk_client::TlsOptions;

use super::common::{connect_ours, ensure_node, Which};
use super::{w1, w2};
use crate::sys::Sample;
use crate::{Ctx, Res};

/// The TLS server, its keys, and the two ways to reach it.
pub(crate) struct TlsBed {
    _server: Server,
    _pki: Pki,
    /// Plain TCP to the server.
    pub(crate) plain: Ctx,
    /// TLS (client certificate, CA checked) to the same server.
    pub(crate) tls: Ctx,
}

impl TlsBed {
    /// Starts the server and makes the data node the workloads read.
    pub(crate) async fn start(ctx: &Ctx) -> Res<TlsBed> {
        let pki = Pki::new();
        let server = Server::launch_with(&pki.server_settings(ClientAuth::Need)).await;
        let secure = server
            .secure_addr()
            .ok_or("the server has no secure port")?;
        let (cert, key) = pki.client_cert();
        let options = TlsOptions::new()
            .ca_file(pki.ca_pem())
            .client_cert_files(&cert, &key);
        // zookeeper-client builds its rustls config with the process's default provider.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let theirs = zookeeper_client::TlsOptions::new()
            .with_pem_ca(&std::fs::read_to_string(pki.ca_pem())?)?
            .with_pem_identity(
                &std::fs::read_to_string(&cert)?,
                &std::fs::read_to_string(&key)?,
            )?;
        let plain = Ctx {
            connect: server.connect_string(),
            addr: server.addr(),
            tls: None,
            theirs_tls: None,
            ..ctx.clone()
        };
        let tls = Ctx {
            connect: secure.to_string(),
            tls: Some(options),
            theirs_tls: Some(theirs),
            ..plain.clone()
        };
        let admin = connect_ours(&plain).await?;
        ensure_node(&admin, &plain.root, b"").await?;
        ensure_node(&admin, &plain.data_node(), &[0x5a; 100]).await?;
        let _ = admin.close().await;
        Ok(TlsBed {
            _server: server,
            _pki: pki,
            plain,
            tls,
        })
    }
}

/// W1 and W2 of `which` on `ctx`: one sample each.
pub(crate) async fn run(ctx: &Ctx, which: Which) -> Res<(Sample, Sample)> {
    let sequential = w1::run(ctx, which).await?;
    let pipelined = w2::run(ctx, which, 1).await?;
    Ok((sequential, pipelined))
}
