//! SASL authentication of each connection (Cargo feature `sasl`), between the
//! `ConnectResponse` and everything else, as the Java client's `ZooKeeperSaslClient` does:
//! the tokens go out with xid 0 (`xid::SASL`) and opcode 102, the session is not reported
//! connected and nothing queued is sent until the server accepted them. A rejection
//! (`AuthFailed`, or any error, or a server that cannot prove it knows the secret) ends
//! the session in [`SessionState::AuthFailed`], like the Java client's `AUTH_FAILED` state.
//! On every reconnect the exchange runs again before the queued requests.
//!
//! The seam: a [`Mechanism`] is the client side of one SASL mechanism for one connection,
//! sans-IO (server tokens in, client tokens out). DIGEST-MD5 is made here from the
//! credentials; a mechanism that needs network IO before its first token (GSSAPI fetches a
//! Kerberos service ticket from the KDC) is prepared by the driver for each connection and
//! handed over with [`Session::handle_sasl_prepared`].

mod digest_md5;
#[cfg(feature = "sasl-gssapi")]
pub(crate) mod gssapi;

use std::time::Instant;

use bytes::{Bytes, BytesMut};
use tracing::{debug, warn};
use zk_proto::records::{GetSaslRequest, SetSaslResponse};
use zk_proto::{decode_prefix, xid as special, OpCode, Record, ReplyHeader};

use super::{write_packet, Disconnect, Phase, Session};
use crate::state::SessionState;
use digest_md5::DigestMd5;

/// `digest-uri` of ZooKeeper's SASL server: protocol `zookeeper`, server name `zk-sasl-md5`
/// (hard-wired on both sides of the Java implementation).
const DIGEST_URI: &str = "zookeeper/zk-sasl-md5";

/// What a mechanism does next.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Send this token; the server answers with the next challenge.
    Send(Vec<u8>),
    /// Send this last token: the server's successful answer to it ends the exchange (GSSAPI's
    /// security-layer reply, which the server acknowledges with an empty token).
    #[cfg_attr(not(feature = "sasl-gssapi"), allow(dead_code))]
    SendLast(Vec<u8>),
    /// Authenticated (the server proved it knows the secret).
    Done,
}

/// The client side of one SASL mechanism for one connection: sans-IO, tokens in and out.
pub(crate) trait Mechanism: Send {
    /// The mechanism's SASL name, for logs.
    fn name(&self) -> &'static str;

    /// The first token, sent as soon as the server accepted the session.
    ///
    /// # Errors
    ///
    /// The mechanism cannot start; the message says why (the session ends in `AuthFailed`).
    fn initial(&mut self) -> Result<Vec<u8>, String>;

    /// The server's next token.
    ///
    /// # Errors
    ///
    /// The token is malformed, or the server failed to prove itself; the message says which.
    fn step(&mut self, token: &[u8]) -> Result<Step, String>;
}

impl std::fmt::Debug for dyn Mechanism {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Mechanism({})", self.name())
    }
}

/// How the session authenticates each connection with SASL.
#[derive(Debug, Clone)]
pub(crate) enum SaslConfig {
    /// DIGEST-MD5 with a user of the server's JAAS `Server` section.
    DigestMd5(SaslCredentials),
    /// Kerberos: a mechanism prepared by the driver for each connection.
    #[cfg(feature = "sasl-gssapi")]
    Gssapi(std::sync::Arc<gssapi::GssapiConfig>),
}

/// DIGEST-MD5 credentials (a user of the server's JAAS `Server` section).
#[derive(Clone)]
pub(crate) struct SaslCredentials {
    pub(crate) user: String,
    pub(crate) password: String,
}

impl std::fmt::Debug for SaslCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaslCredentials")
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

/// The exchange running on the current connection.
pub(super) struct SaslRun {
    mech: Box<dyn Mechanism>,
    /// The last token went out: the server's answer ends the exchange.
    last_sent: bool,
}

impl std::fmt::Debug for SaslRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaslRun")
            .field("mech", &self.mech.name())
            .field("last_sent", &self.last_sent)
            .finish()
    }
}

/// A fresh client nonce: 24 random letters and digits.
fn cnonce() -> String {
    use rand::distributions::Alphanumeric;
    use rand::Rng;
    rand::thread_rng()
        .sample_iter(&Alphanumeric)
        .take(24)
        .map(char::from)
        .collect()
}

