//! What an OpenSSL client offers: the rustls client's settings plus what only OpenSSL has
//! (finite-field and ML-KEM-1024 groups, legacy TLS 1.2 suites, ECH).

use std::fmt;
use std::str::FromStr;

pub use tlslab_core::LegacySuite;
use tlslab_core::{Cipher, Http, Resume, TlsVersion};
pub use tlslab_tls::EchMode;
use tlslab_tls::Trust;

/// A key-exchange group. A superset of [`tlslab_core::Group`]: OpenSSL also has ML-KEM-1024
/// and the RFC 7919 finite-field groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Group {
    X25519,
    Secp256r1,
    Secp384r1,
    X25519Mlkem768,
    Secp256r1Mlkem768,
    Mlkem768,
    Mlkem1024,
    Ffdhe2048,
    Ffdhe3072,
}

impl Group {
    pub const ALL: [Group; 9] = [
        Group::X25519,
        Group::Secp256r1,
        Group::Secp384r1,
        Group::X25519Mlkem768,
        Group::Secp256r1Mlkem768,
        Group::Mlkem768,
        Group::Mlkem1024,
        Group::Ffdhe2048,
        Group::Ffdhe3072,
    ];

    /// tlslab's name, as stored (`x25519mlkem768`).
    pub fn as_str(self) -> &'static str {
        match self {
            Group::X25519 => "x25519",
            Group::Secp256r1 => "secp256r1",
            Group::Secp384r1 => "secp384r1",
            Group::X25519Mlkem768 => "x25519mlkem768",
            Group::Secp256r1Mlkem768 => "secp256r1mlkem768",
            Group::Mlkem768 => "mlkem768",
            Group::Mlkem1024 => "mlkem1024",
            Group::Ffdhe2048 => "ffdhe2048",
            Group::Ffdhe3072 => "ffdhe3072",
        }
    }

    /// OpenSSL's name, for `SSL_CTX_set1_groups_list`.
    pub fn openssl_name(self) -> &'static str {
        match self {
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

    /// Groups that exist only in TLS 1.3: the ML-KEM groups and hybrids.
    pub fn is_tls13_only(self) -> bool {
        !matches!(self, Group::X25519 | Group::Secp256r1 | Group::Secp384r1)
            && !self.is_finite_field()
    }

    /// The RFC 7919 groups: TLS 1.3 key shares, and in TLS 1.2 the parameters of a DHE suite
    /// (OpenSSL 4 servers use a finite-field group the client lists).
    pub fn is_finite_field(self) -> bool {
        matches!(self, Group::Ffdhe2048 | Group::Ffdhe3072)
    }
}

impl From<tlslab_core::Group> for Group {
    fn from(group: tlslab_core::Group) -> Group {
        match group {
            tlslab_core::Group::X25519 => Group::X25519,
            tlslab_core::Group::Secp256r1 => Group::Secp256r1,
            tlslab_core::Group::Secp384r1 => Group::Secp384r1,
            tlslab_core::Group::X25519Mlkem768 => Group::X25519Mlkem768,
            tlslab_core::Group::Secp256r1Mlkem768 => Group::Secp256r1Mlkem768,
            tlslab_core::Group::Mlkem768 => Group::Mlkem768,
            tlslab_core::Group::Mlkem1024 => Group::Mlkem1024,
            tlslab_core::Group::Ffdhe2048 => Group::Ffdhe2048,
            tlslab_core::Group::Ffdhe3072 => Group::Ffdhe3072,
        }
    }
}

impl FromStr for Group {
    type Err = String;

    fn from_str(text: &str) -> Result<Group, String> {
        let lower = text.trim().to_ascii_lowercase();
        let alias = match lower.as_str() {
            "p256" | "p-256" | "prime256v1" => "secp256r1",
            "p384" | "p-384" => "secp384r1",
            other => other,
        };
        Group::ALL
            .into_iter()
            .find(|group| group.as_str() == alias)
            .ok_or_else(|| {
                let valid: Vec<&str> = Group::ALL.iter().map(|group| group.as_str()).collect();
                format!("unknown group '{text}' (valid: {})", valid.join(", "))
            })
    }
}

impl fmt::Display for Group {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The suite a client offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Suite {
    /// A bulk cipher, as the rustls client takes it: under TLS 1.3 the one suite, under
    /// TLS 1.2 its ECDHE-ECDSA and ECDHE-RSA suites, so the certificate decides.
    Cipher(Cipher),
    /// One legacy TLS 1.2 suite (the Config must be TLS 1.2).
    Legacy(LegacySuite),
}

impl Suite {
    /// The OpenSSL cipher list (TLS 1.2) or ciphersuites (TLS 1.3) string that offers it.
    pub(crate) fn openssl_list(self, version: TlsVersion) -> Result<&'static str, String> {
        Ok(match (self, version) {
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
                return Err(format!("{} is a TLS 1.2 suite", suite.iana_name()))
            }
        })
    }
}

impl From<Cipher> for Suite {
    fn from(cipher: Cipher) -> Suite {
        Suite::Cipher(cipher)
    }
}

impl FromStr for Suite {
    type Err = String;

