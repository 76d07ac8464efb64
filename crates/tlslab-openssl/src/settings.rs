//! How a Config's client settings (`tlslab_backend::ClientSettings`) are spelled for
//! OpenSSL: groups, suite lists.

use tlslab_backend::Suite;
use tlslab_core::{Cipher, Group, TlsVersion};

use crate::Error;

/// OpenSSL's name of a group, for `SSL_CTX_set1_groups_list`.
pub fn group_openssl_name(group: Group) -> &'static str {
    match group {
        Group::X25519 => "x25519",
        Group::Secp256r1 => "secp256r1",
        Group::Secp384r1 => "secp384r1",
        Group::X25519Mlkem768 => "X25519MLKEM768",
        Group::Secp256r1Mlkem768 => "SecP256r1MLKEM768",
        Group::Mlkem768 => "MLKEM768",
        Group::Mlkem1024 => "MLKEM1024",
        Group::Ffdhe2048 => "ffdhe2048",
        Group::Ffdhe3072 => "ffdhe3072",
    }
}

/// The groups list that offers `groups` in order.
pub(crate) fn groups_list(version: TlsVersion, groups: &[Group]) -> Result<String, Error> {
    if let (TlsVersion::Tls12, Some(group)) =
        (version, groups.iter().find(|group| group.is_post_quantum()))
    {
        return Err(Error::unsupported(format!(
            "group {group} exists only in TLS 1.3"
        )));
    }
    Ok(groups
        .iter()
        .map(|&group| group_openssl_name(group))
        .collect::<Vec<_>>()
        .join(":"))
}

/// The OpenSSL cipher list (TLS 1.2) or ciphersuites (TLS 1.3) string that offers `suite`:
/// a bulk cipher's one TLS 1.3 suite, or its ECDHE-ECDSA and ECDHE-RSA TLS 1.2 suites so the
/// certificate decides, as the rustls client offers them.
pub(crate) fn suite_list(suite: Suite, version: TlsVersion) -> Result<&'static str, Error> {
    Ok(match (suite, version) {
        (Suite::Cipher(Cipher::Aes128Gcm), TlsVersion::Tls13) => "TLS_AES_128_GCM_SHA256",
        (Suite::Cipher(Cipher::Aes256Gcm), TlsVersion::Tls13) => "TLS_AES_256_GCM_SHA384",
        (Suite::Cipher(Cipher::Chacha20), TlsVersion::Tls13) => "TLS_CHACHA20_POLY1305_SHA256",
        (Suite::Cipher(Cipher::Aes128Gcm), TlsVersion::Tls12) => {
            "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256"
        }
        (Suite::Cipher(Cipher::Aes256Gcm), TlsVersion::Tls12) => {
            "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384"
        }
        (Suite::Cipher(Cipher::Chacha20), TlsVersion::Tls12) => {
            "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"
        }
        (Suite::Legacy(suite), TlsVersion::Tls12) => suite.openssl_name(),
        (Suite::Legacy(suite), TlsVersion::Tls13) => {
            return Err(Error::unsupported(format!(
                "{} is a TLS 1.2 suite",
                suite.iana_name()
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tlslab_core::LegacySuite;

    #[test]
    fn legacy_suites_exist_only_in_tls12() {
        let legacy = Suite::Legacy(LegacySuite::DheRsaAes128GcmSha256);
        assert_eq!(
            suite_list(legacy, TlsVersion::Tls12).unwrap(),
            "DHE-RSA-AES128-GCM-SHA256"
        );
        assert!(suite_list(legacy, TlsVersion::Tls13).is_err());
    }

    #[test]
    fn groups_are_listed_in_order_and_post_quantum_ones_only_in_tls13() {
        assert_eq!(
            groups_list(TlsVersion::Tls13, &[Group::X25519Mlkem768]).unwrap(),
            "X25519MLKEM768"
        );
        assert_eq!(
            groups_list(TlsVersion::Tls12, &[Group::Secp384r1, Group::Secp256r1]).unwrap(),
            "secp384r1:secp256r1"
        );
        assert!(groups_list(TlsVersion::Tls12, &[Group::Mlkem768]).is_err());
        for group in Group::ALL {
            assert_eq!(
                crate::names::group_name(group_openssl_name(*group)),
                group.as_str()
            );
        }
    }
}
