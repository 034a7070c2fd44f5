//! SASL authentication of each connection (Cargo feature `sasl`), between the
//! `ConnectResponse` and everything else, as the Java client's `ZooKeeperSaslClient` does:
//! the tokens go out with xid 0 (`xid::SASL`) and opcode 102, the session is not reported
//! connected and nothing queued is sent until the server accepted them. A rejection
//! (`AuthFailed`, or any error, or a server that cannot prove it knows the password) ends
//! the session in [`SessionState::AuthFailed`], like the Java client's `AUTH_FAILED` state.
//! On every reconnect the exchange runs again before the queued requests.

mod digest_md5;

use std::time::Instant;

use bytes::{Bytes, BytesMut};
use tracing::{debug, warn};
use zk_proto::records::{GetSaslRequest, SetSaslResponse};
use zk_proto::{decode_prefix, xid as special, OpCode, Record, ReplyHeader};

use super::{write_packet, Disconnect, Phase, Session};
use crate::state::SessionState;
pub(super) use digest_md5::DigestMd5;
use digest_md5::Step;

/// `digest-uri` of ZooKeeper's SASL server: protocol `zookeeper`, server name `zk-sasl-md5`
/// (hard-wired on both sides of the Java implementation).
const DIGEST_URI: &str = "zookeeper/zk-sasl-md5";

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
    /// The server accepted the session: authenticate before anything else. `deadline` is the
    /// handshake's, which the exchange shares.
    pub(super) fn start_sasl(
        &mut self,
        creds: &SaslCredentials,
        deadline: Instant,
        read_only: bool,
    ) {
        let mech = DigestMd5::new(&creds.user, &creds.password, DIGEST_URI, &cnonce());
        write_sasl(&mut self.out, mech.initial());
        debug!(user = %creds.user, "SASL DIGEST-MD5");
        self.sasl = Some(mech);
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
        let Some(mech) = self.sasl.as_mut() else {
            return Ok(());
        };
        match mech.step(&resp.token) {
            Ok(Step::Send(token)) => {
                write_sasl(&mut self.out, token);
                self.last_send = now;
            }
            Ok(Step::Done) => {
                debug!("SASL authenticated");
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