    /// Accepts tlslab's cipher names (`aes128gcm`) and the legacy suites by IANA or OpenSSL
    /// name. Full names of the AEAD suites pin a version and authentication, which is the
    /// Config's business: give those as their cipher.
    fn from_str(text: &str) -> Result<Suite, String> {
        let trimmed = text.trim();
        if let Ok(cipher) = trimmed.parse::<Cipher>() {
            return Ok(Suite::Cipher(cipher));
        }
        LegacySuite::ALL
            .into_iter()
            .find(|suite| {
                trimmed.eq_ignore_ascii_case(suite.iana_name())
                    || trimmed.eq_ignore_ascii_case(suite.openssl_name())
            })
            .map(Suite::Legacy)
            .ok_or_else(|| {
                let mut valid: Vec<&str> = Cipher::ALL.iter().map(|c| c.as_str()).collect();
                valid.extend(LegacySuite::ALL.iter().map(|suite| suite.openssl_name()));
                format!("unknown suite '{text}' (valid: {})", valid.join(", "))
            })
    }
}

/// One Config's worth of OpenSSL client settings.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    pub version: TlsVersion,
    pub suite: Suite,
    pub group: Group,
    pub server_name: String,
    pub trust: Trust,
    pub ech: EchMode,
    /// Resume: each [`crate::AgentSession`] keeps the latest session the server gave it and
    /// offers it on its next handshake.
    pub resume: bool,
    /// With `resume`, TLS 1.2 resumes by session ID alone: the client asks for no ticket
    /// (`SSL_OP_NO_TICKET`), as rustls' `SessionIdOnly`. TLS 1.3 resumes by tickets anyway.
    pub session_id_only: bool,
    /// The request after the handshake: `Http11` or `Http2` (offered by ALPN, as the rustls
    /// client does), or `None`. HTTP/3 needs QUIC, which this backend does not speak.
    pub http: Http,
    /// The request's path.
    pub path: String,
    /// Bytes of early data on resumed TLS 1.3 handshakes: the request, padded to this size,
    /// goes out as 0-RTT data when the resumed session allows that much; 0 for none.
    pub early_data: u64,
}

impl ClientOptions {
    /// The OpenSSL equivalent of a rustls client's settings: the same version, cipher, group,
    /// name, trust, ECH, resumption (on for any [`Resume`] but `Off`), request and early data.
    pub fn from_settings(settings: &tlslab_tls::ClientSettings) -> ClientOptions {
        ClientOptions {
            version: settings.version,
            suite: Suite::Cipher(settings.cipher),
            group: settings.group.into(),
            server_name: settings.server_name.clone(),
            trust: settings.trust.clone(),
            ech: settings.ech.clone(),
            resume: settings.resume != Resume::Off,
            session_id_only: settings.resume == Resume::SessionId,
            http: settings.http,
            path: settings.path.clone(),
            early_data: settings.early_data,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suites_and_groups_parse_from_every_spelling() {
        assert_eq!(
            "ECDHE-RSA-AES128-SHA".parse::<Suite>().unwrap(),
            Suite::Legacy(LegacySuite::EcdheRsaAes128CbcSha)
        );
        assert_eq!(
            "tls_rsa_with_aes_256_gcm_sha384".parse::<Suite>().unwrap(),
            Suite::Legacy(LegacySuite::RsaAes256GcmSha384)
        );
        assert_eq!(
            "chacha20".parse::<Suite>().unwrap(),
            Suite::Cipher(Cipher::Chacha20)
        );
        assert!("rc4"
            .parse::<Suite>()
            .unwrap_err()
            .contains("AES256-GCM-SHA384"));
        assert_eq!("MLKEM1024".parse::<Group>().unwrap(), Group::Mlkem1024);
        assert_eq!("p-256".parse::<Group>().unwrap(), Group::Secp256r1);
        for group in Group::ALL {
            assert_eq!(group.as_str().parse::<Group>().unwrap(), group);
        }
    }

    #[test]
    fn options_from_rustls_settings_keep_the_request_resumption_and_early_data() {
        let mut settings = tlslab_tls::ClientSettings::handshake_only(
            TlsVersion::Tls13,
            Cipher::Chacha20,
            tlslab_core::Group::X25519Mlkem768,
            "lab.test",
            Trust::Insecure,
        );
        let options = ClientOptions::from_settings(&settings);
        assert!(!options.resume);
        assert_eq!(options.http, Http::None);
        assert_eq!(options.early_data, 0);
        settings.resume = Resume::SessionId;
        assert!(ClientOptions::from_settings(&settings).session_id_only);
        settings.http = Http::Http2;
        settings.path = "/file?size=10".into();
        settings.early_data = 1_500;
        settings.ech = tlslab_tls::EchMode::Grease;
        let options = ClientOptions::from_settings(&settings);
        assert!(options.resume);
        assert_eq!(options.http, Http::Http2);
        assert_eq!(options.path, "/file?size=10");
        assert_eq!(options.early_data, 1_500);
        assert_eq!(options.ech, EchMode::Grease);
        assert_eq!(options.suite, Suite::Cipher(Cipher::Chacha20));
        assert_eq!(options.group, Group::X25519Mlkem768);
        assert_eq!(options.server_name, "lab.test");
    }

    #[test]
    fn legacy_suites_exist_only_in_tls12() {
        let legacy = Suite::Legacy(LegacySuite::DheRsaAes128GcmSha256);
        assert_eq!(
            legacy.openssl_list(TlsVersion::Tls12).unwrap(),
            "DHE-RSA-AES128-GCM-SHA256"
        );
        assert!(legacy.openssl_list(TlsVersion::Tls13).is_err());
    }
}
