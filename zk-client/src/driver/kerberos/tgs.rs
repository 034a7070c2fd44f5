//! The TGS exchange (RFC 4120 section 3.3) with a ticket-granting ticket from a credentials
//! cache: what `kinit` users need, since the keytab path (AS exchange, then TGS) is inside
//! `krb5-gss`. Built on `krb5-gss`'s public ASN.1 and RFC 3961/3962 crypto primitives.

use krb5_gss::kerberos::asn1::{
    ctx_int, decode_enc_kdc_rep_part, decode_kdc_rep, decode_krb_error, encode_ap_req,
    encode_authenticator, encode_kdc_req, encode_kdc_req_body, encode_pa_data, tlv, tlv_ctx,
    tlv_seq, Authenticator, EncryptedData, KdcReqBody, PaData, PrincipalName,
};
use krb5_gss::kerberos::crypto::{self, Etype};
use krb5_gss::kerberos::messages::{
    KEY_USAGE_TGS_REP_ENC_PART, KEY_USAGE_TGS_REQ_PA_TGS_REQ, MSG_TGS_REQ, NT_PRINCIPAL,
    NT_SRV_HST, NT_SRV_INST, PADATA_TGS_REQ, PVNO, TAG_TGS_REP, TAG_TGS_REQ,
};
use krb5_gss::kerberos::util;
use krb5_gss::{AcquiredTicket, KdcTransport};

use crate::kerberos::ccache::{Credential, Principal};

/// KRB-ERROR's tag ([APPLICATION 30]).
const TAG_KRB_ERROR: u8 = 0x7e;
/// PA-PAC-REQUEST (MS-KILE; type 128) asking for a PAC, as kinit and Java do:
/// `SEQUENCE { [0] BOOLEAN TRUE }`.
const PA_PAC_REQUEST: i32 = 128;
const PAC_REQUEST_TRUE: [u8; 7] = [0x30, 0x05, 0xa0, 0x03, 0x01, 0x01, 0xff];
/// KDC options: canonicalize (bit 15), as MIT's client sends for service tickets.
const KDC_OPTIONS: [u8; 4] = [0x00, 0x01, 0x00, 0x00];

/// Why the exchange failed: the KDC answered "no" (or garbage), or could not be reached.
#[derive(Debug)]
pub(crate) enum TgsError {
    Refused(String),
    Transport(String),
}

/// A ticket for `service` (`name/host`, in the client's realm) with the TGT `tgt` of
/// `client`, through `transport`.
pub(crate) async fn service_ticket(
    client: &Principal,
    tgt: &Credential,
    service: &str,
    transport: &dyn KdcTransport,
) -> Result<AcquiredTicket, TgsError> {
    let refused = TgsError::Refused;
    let etype = Etype::from_u32(u32::from(tgt.enctype)).ok_or_else(|| {
        refused(format!(
            "the ticket-granting ticket's key type {} is not supported (AES only)",
            tgt.enctype
        ))
    })?;
    let cname = PrincipalName {
        name_type: NT_PRINCIPAL,
        name_string: client.components.clone(),
    };
    let parts: Vec<String> = service.split('/').map(str::to_owned).collect();
    let sname = PrincipalName {
        name_type: if parts.len() >= 2 {
            NT_SRV_HST
        } else {
            NT_SRV_INST
        },
        name_string: parts,
    };
    let nonce = i32::try_from(rand::random::<u32>() >> 1)
        .unwrap_or(1)
        .max(1);
    let body = KdcReqBody {
        kdc_options: KDC_OPTIONS,
        cname: None,
        realm: client.realm.clone(),
        sname: Some(sname),
        from: None,
        till: util::utc_add_days(1),
        rtime: None,
        nonce,
        etype: vec![etype as i32, 18, 17],
        addresses: None,
    };
    let body_der = encode_kdc_req_body(&body);

    // The authenticator's checksum covers the request body, keyed with the TGT's session
    // key (key usage 6, RFC 4120 section 7.5.1; RFC 3961 checksum key constant 0x99).
    let cksum_key = crypto::dk_for(etype, &tgt.key, &crypto::usage_constant(6, 0x99));
    let mac = crypto::hmac_for(etype, &cksum_key, &body_der);
    let mac = mac
        .get(..etype.mac_len())
        .ok_or_else(|| refused("checksum shorter than its type".into()))?;
    let cksum_type = match etype {
        Etype::Aes128CtsHmacSha196 => 15,
        Etype::Aes256CtsHmacSha196 => 16,
        Etype::Aes128CtsHmacSha256128 => 19,
        Etype::Aes256CtsHmacSha384192 => 20,
    };
    let mut cksum = ctx_int(0, cksum_type);
    cksum.extend(tlv_ctx(1, &tlv(0x04, mac)));
    let (ctime, cusec) = util::utc_now_with_micros();
    let authenticator = Authenticator {
        authenticator_vno: 5,
        crealm: client.realm.clone(),
        cname: cname.clone(),
        cksum: Some(tlv_seq(&cksum)),
        cusec,
        ctime,
        subkey: None,
        seq_number: None,
    };
    let cipher = crypto::encrypt(
        etype,
        &tgt.key,
        KEY_USAGE_TGS_REQ_PA_TGS_REQ,
        &encode_authenticator(&authenticator),
    )
    .map_err(|e| refused(format!("encrypting the authenticator: {e}")))?;
    let ap_req = encode_ap_req(
        &tgt.ticket,
        &EncryptedData {
            etype: etype as i32,
            kvno: None,
            cipher,
        },
    );
    let mut padata = encode_pa_data(&PaData {
        padata_type: PADATA_TGS_REQ,
        padata_value: ap_req,
    });
    padata.extend(encode_pa_data(&PaData {
        padata_type: PA_PAC_REQUEST,
        padata_value: PAC_REQUEST_TRUE.to_vec(),
    }));
    let req = encode_kdc_req(
        PVNO,
        MSG_TGS_REQ,
        TAG_TGS_REQ,
        Some(&tlv_seq(&padata)),
        &body_der,
    );

    let rep = transport
        .exchange(&client.realm, &req)
        .await
        .map_err(|e| TgsError::Transport(e.to_string()))?;
    if rep.first() == Some(&TAG_KRB_ERROR) {
        return Err(refused(match decode_krb_error(&rep) {
            Ok(err) => format!("the KDC refused the ticket: error code {}", err.error_code),
            Err(_) => "the KDC refused the ticket (undecodable error)".into(),
        }));
    }
    let kdc_rep =
        decode_kdc_rep(&rep, TAG_TGS_REP).map_err(|e| refused(format!("bad TGS reply: {e}")))?;
    let plain = crypto::decrypt(
        etype,
        &tgt.key,
        KEY_USAGE_TGS_REP_ENC_PART,
        &kdc_rep.enc_part.cipher,
    )
    .map_err(|e| refused(format!("cannot decrypt the TGS reply: {e}")))?;
    let part =
        decode_enc_kdc_rep_part(&plain).map_err(|e| refused(format!("bad TGS reply part: {e}")))?;
    if part.nonce != nonce {
        return Err(refused(
            "the TGS reply does not answer this request (nonce)".into(),
        ));
    }
    let session_etype = u32::try_from(part.key.keytype)
        .ok()
        .and_then(Etype::from_u32)
        .ok_or_else(|| {
            refused(format!(
                "service key type {} not supported",
                part.key.keytype
            ))
        })?;
    Ok(AcquiredTicket {
        ticket_der: kdc_rep.ticket_der,
        session_etype,
        session_key: part.key.keyvalue,
        cname,
        crealm: client.realm.clone(),
        endtime: part.endtime,
    })
}
