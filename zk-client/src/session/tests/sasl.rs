//! The SASL exchange in the session: scripted server tokens.

use md5::{Digest, Md5};
use zk_proto::records::{GetSaslRequest, SetSaslResponse};

use super::*;

const CHALLENGE: &str = r#"realm="zk-sasl-md5",nonce="abc123",charset=utf-8,algorithm=md5-sess"#;

fn sasl_config() -> SessionConfig {
    SessionConfig {
        sasl: Some(SaslConfig::DigestMd5(SaslCredentials {
            user: "bob".into(),
            password: "secret".into(),
        })),
        ..config()
    }
}

/// Every packet written since the last call (SASL packets have xid 0, which `Fixture::sent`
/// would take for a ConnectRequest).
fn packets(f: &mut Fixture) -> Vec<(i32, i32, Bytes)> {
    let mut out = Vec::new();
    let Some(mut wire) = f.s.poll_transmit() else {
        return out;
    };
    while wire.has_remaining() {
        let len = wire.get_i32() as usize;
        let mut frame = wire.split_to(len);
        let h = RequestHeader::decode(&mut frame).unwrap();
        out.push((h.xid, h.op, frame));
    }
    out
}

fn sasl_reply(f: &mut Fixture, err: ErrorCode, token: &[u8]) -> Result<(), Disconnect> {
    let body = encode(&SetSaslResponse {
        token: Bytes::copy_from_slice(token),
    });
    f.reply(special::SASL, 0, err, &body)
}

