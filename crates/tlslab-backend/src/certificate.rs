//! What a server certificate says, for every client library alike: a description for the
//! errors that reject it ("which names, issuer and key the server sent"), and public-key pins
//! (`--pin sha256//BASE64`, as curl's `--pinnedpubkey`): the SHA-256 of the certificate's
//! SubjectPublicKeyInfo, base64-encoded.

use base64::Engine as _;
use sha2::{Digest, Sha256};
pub use tlslab_core::Pins;
use x509_parser::prelude::X509Certificate;
use x509_parser::public_key::PublicKey;

/// The SHA-256 of a certificate's SubjectPublicKeyInfo; `None` when it does not parse.
pub fn spki_sha256(certificate: &[u8]) -> Option<[u8; 32]> {
    let (_, parsed) = x509_parser::parse_x509_certificate(certificate).ok()?;
    Some(Sha256::digest(parsed.public_key().raw).into())
}

/// The pin of a certificate's key, as `--pin` takes it: `sha256//BASE64`.
pub fn pin_of(certificate: &[u8]) -> Option<String> {
    spki_sha256(certificate).map(|digest| {
        format!(
            "sha256//{}",
            base64::engine::general_purpose::STANDARD.encode(digest)
        )
    })
}

/// Whether `certificate`'s public key is one of `pins`.
pub fn pinned(pins: &Pins, certificate: &[u8]) -> bool {
    spki_sha256(certificate).is_some_and(|digest| pins.0.contains(&digest))
}

fn key(parsed: &X509Certificate<'_>) -> String {
    let bits = match parsed.public_key().parsed() {
        Ok(PublicKey::RSA(rsa)) => return format!("RSA {}-bit key", rsa.key_size()),
        Ok(PublicKey::EC(point)) => point.key_size(),
        Ok(PublicKey::DSA(_)) => return "DSA key".into(),
        _ => 0,
    };
    let algorithm = parsed.public_key().algorithm.algorithm.to_id_string();
    let name = match algorithm.as_str() {
        "1.2.840.10045.2.1" => "ECDSA",
        "1.3.101.112" => "Ed25519",
        "1.3.101.113" => "Ed448",
        "2.16.840.1.101.3.4.3.17" => "ML-DSA-44",
        "2.16.840.1.101.3.4.3.18" => "ML-DSA-65",
        "2.16.840.1.101.3.4.3.19" => "ML-DSA-87",
        other => return format!("key {other}"),
    };
    if bits > 0 {
        format!("{name} {bits}-bit key")
    } else {
        format!("{name} key")
    }
}

/// One line about a certificate: its subject, the names it is valid for, its issuer, its key,
/// its validity and its key pin.
pub fn describe(certificate: &[u8]) -> String {
    let Ok((_, parsed)) = x509_parser::parse_x509_certificate(certificate) else {
        return "a certificate that does not parse".into();
    };
    let names = tlslab_core::certificate::subject_alternative_names(&parsed);
    let names = if names.is_empty() {
        "no subjectAltName".to_string()
    } else {
        format!("names {}", names.join(", "))
    };
    let issuer = if parsed.issuer() == parsed.subject() {
        "self-signed".to_string()
    } else {
        format!("issued by '{}'", parsed.issuer())
    };
    let validity = parsed.validity();
    format!(
        "'{}' ({names}; {issuer}; {}; valid {} to {}; {}{})",
        parsed.subject(),
        key(&parsed),
        validity.not_before.to_datetime().date(),
        validity.not_after.to_datetime().date(),
        if parsed.is_ca() { "CA; " } else { "" },
        pin_of(certificate).unwrap_or_default()
    )
}

/// A moment as a certificate's dates and a clock are compared: `2021-01-01 00:00:00 UTC`.
fn utc(time: x509_parser::time::ASN1Time) -> String {
    let moment = time.to_datetime();
    format!(
        "{} {:02}:{:02}:{:02} UTC",
        moment.date(),
        moment.hour(),
        moment.minute(),
        moment.second()
    )
}

/// Why `certificate` is not valid at `now` (seconds since the Unix epoch, the verifying
/// client's clock), with the date it crossed and the clock, so that a wrong clock can be
/// told from an expired certificate: `None` when it is valid then or does not parse. Both
/// clients put this in their refusal; the diagnosis quotes it.
pub fn outside_validity(certificate: &[u8], now: i64) -> Option<String> {
    let (_, parsed) = x509_parser::parse_x509_certificate(certificate).ok()?;
    let clock = utc(x509_parser::time::ASN1Time::from_timestamp(now).ok()?);
    let validity = parsed.validity();
    if now < validity.not_before.timestamp() {
        Some(format!(
            "certificate not yet valid: not valid before {} (this machine's clock read {clock})",
            utc(validity.not_before)
        ))
    } else if now > validity.not_after.timestamp() {
        Some(format!(
            "certificate expired on {} (this machine's clock read {clock})",
            utc(validity.not_after)
        ))
    } else {
        None
    }
}

/// The end of the chain a server sent, when no trusted certificate issued it: how many
/// certificates it sent and who issued the last, which is the certificate the verifier
/// looked for (the missing intermediate of an incomplete chain, or an untrusted root).
/// `chain` is in the order sent, the server's own first.
pub fn chain_end<'a>(chain: impl IntoIterator<Item = &'a [u8]>) -> Option<String> {
    let chain: Vec<&[u8]> = chain.into_iter().collect();
    let (_, last) = x509_parser::parse_x509_certificate(chain.last()?).ok()?;
    let count = chain.len();
    Some(format!(
        "chain sent: {count} certificate{}, the last issued by '{}'",
        if count == 1 { "" } else { "s" },
        last.issuer()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_does_not_parse_is_described_and_never_pinned() {
        assert!(describe(b"not a certificate").contains("does not parse"));
        assert!(!pinned(&Pins(vec![[0; 32]]), b"not a certificate"));
        assert_eq!(outside_validity(b"not a certificate", 0), None);
        assert_eq!(chain_end([&b"not a certificate"[..]]), None);
        assert_eq!(chain_end(std::iter::empty()), None);
    }
}
