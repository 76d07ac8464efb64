//! What a server certificate says, for every client library alike: a description for the
//! errors that reject it ("which names, issuer and key the server sent"), and public-key pins
//! (`--pin sha256//BASE64`, as curl's `--pinnedpubkey`): the SHA-256 of the certificate's
//! SubjectPublicKeyInfo, base64-encoded.

use base64::Engine as _;
use sha2::{Digest, Sha256};
pub use tlslab_core::Pins;
use x509_parser::prelude::{GeneralName, X509Certificate};
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
    let names: Vec<String> = parsed
        .subject_alternative_name()
        .ok()
        .flatten()
        .map(|names| {
            names
                .value
                .general_names
                .iter()
                .filter_map(|name| match name {
                    GeneralName::DNSName(dns) => Some(dns.to_string()),
                    GeneralName::IPAddress(bytes) => match bytes.len() {
                        4 => <[u8; 4]>::try_from(*bytes)
                            .ok()
                            .map(|octets| std::net::IpAddr::from(octets).to_string()),
                        16 => <[u8; 16]>::try_from(*bytes)
                            .ok()
                            .map(|octets| std::net::IpAddr::from(octets).to_string()),
                        _ => None,
                    },
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_does_not_parse_is_described_and_never_pinned() {
        assert!(describe(b"not a certificate").contains("does not parse"));
        assert!(!pinned(&Pins(vec![[0; 32]]), b"not a certificate"));
    }
}
