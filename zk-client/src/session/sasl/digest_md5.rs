//! A DIGEST-MD5 SASL client (RFC 2831), just what ZooKeeper's `DigestLoginModule` needs:
//! `qop=auth` (authentication only, no integrity or privacy layer), `algorithm=md5-sess`.
//! Sans-IO: challenge bytes in, response bytes out.
//!
//! The exchange: the client sends an empty token; the server answers with a
//! `digest-challenge` (realm, nonce, qop options, charset, algorithm); the client answers
//! with a `digest-response` carrying `response = KD(H(A1), nonce:nc:cnonce:qop:H(A2))`; the
//! server answers `rspauth=...`, proving it knows the password too, which the client checks.

use md5::{Digest, Md5};

use super::{Mechanism, Step};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Waiting for the server's challenge.
    Challenge,
    /// Response sent, waiting for `rspauth`.
    RspAuth,
    Done,
}

/// One DIGEST-MD5 authentication.
pub(crate) struct DigestMd5 {
    user: String,
    password: String,
    /// `serv-type/host` of `digest-uri` (`zookeeper/zk-sasl-md5` for ZooKeeper).
    digest_uri: String,
    cnonce: String,
    state: State,
    expected_rspauth: String,
}

impl std::fmt::Debug for DigestMd5 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DigestMd5")
            .field("user", &self.user)
            .field("digest_uri", &self.digest_uri)
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

impl DigestMd5 {
    /// `cnonce`: a fresh random value for this authentication (letters and digits).
    pub(crate) fn new(user: &str, password: &str, digest_uri: &str, cnonce: &str) -> Self {
        Self {
            user: user.to_owned(),
            password: password.to_owned(),
            digest_uri: digest_uri.to_owned(),
            cnonce: cnonce.to_owned(),
            state: State::Challenge,
            expected_rspauth: String::new(),
        }
    }
}

impl Mechanism for DigestMd5 {
    fn name(&self) -> &'static str {
        "DIGEST-MD5"
    }

    /// The first token: empty (DIGEST-MD5 has no initial response).
    fn initial(&mut self) -> Result<Vec<u8>, String> {
        Ok(Vec::new())
    }

    /// The server's next token.
    ///
    /// # Errors
    ///
    /// A challenge without a nonce, an unsupported `qop` or algorithm, a wrong `rspauth`,
    /// or a token after the end: the message says which.
    fn step(&mut self, token: &[u8]) -> Result<Step, String> {
        let text = std::str::from_utf8(token).map_err(|_| "token is not UTF-8".to_owned())?;
        match self.state {
            State::Challenge => {
                let response = self.respond(&parse_directives(text)?)?;
                self.state = State::RspAuth;
                Ok(Step::Send(response.into_bytes()))
            }
            State::RspAuth => {
                let directives = parse_directives(text)?;
                let got = find(&directives, "rspauth").ok_or("no rspauth from the server")?;
                if got != self.expected_rspauth {
                    return Err(
                        "the server's rspauth is wrong: it does not know the password".into(),
                    );
                }
                self.state = State::Done;
                Ok(Step::Done)
            }
            State::Done => Err("token after the end of the exchange".into()),
        }
    }
}

impl DigestMd5 {
    /// The `digest-response` to a `digest-challenge`; remembers the `rspauth` to expect.
    fn respond(&mut self, challenge: &[(String, String)]) -> Result<String, String> {
        let nonce = find(challenge, "nonce").ok_or("challenge without a nonce")?;
        let qops = find(challenge, "qop").unwrap_or("auth");
        if !qops.split(',').any(|q| q.trim() == "auth") {
            return Err(format!("server offers qop={qops:?}, not \"auth\""));
        }
        let algorithm = find(challenge, "algorithm").unwrap_or("");
        if algorithm != "md5-sess" {
            return Err(format!(
                "server offers algorithm={algorithm:?}, not md5-sess"
            ));
        }
        let utf8 = find(challenge, "charset") == Some("utf-8");
        // The first realm offered (the server's name for ZooKeeper: "zk-sasl-md5").
        let realm = find(challenge, "realm").unwrap_or("");
        let nc = "00000001";
        let a1 = self.a1(realm, nonce);
        let digest = |a2: &str| {
            let seed = format!(
                "{}:{nonce}:{nc}:{}:auth:{}",
                hex_md5(&a1),
                self.cnonce,
                hex_md5(a2.as_bytes())
            );
            hex_md5(seed.as_bytes())
        };
        let response = digest(&format!("AUTHENTICATE:{}", self.digest_uri));
        self.expected_rspauth = digest(&format!(":{}", self.digest_uri));
        let mut out = String::new();
        if utf8 {
            out.push_str("charset=utf-8,");
        }
        out.push_str(&format!("username=\"{}\",", quote(&self.user)));
        if find(challenge, "realm").is_some() {
            out.push_str(&format!("realm=\"{}\",", quote(realm)));
        }
        out.push_str(&format!(
            "nonce=\"{}\",nc={nc},cnonce=\"{}\",digest-uri=\"{}\",maxbuf=65536,response={response},qop=auth",
            quote(nonce),
            quote(&self.cnonce),
            quote(&self.digest_uri)
        ));
        Ok(out)
    }

    /// `A1 = H(user:realm:password):nonce:cnonce` (no authzid: the server then authorizes
    /// the authenticated user itself).
    fn a1(&self, realm: &str, nonce: &str) -> Vec<u8> {
        let secret = Md5::digest(format!("{}:{realm}:{}", self.user, self.password));
        let mut a1 = secret.to_vec();
        a1.extend_from_slice(format!(":{nonce}:{}", self.cnonce).as_bytes());
        a1
    }
}

