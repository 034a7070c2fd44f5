//! The record layer of an established TLS connection: application data sealed and opened
//! here with ring's AEADs (the same code rustls's ring provider calls) on the traffic keys
//! rustls negotiated, handed over through rustls's kernel-connection API (made for kTLS);
//! rustls keeps what stays protocol logic: new session tickets and TLS 1.3 key updates.
//!
//! This saves, per record, rustls's message deframing and its plaintext allocation: a
//! record is opened where the socket read put it and its plaintext copied once, to the
//! driver's buffer. Handled here: application data, alerts (close_notify is EOF, any other
//! alert an error), and in TLS 1.3 new session tickets and key updates. Anything else (a
//! TLS 1.2 renegotiation request, a handshake message split across records) is an error, and
//! the connection drops like any other I/O failure.

use std::io;

use ring::aead::{self, Aad, LessSafeKey, Nonce, UnboundKey};
use rustls::client::ClientConnectionData;
use rustls::kernel::KernelConnection;
use rustls::{
    AlertDescription, ConnectionTrafficSecrets, ExtractedSecrets, ProtocolVersion,
    SupportedCipherSuite,
};

/// Record header: type, legacy version, length.
pub(crate) const HEADER: usize = 5;
/// Plaintext per record (2^14).
const MAX_PLAINTEXT: usize = 16 * 1024;
/// Largest ciphertext a record may carry (TLS 1.2 allows 2^14 + 2048).
pub(crate) const MAX_CIPHERTEXT: usize = MAX_PLAINTEXT + 2048;
const TAG: usize = 16;
/// TLS 1.2 AES-GCM's explicit nonce, sent before each record's ciphertext.
const EXPLICIT: usize = 8;

const ALERT: u8 = 21;
const HANDSHAKE: u8 = 22;
const APPLICATION_DATA: u8 = 23;
const NEW_SESSION_TICKET: u8 = 4;
const KEY_UPDATE: u8 = 24;

