//! The SASL GSSAPI mechanism (RFC 4752) on a Kerberos context the driver prepared for this
//! connection (feature `sasl-gssapi`; the KDC exchange is in `driver/kerberos.rs`).
//!
//! The exchange with ZooKeeper's server (Java's `GssKrb5Server`):
//! 1. client: the GSS initial context token (AP-REQ, mutual authentication requested);
//! 2. server: the AP-REP, proving it holds the service key; the client checks it and sends
//!    an empty token;
//! 3. server: a wrap token of 4 bytes: the security layers it offers and its maximum
//!    buffer size; the client unwraps it (checking the server's integrity), chooses "no
//!    security layer" (ZooKeeper's default `qop=auth`), and sends its own wrapped 4 bytes;
//! 4. server: an empty token: authenticated, as `sasl:<client principal>`.

use krb5_gss::gss::{GssContext, NativeGssContext};

use super::{Mechanism, Step};

/// The Kerberos settings of a session.
pub(crate) type GssapiConfig = crate::kerberos::KerberosOptions;

/// RFC 4752 security layer bit: no security layer (authentication only).
const LAYER_NONE: u8 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// The AP-REQ is not sent yet.
    Start,
    /// Waiting for the AP-REP.
    ApRep,
    /// Waiting for the server's security-layer offer.
    Layers,
    /// The last token went out.
    Done,
}

/// One GSSAPI authentication.
pub(crate) struct Gssapi {
    ctx: NativeGssContext,
    state: State,
}

impl Gssapi {
    pub(crate) fn new(ctx: NativeGssContext) -> Self {
        Self {
            ctx,
            state: State::Start,
        }
    }
}

impl Mechanism for Gssapi {
    fn name(&self) -> &'static str {
        "GSSAPI"
    }

    fn initial(&mut self) -> Result<Vec<u8>, String> {
        if self.state != State::Start {
            return Err("GSSAPI started twice".into());
        }
        let token = self
            .ctx
            .initial_token()
            .map_err(|e| format!("GSSAPI initial token: {e}"))?;
        self.state = State::ApRep;
        Ok(token)
    }

    fn step(&mut self, token: &[u8]) -> Result<Step, String> {
        match self.state {
            State::ApRep => {
                // Checks the AP-REP (mutual authentication); answers with an empty token.
                let reply = self
                    .ctx
                    .handle_challenge(token)
                    .map_err(|e| format!("the server's AP-REP: {e}"))?;
                self.state = State::Layers;
                Ok(Step::Send(reply.unwrap_or_default()))
            }
            State::Layers => {
                let offer = self
                    .ctx
                    .unwrap(token)
                    .map_err(|e| format!("the server's security-layer token: {e}"))?;
                let Some(&layers) = offer.first() else {
                    return Err("the server's security-layer token is empty".into());
                };
                if offer.len() != 4 {
                    return Err(format!(
                        "the server's security-layer token has {} bytes, not 4",
                        offer.len()
                    ));
                }
                if layers & LAYER_NONE == 0 {
                    return Err(format!(
                        "the server requires a SASL security layer (offer {layers:#04x}): \
                         only qop=auth is supported"
                    ));
                }
                // No security layer: maximum buffer size 0 (RFC 4752 section 3.1), no
                // authorization id (the server then authorizes the principal itself).
                let answer = self
                    .ctx
                    .wrap_next(LAYER_NONE, 0)
                    .map_err(|e| format!("wrapping the security-layer answer: {e}"))?;
                self.state = State::Done;
                Ok(Step::SendLast(answer))
            }
            State::Start | State::Done => Err("GSSAPI token out of sequence".into()),
        }
    }
}