fn hex_md5(data: &[u8]) -> String {
    Md5::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn find<'a>(directives: &'a [(String, String)], key: &str) -> Option<&'a str> {
    directives
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(key))
        .map(|(_, v)| v.as_str())
}

/// Escapes `"` and `\` for a quoted-string.
fn quote(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Parses `key=value,key="quoted, value",...` (RFC 2831 section 7.1's `#rule` of
/// `auth-param`s), unescaping quoted-pairs.
fn parse_directives(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    // Each round consumes at least one character, so this ends.
    loop {
        while matches!(chars.peek(), Some(c) if c.is_whitespace() || *c == ',') {
            chars.next();
        }
        if chars.peek().is_none() {
            return Ok(out);
        }
        let mut key = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' || c == ',' {
                break;
            }
            key.push(c);
            chars.next();
        }
        if chars.next() != Some('=') {
            return Err(format!("directive {key:?} without a value"));
        }
        while matches!(chars.peek(), Some(c) if c.is_whitespace()) {
            chars.next();
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    Some('\\') => value.extend(chars.next()),
                    Some('"') => break,
                    Some(c) => value.push(c),
                    None => return Err(format!("unterminated quoted value of {key:?}")),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                value.push(c);
                chars.next();
            }
        }
        out.push((key.trim().to_owned(), value.trim_end().to_owned()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 2831 section 4, first example (IMAP).
    #[test]
    fn rfc_2831_imap_example() {
        let mut m = DigestMd5::new(
            "chris",
            "secret",
            "imap/elwood.innosoft.com",
            "OA6MHXh6VqTrRk",
        );
        assert!(m.initial().expect("initial").is_empty());
        let challenge = br#"realm="elwood.innosoft.com",nonce="OA6MG9tEQGm2hh",qop="auth",algorithm=md5-sess,charset=utf-8"#;
        let Step::Send(response) = m.step(challenge).expect("response") else {
            panic!("expected a response");
        };
        let response = String::from_utf8(response).expect("utf-8");
        assert_eq!(
            response,
            "charset=utf-8,username=\"chris\",realm=\"elwood.innosoft.com\",\
             nonce=\"OA6MG9tEQGm2hh\",nc=00000001,cnonce=\"OA6MHXh6VqTrRk\",\
             digest-uri=\"imap/elwood.innosoft.com\",maxbuf=65536,\
             response=d388dad90d4bbd760a152321f2143af7,qop=auth"
        );
        assert_eq!(
            m.step(b"rspauth=ea40f60335c427b5527b84dbabcdfffd"),
            Ok(Step::Done)
        );
        assert!(m.step(b"rspauth=x").is_err(), "nothing after the end");
    }

    /// RFC 2831 section 4, second example (ACAP).
    #[test]
    fn rfc_2831_acap_example() {
        let mut m = DigestMd5::new(
            "chris",
            "secret",
            "acap/elwood.innosoft.com",
            "OA9BSuZWMSpW8m",
        );
        let challenge = br#"realm="elwood.innosoft.com",nonce="OA9BSXrbuRhWay",qop="auth",algorithm=md5-sess,charset=utf-8"#;
        let Step::Send(response) = m.step(challenge).expect("response") else {
            panic!("expected a response");
        };
        let response = String::from_utf8(response).expect("utf-8");
        assert!(
            response.contains("response=6084c6db3fede7352c551284490fd0fc,"),
            "{response}"
        );
        assert_eq!(
            m.step(b"rspauth=2f0b3d7c3c2e486600ef710726aa2eae"),
            Ok(Step::Done)
        );
    }

    #[test]
    fn a_wrong_rspauth_is_an_error() {
        let mut m = DigestMd5::new("bob", "secret", "zookeeper/zk-sasl-md5", "abc");
        let challenge = br#"realm="zk-sasl-md5",nonce="n",charset=utf-8,algorithm=md5-sess"#;
        assert!(matches!(m.step(challenge), Ok(Step::Send(_))));
        assert!(m.step(b"rspauth=00000000000000000000000000000000").is_err());
    }

    #[test]
    fn unsupported_challenges_are_errors() {
        let mut m = DigestMd5::new("bob", "secret", "zookeeper/zk-sasl-md5", "abc");
        assert!(
            m.step(br#"realm="r",algorithm=md5-sess"#).is_err(),
            "no nonce"
        );
        assert!(m
            .step(br#"nonce="n",qop="auth-conf",algorithm=md5-sess"#)
            .is_err());
        assert!(m.step(br#"nonce="n",algorithm=md5"#).is_err());
        assert!(
            m.step(br#"nonce="n,algorithm=md5-sess"#).is_err(),
            "unterminated"
        );
        assert!(m.step(b"\xff").is_err(), "not UTF-8");
    }

    #[test]
    fn directives_unquote_and_keep_commas_in_quotes() {
        let d = parse_directives(r#" qop="auth,auth-int" , realm="a\"b",  nc=01"#).expect("parse");
        assert_eq!(
            d,
            vec![
                ("qop".to_owned(), "auth,auth-int".to_owned()),
                ("realm".to_owned(), "a\"b".to_owned()),
                ("nc".to_owned(), "01".to_owned()),
            ]
        );
        assert!(parse_directives("novalue").is_err());
    }
}
