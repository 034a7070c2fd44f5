//! Opening and closing the session a command runs on.

use std::time::Duration;

use zk_client::{Client, ClientBuilder, Error as ZkError, TlsOptions};

use crate::cli::Global;
use crate::error::CliError;

/// How long closing the session may take before the tool exits anyway.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// The session of one command.
pub(crate) struct Session {
    pub(crate) client: Client,
}

impl Session {
    /// Connects within `--connect-timeout`, then adds `--auth` credentials.
    pub(crate) async fn open(global: &Global) -> Result<Session, CliError> {
        let within = global.connect_timeout;
        let builder = Client::builder(&global.connect)
            .session_timeout(global.session_timeout)
            .establish_timeout(within)
            .connect_timeout(within)
            .request_timeout(global.session_timeout)
            .reconnect_wait(within);
        let connecting = secure(builder, global)?.connect();
        // A second bound of our own: the establish timeout is the client's promise, this is ours.
        let client = match tokio::time::timeout(within + Duration::from_millis(500), connecting)
            .await
        {
            Ok(Ok(client)) => client,
            Ok(Err(ZkError::Timeout)) | Err(_) => {
                return Err(CliError::Unreachable {
                    connect: global.connect.clone(),
                    within,
                })
            }
            Ok(Err(e @ (ZkError::InvalidArgument(_) | ZkError::InvalidPath { .. }))) => {
                return Err(CliError::Usage(format!(
                    "bad connect string {:?}: {e}",
                    global.connect
                )))
            }
            Ok(Err(e)) => return Err(CliError::zk(format!("connect to {}", global.connect), e)),
        };
        let session = Session { client };
        if let Some(auth) = &global.auth {
            let Some((scheme, credentials)) = auth.split_once(':') else {
                session.close().await;
                return Err(CliError::Usage(
                    "--auth takes scheme:credentials, e.g. digest:user:secret".into(),
                ));
            };
            if let Err(e) = session
                .client
                .add_auth(scheme, credentials.as_bytes())
                .await
            {
                session.close().await;
                return Err(CliError::zk(format!("add auth ({scheme})"), e));
            }
        }
        Ok(session)
    }

    /// Closes the session (ephemeral nodes go at once), bounded so a dead server can't hang us.
    pub(crate) async fn close(&self) {
        let _ = tokio::time::timeout(CLOSE_WAIT, self.client.close()).await;
    }
}

/// The TLS and SASL options of the command line, on `builder`.
fn secure(mut builder: ClientBuilder, global: &Global) -> Result<ClientBuilder, CliError> {
    if global.tls || global.tls_ca.is_some() || global.tls_cert.is_some() {
        let mut tls = TlsOptions::new().verify_hostname(!global.tls_no_verify_hostname);
        if let Some(ca) = &global.tls_ca {
            tls = tls.ca_file(ca);
        }
        if let (Some(cert), Some(key)) = (&global.tls_cert, &global.tls_key) {
            tls = tls.client_cert_files(cert, key);
        }
        builder = builder.tls(tls);
    }
    if let Some(sasl) = &global.sasl {
        let Some((user, password)) = sasl.split_once(':') else {
            return Err(CliError::Usage(
                "--sasl takes user:password (DIGEST-MD5)".into(),
            ));
        };
        builder = builder.sasl_digest_md5(user, password);
    }
    Ok(builder)
}