fn hex_md5(data: &[u8]) -> String {
    Md5::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The rspauth a server knowing bob's password sends for the client's `response` token.
fn rspauth(response: &str) -> String {
    let cnonce = response
        .split("cnonce=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("cnonce");
    let mut a1 = Md5::digest(b"bob:zk-sasl-md5:secret").to_vec();
    a1.extend_from_slice(format!(":abc123:{cnonce}").as_bytes());
    let a2 = hex_md5(b":zookeeper/zk-sasl-md5");
    let seed = format!("{}:abc123:00000001:{cnonce}:auth:{a2}", hex_md5(&a1));
    format!("rspauth={}", hex_md5(seed.as_bytes()))
}

/// Connects (TCP and ConnectResponse) and checks the first SASL token went out alone.
fn connect_to_sasl(f: &mut Fixture) {
    f.tcp_up(f.now);
    let _connect_request = f.s.poll_transmit().expect("ConnectRequest");
    let resp = ConnectResponse {
        protocol_version: 0,
        timeout: TIMEOUT.as_millis() as i32,
        session_id: 0x42,
        passwd: Bytes::from_static(b"0123456789abcdef"),
        read_only: false,
    };
    f.frame(encode(&resp), f.now).unwrap();
    let sent = packets(f);
    assert_eq!(sent.len(), 1, "only the SASL token: {sent:?}");
    let (xid, op, body) = sent[0].clone();
    assert_eq!((xid, op), (special::SASL, OpCode::Sasl.as_i32()));
    let token: GetSaslRequest = zk_proto::decode_exact(body).unwrap();
    assert!(
        token.token.is_empty(),
        "DIGEST-MD5 starts with an empty token"
    );
    assert_ne!(
        f.s.state(),
        SessionState::Connected,
        "not connected before SASL"
    );
}

#[test]
fn sasl_runs_after_the_handshake_and_before_queued_requests() {
    let mut f = Fixture::new(sasl_config());
    let queued = f.get_data("/n");
    connect_to_sasl(&mut f);
    sasl_reply(&mut f, ErrorCode::Ok, CHALLENGE.as_bytes()).unwrap();
    let sent = packets(&mut f);
    assert_eq!(sent.len(), 1, "only the SASL response: {sent:?}");
    let (xid, op, body) = sent[0].clone();
    assert_eq!((xid, op), (special::SASL, OpCode::Sasl.as_i32()));
    let token: GetSaslRequest = zk_proto::decode_exact(body).unwrap();
    let response = String::from_utf8(token.token.to_vec()).unwrap();
    assert!(response.contains("username=\"bob\""), "{response}");
    assert!(
        response.contains("digest-uri=\"zookeeper/zk-sasl-md5\""),
        "{response}"
    );
    assert_ne!(f.s.state(), SessionState::Connected);

    sasl_reply(&mut f, ErrorCode::Ok, rspauth(&response).as_bytes()).unwrap();
    assert_eq!(f.s.state(), SessionState::Connected);
    let sent = packets(&mut f);
    assert_eq!(sent.len(), 1, "the queued read goes out now: {sent:?}");
    assert_eq!((sent[0].0, sent[0].1), (1, OpCode::GetData.as_i32()));
    drop(queued);
}

#[test]
fn sasl_rejection_ends_the_session_in_auth_failed() {
    let mut f = Fixture::new(sasl_config());
    let mut queued = f.get_data("/n");
    connect_to_sasl(&mut f);
    sasl_reply(&mut f, ErrorCode::Ok, CHALLENGE.as_bytes()).unwrap();
    let _response = packets(&mut f);
    sasl_reply(&mut f, ErrorCode::AuthFailed, b"").unwrap();
    assert_eq!(f.s.state(), SessionState::AuthFailed);
    assert!(f.s.is_done());
    assert!(matches!(queued.try_recv(), Ok(Err(Error::AuthFailed))));
    assert!(
        packets(&mut f).is_empty(),
        "nothing sent after the rejection"
    );
}

#[test]
fn a_server_that_does_not_know_the_password_is_not_trusted() {
    let mut f = Fixture::new(sasl_config());
    connect_to_sasl(&mut f);
    sasl_reply(&mut f, ErrorCode::Ok, CHALLENGE.as_bytes()).unwrap();
    let _response = packets(&mut f);
    sasl_reply(
        &mut f,
        ErrorCode::Ok,
        b"rspauth=00000000000000000000000000000000",
    )
    .unwrap();
    assert_eq!(f.s.state(), SessionState::AuthFailed);
}

/// A mechanism that plays a fixed script: its initial token, then one answer per server
/// token, the last of them sent as the exchange's last token.
#[cfg(feature = "sasl-gssapi")]
struct Scripted {
    answers: std::collections::VecDeque<Vec<u8>>,
}

#[cfg(feature = "sasl-gssapi")]
impl crate::session::Mechanism for Scripted {
    fn name(&self) -> &'static str {
        "SCRIPTED"
    }

    fn initial(&mut self) -> Result<Vec<u8>, String> {
        Ok(b"first".to_vec())
    }

    fn step(&mut self, token: &[u8]) -> Result<crate::session::sasl::Step, String> {
        if token == b"bad" {
            return Err("bad token".into());
        }
        let answer = self.answers.pop_front().ok_or("no more answers")?;
        Ok(if self.answers.is_empty() {
            crate::session::sasl::Step::SendLast(answer)
        } else {
            crate::session::sasl::Step::Send(answer)
        })
    }
}

#[cfg(feature = "sasl-gssapi")]
fn gssapi_config() -> SessionConfig {
    let options = crate::KerberosOptions::new("app@ZKRS.TEST", "/nonexistent.keytab");
    SessionConfig {
        sasl: Some(SaslConfig::Gssapi(std::sync::Arc::new(options))),
        ..config()
    }
}

#[cfg(feature = "sasl-gssapi")]
fn accept_session(f: &mut Fixture) {
    f.tcp_up(f.now);
    let _connect_request = f.s.poll_transmit().expect("ConnectRequest");
    let resp = ConnectResponse {
        protocol_version: 0,
        timeout: TIMEOUT.as_millis() as i32,
        session_id: 0x42,
        passwd: Bytes::from_static(b"0123456789abcdef"),
        read_only: false,
    };
    f.frame(encode(&resp), f.now).unwrap();
}

/// The seam: a prepared mechanism's tokens go out in order; after its last token, the
/// server's answer (any token) completes the exchange and only then queued calls go out.
#[cfg(feature = "sasl-gssapi")]
#[test]
fn a_prepared_mechanism_runs_to_its_last_token_before_queued_requests() {
    let mut f = Fixture::new(gssapi_config());
    let queued = f.get_data("/n");
    f.s.handle_sasl_prepared(Box::new(Scripted {
        answers: [b"second".to_vec(), b"last".to_vec()].into(),
    }));
    accept_session(&mut f);
    let tokens = |f: &mut Fixture| -> Vec<Vec<u8>> {
        packets(f)
            .into_iter()
            .map(|(xid, _, body)| {
                assert_eq!(xid, special::SASL);
                let t: GetSaslRequest = zk_proto::decode_exact(body).unwrap();
                t.token.to_vec()
            })
            .collect()
    };
    assert_eq!(tokens(&mut f), vec![b"first".to_vec()]);
    sasl_reply(&mut f, ErrorCode::Ok, b"challenge-1").unwrap();
    assert_eq!(tokens(&mut f), vec![b"second".to_vec()]);
    sasl_reply(&mut f, ErrorCode::Ok, b"challenge-2").unwrap();
    assert_eq!(tokens(&mut f), vec![b"last".to_vec()]);
    assert_ne!(f.s.state(), SessionState::Connected, "waits for the ack");
    sasl_reply(&mut f, ErrorCode::Ok, b"").unwrap();
    assert_eq!(f.s.state(), SessionState::Connected);
    let sent = packets(&mut f);
    assert_eq!(sent.len(), 1, "the queued read goes out now: {sent:?}");
    assert_eq!((sent[0].0, sent[0].1), (1, OpCode::GetData.as_i32()));
    drop(queued);
}

#[cfg(feature = "sasl-gssapi")]
#[test]
fn refused_or_missing_or_failing_mechanisms_end_in_auth_failed() {
    // The driver could not get tickets: refused credentials.
    let mut f = Fixture::new(gssapi_config());
    let mut queued = f.get_data("/n");
    f.s.handle_sasl_refused("KDC error code=6");
    f.pump();
    assert_eq!(f.s.state(), SessionState::AuthFailed);
    assert!(f.s.is_done());
    assert!(matches!(queued.try_recv(), Ok(Err(Error::AuthFailed))));

    // Nothing was prepared for the connection.
    let mut f = Fixture::new(gssapi_config());
    accept_session(&mut f);
    assert_eq!(f.s.state(), SessionState::AuthFailed);

    // The mechanism rejects the server's token.
    let mut f = Fixture::new(gssapi_config());
    f.s.handle_sasl_prepared(Box::new(Scripted {
        answers: [b"x".to_vec()].into(),
    }));
    accept_session(&mut f);
    let _first = packets(&mut f);
    sasl_reply(&mut f, ErrorCode::Ok, b"bad").unwrap();
    assert_eq!(f.s.state(), SessionState::AuthFailed);
    assert!(packets(&mut f).is_empty());
}