/// A malformed or unsupported record (or handshake step) as an `InvalidData` I/O error.
pub(crate) fn invalid(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

/// A TLS error as an I/O error whose message the driver reports (see `TlsFailure`).
pub(crate) fn tls_error(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

/// One direction's key, IV and record sequence number.
struct Keys {
    key: LessSafeKey,
    iv: [u8; 12],
    seq: u64,
}

impl Keys {
    fn new(seq: u64, secrets: ConnectionTrafficSecrets) -> io::Result<Self> {
        let (alg, key, iv) = match secrets {
            ConnectionTrafficSecrets::Aes128Gcm { key, iv } => (&aead::AES_128_GCM, key, iv),
            ConnectionTrafficSecrets::Aes256Gcm { key, iv } => (&aead::AES_256_GCM, key, iv),
            ConnectionTrafficSecrets::Chacha20Poly1305 { key, iv } => {
                (&aead::CHACHA20_POLY1305, key, iv)
            }
            _ => return Err(invalid("TLS: unsupported cipher")),
        };
        let key = UnboundKey::new(alg, key.as_ref()).map_err(|_| invalid("TLS: bad key"))?;
        let iv: [u8; 12] = iv
            .as_ref()
            .try_into()
            .map_err(|_| invalid("TLS: bad IV length"))?;
        Ok(Self {
            key: LessSafeKey::new(key),
            iv,
            seq,
        })
    }

    /// The IV with the sequence number XORed into its last 8 bytes.
    fn nonce(&self) -> [u8; 12] {
        let mut nonce = self.iv;
        for (n, s) in nonce[4..].iter_mut().zip(self.seq.to_be_bytes()) {
            *n ^= s;
        }
        nonce
    }

    fn next(&mut self) -> io::Result<()> {
        self.seq = self
            .seq
            .checked_add(1)
            .ok_or_else(|| invalid("TLS: sequence number exhausted"))?;
        Ok(())
    }
}

/// TLS 1.2's additional data: sequence number, type, version, plaintext length.
fn tls12_aad(seq: u64, typ: u8, len: usize) -> io::Result<[u8; 13]> {
    let len = u16::try_from(len).map_err(|_| invalid("TLS record too long"))?;
    let mut aad = [0; 13];
    aad[..8].copy_from_slice(&seq.to_be_bytes());
    aad[8] = typ;
    aad[9..11].copy_from_slice(&[3, 3]);
    aad[11..].copy_from_slice(&len.to_be_bytes());
    Ok(aad)
}

/// The record protection of an established connection.
pub(crate) struct Records {
    kernel: KernelConnection<ClientConnectionData>,
    tls13: bool,
    /// TLS 1.2 with AES-GCM: an explicit nonce in each record.
    explicit: bool,
    /// Records one key may protect (the cipher suite's confidentiality limit).
    limit: u64,
    tx: Keys,
    rx: Keys,
}

impl Records {
    pub(crate) fn new(
        secrets: ExtractedSecrets,
        kernel: KernelConnection<ClientConnectionData>,
    ) -> io::Result<Self> {
        let tls13 = kernel.protocol_version() == ProtocolVersion::TLSv1_3;
        let explicit = !tls13
            && !matches!(
                secrets.tx.1,
                ConnectionTrafficSecrets::Chacha20Poly1305 { .. }
            );
        let limit = match kernel.negotiated_cipher_suite() {
            SupportedCipherSuite::Tls12(s) => s.common.confidentiality_limit,
            SupportedCipherSuite::Tls13(s) => s.common.confidentiality_limit,
        };
        Ok(Self {
            tls13,
            explicit,
            limit,
            tx: Keys::new(secrets.tx.0, secrets.tx.1)?,
            rx: Keys::new(secrets.rx.0, secrets.rx.1)?,
            kernel,
        })
    }

    /// Lowers the confidentiality limit, to reach it in a test.
    #[cfg(test)]
    pub(crate) fn set_limit(&mut self, limit: u64) {
        self.limit = limit;
    }

    /// Appends `data` to `out` as records of type `typ` (application data: 23).
    pub(crate) fn seal(&mut self, out: &mut Vec<u8>, typ: u8, data: &[u8]) -> io::Result<()> {
        for chunk in data.chunks(MAX_PLAINTEXT) {
            if self.tx.seq >= self.limit {
                self.rekey(out)?;
            }
            self.seal_one(out, typ, chunk)?;
        }
        Ok(())
    }

    /// Application data as records.
    pub(crate) fn seal_data(&mut self, out: &mut Vec<u8>, data: &[u8]) -> io::Result<()> {
        self.seal(out, APPLICATION_DATA, data)
    }

    /// A close_notify alert.
    pub(crate) fn seal_close_notify(&mut self, out: &mut Vec<u8>) -> io::Result<()> {
        self.seal_one(out, ALERT, &[1, 0])
    }

    fn seal_one(&mut self, out: &mut Vec<u8>, typ: u8, chunk: &[u8]) -> io::Result<()> {
        let start = out.len();
        let nonce = self.tx.nonce();
        let (outer, body_len) = if self.tls13 {
            (APPLICATION_DATA, chunk.len() + 1 + TAG)
        } else if self.explicit {
            (typ, EXPLICIT + chunk.len() + TAG)
        } else {
            (typ, chunk.len() + TAG)
        };
        let len = u16::try_from(body_len).map_err(|_| invalid("TLS record too long"))?;
        out.push(outer);
        out.extend_from_slice(&[3, 3]);
        out.extend_from_slice(&len.to_be_bytes());
        if self.explicit {
            out.extend_from_slice(&nonce[4..]);
        }
        let text = out.len();
        out.extend_from_slice(chunk);
        let sealed = if self.tls13 {
            out.push(typ);
            let header: [u8; HEADER] = out[start..start + HEADER]
                .try_into()
                .map_err(|_| invalid("TLS header"))?;
            self.tx.key.seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(header),
                &mut out[text..],
            )
        } else {
            let aad = tls12_aad(self.tx.seq, typ, chunk.len())?;
            self.tx.key.seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad),
                &mut out[text..],
            )
        };
        match sealed {
            Ok(tag) => out.extend_from_slice(tag.as_ref()),
            Err(_) => {
                out.truncate(start);
                return Err(invalid("TLS: encryption failed"));
            }
        }
        self.tx.next()
    }

    /// TLS 1.3: a key update (our new sending key; the peer need not update its own).
    /// TLS 1.2 has none: past the limit the connection ends (the session reconnects).
    fn rekey(&mut self, out: &mut Vec<u8>) -> io::Result<()> {
        if !self.tls13 {
            return Err(invalid("TLS 1.2: the key's record limit is reached"));
        }
        self.seal_one(out, HANDSHAKE, &[KEY_UPDATE, 0, 0, 1, 0])?;
        let (seq, secrets) = self.kernel.update_tx_secret().map_err(tls_error)?;
        self.tx = Keys::new(seq, secrets)?;
        Ok(())
    }

    /// Opens the record `header` + `body` in place: its content type and plaintext.
    fn open<'a>(&mut self, header: [u8; HEADER], body: &'a mut [u8]) -> io::Result<(u8, &'a [u8])> {
        let typ = header[0];
        if self.tls13 {
            if typ != APPLICATION_DATA {
                return Err(invalid(format!(
                    "TLS 1.3: unexpected outer record type {typ}"
                )));
            }
            let nonce = Nonce::assume_unique_for_key(self.rx.nonce());
            let plain = self
                .rx
                .key
                .open_in_place(nonce, Aad::from(header), body)
                .map_err(|_| tls_error(rustls::Error::DecryptError))?;
            self.rx.next()?;
            // The inner content type is the last non-zero byte (zeros after it are padding).
            let end = plain
                .iter()
                .rposition(|b| *b != 0)
                .ok_or_else(|| invalid("TLS: record without content type"))?;
            let (text, typ) = plain.split_at(end);
            return Ok((typ.first().copied().unwrap_or(0), text));
        }
        let (nonce, skip) = if self.explicit {
            let explicit = body
                .get(..EXPLICIT)
                .ok_or_else(|| tls_error(rustls::Error::DecryptError))?;
            let mut nonce = [0; 12];
            nonce[..4].copy_from_slice(&self.rx.iv[..4]);
            nonce[4..].copy_from_slice(explicit);
            (nonce, EXPLICIT)
        } else {
            (self.rx.nonce(), 0)
        };
        let text_len = body
            .len()
            .checked_sub(skip + TAG)
            .ok_or_else(|| tls_error(rustls::Error::DecryptError))?;
        let aad = tls12_aad(self.rx.seq, typ, text_len)?;
        let plain = self
            .rx
            .key
            .open_within(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad),
                body,
                skip..,
            )
            .map_err(|_| tls_error(rustls::Error::DecryptError))?;
        self.rx.next()?;
        Ok((typ, plain))
    }

    /// Handshake messages after the handshake (TLS 1.3): new session tickets go to rustls;
    /// a key update renews the receiving key, and our sending key when the peer asks.
    fn handshake(&mut self, mut msgs: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        if !self.tls13 {
            return Err(invalid("TLS 1.2: renegotiation is not supported"));
        }
        // Bounded: every round consumes at least a 4-byte header.
        while let [typ, a, b, c, rest @ ..] = msgs {
            let len = u32::from_be_bytes([0, *a, *b, *c]) as usize;
            if rest.len() < len {
                return Err(invalid("TLS: handshake message split across records"));
            }
            let (body, rest) = rest.split_at(len);
            msgs = rest;
            match (*typ, body) {
                (NEW_SESSION_TICKET, _) => self
                    .kernel
                    .handle_new_session_ticket(body)
                    .map_err(tls_error)?,
                (KEY_UPDATE, [requested @ (0 | 1)]) => {
                    let (seq, secrets) = self.kernel.update_rx_secret().map_err(tls_error)?;
                    self.rx = Keys::new(seq, secrets)?;
                    if *requested == 1 {
                        self.rekey(out)?;
                    }
                }
                (typ, _) => {
                    return Err(invalid(format!("TLS: unexpected handshake message {typ}")))
                }
            }
        }
        if !msgs.is_empty() {
            return Err(invalid("TLS: truncated handshake message"));
        }
        Ok(())
    }
}

