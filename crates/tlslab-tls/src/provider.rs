//! Mapping tlslab's dimension values onto rustls (aws-lc-rs provider) suites and groups.

use std::sync::Arc;

use rustls::crypto::aws_lc_rs::{self, cipher_suite, kx_group};
use rustls::crypto::{CryptoProvider, SupportedKxGroup};
use rustls::{NamedGroup, SupportedCipherSuite};
use tlslab_core::{Cipher, Group, TlsVersion};

use crate::error::Error;

/// Every group rustls implements, with tlslab's name (rustls has no finite-field groups).
const GROUPS: [(Group, &dyn SupportedKxGroup); 7] = [
    (Group::X25519, kx_group::X25519),
    (Group::Secp256r1, kx_group::SECP256R1),
    (Group::Secp384r1, kx_group::SECP384R1),
    (Group::X25519Mlkem768, kx_group::X25519MLKEM768),
    (Group::Secp256r1Mlkem768, kx_group::SECP256R1MLKEM768),
    (Group::Mlkem768, kx_group::MLKEM768),
    (Group::Mlkem1024, kx_group::MLKEM1024),
];

/// rustls' implementation of `group`, or `None` for the groups only OpenSSL has.
pub fn kx_group(group: Group) -> Option<&'static dyn SupportedKxGroup> {
    GROUPS
        .iter()
        .find(|(candidate, _)| *candidate == group)
        .map(|(_, implementation)| *implementation)
}

/// The tlslab name of a negotiated group (`x25519`), or rustls' name for groups tlslab does
/// not offer itself (an external server may pick one when we offer several).
pub fn group_name(named: NamedGroup) -> String {
    GROUPS
        .iter()
        .find(|(_, implementation)| implementation.name() == named)
        .map(|(group, _)| group.as_str().to_string())
        .unwrap_or_else(|| format!("{named:?}").to_ascii_lowercase())
}

/// The rustls suites that implement `cipher` under `version`. TLS 1.2 gets both the ECDSA and
/// the RSA flavour so the server's certificate decides, as it does on the wire.
pub fn cipher_suites(version: TlsVersion, cipher: Cipher) -> Vec<SupportedCipherSuite> {
    match (version, cipher) {
        (TlsVersion::Tls13, Cipher::Aes128Gcm) => vec![cipher_suite::TLS13_AES_128_GCM_SHA256],
        (TlsVersion::Tls13, Cipher::Aes256Gcm) => vec![cipher_suite::TLS13_AES_256_GCM_SHA384],
        (TlsVersion::Tls13, Cipher::Chacha20) => {
            vec![cipher_suite::TLS13_CHACHA20_POLY1305_SHA256]
        }
        (TlsVersion::Tls12, Cipher::Aes128Gcm) => vec![
            cipher_suite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
            cipher_suite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        ],
        (TlsVersion::Tls12, Cipher::Aes256Gcm) => vec![
            cipher_suite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
            cipher_suite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        ],
        (TlsVersion::Tls12, Cipher::Chacha20) => vec![
            cipher_suite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
            cipher_suite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
        ],
    }
}

/// rustls' implementations of `groups`, or the error naming the first it lacks.
pub fn kx_groups(groups: &[Group]) -> Result<Vec<&'static dyn SupportedKxGroup>, Error> {
    groups
        .iter()
        .map(|&group| {
            kx_group(group).ok_or_else(|| {
                Error::Unsupported(format!(
                    "rustls has no group {group}; the OpenSSL backend has (--backend openssl)"
                ))
            })
        })
        .collect()
}

/// A provider restricted to what one Config offers: one version's suites for one cipher,
/// and the groups the client offers.
pub fn client_provider(
    version: TlsVersion,
    cipher: Cipher,
    groups: &[Group],
) -> Result<Arc<CryptoProvider>, Error> {
    Ok(Arc::new(CryptoProvider {
        cipher_suites: cipher_suites(version, cipher),
        kx_groups: kx_groups(groups)?,
        ..aws_lc_rs::default_provider()
    }))
}

/// The lab server accepts every suite and group, so the client alone decides what a Config
/// negotiates and one server serves every client-side Config with the same certificate.
pub fn server_provider() -> Arc<CryptoProvider> {
    Arc::new(CryptoProvider {
        cipher_suites: aws_lc_rs::ALL_CIPHER_SUITES.to_vec(),
        kx_groups: GROUPS
            .iter()
            .map(|(_, implementation)| *implementation)
            .collect(),
        ..aws_lc_rs::default_provider()
    })
}

/// rustls' protocol version for a Config's TLS version.
pub fn rustls_version(version: TlsVersion) -> &'static rustls::SupportedProtocolVersion {
    match version {
        TlsVersion::Tls12 => &rustls::version::TLS12,
        TlsVersion::Tls13 => &rustls::version::TLS13,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_group_round_trips_through_its_rustls_name() {
        for group in Group::ALL {
            match kx_group(*group) {
                Some(implementation) => {
                    assert_eq!(group_name(implementation.name()), group.as_str())
                }
                None => assert!(group.is_finite_field(), "{group}"),
            }
        }
    }

    #[test]
    fn every_group_but_the_finite_field_ones_has_an_implementation() {
        assert_eq!(
            kx_groups(&[Group::X25519, Group::Mlkem1024]).unwrap().len(),
            2
        );
        let error = kx_groups(&[Group::X25519, Group::Ffdhe2048]).err().unwrap();
        assert!(error.to_string().contains("ffdhe2048"), "{error}");
    }

    #[test]
    fn suite_names_match_the_core_iana_names() {
        use tlslab_core::dimension::iana_suite_name;
        use tlslab_core::Authentication;
        for version in TlsVersion::ALL {
            for cipher in Cipher::ALL {
                let names: Vec<String> = cipher_suites(*version, *cipher)
                    .iter()
                    .map(|s| format!("{:?}", s.suite()))
                    .collect();
                for authentication in [Authentication::Ecdsa, Authentication::Rsa] {
                    let expected = iana_suite_name(*cipher, *version, authentication);
                    assert!(
                        names.iter().any(|n| n == expected),
                        "{expected} not in {names:?}"
                    );
                }
            }
        }
    }
}