impl Session {
    /// The mechanism the driver prepared for the coming connection (GSSAPI: a service ticket
    /// for this host), used by the next `ConnectResponse`.
    #[cfg_attr(not(feature = "sasl-gssapi"), allow(dead_code))]
    pub(crate) fn handle_sasl_prepared(&mut self, mech: Box<dyn Mechanism>) {
        self.sasl_prepared = Some(mech);
    }

    /// The driver could not prepare the mechanism because the credentials were refused
    /// (e.g. the KDC does not know the principal, or the keytab's key is wrong): the session
    /// ends in `AuthFailed`, as a rejected exchange would, instead of retrying forever.
    #[cfg_attr(not(feature = "sasl-gssapi"), allow(dead_code))]
    pub(crate) fn handle_sasl_refused(&mut self, why: &str) {
        if self.is_terminal() {
            return;
        }
        warn!(error = %why, "SASL credentials refused");
        self.sasl = None;
        self.terminate(SessionState::AuthFailed);
    }

    /// The server accepted the session: authenticate before anything else. `deadline` is the
    /// handshake's, which the exchange shares.
    pub(super) fn start_sasl(&mut self, config: &SaslConfig, deadline: Instant, read_only: bool) {
        let mut mech: Box<dyn Mechanism> = match config {
            SaslConfig::DigestMd5(creds) => {
                debug!(user = %creds.user, "SASL DIGEST-MD5");
                Box::new(DigestMd5::new(
                    &creds.user,
                    &creds.password,
                    DIGEST_URI,
                    &cnonce(),
                ))
            }
            #[cfg(feature = "sasl-gssapi")]
            SaslConfig::Gssapi(_) => match self.sasl_prepared.take() {
                Some(mech) => mech,
                None => {
                    self.handle_sasl_refused(
                        "no Kerberos context was prepared for this connection",
                    );
                    return;
                }
            },
        };
        match mech.initial() {
            Ok(token) => write_sasl(&mut self.out, token),
            Err(msg) => {
                self.handle_sasl_refused(&msg);
                return;
            }
        }
        self.sasl = Some(SaslRun {
            mech,
            last_sent: false,
        });
        self.phase = Phase::Sasl {
            deadline,
            read_only,
        };
    }

    /// A frame during the exchange: the server's next token, or its verdict.
    pub(super) fn handle_sasl_frame(
        &mut self,
        mut frame: Bytes,
        read_only: bool,
        now: Instant,
    ) -> Result<(), Disconnect> {
        let header = ReplyHeader::decode(&mut frame)?;
        if header.xid == special::PING || header.xid == special::NOTIFICATION {
            return Ok(());
        }
        if header.xid != special::SASL {
            return Err(Disconnect::XidOutOfOrder {
                expected: Some(special::SASL),
                got: header.xid,
            });
        }
        if !header.err.is_ok() {
            warn!(err = ?header.err, "SASL authentication rejected by the server");
            self.sasl = None;
            self.terminate(SessionState::AuthFailed);
            return Ok(());
        }
        let resp: SetSaslResponse = decode_prefix(frame)?;
        let Some(run) = self.sasl.as_mut() else {
            return Ok(());
        };
        let step = if run.last_sent {
            Ok(Step::Done)
        } else {
            run.mech.step(&resp.token)
        };
        match step {
            Ok(Step::Send(token)) => {
                write_sasl(&mut self.out, token);
                self.last_send = now;
            }
            Ok(Step::SendLast(token)) => {
                run.last_sent = true;
                write_sasl(&mut self.out, token);
                self.last_send = now;
            }
            Ok(Step::Done) => {
                debug!(mechanism = run.mech.name(), "SASL authenticated");
                self.sasl = None;
                self.enter_connected(read_only);
                self.prime_connection(now);
            }
            Err(msg) => {
                warn!(error = %msg, "SASL authentication failed");
                self.sasl = None;
                self.terminate(SessionState::AuthFailed);
            }
        }
        Ok(())
    }
}

fn write_sasl(out: &mut BytesMut, token: Vec<u8>) {
    let mut body = BytesMut::new();
    GetSaslRequest {
        token: Bytes::from(token),
    }
    .encode(&mut body);
    write_packet(out, special::SASL, OpCode::Sasl, &body);
}