/// What opening the buffered records found.
pub(crate) struct Opened {
    /// Bytes of complete records consumed from the front of the buffer.
    pub(crate) consumed: usize,
    /// Plaintext appended.
    pub(crate) moved: usize,
    /// The peer sent close_notify.
    pub(crate) closed: bool,
}

/// Opens every complete record in `buf`: application data is appended to `plain`, what the
/// connection owes the peer (a key update) to `out`.
///
/// # Errors
/// A record that does not authenticate, an alert other than close_notify (as rustls's
/// `AlertReceived`), an oversized or unexpected record.
pub(crate) fn open_all(
    records: &mut Records,
    buf: &mut [u8],
    plain: &mut bytes::BytesMut,
    out: &mut Vec<u8>,
) -> io::Result<Opened> {
    let mut opened = Opened {
        consumed: 0,
        moved: 0,
        closed: false,
    };
    // Plaintext is never longer than its ciphertext: one reservation per read.
    plain.reserve(buf.len());
    // Bounded: every round consumes a record of at least HEADER bytes.
    while let Some(rest) = buf.get_mut(opened.consumed..) {
        let Some(header) = rest.get(..HEADER) else {
            break;
        };
        let header: [u8; HEADER] = header.try_into().map_err(|_| invalid("TLS header"))?;
        let len = usize::from(u16::from_be_bytes([header[3], header[4]]));
        if len > MAX_CIPHERTEXT {
            return Err(tls_error(rustls::Error::PeerSentOversizedRecord));
        }
        let Some(body) = rest.get_mut(HEADER..HEADER + len) else {
            break;
        };
        let (typ, text) = records.open(header, body)?;
        opened.consumed += HEADER + len;
        match typ {
            APPLICATION_DATA => {
                plain.extend_from_slice(text);
                opened.moved += text.len();
            }
            ALERT => match text {
                [_, 0] => {
                    opened.closed = true;
                    break;
                }
                [_, desc] => {
                    return Err(tls_error(rustls::Error::AlertReceived(
                        AlertDescription::from(*desc),
                    )))
                }
                _ => return Err(invalid("TLS: malformed alert")),
            },
            HANDSHAKE => records.handshake(text, out)?,
            typ => return Err(invalid(format!("TLS: unexpected record type {typ}"))),
        }
    }
    Ok(opened)
}
